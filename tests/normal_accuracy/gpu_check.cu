// BoxMuller on the GPU against the host's BoxMuller, bit for bit (README.md here):
//   (a) every u1 (all 2^24 values of w_r >> 8) with 4 fixed w_theta,
//   (b) every u2 (all 2^24 values of w_theta >> 8) with 4 fixed w_r,
//   (c) 2^26 random pairs (SplitMix64 of the index, the same on both sides).
// Prints the mismatch count of each part; exit status 1 on any mismatch or CUDA error.
// Build: run.sh gpu (the production CUDA compiler, clang in CUDA mode, with CUDA_COPTS'
// flags; nvcc rejects normal.h's constexpr coefficient arrays in device code).
#include <cuda_runtime.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tf_ops/common/normal.h"

using tf_onthefly::BoxMuller;

namespace {

#define CUDA_OK(x)                                                                       \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, \
                   __LINE__);                                                            \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

__host__ __device__ inline uint64_t SplitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The words of pair i of a part: mode 0: w_r = i << 8, w_theta = fixed; mode 1: w_r = fixed,
// w_theta = i << 8 | low; mode 2: both from SplitMix64(base + i).
__host__ __device__ inline void Words(int mode, uint64_t base, uint32_t fixed, uint64_t i,
                                      uint32_t* wr, uint32_t* wt) {
  if (mode == 0) {
    *wr = static_cast<uint32_t>(i) << 8 | static_cast<uint32_t>(i & 0xFF);
    *wt = fixed;
  } else if (mode == 1) {
    *wr = fixed;
    *wt = static_cast<uint32_t>(i) << 8 | static_cast<uint32_t>((i * 37) & 0xFF);
  } else {
    const uint64_t r = SplitMix(base + i);
    *wr = static_cast<uint32_t>(r);
    *wt = static_cast<uint32_t>(r >> 32);
  }
}

__global__ void Kernel(int mode, uint64_t base, uint32_t fixed, uint64_t n, float* z) {
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  uint32_t wr, wt;
  Words(mode, base, fixed, i, &wr, &wt);
  BoxMuller(wr, wt, &z[2 * i], &z[2 * i + 1]);
}

// Runs n pairs of one part on the GPU and the host; returns the number of mismatching floats.
uint64_t Part(int mode, uint64_t base, uint32_t fixed, uint64_t n, float* dev,
              std::vector<float>& host) {
  Kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(mode, base, fixed, n, dev);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaMemcpy(host.data(), dev, 2 * n * sizeof(float), cudaMemcpyDeviceToHost));
  uint64_t bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static)
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
    uint32_t wr, wt;
    Words(mode, base, fixed, static_cast<uint64_t>(i), &wr, &wt);
    float z[2];
    BoxMuller(wr, wt, &z[0], &z[1]);
    for (int j = 0; j < 2; ++j) {
      uint32_t a, b;
      std::memcpy(&a, &z[j], 4);
      std::memcpy(&b, &host[2 * i + j], 4);
      if (a != b) {
        ++bad;
        if (bad <= 5)
          std::printf("  mismatch: w_r 0x%08x w_theta 0x%08x z%d host %a gpu %a\n", wr, wt, j, z[j],
                      host[2 * i + j]);
      }
    }
  }
  return bad;
}

}  // namespace

int main() {
  int major = 0, minor = 0;  // (attributes, not cudaDeviceProp: stable across CUDA versions)
  CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  CUDA_OK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
  std::printf("normal_accuracy gpu_check on device 0 (sm_%d%d)\n", major, minor);
  constexpr uint64_t kN = uint64_t{1} << 24;
  float* dev;
  CUDA_OK(cudaMalloc(&dev, 2 * kN * sizeof(float)));
  std::vector<float> host(2 * kN);
  const uint32_t fixed[4] = {0x00000000u, 0x5A3C96E1u, 0xC0000080u, 0xFFFFFFFFu};
  uint64_t total = 0, bad;
  for (uint32_t f : fixed) {
    bad = Part(0, 0, f, kN, dev, host);
    total += bad;
    std::printf("(a) all 2^24 u1, w_theta 0x%08x: %" PRIu64 " mismatches\n", f, bad);
  }
  for (uint32_t f : fixed) {
    bad = Part(1, 0, f, kN, dev, host);
    total += bad;
    std::printf("(b) all 2^24 u2, w_r 0x%08x: %" PRIu64 " mismatches\n", f, bad);
  }
  bad = 0;
  for (uint64_t chunk = 0; chunk < 4; ++chunk) bad += Part(2, chunk * kN, 0, kN, dev, host);
  total += bad;
  std::printf("(c) 2^26 random pairs: %" PRIu64 " mismatches\n", bad);
  CUDA_OK(cudaFree(dev));
  std::printf("%s: %" PRIu64 " mismatching floats in %" PRIu64 " pairs\n",
              total ? "FAILED" : "bit-identical", total, 12 * kN);
  return total ? 1 : 0;
}

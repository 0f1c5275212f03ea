// Device side of the kernel bench (benchmarks/kernel_bench/README.md): the SDK's generator
// kernels exactly as the op library builds them, next to raw reference kernels that set
// the ceilings (a plain float4 fill, and a bare Philox uniform with float4 stores), and a
// check of the 16-bit conversions over every finite float32.
// Compiled to a cubin with the production clang flags; the host harness loads it with the
// CUDA driver API, so it runs on a GPU machine without TensorFlow or a CUDA toolkit.
#include <cstdint>

#include "tf_ops/random_batch/random_batch.h"
#include "tf_ops/sdk/generator_gpu.cu.h"

OTF_DEFINE_GPU_GENERATOR(tf_onthefly::random_batch::RandomBatchGen<tf_onthefly::Float32, int32_t>);

namespace {
using tf_onthefly::PhiloxKey;
using tf_onthefly::Words4;
}  // namespace

// Write ceiling: every thread stores float4 values, grid-stride.
extern "C" __global__ void RefFillFloat4(float4* out, uint32_t n4, float v) {
  const uint32_t stride = blockDim.x * gridDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride)
    out[i] = make_float4(v, v + 1.f, v + 2.f, v + 3.f);
}

// Generation ceiling: one Philox block per float4, counter = (i, row constant), no
// row/label bookkeeping.
extern "C" __global__ void RefPhiloxUniformFloat4(float4* out, uint32_t n4, PhiloxKey key) {
  const uint32_t stride = blockDim.x * gridDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    const Words4 w = tf_onthefly::SampleBlock(key, 7, i);
    out[i] = make_float4(tf_onthefly::UniformFloat(w.w0), tf_onthefly::UniformFloat(w.w1),
                         tf_onthefly::UniformFloat(w.w2), tf_onthefly::UniformFloat(w.w3));
  }
}

// Every finite float32 (the 2^32 bit patterns less infinities and NaNs): the 16-bit
// conversions the kernels use (ToBFloat16 / ToFloat16: the GPU's cvt instructions where the
// architecture has them) against the integer rule the CPU computes (ToBFloat16Bits /
// ToFloat16Bits). mismatches[c] counts conversion c's differing inputs (0: bfloat16 to
// nearest, 1: bfloat16 down, 2: float16 to nearest, 3: float16 down); first[c] is the least
// differing bit pattern.
extern "C" __global__ void CheckHalfConversions(unsigned long long* mismatches,
                                                unsigned int* first) {
  using tf_onthefly::Rounding;
  const uint64_t stride = uint64_t{blockDim.x} * gridDim.x;
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < (uint64_t{1} << 32);
       i += stride) {
    const uint32_t b = static_cast<uint32_t>(i);
    if ((b & 0x7F800000u) == 0x7F800000u) continue;
    const float x = __uint_as_float(b);
    const bool bad[4] = {
        tf_onthefly::ToBFloat16<Rounding::kNearestEven>(x) !=
            tf_onthefly::ToBFloat16Bits<Rounding::kNearestEven>(x),
        tf_onthefly::ToBFloat16<Rounding::kDown>(x) !=
            tf_onthefly::ToBFloat16Bits<Rounding::kDown>(x),
        tf_onthefly::ToFloat16<Rounding::kNearestEven>(x) !=
            tf_onthefly::ToFloat16Bits<Rounding::kNearestEven>(x),
        tf_onthefly::ToFloat16<Rounding::kDown>(x) !=
            tf_onthefly::ToFloat16Bits<Rounding::kDown>(x),
    };
    for (int c = 0; c < 4; ++c) {
      if (bad[c]) {
        atomicAdd(&mismatches[c], 1ull);
        atomicMin(&first[c], b);
      }
    }
  }
}

// The kernel bench (README.md here): the SDK's GPU kernels outside TensorFlow, launched by
// the SDK's own launcher (sdk::LaunchGenerator, and sdk::LaunchUnits for each items-per-
// thread count), so the bench compiles only against the launch the product uses: a change
// of the kernel's arguments changes both or fails to build (Bazel builds this file in
// `bazel build //...`). Next to them, raw ceilings: a float4 fill, a bare Philox uniform,
// and the exact normals of tf_ops/common/normal.h with 1, 2, 4 and 8 Philox blocks per
// thread and nothing else. Every SDK case is checked against the host, bit for bit, on 64
// rows; the probe on its first 2^16 blocks; first of all the 16-bit conversions the kernels
// use, on every finite float32. Exit status 1 on any mismatch or CUDA error.
//
//   kernel_bench [--mib=256,1024,4096] [--json=FILE] [--label=NAME]
#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tf_ops/common/normal.h"
#include "tf_ops/random_batch/random_batch.h"
#include "tf_ops/sdk/generator_gpu.cu.h"
#include "tf_ops/tabular_mixture/tabular_mixture.h"

namespace {

using tf_onthefly::PhiloxKey;
using tf_onthefly::Words4;
namespace sdk = tf_onthefly::sdk;
namespace rb = tf_onthefly::random_batch;
namespace mixture = tf_onthefly::tabular_mixture;

// ---- Reference kernels ----------------------------------------------------------------

// Write ceiling: float4 stores, grid-stride.
__global__ void RefFill(float4* out, uint64_t n4) {
  const uint64_t stride = uint64_t{blockDim.x} * gridDim.x;
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n4; i += stride)
    out[i] = make_float4(1.0f, 2.0f, 3.0f, static_cast<float>(i));
}

// Generation ceiling: one Philox block per float4 of [0, 1) uniforms, grid-stride.
__global__ void RefPhiloxUniform(float4* out, uint64_t n4, PhiloxKey key) {
  const uint64_t stride = uint64_t{blockDim.x} * gridDim.x;
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n4; i += stride) {
    const Words4 w = tf_onthefly::SampleBlock(key, i, 0);
    out[i] = make_float4(tf_onthefly::UniformFloat(w.w0), tf_onthefly::UniformFloat(w.w1),
                         tf_onthefly::UniformFloat(w.w2), tf_onthefly::UniformFloat(w.w3));
  }
}

// The exact normals alone: N Philox blocks per thread (blocks i, i + n4/N, ...: a warp's
// stores stay adjacent), one thread per N float4, no rows, labels or grid-stride. The most
// the transform of normal.h gives on this card at N blocks of independent work a thread.
template <int N>
__global__ void ExactNormals(float4* out, uint64_t n4, PhiloxKey key) {
  const uint64_t part = n4 / N;
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= part) return;
  Words4 w[N];
#pragma unroll
  for (int j = 0; j < N; ++j) w[j] = tf_onthefly::SampleBlock(key, i + j * part, 0);
#pragma unroll
  for (int j = 0; j < N; ++j) {
    float4 v;
    tf_onthefly::BoxMuller(w[j].w0, w[j].w1, &v.x, &v.y);
    tf_onthefly::BoxMuller(w[j].w2, w[j].w3, &v.z, &v.w);
    out[i + j * part] = v;
  }
}

// Every finite float32 (the 2^32 bit patterns less infinities and NaNs): the 16-bit
// conversions the kernels use (ToBFloat16 / ToFloat16: the GPU's cvt instructions where the
// architecture has them) against the integer rule the CPU computes. mismatches[c] counts
// conversion c's differing inputs (bfloat16 nearest, bfloat16 down, float16 nearest,
// float16 down); first[c] is the least differing bit pattern.
__global__ void CheckHalfConversions(unsigned long long* mismatches, unsigned int* first) {
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

// ---- Host side ------------------------------------------------------------------------

bool g_ok = true;
const char* g_label = "new";
FILE* g_json = nullptr;

void Check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "kernel_bench: %s: %s: %s\n", what, cudaGetErrorName(err),
               cudaGetErrorString(err));
  std::exit(1);
}
#define CK(call) Check(call, #call)

struct Timing {
  double best_ms, median_ms;
};

// 3 untimed launches, then 20 timed with events on `stream`: best and median.
template <typename F>
Timing Time(F launch, cudaStream_t stream) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) Check(launch(), "launch");
  std::vector<float> ms;
  for (int i = 0; i < 20; ++i) {
    CK(cudaEventRecord(a, stream));
    Check(launch(), "launch");
    CK(cudaEventRecord(b, stream));
    CK(cudaEventSynchronize(b));
    float t = 0;
    CK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return Timing{ms.front(), ms[ms.size() / 2]};
}

// One printed and recorded row; returns its rate in TB/s (best).
double Report(const std::string& what, int64_t mib, const Timing& t, double bytes) {
  const double tbs = bytes / (t.best_ms * 1e-3) / 1e12;
  std::printf("%-8s %5" PRId64 " MiB  %-58s best %8.3f ms  median %8.3f ms  %5.2f TB/s\n", g_label,
              mib, what.c_str(), t.best_ms, t.median_ms, tbs);
  std::fflush(stdout);
  if (g_json) {
    std::fprintf(g_json,
                 "{\"label\": \"%s\", \"mib\": %" PRId64
                 ", \"what\": \"%s\", \"best_ms\": %.5f, \"median_ms\": %.5f, \"tb_s\": %.4f}\n",
                 g_label, mib, what.c_str(), t.best_ms, t.median_ms, tbs);
    std::fflush(g_json);
  }
  return tbs;
}

int ResidentGrid(const void* kernel, int threads) {
  int device = 0, sms = 0, per_sm = 0;
  CK(cudaGetDevice(&device));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  return sms * std::max(per_sm, 1);
}

void CheckHalfConversionsEverywhere() {
  unsigned long long* counts;
  unsigned int* first;
  CK(cudaMalloc(&counts, 4 * sizeof(unsigned long long)));
  CK(cudaMalloc(&first, 4 * sizeof(unsigned int)));
  CK(cudaMemset(counts, 0, 4 * sizeof(unsigned long long)));
  CK(cudaMemset(first, 0xFF, 4 * sizeof(unsigned int)));
  CheckHalfConversions<<<ResidentGrid(reinterpret_cast<const void*>(&CheckHalfConversions), 256),
                         256>>>(counts, first);
  CK(cudaGetLastError());
  unsigned long long bad[4];
  unsigned int first_bad[4];
  CK(cudaMemcpy(bad, counts, sizeof(bad), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(first_bad, first, sizeof(first_bad), cudaMemcpyDeviceToHost));
  const char* names[4] = {"bfloat16 nearest", "bfloat16 down", "float16 nearest", "float16 down"};
  for (int c = 0; c < 4; ++c) {
    std::printf("%-8s 16-bit conversion %-16s over every finite float32: %llu mismatches%s\n",
                g_label, names[c], bad[c], bad[c] ? "" : " (OK)");
    if (bad[c])
      std::printf("%-8s   first mismatch at float32 bits 0x%08x\n", g_label, first_bad[c]);
    g_ok &= bad[c] == 0;
  }
  CK(cudaFree(counts));
  CK(cudaFree(first));
}

// The reference kernels at one size; returns the bare Philox uniform's and the best exact
// normals' rates (TB/s).
struct Ceilings {
  double uniform, normal;
};
Ceilings References(int64_t mib, cudaStream_t stream) {
  const uint64_t bytes = static_cast<uint64_t>(mib) << 20, n4 = bytes / 16;
  float4* out;
  CK(cudaMalloc(&out, bytes));
  const PhiloxKey key{0x12345678u, 0x9ABCDEF0u};
  const int t = 256;
  const int fill_grid = ResidentGrid(reinterpret_cast<const void*>(&RefFill), t);
  Report("ref: fill, float4 stores", mib,
         Time(
             [&] {
               RefFill<<<fill_grid, t, 0, stream>>>(out, n4);
               return cudaGetLastError();
             },
             stream),
         bytes);
  const int uni_grid = ResidentGrid(reinterpret_cast<const void*>(&RefPhiloxUniform), t);
  Ceilings c{};
  c.uniform = Report("ref: bare Philox uniform, float4 stores", mib,
                     Time(
                         [&] {
                           RefPhiloxUniform<<<uni_grid, t, 0, stream>>>(out, n4, key);
                           return cudaGetLastError();
                         },
                         stream),
                     bytes);
  auto normals = [&](auto kernel, int n) {
    const unsigned grid = static_cast<unsigned>((n4 / n + t - 1) / t);
    char what[96];
    std::snprintf(what, sizeof(what), "ref: exact normals (normal.h), %d block%s a thread", n,
                  n > 1 ? "s" : "");
    c.normal = std::max(c.normal, Report(what, mib,
                                         Time(
                                             [&] {
                                               kernel<<<grid, t, 0, stream>>>(out, n4, key);
                                               return cudaGetLastError();
                                             },
                                             stream),
                                         bytes));
  };
  if (mib == 1024) {
    cudaFuncAttributes a{};
    CK(cudaFuncGetAttributes(&a, &ExactNormals<8>));
    std::printf("%-8s exact-normals probe at 8 blocks a thread: %d registers a thread\n", g_label,
                a.numRegs);
  }
  normals(&ExactNormals<1>, 1);
  normals(&ExactNormals<2>, 2);
  normals(&ExactNormals<4>, 4);
  normals(&ExactNormals<8>, 8);
  // The probe's bits are the CPU's (normal.h), on its first 2^16 blocks.
  ExactNormals<1><<<static_cast<unsigned>((n4 + t - 1) / t), t, 0, stream>>>(out, n4, key);
  CK(cudaGetLastError());
  const size_t m = 1 << 16;
  std::vector<float> dev(4 * m);
  CK(cudaMemcpyAsync(dev.data(), out, 16 * m, cudaMemcpyDeviceToHost, stream));
  CK(cudaStreamSynchronize(stream));
  size_t differ = 0;
  for (size_t i = 0; i < m; ++i) {
    const Words4 w = tf_onthefly::SampleBlock(key, i, 0);
    float z[4];
    tf_onthefly::BoxMuller(w.w0, w.w1, &z[0], &z[1]);
    tf_onthefly::BoxMuller(w.w2, w.w3, &z[2], &z[3]);
    differ += std::memcmp(z, &dev[4 * i], 16) != 0;
  }
  if (differ) {
    std::printf("%-8s MISMATCH: exact normals GPU vs host, %zu of %zu blocks differ\n", g_label,
                differ, m);
    g_ok = false;
  }
  CK(cudaFree(out));
  return c;
}

// A generator call of `rows` rows: outputs and seed/step in device memory, as the op
// library's callers give them (seed (1, 2), step 3, first sample 12345).
template <typename Gen>
struct Call {
  typename Gen::Params p;
  int64_t rows;
  int64_t sample_bytes[2];
  sdk::CallGeometry g{};
  int64_t* seed_step = nullptr;  // seed[2], step, sample offset 0
  sdk::SeedAndStep ss{};
  sdk::Inputs inputs{};
  static void* NoScratch(void*, int64_t) { return nullptr; }
  sdk::ScratchAllocator scratch{&NoScratch, nullptr};
  cudaStream_t stream;

  Call(const typename Gen::Params& params, int64_t n, int64_t feature_bytes, int64_t label_bytes,
       cudaStream_t s)
      : p(params), rows(n), sample_bytes{feature_bytes, label_bytes}, stream(s) {
    g.batch_size = rows + 12345;
    g.num_samples = rows;
    g.first_sample = 12345;
    for (int i = 0; i < 2; ++i) {
      CK(cudaMalloc(&g.base[i], rows * sample_bytes[i]));
      g.sample_bytes[i] = sample_bytes[i];
    }
    const int64_t host[4] = {1, 2, 3, 0};
    CK(cudaMalloc(&seed_step, sizeof(host)));
    CK(cudaMemcpy(seed_step, host, sizeof(host), cudaMemcpyHostToDevice));
    ss.seed = seed_step;
    ss.seed_size = 2;
    ss.step = seed_step + 2;
    ss.sample_offset = seed_step + 3;
  }
  ~Call() {
    for (int i = 0; i < 2; ++i) cudaFree(g.base[i]);
    cudaFree(seed_step);
  }
  double bytes() const { return static_cast<double>(rows) * (sample_bytes[0] + sample_bytes[1]); }

  // What the product launches for this call.
  cudaError_t Launch() const {
    const sdk::GpuLaunchArgs args{&p, &g, &ss, &inputs, stream, &scratch};
    return sdk::LaunchGenerator<Gen>(&args);
  }
  // The SDK kernel with variant V, K items per thread and 32-bit indices.
  template <int V, int K>
  cudaError_t LaunchK() const {
    const sdk::GpuCall<typename Gen::Params> call{p, g, ss, inputs, stream, scratch};
    return sdk::LaunchUnits<Gen, V, K, uint32_t, false>(call, Gen::ItemsPerSample(p), 1);
  }
  // The same kernel on a grid of `blocks_per_resident` times the resident blocks, or, with 0,
  // one work unit a thread (no grid-stride step): what the grid choice costs or gains.
  template <int V, int K>
  cudaError_t LaunchGrid(int blocks_per_resident) const {
    constexpr auto kKernel = &sdk::GeneratorKernel<Gen, V, K, uint32_t, false>;
    const int64_t items = Gen::ItemsPerSample(p), groups = (items + K - 1) / K;
    const int64_t total = rows * groups, t = sdk::kGeneratorBlockThreads;
    int64_t grid = (total + t - 1) / t;
    if (blocks_per_resident > 0) {
      int64_t resident = 0;
      const cudaError_t err = sdk::ResidentBlocks<kKernel>(static_cast<int>(t), &resident);
      if (err != cudaSuccess) return err;
      grid = std::min(grid, blocks_per_resident * resident);
    }
    return sdk::LaunchKernel(kKernel, dim3(static_cast<unsigned>(grid)), dim3(t), 0, stream, p, g,
                             ss, inputs, items, groups, total);
  }

  // 64 rows (the first two, the last, and evenly between) against the host, bit for bit.
  void CheckRows(const std::string& what) const {
    CK(cudaStreamSynchronize(stream));
    const int64_t host_in[4] = {1, 2, 3, 0};
    const sdk::SeedAndStep host_ss{host_in, 2, host_in + 2, host_in + 3};
    PhiloxKey keys[Gen::kNumStreams];
    for (int s = 0; s < Gen::kNumStreams; ++s) keys[s] = sdk::StreamKey(host_ss, s);
    std::vector<unsigned char> dev[2], host[2];
    int bad_rows = 0;
    for (int64_t i = 0; i < 64; ++i) {
      const int64_t row = i < 2 ? i : (rows - 1) * i / 63;
      sdk::CallGeometry h = g;
      for (int k = 0; k < 2; ++k) {
        dev[k].resize(sample_bytes[k]);
        host[k].assign(sample_bytes[k], 0);
        CK(cudaMemcpy(dev[k].data(), static_cast<char*>(g.base[k]) + row * sample_bytes[k],
                      sample_bytes[k], cudaMemcpyDeviceToHost));
        h.base[k] = host[k].data() - row * sample_bytes[k];  // the items add row * sample_bytes
      }
      for (int64_t item = 0; item < Gen::ItemsPerSample(p); ++item)
        sdk::RunItem<Gen>(p, h, inputs, keys, g.first_sample, row, item);
      bad_rows += dev[0] != host[0] || dev[1] != host[1];
    }
    if (bad_rows) {
      std::printf("%-8s MISMATCH: %s: %d of 64 rows differ from the host\n", g_label, what.c_str(),
                  bad_rows);
      g_ok = false;
    }
  }
};

// Times the product's launch of a call (and checks it); returns TB/s.
template <typename Gen>
double Launched(const Call<Gen>& c, const std::string& what, int64_t mib) {
  const double tbs = Report(what, mib, Time([&] { return c.Launch(); }, c.stream), c.bytes());
  c.CheckRows(what);
  return tbs;
}

template <typename Gen, int V, int K>
void WithK(const Call<Gen>& c, const std::string& what, int64_t mib) {
  const std::string name = what + ", K=" + std::to_string(K);
  Report(name, mib, Time([&] { return c.template LaunchK<V, K>(); }, c.stream), c.bytes());
  c.CheckRows(name);
}

template <typename Gen, int V, int K>
void WithGrid(const Call<Gen>& c, const std::string& what, int64_t mib, int blocks_per_resident) {
  cudaFuncAttributes a{};
  CK(cudaFuncGetAttributes(&a, &sdk::GeneratorKernel<Gen, V, K, uint32_t, false>));
  const std::string name =
      what + ", K=" + std::to_string(K) + " (" + std::to_string(a.numRegs) + " regs)" +
      (blocks_per_resident > 0 ? ", grid " + std::to_string(blocks_per_resident) + "x resident"
                               : ", a unit a thread");
  Report(name, mib,
         Time([&] { return c.template LaunchGrid<V, K>(blocks_per_resident); }, c.stream),
         c.bytes());
  c.CheckRows(name);
}

rb::Params RandomBatchParams(int64_t dim, int dist) {  // 0: [0, 1), 1: [-2, 3), 2: normal
  rb::Params p{};
  p.feature_dim = dim;
  p.distribution = dist == 2 ? rb::Distribution::kNormal : rb::Distribution::kUniform;
  p.low = dist == 1 ? -2.0f : 0.0f;
  p.high = dist == 1 ? 3.0f : 1.0f;
  p.range = p.high - p.low;
  p.unit_range = dist == 0;
  p.low_up = p.low;
  p.label_mode = rb::LabelMode::kClasses;
  p.num_classes = 10;
  return p;
}

template <typename TFeature>
double RandomBatch(int64_t mib, int64_t dim, int dist, const char* type, cudaStream_t stream) {
  using Gen = rb::RandomBatchGen<TFeature, int32_t>;
  const int64_t feature_bytes = dim * static_cast<int64_t>(sizeof(typename TFeature::Storage));
  const Call<Gen> c(RandomBatchParams(dim, dist), (mib << 20) / feature_bytes, feature_bytes, 4,
                    stream);
  char what[96];
  std::snprintf(what, sizeof(what), "random_batch %s %s, %" PRId64 " x %" PRId64, type,
                dist == 0   ? "uniform [0,1)"
                : dist == 1 ? "uniform [-2,3)"
                            : "normal",
                c.rows, dim);
  return Launched(c, what, mib);
}

void Ratio(int64_t mib, const char* what, double num, double den, const char* of, double target) {
  std::printf("%-8s %5" PRId64 " MiB  %-58s %5.3fx %s%s\n", g_label, mib, what, num / den, of,
              target > 0 ? (num / den >= target ? "  (target met)" : "  (BELOW TARGET)") : "");
  if (g_json)
    std::fprintf(g_json,
                 "{\"label\": \"%s\", \"mib\": %" PRId64
                 ", \"ratio\": \"%s / %s\", \"value\": %.4f}\n",
                 g_label, mib, what, of, num / den);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes = {256, 1024, 4096};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--mib=", 0) == 0) {
      sizes.clear();
      for (const char* s = a.c_str() + 6; *s;) {
        char* end;
        sizes.push_back(std::strtoll(s, &end, 10));
        s = *end ? end + 1 : end;
      }
    } else if (a.rfind("--json=", 0) == 0) {
      g_json = std::fopen(a.c_str() + 7, "w");
      if (!g_json) {
        std::fprintf(stderr, "kernel_bench: cannot write %s\n", a.c_str() + 7);
        return 2;
      }
    } else if (a.rfind("--label=", 0) == 0) {
      g_label = argv[i] + 8;
    } else {
      std::fprintf(stderr, "usage: %s [--mib=256,1024,4096] [--json=FILE] [--label=NAME]\n",
                   argv[0]);
      return 2;
    }
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0;
  CK(cudaDriverGetVersion(&driver));
  CK(cudaRuntimeGetVersion(&runtime));
  std::printf("%-8s %s, %d SMs, driver %d, runtime %d; best and median of 20 launches after 3\n",
              g_label, prop.name, prop.multiProcessorCount, driver, runtime);
  cudaStream_t stream;
  CK(cudaStreamCreate(&stream));
  CheckHalfConversionsEverywhere();

  for (const int64_t mib : sizes) {
    const Ceilings ref = References(mib, stream);
    const double uniform = RandomBatch<tf_onthefly::Float32>(mib, 4096, 0, "float32", stream);
    const double normal = RandomBatch<tf_onthefly::Float32>(mib, 4096, 2, "float32", stream);
    RandomBatch<tf_onthefly::BFloat16>(mib, 4096, 0, "bfloat16", stream);
    RandomBatch<tf_onthefly::BFloat16>(mib, 4096, 2, "bfloat16", stream);
    RandomBatch<tf_onthefly::Float16>(mib, 4096, 2, "float16", stream);
    Ratio(mib, "random_batch float32 uniform (launched)", uniform, ref.uniform,
          "bare Philox uniform", 0.95);
    Ratio(mib, "random_batch float32 normal (launched)", normal, ref.normal,
          "best exact-normals probe", 0.0);
  }

  // At 1 GiB: other shapes, each items-per-thread count of the normal kernel, and the other
  // generator that draws normals.
  const int64_t mib = 1024;
  RandomBatch<tf_onthefly::Float32>(mib, 4096, 1, "float32", stream);
  RandomBatch<tf_onthefly::Float32>(mib, 64, 2, "float32", stream);
  RandomBatch<tf_onthefly::Float32>(mib, 6, 2, "float32", stream);
  RandomBatch<tf_onthefly::Float32>(mib, 6, 0, "float32", stream);
  {
    using Gen = rb::RandomBatchGen<tf_onthefly::Float32, int32_t>;
    const Call<Gen> c(RandomBatchParams(4096, 2), (mib << 20) / (4096 * 4), 4096 * 4, 4, stream);
    const std::string what = "random_batch float32 normal, SDK kernel V=0";
    WithK<Gen, 0, 1>(c, what, mib);
    WithK<Gen, 0, 2>(c, what, mib);
    WithK<Gen, 0, 4>(c, what, mib);
    WithK<Gen, 0, 8>(c, what, mib);
    // The grid, in waves of the resident blocks striding (the launch gives two), or a unit
    // a thread as the exact-normals probe runs.
    for (const int waves : {1, 2, 4, 8}) WithGrid<Gen, 0, 8>(c, what, mib, waves);
    WithGrid<Gen, 0, 8>(c, what, mib, 0);
  }
  {
    using Gen = rb::RandomBatchGen<tf_onthefly::Float32, int32_t>;
    const Call<Gen> c(RandomBatchParams(4096, 0), (mib << 20) / (4096 * 4), 4096 * 4, 4, stream);
    const std::string what = "random_batch float32 uniform [0,1), SDK kernel V=1";
    for (const int waves : {1, 2, 4}) WithGrid<Gen, 1, 8>(c, what, mib, waves);
  }
  {
    using Gen = mixture::TabularMixtureGen;
    mixture::Params p{};
    p.feature_dim = 64;
    p.num_classes = 10;
    p.cluster_std = 0.5f;
    p.separation = 2.0f;
    p.means = PhiloxKey{0x600DCAFEu, 0x12345678u};
    const Call<Gen> c(p, (mib << 20) / (64 * 4), 64 * 4, 4, stream);
    Launched(c, "tabular_mixture, " + std::to_string(c.rows) + " x 64", mib);
  }
  CK(cudaGetLastError());
  CK(cudaStreamDestroy(stream));
  std::printf("%-8s rows checked against the host: %s\n", g_label, g_ok ? "OK" : "MISMATCH");
  if (g_json) std::fclose(g_json);
  return g_ok ? 0 : 1;
}

// Host side of the kernel bench (benchmarks/kernel_bench/README.md). Loads kernels.cubin through
// the CUDA driver API (dlopen'ed libcuda.so.1: no CUDA toolkit or TensorFlow needed on the
// GPU machine), times each kernel with CUDA events on 1 GiB outputs, and checks the SDK
// kernels' first and last rows against the same generator run on the host; first it checks
// the GPU's 16-bit conversions against the host's rule on every finite float32.
//
//   harness KERNELS.cubin [LABEL]
#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tf_ops/random_batch/random_batch.h"
#include "tf_ops/sdk/generator.h"

namespace {

namespace rb = tf_onthefly::random_batch;
namespace sdk = tf_onthefly::sdk;

#define OTF_STR(x) #x
#define OTF_XSTR(x) OTF_STR(x)
#define DRIVER_FN(name) decltype(&::name) p_##name = nullptr;
// clang-format off
#define DRIVER_FNS(X)                                                                   \
  X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuModuleLoad) \
  X(cuModuleGetFunction) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyDtoH) X(cuMemcpyHtoD) X(cuLaunchKernel) \
  X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime)         \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuDeviceGetAttribute)                \
  X(cuCtxSynchronize) X(cuDeviceGetName) X(cuGetErrorString)
// clang-format on
DRIVER_FNS(DRIVER_FN)

void Check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* msg = "?";
  if (p_cuGetErrorString) p_cuGetErrorString(r, &msg);
  std::fprintf(stderr, "%s failed: %s\n", what, msg);
  std::exit(1);
}
#define CK(call) Check(call, #call)

void LoadDriver() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    std::fprintf(stderr, "no libcuda.so.1: %s\n", dlerror());
    std::exit(1);
  }
#define LOAD_FN(name)                                                          \
  p_##name = reinterpret_cast<decltype(p_##name)>(dlsym(lib, OTF_XSTR(name))); \
  if (!p_##name) {                                                             \
    std::fprintf(stderr, "libcuda lacks %s\n", OTF_XSTR(name));                \
    std::exit(1);                                                              \
  }
  DRIVER_FNS(LOAD_FN)
}

int g_sms = 0;
CUfunction Kernel(CUmodule m, const char* name) {
  CUfunction f;
  CK(p_cuModuleGetFunction(&f, m, name));
  return f;
}

struct Timing {
  double best_ms, median_ms;
};

// Grid as the SDK sizes it: resident blocks at the kernel's occupancy, no more than needed.
int ResidentGrid(CUfunction f, int64_t items, int threads) {
  const int64_t needed = (items + threads - 1) / threads;
  // OTF_GRID=full: a block per 256 items, no striding (to compare with the SDK's sizing).
  const char* policy = std::getenv("OTF_GRID");
  if (policy && std::strcmp(policy, "full") == 0)
    return static_cast<int>(std::min<int64_t>(needed, INT32_MAX));
  int per_sm = 0;
  CK(p_cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, threads, 0));
  return static_cast<int>(std::min<int64_t>(needed, int64_t{g_sms} * std::max(per_sm, 1)));
}

Timing Time(CUfunction f, int grid, int threads, void** args) {
  CUevent a, b;
  CK(p_cuEventCreate(&a, 0));
  CK(p_cuEventCreate(&b, 0));
  for (int i = 0; i < 3; ++i) CK(p_cuLaunchKernel(f, grid, 1, 1, threads, 1, 1, 0, 0, args, 0));
  std::vector<float> ms;
  for (int i = 0; i < 20; ++i) {
    CK(p_cuEventRecord(a, 0));
    CK(p_cuLaunchKernel(f, grid, 1, 1, threads, 1, 1, 0, 0, args, 0));
    CK(p_cuEventRecord(b, 0));
    CK(p_cuEventSynchronize(b));
    float t = 0;
    CK(p_cuEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return Timing{ms.front(), ms[ms.size() / 2]};
}

void Report(const char* label, const char* what, const Timing& t, double bytes, int grid) {
  std::printf("%-10s %-44s grid %6d  best %7.3f ms  median %7.3f ms  %5.2f TB/s (best)\n", label,
              what, grid, t.best_ms, t.median_ms, bytes / (t.best_ms * 1e-3) / 1e12);
  std::fflush(stdout);
}

using Gen = rb::RandomBatchGen<tf_onthefly::Float32, int32_t>;

// Host result of the same generator for row `row`, compared bit for bit (the contract: CPU
// and GPU agree exactly, normals included); `worst_seen` keeps the largest distance in ulps.
bool CheckRows(const rb::Params& p, const sdk::CallGeometry& g, const tf_onthefly::PhiloxKey* keys,
               CUdeviceptr feat, CUdeviceptr labels, int64_t row, int64_t* worst_seen) {
  const int64_t dim = p.feature_dim;
  std::vector<float> dev(dim), host(dim);
  int32_t dev_label = 0, host_label = 0;
  CK(p_cuMemcpyDtoH(dev.data(), feat + row * dim * 4, dim * 4));
  CK(p_cuMemcpyDtoH(&dev_label, labels + row * 4, 4));
  sdk::CallGeometry h = g;
  h.base[0] = host.data() - row * dim;  // RunItem adds row * sample_bytes
  h.base[1] = &host_label - row;
  const int64_t items = Gen::ItemsPerSample(p);
  for (int64_t item = 0; item < items; ++item)
    sdk::RunItem<Gen>(p, h, sdk::Inputs{}, keys, h.first_sample, row, item);
  int64_t worst = 0;
  for (int64_t i = 0; i < dim; ++i) {
    int32_t x, y;
    std::memcpy(&x, &dev[i], 4);
    std::memcpy(&y, &host[i], 4);
    worst = std::max<int64_t>(worst, std::llabs(int64_t{x} - y));
  }
  *worst_seen = std::max(*worst_seen, worst);
  if (worst != 0 || dev_label != host_label) {
    static int printed = 0;
    if (++printed <= 5)
      std::printf("MISMATCH row %" PRId64 ": %" PRId64 " ulp, label %d vs %d\n", row, worst,
                  dev_label, host_label);
    return false;
  }
  return true;
}

std::vector<std::string> SymbolNames(const std::string& path) {
  std::vector<std::string> names;
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) {
    std::fprintf(stderr, "cannot read %s (written by build.sh)\n", path.c_str());
    std::exit(1);
  }
  char line[1024];
  while (std::fgets(line, sizeof(line), f)) {
    std::string s(line);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    if (!s.empty()) names.push_back(s);
  }
  std::fclose(f);
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s KERNELS.cubin [LABEL]\n", argv[0]);
    return 2;
  }
  const char* label = argc > 2 ? argv[2] : "kernels";
  LoadDriver();
  CK(p_cuInit(0));
  CUdevice dev;
  CK(p_cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CK(p_cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(p_cuCtxSetCurrent(ctx));
  char name[256];
  CK(p_cuDeviceGetName(name, sizeof(name), dev));
  CK(p_cuDeviceGetAttribute(&g_sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CUmodule mod;
  CK(p_cuModuleLoad(&mod, argv[1]));
  std::printf("%s: %s, %d SMs, 1 GiB float32 outputs, best/median of 20 after 3 warm-up\n", label,
              name, g_sms);

  bool ok = true;
  {  // the 16-bit conversions: GPU converter == the CPU's integer rule, every finite float32
    CUdeviceptr counts;
    CK(p_cuMemAlloc(&counts, 4 * 8 + 4 * 4));
    const uint64_t zero[4] = {0, 0, 0, 0};
    const uint32_t none[4] = {~0u, ~0u, ~0u, ~0u};
    CK(p_cuMemcpyHtoD(counts, zero, sizeof(zero)));
    CK(p_cuMemcpyHtoD(counts + 32, none, sizeof(none)));
    CUdeviceptr first = counts + 32;
    void* args[] = {&counts, &first};
    CK(p_cuLaunchKernel(Kernel(mod, "CheckHalfConversions"), g_sms * 8, 1, 1, 256, 1, 1, 0, 0, args,
                        0));
    uint64_t bad[4];
    uint32_t first_bad[4];
    CK(p_cuMemcpyDtoH(bad, counts, sizeof(bad)));
    CK(p_cuMemcpyDtoH(first_bad, first, sizeof(first_bad)));
    const char* names[4] = {"bfloat16 nearest", "bfloat16 down", "float16 nearest", "float16 down"};
    for (int c = 0; c < 4; ++c) {
      std::printf("%s: 16-bit conversion %-16s over every finite float32: %" PRIu64
                  " mismatches%s\n",
                  label, names[c], bad[c], bad[c] ? "" : " (OK)");
      if (bad[c]) std::printf("%s   first mismatch at float32 bits 0x%08x\n", label, first_bad[c]);
      ok &= bad[c] == 0;
    }
    CK(p_cuMemFree(counts));
  }

  const int64_t kBytes = int64_t{1} << 30;
  CUdeviceptr out, labels;
  CK(p_cuMemAlloc(&out, kBytes));
  CK(p_cuMemAlloc(&labels, kBytes / 4));  // a label per row of >= 1 float
  const int threads = 256;

  {  // raw ceilings
    uint32_t n4 = static_cast<uint32_t>(kBytes / 16);
    float v = 1.5f;
    void* args[] = {&out, &n4, &v};
    CUfunction f = Kernel(mod, "RefFillFloat4");
    int grid = ResidentGrid(f, n4, threads);
    Report(label, "ref: fill, float4 stores", Time(f, grid, threads, args), kBytes, grid);
    tf_onthefly::PhiloxKey key{0x12345678u, 0x9abcdef0u};
    void* args2[] = {&out, &n4, &key};
    f = Kernel(mod, "RefPhiloxUniformFloat4");
    grid = ResidentGrid(f, n4, threads);
    Report(label, "ref: Philox uniform, float4 stores", Time(f, grid, threads, args2), kBytes,
           grid);
  }

  // The SDK kernel for random_batch (float32 features, int32 labels) at each items-per-thread
  // count K it can launch with and each of its kernel variants V
  // (GeneratorKernel<Gen, V, K, uint32_t>), reading seed and step from device memory.
  struct Variant {
    const char* what;
    const char* symbol_part;  // unique part of the kernel's mangled name (uint32 index)
    int k;                    // items per thread
    int v;                    // kernel variant
  };
  const Variant variants[] = {
      {"sdk V=0 K=1", "Float32EiEELi0ELi1EjEEv", 1, 0},
      {"sdk V=0 K=2", "Float32EiEELi0ELi2EjEEv", 2, 0},
      {"sdk V=0 K=4", "Float32EiEELi0ELi4EjEEv", 4, 0},
      {"sdk V=1 K=1", "Float32EiEELi1ELi1EjEEv", 1, 1},
      {"sdk V=1 K=2", "Float32EiEELi1ELi2EjEEv", 2, 1},
      {"sdk V=1 K=4", "Float32EiEELi1ELi4EjEEv", 4, 1},
  };
  const int64_t seed_step[3] = {1, 2, 3};  // seed (1, 2), step 3, in device memory
  CUdeviceptr inputs;
  CK(p_cuMemAlloc(&inputs, sizeof(seed_step)));
  CK(p_cuMemcpyHtoD(inputs, seed_step, sizeof(seed_step)));
  sdk::SeedAndStep in{reinterpret_cast<const int64_t*>(inputs), 2,
                      reinterpret_cast<const int64_t*>(inputs) + 2};
  const sdk::SeedAndStep host_in{seed_step, 2, seed_step + 2};
  const tf_onthefly::PhiloxKey keys[2] = {sdk::StreamKey(host_in, 0), sdk::StreamKey(host_in, 1)};
  std::vector<std::string> names = SymbolNames(std::string(argv[1]) + ".names");
  for (const Variant& v : variants) {
    std::string symbol;
    for (const std::string& n : names)
      if (n.find(v.symbol_part) != std::string::npos) symbol = n;
    if (symbol.empty()) continue;
    CUfunction gen = Kernel(mod, symbol.c_str());
    for (int64_t dim : {4096, 256, 16, 6}) {
      for (int dist = 0; dist < 3; ++dist) {
        rb::Params p{};
        p.feature_dim = dim;
        p.distribution = dist == 2 ? rb::Distribution::kNormal : rb::Distribution::kUniform;
        p.low = dist == 1 ? -2.f : 0.f;
        p.high = dist == 1 ? 3.f : 1.f;
        p.range = p.high - p.low;
        p.unit_range = dist == 0;
        p.label_mode = rb::LabelMode::kClasses;
        p.num_classes = 10;
        const int variant = Gen::Variant(p);
        if (v.v != 0 && variant != v.v) continue;  // a variant > 0 only ever runs its cases
        const int64_t rows = kBytes / (4 * dim);
        sdk::CallGeometry g{};
        g.num_samples = rows;
        g.first_sample = 12345;
        g.base[0] = reinterpret_cast<void*>(out);
        g.base[1] = reinterpret_cast<void*>(labels);
        g.sample_bytes[0] = dim * 4;
        g.sample_bytes[1] = 4;
        const int64_t items = Gen::ItemsPerSample(p);
        uint32_t ips = static_cast<uint32_t>(items);
        uint32_t groups = static_cast<uint32_t>((items + std::max(v.k, 1) - 1) / std::max(v.k, 1));
        uint32_t total = static_cast<uint32_t>(rows * groups);
        void* args[] = {&p, &g, &in, &ips, &groups, &total};
        const int grid = ResidentGrid(gen, total, threads);
        char what[128];
        std::snprintf(what, sizeof(what), "%s%s: %s, %" PRId64 " x %" PRId64, v.what,
                      v.k == sdk::ItemsPerThread(items) && v.v == variant ? " (launched)" : "",
                      dist == 0   ? "uniform [0,1)"
                      : dist == 1 ? "uniform [-2,3)"
                                  : "normal",
                      rows, dim);
        Report(label, what, Time(gen, grid, threads, args), double(rows) * (dim + 1) * 4, grid);
        CK(p_cuCtxSynchronize());
        int64_t worst = 0;
        for (int64_t i = 0; i < 64; ++i) {
          const int64_t row = i < 2 ? i : (rows - 1) * i / 63;
          ok &= CheckRows(p, g, keys, out, labels, row, &worst);
        }
        if (worst != 0) std::printf("%s   MISMATCH: %" PRId64 " ulp\n", label, worst);
      }
    }
  }
  std::printf("%s: rows checked against the host: %s\n", label, ok ? "OK" : "MISMATCH");
  CK(p_cuMemFree(out));
  CK(p_cuMemFree(labels));
  return ok ? 0 : 1;
}

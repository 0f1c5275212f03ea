// The SDK GPU kernel's decomposition of a call into work units, run on the host: every unit
// (row, group) of every items-per-thread count K the kernel launches with (1, 2, 4, 8), both
// index types and every kernel variant a call can pick, through sdk::RunUnit, the function
// the kernel runs per unit. Each must write, byte for byte, what the items write one by one
// (sdk::RunItem), and so must the CPU kernel's rows (sdk::FillRowsCpu, which runs batches
// of items and random_batch's whole-sample fast path). Generators with GenerateItems write
// K items per call, spaced a group apart on the GPU and adjacent on the CPU: this checks the
// spacing, the partial units of rows whose items are not a multiple of K, and the labels,
// for shapes the GPU tests do not reach (the GPU tests compare whole batches on a GPU).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tf_ops/random_batch/random_batch.h"
#include "tf_ops/sdk/generator.h"
#include "tf_ops/tabular_mixture/tabular_mixture.h"

namespace {

using tf_onthefly::PhiloxKey;
namespace sdk = tf_onthefly::sdk;
namespace rb = tf_onthefly::random_batch;
namespace mixture = tf_onthefly::tabular_mixture;

int g_failures = 0;
int g_checks = 0;

struct Buffers {
  std::vector<unsigned char> out[2];
  sdk::CallGeometry g{};
};

// Buffers of `rows` rows of each output, filled with a byte no generator writes everywhere.
Buffers Make(int64_t rows, int64_t first_sample, const int64_t (&sample_bytes)[2]) {
  Buffers b;
  b.g.batch_size = first_sample + rows + 3;
  b.g.num_samples = rows;
  b.g.first_sample = first_sample;
  for (int i = 0; i < 2; ++i) {
    b.out[i].assign(rows * sample_bytes[i], 0xA5);
    b.g.base[i] = b.out[i].data();
    b.g.sample_bytes[i] = sample_bytes[i];
  }
  return b;
}

void Expect(const Buffers& want, const Buffers& got, const char* what) {
  ++g_checks;
  for (int i = 0; i < 2; ++i) {
    if (want.out[i] != got.out[i]) {
      if (++g_failures <= 20) std::printf("MISMATCH %s: output %d\n", what, i);
      return;
    }
  }
}

// The kernel's units for variant V, K items per thread, index type Index.
template <typename Gen, int V, int K, typename Index>
void Units(const typename Gen::Params& p, const PhiloxKey* keys, const Buffers& want,
           const int64_t (&sample_bytes)[2], const char* what) {
  Buffers got = Make(want.g.num_samples, want.g.first_sample, sample_bytes);
  const Index items = static_cast<Index>(Gen::ItemsPerSample(p));
  const Index groups = (items + K - 1) / K;
  for (Index row = 0; row < static_cast<Index>(want.g.num_samples); ++row)
    for (Index group = 0; group < groups; ++group)
      sdk::RunUnit<Gen, V, K, Index>(p, got.g, sdk::Inputs{}, keys, got.g.first_sample, row, group,
                                     items, groups);
  char label[256];
  std::snprintf(label, sizeof(label), "%s, V=%d K=%d %s", what, V, K,
                sizeof(Index) == 4 ? "uint32" : "int64");
  Expect(want, got, label);
}

template <typename Gen, int V>
void AllUnits(const typename Gen::Params& p, const PhiloxKey* keys, const Buffers& want,
              const int64_t (&sample_bytes)[2], const char* what) {
  Units<Gen, V, 1, uint32_t>(p, keys, want, sample_bytes, what);
  Units<Gen, V, 2, uint32_t>(p, keys, want, sample_bytes, what);
  Units<Gen, V, 4, uint32_t>(p, keys, want, sample_bytes, what);
  Units<Gen, V, 8, uint32_t>(p, keys, want, sample_bytes, what);
  Units<Gen, V, 8, int64_t>(p, keys, want, sample_bytes, what);
  Units<Gen, V, 4, int64_t>(p, keys, want, sample_bytes, what);
}

// Items one by one (the reference), the CPU kernel's rows, and the kernel's units of every
// variant that may run these Params (variant 0, the general code, may run any).
template <typename Gen>
void Check(const typename Gen::Params& p, int64_t rows, const int64_t (&sample_bytes)[2],
           const char* what) {
  static_assert(sdk::HasGenerateItems<Gen>::value, "checks generators with GenerateItems");
  const PhiloxKey keys[2] = {{0x01234567u, 0x89ABCDEFu}, {0xDEADBEEFu, 0x0BADF00Du}};
  const int64_t first_sample = 1000003;
  Buffers want = Make(rows, first_sample, sample_bytes);
  const int64_t items = Gen::ItemsPerSample(p);
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t item = 0; item < items; ++item)
      sdk::RunItem<Gen>(p, want.g, sdk::Inputs{}, keys, first_sample, row, item);

  Buffers cpu = Make(rows, first_sample, sample_bytes);
  const sdk::Inputs no_inputs{};
  sdk::FillRowsCpu<Gen>(&p, &cpu.g, &no_inputs, keys, 0, rows);
  Expect(want, cpu, what);

  AllUnits<Gen, 0>(p, keys, want, sample_bytes, what);
  if constexpr (sdk::NumVariants<Gen>::value > 1) {
    if (sdk::VariantOf<Gen>(p) == 1) AllUnits<Gen, 1>(p, keys, want, sample_bytes, what);
  }
}

template <typename TFeature, typename TLabel>
void RandomBatch(const char* type) {
  using Gen = rb::RandomBatchGen<TFeature, TLabel>;
  for (int dist = 0; dist < 3; ++dist) {
    for (int64_t dim : {1, 3, 4, 6, 13, 28, 32, 64, 67, 260}) {
      rb::Params p{};
      p.feature_dim = dim;
      p.distribution = dist == 2 ? rb::Distribution::kNormal : rb::Distribution::kUniform;
      p.low = dist == 1 ? -2.0f : 0.0f;
      p.high = dist == 1 ? 3.0f : 1.0f;
      p.range = p.high - p.low;
      p.unit_range = dist == 0;
      p.low_up = p.low;  // -2 is a value of every feature type
      p.label_mode = dim % 2 ? rb::LabelMode::kBernoulli : rb::LabelMode::kClasses;
      p.p = 0.3f;
      p.num_classes = 10;
      char what[128];
      std::snprintf(what, sizeof(what), "random_batch %s, %s, feature_dim %lld", type,
                    dist == 0   ? "uniform [0,1)"
                    : dist == 1 ? "uniform [-2,3)"
                                : "normal",
                    static_cast<long long>(dim));
      const int64_t bytes[2] = {dim * static_cast<int64_t>(sizeof(typename TFeature::Storage)),
                                static_cast<int64_t>(sizeof(TLabel))};
      Check<Gen>(p, 7, bytes, what);
    }
  }
}

void TabularMixture() {
  for (int64_t dim : {1, 4, 5, 16, 30, 64, 67}) {
    mixture::Params p{};
    p.feature_dim = dim;
    p.num_classes = 7;
    p.cluster_std = 0.5f;
    p.separation = 2.0f;
    p.means = PhiloxKey{0x600DCAFEu, 0x12345678u};
    char what[128];
    std::snprintf(what, sizeof(what), "tabular_mixture, feature_dim %lld",
                  static_cast<long long>(dim));
    const int64_t bytes[2] = {dim * 4, 4};
    Check<mixture::TabularMixtureGen>(p, 7, bytes, what);
  }
}

}  // namespace

int main() {
  RandomBatch<tf_onthefly::Float32, int32_t>("float32");
  RandomBatch<tf_onthefly::BFloat16, int64_t>("bfloat16");
  RandomBatch<tf_onthefly::Float16, float>("float16");
  TabularMixture();
  std::printf("%d checks, %d mismatches\n", g_checks, g_failures);
  return g_failures == 0 && g_checks > 0 ? 0 : 1;
}

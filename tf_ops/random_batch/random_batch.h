// random_batch as an SDK generator: one work item = one Philox block = four consecutive
// features of one sample; item 0 also writes the sample's label. Shared by the CPU and the
// CUDA kernel, which is what makes their outputs agree element by element.
#ifndef TF_ONTHEFLY_RANDOM_BATCH_RANDOM_BATCH_H_
#define TF_ONTHEFLY_RANDOM_BATCH_RANDOM_BATCH_H_

#include <cstdint>
#include <type_traits>

#include "tf_ops/common/normal.h"
#include "tf_ops/common/uniform.h"
#include "tf_ops/sdk/generator.h"
#if !defined(__CUDACC__)
#include "tf_ops/common/philox_cpu.h"
#endif

namespace tf_onthefly {
namespace random_batch {

// Streams (docs/counter-contract.md): features and labels never share random words.
constexpr sdk::Stream<0> kFeatureStream{};
constexpr sdk::Stream<1> kLabelStream{};

enum class Distribution : int32_t { kUniform = 0, kNormal = 1 };
enum class LabelMode : int32_t { kBernoulli = 0, kClasses = 1 };

struct Params {
  int64_t feature_dim;
  Distribution distribution;
  float low, range, high;  // uniform: low + range * u, kept below high
  bool unit_range;         // low == 0 and high == 1: the words' own [0, 1) floats
  float low_up;            // 16-bit features: the least value of the type >= low
  LabelMode label_mode;
  float p;               // Bernoulli probability
  uint64_t num_classes;  // classes mode
};

// TFeature: Float32, BFloat16 or Float16 (uniform.h); TLabel: float, int32_t or int64_t.
template <typename TFeature, typename TLabel>
struct RandomBatchGen {
  using Params = random_batch::Params;
  using Feature = typename TFeature::Storage;
  static constexpr int kNumStreams = 2;

  OTF_HD static int64_t ItemsPerSample(const Params& p) { return (p.feature_dim + 3) / 4; }

  // GPU kernel variants (generator.h): 1 for [0, 1) features in rows of whole groups of four
  // (the default, and the bulk of generated data), where GenerateItems has none of its
  // branches on Params; 0 for everything else. The CPU runs variant 0.
  static constexpr int kNumVariants = 2;
  OTF_HD static int Variant(const Params& p) {
    return p.distribution == Distribution::kUniform && p.unit_range && (p.feature_dim & 3) == 0;
  }

  OTF_HD static void Generate(const Params& p, const sdk::SampleRng<kNumStreams>& rng,
                              int64_t block, const sdk::SampleOutputs& out) {
    GenerateItems<0, 1>(p, rng, block, 1, out);
  }

  // Blocks first + k * stride, k < K (generator.h): every block's words, then every
  // block's values, then their stores, so a GPU thread has K independent Box-Muller or
  // Philox chains to interleave; the branches on Params are taken once for the K blocks.
  template <int V, int K>
  OTF_HD static void GenerateItems(const Params& p, const sdk::SampleRng<kNumStreams>& rng,
                                   int64_t first, int64_t stride, const sdk::SampleOutputs& out) {
    constexpr bool kUnitRow4 = V == 1;  // Variant(p) == 1 settles the two tests below
    Words4 w[K];
    OTF_UNROLL
    for (int k = 0; k < K; ++k)
      w[k] = rng.Block(kFeatureStream, static_cast<uint32_t>(first + k * stride));
    Feature v[K][4];
    if (kUnitRow4 || (p.distribution == Distribution::kUniform && p.unit_range)) {
      // [0, 1): low + 1 * u is u exactly and u < 1, so this is the general path's value;
      // rounded down in a 16-bit type it stays in [0, 1) (0 is every type's own).
      OTF_UNROLL
      for (int k = 0; k < K; ++k)
        for (int i = 0; i < 4; ++i)
          v[k][i] = TFeature::template From<Rounding::kDown>(UniformFloat(w[k][i]));
    } else if (p.distribution == Distribution::kUniform) {
      OTF_UNROLL
      for (int k = 0; k < K; ++k)
        for (int i = 0; i < 4; ++i) v[k][i] = Uniform(p, w[k][i]);
    } else {
      OTF_UNROLL
      for (int k = 0; k < K; ++k) {
        float z[4];
        BoxMuller(w[k].w0, w[k].w1, &z[0], &z[1]);
        BoxMuller(w[k].w2, w[k].w3, &z[2], &z[3]);
        for (int i = 0; i < 4; ++i) v[k][i] = TFeature::template From<Rounding::kNearestEven>(z[i]);
      }
    }
    // Rows a multiple of 4 values long: aligned vector stores (TF aligns to 64 bytes).
    sdk::StoreBlocks4<K>(out.get<Feature>(0), p.feature_dim, kUnitRow4 || (p.feature_dim & 3) == 0,
                         first, stride, v);
    if (first == 0) *out.get<TLabel>(1) = Label(p, rng);  // block 0 can only be the first
  }

  // A uniform in [low, high) of the feature type: the float32 value (below high), rounded
  // down, and no lower than the type's least value >= low.
  OTF_HD static Feature Uniform(const Params& p, uint32_t word) {
    const float x = UniformInRange(word, p.low, p.range, p.high);
    if constexpr (std::is_same_v<TFeature, Float32>) return x;
    const Feature down = TFeature::template From<Rounding::kDown>(x);
    return TFeature::ToFloat(down) < p.low_up ? TFeature::template From<Rounding::kDown>(p.low_up)
                                              : down;
  }

#if !defined(__CUDACC__)
  // CPU fast paths for [0, 1) features (the default) and normals: the float32 values of the
  // items, eight Philox blocks at a time (AVX2 + FMA); a 16-bit type rounds them from a
  // buffer on the stack as the items do. Everything else runs the items.
  static bool GenerateSampleCpu(const Params& p, const sdk::SampleRng<kNumStreams>& rng,
                                const sdk::SampleOutputs& out) {
    const bool normal = p.distribution == Distribution::kNormal;
    if (!normal && !p.unit_range) return false;
    const int64_t full_blocks = p.feature_dim / 4;
    const auto float_blocks = [&](int64_t first, int64_t n, float* dst) {
      (normal ? NormalFloatBlocks : UniformFloatBlocks)(rng.key(kFeatureStream), rng.sample(),
                                                        static_cast<uint32_t>(first), n, dst);
    };
    Feature* dst = out.get<Feature>(0);
    if constexpr (std::is_same_v<TFeature, Float32>) {
      float_blocks(0, full_blocks, dst);
    } else {
      constexpr int64_t kChunkBlocks = 64;  // 1 KiB of float32 values, in L1
      float buf[4 * kChunkBlocks];
      for (int64_t b = 0; b < full_blocks; b += kChunkBlocks) {
        const int64_t n = full_blocks - b < kChunkBlocks ? full_blocks - b : kChunkBlocks;
        float_blocks(b, n, buf);
        Feature* d = dst + 4 * b;
        if constexpr (std::is_same_v<TFeature, Float16>) {
          Float32ToFloat16(buf, 4 * n, /*round_down=*/!normal, d);
        } else if (normal) {
          for (int64_t i = 0; i < 4 * n; ++i)
            d[i] = TFeature::template From<Rounding::kNearestEven>(buf[i]);
        } else {
          for (int64_t i = 0; i < 4 * n; ++i)
            d[i] = TFeature::template From<Rounding::kDown>(buf[i]);
        }
      }
    }
    if (4 * full_blocks < p.feature_dim) Generate(p, rng, full_blocks, out);  // partial block
    if (full_blocks > 0) *out.get<TLabel>(1) = Label(p, rng);  // else the item above wrote it
    return true;
  }
#endif

  OTF_HD static TLabel Label(const Params& p, const sdk::SampleRng<kNumStreams>& rng) {
    const Words4 w = rng.Block(kLabelStream, 0);
    if (p.label_mode == LabelMode::kBernoulli) {
      return static_cast<TLabel>(UniformFloat(w.w0) < p.p ? 1 : 0);
    }
    return static_cast<TLabel>(UniformBelow(w.w0, w.w1, p.num_classes));
  }
};

}  // namespace random_batch
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_RANDOM_BATCH_RANDOM_BATCH_H_

// random_batch as an SDK generator: one work item = one Philox block = four consecutive
// features of one sample; item 0 also writes the sample's label. Shared by the CPU and the
// CUDA kernel, which is what makes their outputs agree element by element.
#ifndef TF_ONTHEFLY_RANDOM_BATCH_RANDOM_BATCH_H_
#define TF_ONTHEFLY_RANDOM_BATCH_RANDOM_BATCH_H_

#include <cstdint>

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
  LabelMode label_mode;
  float p;               // Bernoulli probability
  uint64_t num_classes;  // classes mode
};

template <typename TLabel>
struct RandomBatchGen {
  using Params = random_batch::Params;
  static constexpr int kNumStreams = 2;

  OTF_HD static int64_t ItemsPerSample(const Params& p) { return (p.feature_dim + 3) / 4; }

  // GPU kernel variants (generator.h): 1 for [0, 1) features in rows of whole float4s (the
  // default, and the bulk of generated data), where the body below has none of its branches
  // on Params; 0 for everything else. The CPU runs Generate, i.e. variant 0.
  static constexpr int kNumVariants = 2;
  OTF_HD static int Variant(const Params& p) {
    return p.distribution == Distribution::kUniform && p.unit_range && (p.feature_dim & 3) == 0;
  }

  OTF_HD static void Generate(const Params& p, const sdk::SampleRng<kNumStreams>& rng,
                              int64_t block, const sdk::SampleOutputs& out) {
    GenerateVariant<0>(p, rng, block, out);
  }

  template <int V>
  OTF_HD static void GenerateVariant(const Params& p, const sdk::SampleRng<kNumStreams>& rng,
                                     int64_t block, const sdk::SampleOutputs& out) {
    constexpr bool kUnitFloat4 = V == 1;  // Variant(p) == 1 settles the two tests below
    const Words4 w = rng.Block(kFeatureStream, static_cast<uint32_t>(block));
    float v[4];
    if (kUnitFloat4 || (p.distribution == Distribution::kUniform && p.unit_range)) {
      // [0, 1): low + 1 * u is u exactly and u < 1, so this is the general path's value.
      v[0] = UniformFloat(w.w0);
      v[1] = UniformFloat(w.w1);
      v[2] = UniformFloat(w.w2);
      v[3] = UniformFloat(w.w3);
    } else if (p.distribution == Distribution::kUniform) {
      v[0] = UniformInRange(w.w0, p.low, p.range, p.high);
      v[1] = UniformInRange(w.w1, p.low, p.range, p.high);
      v[2] = UniformInRange(w.w2, p.low, p.range, p.high);
      v[3] = UniformInRange(w.w3, p.low, p.range, p.high);
    } else {
      BoxMuller(w.w0, w.w1, &v[0], &v[1]);
      BoxMuller(w.w2, w.w3, &v[2], &v[3]);
    }
    float* dst = out.get<float>(0) + 4 * block;
    const int64_t n = p.feature_dim - 4 * block;
#if defined(__CUDA_ARCH__)
    // Rows a multiple of 4 floats long: one aligned 16-byte store (TF aligns to 64 bytes).
    if (kUnitFloat4 || (p.feature_dim & 3) == 0) {
      *reinterpret_cast<float4*>(dst) = make_float4(v[0], v[1], v[2], v[3]);
    } else
#endif
    {
      for (int i = 0; i < 4 && i < n; ++i) dst[i] = v[i];
    }
    if (block == 0) *out.get<TLabel>(1) = Label(p, rng);
  }

#if !defined(__CUDACC__)
  // CPU fast path for [0, 1) features, the default and the common case: the same values as
  // the items', eight Philox blocks at a time (AVX2). Other distributions run the items.
  static bool GenerateSampleCpu(const Params& p, const sdk::SampleRng<kNumStreams>& rng,
                                const sdk::SampleOutputs& out) {
    if (p.distribution != Distribution::kUniform || !p.unit_range) return false;
    const int64_t full_blocks = p.feature_dim / 4;
    UniformFloatBlocks(rng.key(kFeatureStream), rng.sample(), 0, full_blocks, out.get<float>(0));
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

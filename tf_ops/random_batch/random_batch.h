// random_batch: the functor shared by the CPU kernel (random_batch_kernels.cc) and the
// CUDA kernel (random_batch_kernels.cu.cc). Both call the same per-block and per-label
// functions below, which is what makes their outputs agree element by element.
#ifndef TF_ONTHEFLY_RANDOM_BATCH_RANDOM_BATCH_H_
#define TF_ONTHEFLY_RANDOM_BATCH_RANDOM_BATCH_H_

#include <cstdint>

#include "tf_ops/common/philox.h"
#include "tf_ops/common/uniform.h"

namespace tf_onthefly {
namespace random_batch {

// Stream ids: each output draws from its own key, so features and labels never share
// random words (docs/counter-contract.md).
constexpr uint32_t kFeatureStream = 0;
constexpr uint32_t kLabelStream = 1;

enum class Distribution : int32_t { kUniform = 0, kNormal = 1 };
enum class LabelMode : int32_t { kBernoulli = 0, kClasses = 1 };

// Everything a kernel needs, computed once per op call on the host.
struct Params {
  int64_t num_samples;   // rows of this call's output
  int64_t feature_dim;   // columns of `features`
  int64_t first_sample;  // global sample index of row 0
  PhiloxKey feature_key;
  PhiloxKey label_key;
  Distribution distribution;
  float low, range, high;  // uniform: low + range * u, kept below high
  LabelMode label_mode;
  float p;               // Bernoulli probability
  uint64_t num_classes;  // classes mode
};

// Features: block b of a sample holds elements 4b..4b+3 of that sample's row.
OTF_HD int64_t BlocksPerRow(int64_t feature_dim) { return (feature_dim + 3) / 4; }

// The (up to) four feature values of block `block` of row `row`.
OTF_HD void FeatureBlock(const Params& p, int64_t row, int64_t block, float v[4]) {
  const Words4 w = SampleBlock(p.feature_key, static_cast<uint64_t>(p.first_sample + row),
                               static_cast<uint32_t>(block));
  if (p.distribution == Distribution::kUniform) {
    v[0] = UniformInRange(w.w0, p.low, p.range, p.high);
    v[1] = UniformInRange(w.w1, p.low, p.range, p.high);
    v[2] = UniformInRange(w.w2, p.low, p.range, p.high);
    v[3] = UniformInRange(w.w3, p.low, p.range, p.high);
  } else {
    BoxMuller(w.w0, w.w1, &v[0], &v[1]);
    BoxMuller(w.w2, w.w3, &v[2], &v[3]);
  }
}

// The label of row `row`: block 0 of the label stream.
template <typename TLabel>
OTF_HD TLabel Label(const Params& p, int64_t row) {
  const Words4 w =
      SampleBlock(p.label_key, static_cast<uint64_t>(p.first_sample + row), 0u);
  if (p.label_mode == LabelMode::kBernoulli) {
    return static_cast<TLabel>(UniformFloat(w.w0) < p.p ? 1 : 0);
  }
  return static_cast<TLabel>(UniformBelow(w.w0, w.w1, p.num_classes));
}

// GPU launcher (random_batch_kernels.cu.cc): returns a cudaError_t as int.
template <typename TLabel>
int LaunchRandomBatch(const Params& params, float* features, TLabel* labels, void* stream);

}  // namespace random_batch
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_RANDOM_BATCH_RANDOM_BATCH_H_

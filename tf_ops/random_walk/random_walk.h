// random_walk: the tutorial generator (docs/writing-a-generator.md).
// Each sample is a walk of `length` +1/-1 steps; its label is 1 if the walk ends above 0.
#ifndef TF_ONTHEFLY_RANDOM_WALK_RANDOM_WALK_H_
#define TF_ONTHEFLY_RANDOM_WALK_RANDOM_WALK_H_

#include <cstdint>

#include "tf_ops/sdk/generator.h"

namespace tf_onthefly {
namespace random_walk {

struct Params {
  int64_t length;
};

struct RandomWalkGen {
  using Params = random_walk::Params;
  static constexpr int kNumStreams = 1;
  static constexpr sdk::Stream<0> kStepStream{};

  // One thread writes a whole walk: each position depends on the one before.
  OTF_HD static int64_t ItemsPerSample(const Params&) { return 1; }

  OTF_HD static void Generate(const Params& p, const sdk::SampleRng<kNumStreams>& rng, int64_t,
                              const sdk::SampleOutputs& out) {
    int32_t* walk = out.get<int32_t>(0);
    int32_t position = 0;
    Words4 bits{};
    for (int64_t t = 0; t < p.length; ++t) {
      // One random bit per step: a Philox block (128 bits) serves 128 steps.
      if (t % 128 == 0) bits = rng.Block(kStepStream, static_cast<uint32_t>(t / 128));
      const int b = static_cast<int>(t % 128);
      position += ((bits[b / 32] >> (b % 32)) & 1u) ? 1 : -1;
      walk[t] = position;
    }
    *out.get<int32_t>(1) = position > 0 ? 1 : 0;
  }
};

}  // namespace random_walk
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_RANDOM_WALK_RANDOM_WALK_H_

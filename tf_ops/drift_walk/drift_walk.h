// drift_walk: +1/-1 walks whose drift depends on the sample's class, for sequence
// classifiers. Its GPU code is a block-cooperative CUDA kernel (CUB, shared memory, scratch
// memory) brought as it is: the tutorial's second part (docs/bringing-a-kernel.md).
#ifndef TF_ONTHEFLY_DRIFT_WALK_DRIFT_WALK_H_
#define TF_ONTHEFLY_DRIFT_WALK_DRIFT_WALK_H_

#include <cstdint>

#include "tf_ops/sdk/generator.h"

namespace tf_onthefly {
namespace drift_walk {

struct Params {
  int64_t length;
};

// The kernels' launcher (drift_walk_kernels.cu.cc): the walks of `rows` samples, global
// indices FirstGlobalSample(seed_step, first_sample) .., on `stream`. Walks longer than one
// tile of the block scan need DriftWalkTiles(length) ints of `tile_sums` scratch per sample;
// shorter ones none.
int64_t DriftWalkTiles(int64_t length);
cudaError_t LaunchDriftWalks(sdk::SeedAndStep seed_step, int64_t first_sample, int64_t rows,
                             int64_t length, const float* up_probability, int64_t num_classes,
                             int32_t* walks, int32_t* labels, int32_t* tile_sums,
                             cudaStream_t stream);

struct DriftWalkGen {
  using Params = drift_walk::Params;
  static constexpr int kNumStreams = 2;
  static constexpr sdk::Stream<0> kStepStream{};   // step t: block t / 4, word t % 4
  static constexpr sdk::Stream<1> kClassStream{};  // the class: block 0, words 0 and 1

  // GPU: LaunchDriftWalks, with scratch from the SDK (drift_walk_kernels.cu.cc), and the
  // most scratch a call asks for (sized when XLA compiles the op).
  static cudaError_t Launch(const sdk::GpuCall<Params>& call);
  static int64_t ScratchBytes(const Params& p, int64_t rows);

  // CPU: the same walks, one sample at a time, step by step.
  OTF_HD static int64_t ItemsPerSample(const Params&) { return 1; }

  OTF_HD static void Generate(const Params& p, const sdk::SampleRng<kNumStreams>& rng, int64_t,
                              const sdk::SampleOutputs& out, const sdk::SampleInputs& in) {
    const Words4 c = rng.Block(kClassStream, 0);
    const int64_t label =
        static_cast<int64_t>(UniformBelow(c.w0, c.w1, static_cast<uint64_t>(in.size(0))));
    const float up = in.get<float>(0)[label];
    int32_t* walk = out.get<int32_t>(0);
    int32_t position = 0;
    Words4 w{};
    for (int64_t t = 0; t < p.length; ++t) {
      if (t % 4 == 0) w = rng.Block(kStepStream, static_cast<uint32_t>(t / 4));
      position += UniformFloat(w[static_cast<int>(t % 4)]) < up ? 1 : -1;
      walk[t] = position;
    }
    *out.get<int32_t>(1) = static_cast<int32_t>(label);
  }
};

}  // namespace drift_walk
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_DRIFT_WALK_DRIFT_WALK_H_

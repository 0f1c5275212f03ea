// OnTheFly>RandomWalk: attributes, op registration and CPU/GPU kernels, all from the SDK.
#include "tf_ops/random_walk/random_walk.h"
#include "tf_ops/sdk/generator_def.h"

namespace tf_onthefly {
namespace random_walk {

struct RandomWalkConfig {
  using Params = random_walk::Params;

  static sdk::Status Configure(const sdk::Attrs& a, Params* p, sdk::SampleShapes* shapes) {
    OTF_RETURN_IF_ERROR(a.GetAttr("length", &p->length));
    OTF_REQUIRE(p->length >= 1 && p->length <= (1 << 20), "length must be in [1, 1048576], got ",
                p->length);
    shapes->Add("walks", {p->length});
    shapes->Add("labels", {1});
    return sdk::OkStatus();
  }
};

OTF_GENERATOR("OnTheFly>RandomWalk", RandomWalkConfig)
    .Output("walks: int32")
    .Output("labels: int32")
    .Attr("length: int")
    .Doc(R"doc(
Random walks of +1/-1 steps, and whether each ends above 0 (the tutorial generator).

Step t of a walk is bit t % 32 of word t / 32 of stream 0 (1 means +1).

walks: [num_samples, length] int32: the walk's positions after each step.
labels: [num_samples, 1] int32: 1 if the walk ends above 0, else 0.
length: Steps per walk, in [1, 2^20].
)doc");

OTF_GENERATOR_KERNELS(RandomWalkConfig, RandomWalkGen)("OnTheFly>RandomWalk");

}  // namespace random_walk
}  // namespace tf_onthefly

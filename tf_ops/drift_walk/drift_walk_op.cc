// OnTheFly>DriftWalk: attributes, its tensor input, op registration and kernels, from the
// SDK; the GPU launch is the generator's own (drift_walk_kernels.cu.cc).
#include "tf_ops/drift_walk/drift_walk.h"
#include "tf_ops/sdk/generator_def.h"

namespace tf_onthefly {
namespace drift_walk {

struct DriftWalkConfig {
  using Params = drift_walk::Params;

  static sdk::Status Configure(const sdk::Attrs& a, Params* p, sdk::SampleShapes* shapes) {
    OTF_RETURN_IF_ERROR(a.GetAttr("length", &p->length));
    OTF_REQUIRE(p->length >= 1 && p->length <= (1 << 20), "length must be in [1, 1048576], got ",
                p->length);
    shapes->AddInput("up_probability", {sdk::kAnySize}, sdk::ValueRule::InRange(0, 1));
    shapes->Add("walks", {p->length});
    shapes->Add("labels", {1});
    return sdk::OkStatus();
  }
};

OTF_GENERATOR("OnTheFly>DriftWalk", DriftWalkConfig)
    .Input("up_probability: float")
    .Output("walks: int32")
    .Output("labels: int32")
    .Attr("length: int")
    .Doc(R"doc(
Walks of +1/-1 steps whose chance of going up is their class's, and the class.

A sample's class c is uniform in [0, n) (n = the length of up_probability) from words 0
(high) and 1 (low) of block 0 of stream 1; step t goes up (+1) if the uniform [0, 1) of
word t % 4 of block t / 4 of stream 0 is below up_probability[c], else down (-1).
Bit-identical on CPU and GPU. The GPU kernels are block-cooperative (a CUB block scan per
tile of 2048 steps, and scratch memory for walks longer than one tile).

up_probability: float32 [n], n >= 1: each class's chance of a step up, in [0, 1]. The CPU
  kernels refuse a value outside [0, 1] or NaN; the GPU reads the tensor only on the device,
  where a NaN or a value below 0 never steps up and a value above 1 always does.
walks: [num_samples, length] int32: each walk's position after each step.
labels: [num_samples, 1] int32: each walk's class, in [0, n).
length: Steps per walk, in [1, 2^20].
)doc");

OTF_GENERATOR_KERNELS(DriftWalkConfig, DriftWalkGen)("OnTheFly>DriftWalk");

}  // namespace drift_walk
}  // namespace tf_onthefly

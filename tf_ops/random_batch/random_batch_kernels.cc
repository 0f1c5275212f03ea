// OnTheFly>RandomBatch: registration, attribute checks, CPU and GPU kernels (via the SDK).
#include <cmath>

#include "tf_ops/random_batch/random_batch.h"
#include "tf_ops/sdk/generator_op.h"

namespace tf_onthefly {
namespace random_batch {

template <typename TLabel>
struct RandomBatchConfig {
  using Gen = RandomBatchGen<TLabel>;

  template <typename Ctx>
  static absl::Status Configure(Ctx* c, Params* p, sdk::SampleShapes* shapes) {
    std::string distribution, label_mode;
    int64_t num_classes;
    TF_RETURN_IF_ERROR(c->GetAttr("feature_dim", &p->feature_dim));
    TF_RETURN_IF_ERROR(c->GetAttr("distribution", &distribution));
    TF_RETURN_IF_ERROR(c->GetAttr("low", &p->low));
    TF_RETURN_IF_ERROR(c->GetAttr("high", &p->high));
    TF_RETURN_IF_ERROR(c->GetAttr("label_mode", &label_mode));
    TF_RETURN_IF_ERROR(c->GetAttr("p", &p->p));
    TF_RETURN_IF_ERROR(c->GetAttr("num_classes", &num_classes));

    OTF_REQUIRE(p->feature_dim >= 1, "feature_dim must be >= 1, got ", p->feature_dim);
    p->distribution = distribution == "normal" ? Distribution::kNormal : Distribution::kUniform;
    if (p->distribution == Distribution::kUniform) {
      OTF_REQUIRE(std::isfinite(p->low) && std::isfinite(p->high) && p->low < p->high,
                  "low and high must be finite with low < high, got low=", p->low,
                  ", high=", p->high);
      OTF_REQUIRE(std::isfinite(p->high - p->low), "high - low must be finite in float32, got low=",
                  p->low, ", high=", p->high);
    }
    p->range = p->high - p->low;
    p->unit_range = p->low == 0.0f && p->high == 1.0f;
    p->label_mode = label_mode == "classes" ? LabelMode::kClasses : LabelMode::kBernoulli;
    OTF_REQUIRE(p->p >= 0.0f && p->p <= 1.0f, "p must be in [0, 1], got ", p->p);
    OTF_REQUIRE(num_classes >= 1, "num_classes must be >= 1, got ", num_classes);
    p->num_classes = static_cast<uint64_t>(num_classes);

    shapes->Add("features", {p->feature_dim}, sizeof(float));
    shapes->Add("labels", {1}, sizeof(TLabel));
    return absl::OkStatus();
  }
};

OTF_REGISTER_GENERATOR_OP("OnTheFly>RandomBatch", RandomBatchConfig<float>)
    .Output("features: float")
    .Output("labels: label_dtype")
    .Attr("feature_dim: int")
    .Attr("distribution: {'uniform', 'normal'} = 'uniform'")
    .Attr("low: float = 0.0")
    .Attr("high: float = 1.0")
    .Attr("label_mode: {'bernoulli', 'classes'} = 'bernoulli'")
    .Attr("p: float = 0.5")
    .Attr("num_classes: int = 2")
    .Attr("label_dtype: {float, int32, int64} = DT_FLOAT")
    .Doc(R"doc(
A batch of random features and labels, a pure function of (seed, step, sample index).

Row i of the output is global sample first_sample + i of the step's global batch of
batch_size samples; docs/counter-contract.md gives the exact mapping.
)doc");

OTF_REGISTER_GENERATOR_KERNELS_FOR_LABEL_TYPES("OnTheFly>RandomBatch", "label_dtype", RandomBatchConfig);

}  // namespace random_batch
}  // namespace tf_onthefly

// OnTheFly>TeacherTask: registration, attribute checks, CPU and GPU kernels (via the SDK).
#include <cmath>

#include "tf_ops/sdk/generator_op.h"
#include "tf_ops/teacher_task/teacher_task.h"

namespace tf_onthefly {
namespace teacher_task {

constexpr int64_t kMaxFeatureDim = 1 << 16;
constexpr int64_t kMaxHidden = 4096;

template <typename TLabel>
struct TeacherTaskConfig {
  using Gen = TeacherTaskGen<TLabel>;

  template <typename Ctx>
  static absl::Status Configure(Ctx* c, Params* p, sdk::SampleShapes* shapes) {
    std::string task, distribution;
    int64_t num_classes, task_seed;
    tensorflow::DataType label_dtype;
    TF_RETURN_IF_ERROR(c->GetAttr("feature_dim", &p->feature_dim));
    TF_RETURN_IF_ERROR(c->GetAttr("hidden", &p->hidden));
    TF_RETURN_IF_ERROR(c->GetAttr("task", &task));
    TF_RETURN_IF_ERROR(c->GetAttr("num_classes", &num_classes));
    TF_RETURN_IF_ERROR(c->GetAttr("noise", &p->noise));
    TF_RETURN_IF_ERROR(c->GetAttr("task_seed", &task_seed));
    TF_RETURN_IF_ERROR(c->GetAttr("distribution", &distribution));
    TF_RETURN_IF_ERROR(c->GetAttr("label_dtype", &label_dtype));

    OTF_REQUIRE(p->feature_dim >= 1 && p->feature_dim <= kMaxFeatureDim,
                "feature_dim must be in [1, ", kMaxFeatureDim, "], got ", p->feature_dim);
    OTF_REQUIRE(p->hidden >= 1 && p->hidden <= kMaxHidden, "hidden must be in [1, ", kMaxHidden,
                "], got ", p->hidden);
    p->classification = task == "classification";
    p->normal_features = distribution == "normal";
    if (p->classification) {
      OTF_REQUIRE(num_classes >= 2 && num_classes <= kMaxOutputs, "num_classes must be in [2, ",
                  kMaxOutputs, "] for task='classification', got ", num_classes);
      OTF_REQUIRE(p->noise >= 0.0f && p->noise <= 1.0f,
                  "noise (the label flip probability) must be in [0, 1], got ", p->noise);
      p->outputs = num_classes;
    } else {
      OTF_REQUIRE(label_dtype == tensorflow::DT_FLOAT,
                  "label_dtype must be float32 for task='regression', got ",
                  tensorflow::DataTypeString(label_dtype));
      OTF_REQUIRE(std::isfinite(p->noise) && p->noise >= 0.0f,
                  "noise (the regression noise std) must be finite and >= 0, got ", p->noise);
      p->outputs = 1;
    }
    p->w1_scale = std::sqrt(3.0f / static_cast<float>(p->feature_dim));
    p->w2_scale = std::sqrt(3.0f / static_cast<float>(p->hidden));
    const uint64_t ts = static_cast<uint64_t>(task_seed);
    p->w1 = DeriveKey(ts, 0, kW1Stream, 0);
    p->b1 = DeriveKey(ts, 0, kB1Stream, 0);
    p->w2 = DeriveKey(ts, 0, kW2Stream, 0);

    shapes->Add("features", {p->feature_dim}, sizeof(float));
    shapes->Add("labels", {1}, sizeof(TLabel));
    return absl::OkStatus();
  }
};

OTF_REGISTER_GENERATOR_OP("OnTheFly>TeacherTask", TeacherTaskConfig<int32_t>)
    .Output("features: float")
    .Output("labels: label_dtype")
    .Attr("feature_dim: int")
    .Attr("task: {'classification', 'regression'} = 'classification'")
    .Attr("num_classes: int = 4")
    .Attr("hidden: int = 32")
    .Attr("noise: float = 0.0")
    .Attr("task_seed: int = 0")
    .Attr("distribution: {'normal', 'uniform'} = 'normal'")
    .Attr("label_dtype: {int32, int64, float} = DT_INT32")
    .Doc(R"doc(
Features and the labels a fixed random two-layer ReLU teacher (chosen by task_seed) gives
them; classification (argmax, optional label flips) or regression (plus Gaussian noise).
)doc");

OTF_REGISTER_GENERATOR_KERNELS_FOR_LABEL_TYPES("OnTheFly>TeacherTask", "label_dtype", TeacherTaskConfig);

}  // namespace teacher_task
}  // namespace tf_onthefly

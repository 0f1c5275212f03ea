// Attributes of OnTheFly>RandomBatch: parsed and validated once, by the same code, in the
// shape function (graph construction) and in the kernel constructor (eager and graph).
#ifndef TF_ONTHEFLY_RANDOM_BATCH_RANDOM_BATCH_ATTRS_H_
#define TF_ONTHEFLY_RANDOM_BATCH_RANDOM_BATCH_ATTRS_H_

#include <cmath>
#include <string>

#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tf_ops/common/tf_glue.h"
#include "tf_ops/random_batch/random_batch.h"

namespace tf_onthefly {
namespace random_batch {

struct Attrs {
  int64_t batch_size = 0;
  int64_t feature_dim = 0;
  int64_t num_samples = -1;
  std::string distribution;
  float low = 0, high = 0;
  std::string label_mode;
  float p = 0;
  int64_t num_classes = 0;

  // Rows this call produces: num_samples, or the whole global batch when it is -1.
  int64_t rows() const { return num_samples < 0 ? batch_size : num_samples; }

  template <typename Context>  // InferenceContext or OpKernelConstruction
  static absl::Status Parse(Context* c, Attrs* a) {
    TF_RETURN_IF_ERROR(c->GetAttr("batch_size", &a->batch_size));
    TF_RETURN_IF_ERROR(c->GetAttr("feature_dim", &a->feature_dim));
    TF_RETURN_IF_ERROR(c->GetAttr("num_samples", &a->num_samples));
    TF_RETURN_IF_ERROR(c->GetAttr("distribution", &a->distribution));
    TF_RETURN_IF_ERROR(c->GetAttr("low", &a->low));
    TF_RETURN_IF_ERROR(c->GetAttr("high", &a->high));
    TF_RETURN_IF_ERROR(c->GetAttr("label_mode", &a->label_mode));
    TF_RETURN_IF_ERROR(c->GetAttr("p", &a->p));
    TF_RETURN_IF_ERROR(c->GetAttr("num_classes", &a->num_classes));
    return a->Validate();
  }

  static absl::Status FromShapeContext(tensorflow::shape_inference::InferenceContext* c,
                                       Attrs* a) {
    return Parse(c, a);
  }

  absl::Status Validate() const {
    using absl::InvalidArgumentError;
    using absl::StrCat;
    if (batch_size < 1)
      return InvalidArgumentError(StrCat("batch_size must be >= 1, got ", batch_size));
    if (feature_dim < 1)
      return InvalidArgumentError(StrCat("feature_dim must be >= 1, got ", feature_dim));
    if (num_samples < -1 || num_samples > batch_size)
      return InvalidArgumentError(StrCat(
          "num_samples must be -1 (the whole batch) or in [0, batch_size] = [0, ", batch_size,
          "], got ", num_samples));
    if (distribution == "uniform") {
      if (!std::isfinite(low) || !std::isfinite(high) || !(low < high))
        return InvalidArgumentError(StrCat("low and high must be finite with low < high, got low=",
                                           low, ", high=", high));
      if (!std::isfinite(high - low))
        return InvalidArgumentError(StrCat("high - low must be finite in float32, got low=", low,
                                           ", high=", high));
    }
    if (!(p >= 0.0f && p <= 1.0f))
      return InvalidArgumentError(StrCat("p must be in [0, 1], got ", p));
    if (num_classes < 1)
      return InvalidArgumentError(StrCat("num_classes must be >= 1, got ", num_classes));
    return CheckOutputSize("features", rows(), feature_dim, sizeof(float));
  }
};

}  // namespace random_batch
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_RANDOM_BATCH_RANDOM_BATCH_ATTRS_H_

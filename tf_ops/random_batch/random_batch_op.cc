// OnTheFly>RandomBatch: registration and shape function.
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tf_ops/common/tf_glue.h"
#include "tf_ops/random_batch/random_batch_attrs.h"

namespace tf_onthefly {
namespace random_batch {

using ::tensorflow::shape_inference::InferenceContext;

REGISTER_OP("OnTheFly>RandomBatch")
    .Input("seed: int64")
    .Input("step: int64")
    .Input("first_sample: int64")
    .Output("features: float")
    .Output("labels: label_dtype")
    .Attr("batch_size: int")
    .Attr("feature_dim: int")
    .Attr("num_samples: int = -1")
    .Attr("distribution: {'uniform', 'normal'} = 'uniform'")
    .Attr("low: float = 0.0")
    .Attr("high: float = 1.0")
    .Attr("label_mode: {'bernoulli', 'classes'} = 'bernoulli'")
    .Attr("p: float = 0.5")
    .Attr("num_classes: int = 2")
    .Attr("label_dtype: {float, int32, int64} = DT_FLOAT")
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      Attrs attrs;
      TF_RETURN_IF_ERROR(Attrs::FromShapeContext(c, &attrs));
      TF_RETURN_IF_ERROR(SeedShape(c, 0));
      TF_RETURN_IF_ERROR(ScalarShape(c, 1, "step"));
      TF_RETURN_IF_ERROR(ScalarShape(c, 2, "first_sample"));
      c->set_output(0, c->Matrix(attrs.rows(), attrs.feature_dim));
      c->set_output(1, c->Matrix(attrs.rows(), 1));
      return absl::OkStatus();
    })
    .Doc(R"doc(
A batch of random features and labels, a pure function of (seed, step, sample index).

Row i of the output is global sample first_sample + i of the step's global batch of
batch_size samples; see docs/counter-contract.md for the exact mapping.
)doc");

}  // namespace random_batch
}  // namespace tf_onthefly

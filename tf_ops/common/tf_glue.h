// TensorFlow-side helpers of the op library (the generators' front end, the PTX op): SDK
// statuses as TensorFlow's, the seed and scalar checks on TensorFlow's shapes, outputs
// refused by the allocator as errors that name the op. The rules and their messages are the
// SDK's (tf_ops/sdk/generator_config.h, TensorFlow-free), shared with every front end.
#ifndef TF_ONTHEFLY_COMMON_TF_GLUE_H_
#define TF_ONTHEFLY_COMMON_TF_GLUE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/tensor_shape.h"
#include "tf_ops/sdk/generator_config.h"
#include "tf_ops/sdk/status.h"

namespace tf_onthefly {

// An SDK status as TensorFlow's (the same code and message).
inline absl::Status ToTf(const sdk::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.code()), s.message());
}

inline std::vector<int64_t> Dims(const tensorflow::TensorShape& shape) {
  std::vector<int64_t> dims;
  for (int d = 0; d < shape.dims(); ++d) dims.push_back(shape.dim_size(d));
  return dims;
}

// The user's seed: an int64 scalar s (= the pair (s, 0)) or an int64 pair. Only the shape is
// checked here: the value may live in device memory.
inline absl::Status CheckSeedShape(const tensorflow::TensorShape& seed) {
  return ToTf(sdk::CheckSeedShape(Dims(seed)));
}

inline absl::Status CheckScalarShape(const tensorflow::TensorShape& shape, const char* name) {
  return ToTf(sdk::CheckScalarShape(Dims(shape), name));
}

// The same seed/scalar rules for shape functions (where shapes may be partly unknown),
// with the same messages.
inline absl::Status SeedShape(tensorflow::shape_inference::InferenceContext* c, int input) {
  const auto seed = c->input(input);
  if (!c->RankKnown(seed) || c->Rank(seed) == 0) return absl::OkStatus();
  if (c->Rank(seed) == 1 && (!c->ValueKnown(c->Dim(seed, 0)) || c->Value(c->Dim(seed, 0)) == 2))
    return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(sdk::kSeedShapeMessage, c->DebugString(seed)));
}

inline absl::Status ScalarShape(tensorflow::shape_inference::InferenceContext* c, int input,
                                const char* name) {
  const auto shape = c->input(input);
  if (!c->RankKnown(shape) || c->Rank(shape) == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name, " must be an int64 scalar, got shape ", c->DebugString(shape)));
}

inline absl::Status CheckStepShape(const tensorflow::TensorShape& step) {
  return ToTf(sdk::CheckStepShape(Dims(step)));
}

// The step's rule (sdk::CheckStepShape) for shape functions: a scalar, or a vector of steps.
inline absl::Status StepShape(tensorflow::shape_inference::InferenceContext* c, int input) {
  const auto step = c->input(input);
  if (!c->RankKnown(step) || c->Rank(step) <= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(sdk::kStepShapeMessage, c->DebugString(step)));
}

// Output i, or a ResourceExhausted error that names the op, the output and the bytes asked
// when the device's allocator cannot give them (a size within the caps that does not fit
// the memory free now): the process stays usable, and a smaller call can follow.
inline absl::Status AllocateOutput(tensorflow::OpKernelContext* ctx, int i,
                                   const tensorflow::TensorShape& shape, const std::string& op,
                                   const std::string& output, tensorflow::Tensor** out) {
  absl::Status status = ctx->allocate_output(i, shape, out);
  if (status.ok() || !absl::IsResourceExhausted(status)) return status;
  const tensorflow::DataType dtype = ctx->expected_output_dtype(i);
  return absl::ResourceExhaustedError(absl::StrCat(
      op, ": output ", output, " needs ", shape.num_elements() * tensorflow::DataTypeSize(dtype),
      " bytes (", shape.DebugString(), " ", tensorflow::DataTypeString(dtype), ") on ",
      ctx->device()->name(), ", more than its allocator can give: ", status.message()));
}

}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_COMMON_TF_GLUE_H_

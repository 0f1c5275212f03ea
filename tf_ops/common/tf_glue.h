// TensorFlow-side helpers every op family shares: seed and scalar checks, output caps, GPU
// errors as op errors. Kept out of the .cu.cc files (which see no TF headers).
#ifndef TF_ONTHEFLY_COMMON_TF_GLUE_H_
#define TF_ONTHEFLY_COMMON_TF_GLUE_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/tensor_shape.h"
#include "tf_ops/common/cuda_runtime.h"

// Returns InvalidArgument(StrCat(message...)) from the enclosing function unless `cond`.
#define OTF_REQUIRE(cond, ...)                                                 \
  do {                                                                         \
    if (!(cond)) return absl::InvalidArgumentError(absl::StrCat(__VA_ARGS__)); \
  } while (0)

namespace tf_onthefly {

// Largest output one op call may produce, in bytes (documented in docs/ops.md). Checked
// before allocation, so a typo in a config is an InvalidArgument, not an OOM or a crash.
constexpr int64_t kMaxOutputBytes = int64_t{1} << 36;  // 64 GiB

// Checks rows x cols x elem_bytes <= kMaxOutputBytes without overflowing.
inline absl::Status CheckOutputSize(const std::string& what, int64_t rows, int64_t cols,
                                    int64_t elem_bytes) {
  const int64_t max_elems = kMaxOutputBytes / elem_bytes;
  OTF_REQUIRE(rows <= 0 || cols <= max_elems / rows, what, " of shape [", rows, ", ", cols, "] (",
              elem_bytes, " bytes per element) exceeds the per-output cap of ", kMaxOutputBytes,
              " bytes; lower batch_size/num_samples or the per-sample size");
  return absl::OkStatus();
}

constexpr char kSeedShapeMessage[] =
    "seed must be an int64 scalar or an int64 pair of shape [2], got shape ";

// The user's seed: an int64 scalar s (= the pair (s, 0)) or an int64 pair. Only the shape is
// checked here: the value may live in device memory.
inline absl::Status CheckSeedShape(const tensorflow::TensorShape& seed) {
  OTF_REQUIRE(seed.dims() == 0 || (seed.dims() == 1 && seed.dim_size(0) == 2), kSeedShapeMessage,
              seed.DebugString());
  return absl::OkStatus();
}

inline absl::Status CheckScalarShape(const tensorflow::TensorShape& shape, const char* name) {
  OTF_REQUIRE(tensorflow::TensorShapeUtils::IsScalar(shape), name,
              " must be an int64 scalar, got shape ", shape.DebugString());
  return absl::OkStatus();
}

// The same seed/scalar rules for shape functions (where shapes may be partly unknown),
// with the same messages.
inline absl::Status SeedShape(tensorflow::shape_inference::InferenceContext* c, int input) {
  const auto seed = c->input(input);
  if (!c->RankKnown(seed) || c->Rank(seed) == 0) return absl::OkStatus();
  if (c->Rank(seed) == 1 && (!c->ValueKnown(c->Dim(seed, 0)) || c->Value(c->Dim(seed, 0)) == 2))
    return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(kSeedShapeMessage, c->DebugString(seed)));
}

inline absl::Status ScalarShape(tensorflow::shape_inference::InferenceContext* c, int input,
                                const char* name) {
  const auto shape = c->input(input);
  if (!c->RankKnown(shape) || c->Rank(shape) == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name, " must be an int64 scalar, got shape ", c->DebugString(shape)));
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

// A failed GPU launch as an op error that names the op; never aborts. The error's text comes
// through the kernels library's CUDA runtime forwarding (cuda_runtime.h): the op library
// itself calls no CUDA runtime function, so it loads where TensorFlow has none.
inline absl::Status GpuLaunchStatus(cudaError_t err, const std::string& op) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(op, ": launching its GPU kernel failed: CUDA error ",
                                          static_cast<int>(err), " (",
                                          CudaErrorText(static_cast<int>(err)), ")"));
}

}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_COMMON_TF_GLUE_H_

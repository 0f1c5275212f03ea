// TensorFlow-side helpers every op family shares: seed parsing, launch-status
// conversion, output caps. Kept out of the .cu.cc files (which see no TF headers).
#ifndef TF_ONTHEFLY_COMMON_TF_GLUE_H_
#define TF_ONTHEFLY_COMMON_TF_GLUE_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <limits>

#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/tensor_shape.h"

namespace tf_onthefly {

// Largest output one op call may produce, in bytes (documented in docs/ops.md). Checked
// before allocation, so a typo in a config is an InvalidArgument, not an OOM or a crash.
constexpr int64_t kMaxOutputBytes = int64_t{1} << 36;  // 64 GiB

// Checks rows x cols x elem_bytes <= kMaxOutputBytes without overflowing.
inline absl::Status CheckOutputSize(const char* what, int64_t rows, int64_t cols,
                                    int64_t elem_bytes) {
  const int64_t max_elems = kMaxOutputBytes / elem_bytes;
  if (rows > 0 && cols > max_elems / rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " of shape [", rows, ", ", cols, "] (", elem_bytes,
        " bytes per element) exceeds the per-output cap of ", kMaxOutputBytes,
        " bytes; lower batch_size/num_samples or the per-sample size"));
  }
  return absl::OkStatus();
}

// The user's seed: an int64 scalar s (= the pair (s, 0)) or an int64 pair.
inline absl::Status ParseSeed(const tensorflow::Tensor& seed, uint64_t* s0, uint64_t* s1) {
  if (seed.dims() == 0) {
    *s0 = static_cast<uint64_t>(seed.scalar<int64_t>()());
    *s1 = 0;
    return absl::OkStatus();
  }
  if (seed.dims() == 1 && seed.dim_size(0) == 2) {
    auto v = seed.vec<int64_t>();
    *s0 = static_cast<uint64_t>(v(0));
    *s1 = static_cast<uint64_t>(v(1));
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "seed must be an int64 scalar or an int64 pair of shape [2], got shape ",
      seed.shape().DebugString()));
}

inline absl::Status ScalarInput(const tensorflow::Tensor& t, const char* name, int64_t* value) {
  if (!tensorflow::TensorShapeUtils::IsScalar(t.shape())) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be an int64 scalar, got shape ", t.shape().DebugString()));
  }
  *value = t.scalar<int64_t>()();
  return absl::OkStatus();
}

// The same seed/scalar rules for shape functions (where shapes may be partly unknown),
// with the same messages.
inline absl::Status SeedShape(tensorflow::shape_inference::InferenceContext* c, int input) {
  const auto seed = c->input(input);
  if (!c->RankKnown(seed) || c->Rank(seed) == 0) return absl::OkStatus();
  if (c->Rank(seed) == 1 && (!c->ValueKnown(c->Dim(seed, 0)) || c->Value(c->Dim(seed, 0)) == 2))
    return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "seed must be an int64 scalar or an int64 pair of shape [2], got shape ",
      c->DebugString(seed)));
}

inline absl::Status ScalarShape(tensorflow::shape_inference::InferenceContext* c, int input,
                                const char* name) {
  const auto shape = c->input(input);
  if (!c->RankKnown(shape) || c->Rank(shape) == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name, " must be an int64 scalar, got shape ", c->DebugString(shape)));
}

// A CUDA launcher's result (a cudaError_t as int) as an op error; never aborts.
inline absl::Status GpuLaunchStatus(int err, const char* what) {
  if (err == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": CUDA error ", err, " (",
                                          cudaGetErrorString(static_cast<cudaError_t>(err)),
                                          ")"));
}

}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_COMMON_TF_GLUE_H_

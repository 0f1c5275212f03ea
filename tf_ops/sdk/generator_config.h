// The generator SDK's attribute and argument side, with no TensorFlow dependency: what a
// generator's Config describes (its outputs' per-sample shapes, its tensor inputs' shape and
// value rules), the batch attributes every generator op has, the output cap, and the checks
// every front end runs with the same messages (the core's C API, TensorFlow's shape function,
// kernels and XLA kernel, the XLA handlers).
#ifndef TF_ONTHEFLY_SDK_GENERATOR_CONFIG_H_
#define TF_ONTHEFLY_SDK_GENERATOR_CONFIG_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tf_ops/common/cuda_runtime.h"
#include "tf_ops/sdk/attrs.h"
#include "tf_ops/sdk/dtype.h"
#include "tf_ops/sdk/generator.h"
#include "tf_ops/sdk/status.h"

namespace tf_onthefly {

// Largest output one op call may produce, in bytes (documented in docs/ops.md). Checked
// before allocation, so a typo in a config is an InvalidArgument, not an OOM or a crash.
constexpr int64_t kMaxOutputBytes = int64_t{1} << 36;  // 64 GiB

// Checks rows x cols x elem_bytes <= kMaxOutputBytes without overflowing.
inline sdk::Status CheckOutputSize(const std::string& what, int64_t rows, int64_t cols,
                                   int64_t elem_bytes) {
  const int64_t max_elems = kMaxOutputBytes / elem_bytes;
  OTF_REQUIRE(rows <= 0 || cols <= max_elems / rows, what, " of shape [", rows, ", ", cols, "] (",
              elem_bytes, " bytes per element) exceeds the per-output cap of ", kMaxOutputBytes,
              " bytes; lower batch_size/num_samples or the per-sample size");
  return sdk::OkStatus();
}

namespace sdk {

// A shape as TensorFlow's DebugString writes it: "[2,3]", "[]"; an unknown size (< 0) "?".
inline std::string ShapeDebugString(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t d = 0; d < dims.size(); ++d)
    s += (d ? "," : "") + (dims[d] < 0 ? std::string("?") : std::to_string(dims[d]));
  return s + "]";
}

constexpr char kSeedShapeMessage[] =
    "seed must be an int64 scalar or an int64 pair of shape [2], got shape ";

// The user's seed: an int64 scalar s (= the pair (s, 0)) or an int64 pair. Only the shape is
// checked: the value may live in device memory.
inline Status CheckSeedShape(const std::vector<int64_t>& seed) {
  OTF_REQUIRE(seed.empty() || (seed.size() == 1 && seed[0] == 2), kSeedShapeMessage,
              ShapeDebugString(seed));
  return OkStatus();
}

inline Status CheckScalarShape(const std::vector<int64_t>& shape, const char* name) {
  OTF_REQUIRE(shape.empty(), name, " must be an int64 scalar, got shape ", ShapeDebugString(shape));
  return OkStatus();
}

// The step input of a generator op: an int64 scalar, or (TensorFlow's ops) a vector of n
// steps, for which every output gains a leading dimension of n: the n steps' batches, each
// the batch of that step alone (StepGeometry, generator.h).
constexpr char kStepShapeMessage[] =
    "step must be an int64 scalar, or a vector of steps of shape [n], got shape ";
inline Status CheckStepShape(const std::vector<int64_t>& step) {
  OTF_REQUIRE(step.size() <= 1, kStepShapeMessage, ShapeDebugString(step));
  return OkStatus();
}

// A type attribute's value that selects a generator struct, e.g. {"label_dtype", kInt32}.
struct TypeConstraint {
  const char* attr;
  DType type;
};

// Dimensions of an input's shape rule besides a fixed size (>= 0).
constexpr int64_t kRows = -1;     // the call's rows (num_samples): one row per sample produced
constexpr int64_t kAnySize = -2;  // any size >= 1; the generator reads it from Inputs::dim

// What an input's values may be. Checked exactly where the values are in host memory: the
// CPU kernels and XLA's Host handler. A GPU kernel reads its inputs only on the device (an
// input updated every step never travels to the host), so on the GPU a generator must
// give every value a defined result; docs/ops.md says which for each input.
struct ValueRule {
  enum Flags : uint64_t { kFinite = 1, kLow = 2, kHigh = 4 };
  uint64_t flags;    // 64 bits: no padding, so its bytes (an XLA attribute) are all set
  double low, high;  // inclusive bounds, where flagged

  static ValueRule Any() { return {0, 0, 0}; }
  // Finite (for float inputs) and in [low, high].
  static ValueRule InRange(double low, double high) { return {kFinite | kLow | kHigh, low, high}; }
  static ValueRule Finite() { return {kFinite, 0, 0}; }
};

// A generator's own tensor input: its name (the op's input name), its shape rule (sizes,
// kRows or kAnySize, one per dimension) and its value rule.
struct InputSpec {
  std::string name;
  std::vector<int64_t> dims;
  ValueRule values = ValueRule::Any();
};

// Each output's name and per-sample shape, in the op's output order, and each tensor
// input of the generator's own, in the op's input order after seed, step and first_sample.
struct SampleShapes {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> dims;
  std::vector<InputSpec> inputs;
  void Add(std::string name, std::vector<int64_t> sample_dims) {
    names.push_back(std::move(name));
    dims.push_back(std::move(sample_dims));
  }
  void AddInput(std::string name, std::vector<int64_t> shape, ValueRule values = ValueRule::Any()) {
    inputs.push_back(InputSpec{std::move(name), std::move(shape), values});
  }
};

// batch_size / num_samples: the global batch and how much of it this op produces.
struct BatchAttrs {
  int64_t batch_size = 0, num_samples = -1;
  int64_t rows() const { return num_samples < 0 ? batch_size : num_samples; }

  Status Parse(const Attrs& a) {
    OTF_RETURN_IF_ERROR(a.GetAttr("batch_size", &batch_size));
    OTF_RETURN_IF_ERROR(a.GetAttr("num_samples", &num_samples));
    OTF_REQUIRE(batch_size >= 1, "batch_size must be >= 1, got ", batch_size);
    OTF_REQUIRE(num_samples >= -1 && num_samples <= batch_size,
                "num_samples must be -1 (the whole batch) or in [0, batch_size] = [0, ", batch_size,
                "], got ", num_samples);
    return OkStatus();
  }

  Status CheckFirstSample(int64_t first_sample) const {
    OTF_REQUIRE(first_sample >= 0 && first_sample <= batch_size - rows(),
                "first_sample must be in [0, batch_size - num_samples] = [0, ", batch_size - rows(),
                "], got ", first_sample);
    return OkStatus();
  }
};

// Every output of `rows` samples within the cap (docs/ops.md), checked without overflow
// before anything is allocated, with element sizes from the op's output dtypes.
inline Status CheckOutputs(const SampleShapes& s, const std::vector<DType>& types, int64_t rows) {
  OTF_REQUIRE(s.dims.size() == types.size() && types.size() <= kMaxOutputs,
              "generator Config names ", s.dims.size(), " outputs, the op has ", types.size(),
              " (at most ", kMaxOutputs, ")");
  for (size_t i = 0; i < s.dims.size(); ++i) {
    int64_t n = 1;
    for (int64_t d : s.dims[i]) {
      OTF_REQUIRE(d >= 1, "per-sample shape of ", s.names[i], " has a dimension ", d);
      OTF_REQUIRE(n <= kMaxOutputBytes / d, s.names[i], " exceeds the per-output cap of ",
                  kMaxOutputBytes, " bytes per sample");
      n *= d;
    }
    OTF_RETURN_IF_ERROR(CheckOutputSize(s.names[i], rows, n, DTypeSize(types[i])));
  }
  return OkStatus();
}

// The refusal of a generator op placed where it has no kernel code (a GPU-only generator
// on a CPU, in TF or under XLA).
inline Status GpuOnlyError(const std::string& op) {
  return InvalidArgumentError(
      StrCat(op, " is GPU-only: its generator has no CPU implementation, so it cannot ",
             "run on a CPU device; place it on a GPU (with tf.device('/GPU:0'))"));
}

// seed, step and first_sample: the inputs every generator op starts with.
constexpr int kCommonInputs = 3;

// The op's own inputs (after seed, step and first_sample) are the Config's, one for one.
inline Status CheckInputCount(const SampleShapes& s, int own_inputs) {
  if (own_inputs == static_cast<int>(s.inputs.size()) && own_inputs <= kMaxInputs)
    return OkStatus();
  return InternalError(StrCat("generator Config names ", s.inputs.size(),
                              " tensor inputs, the op has ", own_inputs, " (at most ", kMaxInputs,
                              ")"));
}

inline std::string ShapeString(const std::vector<int64_t>& dims, int64_t rows) {
  std::string s = "[";
  for (size_t d = 0; d < dims.size(); ++d) {
    s += d ? ", " : "";
    if (dims[d] == kRows) {
      s += StrCat("num_samples=", rows);
    } else if (dims[d] == kAnySize) {
      s += "n";
    } else {
      s += StrCat(dims[d]);
    }
  }
  return s + "]";
}

// Input `spec` has shape `shape` for a call of `rows` rows. A negative size in `shape`, or
// rank_known = false, is unknown (shape functions): what is known must match.
inline Status CheckInputShape(const InputSpec& spec, bool rank_known,
                              const std::vector<int64_t>& shape, int64_t rows) {
  if (!rank_known) return OkStatus();
  bool ok = shape.size() == spec.dims.size() && shape.size() <= kMaxInputRank;
  for (size_t d = 0; ok && d < shape.size(); ++d) {
    const int64_t want = spec.dims[d] == kRows ? rows : spec.dims[d];
    ok = shape[d] < 0 || (want == kAnySize ? shape[d] >= 1 : shape[d] == want);
  }
  if (ok) return OkStatus();
  std::string got = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    got += (d ? ", " : "") + (shape[d] < 0 ? std::string("?") : StrCat(shape[d]));
  return InvalidArgumentError(
      StrCat(spec.name, " must have shape ", ShapeString(spec.dims, rows), ", got ", got, "]"));
}

// The element types whose values a ValueRule can judge.
enum class ElementKind { kFloat32, kInt32, kInt64, kOther };

inline ElementKind KindOf(DType type) {
  switch (type) {
    case DType::kFloat32:
      return ElementKind::kFloat32;
    case DType::kInt32:
      return ElementKind::kInt32;
    case DType::kInt64:
      return ElementKind::kInt64;
    default:
      return ElementKind::kOther;
  }
}

// A float32's exact value from its bits, in integer arithmetic: the same whatever the
// calling thread's floating-point mode. (A thread of TensorFlow's runs with denormals read
// as zero, under which converting the subnormal -1e-45 gives -0, inside a [0, 1] rule.)
inline double Float32Value(const void* element) {
  uint32_t bits;
  std::memcpy(&bits, element, sizeof(bits));
  const bool negative = bits >> 31;
  const uint32_t exponent = (bits >> 23) & 0xff, mantissa = bits & 0x7fffff;
  double magnitude;
  if (exponent == 0xff) {
    magnitude = mantissa != 0 ? NAN : INFINITY;
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), -149);  // subnormal or zero
  } else {
    magnitude =
        std::ldexp(static_cast<double>(mantissa | 0x800000u), static_cast<int>(exponent) - 150);
  }
  return negative ? -magnitude : magnitude;
}

// The input's values against its rule, in host memory: the first offending element, named.
// Float32 values are judged in IEEE arithmetic whatever the caller's floating-point mode.
inline Status CheckInputValues(const std::string& name, const ValueRule& rule, ElementKind kind,
                               const void* data, int64_t n) {
  if (rule.flags == 0 || kind == ElementKind::kOther) return OkStatus();
  for (int64_t i = 0; i < n; ++i) {
    double v = 0;
    if (kind == ElementKind::kFloat32) {
      v = Float32Value(static_cast<const float*>(data) + i);
      if ((rule.flags & ValueRule::kFinite) && !std::isfinite(v))
        return InvalidArgumentError(StrCat(name, " must be finite, got ", v, " at flat index ", i));
    } else if (kind == ElementKind::kInt32) {
      v = static_cast<const int32_t*>(data)[i];
    } else {
      v = static_cast<double>(static_cast<const int64_t*>(data)[i]);
    }
    if (((rule.flags & ValueRule::kLow) && v < rule.low) ||
        ((rule.flags & ValueRule::kHigh) && v > rule.high)) {
      return InvalidArgumentError(StrCat(name, " must be in [", rule.low, ", ", rule.high,
                                         "], got ", v, " at flat index ", i));
    }
  }
  return OkStatus();
}

// The refusal of a scratch request beyond a call's scratch buffer (the XLA CUDA handler's,
// the core C API's run_gpu).
inline Status ScratchBufferRefusal(std::string_view op, const BufferScratch& s) {
  return ResourceExhaustedError(StrCat(op, ": scratch memory of ", s.refused_bytes,
                                       " bytes was refused: the call's scratch buffer of ", s.size,
                                       " bytes has ", s.left_bytes,
                                       " left (the generator's ScratchBytes sizes it)"));
}

// A failed GPU launch as an error that names the op; never aborts. The error's text comes
// through the core's CUDA runtime forwarding (tf_ops/common/cuda_runtime.h).
inline Status GpuLaunchStatus(cudaError_t err, const std::string& op) {
  if (err == cudaSuccess) return OkStatus();
  return InternalError(StrCat(op, ": launching its GPU kernel failed: CUDA error ",
                              static_cast<int>(err), " (", CudaErrorText(static_cast<int>(err)),
                              ")"));
}

}  // namespace sdk
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_SDK_GENERATOR_CONFIG_H_

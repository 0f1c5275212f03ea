// The generator SDK's attribute side, shared by the op registration (generator_op.h) and
// the XLA kernel (generator_xla.cc): a generator Config's checks, the batch attributes, the
// output shapes and dtypes and their cap, the tensor inputs' shape and value rules.
#ifndef TF_ONTHEFLY_SDK_GENERATOR_CONFIG_H_
#define TF_ONTHEFLY_SDK_GENERATOR_CONFIG_H_

#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/types.h"
#include "tf_ops/common/float_env.h"
#include "tf_ops/common/tf_glue.h"
#include "tf_ops/sdk/generator.h"

namespace tf_onthefly {
namespace sdk {

// A type attribute's value that selects a generator struct, e.g. {"label_dtype", DT_INT32}.
struct TypeConstraint {
  const char* attr;
  tensorflow::DataType type;
};

// Dimensions of an input's shape rule besides a fixed size (>= 0).
constexpr int64_t kRows = -1;     // the call's rows (num_samples): one row per sample produced
constexpr int64_t kAnySize = -2;  // any size >= 1; the generator reads it from Inputs::dim

// What an input's values may be. Checked exactly where the values are in host memory: the
// CPU kernel and XLA's Host handler. A GPU kernel reads its inputs only on the device (an
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

  template <typename Ctx>
  absl::Status Parse(Ctx* c) {
    TF_RETURN_IF_ERROR(c->GetAttr("batch_size", &batch_size));
    TF_RETURN_IF_ERROR(c->GetAttr("num_samples", &num_samples));
    OTF_REQUIRE(batch_size >= 1, "batch_size must be >= 1, got ", batch_size);
    OTF_REQUIRE(num_samples >= -1 && num_samples <= batch_size,
                "num_samples must be -1 (the whole batch) or in [0, batch_size] = [0, ", batch_size,
                "], got ", num_samples);
    return absl::OkStatus();
  }

  absl::Status CheckFirstSample(int64_t first_sample) const {
    OTF_REQUIRE(first_sample >= 0 && first_sample <= batch_size - rows(),
                "first_sample must be in [0, batch_size - num_samples] = [0, ", batch_size - rows(),
                "], got ", first_sample);
    return absl::OkStatus();
  }
};

// Every attribute check of a generator: the batch attributes and Config::Configure, in IEEE
// arithmetic (float_env.h), so that a check judges a float the same way in a shape function,
// a kernel and an XLA kernel.
template <typename Config, typename Ctx, typename Params>
absl::Status Configure(Ctx* c, BatchAttrs* batch, Params* params, SampleShapes* shapes) {
  ScopedIeeeSubnormals ieee;
  TF_RETURN_IF_ERROR(batch->Parse(c));
  return Config::Configure(c, params, shapes);
}

// Every output of `rows` samples within the cap (docs/ops.md), checked without overflow
// before anything is allocated, with element sizes from the op's output dtypes.
inline absl::Status CheckOutputs(const SampleShapes& s,
                                 const std::vector<tensorflow::DataType>& types, int64_t rows) {
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
    TF_RETURN_IF_ERROR(CheckOutputSize(s.names[i], rows, n, tensorflow::DataTypeSize(types[i])));
  }
  return absl::OkStatus();
}

// The refusal of a generator op placed where it has no kernel code (a GPU-only generator
// on a CPU, in TF or under XLA).
inline absl::Status GpuOnlyError(const std::string& op) {
  return absl::InvalidArgumentError(
      absl::StrCat(op, " is GPU-only: its generator has no CPU implementation, so it cannot ",
                   "run on a CPU device; place it on a GPU (with tf.device('/GPU:0'))"));
}

// The op's own inputs (after seed, step and first_sample) are the Config's, one for one.
constexpr int kCommonInputs = 3;
inline absl::Status CheckInputCount(const SampleShapes& s, int op_inputs) {
  const int own = op_inputs - kCommonInputs;
  if (own == static_cast<int>(s.inputs.size()) && own <= kMaxInputs) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("generator Config names ", s.inputs.size(),
                                          " tensor inputs, the op has ", own, " (at most ",
                                          kMaxInputs, ")"));
}

inline std::string ShapeString(const std::vector<int64_t>& dims, int64_t rows) {
  std::string s = "[";
  for (size_t d = 0; d < dims.size(); ++d) {
    absl::StrAppend(&s, d ? ", " : "");
    if (dims[d] == kRows) {
      absl::StrAppend(&s, "num_samples=", rows);
    } else if (dims[d] == kAnySize) {
      absl::StrAppend(&s, "n");
    } else {
      absl::StrAppend(&s, dims[d]);
    }
  }
  return s + "]";
}

// Input `spec` has shape `shape` for a call of `rows` rows. A negative size in `shape`, or
// rank_known = false, is unknown (shape functions): what is known must match.
inline absl::Status CheckInputShape(const InputSpec& spec, bool rank_known,
                                    const std::vector<int64_t>& shape, int64_t rows) {
  if (!rank_known) return absl::OkStatus();
  bool ok = shape.size() == spec.dims.size() && shape.size() <= kMaxInputRank;
  for (size_t d = 0; ok && d < shape.size(); ++d) {
    const int64_t want = spec.dims[d] == kRows ? rows : spec.dims[d];
    ok = shape[d] < 0 || (want == kAnySize ? shape[d] >= 1 : shape[d] == want);
  }
  if (ok) return absl::OkStatus();
  std::string got = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    absl::StrAppend(&got, d ? ", " : "", shape[d] < 0 ? std::string("?") : absl::StrCat(shape[d]));
  return absl::InvalidArgumentError(absl::StrCat(spec.name, " must have shape ",
                                                 ShapeString(spec.dims, rows), ", got ", got, "]"));
}

inline std::vector<int64_t> Dims(const tensorflow::TensorShape& shape) {
  std::vector<int64_t> dims;
  for (int d = 0; d < shape.dims(); ++d) dims.push_back(shape.dim_size(d));
  return dims;
}

// The element types whose values a ValueRule can judge.
enum class ElementKind { kFloat32, kInt32, kInt64, kOther };

inline ElementKind KindOf(tensorflow::DataType type) {
  switch (type) {
    case tensorflow::DT_FLOAT:
      return ElementKind::kFloat32;
    case tensorflow::DT_INT32:
      return ElementKind::kInt32;
    case tensorflow::DT_INT64:
      return ElementKind::kInt64;
    default:
      return ElementKind::kOther;
  }
}

// The input's values against its rule, in host memory: the first offending element, named.
inline absl::Status CheckInputValues(const std::string& name, const ValueRule& rule,
                                     ElementKind kind, const void* data, int64_t n) {
  if (rule.flags == 0 || kind == ElementKind::kOther) return absl::OkStatus();
  for (int64_t i = 0; i < n; ++i) {
    double v = 0;
    if (kind == ElementKind::kFloat32) {
      v = static_cast<const float*>(data)[i];
      if ((rule.flags & ValueRule::kFinite) && !std::isfinite(v)) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, " must be finite, got ", v, " at flat index ", i));
      }
    } else if (kind == ElementKind::kInt32) {
      v = static_cast<const int32_t*>(data)[i];
    } else {
      v = static_cast<double>(static_cast<const int64_t*>(data)[i]);
    }
    if (((rule.flags & ValueRule::kLow) && v < rule.low) ||
        ((rule.flags & ValueRule::kHigh) && v > rule.high)) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, " must be in [", rule.low, ", ", rule.high, "], got ", v, " at flat index ", i));
    }
  }
  return absl::OkStatus();
}

// The dtypes of op `op`'s outputs for the node being inferred: fixed in the op definition,
// or the value of the type attribute that names them.
inline absl::Status OutputTypes(tensorflow::shape_inference::InferenceContext* c, const char* op,
                                std::vector<tensorflow::DataType>* types) {
  const tensorflow::OpDef* def = nullptr;
  TF_RETURN_IF_ERROR(tensorflow::OpRegistry::Global()->LookUpOpDef(op, &def));
  for (const auto& arg : def->output_arg()) {
    tensorflow::DataType type = arg.type();
    if (type == tensorflow::DT_INVALID) TF_RETURN_IF_ERROR(c->GetAttr(arg.type_attr(), &type));
    types->push_back(type);
  }
  return absl::OkStatus();
}

inline std::vector<tensorflow::DataType> OutputTypes(tensorflow::OpKernelConstruction* c) {
  return std::vector<tensorflow::DataType>(c->output_types().begin(), c->output_types().end());
}

// The Config's checks for the XLA kernel, with the Params as bytes (generator_xla.h).
template <typename Config>
absl::Status ConfigureBytes(tensorflow::OpKernelConstruction* c, BatchAttrs* batch,
                            std::string* bytes, SampleShapes* shapes) {
  using Params = typename Config::Params;
  static_assert(std::is_trivially_copyable_v<Params>, "Params travel to XLA as bytes");
  Params p;
  std::memset(&p, 0, sizeof(p));  // padding too: the bytes are part of the compiled call
  TF_RETURN_IF_ERROR(Configure<Config>(c, batch, &p, shapes));
  bytes->assign(reinterpret_cast<const char*>(&p), sizeof(p));
  return absl::OkStatus();
}

}  // namespace sdk
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_SDK_GENERATOR_CONFIG_H_

// The generator SDK's attribute side, shared by the op registration (generator_op.h) and
// the XLA kernel (generator_xla.cc): a generator Config's checks, the batch attributes, the
// output shapes and dtypes and their cap.
#ifndef TF_ONTHEFLY_SDK_GENERATOR_CONFIG_H_
#define TF_ONTHEFLY_SDK_GENERATOR_CONFIG_H_

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

// Each output's name and per-sample shape, in the op's output order.
struct SampleShapes {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> dims;
  void Add(std::string name, std::vector<int64_t> sample_dims) {
    names.push_back(std::move(name));
    dims.push_back(std::move(sample_dims));
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

// The core's registry of generators, as C++ for the front ends built in the same tree (the
// TensorFlow op library: tf_ops/tensorflow/). Generators come in through the C ABI of
// tf_ops/sdk/abi.h (the core's built-in ones, and a user's library loaded later); each has
// its op spec, parsed here from REGISTER_OP's strings, and its variants with their entry
// points. Front ends in other languages use the C API of core_api.h instead.
#ifndef TF_ONTHEFLY_CORE_REGISTRY_H_
#define TF_ONTHEFLY_CORE_REGISTRY_H_

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "tf_ops/sdk/abi.h"
#include "tf_ops/sdk/attrs.h"
#include "tf_ops/sdk/dtype.h"
#include "tf_ops/sdk/generator_config.h"
#include "tf_ops/sdk/status.h"

#define OTF_CORE_API __attribute__((visibility("default")))

namespace tf_onthefly {
namespace core {

// An input or output of an op spec: "name: type" with a fixed type or a type attribute.
struct ArgSpec {
  std::string name, spec;
  sdk::DType type = sdk::DType::kInvalid;  // fixed; kInvalid: type_attr's value
  std::string type_attr;
};

// An attribute of an op spec.
struct AttrSpec {
  std::string name, spec;
  sdk::AttrValue::Kind kind = sdk::AttrValue::Kind::kInt;
  bool has_default = false;
  sdk::AttrValue default_value;
  std::vector<std::string> allowed_strings;  // "{'a', 'b'}"
  std::vector<sdk::DType> allowed_types;     // "{float, half}"
};

// The spec strings every generator op starts with, as REGISTER_OP takes them: the inputs
// seed, step and first_sample and the attributes Tindex, batch_size and num_samples
// (tf_ops/sdk/generator_def.h). first_sample may be int32: TensorFlow's GPU kernels read it in
// host memory, where an int32 constant made on the GPU device lives.
OTF_CORE_API const std::vector<std::string>& CommonInputSpecs();
OTF_CORE_API const std::vector<std::string>& CommonAttrSpecs();

struct Generator;

// One variant: the generator struct that runs the nodes whose type attributes have these
// values, and its entry points.
struct OTF_CORE_API Variant {
  const Generator* generator = nullptr;
  int index = 0;                                          // in generator->variants
  std::vector<std::pair<std::string, sdk::DType>> types;  // (attribute, value)
  std::string xla_target;  // "tf_onthefly.<op>[.<type name>...]": its XLA handlers' name
  OtfVariantDef def{};     // the entry points (its string fields cleared)

  bool Matches(const sdk::Attrs& attrs) const;
  bool has_cpu() const { return def.fill_rows_cpu != nullptr; }
  // Whether its library's SDK makes calls of several steps (a step vector): its record has
  // launch_gpu_steps, and its XLA handlers take a step vector.
  bool takes_steps() const {
    return def.struct_size >= offsetof(OtfVariantDef, launch_gpu_steps) + sizeof(void*);
  }
};

struct OTF_CORE_API Generator {
  std::string name, library, doc;
  // The generator's own spec strings, as registered (REGISTER_OP's .Input, .Output, .Attr).
  std::vector<std::string> input_specs, output_specs, attr_specs;
  // The whole op, parsed: the common inputs and attributes first, then the generator's.
  std::vector<ArgSpec> inputs, outputs;
  std::vector<AttrSpec> attrs;
  int64_t params_size = 0;
  std::deque<Variant> variants;

  const AttrSpec* FindAttr(const std::string& name) const;
  bool has_cpu() const;
  int own_inputs() const { return static_cast<int>(inputs.size()) - sdk::kCommonInputs; }
};

// The generators with at least one variant, in registration order. Entries stay where they
// are for the life of the process.
OTF_CORE_API std::vector<const Generator*> Generators();
OTF_CORE_API const Generator* FindGenerator(const std::string& name);

// The variant for a node with these attributes; nullptr if none has its type values.
OTF_CORE_API const Variant* SelectVariant(const Generator& g, const sdk::Attrs& attrs);

// One configured call: the variant's Params for the attributes, its outputs and inputs.
struct OTF_CORE_API Configured {
  const Generator* generator = nullptr;
  const Variant* variant = nullptr;
  sdk::BatchAttrs batch;
  std::string params;  // the Params' bytes
  sdk::SampleShapes shapes;
  std::vector<sdk::DType> output_types, input_types;  // input_types: the generator's own
  int64_t sample_bytes[sdk::kMaxOutputs] = {};

  // Output i's shape: [rows] + its per-sample shape.
  std::vector<int64_t> OutputShape(int i) const;
  // The scratch one GPU call of `rows` rows asks for (ScratchBytes; 0 without), and the size
  // of a buffer that serves it (ScratchBufferBytes).
  int64_t ScratchBytes() const;
  // The inputs' value rules as the XLA handlers take them (input_rules, input_names).
  std::string InputRules() const;
  std::string InputNames() const;
  // A call of `steps` steps (a step vector): every output, `steps` times its one-step size,
  // within the per-output cap.
  sdk::Status CheckSteps(int64_t steps) const;
  // The same for one XLA custom call of a step vector: its library's handlers must take a
  // step vector (Variant::takes_steps), which the SDK's handlers do since they exist.
  sdk::Status CheckXlaSteps(int64_t steps) const;
};

// Launches a call of `steps` steps of `variant` (StepGeometry): its launch_gpu_steps, or, for
// a library built before it, its launch_gpu once per step.
OTF_CORE_API cudaError_t LaunchSteps(const Variant& variant, const sdk::GpuLaunchArgs& call,
                                     int64_t steps);

// Runs every attribute check of `variant` (the batch attributes, then the Config's) on
// `attrs`, then checks the outputs against the cap and the Config against the spec.
OTF_CORE_API sdk::Status Configure(const Variant& variant, const sdk::Attrs& attrs,
                                   Configured* out);

// The dtypes of `args` (the op's outputs, or inputs) for a node with these attributes: fixed
// in the spec, or the value of the type attribute that names them.
OTF_CORE_API sdk::Status ArgTypes(const std::vector<ArgSpec>& args, const sdk::Attrs& attrs,
                                  std::vector<sdk::DType>* types);

// The registrations refused since the last call, one message each (naming the library and
// what differs), and forgets them.
OTF_CORE_API std::vector<std::string> TakeRegistrationErrors();

// The configured call behind a handle of the C API (tf_onthefly_core_configure), for front
// ends in this tree that allocate its outputs themselves (the PyTorch op library).
OTF_CORE_API const Configured& ConfiguredCall(const void* call);

}  // namespace core
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_CORE_REGISTRY_H_

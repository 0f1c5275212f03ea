// A generator's whole description, for its <name>_op.cc (no TensorFlow header): its op spec
// and its variants, registered into the core (libtf_onthefly_core.so) through the C ABI of
// abi.h when the library that holds them is loaded.
//
//   struct MyGenConfig {
//     using Params = MyGen::Params;
//     // Reads and validates the generator's own attributes, names each output with its
//     // per-sample shape (in the op's output order) and each tensor input of its own with
//     // its shape and value rules (in the op's input order). Runs in IEEE arithmetic.
//     static sdk::Status Configure(const sdk::Attrs& a, Params* p, sdk::SampleShapes* s);
//   };
//
//   OTF_GENERATOR("OnTheFly>MyGen", MyGenConfig)
//       .Output("x: dtype")
//       .Attr("dim: int")
//       .Attr("dtype: {float, half} = DT_FLOAT")
//       .Doc(R"doc(...)doc");
//   OTF_GENERATOR_KERNELS(MyGenConfig, MyGen<float>)("OnTheFly>MyGen",
//                                                   {{"dtype", sdk::DType::kFloat32}});
//
// The spec strings are REGISTER_OP's own syntax (TensorFlow's front end hands them to its
// OpDefBuilder unchanged; the core parses the same strings for its C API), of which a
// generator may use: inputs and outputs "name: type" (a type such as float or int32, or
// the name of a type attribute); attributes "name: int", "float", "bool", "string", "type",
// "list(int)", "{'a', 'b'}" (a string from a list), "{float, half}" (a type from a list),
// each with an optional "= default". Every generator op also has the SDK's inputs seed
// (int64 [] or [2]), step (int64 []) and first_sample (int32 or int64 [], attribute
// Tindex), and attributes batch_size (the global batch) and num_samples (-1: the whole
// batch); its own inputs follow. Output i has shape [num_samples] + its per-sample shape.
//
// Each OTF_GENERATOR_KERNELS line registers one variant: the generator struct that runs the
// nodes whose type attributes have the given values (none: every node), with its entry
// points (configure, the CPU rows, the GPU launch, the scratch size, the XLA handlers).
// Write OTF_GENERATOR before its OTF_GENERATOR_KERNELS lines, in the same file.
#ifndef TF_ONTHEFLY_SDK_GENERATOR_DEF_H_
#define TF_ONTHEFLY_SDK_GENERATOR_DEF_H_

#include <cstring>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tf_ops/common/float_env.h"
#include "tf_ops/sdk/abi.h"
#include "tf_ops/sdk/attrs.h"
#include "tf_ops/sdk/dtype.h"
#include "tf_ops/sdk/generator.h"
#include "tf_ops/sdk/generator_config.h"
#include "tf_ops/sdk/status.h"

// The XLA handlers, where XLA's header-only FFI API is on the include path (the core's build
// puts it there; generator_xla_ffi.h says which XLA versions take them).
#if __has_include("xla/ffi/api/ffi.h") && !defined(OTF_NO_XLA_FFI)
#define OTF_HAS_XLA_FFI 1
#include "tf_ops/sdk/generator_xla_ffi.h"
#else
#define OTF_HAS_XLA_FFI 0
#endif

namespace tf_onthefly {
namespace sdk {

// The op spec that OTF_GENERATOR starts; each call adds one REGISTER_OP string.
class GeneratorBuilder {
 public:
  GeneratorBuilder(const char* name, int64_t params_size)
      : name_(name), params_size_(params_size) {}
  GeneratorBuilder&& Input(const char* spec) && {
    inputs_.push_back(spec);
    return std::move(*this);
  }
  GeneratorBuilder&& Output(const char* spec) && {
    outputs_.push_back(spec);
    return std::move(*this);
  }
  GeneratorBuilder&& Attr(const char* spec) && {
    attrs_.push_back(spec);
    return std::move(*this);
  }
  GeneratorBuilder&& Doc(const char* doc) && {
    doc_ = doc;
    return std::move(*this);
  }

 private:
  friend class GeneratorRegistrar;
  const char* name_;
  int64_t params_size_;
  std::vector<const char*> inputs_, outputs_, attrs_;
  const char* doc_ = "";
};

// Registers a finished spec (the core copies it).
class GeneratorRegistrar {
 public:
  GeneratorRegistrar(GeneratorBuilder&& b) {  // NOLINT(google-explicit-constructor)
    OtfGeneratorDef def{};
    def.struct_size = sizeof(def);
    def.sdk_abi_version = kSdkAbiVersion;
    def.contract_version = kContractVersion;
    def.abi_flags = kAbiFlags;
    def.name = b.name_;
    def.inputs = b.inputs_.data();
    def.num_inputs = static_cast<int32_t>(b.inputs_.size());
    def.outputs = b.outputs_.data();
    def.num_outputs = static_cast<int32_t>(b.outputs_.size());
    def.attrs = b.attrs_.data();
    def.num_attrs = static_cast<int32_t>(b.attrs_.size());
    def.doc = b.doc_;
    def.params_size = b.params_size_;
    tf_onthefly_register_generator(&def);
  }
};

// The variant entry points of generator Gen with Config.
template <typename Config>
void ConfigureEntry(const Attrs* attrs, void* params, SampleShapes* shapes, Status* status) {
  using Params = typename Config::Params;
  static_assert(std::is_trivially_copyable_v<Params>,
                "Params travel as bytes (to the GPU, to XLA): plain data only");
  ScopedIeeeSubnormals ieee;               // a check judges a float the same way on every thread
  std::memset(params, 0, sizeof(Params));  // padding too: the bytes are part of a compiled call
  *status = Config::Configure(*attrs, static_cast<Params*>(params), shapes);
}

template <typename Gen>
int64_t ScratchBytesEntry(const void* params, int64_t rows) {
  return Gen::ScratchBytes(*static_cast<const typename Gen::Params*>(params), rows);
}

template <typename Config, typename Gen>
bool RegisterVariant(const char* op, std::initializer_list<TypeConstraint> types = {}) {
  static_assert(std::is_same_v<typename Config::Params, typename Gen::Params>,
                "the Config and the generator must share one Params struct");
  std::vector<const char*> attrs;
  std::vector<int32_t> values;
  for (const TypeConstraint& t : types) {
    attrs.push_back(t.attr);
    values.push_back(static_cast<int32_t>(t.type));
  }
  OtfVariantDef def{};
  def.struct_size = sizeof(def);
  def.sdk_abi_version = kSdkAbiVersion;
  def.contract_version = kContractVersion;
  def.abi_flags = kAbiFlags;
  def.generator = op;
  def.type_attrs = attrs.data();
  def.type_values = values.data();
  def.num_types = static_cast<int32_t>(attrs.size());
  def.params_size = sizeof(typename Gen::Params);
  def.num_streams = Gen::kNumStreams;
  def.command_buffer_compatible = CommandBufferCompatible<Gen>::value;
  def.configure = &ConfigureEntry<Config>;
  if constexpr (HasCpu<Gen>::value) def.fill_rows_cpu = &FillRowsCpu<Gen>;
#if !defined(OTF_CPU_ONLY)
  def.launch_gpu = &LaunchGenerator<Gen>;  // both defined by OTF_DEFINE_GPU_GENERATOR
  def.launch_gpu_steps = &LaunchGeneratorSteps<Gen>;
#endif
  if constexpr (HasScratchBytes<Gen>::value) def.scratch_bytes = &ScratchBytesEntry<Gen>;
#if OTF_HAS_XLA_FFI
  if constexpr (HasCpu<Gen>::value)
    def.xla_host_handler = reinterpret_cast<void*>(&xla_ffi::HostHandler<Gen>);
#if !defined(OTF_CPU_ONLY)
  def.xla_cuda_handler = reinterpret_cast<void*>(&xla_ffi::CudaHandler<Gen>);
#endif
  def.xla_ffi_api_version = xla_ffi::kApiVersion;
#else
  def.xla_ffi_api_version = -1;
#endif
  return tf_onthefly_register_variant(&def) == 0;
}

}  // namespace sdk
}  // namespace tf_onthefly

#define OTF_GENERATOR(name, Config) OTF_GENERATOR_(__COUNTER__, name, Config)
#define OTF_GENERATOR_(n, name, Config) OTF_GENERATOR__(n, name, Config)
#define OTF_GENERATOR__(n, name, Config)                                                   \
  [[maybe_unused]] static const ::tf_onthefly::sdk::GeneratorRegistrar otf_generator_##n = \
      ::tf_onthefly::sdk::GeneratorBuilder(name, sizeof(Config::Params))

// The variant of the op that runs generator Gen, with its Config:
//   OTF_GENERATOR_KERNELS(MyConfig, MyGen)("OnTheFly>MyGen");
//   OTF_GENERATOR_KERNELS(MyConfig, MyGen<float>)("OnTheFly>MyGen",
//                                                  {{"dtype", sdk::DType::kFloat32}});
#define OTF_GENERATOR_KERNELS(...) OTF_GENERATOR_KERNELS_(__COUNTER__, __VA_ARGS__)
#define OTF_GENERATOR_KERNELS_(n, ...) OTF_GENERATOR_KERNELS__(n, __VA_ARGS__)
#define OTF_GENERATOR_KERNELS__(n, ...)                          \
  [[maybe_unused]] static const bool otf_generator_kernels_##n = \
      ::tf_onthefly::sdk::RegisterVariant<__VA_ARGS__>

#endif  // TF_ONTHEFLY_SDK_GENERATOR_DEF_H_

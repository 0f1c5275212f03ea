// The core's C ABI for registering generators (libtf_onthefly_core.so): what
// OTF_GENERATOR and OTF_GENERATOR_KERNELS (generator_def.h) hand the core from a library's
// static initialisers, the core's own built-in generators and a user's library alike.
//
// Plain structs of sizes, versions, strings and function pointers. The core refuses a
// registration whose versions differ from its own, saying what differs: the SDK ABI (the
// layout of these structs and of the types the entry points take), the counter contract
// (docs/counter-contract.md) and the C++ string ABI the SDK's types were compiled with.
// Refusals are kept, naming the library, for whoever loaded it to report
// (tf_onthefly_core_take_registration_errors, core_api.h).
#ifndef TF_ONTHEFLY_SDK_ABI_H_
#define TF_ONTHEFLY_SDK_ABI_H_

#include <cstddef>
#include <cstdint>

#include "tf_ops/common/philox.h"
#include "tf_ops/sdk/attrs.h"
#include "tf_ops/sdk/generator.h"
#include "tf_ops/sdk/generator_config.h"
#include "tf_ops/sdk/status.h"

namespace tf_onthefly {
namespace sdk {

// Bumped whenever a struct below, or a type an entry point takes (Attrs, SampleShapes,
// Status, CallGeometry, Inputs, SeedAndStep, GpuLaunchArgs, ScratchAllocator), changes, except
// for a field appended to a registration record: the core reads a record's struct_size and
// takes the fields past it as absent (OtfVariantDef's launch_gpu_steps), so libraries built
// before the field was added still register.
constexpr uint32_t kSdkAbiVersion = 1;

// What else the two sides of the ABI must agree on: bit 0, the C++11 std::string ABI
// (_GLIBCXX_USE_CXX11_ABI) of the SDK's types.
#if defined(_GLIBCXX_USE_CXX11_ABI) && _GLIBCXX_USE_CXX11_ABI == 0
constexpr uint32_t kAbiFlags = 0;
#else
constexpr uint32_t kAbiFlags = 1;
#endif

}  // namespace sdk
}  // namespace tf_onthefly

extern "C" {

// One generator's op spec: REGISTER_OP's own strings for its inputs, outputs and
// attributes (seed, step, first_sample, Tindex, batch_size and num_samples are the SDK's,
// added by every front end), and its documentation.
typedef struct OtfGeneratorDef {
  size_t struct_size;
  uint32_t sdk_abi_version;   // kSdkAbiVersion
  uint32_t contract_version;  // kContractVersion
  uint32_t abi_flags;         // kAbiFlags
  const char* name;           // the op's name: "OnTheFly>RandomBatch"
  const char* const* inputs;  // "up_probability: float"
  int32_t num_inputs;
  const char* const* outputs;  // "features: dtype"
  int32_t num_outputs;
  const char* const* attrs;  // "feature_dim: int", "dtype: {float, half} = DT_FLOAT"
  int32_t num_attrs;
  const char* doc;
  int64_t params_size;  // sizeof the Config's Params
} OtfGeneratorDef;

// A variant's entry points. configure runs the Config's checks on the op's attributes and
// fills Params (zeroed first) and the SampleShapes; fill_rows_cpu writes rows [begin, end)
// (FillRowsCpu, generator.h); launch_gpu launches a call on its stream (LaunchGenerator);
// scratch_bytes is the most scratch one call of `rows` rows asks for (ScratchBytes).
typedef void (*OtfConfigureFn)(const tf_onthefly::sdk::Attrs* attrs, void* params,
                               tf_onthefly::sdk::SampleShapes* shapes,
                               tf_onthefly::sdk::Status* status);
typedef void (*OtfFillRowsCpuFn)(const void* params, const tf_onthefly::sdk::CallGeometry* geometry,
                                 const tf_onthefly::sdk::Inputs* inputs,
                                 const tf_onthefly::PhiloxKey* keys, int64_t begin, int64_t end);
typedef cudaError_t (*OtfLaunchGpuFn)(const tf_onthefly::sdk::GpuLaunchArgs* call);
// launch_gpu_steps launches a call of num_steps steps (LaunchGeneratorSteps, generator.h).
typedef cudaError_t (*OtfLaunchGpuStepsFn)(const tf_onthefly::sdk::GpuLaunchArgs* call,
                                           int64_t num_steps);
typedef int64_t (*OtfScratchBytesFn)(const void* params, int64_t rows);

// One variant of a generator: the generator struct that runs the op's nodes whose type
// attributes have the given values (none: every node).
typedef struct OtfVariantDef {
  size_t struct_size;
  uint32_t sdk_abi_version;
  uint32_t contract_version;
  uint32_t abi_flags;
  const char* generator;          // the op's name, registered before
  const char* const* type_attrs;  // "dtype", "label_dtype"
  const int32_t* type_values;     // their values (sdk::DType)
  int32_t num_types;
  int64_t params_size;                // sizeof(Params)
  int32_t num_streams;                // Gen::kNumStreams: keys fill_rows_cpu reads
  int32_t command_buffer_compatible;  // CommandBufferCompatible<Gen>
  OtfConfigureFn configure;
  OtfFillRowsCpuFn fill_rows_cpu;   // null: GPU-only
  OtfLaunchGpuFn launch_gpu;        // null: built without GPU code
  OtfScratchBytesFn scratch_bytes;  // null: no ScratchBytes
  void* xla_host_handler;           // XLA_FFI_Handler* (generator_xla_ffi.h); null: none
  void* xla_cuda_handler;
  int32_t xla_ffi_api_version;  // major * 1000 + minor of the XLA FFI headers; -1: none
  // Appended; absent (null) in records of libraries built before it: their front ends
  // launch launch_gpu once per step, and their XLA handlers take one step a call.
  OtfLaunchGpuStepsFn launch_gpu_steps;
} OtfVariantDef;

// 0 when registered; otherwise the refusal is kept (with the library's path) for
// tf_onthefly_core_take_registration_errors.
__attribute__((visibility("default"))) int32_t tf_onthefly_register_generator(
    const OtfGeneratorDef* def);
__attribute__((visibility("default"))) int32_t tf_onthefly_register_variant(
    const OtfVariantDef* def);

}  // extern "C"

#endif  // TF_ONTHEFLY_SDK_ABI_H_

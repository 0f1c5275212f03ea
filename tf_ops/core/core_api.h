// The core's C API for front ends that reach it through a foreign-function interface
// (Python's ctypes: JAX, PyTorch), with no TensorFlow anywhere. Strings in and out are
// UTF-8; JSON where the data has structure. A function that can fail returns 0 or an error
// code (absl's numbering: 3 InvalidArgument, 8 ResourceExhausted, 13 Internal, ...) and
// leaves the message, which names the op and the argument, for tf_onthefly_core_last_error
// on the same thread. Strings the core returns as char* are the caller's, to be freed with
// tf_onthefly_core_free.
//
//   specs  = json(tf_onthefly_core_specs_json())           every generator's op spec
//   code   = tf_onthefly_core_configure(op, attrs_json, &call)   attribute checks, once
//   info   = json(tf_onthefly_core_call_json(call))         output shapes and dtypes, ...
//   code   = tf_onthefly_core_run_cpu(call, &args, threads)   or run_gpu(call, &args, stream,
//                                                              scratch, scratch_size)
//   tf_onthefly_core_release(call)
//
// The XLA handlers of each variant (tf_onthefly_core_xla_handler) are XLA_FFI_Handler
// pointers for jax.ffi.pycapsule; their custom call's operands, results and attributes are
// those of tf_ops/sdk/generator_xla_ffi.h, the attributes' values in the call's JSON.
#ifndef TF_ONTHEFLY_CORE_CORE_API_H_
#define TF_ONTHEFLY_CORE_CORE_API_H_

#include <stddef.h>
#include <stdint.h>

#define OTF_CORE_C_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

// The arguments of one run of a configured call. Seed, step and (optional) sample offset:
// host memory for run_cpu, device memory for run_gpu. The inputs: the generator's own, in
// the op's order, with their dtypes (sdk::DType numbers) and shapes; the outputs: one buffer
// per output, of the shapes the call's JSON gives, in the same memory.
typedef struct OtfRunArgs {
  size_t struct_size;  // sizeof(OtfRunArgs)
  const int64_t* seed;
  int64_t seed_size;  // 1 (a scalar s: the pair (s, 0)) or 2
  const int64_t* step;
  int64_t first_sample;          // global index of row 0 (before the offset)
  const int64_t* sample_offset;  // nullable: adds to first_sample where the kernel runs
  int32_t num_inputs;
  const void* inputs[4];
  int32_t input_dtypes[4];
  int32_t input_ranks[4];
  int64_t input_dims[4][4];
  void* outputs[4];
  // The steps at `step`: a call of several steps writes each step's batch after the one
  // before it in every output (outputs of num_steps times the call's shapes). 0 reads as 1.
  int64_t num_steps;
} OtfRunArgs;

// The versions the core was built with: SDK ABI (tf_ops/sdk/abi.h), counter contract, and
// its own generators' XLA FFI API (major * 1000 + minor; -1: built without XLA handlers).
OTF_CORE_C_API int32_t tf_onthefly_core_abi_version(void);
OTF_CORE_C_API int32_t tf_onthefly_core_contract_version(void);
OTF_CORE_C_API int32_t tf_onthefly_core_xla_ffi_api_version(void);

// The message of this thread's last failed call ("" if none).
OTF_CORE_C_API const char* tf_onthefly_core_last_error(void);
OTF_CORE_C_API void tf_onthefly_core_free(void* p);

// Every registered generator's op spec, as JSON: {"abi_version", "contract_version",
// "generators": [{"name", "library", "doc", "inputs", "outputs", "attrs" (each parsed, the
// SDK's common ones first), "input_specs", "output_specs", "attr_specs" (the generator's own
// REGISTER_OP strings), "has_cpu", "variants": [{"index", "types", "xla_target", "has_cpu",
// "has_gpu", "scratch", "command_buffer_compatible", "num_streams", "xla_ffi_api_version"}]}]}.
// Dtypes by NumPy's names ("float32", "float16", "bfloat16", "int32", ...).
OTF_CORE_C_API char* tf_onthefly_core_specs_json(void);

// The registrations refused since the last call (a library built for another SDK ABI or
// counter contract, a spec the SDK cannot read, ...), one line each naming the library and
// what differs; NULL if none.
OTF_CORE_C_API char* tf_onthefly_core_take_registration_errors(void);

// Checks op `op`'s attributes (a JSON object: name -> value; defaults fill in the rest; a
// type by name, "float32", or by number) as every front end does, and picks the variant.
// On success *call is a handle for call_json/run_*, released with tf_onthefly_core_release.
OTF_CORE_C_API int32_t tf_onthefly_core_configure(const char* op, const char* attrs_json,
                                                  void** call);
OTF_CORE_C_API void tf_onthefly_core_release(void* call);

// The configured call as JSON: {"op", "variant", "xla_target", "batch_size", "num_samples"
// (its rows), "outputs": [{"name", "dtype", "shape"}], "inputs": [{"name", "dtype", "dims"
// (-1: the call's rows, -2: any size >= 1), "rule"}], "params" and "input_rules" (hex bytes,
// the XLA attributes), "input_names", "scratch_bytes" (the most scratch a GPU run asks for:
// the XLA attribute; 0: none) and "scratch_buffer_bytes" (the size of the buffer that serves
// it: an XLA custom call's extra result, run_gpu's scratch), "has_cpu", "has_gpu",
// "command_buffer_compatible"}.
OTF_CORE_C_API char* tf_onthefly_core_call_json(const void* call);

// Whether a run of the configured call may take a vector of `steps` steps (outputs of
// `steps` times its shapes): every output within the per-output cap. With `xla` nonzero, for
// one XLA custom call: the generator's handlers must also take a step vector
// (Unimplemented: its library predates them). Front ends check before they allocate.
OTF_CORE_C_API int32_t tf_onthefly_core_check_steps(const void* call, int64_t steps, int32_t xla);

// One run on the CPU, its rows shared over `threads` threads (>= 1): inputs' shapes, dtypes
// and values and first_sample (with the offset) are checked first, exactly.
OTF_CORE_C_API int32_t tf_onthefly_core_run_cpu(const void* call, const OtfRunArgs* args,
                                                int32_t threads);

// One run on the GPU, enqueued on `stream` (a cudaStream_t of the process's CUDA runtime;
// NULL: the default stream), with `scratch` (device memory of `scratch_size` bytes, at least
// the call's scratch_buffer_bytes, times num_steps) for the launch's scratch requests. Inputs'
// shapes and dtypes are checked; their values and the offset live on the device and are not.
OTF_CORE_C_API int32_t tf_onthefly_core_run_gpu(const void* call, const OtfRunArgs* args,
                                                void* stream, void* scratch, int64_t scratch_size);

// Variant `variant` of op `op`'s XLA handler for `platform` ("host" or "cuda"), an
// XLA_FFI_Handler*; NULL (and last_error says why) where it has none.
OTF_CORE_C_API void* tf_onthefly_core_xla_handler(const char* op, int32_t variant,
                                                  const char* platform);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TF_ONTHEFLY_CORE_CORE_API_H_

// The CUDA runtime forwarders (cuda_runtime.h says why and in which order it is looked for).
//
// Linked into the core and every library of generators of its own, compiled with
// -fvisibility=hidden: the forwarders satisfy the kernels' references inside the library and
// are exported to nobody, so they never stand in for the runtime of TensorFlow or of anyone
// else. Only CudaErrorText and the two tf_onthefly_cuda_runtime_* functions are exported.
#include "tf_ops/common/cuda_runtime.h"

#include <cuda_runtime_api.h>

#include <string>

#include "tf_ops/common/dlfcn_compat.h"

namespace tf_onthefly {
namespace {

// The entry points of the runtime in use; all null where there is none.
struct Runtime {
#define OTF_FIELD(ret, name, params, args) ret(*fn_##name) params = nullptr;
  OTF_CUDA_RUNTIME_ENTRY_POINTS(OTF_FIELD)
#undef OTF_FIELD
  std::string source;  // where it came from; empty: none
  std::string reason;  // why there is none
};

// Takes every entry point from `handle` if it has the runtime (its fat binary registration).
bool TakeFrom(void* handle, const char* name, Runtime* rt) {
  if (handle == nullptr || dlsym(handle, "__cudaRegisterFatBinary") == nullptr) return false;
  std::string missing;
#define OTF_TAKE(ret, fn, params, args)                              \
  rt->fn_##fn = reinterpret_cast<ret(*) params>(dlsym(handle, #fn)); \
  if (rt->fn_##fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + #fn;
  OTF_CUDA_RUNTIME_ENTRY_POINTS(OTF_TAKE)
#undef OTF_TAKE
  rt->source = name;
  if (!missing.empty()) rt->source += " (without " + missing + ")";
  return true;
}

Runtime* Resolve() {
  auto* rt = new Runtime;  // lives as long as the process: kernels may run until exit
  // 1. TensorFlow's own (the GPU build links it statically and exports it); RTLD_NOLOAD: only
  //    the copy already loaded, never a second one.
  void* tf = dlopen("libtensorflow_framework.so.2", RTLD_LAZY | RTLD_NOLOAD);
  if (TakeFrom(tf, "libtensorflow_framework.so.2", rt)) return rt;
  std::string why = tf == nullptr ? "libtensorflow_framework.so.2 is not loaded"
                                  : "TensorFlow's libtensorflow_framework.so.2 has no CUDA runtime "
                                    "(a CPU-only TensorFlow, such as tensorflow-cpu)";
  // 2. One the process already has in its global scope.
  if (TakeFrom(RTLD_DEFAULT, "the process (RTLD_DEFAULT)", rt)) return rt;
  why += ", the process has none loaded globally";
  // 3. A shared CUDA 12 runtime the dynamic loader can find.
  void* cudart = dlopen("libcudart.so.12", RTLD_LAZY | RTLD_LOCAL);
  if (TakeFrom(cudart, "libcudart.so.12", rt)) return rt;
  const char* err = cudart == nullptr ? dlerror() : nullptr;
  why += std::string(", and libcudart.so.12 ") +
         (cudart == nullptr ? std::string("cannot be loaded (") + (err ? err : "not found") + ")"
                            : std::string("has no __cudaRegisterFatBinary"));
  rt->reason = why;
  return rt;
}

const Runtime& GetRuntime() {
  static const Runtime* const runtime = Resolve();  // first use: a fat binary's registration
  return *runtime;
}

// What a forwarder returns without a runtime (or without that entry point).
template <typename R>
R Unavailable();
template <>
void Unavailable<void>() {}
template <>
void** Unavailable<void**>() {
  static void* handle = nullptr;  // registration handle nobody reads
  return &handle;
}
template <>
unsigned Unavailable<unsigned>() {
  return 1;  // __cudaPushCallConfiguration: nonzero, the <<<>>> launch is skipped
}
template <>
cudaError_t Unavailable<cudaError_t>() {
  return cudaErrorNoDevice;
}
template <>
const char* Unavailable<const char*>() {
  return "CUDA runtime not available";
}

}  // namespace

__attribute__((visibility("default"))) std::string CudaErrorText(int error) {
  const Runtime& rt = GetRuntime();
  if (rt.source.empty()) return "CUDA runtime not available: " + rt.reason;
  const auto e = static_cast<cudaError_t>(error);
  const char* name = rt.fn_cudaGetErrorName ? rt.fn_cudaGetErrorName(e) : nullptr;
  const char* text = rt.fn_cudaGetErrorString ? rt.fn_cudaGetErrorString(e) : nullptr;
  return std::string(name ? name : "unknown error") + ": " + (text ? text : "no description");
}

}  // namespace tf_onthefly

extern "C" {

__attribute__((visibility("default"))) const char* tf_onthefly_cuda_runtime_unavailable_reason() {
  const auto& rt = tf_onthefly::GetRuntime();
  return rt.source.empty() ? rt.reason.c_str() : nullptr;
}

__attribute__((visibility("default"))) const char* tf_onthefly_cuda_runtime_source() {
  return tf_onthefly::GetRuntime().source.c_str();
}

// The forwarders themselves (hidden, by -fvisibility=hidden).
#define OTF_FORWARD(ret, name, params, args)                   \
  ret name params {                                            \
    const auto fn = tf_onthefly::GetRuntime().fn_##name;       \
    if (fn == nullptr) return tf_onthefly::Unavailable<ret>(); \
    return fn args;                                            \
  }
OTF_CUDA_RUNTIME_ENTRY_POINTS(OTF_FORWARD)
#undef OTF_FORWARD

}  // extern "C"

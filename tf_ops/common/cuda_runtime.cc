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

// Takes every entry point from `handle` if it has a CUDA 12 runtime (its fat binary
// registration; our kernels are CUDA 12 builds, and a runtime of another major version lays
// out its structures differently). Otherwise appends why not to `why`.
bool TakeFrom(void* handle, const std::string& name, Runtime* rt, std::string* why) {
  if (handle == nullptr || dlsym(handle, "__cudaRegisterFatBinary") == nullptr) return false;
  using VersionFn = cudaError_t (*)(int*);
  const auto version = reinterpret_cast<VersionFn>(dlsym(handle, "cudaRuntimeGetVersion"));
  int v = 0;
  if (version != nullptr && version(&v) == cudaSuccess && (v < 12000 || v >= 13000)) {
    *why += (why->empty() ? "" : ", ") + name + " is CUDA " + std::to_string(v / 1000) + "." +
            std::to_string(v % 1000 / 10) + " (the kernels need CUDA 12)";
    return false;
  }
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

// The folder of the shared library that holds `address`, with a trailing slash; "" if unknown.
std::string FolderOf(const void* address) {
  Dl_info info;
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// Where pip's nvidia-cuda-runtime-cu12 puts libcudart.so.12, seen from a package folder in
// the same site-packages (tf_onthefly/, or a user's library next to it): the tf-onthefly
// extras [jax] and [torch] install it, for processes whose framework brings no CUDA 12
// runtime (a CUDA 13 PyTorch or JAX, or a CPU one).
std::string PipCudart(const std::string& folder) {
  return folder.empty() ? "" : folder + "../nvidia/cuda_runtime/lib/libcudart.so.12";
}

Runtime* Resolve() {
  auto* rt = new Runtime;  // lives as long as the process: kernels may run until exit
  // 1. TensorFlow's own (the GPU build links it statically and exports it); RTLD_NOLOAD: only
  //    the copy already loaded, never a second one.
  void* tf = dlopen("libtensorflow_framework.so.2", RTLD_LAZY | RTLD_NOLOAD);
  std::string why;
  if (tf == nullptr) {
    why = "libtensorflow_framework.so.2 is not loaded";
  } else if (dlsym(tf, "__cudaRegisterFatBinary") == nullptr) {
    why =
        "TensorFlow's libtensorflow_framework.so.2 has no CUDA runtime (a CPU-only TensorFlow, "
        "such as tensorflow-cpu)";
  }
  if (TakeFrom(tf, "libtensorflow_framework.so.2", rt, &why)) return rt;
  // 2. One the process already has in its global scope.
  if (TakeFrom(RTLD_DEFAULT, "the process (RTLD_DEFAULT)", rt, &why)) return rt;
  why += ", the process has no CUDA 12 runtime loaded globally";
  // 3. A shared CUDA 12 runtime the dynamic loader finds (or has loaded already: a JAX or
  //    PyTorch built for CUDA 12 loads pip's), then pip's beside this library or the core.
  void* cudart = dlopen("libcudart.so.12", RTLD_LAZY | RTLD_LOCAL);
  const char* err = cudart == nullptr ? dlerror() : nullptr;
  if (TakeFrom(cudart, "libcudart.so.12", rt, &why)) return rt;
  why += std::string(", libcudart.so.12 ") +
         (cudart == nullptr ? std::string("cannot be loaded (") + (err ? err : "not found") + ")"
                            : std::string("has no __cudaRegisterFatBinary"));
  void* core = dlopen("libtf_onthefly_core.so", RTLD_LAZY | RTLD_NOLOAD);
  const void* core_symbol = core != nullptr ? dlsym(core, "tf_onthefly_core_abi_version") : nullptr;
  for (const std::string& path : {PipCudart(FolderOf(reinterpret_cast<const void*>(&Resolve))),
                                  PipCudart(FolderOf(core_symbol))}) {
    if (path.empty()) continue;
    void* pip = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (TakeFrom(pip, path, rt, &why)) return rt;
    if (pip == nullptr) why += ", and not at " + path;
  }
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

// What nvcc 13's <<<>>> launches call: CUDA 13 runtime internals that CUDA 12's lacks. A
// kernel's handle is its host function, launched with cudaLaunchKernel, so a library of
// generators that nvcc 13 compiled runs on the CUDA 12 runtime TensorFlow loaded.
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* host_function) {
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void*>(host_function));
  return cudaSuccess;
}
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                               size_t shared_bytes, cudaStream_t stream) {
  return cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, args, shared_bytes,
                          stream);
}

}  // extern "C"

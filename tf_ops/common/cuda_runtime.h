// The CUDA runtime our GPU kernels call, found at load time instead of at link time.
//
// The GPU kernels (today in the core, libtf_onthefly_core.so) used to take the CUDA runtime
// from libtensorflow_framework.so.2, which exports it in the GPU build of TensorFlow only: with
// `tensorflow-cpu` the library failed to load (`undefined symbol: __cudaRegisterFatBinary`)
// and the package did not import at all. cuda_runtime.cc now defines every entry point in
// OTF_CUDA_RUNTIME_ENTRY_POINTS (hidden: the kernels bind to these, nothing outside sees
// them) as a forwarder to the runtime found in the process on first use:
//   1. the one TensorFlow's libtensorflow_framework.so.2 exports (the GPU build: its CUDA
//      runtime is linked in statically, and TensorFlow's streams belong to it);
//   2. any the process already has in its global scope (RTLD_DEFAULT);
//   3. libcudart.so.12, if the dynamic loader finds it (or has it loaded: a JAX or PyTorch
//      built for CUDA 12 loads pip's), else pip's nvidia-cuda-runtime-cu12 in the
//      site-packages of this library or of the core (the extras [jax] and [torch] install it).
// A source counts when it has __cudaRegisterFatBinary and is CUDA 12 (cudaRuntimeGetVersion:
// the kernels are CUDA 12 builds, and a CUDA 13 runtime, such as a CUDA 13 PyTorch loads
// globally, lays out its structures differently); all entry points then come from it.
// With none (tensorflow-cpu), registration does nothing, every call returns
// cudaErrorNoDevice and CudaRuntimeUnavailableReason() says why: the GPU kernels are not
// usable (TensorFlow has no GPU device to place them on anyway), the CPU kernels are.
//
// Every CUDA runtime function that any .cu.cc file (or the SDK, or CCCL inside it) calls must
// be in the list below: tests/cuda_runtime_symbols_test.sh fails when a built library has
// an undefined cuda* / __cuda* symbol left, and names it.
//
// This header needs no CUDA header: the TensorFlow-side sources (tf_glue.h) include it for
// CudaErrorText.
#ifndef TF_ONTHEFLY_COMMON_CUDA_RUNTIME_H_
#define TF_ONTHEFLY_COMMON_CUDA_RUNTIME_H_

#include <string>

// X(return type, name, (parameters), (arguments)): every CUDA runtime entry point forwarded.
#define OTF_CUDA_RUNTIME_ENTRY_POINTS(X)                                                           \
  /* Registration of the fat binaries and kernels (clang's module constructor, destructor) */      \
  X(void**, __cudaRegisterFatBinary, (void* fat_cubin), (fat_cubin))                               \
  X(void, __cudaRegisterFatBinaryEnd, (void** handle), (handle))                                   \
  X(void, __cudaUnregisterFatBinary, (void** handle), (handle))                                    \
  X(void, __cudaRegisterFunction,                                                                  \
    (void** handle, const char* host_fun, char* device_fun, const char* device_name,               \
     int thread_limit, uint3* tid, uint3* bid, dim3* block_dim, dim3* grid_dim, int* warp_size),   \
    (handle, host_fun, device_fun, device_name, thread_limit, tid, bid, block_dim, grid_dim,       \
     warp_size))                                                                                   \
  X(void, __cudaRegisterVar,                                                                       \
    (void** handle, char* host_var, char* device_address, const char* device_name, int ext,        \
     size_t size, int constant, int global),                                                       \
    (handle, host_var, device_address, device_name, ext, size, constant, global))                  \
  /* Launches: <<<>>> (push, pop, launch) and sdk::LaunchKernel */                                 \
  X(unsigned, __cudaPushCallConfiguration,                                                         \
    (dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream),                             \
    (grid, block, shared_bytes, stream))                                                           \
  X(cudaError_t, __cudaPopCallConfiguration,                                                       \
    (dim3 * grid, dim3 * block, size_t * shared_bytes, void* stream),                              \
    (grid, block, shared_bytes, stream))                                                           \
  X(cudaError_t, cudaLaunchKernel,                                                                 \
    (const void* func, dim3 grid, dim3 block, void** args, size_t shared_bytes,                    \
     cudaStream_t stream),                                                                         \
    (func, grid, block, args, shared_bytes, stream))                                               \
  /* Device and kernel queries (sdk::ResidentBlocks, CUB) */                                       \
  X(cudaError_t, cudaGetDevice, (int* device), (device))                                           \
  X(cudaError_t, cudaDeviceGetAttribute, (int* value, cudaDeviceAttr attr, int device),            \
    (value, attr, device))                                                                         \
  X(cudaError_t, cudaOccupancyMaxActiveBlocksPerMultiprocessor,                                    \
    (int* blocks, const void* func, int block_size, size_t dynamic_shared_bytes),                  \
    (blocks, func, block_size, dynamic_shared_bytes))                                              \
  X(cudaError_t, cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,                           \
    (int* blocks, const void* func, int block_size, size_t dynamic_shared_bytes,                   \
     unsigned int flags),                                                                          \
    (blocks, func, block_size, dynamic_shared_bytes, flags))                                       \
  X(cudaError_t, cudaFuncGetAttributes, (cudaFuncAttributes * attr, const void* func),             \
    (attr, func))                                                                                  \
  X(cudaError_t, cudaRuntimeGetVersion, (int* version), (version))                                 \
  X(cudaError_t, cudaDriverGetVersion, (int* version), (version))                                  \
  /* Kernel settings and launch forms a launcher uses (dynamic shared memory above 48 KiB:  */     \
  /* cudaFuncAttributeMaxDynamicSharedMemorySize; cudaLaunchKernelEx calls ...ExC)          */     \
  X(cudaError_t, cudaFuncSetAttribute, (const void* func, cudaFuncAttribute attr, int value),      \
    (func, attr, value))                                                                           \
  X(cudaError_t, cudaFuncSetCacheConfig, (const void* func, cudaFuncCache config), (func, config)) \
  X(cudaError_t, cudaLaunchKernelExC,                                                              \
    (const cudaLaunchConfig_t* config, const void* func, void** args), (config, func, args))       \
  X(cudaError_t, cudaLaunchCooperativeKernel,                                                      \
    (const void* func, dim3 grid, dim3 block, void** args, size_t shared_bytes,                    \
     cudaStream_t stream),                                                                         \
    (func, grid, block, args, shared_bytes, stream))                                               \
  X(cudaError_t, cudaStreamIsCapturing, (cudaStream_t stream, cudaStreamCaptureStatus * status),   \
    (stream, status))                                                                              \
  /* Errors */                                                                                     \
  X(cudaError_t, cudaGetLastError, (), ())                                                         \
  X(cudaError_t, cudaPeekAtLastError, (), ())                                                      \
  X(const char*, cudaGetErrorName, (cudaError_t error), (error))                                   \
  X(const char*, cudaGetErrorString, (cudaError_t error), (error))                                 \
  /* Memory on the op's stream (launcher generators) */                                            \
  X(cudaError_t, cudaMemsetAsync, (void* ptr, int value, size_t count, cudaStream_t stream),       \
    (ptr, value, count, stream))                                                                   \
  X(cudaError_t, cudaMemcpyAsync,                                                                  \
    (void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream),          \
    (dst, src, count, kind, stream))                                                               \
  X(cudaError_t, cudaMemcpy2DAsync,                                                                \
    (void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,        \
     cudaMemcpyKind kind, cudaStream_t stream),                                                    \
    (dst, dpitch, src, spitch, width, height, kind, stream))                                       \
  /* What CCCL's device-wide algorithms (cub::Device*, thrust on a stream) call */                 \
  X(cudaError_t, cudaGetDeviceCount, (int* count), (count))                                        \
  X(cudaError_t, cudaSetDevice, (int device), (device))                                            \
  X(cudaError_t, cudaStreamSynchronize, (cudaStream_t stream), (stream))

namespace tf_onthefly {

// "cudaErrorX: text" for a CUDA error code, from the runtime in use; where the process has
// no CUDA runtime, says so and why (never calls into a missing runtime).
__attribute__((visibility("default"))) std::string CudaErrorText(int error);

}  // namespace tf_onthefly

extern "C" {
// nullptr when the CUDA runtime was found (the GPU kernels are usable), else why not. Read
// by `python -m tf_onthefly.info` (ctypes). Resolves the runtime if nothing has yet.
__attribute__((visibility("default"))) const char* tf_onthefly_cuda_runtime_unavailable_reason();
// Where the runtime came from ("libtensorflow_framework.so.2", ...), or "" without one.
__attribute__((visibility("default"))) const char* tf_onthefly_cuda_runtime_source();
}

#endif  // TF_ONTHEFLY_COMMON_CUDA_RUNTIME_H_

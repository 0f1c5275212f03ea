// Checked kernel launches for .cu.cc files (CUDA only, no TensorFlow headers): what the
// SDK's own kernel launch uses, and what a launcher generator's code may use too.
//
// LaunchKernel goes through cudaLaunchKernel, so a launch's own error comes back to the
// caller instead of waiting in the runtime's last-error state as a <<<>>> launch's does.
// Nothing here aborts: the op kernel or XLA handler turns an error into one that names the
// op.
#ifndef TF_ONTHEFLY_SDK_GPU_LAUNCH_H_
#define TF_ONTHEFLY_SDK_GPU_LAUNCH_H_

#if !defined(__CUDACC__)
#error "gpu_launch.h is for CUDA sources (*.cu.cc) only"
#endif

// CCCL's device-wide algorithms (cub::Device*) emit NVTX ranges, and NVTX dlopens its
// injection library: a dlopen@GLIBC_2.34 reference that costs the library its manylinux tag
// (tests/symbol_versions_test.py). No range is wanted from a generator: off, for every CUB
// header included after this one (the SDK's compile flags define it too, for any order).
#ifndef CCCL_DISABLE_NVTX
#define CCCL_DISABLE_NVTX
#endif

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <tuple>
#include <utility>

namespace tf_onthefly {
namespace sdk {

// Devices whose resident-grid size is cached; a higher ordinal is queried on every launch.
constexpr int kMaxCachedDevices = 64;

// Blocks of kKernel (launched with `block_threads` threads and no dynamic shared memory)
// resident on the current device at once: its multiprocessors times the kernel's
// occupancy, the largest useful grid of a grid-stride kernel. Neither changes while a
// process runs, and the occupancy query costs far more than the launch itself, so both are
// asked once per kernel and device.
template <auto kKernel>
cudaError_t ResidentBlocks(int block_threads, int64_t* resident) {
  static std::atomic<int64_t> cache[kMaxCachedDevices] = {};  // 0: not asked yet
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  if (device < kMaxCachedDevices) {
    *resident = cache[device].load(std::memory_order_relaxed);
    if (*resident > 0) return cudaSuccess;
  }
  int sms = 0, blocks_per_sm = 0;
  err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err == cudaSuccess)
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kKernel, block_threads, 0);
  if (err != cudaSuccess) return err;
  *resident = static_cast<int64_t>(sms) * (blocks_per_sm > 0 ? blocks_per_sm : 1);
  if (device < kMaxCachedDevices) cache[device].store(*resident, std::memory_order_relaxed);
  return cudaSuccess;
}

// Launches `kernel` on `stream` with the arguments converted to its parameter types (the
// count is checked at compile time) and returns the launch's error.
template <typename... Params, typename... Args>
cudaError_t LaunchKernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
                         cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "wrong number of kernel arguments");
  std::tuple<Params...> values(std::forward<Args>(args)...);
  void* pointers[sizeof...(Params) + 1] = {};
  std::apply(
      [&pointers](auto&... v) {
        int i = 0;
        ((pointers[i++] = static_cast<void*>(&v)), ...);
      },
      values);
  return cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, pointers,
                          shared_bytes, stream);
}

}  // namespace sdk
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_SDK_GPU_LAUNCH_H_

// Checked kernel launches for .cu.cc files (CUDA only, no TensorFlow headers).
//
// Every launch goes through cudaLaunchKernel, so its own error comes back to the caller
// (a <<<>>> launch only leaves it in a sticky global), and nothing here aborts: the op
// kernel or XLA handler above turns the error into one that names the op.
#ifndef TF_ONTHEFLY_COMMON_GPU_LAUNCH_H_
#define TF_ONTHEFLY_COMMON_GPU_LAUNCH_H_

#if !defined(__CUDACC__)
#error "gpu_launch.h is for CUDA sources (*.cu.cc) only"
#endif

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <tuple>
#include <utility>

namespace tf_onthefly {

// Devices whose resident-grid size is cached; a higher ordinal is queried on every launch.
constexpr int kMaxCachedDevices = 64;

// Blocks of kKernel (launched with `block_threads` threads) resident on the current device
// at once: its multiprocessors times the kernel's occupancy, the largest useful grid of a
// grid-stride kernel. Neither changes while a process runs, and the occupancy query costs
// far more than the launch itself, so both are asked once per kernel and device.
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

namespace internal {
template <typename... Params, typename Tuple, std::size_t... I>
cudaError_t LaunchTuple(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream,
                        Tuple& args, std::index_sequence<I...>) {
  void* ptrs[] = {static_cast<void*>(&std::get<I>(args))..., nullptr};
  return cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, ptrs, 0, stream);
}

// The arguments converted to the kernel's parameter types, then launched.
template <typename... Params, typename... Args>
cudaError_t Launch(void (*kernel)(Params...), int grid_blocks, int block_threads,
                   cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "wrong number of kernel arguments");
  std::tuple<Params...> params(std::forward<Args>(args)...);
  return LaunchTuple(kernel, dim3(grid_blocks), dim3(block_threads), stream, params,
                     std::index_sequence_for<Params...>{});
}
}  // namespace internal

// Launches kKernel as a grid-stride kernel over `work_items` items: as many blocks as are
// resident at once, never more than the items need; nothing for zero items.
template <auto kKernel, typename... Args>
cudaError_t LaunchGridStride(int64_t work_items, int block_threads, cudaStream_t stream,
                             Args&&... args) {
  if (work_items <= 0) return cudaSuccess;
  int64_t resident = 0;
  const cudaError_t err = ResidentBlocks<kKernel>(block_threads, &resident);
  if (err != cudaSuccess) return err;
  const int64_t needed = (work_items + block_threads - 1) / block_threads;
  const int grid = static_cast<int>(needed < resident ? needed : resident);
  return internal::Launch(kKernel, grid, block_threads, stream, std::forward<Args>(args)...);
}

}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_COMMON_GPU_LAUNCH_H_

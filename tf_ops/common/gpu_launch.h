// Checked kernel launches for .cu.cc files (CUDA only, no TensorFlow headers).
//
// The naming ladder used by every op family: a __global__ kernel, a launcher in the
// .cu.cc that sizes the grid and launches it through LaunchGridStride() and returns the
// cudaError_t as an int, and the OpKernel in the .cc that turns a non-zero result into
// an op error (GpuLaunchStatus() in tf_ops/common/tf_glue.h). Nothing here aborts.
#ifndef TF_ONTHEFLY_COMMON_GPU_LAUNCH_H_
#define TF_ONTHEFLY_COMMON_GPU_LAUNCH_H_

#if !defined(__CUDACC__)
#error "gpu_launch.h is for CUDA sources (*.cu.cc) only"
#endif

#include <cuda_runtime.h>

#include <cstdint>
#include <tuple>
#include <utility>

namespace tf_onthefly {

// A grid for a grid-stride kernel over `work_items` items: enough blocks to fill every
// multiprocessor at the kernel's occupancy (queried, since register use differs per
// architecture and per compiler), never more than there are items to cover.
template <typename Kernel>
cudaError_t GridStrideConfig(Kernel kernel, int64_t work_items, int block_threads,
                             int* grid_blocks) {
  int device = 0, sms = 0, blocks_per_sm = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err == cudaSuccess)
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, block_threads, 0);
  if (err != cudaSuccess) return err;
  const int64_t resident = static_cast<int64_t>(sms) * (blocks_per_sm > 0 ? blocks_per_sm : 1);
  const int64_t needed = (work_items + block_threads - 1) / block_threads;
  *grid_blocks = static_cast<int>(needed < resident ? needed : resident);
  return cudaSuccess;
}

namespace internal {
template <typename... Params, typename Tuple, std::size_t... I>
cudaError_t LaunchTuple(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream,
                        Tuple& args, std::index_sequence<I...>) {
  void* ptrs[] = {static_cast<void*>(&std::get<I>(args))..., nullptr};
  return cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, ptrs, 0, stream);
}
}  // namespace internal

// Launches `kernel` through cudaLaunchKernel so the launch's own error comes back
// (a <<<>>> launch only leaves it in a sticky global).
template <typename... Params, typename... Args>
cudaError_t LaunchKernel(void (*kernel)(Params...), int grid_blocks, int block_threads,
                         cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "wrong number of kernel arguments");
  std::tuple<Params...> params(std::forward<Args>(args)...);
  return internal::LaunchTuple(kernel, dim3(grid_blocks), dim3(block_threads), stream, params,
                               std::index_sequence_for<Params...>{});
}

// Sizes and launches a grid-stride kernel over `work_items` items; nothing for zero items.
template <typename... Params, typename... Args>
cudaError_t LaunchGridStride(void (*kernel)(Params...), int64_t work_items, int block_threads,
                             void* stream, Args&&... args) {
  if (work_items <= 0) return cudaSuccess;
  int grid = 0;
  cudaError_t err = GridStrideConfig(kernel, work_items, block_threads, &grid);
  if (err != cudaSuccess) return err;
  return LaunchKernel(kernel, grid, block_threads, static_cast<cudaStream_t>(stream),
                      std::forward<Args>(args)...);
}

}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_COMMON_GPU_LAUNCH_H_

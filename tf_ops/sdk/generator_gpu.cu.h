// The generator SDK, GPU side: the grid-stride kernel and the launcher every generator gets.
// A generator's .cu.cc includes this and its own header, then says
//   OTF_DEFINE_GPU_GENERATOR(MyGen);
//
// The ladder: GeneratorKernel (the __global__ function) <- LaunchGenerator (picks the
// kernel for the call, sizes its grid, launches it on the given stream, returns the
// cudaError_t) <- the op kernel (generator_op.h) or XLA CUDA handler (generator_xla.h),
// which turns an error into one that names the op.
#ifndef TF_ONTHEFLY_SDK_GENERATOR_GPU_CU_H_
#define TF_ONTHEFLY_SDK_GENERATOR_GPU_CU_H_

#include <cstdint>

#include "tf_ops/common/gpu_launch.h"
#include "tf_ops/sdk/generator.h"

namespace tf_onthefly {
namespace sdk {

constexpr int kGeneratorBlockThreads = 256;

// Grid-stride over work units; a unit is K items of one sample, `groups_per_sample`
// (= ceil(items / K)) apart, so a warp's k-th stores are still adjacent in memory while the
// per-unit bookkeeping (row, sample index, output addresses, the generator's branches on
// its parameters) is paid once for K items: the kernel is issue-bound.
// A thread divides once, for its first unit; after that it steps its (row, group) pair by
// the stride's own quotient and remainder. Index is uint32_t when every unit index fits
// (32-bit arithmetic is cheaper), int64_t from 2^31 units on.
//
// The stream keys are derived here, on the device, from seed and step in device memory:
// threads 0 .. kNumStreams-1 of each block derive one key each (two Philox evaluations)
// into shared memory, and every thread keeps a copy in registers (the generators index
// keys with compile-time stream ids).
template <typename Gen, int V, int K, typename Index>
__global__ void GeneratorKernel(typename Gen::Params p, CallGeometry g, SeedAndStep in,
                                Index items_per_sample, Index groups_per_sample,
                                Index total_groups) {
  constexpr int kStreams = Gen::kNumStreams;
  __shared__ PhiloxKey block_keys[kStreams];
  if (threadIdx.x < kStreams)
    block_keys[threadIdx.x] = StreamKey(in, static_cast<int>(threadIdx.x));
  __syncthreads();
  PhiloxKey keys[kStreams];
#pragma unroll
  for (int s = 0; s < kStreams; ++s) keys[s] = block_keys[s];

  Index t = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= total_groups) return;
  const Index stride = static_cast<Index>(blockDim.x) * gridDim.x;
  const Index stride_rows = stride / groups_per_sample;
  const Index stride_groups = stride - stride_rows * groups_per_sample;
  Index row = t / groups_per_sample;
  Index group = t - row * groups_per_sample;
  for (; t < total_groups; t += stride) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const Index item = group + k * groups_per_sample;
      if (K == 1 || item < items_per_sample)
        RunItem<Gen, V>(p, g, keys, static_cast<int64_t>(row), static_cast<int64_t>(item));
    }
    row += stride_rows;
    group += stride_groups;
    if (group >= groups_per_sample) {
      group -= groups_per_sample;
      ++row;
    }
  }
}

// Launches the kernel with variant V, K items per thread and index type Index.
template <typename Gen, int V, int K, typename Index>
cudaError_t LaunchUnits(const typename Gen::Params& p, const CallGeometry& g, const SeedAndStep& in,
                        int64_t items, cudaStream_t stream) {
  const int64_t groups = (items + K - 1) / K;
  const int64_t total = g.num_samples * groups;
  return LaunchGridStride<&GeneratorKernel<Gen, V, K, Index>>(
      total, kGeneratorBlockThreads, stream, p, g, in, static_cast<Index>(items),
      static_cast<Index>(groups), static_cast<Index>(total));
}

template <typename Gen>
using UnitLauncher = cudaError_t (*)(const typename Gen::Params&, const CallGeometry&,
                                     const SeedAndStep&, int64_t, cudaStream_t);

// The kernel a call needs: its variant (Gen::Variant), its items per thread
// (ItemsPerThread), and 64-bit indexing from 2^31 work items on (leaving headroom so that
// t + stride cannot wrap a uint32_t).
template <typename Gen, int V = 0>
UnitLauncher<Gen> UnitLauncherFor(int variant, int items_per_thread, bool wide) {
  if constexpr (V + 1 < NumVariants<Gen>::value) {
    if (variant != V) return UnitLauncherFor<Gen, V + 1>(variant, items_per_thread, wide);
  }
  if (wide) {
    return items_per_thread == 4   ? &LaunchUnits<Gen, V, 4, int64_t>
           : items_per_thread == 2 ? &LaunchUnits<Gen, V, 2, int64_t>
                                   : &LaunchUnits<Gen, V, 1, int64_t>;
  }
  return items_per_thread == 4   ? &LaunchUnits<Gen, V, 4, uint32_t>
         : items_per_thread == 2 ? &LaunchUnits<Gen, V, 2, uint32_t>
                                 : &LaunchUnits<Gen, V, 1, uint32_t>;
}

template <typename Gen>
cudaError_t LaunchGenerator(const typename Gen::Params& p, const CallGeometry& g,
                            const SeedAndStep& in, cudaStream_t stream) {
  const int64_t items = Gen::ItemsPerSample(p);
  const int64_t work_items = g.num_samples * items;
  if (work_items <= 0) return cudaSuccess;
  const bool wide = work_items >= (int64_t{1} << 31);
  return UnitLauncherFor<Gen>(VariantOf<Gen>(p), ItemsPerThread(items), wide)(p, g, in, items,
                                                                              stream);
}

}  // namespace sdk
}  // namespace tf_onthefly

// Instantiates the GPU launcher of generator `Gen` (a type; may be a template-id), at
// namespace scope.
#define OTF_DEFINE_GPU_GENERATOR(...)                                               \
  template cudaError_t tf_onthefly::sdk::LaunchGenerator<__VA_ARGS__>(              \
      const typename __VA_ARGS__::Params&, const ::tf_onthefly::sdk::CallGeometry&, \
      const ::tf_onthefly::sdk::SeedAndStep&, cudaStream_t)

#endif  // TF_ONTHEFLY_SDK_GENERATOR_GPU_CU_H_

// The generator SDK, GPU side: the grid-stride kernel of struct generators and the launch
// every generator gets. A generator's .cu.cc includes this and its own header, then says
//   OTF_DEFINE_GPU_GENERATOR(MyGen);
//
// The launch path, three calls from the op to the runtime: the op kernel (a front end's,
// e.g. tf_ops/tensorflow/generator_ops.cc), the XLA CUDA handler (generator_xla_ffi.h) or the
// core's C API calls LaunchGenerator (the variant's GPU entry point, generator_def.h), which
// picks the kernel for the call and sizes its grid (LaunchUnits) and launches it with
// LaunchKernel (gpu_launch.h) -> cudaLaunchKernel; a launcher generator's LaunchGenerator
// calls its own Launch instead. Every error comes back as a cudaError_t, and the caller
// turns it into an error that names the op.
#ifndef TF_ONTHEFLY_SDK_GENERATOR_GPU_CU_H_
#define TF_ONTHEFLY_SDK_GENERATOR_GPU_CU_H_

#include <cstdint>

#include "tf_ops/sdk/generator.h"
#include "tf_ops/sdk/gpu_launch.h"

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
// keys with compile-time stream ids). Thread 0 reads the global index of row 0
// (FirstGlobalSample: the sample offset, if any, is in device memory) beside them.
//
// kSteps: a call of several steps (StepGeometry), grid row y making step y's batch; the
// one-step kernel (kSteps false) is a kernel of its own, untouched by it.
template <typename Gen, int V, int K, typename Index, bool kSteps>
__global__ void GeneratorKernel(typename Gen::Params p, CallGeometry g, SeedAndStep seed_step,
                                Inputs in, Index items_per_sample, Index groups_per_sample,
                                Index total_groups) {
  constexpr int kStreams = Gen::kNumStreams;
  if constexpr (kSteps) {
    g = StepGeometry(g, blockIdx.y);
    seed_step = StepSeedAndStep(seed_step, blockIdx.y);
  }
  __shared__ PhiloxKey block_keys[kStreams];
  __shared__ int64_t block_first;
  if (threadIdx.x < kStreams)
    block_keys[threadIdx.x] = StreamKey(seed_step, static_cast<int>(threadIdx.x));
  if (threadIdx.x == 0) block_first = FirstGlobalSample(seed_step, g.first_sample);
  __syncthreads();
  PhiloxKey keys[kStreams];
#pragma unroll
  for (int s = 0; s < kStreams; ++s) keys[s] = block_keys[s];
  const int64_t first = block_first;

  Index t = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= total_groups) return;
  const Index stride = static_cast<Index>(blockDim.x) * gridDim.x;
  const Index stride_rows = stride / groups_per_sample;
  const Index stride_groups = stride - stride_rows * groups_per_sample;
  Index row = t / groups_per_sample;
  Index group = t - row * groups_per_sample;
  for (; t < total_groups; t += stride) {
    RunUnit<Gen, V, K>(p, g, in, keys, first, row, group, items_per_sample, groups_per_sample);
    row += stride_rows;
    group += stride_groups;
    if (group >= groups_per_sample) {
      group -= groups_per_sample;
      ++row;
    }
  }
}

// Blocks a launch gives its kernel per block resident at once: four waves. Measured on an
// H100 (benchmarks/kernel_bench, 1 GiB, 8 items a thread, one run): random_batch's float32
// normals 2.41 TB/s with one wave, 2.49 with two, 2.54 with four and with eight, 2.29 with a
// block per 256 units (no grid-stride step); its [0, 1) features 3.11, 3.10 and 3.12 TB/s
// with one, two and four (benchmarks/results/2026-12-06_h100_kernel_bench.txt).
constexpr int kResidentWaves = 4;

// Launches the kernel with variant V, K items per thread and index type Index: four waves of
// the blocks resident at once, never more than the units need; with kSteps, `steps` grid
// rows (at most kMaxGridRows) sharing those waves.
template <typename Gen, int V, int K, typename Index, bool kSteps>
cudaError_t LaunchUnits(const GpuCall<typename Gen::Params>& call, int64_t items, int64_t steps) {
  constexpr auto kKernel = &GeneratorKernel<Gen, V, K, Index, kSteps>;
  const int64_t groups = (items + K - 1) / K;
  const int64_t total = call.geometry.num_samples * groups;
  int64_t resident = 0;
  const cudaError_t err = ResidentBlocks<kKernel>(kGeneratorBlockThreads, &resident);
  if (err != cudaSuccess) return err;
  const int64_t needed = (total + kGeneratorBlockThreads - 1) / kGeneratorBlockThreads;
  resident *= kResidentWaves;
  if (kSteps) resident = resident > steps ? resident / steps : 1;
  const int grid = static_cast<int>(needed < resident ? needed : resident);
  return LaunchKernel(kKernel, dim3(grid, kSteps ? static_cast<unsigned>(steps) : 1u),
                      dim3(kGeneratorBlockThreads), 0, call.stream, call.params, call.geometry,
                      call.seed_and_step, call.inputs, items, groups, total);
}

// The most grid rows (steps) one launch of a call of several steps takes: CUDA's limit on
// gridDim.y.
constexpr int64_t kMaxGridRows = 65535;

template <typename Gen>
using UnitLauncher = cudaError_t (*)(const GpuCall<typename Gen::Params>&, int64_t, int64_t);

template <typename Gen, int V, typename Index, bool kSteps, int K = kMaxItemsPerThread<Gen>>
UnitLauncher<Gen> UnitLauncherForK(int items_per_thread) {
  if constexpr (K > 1) {
    if (items_per_thread < K)
      return UnitLauncherForK<Gen, V, Index, kSteps, K / 2>(items_per_thread);
  }
  return &LaunchUnits<Gen, V, K, Index, kSteps>;
}

// The kernel a call needs: its variant (Gen::Variant), its items per thread
// (ItemsPerThread), and 64-bit indexing from 2^31 work items on (leaving headroom so that
// t + stride cannot wrap a uint32_t). The 64-bit kernels take at most 4 items a thread:
// kernels of 8 are the slowest to compile, one more for every generator type and variant,
// and calls of 2^31 items (8 GiB of float32 and more) are rare. The kernels of several steps
// (kSteps) come in one form, 32-bit indexing and an item a thread: they serve small batches,
// whose steps are launch-bound (LaunchGeneratorSteps launches wider steps one by one), and
// every further K would grow the library by the kernels of all the generators' variants
// (1.8 MB for K = 1 alone, in a 26 MB core).
template <typename Gen, bool kSteps = false, int V = 0>
UnitLauncher<Gen> UnitLauncherFor(int variant, int items_per_thread, bool wide) {
  if constexpr (V + 1 < NumVariants<Gen>::value) {
    if (variant != V) return UnitLauncherFor<Gen, kSteps, V + 1>(variant, items_per_thread, wide);
  }
  if constexpr (kSteps) {
    return &LaunchUnits<Gen, V, 1, uint32_t, true>;
  } else {
    return wide ? UnitLauncherForK<Gen, V, int64_t, false, 4>(items_per_thread)
                : UnitLauncherForK<Gen, V, uint32_t, false>(items_per_thread);
  }
}

template <typename Gen>
cudaError_t LaunchGenerator(const GpuLaunchArgs* args) {
  const GpuCall<typename Gen::Params> call{*static_cast<const typename Gen::Params*>(args->params),
                                           *args->geometry,
                                           *args->seed_and_step,
                                           *args->inputs,
                                           args->stream,
                                           *args->scratch};
  if constexpr (HasGpuLaunch<Gen>::value) {
    const cudaError_t err = Gen::Launch(call);
    // A <<<>>> launch inside Launch leaves its error in the runtime's last-error state
    // rather than returning it: take that too, so no failed launch goes unreported.
    const cudaError_t last = cudaGetLastError();
    return err != cudaSuccess ? err : last;
  } else {
    const int64_t items = Gen::ItemsPerSample(call.params);
    const int64_t work_items = call.geometry.num_samples * items;
    if (work_items <= 0) return cudaSuccess;
    const bool wide = work_items >= (int64_t{1} << 31);
    return UnitLauncherFor<Gen>(VariantOf<Gen>(call.params),
                                ItemsPerThread(items, kMaxItemsPerThread<Gen>),
                                wide)(call, items, 1);
  }
}

template <typename Gen>
cudaError_t LaunchGeneratorSteps(const GpuLaunchArgs* args, int64_t num_steps) {
  if constexpr (!HasGpuLaunch<Gen>::value) {
    const auto& params = *static_cast<const typename Gen::Params*>(args->params);
    const int64_t items = Gen::ItemsPerSample(params);
    const int64_t work_items = args->geometry->num_samples * items;
    if (work_items <= 0 || num_steps <= 0) return cudaSuccess;
    if (work_items < (int64_t{1} << 31)) {
      const UnitLauncher<Gen> launch = UnitLauncherFor<Gen, true>(
          VariantOf<Gen>(params), ItemsPerThread(items, kMaxItemsPerThread<Gen>), false);
      for (int64_t k = 0; k < num_steps; k += kMaxGridRows) {
        const CallGeometry g = StepGeometry(*args->geometry, k);
        const SeedAndStep seed_step = StepSeedAndStep(*args->seed_and_step, k);
        const GpuCall<typename Gen::Params> call{
            params, g, seed_step, *args->inputs, args->stream, *args->scratch};
        const int64_t rows = num_steps - k < kMaxGridRows ? num_steps - k : kMaxGridRows;
        const cudaError_t err = launch(call, items, rows);
        if (err != cudaSuccess) return err;
      }
      return cudaSuccess;
    }
  }
  // A launcher generator, or steps of 2^31 work items and more: a launch a step.
  return LaunchEachStep(&LaunchGenerator<Gen>, *args, num_steps);
}

}  // namespace sdk
}  // namespace tf_onthefly

// Instantiates the GPU launch of generator `Gen` (a type; may be a template-id), at
// namespace scope.
#define OTF_DEFINE_GPU_GENERATOR(...)                                       \
  template cudaError_t tf_onthefly::sdk::LaunchGenerator<__VA_ARGS__>(      \
      const ::tf_onthefly::sdk::GpuLaunchArgs*);                            \
  template cudaError_t tf_onthefly::sdk::LaunchGeneratorSteps<__VA_ARGS__>( \
      const ::tf_onthefly::sdk::GpuLaunchArgs*, int64_t)

#endif  // TF_ONTHEFLY_SDK_GENERATOR_GPU_CU_H_

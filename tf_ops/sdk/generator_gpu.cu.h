// The generator SDK, GPU side: the grid-stride kernel and launcher every generator gets.
// A generator's .cu.cc includes this and its own header, then says
//   OTF_DEFINE_GPU_GENERATOR(MyGen)
#ifndef TF_ONTHEFLY_SDK_GENERATOR_GPU_CU_H_
#define TF_ONTHEFLY_SDK_GENERATOR_GPU_CU_H_

#include <cstdint>
#include <type_traits>

#include "tf_ops/common/gpu_launch.h"
#include "tf_ops/sdk/generator.h"

namespace tf_onthefly {
namespace sdk {

constexpr int kGeneratorBlockThreads = 256;

// Grid-stride over work units; a unit is `K` items of one sample, `groups_per_sample`
// (= ceil(items / K)) apart, so a warp's k-th stores are still adjacent in memory while the
// per-unit bookkeeping (row, sample index, output addresses, the generator's branches on
// its parameters) is paid once for K Philox blocks: the kernel is issue-bound, and this
// bookkeeping was a third of its instructions (docs/benchmarks.md, kernel bench).
// A thread divides once, for its first unit; after that it steps its (row, group) pair by
// the stride's own quotient and remainder. Index is uint32_t when every unit index fits
// (the common case: 32-bit arithmetic is cheaper), int64_t from 2^31 units on, so huge
// outputs stay correct.
template <typename Gen, typename Index, int K>
__global__ void GeneratorKernel(typename Gen::Params p, CallGeometry g, Index items_per_sample,
                                Index groups_per_sample, Index total_groups) {
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
        RunItem<Gen>(p, g, static_cast<int64_t>(row), static_cast<int64_t>(item));
    }
    row += stride_rows;
    group += stride_groups;
    if (group >= groups_per_sample) {
      group -= groups_per_sample;
      ++row;
    }
  }
}

template <typename Gen, typename Index, int K>
cudaError_t LaunchGrouped(const typename Gen::Params& p, const CallGeometry& g, int64_t items,
                          void* stream) {
  const int64_t groups = (items + K - 1) / K;
  const int64_t total = g.num_samples * groups;
  return LaunchGridStride(&GeneratorKernel<Gen, Index, K>, total, kGeneratorBlockThreads, stream,
                          p, g, static_cast<Index>(items), static_cast<Index>(groups),
                          static_cast<Index>(total));
}

template <typename Gen, typename Index>
cudaError_t LaunchIndexed(const typename Gen::Params& p, const CallGeometry& g, int64_t items,
                          void* stream) {
  switch (ItemsPerThread(items)) {
    case 4: return LaunchGrouped<Gen, Index, 4>(p, g, items, stream);
    case 2: return LaunchGrouped<Gen, Index, 2>(p, g, items, stream);
    default: return LaunchGrouped<Gen, Index, 1>(p, g, items, stream);
  }
}

// Kernel variants (generator.h): a generator with kNumVariants > 1 gets one kernel per
// variant, each calling GenerateVariant<V>, so branches on Params that a variant settles
// are gone from its inner loop. Variant(p) picks one per call on the host.
template <typename Gen, typename = void>
struct NumVariants : std::integral_constant<int, 1> {};
template <typename Gen>
struct NumVariants<Gen, std::void_t<decltype(Gen::kNumVariants)>>
    : std::integral_constant<int, Gen::kNumVariants> {};

template <typename Gen, int V>
struct VariantOf : Gen {
  OTF_HD static void Generate(const typename Gen::Params& p, const SampleRng& rng, int64_t item,
                              const SampleOutputs& out) {
    Gen::template GenerateVariant<V>(p, rng, item, out);
  }
};

template <typename Gen, int V = 0>
cudaError_t LaunchVariant(int variant, const typename Gen::Params& p, const CallGeometry& g,
                          int64_t items, void* stream) {
  if constexpr (V + 1 < NumVariants<Gen>::value) {
    if (variant != V) return LaunchVariant<Gen, V + 1>(variant, p, g, items, stream);
  }
  using G = std::conditional_t<(NumVariants<Gen>::value > 1), VariantOf<Gen, V>, Gen>;
  // Leave headroom so t + stride cannot wrap a uint32_t.
  return g.num_samples * items < (int64_t{1} << 31) ? LaunchIndexed<G, uint32_t>(p, g, items, stream)
                                                    : LaunchIndexed<G, int64_t>(p, g, items, stream);
}

template <typename Gen>
int LaunchGenerator(const typename Gen::Params& p, const CallGeometry& g, void* stream) {
  const int64_t items = Gen::ItemsPerSample(p);
  if (g.num_samples * items <= 0) return 0;
  int variant = 0;
  if constexpr (NumVariants<Gen>::value > 1) variant = Gen::Variant(p);
  return static_cast<int>(LaunchVariant<Gen>(variant, p, g, items, stream));
}

}  // namespace sdk
}  // namespace tf_onthefly

// Instantiates the GPU launcher of generator `Gen` (a type; may be a template-id).
#define OTF_DEFINE_GPU_GENERATOR(...)                                                 \
  template int ::tf_onthefly::sdk::LaunchGenerator<__VA_ARGS__>(                     \
      const typename __VA_ARGS__::Params&, const ::tf_onthefly::sdk::CallGeometry&, void*)

#endif  // TF_ONTHEFLY_SDK_GENERATOR_GPU_CU_H_

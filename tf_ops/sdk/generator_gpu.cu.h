// The generator SDK, GPU side: the grid-stride kernel and launcher every generator gets.
// A generator's .cu.cc includes this and its own header, then says
//   OTF_DEFINE_GPU_GENERATOR(MyGen)
#ifndef TF_ONTHEFLY_SDK_GENERATOR_GPU_CU_H_
#define TF_ONTHEFLY_SDK_GENERATOR_GPU_CU_H_

#include <cstdint>

#include "tf_ops/common/gpu_launch.h"
#include "tf_ops/sdk/generator.h"

namespace tf_onthefly {
namespace sdk {

constexpr int kGeneratorBlockThreads = 256;

// One thread per work item, grid-stride. Index is uint32_t when every item index fits
// (the common case: 32-bit division is several times cheaper than 64-bit on the GPU),
// int64_t from 2^31 items on, so huge outputs stay correct.
template <typename Gen, typename Index>
__global__ void GeneratorKernel(typename Gen::Params p, CallGeometry g, Index items_per_sample,
                                Index total_items) {
  const Index stride = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index t = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; t < total_items;
       t += stride) {
    const Index row = t / items_per_sample;
    RunItem<Gen>(p, g, static_cast<int64_t>(row), static_cast<int64_t>(t - row * items_per_sample));
  }
}

template <typename Gen>
int LaunchGenerator(const typename Gen::Params& p, const CallGeometry& g, void* stream) {
  const int64_t items = Gen::ItemsPerSample(p);
  const int64_t total = g.num_samples * items;
  if (total <= 0) return 0;
  cudaError_t err;
  // Leave headroom so t + stride cannot wrap a uint32_t.
  if (total < (int64_t{1} << 31)) {
    err = LaunchGridStride(&GeneratorKernel<Gen, uint32_t>, total, kGeneratorBlockThreads, stream,
                           p, g, static_cast<uint32_t>(items), static_cast<uint32_t>(total));
  } else {
    err = LaunchGridStride(&GeneratorKernel<Gen, int64_t>, total, kGeneratorBlockThreads, stream,
                           p, g, items, total);
  }
  return static_cast<int>(err);
}

}  // namespace sdk
}  // namespace tf_onthefly

// Instantiates the GPU launcher of generator `Gen` (a type; may be a template-id).
#define OTF_DEFINE_GPU_GENERATOR(...)                                                 \
  template int ::tf_onthefly::sdk::LaunchGenerator<__VA_ARGS__>(                     \
      const typename __VA_ARGS__::Params&, const ::tf_onthefly::sdk::CallGeometry&, void*)

#endif  // TF_ONTHEFLY_SDK_GENERATOR_GPU_CU_H_

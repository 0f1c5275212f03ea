// GPU kernels of the sorted uniforms, as CUDA code is usually written, and at the end of each
// launcher the few lines that take the SDK's call (outputs, stream, scratch memory).
#include <cub/block/block_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cub/util_type.cuh>

#include "sorted_uniforms.h"
#include "tf_ops/sdk/generator_gpu.cu.h"

namespace sorted_uniforms {
namespace {

constexpr int64_t kMaxBlocks = 1 << 20;  // grids stride over their work past this
int BlocksFor(int64_t units) { return static_cast<int>(units < kMaxBlocks ? units : kMaxBlocks); }

using BlockSort = cub::BlockRadixSort<float, kBlockThreads, kItemsPerThread>;
constexpr size_t kBlockSortBytes = sizeof(BlockSort::TempStorage);
static_assert(kBlockSortBytes > 48 << 10, "the example needs more than 48 KiB of shared memory");

// One block per sample: thread t draws values [32 t, 32 t + 32) (+inf past the sample's
// end, sorted last), the block sorts them in dynamic shared memory, thread t writes ranks
// [32 t, 32 t + 32).
__global__ void __launch_bounds__(kBlockThreads)
    BlockSortKernel(sdk::SeedAndStep seed_step, int64_t first_sample, int64_t rows, int64_t length,
                    float* values) {
  extern __shared__ __align__(16) unsigned char shared[];
  auto& temp = *reinterpret_cast<BlockSort::TempStorage*>(shared);
  const PhiloxKey key = sdk::StreamKey(seed_step, 0);
  const int64_t first = sdk::FirstGlobalSample(seed_step, first_sample);
  const int64_t begin = int64_t{threadIdx.x} * kItemsPerThread;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    float keys[kItemsPerThread];
#pragma unroll
    for (int j = 0; j < kItemsPerThread; j += 4) {
      const Words4 w = tf_onthefly::SampleBlock(key, static_cast<uint64_t>(first + row),
                                                static_cast<uint32_t>((begin + j) / 4));
#pragma unroll
      for (int k = 0; k < 4; ++k)
        keys[j + k] = begin + j + k < length ? UniformFloat(w[k]) : __int_as_float(0x7f800000);
    }
    BlockSort(temp).Sort(keys);
#pragma unroll
    for (int j = 0; j < kItemsPerThread; ++j)
      if (begin + j < length) values[row * length + begin + j] = keys[j];
    __syncthreads();  // `temp` is rewritten by the next row
  }
}

// The unsorted values of every sample, one Philox block per thread.
__global__ void DrawKernel(sdk::SeedAndStep seed_step, int64_t first_sample, int64_t rows,
                           int64_t length, float* values) {
  const PhiloxKey key = sdk::StreamKey(seed_step, 0);
  const int64_t first = sdk::FirstGlobalSample(seed_step, first_sample);
  const int64_t blocks = (length + 3) / 4;
  for (int64_t u = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; u < rows * blocks;
       u += int64_t{blockDim.x} * gridDim.x) {
    const int64_t row = u / blocks, j = u % blocks * 4;
    const Words4 w = tf_onthefly::SampleBlock(key, static_cast<uint64_t>(first + row),
                                              static_cast<uint32_t>(j / 4));
    for (int64_t k = j; k < j + 4 && k < length; ++k)
      values[row * length + k] = UniformFloat(w[k % 4]);
  }
}

__global__ void OffsetsKernel(int64_t segments, int64_t length, int* offsets) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i <= segments;
       i += int64_t{blockDim.x} * gridDim.x)
    offsets[i] = static_cast<int>(i * length);
}

}  // namespace

cudaError_t BlockSortedUniforms::Launch(const sdk::GpuCall<Params>& call) {
  const sdk::CallGeometry& g = call.geometry;
  if (g.num_samples == 0) return cudaSuccess;
  cudaError_t err =
      cudaFuncSetAttribute(BlockSortKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(kBlockSortBytes));
  if (err != cudaSuccess) return err;
  BlockSortKernel<<<BlocksFor(g.num_samples), kBlockThreads, kBlockSortBytes, call.stream>>>(
      call.seed_and_step, g.first_sample, g.num_samples, call.params.length, g.output<float>(0));
  return cudaGetLastError();
}

cudaError_t SegmentSortedUniforms::Launch(const sdk::GpuCall<Params>& call) {
  const sdk::CallGeometry& g = call.geometry;
  const int64_t length = call.params.length, rows = g.num_samples;
  if (rows == 0) return cudaSuccess;
  float* out = g.output<float>(0);
  float* keys = call.scratch.Allocate<float>(rows * length);
  const int64_t per_sort = std::min(rows, SegmentsPerSort(call.params));
  int* offsets = call.scratch.Allocate<int>(per_sort + 1);
  if (keys == nullptr || offsets == nullptr) return cudaErrorMemoryAllocation;
  DrawKernel<<<BlocksFor((rows * ((length + 3) / 4) + 255) / 256), 256, 0, call.stream>>>(
      call.seed_and_step, g.first_sample, rows, length, keys);
  OffsetsKernel<<<BlocksFor((per_sort + 256) / 256), 256, 0, call.stream>>>(per_sort, length,
                                                                            offsets);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  // CUB's temporary storage, sized by CUB for the largest sort (both key buffers are given:
  // it sorts between them, and says which holds the result).
  size_t temp_bytes = 0;
  cub::DoubleBuffer<float> probe(keys, out);
  err = cub::DeviceSegmentedRadixSort::SortKeys(
      nullptr, temp_bytes, probe, static_cast<int>(per_sort * length), static_cast<int>(per_sort),
      offsets, offsets + 1, 0, 32, call.stream);
  void* temp =
      err == cudaSuccess ? call.scratch.Allocate(static_cast<int64_t>(temp_bytes)) : nullptr;
  if (err == cudaSuccess && temp == nullptr) return cudaErrorMemoryAllocation;
  for (int64_t row = 0; row < rows && err == cudaSuccess; row += per_sort) {
    const int64_t segments = std::min(per_sort, rows - row);
    cub::DoubleBuffer<float> buffers(keys + row * length, out + row * length);
    err = cub::DeviceSegmentedRadixSort::SortKeys(
        temp, temp_bytes, buffers, static_cast<int>(segments * length), static_cast<int>(segments),
        offsets, offsets + 1, 0, 32, call.stream);
    if (err == cudaSuccess && buffers.Current() != out + row * length)
      err =
          cudaMemcpyAsync(out + row * length, buffers.Current(), sizeof(float) * segments * length,
                          cudaMemcpyDeviceToDevice, call.stream);
  }
  return err;
}

}  // namespace sorted_uniforms

OTF_DEFINE_GPU_GENERATOR(sorted_uniforms::BlockSortedUniforms);
OTF_DEFINE_GPU_GENERATOR(sorted_uniforms::SegmentSortedUniforms);

// GPU code of the SDK's test generators (sdk_test_generators.h).
#include <thrust/execution_policy.h>
#include <thrust/transform.h>

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda/std/limits>

#include "tests/sdk_ops/sdk_test_generators.h"
#include "tf_ops/sdk/generator_gpu.cu.h"

namespace tf_onthefly {
namespace sdk_test {
namespace {

__global__ void FillKernel(sdk::SeedAndStep seed_step, int64_t first_sample, int64_t rows,
                           int64_t* out) {
  const int64_t first = sdk::FirstGlobalSample(seed_step, first_sample);
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows;
       r += int64_t{blockDim.x} * gridDim.x)
    out[r] = first + r;
}

// One block per sample: kSortItems keys per thread, radix-sorted across the block, then an
// inclusive scan of the sorted keys.
__global__ void SortKernel(sdk::SeedAndStep seed_step, int64_t first_sample, int32_t* keys,
                           int32_t* sums) {
  using Sort = cub::BlockRadixSort<int32_t, kSortThreads, kSortItems>;
  using Scan = cub::BlockScan<int32_t, kSortThreads>;
  __shared__ union {
    typename Sort::TempStorage sort;
    typename Scan::TempStorage scan;
  } temp;
  const uint64_t sample =
      static_cast<uint64_t>(sdk::FirstGlobalSample(seed_step, first_sample) + blockIdx.x);
  const PhiloxKey key = sdk::StreamKey(seed_step, 0);
  // Thread t draws keys 4t .. 4t+3: block t of the sample's stream.
  const Words4 w = SampleBlock(key, sample, threadIdx.x);
  static_assert(cuda::std::numeric_limits<int32_t>::max() >= 1000 * kSortLength,
                "the prefix sums fit in int32");
  int32_t mine[kSortItems];
  for (int k = 0; k < kSortItems; ++k) mine[k] = CcclSortGen::Key(w, k);
  Sort(temp.sort).Sort(mine);  // blocked: thread t holds ranks 4t .. 4t+3
  __syncthreads();
  int32_t prefix[kSortItems];
  Scan(temp.scan).InclusiveSum(mine, prefix);
  const int64_t base = blockIdx.x * kSortLength + threadIdx.x * kSortItems;
  for (int k = 0; k < kSortItems; ++k) {
    keys[base + k] = mine[k];
    sums[base + k] = prefix[k];
  }
}

struct Identity {
  __device__ int32_t operator()(int32_t x) const { return x; }
};

}  // namespace

cudaError_t GpuOnlyFillGen::Launch(const sdk::GpuCall<Params>& call) {
  const sdk::CallGeometry& g = call.geometry;
  if (call.params.fail == 2 || call.params.fail == 3) {
    // More than any device has, or than ScratchBytes said: the SDK reports the refusal,
    // naming the op and the bytes.
    const int64_t bytes = call.params.fail == 2 ? int64_t{1} << 60 : kFillScratchAsked;
    if (call.scratch.Allocate(bytes) == nullptr) return cudaErrorMemoryAllocation;
  }
  // fail == 1: 4096 threads per block is an invalid configuration on every GPU; the launch
  // is left unchecked on purpose (the SDK takes cudaGetLastError after Launch).
  FillKernel<<<1, call.params.fail == 1 ? 4096 : 256, 0, call.stream>>>(
      call.seed_and_step, g.first_sample, g.num_samples, g.output<int64_t>(0));
  return cudaSuccess;
}

cudaError_t CcclSortGen::Launch(const sdk::GpuCall<Params>& call) {
  const sdk::CallGeometry& g = call.geometry;
  int32_t* keys = g.output<int32_t>(0);
  int32_t* sums = g.output<int32_t>(1);
  SortKernel<<<static_cast<unsigned>(g.num_samples), kSortThreads, 0, call.stream>>>(
      call.seed_and_step, g.first_sample, keys, sums);
  // A Thrust algorithm on the call's stream, in place (the identity: the values stay).
  thrust::transform(thrust::cuda::par.on(call.stream), keys, keys + g.num_samples * kSortLength,
                    keys, Identity());
  return cudaGetLastError();
}

}  // namespace sdk_test
}  // namespace tf_onthefly

OTF_DEFINE_GPU_GENERATOR(tf_onthefly::sdk_test::GpuOnlyFillGen);
OTF_DEFINE_GPU_GENERATOR(tf_onthefly::sdk_test::CcclSortGen);
OTF_DEFINE_GPU_GENERATOR(tf_onthefly::sdk_test::AddRowsGen);
OTF_DEFINE_GPU_GENERATOR(tf_onthefly::sdk_test::PerSampleDriftWalkGen);

// GPU kernels of OnTheFly>DriftWalk: a block-cooperative walk generator written as CUDA
// code is usually written (its own grid, CUB block primitives, shared memory, a scratch
// buffer, two kernels in a row), and at the end of the file the few lines that make it the
// launch of a generator (docs/bringing-a-kernel.md).
//
// One thread block writes one tile of kTile steps of one walk: each thread draws
// kItemsPerThread consecutive steps, a block-wide inclusive scan turns the steps into
// positions, and a warp-transposing store writes them coalesced. A walk longer than one
// tile is split over blocks: a first kernel sums every tile but the last into scratch
// memory, and each block of the second starts its scan from the sum of the tiles before
// its own. Every random number comes from the counter contract, keyed by the global
// sample index, so the walks do not depend on the grid.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>

#include "tf_ops/drift_walk/drift_walk.h"
#include "tf_ops/sdk/generator_gpu.cu.h"

namespace tf_onthefly {
namespace drift_walk {
namespace {

constexpr int kThreads = 256;
constexpr int kItemsPerThread = 8;  // two Philox blocks of steps per thread
constexpr int64_t kTile = kThreads * kItemsPerThread;
constexpr int64_t kMaxBlocks = 1 << 20;  // the grid strides over (walk, tile) units past this

// Per block: the two stream keys, derived on the device from seed and step, and the global
// index of row 0 (the sample offset, if any, is in device memory too).
__device__ void DeriveKeys(const sdk::SeedAndStep& seed_step, int64_t first_sample, PhiloxKey* keys,
                           int64_t* first) {
  if (threadIdx.x < DriftWalkGen::kNumStreams)
    keys[threadIdx.x] = sdk::StreamKey(seed_step, static_cast<int>(threadIdx.x));
  if (threadIdx.x == 0) *first = sdk::FirstGlobalSample(seed_step, first_sample);
}

// The sample's class and its up-probability.
__device__ int64_t ClassOf(PhiloxKey class_key, uint64_t sample, int64_t num_classes) {
  const Words4 w = SampleBlock(class_key, sample, 0);
  return static_cast<int64_t>(UniformBelow(w.w0, w.w1, static_cast<uint64_t>(num_classes)));
}

// This thread's kItemsPerThread steps of tile `tile` (+1 or -1; 0 past the walk's end).
__device__ void TileSteps(PhiloxKey step_key, uint64_t sample, float up, int64_t tile,
                          int64_t length, int32_t (&steps)[kItemsPerThread]) {
  const int64_t first = tile * kTile + threadIdx.x * kItemsPerThread;
#pragma unroll
  for (int j = 0; j < kItemsPerThread; j += 4) {
    const Words4 w = SampleBlock(step_key, sample, static_cast<uint32_t>((first + j) / 4));
#pragma unroll
    for (int k = 0; k < 4; ++k)
      steps[j + k] = first + j + k < length ? (UniformFloat(w[k]) < up ? 1 : -1) : 0;
  }
}

// Pass 1 (walks of several tiles): the sum of every tile but the last of each walk.
__global__ void __launch_bounds__(kThreads)
    TileSumsKernel(sdk::SeedAndStep seed_step, int64_t first_sample, int64_t rows, int64_t length,
                   const float* up_probability, int64_t num_classes, int32_t* tile_sums,
                   int64_t tiles) {
  using Reduce = cub::BlockReduce<int32_t, kThreads>;
  __shared__ typename Reduce::TempStorage reduce;
  __shared__ PhiloxKey keys[DriftWalkGen::kNumStreams];
  __shared__ int64_t first;
  __shared__ float up;
  DeriveKeys(seed_step, first_sample, keys, &first);
  __syncthreads();
  const int64_t summed = tiles - 1;
  for (int64_t unit = blockIdx.x; unit < rows * summed; unit += gridDim.x) {
    const int64_t row = unit / summed, tile = unit % summed;
    const uint64_t sample = static_cast<uint64_t>(first + row);
    if (threadIdx.x == 0) up = up_probability[ClassOf(keys[1], sample, num_classes)];
    __syncthreads();
    int32_t steps[kItemsPerThread];
    TileSteps(keys[0], sample, up, tile, length, steps);
    const int32_t sum = Reduce(reduce).Sum(steps);
    if (threadIdx.x == 0) tile_sums[row * tiles + tile] = sum;
    __syncthreads();  // `up` and `reduce` are rewritten by the next unit
  }
}

// Pass 2: the positions of each tile, from the sum of the tiles before it, and the labels.
__global__ void __launch_bounds__(kThreads)
    WalkKernel(sdk::SeedAndStep seed_step, int64_t first_sample, int64_t rows, int64_t length,
               const float* up_probability, int64_t num_classes, int32_t* walks, int32_t* labels,
               const int32_t* tile_sums, int64_t tiles) {
  using Scan = cub::BlockScan<int32_t, kThreads>;
  using Store =
      cub::BlockStore<int32_t, kThreads, kItemsPerThread, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  __shared__ union {
    typename Scan::TempStorage scan;
    typename Store::TempStorage store;
  } temp;
  __shared__ PhiloxKey keys[DriftWalkGen::kNumStreams];
  __shared__ int64_t first;
  __shared__ float up;
  __shared__ int32_t carry;
  DeriveKeys(seed_step, first_sample, keys, &first);
  __syncthreads();
  for (int64_t unit = blockIdx.x; unit < rows * tiles; unit += gridDim.x) {
    const int64_t row = unit / tiles, tile = unit % tiles;
    const uint64_t sample = static_cast<uint64_t>(first + row);
    if (threadIdx.x == 0) {
      const int64_t label = ClassOf(keys[1], sample, num_classes);
      up = up_probability[label];
      if (tile == 0) labels[row] = static_cast<int32_t>(label);
      int32_t before = 0;
      for (int64_t k = 0; k < tile; ++k) before += tile_sums[row * tiles + k];
      carry = before;
    }
    __syncthreads();
    int32_t steps[kItemsPerThread];
    TileSteps(keys[0], sample, up, tile, length, steps);
    Scan(temp.scan).InclusiveSum(steps, steps);
#pragma unroll
    for (int j = 0; j < kItemsPerThread; ++j) steps[j] += carry;
    __syncthreads();  // the scan's storage becomes the store's
    const int64_t valid = length - tile * kTile < kTile ? length - tile * kTile : kTile;
    Store(temp.store).Store(walks + row * length + tile * kTile, steps, static_cast<int>(valid));
    __syncthreads();  // `up`, `carry` and `temp` are rewritten by the next unit
  }
}

int BlocksFor(int64_t units) { return static_cast<int>(units < kMaxBlocks ? units : kMaxBlocks); }

}  // namespace

int64_t DriftWalkTiles(int64_t length) { return (length + kTile - 1) / kTile; }

cudaError_t LaunchDriftWalks(sdk::SeedAndStep seed_step, int64_t first_sample, int64_t rows,
                             int64_t length, const float* up_probability, int64_t num_classes,
                             int32_t* walks, int32_t* labels, int32_t* tile_sums,
                             cudaStream_t stream) {
  const int64_t tiles = DriftWalkTiles(length);
  if (rows <= 0) return cudaSuccess;
  if (tiles > 1) {
    TileSumsKernel<<<BlocksFor(rows * (tiles - 1)), kThreads, 0, stream>>>(
        seed_step, first_sample, rows, length, up_probability, num_classes, tile_sums, tiles);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  WalkKernel<<<BlocksFor(rows * tiles), kThreads, 0, stream>>>(seed_step, first_sample, rows,
                                                               length, up_probability, num_classes,
                                                               walks, labels, tile_sums, tiles);
  return cudaGetLastError();
}

// The generator's scratch: the tile sums of walks longer than one tile.
int64_t DriftWalkGen::ScratchBytes(const Params& p, int64_t rows) {
  const int64_t tiles = DriftWalkTiles(p.length);
  return tiles > 1 ? sdk::AlignScratch(rows * tiles * int64_t{sizeof(int32_t)}) : 0;
}

// The generator's GPU launch: the SDK's call, handed to the launcher above unchanged.
cudaError_t DriftWalkGen::Launch(const sdk::GpuCall<Params>& call) {
  const sdk::CallGeometry& g = call.geometry;
  const int64_t tiles = DriftWalkTiles(call.params.length);
  int32_t* tile_sums = nullptr;
  if (tiles > 1) {
    tile_sums = call.scratch.Allocate<int32_t>(g.num_samples * tiles);
    if (tile_sums == nullptr) return cudaErrorMemoryAllocation;
  }
  return LaunchDriftWalks(call.seed_and_step, g.first_sample, g.num_samples, call.params.length,
                          call.inputs.get<float>(0), call.inputs.size(0), g.output<int32_t>(0),
                          g.output<int32_t>(1), tile_sums, call.stream);
}

}  // namespace drift_walk
}  // namespace tf_onthefly

OTF_DEFINE_GPU_GENERATOR(tf_onthefly::drift_walk::DriftWalkGen);

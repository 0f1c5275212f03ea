// Sorted uniforms: each sample is `length` uniforms of the counter contract, sorted. Two
// generators make the same values with two kinds of CUDA kernel:
//   OnTheFly>BlockSortedUniforms   a block-cooperative kernel, one thread block per sample,
//                                  cub::BlockRadixSort in 72 KiB of dynamic shared memory;
//   OnTheFly>SegmentSortedUniforms a device-wide cub::DeviceSegmentedRadixSort over the
//                                  batch, its buffers in the SDK's scratch memory.
// Both have one CPU implementation (std::sort), which the GPU matches bit for bit.
#ifndef SORTED_UNIFORMS_H_
#define SORTED_UNIFORMS_H_

#include <algorithm>
#include <cstdint>

#include "tf_ops/sdk/generator.h"

namespace sorted_uniforms {

using tf_onthefly::PhiloxKey;
using tf_onthefly::UniformFloat;
using tf_onthefly::Words4;
namespace sdk = tf_onthefly::sdk;

// The block kernel's shape: 512 threads x 32 keys, the longest sample it sorts.
constexpr int kBlockThreads = 512;
constexpr int kItemsPerThread = 32;
constexpr int64_t kBlockMaxLength = int64_t{kBlockThreads} * kItemsPerThread;
constexpr int64_t kSegmentMaxLength = int64_t{1} << 20;

struct Params {
  int64_t length;
};

// The values: uniform j of a sample is word j % 4 of block j / 4 of its stream 0, sorted.
struct SortedUniforms {
  using Params = sorted_uniforms::Params;
  static constexpr int kNumStreams = 1;
  static int64_t ItemsPerSample(const Params&) { return 1; }
  static void Generate(const Params& p, const sdk::SampleRng<kNumStreams>& rng, int64_t,
                       const sdk::SampleOutputs& out) {
    float* row = out.get<float>(0);
    for (int64_t j = 0; j < p.length; j += 4) {
      const Words4 w = rng.Block(sdk::Stream<0>{}, static_cast<uint32_t>(j / 4));
      for (int64_t k = j; k < j + 4 && k < p.length; ++k) row[k] = UniformFloat(w[k % 4]);
    }
    std::sort(row, row + p.length);
  }
};

// GPU launches (sorted_uniforms_kernels.cu.cc).
struct BlockSortedUniforms : SortedUniforms {
  static cudaError_t Launch(const sdk::GpuCall<Params>& call);
};
// Its scratch: the unsorted keys, the segment offsets of one sort, and CUB's own temporary
// storage (the launch asks CUB how much; a sort with both key buffers given needs a few
// hundred bytes, kSortTempBytes is the most it is given).
constexpr int64_t kSortTempBytes = 64 << 10;
constexpr int64_t kMaxSortItems = 1 << 26;  // items a sort covers at most (CUB counts in int)
struct SegmentSortedUniforms : SortedUniforms {
  static cudaError_t Launch(const sdk::GpuCall<Params>& call);
  static int64_t SegmentsPerSort(const Params& p) { return kMaxSortItems / p.length; }
  static int64_t ScratchBytes(const Params& p, int64_t rows) {
    return sdk::AlignScratch(rows * p.length * int64_t{sizeof(float)}) +
           sdk::AlignScratch((std::min(rows, SegmentsPerSort(p)) + 1) * int64_t{sizeof(int)}) +
           sdk::AlignScratch(kSortTempBytes);
  }
};

}  // namespace sorted_uniforms

#endif  // SORTED_UNIFORMS_H_

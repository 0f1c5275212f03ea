// CUDA kernel and launcher for OnTheFly>RandomBatch. No TensorFlow headers: the op's .cc
// passes TensorFlow's stream and the output buffers TensorFlow allocated.
#include "tf_ops/common/gpu_launch.h"
#include "tf_ops/random_batch/random_batch.h"

namespace tf_onthefly {
namespace random_batch {
namespace {

constexpr int kBlockThreads = 256;

// One work item = one Philox block = four consecutive features of one row; the item
// with block 0 also writes the row's label. When rows are a multiple of 4 floats long,
// every item is one aligned 16-byte store (TF's allocations are 64-byte aligned).
template <typename TLabel>
__global__ void RandomBatchKernel(Params p, int64_t blocks_per_row, int64_t items,
                                  float* __restrict__ features, TLabel* __restrict__ labels) {
  const bool vector_rows = (p.feature_dim & 3) == 0;
  for (int64_t item = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; item < items;
       item += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t row = item / blocks_per_row;
    const int64_t block = item - row * blocks_per_row;
    float v[4];
    FeatureBlock(p, row, block, v);
    float* out = features + row * p.feature_dim + 4 * block;
    if (vector_rows) {
      *reinterpret_cast<float4*>(out) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
      const int64_t n = p.feature_dim - 4 * block;
      for (int i = 0; i < 4 && i < n; ++i) out[i] = v[i];
    }
    if (block == 0) labels[row] = Label<TLabel>(p, row);
  }
}

}  // namespace

template <typename TLabel>
int LaunchRandomBatch(const Params& p, float* features, TLabel* labels, void* stream) {
  const int64_t blocks_per_row = BlocksPerRow(p.feature_dim);
  return static_cast<int>(LaunchGridStride(&RandomBatchKernel<TLabel>,
                                           p.num_samples * blocks_per_row, kBlockThreads,
                                           stream, p, blocks_per_row,
                                           p.num_samples * blocks_per_row, features, labels));
}

template int LaunchRandomBatch<float>(const Params&, float*, float*, void*);
template int LaunchRandomBatch<int32_t>(const Params&, float*, int32_t*, void*);
template int LaunchRandomBatch<int64_t>(const Params&, float*, int64_t*, void*);

}  // namespace random_batch
}  // namespace tf_onthefly

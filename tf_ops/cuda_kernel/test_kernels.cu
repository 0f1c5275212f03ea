// Kernels for OnTheFly>CudaKernel's tests and benchmark, written as a user would write one
// for tf_onthefly.cuda_kernel: extern "C", the op's parameter list (docs/interop.md), and
// the counter-contract helpers of tf_ops/common so the values match the built-in generators.
// Compiled to PTX at build time (//tf_ops/cuda_kernel:test_ptx); the same file compiles with
// NVRTC (CuPy's RawModule) given -I to the repository root.
#include "tf_ops/common/philox.h"
#include "tf_ops/common/uniform.h"

using tf_onthefly::DeriveKey;
using tf_onthefly::PhiloxKey;
using tf_onthefly::SampleBlock;
using tf_onthefly::UniformFloat;
using tf_onthefly::Words4;
typedef long long i64;
typedef unsigned long long u64;

// The key of one stream of this call (docs/counter-contract.md, key derivation).
__device__ __forceinline__ PhiloxKey StreamKey(const i64* seed, i64 seed_size, const i64* step,
                                               unsigned stream) {
  return DeriveKey(static_cast<u64>(seed[0]), seed_size == 2 ? static_cast<u64>(seed[1]) : 0ull,
                   stream, static_cast<u64>(*step));
}

// random_batch's default batch (uniform [0, 1) float32 features, Bernoulli(p) float32
// labels), bit for bit: one work item = one Philox block = four features of one sample, in
// a grid-stride loop, so any grid gives the same values. int_scalars = [feature_dim],
// float_scalars = [p].
extern "C" __global__ void otf_uniform_batch(const i64* seed, i64 seed_size, const i64* step,
                                             i64 first_sample, i64 num_samples, i64 batch_size,
                                             i64 feature_dim, float p, float* features,
                                             float* labels) {
  const PhiloxKey fkey = StreamKey(seed, seed_size, step, 0);
  const PhiloxKey lkey = StreamKey(seed, seed_size, step, 1);
  const i64 blocks = (feature_dim + 3) / 4;
  const i64 items = num_samples * blocks;
  for (i64 i = blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x; i < items;
       i += static_cast<i64>(gridDim.x) * blockDim.x) {
    const i64 row = i / blocks, block = i % blocks;
    const u64 sample = static_cast<u64>(first_sample + row);
    const Words4 w = SampleBlock(fkey, sample, static_cast<unsigned>(block));
    float* dst = features + row * feature_dim + 4 * block;
    const i64 n = feature_dim - 4 * block;
    for (int k = 0; k < 4 && k < n; ++k) dst[k] = UniformFloat(w[k]);
    if (block == 0) labels[row] = UniformFloat(SampleBlock(lkey, sample, 0).w0) < p ? 1.0f : 0.0f;
  }
}

// y = a * x + b elementwise over [num_samples, dim] (an input and two float scalars).
// int_scalars = [dim], float_scalars = [a, b].
extern "C" __global__ void otf_affine(const i64* seed, i64 seed_size, const i64* step,
                                      i64 first_sample, i64 num_samples, i64 batch_size, i64 dim,
                                      float a, float b, const float* x, float* y) {
  const i64 n = num_samples * dim;
  for (i64 i = blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<i64>(gridDim.x) * blockDim.x)
    y[i] = a * x[i] + b;
}

// Every element of [num_samples, dim] = the step (as float) + the global sample index, so a
// read of a stale or half-written batch shows. int_scalars = [dim].
extern "C" __global__ void otf_step_fill(const i64* seed, i64 seed_size, const i64* step,
                                         i64 first_sample, i64 num_samples, i64 batch_size, i64 dim,
                                         float* out) {
  const i64 n = num_samples * dim;
  const float s = static_cast<float>(*step);
  for (i64 i = blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<i64>(gridDim.x) * blockDim.x)
    out[i] = s + static_cast<float>(first_sample + i / dim);
}

// Device side of the kernel bench (tools/kernel_bench/README.md): the SDK's generator
// kernels exactly as the op library builds them, next to raw reference kernels that set
// the ceilings (a plain float4 fill, and a bare Philox uniform with float4 stores).
// Compiled to a cubin with the production clang flags; the host harness loads it with the
// CUDA driver API, so it runs on a GPU machine without TensorFlow or a CUDA toolkit.
#include <cstdint>

#include "tf_ops/random_batch/random_batch.h"
#include "tf_ops/sdk/generator_gpu.cu.h"

OTF_DEFINE_GPU_GENERATOR(tf_onthefly::random_batch::RandomBatchGen<tf_onthefly::Float32, int32_t>);

namespace {
using tf_onthefly::PhiloxKey;
using tf_onthefly::Words4;
}  // namespace

// Write ceiling: every thread stores float4 values, grid-stride.
extern "C" __global__ void RefFillFloat4(float4* out, uint32_t n4, float v) {
  const uint32_t stride = blockDim.x * gridDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride)
    out[i] = make_float4(v, v + 1.f, v + 2.f, v + 3.f);
}

// Generation ceiling: one Philox block per float4, counter = (i, row constant), no
// row/label bookkeeping.
extern "C" __global__ void RefPhiloxUniformFloat4(float4* out, uint32_t n4, PhiloxKey key) {
  const uint32_t stride = blockDim.x * gridDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    const Words4 w = tf_onthefly::SampleBlock(key, 7, i);
    out[i] = make_float4(tf_onthefly::UniformFloat(w.w0), tf_onthefly::UniformFloat(w.w1),
                         tf_onthefly::UniformFloat(w.w2), tf_onthefly::UniformFloat(w.w3));
  }
}

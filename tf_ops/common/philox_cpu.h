// Bulk work on the CPU: the [0, 1) floats or the standard normals of consecutive blocks of
// one sample (and their rounding to float16), the same values as UniformFloat() / BoxMuller() of
// SampleBlock() word by word (tests/random_batch_test.py pins them), eight blocks at a time with
// AVX2 + FMA where the CPU has them.
//
// Why not leave it to the compiler: Philox needs 32x32->64-bit products; gcc 12 does not
// vectorise them well (an 8-lane loop written for it ran no faster than scalar code,
// docs/bench.md), while AVX2's vpmuludq makes four of them per instruction. The normals are
// normal.h's operation sequence lane by lane; vfmadd is IEEE's fused multiply-add, so the
// bits are those of the scalar code.
#ifndef TF_ONTHEFLY_COMMON_PHILOX_CPU_H_
#define TF_ONTHEFLY_COMMON_PHILOX_CPU_H_

#include <cstdint>

#include "tf_ops/common/philox.h"

namespace tf_onthefly {

// dst[4 i + j] = UniformFloat(word j of SampleBlock(key, sample, first_block + i)),
// for i < num_blocks, j < 4.
void UniformFloatBlocks(PhiloxKey key, uint64_t sample, uint32_t first_block, int64_t num_blocks,
                        float* dst);

// With w = SampleBlock(key, sample, first_block + i), for i < num_blocks:
// (dst[4 i], dst[4 i + 1]) = BoxMuller(w.w0, w.w1), (dst[4 i + 2], dst[4 i + 3]) =
// BoxMuller(w.w2, w.w3).
void NormalFloatBlocks(PhiloxKey key, uint64_t sample, uint32_t first_block, int64_t num_blocks,
                       float* dst);

// dst[i] = ToFloat16Bits<kNearestEven or, with round_down, kDown>(src[i]) for i < n, finite
// inputs: F16C's vcvtps2ph where the CPU has it (IEEE's conversion with the rounding
// direction in the instruction, eight values at a time), uniform.h's integer code otherwise.
// The two agree on every finite float32 (tf_ops/common/conversions_test.cc).
void Float32ToFloat16(const float* src, int64_t n, bool round_down, uint16_t* dst);

}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_COMMON_PHILOX_CPU_H_

#include "tf_ops/common/philox_cpu.h"

#include "tf_ops/common/uniform.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define OTF_HAVE_AVX2_PATH 1
#include <immintrin.h>
#endif

namespace tf_onthefly {
namespace {

void UniformFloatBlocksScalar(PhiloxKey key, uint64_t sample, uint32_t first_block,
                              int64_t num_blocks, float* dst) {
  for (int64_t i = 0; i < num_blocks; ++i) {
    const Words4 w = SampleBlock(key, sample, first_block + static_cast<uint32_t>(i));
    dst[4 * i + 0] = UniformFloat(w.w0);
    dst[4 * i + 1] = UniformFloat(w.w1);
    dst[4 * i + 2] = UniformFloat(w.w2);
    dst[4 * i + 3] = UniformFloat(w.w3);
  }
}

#if defined(OTF_HAVE_AVX2_PATH)
#define OTF_AVX2 __attribute__((target("avx2")))

// hi and lo 32 bits of m * a in every lane. vpmuludq multiplies the even lanes only, so
// the odd lanes go through it a second time shifted down.
OTF_AVX2 inline void MulHiLo(__m256i a, __m256i m, __m256i* hi, __m256i* lo) {
  const __m256i even = _mm256_mul_epu32(a, m);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

OTF_AVX2 inline __m256 ToUniform(__m256i w) {
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(w, 8)), _mm256_set1_ps(0x1p-24f));
}

// Eight blocks per iteration, block i of the eight in lane i (structure of arrays), then a
// 4x8 transpose so each block's four floats land next to each other.
OTF_AVX2 void UniformFloatBlocksAvx2(PhiloxKey key, uint64_t sample, uint32_t first_block,
                                     int64_t num_blocks, float* dst) {
  const __m256i m0 = _mm256_set1_epi64x(0xD2511F53u), m1 = _mm256_set1_epi64x(0xCD9E8D57u);
  __m256i k0[10], k1[10];
  for (int r = 0; r < 10; ++r) {
    k0[r] = _mm256_set1_epi32(static_cast<int>(key.k0 + r * 0x9E3779B9u));
    k1[r] = _mm256_set1_epi32(static_cast<int>(key.k1 + r * 0xBB67AE85u));
  }
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i sample_lo = _mm256_set1_epi32(static_cast<int>(Lo32(sample)));
  const __m256i sample_hi = _mm256_set1_epi32(static_cast<int>(Hi32(sample)));
  int64_t i = 0;
  for (; i + 8 <= num_blocks; i += 8) {
    __m256i x0 = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(first_block + i)), lanes);
    __m256i x1 = sample_lo, x2 = sample_hi, x3 = _mm256_setzero_si256();
    for (int r = 0; r < 10; ++r) {
      __m256i hi0, lo0, hi1, lo1;
      MulHiLo(x0, m0, &hi0, &lo0);
      MulHiLo(x2, m1, &hi1, &lo1);
      x0 = _mm256_xor_si256(_mm256_xor_si256(hi1, x1), k0[r]);
      x1 = lo1;
      x2 = _mm256_xor_si256(_mm256_xor_si256(hi0, x3), k1[r]);
      x3 = lo0;
    }
    const __m256 a = ToUniform(x0), b = ToUniform(x1), c = ToUniform(x2), d = ToUniform(x3);
    const __m256 t0 = _mm256_unpacklo_ps(a, b), t1 = _mm256_unpackhi_ps(a, b);
    const __m256 t2 = _mm256_unpacklo_ps(c, d), t3 = _mm256_unpackhi_ps(c, d);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    float* out = dst + 4 * i;
    _mm256_storeu_ps(out + 0, _mm256_permute2f128_ps(u0, u1, 0x20));
    _mm256_storeu_ps(out + 8, _mm256_permute2f128_ps(u2, u3, 0x20));
    _mm256_storeu_ps(out + 16, _mm256_permute2f128_ps(u0, u1, 0x31));
    _mm256_storeu_ps(out + 24, _mm256_permute2f128_ps(u2, u3, 0x31));
  }
  UniformFloatBlocksScalar(key, sample, first_block + static_cast<uint32_t>(i), num_blocks - i,
                           dst + 4 * i);
}

bool CpuHasAvx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}
#endif

}  // namespace

void UniformFloatBlocks(PhiloxKey key, uint64_t sample, uint32_t first_block, int64_t num_blocks,
                        float* dst) {
#if defined(OTF_HAVE_AVX2_PATH)
  if (CpuHasAvx2()) return UniformFloatBlocksAvx2(key, sample, first_block, num_blocks, dst);
#endif
  UniformFloatBlocksScalar(key, sample, first_block, num_blocks, dst);
}

}  // namespace tf_onthefly

#include "tf_ops/common/philox_cpu.h"

#include "tf_ops/common/normal.h"
#include "tf_ops/common/uniform.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define OTF_HAVE_AVX2_PATH 1
#include <immintrin.h>
#endif

namespace tf_onthefly {
namespace {

// The scalar code: the reference, the tail of the vector loops, and CPUs without AVX2 + FMA.
// Compiled for baseline x86-64, where std::fma is glibc's fmaf (the FMA instruction where
// the CPU has one, an exact emulation otherwise).
void UniformFloatBlocksScalar(PhiloxKey key, uint64_t sample, uint32_t first_block,
                              int64_t num_blocks, float* dst) {
  for (int64_t i = 0; i < num_blocks; ++i) {
    const Words4 w = SampleBlock(key, sample, first_block + static_cast<uint32_t>(i));
    for (int j = 0; j < 4; ++j) dst[4 * i + j] = UniformFloat(w[j]);
  }
}

void NormalFloatBlocksScalar(PhiloxKey key, uint64_t sample, uint32_t first_block,
                             int64_t num_blocks, float* dst) {
  for (int64_t i = 0; i < num_blocks; ++i) {
    const Words4 w = SampleBlock(key, sample, first_block + static_cast<uint32_t>(i));
    BoxMuller(w.w0, w.w1, &dst[4 * i + 0], &dst[4 * i + 1]);
    BoxMuller(w.w2, w.w3, &dst[4 * i + 2], &dst[4 * i + 3]);
  }
}

#if defined(OTF_HAVE_AVX2_PATH)
#define OTF_AVX2 __attribute__((target("avx2,fma")))

OTF_AVX2 inline __m256i Set(uint32_t v) { return _mm256_set1_epi32(static_cast<int>(v)); }
OTF_AVX2 inline __m256 SetF(float v) { return _mm256_set1_ps(v); }

// hi and lo 32 bits of m * a in every lane. vpmuludq multiplies the even lanes only, so
// the odd lanes go through it a second time shifted down.
OTF_AVX2 inline void MulHiLo(__m256i a, __m256i m, __m256i* hi, __m256i* lo) {
  const __m256i even = _mm256_mul_epu32(a, m);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

// [0, 1) floats of four word lanes.
struct UniformMap {
  OTF_AVX2 static void Map(const __m256i x[4], __m256 out[4]) {
    for (int j = 0; j < 4; ++j)
      out[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(x[j], 8)), SetF(0x1p-24f));
  }
  static void Scalar(PhiloxKey key, uint64_t sample, uint32_t first_block, int64_t n, float* d) {
    UniformFloatBlocksScalar(key, sample, first_block, n, d);
  }
};

// BoxMuller() of normal.h in eight lanes, operation for operation (fnmadd is fma(-a, b, c),
// blendv the quadrant swap).
struct NormalMap {
  OTF_AVX2 static void BoxMuller8(__m256i w_r, __m256i w_theta, __m256* z0, __m256* z1) {
    using namespace normal_detail;
    const __m256i v = _mm256_add_epi32(w_theta, Set(0x20000000u));
    // AngleX
    const __m256i mbits =
        _mm256_or_si256(Set(0x40800000u), _mm256_srli_epi32(_mm256_slli_epi32(v, 2), 10));
    const __m256 x = _mm256_add_ps(_mm256_castsi256_ps(mbits), SetF(-5.0f));
    const __m256 s = _mm256_mul_ps(x, x);
    // NegLogU1: (w >> 8) + 1 <= 2^24 converts exactly as a signed int32.
    const __m256 u = _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_srli_epi32(w_r, 8), Set(1)));
    const __m256i b = _mm256_castps_si256(u);
    const __m256i e = _mm256_and_si256(_mm256_sub_epi32(b, Set(0x4B000001u)), Set(0xFF800000u));
    const __m256 m =
        _mm256_castsi256_ps(_mm256_sub_epi32(_mm256_sub_epi32(b, e), Set(0x0C000000u)));
    const __m256 g = _mm256_add_ps(SetF(1.0f), _mm256_xor_ps(m, SetF(-0.0f)));  // 1 + (-m)
    __m256 p = SetF(kLogP[8]);
    for (int i = 7; i >= 0; --i) p = _mm256_fmadd_ps(p, g, SetF(kLogP[i]));
    const __m256 t = _mm256_fmadd_ps(_mm256_mul_ps(g, g), p, g);
    const __m256 l = _mm256_fmadd_ps(_mm256_cvtepi32_ps(e), SetF(kNegLn2Exp), t);
    // SqrtPair
    const __m256i sign = _mm256_and_si256(v, Set(0x80000000u));
    const __m256 y0 = _mm256_castsi256_ps(_mm256_xor_si256(
        _mm256_sub_epi32(Set(kRsqrtMagic), _mm256_srli_epi32(_mm256_castps_si256(l), 1)), sign));
    const __m256 w = _mm256_mul_ps(l, _mm256_mul_ps(y0, y0));
    const __m256 y =
        _mm256_mul_ps(y0, _mm256_fmadd_ps(_mm256_add_ps(w, SetF(kRsqrtA)), w, SetF(kRsqrtB)));
    const __m256 r0 = _mm256_mul_ps(l, y);
    const __m256 rl = _mm256_mul_ps(_mm256_fnmadd_ps(r0, r0, l), _mm256_mul_ps(SetF(0.5f), y));
    // CosQ, SinS
    __m256 q = SetF(kCosQ[4]);
    for (int i = 3; i >= 0; --i) q = _mm256_fmadd_ps(q, s, SetF(kCosQ[i]));
    __m256 ps = SetF(kSinS[3]);
    for (int i = 2; i >= 0; --i) ps = _mm256_fmadd_ps(ps, s, SetF(kSinS[i]));
    // Combination
    const __m256 r = _mm256_add_ps(r0, rl);
    const __m256 c =
        _mm256_fmadd_ps(r0, SetF(kCm), _mm256_fmadd_ps(r, q, _mm256_mul_ps(rl, SetF(kCm))));
    const __m256 sn = _mm256_fmadd_ps(r0, x, _mm256_mul_ps(x, _mm256_fmadd_ps(r, ps, rl)));
    const __m256 odd = _mm256_castsi256_ps(
        _mm256_cmpeq_epi32(_mm256_and_si256(v, Set(0x40000000u)), Set(0x40000000u)));
    *z0 = _mm256_blendv_ps(c, _mm256_xor_ps(sn, SetF(-0.0f)), odd);
    *z1 = _mm256_blendv_ps(sn, c, odd);
  }
  OTF_AVX2 static void Map(const __m256i x[4], __m256 out[4]) {
    BoxMuller8(x[0], x[1], &out[0], &out[1]);
    BoxMuller8(x[2], x[3], &out[2], &out[3]);
  }
  static void Scalar(PhiloxKey key, uint64_t sample, uint32_t first_block, int64_t n, float* d) {
    NormalFloatBlocksScalar(key, sample, first_block, n, d);
  }
};

// Eight blocks per iteration, block i of the eight in lane i (structure of arrays), mapped
// to floats word lane by word lane, then a 4x8 transpose so each block's four floats land
// next to each other. The tail (fewer than eight blocks) runs the scalar code.
template <typename M>
OTF_AVX2 void FloatBlocksAvx2(PhiloxKey key, uint64_t sample, uint32_t first_block,
                              int64_t num_blocks, float* dst) {
  const __m256i m0 = _mm256_set1_epi64x(0xD2511F53u), m1 = _mm256_set1_epi64x(0xCD9E8D57u);
  __m256i k0[10], k1[10];
  for (int r = 0; r < 10; ++r) {
    k0[r] = Set(key.k0 + r * 0x9E3779B9u);
    k1[r] = Set(key.k1 + r * 0xBB67AE85u);
  }
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i sample_lo = Set(Lo32(sample)), sample_hi = Set(Hi32(sample));
  int64_t i = 0;
  for (; i + 8 <= num_blocks; i += 8) {
    __m256i x[4] = {_mm256_add_epi32(Set(first_block + static_cast<uint32_t>(i)), lanes), sample_lo,
                    sample_hi, _mm256_setzero_si256()};
    for (int r = 0; r < 10; ++r) {
      __m256i hi0, lo0, hi1, lo1;
      MulHiLo(x[0], m0, &hi0, &lo0);
      MulHiLo(x[2], m1, &hi1, &lo1);
      x[0] = _mm256_xor_si256(_mm256_xor_si256(hi1, x[1]), k0[r]);
      x[1] = lo1;
      x[2] = _mm256_xor_si256(_mm256_xor_si256(hi0, x[3]), k1[r]);
      x[3] = lo0;
    }
    __m256 f[4];
    M::Map(x, f);
    const __m256 t0 = _mm256_unpacklo_ps(f[0], f[1]), t1 = _mm256_unpackhi_ps(f[0], f[1]);
    const __m256 t2 = _mm256_unpacklo_ps(f[2], f[3]), t3 = _mm256_unpackhi_ps(f[2], f[3]);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    float* out = dst + 4 * i;
    _mm256_storeu_ps(out + 0, _mm256_permute2f128_ps(u0, u1, 0x20));
    _mm256_storeu_ps(out + 8, _mm256_permute2f128_ps(u2, u3, 0x20));
    _mm256_storeu_ps(out + 16, _mm256_permute2f128_ps(u0, u1, 0x31));
    _mm256_storeu_ps(out + 24, _mm256_permute2f128_ps(u2, u3, 0x31));
  }
  M::Scalar(key, sample, first_block + static_cast<uint32_t>(i), num_blocks - i, dst + 4 * i);
}

bool CpuHasAvx2Fma() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

// vcvtps2ph's rounding comes from its immediate, not MXCSR; it makes subnormal halves
// whatever MXCSR.FTZ says, and its inputs here are never float32 subnormals the DAZ bit
// could zero (and every CPU generator runs with IEEE subnormals anyway, float_env.h).
// Converts the values of whole groups of eight; returns how many it converted.
template <int kRounding>
__attribute__((target("avx,f16c"))) int64_t Float16F16c(const float* src, int64_t n,
                                                        uint16_t* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), kRounding | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  return i;
}

bool CpuHasF16c() {
  static const bool yes = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return yes;
}
#endif

}  // namespace

void UniformFloatBlocks(PhiloxKey key, uint64_t sample, uint32_t first_block, int64_t num_blocks,
                        float* dst) {
#if defined(OTF_HAVE_AVX2_PATH)
  if (CpuHasAvx2Fma())
    return FloatBlocksAvx2<UniformMap>(key, sample, first_block, num_blocks, dst);
#endif
  UniformFloatBlocksScalar(key, sample, first_block, num_blocks, dst);
}

void NormalFloatBlocks(PhiloxKey key, uint64_t sample, uint32_t first_block, int64_t num_blocks,
                       float* dst) {
#if defined(OTF_HAVE_AVX2_PATH)
  if (CpuHasAvx2Fma()) return FloatBlocksAvx2<NormalMap>(key, sample, first_block, num_blocks, dst);
#endif
  NormalFloatBlocksScalar(key, sample, first_block, num_blocks, dst);
}

void Float32ToFloat16(const float* src, int64_t n, bool round_down, uint16_t* dst) {
  int64_t i = 0;  // what F16C converted; the integer code does the rest
#if defined(OTF_HAVE_AVX2_PATH)
  if (CpuHasF16c()) {
    i = round_down ? Float16F16c<_MM_FROUND_TO_NEG_INF>(src, n, dst)
                   : Float16F16c<_MM_FROUND_TO_NEAREST_INT>(src, n, dst);
  }
#endif
  for (; i < n; ++i) {
    dst[i] = round_down ? ToFloat16Bits<Rounding::kDown>(src[i])
                        : ToFloat16Bits<Rounding::kNearestEven>(src[i]);
  }
}

}  // namespace tf_onthefly

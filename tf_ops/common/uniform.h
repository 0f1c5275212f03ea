// Conversions from Philox words to numbers, identical on CPU and GPU.
#ifndef TF_ONTHEFLY_COMMON_UNIFORM_H_
#define TF_ONTHEFLY_COMMON_UNIFORM_H_

#include <cmath>
#include <cstdint>

#include "tf_ops/common/philox.h"

// glibc 2.29 added a new version of log(); binding the old one keeps the op library
// loadable on glibc 2.28 (manylinux_2_28). Same results for the arguments used here.
#if !defined(__CUDACC__) && defined(__GLIBC__) && defined(__x86_64__)
__asm__(".symver log,log@GLIBC_2.2.5");
#endif

namespace tf_onthefly {

// [0, 1): the top 24 bits of the word times 2^-24. Exact in float32 on every device.
OTF_HD float UniformFloat(uint32_t w) { return static_cast<float>(w >> 8) * 0x1p-24f; }

// (0, 1]: for logarithms, which must never see 0.
OTF_HD float UniformFloatOpen0(uint32_t w) { return static_cast<float>((w >> 8) + 1u) * 0x1p-24f; }

// Round-to-nearest multiply and add that no compiler may fuse into an FMA: the CPU build
// has no FMA to fuse with, so a fused GPU result would differ in the last bit.
OTF_HD float MulRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
OTF_HD float AddRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

// low + range * u, kept below `high` (rounding can otherwise land on it exactly).
OTF_HD float UniformInRange(uint32_t w, float low, float range, float high) {
  const float x = AddRn(MulRn(range, UniformFloat(w)), low);
  return x < high ? x : nextafterf(high, low);
}

// ---- 16-bit floats (bfloat16, IEEE binary16) --------------------------------------------
// Conversions from float32 done on the bits with integer arithmetic alone, so CPU and GPU
// give the same bits whatever their hardware converters do. Two roundings: to nearest even
// (normals: the float32 value rounded once) and toward minus infinity (uniforms: a value in
// [low, high) stays below high; docs/counter-contract.md).
enum class Rounding { kNearestEven, kDown };

OTF_HD uint32_t FloatBits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t b;
  __builtin_memcpy(&b, &x, sizeof(b));
  return b;
#endif
}
OTF_HD float BitsFloat(uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  float x;
  __builtin_memcpy(&x, &b, sizeof(x));
  return x;
#endif
}

// A magnitude rounded from `kept` (its top bits) given the bits that are dropped and the
// value of half a unit of `kept`, for a number of sign `negative`.
template <Rounding kMode>
OTF_HD uint32_t RoundMagnitude(uint32_t kept, uint32_t dropped, uint32_t half, bool negative) {
  if (kMode == Rounding::kNearestEven)
    return kept + (dropped > half || (dropped == half && (kept & 1u)));
  return kept + (negative && dropped != 0);  // toward -inf: a negative value grows in magnitude
}

// bfloat16: float32's top 16 bits, rounded. Finite inputs only.
template <Rounding kMode>
OTF_HD uint16_t ToBFloat16(float x) {
  const uint32_t b = FloatBits(x);
  const uint32_t sign = b & 0x80000000u, mag = b & 0x7FFFFFFFu;
  return static_cast<uint16_t>((sign >> 16) |
                               RoundMagnitude<kMode>(mag >> 16, mag & 0xFFFFu, 0x8000u, sign != 0));
}
OTF_HD float FromBFloat16(uint16_t h) { return BitsFloat(static_cast<uint32_t>(h) << 16); }

// binary16 (half): 5 exponent bits (bias 15), 10 mantissa bits, subnormals below 2^-14.
// Finite inputs only; a magnitude past 65504 rounds to infinity (callers keep values in range).
template <Rounding kMode>
OTF_HD uint16_t ToFloat16(float x) {
  const uint32_t b = FloatBits(x);
  const uint32_t sign = (b >> 16) & 0x8000u, mag = b & 0x7FFFFFFFu;
  const int32_t exp = static_cast<int32_t>(mag >> 23) - 127 + 15;  // half's biased exponent
  uint32_t h;
  if (exp >= 31) {
    h = 0x7C00u;  // past the largest finite half
  } else if (exp >= 1) {
    h = RoundMagnitude<kMode>((static_cast<uint32_t>(exp) << 10) | ((mag >> 13) & 0x3FFu),
                              mag & 0x1FFFu, 0x1000u, sign != 0);
  } else {
    // Subnormal (or zero) half: the significand with its leading 1, shifted to units of 2^-24.
    const uint32_t significand = (mag & 0x7FFFFFu) | (mag >= 0x00800000u ? 0x800000u : 0u);
    const int32_t shift = 14 - exp;  // >= 14
    if (shift > 24) {
      h = RoundMagnitude<kMode>(0u, significand, 0xFFFFFFFFu, sign != 0);  // below half the least
    } else {
      const uint32_t dropped = significand & ((1u << shift) - 1u);
      h = RoundMagnitude<kMode>(significand >> shift, dropped, 1u << (shift - 1), sign != 0);
    }
  }
  return static_cast<uint16_t>(sign | h);
}
OTF_HD float FromFloat16(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float32
    const float v = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -v : v;
  }
  if (exp == 31) return BitsFloat(sign | 0x7F800000u | (mant << 13));
  return BitsFloat(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

// The feature types a generator may write, with their conversions from float32.
struct BFloat16 {
  using Storage = uint16_t;
  template <Rounding kMode>
  OTF_HD static uint16_t From(float x) {
    return ToBFloat16<kMode>(x);
  }
  OTF_HD static float ToFloat(uint16_t h) { return FromBFloat16(h); }
};
struct Float16 {
  using Storage = uint16_t;
  template <Rounding kMode>
  OTF_HD static uint16_t From(float x) {
    return ToFloat16<kMode>(x);
  }
  OTF_HD static float ToFloat(uint16_t h) { return FromFloat16(h); }
};
struct Float32 {
  using Storage = float;
  template <Rounding>
  OTF_HD static float From(float x) {
    return x;
  }
  OTF_HD static float ToFloat(float x) { return x; }
};

// Uniform integer in [0, n) from 64 random bits: floor(bits * n / 2^64). Bias at most
// n / 2^64 per value, and a fixed two words per draw, so it never depends on rejection.
OTF_HD uint64_t UniformBelow(uint32_t hi_word, uint32_t lo_word, uint64_t n) {
  const uint64_t bits = (static_cast<uint64_t>(hi_word) << 32) | lo_word;
#if defined(__CUDA_ARCH__)
  return __umul64hi(bits, n);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(bits) * n) >> 64);
#endif
}

// Box-Muller: two standard normals from two words. u1 in (0, 1] (never log 0), u2 in
// [0, 1): z0 = r cos(2 pi u2), z1 = r sin(2 pi u2), r = sqrt(-2 ln u1).
// The CPU computes in double with an exact argument reduction for sinpi/cospi, rounded once
// to float: the reference. The GPU computes in float with functions written for exactly
// these arguments (below), which is about half the instructions of CUDA's general logf and
// sincospif (the normal kernel is issue-bound); the two agree within the bound stated and
// tested in docs/counter-contract.md.
#if defined(__CUDA_ARCH__)
// ln(u) for u = j * 2^-24, j in [1, 2^24]: always a normal float in (0, 1], so none of the
// zero, subnormal, infinity or NaN cases a general logf must test for. u = 2^e m with m in
// [2/3, 4/3); ln(1 + f), f = m - 1 (exact), from a degree-10 polynomial fitted in relative
// error (max 1.3e-8 before rounding), as CUDA's logf does.
__device__ __forceinline__ float LogUnitInterval(float u) {
  const int32_t bits = __float_as_int(u);
  const int32_t e = (bits - 0x3F2AAAAB) >> 23;  // arithmetic shift: e <= 0
  const float f = __int_as_float(bits - (e << 23)) - 1.0f;
  float r = -0.1248178631f;
  r = fmaf(r, f, 0.1383049935f);
  r = fmaf(r, f, -0.1227258965f);
  r = fmaf(r, f, 0.1403451711f);
  r = fmaf(r, f, -0.1667458117f);
  r = fmaf(r, f, 0.2000886053f);
  r = fmaf(r, f, -0.2499991655f);
  r = fmaf(r, f, 0.3333323896f);
  r = fmaf(r, f, -0.5f);
  return fmaf(static_cast<float>(e), 0.693147182f, fmaf(f * f, r, f));
}

// sin(pi x) and cos(pi x) for x = k * 2^-23, k < 2^24 (x in [0, 2)). The reduction is done
// on the integer: the quadrant is k's top two bits, and the position in the quadrant is
// folded to t in [0, 1/4] exactly, so only the polynomials round (max 3.7e-8 and 1.0e-8
// relative before rounding; fitted like sincospif's).
__device__ __forceinline__ void SinCosPiOfFraction(uint32_t k, float* s, float* c) {
  const uint32_t quadrant = k >> 22;
  uint32_t j = k & 0x3FFFFFu;
  const bool fold = j > 0x200000u;  // past the middle of the quadrant: sin <-> cos
  if (fold) j = 0x400000u - j;
  const float t = static_cast<float>(j) * 0x1p-23f;
  const float t2 = t * t;
  float ps = fmaf(fmaf(-0.5897516012f, t2, 2.549821854f), t2, -5.167708874f);
  const float sin_t = fmaf(ps, t2 * t, 3.141592741f * t);
  float pc =
      fmaf(fmaf(fmaf(0.2315560281f, t2, -1.335071683f), t2, 4.058708191f), t2, -4.934802055f);
  const float cos_t = fmaf(pc, t2, 1.0f);
  const bool swap = fold != ((quadrant & 1u) != 0);
  const float s0 = swap ? cos_t : sin_t, c0 = swap ? sin_t : cos_t;
  *s = (quadrant & 2u) ? -s0 : s0;
  *c = ((quadrant + 1u) & 2u) ? -c0 : c0;
}

__device__ __forceinline__ void BoxMuller(uint32_t w_r, uint32_t w_theta, float* z0, float* z1) {
  const float r = sqrtf(-2.0f * LogUnitInterval(UniformFloatOpen0(w_r)));
  float s, c;
  SinCosPiOfFraction(w_theta >> 8, &s, &c);  // 2 pi * UniformFloat(w_theta)
  *z0 = r * c;
  *z1 = r * s;
}
#else
// sin(pi x) and cos(pi x) for x in [0, 2) (x a float, so every step below is exact in
// double until the final sin/cos of an argument in [-pi/4, pi/4]).
inline void SinCosPi(double x, double* s, double* c) {
  const double q = std::nearbyint(2.0 * x);  // quadrant 0..4
  const double t = (x - 0.5 * q) * M_PI;     // x - q/2 is exact; |t| <= pi/4
  const double st = std::sin(t), ct = std::cos(t);
  switch (static_cast<int>(q) & 3) {
    case 0:
      *s = st;
      *c = ct;
      break;
    case 1:
      *s = ct;
      *c = -st;
      break;
    case 2:
      *s = -st;
      *c = -ct;
      break;
    default:
      *s = -ct;
      *c = st;
      break;
  }
}
inline void BoxMuller(uint32_t w_r, uint32_t w_theta, float* z0, float* z1) {
  const double r = std::sqrt(-2.0 * std::log(static_cast<double>(UniformFloatOpen0(w_r))));
  double s, c;
  SinCosPi(2.0 * static_cast<double>(UniformFloat(w_theta)), &s, &c);
  *z0 = static_cast<float>(r * c);
  *z1 = static_cast<float>(r * s);
}
#endif

}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_COMMON_UNIFORM_H_

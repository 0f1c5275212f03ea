// Conversions from Philox words to numbers, identical on CPU and GPU.
#ifndef TF_ONTHEFLY_COMMON_UNIFORM_H_
#define TF_ONTHEFLY_COMMON_UNIFORM_H_

// Also compiles under NVRTC (no standard library there; philox.h gives the integer types, and
// nextafterf is one of CUDA's built-in device functions).
#if !defined(__CUDACC_RTC__)
#include <cmath>
#include <cstdint>
#endif

#include "tf_ops/common/philox.h"

namespace tf_onthefly {

// [0, 1): the top 24 bits of the word times 2^-24. Exact in float32 on every device.
OTF_HD float UniformFloat(uint32_t w) { return static_cast<float>(w >> 8) * 0x1p-24f; }

// Round-to-nearest multiply, add and fused multiply-add, each one IEEE operation rounded
// once, so CPU and GPU give the same bits. The compilers must not fuse a MulRn into a
// following AddRn (the CUDA intrinsics forbid it; the C++ side builds with
// -ffp-contract=off). On the CPU std::fma is IEEE's fusedMultiplyAdd: glibc's fmaf uses the
// FMA instruction where the CPU has one and an exact emulation otherwise.
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
OTF_HD float FmaRn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// low + range * u, kept below `high` (rounding can otherwise land on it exactly).
OTF_HD float UniformInRange(uint32_t w, float low, float range, float high) {
  const float x = AddRn(MulRn(range, UniformFloat(w)), low);
  return x < high ? x : nextafterf(high, low);
}

// ---- 16-bit floats (bfloat16, IEEE binary16) --------------------------------------------
// Conversions from float32 with two roundings: to nearest even (normals: the float32 value
// rounded once) and toward minus infinity (uniforms: a value in [low, high) stays below
// high; docs/counter-contract.md). The rule is IEEE 754's conversion in that rounding
// direction, subnormal results included. The CPU computes it on the bits with integer
// arithmetic (ToBFloat16Bits, ToFloat16Bits); the GPU uses its converter instruction where
// the architecture has it (cvt.rn/cvt.rm.f16.f32 everywhere, cvt.rn.bf16.f32 from sm_80,
// cvt.rm.bf16.f32 from sm_90), which is one instruction instead of ~10-40 in a kernel that
// is bound by instruction issue. Both give the same bits for every finite float32:
// benchmarks/kernel_bench checks all 2^32 inputs on the GPU.
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
OTF_HD uint16_t ToBFloat16Bits(float x) {
  const uint32_t b = FloatBits(x);
  const uint32_t sign = b & 0x80000000u, mag = b & 0x7FFFFFFFu;
  return static_cast<uint16_t>((sign >> 16) |
                               RoundMagnitude<kMode>(mag >> 16, mag & 0xFFFFu, 0x8000u, sign != 0));
}
template <Rounding kMode>
OTF_HD uint16_t ToBFloat16(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (kMode == Rounding::kNearestEven) {
    uint16_t h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return h;
  }
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (kMode == Rounding::kDown) {
    uint16_t h;
    asm("cvt.rm.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return h;
  }
#endif
  return ToBFloat16Bits<kMode>(x);
}
OTF_HD float FromBFloat16(uint16_t h) { return BitsFloat(static_cast<uint32_t>(h) << 16); }

// binary16 (half): 5 exponent bits (bias 15), 10 mantissa bits, subnormals below 2^-14.
// Finite inputs only. Past the largest half (65504), IEEE's overflow rule: to nearest, a
// value from 65520 on becomes infinity; toward minus infinity, a positive one stays 65504
// and a negative one becomes -infinity (callers keep values in range: rule stated for the
// GPU converter's sake).
template <Rounding kMode>
OTF_HD uint16_t ToFloat16Bits(float x) {
  const uint32_t b = FloatBits(x);
  const uint32_t sign = (b >> 16) & 0x8000u, mag = b & 0x7FFFFFFFu;
  const int32_t exp = static_cast<int32_t>(mag >> 23) - 127 + 15;  // half's biased exponent
  uint32_t h;
  if (exp >= 31) {  // 2^16 or more: past the largest finite half
    h = kMode == Rounding::kDown && sign == 0 ? 0x7BFFu : 0x7C00u;
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
template <Rounding kMode>
OTF_HD uint16_t ToFloat16(float x) {
#if defined(__CUDA_ARCH__)
  uint16_t h;
  if constexpr (kMode == Rounding::kNearestEven)
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  else
    asm("cvt.rm.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
#else
  return ToFloat16Bits<kMode>(x);
#endif
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

}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_COMMON_UNIFORM_H_

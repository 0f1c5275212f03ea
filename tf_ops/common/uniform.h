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
OTF_HD float UniformFloatOpen0(uint32_t w) {
  return static_cast<float>((w >> 8) + 1u) * 0x1p-24f;
}

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
// The GPU computes in float with CUDA's precise logf/sqrtf/sincospif; the CPU in double
// with an exact argument reduction for sinpi/cospi, rounded once to float. The two agree
// within the bound stated (and tested) in docs/counter-contract.md.
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ void BoxMuller(uint32_t w_r, uint32_t w_theta, float* z0, float* z1) {
  const float r = sqrtf(-2.0f * logf(UniformFloatOpen0(w_r)));
  float s, c;
  sincospif(2.0f * UniformFloat(w_theta), &s, &c);
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
    case 0: *s = st; *c = ct; break;
    case 1: *s = ct; *c = -st; break;
    case 2: *s = -st; *c = -ct; break;
    default: *s = -ct; *c = st; break;
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

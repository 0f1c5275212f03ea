// Standard normals from Philox words (Box-Muller) in float32, bit-identical on CPU and GPU.
//
// z0 = r cos(2 pi u2), z1 = r sin(2 pi u2), r = sqrt(-2 ln u1), with u1 = ((w_r >> 8) + 1)
// 2^-24 in (0, 1] and u2 = (w_theta >> 8) 2^-24 in [0, 1) (docs/counter-contract.md).
//
// Bit identity by construction: the result is a fixed sequence of IEEE 754 float32 adds,
// multiplies and fused multiply-adds in round-to-nearest-even (each rounded once, the same
// on every device), integer and bit operations, and int32 -> float conversions of exactly
// representable values. No sqrt, log, sin or cos of any library or hardware unit is used.
// On the GPU every float operation is an explicit __fadd_rn / __fmul_rn / __fmaf_rn (never
// contracted or approximated, whatever the flags); on the CPU std::fma(float, float, float)
// is IEEE's fusedMultiplyAdd (glibc: the FMA instruction, or an exact emulation), and the
// plain + and * must not be contracted: compile with -ffp-contract=off, never -ffast-math.
//
// Accuracy: every z0, z1 is within 1.75 ulp of the exact r cos / r sin (proven by
// tests/normal_accuracy `bound`, 1.742 ulp: the error of each factor over all 2^24 values
// of u1 and of u2, combined over 4096 x 4096 bins of their mantissas, plus every result
// within 2 ulp below a power of two checked one by one, at most 1.53 ulp); measured 1.46
// ulp max over 2e8 random values; 85 % of values are the correctly rounded ones.
//
// No subnormal can occur: for every pair of words every intermediate is 0 or at least
// 2^-103 in magnitude (the smallest nonzero inputs, all checked exhaustively, are L >= 2^-24,
// r0 >= 2^-12, rl >= 2^-39.5, x >= 2^-21, q, p >= 2^-23.5; each fma sum that can cancel
// lies on a grid no finer than 2^-103), so flush-to-zero / denormals-are-zero modes on
// either side do not change any result.
#ifndef TF_ONTHEFLY_COMMON_NORMAL_H_
#define TF_ONTHEFLY_COMMON_NORMAL_H_

#include <cstdint>

#include "tf_ops/common/uniform.h"

namespace tf_onthefly {
namespace normal_detail {

// -ln(1 - g) = g + g^2 P(g) on g in [0, 1/2]; relative error of the float32 polynomial
// below 3.81e-9. The constants here are fixed by the contract; tests/normal_accuracy
// `components` measures their errors.
constexpr float kLogP[9] = {5.000008941e-01f, 3.332632482e-01f,  2.518686056e-01f,
                            1.758752614e-01f, 3.400615156e-01f,  -5.922371149e-01f,
                            1.970850945e+00f, -2.476345539e+00f, 1.743386388e+00f};
constexpr float kNegLn2Exp = -0x1.62e430p-24f;  // -ln 2 / 2^23 (float ln 2: rel. err 2.75e-9)
// y0 = bits(kRsqrtMagic - bits(L) / 2) is 0.80..0.85 L^-1/2; y0 ((w + A) w + B) with
// w = L y0^2 is L^-1/2 within 3.3e-5 (a monic quadratic: no constant needs a register;
// measured by tests/normal_accuracy `components`).
constexpr uint32_t kRsqrtMagic = 0x5F120000u;
constexpr float kRsqrtA = -2.2539144f, kRsqrtB = 2.2829306f;
// sqrt2 cos(pi x / 4) = kCm + Q(x^2), sqrt2 sin(pi x / 4) = x (1 + S(x^2)) on x in [-1, 1];
// relative errors of the float32 polynomials below 4.0e-9 and 3.5e-9.
constexpr float kCm = 1.171572924e+00f;
constexpr float kCosQ[5] = {2.426406443e-01f, -4.361791611e-01f, 2.242211066e-02f,
                            -4.620373365e-04f, 5.523706022e-06f};
constexpr float kSinS[4] = {1.107207313e-01f, -1.141912863e-01f, 3.521389328e-03f,
                            -5.083669021e-05f};

// L = -ln(u1), u1 = ((w >> 8) + 1) 2^-24. u = u1 2^24 is an integer <= 2^24, exact as a
// float; u = 2^e m with m in (1/2, 1] (m = 1 exactly when u is a power of two, so u1 = 1
// gives L = 0 exactly), split on the bits: E = (e - 24) 2^23 <= 0 and m's bits b - E - 24
// 2^23. g = 1 - m is exact (Sterbenz), in [0, 1/2). L = (24 - e) ln 2 + t with t = -ln m
// >= 0: a sum of two non-negative terms, no cancellation. L is 0 or >= 5.96e-8.
OTF_HD float NegLogU1(uint32_t w) {
  const uint32_t b = FloatBits(static_cast<float>((w >> 8) + 1u));
  const uint32_t e = (b - 0x4B000001u) & 0xFF800000u;
  const float g = AddRn(1.0f, -BitsFloat(b - e - 0x0C000000u));
  float p = kLogP[8];
  for (int i = 7; i >= 0; --i) p = FmaRn(p, g, kLogP[i]);
  const float t = FmaRn(MulRn(g, g), p, g);
  return FmaRn(static_cast<float>(static_cast<int32_t>(e)), kNegLn2Exp, t);
}

// hi + lo = sqrt(l) (times -1 if `sign` is 0x80000000), to 1.6e-9 relative error of the
// sum, with |lo| < 3.3e-5 |hi|: hi = l y with y ~ l^-1/2 (3.3e-5), and
// lo = (l - hi^2) y / 2, the Newton correction (l - hi^2 is exact in the fma up to a
// relative 2^-24, which lo does not need). For l = 0: y0 = bits(kRsqrtMagic) ~ 1.0e19,
// y0^2 ~ 1.1e38 is finite, and hi = lo = 0.
OTF_HD void SqrtPair(float l, uint32_t sign, float* hi, float* lo) {
  const float y0 = BitsFloat((kRsqrtMagic - (FloatBits(l) >> 1)) ^ sign);
  const float w = MulRn(l, MulRn(y0, y0));
  const float y = MulRn(y0, FmaRn(AddRn(w, kRsqrtA), w, kRsqrtB));
  const float r0 = MulRn(l, y);
  *hi = r0;
  *lo = MulRn(FmaRn(-r0, r0, l), MulRn(0.5f, y));
}

// The angle 2 pi u2 = (pi/2) (q + x/2), q = quadrant (v >> 30), x in [-1, 1): v = w + 2^29
// rounds k = w >> 8 to the nearest quarter turn, and bits 8..29 of v (X) give x = X 2^-21 - 1
// exactly: the float 4 + X 2^-21 (exponent of 4, X in the low mantissa bits) minus 5.
OTF_HD float AngleX(uint32_t v) {
#if defined(__CUDA_ARCH__)
  uint32_t hi22;  // (v << 2) >> 10, kept as a shift so that ptxas can fuse it with the add
  asm("shr.b32 %0, %1, 10;" : "=r"(hi22) : "r"(v << 2));
  const uint32_t m = 0x40800000u + hi22;
#else
  const uint32_t m = 0x40800000u | ((v << 2) >> 10);
#endif
  return AddRn(BitsFloat(m), -5.0f);
}
OTF_HD float CosQ(float s) {
  float q = kCosQ[4];
  for (int i = 3; i >= 0; --i) q = FmaRn(q, s, kCosQ[i]);
  return q;
}
OTF_HD float SinS(float s) {
  float p = kSinS[3];
  for (int i = 2; i >= 0; --i) p = FmaRn(p, s, kSinS[i]);
  return p;
}

}  // namespace normal_detail

// R = sqrt(-ln u1) = r / sqrt2 is carried as r0 + rl, never rounded to one float in the
// main terms (that rounding alone could cost 1 ulp of z), and the angle factors sqrt2 cos,
// sqrt2 sin as kCm + q and x (1 + p), never rounded either: z is assembled with fmas whose
// main products r0 kCm and r0 x are exact, so apart from the last rounding only terms below
// 1/5 of z are rounded. The sign of the quadrants 2 and 3 is folded into y0 (so into r0 and
// rl); odd quadrants swap cos and sin.
OTF_HD void BoxMuller(uint32_t w_r, uint32_t w_theta, float* z0, float* z1) {
  using namespace normal_detail;
  const uint32_t v = w_theta + 0x20000000u;
  const float x = AngleX(v);
  const float s = MulRn(x, x);
  float r0, rl;
  SqrtPair(NegLogU1(w_r), v & 0x80000000u, &r0, &rl);
  const float q = CosQ(s), p = SinS(s);
  const float r = AddRn(r0, rl);  // R rounded once: only ever multiplies q or p
  // c = R (kCm + q) = r0 kCm + (rl kCm + R q), the bracket < |c| / 5.
  const float c = FmaRn(r0, kCm, FmaRn(r, q, MulRn(rl, kCm)));
  // s = R x (1 + p) = r0 x + x (R p + rl), the second term < |s| / 8.
  const float sn = FmaRn(r0, x, MulRn(x, FmaRn(r, p, rl)));
  const bool odd = (v & 0x40000000u) != 0;
  *z0 = odd ? -sn : c;
  *z1 = odd ? c : sn;
}

}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_COMMON_NORMAL_H_

// Shared by the normal_accuracy programs: the exact (long double) references, the ulp
// measure, the word <-> (u1, x, quadrant) mapping, and a small timer. README.md here.
#ifndef TOOLS_NORMAL_ACCURACY_COMMON_H_
#define TOOLS_NORMAL_ACCURACY_COMMON_H_

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "tf_ops/common/normal.h"

namespace na {

using LD = long double;
static_assert(sizeof(LD) >= 10 && __LDBL_MANT_DIG__ == 64, "needs x87 80-bit long double");

constexpr LD kSqrt2 = 1.414213562373095048801688724209698079L;
constexpr LD kPi4 = 0.785398163397448309615660845819875721L;  // pi / 4
constexpr LD kPi2 = 1.570796326794896619231321691639751442L;  // pi / 2
constexpr double kU = 0x1p-24;                                // float32 unit roundoff

// u1 = (k + 1) 2^-24 for the word w_r = k << 8 (k = w_r >> 8 in [0, 2^24)).
inline uint32_t WordR(uint32_t k) { return k << 8; }
// -ln u1, exact up to long double's log (u1 near 1 through log1p: u1 - 1 is exact).
inline LD NegLnU1(uint32_t k) {
  const LD u1 = static_cast<LD>(k + 1) * 0x1p-24L;
  return u1 > 0.5L ? -log1pl(u1 - 1.0L) : -logl(u1);
}
// R* = sqrt(-ln u1) = r / sqrt2.
inline LD ExactR(uint32_t k) { return sqrtl(NegLnU1(k)); }

// The angle word with quadrant 0 (v >> 30 == 0) and x = n 2^-21, n in [-2^21, 2^21):
// v = w_theta + 2^29 = (n + 2^21) << 8, so w_theta = ((n + 2^21) << 8) - 2^29.
inline uint32_t WordTheta(int32_t n) {
  return (static_cast<uint32_t>(n + (1 << 21)) << 8) - 0x20000000u;
}
// sqrt2 cos(pi x / 4) and sqrt2 sin(pi x / 4) for x = n 2^-21 (x exact).
inline LD ExactC(int32_t n) { return kSqrt2 * cosl(kPi4 * (static_cast<LD>(n) * 0x1p-21L)); }
inline LD ExactS(int32_t n) { return kSqrt2 * sinl(kPi4 * (static_cast<LD>(n) * 0x1p-21L)); }

// Exact z0 = r cos(2 pi u2), z1 = r sin(2 pi u2) from the words, by an angle reduction of
// its own (not normal.h's): k = w_theta >> 8 = 2^22 quad + f, 2 pi u2 = quad pi/2 + a with
// a = (pi/2) f 2^-22 in [0, pi/2), and the quadrant applied exactly.
inline void ExactZ(uint32_t w_r, uint32_t w_theta, LD* z0, LD* z1) {
  const LD r = kSqrt2 * ExactR(w_r >> 8);
  const uint32_t k = w_theta >> 8, quad = k >> 22, f = k & 0x3FFFFFu;
  const LD a = kPi2 * (static_cast<LD>(f) * 0x1p-22L);
  const LD c = f == 0 ? 1.0L : cosl(a), s = f == 0 ? 0.0L : sinl(a);
  LD zc, zs;
  switch (quad) {
    case 0:
      zc = c, zs = s;
      break;
    case 1:
      zc = -s, zs = c;
      break;
    case 2:
      zc = -c, zs = -s;
      break;
    default:
      zc = s, zs = -c;
      break;
  }
  *z0 = r * zc;
  *z1 = r * zs;
}

// ulp(t) = 2^(floor(log2 |t|) - 23) for t != 0 (float32's spacing in t's binade; every
// exact z here is 0 or above 2^-34, inside float32's normal range).
inline LD Ulp(LD t) { return ldexpl(1.0L, ilogbl(t) - 23); }
// |z - t| / ulp(t); for t == 0: 0 if z == 0, else infinity.
inline LD UlpErr(float z, LD t) {
  if (t == 0) return z == 0 ? 0.0L : INFINITY;
  return fabsl(static_cast<LD>(z) - t) / Ulp(t);
}
// Mantissa of |t| in [1, 2).
inline LD Mant(LD t) {
  int e;
  const LD m = frexpl(fabsl(t), &e);
  return 2 * m;
}

struct Timer {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
};

inline bool NormalOrZero(float v) {
  return v == 0 || (std::isfinite(v) && std::fabs(v) >= 0x1p-126f);
}

}  // namespace na

#endif  // TOOLS_NORMAL_ACCURACY_COMMON_H_

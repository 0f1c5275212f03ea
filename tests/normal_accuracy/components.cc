// Exhaustive checks of the two halves of normal.h's BoxMuller (README.md here):
//   u1 half: all 2^24 values of w_r >> 8 (NegLogU1, SqrtPair, r = r0 + rl rounded);
//   u2 half: all 2^24 values of w_theta >> 8 (AngleX and the quadrant), and all 2^22 values
//            of x (CosQ, SinS: the factors kCm + q and x (1 + p)).
// Prints the maxima of the errors, the smallest nonzero magnitudes of every intermediate,
// and the exponent-grid argument that the cross terms of the two halves are never
// subnormal. Exit status 1 if a check fails.
#include <omp.h>

#include <algorithm>
#include <cinttypes>
#include <cstdlib>
#include <random>
#include <vector>

#include "tests/normal_accuracy/common.h"

using namespace tf_onthefly;
using namespace tf_onthefly::normal_detail;
using na::LD;

namespace {

int g_failures = 0;
void Fail(const char* what, uint64_t where) {
#pragma omp critical
  {
    if (g_failures < 20) std::printf("FAIL: %s at %" PRIu64 "\n", what, where);
    ++g_failures;
  }
}

struct Range {  // signed min / max, max |.|, min nonzero |.|
  LD lo = INFINITY, hi = -INFINITY, minnz = INFINITY;
  void Add(LD v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    if (v != 0) minnz = std::min(minnz, fabsl(v));
  }
  void Merge(const Range& o) {
    lo = std::min(lo, o.lo);
    hi = std::max(hi, o.hi);
    minnz = std::min(minnz, o.minnz);
  }
  LD absmax() const { return std::max(fabsl(lo), fabsl(hi)); }
};

// ---- u1 half -------------------------------------------------------------------------
enum U1Stat {
  kLogPolyExact,  // g + g^2 P(g), exact arithmetic, vs -ln(1 - g)
  kLRel,          // L = NegLogU1 vs -ln u1
  kY0Ratio,       // y0 sqrt(L)
  kYRel,          // y vs L^-1/2 (the seeded quadratic)
  kPairVsSqrtL,   // r0 + rl vs sqrt(L) (SqrtPair alone)
  kER,            // r0 + rl vs R* = sqrt(-ln u1)
  kRho,           // |rl| / |r0 + rl|
  kRRound,        // r / (r0 + rl) - 1 (rounding of r)
  kRvsR,          // r vs R*
  kMinL,
  kMinR0,
  kMinRl,
  kMinR,      // magnitudes
  kMinInter,  // smallest nonzero |intermediate| of NegLogU1 + SqrtPair
  kMaxInter,  // largest |intermediate|
  kNumU1
};
const char* kU1Names[kNumU1] = {"log poly g+g^2P(g) (exact arith) vs -ln(1-g), rel",
                                "L = NegLogU1 vs -ln u1, rel",
                                "y0 sqrt(L) (rsqrt seed)",
                                "y vs L^-1/2 (seed + quadratic), rel",
                                "r0+rl vs sqrt(L) (SqrtPair alone), rel",
                                "eR: r0+rl vs R* = sqrt(-ln u1), rel",
                                "rho = |rl| / |r0+rl|",
                                "d3 = r/(r0+rl) - 1, r = AddRn(r0,rl)",
                                "r vs R*, rel",
                                "|L|",
                                "|r0|",
                                "|rl|",
                                "|r|",
                                "all intermediates, |.|",
                                "all intermediates, |.| (max)"};

void U1Half(Range out[kNumU1]) {
#pragma omp parallel
  {
    Range st[kNumU1];
#pragma omp for schedule(static)
    for (int64_t kk = 0; kk < (int64_t{1} << 24); ++kk) {
      const uint32_t k = static_cast<uint32_t>(kk), w = na::WordR(k);
      Range& inter = st[kMinInter];
      auto chk = [&](float v) {
        if (!na::NormalOrZero(v)) Fail("u1 intermediate subnormal/inf/nan", k);
        inter.Add(v);
        st[kMaxInter].Add(std::fabs(v));
      };
      // NegLogU1, step by step (the same operations; compared with the header's below).
      const uint32_t b = FloatBits(static_cast<float>((w >> 8) + 1u));
      const uint32_t e = (b - 0x4B000001u) & 0xFF800000u;
      const float mf = BitsFloat(b - e - 0x0C000000u);
      const float g = AddRn(1.0f, -mf);
      chk(mf), chk(g);
      float p = kLogP[8];
      for (int i = 7; i >= 0; --i) p = FmaRn(p, g, kLogP[i]), chk(p);
      const float gg = MulRn(g, g);
      const float t = FmaRn(gg, p, g);
      const float ef = static_cast<float>(static_cast<int32_t>(e));
      if (static_cast<LD>(ef) != static_cast<LD>(static_cast<int32_t>(e))) Fail("e inexact", k);
      const float L = FmaRn(ef, kNegLn2Exp, t);
      chk(gg), chk(t), chk(ef), chk(L);
      if (FloatBits(L) != FloatBits(NegLogU1(w))) Fail("instrumented NegLogU1 differs", k);
      // u1 = (k + 1) 2^-24 = 2^e' m with m = mf in (1/2, 1]: check the split.
      if (static_cast<LD>(mf) * ldexpl(1.0L, 24 + static_cast<int32_t>(e) / (1 << 23)) !=
          static_cast<LD>(k + 1))
        Fail("exponent split", k);
      if (g != 0) {  // the polynomial alone, in exact arithmetic (long double is exact here)
        LD P = kLogP[8];
        for (int i = 7; i >= 0; --i) P = P * g + kLogP[i];
        const LD tl = static_cast<LD>(g) + static_cast<LD>(g) * g * P;
        st[kLogPolyExact].Add(tl / -log1pl(-static_cast<LD>(g)) - 1);
      }
      // SqrtPair, step by step.
      const float y0 = BitsFloat(kRsqrtMagic - (FloatBits(L) >> 1));
      const float y02 = MulRn(y0, y0);
      const float ww = MulRn(L, y02);
      const float wa = AddRn(ww, kRsqrtA);
      const float quad = FmaRn(wa, ww, kRsqrtB);
      const float y = MulRn(y0, quad);
      const float r0 = MulRn(L, y);
      const float res = FmaRn(-r0, r0, L);
      const float hy = MulRn(0.5f, y);
      const float rl = MulRn(res, hy);
      chk(y0), chk(y02), chk(ww), chk(wa), chk(quad), chk(y), chk(r0), chk(res), chk(hy), chk(rl);
      float h2, l2, h3, l3;
      SqrtPair(L, 0, &h2, &l2);
      SqrtPair(L, 0x80000000u, &h3, &l3);
      if (FloatBits(h2) != FloatBits(r0) || FloatBits(l2) != FloatBits(rl))
        Fail("instrumented SqrtPair differs", k);
      if (FloatBits(h3) != (FloatBits(r0) ^ 0x80000000u) ||
          FloatBits(l3) != (FloatBits(rl) ^ 0x80000000u))
        Fail("sign 0x80000000 is not an exact negation", k);
      const float r = AddRn(r0, rl);
      chk(r);
      if (k == (1u << 24) - 1) {  // u1 = 1
        if (L != 0 || r0 != 0 || rl != 0) Fail("u1 = 1 does not give L = r0 = rl = 0", k);
        continue;
      }
      const LD Lx = na::NegLnU1(k), Rx = sqrtl(Lx);
      const LD P = static_cast<LD>(r0) + rl;  // exact: 24 + 24 bits less than 64 apart
      st[kLRel].Add(L / Lx - 1);
      st[kY0Ratio].Add(y0 * sqrtl(static_cast<LD>(L)));
      st[kYRel].Add(y * sqrtl(static_cast<LD>(L)) - 1);
      st[kPairVsSqrtL].Add(P / sqrtl(static_cast<LD>(L)) - 1);
      st[kER].Add(P / Rx - 1);
      st[kRho].Add(fabsl(rl / P));
      st[kRRound].Add(r / P - 1);
      st[kRvsR].Add(r / Rx - 1);
      st[kMinL].Add(L), st[kMinR0].Add(fabsl(r0)), st[kMinRl].Add(fabsl(rl));
      st[kMinR].Add(fabsl(r));
    }
#pragma omp critical
    for (int i = 0; i < kNumU1; ++i) out[i].Merge(st[i]);
  }
}

// ---- u2 half -------------------------------------------------------------------------
enum XStat {
  kCosPolyExact,  // kCm + Q(x^2) in exact arithmetic vs sqrt2 cos(pi x/4)
  kSinPolyExact,  // x (1 + S(x^2)) exact arithmetic vs sqrt2 sin(pi x/4)
  kEC,            // C = kCm + q (q = CosQ(fl(x^2))) vs sqrt2 cos
  kES,            // S = x (1 + p) vs sqrt2 sin
  kQoverC,
  kKoverC,
  kPover1p,
  kP,
  kMinX,
  kMinS,
  kMinQ,
  kMinPp,
  kMinInterX,
  kMaxInterX,
  kNumX
};
const char* kXNames[kNumX] = {"cos poly kCm+Q(x^2) (exact arith) vs sqrt2 cos(pi x/4), rel",
                              "sin poly x(1+S(x^2)) (exact arith) vs sqrt2 sin(pi x/4), rel",
                              "eC: kCm + q (float q) vs sqrt2 cos(pi x/4), rel",
                              "eS: x (1 + p) (float p) vs sqrt2 sin(pi x/4), rel",
                              "q / C",
                              "kCm / C",
                              "p / (1 + p)",
                              "p",
                              "|x|",
                              "|s| = |x^2|",
                              "|q|",
                              "|p|",
                              "all intermediates, |.|",
                              "all intermediates, |.| (max)"};

void XHalf(Range out[kNumX]) {
#pragma omp parallel
  {
    Range st[kNumX];
#pragma omp for schedule(static)
    for (int32_t n = -(1 << 21); n < (1 << 21); ++n) {
      auto chk = [&](float v) {
        if (!na::NormalOrZero(v)) Fail("x intermediate subnormal/inf/nan", n + (1u << 21));
        st[kMinInterX].Add(v);
        st[kMaxInterX].Add(std::fabs(v));
      };
      const uint32_t v = na::WordTheta(n) + 0x20000000u;
      const float x = AngleX(v);
      if (static_cast<LD>(x) != static_cast<LD>(n) * 0x1p-21L) Fail("AngleX", n + (1u << 21));
      const float s = MulRn(x, x);
      chk(x), chk(s);
      float q = kCosQ[4];
      for (int i = 3; i >= 0; --i) q = FmaRn(q, s, kCosQ[i]), chk(q);
      float p = kSinS[3];
      for (int i = 2; i >= 0; --i) p = FmaRn(p, s, kSinS[i]), chk(p);
      if (FloatBits(q) != FloatBits(CosQ(s)) || FloatBits(p) != FloatBits(SinS(s)))
        Fail("instrumented CosQ/SinS differ", n + (1u << 21));
      const LD xl = x, sx = xl * xl;  // exact
      const LD Cx = na::ExactC(n), Sx = na::ExactS(n);
      LD Q = kCosQ[4], Sp = kSinS[3];
      for (int i = 3; i >= 0; --i) Q = Q * sx + kCosQ[i];
      for (int i = 2; i >= 0; --i) Sp = Sp * sx + kSinS[i];
      const LD C = static_cast<LD>(kCm) + q;          // exact
      const LD S = xl * (1.0L + static_cast<LD>(p));  // exact (22 + 28 bits)
      st[kCosPolyExact].Add((kCm + Q) / Cx - 1);
      st[kEC].Add(C / Cx - 1);
      if (n != 0) {
        st[kSinPolyExact].Add(xl * (1 + Sp) / Sx - 1);
        st[kES].Add(S / Sx - 1);
      }
      st[kQoverC].Add(q / C), st[kKoverC].Add(kCm / C);
      st[kPover1p].Add(p / (1 + static_cast<LD>(p))), st[kP].Add(p);
      st[kMinX].Add(fabsl(xl)), st[kMinS].Add(s), st[kMinQ].Add(fabsl(q)), st[kMinPp].Add(fabsl(p));
    }
#pragma omp critical
    for (int i = 0; i < kNumX; ++i) out[i].Merge(st[i]);
  }
}

// Every u2 = k 2^-24: quad = v >> 30 and x = AngleX(v), v = (k << 8) + 2^29, satisfy
// 2 pi u2 = (pi/2) (quad + x/2) mod 2 pi, checked exactly on integers:
// quad 2^22 + (x + 1) 2^21 - 2^21 == k (mod 2^24), (x + 1) 2^21 an integer in [0, 2^22);
// and numerically: cos, sin of both sides in long double agree to 1e-15.
LD AngleHalf() {
  LD worst = 0;
#pragma omp parallel for schedule(static) reduction(max : worst)
  for (int64_t kk = 0; kk < (int64_t{1} << 24); ++kk) {
    const uint32_t k = static_cast<uint32_t>(kk), v = (k << 8) + 0x20000000u;
    const float x = AngleX(v);
    const uint32_t quad = v >> 30;
    const LD X = (static_cast<LD>(x) + 1) * 0x1p21L;
    if (X != floorl(X) || X < 0 || X >= 0x1p22L) Fail("x grid", k);
    const uint32_t lhs = (quad * (1u << 22) + static_cast<uint32_t>(X) - (1u << 21)) & 0xFFFFFFu;
    if (lhs != k) Fail("angle decomposition", k);
    if ((k & 0xFF) == 0) {  // numeric spot check on every 256th value
      const LD a1 = 4 * na::kPi2 * (static_cast<LD>(k) * 0x1p-24L);
      const LD a2 = na::kPi2 * (quad + static_cast<LD>(x) / 2);
      worst = std::max(worst, std::max(fabsl(cosl(a1) - cosl(a2)), fabsl(sinl(a1) - sinl(a2))));
    }
  }
  return worst;
}

// Only bits 8..31 of each word matter: every low byte of each word, for 2^14 random words.
void LowBits() {
  std::mt19937_64 rng(12345);
  std::vector<uint64_t> seeds(1 << 14);
  for (auto& s : seeds) s = rng();
#pragma omp parallel for schedule(static)
  for (int i = 0; i < (1 << 14); ++i) {
    const uint32_t a = static_cast<uint32_t>(seeds[i]) & ~0xFFu;
    const uint32_t b = static_cast<uint32_t>(seeds[i] >> 32) & ~0xFFu;
    float z0, z1;
    BoxMuller(a, b, &z0, &z1);
    for (uint32_t lo = 0; lo < 256; ++lo) {
      for (uint32_t lo2 : {0u, lo, 255u - lo}) {
        float y0, y1;
        BoxMuller(a | lo, b | lo2, &y0, &y1);
        if (FloatBits(y0) != FloatBits(z0) || FloatBits(y1) != FloatBits(z1))
          Fail("low byte changes the result", i);
      }
    }
  }
}

int Exp2(LD v) { return ilogbl(v); }  // floor(log2 |v|)

}  // namespace

int main() {
  na::Timer timer;
  std::printf("normal_accuracy components: exhaustive over each half (%d threads)\n\n",
              omp_get_max_threads());
  Range u1[kNumU1], xs[kNumX];
  U1Half(u1);
  const double t1 = timer.Seconds();
  XHalf(xs);
  const LD angle = AngleHalf();
  LowBits();
  const double t2 = timer.Seconds();

  std::printf("u1 half: all 2^24 values (u1 = 1 separately: L = r0 = rl = 0 checked)\n");
  std::printf("  %-58s %14s %14s %14s %12s\n", "quantity", "min", "max", "max |.|", "min |.|>0");
  for (int i = 0; i < kNumU1; ++i)
    std::printf("  %-58s %14.6Le %14.6Le %14.6Le %12.4Le\n", kU1Names[i], u1[i].lo, u1[i].hi,
                u1[i].absmax(), u1[i].minnz);
  std::printf("\nx (angle factors): all 2^22 values of x = n 2^-21, n in [-2^21, 2^21)\n");
  std::printf("  %-58s %14s %14s %14s %12s\n", "quantity", "min", "max", "max |.|", "min |.|>0");
  for (int i = 0; i < kNumX; ++i)
    std::printf("  %-58s %14.6Le %14.6Le %14.6Le %12.4Le\n", kXNames[i], xs[i].lo, xs[i].hi,
                xs[i].absmax(), xs[i].minnz);
  const LD ln2f = -static_cast<LD>(kNegLn2Exp) * 0x1p23L;
  std::printf("\nfloat ln 2 (-kNegLn2Exp 2^23) vs ln 2, rel: %.4Le\n",
              ln2f / 0.693147180559945309417232121458176568L - 1);
  std::printf(
      "all 2^24 u2: 2 pi u2 == (pi/2)(quad + x/2) mod 2 pi exactly on integers (OK unless "
      "FAIL above); long double cos/sin of both sides differ by at most %.3Le\n",
      angle);
  std::printf(
      "low byte of each word: no effect on 2^14 random pairs x 768 low-byte choices "
      "(and by the code: only w >> 8, and bits 8..31 of w + 2^29, are read)\n");

  // Cross terms of the two halves (2^48 pairs: not enumerated): an fma result a b + c is a
  // multiple of min(quantum(a) quantum(b), quantum(c)), quantum(v) = 2^(floor(log2 min|v|)
  // - 23); if nonzero it is at least that, so it is normal if that is >= 2^-126.
  const int er = Exp2(u1[kMinR].minnz), erl = Exp2(u1[kMinRl].minnz), er0 = Exp2(u1[kMinR0].minnz);
  const int eq = Exp2(xs[kMinQ].minnz), ep = Exp2(xs[kMinPp].minnz), ex = Exp2(xs[kMinX].minnz);
  const int ea1 = Exp2(u1[kMinRl].minnz * static_cast<LD>(kCm) * (1 - na::kU));  // |fl(rl kCm)|
  const int g_a2 = std::min((er - 23) + (eq - 23), ea1 - 23);                    // fl(r q + a1)
  const int g_b1 = std::min((er - 23) + (ep - 23), erl - 23);                    // fl(r p + rl)
  const int g_b2 = ex + g_b1;  // fl(x b1) >= |x| |b1|
  std::printf(
      "\ncross terms (exponents of the smallest nonzero magnitudes: r 2^%d, r0 2^%d, "
      "rl 2^%d, q 2^%d, p 2^%d, x 2^%d, fl(rl kCm) 2^%d):\n",
      er, er0, erl, eq, ep, ex, ea1);
  std::printf(
      "  fl(r q + fl(rl kCm)) is 0 or >= 2^%d;  fl(r p + rl) is 0 or >= 2^%d;  "
      "fl(x fl(r p + rl)) is 0 or >= 2^%d\n",
      g_a2, g_b1, g_b2);
  std::printf("  c, sn (|z'| >= (1 - 1/4) |R F|, bound's delta < 1/4): >= 2^%d\n",
              Exp2(0.75L * u1[kMinR0].minnz * 0.99L * std::min<LD>(1, xs[kMinX].minnz)));
  std::printf("  largest |intermediate| of either half: %.4Le (float max 3.4e38)\n",
              std::max(u1[kMaxInter].hi, xs[kMaxInterX].hi));
  if (std::min({g_a2, g_b1, g_b2}) < -126) Fail("cross-term grid reaches subnormals", 0);
  std::printf(
      "\n  bracket of c, |fl(r q + rl kCm)| / |R C| <= (1+u)(max|q|/C + rho kCm/C) = %.4Lf"
      "\n  bracket of sn, |x fl(r p + rl)| / |R S| <= (1+u)^2 (max p/(1+p)(1+u) + rho "
      "max 1/(1+p)) = %.4Lf\n",
      (1 + na::kU) * (xs[kQoverC].absmax() + u1[kRho].hi * xs[kKoverC].hi),
      (1 + na::kU) * (1 + na::kU) *
          (xs[kPover1p].absmax() * (1 + na::kU) + u1[kRho].hi / (1 + xs[kP].lo)));
  std::printf("\ntime: u1 half %.1f s, rest %.1f s; %s\n", t1, t2 - t1,
              g_failures ? "FAILED" : "all checks passed");
  return g_failures ? 1 : 0;
}

// A proof that every z0, z1 of normal.h's BoxMuller, over all 2^48 pairs of words, is within
// the printed number of ulps of the exact r cos / r sin. The argument is in README.md here;
// in short:
//   1. Quadrants: the quadrant only negates (exactly) and swaps the two results, so the
//      cos-path value c = fl(r0 kCm + fl(r q + fl(rl kCm))) and the sin-path value
//      sn = fl(r0 x + fl(x fl(r p + rl))) of quadrant 0 cover every result.
//   2. c' and sn' (the values before the last rounding) equal P F (1 + s) exactly, with
//      P = r0 + rl = R* (1 + eR), F = kCm + q or x (1 + p) = F* (1 + eF), and |s| bounded
//      from the inner roundings (each |d| <= 2^-24: no intermediate is subnormal).
//   3. eR, the inner-rounding terms are binned over the top 12 mantissa bits of R*, eF and
//      its terms over the top 12 bits of F*'s mantissa; each pair of bins gives
//      |z' - z*| / ulp(z*) <= relerr * max mantissa(z*) * 2^23 =: B (pre-rounding).
//   4. fl(z') adds at most 0.5 ulp(z*) unless z* lies within B ulps below a power of two;
//      all pairs within tau >= max B ulps below a power of two are enumerated (monotone
//      branches, tables of F*) and measured one by one.
// Exit status 1 if a check fails.
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

constexpr int kBits = 12, kBins = 1 << kBits;
constexpr int32_t kA = 1 << 21;  // |n| <= 2^21, x = n 2^-21
constexpr LD kU = 0x1p-24L;
// Absolute slack on every relative error for the long double references (each accurate to
// a few units of 2^-64; 2^-56 is far above that and far below float32's 2^-24).
constexpr LD kSlack = 0x1p-56L;

int g_failures = 0;
void Fail(const char* what, uint64_t where) {
#pragma omp critical
  {
    if (g_failures < 20) std::printf("FAIL: %s at %" PRIu64 "\n", what, where);
    ++g_failures;
  }
}

struct Iv {  // interval
  LD lo = INFINITY, hi = -INFINITY;
  void Add(LD v) { lo = std::min(lo, v), hi = std::max(hi, v); }
  void Merge(const Iv& o) { lo = std::min(lo, o.lo), hi = std::max(hi, o.hi); }
  bool empty() const { return lo > hi; }
  LD absmax() const { return std::max(fabsl(lo), fabsl(hi)); }
};
Iv Mul(const Iv& a, const Iv& b) {
  Iv r;
  for (LD x : {a.lo, a.hi})
    for (LD y : {b.lo, b.hi}) r.Add(x * y);
  return r;
}

int BinOf(LD t) { return std::min(kBins - 1, static_cast<int>((na::Mant(t) - 1) * kBins)); }

struct RBin {
  Iv eR, d3;   // r0 + rl = R* (1 + eR); r = fl(r0 + rl) = (r0 + rl)(1 + d3)
  LD rho = 0;  // max |rl| / |r0 + rl|
  void Merge(const RBin& o) { eR.Merge(o.eR), d3.Merge(o.d3), rho = std::max(rho, o.rho); }
};
struct FBin {
  Iv eF;     // factor = F* (1 + eF)
  Iv g;      // cos: q / C; sin: p / (1 + p)   (the coefficient of d3)
  LD G = 0;  // max |g|
  LD K = 0;  // cos: max kCm / C; sin: max 1 / (1 + p)
  void Merge(const FBin& o) {
    eF.Merge(o.eF), g.Merge(o.g), G = std::max(G, o.G), K = std::max(K, o.K);
  }
};

std::vector<RBin> g_r(kBins);
std::vector<FBin> g_cos(kBins), g_sin(kBins);
std::vector<LD> g_ctab(kA + 1), g_stab(kA + 1);  // C*(a 2^-21), S*(a 2^-21), a in [0, 2^21]

// Pass A: all u1 != 1.
void PassR() {
#pragma omp parallel
  {
    std::vector<RBin> loc(kBins);
#pragma omp for schedule(static)
    for (int64_t kk = 0; kk < (int64_t{1} << 24) - 1; ++kk) {
      const uint32_t k = static_cast<uint32_t>(kk);
      float r0, rl;
      SqrtPair(NegLogU1(na::WordR(k)), 0, &r0, &rl);
      const LD R = na::ExactR(k), P = static_cast<LD>(r0) + rl;
      const float r = AddRn(r0, rl);
      RBin& b = loc[BinOf(R)];
      b.eR.Add(P / R - 1);
      b.d3.Add(r / P - 1);
      b.rho = std::max(b.rho, fabsl(rl / P));
    }
#pragma omp critical
    for (int i = 0; i < kBins; ++i) g_r[i].Merge(loc[i]);
  }
}

// Pass B: all x = n 2^-21 (quadrant 0), and the tables.
void PassX() {
#pragma omp parallel
  {
    std::vector<FBin> lc(kBins), ls(kBins);
#pragma omp for schedule(static)
    for (int32_t n = -kA; n < kA; ++n) {
      const float x = AngleX(na::WordTheta(n) + 0x20000000u);
      const float s = MulRn(x, x), q = CosQ(s), p = SinS(s);
      const LD Cx = na::ExactC(n), Sx = na::ExactS(n);
      if (n <= 0) g_ctab[-n] = Cx, g_stab[-n] = -Sx;
      const LD C = static_cast<LD>(kCm) + q, S = static_cast<LD>(x) * (1 + static_cast<LD>(p));
      FBin& c = lc[BinOf(Cx)];
      c.eF.Add(C / Cx - 1);
      c.g.Add(q / C);
      c.G = std::max(c.G, fabsl(q / C));
      c.K = std::max(c.K, kCm / C);
      if (n == 0) continue;  // S* = 0: sn = 0 exactly (checked in PassZeros)
      FBin& sb = ls[BinOf(Sx)];
      sb.eF.Add(S / Sx - 1);
      const LD pp = p / (1 + static_cast<LD>(p));
      sb.g.Add(pp);
      sb.G = std::max(sb.G, fabsl(pp));
      sb.K = std::max(sb.K, 1 / (1 + static_cast<LD>(p)));
    }
#pragma omp critical
    for (int i = 0; i < kBins; ++i) g_cos[i].Merge(lc[i]), g_sin[i].Merge(ls[i]);
  }
  // Both tables must be strictly monotone in a (the window search relies on it).
  for (int32_t a = 0; a < kA; ++a) {
    if (!(g_ctab[a + 1] < g_ctab[a])) Fail("C* table not decreasing", a);
    if (!(g_stab[a + 1] > g_stab[a])) Fail("S* table not increasing", a);
  }
}

// Zeros and quadrants: u1 = 1 gives +-0 for every x; x = 0 gives sn = +-0 for every u1;
// quadrants 1..3 are exact negations / swaps of quadrant 0 (2^22 random pairs).
void PassZerosQuadrants() {
#pragma omp parallel for schedule(static)
  for (int32_t n = -kA; n < kA; ++n) {
    float z0, z1;
    BoxMuller(0xFFFFFF00u, na::WordTheta(n), &z0, &z1);
    if (z0 != 0 || z1 != 0) Fail("u1 = 1 not zero", n + kA);
  }
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < (int64_t{1} << 24); ++k) {
    float z0, z1;
    BoxMuller(na::WordR(static_cast<uint32_t>(k)), na::WordTheta(0), &z0, &z1);
    if (z1 != 0) Fail("x = 0: sn not zero", k);
  }
  std::mt19937_64 rng(7);
  std::vector<uint64_t> seeds(1 << 22);
  for (auto& s : seeds) s = rng();
#pragma omp parallel for schedule(static)
  for (int i = 0; i < (1 << 22); ++i) {
    const uint32_t wr = static_cast<uint32_t>(seeds[i]);
    const uint32_t w0 = static_cast<uint32_t>(seeds[i] >> 32) & 0x3FFFFFFFu;  // v quadrant 0
    const uint32_t t0 = w0 - 0x20000000u;                                     // w_theta with v = w0
    float c, sn;
    BoxMuller(wr, t0, &c, &sn);
    const uint32_t C = FloatBits(c), S = FloatBits(sn), N = 0x80000000u;
    const uint32_t want[4][2] = {{C, S}, {S ^ N, C}, {C ^ N, S ^ N}, {S, C ^ N}};
    for (uint32_t qd = 0; qd < 4; ++qd) {
      float z0, z1;
      BoxMuller(wr, t0 + (qd << 30), &z0, &z1);
      if (FloatBits(z0) != want[qd][0] || FloatBits(z1) != want[qd][1]) Fail("quadrant", i);
    }
  }
}

struct Worst {
  LD b = 0;  // pre-rounding bound, ulps
  int i = -1, j = -1;
  LD rel = 0, m = 0, inner = 0;  // relative part, max mant(z*), last inner rounding (ulps)
};

// Pass C over bins: the pre-rounding bound of one path, in ulps of z*.
// cos: c' = P C (1 + g d3) + e_a1 + e_a2, g = q / C, |e_a1| <= u rho K |P C| (K = kCm / C),
//      |a2| = |fl(r q + a1)| before rounding <= (1+u) (G + rho K) |P C| =: Y2;
// sin: sn' = P S (1 + g d3) + x e_b1 + e_b2, g = p / (1+p), |x e_b1| <= u ((1+u) G + rho K) |P S|
//      (K = 1 / (1+p)), |x fl(r p + rl)| before rounding <= (1+u)((1+u) G + rho K) |P S| =: Y2.
// The relative part is maximised over the corners of eR, eF and s = g d3 +- D (multilinear);
// the last inner rounding is at most half an ulp of Y2's binade: 2^(floor(log2 Y2') - 1)
// ulp(z*), Y2' = Y2 / 2^e(z*). A bin pair whose mantissa product straddles 2 is taken as
// two cases: z* in binade e with mant up to 2, or in binade e + 1 with mant up to phi / 2.
Worst BinBound(const std::vector<FBin>& fb, bool cos_path) {
  Worst best;
#pragma omp parallel
  {
    Worst loc;
#pragma omp for schedule(dynamic, 16)
    for (int i = 0; i < kBins; ++i) {
      const RBin& rb = g_r[i];
      if (rb.eR.empty()) continue;
      for (int j = 0; j < kBins; ++j) {
        const FBin& f = fb[j];
        if (f.eF.empty()) continue;
        const Iv t = Mul(f.g, rb.d3);
        const LD D = cos_path ? kU * rb.rho * f.K : kU * ((1 + kU) * f.G + rb.rho * f.K);
        const LD y2 =
            cos_path ? (1 + kU) * (f.G + rb.rho * f.K) : (1 + kU) * ((1 + kU) * f.G + rb.rho * f.K);
        const LD slo = t.lo - D, shi = t.hi + D;
        LD rel = 0;
        for (LD a : {rb.eR.lo - kSlack, rb.eR.hi + kSlack})
          for (LD b : {f.eF.lo - kSlack, f.eF.hi + kSlack})
            for (LD s : {slo, shi}) rel = std::max(rel, fabsl((1 + a) * (1 + b) * (1 + s) - 1));
        rel += kSlack;
        const LD grow = (1 + rb.eR.absmax() + kSlack) * (1 + f.eF.absmax() + kSlack);
        const LD plo = (1 + static_cast<LD>(i) / kBins) * (1 + static_cast<LD>(j) / kBins);
        const LD phi = (1 + static_cast<LD>(i + 1) / kBins) * (1 + static_cast<LD>(j + 1) / kBins);
        LD cases[2];
        int nc = 0;
        if (phi <= 2)
          cases[nc++] = phi;
        else if (plo >= 2)
          cases[nc++] = phi / 2;
        else
          cases[nc++] = 2, cases[nc++] = phi / 2;
        for (int c = 0; c < nc; ++c) {
          const LD m = cases[c];
          const LD inner = ldexpl(1.0L, ilogbl(y2 * grow * m) - 1);
          const LD bnd = rel * m * 0x1p23L + inner;
          if (bnd > loc.b) loc = Worst{bnd, i, j, rel, m, inner};
        }
      }
    }
#pragma omp critical
    if (loc.b > best.b) best = loc;
  }
  return best;
}

// First a in [0, A] with pred(a) true (pred monotone: false ... false true ... true), from
// an estimate; A + 1 if none. Exact for the table values: it only steps and compares.
template <typename Pred>
int32_t FirstTrue(Pred pred, double est) {
  int32_t a = static_cast<int32_t>(std::min<double>(std::max(est, 0.0), kA));
  while (a > 0 && pred(a - 1)) --a;
  while (a <= kA && !pred(a)) ++a;
  return a;
}

struct Enum {
  LD worst_c = 0, worst_s = 0;
  uint64_t pairs_c = 0, pairs_s = 0, ambiguous = 0;
  uint32_t wk_c = 0, wk_s = 0;
  int32_t wn_c = 0, wn_s = 0;
};

// Pass D: every pair whose exact z* lies in [2^E (1 - tau 2^-24), 2^E (1 + 2^-58)) for some
// E, measured directly.
Enum Windows(LD tau) {
  Enum total;
  const LD lo_f = 1 - (tau + 1e-3L) * kU, hi_f = 1 + 0x1p-58L;
  const double four_pi = 4 / M_PI, rs2 = 1 / M_SQRT2;
#pragma omp parallel
  {
    Enum e;
    auto measure = [&](uint32_t k, LD R, int32_t a, bool cos_path) {
      for (int32_t n : {a, -a}) {
        if (n == kA || (n == -a && a == 0)) continue;
        float z0, z1;
        BoxMuller(na::WordR(k), na::WordTheta(n), &z0, &z1);
        const LD zx = cos_path ? R * g_ctab[a] : (n >= 0 ? 1 : -1) * R * g_stab[a];
        const LD err = na::UlpErr(cos_path ? z0 : z1, zx);
        const LD m = na::Mant(zx);
        if (m < 1 + 0x1p-57L || m > 2 - 0x1p-57L) ++e.ambiguous;
        if (cos_path) {
          ++e.pairs_c;
          if (err > e.worst_c) e.worst_c = err, e.wk_c = k, e.wn_c = n;
        } else {
          ++e.pairs_s;
          if (err > e.worst_s) e.worst_s = err, e.wk_s = k, e.wn_s = n;
        }
      }
    };
#pragma omp for schedule(dynamic, 4096)
    for (int64_t kk = 0; kk < (int64_t{1} << 24) - 1; ++kk) {
      const uint32_t k = static_cast<uint32_t>(kk);
      const LD R = na::ExactR(k);
      const double Rd = static_cast<double>(R);
      // cos path: R C*(a), decreasing in a, in [R, R sqrt2].
      for (int E = ilogbl(R); E <= ilogbl(R * na::kSqrt2) + 1; ++E) {
        const LD lo = ldexpl(lo_f, E), hi = ldexpl(hi_f, E);
        if (hi <= R * g_ctab[kA] || lo > R * g_ctab[0]) continue;
        auto est = [&](LD y) {
          return four_pi * std::acos(std::min(1.0, static_cast<double>(y) / Rd * rs2)) * kA;
        };
        const int32_t a1 = FirstTrue([&](int32_t a) { return R * g_ctab[a] < hi; }, est(hi) - 1);
        const int32_t a2 = FirstTrue([&](int32_t a) { return R * g_ctab[a] < lo; }, est(lo) - 1);
        for (int32_t a = a1; a < a2; ++a) measure(k, R, a, true);
      }
      // sin path: R S*(a), increasing in a, in [0, R].
      for (int E = ilogbl(R * g_stab[1]); E <= ilogbl(R) + 1; ++E) {
        const LD lo = ldexpl(lo_f, E), hi = ldexpl(hi_f, E);
        if (hi <= R * g_stab[1] || lo > R * g_stab[kA]) continue;
        auto est = [&](LD y) {
          return four_pi * std::asin(std::min(1.0, static_cast<double>(y) / Rd * rs2)) * kA;
        };
        const int32_t b1 = FirstTrue([&](int32_t a) { return R * g_stab[a] >= lo; }, est(lo) - 1);
        const int32_t b2 = FirstTrue([&](int32_t a) { return R * g_stab[a] >= hi; }, est(hi) - 1);
        for (int32_t a = std::max(b1, 1); a < b2; ++a) measure(k, R, a, false);
      }
    }
#pragma omp critical
    {
      if (e.worst_c > total.worst_c)
        total.worst_c = e.worst_c, total.wk_c = e.wk_c, total.wn_c = e.wn_c;
      if (e.worst_s > total.worst_s)
        total.worst_s = e.worst_s, total.wk_s = e.wk_s, total.wn_s = e.wn_s;
      total.pairs_c += e.pairs_c, total.pairs_s += e.pairs_s, total.ambiguous += e.ambiguous;
    }
  }
  return total;
}

void PrintWorst(const char* name, const Worst& w, const std::vector<FBin>& fb) {
  const RBin& r = g_r[w.i];
  const FBin& f = fb[w.j];
  std::printf(
      "  %-4s B = %.6Lf ulp at R-bin %d (mant [%.5Lf, %.5Lf)), F-bin %d (mant [%.5Lf, "
      "%.5Lf)): relerr %.5Le = %.4Lf u, max mant(z*) %.5Lf, inner rounding %.4Lf ulp\n"
      "       eR in [%.3Le, %.3Le], eF in [%.3Le, %.3Le], rho %.3Le, d3 in [%.3Le, %.3Le], "
      "g in [%.4Lf, %.4Lf], K %.4Lf\n",
      name, w.b, w.i, 1 + static_cast<LD>(w.i) / kBins, 1 + static_cast<LD>(w.i + 1) / kBins, w.j,
      1 + static_cast<LD>(w.j) / kBins, 1 + static_cast<LD>(w.j + 1) / kBins, w.rel, w.rel / kU,
      w.m, w.inner, r.eR.lo, r.eR.hi, f.eF.lo, f.eF.hi, r.rho, r.d3.lo, r.d3.hi, f.g.lo, f.g.hi,
      f.K);
}

}  // namespace

int main() {
  na::Timer timer;
  std::printf("normal_accuracy bound: all 2^48 word pairs, %d x %d mantissa bins (%d threads)\n",
              kBins, kBins, omp_get_max_threads());
  PassR();
  PassX();
  const double t_ab = timer.Seconds();
  PassZerosQuadrants();
  const double t_z = timer.Seconds();
  const Worst wc = BinBound(g_cos, true), ws = BinBound(g_sin, false);
  const double t_bins = timer.Seconds();
  std::printf(
      "\n[%.1f s] exhaustive passes over u1 (2^24) and x (2^22); zeros and quadrants "
      "checked [%.1f s]\n",
      t_ab, t_z - t_ab);
  std::printf(
      "\npre-rounding bound B = max over bin pairs of relerr * max mant(z*) * 2^23 + inner "
      "[%.1f s]:\n",
      t_bins - t_z);
  PrintWorst("cos", wc, g_cos);
  PrintWorst("sin", ws, g_sin);
  const LD bmax = std::max(wc.b, ws.b);
  const LD tau = std::max<LD>(2, bmax);
  std::printf("  => outside the windows below: |z - z*| <= B + 0.5 ulp: cos %.6Lf, sin %.6Lf\n",
              wc.b + 0.5L, ws.b + 0.5L);

  const Enum en = Windows(tau);
  const double t_win = timer.Seconds();
  std::printf(
      "\nwindows: every pair with z* within tau = %.4Lf ulps below a power of two (and up "
      "to 2^-58 relative above it), measured directly [%.1f s]:\n",
      tau, t_win - t_bins);
  std::printf("  cos path: %" PRIu64 " pairs, max %.6Lf ulp (w_r >> 8 = %u, x = %d 2^-21)\n",
              en.pairs_c, en.worst_c, en.wk_c, en.wn_c);
  std::printf("  sin path: %" PRIu64 " pairs, max %.6Lf ulp (w_r >> 8 = %u, x = %d 2^-21)\n",
              en.pairs_s, en.worst_s, en.wk_s, en.wn_s);
  std::printf("  pairs with z* within 2^-57 of a power of two (binade ambiguous): %" PRIu64 "\n",
              en.ambiguous);
  if (en.ambiguous) Fail("ambiguous binade", en.ambiguous);
  if (bmax > tau) Fail("B exceeds tau", 0);

  const LD bc = std::max(wc.b + 0.5L, en.worst_c), bs = std::max(ws.b + 0.5L, en.worst_s);
  std::printf(
      "\nPROVEN: cos-path values within %.4Lf ulp, sin-path values within %.4Lf ulp;\n"
      "        z0 and z1 (each is either, by quadrant) within %.4Lf ulp of the exact "
      "r cos / r sin, for all 2^48 pairs of words.\n",
      bc, bs, std::max(bc, bs));
  std::printf("total time %.1f s; %s\n", timer.Seconds(),
              g_failures ? "FAILED" : "all checks passed");
  return g_failures ? 1 : 0;
}

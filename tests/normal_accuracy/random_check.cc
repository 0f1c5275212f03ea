// Random pairs of words: BoxMuller against the long double exact r cos / r sin (max and mean
// ulp error, fraction correctly rounded), and NormalFloatBlocks (philox_cpu.cc, AVX2 + FMA
// path where the CPU has it) bit-identical to SampleBlock + scalar BoxMuller in the layout of
// docs/counter-contract.md. README.md here.
//   random_check [N]   (N pairs, default 2e8)
// Exit status 1 on a mismatch or an error above the proven bound (1.75 ulp).
#include <omp.h>

#include <cinttypes>
#include <cstdlib>
#include <vector>

#include "tests/normal_accuracy/common.h"
#include "tf_ops/common/philox_cpu.h"

using namespace tf_onthefly;
using na::LD;

namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct Stats {
  LD max = 0, sum = 0;
  uint64_t n = 0, correct = 0;
  uint32_t wr = 0, wt = 0;
  void Add(float z, LD t, uint32_t a, uint32_t b) {
    const LD e = na::UlpErr(z, t);
    if (e > max) max = e, wr = a, wt = b;
    sum += e;
    ++n;
    correct += z == static_cast<float>(t);
  }
  void Merge(const Stats& o) {
    if (o.max > max) max = o.max, wr = o.wr, wt = o.wt;
    sum += o.sum, n += o.n, correct += o.correct;
  }
};

int Blocks() {
  const PhiloxKey keys[] = {DeriveKey(0, 0, 0, 0), DeriveKey(42, 7, 0, 3),
                            DeriveKey(0x123456789ull, 0xFEDCBAull, 1, 1ull << 40)};
  const uint64_t samples[] = {0, 1, 12345, (1ull << 32) + 17};
  const struct {
    uint32_t first;
    int64_t n;
  } ranges[] = {{0, 100003}, {5, 77}, {0xFFFFFF00u, 300}};
  uint64_t values = 0, mismatches = 0;
  for (const PhiloxKey& key : keys)
    for (uint64_t sample : samples)
      for (const auto& rg : ranges) {
        std::vector<float> got(4 * rg.n);
        NormalFloatBlocks(key, sample, rg.first, rg.n, got.data());
        for (int64_t i = 0; i < rg.n; ++i) {
          const Words4 w = SampleBlock(key, sample, rg.first + static_cast<uint32_t>(i));
          float want[4];
          BoxMuller(w.w0, w.w1, &want[0], &want[1]);
          BoxMuller(w.w2, w.w3, &want[2], &want[3]);
          for (int j = 0; j < 4; ++j) {
            ++values;
            if (FloatBits(got[4 * i + j]) != FloatBits(want[j])) ++mismatches;
          }
        }
      }
  std::printf(
      "NormalFloatBlocks vs SampleBlock + scalar BoxMuller (AVX2+FMA path: %s): "
      "%" PRIu64 " values, %" PRIu64 " mismatches\n",
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? "yes" : "no", values,
      mismatches);
  return mismatches ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? static_cast<int64_t>(std::atof(argv[1])) : 200000000;
  na::Timer timer;
  Stats s0, s1;
#pragma omp parallel
  {
    Stats l0, l1;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t r = SplitMix(static_cast<uint64_t>(i) ^ 0x5EEDull << 40);
      const uint32_t wr = static_cast<uint32_t>(r), wt = static_cast<uint32_t>(r >> 32);
      float z0, z1;
      BoxMuller(wr, wt, &z0, &z1);
      LD t0, t1;
      na::ExactZ(wr, wt, &t0, &t1);
      l0.Add(z0, t0, wr, wt);
      l1.Add(z1, t1, wr, wt);
    }
#pragma omp critical
    s0.Merge(l0), s1.Merge(l1);
  }
  Stats all = s0;
  all.Merge(s1);
  std::printf("normal_accuracy random_check: %" PRId64 " random word pairs (%d threads, %.1f s)\n",
              n, omp_get_max_threads(), timer.Seconds());
  for (const auto& [name, s] :
       {std::pair<const char*, const Stats&>{"z0", s0}, {"z1", s1}, {"both", all}})
    std::printf(
        "  %-4s max %.4Lf ulp (w_r 0x%08x, w_theta 0x%08x), mean %.4Lf ulp, correctly "
        "rounded %.3f %%\n",
        name, s.max, s.wr, s.wt, s.sum / s.n, 100.0 * s.correct / s.n);
  int rc = all.max > 1.75L ? 1 : 0;
  rc |= Blocks();
  std::printf("total time %.1f s; %s\n", timer.Seconds(), rc ? "FAILED" : "all checks passed");
  return rc;
}

// The CPU's bulk float16 conversion (philox_cpu.h's Float32ToFloat16: F16C where the CPU has
// it) against uniform.h's integer rule, on every finite float32, both rounding directions.
// Exit status 0 when they agree on all of them.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "tf_ops/common/float_env.h"
#include "tf_ops/common/philox_cpu.h"
#include "tf_ops/common/uniform.h"

int main() {
  using tf_onthefly::Rounding;
  const tf_onthefly::ScopedIeeeSubnormals ieee;  // as every CPU generator runs
  constexpr int64_t kChunk = 1 << 16;
  std::vector<float> src(kChunk);
  std::vector<uint16_t> near(kChunk), down(kChunk);
  uint64_t bad = 0, checked = 0;
  for (uint64_t start = 0; start < (uint64_t{1} << 32); start += kChunk) {
    int64_t n = 0;
    for (uint64_t b = start; b < start + kChunk; ++b) {
      if ((b & 0x7F800000u) == 0x7F800000u) continue;  // infinities and NaNs: not inputs
      src[n++] = tf_onthefly::BitsFloat(static_cast<uint32_t>(b));
    }
    tf_onthefly::Float32ToFloat16(src.data(), n, /*round_down=*/false, near.data());
    tf_onthefly::Float32ToFloat16(src.data(), n, /*round_down=*/true, down.data());
    for (int64_t i = 0; i < n; ++i) {
      const bool ok = near[i] == tf_onthefly::ToFloat16Bits<Rounding::kNearestEven>(src[i]) &&
                      down[i] == tf_onthefly::ToFloat16Bits<Rounding::kDown>(src[i]);
      if (!ok && ++bad <= 5)
        std::printf("mismatch at float32 bits 0x%08x\n", tf_onthefly::FloatBits(src[i]));
    }
    checked += n;
  }
  std::printf("float16 conversions: %" PRIu64 " finite float32 inputs, %" PRIu64 " mismatches\n",
              checked, bad);
  return bad == 0 ? 0 : 1;
}

#!/usr/bin/env bash
# A generator that draws from a stream id it did not declare (id >= kNumStreams) must not
# compile: keys exist only for declared streams, and an undeclared one would silently give
# every seed and step the same words. The control case, a declared stream, compiles.
set -euo pipefail
root=$TEST_SRCDIR/$TEST_WORKSPACE
cuda=$(dirname "$(find -L "$TEST_SRCDIR" -path '*third_party/gpus/cuda/include/cuda_runtime_api.h' | head -1)")
work=$(mktemp -d)
snippet() {
  cat > "$work/gen.cc" <<CC
#include "tf_ops/sdk/generator.h"
namespace sdk = tf_onthefly::sdk;
struct TwoStreams {
  struct Params {};
  static constexpr int kNumStreams = 2;
  static int64_t ItemsPerSample(const Params&) { return 1; }
  static void Generate(const Params&, const sdk::SampleRng<kNumStreams>& rng, int64_t,
                       const sdk::SampleOutputs& out) {
    *out.get<uint32_t>(0) = rng.Block(sdk::Stream<$1>{}, 0).w0;
  }
};
template void sdk::FillRowsCpu<TwoStreams>(const void*, const sdk::CallGeometry*,
                                           const sdk::Inputs*, const tf_onthefly::PhiloxKey*,
                                           int64_t, int64_t);
CC
  ${CXX:-g++} -std=c++17 -fsyntax-only -I"$root" -isystem "$cuda" "$work/gen.cc" 2>&1
}
snippet 1 >/dev/null || { echo "FAIL: a declared stream (id 1 of 2) does not compile:"; snippet 1; exit 1; }
if out=$(snippet 2); then
  echo "FAIL: stream id 2 of a generator with kNumStreams = 2 compiled"; exit 1
fi
echo "$out" | grep -q "stream id must be below the generator's kNumStreams" \
  || { echo "FAIL: not the SDK's message:"; echo "$out"; exit 1; }
echo "PASS: undeclared stream refused at compile time"

// Generators that exist to test the SDK itself, in a test-only op library
// (tests/sdk_test.py): a GPU-only launcher generator whose launch can be made to fail or to
// ask for too much scratch memory; a launcher generator whose kernels use CCCL (CUB block
// scan and radix sort, Thrust, libcudacxx) with a CPU implementation to compare with; a
// struct generator with one input row per sample; drift_walk's walks in the per-sample form.
#ifndef TF_ONTHEFLY_TESTS_SDK_OPS_SDK_TEST_GENERATORS_H_
#define TF_ONTHEFLY_TESTS_SDK_OPS_SDK_TEST_GENERATORS_H_

#include <algorithm>
#include <cstdint>

#include "tf_ops/drift_walk/drift_walk.h"
#include "tf_ops/sdk/generator.h"

namespace tf_onthefly {
namespace sdk_test {

// GpuOnlyFill: out[row] = the global sample index, from a kernel of its own; no CPU code.
struct FillParams {
  // 0: none; 1: an invalid launch configuration; 2: too much scratch memory (no ScratchBytes:
  // under XLA, from XLA's allocator); 3: more scratch than its ScratchBytes said (under XLA,
  // beyond the call's scratch buffer).
  int64_t fail;
};

// What a launch with fail = 3 asks for, and what its ScratchBytes says.
constexpr int64_t kFillScratchAsked = 4096;
constexpr int64_t kFillScratchSaid = 256;

struct GpuOnlyFillGen {
  using Params = FillParams;
  static constexpr int kNumStreams = 1;
  static cudaError_t Launch(const sdk::GpuCall<Params>& call);
  static int64_t ScratchBytes(const Params& p, int64_t) {
    return p.fail == 3 ? kFillScratchSaid : 0;
  }
};

// CcclSort: `length` random keys per sample (int32 in [0, 1000)), sorted ascending, and
// their inclusive prefix sums: a CUB block radix sort and block scan per sample, a Thrust
// transform and libcudacxx's cuda::std on the GPU; std::sort on the CPU.
constexpr int kSortThreads = 128;
constexpr int kSortItems = 4;
constexpr int64_t kSortLength = kSortThreads * kSortItems;

struct SortParams {
  int64_t unused;
};

struct CcclSortGen {
  using Params = SortParams;
  static constexpr int kNumStreams = 1;
  static constexpr sdk::Stream<0> kKeyStream{};
  static cudaError_t Launch(const sdk::GpuCall<Params>& call);

  OTF_HD static int32_t Key(Words4 w, int k) {
    return static_cast<int32_t>(UniformBelow(w[k], w[(k + 1) % 4], 1000));
  }
  static int64_t ItemsPerSample(const Params&) { return 1; }
  static void Generate(const Params&, const sdk::SampleRng<kNumStreams>& rng, int64_t,
                       const sdk::SampleOutputs& out) {
    int32_t* keys = out.get<int32_t>(0);
    int32_t* sums = out.get<int32_t>(1);
    for (int64_t b = 0; b < kSortLength / 4; ++b) {
      const Words4 w = rng.Block(kKeyStream, static_cast<uint32_t>(b));
      for (int k = 0; k < 4; ++k) keys[4 * b + k] = Key(w, k);
    }
    std::sort(keys, keys + kSortLength);
    int32_t sum = 0;
    for (int64_t i = 0; i < kSortLength; ++i) sums[i] = sum += keys[i];
  }
};

// AddRows: out[row] = in[row] + the sample's uniform [0, 1) words, for an input of one row
// of `width` floats per produced sample (sdk::kRows).
struct AddRowsParams {
  int64_t width;
};

struct AddRowsGen {
  using Params = AddRowsParams;
  static constexpr int kNumStreams = 1;
  OTF_HD static int64_t ItemsPerSample(const Params& p) { return p.width; }
  OTF_HD static void Generate(const Params&, const sdk::SampleRng<kNumStreams>& rng, int64_t item,
                              const sdk::SampleOutputs& out, const sdk::SampleInputs& in) {
    const Words4 w = rng.Block(sdk::Stream<0>{}, static_cast<uint32_t>(item / 4));
    out.get<float>(0)[item] = AddRn(in.row<float>(0)[item], UniformFloat(w[item % 4]));
  }
};

// PerSampleDriftWalk: drift_walk's generator with its launch taken away, so the SDK runs its
// Generate in the per-sample kernel (one thread walks one sample, step by step). The same
// walks as drift_walk's block-cooperative kernels, bit for bit (tests/sdk_test.py); the
// launcher benchmark times the two forms side by side.
struct PerSampleDriftWalkGen {
  using Params = drift_walk::Params;
  using Walk = drift_walk::DriftWalkGen;
  static constexpr int kNumStreams = Walk::kNumStreams;
  OTF_HD static int64_t ItemsPerSample(const Params& p) { return Walk::ItemsPerSample(p); }
  OTF_HD static void Generate(const Params& p, const sdk::SampleRng<kNumStreams>& rng, int64_t item,
                              const sdk::SampleOutputs& out, const sdk::SampleInputs& in) {
    Walk::Generate(p, rng, item, out, in);
  }
};

}  // namespace sdk_test
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_TESTS_SDK_OPS_SDK_TEST_GENERATORS_H_

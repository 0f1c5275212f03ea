// The generator SDK, device side: what a generator's per-item function sees. Shared by the
// CPU kernel (gcc), the GPU kernel (clang CUDA) and the XLA handlers; no TensorFlow headers.
//
// A generator is one struct (docs/writing-a-generator.md):
//
//   struct MyGen {
//     struct Params { ... };                      // POD: parsed attributes, copied to the GPU
//     static constexpr int kNumStreams = 2;       // independent random streams it draws from
//     static constexpr sdk::Stream<0> kXStream{};  // one tag per stream, ids below kNumStreams
//     // Work items per sample (>= 1); items of one sample may run on different threads.
//     OTF_HD static int64_t ItemsPerSample(const Params& p);
//     // Writes work item `item` of one sample into that sample's slice of each output.
//     OTF_HD static void Generate(const Params& p, const sdk::SampleRng<kNumStreams>& rng,
//                                 int64_t item, const sdk::SampleOutputs& out);
//   };
//
// Everything else (op registration, shape function, CPU, GPU and XLA kernels, launch,
// errors, Python wrapper) comes from the SDK: generator_op.h, generator_gpu.cu.h,
// generator_xla.h, python/tf_onthefly/_generator.py.
#ifndef TF_ONTHEFLY_SDK_GENERATOR_H_
#define TF_ONTHEFLY_SDK_GENERATOR_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "tf_ops/common/philox.h"
#include "tf_ops/common/uniform.h"

namespace tf_onthefly {
namespace sdk {

constexpr int kMaxOutputs = 4;
constexpr int kMaxStreams = 8;

// A random stream of a generator, named by a tag type so that SampleRng::Block can check
// at compile time that the id is one the generator declared (keys exist only for streams
// below kNumStreams).
template <int kId>
struct Stream {
  static_assert(kId >= 0 && kId < kMaxStreams, "stream ids are 0 .. kMaxStreams - 1");
  static constexpr int id = kId;
};

// The call's seed and step where the kernel runs: host memory for the CPU kernel and the
// XLA Host handler, device memory for the GPU kernel and the XLA CUDA handler. The Philox
// keys are derived from them on the device that uses them, so no value of seed or step is
// ever needed on the host to launch a GPU kernel (a step that lives on the GPU never
// travels). seed holds seed_size (1 or 2) int64 words; a scalar s means the pair (s, 0).
struct SeedAndStep {
  const int64_t* seed;
  int64_t seed_size;
  const int64_t* step;
};

// The key of `stream` for this call (docs/counter-contract.md, key derivation).
OTF_HD PhiloxKey StreamKey(const SeedAndStep& in, int stream) {
  const uint64_t s0 = static_cast<uint64_t>(in.seed[0]);
  const uint64_t s1 = in.seed_size == 2 ? static_cast<uint64_t>(in.seed[1]) : 0;
  return DeriveKey(s0, s1, static_cast<uint32_t>(stream), static_cast<uint64_t>(*in.step));
}

// The random words of one sample: stream S, block b -> four 32-bit words, a pure function
// of (seed, S, step, global sample index, b) (docs/counter-contract.md).
template <int kNumStreams>
class SampleRng {
  static_assert(kNumStreams >= 1 && kNumStreams <= kMaxStreams,
                "a generator draws from 1 .. kMaxStreams streams");

 public:
  OTF_HD SampleRng(const PhiloxKey* keys, uint64_t sample) : keys_(keys), sample_(sample) {}
  OTF_HD uint64_t sample() const { return sample_; }

  template <int kId>
  OTF_HD PhiloxKey key(Stream<kId>) const {
    static_assert(kId < kNumStreams, "stream id must be below the generator's kNumStreams");
    return keys_[kId];
  }
  template <int kId>
  OTF_HD Words4 Block(Stream<kId> stream, uint32_t block) const {
    return SampleBlock(key(stream), sample_, block);
  }

 private:
  const PhiloxKey* keys_;
  uint64_t sample_;
};

// One call's geometry, computed on the host: which rows, and where each output lives.
struct CallGeometry {
  int64_t num_samples;                // rows produced by this call
  int64_t first_sample;               // global index of row 0
  void* base[kMaxOutputs];            // the output buffers TensorFlow or XLA allocated
  int64_t sample_bytes[kMaxOutputs];  // bytes of one sample in each output
};

// One sample's slice of each output, in declaration order. The address is computed when
// asked for, so an item that writes one output pays for one multiply, not kMaxOutputs.
class SampleOutputs {
 public:
  OTF_HD SampleOutputs(const CallGeometry& g, int64_t row) : g_(g), row_(row) {}
  template <typename T>
  OTF_HD T* get(int i) const {
    return reinterpret_cast<T*>(static_cast<char*>(g_.base[i]) + row_ * g_.sample_bytes[i]);
  }

 private:
  const CallGeometry& g_;
  int64_t row_;
};

// Optional GPU kernel variants: a generator whose Generate branches on Params in ways that
// cost its inner loop (the kernel is issue-bound) may also define
//   static constexpr int kNumVariants = N;                  // >= 2
//   OTF_HD static int Variant(const Params&);                // 0 .. N-1, per call
//   template <int V> OTF_HD static void GenerateVariant(...)  // Generate's arguments
// The GPU gets one kernel per variant, picked per call by Variant(p); every variant must
// write exactly what Generate writes for the Params it is picked for (the CPU runs
// Generate, and the CPU == GPU tests compare them).
template <typename Gen, typename = void>
struct NumVariants : std::integral_constant<int, 1> {};
template <typename Gen>
struct NumVariants<Gen, std::void_t<decltype(Gen::kNumVariants)>>
    : std::integral_constant<int, Gen::kNumVariants> {};

template <typename Gen>
int VariantOf(const typename Gen::Params& p) {
  if constexpr (NumVariants<Gen>::value > 1) {
    return Gen::Variant(p);
  } else {
    return 0;
  }
}

// Runs work item `item` of row `row` with variant V: the body the CPU loop and the GPU
// kernel share.
template <typename Gen, int V = 0>
OTF_HD void RunItem(const typename Gen::Params& p, const CallGeometry& g, const PhiloxKey* keys,
                    int64_t row, int64_t item) {
  const SampleRng<Gen::kNumStreams> rng(keys, static_cast<uint64_t>(g.first_sample + row));
  if constexpr (NumVariants<Gen>::value > 1) {
    Gen::template GenerateVariant<V>(p, rng, item, SampleOutputs(g, row));
  } else {
    Gen::Generate(p, rng, item, SampleOutputs(g, row));
  }
}

// Items one GPU thread runs per grid-stride step, given the items per sample: as many as
// keep each of the thread's stores next to its neighbours' (at least two work units per
// sample). Four items of a row of four in one thread would store 16 contiguous bytes per
// thread and lose coalescing; four items spaced a quarter row apart keep it.
OTF_HD constexpr int ItemsPerThread(int64_t items_per_sample) {
  return items_per_sample >= 8 ? 4 : items_per_sample >= 4 ? 2 : 1;
}

#if !defined(__CUDACC__)
// Whether Gen has the optional CPU whole-sample path
//   static bool GenerateSampleCpu(const Params&, const SampleRng<kNumStreams>&,
//                                 const SampleOutputs&);
// which writes exactly what its items would (the same golden values test both), or returns
// false to have the items run.
template <typename Gen, typename = void>
struct HasSampleCpu : std::false_type {};
template <typename Gen>
struct HasSampleCpu<Gen, std::void_t<decltype(Gen::GenerateSampleCpu(
                             std::declval<const typename Gen::Params&>(),
                             std::declval<const SampleRng<Gen::kNumStreams>&>(),
                             std::declval<const SampleOutputs&>()))>> : std::true_type {};

// Rows [begin, end) of a call on the CPU, with the call's stream keys (StreamKey of every
// stream). The TF kernel shards rows over its thread pool, the XLA Host handler over XLA's.
template <typename Gen>
void FillRowsCpu(const typename Gen::Params& p, const CallGeometry& g, const PhiloxKey* keys,
                 int64_t begin, int64_t end) {
  const int64_t items = Gen::ItemsPerSample(p);
  for (int64_t row = begin; row < end; ++row) {
    if constexpr (HasSampleCpu<Gen>::value) {
      const SampleRng<Gen::kNumStreams> rng(keys, static_cast<uint64_t>(g.first_sample + row));
      if (Gen::GenerateSampleCpu(p, rng, SampleOutputs(g, row))) continue;
    }
    for (int64_t item = 0; item < items; ++item) RunItem<Gen>(p, g, keys, row, item);
  }
}
#endif

// The GPU launcher, defined for each generator by OTF_DEFINE_GPU_GENERATOR in its .cu.cc
// (generator_gpu.cu.h): launches the generator's kernel on `stream` and returns the
// launch's error. The op kernel (generator_op.h) and the XLA CUDA handler
// (generator_xla.h) turn a failure into an error that names the op.
template <typename Gen>
cudaError_t LaunchGenerator(const typename Gen::Params& p, const CallGeometry& g,
                            const SeedAndStep& in, cudaStream_t stream);

}  // namespace sdk
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_SDK_GENERATOR_H_

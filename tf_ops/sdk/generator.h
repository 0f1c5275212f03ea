// The generator SDK, device side: what a generator's per-item function sees. Shared by the
// CPU kernel (gcc) and the GPU kernel (clang CUDA); no TensorFlow headers.
//
// A generator is one struct (docs/writing-a-generator.md):
//
//   struct MyGen {
//     struct Params { ... };                 // POD: parsed attributes, copied to the GPU
//     static constexpr int kNumStreams = 2;  // independent random streams it draws from
//     // Work items per sample (>= 1); items of one sample may run on different threads.
//     OTF_HD static int64_t ItemsPerSample(const Params& p);
//     // Writes work item `item` of one sample into that sample's slice of each output.
//     OTF_HD static void Generate(const Params& p, const sdk::SampleRng& rng, int64_t item,
//                                 const sdk::SampleOutputs& out);
//   };
//
// Everything else (op registration, shape function, CPU and GPU kernels, launch, errors,
// Python wrapper) comes from the SDK: generator_op.h, generator_gpu.cu.h, _generator.py.
#ifndef TF_ONTHEFLY_SDK_GENERATOR_H_
#define TF_ONTHEFLY_SDK_GENERATOR_H_

#include <cstdint>

#include "tf_ops/common/philox.h"
#include "tf_ops/common/uniform.h"

namespace tf_onthefly {
namespace sdk {

constexpr int kMaxOutputs = 4;
constexpr int kMaxStreams = 8;

// The random words of one sample: stream s, block b -> four 32-bit words, a pure function
// of (seed, s, step, global sample index, b) (docs/counter-contract.md).
class SampleRng {
 public:
  OTF_HD SampleRng(const PhiloxKey* keys, uint64_t sample) : keys_(keys), sample_(sample) {}
  OTF_HD uint64_t sample() const { return sample_; }
  OTF_HD PhiloxKey key(int stream) const { return keys_[stream]; }
  OTF_HD Words4 Block(int stream, uint32_t block) const {
    return SampleBlock(keys_[stream], sample_, block);
  }

 private:
  const PhiloxKey* keys_;
  uint64_t sample_;
};

// One call's geometry, computed on the host (generator_op.h).
struct CallGeometry {
  int64_t num_samples;                // rows produced by this call
  int64_t first_sample;               // global index of row 0
  int num_outputs;
  void* base[kMaxOutputs];            // output buffers TensorFlow allocated
  int64_t sample_bytes[kMaxOutputs];  // bytes of one sample in each output
  PhiloxKey keys[kMaxStreams];        // key of each stream for this (seed, step)
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

// Runs work item `item` of row `row`: the body shared by the CPU loop and the GPU kernel.
// A generator may also define a CPU-only whole-sample fast path (generator_op.h,
// docs/writing-a-generator.md):
//   static bool GenerateSampleCpu(const Params&, const SampleRng&, const SampleOutputs&);
// which writes exactly what its items would, or returns false to have the items run.
template <typename Gen>
OTF_HD void RunItem(const typename Gen::Params& p, const CallGeometry& g, int64_t row,
                    int64_t item) {
  Gen::Generate(p, SampleRng(g.keys, static_cast<uint64_t>(g.first_sample + row)), item,
                SampleOutputs(g, row));
}

// Items one GPU thread runs per grid-stride step, given the items per sample: as many as
// keep each of the thread's stores next to its neighbours' (at least two work units per
// sample). Measured on the H200 (docs/benchmarks.md): 4 beats 1 by 7-24 % on long rows,
// while 4 items of a 4-item row in one thread (16 contiguous bytes per store each) runs at
// a third of the speed.
OTF_HD constexpr int ItemsPerThread(int64_t items_per_sample) {
  return items_per_sample >= 8 ? 4 : items_per_sample >= 4 ? 2 : 1;
}

// Optional GPU kernel variants: a generator whose Generate branches on Params in ways that
// cost its inner loop (the kernel is issue-bound) may also define
//   static constexpr int kNumVariants = N;                  // >= 2
//   OTF_HD static int Variant(const Params&);                // 0 .. N-1, per call
//   template <int V> OTF_HD static void GenerateVariant(...)  // Generate's arguments
// The GPU gets one kernel per variant, picked per call by Variant(p); every variant must
// write exactly what Generate writes for the Params it is picked for (the CPU runs
// Generate). random_batch's [0, 1) variant: 3.81 vs 3.38 TB/s.

// GPU launcher, defined for each generator by OTF_DEFINE_GPU_GENERATOR in its .cu.cc:
// returns a cudaError_t as int (0 = success).
template <typename Gen>
int LaunchGenerator(const typename Gen::Params& p, const CallGeometry& g, void* stream);

}  // namespace sdk
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_SDK_GENERATOR_H_

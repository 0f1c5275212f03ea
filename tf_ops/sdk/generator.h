// The generator SDK, device side: what a generator's code sees. Shared by the CPU kernel
// (gcc), the GPU kernels (clang CUDA) and the XLA handlers; no TensorFlow headers.
//
// A generator is one struct (docs/writing-a-generator.md) in one of two forms.
//
// A struct generator: the SDK launches its own grid-stride kernel over work items.
//
//   struct MyGen {
//     struct Params { ... };                      // POD: parsed attributes, copied to the GPU
//     static constexpr int kNumStreams = 2;       // independent random streams it draws from
//     static constexpr sdk::Stream<0> kXStream{};  // one tag per stream, ids below kNumStreams
//     // Work items per sample (>= 1); items of one sample may run on different threads.
//     OTF_HD static int64_t ItemsPerSample(const Params& p);
//     // Writes work item `item` of one sample into that sample's slice of each output; a
//     // generator with tensor inputs takes a fifth argument, const sdk::SampleInputs&.
//     OTF_HD static void Generate(const Params& p, const sdk::SampleRng<kNumStreams>& rng,
//                                 int64_t item, const sdk::SampleOutputs& out);
//   };
//
// A launcher generator: the struct brings its own GPU launch (any grid, block size, shared
// memory, CUB, several kernels, scratch memory) and, optionally, a CPU implementation in
// the struct form's ItemsPerSample/Generate (which then run on the CPU and under XLA's Host
// handler only). Without one, the op is GPU-only and refuses, naming itself, to run on a CPU.
//
//   struct MyLauncherGen {
//     struct Params { ... };
//     static constexpr int kNumStreams = 1;
//     // Defined in the generator's .cu.cc: launches the generator's kernels on call.stream
//     // and returns the first error (the SDK also checks cudaGetLastError afterwards).
//     static cudaError_t Launch(const sdk::GpuCall<Params>& call);
//     // Optional: XLA may record the launch into a CUDA graph (default false; see
//     // CommandBufferCompatible).
//     static constexpr bool kCommandBufferCompatible = true;
//     // Optional, for a launch that asks for scratch memory, defined in the .cu.cc next to
//     // Launch (so CUB's size queries can be used): the most scratch one call of `rows` rows
//     // asks for, as the sum of AlignScratch(bytes) over its Allocate calls. Under XLA on a
//     // GPU the scratch is then a buffer sized when the op is compiled (ScratchBytes).
//     static int64_t ScratchBytes(const Params& p, int64_t rows);
//   };
//
// Everything else (the op's spec and attribute checks, CPU and GPU runs, XLA handlers,
// input checks, errors; each framework's op, shape function and Python wrapper) comes from
// the SDK (generator_def.h, generator_gpu.cu.h, generator_xla_ffi.h) and the framework's
// front end over the core (tf_ops/tensorflow/ for TensorFlow).
//
// The counter contract (docs/counter-contract.md) for a kernel of your own: derive each
// stream's key on the device with StreamKey(call.seed_and_step, stream), and draw every
// random number with SampleBlock(key, global sample index, block) where the global sample
// index is FirstGlobalSample(call.seed_and_step, call.geometry.first_sample) + the row you
// write (read once per block, on the device). Key by the global sample index, never by
// thread id, block id or grid size: then the batch is the same on every device, for every
// grid, and for every split of the batch over replicas.
#ifndef TF_ONTHEFLY_SDK_GENERATOR_H_
#define TF_ONTHEFLY_SDK_GENERATOR_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "tf_ops/common/philox.h"
#include "tf_ops/common/uniform.h"
#if !defined(__CUDACC__)
#include "tf_ops/common/float_env.h"
#endif

namespace tf_onthefly {
namespace sdk {

constexpr int kMaxOutputs = 4;
constexpr int kMaxInputs = 4;
constexpr int kMaxInputRank = 4;
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
// sample_offset (nullable, in the same memory as seed) adds to the call's first_sample: a
// shard's first sample that exists only where the kernel runs (JAX's shard_map gives it as
// a traced value); TensorFlow passes null, its first_sample being a host value.
struct SeedAndStep {
  const int64_t* seed;
  int64_t seed_size;
  const int64_t* step;
  const int64_t* sample_offset;
};

// The global sample index of row 0 of a call whose geometry says `first_sample`: what every
// kernel keys its samples by (row r is sample FirstGlobalSample(...) + r). A kernel of your
// own reads it once per block, on the device, as it derives its keys.
OTF_HD int64_t FirstGlobalSample(const SeedAndStep& in, int64_t first_sample) {
  return first_sample + (in.sample_offset != nullptr ? *in.sample_offset : 0);
}

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

// The generator's own tensor inputs for one call, in the op's input order after seed, step
// and first_sample, where the kernel runs: host memory on the CPU and in XLA's Host
// handler, device memory on the GPU and in XLA's CUDA handler. Their shapes were checked
// against the Config's rules (generator_config.h) before any kernel runs.
struct Inputs {
  int count = 0;
  const void* data[kMaxInputs] = {};
  int rank[kMaxInputs] = {};
  int64_t dims[kMaxInputs][kMaxInputRank] = {};

  template <typename T>
  OTF_HD const T* get(int i) const {
    return static_cast<const T*>(data[i]);
  }
  OTF_HD int64_t dim(int i, int d) const { return dims[i][d]; }
  // Elements of input i.
  OTF_HD int64_t size(int i) const {
    int64_t n = 1;
    for (int d = 0; d < rank[i]; ++d) n *= dims[i][d];
    return n;
  }
};

// One call's geometry, computed on the host: the global batch, which rows this call
// produces, and where each output lives.
struct CallGeometry {
  int64_t batch_size;                 // samples in the step's global batch
  int64_t num_samples;                // rows produced by this call
  int64_t first_sample;               // global index of row 0
  void* base[kMaxOutputs];            // the output buffers TensorFlow or XLA allocated
  int64_t sample_bytes[kMaxOutputs];  // bytes of one sample in each output

  template <typename T>
  OTF_HD T* output(int i) const {
    return static_cast<T*>(base[i]);
  }
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
  OTF_HD int64_t row() const { return row_; }

 private:
  const CallGeometry& g_;
  int64_t row_;
};

// Generate's view of the inputs for one sample: a whole input, or this sample's row of an
// input whose first dimension is the call's rows (a Config rule of sdk::kRows).
class SampleInputs {
 public:
  OTF_HD SampleInputs(const Inputs& in, int64_t row) : in_(in), row_(row) {}
  template <typename T>
  OTF_HD const T* get(int i) const {
    return in_.get<T>(i);
  }
  template <typename T>
  OTF_HD const T* row(int i) const {
    return in_.get<T>(i) + row_ * (in_.size(i) / in_.dim(i, 0));
  }
  OTF_HD int64_t dim(int i, int d) const { return in_.dim(i, d); }
  OTF_HD int64_t size(int i) const { return in_.size(i); }

 private:
  const Inputs& in_;
  int64_t row_;
};

// Device memory a launcher generator may ask for during its launch, for work of that launch
// only: stream-ordered on the call's stream (TensorFlow's allocate_temp; under XLA, a buffer
// of the call sized by the generator's ScratchBytes, else XLA's scratch allocator; the
// caller's buffer in the core's C API), so it may be reused once the launch's work on the
// stream is done. Returns nullptr when it cannot be given; the SDK then reports the refusal
// with the op's name and the bytes asked, whatever the launch returns.
class ScratchAllocator {
 public:
  using AllocateFn = void* (*)(void* context, int64_t bytes);
  ScratchAllocator(AllocateFn allocate, void* context) : allocate_(allocate), context_(context) {}
  void* Allocate(int64_t bytes) const { return allocate_(context_, bytes); }
  template <typename T>
  T* Allocate(int64_t count) const {
    return static_cast<T*>(Allocate(count * static_cast<int64_t>(sizeof(T))));
  }

 private:
  AllocateFn allocate_;
  void* context_;
};

// Scratch sizes are counted in whole 256-byte units: every Allocate returns memory aligned
// to 256 bytes. ScratchBytes (above) returns the sum of AlignScratch over a call's requests.
constexpr int64_t kScratchAlignment = 256;
constexpr int64_t AlignScratch(int64_t bytes) {
  return (bytes + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment;
}
// Below this many output bytes a CPU call runs on the calling thread alone (XLA's Host
// handler, the PyTorch op library): starting threads costs more than it saves.
constexpr int64_t kHostParallelBytes = int64_t{1} << 18;

// The size of a BufferScratch buffer that serves `scratch_bytes` (a ScratchBytes result)
// wherever the buffer starts: one alignment unit more.
constexpr int64_t ScratchBufferBytes(int64_t scratch_bytes) {
  return scratch_bytes > 0 ? scratch_bytes + kScratchAlignment : 0;
}

// Scratch served from one buffer given up front (the XLA CUDA handler's scratch result, the
// caller's buffer of the core's C API): each request aligned to 256 bytes, in turn, until
// the buffer is used up. A refusal is kept, with the bytes asked and what was left.
struct BufferScratch {
  char* base;
  int64_t size;
  int64_t used = 0;
  int64_t refused_bytes = -1, left_bytes = 0;

  static void* Allocate(void* self, int64_t bytes) {
    auto* s = static_cast<BufferScratch*>(self);
    const uintptr_t base = reinterpret_cast<uintptr_t>(s->base);
    const int64_t skip = static_cast<int64_t>(
        (kScratchAlignment - (base + s->used) % kScratchAlignment) % kScratchAlignment);
    const int64_t left = s->size - s->used - skip;
    if (bytes < 0 || s->base == nullptr || bytes > left) {
      if (s->refused_bytes < 0) {
        s->refused_bytes = bytes;
        s->left_bytes = left > 0 ? left : 0;
      }
      return nullptr;
    }
    void* p = s->base + s->used + skip;
    s->used += skip + bytes;
    return p;
  }
};

// Everything one GPU call hands a launcher generator: its Params, geometry and outputs, the
// seed and step and the inputs in device memory, the stream to launch on (TensorFlow's, or
// XLA's under jit_compile) and a scratch allocator.
template <typename Params>
struct GpuCall {
  const Params& params;
  const CallGeometry& geometry;
  const SeedAndStep& seed_and_step;
  const Inputs& inputs;
  cudaStream_t stream;
  const ScratchAllocator& scratch;
};

// The same call as the core and the front ends pass it to a generator's GPU entry point
// (LaunchGenerator, below): the Params as bytes, everything else by address.
struct GpuLaunchArgs {
  const void* params;
  const CallGeometry* geometry;
  const SeedAndStep* seed_and_step;
  const Inputs* inputs;
  cudaStream_t stream;
  const ScratchAllocator* scratch;
};

// A call of several steps (TensorFlow's ops with a step vector of shape [n]): its outputs
// hold the n steps' batches one after another ([n, rows, ...]), each the batch a one-step
// call of that step writes. Step k of such a call, as a one-step call: its step word and
// its outputs' slices.
OTF_HD CallGeometry StepGeometry(const CallGeometry& g, int64_t k) {
  CallGeometry s = g;
  for (int i = 0; i < kMaxOutputs; ++i) {
    if (s.base[i] != nullptr)
      s.base[i] = static_cast<char*>(s.base[i]) + k * g.num_samples * g.sample_bytes[i];
  }
  return s;
}
OTF_HD SeedAndStep StepSeedAndStep(const SeedAndStep& in, int64_t k) {
  SeedAndStep s = in;
  s.step += k;
  return s;
}

// A call of num_steps steps launched a step at a time: `launch`, a one-step GPU entry point
// (LaunchGenerator), once for each step's call. Stops at the first error.
inline cudaError_t LaunchEachStep(cudaError_t (*launch)(const GpuLaunchArgs*),
                                  const GpuLaunchArgs& call, int64_t num_steps) {
  for (int64_t k = 0; k < num_steps; ++k) {
    const CallGeometry g = StepGeometry(*call.geometry, k);
    const SeedAndStep seed_step = StepSeedAndStep(*call.seed_and_step, k);
    const GpuLaunchArgs step{call.params, &g, &seed_step, call.inputs, call.stream, call.scratch};
    const cudaError_t err = launch(&step);
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

// Whether Gen is a launcher generator (it defines Launch).
template <typename Gen, typename = void>
struct HasGpuLaunch : std::false_type {};
template <typename Gen>
struct HasGpuLaunch<
    Gen, std::void_t<decltype(Gen::Launch(std::declval<const GpuCall<typename Gen::Params>&>()))>>
    : std::true_type {};

// Whether Gen has a CPU implementation: the struct form's ItemsPerSample and Generate.
template <typename Gen, typename = void>
struct HasCpu : std::false_type {};
template <typename Gen>
struct HasCpu<
    Gen, std::void_t<decltype(Gen::ItemsPerSample(std::declval<const typename Gen::Params&>()))>>
    : std::true_type {};

// Whether Gen says how much scratch memory a call asks for (ScratchBytes).
template <typename Gen, typename = void>
struct HasScratchBytes : std::false_type {};
template <typename Gen>
struct HasScratchBytes<Gen, std::void_t<decltype(Gen::ScratchBytes(
                                std::declval<const typename Gen::Params&>(), int64_t{0}))>>
    : std::true_type {};

// Whether XLA may record Gen's GPU launch into a CUDA graph with the fusions around it
// (XLA command buffers). The SDK's own kernel may: it only launches on the given stream and
// touches no memory but its buffers. A launcher generator may only if it says so
// (kCommandBufferCompatible = true): its launch must then not synchronise, query or
// allocate outside the scratch allocator, and must launch the same work on every call.
template <typename Gen, typename = void>
struct CommandBufferCompatible : std::bool_constant<!HasGpuLaunch<Gen>::value> {};
template <typename Gen>
struct CommandBufferCompatible<Gen, std::void_t<decltype(Gen::kCommandBufferCompatible)>>
    : std::bool_constant<Gen::kCommandBufferCompatible> {};

// Whether Gen's Generate takes the inputs (a fifth argument).
template <typename Gen, typename = void>
struct TakesInputs : std::false_type {};
template <typename Gen>
struct TakesInputs<Gen,
                   std::void_t<decltype(Gen::Generate(
                       std::declval<const typename Gen::Params&>(),
                       std::declval<const SampleRng<Gen::kNumStreams>&>(), int64_t{0},
                       std::declval<const SampleOutputs&>(), std::declval<const SampleInputs&>()))>>
    : std::true_type {};

// Optional GPU kernel variants of a struct generator whose Generate branches on Params in
// ways that cost its inner loop (the kernel is issue-bound):
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

// Optional, for a struct generator without tensor inputs whose items are arithmetic-bound
// (normals): K items of one sample in one call,
//   template <int V, int K>
//   OTF_HD static void GenerateItems(const Params&, const SampleRng<kNumStreams>&,
//                                    int64_t first_item, int64_t item_stride,
//                                    const SampleOutputs&);
// writing items first_item + k * item_stride, k < K (all below ItemsPerSample), exactly as
// Generate writes each (V: the kernel variant, 0 on the CPU and without variants). Written
// as "draw every item's words, compute every item's values, then store them", its K items
// are independent instruction streams a GPU thread interleaves, where K calls of Generate
// run one after another (each item's branches and stores end the scheduler's view). The
// GPU kernel calls it for its K items per thread (ItemsPerThread) when all K are in range,
// and with K = 1 otherwise; the CPU for runs of kCpuItems consecutive items, so the CPU
// tests and golden values run the same code.
template <typename Gen, typename = void>
struct HasGenerateItems : std::false_type {};
template <typename Gen>
struct HasGenerateItems<Gen, std::void_t<decltype(Gen::template GenerateItems<0, 1>(
                                 std::declval<const typename Gen::Params&>(),
                                 std::declval<const SampleRng<Gen::kNumStreams>&>(), int64_t{0},
                                 int64_t{1}, std::declval<const SampleOutputs&>()))>>
    : std::true_type {};

// Stores blocks first + k * stride (k < K) of four values each into a row of n values:
// block b is values 4b .. 4b + 3, those below n. `whole`: n is a multiple of 4 and the row
// starts 16-byte aligned (for 16-bit values, 8-byte), so a GPU stores each block as one
// vector.
#if defined(__CUDA_ARCH__)
OTF_HD void StoreVector4(float* dst, const float (&v)[4]) {
  *reinterpret_cast<float4*>(dst) = make_float4(v[0], v[1], v[2], v[3]);
}
OTF_HD void StoreVector4(uint16_t* dst, const uint16_t (&v)[4]) {
  *reinterpret_cast<uint2*>(dst) = make_uint2(v[0] | (static_cast<uint32_t>(v[1]) << 16),
                                              v[2] | (static_cast<uint32_t>(v[3]) << 16));
}
#endif
template <int K, typename T>
OTF_HD void StoreBlocks4(T* row, int64_t n, bool whole, int64_t first, int64_t stride,
                         const T (&v)[K][4]) {
#if defined(__CUDA_ARCH__)
  if (whole) {
    OTF_UNROLL
    for (int k = 0; k < K; ++k) StoreVector4(row + 4 * (first + k * stride), v[k]);
    return;
  }
#endif
  OTF_UNROLL
  for (int k = 0; k < K; ++k) {
    const int64_t at = 4 * (first + k * stride);
    for (int i = 0; i < 4 && at + i < n; ++i) row[at + i] = v[k][i];
  }
}

// Items per GenerateItems call on the CPU.
constexpr int kCpuItems = 4;

// Runs work item `item` of row `row` with variant V: the body the CPU loop and the GPU
// kernel share. `first` is the global sample index of row 0 (FirstGlobalSample).
template <typename Gen, int V = 0>
OTF_HD void RunItem(const typename Gen::Params& p, const CallGeometry& g, const Inputs& in,
                    const PhiloxKey* keys, int64_t first, int64_t row, int64_t item) {
  const SampleRng<Gen::kNumStreams> rng(keys, static_cast<uint64_t>(first + row));
  const SampleOutputs out(g, row);
  if constexpr (HasGenerateItems<Gen>::value) {
    Gen::template GenerateItems<V, 1>(p, rng, item, 1, out);
  } else if constexpr (TakesInputs<Gen>::value) {
    const SampleInputs sample_in(in, row);
    if constexpr (NumVariants<Gen>::value > 1) {
      Gen::template GenerateVariant<V>(p, rng, item, out, sample_in);
    } else {
      Gen::Generate(p, rng, item, out, sample_in);
    }
  } else if constexpr (NumVariants<Gen>::value > 1) {
    Gen::template GenerateVariant<V>(p, rng, item, out);
  } else {
    Gen::Generate(p, rng, item, out);
  }
}

// Runs items first_item + k * item_stride, k < K, of row `row` through GenerateItems.
template <typename Gen, int V, int K>
OTF_HD void RunItems(const typename Gen::Params& p, const CallGeometry& g, const PhiloxKey* keys,
                     int64_t first, int64_t row, int64_t first_item, int64_t item_stride) {
  const SampleRng<Gen::kNumStreams> rng(keys, static_cast<uint64_t>(first + row));
  Gen::template GenerateItems<V, K>(p, rng, first_item, item_stride, SampleOutputs(g, row));
}

// One work unit of the GPU kernel (generator_gpu.cu.h): items group + k * groups_per_sample,
// k < K, of row `row` (global sample first + row), those below items_per_sample; through
// one GenerateItems call when all K exist. Index: the kernel's index type (uint32_t or int64_t).
// Host code may run it too, to check a generator's units against its items
// (tests/kernel_units_test.cc).
template <typename Gen, int V, int K, typename Index>
OTF_HD void RunUnit(const typename Gen::Params& p, const CallGeometry& g, const Inputs& in,
                    const PhiloxKey* keys, int64_t first, Index row, Index group,
                    Index items_per_sample, Index groups_per_sample) {
  if constexpr (HasGenerateItems<Gen>::value && K > 1) {
    if (group + (K - 1) * groups_per_sample < items_per_sample) {
      RunItems<Gen, V, K>(p, g, keys, first, static_cast<int64_t>(row), static_cast<int64_t>(group),
                          static_cast<int64_t>(groups_per_sample));
      return;
    }
  }
  OTF_UNROLL
  for (int k = 0; k < K; ++k) {
    const Index item = group + k * groups_per_sample;
    if (K == 1 || item < items_per_sample)
      RunItem<Gen, V>(p, g, in, keys, first, static_cast<int64_t>(row), static_cast<int64_t>(item));
  }
}

// Items one GPU thread runs per grid-stride step, given the items per sample: as many as
// keep each of the thread's stores next to its neighbours' (at least two work units per
// sample), up to `max_items` (1, 2, 4 or 8). Four items of a row of four in one thread
// would store 16 contiguous bytes per thread and lose coalescing; four items spaced a
// quarter row apart keep it.
OTF_HD constexpr int ItemsPerThread(int64_t items_per_sample, int max_items = 4) {
  int k = 1;
  while (2 * k <= max_items && 4 * k <= items_per_sample) k *= 2;
  return k;
}

// The most items per thread Gen's kernel runs: 8 where GenerateItems interleaves them (each
// one more independent instruction stream), else 4 (the items run one after another, and
// more only lengthen the kernel).
template <typename Gen>
constexpr int kMaxItemsPerThread = HasGenerateItems<Gen>::value ? 8 : 4;

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
// stream), in IEEE arithmetic whatever the calling thread's mode (float_env.h): a
// generator's CPU entry point (generator_def.h). g->first_sample is the global index of row
// 0, sample offset included. The TF kernel shards rows over its thread pool, the XLA Host
// handler over XLA's, the core's C API over threads of its own.
template <typename Gen>
void FillRowsCpu(const void* params, const CallGeometry* geometry, const Inputs* inputs,
                 const PhiloxKey* keys, int64_t begin, int64_t end) {
  ScopedIeeeSubnormals ieee;
  const auto& p = *static_cast<const typename Gen::Params*>(params);
  const CallGeometry& g = *geometry;
  const int64_t items = Gen::ItemsPerSample(p);
  for (int64_t row = begin; row < end; ++row) {
    if constexpr (HasSampleCpu<Gen>::value) {
      const SampleRng<Gen::kNumStreams> rng(keys, static_cast<uint64_t>(g.first_sample + row));
      if (Gen::GenerateSampleCpu(p, rng, SampleOutputs(g, row))) continue;
    }
    int64_t item = 0;
    if constexpr (HasGenerateItems<Gen>::value) {
      for (; item + kCpuItems <= items; item += kCpuItems)
        RunItems<Gen, 0, kCpuItems>(p, g, keys, g.first_sample, row, item, 1);
    }
    for (; item < items; ++item) RunItem<Gen>(p, g, *inputs, keys, g.first_sample, row, item);
  }
}
#endif

// The GPU launch of generator Gen, instantiated for each generator by
// OTF_DEFINE_GPU_GENERATOR in its .cu.cc (generator_gpu.cu.h): the SDK's grid-stride kernel
// for a struct generator, Gen::Launch for a launcher generator; returns the first CUDA
// error. It is the generator's GPU entry point (generator_def.h): the front ends' op
// kernels, the XLA CUDA handler and the core's C API call it and turn a failure into an
// error that names the op.
template <typename Gen>
cudaError_t LaunchGenerator(const GpuLaunchArgs* call);

// The GPU launch of a call of `num_steps` steps (StepGeometry), instantiated beside
// LaunchGenerator: for a struct generator one launch for all the steps while a step's work
// indexes in 32 bits, the steps one grid row each; otherwise LaunchGenerator once a step.
template <typename Gen>
cudaError_t LaunchGeneratorSteps(const GpuLaunchArgs* call, int64_t num_steps);

}  // namespace sdk
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_SDK_GENERATOR_H_

// The generator SDK's XLA handlers: typed-FFI handlers (XLA's header-only FFI API, no
// TensorFlow) that run a generator's CPU loop ("Host") or its GPU launch on XLA's stream
// ("CUDA"), in whichever XLA loads them: TensorFlow's (tf_ops/tensorflow/generator_xla.cc
// registers them under jit_compile) or JAX's (jax.ffi). A generator's variants get them from
// OTF_GENERATOR_KERNELS (generator_def.h) where the XLA FFI headers are on the include path.
//
// Under XLA the outputs are the other kernels' bit for bit: the handlers run the same code
// (FillRowsCpu, LaunchGenerator) on the same Params. The custom call:
//   operands  seed (int64 [] or [2]), step (int64 [], or [n]: a call of n steps, whose
//             outputs hold the n steps' batches one after another, StepGeometry), then,
//             with sample_offset = 1, the
//             call's sample offset (int64 [], added to first_sample; on the GPU read only
//             on the device), then the generator's own inputs; seed, step and offset may
//             also come as uint32 halves of their words (CheckWords);
//   results   the op's outputs (every output's dimension 0 is the call's rows times its
//             steps), then, with scratch_bytes > 0, one u8 buffer of n times
//             ScratchBufferBytes(scratch_bytes) bytes that the CUDA handler serves the
//             launches' scratch requests from;
//   attributes batch_size, first_sample (i64), params (the Params' bytes, array<i8>), op (the
//             op's name, for errors), input_names (comma-separated) and input_rules (their
//             ValueRules' bytes, array<i8>), scratch_bytes and sample_offset (i64).
// Every error names the op.
#ifndef TF_ONTHEFLY_SDK_GENERATOR_XLA_FFI_H_
#define TF_ONTHEFLY_SDK_GENERATOR_XLA_FFI_H_

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "tf_ops/sdk/generator.h"
#include "tf_ops/sdk/generator_config.h"
#include "tf_ops/sdk/status.h"
#include "xla/ffi/api/ffi.h"

namespace tf_onthefly {
namespace sdk {
namespace xla_ffi {
namespace ffi = ::xla::ffi;

// The API version of the XLA FFI headers the handlers are built with (major * 1000 +
// minor): an XLA accepts handlers of the versions it supports (TensorFlow 2.20: 0.1 only;
// TensorFlow 2.21: 0.1 and 0.2).
constexpr int32_t kApiVersion = XLA_FFI_API_MAJOR * 1000 + XLA_FFI_API_MINOR;

inline ffi::Error OpError(ffi::ErrorCode code, std::string_view op, const std::string& what) {
  return ffi::Error(code, StrCat(op, ": ", what));
}

inline ffi::Error FromStatus(const Status& s) {
  if (s.ok()) return ffi::Error::Success();
  return ffi::Error(static_cast<ffi::ErrorCode>(s.code()), s.message());
}

// What every handler decodes from its custom call: the Params, the geometry from the result
// buffers (every output has `rows` rows), the seed and step, the inputs and the scratch.
template <typename Gen>
struct Call {
  typename Gen::Params params{};
  CallGeometry g{};
  SeedAndStep seed_step{};
  Inputs in;
  ElementKind kinds[kMaxInputs] = {};
  char* scratch = nullptr;
  int64_t scratch_size = 0;
  int64_t num_steps = 1;
};

inline ElementKind KindOf(ffi::DataType type) {
  switch (type) {
    case ffi::DataType::F32:
      return ElementKind::kFloat32;
    case ffi::DataType::S32:
      return ElementKind::kInt32;
    case ffi::DataType::S64:
      return ElementKind::kInt64;
    default:
      return ElementKind::kOther;
  }
}

// Seed, step and sample offset are 64-bit words (one, or two for a seed pair): int64 or
// uint64 elements, or, where the caller has no 64-bit types (JAX without jax_enable_x64),
// int32 or uint32 elements in pairs, the two little-endian halves of each word (the same
// bytes). Their bytes are read as int64 where the kernel runs. most_words 0: any number.
inline ffi::Error CheckWords(const ffi::AnyBuffer& b, std::string_view what, size_t most_words,
                             std::string_view op) {
  const ffi::DataType t = b.element_type();
  const bool integer = t == ffi::DataType::S64 || t == ffi::DataType::U64 ||
                       t == ffi::DataType::S32 || t == ffi::DataType::U32;
  const size_t bytes = b.size_bytes();
  if (!integer || bytes == 0 || bytes % sizeof(int64_t) != 0 ||
      (most_words > 0 && bytes > most_words * sizeof(int64_t))) {
    const char* count = most_words == 0 ? "one or more" : most_words == 1 ? "one" : "one or two";
    return OpError(ffi::ErrorCode::kInvalidArgument, op,
                   StrCat(what, " must be ", count, " 64-bit word", most_words == 1 ? "" : "s",
                          " (int64, or uint32 halves), got ", bytes, " bytes"));
  }
  return ffi::Error::Success();
}

template <typename Gen>
ffi::Error Decode(ffi::AnyBuffer seed, ffi::AnyBuffer step, ffi::RemainingArgs& args,
                  ffi::RemainingRets& rets, int64_t first_sample, int64_t batch_size,
                  ffi::Span<const int8_t> params, std::string_view op, int64_t scratch_bytes,
                  int64_t sample_offset, Call<Gen>* call) {
  if (params.size() != sizeof(call->params))
    return OpError(ffi::ErrorCode::kInternal, op, "params attribute of the wrong size");
  std::memcpy(&call->params, params.begin(), sizeof(call->params));
  const size_t offsets = sample_offset != 0 ? 1 : 0, scratches = scratch_bytes > 0 ? 1 : 0;
  if (rets.size() < scratches || rets.size() - scratches > static_cast<size_t>(kMaxOutputs) ||
      args.size() < offsets || args.size() - offsets > static_cast<size_t>(kMaxInputs))
    return OpError(ffi::ErrorCode::kInternal, op, "more custom-call operands than the SDK holds");
  if (auto e = CheckWords(step, "step", 0, op); e.failure()) return e;
  call->num_steps = static_cast<int64_t>(step.size_bytes() / sizeof(int64_t));
  CallGeometry& g = call->g;
  for (size_t i = 0; i < rets.size(); ++i) {
    auto out = rets.get<ffi::AnyBuffer>(i);
    if (out.has_error()) return out.error();
    if (i + scratches == rets.size()) {
      call->scratch = static_cast<char*>((*out)->untyped_data());
      call->scratch_size = static_cast<int64_t>((*out)->size_bytes());
      continue;
    }
    const auto dims = (*out)->dimensions();
    const int64_t rows = dims.size() == 0 ? 0 : dims[0];  // the steps' rows
    if (rows % call->num_steps != 0)
      return OpError(ffi::ErrorCode::kInternal, op,
                     "outputs' rows are not a whole number of steps");
    if (i == 0) g.num_samples = rows / call->num_steps;
    g.base[i] = (*out)->untyped_data();
    g.sample_bytes[i] = rows > 0 ? static_cast<int64_t>((*out)->size_bytes()) / rows : 0;
  }
  g.batch_size = batch_size;
  g.first_sample = first_sample;
  if (auto e = CheckWords(seed, "seed", 2, op); e.failure()) return e;
  call->seed_step = SeedAndStep{static_cast<const int64_t*>(seed.untyped_data()),
                                static_cast<int64_t>(seed.size_bytes() / sizeof(int64_t)),
                                static_cast<const int64_t*>(step.untyped_data()), nullptr};
  if (offsets) {
    auto offset = args.get<ffi::AnyBuffer>(0);
    if (offset.has_error()) return offset.error();
    if (auto e = CheckWords(*offset, "sample offset", 1, op); e.failure()) return e;
    call->seed_step.sample_offset = static_cast<const int64_t*>(offset->untyped_data());
  }
  call->in.count = static_cast<int>(args.size() - offsets);
  for (int i = 0; i < call->in.count; ++i) {
    auto arg = args.get<ffi::AnyBuffer>(offsets + i);
    if (arg.has_error()) return arg.error();
    const auto dims = arg->dimensions();
    call->in.data[i] = arg->untyped_data();
    call->in.rank[i] = static_cast<int>(dims.size());
    for (size_t d = 0; d < dims.size() && d < static_cast<size_t>(kMaxInputRank); ++d)
      call->in.dims[i][d] = dims[d];
    call->kinds[i] = KindOf(arg->element_type());
  }
  return ffi::Error::Success();
}

// Rows of one Host call in chunks, taken in turn by the calling thread and by tasks on
// XLA's intra-op thread pool. The caller can finish every chunk alone, so a busy or absent
// pool never blocks it; a task that starts after the last chunk was taken only drops its
// reference to this state. (A reference count and a yielding wait rather than shared_ptr and
// condition_variable: with gcc 12's headers those import GLIBC_2.32 and GLIBCXX_3.4.30, past
// the wheel's manylinux_2_24 promise, docs/packaging.md.)
// A call of several steps has chunks_per_step chunks a step, each step its own keys.
template <typename Gen>
struct HostRows {
  Call<Gen> call;
  std::vector<PhiloxKey> keys;  // Gen::kNumStreams a step
  int64_t chunk_rows = 1, chunks_per_step = 1, chunks = 1;
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<int> refs{1};

  void Work() {
    for (int64_t c = next.fetch_add(1); c < chunks; c = next.fetch_add(1)) {
      const int64_t step = c / chunks_per_step;
      const int64_t begin = (c - step * chunks_per_step) * chunk_rows;
      const CallGeometry g = StepGeometry(call.g, step);
      FillRowsCpu<Gen>(&call.params, &g, &call.in, keys.data() + step * Gen::kNumStreams, begin,
                       std::min(call.g.num_samples, begin + chunk_rows));
      done.fetch_add(1);
    }
  }
  void Release() {
    if (refs.fetch_sub(1) == 1) delete this;
  }
};

// The inputs' value rules (the Config's, as bytes) and names (comma-separated), for the
// Host handler, which reads the inputs in host memory as the TF CPU kernel does.
inline ffi::Error CheckValues(const Inputs& in, const ElementKind* kinds,
                              ffi::Span<const int8_t> rules, std::string_view names,
                              std::string_view op) {
  if (rules.size() != in.count * sizeof(ValueRule))
    return OpError(ffi::ErrorCode::kInternal, op, "input_rules attribute of the wrong size");
  for (int i = 0; i < in.count; ++i) {
    const size_t comma = names.find(',');
    const std::string name(names.substr(0, comma));
    names = comma == std::string_view::npos ? std::string_view() : names.substr(comma + 1);
    ValueRule rule;
    std::memcpy(&rule, rules.begin() + i * sizeof(ValueRule), sizeof(rule));
    const Status s = CheckInputValues(name, rule, kinds[i], in.data[i], in.size(i));
    if (!s.ok()) return ffi::Error::InvalidArgument(StrCat(op, ": ", s.message()));
  }
  return ffi::Error::Success();
}

// "Host": the CPU loop, its rows shared out over XLA's intra-op threads.
template <typename Gen>
ffi::Error RunHost(ffi::ThreadPool pool, ffi::AnyBuffer seed, ffi::AnyBuffer step,
                   ffi::RemainingArgs args, ffi::RemainingRets rets, int64_t first_sample,
                   int64_t batch_size, ffi::Span<const int8_t> params, std::string_view op,
                   ffi::Span<const int8_t> input_rules, std::string_view input_names,
                   int64_t scratch_bytes, int64_t sample_offset) {
  if constexpr (!HasCpu<Gen>::value) {
    return FromStatus(GpuOnlyError(std::string(op)));
  } else {
    auto* rows = new HostRows<Gen>();
    Call<Gen>& call = rows->call;
    ffi::Error e = Decode<Gen>(seed, step, args, rets, first_sample, batch_size, params, op,
                               scratch_bytes, sample_offset, &call);
    if (e.success()) e = CheckValues(call.in, call.kinds, input_rules, input_names, op);
    if (e.success() && call.seed_step.sample_offset != nullptr) {
      // In host memory here: the shard's first sample is checked exactly, as a host value.
      call.g.first_sample = FirstGlobalSample(call.seed_step, first_sample);
      const Status s =
          BatchAttrs{batch_size, call.g.num_samples}.CheckFirstSample(call.g.first_sample);
      if (!s.ok()) e = ffi::Error::InvalidArgument(StrCat(op, ": ", s.message()));
    }
    if (e.failure() || call.g.num_samples == 0) {
      rows->Release();
      return e;
    }
    rows->keys.resize(call.num_steps * Gen::kNumStreams);
    for (int64_t k = 0; k < call.num_steps; ++k) {
      const SeedAndStep seed_step = StepSeedAndStep(call.seed_step, k);
      for (int s = 0; s < Gen::kNumStreams; ++s)
        rows->keys[k * Gen::kNumStreams + s] = StreamKey(seed_step, s);
    }
    int64_t bytes = 0;
    for (int i = 0; i < kMaxOutputs; ++i) bytes += call.g.sample_bytes[i] * call.g.num_samples;
    const int64_t threads =
        bytes * call.num_steps < kHostParallelBytes ? 1 : std::max<int64_t>(1, pool.num_threads());
    // A few chunks per thread, for balance; at least one a step.
    const int64_t per_step = std::max<int64_t>(1, 4 * threads / call.num_steps);
    rows->chunks_per_step = std::min(call.g.num_samples, per_step);
    rows->chunk_rows = (call.g.num_samples + rows->chunks_per_step - 1) / rows->chunks_per_step;
    rows->chunks_per_step = (call.g.num_samples + rows->chunk_rows - 1) / rows->chunk_rows;
    rows->chunks = rows->chunks_per_step * call.num_steps;
    for (int64_t t = 1; t < std::min(threads, rows->chunks); ++t) {
      rows->refs.fetch_add(1);
      pool.Schedule([rows] {
        rows->Work();
        rows->Release();
      });
    }
    rows->Work();
    // What is left are chunks other threads have started: wait for them (at most one chunk's
    // time), then drop the caller's reference.
    while (rows->done.load() < rows->chunks) std::this_thread::yield();
    rows->Release();
    return ffi::Error::Success();
  }
}

// XLA's scratch allocator behind the SDK's, where the call has no scratch buffer of its own:
// allocations are freed when the handler returns, after the launch was enqueued on XLA's
// stream (stream-ordered, as XLA's own temporaries).
struct XlaScratch {
  ffi::ScratchAllocator* xla;
  int64_t refused_bytes = -1;
  static void* Allocate(void* self, int64_t bytes) {
    auto* s = static_cast<XlaScratch*>(self);
    std::optional<void*> p =
        bytes < 0 ? std::nullopt : s->xla->Allocate(static_cast<size_t>(bytes), kScratchAlignment);
    if (p.has_value()) return *p;
    if (s->refused_bytes < 0) s->refused_bytes = bytes;
    return nullptr;
  }
};

// "CUDA": the GPU launch on XLA's stream; seed, step, sample offset and inputs stay on the
// device.
template <typename Gen>
ffi::Error RunCuda(cudaStream_t stream, ffi::ScratchAllocator scratch, ffi::AnyBuffer seed,
                   ffi::AnyBuffer step, ffi::RemainingArgs args, ffi::RemainingRets rets,
                   int64_t first_sample, int64_t batch_size, ffi::Span<const int8_t> params,
                   std::string_view op, ffi::Span<const int8_t>, std::string_view,
                   int64_t scratch_bytes, int64_t sample_offset) {
  Call<Gen> call;
  if (auto e = Decode<Gen>(seed, step, args, rets, first_sample, batch_size, params, op,
                           scratch_bytes, sample_offset, &call);
      e.failure())
    return e;
  if (call.g.num_samples == 0) return ffi::Error::Success();
  BufferScratch buffer{call.scratch, call.scratch_size};
  XlaScratch xla_scratch{&scratch};
  const ScratchAllocator allocator = call.scratch != nullptr
                                         ? ScratchAllocator(&BufferScratch::Allocate, &buffer)
                                         : ScratchAllocator(&XlaScratch::Allocate, &xla_scratch);
  const GpuLaunchArgs launch{&call.params, &call.g, &call.seed_step, &call.in, stream, &allocator};
  const cudaError_t err = call.num_steps == 1 ? LaunchGenerator<Gen>(&launch)
                                              : LaunchGeneratorSteps<Gen>(&launch, call.num_steps);
  if (buffer.refused_bytes >= 0) return FromStatus(ScratchBufferRefusal(op, buffer));
  if (xla_scratch.refused_bytes >= 0) {
    return OpError(ffi::ErrorCode::kResourceExhausted, op,
                   StrCat("scratch memory of ", xla_scratch.refused_bytes,
                          " bytes was refused by XLA's allocator"));
  }
  return FromStatus(GpuLaunchStatus(err, StrCat(op, " (under XLA)")));
}

// The operands, results and attributes both handlers take, after their contexts.
template <typename Binding>
auto BindCall(Binding binding) {
  return std::move(binding)
      .template Arg<ffi::AnyBuffer>()  // seed, one or two words (CheckWords)
      .template Arg<ffi::AnyBuffer>()  // step, one word a step
      .RemainingArgs()                 // [sample offset], the generator's inputs
      .RemainingRets()                 // the op's outputs, [scratch]
      .template Attr<int64_t>("first_sample")
      .template Attr<int64_t>("batch_size")
      .template Attr<ffi::Span<const int8_t>>("params")
      .template Attr<std::string_view>("op")
      .template Attr<ffi::Span<const int8_t>>("input_rules")
      .template Attr<std::string_view>("input_names")
      .template Attr<int64_t>("scratch_bytes")
      .template Attr<int64_t>("sample_offset");
}

template <typename Gen>
XLA_FFI_Error* HostHandler(XLA_FFI_CallFrame* frame) {
  static auto* handler =
      BindCall(ffi::Ffi::Bind().Ctx<ffi::ThreadPool>())  // XLA's intra-op threads
          .To(RunHost<Gen>)
          .release();
  return handler->Call(frame);
}

// A CUDA handler reports its traits in its metadata, which every XLA adds to those it is
// registered with (JAX registers none of its own): a launch that may be recorded into a CUDA
// graph is command-buffer compatible (CommandBufferCompatible).
template <typename Gen, typename Binding, typename Fn>
auto BindCudaTo(Binding binding, Fn fn) {
  if constexpr (CommandBufferCompatible<Gen>::value) {
    return std::move(binding).To(fn, {ffi::Traits::kCmdBufferCompatible});
  } else {
    return std::move(binding).To(fn);
  }
}

template <typename Gen>
XLA_FFI_Error* CudaHandler(XLA_FFI_CallFrame* frame) {
  static auto* handler = BindCudaTo<Gen>(BindCall(ffi::Ffi::Bind()
                                                      .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                                      .Ctx<ffi::ScratchAllocator>()),
                                         RunCuda<Gen>)
                             .release();
  return handler->Call(frame);
}

}  // namespace xla_ffi
}  // namespace sdk
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_SDK_GENERATOR_XLA_FFI_H_

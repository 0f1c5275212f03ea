// The generator SDK, XLA side: what each generator op registers so that XLA can compile it
// (tf.function(jit_compile=True), Keras jit_compile): typed-FFI handlers that run the
// generator's CPU loop ("Host") or its GPU launch on XLA's stream ("CUDA"), and a
// type-erased description of the op for the SDK's one XLA kernel (generator_xla.cc), whose
// Compile() emits a custom call to the handler. No tf2xla headers here: those are heavy, and
// only generator_xla.cc includes them.
//
// Under XLA the outputs are the TF kernels' bit for bit: the handlers run the same code
// (FillRowsCpu, LaunchGenerator) on the same Params, which travel to them as a byte-array
// attribute of the custom call, with first_sample (a compile-time constant under XLA), the
// batch size and the inputs' value rules. Every error names the op.
#ifndef TF_ONTHEFLY_SDK_GENERATOR_XLA_H_
#define TF_ONTHEFLY_SDK_GENERATOR_XLA_H_

#include <algorithm>
#include <atomic>
#include <cstring>
#include <initializer_list>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "tf_ops/common/float_env.h"
#include "tf_ops/common/tf_glue.h"
#include "tf_ops/sdk/generator.h"
#include "tf_ops/sdk/generator_config.h"
#include "xla/ffi/api/ffi.h"

// xla/ffi/ffi_api.h needs MLIR headers the TF wheel does not ship; the function is exported
// by libtensorflow_framework.so.2.
namespace xla::ffi {
const XLA_FFI_Api* GetXlaFfiApi();
}

namespace tf_onthefly {
namespace sdk {

// One generator op as the XLA kernel sees it.
struct XlaGeneratorOp {
  // Runs the op's attribute checks (the Config's) and writes its Params as bytes.
  absl::Status (*configure)(tensorflow::OpKernelConstruction* c, BatchAttrs* batch,
                            std::string* params, SampleShapes* shapes);
  // Whether the generator has a CPU implementation (a Host handler).
  bool has_cpu;
  // The FFI target of each generator struct, by the type attribute values that select it.
  std::vector<std::pair<std::vector<TypeConstraint>, std::string>> targets;
};

// Registers generator struct Gen's FFI target `target` of op `op` (the first call for an op
// also registers the op's XLA kernel, defined in generator_xla.cc).
absl::Status RegisterXlaTarget(const char* op, const XlaGeneratorOp& description,
                               std::vector<TypeConstraint> types, const std::string& target);

namespace xla_ffi {
namespace ffi = ::xla::ffi;

inline ffi::Error OpError(ffi::ErrorCode code, std::string_view op, const std::string& what) {
  return ffi::Error(code, absl::StrCat(op, ": ", what));
}

inline ffi::Error FromStatus(const absl::Status& s) {
  if (s.ok()) return ffi::Error::Success();
  return ffi::Error(static_cast<ffi::ErrorCode>(s.code()), std::string(s.message()));
}

// What every handler decodes from its custom call: the Params, the geometry from the result
// buffers (every output has `rows` rows), the seed and step, and the inputs.
template <typename Gen>
struct Call {
  typename Gen::Params params{};
  CallGeometry g{};
  SeedAndStep seed_step{};
  Inputs in;
  ElementKind kinds[kMaxInputs] = {};
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

template <typename Gen>
ffi::Error Decode(ffi::AnyBuffer seed, ffi::AnyBuffer step, ffi::RemainingArgs& args,
                  ffi::RemainingRets& rets, int64_t first_sample, int64_t batch_size,
                  ffi::Span<const int8_t> params, std::string_view op, Call<Gen>* call) {
  if (params.size() != sizeof(call->params))
    return OpError(ffi::ErrorCode::kInternal, op, "params attribute of the wrong size");
  std::memcpy(&call->params, params.begin(), sizeof(call->params));
  if (rets.size() > static_cast<size_t>(kMaxOutputs) ||
      args.size() > static_cast<size_t>(kMaxInputs))
    return OpError(ffi::ErrorCode::kInternal, op, "more custom-call operands than the SDK holds");
  CallGeometry& g = call->g;
  for (size_t i = 0; i < rets.size(); ++i) {
    auto out = rets.get<ffi::AnyBuffer>(i);
    if (out.has_error()) return out.error();
    const auto dims = (*out)->dimensions();
    if (i == 0) g.num_samples = dims.size() == 0 ? 0 : dims[0];
    g.base[i] = (*out)->untyped_data();
    g.sample_bytes[i] =
        g.num_samples > 0 ? static_cast<int64_t>((*out)->size_bytes()) / g.num_samples : 0;
  }
  g.batch_size = batch_size;
  g.first_sample = first_sample;
  call->in.count = static_cast<int>(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    auto arg = args.get<ffi::AnyBuffer>(i);
    if (arg.has_error()) return arg.error();
    const auto dims = arg->dimensions();
    call->in.data[i] = arg->untyped_data();
    call->in.rank[i] = static_cast<int>(dims.size());
    for (size_t d = 0; d < dims.size() && d < static_cast<size_t>(kMaxInputRank); ++d)
      call->in.dims[i][d] = dims[d];
    call->kinds[i] = KindOf(arg->element_type());
  }
  call->seed_step = SeedAndStep{static_cast<const int64_t*>(seed.untyped_data()),
                                static_cast<int64_t>(seed.element_count()),
                                static_cast<const int64_t*>(step.untyped_data())};
  return ffi::Error::Success();
}

// Rows of one Host call in chunks, taken in turn by the calling thread and by tasks on
// XLA's intra-op thread pool. The caller can finish every chunk alone, so a busy or absent
// pool never blocks it; a task that starts after the last chunk was taken only drops its
// reference to this state. (A reference count and a yielding wait rather than shared_ptr and
// condition_variable: with gcc 12's headers those import GLIBC_2.32 and GLIBCXX_3.4.30, past
// the wheel's manylinux_2_24 promise, docs/packaging.md.)
template <typename Gen>
struct HostRows {
  Call<Gen> call;
  PhiloxKey keys[Gen::kNumStreams] = {};
  int64_t chunk_rows = 1, chunks = 1;
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<int> refs{1};

  void Work() {
    ScopedIeeeSubnormals ieee;  // per thread: the floating-point mode is a thread's own
    for (int64_t c = next.fetch_add(1); c < chunks; c = next.fetch_add(1)) {
      const int64_t begin = c * chunk_rows;
      FillRowsCpu<Gen>(call.params, call.g, call.in, keys, begin,
                       std::min(call.g.num_samples, begin + chunk_rows));
      done.fetch_add(1);
    }
  }
  void Release() {
    if (refs.fetch_sub(1) == 1) delete this;
  }
};

// Below this many output bytes a call runs on the calling thread alone: scheduling costs
// more than it saves.
constexpr int64_t kHostParallelBytes = int64_t{1} << 18;

// The inputs' value rules (the Config's, as bytes) and names (comma-separated), for the
// Host handler, which reads the inputs in host memory as the TF CPU kernel does.
inline ffi::Error CheckValues(const Inputs& in, const ElementKind* kinds,
                              ffi::Span<const int8_t> rules, std::string_view names,
                              std::string_view op) {
  if (rules.size() != in.count * sizeof(ValueRule))
    return OpError(ffi::ErrorCode::kInternal, op, "input_rules attribute of the wrong size");
  const std::vector<std::string> name = absl::StrSplit(names, ',');
  for (int i = 0; i < in.count; ++i) {
    ValueRule rule;
    std::memcpy(&rule, rules.begin() + i * sizeof(ValueRule), sizeof(rule));
    const absl::Status s = CheckInputValues(name[i], rule, kinds[i], in.data[i], in.size(i));
    if (!s.ok()) return ffi::Error::InvalidArgument(absl::StrCat(op, ": ", s.message()));
  }
  return ffi::Error::Success();
}

// "Host": the TF CPU kernel's loop in IEEE arithmetic, its rows shared out over XLA's
// intra-op threads as the TF kernel shares them over TensorFlow's.
template <typename Gen>
ffi::Error RunHost(ffi::ThreadPool pool, ffi::AnyBuffer seed, ffi::AnyBuffer step,
                   ffi::RemainingArgs args, ffi::RemainingRets rets, int64_t first_sample,
                   int64_t batch_size, ffi::Span<const int8_t> params, std::string_view op,
                   ffi::Span<const int8_t> input_rules, std::string_view input_names) {
  if constexpr (!HasCpu<Gen>::value) {
    return OpError(ffi::ErrorCode::kInvalidArgument, op, "GPU-only: no CPU implementation");
  } else {
    auto* rows = new HostRows<Gen>();
    Call<Gen>& call = rows->call;
    ffi::Error e = Decode<Gen>(seed, step, args, rets, first_sample, batch_size, params, op, &call);
    if (e.success()) e = CheckValues(call.in, call.kinds, input_rules, input_names, op);
    if (e.failure() || call.g.num_samples == 0) {
      rows->Release();
      return e;
    }
    for (int s = 0; s < Gen::kNumStreams; ++s) rows->keys[s] = StreamKey(call.seed_step, s);
    int64_t bytes = 0;
    for (int i = 0; i < kMaxOutputs; ++i) bytes += call.g.sample_bytes[i] * call.g.num_samples;
    const int64_t threads =
        bytes < kHostParallelBytes ? 1 : std::max<int64_t>(1, pool.num_threads());
    rows->chunks = std::min(call.g.num_samples, 4 * threads);  // a few per thread, for balance
    rows->chunk_rows = (call.g.num_samples + rows->chunks - 1) / rows->chunks;
    rows->chunks = (call.g.num_samples + rows->chunk_rows - 1) / rows->chunk_rows;
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

// XLA's scratch allocator behind the SDK's: allocations are freed when the handler returns,
// after the launch was enqueued on XLA's stream (stream-ordered, as XLA's own temporaries).
struct XlaScratch {
  ffi::ScratchAllocator* xla;
  int64_t refused_bytes = -1;
  static void* Allocate(void* self, int64_t bytes) {
    auto* s = static_cast<XlaScratch*>(self);
    std::optional<void*> p =
        bytes < 0 ? std::nullopt : s->xla->Allocate(static_cast<size_t>(bytes), 256);
    if (p.has_value()) return *p;
    if (s->refused_bytes < 0) s->refused_bytes = bytes;
    return nullptr;
  }
};

// "CUDA": the TF GPU kernel's launch, on XLA's stream; seed, step and inputs stay on the
// device.
template <typename Gen>
ffi::Error RunCuda(cudaStream_t stream, ffi::ScratchAllocator scratch, ffi::AnyBuffer seed,
                   ffi::AnyBuffer step, ffi::RemainingArgs args, ffi::RemainingRets rets,
                   int64_t first_sample, int64_t batch_size, ffi::Span<const int8_t> params,
                   std::string_view op, ffi::Span<const int8_t>, std::string_view) {
  Call<Gen> call;
  if (auto e = Decode<Gen>(seed, step, args, rets, first_sample, batch_size, params, op, &call);
      e.failure())
    return e;
  if (call.g.num_samples == 0) return ffi::Error::Success();
  XlaScratch xla_scratch{&scratch};
  const ScratchAllocator allocator(&XlaScratch::Allocate, &xla_scratch);
  const cudaError_t err = LaunchGenerator<Gen>(GpuCall<typename Gen::Params>{
      call.params, call.g, call.seed_step, call.in, stream, allocator});
  if (xla_scratch.refused_bytes >= 0) {
    return OpError(ffi::ErrorCode::kResourceExhausted, op,
                   absl::StrCat("scratch memory of ", xla_scratch.refused_bytes,
                                " bytes was refused by XLA's allocator"));
  }
  return FromStatus(GpuLaunchStatus(err, absl::StrCat(op, " (under XLA)")));
}

// Both handlers take the custom call's operands (seed, step, then the generator's inputs)
// and attributes: first_sample, batch_size, params (the Params struct's bytes), op (the
// op's name, for error messages), input_rules and input_names (the inputs' value rules).
template <typename Gen>
XLA_FFI_Error* HostHandler(XLA_FFI_CallFrame* frame) {
  static auto* handler = ffi::Ffi::Bind()
                             .Ctx<ffi::ThreadPool>()  // XLA's intra-op threads
                             .Arg<ffi::AnyBuffer>()   // seed, int64 [] or [2]
                             .Arg<ffi::AnyBuffer>()   // step, int64 []
                             .RemainingArgs()         // the generator's own inputs
                             .RemainingRets()         // the op's outputs
                             .Attr<int64_t>("first_sample")
                             .Attr<int64_t>("batch_size")
                             .Attr<ffi::Span<const int8_t>>("params")
                             .Attr<std::string_view>("op")
                             .Attr<ffi::Span<const int8_t>>("input_rules")
                             .Attr<std::string_view>("input_names")
                             .To(RunHost<Gen>)
                             .release();
  return handler->Call(frame);
}

template <typename Gen>
XLA_FFI_Error* CudaHandler(XLA_FFI_CallFrame* frame) {
  static auto* handler = ffi::Ffi::Bind()
                             .Ctx<ffi::PlatformStream<cudaStream_t>>()
                             .Ctx<ffi::ScratchAllocator>()
                             .Arg<ffi::AnyBuffer>()
                             .Arg<ffi::AnyBuffer>()
                             .RemainingArgs()
                             .RemainingRets()
                             .Attr<int64_t>("first_sample")
                             .Attr<int64_t>("batch_size")
                             .Attr<ffi::Span<const int8_t>>("params")
                             .Attr<std::string_view>("op")
                             .Attr<ffi::Span<const int8_t>>("input_rules")
                             .Attr<std::string_view>("input_names")
                             .To(RunCuda<Gen>)
                             .release();
  return handler->Call(frame);
}

// traits: XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE for a handler XLA may record
// into a CUDA graph with the fusions around it.
absl::Status RegisterHandler(const std::string& target, const char* platform,
                             XLA_FFI_Handler* handler, XLA_FFI_Handler_Traits traits = 0);
}  // namespace xla_ffi

// Registers generator Gen's XLA handlers ("Host" where it has a CPU implementation, and
// "CUDA") under a target named after the op and the type values that select it, and tells
// the SDK's XLA kernel about them. The CUDA handler may be recorded into XLA's command
// buffers (CUDA graphs) where the generator allows it (CommandBufferCompatible); a custom
// call without that trait splits the graph around it, and each piece then costs the step
// its own launch.
template <typename Config, typename Gen>
void RegisterXlaHandlers(const char* op, std::initializer_list<TypeConstraint> types) {
  std::string target = absl::StrCat("tf_onthefly.", op);
  for (const TypeConstraint& t : types)
    absl::StrAppend(&target, ".", tensorflow::DataTypeString(t.type));
  absl::Status status;
  if constexpr (HasCpu<Gen>::value)
    status.Update(xla_ffi::RegisterHandler(target, "Host", &xla_ffi::HostHandler<Gen>));
  status.Update(xla_ffi::RegisterHandler(
      target, "CUDA", &xla_ffi::CudaHandler<Gen>,
      CommandBufferCompatible<Gen>::value ? XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE : 0));
  status.Update(RegisterXlaTarget(
      op, XlaGeneratorOp{&ConfigureBytes<Config>, HasCpu<Gen>::value, {}}, types, target));
  if (!status.ok()) LOG(ERROR) << op << " will not compile under XLA: " << status;
}

}  // namespace sdk
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_SDK_GENERATOR_XLA_H_

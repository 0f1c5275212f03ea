// The generator SDK, XLA side: what each generator op registers so that XLA can compile it
// (tf.function(jit_compile=True), Keras jit_compile): typed-FFI handlers that run the
// generator's CPU loop ("Host") or launch its GPU kernel on XLA's stream ("CUDA"), and a
// type-erased description of the op for the SDK's one XLA kernel (generator_xla.cc), whose
// Compile() emits a custom call to the handler. No tf2xla headers here: those are heavy, and
// only generator_xla.cc includes them.
//
// Under XLA the outputs are the TF kernels' bit for bit: the handlers run the same code
// (FillRowsCpu, LaunchGenerator) on the same Params, which travel to them as a byte-array
// attribute of the custom call, with first_sample (a compile-time constant under XLA).
#ifndef TF_ONTHEFLY_SDK_GENERATOR_XLA_H_
#define TF_ONTHEFLY_SDK_GENERATOR_XLA_H_

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "tf_ops/common/float_env.h"
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
  // The FFI target of each generator struct, by the type attribute values that select it.
  std::vector<std::pair<std::vector<TypeConstraint>, std::string>> targets;
};

// Registers generator struct Gen's FFI target `target` of op `op` (the first call for an op
// also registers the op's XLA kernel, defined in generator_xla.cc).
absl::Status RegisterXlaTarget(const char* op, const XlaGeneratorOp& description,
                               std::vector<TypeConstraint> types, const std::string& target);

namespace xla_ffi {
namespace ffi = ::xla::ffi;

// The call's geometry from its result buffers (every output has `rows` rows).
inline ffi::Error Geometry(ffi::RemainingRets& rets, int64_t first_sample, CallGeometry* g) {
  if (rets.size() > static_cast<size_t>(kMaxOutputs))
    return ffi::Error::Internal("tf_onthefly: more custom-call results than kMaxOutputs");
  for (size_t i = 0; i < rets.size(); ++i) {
    auto out = rets.get<ffi::AnyBuffer>(i);
    if (out.has_error()) return out.error();
    const auto dims = (*out)->dimensions();
    if (i == 0) g->num_samples = dims.size() == 0 ? 0 : dims[0];
    g->base[i] = (*out)->untyped_data();
    g->sample_bytes[i] =
        g->num_samples > 0 ? static_cast<int64_t>((*out)->size_bytes()) / g->num_samples : 0;
  }
  g->first_sample = first_sample;
  return ffi::Error::Success();
}

template <typename Gen>
ffi::Error ParamsOf(ffi::Span<const int8_t> bytes, typename Gen::Params* p) {
  if (bytes.size() != sizeof(*p))
    return ffi::Error::Internal("tf_onthefly: params attribute of the wrong size");
  std::memcpy(p, bytes.begin(), sizeof(*p));
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
  typename Gen::Params p{};
  CallGeometry g{};
  PhiloxKey keys[Gen::kNumStreams] = {};
  int64_t chunk_rows = 1, chunks = 1;
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<int> refs{1};

  void Work() {
    ScopedIeeeSubnormals ieee;  // per thread: the floating-point mode is a thread's own
    for (int64_t c = next.fetch_add(1); c < chunks; c = next.fetch_add(1)) {
      const int64_t begin = c * chunk_rows;
      FillRowsCpu<Gen>(p, g, keys, begin, std::min(g.num_samples, begin + chunk_rows));
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

// "Host": the TF CPU kernel's loop in IEEE arithmetic, its rows shared out over XLA's
// intra-op threads as the TF kernel shares them over TensorFlow's.
template <typename Gen>
ffi::Error RunHost(ffi::ThreadPool pool, ffi::AnyBuffer seed, ffi::AnyBuffer step,
                   ffi::RemainingRets rets, int64_t first_sample, ffi::Span<const int8_t> params,
                   std::string_view) {
  typename Gen::Params p;
  CallGeometry g{};
  if (auto e = ParamsOf<Gen>(params, &p); e.failure()) return e;
  if (auto e = Geometry(rets, first_sample, &g); e.failure()) return e;
  if (g.num_samples == 0) return ffi::Error::Success();
  const SeedAndStep in{static_cast<const int64_t*>(seed.untyped_data()),
                       static_cast<int64_t>(seed.element_count()),
                       static_cast<const int64_t*>(step.untyped_data())};
  auto* rows = new HostRows<Gen>();
  rows->p = p;
  rows->g = g;
  for (int s = 0; s < Gen::kNumStreams; ++s) rows->keys[s] = StreamKey(in, s);
  int64_t bytes = 0;
  for (int i = 0; i < kMaxOutputs; ++i) bytes += g.sample_bytes[i] * g.num_samples;
  const int64_t threads = bytes < kHostParallelBytes ? 1 : std::max<int64_t>(1, pool.num_threads());
  rows->chunks = std::min(g.num_samples, 4 * threads);  // a few per thread, for balance
  rows->chunk_rows = (g.num_samples + rows->chunks - 1) / rows->chunks;
  rows->chunks = (g.num_samples + rows->chunk_rows - 1) / rows->chunk_rows;
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

// "CUDA": the TF GPU kernel's launch, on XLA's stream; seed and step stay on the device.
template <typename Gen>
ffi::Error RunCuda(cudaStream_t stream, ffi::AnyBuffer seed, ffi::AnyBuffer step,
                   ffi::RemainingRets rets, int64_t first_sample, ffi::Span<const int8_t> params,
                   std::string_view op) {
  typename Gen::Params p;
  CallGeometry g{};
  if (auto e = ParamsOf<Gen>(params, &p); e.failure()) return e;
  if (auto e = Geometry(rets, first_sample, &g); e.failure()) return e;
  const SeedAndStep in{static_cast<const int64_t*>(seed.untyped_data()),
                       static_cast<int64_t>(seed.element_count()),
                       static_cast<const int64_t*>(step.untyped_data())};
  const cudaError_t err = LaunchGenerator<Gen>(p, g, in, stream);
  if (err == cudaSuccess) return ffi::Error::Success();
  return ffi::Error::Internal(std::string(op) + ": launching its GPU kernel under XLA failed: " +
                              cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

// Both handlers take the custom call's attributes: first_sample, params (the Params
// struct's bytes) and op (the op's name, for error messages).
template <typename Gen>
XLA_FFI_Error* HostHandler(XLA_FFI_CallFrame* frame) {
  static auto* handler = ffi::Ffi::Bind()
                             .Ctx<ffi::ThreadPool>()  // XLA's intra-op threads
                             .Arg<ffi::AnyBuffer>()   // seed, int64 [] or [2]
                             .Arg<ffi::AnyBuffer>()   // step, int64 []
                             .RemainingRets()         // the op's outputs
                             .Attr<int64_t>("first_sample")
                             .Attr<ffi::Span<const int8_t>>("params")
                             .Attr<std::string_view>("op")
                             .To(RunHost<Gen>)
                             .release();
  return handler->Call(frame);
}

template <typename Gen>
XLA_FFI_Error* CudaHandler(XLA_FFI_CallFrame* frame) {
  static auto* handler = ffi::Ffi::Bind()
                             .Ctx<ffi::PlatformStream<cudaStream_t>>()
                             .Arg<ffi::AnyBuffer>()
                             .Arg<ffi::AnyBuffer>()
                             .RemainingRets()
                             .Attr<int64_t>("first_sample")
                             .Attr<ffi::Span<const int8_t>>("params")
                             .Attr<std::string_view>("op")
                             .To(RunCuda<Gen>)
                             .release();
  return handler->Call(frame);
}

// traits: XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE for a handler XLA may record
// into a CUDA graph with the fusions around it (RegisterXlaHandlers says why ours may).
absl::Status RegisterHandler(const std::string& target, const char* platform,
                             XLA_FFI_Handler* handler, XLA_FFI_Handler_Traits traits = 0);
}  // namespace xla_ffi

}  // namespace sdk
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_SDK_GENERATOR_XLA_H_

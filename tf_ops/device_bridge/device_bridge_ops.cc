// The device-array bridge's two ops (tf_onthefly.interop.DeviceBridge, docs/interop.md):
//
//   OnTheFly>BridgePut(ticket, producer_streams, tensors)   run eagerly by the bridge's Python
//   OnTheFly>BridgeTake(ticket) -> tensors                   in the graph, on the bridge's device
//
// A batch made by another library (CuPy, PyTorch, Numba) arrives as tensors wrapping its
// memory (DLPack: no copy). Put orders TensorFlow's stream after the producer's work on the
// GPU, with no wait on the host: it records an event on each producer stream and makes
// TensorFlow's stream wait for it (cuStreamWaitEvent), then records an event on TensorFlow's
// stream and makes each producer stream wait for that, so memory the producer frees after
// the hand-over is reused only once TensorFlow's stream has passed everything it had queued
// then (the bridge keeps the last `keep` batches referenced for the batches still queued).
// Put then keeps the tensors under the ticket, a number the bridge's Python hands back to the
// graph; Take, a GPU op whose only input is that host integer, outputs them as they are.
// So the batch enters the graph on its device, through an op that runs on the host side of
// the step: no host-to-device copy, and no device-to-host read of the step (the Python side
// runs in a py_function on the CPU).
//
// With no producer streams (a producer the bridge waited for on the host, or host arrays)
// Put only keeps the tensors. The CUDA driver comes from tf_ops/common/cuda_driver.h.
#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif
#ifndef EIGEN_USE_GPU
#define EIGEN_USE_GPU
#endif

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/types.h"
#include "tf_ops/common/cuda_driver.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tf_onthefly {
namespace device_bridge {
namespace {

namespace cd = cuda_driver;
constexpr char kPut[] = "OnTheFly>BridgePut";
constexpr char kTake[] = "OnTheFly>BridgeTake";
// Batches put and never taken (a step that failed between the two ops) are dropped, oldest
// first, beyond this many.
constexpr size_t kMaxWaiting = 1024;

// Batches between Put and Take, by ticket, for the process.
struct Waiting {
  std::mutex mu;
  std::map<int64_t, std::vector<tensorflow::Tensor>> batches;
};
Waiting& Batches() {
  static auto* waiting = new Waiting;
  return *waiting;
}

// Two events per CUDA context (one recorded on the producer's stream, one on TensorFlow's),
// reused for every hand-over: a stream that waits for an event waits for its most recent
// record at the time of the wait call, so the next record does not disturb it.
struct Events {
  cd::CUevent producer = nullptr, consumer = nullptr;
};

absl::Status DriverError(const cd::Driver& d, cd::CUresult r, const std::string& what) {
  return absl::InternalError(absl::StrCat(kPut, ": ", what, ": ", cd::ErrorText(d, r)));
}

// TensorFlow's stream waits for each producer stream's work so far; each producer stream
// waits for TensorFlow's work so far.
absl::Status Order(cd::CUstream tf_stream, const std::vector<cd::CUstream>& producers) {
  const cd::Driver& d = cd::Get();
  if (!d.error.empty())
    return absl::FailedPreconditionError(
        absl::StrCat(kPut, ": cannot order the streams: ", d.error));
  cd::CUcontext ctx = nullptr;
  cd::CUresult r = d.StreamGetCtx(tf_stream, &ctx);
  if (r != cd::kSuccess) return DriverError(d, r, "cannot find the context of TensorFlow's stream");
  cd::ScopedContext scope(d, ctx);
  if (!scope.ok())
    return absl::InternalError(absl::StrCat(kPut, ": cannot make its context current"));
  static std::mutex mu;
  static auto* events = new std::map<cd::CUcontext, Events>;
  std::lock_guard<std::mutex> lock(mu);
  Events& e = (*events)[ctx];
  for (cd::CUevent* ev : {&e.producer, &e.consumer}) {
    if (*ev == nullptr && (r = d.EventCreate(ev, cd::kEventDisableTiming)) != cd::kSuccess) {
      *ev = nullptr;
      return DriverError(d, r, "cannot create an event");
    }
  }
  for (cd::CUstream p : producers) {
    if ((r = d.EventRecord(e.producer, p)) != cd::kSuccess)
      return absl::InvalidArgumentError(
          absl::StrCat(kPut, ": cannot record an event on the producer's stream ",
                       reinterpret_cast<uintptr_t>(p),
                       " (not a stream of this GPU's context?): ", cd::ErrorText(d, r)));
    if ((r = d.StreamWaitEvent(tf_stream, e.producer, 0)) != cd::kSuccess)
      return DriverError(d, r, "TensorFlow's stream cannot wait for the producer's");
  }
  if (producers.empty()) return absl::OkStatus();
  if ((r = d.EventRecord(e.consumer, tf_stream)) != cd::kSuccess)
    return DriverError(d, r, "cannot record an event on TensorFlow's stream");
  for (cd::CUstream p : producers) {
    if ((r = d.StreamWaitEvent(p, e.consumer, 0)) != cd::kSuccess)
      return DriverError(d, r, "the producer's stream cannot wait for TensorFlow's");
  }
  return absl::OkStatus();
}

class BridgePutOp : public tensorflow::OpKernel {
 public:
  explicit BridgePutOp(tensorflow::OpKernelConstruction* ctx) : OpKernel(ctx) {
    gpu_ = ctx->device_type() == tensorflow::DeviceType(tensorflow::DEVICE_GPU);
  }
  void Compute(tensorflow::OpKernelContext* ctx) override {
    const tensorflow::Tensor& ticket = ctx->input(0);
    const tensorflow::Tensor& streams = ctx->input(1);
    OP_REQUIRES(ctx,
                tensorflow::TensorShapeUtils::IsScalar(ticket.shape()) &&
                    tensorflow::TensorShapeUtils::IsVector(streams.shape()),
                absl::InvalidArgumentError(
                    absl::StrCat(kPut, ": ticket must be a scalar and producer_streams a vector")));
    std::vector<cd::CUstream> producers;
    const auto handles = streams.vec<int64_t>();
    for (int64_t i = 0; i < handles.size(); ++i)
      producers.push_back(reinterpret_cast<cd::CUstream>(static_cast<uintptr_t>(handles(i))));
    OP_REQUIRES(ctx, gpu_ || producers.empty(),
                absl::InvalidArgumentError(
                    absl::StrCat(kPut, ": producer streams are for a GPU bridge; this one runs on ",
                                 ctx->device()->name())));
    if (!producers.empty()) {
      auto tf_stream =
          reinterpret_cast<cd::CUstream>(ctx->eigen_device<Eigen::GpuDevice>().stream());
      OP_REQUIRES_OK(ctx, Order(tf_stream, producers));
    }
    std::vector<tensorflow::Tensor> batch;
    for (int i = 2; i < ctx->num_inputs(); ++i) batch.push_back(ctx->input(i));
    Waiting& w = Batches();
    std::lock_guard<std::mutex> lock(w.mu);
    w.batches[ticket.scalar<int64_t>()()] = std::move(batch);
    while (w.batches.size() > kMaxWaiting) w.batches.erase(w.batches.begin());
  }

 private:
  bool gpu_ = false;
};

class BridgeTakeOp : public tensorflow::OpKernel {
 public:
  explicit BridgeTakeOp(tensorflow::OpKernelConstruction* ctx) : OpKernel(ctx) {}
  void Compute(tensorflow::OpKernelContext* ctx) override {
    const tensorflow::Tensor& ticket = ctx->input(0);
    OP_REQUIRES(ctx, tensorflow::TensorShapeUtils::IsScalar(ticket.shape()),
                absl::InvalidArgumentError(absl::StrCat(kTake, ": ticket must be a scalar")));
    const int64_t t = ticket.scalar<int64_t>()();
    std::vector<tensorflow::Tensor> batch;
    {
      Waiting& w = Batches();
      std::lock_guard<std::mutex> lock(w.mu);
      auto it = w.batches.find(t);
      OP_REQUIRES(ctx, it != w.batches.end(),
                  absl::InvalidArgumentError(absl::StrCat(kTake, ": no batch was put under ticket ",
                                                          t, " (taken already, or dropped after ",
                                                          kMaxWaiting, " batches were waiting)")));
      batch = std::move(it->second);
      w.batches.erase(it);
    }
    OP_REQUIRES(ctx, static_cast<int>(batch.size()) == ctx->num_outputs(),
                absl::InvalidArgumentError(absl::StrCat(kTake, ": the batch of ticket ", t, " has ",
                                                        batch.size(), " tensors, the op ",
                                                        ctx->num_outputs())));
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      OP_REQUIRES(ctx, batch[i].dtype() == ctx->expected_output_dtype(i),
                  absl::InvalidArgumentError(
                      absl::StrCat(kTake, ": tensor ", i, " of ticket ", t, " is ",
                                   tensorflow::DataTypeString(batch[i].dtype()), ", the op gives ",
                                   tensorflow::DataTypeString(ctx->expected_output_dtype(i)))));
      ctx->set_output(i, batch[i]);
    }
  }
};

}  // namespace

REGISTER_OP("OnTheFly>BridgePut")
    .Input("ticket: int64")
    .Input("producer_streams: int64")
    .Input("tensors: T")
    .Attr("T: list(type) >= 0")
    .SetIsStateful()
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext*) { return absl::OkStatus(); })
    .Doc(R"doc(
Keeps a batch for OnTheFly>BridgeTake under `ticket`, after ordering the op's stream after
each producer stream's work (and those streams after the op's stream's work so far) on the
GPU. producer_streams: CUDA stream handles of the library that made the batch; empty where
the bridge waited for the producer on the host. Used by tf_onthefly.interop.DeviceBridge.
)doc");

REGISTER_OP("OnTheFly>BridgeTake")
    .Input("ticket: int64")
    .Output("tensors: T")
    .Attr("T: list(type) >= 0")
    .SetIsStateful()
    // Unknown shapes: the bridge sets each output's shape from its signature.
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext* c) {
      for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, c->UnknownShape());
      return absl::OkStatus();
    })
    .Doc(R"doc(
The batch OnTheFly>BridgePut kept under `ticket`, as it is (no copy); each ticket once.
Used by tf_onthefly.interop.DeviceBridge.
)doc");

REGISTER_KERNEL_BUILDER(Name("OnTheFly>BridgePut")
                            .Device(tensorflow::DEVICE_GPU)
                            .HostMemory("ticket")
                            .HostMemory("producer_streams"),
                        BridgePutOp);
REGISTER_KERNEL_BUILDER(Name("OnTheFly>BridgePut").Device(tensorflow::DEVICE_CPU), BridgePutOp);
REGISTER_KERNEL_BUILDER(
    Name("OnTheFly>BridgeTake").Device(tensorflow::DEVICE_GPU).HostMemory("ticket"), BridgeTakeOp);
REGISTER_KERNEL_BUILDER(Name("OnTheFly>BridgeTake").Device(tensorflow::DEVICE_CPU), BridgeTakeOp);

}  // namespace device_bridge
}  // namespace tf_onthefly

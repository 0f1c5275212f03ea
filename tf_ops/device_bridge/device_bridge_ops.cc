// The device-array bridge (tf_onthefly.interop.DeviceBridge, docs/interop.md): batches made
// by another library's Python code (CuPy, PyTorch, Numba, JAX) enter TensorFlow's step as
// tensors wrapping that library's memory (DLPack: no copy), ordered on the GPU.
//
// Two sides meet here, by bridge and step:
//   the bridge's Python puts a batch under (bridge, step) through the C functions at the
//   end of this file (ctypes: no TensorFlow op and no tf.py_function, whose dispatch alone
//   costs more than a small step), from the caller's thread eagerly or from the bridge's
//   producer thread, which makes the steps the graph asks for and the next `prefetch`
//   steps ahead of it;
//   OnTheFly>BridgeTake(step), an op on the bridge's device, takes the batch of `step` out,
//   waiting on the host only until it has been put.
// Ordering on the GPU, with no host wait for the producer: at the put, an event is recorded
// on each producer stream (the library's work for this batch so far); at the take, the op's
// stream (TensorFlow's) waits for those events, then records an event of its own that each
// producer stream waits for, so memory the producer frees after the take is written again
// only once TensorFlow's stream has passed everything queued before it. The last `keep`
// batches taken stay referenced here, so their memory is not freed while TensorFlow's
// stream may still read them.
//
// Nothing here holds the bridge's mutex while a tensor is dropped: dropping the last
// reference to another library's memory calls its DLPack deleter, which may take Python's
// GIL. The CUDA driver comes from tf_ops/common/cuda_driver.h.
#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif
#ifndef EIGEN_USE_GPU
#define EIGEN_USE_GPU
#endif

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tensorflow/core/framework/allocation_description.pb.h"
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
namespace tfw = tensorflow;
constexpr char kTake[] = "OnTheFly>BridgeTake";
constexpr int kMaxRank = 8;  // the signature's ranks the bridge takes (interop.py checks)

// ---- DLPack (dlpack.h, the stable ABI every producer library exports) ---------------------
struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
struct DLManagedTensorVersioned {
  uint32_t major, minor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned*);
  uint64_t flags;
  DLTensor dl_tensor;
};
constexpr int32_t kDLCPU = 1, kDLCUDA = 2, kDLCUDAManaged = 13;
constexpr uint8_t kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLComplex = 5, kDLBool = 6;

tfw::DataType DataTypeOf(DLDataType t) {
  if (t.lanes != 1) return tfw::DT_INVALID;
  switch (t.code) {
    case kDLInt:
      return t.bits == 8    ? tfw::DT_INT8
             : t.bits == 16 ? tfw::DT_INT16
             : t.bits == 32 ? tfw::DT_INT32
             : t.bits == 64 ? tfw::DT_INT64
                            : tfw::DT_INVALID;
    case kDLUInt:
      return t.bits == 8    ? tfw::DT_UINT8
             : t.bits == 16 ? tfw::DT_UINT16
             : t.bits == 32 ? tfw::DT_UINT32
             : t.bits == 64 ? tfw::DT_UINT64
                            : tfw::DT_INVALID;
    case kDLFloat:
      return t.bits == 16   ? tfw::DT_HALF
             : t.bits == 32 ? tfw::DT_FLOAT
             : t.bits == 64 ? tfw::DT_DOUBLE
                            : tfw::DT_INVALID;
    case kDLBfloat:
      return t.bits == 16 ? tfw::DT_BFLOAT16 : tfw::DT_INVALID;
    case kDLComplex:
      return t.bits == 64    ? tfw::DT_COMPLEX64
             : t.bits == 128 ? tfw::DT_COMPLEX128
                             : tfw::DT_INVALID;
    case kDLBool:
      return t.bits == 8 ? tfw::DT_BOOL : tfw::DT_INVALID;
    default:
      return tfw::DT_INVALID;
  }
}

// Hands a DLPack tensor back to its producer (its deleter frees or unreferences it).
void Release(void* managed, bool versioned) {
  if (versioned) {
    auto* m = static_cast<DLManagedTensorVersioned*>(managed);
    if (m->deleter != nullptr) m->deleter(m);
  } else {
    auto* m = static_cast<DLManagedTensor*>(managed);
    if (m->deleter != nullptr) m->deleter(m);
  }
}

// A DLPack tensor's memory as a TensorFlow buffer: the producer's deleter runs when the last
// tensor using it is gone.
class DlpackBuffer : public tfw::TensorBuffer {
 public:
  DlpackBuffer(void* data, size_t size, void* managed, bool versioned)
      : TensorBuffer(data), size_(size), managed_(managed), versioned_(versioned) {}
  ~DlpackBuffer() override { Release(managed_, versioned_); }
  size_t size() const override { return size_; }
  TensorBuffer* root_buffer() override { return this; }
  void FillAllocationDescription(tfw::AllocationDescription* proto) const override {
    proto->set_requested_bytes(static_cast<int64_t>(size_));
    proto->set_allocator_name("DLPack");
  }
  bool OwnsMemory() const override { return false; }

 private:
  size_t size_;
  void* managed_;
  bool versioned_;
};

}  // namespace

// One field of a batch as the bridge's Python hands it over (interop.py's _Field has the
// same layout).
struct Field {
  int32_t kind;   // kHost: `data` holds host values, copied now; kDlpack / kDlpackVersioned:
                  // `data` is a DLManagedTensor(Versioned)* the bridge takes ownership of
  int32_t dtype;  // kHost: the values' TensorFlow DataType
  int32_t rank;   // kHost
  int32_t reserved;
  int64_t dims[kMaxRank];  // kHost
  void* data;
};
constexpr int32_t kHost = 0, kDlpack = 1, kDlpackVersioned = 2;

namespace {

// What a put or take that failed tells the bridge's Python: `field` is the field whose dtype
// or shape is not the signature's (-1: another error, in `message`), with what it has.
struct Refusal {
  int32_t field = -1, dtype = 0, rank = 0;
  int64_t dims[kMaxRank] = {};
  std::string message;
};

struct Batch {
  std::vector<tfw::Tensor> tensors;
  std::vector<bool> host;  // tensor i holds host memory (host values, copied at the put)
  // Producer streams and the events recorded on them at the put (TensorFlow's stream waits
  // for these at the take).
  std::vector<std::pair<cd::CUstream, cd::CUevent>> waits;
  absl::Status error;  // make_batch failed for this step: the take reports it
};

// pthread's condition variable and a reference count of our own: with gcc 12's headers
// std::condition_variable's wait and std::shared_ptr import GLIBCXX_3.4.30, GLIBC_2.32 and
// GLIBC_2.34, past the wheel's manylinux_2_24 promise (docs/packaging.md).
class CondVar {
 public:
  CondVar() { pthread_cond_init(&c_, nullptr); }
  ~CondVar() { pthread_cond_destroy(&c_); }
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;
  void NotifyAll() { pthread_cond_broadcast(&c_); }
  void Wait(std::unique_lock<std::mutex>& lock) {
    pthread_cond_wait(&c_, lock.mutex()->native_handle());
  }
  // False when `ms` milliseconds passed with no notification.
  bool WaitFor(std::unique_lock<std::mutex>& lock, int ms) {
    timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += static_cast<long>(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
      t.tv_sec += 1;
      t.tv_nsec -= 1000000000L;
    }
    return pthread_cond_timedwait(&c_, lock.mutex()->native_handle(), &t) != ETIMEDOUT;
  }

 private:
  pthread_cond_t c_;
};

struct Bridge {
  int keep = 2, prefetch = 2, gpu = -1;  // gpu: the CUDA ordinal of a GPU bridge, -1 on a CPU
  std::vector<tfw::DataType> dtypes;
  std::vector<std::vector<int64_t>> shapes;  // -1: any size; empty with `ranked` false: any
  std::vector<bool> ranked;

  std::atomic<int> refs{1};  // the registry's, and one per user of the bridge (BridgeRef)
  std::mutex mu;
  CondVar cv;
  std::map<int64_t, Batch> ready;               // put, not yet taken
  std::set<int64_t> wanted, producing;          // steps a take waits for; steps being made
  int64_t cursor = 0;                           // the next step to make ahead
  bool sequential = false;                      // whether a take has set `cursor`
  bool producer = false, closed = false;        // a producer thread serves it; it is gone
  std::vector<std::vector<tfw::Tensor>> taken;  // the last `keep` batches taken
};

struct Registry {
  std::mutex mu;
  int64_t next_id = 1;
  std::map<int64_t, Bridge*> bridges;
};

void Unref(Bridge* b) {
  if (b != nullptr && b->refs.fetch_sub(1) == 1) delete b;
}

// A bridge in use: it lives while referenced, even if it is closed meanwhile.
class BridgeRef {
 public:
  explicit BridgeRef(Bridge* b) : b_(b) {}
  ~BridgeRef() { Unref(b_); }
  BridgeRef(const BridgeRef&) = delete;
  BridgeRef& operator=(const BridgeRef&) = delete;
  Bridge* operator->() const { return b_; }
  Bridge& operator*() const { return *b_; }
  bool operator==(std::nullptr_t) const { return b_ == nullptr; }
  bool operator!=(std::nullptr_t) const { return b_ != nullptr; }

 private:
  Bridge* b_;
};
Registry& Bridges() {
  static auto* r = new Registry;
  return *r;
}
Bridge* Find(int64_t id) {  // referenced: hold it in a BridgeRef
  Registry& r = Bridges();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.bridges.find(id);
  if (it == r.bridges.end()) return nullptr;
  it->second->refs.fetch_add(1);
  return it->second;
}

std::string DriverError(const cd::Driver& d, cd::CUresult r, const std::string& what) {
  return absl::StrCat(what, ": ", cd::ErrorText(d, r));
}

// An event recorded now on each producer stream (the work that makes this batch).
bool RecordProducers(const int64_t* streams, int32_t count, Batch* batch, std::string* error) {
  if (count == 0) return true;
  const cd::Driver& d = cd::Get();
  if (!d.error.empty()) {
    *error = "cannot order the streams: " + d.error;
    return false;
  }
  for (int32_t i = 0; i < count; ++i) {
    auto stream = reinterpret_cast<cd::CUstream>(static_cast<uintptr_t>(streams[i]));
    cd::CUcontext ctx = nullptr;
    cd::CUresult r = d.StreamGetCtx(stream, &ctx);
    if (r != cd::kSuccess) {
      *error = DriverError(d, r,
                           absl::StrCat("cannot find the context of the producer's stream ",
                                        streams[i], " (not a CUDA stream?)"));
      return false;
    }
    cd::ScopedContext scope(d, ctx);
    cd::CUevent event = nullptr;
    if (!scope.ok() || (r = d.EventCreate(&event, cd::kEventDisableTiming)) != cd::kSuccess) {
      *error = DriverError(d, r, "cannot create an event in the producer's context");
      return false;
    }
    batch->waits.emplace_back(stream, event);
    if ((r = d.EventRecord(event, stream)) != cd::kSuccess) {
      *error = DriverError(
          d, r, absl::StrCat("cannot record an event on the producer's stream ", streams[i]));
      return false;
    }
  }
  return true;
}

void DestroyEvents(Batch* batch) {
  const cd::Driver& d = cd::Get();
  for (auto& w : batch->waits) d.EventDestroy(w.second);  // pending waits still complete
  batch->waits.clear();
}

// TensorFlow's stream waits for the batch's producer streams; they wait for TensorFlow's
// stream as it is now.
absl::Status Order(cd::CUstream tf_stream, Batch* batch) {
  const cd::Driver& d = cd::Get();
  cd::CUcontext ctx = nullptr;
  cd::CUresult r = d.StreamGetCtx(tf_stream, &ctx);
  if (r != cd::kSuccess)
    return absl::InternalError(DriverError(d, r, "cannot find the context of TensorFlow's stream"));
  cd::ScopedContext scope(d, ctx);
  if (!scope.ok()) return absl::InternalError("cannot make TensorFlow's context current");
  for (auto& w : batch->waits) {
    if ((r = d.StreamWaitEvent(tf_stream, w.second, 0)) != cd::kSuccess)
      return absl::InternalError(
          DriverError(d, r, "TensorFlow's stream cannot wait for the producer's"));
  }
  // One event per context for TensorFlow's side, reused: a wait is for the event's record
  // at the time of the wait call.
  static std::mutex mu;
  static auto* consumer = new std::map<cd::CUcontext, cd::CUevent>;
  std::lock_guard<std::mutex> lock(mu);
  cd::CUevent& e = (*consumer)[ctx];
  if (e == nullptr && (r = d.EventCreate(&e, cd::kEventDisableTiming)) != cd::kSuccess) {
    e = nullptr;
    return absl::InternalError(DriverError(d, r, "cannot create an event"));
  }
  if ((r = d.EventRecord(e, tf_stream)) != cd::kSuccess)
    return absl::InternalError(DriverError(d, r, "cannot record an event on TensorFlow's stream"));
  for (auto& w : batch->waits) {
    if ((r = d.StreamWaitEvent(w.first, e, 0)) != cd::kSuccess)
      return absl::InternalError(
          DriverError(d, r, "the producer's stream cannot wait for TensorFlow's"));
  }
  return absl::OkStatus();
}

bool Matches(const Bridge& b, size_t i, tfw::DataType dtype, int rank, const int64_t* dims) {
  if (dtype != b.dtypes[i]) return false;
  if (!b.ranked[i]) return true;
  if (rank != static_cast<int>(b.shapes[i].size())) return false;
  for (int k = 0; k < rank; ++k)
    if (b.shapes[i][k] >= 0 && b.shapes[i][k] != dims[k]) return false;
  return true;
}

void Refuse(Refusal* out, int32_t field, tfw::DataType dtype, int rank, const int64_t* dims) {
  out->field = field;
  out->dtype = dtype;
  out->rank = rank;
  for (int k = 0; k < std::min(rank, kMaxRank); ++k) out->dims[k] = dims[k];
}

// Checks every field against the signature and where its memory is, before taking any.
bool Check(const Bridge& b, const Field* fields, int32_t n, Refusal* out) {
  if (n != static_cast<int32_t>(b.dtypes.size())) {
    out->message = absl::StrCat("the batch has ", n, " fields, the signature ", b.dtypes.size());
    return false;
  }
  for (int32_t i = 0; i < n; ++i) {
    const Field& f = fields[i];
    if (f.kind == kHost) {
      if (f.rank < 0 || f.rank > kMaxRank) {
        out->message = absl::StrCat("field ", i, " has rank ", f.rank, ", more than ", kMaxRank);
        return false;
      }
      if (!tfw::DataTypeCanUseMemcpy(static_cast<tfw::DataType>(f.dtype))) {
        out->message = absl::StrCat("field ", i, " has a dtype the bridge cannot copy (",
                                    tfw::DataTypeString(static_cast<tfw::DataType>(f.dtype)), ")");
        return false;
      }
      if (!Matches(b, i, static_cast<tfw::DataType>(f.dtype), f.rank, f.dims)) {
        Refuse(out, i, static_cast<tfw::DataType>(f.dtype), f.rank, f.dims);
        return false;
      }
      continue;
    }
    if (f.kind != kDlpack && f.kind != kDlpackVersioned) {
      out->message = absl::StrCat("field ", i, " is of an unknown kind ", f.kind);
      return false;
    }
    const DLTensor& t = f.kind == kDlpack
                            ? static_cast<DLManagedTensor*>(f.data)->dl_tensor
                            : static_cast<DLManagedTensorVersioned*>(f.data)->dl_tensor;
    const tfw::DataType dtype = DataTypeOf(t.dtype);
    if (dtype == tfw::DT_INVALID) {
      out->message =
          absl::StrCat("field ", i, " has a DLPack dtype TensorFlow has no type for (code ",
                       t.dtype.code, ", ", t.dtype.bits, " bits, ", t.dtype.lanes, " lanes)");
      return false;
    }
    if (!Matches(b, i, dtype, t.ndim, t.shape)) {
      Refuse(out, i, dtype, t.ndim, t.shape);
      return false;
    }
    if (t.strides != nullptr) {
      int64_t expect = 1;
      for (int k = t.ndim - 1; k >= 0; --k) {
        if (t.shape[k] != 1 && t.strides[k] != expect) {
          out->message = absl::StrCat("field ", i,
                                      " is not contiguous in row-major order (strides of a "
                                      "view): make it contiguous (e.g. .copy() / .contiguous())");
          return false;
        }
        expect *= t.shape[k];
      }
    }
    const bool device = t.device.device_type == kDLCUDA || t.device.device_type == kDLCUDAManaged;
    if (t.device.device_type != kDLCPU && !device) {
      out->message = absl::StrCat("field ", i, " is in memory of DLPack device type ",
                                  t.device.device_type, ", neither the host nor a CUDA GPU");
      return false;
    }
    if (device && t.device.device_id != b.gpu) {
      out->message =
          b.gpu < 0
              ? absl::StrCat("field ", i, " is on GPU ", t.device.device_id,
                             ", and the bridge's device is a CPU")
              : absl::StrCat("field ", i, " is on GPU ", t.device.device_id,
                             ", the bridge's device is GPU ", b.gpu,
                             ": make the arrays on the bridge's GPU (or give the bridge that GPU "
                             "as its device)");
      return false;
    }
    if (device && dtype == tfw::DT_INT32) {
      out->message = absl::StrCat("field ", i,
                                  " is an int32 array on a GPU, which TensorFlow keeps in "
                                  "host memory");
      return false;
    }
  }
  return true;
}

// The fields as tensors; the DLPack ones now belong to the batch (their deleters run when
// their tensors are gone). Host values (NumPy, a host DLPack tensor) are copied.
void Adopt(const Field* fields, int32_t n, Batch* batch) {
  for (int32_t i = 0; i < n; ++i) {
    const Field& f = fields[i];
    if (f.kind == kHost) {
      tfw::TensorShape shape;
      for (int k = 0; k < f.rank; ++k) shape.AddDim(f.dims[k]);
      tfw::Tensor t(static_cast<tfw::DataType>(f.dtype), shape);
      if (t.TotalBytes() > 0) std::memcpy(t.data(), f.data, t.TotalBytes());
      batch->tensors.push_back(std::move(t));
      batch->host.push_back(true);
      continue;
    }
    const bool versioned = f.kind == kDlpackVersioned;
    const DLTensor& dl = versioned ? static_cast<DLManagedTensorVersioned*>(f.data)->dl_tensor
                                   : static_cast<DLManagedTensor*>(f.data)->dl_tensor;
    tfw::TensorShape shape;
    for (int k = 0; k < dl.ndim; ++k) shape.AddDim(dl.shape[k]);
    const tfw::DataType dtype = DataTypeOf(dl.dtype);
    char* data = static_cast<char*>(dl.data) + dl.byte_offset;
    const size_t bytes = shape.num_elements() * tfw::DataTypeSize(dtype);
    if (dl.device.device_type == kDLCPU) {  // host memory: copied, the producer's freed now
      tfw::Tensor t(dtype, shape);
      if (bytes > 0) std::memcpy(t.data(), data, bytes);
      Release(f.data, versioned);
      batch->tensors.push_back(std::move(t));
      batch->host.push_back(true);
      continue;
    }
    auto* buffer = new DlpackBuffer(data, bytes, f.data, versioned);
    batch->tensors.emplace_back(dtype, shape, buffer);
    batch->host.push_back(false);
    buffer->Unref();
  }
}

int32_t Fail(Refusal* r, char* message, int64_t size, int32_t* refused) {
  if (size > 0) {
    const size_t n = std::min(static_cast<size_t>(size - 1), r->message.size());
    std::memcpy(message, r->message.data(), n);
    message[n] = '\0';
  }
  refused[0] = r->field;
  refused[1] = r->dtype;
  refused[2] = r->rank;
  return 1;
}

// Drops what `batches` hold after every lock is released (deleters may take the GIL).
template <typename T>
void Drop(T* batches) {
  T gone;
  std::swap(gone, *batches);
}

}  // namespace
}  // namespace device_bridge
}  // namespace tf_onthefly

namespace dbr = tf_onthefly::device_bridge;

// ---- The bridge's C functions (interop.py calls them through ctypes) -----------------------
extern "C" {

// A bridge for batches of `n` fields of the given TensorFlow dtypes and shapes (ranks[i] < 0:
// any shape; dims[i * 8 + k] < 0: any size), entering the step on CUDA GPU `gpu` (-1: the
// CPU). Returns its id.
__attribute__((visibility("default"))) int64_t OtfBridgeOpen(int32_t keep, int32_t prefetch,
                                                             int32_t gpu, int32_t n,
                                                             const int32_t* dtypes,
                                                             const int32_t* ranks,
                                                             const int64_t* dims) {
  auto* b = new dbr::Bridge;
  b->keep = std::max(1, keep);
  b->prefetch = std::max(0, prefetch);
  b->gpu = gpu;
  for (int32_t i = 0; i < n; ++i) {
    b->dtypes.push_back(static_cast<tensorflow::DataType>(dtypes[i]));
    b->ranked.push_back(ranks[i] >= 0);
    b->shapes.emplace_back(dims + i * dbr::kMaxRank,
                           dims + i * dbr::kMaxRank + std::max(0, ranks[i]));
  }
  dbr::Registry& r = dbr::Bridges();
  std::lock_guard<std::mutex> lock(r.mu);
  const int64_t id = r.next_id++;
  r.bridges[id] = b;
  return id;
}

// The bridge is gone: its batches are dropped, a take waiting for one fails, the producer
// thread stops.
__attribute__((visibility("default"))) void OtfBridgeClose(int64_t id) {
  dbr::Bridge* found = nullptr;
  {
    dbr::Registry& r = dbr::Bridges();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.bridges.find(id);
    if (it == r.bridges.end()) return;
    found = it->second;
    r.bridges.erase(it);
  }
  dbr::BridgeRef b(found);  // the registry's reference, dropped on return
  std::map<int64_t, dbr::Batch> ready;
  std::vector<std::vector<tensorflow::Tensor>> taken;
  {
    std::lock_guard<std::mutex> lock(b->mu);
    b->closed = true;
    std::swap(ready, b->ready);
    std::swap(taken, b->taken);
    b->cv.NotifyAll();
  }
  for (auto& kv : ready) dbr::DestroyEvents(&kv.second);
}

// Puts the batch of `step`: checks every field, records an event on each producer stream,
// and takes ownership of the DLPack fields. 0 on success; otherwise nothing was taken,
// `message` says why, and refused = {field whose dtype or shape is not the signature's (-1:
// none), its TensorFlow dtype, its rank}, refused_dims its dims.
__attribute__((visibility("default"))) int32_t OtfBridgePut(int64_t id, int64_t step, int32_t n,
                                                            const dbr::Field* fields,
                                                            const int64_t* streams,
                                                            int32_t nstreams, char* message,
                                                            int64_t message_size, int32_t* refused,
                                                            int64_t* refused_dims) {
  dbr::Refusal refusal;
  dbr::BridgeRef b(dbr::Find(id));
  if (b == nullptr) {
    refusal.message = "the bridge was closed";
    return dbr::Fail(&refusal, message, message_size, refused);
  }
  if (!dbr::Check(*b, fields, n, &refusal)) {
    std::copy(refusal.dims, refusal.dims + dbr::kMaxRank, refused_dims);
    return dbr::Fail(&refusal, message, message_size, refused);
  }
  dbr::Batch batch;
  if (!dbr::RecordProducers(streams, nstreams, &batch, &refusal.message)) {
    dbr::DestroyEvents(&batch);
    return dbr::Fail(&refusal, message, message_size, refused);
  }
  dbr::Adopt(fields, n, &batch);
  dbr::Batch replaced;
  {
    std::lock_guard<std::mutex> lock(b->mu);
    b->producing.erase(step);
    auto it = b->ready.find(step);
    if (it != b->ready.end()) replaced = std::move(it->second);
    b->ready[step] = std::move(batch);
    b->cv.NotifyAll();
  }
  dbr::DestroyEvents(&replaced);
  return 0;
}

// make_batch failed for `step`: the take of that step fails with this error (a TensorFlow
// error code and message).
__attribute__((visibility("default"))) void OtfBridgeFail(int64_t id, int64_t step, int32_t code,
                                                          const char* message) {
  dbr::BridgeRef b(dbr::Find(id));
  if (b == nullptr) return;
  dbr::Batch batch;
  batch.error = absl::Status(static_cast<absl::StatusCode>(code), message);
  dbr::Batch replaced;
  {
    std::lock_guard<std::mutex> lock(b->mu);
    b->producing.erase(step);
    auto it = b->ready.find(step);
    if (it != b->ready.end()) replaced = std::move(it->second);
    b->ready[step] = std::move(batch);
    b->cv.NotifyAll();
  }
  dbr::DestroyEvents(&replaced);
}

// A producer thread serves the bridge (attached) or no longer does: a take that finds no
// batch waits for one only while a producer thread serves it.
__attribute__((visibility("default"))) void OtfBridgeServe(int64_t id, int32_t serving) {
  dbr::BridgeRef b(dbr::Find(id));
  if (b == nullptr) return;
  std::lock_guard<std::mutex> lock(b->mu);
  b->producer = serving != 0;
  b->cv.NotifyAll();
}

// The producer thread's next step to make: one a take waits for, else the next of the
// sequence the takes follow while fewer than `prefetch` batches wait. 1 with *step set; 0
// after `timeout_ms` with nothing to make; -1 once the bridge is closed.
__attribute__((visibility("default"))) int32_t OtfBridgeNext(int64_t id, int32_t timeout_ms,
                                                             int64_t* step) {
  dbr::BridgeRef b(dbr::Find(id));
  if (b == nullptr) return -1;
  std::unique_lock<std::mutex> lock(b->mu);
  bool timed_out = false;
  while (true) {
    if (b->closed) return -1;
    for (int64_t s : b->wanted) {
      if (!b->ready.count(s) && !b->producing.count(s)) {
        b->producing.insert(s);
        b->cursor = s + 1;
        b->sequential = true;
        *step = s;
        return 1;
      }
    }
    if (b->sequential && b->ready.size() + b->producing.size() < static_cast<size_t>(b->prefetch) &&
        !b->ready.count(b->cursor) && !b->producing.count(b->cursor)) {
      *step = b->cursor++;
      b->producing.insert(*step);
      return 1;
    }
    if (timed_out) return 0;
    timed_out = !b->cv.WaitFor(lock, timeout_ms);
  }
}

}  // extern "C"

namespace tf_onthefly {
namespace device_bridge {
namespace {

class BridgeTakeOp : public tfw::OpKernel {
 public:
  explicit BridgeTakeOp(tfw::OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("bridge", &id_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("wait", &wait_));
    gpu_ = ctx->device_type() == tfw::DeviceType(tfw::DEVICE_GPU);
  }

  void Compute(tfw::OpKernelContext* ctx) override {
    const tfw::Tensor& step_tensor = ctx->input(0);
    OP_REQUIRES(ctx, tfw::TensorShapeUtils::IsScalar(step_tensor.shape()),
                absl::InvalidArgumentError(absl::StrCat(kTake, ": step must be a scalar")));
    const int64_t step = step_tensor.scalar<int64_t>()();
    BridgeRef b(Find(id_));
    OP_REQUIRES(ctx, b != nullptr,
                absl::FailedPreconditionError(
                    absl::StrCat(kTake, ": no DeviceBridge ", id_,
                                 " in this process (it was closed, or this is a "
                                 "saved graph: the bridge's Python is not part of a SavedModel)")));
    Batch batch;
    std::map<int64_t, Batch> stale;
    {
      std::unique_lock<std::mutex> lock(b->mu);
      if (wait_) {  // the producer thread makes what a waiting take wants
        b->wanted.insert(step);
        b->cv.NotifyAll();
      }
      while (wait_ && !b->ready.count(step) && !b->closed) {
        if (!b->producer && !b->producing.count(step)) break;
        b->cv.Wait(lock);
      }
      if (wait_) b->wanted.erase(step);
      auto it = b->ready.find(step);
      if (it != b->ready.end()) {
        batch = std::move(it->second);
        b->ready.erase(it);
      } else {
        batch.error = absl::FailedPreconditionError(
            b->closed ? "the bridge was closed"
            : wait_   ? "no batch of this step was put, and no producer thread makes it"
                    : "the batch of this step was not there (taken by another call of the bridge)");
      }
      // Batches made ahead for steps the takes have moved past, or too far ahead, are dropped.
      for (auto s = b->ready.begin(); s != b->ready.end();) {
        if (s->first < step || s->first > step + 1 + b->prefetch) {
          stale.insert(b->ready.extract(s++));
        } else {
          ++s;
        }
      }
    }
    for (auto& kv : stale) DestroyEvents(&kv.second);
    if (!batch.error.ok()) {
      DestroyEvents(&batch);
      ctx->SetStatus(absl::Status(
          batch.error.code(), absl::StrCat(kTake, " (step ", step, "): ", batch.error.message())));
      return;
    }
    OP_REQUIRES(
        ctx, static_cast<int>(batch.tensors.size()) == ctx->num_outputs(),
        absl::InvalidArgumentError(absl::StrCat(kTake, ": the batch has ", batch.tensors.size(),
                                                " tensors, the op ", ctx->num_outputs())));
    cd::CUstream stream = nullptr;
    if (gpu_)
      stream = reinterpret_cast<cd::CUstream>(ctx->eigen_device<Eigen::GpuDevice>().stream());
    if (gpu_ && !batch.waits.empty()) {
      const absl::Status s = Order(stream, &batch);
      DestroyEvents(&batch);
      OP_REQUIRES_OK(ctx, absl::Status(s.code(), absl::StrCat(kTake, ": ", s.message())));
    }
    std::vector<tfw::Tensor> outputs;
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      tfw::Tensor& t = batch.tensors[i];
      OP_REQUIRES(ctx, t.dtype() == ctx->expected_output_dtype(i),
                  absl::InvalidArgumentError(absl::StrCat(
                      kTake, ": tensor ", i, " is ", tfw::DataTypeString(t.dtype()),
                      ", the op gives ", tfw::DataTypeString(ctx->expected_output_dtype(i)))));
      if (gpu_ && batch.host[i]) {
        // Host values of a GPU bridge: copied to the GPU on TensorFlow's stream (the copy from
        // pageable memory is staged before the call returns, so `t` may go afterwards).
        tfw::Tensor* out = nullptr;
        OP_REQUIRES_OK(ctx, ctx->allocate_output(i, t.shape(), &out));
        if (t.TotalBytes() > 0) {
          const cd::Driver& d = cd::Get();
          OP_REQUIRES(ctx, d.error.empty(),
                      absl::FailedPreconditionError(absl::StrCat(kTake, ": ", d.error)));
          const cd::CUresult r = d.MemcpyHtoDAsync(
              static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(out->data())), t.data(),
              t.TotalBytes(), stream);
          OP_REQUIRES(
              ctx, r == cd::kSuccess,
              absl::InternalError(DriverError(d, r, absl::StrCat(kTake, ": host-to-device copy"))));
        }
        outputs.push_back(*out);
      } else {
        ctx->set_output(i, t);
        outputs.push_back(t);
      }
    }
    std::vector<std::vector<tfw::Tensor>> released;
    {
      std::lock_guard<std::mutex> lock(b->mu);
      b->taken.push_back(std::move(outputs));
      while (b->taken.size() > static_cast<size_t>(b->keep)) {
        released.push_back(std::move(b->taken.front()));
        b->taken.erase(b->taken.begin());
      }
    }
    // `batch`, `released` and `stale` are dropped here, with no lock held.
  }

 private:
  int64_t id_ = 0;
  bool wait_ = true, gpu_ = false;
};

}  // namespace

REGISTER_OP("OnTheFly>BridgeTake")
    .Input("step: int64")
    .Output("tensors: T")
    .Attr("bridge: int")
    .Attr("wait: bool = true")
    .Attr("T: list(type) >= 0")
    .SetIsStateful()
    // Unknown shapes: the bridge sets each output's shape from its signature.
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext* c) {
      for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, c->UnknownShape());
      return absl::OkStatus();
    })
    .Doc(R"doc(
The batch of `step` from tf_onthefly.interop.DeviceBridge number `bridge`, as the bridge's
Python put it (no copy of device arrays): with `wait`, waits on the host until it is put (the
bridge's producer thread makes it; an eager call puts it first and does not wait), then
orders the op's stream after the producer's work on the GPU.
)doc");

REGISTER_KERNEL_BUILDER(
    Name("OnTheFly>BridgeTake").Device(tensorflow::DEVICE_GPU).HostMemory("step"), BridgeTakeOp);
REGISTER_KERNEL_BUILDER(Name("OnTheFly>BridgeTake").Device(tensorflow::DEVICE_CPU), BridgeTakeOp);

}  // namespace device_bridge
}  // namespace tf_onthefly

// OnTheFly>CudaKernel: a user's PTX kernel (Numba's cuda.compile_ptx, CuPy/NVRTC, clang or
// nvcc -ptx) launched as a native TensorFlow op, on TensorFlow's stream, into outputs
// TensorFlow allocated. No C++ build on the user's side: the PTX is an attribute, so it
// travels with the graph (SavedModel included).
//
// The CUDA driver API is reached through dlopen("libcuda.so.1") at the first GPU launch, so
// the op library has no link-time dependency on it and still loads where there is no GPU
// (tensorflow-cpu, CI). The module is loaded once per (CUDA context, PTX) and cached for
// the life of the process. Every failure (PTX that does not compile, an entry that is not
// in it, a parameter list that does not match, a grid the device cannot run, a launch
// that fails) is an op error naming the op and the entry; none ends the process.
//
// The kernel's parameters, in order (docs/interop.md, "The kernel's parameters"):
//   const int64_t* seed, int64_t seed_size, const int64_t* step,      (device memory)
//   int64_t first_sample, int64_t num_samples, int64_t batch_size,
//   int64_t int_scalars[i]...,  float float_scalars[i]...,
//   const T* inputs[i]...,      T* outputs[i]...                       (device memory)
#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif
#ifndef EIGEN_USE_GPU
#define EIGEN_USE_GPU
#endif

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/tensor_shape.h"
#include "tensorflow/core/framework/types.h"
#include "tf_ops/common/dlfcn_compat.h"
#include "tf_ops/common/tf_glue.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tf_onthefly {
namespace interop {
namespace {

// ---- The CUDA driver API, through dlopen ------------------------------------------------
// Only the types and constants below are used, with the driver API's own values (cuda.h,
// stable since CUDA 4), so no CUDA header or library is needed to build or load this file.
using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
constexpr CUresult kCudaSuccess = 0;
constexpr CUresult kCudaErrorInvalidValue = 1;
constexpr int kJitInfoLogBuffer = 3, kJitInfoLogBufferSize = 4, kJitErrorLogBuffer = 5,
              kJitErrorLogBufferSize = 6;      // CUjit_option
constexpr int kFuncMaxThreadsPerBlock = 0;     // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
constexpr int kFuncSharedSizeBytes = 1;        // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
constexpr int kFuncMaxDynamicSharedBytes = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
constexpr int kDevAttrMaxGridDimX = 5;         // CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X
constexpr int kDevAttrMaxGridDimY = 6, kDevAttrMaxGridDimZ = 7;

struct Driver {
  CUresult (*GetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*GetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*StreamGetCtx)(CUstream, CUcontext*) = nullptr;
  CUresult (*CtxPushCurrent)(CUcontext) = nullptr;
  CUresult (*CtxPopCurrent)(CUcontext*) = nullptr;
  CUresult (*CtxGetDevice)(CUdevice*) = nullptr;
  CUresult (*CtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*ModuleLoadDataEx)(CUmodule*, const void*, unsigned, int*, void**) = nullptr;
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*FuncGetAttribute)(int*, int, CUfunction) = nullptr;
  CUresult (*FuncSetAttribute)(CUfunction, int, int) = nullptr;
  // CUDA 12.4 on: the kernel's parameter list, to check it against what the op passes.
  // Absent in older drivers (then the list is not checked).
  CUresult (*FuncGetParamInfo)(CUfunction, size_t, size_t*, size_t*) = nullptr;
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void**, void**) = nullptr;
  std::string error;  // why the driver is unusable, if it is
};

template <typename F>
bool Resolve(void* lib, const char* name, F* f) {
  *f = reinterpret_cast<F>(dlsym(lib, name));
  return *f != nullptr;
}

const Driver& GetDriver() {
  static const Driver* driver = [] {
    auto* d = new Driver;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();
      d->error = absl::StrCat("the CUDA driver library libcuda.so.1 could not be loaded (",
                              why ? why : "unknown reason", ")");
      return d;
    }
    bool ok = Resolve(lib, "cuGetErrorName", &d->GetErrorName) &&
              Resolve(lib, "cuGetErrorString", &d->GetErrorString) &&
              Resolve(lib, "cuStreamGetCtx", &d->StreamGetCtx) &&
              Resolve(lib, "cuCtxPushCurrent_v2", &d->CtxPushCurrent) &&
              Resolve(lib, "cuCtxPopCurrent_v2", &d->CtxPopCurrent) &&
              Resolve(lib, "cuCtxGetDevice", &d->CtxGetDevice) &&
              Resolve(lib, "cuCtxGetCurrent", &d->CtxGetCurrent) &&
              Resolve(lib, "cuDeviceGetAttribute", &d->DeviceGetAttribute) &&
              Resolve(lib, "cuModuleLoadDataEx", &d->ModuleLoadDataEx) &&
              Resolve(lib, "cuModuleGetFunction", &d->ModuleGetFunction) &&
              Resolve(lib, "cuFuncGetAttribute", &d->FuncGetAttribute) &&
              Resolve(lib, "cuFuncSetAttribute", &d->FuncSetAttribute) &&
              Resolve(lib, "cuLaunchKernel", &d->LaunchKernel);
    if (!ok) d->error = "the CUDA driver library lacks a function this op needs (driver too old)";
    Resolve(lib, "cuFuncGetParamInfo", &d->FuncGetParamInfo);  // optional
    return d;
  }();
  return *driver;
}

std::string CuErrorText(const Driver& d, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.GetErrorName) d.GetErrorName(r, &name);
  if (d.GetErrorString) d.GetErrorString(r, &text);
  return absl::StrCat("CUDA driver error ", r, " (", name ? name : "?", ": ", text ? text : "?",
                      ")");
}

// The stream's context made current for a scope, and restored afterwards.
class ScopedContext {
 public:
  ScopedContext(const Driver& d, CUcontext ctx) : d_(d) {
    CUcontext current = nullptr;
    if (d_.CtxGetCurrent(&current) == kCudaSuccess && current == ctx) {
      ok_ = true;  // TensorFlow's compute thread has it current already: nothing to do
      return;
    }
    pushed_ = ok_ = d_.CtxPushCurrent(ctx) == kCudaSuccess;
  }
  ~ScopedContext() {
    CUcontext ignored;
    if (pushed_) d_.CtxPopCurrent(&ignored);
  }
  bool ok() const { return ok_; }

 private:
  const Driver& d_;
  bool pushed_ = false, ok_ = false;
};

// Modules by (context, PTX): a PTX is JIT-compiled once per device for the process, whatever
// number of kernels (graph traces, SavedModel loads) carry it. Never unloaded: a module's
// functions may be in flight on a stream when a kernel object is destroyed.
struct ModuleCache {
  std::mutex mu;
  std::map<std::pair<CUcontext, std::string>, CUmodule> modules;
};
ModuleCache& Modules() {
  static auto* cache = new ModuleCache;
  return *cache;
}

absl::Status LoadModule(const Driver& d, CUcontext ctx, const std::string& ptx,
                        const std::string& who, CUmodule* module) {
  ModuleCache& cache = Modules();
  std::lock_guard<std::mutex> lock(cache.mu);
  auto it = cache.modules.find({ctx, ptx});
  if (it != cache.modules.end()) {
    *module = it->second;
    return absl::OkStatus();
  }
  std::vector<char> error_log(8192, 0), info_log(2048, 0);
  int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSize, kJitInfoLogBuffer,
                   kJitInfoLogBufferSize};
  void* values[] = {error_log.data(), reinterpret_cast<void*>(error_log.size()), info_log.data(),
                    reinterpret_cast<void*>(info_log.size())};
  const CUresult r = d.ModuleLoadDataEx(module, ptx.c_str(), 4, options, values);
  if (r != kCudaSuccess) {
    return absl::InvalidArgumentError(absl::StrCat(
        who, ": the PTX did not load (", CuErrorText(d, r), "); the driver's compiler said: ",
        error_log[0] ? std::string(error_log.data()) : std::string("nothing")));
  }
  cache.modules.emplace(std::make_pair(ctx, ptx), *module);
  return absl::OkStatus();
}

constexpr int kCommonInputs = 3;  // seed, step, first_sample
constexpr size_t kMaxTensors = 16;

// The op's attributes, read and checked once.
struct KernelAttrs {
  std::string ptx, entry, who;
  int64_t batch_size = 0, num_samples = -1;
  std::vector<tensorflow::TensorShape> sample_shapes;
  tensorflow::DataTypeVector out_types, in_types;
  std::vector<int64_t> int_scalars;
  std::vector<float> float_scalars;
  int rule = 0;  // 0: elements, 1: samples, 2: fixed
  std::vector<int64_t> grid;
  int64_t block = 256, items_per_thread = 1, shared_memory_bytes = 0;
  int64_t rows() const { return num_samples < 0 ? batch_size : num_samples; }
};

// The names of the PTX's kernels (its .entry directives), in order.
std::vector<std::string> PtxEntries(const std::string& ptx) {
  std::vector<std::string> names;
  const std::string key = ".entry";
  for (size_t pos = ptx.find(key); pos != std::string::npos; pos = ptx.find(key, pos + 1)) {
    size_t b = pos + key.size();
    if (b >= ptx.size() || (ptx[b] != ' ' && ptx[b] != '\t')) continue;
    while (b < ptx.size() && (ptx[b] == ' ' || ptx[b] == '\t')) ++b;
    size_t e = b;
    while (e < ptx.size() && ptx[e] != '(' && ptx[e] != ' ' && ptx[e] != '\t' && ptx[e] != '\n' &&
           ptx[e] != '\r')
      ++e;
    if (e > b) names.push_back(ptx.substr(b, e - b));
  }
  return names;
}

// Attribute checks shared by the shape function and the kernels (Ctx: InferenceContext or
// OpKernelConstruction), with the same messages.
template <typename Ctx>
absl::Status ReadAttrs(Ctx* c, KernelAttrs* a) {
  std::string grid_rule;
  std::vector<tensorflow::PartialTensorShape> shapes;
  TF_RETURN_IF_ERROR(c->GetAttr("ptx", &a->ptx));
  TF_RETURN_IF_ERROR(c->GetAttr("entry", &a->entry));
  TF_RETURN_IF_ERROR(c->GetAttr("batch_size", &a->batch_size));
  TF_RETURN_IF_ERROR(c->GetAttr("num_samples", &a->num_samples));
  TF_RETURN_IF_ERROR(c->GetAttr("sample_shapes", &shapes));
  TF_RETURN_IF_ERROR(c->GetAttr("Tout", &a->out_types));
  TF_RETURN_IF_ERROR(c->GetAttr("Tin", &a->in_types));
  TF_RETURN_IF_ERROR(c->GetAttr("int_scalars", &a->int_scalars));
  TF_RETURN_IF_ERROR(c->GetAttr("float_scalars", &a->float_scalars));
  TF_RETURN_IF_ERROR(c->GetAttr("grid_rule", &grid_rule));
  TF_RETURN_IF_ERROR(c->GetAttr("grid", &a->grid));
  TF_RETURN_IF_ERROR(c->GetAttr("block", &a->block));
  TF_RETURN_IF_ERROR(c->GetAttr("items_per_thread", &a->items_per_thread));
  TF_RETURN_IF_ERROR(c->GetAttr("shared_memory_bytes", &a->shared_memory_bytes));
  a->who = absl::StrCat("OnTheFly>CudaKernel (entry '", a->entry, "')");
  const std::string& who = a->who;

  OTF_REQUIRE(!a->entry.empty(), "OnTheFly>CudaKernel: entry must name the kernel, got ''");
  OTF_REQUIRE(
      a->ptx.find(".version") != std::string::npos && a->ptx.find(".target") != std::string::npos,
      who, ": ptx is not PTX text (no .version or .target directive); pass the output ",
      "of cuda.compile_ptx, NVRTC, or clang/nvcc -ptx");
  std::vector<std::string> entries = PtxEntries(a->ptx);
  bool found = false;
  for (const auto& e : entries) found = found || e == a->entry;
  OTF_REQUIRE(found, who, ": the PTX has no entry '", a->entry, "'; its entries are [",
              absl::StrJoin(entries, ", "), "] (a C++ kernel needs extern \"C\" to keep its name)");
  OTF_REQUIRE(a->batch_size >= 0, who, ": batch_size must be >= 0, got ", a->batch_size);
  OTF_REQUIRE(a->num_samples >= -1 && a->num_samples <= a->batch_size, who,
              ": num_samples must be -1 (the whole batch) or in [0, batch_size=", a->batch_size,
              "], got ", a->num_samples);
  OTF_REQUIRE(!shapes.empty() && shapes.size() == a->out_types.size(), who,
              ": sample_shapes and Tout give the outputs, one each, at least one; got ",
              shapes.size(), " shapes and ", a->out_types.size(), " dtypes");
  OTF_REQUIRE(shapes.size() <= kMaxTensors && a->in_types.size() <= kMaxTensors, who, ": at most ",
              kMaxTensors, " outputs and ", kMaxTensors, " inputs");
  a->sample_shapes.clear();
  for (size_t i = 0; i < shapes.size(); ++i) {
    tensorflow::TensorShape s;
    OTF_REQUIRE(shapes[i].IsFullyDefined() && shapes[i].AsTensorShape(&s), who, ": sample_shapes[",
                i, "] must be fully defined, got ", shapes[i].DebugString());
    a->sample_shapes.push_back(s);
    OTF_REQUIRE(s.num_elements() == 0 ||
                    a->batch_size <= kMaxOutputBytes / tensorflow::DataTypeSize(a->out_types[i]) /
                                         s.num_elements(),
                who, ": output ", i, " of ", a->batch_size, " x ", s.DebugString(),
                " exceeds the per-output cap of ", kMaxOutputBytes, " bytes");
  }
  a->rule = grid_rule == "elements" ? 0 : grid_rule == "samples" ? 1 : 2;
  OTF_REQUIRE(a->block >= 1 && a->block <= 1024, who, ": block must be in [1, 1024] threads, got ",
              a->block);
  OTF_REQUIRE(a->items_per_thread >= 1, who, ": items_per_thread must be >= 1, got ",
              a->items_per_thread);
  OTF_REQUIRE(a->shared_memory_bytes >= 0, who, ": shared_memory_bytes must be >= 0, got ",
              a->shared_memory_bytes);
  if (a->rule == 2) {
    OTF_REQUIRE(!a->grid.empty() && a->grid.size() <= 3, who,
                ": grid_rule 'fixed' needs grid = [x], [x, y] or [x, y, z] blocks, got ",
                a->grid.size(), " numbers");
    for (size_t i = 0; i < a->grid.size(); ++i)
      OTF_REQUIRE(a->grid[i] >= 1 && a->grid[i] <= (i == 0 ? int64_t{2147483647} : 65535), who,
                  ": grid[", i, "] must be in [1, ", (i == 0 ? 2147483647 : 65535), "], got ",
                  a->grid[i]);
  } else {
    OTF_REQUIRE(a->grid.empty(), who, ": grid is only for grid_rule 'fixed'; grid_rule is '",
                grid_rule, "'");
  }
  return absl::OkStatus();
}

absl::Status ShapeFn(tensorflow::shape_inference::InferenceContext* c) {
  KernelAttrs a;
  TF_RETURN_IF_ERROR(ReadAttrs(c, &a));
  TF_RETURN_IF_ERROR(SeedShape(c, 0));
  TF_RETURN_IF_ERROR(ScalarShape(c, 1, "step"));
  TF_RETURN_IF_ERROR(ScalarShape(c, 2, "first_sample"));
  for (size_t i = 0; i < a.sample_shapes.size(); ++i) {
    std::vector<tensorflow::shape_inference::DimensionHandle> dims = {c->MakeDim(a.rows())};
    for (int64_t d : a.sample_shapes[i].dim_sizes()) dims.push_back(c->MakeDim(d));
    c->set_output(static_cast<int>(i), c->MakeShape(dims));
  }
  return absl::OkStatus();
}

// Checks the call's common inputs (both kernels, so the CPU kernel's errors for bad inputs
// match the GPU's before it refuses).
absl::Status Prepare(tensorflow::OpKernelContext* ctx, const KernelAttrs& a,
                     int64_t* first_sample) {
  const tensorflow::Tensor& seed = ctx->input(0);
  const tensorflow::Tensor& step = ctx->input(1);
  const tensorflow::Tensor& first = ctx->input(2);
  TF_RETURN_IF_ERROR(CheckSeedShape(seed.shape()));
  TF_RETURN_IF_ERROR(CheckScalarShape(step.shape(), "step"));
  TF_RETURN_IF_ERROR(CheckScalarShape(first.shape(), "first_sample"));
  *first_sample = first.dtype() == tensorflow::DT_INT32 ? int64_t{first.scalar<int32_t>()()}
                                                        : first.scalar<int64_t>()();
  OTF_REQUIRE(*first_sample >= 0 && *first_sample <= a.batch_size - a.rows(), a.who,
              ": first_sample must be in [0, batch_size - num_samples] = [0, ",
              a.batch_size - a.rows(), "], got ", *first_sample);
  return absl::OkStatus();
}

class CudaKernelCpuOp : public tensorflow::OpKernel {
 public:
  explicit CudaKernelCpuOp(tensorflow::OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadAttrs(ctx, &attrs_));
  }
  void Compute(tensorflow::OpKernelContext* ctx) override {
    int64_t first_sample;
    OP_REQUIRES_OK(ctx, Prepare(ctx, attrs_, &first_sample));
    ctx->CtxFailure(absl::InvalidArgumentError(absl::StrCat(
        attrs_.who, ": runs on a GPU only (it launches PTX), but TensorFlow placed it on ",
        ctx->device()->name(),
        ". Place it on a GPU (tf.device('/GPU:0')); where TensorFlow sees no GPU, use a "
        "built-in generator or the host-array path of tf_onthefly.interop")));
  }

 private:
  KernelAttrs attrs_;
};

class CudaKernelGpuOp : public tensorflow::OpKernel {
 public:
  explicit CudaKernelGpuOp(tensorflow::OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadAttrs(ctx, &attrs_));
    const std::string& who = attrs_.who;
    OP_REQUIRES(ctx, ctx->num_inputs() == kCommonInputs + static_cast<int>(attrs_.in_types.size()),
                absl::InvalidArgumentError(absl::StrCat(who, ": input count mismatch")));
    for (size_t i = 0; i < attrs_.sample_shapes.size(); ++i) {
      tensorflow::TensorShape s({attrs_.rows()});
      s.AppendShape(attrs_.sample_shapes[i]);
      out_shapes_.push_back(s);
    }
  }

  void Compute(tensorflow::OpKernelContext* ctx) override {
    const KernelAttrs& a = attrs_;
    int64_t first_sample;
    OP_REQUIRES_OK(ctx, Prepare(ctx, a, &first_sample));
    std::vector<void*> in_ptrs, out_ptrs;
    for (size_t i = 0; i < a.in_types.size(); ++i)
      in_ptrs.push_back(const_cast<void*>(ctx->input(kCommonInputs + i).data()));
    for (size_t i = 0; i < out_shapes_.size(); ++i) {
      tensorflow::Tensor* out = nullptr;
      OP_REQUIRES_OK(ctx, AllocateOutput(ctx, static_cast<int>(i), out_shapes_[i], a.who,
                                         absl::StrCat(i), &out));
      out_ptrs.push_back(out->data());
    }

    // Threads and blocks for this call.
    if (a.rows() == 0) return;  // an empty shard: nothing to write, no launch
    uint64_t gx = 1, gy = 1, gz = 1;
    if (a.rule == 2) {
      gx = a.grid[0];
      gy = a.grid.size() > 1 ? a.grid[1] : 1;
      gz = a.grid.size() > 2 ? a.grid[2] : 1;
    } else {
      const int64_t count =
          a.rule == 1 ? a.rows() : out_shapes_[0].num_elements();  // samples / output 0's elements
      if (count == 0) return;                                      // nothing to write: no launch
      const uint64_t threads = (count + a.items_per_thread - 1) / a.items_per_thread;
      gx = (threads + a.block - 1) / a.block;
    }

    const Driver& d = GetDriver();
    OP_REQUIRES(ctx, d.error.empty(),
                absl::FailedPreconditionError(absl::StrCat(a.who, ": cannot launch: ", d.error)));
    auto stream = reinterpret_cast<CUstream>(ctx->eigen_device<Eigen::GpuDevice>().stream());
    CUcontext cu_ctx = nullptr;
    CUresult r = d.StreamGetCtx(stream, &cu_ctx);
    OP_REQUIRES(ctx, r == kCudaSuccess,
                absl::InternalError(absl::StrCat(a.who, ": cannot find the CUDA context of ",
                                                 "TensorFlow's stream: ", CuErrorText(d, r))));
    ScopedContext scope(d, cu_ctx);
    OP_REQUIRES(ctx, scope.ok(),
                absl::InternalError(absl::StrCat(a.who,
                                                 ": cannot make TensorFlow's CUDA context "
                                                 "current")));
    // Parameters, in the documented order.
    const tensorflow::Tensor& seed = ctx->input(0);
    const void* seed_ptr = seed.data();
    int64_t seed_size = seed.NumElements();
    const void* step_ptr = ctx->input(1).data();
    int64_t rows = a.rows(), batch = a.batch_size;
    std::vector<void*> params = {&seed_ptr, &seed_size, &step_ptr, &first_sample, &rows, &batch};
    std::vector<size_t> sizes = {8, 8, 8, 8, 8, 8};
    std::vector<int64_t> ints(a.int_scalars.begin(), a.int_scalars.end());
    std::vector<float> floats(a.float_scalars.begin(), a.float_scalars.end());
    for (auto& v : ints) params.push_back(&v), sizes.push_back(8);
    for (auto& v : floats) params.push_back(&v), sizes.push_back(4);
    for (auto& p : in_ptrs) params.push_back(&p), sizes.push_back(8);
    for (auto& p : out_ptrs) params.push_back(&p), sizes.push_back(8);

    Launchable l;
    OP_REQUIRES_OK(ctx, GetLaunchable(d, cu_ctx, sizes, &l));
    OP_REQUIRES(ctx,
                gx <= static_cast<uint64_t>(l.max_grid[0]) &&
                    gy <= static_cast<uint64_t>(l.max_grid[1]) &&
                    gz <= static_cast<uint64_t>(l.max_grid[2]),
                absl::InvalidArgumentError(absl::StrCat(
                    a.who, ": grid of [", gx, ", ", gy, ", ", gz, "] blocks exceeds the device's [",
                    l.max_grid[0], ", ", l.max_grid[1], ", ", l.max_grid[2],
                    "]; raise items_per_thread or block, or use a grid-stride loop with a fixed "
                    "grid")));
    OP_REQUIRES(ctx, a.block <= l.max_threads,
                absl::InvalidArgumentError(absl::StrCat(
                    a.who, ": block of ", a.block, " threads, but this kernel can run at most ",
                    l.max_threads, " per block on ", ctx->device()->name(),
                    " (its registers or __launch_bounds__)")));
    CUfunction fn = l.fn;

    r = d.LaunchKernel(fn, static_cast<unsigned>(gx), static_cast<unsigned>(gy),
                       static_cast<unsigned>(gz), static_cast<unsigned>(a.block), 1, 1,
                       static_cast<unsigned>(a.shared_memory_bytes), stream, params.data(),
                       nullptr);
    OP_REQUIRES(ctx, r == kCudaSuccess,
                absl::InternalError(
                    absl::StrCat(a.who, ": the launch of [", gx, ", ", gy, ", ", gz, "] blocks of ",
                                 a.block, " threads with ", a.shared_memory_bytes,
                                 " bytes of dynamic shared memory failed: ", CuErrorText(d, r))));
  }

 private:
  // What a launch in one CUDA context needs, found once: the entry's function in the
  // context's module (loaded on first use), the device's grid limits and the kernel's
  // largest block; the parameter list is checked then too.
  struct Launchable {
    CUfunction fn = nullptr;
    int max_grid[3] = {2147483647, 65535, 65535};
    int max_threads = 1024;
  };

  absl::Status GetLaunchable(const Driver& d, CUcontext cu_ctx, const std::vector<size_t>& sizes,
                             Launchable* out) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = launchables_.find(cu_ctx);
    if (it != launchables_.end()) {
      *out = it->second;
      return absl::OkStatus();
    }
    Launchable l;
    CUmodule module = nullptr;
    TF_RETURN_IF_ERROR(LoadModule(d, cu_ctx, attrs_.ptx, attrs_.who, &module));
    CUresult r = d.ModuleGetFunction(&l.fn, module, attrs_.entry.c_str());
    OTF_REQUIRE(r == kCudaSuccess, attrs_.who, ": the module has no kernel '", attrs_.entry, "' (",
                CuErrorText(d, r), ")");
    if (attrs_.shared_memory_bytes > 48 * 1024) {
      r = d.FuncSetAttribute(l.fn, kFuncMaxDynamicSharedBytes,
                             static_cast<int>(attrs_.shared_memory_bytes));
      OTF_REQUIRE(r == kCudaSuccess, attrs_.who, ": ", attrs_.shared_memory_bytes,
                  " bytes of dynamic shared memory are more than the device allows (",
                  CuErrorText(d, r), ")");
    }
    CUdevice dev = 0;
    if (d.CtxGetDevice(&dev) == kCudaSuccess) {
      d.DeviceGetAttribute(&l.max_grid[0], kDevAttrMaxGridDimX, dev);
      d.DeviceGetAttribute(&l.max_grid[1], kDevAttrMaxGridDimY, dev);
      d.DeviceGetAttribute(&l.max_grid[2], kDevAttrMaxGridDimZ, dev);
    }
    d.FuncGetAttribute(&l.max_threads, kFuncMaxThreadsPerBlock, l.fn);
    TF_RETURN_IF_ERROR(CheckParams(d, l.fn, sizes));
    launchables_[cu_ctx] = l;
    *out = l;
    return absl::OkStatus();
  }

  // The kernel's parameter list against what the op passes (where the driver can tell).
  absl::Status CheckParams(const Driver& d, CUfunction fn, const std::vector<size_t>& sizes) {
    if (d.FuncGetParamInfo == nullptr) return absl::OkStatus();
    std::vector<size_t> found;
    for (size_t i = 0;; ++i) {
      size_t offset = 0, size = 0;
      const CUresult r = d.FuncGetParamInfo(fn, i, &offset, &size);
      if (r == kCudaErrorInvalidValue) break;          // past the last parameter
      if (r != kCudaSuccess) return absl::OkStatus();  // the driver cannot tell: not checked
      found.push_back(size);
      if (i > 256) break;
    }
    if (found == sizes) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        attrs_.who, ": the kernel takes ", found.size(), " parameters of sizes [",
        absl::StrJoin(found, ", "), "] bytes, but the op passes ", sizes.size(), " of sizes [",
        absl::StrJoin(sizes, ", "),
        "]: seed pointer, seed_size, step pointer, first_sample, num_samples, batch_size, ",
        attrs_.int_scalars.size(), " int64 scalars, ", attrs_.float_scalars.size(),
        " float32 scalars, ", attrs_.in_types.size(), " input pointers, ", attrs_.out_types.size(),
        " output pointers (docs/interop.md)"));
  }

  KernelAttrs attrs_;
  std::vector<tensorflow::TensorShape> out_shapes_;
  std::mutex mu_;
  std::map<CUcontext, Launchable> launchables_;
};

}  // namespace

REGISTER_OP("OnTheFly>CudaKernel")
    .Input("seed: int64")
    .Input("step: int64")
    .Input("first_sample: Tindex")
    .Input("inputs: Tin")
    .Output("outputs: Tout")
    .Attr("ptx: string")
    .Attr("entry: string")
    .Attr("batch_size: int")
    .Attr("num_samples: int = -1")
    .Attr("sample_shapes: list(shape) >= 1")
    .Attr(
        "Tout: list({float, double, half, bfloat16, int8, uint8, int16, int32, int64, uint32, "
        "uint64, bool}) >= 1")
    .Attr(
        "Tin: list({float, double, half, bfloat16, int8, uint8, int16, int32, int64, uint32, "
        "uint64, bool}) >= 0 = []")
    .Attr("Tindex: {int32, int64} = DT_INT64")
    .Attr("int_scalars: list(int) = []")
    .Attr("float_scalars: list(float) = []")
    .Attr("grid_rule: {'elements', 'samples', 'fixed'} = 'elements'")
    .Attr("grid: list(int) = []")
    .Attr("block: int = 256")
    .Attr("items_per_thread: int = 1")
    .Attr("shared_memory_bytes: int = 0")
    // Stateless, as the built-in generators: the kernel is a pure function of its
    // arguments (docs/interop.md). A stateful op would get a control edge to the next
    // iteration of every graph loop it is in, and the next step's counter, copied to the
    // GPU behind the kernel, would then wait for the kernel to finish: one GPU round trip
    // a step. (Grappler's constant folding, trying the CPU kernel, gets its refusal and
    // leaves the node as it is.)
    .SetShapeFn(ShapeFn)
    .Doc(R"doc(
Launches a PTX kernel on TensorFlow's stream into outputs TensorFlow allocated (GPU only).

Output i has shape [num_samples] + sample_shapes[i] and dtype Tout[i]; the kernel must
write every element (they are not initialised). docs/interop.md gives the kernel's
parameter list and the grid rules.

ptx: PTX text (cuda.compile_ptx, NVRTC, clang or nvcc -ptx), JIT-compiled once per device.
entry: The kernel's name in the PTX (an extern "C" name, or the mangled one).
grid_rule: 'elements': one thread per items_per_thread elements of output 0; 'samples':
  one per items_per_thread rows; 'fixed': the blocks in grid.
)doc");

REGISTER_KERNEL_BUILDER(Name("OnTheFly>CudaKernel").Device(tensorflow::DEVICE_CPU),
                        CudaKernelCpuOp);
REGISTER_KERNEL_BUILDER(
    Name("OnTheFly>CudaKernel").Device(tensorflow::DEVICE_GPU).HostMemory("first_sample"),
    CudaKernelGpuOp);

}  // namespace interop
}  // namespace tf_onthefly

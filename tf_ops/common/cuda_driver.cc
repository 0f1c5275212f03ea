// The CUDA driver API through dlopen (cuda_driver.h says why).
#include "tf_ops/common/cuda_driver.h"

#include <string>

#include "tf_ops/common/dlfcn_compat.h"

namespace tf_onthefly {
namespace cuda_driver {
namespace {

template <typename F>
bool Resolve(void* lib, const char* name, F* f) {
  *f = reinterpret_cast<F>(dlsym(lib, name));
  return *f != nullptr;
}

Driver* Load() {
  auto* d = new Driver;  // lives as long as the process: launches may run until exit
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    d->error = std::string("the CUDA driver library libcuda.so.1 could not be loaded (") +
               (why ? why : "unknown reason") + ")";
    return d;
  }
  const bool ok =
      Resolve(lib, "cuGetErrorName", &d->GetErrorName) &&
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
      Resolve(lib, "cuLaunchKernel", &d->LaunchKernel) &&
      Resolve(lib, "cuEventCreate", &d->EventCreate) &&
      Resolve(lib, "cuEventRecord", &d->EventRecord) &&
      Resolve(lib, "cuEventDestroy_v2", &d->EventDestroy) &&
      Resolve(lib, "cuStreamWaitEvent", &d->StreamWaitEvent) &&
      Resolve(lib, "cuMemcpyHtoDAsync_v2", &d->MemcpyHtoDAsync) &&
      Resolve(lib, "cuStreamIsCapturing", &d->StreamIsCapturing) &&
      Resolve(lib, "cuThreadExchangeStreamCaptureMode", &d->ThreadExchangeStreamCaptureMode);
  if (!ok) d->error = "the CUDA driver library lacks a function tf_onthefly needs (driver too old)";
  Resolve(lib, "cuFuncGetParamInfo", &d->FuncGetParamInfo);  // optional
  return d;
}

}  // namespace

const Driver& Get() {
  static const Driver* driver = Load();
  return *driver;
}

std::string ErrorText(const Driver& d, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.GetErrorName) d.GetErrorName(r, &name);
  if (d.GetErrorString) d.GetErrorString(r, &text);
  return "CUDA driver error " + std::to_string(r) + " (" + (name ? name : "?") + ": " +
         (text ? text : "?") + ")";
}

ScopedContext::ScopedContext(const Driver& d, CUcontext ctx) : d_(d) {
  CUcontext current = nullptr;
  if (d_.CtxGetCurrent(&current) == kSuccess && current == ctx) {
    ok_ = true;
    return;
  }
  pushed_ = ok_ = d_.CtxPushCurrent(ctx) == kSuccess;
}

ScopedContext::~ScopedContext() {
  CUcontext ignored;
  if (pushed_) d_.CtxPopCurrent(&ignored);
}

ScopedRelaxedCapture::ScopedRelaxedCapture(const Driver& d, CUstream stream) : d_(d) {
  int status = kStreamCaptureStatusNone;
  if (d_.StreamIsCapturing(stream, &status) != kSuccess || status == kStreamCaptureStatusNone)
    return;
  mode_ = kStreamCaptureModeRelaxed;
  exchanged_ = d_.ThreadExchangeStreamCaptureMode(&mode_) == kSuccess;
}

ScopedRelaxedCapture::~ScopedRelaxedCapture() {
  if (exchanged_) d_.ThreadExchangeStreamCaptureMode(&mode_);
}

}  // namespace cuda_driver
}  // namespace tf_onthefly

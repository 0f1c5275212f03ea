// The CUDA driver API, found at run time instead of at link time.
//
// Ops that launch user PTX (OnTheFly>CudaKernel) or order TensorFlow's stream against
// another library's (the device-array bridge's ops) need a handful of driver functions.
// Linking libcuda would stop the op library from loading where there is no driver
// (tensorflow-cpu, CI); so Get() opens libcuda.so.1 with dlopen on first use and resolves the
// functions below once for the process. Where that fails, Get().error says why and no
// function may be called. No CUDA header is needed: the few types and constants used are
// declared here with the driver API's own values (cuda.h, stable since CUDA 10).
//
// Not TensorFlow-specific: nothing here includes a TensorFlow header.
#ifndef TF_ONTHEFLY_COMMON_CUDA_DRIVER_H_
#define TF_ONTHEFLY_COMMON_CUDA_DRIVER_H_

#include <cstddef>
#include <string>

// The driver's opaque handle types, declared where cuda.h declares them (the global
// namespace), so they are the same types in files that include CUDA's headers and in those
// that do not.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;

namespace tf_onthefly {
namespace cuda_driver {

using CUresult = int;
using CUdevice = int;
using CUcontext = ::CUctx_st*;
using CUmodule = ::CUmod_st*;
using CUfunction = ::CUfunc_st*;
using CUstream = ::CUstream_st*;
using CUevent = ::CUevent_st*;

constexpr CUresult kSuccess = 0;
constexpr CUresult kErrorInvalidValue = 1;
// CUjit_option
constexpr int kJitInfoLogBuffer = 3, kJitInfoLogBufferSize = 4, kJitErrorLogBuffer = 5,
              kJitErrorLogBufferSize = 6;
// CUfunction_attribute
constexpr int kFuncMaxThreadsPerBlock = 0, kFuncMaxDynamicSharedBytes = 8;
// CUdevice_attribute
constexpr int kDevAttrMaxGridDimX = 5, kDevAttrMaxGridDimY = 6, kDevAttrMaxGridDimZ = 7;
// CUevent_flags: no timing (the cheapest event, for ordering only)
constexpr unsigned kEventDisableTiming = 2;
// CUstreamCaptureStatus / CUstreamCaptureMode
constexpr int kStreamCaptureStatusNone = 0;
constexpr int kStreamCaptureModeRelaxed = 2;

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
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*EventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*EventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*EventDestroy)(CUevent) = nullptr;
  CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned) = nullptr;
  CUresult (*MemcpyHtoDAsync)(unsigned long long, const void*, size_t, CUstream) = nullptr;
  CUresult (*StreamIsCapturing)(CUstream, int*) = nullptr;
  CUresult (*ThreadExchangeStreamCaptureMode)(int*) = nullptr;
  // CUDA 12.4 drivers on: a kernel's parameter list (null in older drivers).
  CUresult (*FuncGetParamInfo)(CUfunction, size_t, size_t*, size_t*) = nullptr;
  std::string error;  // why the driver is unusable; empty when it is usable
};

// The process's driver, resolved on the first call.
const Driver& Get();

// "CUDA driver error 218 (CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed)".
std::string ErrorText(const Driver& d, CUresult r);

// Makes `ctx` the calling thread's current context for the scope (a no-op where it is
// current already, as on TensorFlow's and XLA's GPU threads), and restores the previous one.
class ScopedContext {
 public:
  ScopedContext(const Driver& d, CUcontext ctx);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
  bool ok() const { return ok_; }

 private:
  const Driver& d_;
  bool pushed_ = false, ok_ = false;
};

// While `stream` is being captured into a CUDA graph (XLA records command buffers so), a
// call that is not a stream operation but may synchronise (loading a module) is refused in
// the default capture mode. This relaxes the calling thread's mode for the scope where the
// stream is capturing, and restores it after; elsewhere it does nothing.
class ScopedRelaxedCapture {
 public:
  ScopedRelaxedCapture(const Driver& d, CUstream stream);
  ~ScopedRelaxedCapture();
  ScopedRelaxedCapture(const ScopedRelaxedCapture&) = delete;
  ScopedRelaxedCapture& operator=(const ScopedRelaxedCapture&) = delete;

 private:
  const Driver& d_;
  bool exchanged_ = false;
  int mode_ = 0;
};

}  // namespace cuda_driver
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_COMMON_CUDA_DRIVER_H_

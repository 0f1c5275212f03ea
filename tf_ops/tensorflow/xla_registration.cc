// Registering an op's XLA side from an op library (xla_registration.h).
#include "tf_ops/tensorflow/xla_registration.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tensorflow/core/framework/kernel_def.pb.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "xla/ffi/api/ffi.h"

namespace tf_onthefly {
namespace {

// Whether XLA has already turned its registrations into kernels (it then has one for NoOp).
bool XlaKernelsAlreadyRegistered() {
  return tensorflow::KernelsRegisteredForOp("NoOp").find(tensorflow::DEVICE_CPU_XLA_JIT) !=
         std::string::npos;
}

}  // namespace

void RegisterXlaOpKernel(const char* op, tensorflow::XlaOpRegistrationBuilder& builder,
                         tensorflow::XlaOpRegistry::Factory factory) {
  new tensorflow::XlaOpRegistrar(builder.Build(factory));
  if (!XlaKernelsAlreadyRegistered()) return;
  for (const char* device : {tensorflow::DEVICE_CPU_XLA_JIT, tensorflow::DEVICE_GPU_XLA_JIT}) {
    auto* kernel = new tensorflow::KernelDef;
    kernel->set_op(op);
    kernel->set_device_type(device);
    new tensorflow::kernel_factory::OpKernelRegistrar(kernel, "XlaJitOp", factory);
  }
}

absl::Status RegisterFfiHandler(const std::string& target, const char* platform,
                                XLA_FFI_Handler* handler, XLA_FFI_Handler_Traits traits) {
  const XLA_FFI_Api* api = ::xla::ffi::GetXlaFfiApi();
  XLA_FFI_Error* err =
      ::xla::ffi::Ffi::RegisterStaticHandler(api, target, platform, handler, traits);
  if (err == nullptr) return absl::OkStatus();
  const std::string message = ::xla::ffi::internal::GetErrorMessage(api, err);
  ::xla::ffi::internal::DestroyError(api, err);
  return absl::InternalError(
      absl::StrCat("registering XLA handler ", target, " for ", platform, ": ", message));
}

}  // namespace tf_onthefly

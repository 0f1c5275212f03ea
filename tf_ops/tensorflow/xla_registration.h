// Registering an op's XLA side into TensorFlow's XLA from the op library: its compilation
// kernel (an XlaOpKernel) and the typed-FFI handlers its custom calls name. Shared by the
// generators' XLA kernel (generator_xla.cc) and the PTX op's (tf_ops/cuda_kernel); only
// built where the TensorFlow built against has XLA kernels for us (TF_HAS_XLA: 2.20 on).
#ifndef TF_ONTHEFLY_TENSORFLOW_XLA_REGISTRATION_H_
#define TF_ONTHEFLY_TENSORFLOW_XLA_REGISTRATION_H_

#include <string>

#include "absl/status/status.h"
#include "tensorflow/compiler/tf2xla/xla_op_registry.h"
#include "xla/ffi/api/c_api.h"

// xla/ffi/ffi_api.h needs MLIR headers the TF wheel does not ship; the function is exported
// by libtensorflow_framework.so.2.
namespace xla::ffi {
const XLA_FFI_Api* GetXlaFfiApi();
}

namespace tf_onthefly {

// Registers op's XLA kernel `factory`, with `builder`'s settings (XlaOpRegistrationBuilder::
// Name(op)...), with XLA.
// XLA turns its registrations into kernels once, at the first TensorFlow function a process
// instantiates (the first tensor is enough); where that has happened already (the op library
// was loaded late), the kernel is also registered for XLA's CPU and GPU devices here.
void RegisterXlaOpKernel(const char* op, tensorflow::XlaOpRegistrationBuilder& builder,
                         tensorflow::XlaOpRegistry::Factory factory);

// Registers a typed-FFI handler as custom-call target `target` for `platform` ("CUDA",
// "Host") in the XLA of the process (TensorFlow's). traits: e.g.
// XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE for a handler XLA may record into a CUDA
// graph.
absl::Status RegisterFfiHandler(const std::string& target, const char* platform,
                                XLA_FFI_Handler* handler, XLA_FFI_Handler_Traits traits = 0);

}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_TENSORFLOW_XLA_REGISTRATION_H_

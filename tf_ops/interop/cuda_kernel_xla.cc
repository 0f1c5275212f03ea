// OnTheFly>CudaKernel under XLA (jit_compile=True): a clear refusal instead of XLA's generic
// "no kernel" message. XLA compiles the whole function into its own executable and runs it
// on its own streams and buffers; a user's PTX would need an XLA custom call that loads the
// module and launches it there, which this op does not have yet. Registered for compilation
// only, so XLA's auto-clustering never picks the op up (it stays a TensorFlow op there).
#include <string>

#include "absl/strings/str_cat.h"
#include "tensorflow/compiler/tf2xla/xla_op_kernel.h"
#include "tensorflow/compiler/tf2xla/xla_op_registry.h"

namespace tf_onthefly {
namespace interop {
namespace {

class CudaKernelXlaRefusal : public tensorflow::XlaOpKernel {
 public:
  explicit CudaKernelXlaRefusal(tensorflow::OpKernelConstruction* ctx) : XlaOpKernel(ctx) {
    if (!ctx->GetAttr("entry", &entry_).ok()) entry_ = "?";
  }
  void Compile(tensorflow::XlaOpKernelContext* ctx) override {
    ctx->SetStatus(absl::UnimplementedError(absl::StrCat(
        "OnTheFly>CudaKernel (entry '", entry_,
        "') cannot run inside an XLA-compiled function (jit_compile=True): XLA compiles the "
        "function into one executable with its own buffers and streams, and has no way to "
        "launch a user's PTX there. Call the op outside the compiled function (in the input "
        "pipeline, or a tf.function without jit_compile that calls the compiled step), or use "
        "a built-in generator, which has XLA kernels")));
  }

 private:
  std::string entry_;
};

REGISTER_XLA_OP(Name("OnTheFly>CudaKernel").CompilationOnly(), CudaKernelXlaRefusal);

}  // namespace
}  // namespace interop
}  // namespace tf_onthefly

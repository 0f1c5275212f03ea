// OnTheFly>CudaKernel: a user's PTX kernel (Numba's cuda.compile_ptx, CuPy/NVRTC, clang or
// nvcc -ptx) launched as a native TensorFlow op, on TensorFlow's stream, into outputs
// TensorFlow allocated. No C++ build on the user's side: the PTX is an attribute, so it
// travels with the graph (SavedModel included). Under XLA (jit_compile=True) the same launch
// runs as a custom call on XLA's stream (cuda_kernel_xla.cc).
//
// The CUDA driver API comes from tf_ops/common/cuda_driver.h (dlopen at the first launch),
// so the op library has no link-time dependency on it and still loads where there is no GPU
// (tensorflow-cpu, CI). The launch itself, the module cache and the parameter list are in
// ptx_kernel.h. Every failure (PTX that does not compile, an entry that is not in it, a
// parameter list that does not match, a grid the device cannot run, a launch that fails) is
// an op error naming the op and the entry; none ends the process.
#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif
#ifndef EIGEN_USE_GPU
#define EIGEN_USE_GPU
#endif

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/tensor.h"
#include "tf_ops/common/tf_glue.h"
#include "tf_ops/cuda_kernel/cuda_kernel_attrs.h"
#include "tf_ops/cuda_kernel/ptx_kernel.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tf_onthefly {
namespace cuda_kernel {
namespace {

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
  OTF_REQUIRE(*first_sample >= 0 && *first_sample <= a.batch_size - a.rows(), a.spec.who,
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
    ctx->CtxFailure(GpuOnlyRefusal(attrs_.spec.who, ctx->device()->name()));
  }

 private:
  KernelAttrs attrs_;
};

class CudaKernelGpuOp : public tensorflow::OpKernel {
 public:
  explicit CudaKernelGpuOp(tensorflow::OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadAttrs(ctx, &attrs_));
    OP_REQUIRES(
        ctx, ctx->num_inputs() == kCommonInputs + static_cast<int>(attrs_.in_types.size()),
        absl::InvalidArgumentError(absl::StrCat(attrs_.spec.who, ": input count mismatch")));
  }

  void Compute(tensorflow::OpKernelContext* ctx) override {
    const KernelAttrs& a = attrs_;
    CallBuffers b;
    OP_REQUIRES_OK(ctx, Prepare(ctx, a, &b.first_sample));
    for (size_t i = 0; i < a.in_types.size(); ++i)
      b.inputs.push_back(ctx->input(kCommonInputs + i).data());
    for (size_t i = 0; i < a.out_types.size(); ++i) {
      tensorflow::Tensor* out = nullptr;
      OP_REQUIRES_OK(ctx, AllocateOutput(ctx, static_cast<int>(i), a.OutputShape(i), a.spec.who,
                                         absl::StrCat(i), &out));
      b.outputs.push_back(out->data());
    }
    const tensorflow::Tensor& seed = ctx->input(0);
    b.seed = seed.data();
    b.seed_size = seed.NumElements();
    b.step = ctx->input(1).data();
    b.num_samples = a.rows();
    b.batch_size = a.batch_size;
    auto stream =
        reinterpret_cast<cuda_driver::CUstream>(ctx->eigen_device<Eigen::GpuDevice>().stream());
    OP_REQUIRES_OK(ctx, Launch(stream, a.spec, &cache_, b));
  }

 private:
  KernelAttrs attrs_;
  LaunchCache cache_;
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

}  // namespace cuda_kernel
}  // namespace tf_onthefly

// TensorFlow's XLA kernel of every generator op (tf.function(jit_compile=True), Keras
// jit_compile): Compile() checks the call as the TF kernels do and emits a typed-FFI custom
// call to the variant's handler (tf_ops/sdk/generator_xla_ffi.h, in the core or in the
// generator's library), registered here into TensorFlow's XLA. This is the only file that
// includes the tf2xla and XLA builder headers (about 30 s of parsing per file).
//
// Scratch memory under XLA on a GPU: a variant whose generator says how much a call asks for
// (ScratchBytes) gets it as one more result of the custom call, a u8 buffer sized here when
// the op is compiled, which the CUDA handler serves the launch's requests from.
//
// A step vector of n steps (its length known when XLA compiles, as every shape is) is one
// custom call whose outputs hold the n batches one after another, [n * rows, ...], reshaped
// here to [n, rows, ...]: a free view. A library built before calls of several steps existed
// has handlers that take one step: its op takes a scalar step only under XLA.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tensorflow/compiler/tf2xla/type_util.h"
#include "tensorflow/compiler/tf2xla/xla_op_kernel.h"
#include "tensorflow/compiler/tf2xla/xla_op_registry.h"
#include "tf_ops/common/tf_glue.h"
#include "tf_ops/core/registry.h"
#include "tf_ops/tensorflow/tf_generator.h"
#include "tf_ops/tensorflow/xla_registration.h"
#include "xla/ffi/api/ffi.h"
#include "xla/hlo/builder/xla_builder.h"
#include "xla/shape_util.h"

namespace tf_onthefly {
namespace tf_front {
namespace {

using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;

// "array<i8: 3, 0, -64, ...>": bytes (the Params, the value rules) as an MLIR dense array
// attribute, which the handler decodes to a Span<const int8_t> (floats inside keep their
// exact bits).
std::string ByteArray(const std::string& bytes) {
  std::string s = "array<i8";
  for (size_t i = 0; i < bytes.size(); ++i)
    absl::StrAppend(&s, i ? ", " : ": ", static_cast<int>(static_cast<int8_t>(bytes[i])));
  return s + ">";
}

class GeneratorXlaOp : public tensorflow::XlaOpKernel {
 public:
  explicit GeneratorXlaOp(OpKernelConstruction* ctx) : XlaOpKernel(ctx) {
    const std::string& op = ctx->def().op();
    const core::Generator* g = core::FindGenerator(op);
    OP_REQUIRES(ctx, g != nullptr,
                absl::InternalError(absl::StrCat(op, " is not a generator of the core")));
    const sdk::Attrs attrs = AttrsOf(tensorflow::AttrSlice(ctx->def()), *g);
    const core::Variant* v = core::SelectVariant(*g, attrs);
    OP_REQUIRES(
        ctx, v != nullptr,
        absl::InternalError(absl::StrCat(op, " has no XLA handler for this node's dtypes")));
    const bool gpu = ctx->device_type() == tensorflow::DeviceType(tensorflow::DEVICE_GPU_XLA_JIT);
    OP_REQUIRES(ctx, gpu || v->has_cpu(), ToTf(sdk::GpuOnlyError(op)));
    OP_REQUIRES(
        ctx, (gpu ? v->def.xla_cuda_handler : v->def.xla_host_handler) != nullptr,
        absl::UnimplementedError(absl::StrCat(op, " has no XLA handler for ", gpu ? "GPUs" : "CPUs",
                                              ": its library was built without XLA's FFI headers",
                                              gpu ? " or without GPU code" : "")));
    OP_REQUIRES_OK(ctx, ToTf(core::Configure(*v, attrs, &cfg_)));
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      xla::PrimitiveType type;
      OP_REQUIRES_OK(ctx, tensorflow::DataTypeToPrimitiveType(ctx->output_type(i), &type));
      types_.push_back(type);
    }
    if (gpu) scratch_bytes_ = cfg_.ScratchBytes();
  }

  void Compile(tensorflow::XlaOpKernelContext* ctx) override {
    // first_sample must be known when XLA compiles (a constant, or a function argument or
    // variable value, for which TF compiles once per value): its range check is exact.
    int64_t first_sample = 0;
    OP_REQUIRES_OK(ctx, ctx->ConstantInputAsIntScalar("first_sample", &first_sample));
    OP_REQUIRES_OK(ctx, ToTf(cfg_.batch.CheckFirstSample(first_sample)));
    OP_REQUIRES_OK(ctx, CheckSeedShape(ctx->InputShape("seed")));
    const tensorflow::TensorShape step = ctx->InputShape("step");
    OP_REQUIRES_OK(ctx, CheckStepShape(step));
    const int64_t steps = step.num_elements();
    OP_REQUIRES_OK(ctx,
                   ToTf(step.dims() == 0 ? cfg_.CheckSteps(steps) : cfg_.CheckXlaSteps(steps)));
    // The custom call's outputs: every step's rows, one step after another.
    std::vector<xla::Shape> outputs;
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      std::vector<int64_t> dims = cfg_.OutputShape(i);
      dims[0] *= steps;
      outputs.push_back(xla::ShapeUtil::MakeShape(types_[i], dims));
    }
    if (scratch_bytes_ > 0) {
      outputs.push_back(
          xla::ShapeUtil::MakeShape(xla::U8, {steps * sdk::ScratchBufferBytes(scratch_bytes_)}));
    }
    std::vector<xla::XlaOp> operands = {ctx->Input(0), ctx->Input(1)};
    for (size_t i = 0; i < cfg_.shapes.inputs.size(); ++i) {
      const int index = sdk::kCommonInputs + static_cast<int>(i);
      OP_REQUIRES_OK(
          ctx, ToTf(sdk::CheckInputShape(cfg_.shapes.inputs[i], true, Dims(ctx->InputShape(index)),
                                         cfg_.batch.rows())));
      operands.push_back(ctx->Input(index));
    }
    if (steps == 0) {  // no step, no batch: empty outputs, and no call (a handler takes >= 1 step)
      for (int i = 0; i < ctx->num_outputs(); ++i) {
        std::vector<int64_t> dims = cfg_.OutputShape(i);
        dims.insert(dims.begin(), 0);
        const xla::XlaOp zero =
            xla::ConvertElementType(xla::ConstantR0<int32_t>(ctx->builder(), 0), types_[i]);
        ctx->SetOutput(i, xla::Broadcast(zero, dims));
      }
      return;
    }
    const std::string config =
        absl::StrCat("{batch_size = ", cfg_.batch.batch_size,
                     " : i64, first_sample = ", first_sample, " : i64, input_names = \"",
                     cfg_.InputNames(), "\", input_rules = ", ByteArray(cfg_.InputRules()),
                     ", op = \"", cfg_.generator->name, "\", params = ", ByteArray(cfg_.params),
                     ", sample_offset = 0 : i64, scratch_bytes = ", scratch_bytes_, " : i64}");
    const xla::XlaOp call = xla::CustomCall(
        ctx->builder(), cfg_.variant->xla_target, operands, xla::ShapeUtil::MakeTupleShape(outputs),
        config, /*has_side_effect=*/false,
        /*output_operand_aliasing=*/{}, /*literal=*/nullptr, xla::CustomCallSchedule::SCHEDULE_NONE,
        xla::CustomCallApiVersion::API_VERSION_TYPED_FFI);
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      xla::XlaOp out = xla::GetTupleElement(call, i);
      if (step.dims() == 1) {
        std::vector<int64_t> dims = cfg_.OutputShape(i);
        dims.insert(dims.begin(), steps);
        out = xla::Reshape(out, dims);
      }
      ctx->SetOutput(i, out);
    }
  }

 private:
  core::Configured cfg_;
  std::vector<xla::PrimitiveType> types_;
  int64_t scratch_bytes_ = 0;
};

OpKernel* CreateGeneratorXlaOp(OpKernelConstruction* ctx) { return new GeneratorXlaOp(ctx); }

}  // namespace

// The variants' handlers ("Host" where a variant has CPU code, "CUDA"), under each variant's
// target name; then the op's one XLA kernel (XLA refuses two registrations of one op), which
// picks the variant from the node's type attributes. The CUDA handler may be recorded into
// XLA's command buffers (CUDA graphs) where the generator allows it; a custom call without
// that trait splits the graph around it, and each piece then costs the step its own launch.
void RegisterXla(const core::Generator& g) {
  absl::Status status;
  for (const core::Variant& v : g.variants) {
    if (v.def.xla_host_handler != nullptr)
      status.Update(RegisterFfiHandler(v.xla_target, "Host",
                                       reinterpret_cast<XLA_FFI_Handler*>(v.def.xla_host_handler)));
    if (v.def.xla_cuda_handler != nullptr) {
      status.Update(RegisterFfiHandler(
          v.xla_target, "CUDA", reinterpret_cast<XLA_FFI_Handler*>(v.def.xla_cuda_handler),
          v.def.command_buffer_compatible ? XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE : 0));
    }
  }
  if (!status.ok()) LOG(ERROR) << g.name << " will not compile under XLA: " << status;
  RegisterXlaOpKernel(
      g.name.c_str(),
      tensorflow::XlaOpRegistrationBuilder::Name(g.name).CompileTimeConstantInput("first_sample"),
      &CreateGeneratorXlaOp);
}

}  // namespace tf_front
}  // namespace tf_onthefly

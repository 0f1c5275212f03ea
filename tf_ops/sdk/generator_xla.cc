// The generator SDK's one XLA kernel, for every generator op: Compile() checks the call as the
// TF kernels do and emits a typed-FFI custom call to the generator's handler
// (generator_xla.h). This is the only file that includes the tf2xla and XLA builder
// headers (about 30 s of parsing per file), so generators compile as fast as without XLA.
#include "tf_ops/sdk/generator_xla.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tensorflow/compiler/tf2xla/type_util.h"
#include "tensorflow/compiler/tf2xla/xla_op_kernel.h"
#include "tensorflow/compiler/tf2xla/xla_op_registry.h"
#include "tensorflow/core/framework/kernel_def.pb.h"
#include "xla/hlo/builder/xla_builder.h"
#include "xla/shape_util.h"

namespace tf_onthefly {
namespace sdk {
namespace {

using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;

std::mutex registry_mutex;
std::map<std::string, XlaGeneratorOp>& Registry() {
  static auto* ops = new std::map<std::string, XlaGeneratorOp>;
  return *ops;
}

// "array<i8: 3, 0, -64, ...>": bytes (the Params, the value rules) as an MLIR dense array
// attribute, which the handler decodes to a Span<const int8_t> (floats inside keep their
// exact bits).
std::string ByteArray(const char* bytes, size_t size) {
  std::string s = "array<i8";
  for (size_t i = 0; i < size; ++i)
    absl::StrAppend(&s, i ? ", " : ": ", static_cast<int>(static_cast<int8_t>(bytes[i])));
  return s + ">";
}

class GeneratorXlaOp : public tensorflow::XlaOpKernel {
 public:
  explicit GeneratorXlaOp(OpKernelConstruction* ctx) : XlaOpKernel(ctx), op_(ctx->def().op()) {
    XlaGeneratorOp description;
    {
      std::lock_guard<std::mutex> lock(registry_mutex);
      auto it = Registry().find(op_);
      OP_REQUIRES(ctx, it != Registry().end(),
                  absl::InternalError(absl::StrCat(op_, " has no XLA description")));
      description = it->second;
    }
    OP_REQUIRES(ctx,
                description.has_cpu ||
                    ctx->device_type() != tensorflow::DeviceType(tensorflow::DEVICE_CPU_XLA_JIT),
                GpuOnlyError(op_));
    OP_REQUIRES_OK(ctx, description.configure(ctx, &batch_, &params_, &shapes_));
    OP_REQUIRES_OK(ctx, CheckOutputs(shapes_, OutputTypes(ctx), batch_.rows()));
    OP_REQUIRES_OK(ctx, CheckInputCount(shapes_, ctx->num_inputs()));
    for (const auto& [types, target] : description.targets) {
      bool match = true;
      for (const TypeConstraint& t : types) {
        tensorflow::DataType value;
        OP_REQUIRES_OK(ctx, ctx->GetAttr(t.attr, &value));
        match = match && value == t.type;
      }
      if (match) target_ = target;
    }
    OP_REQUIRES(
        ctx, !target_.empty(),
        absl::InternalError(absl::StrCat(op_, " has no XLA handler for this node's dtypes")));
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      xla::PrimitiveType type;
      OP_REQUIRES_OK(ctx, tensorflow::DataTypeToPrimitiveType(ctx->output_type(i), &type));
      std::vector<int64_t> dims = {batch_.rows()};
      dims.insert(dims.end(), shapes_.dims[i].begin(), shapes_.dims[i].end());
      outputs_.push_back(xla::ShapeUtil::MakeShape(type, dims));
    }
  }

  void Compile(tensorflow::XlaOpKernelContext* ctx) override {
    // first_sample must be known when XLA compiles (a constant, or a function argument or
    // variable value, for which TF compiles once per value): its range check is exact.
    int64_t first_sample = 0;
    OP_REQUIRES_OK(ctx, ctx->ConstantInputAsIntScalar("first_sample", &first_sample));
    OP_REQUIRES_OK(ctx, batch_.CheckFirstSample(first_sample));
    OP_REQUIRES_OK(ctx, CheckSeedShape(ctx->InputShape("seed")));
    OP_REQUIRES_OK(ctx, CheckScalarShape(ctx->InputShape("step"), "step"));
    std::vector<xla::XlaOp> operands = {ctx->Input(0), ctx->Input(1)};
    std::vector<ValueRule> rules;
    std::vector<std::string> names;
    for (size_t i = 0; i < shapes_.inputs.size(); ++i) {
      const int index = kCommonInputs + static_cast<int>(i);
      OP_REQUIRES_OK(ctx, CheckInputShape(shapes_.inputs[i], true, Dims(ctx->InputShape(index)),
                                          batch_.rows()));
      operands.push_back(ctx->Input(index));
      rules.push_back(shapes_.inputs[i].values);
      names.push_back(shapes_.inputs[i].name);
    }
    const std::string config = absl::StrCat(
        "{batch_size = ", batch_.batch_size, " : i64, first_sample = ", first_sample,
        " : i64, input_names = \"", absl::StrJoin(names, ","), "\", input_rules = ",
        ByteArray(reinterpret_cast<const char*>(rules.data()), rules.size() * sizeof(ValueRule)),
        ", op = \"", op_, "\", params = ", ByteArray(params_.data(), params_.size()), "}");
    const xla::XlaOp call = xla::CustomCall(
        ctx->builder(), target_, operands, xla::ShapeUtil::MakeTupleShape(outputs_), config,
        /*has_side_effect=*/false, /*output_operand_aliasing=*/{}, /*literal=*/nullptr,
        xla::CustomCallSchedule::SCHEDULE_NONE, xla::CustomCallApiVersion::API_VERSION_TYPED_FFI);
    for (int i = 0; i < ctx->num_outputs(); ++i) ctx->SetOutput(i, xla::GetTupleElement(call, i));
  }

 private:
  std::string op_, params_, target_;
  BatchAttrs batch_;
  SampleShapes shapes_;
  std::vector<xla::Shape> outputs_;
};

OpKernel* CreateGeneratorXlaOp(OpKernelConstruction* ctx) { return new GeneratorXlaOp(ctx); }

// Whether XLA has already registered its compilation kernels. It does so once, at the first
// TF function a process instantiates (the first tensor is enough), for the XLA ops known
// then; an op library loaded later must register its XLA kernels itself.
bool XlaKernelsAlreadyRegistered() {
  return tensorflow::KernelsRegisteredForOp("NoOp").find(tensorflow::DEVICE_CPU_XLA_JIT) !=
         std::string::npos;
}

}  // namespace

namespace xla_ffi {
absl::Status RegisterHandler(const std::string& target, const char* platform,
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
}  // namespace xla_ffi

absl::Status RegisterXlaTarget(const char* op, const XlaGeneratorOp& description,
                               std::vector<TypeConstraint> types, const std::string& target) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto [it, first] = Registry().try_emplace(op, description);
  it->second.targets.emplace_back(std::move(types), target);
  if (!first) return absl::OkStatus();
  // One XLA kernel per op (XLA refuses two registrations of one op); it picks the handler
  // from the node's type attributes.
  new tensorflow::XlaOpRegistrar(tensorflow::XlaOpRegistrationBuilder::Name(op)
                                     .CompileTimeConstantInput("first_sample")
                                     .Build(&CreateGeneratorXlaOp));
  if (XlaKernelsAlreadyRegistered()) {
    for (const char* device : {tensorflow::DEVICE_CPU_XLA_JIT, tensorflow::DEVICE_GPU_XLA_JIT}) {
      auto* kernel = new tensorflow::KernelDef;
      kernel->set_op(op);
      kernel->set_device_type(device);
      new tensorflow::kernel_factory::OpKernelRegistrar(kernel, "XlaJitOp", &CreateGeneratorXlaOp);
    }
  }
  return absl::OkStatus();
}

}  // namespace sdk
}  // namespace tf_onthefly

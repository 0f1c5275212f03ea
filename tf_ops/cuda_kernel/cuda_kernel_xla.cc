// OnTheFly>CudaKernel under XLA (jit_compile=True): Compile() checks the node as the TF
// kernels do and emits a typed-FFI custom call, "tf_onthefly.cuda_kernel", whose CUDA handler
// launches the PTX on XLA's stream into XLA's buffers through the same code as the TF GPU
// kernel (ptx_kernel.h): the same parameters, grid and kernel, so the same bits.
//
// The custom call carries everything the launch needs as attributes (the PTX, the entry,
// the scalars, the grid, first_sample, which XLA must know when it compiles), and a 128-bit
// fingerprint of them computed here. The handler looks its launch state up by that
// fingerprint: the first call in a CUDA context loads the module (once per context and PTX
// for the process, the eager op's module cache) and checks the parameter list; later calls
// only launch. The handler may be recorded into XLA's command buffers (CUDA graphs): it
// always launches the same kernel with the same grid, and a first call during the recording
// loads the module in relaxed capture mode.
//
// On XLA's CPU backend the node is refused when compiled, as the TF CPU kernel refuses at
// run time. Registered for explicit compilation only, so auto-clustering leaves the op to
// TensorFlow.
#include <cstdint>
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
#include "tf_ops/common/tf_glue.h"
#include "tf_ops/cuda_kernel/cuda_kernel_attrs.h"
#include "tf_ops/cuda_kernel/ptx_kernel.h"
#include "tf_ops/tensorflow/xla_registration.h"
#include "xla/ffi/api/ffi.h"
#include "xla/hlo/builder/xla_builder.h"
#include "xla/shape_util.h"

namespace tf_onthefly {
namespace cuda_kernel {
namespace {

namespace ffi = ::xla::ffi;
constexpr char kTarget[] = "tf_onthefly.cuda_kernel";

// ---- The custom call's side (at run time) ------------------------------------------------

struct Entry {
  KernelSpec spec;
  LaunchCache cache;
};

// Launch state by fingerprint, for the process (an executable's custom calls, recompiled
// functions and every other executable with the same kernel share one).
std::mutex entries_mu;
std::map<std::pair<uint64_t, uint64_t>, std::unique_ptr<Entry>>& Entries() {
  static auto* entries = new std::map<std::pair<uint64_t, uint64_t>, std::unique_ptr<Entry>>;
  return *entries;
}

ffi::Error RunCuda(cuda_driver::CUstream stream, ffi::AnyBuffer seed, ffi::AnyBuffer step,
                   ffi::RemainingArgs args, ffi::RemainingRets rets, int64_t first_sample,
                   int64_t num_samples, int64_t batch_size, std::string_view ptx,
                   std::string_view entry, ffi::Span<const int64_t> int_scalars,
                   ffi::Span<const int32_t> float_bits, ffi::Span<const int64_t> grid,
                   int64_t block, int64_t shared_memory_bytes,
                   ffi::Span<const int64_t> fingerprint) {
  if (fingerprint.size() != 2 || grid.size() != 3)
    return ffi::Error(ffi::ErrorCode::kInternal, absl::StrCat(kOp, ": malformed custom call"));
  Entry* e;
  {
    std::lock_guard<std::mutex> lock(entries_mu);
    std::unique_ptr<Entry>& slot =
        Entries()[{static_cast<uint64_t>(fingerprint[0]), static_cast<uint64_t>(fingerprint[1])}];
    if (slot == nullptr) {
      slot = std::make_unique<Entry>();
      KernelSpec& k = slot->spec;
      k.ptx = std::string(ptx);
      k.entry = std::string(entry);
      k.who = absl::StrCat(kOp, " (entry '", k.entry, "', under XLA)");
      k.int_scalars.assign(int_scalars.begin(), int_scalars.end());
      for (int32_t bits : float_bits) {
        float f;
        std::memcpy(&f, &bits, sizeof(f));
        k.float_scalars.push_back(f);
      }
      k.num_inputs = args.size();
      k.num_outputs = rets.size();
      for (int i = 0; i < 3; ++i) k.grid[i] = static_cast<uint64_t>(grid[i]);
      k.block = block;
      k.shared_memory_bytes = shared_memory_bytes;
    }
    e = slot.get();
  }
  CallBuffers b;
  b.seed = seed.untyped_data();
  b.seed_size = static_cast<int64_t>(seed.element_count());
  b.step = step.untyped_data();
  b.first_sample = first_sample;
  b.num_samples = num_samples;
  b.batch_size = batch_size;
  for (size_t i = 0; i < args.size(); ++i) {
    auto in = args.get<ffi::AnyBuffer>(i);
    if (in.has_error()) return in.error();
    b.inputs.push_back(in->untyped_data());
  }
  for (size_t i = 0; i < rets.size(); ++i) {
    auto out = rets.get<ffi::AnyBuffer>(i);
    if (out.has_error()) return out.error();
    b.outputs.push_back((*out)->untyped_data());
  }
  const absl::Status s = Launch(stream, e->spec, &e->cache, b);
  if (s.ok()) return ffi::Error::Success();
  return ffi::Error(static_cast<ffi::ErrorCode>(s.code()), std::string(s.message()));
}

XLA_FFI_Error* CudaHandler(XLA_FFI_CallFrame* frame) {
  static auto* handler = ffi::Ffi::Bind()
                             .Ctx<ffi::PlatformStream<cuda_driver::CUstream>>()
                             .Arg<ffi::AnyBuffer>()  // seed, int64 [] or [2]
                             .Arg<ffi::AnyBuffer>()  // step, int64 []
                             .RemainingArgs()        // the op's inputs
                             .RemainingRets()        // the op's outputs
                             .Attr<int64_t>("first_sample")
                             .Attr<int64_t>("num_samples")
                             .Attr<int64_t>("batch_size")
                             .Attr<std::string_view>("ptx")
                             .Attr<std::string_view>("entry")
                             .Attr<ffi::Span<const int64_t>>("int_scalars")
                             .Attr<ffi::Span<const int32_t>>("float_bits")
                             .Attr<ffi::Span<const int64_t>>("grid")
                             .Attr<int64_t>("block")
                             .Attr<int64_t>("shared_memory_bytes")
                             .Attr<ffi::Span<const int64_t>>("fingerprint")
                             .To(RunCuda)
                             .release();
  return handler->Call(frame);
}

// ---- The compilation side ---------------------------------------------------------------

// An MLIR string literal: printable ASCII as it is, everything else (and " and \) as \XX.
std::string MlirString(std::string_view s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out = "\"";
  out.reserve(s.size() + s.size() / 8 + 2);
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += '\\';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out + "\"";
}

template <typename T>
std::string MlirArray(const char* type, const std::vector<T>& values) {
  return absl::StrCat("array<", type, values.empty() ? "" : ": ", absl::StrJoin(values, ", "), ">");
}

// Two 64-bit FNV-1a hashes (different offset bases) of everything the launch depends on.
std::pair<uint64_t, uint64_t> Fingerprint(const std::string& bytes) {
  uint64_t a = 14695981039346656037ull, b = 0x9e3779b97f4a7c15ull;
  for (unsigned char c : bytes) {
    a = (a ^ c) * 1099511628211ull;
    b = (b ^ c) * 1099511628211ull;
    b ^= b >> 29;
  }
  return {a, b};
}

class CudaKernelXlaOp : public tensorflow::XlaOpKernel {
 public:
  explicit CudaKernelXlaOp(tensorflow::OpKernelConstruction* ctx) : XlaOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadAttrs(ctx, &attrs_));
    OP_REQUIRES(ctx, ctx->device_type() != tensorflow::DeviceType(tensorflow::DEVICE_CPU_XLA_JIT),
                GpuOnlyRefusal(attrs_.spec.who, "XLA's CPU backend (jit_compile=True on a CPU)"));
    for (size_t i = 0; i < attrs_.out_types.size(); ++i) {
      xla::PrimitiveType type;
      OP_REQUIRES_OK(ctx, tensorflow::DataTypeToPrimitiveType(attrs_.out_types[i], &type));
      // dim_sizes() returns its vector by value: begin and end of one copy.
      const auto dims = attrs_.OutputShape(i).dim_sizes();
      outputs_.push_back(
          xla::ShapeUtil::MakeShape(type, std::vector<int64_t>(dims.begin(), dims.end())));
    }
  }

  void Compile(tensorflow::XlaOpKernelContext* ctx) override {
    const KernelSpec& k = attrs_.spec;
    // first_sample must be known when XLA compiles (a constant, or a function argument or
    // variable value, for which TF compiles once per value): its range check is exact.
    int64_t first_sample = 0;
    OP_REQUIRES_OK(ctx, ctx->ConstantInputAsIntScalar("first_sample", &first_sample));
    OP_REQUIRES(ctx, first_sample >= 0 && first_sample <= attrs_.batch_size - attrs_.rows(),
                absl::InvalidArgumentError(absl::StrCat(
                    k.who, ": first_sample must be in [0, batch_size - num_samples] = [0, ",
                    attrs_.batch_size - attrs_.rows(), "], got ", first_sample)));
    OP_REQUIRES_OK(ctx, CheckSeedShape(ctx->InputShape("seed")));
    OP_REQUIRES_OK(ctx, CheckScalarShape(ctx->InputShape("step"), "step"));
    std::vector<xla::XlaOp> operands = {ctx->Input(0), ctx->Input(1)};
    for (size_t i = 0; i < attrs_.in_types.size(); ++i)
      operands.push_back(ctx->Input(kCommonInputs + static_cast<int>(i)));

    std::vector<int32_t> float_bits;
    for (float f : k.float_scalars) {
      int32_t bits;
      std::memcpy(&bits, &f, sizeof(bits));
      float_bits.push_back(bits);
    }
    const std::vector<int64_t> grid = {static_cast<int64_t>(k.grid[0]),
                                       static_cast<int64_t>(k.grid[1]),
                                       static_cast<int64_t>(k.grid[2])};
    // Everything the handler builds its launch from, for the fingerprint.
    const std::string launch =
        absl::StrCat(k.ptx, std::string(1, '\0'), k.entry, std::string(1, '\0'),
                     absl::StrJoin(k.int_scalars, ","), ";", absl::StrJoin(float_bits, ","), ";",
                     absl::StrJoin(grid, ","), ";", k.block, ";", k.shared_memory_bytes, ";",
                     k.num_inputs, ";", k.num_outputs);
    const auto [fa, fb] = Fingerprint(launch);
    const std::string config = absl::StrCat(
        "{batch_size = ", attrs_.batch_size, " : i64, block = ", k.block,
        " : i64, entry = ", MlirString(k.entry), ", fingerprint = ",
        MlirArray("i64", std::vector<int64_t>{static_cast<int64_t>(fa), static_cast<int64_t>(fb)}),
        ", first_sample = ", first_sample, " : i64, float_bits = ", MlirArray("i32", float_bits),
        ", grid = ", MlirArray("i64", grid), ", int_scalars = ", MlirArray("i64", k.int_scalars),
        ", num_samples = ", attrs_.rows(), " : i64, ptx = ", MlirString(k.ptx),
        ", shared_memory_bytes = ", k.shared_memory_bytes, " : i64}");
    const xla::XlaOp call = xla::CustomCall(
        ctx->builder(), kTarget, operands, xla::ShapeUtil::MakeTupleShape(outputs_), config,
        /*has_side_effect=*/false, /*output_operand_aliasing=*/{}, /*literal=*/nullptr,
        xla::CustomCallSchedule::SCHEDULE_NONE, xla::CustomCallApiVersion::API_VERSION_TYPED_FFI);
    for (size_t i = 0; i < outputs_.size(); ++i)
      ctx->SetOutput(static_cast<int>(i), xla::GetTupleElement(call, static_cast<int64_t>(i)));
  }

 private:
  KernelAttrs attrs_;
  std::vector<xla::Shape> outputs_;
};

tensorflow::OpKernel* CreateCudaKernelXlaOp(tensorflow::OpKernelConstruction* ctx) {
  return new CudaKernelXlaOp(ctx);
}

// At load: the handler ("CUDA" only: the CPU backend refuses the node when compiling) and the
// compilation kernel.
const bool registered = [] {
  const absl::Status s = RegisterFfiHandler(kTarget, "CUDA", &CudaHandler,
                                            XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE);
  if (!s.ok()) LOG(ERROR) << kOp << " will not run under XLA: " << s;
  RegisterXlaOpKernel(
      kOp,
      tensorflow::XlaOpRegistrationBuilder::Name(kOp).CompilationOnly().CompileTimeConstantInput(
          "first_sample"),
      &CreateCudaKernelXlaOp);
  return true;
}();

}  // namespace
}  // namespace cuda_kernel
}  // namespace tf_onthefly

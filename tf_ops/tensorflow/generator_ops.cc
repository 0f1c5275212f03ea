// TensorFlow's front end over the core (libtf_onthefly_core.so): for every generator in the
// core's registry, an op registered from its spec strings (REGISTER_OP's own syntax, the
// SDK's common inputs and attributes first), the SDK's shape function, and CPU and GPU
// kernels that run the variant's entry points; its XLA kernel is generator_xla.cc. Generic:
// no generator is named here. A step vector of shape [n] makes the n steps' batches in one
// call, stacked along a new leading dimension (sdk::StepGeometry): on the GPU one launch
// for all of them where the generator's library has launch_gpu_steps. The ops of the core's own
// generators are registered when the op library loads; tf_onthefly_register_tensorflow_ops
// registers those of generators a library added to the core later.
//
// The launch path, Python to CUDA: the op's Python wrapper -> GeneratorOp::Compute -> the
// variant's launch_gpu (sdk::LaunchGenerator<Gen>, resolved once, in the kernel's
// constructor) -> LaunchUnits or Gen::Launch -> cudaLaunchKernel.
#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif
#ifndef EIGEN_USE_GPU
#define EIGEN_USE_GPU
#endif

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tensorflow/core/framework/kernel_def_builder.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_def_builder.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/types.h"
#include "tensorflow/core/util/work_sharder.h"
#include "tf_ops/common/tf_glue.h"
#include "tf_ops/core/registry.h"
#include "tf_ops/sdk/generator_config.h"
#include "tf_ops/tensorflow/tf_generator.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tf_onthefly {
namespace tf_front {
namespace {

using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::shape_inference::InferenceContext;

absl::Status ShapeFn(InferenceContext* c, const core::Generator* g) {
  const sdk::Attrs attrs = AttrsOf(*c, *g);
  // Every variant runs the same Config: any will do where the node's types pick none.
  const core::Variant* v = core::SelectVariant(*g, attrs);
  core::Configured cfg;
  TF_RETURN_IF_ERROR(ToTf(core::Configure(v != nullptr ? *v : g->variants[0], attrs, &cfg)));
  TF_RETURN_IF_ERROR(SeedShape(c, 0));
  TF_RETURN_IF_ERROR(StepShape(c, 1));
  TF_RETURN_IF_ERROR(ScalarShape(c, 2, "first_sample"));
  const int64_t rows = cfg.batch.rows();
  for (size_t i = 0; i < cfg.shapes.inputs.size(); ++i) {
    const auto input = c->input(sdk::kCommonInputs + static_cast<int>(i));
    std::vector<int64_t> dims;
    for (int d = 0; c->RankKnown(input) && d < c->Rank(input); ++d)
      dims.push_back(c->Value(c->Dim(input, d)));  // -1 where unknown
    TF_RETURN_IF_ERROR(
        ToTf(sdk::CheckInputShape(cfg.shapes.inputs[i], c->RankKnown(input), dims, rows)));
  }
  const auto step = c->input(1);
  for (int i = 0; i < c->num_outputs(); ++i) {
    std::vector<tensorflow::shape_inference::DimensionHandle> dims;
    for (int64_t d : cfg.OutputShape(i)) dims.push_back(c->MakeDim(d));
    auto shape = c->MakeShape(dims);
    if (!c->RankKnown(step)) {
      shape = c->UnknownShape();  // a scalar or a vector: the rank is not known either
    } else if (c->Rank(step) == 1) {
      TF_RETURN_IF_ERROR(c->Concatenate(c->Vector(c->Dim(step, 0)), shape, &shape));
    }
    c->set_output(i, shape);
  }
  return absl::OkStatus();
}

// Scratch memory for a launcher generator's GPU launch, from TensorFlow's allocator
// (allocate_temp): stream-ordered on the op's stream, like every TF GPU kernel's
// temporaries. The tensors live until Compute returns, after the launch was enqueued. A
// refusal is kept, with the op's name and the bytes asked, and reported in place of
// whatever the launch returns.
class TfScratch {
 public:
  explicit TfScratch(OpKernelContext* ctx) : ctx_(ctx) {}
  sdk::ScratchAllocator allocator() { return sdk::ScratchAllocator(&Allocate, this); }
  const absl::Status& status() const { return status_; }

 private:
  static void* Allocate(void* self, int64_t bytes) {
    auto* s = static_cast<TfScratch*>(self);
    tensorflow::Tensor t;
    absl::Status status = bytes < 0 ? absl::InvalidArgumentError("a negative size")
                                    : s->ctx_->allocate_temp(tensorflow::DT_INT8,
                                                             tensorflow::TensorShape({bytes}), &t);
    if (!status.ok()) {
      if (s->status_.ok()) {
        s->status_ = absl::Status(
            status.code(), absl::StrCat(s->ctx_->op_kernel().type_string(), ": scratch memory of ",
                                        bytes, " bytes on ", s->ctx_->device()->name(),
                                        " was refused: ", status.message()));
      }
      return nullptr;
    }
    s->temps_.push_back(std::move(t));
    return s->temps_.back().data();
  }

  OpKernelContext* ctx_;
  std::vector<tensorflow::Tensor> temps_;
  absl::Status status_;
};

// The op kernel of one variant, on the CPU or the GPU.
template <bool kOnCpu>
class GeneratorOp : public tensorflow::OpKernel {
 public:
  GeneratorOp(OpKernelConstruction* ctx, const core::Variant* variant)
      : OpKernel(ctx), fill_rows_(variant->def.fill_rows_cpu), launch_(variant->def.launch_gpu) {
    if (kOnCpu && fill_rows_ == nullptr) {
      ctx->CtxFailure(ToTf(sdk::GpuOnlyError(type_string())));
      return;
    }
    const sdk::Attrs attrs = AttrsOf(tensorflow::AttrSlice(ctx->def()), *variant->generator);
    OP_REQUIRES_OK(ctx, ToTf(core::Configure(*variant, attrs, &cfg_)));
    int64_t bytes_per_sample = 0;
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      out_shapes_.emplace_back(cfg_.OutputShape(i));
      bytes_per_sample += cfg_.sample_bytes[i];
    }
    // Work-sharder cost: roughly a Philox block (~100 ops) per 4 output elements.
    cost_per_sample_ = 64 + 25 * bytes_per_sample;
  }

  void Compute(OpKernelContext* ctx) override {
    const tensorflow::Tensor& seed = ctx->input(0);
    const tensorflow::Tensor& step = ctx->input(1);
    const tensorflow::Tensor& first = ctx->input(2);
    OP_REQUIRES_OK(ctx, CheckSeedShape(seed.shape()));
    OP_REQUIRES_OK(ctx, CheckStepShape(step.shape()));
    OP_REQUIRES_OK(ctx, CheckScalarShape(first.shape(), "first_sample"));
    const bool steps_vector = step.dims() == 1;
    const int64_t steps = step.NumElements();
    OP_REQUIRES_OK(ctx, ToTf(cfg_.CheckSteps(steps)));
    // first_sample is in host memory on every device: its range check must be exact, and an
    // error, which a value read only on the GPU could not be.
    const int64_t first_sample = first.dtype() == tensorflow::DT_INT32
                                     ? int64_t{first.scalar<int32_t>()()}
                                     : first.scalar<int64_t>()();
    OP_REQUIRES_OK(ctx, ToTf(cfg_.batch.CheckFirstSample(first_sample)));

    sdk::Inputs in;
    in.count = static_cast<int>(cfg_.shapes.inputs.size());
    for (int i = 0; i < in.count; ++i) {
      const sdk::InputSpec& spec = cfg_.shapes.inputs[i];
      const tensorflow::Tensor& t = ctx->input(sdk::kCommonInputs + i);
      OP_REQUIRES_OK(ctx,
                     ToTf(sdk::CheckInputShape(spec, true, Dims(t.shape()), cfg_.batch.rows())));
      if (kOnCpu) {
        OP_REQUIRES_OK(ctx,
                       ToTf(sdk::CheckInputValues(spec.name, spec.values,
                                                  sdk::KindOf(static_cast<sdk::DType>(t.dtype())),
                                                  t.data(), t.NumElements())));
      }
      in.data[i] = t.data();
      in.rank[i] = t.dims();
      for (int d = 0; d < t.dims(); ++d) in.dims[i][d] = t.dim_size(d);
    }

    sdk::CallGeometry g{};
    g.batch_size = cfg_.batch.batch_size;
    g.num_samples = cfg_.batch.rows();
    g.first_sample = first_sample;
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      tensorflow::TensorShape shape = out_shapes_[i];
      if (steps_vector) shape.InsertDim(0, steps);
      tensorflow::Tensor* out = nullptr;
      OP_REQUIRES_OK(ctx, AllocateOutput(ctx, i, shape, type_string(), cfg_.shapes.names[i], &out));
      g.base[i] = out->data();
      g.sample_bytes[i] = cfg_.sample_bytes[i];
    }
    if (g.num_samples == 0 || steps == 0) return;  // an empty shard, or no step: nothing to write
    // On the CPU these point to host memory; on the GPU (no HostMemory("seed"/"step") in the
    // kernel registration) to device memory, read only by the kernels. TensorFlow's
    // first_sample is a host value: no sample offset.
    const sdk::SeedAndStep seed_step{seed.flat<int64_t>().data(), seed.NumElements(),
                                     step.flat<int64_t>().data(), nullptr};
    if constexpr (kOnCpu) {
      // Each step's keys, then the steps' rows as one range: row r of the range is row
      // r % rows of step r / rows.
      const int streams = cfg_.variant->def.num_streams;
      std::vector<PhiloxKey> keys(steps * streams);
      for (int64_t k = 0; k < steps; ++k) {
        const sdk::SeedAndStep at = sdk::StepSeedAndStep(seed_step, k);
        for (int s = 0; s < streams; ++s) keys[k * streams + s] = sdk::StreamKey(at, s);
      }
      const int64_t rows = g.num_samples;
      auto work = [&](int64_t begin, int64_t end) {
        while (begin < end) {
          const int64_t k = begin / rows, first = begin - k * rows;
          const int64_t last = std::min(rows, first + (end - begin));
          const sdk::CallGeometry at = sdk::StepGeometry(g, k);
          fill_rows_(cfg_.params.data(), &at, &in, keys.data() + k * streams, first, last);
          begin += last - first;
        }
      };
      auto* workers = ctx->device()->tensorflow_cpu_worker_threads();
      tensorflow::Shard(workers->num_threads, workers->workers, steps * rows, cost_per_sample_,
                        work);
    } else {
      OP_REQUIRES(ctx, launch_ != nullptr,
                  absl::UnimplementedError(absl::StrCat(
                      type_string(), ": its generator's library was built without GPU code")));
      TfScratch scratch(ctx);
      const sdk::ScratchAllocator allocator = scratch.allocator();
      const sdk::GpuLaunchArgs call{
          cfg_.params.data(), &g, &seed_step, &in, ctx->eigen_device<Eigen::GpuDevice>().stream(),
          &allocator};
      const cudaError_t err =
          steps_vector ? core::LaunchSteps(*cfg_.variant, call, steps) : launch_(&call);
      OP_REQUIRES_OK(ctx, scratch.status());
      OP_REQUIRES_OK(ctx, ToTf(sdk::GpuLaunchStatus(err, type_string())));
    }
  }

 private:
  const OtfFillRowsCpuFn fill_rows_;
  const OtfLaunchGpuFn launch_;
  core::Configured cfg_;
  std::vector<tensorflow::TensorShape> out_shapes_;
  int64_t cost_per_sample_ = 0;
};

template <bool kOnCpu>
class GeneratorOpFactory : public tensorflow::kernel_factory::OpKernelFactory {
 public:
  explicit GeneratorOpFactory(const core::Variant* variant) : variant_(variant) {}
  tensorflow::OpKernel* Create(OpKernelConstruction* ctx) override {
    return new GeneratorOp<kOnCpu>(ctx, variant_);
  }

 private:
  const core::Variant* variant_;
};

// The op of generator `g`, from its spec strings, as REGISTER_OP would register it.
void RegisterOp(const core::Generator* g) {
  tensorflow::OpDefBuilder b(g->name);
  for (const std::string& spec : core::CommonInputSpecs()) b.Input(spec);
  for (const std::string& spec : core::CommonAttrSpecs()) b.Attr(spec);
  b.SetShapeFn([g](InferenceContext* c) { return ShapeFn(c, g); });
  for (const std::string& spec : g->input_specs) b.Input(spec);
  for (const std::string& spec : g->output_specs) b.Output(spec);
  for (const std::string& spec : g->attr_specs) b.Attr(spec);
  b.Doc(g->doc);
  tensorflow::OpRegistry::Global()->Register(
      [b](tensorflow::OpRegistrationData* data) -> absl::Status { return b.Finalize(data); });
}

// The CPU and GPU kernels of each variant, for the nodes whose type attributes have its
// values. The GPU kernel reads seed, step and the generator's inputs in device memory; only
// first_sample stays in host memory (see Compute). A GPU-only generator's CPU kernel
// refuses, naming the op.
void RegisterKernels(const core::Generator& g) {
  for (const core::Variant& v : g.variants) {
    for (const bool gpu : {false, true}) {
      tensorflow::KernelDefBuilder builder(g.name.c_str());
      builder.Device(gpu ? tensorflow::DEVICE_GPU : tensorflow::DEVICE_CPU);
      for (const auto& [attr, type] : v.types)
        builder.TypeConstraint(attr.c_str(), static_cast<tensorflow::DataType>(type));
      if (gpu) builder.HostMemory("first_sample");
      std::unique_ptr<tensorflow::kernel_factory::OpKernelFactory> factory;
      if (gpu) {
        factory = std::make_unique<GeneratorOpFactory<false>>(&v);
      } else {
        factory = std::make_unique<GeneratorOpFactory<true>>(&v);
      }
      new tensorflow::kernel_factory::OpKernelRegistrar(builder.Build(), "GeneratorOp",
                                                        std::move(factory));
    }
  }
}

// Registers, once each, the ops of the core's generators not registered yet; returns their
// names.
std::vector<std::string> RegisterNewOps() {
  static std::mutex mutex;
  static auto* registered = new std::set<std::string>;
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<std::string> names;
  for (const core::Generator* g : core::Generators()) {
    if (!registered->insert(g->name).second) continue;
    RegisterOp(g);
    RegisterKernels(*g);
#if OTF_WITH_XLA
    RegisterXla(*g);
#endif
    names.push_back(g->name);
  }
  return names;
}

// The core's own generators, when TensorFlow loads the op library (tf.load_op_library
// collects the ops registered while it loads one).
[[maybe_unused]] const bool kCoreOpsRegistered = (RegisterNewOps(), true);

}  // namespace
}  // namespace tf_front
}  // namespace tf_onthefly

// The ops of generators added to the core since the op library was loaded (a library of
// generators loaded later): registers them, with their kernels (and XLA kernels), and
// returns their names, one per line ("" for none), to be freed with tf_onthefly_core_free.
extern "C" __attribute__((visibility("default"))) char* tf_onthefly_register_tensorflow_ops() {
  std::string names;
  for (const std::string& n : tf_onthefly::tf_front::RegisterNewOps())
    names += (names.empty() ? "" : "\n") + n;
  char* out = static_cast<char*>(std::malloc(names.size() + 1));
  if (out != nullptr) std::memcpy(out, names.c_str(), names.size() + 1);
  return out;
}

// The generator SDK, TensorFlow side: op registration with its shape function, and the CPU
// and GPU kernels of any generator struct (generator.h), from a small Config that reads the
// op's attributes (the XLA kernel: generator_xla.h):
//
//   struct MyGenConfig {
//     using Params = MyGen::Params;
//     // Reads and validates the generator's own attributes (Ctx: InferenceContext or
//     // OpKernelConstruction, so the shape function and every kernel run the same checks),
//     // names each output with its per-sample shape, in the op's output order, and each
//     // tensor input of its own with its shape and value rules, in the op's input order.
//     template <typename Ctx>
//     static absl::Status Configure(Ctx* c, MyGen::Params* p, sdk::SampleShapes* shapes);
//   };
//
//   OTF_REGISTER_GENERATOR_OP("OnTheFly>MyGen", MyGenConfig)
//       .Output("x: float").Attr("dim: int").Doc(...);   // the generator's own part
//   OTF_REGISTER_GENERATOR_KERNELS(MyGenConfig, MyGen)("OnTheFly>MyGen");
//
// Every generator op gets the common inputs seed (int64 [] or [2]), step (int64 []),
// first_sample (int32 or int64 [], attribute Tindex) and attributes batch_size (global
// batch) and num_samples (-1: whole batch); its own inputs follow (.Input(...) after the
// macro). Output i has shape [num_samples] + its per-sample shape, and its dtype (hence
// its element size) comes from the op definition, never from the Config.
#ifndef TF_ONTHEFLY_SDK_GENERATOR_OP_H_
#define TF_ONTHEFLY_SDK_GENERATOR_OP_H_

#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif
#ifndef EIGEN_USE_GPU
#define EIGEN_USE_GPU
#endif

#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensorflow/core/framework/kernel_def_builder.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/types.h"
#include "tensorflow/core/util/work_sharder.h"
#include "tf_ops/common/float_env.h"
#include "tf_ops/common/tf_glue.h"
#include "tf_ops/sdk/generator.h"
#include "tf_ops/sdk/generator_config.h"
#if OTF_WITH_XLA
#include "tf_ops/sdk/generator_xla.h"
#endif
#include "unsupported/Eigen/CXX11/Tensor"

namespace tf_onthefly {
namespace sdk {

template <typename Config>
absl::Status GeneratorShapeFn(tensorflow::shape_inference::InferenceContext* c, const char* op) {
  BatchAttrs batch;
  typename Config::Params params{};
  SampleShapes shapes;
  TF_RETURN_IF_ERROR(Configure<Config>(c, &batch, &params, &shapes));
  std::vector<tensorflow::DataType> types;
  TF_RETURN_IF_ERROR(OutputTypes(c, op, &types));
  TF_RETURN_IF_ERROR(CheckOutputs(shapes, types, batch.rows()));
  TF_RETURN_IF_ERROR(CheckInputCount(shapes, c->num_inputs()));
  TF_RETURN_IF_ERROR(SeedShape(c, 0));
  TF_RETURN_IF_ERROR(ScalarShape(c, 1, "step"));
  TF_RETURN_IF_ERROR(ScalarShape(c, 2, "first_sample"));
  for (size_t i = 0; i < shapes.inputs.size(); ++i) {
    const auto input = c->input(kCommonInputs + static_cast<int>(i));
    std::vector<int64_t> dims;
    for (int d = 0; c->RankKnown(input) && d < c->Rank(input); ++d)
      dims.push_back(c->Value(c->Dim(input, d)));  // -1 where unknown
    TF_RETURN_IF_ERROR(CheckInputShape(shapes.inputs[i], c->RankKnown(input), dims, batch.rows()));
  }
  for (int i = 0; i < c->num_outputs(); ++i) {
    std::vector<tensorflow::shape_inference::DimensionHandle> dims = {c->MakeDim(batch.rows())};
    for (int64_t d : shapes.dims[i]) dims.push_back(c->MakeDim(d));
    c->set_output(i, c->MakeShape(dims));
  }
  return absl::OkStatus();
}

using CPUDevice = Eigen::ThreadPoolDevice;
using GPUDevice = Eigen::GpuDevice;

// Scratch memory for a launcher generator's GPU launch, from TensorFlow's allocator
// (allocate_temp): stream-ordered on the op's stream, like every TF GPU kernel's
// temporaries. The tensors live until Compute returns, after the launch was enqueued. A
// refusal is kept, with the op's name and the bytes asked, and reported in place of
// whatever the launch returns.
class TfScratch {
 public:
  explicit TfScratch(tensorflow::OpKernelContext* ctx) : ctx_(ctx) {}
  ScratchAllocator allocator() { return ScratchAllocator(&Allocate, this); }
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

  tensorflow::OpKernelContext* ctx_;
  std::vector<tensorflow::Tensor> temps_;
  absl::Status status_;
};

// The op kernel of generator Gen on Device, for an op whose attributes Config reads.
template <typename Device, typename Config, typename Gen>
class GeneratorOp : public tensorflow::OpKernel {
  static_assert(std::is_same_v<typename Config::Params, typename Gen::Params>,
                "the Config and the generator must share one Params struct");
  static constexpr bool kOnCpu = std::is_same_v<Device, CPUDevice>;

 public:
  explicit GeneratorOp(tensorflow::OpKernelConstruction* ctx) : OpKernel(ctx) {
    if constexpr (kOnCpu && !HasCpu<Gen>::value) {
      ctx->CtxFailure(GpuOnlyError(type_string()));
      return;
    }
    OP_REQUIRES_OK(ctx, Configure<Config>(ctx, &batch_, &params_, &shapes_));
    OP_REQUIRES_OK(ctx, CheckOutputs(shapes_, OutputTypes(ctx), batch_.rows()));
    OP_REQUIRES_OK(ctx, CheckInputCount(shapes_, ctx->num_inputs()));
    int64_t bytes_per_sample = 0;
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      out_shapes_.emplace_back(tensorflow::TensorShape({batch_.rows()}));
      for (int64_t d : shapes_.dims[i]) out_shapes_[i].AddDim(d);
      sample_bytes_[i] = tensorflow::DataTypeSize(ctx->output_type(i)) *
                         (batch_.rows() > 0 ? out_shapes_[i].num_elements() / batch_.rows() : 0);
      bytes_per_sample += sample_bytes_[i];
    }
    // Work-sharder cost: roughly a Philox block (~100 ops) per 4 output elements.
    cost_per_sample_ = 64 + 25 * bytes_per_sample;
  }

  void Compute(tensorflow::OpKernelContext* ctx) override {
    const tensorflow::Tensor& seed = ctx->input(0);
    const tensorflow::Tensor& step = ctx->input(1);
    const tensorflow::Tensor& first = ctx->input(2);
    OP_REQUIRES_OK(ctx, CheckSeedShape(seed.shape()));
    OP_REQUIRES_OK(ctx, CheckScalarShape(step.shape(), "step"));
    OP_REQUIRES_OK(ctx, CheckScalarShape(first.shape(), "first_sample"));
    // first_sample is in host memory on every device: its range check must be exact, and an
    // error, which a value read only on the GPU could not be.
    const int64_t first_sample = first.dtype() == tensorflow::DT_INT32
                                     ? int64_t{first.scalar<int32_t>()()}
                                     : first.scalar<int64_t>()();
    OP_REQUIRES_OK(ctx, batch_.CheckFirstSample(first_sample));

    Inputs in;
    in.count = static_cast<int>(shapes_.inputs.size());
    for (int i = 0; i < in.count; ++i) {
      const InputSpec& spec = shapes_.inputs[i];
      const tensorflow::Tensor& t = ctx->input(kCommonInputs + i);
      OP_REQUIRES_OK(ctx, CheckInputShape(spec, true, Dims(t.shape()), batch_.rows()));
      if constexpr (kOnCpu) {
        OP_REQUIRES_OK(ctx, CheckInputValues(spec.name, spec.values, KindOf(t.dtype()), t.data(),
                                             t.NumElements()));
      }
      in.data[i] = t.data();
      in.rank[i] = t.dims();
      for (int d = 0; d < t.dims(); ++d) in.dims[i][d] = t.dim_size(d);
    }

    CallGeometry g{};
    g.batch_size = batch_.batch_size;
    g.num_samples = batch_.rows();
    g.first_sample = first_sample;
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      tensorflow::Tensor* out = nullptr;
      OP_REQUIRES_OK(ctx, AllocateOutput(ctx, i, &out));
      g.base[i] = out->data();
      g.sample_bytes[i] = sample_bytes_[i];
    }
    if (g.num_samples == 0) return;  // an empty shard: nothing to write
    // On the CPU these point to host memory; on the GPU (no HostMemory("seed"/"step") in the
    // kernel registration) to device memory, read only by the kernels.
    const SeedAndStep seed_step{seed.flat<int64_t>().data(), seed.NumElements(),
                                step.flat<int64_t>().data()};
    if constexpr (kOnCpu) {
      if constexpr (HasCpu<Gen>::value) {
        PhiloxKey keys[Gen::kNumStreams];
        for (int s = 0; s < Gen::kNumStreams; ++s) keys[s] = StreamKey(seed_step, s);
        auto work = [&](int64_t begin, int64_t end) {
          ScopedIeeeSubnormals ieee;
          FillRowsCpu<Gen>(params_, g, in, keys, begin, end);
        };
        auto* workers = ctx->device()->tensorflow_cpu_worker_threads();
        tensorflow::Shard(workers->num_threads, workers->workers, g.num_samples, cost_per_sample_,
                          work);
      }
    } else {
      TfScratch scratch(ctx);
      const ScratchAllocator allocator = scratch.allocator();
      const GpuCall<typename Gen::Params> call{
          params_, g, seed_step, in, ctx->eigen_device<GPUDevice>().stream(), allocator};
      const cudaError_t err = LaunchGenerator<Gen>(call);
      OP_REQUIRES_OK(ctx, scratch.status());
      OP_REQUIRES_OK(ctx, GpuLaunchStatus(err, type_string()));
    }
  }

 private:
  // Output i, or a ResourceExhausted error naming the op, the output and the bytes
  // (tf_glue.h).
  absl::Status AllocateOutput(tensorflow::OpKernelContext* ctx, int i, tensorflow::Tensor** out) {
    return tf_onthefly::AllocateOutput(ctx, i, out_shapes_[i], type_string(), shapes_.names[i],
                                       out);
  }

  BatchAttrs batch_;
  typename Gen::Params params_{};
  SampleShapes shapes_;
  std::vector<tensorflow::TensorShape> out_shapes_;
  int64_t sample_bytes_[kMaxOutputs] = {};
  int64_t cost_per_sample_ = 0;
};

template <typename Device, typename Config, typename Gen>
tensorflow::OpKernel* CreateGeneratorOp(tensorflow::OpKernelConstruction* ctx) {
  return new GeneratorOp<Device, Config, Gen>(ctx);
}

// Registers the CPU, GPU and XLA kernels of op `op` that run generator Gen, for the node
// whose type attributes have the values in `types` (none: every node). The GPU kernel reads
// seed, step and the generator's inputs in device memory; only first_sample stays in host
// memory (see Compute). A GPU-only generator's CPU kernel refuses, naming the op.
template <typename Config, typename Gen>
bool RegisterGeneratorKernels(const char* op, std::initializer_list<TypeConstraint> types = {}) {
  for (const char* device : {tensorflow::DEVICE_CPU, tensorflow::DEVICE_GPU}) {
    tensorflow::KernelDefBuilder builder(op);
    builder.Device(device);
    for (const TypeConstraint& t : types) builder.TypeConstraint(t.attr, t.type);
    const bool gpu = device == tensorflow::DEVICE_GPU;
    if (gpu) builder.HostMemory("first_sample");
    new tensorflow::kernel_factory::OpKernelRegistrar(
        builder.Build(), "GeneratorOp",
        gpu ? &CreateGeneratorOp<GPUDevice, Config, Gen>
            : &CreateGeneratorOp<CPUDevice, Config, Gen>);
  }
#if OTF_WITH_XLA
  RegisterXlaHandlers<Config, Gen>(op, types);
#endif
  return true;
}

}  // namespace sdk
}  // namespace tf_onthefly

// REGISTER_OP with the SDK's common inputs, attributes and shape function; chain the
// generator's own .Input(...), .Output(...), .Attr(...) and .Doc(...) after it.
// first_sample may be int32 because the GPU kernels read it in host memory: an int32
// constant made on the GPU device lives there (TensorFlow's host-memory Const kernel),
// so a step on the GPU needs no node on /CPU:0. One on /CPU:0 inside a graph loop on the
// GPU gives the loop a second, host part, and the two parts exchange the loop's control
// every iteration (docs/performance.md, "What one op costs in a step"). int64 is for the
// rare first_sample past 2^31 - 1.
#define OTF_REGISTER_GENERATOR_OP(name, Config)                            \
  REGISTER_OP(name)                                                        \
      .Input("seed: int64")                                                \
      .Input("step: int64")                                                \
      .Input("first_sample: Tindex")                                       \
      .Attr("Tindex: {int32, int64} = DT_INT64")                           \
      .Attr("batch_size: int")                                             \
      .Attr("num_samples: int = -1")                                       \
      .SetShapeFn([](::tensorflow::shape_inference::InferenceContext* c) { \
        return ::tf_onthefly::sdk::GeneratorShapeFn<Config>(c, name);      \
      })

// The kernels of an op that run generator Gen, with its Config:
//   OTF_REGISTER_GENERATOR_KERNELS(MyConfig, MyGen)("OnTheFly>MyGen");
//   OTF_REGISTER_GENERATOR_KERNELS(MyConfig, MyGen<float>)("OnTheFly>MyGen",
//                                                          {{"dtype", tensorflow::DT_FLOAT}});
#define OTF_REGISTER_GENERATOR_KERNELS(...) \
  OTF_REGISTER_GENERATOR_KERNELS_(__COUNTER__, __VA_ARGS__)
#define OTF_REGISTER_GENERATOR_KERNELS_(n, ...) OTF_REGISTER_GENERATOR_KERNELS__(n, __VA_ARGS__)
#define OTF_REGISTER_GENERATOR_KERNELS__(n, ...)                 \
  [[maybe_unused]] static const bool otf_generator_kernels_##n = \
      ::tf_onthefly::sdk::RegisterGeneratorKernels<__VA_ARGS__>

#endif  // TF_ONTHEFLY_SDK_GENERATOR_OP_H_

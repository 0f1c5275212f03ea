// The generator SDK, TensorFlow side: op registration with shape function, and the CPU and
// GPU OpKernels, for any generator struct (generator.h) plus a small Config:
//
//   struct MyGenConfig {
//     using Gen = MyGen;
//     // Reads and validates the generator's own attributes (Ctx: InferenceContext or
//     // OpKernelConstruction, so the shape function and the kernel run the same checks)
//     // and names each output with its per-sample shape.
//     template <typename Ctx>
//     static absl::Status Configure(Ctx* c, MyGen::Params* p, sdk::SampleShapes* shapes);
//   };
//
//   OTF_REGISTER_GENERATOR_OP("OnTheFly>MyGen", MyGenConfig)
//       .Output("x: float").Attr("dim: int");            // the generator's own part
//   OTF_REGISTER_GENERATOR_KERNELS("OnTheFly>MyGen", MyGenConfig);
//
// Every generator op gets the common inputs seed (int64 [] or [2]), step (int64 []),
// first_sample (int64 []) and attributes batch_size (global batch) and num_samples
// (-1: whole batch); output i has shape [num_samples] + its per-sample shape.
#ifndef TF_ONTHEFLY_SDK_GENERATOR_OP_H_
#define TF_ONTHEFLY_SDK_GENERATOR_OP_H_

#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif
#ifndef EIGEN_USE_GPU
#define EIGEN_USE_GPU
#endif

#include <string>
#include <utility>
#include <vector>

#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/types.h"
#include "tensorflow/core/util/work_sharder.h"
#include "tf_ops/common/tf_glue.h"
#include "tf_ops/sdk/generator.h"
#include "unsupported/Eigen/CXX11/Tensor"

// Returns InvalidArgument(StrCat(message...)) from the enclosing function unless `cond`.
#define OTF_REQUIRE(cond, ...)                                                   \
  do {                                                                           \
    if (!(cond)) return absl::InvalidArgumentError(absl::StrCat(__VA_ARGS__));   \
  } while (0)

namespace tf_onthefly {
namespace sdk {

// Each output's name, per-sample shape and element size, in the op's output order.
struct SampleShapes {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> dims;
  std::vector<int64_t> elem_bytes;
  void Add(std::string name, std::vector<int64_t> sample_dims, int64_t bytes_per_element) {
    names.push_back(std::move(name));
    dims.push_back(std::move(sample_dims));
    elem_bytes.push_back(bytes_per_element);
  }
  int64_t Elements(int i) const {
    int64_t n = 1;
    for (int64_t d : dims[i]) n *= d;
    return n;
  }
};

// batch_size / num_samples: the global batch and how much of it this op produces.
struct BatchAttrs {
  int64_t batch_size = 0, num_samples = -1;
  int64_t rows() const { return num_samples < 0 ? batch_size : num_samples; }

  template <typename Ctx>
  absl::Status Parse(Ctx* c) {
    TF_RETURN_IF_ERROR(c->GetAttr("batch_size", &batch_size));
    TF_RETURN_IF_ERROR(c->GetAttr("num_samples", &num_samples));
    OTF_REQUIRE(batch_size >= 1, "batch_size must be >= 1, got ", batch_size);
    OTF_REQUIRE(num_samples >= -1 && num_samples <= batch_size,
                "num_samples must be -1 (the whole batch) or in [0, batch_size] = [0, ",
                batch_size, "], got ", num_samples);
    return absl::OkStatus();
  }
};

// Every output of `rows` samples within the cap (docs/ops.md), checked without overflow
// before anything is allocated; per-sample dims must be >= 1 (Configure checks its attrs).
inline absl::Status CheckOutputs(const SampleShapes& s, int64_t rows) {
  for (size_t i = 0; i < s.dims.size(); ++i) {
    int64_t n = 1;
    for (int64_t d : s.dims[i]) {
      OTF_REQUIRE(d >= 1, "per-sample shape of ", s.names[i], " has a dimension ", d);
      OTF_REQUIRE(n <= kMaxOutputBytes / d, s.names[i], " exceeds the per-output cap of ",
                  kMaxOutputBytes, " bytes per sample");
      n *= d;
    }
    TF_RETURN_IF_ERROR(CheckOutputSize(s.names[i].c_str(), rows, n, s.elem_bytes[i]));
  }
  return absl::OkStatus();
}

template <typename Config>
absl::Status GeneratorShapeFn(tensorflow::shape_inference::InferenceContext* c) {
  BatchAttrs batch;
  TF_RETURN_IF_ERROR(batch.Parse(c));
  typename Config::Gen::Params params{};
  SampleShapes shapes;
  TF_RETURN_IF_ERROR(Config::Configure(c, &params, &shapes));
  TF_RETURN_IF_ERROR(CheckOutputs(shapes, batch.rows()));
  TF_RETURN_IF_ERROR(SeedShape(c, 0));
  TF_RETURN_IF_ERROR(ScalarShape(c, 1, "step"));
  TF_RETURN_IF_ERROR(ScalarShape(c, 2, "first_sample"));
  for (int i = 0; i < c->num_outputs(); ++i) {
    std::vector<tensorflow::shape_inference::DimensionHandle> dims = {c->MakeDim(batch.rows())};
    for (int64_t d : shapes.dims[i]) dims.push_back(c->MakeDim(d));
    c->set_output(i, c->MakeShape(dims));
  }
  return absl::OkStatus();
}

using CPUDevice = Eigen::ThreadPoolDevice;
using GPUDevice = Eigen::GpuDevice;

template <typename Device, typename Gen>
struct FillGenerator;

// Whether Gen has the optional CPU whole-sample path (generator.h).
template <typename Gen, typename = void>
struct HasSampleCpu : std::false_type {};
template <typename Gen>
struct HasSampleCpu<Gen, std::void_t<decltype(Gen::GenerateSampleCpu(
                             std::declval<const typename Gen::Params&>(),
                             std::declval<const SampleRng&>(), std::declval<const SampleOutputs&>()))>>
    : std::true_type {};

template <typename Gen>
struct FillGenerator<CPUDevice, Gen> {
  absl::Status operator()(tensorflow::OpKernelContext* ctx, const typename Gen::Params& p,
                          const CallGeometry& g, int64_t cost_per_sample) const {
    const int64_t items = Gen::ItemsPerSample(p);
    auto work = [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        if constexpr (HasSampleCpu<Gen>::value) {
          if (Gen::GenerateSampleCpu(p, SampleRng(g.keys, static_cast<uint64_t>(g.first_sample + row)),
                                     SampleOutputs(g, row)))
            continue;
        }
        for (int64_t item = 0; item < items; ++item) RunItem<Gen>(p, g, row, item);
      }
    };
    auto* workers = ctx->device()->tensorflow_cpu_worker_threads();
    tensorflow::Shard(workers->num_threads, workers->workers, g.num_samples, cost_per_sample,
                      work);
    return absl::OkStatus();
  }
};

template <typename Gen>
struct FillGenerator<GPUDevice, Gen> {
  absl::Status operator()(tensorflow::OpKernelContext* ctx, const typename Gen::Params& p,
                          const CallGeometry& g, int64_t) const {
    return GpuLaunchStatus(LaunchGenerator<Gen>(p, g, ctx->eigen_device<GPUDevice>().stream()),
                           "generator kernel launch");
  }
};

template <typename Device, typename Config>
class GeneratorOp : public tensorflow::OpKernel {
 public:
  using Gen = typename Config::Gen;
  static_assert(Gen::kNumStreams >= 1 && Gen::kNumStreams <= kMaxStreams,
                "a generator draws from 1..kMaxStreams streams");

  explicit GeneratorOp(tensorflow::OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, batch_.Parse(ctx));
    OP_REQUIRES_OK(ctx, Config::Configure(ctx, &params_, &shapes_));
    OP_REQUIRES(ctx, ctx->num_outputs() <= kMaxOutputs && shapes_.dims.size() == ctx->num_outputs(),
                absl::InternalError("generator Config names a different number of outputs than the op"));
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      OP_REQUIRES(ctx, shapes_.elem_bytes[i] == tensorflow::DataTypeSize(ctx->output_type(i)),
                  absl::InternalError(absl::StrCat("generator Config gives ", shapes_.names[i],
                                                   " the wrong element size")));
    }
    OP_REQUIRES_OK(ctx, CheckOutputs(shapes_, batch_.rows()));
    int64_t bytes_per_sample = 0;
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      sample_bytes_[i] = shapes_.Elements(i) * shapes_.elem_bytes[i];
      bytes_per_sample += sample_bytes_[i];
    }
    // Work-sharder cost: roughly a Philox block (~100 ops) per 4 output elements.
    cost_per_sample_ = 64 + 25 * bytes_per_sample;
  }

  void Compute(tensorflow::OpKernelContext* ctx) override {
    uint64_t seed0 = 0, seed1 = 0;
    OP_REQUIRES_OK(ctx, ParseSeed(ctx->input(0), &seed0, &seed1));
    int64_t step = 0, first_sample = 0;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx->input(1), "step", &step));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx->input(2), "first_sample", &first_sample));
    const int64_t rows = batch_.rows();
    OP_REQUIRES(ctx, first_sample >= 0 && first_sample <= batch_.batch_size - rows,
                absl::InvalidArgumentError(absl::StrCat(
                    "first_sample must be in [0, batch_size - num_samples] = [0, ",
                    batch_.batch_size - rows, "], got ", first_sample)));

    CallGeometry g{};
    g.num_samples = rows;
    g.first_sample = first_sample;
    g.num_outputs = ctx->num_outputs();
    for (int i = 0; i < g.num_outputs; ++i) {
      tensorflow::TensorShape shape({rows});
      for (int64_t d : shapes_.dims[i]) shape.AddDim(d);
      tensorflow::Tensor* out = nullptr;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(i, shape, &out));
      g.base[i] = out->data();
      g.sample_bytes[i] = sample_bytes_[i];
    }
    if (rows == 0) return;  // empty shard: nothing to launch
    for (int s = 0; s < Gen::kNumStreams; ++s)
      g.keys[s] = DeriveKey(seed0, seed1, static_cast<uint32_t>(s), static_cast<uint64_t>(step));
    OP_REQUIRES_OK(ctx, FillGenerator<Device, Gen>()(ctx, params_, g, cost_per_sample_));
  }

 private:
  BatchAttrs batch_;
  typename Gen::Params params_{};
  SampleShapes shapes_;
  int64_t sample_bytes_[kMaxOutputs] = {};
  int64_t cost_per_sample_ = 0;
};

}  // namespace sdk
}  // namespace tf_onthefly

// REGISTER_OP with the SDK's common inputs, attributes and shape function; chain the
// generator's own .Output(...) and .Attr(...) after it.
#define OTF_REGISTER_GENERATOR_OP(name, Config)                              \
  REGISTER_OP(name)                                                          \
      .Input("seed: int64")                                                  \
      .Input("step: int64")                                                  \
      .Input("first_sample: int64")                                          \
      .Attr("batch_size: int")                                               \
      .Attr("num_samples: int = -1")                                         \
      .SetShapeFn(::tf_onthefly::sdk::GeneratorShapeFn<Config>)

// Kernel builders: on the GPU, seed, step and first_sample stay in host memory (the
// kernel reads them on the host to derive keys and the launch geometry).
#define OTF_GENERATOR_CPU_BUILDER(name) Name(name).Device(::tensorflow::DEVICE_CPU)
#define OTF_GENERATOR_GPU_BUILDER(name) \
  Name(name).Device(::tensorflow::DEVICE_GPU).HostMemory("seed").HostMemory("step").HostMemory("first_sample")

// CPU and GPU kernels of a generator op.
#define OTF_REGISTER_GENERATOR_KERNELS(name, ...)                                              \
  REGISTER_KERNEL_BUILDER(OTF_GENERATOR_CPU_BUILDER(name),                                     \
                          ::tf_onthefly::sdk::GeneratorOp<::tf_onthefly::sdk::CPUDevice, __VA_ARGS__>); \
  REGISTER_KERNEL_BUILDER(OTF_GENERATOR_GPU_BUILDER(name),                                     \
                          ::tf_onthefly::sdk::GeneratorOp<::tf_onthefly::sdk::GPUDevice, __VA_ARGS__>)

// The same for one value T of a type attribute (e.g. an output's dtype).
#define OTF_REGISTER_GENERATOR_KERNELS_TYPED(name, type_attr, T, ...)                          \
  REGISTER_KERNEL_BUILDER(OTF_GENERATOR_CPU_BUILDER(name).TypeConstraint<T>(type_attr),        \
                          ::tf_onthefly::sdk::GeneratorOp<::tf_onthefly::sdk::CPUDevice, __VA_ARGS__>); \
  REGISTER_KERNEL_BUILDER(OTF_GENERATOR_GPU_BUILDER(name).TypeConstraint<T>(type_attr),        \
                          ::tf_onthefly::sdk::GeneratorOp<::tf_onthefly::sdk::GPUDevice, __VA_ARGS__>)

// Kernels for every label type a "{float, int32, int64}" attribute allows, with
// ConfigTemplate<T> the Config for label type T.
#define OTF_REGISTER_GENERATOR_KERNELS_FOR_LABEL_TYPES(name, type_attr, ConfigTemplate)        \
  OTF_REGISTER_GENERATOR_KERNELS_TYPED(name, type_attr, float, ConfigTemplate<float>);         \
  OTF_REGISTER_GENERATOR_KERNELS_TYPED(name, type_attr, int32_t, ConfigTemplate<int32_t>);     \
  OTF_REGISTER_GENERATOR_KERNELS_TYPED(name, type_attr, int64_t, ConfigTemplate<int64_t>)

#endif  // TF_ONTHEFLY_SDK_GENERATOR_OP_H_

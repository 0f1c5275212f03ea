// OnTheFly>RandomBatch kernels: one OpKernel for CPU and GPU; the device-specific part is
// the small Fill functor (CPU: TF's thread pool; GPU: the CUDA launcher on TF's stream).
#define EIGEN_USE_THREADS
#define EIGEN_USE_GPU

#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/register_types.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/util/work_sharder.h"
#include "tf_ops/common/tf_glue.h"
#include "tf_ops/random_batch/random_batch.h"
#include "tf_ops/random_batch/random_batch_attrs.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tf_onthefly {
namespace random_batch {

using CPUDevice = Eigen::ThreadPoolDevice;
using GPUDevice = Eigen::GpuDevice;
using ::tensorflow::OpKernel;
using ::tensorflow::OpKernelConstruction;
using ::tensorflow::OpKernelContext;
using ::tensorflow::Tensor;
using ::tensorflow::TensorShape;

template <typename Device, typename TLabel>
struct Fill;

template <typename TLabel>
struct Fill<CPUDevice, TLabel> {
  absl::Status operator()(OpKernelContext* ctx, const Params& p, float* features,
                          TLabel* labels) const {
    const int64_t blocks_per_row = BlocksPerRow(p.feature_dim);
    // ~Philox (about 100 integer ops) per block, plus the transcendental math of normals.
    const int64_t cost_per_row =
        blocks_per_row * (p.distribution == Distribution::kNormal ? 600 : 150) + 150;
    auto work = [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        float* out = features + row * p.feature_dim;
        for (int64_t block = 0; block < blocks_per_row; ++block) {
          float v[4];
          FeatureBlock(p, row, block, v);
          const int64_t n = std::min<int64_t>(4, p.feature_dim - 4 * block);
          for (int64_t i = 0; i < n; ++i) out[4 * block + i] = v[i];
        }
        labels[row] = Label<TLabel>(p, row);
      }
    };
    auto* workers = ctx->device()->tensorflow_cpu_worker_threads();
    tensorflow::Shard(workers->num_threads, workers->workers, p.num_samples, cost_per_row, work);
    return absl::OkStatus();
  }
};

template <typename TLabel>
struct Fill<GPUDevice, TLabel> {
  absl::Status operator()(OpKernelContext* ctx, const Params& p, float* features,
                          TLabel* labels) const {
    return GpuLaunchStatus(
        LaunchRandomBatch<TLabel>(p, features, labels, ctx->eigen_device<GPUDevice>().stream()),
        "OnTheFly>RandomBatch kernel launch");
  }
};

template <typename Device, typename TLabel>
class RandomBatchOp : public OpKernel {
 public:
  explicit RandomBatchOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, Attrs::Parse(ctx, &attrs_));
    params_.num_samples = attrs_.rows();
    params_.feature_dim = attrs_.feature_dim;
    params_.distribution =
        attrs_.distribution == "normal" ? Distribution::kNormal : Distribution::kUniform;
    params_.low = attrs_.low;
    params_.high = attrs_.high;
    params_.range = attrs_.high - attrs_.low;
    params_.label_mode =
        attrs_.label_mode == "classes" ? LabelMode::kClasses : LabelMode::kBernoulli;
    params_.p = attrs_.p;
    params_.num_classes = static_cast<uint64_t>(attrs_.num_classes);
  }

  void Compute(OpKernelContext* ctx) override {
    uint64_t seed0, seed1;
    OP_REQUIRES_OK(ctx, ParseSeed(ctx->input(0), &seed0, &seed1));
    int64_t step, first_sample;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx->input(1), "step", &step));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx->input(2), "first_sample", &first_sample));
    const int64_t rows = params_.num_samples;
    OP_REQUIRES(ctx, first_sample >= 0 && first_sample <= attrs_.batch_size - rows,
                absl::InvalidArgumentError(absl::StrCat(
                    "first_sample must be in [0, batch_size - num_samples] = [0, ",
                    attrs_.batch_size - rows, "], got ", first_sample)));

    Tensor* features = nullptr;
    Tensor* labels = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({rows, attrs_.feature_dim}),
                                             &features));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({rows, 1}), &labels));
    if (rows == 0) return;  // empty shard: nothing to launch

    Params p = params_;
    p.first_sample = first_sample;
    p.feature_key = DeriveKey(seed0, seed1, kFeatureStream, static_cast<uint64_t>(step));
    p.label_key = DeriveKey(seed0, seed1, kLabelStream, static_cast<uint64_t>(step));
    OP_REQUIRES_OK(ctx, Fill<Device, TLabel>()(ctx, p, features->flat<float>().data(),
                                               labels->flat<TLabel>().data()));
  }

 private:
  Attrs attrs_;
  Params params_{};
};

#define REGISTER_CPU(T)                                                            \
  REGISTER_KERNEL_BUILDER(Name("OnTheFly>RandomBatch")                             \
                              .Device(tensorflow::DEVICE_CPU)                      \
                              .TypeConstraint<T>("label_dtype"),                   \
                          RandomBatchOp<CPUDevice, T>);
#define REGISTER_GPU(T)                                                            \
  REGISTER_KERNEL_BUILDER(Name("OnTheFly>RandomBatch")                             \
                              .Device(tensorflow::DEVICE_GPU)                      \
                              .HostMemory("seed")                                  \
                              .HostMemory("step")                                  \
                              .HostMemory("first_sample")                          \
                              .TypeConstraint<T>("label_dtype"),                   \
                          RandomBatchOp<GPUDevice, T>);

REGISTER_CPU(float)
REGISTER_CPU(int32_t)
REGISTER_CPU(int64_t)
REGISTER_GPU(float)
REGISTER_GPU(int32_t)
REGISTER_GPU(int64_t)

#undef REGISTER_CPU
#undef REGISTER_GPU

}  // namespace random_batch
}  // namespace tf_onthefly

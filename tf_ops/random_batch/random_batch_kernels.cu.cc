// GPU kernels of OnTheFly>RandomBatch: the SDK's grid-stride kernel over RandomBatchGen, for
// every (feature type, label type).
#include "tf_ops/random_batch/random_batch.h"
#include "tf_ops/sdk/generator_gpu.cu.h"

#define OTF_RANDOM_BATCH_GPU(Feature)                                                    \
  OTF_DEFINE_GPU_GENERATOR(tf_onthefly::random_batch::RandomBatchGen<Feature, float>);   \
  OTF_DEFINE_GPU_GENERATOR(tf_onthefly::random_batch::RandomBatchGen<Feature, int32_t>); \
  OTF_DEFINE_GPU_GENERATOR(tf_onthefly::random_batch::RandomBatchGen<Feature, int64_t>)
OTF_RANDOM_BATCH_GPU(tf_onthefly::Float32);
OTF_RANDOM_BATCH_GPU(tf_onthefly::BFloat16);
OTF_RANDOM_BATCH_GPU(tf_onthefly::Float16);

// GPU kernels of OnTheFly>RandomBatch: the SDK's grid-stride kernel over RandomBatchGen.
#include "tf_ops/random_batch/random_batch.h"
#include "tf_ops/sdk/generator_gpu.cu.h"

OTF_DEFINE_GPU_GENERATOR(tf_onthefly::random_batch::RandomBatchGen<float>);
OTF_DEFINE_GPU_GENERATOR(tf_onthefly::random_batch::RandomBatchGen<int32_t>);
OTF_DEFINE_GPU_GENERATOR(tf_onthefly::random_batch::RandomBatchGen<int64_t>);

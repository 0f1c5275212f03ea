// GPU kernel of OnTheFly>RandomWalk: the SDK's grid-stride kernel over RandomWalkGen.
#include "tf_ops/random_walk/random_walk.h"
#include "tf_ops/sdk/generator_gpu.cu.h"

OTF_DEFINE_GPU_GENERATOR(tf_onthefly::random_walk::RandomWalkGen);

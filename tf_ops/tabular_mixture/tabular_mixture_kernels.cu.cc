// GPU kernel of OnTheFly>TabularMixture: the SDK's grid-stride kernel over TabularMixtureGen.
#include "tf_ops/sdk/generator_gpu.cu.h"
#include "tf_ops/tabular_mixture/tabular_mixture.h"

OTF_DEFINE_GPU_GENERATOR(tf_onthefly::tabular_mixture::TabularMixtureGen);

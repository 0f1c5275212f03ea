// GPU kernels of OnTheFly>ProceduralShapes: the SDK's grid-stride kernel.
#include "tf_ops/procedural_shapes/procedural_shapes.h"
#include "tf_ops/sdk/generator_gpu.cu.h"

OTF_DEFINE_GPU_GENERATOR(tf_onthefly::procedural_shapes::ProceduralShapesGen<tf_onthefly::Float32>);
OTF_DEFINE_GPU_GENERATOR(
    tf_onthefly::procedural_shapes::ProceduralShapesGen<tf_onthefly::BFloat16>);
OTF_DEFINE_GPU_GENERATOR(tf_onthefly::procedural_shapes::ProceduralShapesGen<tf_onthefly::Float16>);
OTF_DEFINE_GPU_GENERATOR(tf_onthefly::procedural_shapes::ProceduralShapesGen<uint8_t>);

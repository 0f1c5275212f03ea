// GPU kernels of OnTheFly>TeacherTask: the SDK's grid-stride kernel over TeacherTaskGen.
#include "tf_ops/sdk/generator_gpu.cu.h"
#include "tf_ops/teacher_task/teacher_task.h"

OTF_DEFINE_GPU_GENERATOR(tf_onthefly::teacher_task::TeacherTaskGen<float>);
OTF_DEFINE_GPU_GENERATOR(tf_onthefly::teacher_task::TeacherTaskGen<int32_t>);
OTF_DEFINE_GPU_GENERATOR(tf_onthefly::teacher_task::TeacherTaskGen<int64_t>);

// The two generators' specs and argument checks (the glue between the kernels and the SDK).
#include "sorted_uniforms.h"
#include "tf_ops/sdk/generator_def.h"

namespace sorted_uniforms {

template <int64_t kMaxLength>
struct Config {
  using Params = sorted_uniforms::Params;
  static sdk::Status Configure(const sdk::Attrs& a, Params* p, sdk::SampleShapes* shapes) {
    OTF_RETURN_IF_ERROR(a.GetAttr("length", &p->length));
    OTF_REQUIRE(p->length >= 1 && p->length <= kMaxLength, "length must be in [1, ", kMaxLength,
                "], got ", p->length);
    shapes->Add("values", {p->length});
    return sdk::OkStatus();
  }
};

using BlockConfig = Config<kBlockMaxLength>;
using SegmentConfig = Config<kSegmentMaxLength>;

OTF_GENERATOR("OnTheFly>BlockSortedUniforms", BlockConfig)
    .Output("values: float")
    .Attr("length: int")
    .Doc(R"doc(
Uniforms in [0, 1), sorted: value j of a sample is word j % 4 of block j / 4 of stream 0,
then the sample is sorted ascending. GPU: one thread block per sample, a CUB block radix
sort in dynamic shared memory.

values: [num_samples, length] float32.
length: Uniforms per sample, in [1, 16384].
)doc");
OTF_GENERATOR_KERNELS(BlockConfig, BlockSortedUniforms)("OnTheFly>BlockSortedUniforms");

OTF_GENERATOR("OnTheFly>SegmentSortedUniforms", SegmentConfig)
    .Output("values: float")
    .Attr("length: int")
    .Doc(R"doc(
The values of BlockSortedUniforms, for samples up to 2^20 long. GPU: one CUB device-wide
segmented radix sort over the batch, its buffers in the SDK's scratch memory.

values: [num_samples, length] float32.
length: Uniforms per sample, in [1, 1048576].
)doc");
OTF_GENERATOR_KERNELS(SegmentConfig, SegmentSortedUniforms)("OnTheFly>SegmentSortedUniforms");

}  // namespace sorted_uniforms

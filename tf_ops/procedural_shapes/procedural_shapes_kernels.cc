// OnTheFly>ProceduralShapes: registration, attribute checks, CPU and GPU kernels (via the SDK).
#include <cmath>

#include "tf_ops/procedural_shapes/procedural_shapes.h"
#include "tf_ops/sdk/generator_op.h"

namespace tf_onthefly {
namespace procedural_shapes {

constexpr int64_t kMinSide = 8, kMaxSide = 8192;

template <typename T>
struct ProceduralShapesConfig {
  using Gen = ProceduralShapesGen<T>;

  template <typename Ctx>
  static absl::Status Configure(Ctx* c, Params* p, sdk::SampleShapes* shapes) {
    float min_size, max_size;
    TF_RETURN_IF_ERROR(c->GetAttr("height", &p->height));
    TF_RETURN_IF_ERROR(c->GetAttr("width", &p->width));
    TF_RETURN_IF_ERROR(c->GetAttr("channels", &p->channels));
    TF_RETURN_IF_ERROR(c->GetAttr("min_size", &min_size));
    TF_RETURN_IF_ERROR(c->GetAttr("max_size", &max_size));
    TF_RETURN_IF_ERROR(c->GetAttr("noise", &p->noise));
    OTF_REQUIRE(p->height >= kMinSide && p->height <= kMaxSide, "height must be in [", kMinSide,
                ", ", kMaxSide, "], got ", p->height);
    OTF_REQUIRE(p->width >= kMinSide && p->width <= kMaxSide, "width must be in [", kMinSide,
                ", ", kMaxSide, "], got ", p->width);
    OTF_REQUIRE(p->channels == 1 || p->channels == 3, "channels must be 1 or 3, got ",
                p->channels);
    OTF_REQUIRE(min_size > 0.0f && min_size <= max_size && max_size <= 1.0f,
                "need 0 < min_size <= max_size <= 1 (fractions of the shorter side), got "
                "min_size=", min_size, ", max_size=", max_size);
    OTF_REQUIRE(p->noise >= 0.0f && p->noise <= 1.0f, "noise must be in [0, 1], got ", p->noise);
    const float side = static_cast<float>(std::min(p->height, p->width));
    p->min_size = min_size * side;
    p->size_range = (max_size - min_size) * side;
    p->inv_height = 1.0f / static_cast<float>(p->height);
    p->inv_width = 1.0f / static_cast<float>(p->width);

    shapes->Add("images", {p->height, p->width, p->channels}, sizeof(T));
    shapes->Add("labels", {1}, sizeof(int32_t));
    shapes->Add("boxes", {4}, sizeof(float));
    return absl::OkStatus();
  }
};

OTF_REGISTER_GENERATOR_OP("OnTheFly>ProceduralShapes", ProceduralShapesConfig<uint8_t>)
    .Output("images: dtype")
    .Output("labels: int32")
    .Output("boxes: float")
    .Attr("height: int")
    .Attr("width: int")
    .Attr("channels: int = 3")
    .Attr("dtype: {uint8, float} = DT_UINT8")
    .Attr("min_size: float = 0.25")
    .Attr("max_size: float = 0.7")
    .Attr("noise: float = 0.15")
    .Doc(R"doc(
Images of one random circle (0), rectangle (1) or triangle (2) on a noisy background, with
the class label and the normalised bounding box [ymin, xmin, ymax, xmax].
)doc");

OTF_REGISTER_GENERATOR_KERNELS_TYPED("OnTheFly>ProceduralShapes", "dtype", uint8_t,
                                     ProceduralShapesConfig<uint8_t>);
OTF_REGISTER_GENERATOR_KERNELS_TYPED("OnTheFly>ProceduralShapes", "dtype", float,
                                     ProceduralShapesConfig<float>);

}  // namespace procedural_shapes
}  // namespace tf_onthefly

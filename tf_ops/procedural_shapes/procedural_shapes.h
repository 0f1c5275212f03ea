// procedural_shapes: images of one random circle, rectangle or triangle on a noisy
// background; label = the shape's class, box = its bounding box.
//
// Work item = 8 consecutive pixels of one image row, so small batches still fill a GPU.
// Each item recomputes its image's shape parameters (three Philox blocks, cheaper than
// any cross-thread sharing) and draws its pixels' noise. All geometry is unfused,
// round-to-nearest float arithmetic with no division or transcendental, so CPU and GPU
// images are bit-identical.
#ifndef TF_ONTHEFLY_PROCEDURAL_SHAPES_PROCEDURAL_SHAPES_H_
#define TF_ONTHEFLY_PROCEDURAL_SHAPES_PROCEDURAL_SHAPES_H_

#include <cstdint>

#include "tf_ops/common/uniform.h"
#include "tf_ops/sdk/generator.h"

namespace tf_onthefly {
namespace procedural_shapes {

constexpr sdk::Stream<0>
    kShapeStream{};  // blocks 0..2: class, size, position, colour, aspect, flip
constexpr sdk::Stream<1> kNoiseStream{};  // block = pixel index: one word per channel
constexpr int kNumStreams = 2;
constexpr int kPixelsPerItem = 8;
enum ShapeClass : int32_t { kCircle = 0, kRectangle = 1, kTriangle = 2 };
constexpr int kNumClasses = 3;

struct Params {
  int64_t height, width, channels;
  float min_size, size_range;   // shape size in pixels: min_size + size_range * u
  float noise;                  // background: noise * u per pixel and channel
  float inv_height, inv_width;  // for normalised boxes (multiplied, never divided)
};

struct Shape {
  int32_t cls;
  float cx, cy;          // centre, pixels
  float half_w, half_h;  // half extents, pixels
  bool flip;             // triangle apex down
  float color[3];
};

OTF_HD Shape DrawShape(const Params& p, const sdk::SampleRng<kNumStreams>& rng) {
  const Words4 a = rng.Block(kShapeStream, 0);
  const Words4 b = rng.Block(kShapeStream, 1);
  const Words4 c = rng.Block(kShapeStream, 2);
  Shape s;
  s.cls = static_cast<int32_t>(UniformBelow(a.w0, a.w1, kNumClasses));
  const float size = AddRn(MulRn(p.size_range, UniformFloat(a.w2)), p.min_size);
  s.half_w = MulRn(size, 0.5f);
  // Rectangles get an aspect ratio in [0.5, 1); circles and triangles are as tall as wide.
  s.half_h = s.cls == kRectangle ? MulRn(s.half_w, AddRn(MulRn(0.5f, UniformFloat(c.w0)), 0.5f))
                                 : s.half_w;
  // Centre so the whole shape lies inside the image.
  s.cx = AddRn(MulRn(AddRn(static_cast<float>(p.width), -2.0f * s.half_w), UniformFloat(a.w3)),
               s.half_w);
  s.cy = AddRn(MulRn(AddRn(static_cast<float>(p.height), -2.0f * s.half_h), UniformFloat(b.w0)),
               s.half_h);
  // Bright colours (>= 0.4) on a dark noisy background (< noise <= 1, usually small).
  s.color[0] = AddRn(MulRn(0.6f, UniformFloat(b.w1)), 0.4f);
  s.color[1] = AddRn(MulRn(0.6f, UniformFloat(b.w2)), 0.4f);
  s.color[2] = AddRn(MulRn(0.6f, UniformFloat(b.w3)), 0.4f);
  s.flip = (c.w1 >> 31) != 0;
  return s;
}

OTF_HD bool Inside(const Shape& s, float x, float y) {
  const float dx = AddRn(x, -s.cx), dy = AddRn(y, -s.cy);
  if (s.cls == kCircle) {
    return AddRn(MulRn(dx, dx), MulRn(dy, dy)) <= MulRn(s.half_w, s.half_w);
  }
  const float ax = dx < 0.0f ? -dx : dx, ay = dy < 0.0f ? -dy : dy;
  if (s.cls == kRectangle) return ax <= s.half_w && ay <= s.half_h;
  // Triangle: apex at the top (or bottom when flipped), base 2 * half_w wide; the
  // half-width grows from 0 at the apex to half_w at the base.
  if (ay > s.half_h) return false;
  const float from_apex = s.flip ? AddRn(s.half_h, -dy) : AddRn(dy, s.half_h);
  return ax <= MulRn(from_apex, 0.5f);
}

// A pixel value v in [0, 1] as the image type T: uint8_t (round(255 v)), or a float type of
// uniform.h (Float32, BFloat16, Float16: v rounded to nearest even).
template <typename T>
struct Pixel {
  using Storage = typename T::Storage;
  OTF_HD static Storage From(float v) { return T::template From<Rounding::kNearestEven>(v); }
};
template <>
struct Pixel<uint8_t> {
  using Storage = uint8_t;
  OTF_HD static uint8_t From(float v) {
    return static_cast<uint8_t>(AddRn(MulRn(v, 255.0f), 0.5f));  // v in [0, 1]: round
  }
};

template <typename T>
struct ProceduralShapesGen {
  using Params = procedural_shapes::Params;
  static constexpr int kNumStreams = procedural_shapes::kNumStreams;

  OTF_HD static int64_t ItemsPerRow(const Params& p) {
    return (p.width + kPixelsPerItem - 1) / kPixelsPerItem;
  }
  OTF_HD static int64_t ItemsPerSample(const Params& p) { return p.height * ItemsPerRow(p); }

  OTF_HD static void Generate(const Params& p, const sdk::SampleRng<kNumStreams>& rng, int64_t item,
                              const sdk::SampleOutputs& out) {
    const Shape s = DrawShape(p, rng);
    const int64_t y = item / ItemsPerRow(p);
    const int64_t x0 = (item - y * ItemsPerRow(p)) * kPixelsPerItem;
    auto* image = out.get<typename Pixel<T>::Storage>(0);
    const float py = AddRn(static_cast<float>(y), 0.5f);  // pixel centres
    for (int64_t x = x0; x < x0 + kPixelsPerItem && x < p.width; ++x) {
      const bool inside = Inside(s, AddRn(static_cast<float>(x), 0.5f), py);
      const int64_t pixel = y * p.width + x;
      const Words4 n = rng.Block(kNoiseStream, static_cast<uint32_t>(pixel));
      for (int ch = 0; ch < p.channels; ++ch) {
        const float v = inside ? s.color[ch] : MulRn(p.noise, UniformFloat(n[ch]));
        image[pixel * p.channels + ch] = Pixel<T>::From(v);
      }
    }
    if (item == 0) {
      *out.get<int32_t>(1) = s.cls;
      float* box = out.get<float>(2);  // [ymin, xmin, ymax, xmax], normalised
      box[0] = MulRn(AddRn(s.cy, -s.half_h), p.inv_height);
      box[1] = MulRn(AddRn(s.cx, -s.half_w), p.inv_width);
      box[2] = MulRn(AddRn(s.cy, s.half_h), p.inv_height);
      box[3] = MulRn(AddRn(s.cx, s.half_w), p.inv_width);
    }
  }
};

}  // namespace procedural_shapes
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_PROCEDURAL_SHAPES_PROCEDURAL_SHAPES_H_

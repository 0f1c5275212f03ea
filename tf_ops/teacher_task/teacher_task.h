// teacher_task: features x and the labels a fixed random teacher network gives them.
//
// The teacher is a two-layer ReLU network whose weights are a pure function of task_seed
// (the same task for every data seed and step): h = relu(W1 x + b1), o = W2 h. Labels are
// argmax(o) (classification; with probability `noise` replaced by a uniformly random
// class) or o[0] + noise * N(0, 1) (regression). Weights are regenerated from Philox per
// sample rather than stored: no device buffers, and still exact on CPU and GPU, because
// every sum runs in a fixed order with unfused, round-to-nearest float operations.
#ifndef TF_ONTHEFLY_TEACHER_TASK_TEACHER_TASK_H_
#define TF_ONTHEFLY_TEACHER_TASK_TEACHER_TASK_H_

#include <cstdint>

#include "tf_ops/common/normal.h"
#include "tf_ops/common/uniform.h"
#include "tf_ops/sdk/generator.h"

namespace tf_onthefly {
namespace teacher_task {

constexpr sdk::Stream<0> kFeatureStream{};  // per sample: features
constexpr sdk::Stream<1> kLabelStream{};    // per sample: label noise
// Teacher weights: keyed by (task_seed, stream, step 0), never by the data seed.
constexpr uint32_t kW1Stream = 100, kB1Stream = 101, kW2Stream = 102;
constexpr int kMaxClasses = 64;  // keeps the logits in registers/L1

struct Params {
  int64_t feature_dim, hidden, outputs;  // outputs: classes, or 1 for regression
  bool classification, normal_features;
  float noise;               // flip probability, or regression noise std
  float w1_scale, w2_scale;  // sqrt(3 / fan_in): unit-variance pre-activations
  PhiloxKey w1, b1, w2;
};

// Uniform in [-scale, scale): 2 scale u - scale, each step rounded (exact on both sides).
OTF_HD float Symmetric(uint32_t w, float scale) {
  return AddRn(MulRn(2.0f * scale, UniformFloat(w)), -scale);
}

// sum_j W[row, j] * x[j], W[row, j] = Symmetric(word j of (key, "sample" row)), in order.
OTF_HD float Dot(PhiloxKey key, int64_t row, float scale, const float* x, int64_t n) {
  float acc = 0.0f;
  for (int64_t j0 = 0; j0 < n; j0 += 4) {
    const Words4 w = SampleBlock(key, static_cast<uint64_t>(row), static_cast<uint32_t>(j0 / 4));
    for (int k = 0; k < 4 && j0 + k < n; ++k)
      acc = AddRn(acc, MulRn(Symmetric(w[k], scale), x[j0 + k]));
  }
  return acc;
}

template <typename TLabel>
struct TeacherTaskGen {
  using Params = teacher_task::Params;
  static constexpr int kNumStreams = 2;

  // One item is the whole sample: its label needs every feature. Its cost is the teacher
  // (hidden x ceil(feature_dim / 4) Philox blocks of W1 a sample, plus b1 and W2), against
  // ceil(feature_dim / 4) blocks of normal features, so interleaving the normals of several
  // items (the SDK's GenerateItems) would change little of a sample's time (hidden = 32 by
  // default: 32 blocks of the teacher for each block of features).
  OTF_HD static int64_t ItemsPerSample(const Params&) { return 1; }

  OTF_HD static void Generate(const Params& p, const sdk::SampleRng<kNumStreams>& rng, int64_t,
                              const sdk::SampleOutputs& out) {
    float* x = out.get<float>(0);
    for (int64_t j = 0; j < p.feature_dim; j += 4) {
      const Words4 w = rng.Block(kFeatureStream, static_cast<uint32_t>(j / 4));
      float v[4];
      if (p.normal_features) {
        BoxMuller(w.w0, w.w1, &v[0], &v[1]);
        BoxMuller(w.w2, w.w3, &v[2], &v[3]);
      } else {
        v[0] = Symmetric(w.w0, 1.0f);
        v[1] = Symmetric(w.w1, 1.0f);
        v[2] = Symmetric(w.w2, 1.0f);
        v[3] = Symmetric(w.w3, 1.0f);
      }
      for (int k = 0; k < 4 && j + k < p.feature_dim; ++k) x[j + k] = v[k];
    }

    float logits[kMaxClasses];
    for (int c = 0; c < p.outputs; ++c) logits[c] = 0.0f;
    for (int64_t h = 0; h < p.hidden; ++h) {
      const float bias = Symmetric(SampleBlock(p.b1, static_cast<uint64_t>(h), 0).w0, 0.5f);
      float a = AddRn(Dot(p.w1, h, p.w1_scale, x, p.feature_dim), bias);
      a = a > 0.0f ? a : 0.0f;
      // W2 is stored by hidden unit: row h holds the weights from unit h to every output.
      for (int c = 0; c < p.outputs; c += 4) {
        const Words4 w = SampleBlock(p.w2, static_cast<uint64_t>(h), static_cast<uint32_t>(c / 4));
        for (int k = 0; k < 4 && c + k < p.outputs; ++k)
          logits[c + k] = AddRn(logits[c + k], MulRn(Symmetric(w[k], p.w2_scale), a));
      }
    }

    const Words4 n = rng.Block(kLabelStream, 0);
    TLabel* label = out.get<TLabel>(1);
    if (p.classification) {
      int best = 0;
      for (int c = 1; c < p.outputs; ++c) best = logits[c] > logits[best] ? c : best;
      if (UniformFloat(n.w0) < p.noise)
        best = static_cast<int>(UniformBelow(n.w1, n.w2, static_cast<uint64_t>(p.outputs)));
      *label = static_cast<TLabel>(best);
    } else {
      float z0, z1;
      BoxMuller(n.w0, n.w1, &z0, &z1);
      *label = static_cast<TLabel>(AddRn(logits[0], MulRn(p.noise, z0)));
    }
  }
};

}  // namespace teacher_task
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_TEACHER_TASK_TEACHER_TASK_H_

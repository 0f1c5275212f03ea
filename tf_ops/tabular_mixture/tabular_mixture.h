// tabular_mixture: tabular features drawn from a mixture of Gaussian clusters, one per class.
// Each sample picks a class uniformly; its features are the class's mean plus cluster_std
// times standard normals. The means are a pure function of task_seed (the same clusters for
// every data seed and step), regenerated from Philox where they are needed: no device
// buffers, and exact on CPU and GPU.
#ifndef TF_ONTHEFLY_TABULAR_MIXTURE_TABULAR_MIXTURE_H_
#define TF_ONTHEFLY_TABULAR_MIXTURE_TABULAR_MIXTURE_H_

#include <cstdint>

#include "tf_ops/common/normal.h"
#include "tf_ops/common/uniform.h"
#include "tf_ops/sdk/generator.h"

namespace tf_onthefly {
namespace tabular_mixture {

struct Params {
  int64_t feature_dim;
  uint64_t num_classes;
  float cluster_std;  // standard deviation around a mean
  float separation;   // means uniform in [-separation, separation) per feature
  PhiloxKey means;    // keyed by (task_seed, stream 200, step 0), never by the data seed
};

struct TabularMixtureGen {
  using Params = tabular_mixture::Params;
  static constexpr int kNumStreams = 2;
  static constexpr sdk::Stream<0> kNoiseStream{};  // block b: the normals of features 4b .. 4b+3
  static constexpr sdk::Stream<1> kClassStream{};  // block 0: the class

  // One item per four features: each reads the sample's class (a Philox block, cheaper
  // than sharing it between threads) and writes its four features; item 0 the label too.
  OTF_HD static int64_t ItemsPerSample(const Params& p) { return (p.feature_dim + 3) / 4; }

  OTF_HD static void Generate(const Params& p, const sdk::SampleRng<kNumStreams>& rng, int64_t item,
                              const sdk::SampleOutputs& out) {
    GenerateItems<0, 1>(p, rng, item, 1, out);
  }

  // Items first + k * stride, k < K (generator.h): the class once, then every item's noise
  // and mean words, their normals, and the stores, so a GPU thread interleaves K items.
  template <int V, int K>
  OTF_HD static void GenerateItems(const Params& p, const sdk::SampleRng<kNumStreams>& rng,
                                   int64_t first, int64_t stride, const sdk::SampleOutputs& out) {
    const Words4 c = rng.Block(kClassStream, 0);
    const uint64_t cls = UniformBelow(c.w0, c.w1, p.num_classes);
    const float scale = 2.0f * p.separation;
    float x[K][4];
    OTF_UNROLL
    for (int k = 0; k < K; ++k) {
      const uint32_t block = static_cast<uint32_t>(first + k * stride);
      const Words4 noise = rng.Block(kNoiseStream, block);
      const Words4 mean = SampleBlock(p.means, cls, block);  // cluster `cls`'s means
      float z[4];
      BoxMuller(noise.w0, noise.w1, &z[0], &z[1]);
      BoxMuller(noise.w2, noise.w3, &z[2], &z[3]);
      for (int i = 0; i < 4; ++i) {
        const float m = AddRn(MulRn(scale, UniformFloat(mean[i])), -p.separation);
        x[k][i] = AddRn(m, MulRn(p.cluster_std, z[i]));
      }
    }
    sdk::StoreBlocks4<K>(out.get<float>(0), p.feature_dim, (p.feature_dim & 3) == 0, first, stride,
                         x);
    if (first == 0) *out.get<int32_t>(1) = static_cast<int32_t>(cls);  // item 0 is the first
  }
};

}  // namespace tabular_mixture
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_TABULAR_MIXTURE_TABULAR_MIXTURE_H_

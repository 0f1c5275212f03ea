// drift_walk's kernels launched by hand, outside TensorFlow, as their author would: buffers
// from cudaMalloc, the launcher LaunchDriftWalks called on a stream of its own, each launch
// timed with CUDA events. The launcher benchmark (launcher_generators.py) runs it next to
// the same kernels wrapped as the op, to show what the wrapping costs.
//   drift_walk_by_hand ROWS LENGTH LAUNCHES
// prints one JSON line: {"rows", "length", "bytes", "ms": [each launch]}.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tf_ops/drift_walk/drift_walk.h"

namespace {

void Check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "drift_walk_by_hand: %s: %s\n", what, cudaGetErrorString(err));
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: drift_walk_by_hand ROWS LENGTH LAUNCHES\n");
    return 2;
  }
  const int64_t rows = std::atoll(argv[1]), length = std::atoll(argv[2]);
  const int launches = std::atoi(argv[3]);
  const int64_t tiles = tf_onthefly::drift_walk::DriftWalkTiles(length);
  const int64_t seed_step[3] = {1, 2, 0};
  const float up[3] = {0.3f, 0.5f, 0.7f};
  int64_t* d_seed_step;
  float* d_up;
  int32_t *walks, *labels, *tile_sums = nullptr;
  Check(cudaMalloc(&d_seed_step, sizeof(seed_step)), "cudaMalloc");
  Check(cudaMalloc(&d_up, sizeof(up)), "cudaMalloc");
  Check(cudaMalloc(&walks, rows * length * sizeof(int32_t)), "cudaMalloc walks");
  Check(cudaMalloc(&labels, rows * sizeof(int32_t)), "cudaMalloc labels");
  if (tiles > 1) Check(cudaMalloc(&tile_sums, rows * tiles * sizeof(int32_t)), "cudaMalloc");
  Check(cudaMemcpy(d_seed_step, seed_step, sizeof(seed_step), cudaMemcpyHostToDevice), "copy");
  Check(cudaMemcpy(d_up, up, sizeof(up), cudaMemcpyHostToDevice), "copy");
  cudaStream_t stream;
  Check(cudaStreamCreate(&stream), "cudaStreamCreate");
  const tf_onthefly::sdk::SeedAndStep key{d_seed_step, 2, d_seed_step + 2};
  cudaEvent_t start, stop;
  Check(cudaEventCreate(&start), "cudaEventCreate");
  Check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<float> ms(launches);
  for (int i = -3; i < launches; ++i) {  // three launches untimed: module load, clocks
    Check(cudaEventRecord(start, stream), "cudaEventRecord");
    Check(tf_onthefly::drift_walk::LaunchDriftWalks(key, 0, rows, length, d_up, 3, walks, labels,
                                                    tile_sums, stream),
          "LaunchDriftWalks");
    Check(cudaEventRecord(stop, stream), "cudaEventRecord");
    Check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    if (i >= 0) Check(cudaEventElapsedTime(&ms[i], start, stop), "cudaEventElapsedTime");
  }
  std::printf("{\"rows\": %lld, \"length\": %lld, \"bytes\": %lld, \"ms\": [",
              static_cast<long long>(rows), static_cast<long long>(length),
              static_cast<long long>(rows * (length + 1) * 4));
  for (int i = 0; i < launches; ++i) std::printf("%s%.5f", i ? ", " : "", ms[i]);
  std::printf("]}\n");
  return 0;
}

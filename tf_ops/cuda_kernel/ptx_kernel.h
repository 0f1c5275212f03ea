// A user's PTX kernel launched on a given CUDA stream: what OnTheFly>CudaKernel's GPU kernel
// (TensorFlow's stream) and its XLA custom call (XLA's stream) share. No TensorFlow header:
// the op's attributes arrive as a KernelSpec, the call's buffers as CallBuffers.
//
// The kernel's parameters, in order (docs/interop.md, "The kernel's parameters"):
//   const int64_t* seed, int64_t seed_size, const int64_t* step,      (device memory)
//   int64_t first_sample, int64_t num_samples, int64_t batch_size,
//   int64_t int_scalars[i]...,  float float_scalars[i]...,
//   const T* inputs[i]...,      T* outputs[i]...                       (device memory)
#ifndef TF_ONTHEFLY_CUDA_KERNEL_PTX_KERNEL_H_
#define TF_ONTHEFLY_CUDA_KERNEL_PTX_KERNEL_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "tf_ops/common/cuda_driver.h"

namespace tf_onthefly {
namespace cuda_kernel {

// The names of a PTX text's kernels (its .entry directives), in order. Comments and string
// literals are skipped; any whitespace, line breaks included, may follow `.entry`. The one
// parser of PTX entries: Python's tf_onthefly.ptx_entries calls it too (through
// tf_onthefly_ptx_entries below), so the two sides cannot disagree.
std::vector<std::string> PtxEntries(std::string_view ptx);

// Whether `ptx` has the .version and .target directives every PTX text starts with.
bool LooksLikePtx(std::string_view ptx);

// What the op's attributes fix about every launch.
struct KernelSpec {
  std::string who;  // "OnTheFly>CudaKernel (entry 'name')", the prefix of every error
  std::string ptx, entry;
  std::vector<int64_t> int_scalars;
  std::vector<float> float_scalars;
  size_t num_inputs = 0, num_outputs = 0;
  uint64_t grid[3] = {0, 0, 0};  // blocks; {0, 0, 0}: nothing to write, no launch
  int64_t block = 256, shared_memory_bytes = 0;

  // The parameters' sizes in bytes, in order (checked against the kernel's own list).
  std::vector<size_t> ParamSizes() const;
};

// The grid of a launch: 'fixed' (rule 2) takes `fixed`; 'elements' (0) and 'samples' (1)
// cover `count` (output 0's elements, or the rows) with `items_per_thread` items a thread.
void ComputeGrid(int rule, const std::vector<int64_t>& fixed, int64_t count,
                 int64_t items_per_thread, int64_t block, uint64_t grid[3]);

// One call's buffers, device memory.
struct CallBuffers {
  const void* seed = nullptr;
  int64_t seed_size = 1;
  const void* step = nullptr;
  int64_t first_sample = 0, num_samples = 0, batch_size = 0;
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
};

// The kernel's function in each CUDA context it has run in, found (the module loaded, the
// function looked up, the parameter list and the shared memory checked) on first use. A
// module is loaded once per (context, PTX) for the process, whatever number of caches
// carry the PTX; modules are never unloaded (a launch may be in flight).
class LaunchCache {
 public:
  struct Launchable {
    cuda_driver::CUfunction fn = nullptr;
    int max_grid[3] = {2147483647, 65535, 65535};
    int max_threads = 1024;
    int device = 0;
  };
  absl::Status Get(const cuda_driver::Driver& d, cuda_driver::CUcontext ctx,
                   cuda_driver::CUstream stream, const KernelSpec& spec, Launchable* out);

 private:
  std::mutex mu_;
  std::map<cuda_driver::CUcontext, Launchable> launchables_;
};

// Launches `spec` with `buffers` on `stream` (TensorFlow's or XLA's), making the stream's
// context current for the call. Every failure is an error naming spec.who; none ends the
// process.
absl::Status Launch(cuda_driver::CUstream stream, const KernelSpec& spec, LaunchCache* cache,
                    const CallBuffers& buffers);

}  // namespace cuda_kernel
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_CUDA_KERNEL_PTX_KERNEL_H_

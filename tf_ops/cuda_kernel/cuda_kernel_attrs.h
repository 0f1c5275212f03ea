// OnTheFly>CudaKernel's attributes, read and checked once, with the same messages in the
// shape function, the TensorFlow kernels and the XLA kernel.
#ifndef TF_ONTHEFLY_CUDA_KERNEL_CUDA_KERNEL_ATTRS_H_
#define TF_ONTHEFLY_CUDA_KERNEL_CUDA_KERNEL_ATTRS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tensorflow/core/framework/tensor_shape.h"
#include "tensorflow/core/framework/types.h"
#include "tf_ops/common/tf_glue.h"
#include "tf_ops/cuda_kernel/ptx_kernel.h"

namespace tf_onthefly {
namespace cuda_kernel {

constexpr char kOp[] = "OnTheFly>CudaKernel";
constexpr int kCommonInputs = 3;  // seed, step, first_sample
constexpr size_t kMaxTensors = 16;

struct KernelAttrs {
  KernelSpec spec;  // ptx, entry, who, scalars, counts, block, shared memory, grid
  int64_t batch_size = 0, num_samples = -1;
  std::vector<tensorflow::TensorShape> sample_shapes;
  tensorflow::DataTypeVector out_types, in_types;
  int rule = 0;  // 0: elements, 1: samples, 2: fixed
  int64_t rows() const { return num_samples < 0 ? batch_size : num_samples; }
  // Output i's shape: [rows] + sample_shapes[i].
  tensorflow::TensorShape OutputShape(size_t i) const {
    tensorflow::TensorShape s({rows()});
    s.AppendShape(sample_shapes[i]);
    return s;
  }
};

// The op placed where it cannot run: a CPU, in TensorFlow or under XLA.
inline absl::Status GpuOnlyRefusal(const std::string& who, const std::string& where) {
  return absl::InvalidArgumentError(absl::StrCat(
      who, ": runs on a GPU only (it launches PTX), but TensorFlow placed it on ", where,
      ". Place it on a GPU (tf.device('/GPU:0')); where TensorFlow sees no GPU, use a built-in "
      "generator or the host-array path of tf_onthefly.interop"));
}

// Reads and checks the attributes (Ctx: InferenceContext, OpKernelConstruction).
template <typename Ctx>
absl::Status ReadAttrs(Ctx* c, KernelAttrs* a) {
  KernelSpec& k = a->spec;
  std::string grid_rule;
  std::vector<tensorflow::PartialTensorShape> shapes;
  std::vector<int64_t> grid;
  int64_t items_per_thread = 1;
  std::vector<float> floats;
  TF_RETURN_IF_ERROR(c->GetAttr("ptx", &k.ptx));
  TF_RETURN_IF_ERROR(c->GetAttr("entry", &k.entry));
  TF_RETURN_IF_ERROR(c->GetAttr("batch_size", &a->batch_size));
  TF_RETURN_IF_ERROR(c->GetAttr("num_samples", &a->num_samples));
  TF_RETURN_IF_ERROR(c->GetAttr("sample_shapes", &shapes));
  TF_RETURN_IF_ERROR(c->GetAttr("Tout", &a->out_types));
  TF_RETURN_IF_ERROR(c->GetAttr("Tin", &a->in_types));
  TF_RETURN_IF_ERROR(c->GetAttr("int_scalars", &k.int_scalars));
  TF_RETURN_IF_ERROR(c->GetAttr("float_scalars", &k.float_scalars));
  TF_RETURN_IF_ERROR(c->GetAttr("grid_rule", &grid_rule));
  TF_RETURN_IF_ERROR(c->GetAttr("grid", &grid));
  TF_RETURN_IF_ERROR(c->GetAttr("block", &k.block));
  TF_RETURN_IF_ERROR(c->GetAttr("items_per_thread", &items_per_thread));
  TF_RETURN_IF_ERROR(c->GetAttr("shared_memory_bytes", &k.shared_memory_bytes));
  k.who = absl::StrCat(kOp, " (entry '", k.entry, "')");
  k.num_inputs = a->in_types.size();
  k.num_outputs = a->out_types.size();
  const std::string& who = k.who;

  OTF_REQUIRE(!k.entry.empty(), kOp, ": entry must name the kernel, got ''");
  OTF_REQUIRE(LooksLikePtx(k.ptx), who, ": ptx is not PTX text (no .version or .target ",
              "directive); pass the output of cuda.compile_ptx, NVRTC, or clang/nvcc -ptx");
  const std::vector<std::string> entries = PtxEntries(k.ptx);
  bool found = false;
  for (const auto& e : entries) found = found || e == k.entry;
  OTF_REQUIRE(found, who, ": the PTX has no entry '", k.entry, "'; its entries are [",
              absl::StrJoin(entries, ", "), "] (a C++ kernel needs extern \"C\" to keep its name)");
  OTF_REQUIRE(a->batch_size >= 1, who, ": batch_size must be >= 1, got ", a->batch_size);
  OTF_REQUIRE(a->num_samples >= -1 && a->num_samples <= a->batch_size, who,
              ": num_samples must be -1 (the whole batch) or in [0, batch_size=", a->batch_size,
              "], got ", a->num_samples);
  OTF_REQUIRE(!shapes.empty() && shapes.size() == a->out_types.size(), who,
              ": sample_shapes and Tout give the outputs, one each, at least one; got ",
              shapes.size(), " shapes and ", a->out_types.size(), " dtypes");
  OTF_REQUIRE(shapes.size() <= kMaxTensors && a->in_types.size() <= kMaxTensors, who, ": at most ",
              kMaxTensors, " outputs and ", kMaxTensors, " inputs");
  a->sample_shapes.clear();
  for (size_t i = 0; i < shapes.size(); ++i) {
    tensorflow::TensorShape s;
    OTF_REQUIRE(shapes[i].IsFullyDefined() && shapes[i].AsTensorShape(&s), who, ": sample_shapes[",
                i, "] must be fully defined, got ", shapes[i].DebugString());
    a->sample_shapes.push_back(s);
    // The cap is on what this call writes: its rows, not the global batch.
    OTF_REQUIRE(s.num_elements() == 0 ||
                    a->rows() <= kMaxOutputBytes / tensorflow::DataTypeSize(a->out_types[i]) /
                                     s.num_elements(),
                who, ": output ", i, " of ", a->rows(), " x ", s.DebugString(),
                " exceeds the per-output cap of ", kMaxOutputBytes, " bytes");
  }
  a->rule = grid_rule == "elements" ? 0 : grid_rule == "samples" ? 1 : 2;
  OTF_REQUIRE(k.block >= 1 && k.block <= 1024, who, ": block must be in [1, 1024] threads, got ",
              k.block);
  OTF_REQUIRE(items_per_thread >= 1, who, ": items_per_thread must be >= 1, got ",
              items_per_thread);
  OTF_REQUIRE(k.shared_memory_bytes >= 0, who, ": shared_memory_bytes must be >= 0, got ",
              k.shared_memory_bytes);
  if (a->rule == 2) {
    OTF_REQUIRE(!grid.empty() && grid.size() <= 3, who,
                ": grid_rule 'fixed' needs grid = [x], [x, y] or [x, y, z] blocks, got ",
                grid.size(), " numbers");
    for (size_t i = 0; i < grid.size(); ++i)
      OTF_REQUIRE(grid[i] >= 1 && grid[i] <= (i == 0 ? int64_t{2147483647} : 65535), who, ": grid[",
                  i, "] must be in [1, ", (i == 0 ? 2147483647 : 65535), "], got ", grid[i]);
  } else {
    OTF_REQUIRE(grid.empty(), who, ": grid is only for grid_rule 'fixed'; grid_rule is '",
                grid_rule, "'");
  }
  // Threads and blocks: every call of this node has the same shapes, so the same grid.
  const int64_t count = a->rule == 1 ? a->rows() : a->rows() * a->sample_shapes[0].num_elements();
  ComputeGrid(a->rule, grid, a->rows() == 0 ? 0 : count, items_per_thread, k.block, k.grid);
  return absl::OkStatus();
}

}  // namespace cuda_kernel
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_CUDA_KERNEL_CUDA_KERNEL_ATTRS_H_

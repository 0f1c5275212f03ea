// The PyTorch front end's kernels: the tf_onthefly::<name> ops python/tf_onthefly/torch
// defines run here, on the CPU and on CUDA, over the core's C API. Compiled against PyTorch's
// stable C ABI (third_party/torch): one build serves every PyTorch release from the one it
// targets on.
//
// A call unboxes (seed, step, sample_offset, inputs, first_sample, attrs), finds the
// configured call for its attributes (configured once per distinct attrs, then cached),
// allocates the outputs (and a GPU run's scratch) through PyTorch's allocator on the step's
// device, and runs the core: on the CPU, rows over PyTorch's intra-op threads where the batch
// is large enough; on CUDA, enqueued on PyTorch's current stream of that device. The same
// steps as the Python implementation the front end keeps for older PyTorch releases, without
// the interpreter in the call.
//
// A failed call throws std::runtime_error "[tf_onthefly <code>] <message>" (the core's code
// and message, which names the op and the argument); PyTorch raises it as a RuntimeError and
// the front end's functions re-raise it as tf_onthefly's CoreError.
//
// The stable ABI hands a boxed kernel nothing but its stack, so each op gets a kernel of its
// own: Kernel<K> runs the op in slot K, and slots are taken as Python registers ops
// (tf_onthefly_torch_register).

#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tf_ops/common/dlfcn_compat.h"
#include "tf_ops/core/core_api.h"
#include "tf_ops/core/registry.h"
#include "tf_ops/sdk/dtype.h"
#include "tf_ops/sdk/generator.h"

namespace tf_onthefly {
namespace torch_ops {
namespace {

using sdk::DType;
using torch::stable::Tensor;
using torch::stable::detail::from;
using torch::stable::detail::to;

constexpr int kMaxInputs = sizeof(OtfRunArgs::inputs) / sizeof(OtfRunArgs::inputs[0]);
constexpr int kMaxInputRank = sizeof(OtfRunArgs::input_dims[0]) / sizeof(int64_t);

[[noreturn]] void Fail(int32_t code, const std::string& message) {
  throw std::runtime_error("[tf_onthefly " + std::to_string(code) + "] " + message);
}

void Check(AOTITorchError err, const char* what) {
  if (err != AOTI_TORCH_SUCCESS) Fail(13, std::string("PyTorch's ") + what + " failed");
}

// A dtype in PyTorch's numbering (the stable ABI's, fixed) and the core's, and its name.
struct DTypePair {
  int32_t torch;
  DType sdk;
  const char* name;
};

const std::vector<DTypePair>& DTypePairs() {
  static const std::vector<DTypePair> pairs = {
      {aoti_torch_dtype_float32(), DType::kFloat32, "torch.float32"},
      {aoti_torch_dtype_float16(), DType::kFloat16, "torch.float16"},
      {aoti_torch_dtype_bfloat16(), DType::kBFloat16, "torch.bfloat16"},
      {aoti_torch_dtype_float64(), DType::kFloat64, "torch.float64"},
      {aoti_torch_dtype_int64(), DType::kInt64, "torch.int64"},
      {aoti_torch_dtype_int32(), DType::kInt32, "torch.int32"},
      {aoti_torch_dtype_int16(), DType::kInt16, "torch.int16"},
      {aoti_torch_dtype_int8(), DType::kInt8, "torch.int8"},
      {aoti_torch_dtype_uint8(), DType::kUInt8, "torch.uint8"},
      {aoti_torch_dtype_bool(), DType::kBool, "torch.bool"},
  };
  return pairs;
}

const DTypePair* ByTorch(int32_t torch) {
  for (const DTypePair& p : DTypePairs()) {
    if (p.torch == torch) return &p;
  }
  return nullptr;
}

const DTypePair* BySdk(DType sdk) {
  for (const DTypePair& p : DTypePairs()) {
    if (p.sdk == sdk) return &p;
  }
  return nullptr;
}

std::string TorchDTypeName(int32_t torch) {
  const DTypePair* p = ByTorch(torch);
  return p != nullptr ? p->name : "dtype " + std::to_string(torch);
}

// Where a tensor lives, as PyTorch prints it ("cpu", "cuda:0").
struct Place {
  int32_t type = 0, index = -1;
  bool operator==(const Place& o) const { return type == o.type && index == o.index; }
  bool cuda() const { return type == aoti_torch_device_type_cuda(); }
  std::string str() const {
    if (type == aoti_torch_device_type_cpu()) return "cpu";
    const std::string name = cuda() ? "cuda" : "device type " + std::to_string(type);
    return index >= 0 ? name + ":" + std::to_string(index) : name;
  }
};

Place PlaceOf(const Tensor& t) {
  Place p;
  Check(aoti_torch_get_device_type(t.get(), &p.type), "get_device_type");
  Check(aoti_torch_get_device_index(t.get(), &p.index), "get_device_index");
  return p;
}

// One configured call of an op (per distinct attrs): the core's handle and what every run of
// it allocates.
struct Prepared {
  void* call = nullptr;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int32_t> dtypes;  // PyTorch's numbering
  int64_t scratch_bytes = 0;    // a GPU run's scratch buffer; 0: none
  bool share_rows = false;
  ~Prepared() { tf_onthefly_core_release(call); }
};

std::unique_ptr<Prepared> Configure(const std::string& op, const std::string& attrs) {
  auto p = std::make_unique<Prepared>();
  const int32_t code = tf_onthefly_core_configure(op.c_str(), attrs.c_str(), &p->call);
  if (code != 0) Fail(code, tf_onthefly_core_last_error());
  const core::Configured& c = core::ConfiguredCall(p->call);
  int64_t bytes = 0;
  for (size_t i = 0; i < c.output_types.size(); ++i) {
    p->shapes.push_back(c.OutputShape(static_cast<int>(i)));
    const DTypePair* pair = BySdk(c.output_types[i]);
    if (pair == nullptr) {
      Fail(12, op + ": output " + std::to_string(i) + " has dtype " +
                   sdk::DTypeName(c.output_types[i]) +
                   ", which the PyTorch front end has no type for");
    }
    p->dtypes.push_back(pair->torch);
    int64_t n = sdk::DTypeSize(c.output_types[i]);
    for (int64_t d : p->shapes.back()) n *= d;
    bytes += n;
  }
  const int64_t scratch = c.ScratchBytes();
  p->scratch_bytes = scratch > 0 ? sdk::ScratchBufferBytes(scratch) : 0;
  p->share_rows = bytes >= sdk::kHostParallelBytes;  // rows over PyTorch's intra-op threads
  return p;
}

// An op in a slot: the core's op name and its configured calls.
struct Op {
  std::string op;
  std::mutex mu;
  std::unordered_map<std::string, std::unique_ptr<Prepared>> calls;

  const Prepared& Get(const std::string& attrs) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = calls.find(attrs);
    if (it == calls.end()) it = calls.emplace(attrs, Configure(op, attrs)).first;
    return *it->second;
  }
};

// A new tensor of `shape` and `dtype` on `place`, from PyTorch's allocator.
Tensor Empty(const std::vector<int64_t>& shape, int32_t dtype, const Place& place) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i] > 0 ? shape[i] : 1;
  }
  AtenTensorHandle h = nullptr;
  Check(aoti_torch_empty_strided(static_cast<int64_t>(shape.size()), shape.data(), strides.data(),
                                 dtype, place.type, place.index, &h),
        "empty_strided");
  return Tensor(h);
}

int32_t DTypeOf(const Tensor& t) {
  int32_t dtype = 0;
  Check(aoti_torch_get_dtype(t.get(), &dtype), "get_dtype");
  return dtype;
}

bool Contiguous(const Tensor& t) {
  bool contiguous = false;
  Check(aoti_torch_is_contiguous(t.get(), &contiguous), "is_contiguous");
  return contiguous;
}

// PyTorch's current CUDA stream of a device, through libtorch_cuda.so's shim (not part of
// the CPU build, so looked up where PyTorch loaded it rather than linked).
void* CurrentCudaStream(const std::string& op, int32_t index) {
  using Getter = AOTITorchError (*)(int32_t, void**);
  static const Getter getter = [] {
    void* lib = dlopen("libtorch_cuda.so", RTLD_NOW | RTLD_NOLOAD);
    return lib != nullptr
               ? reinterpret_cast<Getter>(dlsym(lib, "aoti_torch_get_current_cuda_stream"))
               : nullptr;
  }();
  if (getter == nullptr)
    Fail(9, op + ": this PyTorch has no CUDA (libtorch_cuda.so is not loaded)");
  void* stream = nullptr;
  Check(getter(index, &stream), "get_current_cuda_stream");
  return stream;
}

void CheckWords(const std::string& op, const char* name, const Tensor& t, const Place& place) {
  const Place p = PlaceOf(t);
  if (DTypeOf(t) != aoti_torch_dtype_int64() || !(p == place) || !Contiguous(t)) {
    Fail(3, op + ": " + name + " must be a contiguous int64 tensor on the step's device (" +
                place.str() + "), got " + TorchDTypeName(DTypeOf(t)) + " on " + p.str());
  }
}

// The kernel of every op: unbox, configure (once per attrs), allocate, run, box.
void Run(Op& op, StableIValue* stack) {
  const Tensor seed = to<Tensor>(stack[0]);
  const Tensor step = to<Tensor>(stack[1]);
  const std::optional<Tensor> offset = to<std::optional<Tensor>>(stack[2]);
  const std::vector<Tensor> inputs = to<std::vector<Tensor>>(stack[3]);
  const int64_t first_sample = to<int64_t>(stack[4]);
  const std::string attrs = to<std::string>(stack[5]);
  const Prepared& p = op.Get(attrs);

  const Place place = PlaceOf(step);
  CheckWords(op.op, "seed", seed, place);
  CheckWords(op.op, "step", step, place);
  std::vector<int64_t> step_dims;
  for (int64_t d = 0; d < step.dim(); ++d) step_dims.push_back(step.size(d));
  const sdk::Status step_shape = sdk::CheckStepShape(step_dims);
  if (!step_shape.ok())
    Fail(static_cast<int32_t>(step_shape.code()), op.op + ": " + step_shape.message());
  // A vector of n steps: the n steps' batches, one after another in each output ([n, ...]).
  const int64_t steps = step.dim() == 1 ? step.size(0) : 1;
  if (step.dim() == 1) {  // before the outputs are allocated
    const int32_t refused = tf_onthefly_core_check_steps(p.call, steps, 0);
    if (refused != 0) Fail(refused, tf_onthefly_core_last_error());
  }
  if (offset.has_value()) CheckWords(op.op, "sample_offset", *offset, place);
  if (inputs.size() > static_cast<size_t>(kMaxInputs)) {
    Fail(3, op.op + ": at most " + std::to_string(kMaxInputs) + " inputs, got " +
                std::to_string(inputs.size()));
  }
  OtfRunArgs args{};
  args.struct_size = sizeof(OtfRunArgs);
  args.seed = static_cast<const int64_t*>(seed.data_ptr());
  args.seed_size = seed.numel();
  args.step = static_cast<const int64_t*>(step.data_ptr());
  args.first_sample = first_sample;
  args.sample_offset =
      offset.has_value() ? static_cast<const int64_t*>(offset->data_ptr()) : nullptr;
  args.num_inputs = static_cast<int32_t>(inputs.size());
  args.num_steps = steps;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    const Place p = PlaceOf(x);
    if (!(p == place) || !Contiguous(x)) {
      Fail(3, op.op + ": input " + std::to_string(i) +
                  " must be a contiguous tensor on the step's device (" + place.str() + "), got " +
                  p.str());
    }
    const DTypePair* dtype = ByTorch(DTypeOf(x));
    if (dtype == nullptr) {
      Fail(3, op.op + ": input " + std::to_string(i) + " has " + TorchDTypeName(DTypeOf(x)) +
                  ", which no generator input takes");
    }
    args.inputs[i] = x.data_ptr();
    args.input_dtypes[i] = static_cast<int32_t>(dtype->sdk);
    args.input_ranks[i] = static_cast<int32_t>(x.dim());
    for (int64_t d = 0; d < x.dim() && d < kMaxInputRank; ++d) args.input_dims[i][d] = x.size(d);
  }
  std::vector<Tensor> outs;
  outs.reserve(p.shapes.size());
  for (size_t i = 0; i < p.shapes.size(); ++i) {
    std::vector<int64_t> shape = p.shapes[i];
    if (step.dim() == 1) shape.insert(shape.begin(), steps);
    outs.push_back(Empty(shape, p.dtypes[i], place));
    args.outputs[i] = outs.back().data_ptr();
  }
  int32_t code = 0;  // no step (an empty step vector): no batch, nothing to run
  if (steps > 0 && place.cuda()) {
    const torch::stable::accelerator::DeviceGuard guard(place.index);
    void* stream = CurrentCudaStream(op.op, place.index);
    std::optional<Tensor> scratch;
    const int64_t scratch_bytes = p.scratch_bytes * steps;
    if (scratch_bytes > 0) scratch = Empty({scratch_bytes}, aoti_torch_dtype_uint8(), place);
    code = tf_onthefly_core_run_gpu(p.call, &args, stream, scratch ? scratch->data_ptr() : nullptr,
                                    scratch_bytes);
  } else if (steps > 0) {
    uint32_t threads = 1;
    if (p.share_rows) Check(torch_get_num_threads(&threads), "get_num_threads");
    code = tf_onthefly_core_run_cpu(p.call, &args, static_cast<int32_t>(threads > 0 ? threads : 1));
  }
  if (code != 0) Fail(code, tf_onthefly_core_last_error());
  for (size_t i = 0; i < outs.size(); ++i) stack[i] = from(std::move(outs[i]));
}

// The slots: Kernel<K> is op K's boxed kernel.
constexpr int kSlots = 256;
std::array<std::atomic<Op*>, kSlots> slots{};
std::atomic<int> slots_used{0};

template <int K>
void Kernel(StableIValue* stack, uint64_t /*num_args*/, uint64_t /*num_outputs*/) {
  Run(*slots[K].load(std::memory_order_acquire), stack);
}

using BoxedKernel = void (*)(StableIValue*, uint64_t, uint64_t);

template <int... K>
constexpr std::array<BoxedKernel, kSlots> MakeKernels(std::integer_sequence<int, K...>) {
  return {&Kernel<K>...};
}

constexpr std::array<BoxedKernel, kSlots> kKernels =
    MakeKernels(std::make_integer_sequence<int, kSlots>());

}  // namespace
}  // namespace torch_ops
}  // namespace tf_onthefly

extern "C" {

// Registers this library's kernel as op `ns`::`name`'s CPU and CUDA implementation, running
// the core's op `op`. The op's schema is defined already (by Python):
//   (Tensor seed, Tensor step, Tensor? sample_offset, Tensor[] inputs, int first_sample,
//    str attrs) -> (Tensor, ...)
// Returns 0; 1 where every slot is taken (the front end registers its Python implementation
// instead); 2 where PyTorch refused the registration.
__attribute__((visibility("default"))) int32_t tf_onthefly_torch_register(const char* ns,
                                                                          const char* name,
                                                                          const char* op) {
  using namespace tf_onthefly::torch_ops;  // NOLINT(build/namespaces)
  const int k = slots_used.fetch_add(1);
  if (k >= kSlots) return 1;
  slots[k].store(new Op{op}, std::memory_order_release);
  for (const char* key : {"CPU", "CUDA"}) {
    TorchLibraryHandle lib = nullptr;
    if (aoti_torch_library_init_impl(ns, key, __FILE__, __LINE__, &lib) != AOTI_TORCH_SUCCESS ||
        torch_library_impl(lib, name, kKernels[k], TORCH_ABI_VERSION) != AOTI_TORCH_SUCCESS) {
      return 2;
    }
  }  // each library object is kept: deleting it would take the kernel away again
  return 0;
}

}  // extern "C"

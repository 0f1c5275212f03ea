// A user's PTX kernel launched on a given stream (ptx_kernel.h).
#include "tf_ops/cuda_kernel/ptx_kernel.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tf_onthefly {
namespace cuda_kernel {
namespace cd = cuda_driver;

namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || c == '%' || c == '.';
}

// PTX as tokens: words (directives, identifiers, numbers: runs of IsWordChar), and single
// other characters; whitespace, comments and string literals separate tokens and are dropped.
std::vector<std::string_view> Tokens(std::string_view s) {
  std::vector<std::string_view> tokens;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (IsSpace(c)) {
      ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const size_t end = s.find("*/", i + 2);
      i = end == std::string_view::npos ? s.size() : end + 2;
    } else if (c == '"') {
      for (++i; i < s.size() && s[i] != '"'; ++i)
        if (s[i] == '\\') ++i;
      ++i;
    } else if (IsWordChar(c)) {
      const size_t b = i;
      while (i < s.size() && IsWordChar(s[i])) ++i;
      tokens.push_back(s.substr(b, i - b));
    } else {
      tokens.push_back(s.substr(i++, 1));
    }
  }
  return tokens;
}

// Modules by (context, PTX), for the process.
struct ModuleCache {
  std::mutex mu;
  std::map<std::pair<cd::CUcontext, std::string>, cd::CUmodule> modules;
};
ModuleCache& Modules() {
  static auto* cache = new ModuleCache;
  return *cache;
}

absl::Status LoadModule(const cd::Driver& d, cd::CUcontext ctx, cd::CUstream stream,
                        const KernelSpec& spec, cd::CUmodule* module) {
  ModuleCache& cache = Modules();
  std::lock_guard<std::mutex> lock(cache.mu);
  auto it = cache.modules.find({ctx, spec.ptx});
  if (it != cache.modules.end()) {
    *module = it->second;
    return absl::OkStatus();
  }
  std::vector<char> error_log(8192, 0), info_log(2048, 0);
  int options[] = {cd::kJitErrorLogBuffer, cd::kJitErrorLogBufferSize, cd::kJitInfoLogBuffer,
                   cd::kJitInfoLogBufferSize};
  void* values[] = {error_log.data(), reinterpret_cast<void*>(error_log.size()), info_log.data(),
                    reinterpret_cast<void*>(info_log.size())};
  cd::CUresult r;
  {
    // XLA may call first while recording a command buffer (stream capture), where loading a
    // module is refused in the default capture mode.
    cd::ScopedRelaxedCapture relaxed(d, stream);
    r = d.ModuleLoadDataEx(module, spec.ptx.c_str(), 4, options, values);
  }
  if (r != cd::kSuccess) {
    return absl::InvalidArgumentError(
        absl::StrCat(spec.who, ": the PTX did not load (", cd::ErrorText(d, r),
                     "); the driver's compiler said: ",
                     error_log[0] ? std::string(error_log.data()) : std::string("nothing")));
  }
  cache.modules.emplace(std::make_pair(ctx, spec.ptx), *module);
  return absl::OkStatus();
}

// The kernel's parameter list against what the op passes (where the driver can tell).
absl::Status CheckParams(const cd::Driver& d, cd::CUfunction fn, const KernelSpec& spec) {
  if (d.FuncGetParamInfo == nullptr) return absl::OkStatus();
  const std::vector<size_t> sizes = spec.ParamSizes();
  std::vector<size_t> found;
  for (size_t i = 0;; ++i) {
    size_t offset = 0, size = 0;
    const cd::CUresult r = d.FuncGetParamInfo(fn, i, &offset, &size);
    if (r == cd::kErrorInvalidValue) break;          // past the last parameter
    if (r != cd::kSuccess) return absl::OkStatus();  // the driver cannot tell: not checked
    found.push_back(size);
    if (i > 256) break;
  }
  if (found == sizes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      spec.who, ": the kernel takes ", found.size(), " parameters of sizes [",
      absl::StrJoin(found, ", "), "] bytes, but the op passes ", sizes.size(), " of sizes [",
      absl::StrJoin(sizes, ", "),
      "]: seed pointer, seed_size, step pointer, first_sample, num_samples, batch_size, ",
      spec.int_scalars.size(), " int64 scalars, ", spec.float_scalars.size(), " float32 scalars, ",
      spec.num_inputs, " input pointers, ", spec.num_outputs,
      " output pointers (docs/interop.md)"));
}

}  // namespace

std::vector<std::string> PtxEntries(std::string_view ptx) {
  const std::vector<std::string_view> t = Tokens(ptx);
  std::vector<std::string> names;
  for (size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i] != ".entry") continue;
    const char c = t[i + 1][0];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '%')
      names.emplace_back(t[i + 1]);
  }
  return names;
}

bool LooksLikePtx(std::string_view ptx) {
  bool version = false, target = false;
  for (std::string_view token : Tokens(ptx)) {
    version = version || token == ".version";
    target = target || token == ".target";
  }
  return version && target;
}

std::vector<size_t> KernelSpec::ParamSizes() const {
  std::vector<size_t> sizes = {8, 8, 8, 8, 8, 8};
  sizes.insert(sizes.end(), int_scalars.size(), 8);
  sizes.insert(sizes.end(), float_scalars.size(), 4);
  sizes.insert(sizes.end(), num_inputs + num_outputs, 8);
  return sizes;
}

void ComputeGrid(int rule, const std::vector<int64_t>& fixed, int64_t count,
                 int64_t items_per_thread, int64_t block, uint64_t grid[3]) {
  grid[0] = grid[1] = grid[2] = 0;
  if (rule == 2) {
    for (size_t i = 0; i < 3; ++i) grid[i] = i < fixed.size() ? fixed[i] : 1;
    return;
  }
  if (count <= 0) return;  // nothing to write: no launch
  const uint64_t threads = (count + items_per_thread - 1) / items_per_thread;
  grid[0] = (threads + block - 1) / block;
  grid[1] = grid[2] = 1;
}

absl::Status LaunchCache::Get(const cd::Driver& d, cd::CUcontext ctx, cd::CUstream stream,
                              const KernelSpec& spec, Launchable* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = launchables_.find(ctx);
  if (it != launchables_.end()) {
    *out = it->second;
    return absl::OkStatus();
  }
  Launchable l;
  cd::CUmodule module = nullptr;
  absl::Status status = LoadModule(d, ctx, stream, spec, &module);
  if (!status.ok()) return status;
  cd::CUresult r = d.ModuleGetFunction(&l.fn, module, spec.entry.c_str());
  if (r != cd::kSuccess) {
    return absl::InvalidArgumentError(absl::StrCat(spec.who, ": the module has no kernel '",
                                                   spec.entry, "' (", cd::ErrorText(d, r), ")"));
  }
  if (spec.shared_memory_bytes > 48 * 1024) {
    r = d.FuncSetAttribute(l.fn, cd::kFuncMaxDynamicSharedBytes,
                           static_cast<int>(spec.shared_memory_bytes));
    if (r != cd::kSuccess) {
      return absl::InvalidArgumentError(
          absl::StrCat(spec.who, ": ", spec.shared_memory_bytes,
                       " bytes of dynamic shared memory are more than the device allows (",
                       cd::ErrorText(d, r), ")"));
    }
  }
  cd::CUdevice dev = 0;
  if (d.CtxGetDevice(&dev) == cd::kSuccess) {
    l.device = dev;
    d.DeviceGetAttribute(&l.max_grid[0], cd::kDevAttrMaxGridDimX, dev);
    d.DeviceGetAttribute(&l.max_grid[1], cd::kDevAttrMaxGridDimY, dev);
    d.DeviceGetAttribute(&l.max_grid[2], cd::kDevAttrMaxGridDimZ, dev);
  }
  d.FuncGetAttribute(&l.max_threads, cd::kFuncMaxThreadsPerBlock, l.fn);
  status = CheckParams(d, l.fn, spec);
  if (!status.ok()) return status;
  launchables_[ctx] = l;
  *out = l;
  return absl::OkStatus();
}

absl::Status Launch(cd::CUstream stream, const KernelSpec& spec, LaunchCache* cache,
                    const CallBuffers& b) {
  const uint64_t gx = spec.grid[0], gy = spec.grid[1], gz = spec.grid[2];
  if (b.num_samples == 0 || gx == 0) return absl::OkStatus();  // nothing to write: no launch
  const cd::Driver& d = cd::Get();
  if (!d.error.empty())
    return absl::FailedPreconditionError(absl::StrCat(spec.who, ": cannot launch: ", d.error));
  cd::CUcontext ctx = nullptr;
  cd::CUresult r = d.StreamGetCtx(stream, &ctx);
  if (r != cd::kSuccess) {
    return absl::InternalError(absl::StrCat(spec.who, ": cannot find the CUDA context of its ",
                                            "stream: ", cd::ErrorText(d, r)));
  }
  cd::ScopedContext scope(d, ctx);
  if (!scope.ok())
    return absl::InternalError(
        absl::StrCat(spec.who, ": cannot make its stream's context current"));
  LaunchCache::Launchable l;
  absl::Status status = cache->Get(d, ctx, stream, spec, &l);
  if (!status.ok()) return status;
  if (gx > static_cast<uint64_t>(l.max_grid[0]) || gy > static_cast<uint64_t>(l.max_grid[1]) ||
      gz > static_cast<uint64_t>(l.max_grid[2])) {
    return absl::InvalidArgumentError(absl::StrCat(
        spec.who, ": grid of [", gx, ", ", gy, ", ", gz, "] blocks exceeds the device's [",
        l.max_grid[0], ", ", l.max_grid[1], ", ", l.max_grid[2],
        "]; raise items_per_thread or block, or use a grid-stride loop with a fixed grid"));
  }
  if (spec.block > l.max_threads) {
    return absl::InvalidArgumentError(absl::StrCat(
        spec.who, ": block of ", spec.block, " threads, but this kernel can run at most ",
        l.max_threads, " per block on GPU ", l.device, " (its registers or __launch_bounds__)"));
  }
  // The parameters, in the documented order.
  const void* seed = b.seed;
  const void* step = b.step;
  int64_t seed_size = b.seed_size, first = b.first_sample, rows = b.num_samples,
          batch = b.batch_size;
  std::vector<void*> params = {&seed, &seed_size, &step, &first, &rows, &batch};
  std::vector<int64_t> ints(spec.int_scalars);
  std::vector<float> floats(spec.float_scalars);
  std::vector<const void*> ins(b.inputs);
  std::vector<void*> outs(b.outputs);
  for (auto& v : ints) params.push_back(&v);
  for (auto& v : floats) params.push_back(&v);
  for (auto& p : ins) params.push_back(&p);
  for (auto& p : outs) params.push_back(&p);
  r = d.LaunchKernel(l.fn, static_cast<unsigned>(gx), static_cast<unsigned>(gy),
                     static_cast<unsigned>(gz), static_cast<unsigned>(spec.block), 1, 1,
                     static_cast<unsigned>(spec.shared_memory_bytes), stream, params.data(),
                     nullptr);
  if (r != cd::kSuccess) {
    return absl::InternalError(
        absl::StrCat(spec.who, ": the launch of [", gx, ", ", gy, ", ", gz, "] blocks of ",
                     spec.block, " threads with ", spec.shared_memory_bytes,
                     " bytes of dynamic shared memory failed: ", cd::ErrorText(d, r)));
  }
  return absl::OkStatus();
}

}  // namespace cuda_kernel
}  // namespace tf_onthefly

// For Python (tf_onthefly.ptx_entries, through ctypes): the entries of `ptx` (`size` bytes),
// each followed by '\n', into `out` (`capacity` bytes). Returns the bytes the list takes,
// written only where it fits.
extern "C" __attribute__((visibility("default"))) int64_t tf_onthefly_ptx_entries(
    const char* ptx, int64_t size, char* out, int64_t capacity) {
  std::string list;
  for (const std::string& e :
       tf_onthefly::cuda_kernel::PtxEntries(std::string_view(ptx, static_cast<size_t>(size))))
    list += e + "\n";
  if (static_cast<int64_t>(list.size()) <= capacity) std::memcpy(out, list.data(), list.size());
  return static_cast<int64_t>(list.size());
}

// For Python: whether `ptx` (`size` bytes) has the .version and .target directives.
extern "C" __attribute__((visibility("default"))) int tf_onthefly_ptx_is_ptx(const char* ptx,
                                                                             int64_t size) {
  return tf_onthefly::cuda_kernel::LooksLikePtx(std::string_view(ptx, static_cast<size_t>(size)));
}

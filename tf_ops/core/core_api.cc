// The core's C API for foreign-function front ends (core_api.h).
#include "tf_ops/core/core_api.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tf_ops/core/json.h"
#include "tf_ops/core/registry.h"
#include "tf_ops/sdk/generator_config.h"

// The version of the XLA FFI headers the core's own handlers are built with
// (generator_def.h builds them where the typed API, ffi.h, is on the include path).
#if __has_include("xla/ffi/api/ffi.h")
#include "xla/ffi/api/c_api.h"
#define OTF_CORE_XLA_FFI_API_VERSION (XLA_FFI_API_MAJOR * 1000 + XLA_FFI_API_MINOR)
#else
#define OTF_CORE_XLA_FFI_API_VERSION (-1)
#endif

// Threads of run_cpu, bound to the symbol versions every glibc since 2.2.5 has (glibc 2.34
// moved them into libc with new ones; the wheel's manylinux_2_24 tag, docs/packaging.md).
__asm__(".symver pthread_create,pthread_create@GLIBC_2.2.5");
__asm__(".symver pthread_join,pthread_join@GLIBC_2.2.5");

namespace tf_onthefly {
namespace core {
namespace {

using sdk::AttrValue;
using sdk::DType;
using sdk::Status;
using sdk::StrCat;

thread_local std::string last_error;

int32_t Fail(const Status& s) {
  last_error = s.message();
  return static_cast<int32_t>(s.code());
}

char* Copy(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out != nullptr) std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

std::string Hex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

// ---- Specs ------------------------------------------------------------------------------

void WriteValue(json::Writer* w, const AttrValue& v) {
  switch (v.kind) {
    case AttrValue::Kind::kInt:
      w->Int(v.i);
      break;
    case AttrValue::Kind::kFloat:
      w->Raw(std::isfinite(v.f) ? json::Float(v.f)
             : std::isnan(v.f)  ? "NaN"
             : v.f > 0          ? "Infinity"
                                : "-Infinity");
      break;
    case AttrValue::Kind::kBool:
      w->Bool(v.b);
      break;
    case AttrValue::Kind::kString:
      w->String(v.s);
      break;
    case AttrValue::Kind::kType:
      w->String(sdk::DTypeNumpyName(v.type));
      break;
    case AttrValue::Kind::kIntList:
      w->Open('[');
      for (int64_t i : v.list) w->Int(i);
      w->Close(']');
      break;
  }
}

void WriteArgs(json::Writer* w, const char* key, const std::vector<ArgSpec>& args) {
  w->Key(key).Open('[');
  for (const ArgSpec& a : args) {
    w->Open('{').Key("name").String(a.name).Key("spec").String(a.spec);
    if (a.type_attr.empty()) {
      w->Key("dtype").String(sdk::DTypeNumpyName(a.type));
    } else {
      w->Key("type_attr").String(a.type_attr);
    }
    w->Close('}');
  }
  w->Close(']');
}

void WriteStrings(json::Writer* w, const char* key, const std::vector<std::string>& items) {
  w->Key(key).Open('[');
  for (const std::string& s : items) w->String(s);
  w->Close(']');
}

void WriteGenerator(json::Writer* w, const Generator& g) {
  w->Open('{').Key("name").String(g.name).Key("library").String(g.library);
  w->Key("doc").String(g.doc);
  WriteArgs(w, "inputs", g.inputs);
  WriteArgs(w, "outputs", g.outputs);
  w->Key("attrs").Open('[');
  for (const AttrSpec& a : g.attrs) {
    w->Open('{').Key("name").String(a.name).Key("spec").String(a.spec);
    w->Key("type").String(AttrValue::KindName(a.kind));
    if (a.has_default) WriteValue(&w->Key("default"), a.default_value);
    if (!a.allowed_strings.empty()) WriteStrings(w, "allowed", a.allowed_strings);
    if (!a.allowed_types.empty()) {
      w->Key("allowed").Open('[');
      for (DType t : a.allowed_types) w->String(sdk::DTypeNumpyName(t));
      w->Close(']');
    }
    w->Close('}');
  }
  w->Close(']');
  WriteStrings(w, "input_specs", g.input_specs);
  WriteStrings(w, "output_specs", g.output_specs);
  WriteStrings(w, "attr_specs", g.attr_specs);
  w->Key("has_cpu").Bool(g.has_cpu());
  w->Key("variants").Open('[');
  for (const Variant& v : g.variants) {
    w->Open('{').Key("index").Int(v.index).Key("types").Open('{');
    for (const auto& [attr, type] : v.types) w->Key(attr).String(sdk::DTypeNumpyName(type));
    w->Close('}').Key("xla_target").String(v.xla_target);
    w->Key("has_cpu").Bool(v.has_cpu()).Key("has_gpu").Bool(v.def.launch_gpu != nullptr);
    w->Key("scratch").Bool(v.def.scratch_bytes != nullptr);
    w->Key("command_buffer_compatible").Bool(v.def.command_buffer_compatible != 0);
    w->Key("num_streams").Int(v.def.num_streams);
    w->Key("xla_ffi_api_version").Int(v.def.xla_ffi_api_version);
    w->Close('}');
  }
  w->Close(']').Close('}');
}

// ---- Attributes from JSON -----------------------------------------------------------------

Status ToValue(const AttrSpec& a, const json::Value& j, AttrValue* v) {
  const auto wrong = [&](const char* want) {
    return sdk::InvalidArgumentError(
        StrCat("attribute '", a.name, "' must be ", want, ", got ", j.Kind()));
  };
  v->kind = a.kind;
  switch (a.kind) {
    case AttrValue::Kind::kInt: {
      if (!j.IsInteger()) return wrong("an integer");
      errno = 0;
      v->i = std::strtoll(j.text.c_str(), nullptr, 10);
      OTF_REQUIRE(errno == 0, "attribute '", a.name, "' must fit in int64, got ", j.text);
      return sdk::OkStatus();
    }
    case AttrValue::Kind::kFloat:
      if (j.type != json::Value::Type::kNumber) return wrong("a number");
      // As TensorFlow makes a float attribute of a Python float: the double, rounded.
      v->f = static_cast<float>(std::strtod(j.text.c_str(), nullptr));
      return sdk::OkStatus();
    case AttrValue::Kind::kBool:
      if (j.type != json::Value::Type::kBool) return wrong("a bool");
      v->b = j.b;
      return sdk::OkStatus();
    case AttrValue::Kind::kString:
      if (j.type != json::Value::Type::kString) return wrong("a string");
      v->s = j.text;
      return sdk::OkStatus();
    case AttrValue::Kind::kType:
      if (j.IsInteger()) {
        v->type = static_cast<DType>(std::atoi(j.text.c_str()));
        OTF_REQUIRE(sdk::DTypeSize(v->type) > 0, "attribute '", a.name, "': no dtype numbered ",
                    j.text);
        return sdk::OkStatus();
      }
      if (j.type != json::Value::Type::kString) return wrong("a dtype name");
      OTF_REQUIRE(sdk::DTypeFromName(j.text, &v->type), "attribute '", a.name,
                  "': no dtype named '", j.text, "'");
      return sdk::OkStatus();
    case AttrValue::Kind::kIntList:
      if (j.type != json::Value::Type::kArray) return wrong("a list of integers");
      for (const json::Value& item : j.items) {
        if (!item.IsInteger()) return wrong("a list of integers");
        v->list.push_back(std::strtoll(item.text.c_str(), nullptr, 10));
      }
      return sdk::OkStatus();
  }
  return sdk::InternalError("unknown attribute kind");
}

// The value is one the spec allows (TensorFlow's OpDef check, with its message).
Status CheckAllowed(const AttrSpec& a, const AttrValue& v) {
  if (!a.allowed_strings.empty() && std::find(a.allowed_strings.begin(), a.allowed_strings.end(),
                                              v.s) == a.allowed_strings.end()) {
    std::string list;
    for (const std::string& s : a.allowed_strings)
      list += (list.empty() ? "\"" : ", \"") + s + "\"";
    return sdk::InvalidArgumentError(StrCat("Value for attr '", a.name, "' of \"", v.s,
                                            "\" is not in the list of allowed values: ", list));
  }
  if (!a.allowed_types.empty() &&
      std::find(a.allowed_types.begin(), a.allowed_types.end(), v.type) == a.allowed_types.end()) {
    std::string list;
    for (DType t : a.allowed_types) list += (list.empty() ? "" : ", ") + sdk::DTypeName(t);
    return sdk::InvalidArgumentError(StrCat("Value for attr '", a.name, "' of ",
                                            sdk::DTypeName(v.type),
                                            " is not in the list of allowed values: ", list));
  }
  return sdk::OkStatus();
}

Status AttrsFromJson(const Generator& g, const char* text, sdk::Attrs* attrs) {
  json::Value j;
  OTF_RETURN_IF_ERROR(json::Reader(text != nullptr ? text : "{}").Parse(&j));
  OTF_REQUIRE(j.type == json::Value::Type::kObject, "the attributes must be a JSON object, got ",
              j.Kind());
  for (const auto& [name, value] : j.members) {
    OTF_REQUIRE(g.FindAttr(name) != nullptr, "it has no attribute '", name, "'");
  }
  for (const AttrSpec& a : g.attrs) {
    const json::Value* given = nullptr;
    for (const auto& [name, value] : j.members)
      if (name == a.name) given = &value;
    AttrValue v;
    if (given != nullptr) {
      OTF_RETURN_IF_ERROR(ToValue(a, *given, &v));
    } else {
      OTF_REQUIRE(a.has_default, "attribute '", a.name, "' (", AttrValue::KindName(a.kind),
                  ") is required: it has no default");
      v = a.default_value;
    }
    OTF_RETURN_IF_ERROR(CheckAllowed(a, v));
    attrs->Set(a.name, std::move(v));
  }
  return sdk::OkStatus();
}

// ---- Calls ------------------------------------------------------------------------------

struct Call {
  Configured c;
};

Status WithOp(const Generator& g, const Status& s) {
  if (s.ok()) return s;
  return Status(s.code(), g.name + ": " + s.message());
}

std::string CallJson(const Configured& c) {
  json::Writer w;
  w.Open('{').Key("op").String(c.generator->name).Key("variant").Int(c.variant->index);
  w.Key("xla_target").String(c.variant->xla_target);
  w.Key("batch_size").Int(c.batch.batch_size).Key("num_samples").Int(c.batch.rows());
  w.Key("outputs").Open('[');
  for (size_t i = 0; i < c.output_types.size(); ++i) {
    w.Open('{').Key("name").String(c.shapes.names[i]);
    w.Key("dtype").String(sdk::DTypeNumpyName(c.output_types[i])).Key("shape").Open('[');
    for (int64_t d : c.OutputShape(static_cast<int>(i))) w.Int(d);
    w.Close(']').Close('}');
  }
  w.Close(']').Key("inputs").Open('[');
  for (size_t i = 0; i < c.shapes.inputs.size(); ++i) {
    const sdk::InputSpec& in = c.shapes.inputs[i];
    w.Open('{').Key("name").String(in.name).Key("dtype").String(
        sdk::DTypeNumpyName(c.input_types[i]));
    w.Key("dims").Open('[');
    for (int64_t d : in.dims) w.Int(d);
    w.Close(']').Key("rule").Open('{').Key("finite").Bool(in.values.flags &
                                                          sdk::ValueRule::kFinite);
    if (in.values.flags & sdk::ValueRule::kLow) w.Key("low").Raw(json::Float(in.values.low));
    if (in.values.flags & sdk::ValueRule::kHigh) w.Key("high").Raw(json::Float(in.values.high));
    w.Close('}').Close('}');
  }
  w.Close(']');
  w.Key("params").String(Hex(c.params)).Key("input_rules").String(Hex(c.InputRules()));
  w.Key("input_names").String(c.InputNames());
  w.Key("scratch_bytes").Int(c.ScratchBytes());
  w.Key("scratch_buffer_bytes").Int(sdk::ScratchBufferBytes(c.ScratchBytes()));
  w.Key("has_cpu").Bool(c.variant->has_cpu()).Key("has_gpu").Bool(c.variant->def.launch_gpu);
  w.Key("command_buffer_compatible").Bool(c.variant->def.command_buffer_compatible != 0);
  w.Close('}');
  return w.str();
}

// The run's seed, first sample and inputs against the call; values only where they are in
// host memory.
Status CheckRun(const Configured& c, const OtfRunArgs& a, bool host, sdk::Inputs* in) {
  OTF_REQUIRE(a.struct_size >= sizeof(OtfRunArgs), "OtfRunArgs of ", a.struct_size,
              " bytes, this core's has ", sizeof(OtfRunArgs));
  if (a.seed_size != 1) OTF_RETURN_IF_ERROR(sdk::CheckSeedShape({a.seed_size}));
  OTF_REQUIRE(a.num_inputs == static_cast<int32_t>(c.shapes.inputs.size()), "it takes ",
              c.shapes.inputs.size(), " tensor inputs, got ", a.num_inputs);
  in->count = a.num_inputs;
  for (int i = 0; i < a.num_inputs; ++i) {
    const sdk::InputSpec& spec = c.shapes.inputs[i];
    const DType type = static_cast<DType>(a.input_dtypes[i]);
    OTF_REQUIRE(type == c.input_types[i], spec.name, " must be a ",
                sdk::DTypeNumpyName(c.input_types[i]), " tensor, got ", sdk::DTypeNumpyName(type));
    OTF_REQUIRE(a.input_ranks[i] >= 0 && a.input_ranks[i] <= sdk::kMaxInputRank, spec.name,
                " has rank ", a.input_ranks[i], "; inputs have at most ", sdk::kMaxInputRank);
    const std::vector<int64_t> dims(a.input_dims[i], a.input_dims[i] + a.input_ranks[i]);
    OTF_RETURN_IF_ERROR(sdk::CheckInputShape(spec, true, dims, c.batch.rows()));
    in->data[i] = a.inputs[i];
    in->rank[i] = a.input_ranks[i];
    for (int d = 0; d < a.input_ranks[i]; ++d) in->dims[i][d] = dims[d];
    if (host) {
      OTF_RETURN_IF_ERROR(sdk::CheckInputValues(spec.name, spec.values, sdk::KindOf(type),
                                                a.inputs[i], in->size(i)));
    }
  }
  return sdk::OkStatus();
}

sdk::CallGeometry Geometry(const Configured& c, const OtfRunArgs& a, int64_t first_sample) {
  sdk::CallGeometry g{};
  g.batch_size = c.batch.batch_size;
  g.num_samples = c.batch.rows();
  g.first_sample = first_sample;
  for (size_t i = 0; i < c.output_types.size(); ++i) {
    g.base[i] = a.outputs[i];
    g.sample_bytes[i] = c.sample_bytes[i];
  }
  return g;
}

// The rows of one CPU run, in chunks taken in turn by the calling thread and the others;
// a run of several steps has chunks_per_step chunks a step, each step its own keys.
struct CpuRows {
  const Configured* c;
  const sdk::CallGeometry* g;  // step 0's
  const sdk::Inputs* in;
  std::vector<PhiloxKey> keys;  // num_streams a step
  int64_t chunk_rows = 1, chunks_per_step = 1, chunks = 1;
  std::atomic<int64_t> next{0};

  void Work() {
    const int streams = c->variant->def.num_streams;
    for (int64_t k = next.fetch_add(1); k < chunks; k = next.fetch_add(1)) {
      const int64_t step = k / chunks_per_step;
      const int64_t begin = (k - step * chunks_per_step) * chunk_rows;
      const sdk::CallGeometry s = sdk::StepGeometry(*g, step);
      c->variant->def.fill_rows_cpu(c->params.data(), &s, in, keys.data() + step * streams, begin,
                                    std::min(g->num_samples, begin + chunk_rows));
    }
  }
  static void* Run(void* self) {
    static_cast<CpuRows*>(self)->Work();
    return nullptr;
  }
};

// A status whose message starts with the op's name, without it: the C API's callers add it
// (WithOp) to every failure of a run.
Status WithoutOp(const Configured& c, const Status& s) {
  return s.ok() ? s : Status(s.code(), s.message().substr(c.generator->name.size() + 2));
}

// The steps of a run (num_steps; 0 reads as 1), within the per-output cap.
Status RunSteps(const Configured& c, const OtfRunArgs& a, int64_t* steps) {
  *steps = a.num_steps == 0 ? 1 : a.num_steps;
  OTF_REQUIRE(*steps >= 1, "num_steps must be >= 0, got ", a.num_steps);
  return WithoutOp(c, c.CheckSteps(*steps));
}

Status RunCpu(const Configured& c, const OtfRunArgs& a, int32_t threads) {
  OTF_REQUIRE(threads >= 1, "threads must be >= 1, got ", threads);
  if (!c.variant->has_cpu()) return sdk::GpuOnlyError(c.generator->name);
  sdk::Inputs in;
  OTF_RETURN_IF_ERROR(CheckRun(c, a, /*host=*/true, &in));
  int64_t steps = 1;
  OTF_RETURN_IF_ERROR(RunSteps(c, a, &steps));
  const sdk::SeedAndStep seed_step{a.seed, a.seed_size, a.step, a.sample_offset};
  const int64_t first = sdk::FirstGlobalSample(seed_step, a.first_sample);
  OTF_RETURN_IF_ERROR(c.batch.CheckFirstSample(first));
  const sdk::CallGeometry g = Geometry(c, a, first);
  if (g.num_samples == 0) return sdk::OkStatus();
  CpuRows rows{&c, &g, &in};
  const int streams = c.variant->def.num_streams;
  rows.keys.resize(steps * streams);
  for (int64_t k = 0; k < steps; ++k) {
    for (int s = 0; s < streams; ++s)
      rows.keys[k * streams + s] = sdk::StreamKey(sdk::StepSeedAndStep(seed_step, k), s);
  }
  rows.chunks_per_step = std::min<int64_t>(g.num_samples, 4 * int64_t{threads});
  rows.chunk_rows = (g.num_samples + rows.chunks_per_step - 1) / rows.chunks_per_step;
  rows.chunks_per_step = (g.num_samples + rows.chunk_rows - 1) / rows.chunk_rows;
  rows.chunks = steps * rows.chunks_per_step;
  std::vector<pthread_t> started;
  for (int64_t t = 1; t < std::min<int64_t>(threads, rows.chunks); ++t) {
    pthread_t thread;
    if (pthread_create(&thread, nullptr, &CpuRows::Run, &rows) == 0) started.push_back(thread);
  }
  rows.Work();  // the caller alone finishes every chunk if no thread could start
  for (pthread_t thread : started) pthread_join(thread, nullptr);
  return sdk::OkStatus();
}

Status RunGpu(const Configured& c, const OtfRunArgs& a, void* stream, void* scratch,
              int64_t scratch_size) {
  OTF_REQUIRE(c.variant->def.launch_gpu != nullptr, "its library was built without GPU code");
  sdk::Inputs in;
  OTF_RETURN_IF_ERROR(CheckRun(c, a, /*host=*/false, &in));
  int64_t steps = 1;
  OTF_RETURN_IF_ERROR(RunSteps(c, a, &steps));
  OTF_RETURN_IF_ERROR(c.batch.CheckFirstSample(a.first_sample));
  const sdk::CallGeometry g = Geometry(c, a, a.first_sample);
  if (g.num_samples == 0) return sdk::OkStatus();
  const sdk::SeedAndStep seed_step{a.seed, a.seed_size, a.step, a.sample_offset};
  sdk::BufferScratch buffer{static_cast<char*>(scratch), scratch_size};
  const sdk::ScratchAllocator allocator(&sdk::BufferScratch::Allocate, &buffer);
  const sdk::GpuLaunchArgs launch{
      c.params.data(), &g, &seed_step, &in, static_cast<cudaStream_t>(stream), &allocator};
  const cudaError_t err =
      steps == 1 ? c.variant->def.launch_gpu(&launch) : LaunchSteps(*c.variant, launch, steps);
  if (buffer.refused_bytes >= 0) return sdk::ScratchBufferRefusal(c.generator->name, buffer);
  return WithoutOp(c, sdk::GpuLaunchStatus(err, c.generator->name));
}

}  // namespace

const Configured& ConfiguredCall(const void* call) { return static_cast<const Call*>(call)->c; }

}  // namespace core
}  // namespace tf_onthefly

extern "C" {

using tf_onthefly::core::Call;
using tf_onthefly::core::Fail;
using tf_onthefly::core::WithOp;

int32_t tf_onthefly_core_abi_version(void) { return tf_onthefly::sdk::kSdkAbiVersion; }
int32_t tf_onthefly_core_contract_version(void) { return tf_onthefly::kContractVersion; }
int32_t tf_onthefly_core_xla_ffi_api_version(void) { return OTF_CORE_XLA_FFI_API_VERSION; }

const char* tf_onthefly_core_last_error(void) { return tf_onthefly::core::last_error.c_str(); }

void tf_onthefly_core_free(void* p) { std::free(p); }

char* tf_onthefly_core_specs_json(void) {
  namespace core = tf_onthefly::core;
  core::json::Writer w;
  w.Open('{').Key("abi_version").Int(tf_onthefly_core_abi_version());
  w.Key("contract_version").Int(tf_onthefly_core_contract_version());
  w.Key("xla_ffi_api_version").Int(tf_onthefly_core_xla_ffi_api_version());
  w.Key("generators").Open('[');
  for (const core::Generator* g : core::Generators()) core::WriteGenerator(&w, *g);
  w.Close(']').Close('}');
  return core::Copy(w.str());
}

char* tf_onthefly_core_take_registration_errors(void) {
  std::string all;
  for (const std::string& e : tf_onthefly::core::TakeRegistrationErrors())
    all += (all.empty() ? "" : "\n") + e;
  return all.empty() ? nullptr : tf_onthefly::core::Copy(all);
}

int32_t tf_onthefly_core_configure(const char* op, const char* attrs_json, void** call) {
  namespace core = tf_onthefly::core;
  namespace sdk = tf_onthefly::sdk;
  *call = nullptr;
  const core::Generator* g = core::FindGenerator(op != nullptr ? op : "");
  if (g == nullptr) {
    return Fail(sdk::Status(sdk::Code::kNotFound, sdk::StrCat("no generator op named '",
                                                              op ? op : "", "' is registered")));
  }
  sdk::Attrs attrs;
  sdk::Status s = core::AttrsFromJson(*g, attrs_json, &attrs);
  const core::Variant* v = s.ok() ? core::SelectVariant(*g, attrs) : nullptr;
  if (s.ok() && v == nullptr) {
    std::string types;
    for (const core::ArgSpec& a : g->outputs) {
      const sdk::AttrValue* t = a.type_attr.empty() ? nullptr : attrs.Find(a.type_attr);
      if (t != nullptr)
        types += (types.empty() ? "" : ", ") + a.type_attr + "=" + sdk::DTypeName(t->type);
    }
    s = sdk::UnimplementedError("it has no kernels for " + types);
  }
  auto* c = new Call;
  if (s.ok()) s = core::Configure(*v, attrs, &c->c);
  if (!s.ok()) {
    delete c;
    return Fail(WithOp(*g, s));
  }
  *call = c;
  return 0;
}

void tf_onthefly_core_release(void* call) { delete static_cast<Call*>(call); }

char* tf_onthefly_core_call_json(const void* call) {
  return tf_onthefly::core::Copy(tf_onthefly::core::CallJson(static_cast<const Call*>(call)->c));
}

int32_t tf_onthefly_core_check_steps(const void* call, int64_t steps, int32_t xla) {
  const auto& c = static_cast<const Call*>(call)->c;
  const tf_onthefly::sdk::Status s = xla != 0 ? c.CheckXlaSteps(steps) : c.CheckSteps(steps);
  return s.ok() ? 0 : Fail(s);  // its messages name the op
}

int32_t tf_onthefly_core_run_cpu(const void* call, const OtfRunArgs* args, int32_t threads) {
  const auto& c = static_cast<const Call*>(call)->c;
  const tf_onthefly::sdk::Status s = tf_onthefly::core::RunCpu(c, *args, threads);
  return s.ok() ? 0 : Fail(WithOp(*c.generator, s));
}

int32_t tf_onthefly_core_run_gpu(const void* call, const OtfRunArgs* args, void* stream,
                                 void* scratch, int64_t scratch_size) {
  const auto& c = static_cast<const Call*>(call)->c;
  const tf_onthefly::sdk::Status s =
      tf_onthefly::core::RunGpu(c, *args, stream, scratch, scratch_size);
  return s.ok() ? 0 : Fail(WithOp(*c.generator, s));
}

void* tf_onthefly_core_xla_handler(const char* op, int32_t variant, const char* platform) {
  namespace core = tf_onthefly::core;
  namespace sdk = tf_onthefly::sdk;
  const core::Generator* g = core::FindGenerator(op != nullptr ? op : "");
  const std::string p = platform != nullptr ? platform : "";
  sdk::Status s;
  void* handler = nullptr;
  if (g == nullptr) {
    s = sdk::Status(sdk::Code::kNotFound,
                    sdk::StrCat("no generator op named '", op ? op : "", "' is registered"));
  } else if (variant < 0 || variant >= static_cast<int32_t>(g->variants.size())) {
    s = sdk::InvalidArgumentError(sdk::StrCat(g->name, " has no variant ", variant));
  } else if (p != "host" && p != "cuda") {
    s = sdk::InvalidArgumentError("platform must be 'host' or 'cuda', got '" + p + "'");
  } else {
    const OtfVariantDef& d = g->variants[variant].def;
    handler = p == "host" ? d.xla_host_handler : d.xla_cuda_handler;
    if (handler == nullptr) {
      s = sdk::Status(sdk::Code::kNotFound,
                      sdk::StrCat(g->name, " variant ", variant, " has no XLA ", p,
                                  " handler (no XLA FFI headers in its build, or no ",
                                  p == "host" ? "CPU" : "GPU", " code)"));
    }
  }
  if (!s.ok()) Fail(s);
  return handler;
}

}  // extern "C"

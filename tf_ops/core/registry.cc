// The core's registry: the registration C ABI (tf_ops/sdk/abi.h), the op specs parsed from
// REGISTER_OP's strings, and Configure, which every front end's call goes through.
#include "tf_ops/core/registry.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tf_ops/common/dlfcn_compat.h"
#include "tf_ops/sdk/generator_config.h"

namespace tf_onthefly {
namespace core {

using sdk::AttrValue;
using sdk::DType;
using sdk::StrCat;

const std::vector<std::string>& CommonInputSpecs() {
  static const auto* specs =
      new std::vector<std::string>{"seed: int64", "step: int64", "first_sample: Tindex"};
  return *specs;
}

const std::vector<std::string>& CommonAttrSpecs() {
  static const auto* specs = new std::vector<std::string>{
      "Tindex: {int32, int64} = DT_INT64", "batch_size: int", "num_samples: int = -1"};
  return *specs;
}

namespace {

// ---- Spec strings -----------------------------------------------------------------------

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool IsName(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// "name: rest" -> name, rest.
sdk::Status SplitSpec(std::string_view spec, std::string* name, std::string_view* rest) {
  const size_t colon = spec.find(':');
  const std::string_view n = Trim(spec.substr(0, colon));
  if (colon == std::string_view::npos || !IsName(n))
    return sdk::InvalidArgumentError(StrCat("'", spec, "' is not 'name: type'"));
  *name = std::string(n);
  *rest = Trim(spec.substr(colon + 1));
  return sdk::OkStatus();
}

// The items of "{a, b}" / "[a, b]", trimmed.
std::vector<std::string_view> Items(std::string_view list) {
  std::vector<std::string_view> items;
  list = Trim(list.substr(1, list.size() - 2));
  while (!list.empty()) {
    const size_t comma = list.find(',');
    items.push_back(Trim(list.substr(0, comma)));
    list = comma == std::string_view::npos ? std::string_view() : Trim(list.substr(comma + 1));
  }
  return items;
}

bool Unquote(std::string_view s, std::string* out) {
  if (s.size() < 2 || (s.front() != '\'' && s.front() != '"') || s.back() != s.front())
    return false;
  *out = std::string(s.substr(1, s.size() - 2));
  return true;
}

bool ParseInt(std::string_view s, int64_t* v) {
  const std::string text(s);
  char* end = nullptr;
  errno = 0;
  *v = std::strtoll(text.c_str(), &end, 10);
  return !text.empty() && end == text.c_str() + text.size() && errno == 0;
}

bool ParseDefault(const AttrSpec& a, std::string_view text, AttrValue* v) {
  v->kind = a.kind;
  switch (a.kind) {
    case AttrValue::Kind::kInt:
      return ParseInt(text, &v->i);
    case AttrValue::Kind::kFloat: {
      const std::string t(text);
      char* end = nullptr;
      v->f = std::strtof(t.c_str(), &end);  // as TensorFlow reads a float default
      return !t.empty() && end == t.c_str() + t.size();
    }
    case AttrValue::Kind::kBool:
      v->b = text == "true";
      return text == "true" || text == "false";
    case AttrValue::Kind::kString:
      return Unquote(text, &v->s);
    case AttrValue::Kind::kType:
      return sdk::DTypeFromName(text, &v->type);
    case AttrValue::Kind::kIntList:
      if (text.size() < 2 || text.front() != '[' || text.back() != ']') return false;
      for (std::string_view item : Items(text)) {
        int64_t i;
        if (!ParseInt(item, &i)) return false;
        v->list.push_back(i);
      }
      return true;
  }
  return false;
}

sdk::Status ParseAttr(const std::string& spec, AttrSpec* a) {
  a->spec = spec;
  std::string_view rest;
  OTF_RETURN_IF_ERROR(SplitSpec(spec, &a->name, &rest));
  std::string_view type = rest, dflt;
  const size_t eq = rest.find('=');
  if (eq != std::string_view::npos) {
    type = Trim(rest.substr(0, eq));
    dflt = Trim(rest.substr(eq + 1));
    a->has_default = true;
  }
  const auto bad = [&] {
    return sdk::InvalidArgumentError(StrCat(
        "attribute '", spec,
        "' is not one the SDK reads: 'name: T [= default]' with T int, float, bool, string, type, "
        "list(int), {'a', 'b'} or {float, int32}"));
  };
  if (type == "int") {
    a->kind = AttrValue::Kind::kInt;
  } else if (type == "float") {
    a->kind = AttrValue::Kind::kFloat;
  } else if (type == "bool") {
    a->kind = AttrValue::Kind::kBool;
  } else if (type == "string") {
    a->kind = AttrValue::Kind::kString;
  } else if (type == "type") {
    a->kind = AttrValue::Kind::kType;
  } else if (type == "list(int)") {
    a->kind = AttrValue::Kind::kIntList;
  } else if (type.size() >= 2 && type.front() == '{' && type.back() == '}') {
    const std::vector<std::string_view> items = Items(type);
    if (items.empty()) return bad();
    a->kind = items[0].front() == '\'' || items[0].front() == '"' ? AttrValue::Kind::kString
                                                                  : AttrValue::Kind::kType;
    for (std::string_view item : items) {
      std::string s;
      DType t;
      if (a->kind == AttrValue::Kind::kString && Unquote(item, &s)) {
        a->allowed_strings.push_back(s);
      } else if (a->kind == AttrValue::Kind::kType && sdk::DTypeFromName(item, &t)) {
        a->allowed_types.push_back(t);
      } else {
        return bad();
      }
    }
  } else {
    return bad();
  }
  if (a->has_default && !ParseDefault(*a, dflt, &a->default_value)) {
    return sdk::InvalidArgumentError(StrCat("attribute '", spec, "': cannot read the default '",
                                            dflt, "' as ", AttrValue::KindName(a->kind)));
  }
  return sdk::OkStatus();
}

sdk::Status ParseArg(const std::string& spec, ArgSpec* a) {
  a->spec = spec;
  std::string_view type;
  OTF_RETURN_IF_ERROR(SplitSpec(spec, &a->name, &type));
  if (!sdk::DTypeFromName(type, &a->type)) {
    if (!IsName(type)) {
      return sdk::InvalidArgumentError(StrCat("argument '", spec,
                                              "' is not one the SDK reads: 'name: T' with T a "
                                              "type (float, int32, ...) or a type attribute"));
    }
    a->type_attr = std::string(type);
  }
  return sdk::OkStatus();
}

// ---- The registry -----------------------------------------------------------------------

struct Registry {
  std::mutex mutex;
  std::deque<Generator> generators;  // stable addresses
  std::vector<std::string> errors;
};

Registry& GetRegistry() {
  static auto* registry = new Registry;  // lives as long as the process
  return *registry;
}

// The file of the library that holds `address` (the registering library).
std::string LibraryOf(const void* address) {
  Dl_info info;
  if (dladdr(address, &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
  return "(unknown library)";
}

// The versions a registration was built for, against the core's.
sdk::Status CheckVersions(uint32_t sdk_abi, uint32_t contract, uint32_t flags) {
  OTF_REQUIRE(sdk_abi == sdk::kSdkAbiVersion, "built for SDK ABI ", sdk_abi,
              ", this tf_onthefly has SDK ABI ", sdk::kSdkAbiVersion,
              ": rebuild it against this tf_onthefly's headers");
  OTF_REQUIRE(contract == kContractVersion, "built for counter contract v", contract,
              ", this tf_onthefly has counter contract v", kContractVersion,
              ": rebuild it against this tf_onthefly's headers");
  OTF_REQUIRE(flags == sdk::kAbiFlags, "built with _GLIBCXX_USE_CXX11_ABI=", flags & 1,
              ", this tf_onthefly with _GLIBCXX_USE_CXX11_ABI=", sdk::kAbiFlags & 1,
              ": build it with -D_GLIBCXX_USE_CXX11_ABI=", sdk::kAbiFlags & 1);
  return sdk::OkStatus();
}

bool Reserved(const std::string& name) {
  for (const char* r : {"seed", "step", "first_sample", "Tindex", "batch_size", "num_samples"})
    if (name == r) return true;
  return false;
}

// The doc's argument lines: after its first line (the summary), a line that starts with a
// name and a colon ("length: ...", also "cub::Sort ...") documents the argument of that
// name, as TensorFlow reads an op's doc; a name the op does not have would make
// TensorFlow's op registration abort the process, so it is refused here, naming the line.
sdk::Status CheckDoc(const Generator& g) {
  std::string_view rest = g.doc;
  bool summary = true;
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (Trim(line).empty()) continue;
    if (summary) {
      summary = false;
      continue;
    }
    // A letter first (an indented line is prose), then "name: ..." as a spec reads it.
    std::string name;
    std::string_view text;
    if (!std::isalpha(static_cast<unsigned char>(line[0])) || !SplitSpec(line, &name, &text).ok())
      continue;
    bool found = g.FindAttr(name) != nullptr;
    for (const auto* args : {&g.inputs, &g.outputs})
      for (const ArgSpec& a : *args) found = found || a.name == name;
    OTF_REQUIRE(found, "its doc line '", line, "' documents an argument '", name,
                "', which it does not have (a doc line starting 'name:' documents the input, "
                "output or attribute of that name): indent the line or reword it");
  }
  return sdk::OkStatus();
}

sdk::Status BuildGenerator(const OtfGeneratorDef& def, Generator* g) {
  OTF_REQUIRE(def.name != nullptr && *def.name != '\0', "a generator has no op name");
  g->name = def.name;
  g->doc = def.doc != nullptr ? def.doc : "";
  g->params_size = def.params_size;
  for (int i = 0; i < def.num_inputs; ++i) g->input_specs.push_back(def.inputs[i]);
  for (int i = 0; i < def.num_outputs; ++i) g->output_specs.push_back(def.outputs[i]);
  for (int i = 0; i < def.num_attrs; ++i) g->attr_specs.push_back(def.attrs[i]);
  std::vector<std::string> inputs = CommonInputSpecs(), attrs = CommonAttrSpecs();
  inputs.insert(inputs.end(), g->input_specs.begin(), g->input_specs.end());
  attrs.insert(attrs.end(), g->attr_specs.begin(), g->attr_specs.end());
  for (size_t i = 0; i < inputs.size(); ++i) {
    ArgSpec a;
    OTF_RETURN_IF_ERROR(ParseArg(inputs[i], &a));
    OTF_REQUIRE(i < sdk::kCommonInputs || !Reserved(a.name), "input '", a.name,
                "' is one of the SDK's own (seed, step, first_sample)");
    g->inputs.push_back(std::move(a));
  }
  for (const std::string& spec : g->output_specs) {
    ArgSpec a;
    OTF_RETURN_IF_ERROR(ParseArg(spec, &a));
    g->outputs.push_back(std::move(a));
  }
  for (size_t i = 0; i < attrs.size(); ++i) {
    AttrSpec a;
    OTF_RETURN_IF_ERROR(ParseAttr(attrs[i], &a));
    OTF_REQUIRE(i < CommonAttrSpecs().size() || !Reserved(a.name), "attribute '", a.name,
                "' is one of the SDK's own (Tindex, batch_size, num_samples)");
    OTF_REQUIRE(g->FindAttr(a.name) == nullptr, "attribute '", a.name, "' is declared twice");
    g->attrs.push_back(std::move(a));
  }
  OTF_REQUIRE(!g->outputs.empty() && g->outputs.size() <= sdk::kMaxOutputs, "it has ",
              g->outputs.size(), " outputs; a generator has 1 to ", sdk::kMaxOutputs);
  OTF_REQUIRE(g->own_inputs() <= sdk::kMaxInputs, "it has ", g->own_inputs(),
              " tensor inputs of its own; a generator has at most ", sdk::kMaxInputs);
  for (const auto* args : {&g->inputs, &g->outputs}) {
    for (const ArgSpec& a : *args) {
      if (a.type_attr.empty()) continue;
      const AttrSpec* t = g->FindAttr(a.type_attr);
      OTF_REQUIRE(t != nullptr && t->kind == AttrValue::Kind::kType, "'", a.spec,
                  "': its type is neither a type (float, int32, ...) nor a type attribute");
    }
  }
  return CheckDoc(*g);
}

sdk::Status BuildVariant(const OtfVariantDef& def, const Generator& g, Variant* v) {
  OTF_REQUIRE(def.params_size == g.params_size, "its Params has ", def.params_size,
              " bytes, its OTF_GENERATOR's Config ", g.params_size,
              ": the Config and the generator must share one Params struct");
  OTF_REQUIRE(def.configure != nullptr, "it has no configure entry point");
  OTF_REQUIRE(def.fill_rows_cpu != nullptr || def.launch_gpu != nullptr,
              "it has neither CPU nor GPU code");
  OTF_REQUIRE(def.num_streams >= 1 && def.num_streams <= sdk::kMaxStreams, "it has ",
              def.num_streams, " streams; a generator has 1 to ", sdk::kMaxStreams);
  v->generator = &g;
  v->index = static_cast<int>(g.variants.size());
  v->xla_target = "tf_onthefly." + g.name;
  for (int i = 0; i < def.num_types; ++i) {
    const std::string attr = def.type_attrs[i];
    const DType type = static_cast<DType>(def.type_values[i]);
    const AttrSpec* a = g.FindAttr(attr);
    OTF_REQUIRE(a != nullptr && a->kind == AttrValue::Kind::kType, "it is selected by '", attr,
                "', which is not a type attribute of the op");
    bool allowed = a->allowed_types.empty();
    for (DType t : a->allowed_types) allowed = allowed || t == type;
    OTF_REQUIRE(allowed, "it is selected by ", attr, "=", sdk::DTypeName(type),
                ", which the op's spec '", a->spec, "' does not allow");
    v->types.emplace_back(attr, type);
    v->xla_target += "." + sdk::DTypeName(type);
  }
  for (const Variant& other : g.variants) {
    OTF_REQUIRE(other.types != v->types, "a variant with the same type values (", v->xla_target,
                ") is registered already");
  }
  v->def = def;
  v->def.generator = nullptr;  // the registering library's strings: not kept
  v->def.type_attrs = nullptr;
  v->def.type_values = nullptr;
  return sdk::OkStatus();
}

// Keeps a refusal for TakeRegistrationErrors, and returns its code.
int32_t Refuse(Registry& r, const std::string& library, const char* what, const char* name,
               const sdk::Status& s) {
  r.errors.push_back(StrCat(library, ": ", what, " ", name ? name : "(unnamed)",
                            " was not registered: ", s.message()));
  return static_cast<int32_t>(s.code());
}

// A registration record's versions (its first fields, where every SDK ABI keeps them), then
// its size: at least `least` bytes, the record of the first SDK of this ABI version (fields
// appended since are absent from older records, abi.h).
template <typename Def>
sdk::Status CheckRecord(const Def* def, size_t least = sizeof(Def)) {
  OTF_REQUIRE(def != nullptr, "no registration record");
  OTF_RETURN_IF_ERROR(CheckVersions(def->sdk_abi_version, def->contract_version, def->abi_flags));
  OTF_REQUIRE(def->struct_size >= least, "its registration record has ", def->struct_size,
              " bytes, this tf_onthefly's ", sizeof(Def),
              ": rebuild it against this tf_onthefly's headers");
  return sdk::OkStatus();
}

// A variant's record as this core reads it: the fields an older SDK's record lacks are null
// (struct_size still says which it had).
OtfVariantDef VariantRecord(const OtfVariantDef& def) {
  OtfVariantDef copy{};
  std::memcpy(&copy, &def, std::min(def.struct_size, sizeof(copy)));
  return copy;
}

}  // namespace

bool Variant::Matches(const sdk::Attrs& attrs) const {
  for (const auto& [name, type] : types) {
    const AttrValue* v = attrs.Find(name);
    if (v == nullptr || v->kind != AttrValue::Kind::kType || v->type != type) return false;
  }
  return true;
}

const AttrSpec* Generator::FindAttr(const std::string& name) const {
  for (const AttrSpec& a : attrs)
    if (a.name == name) return &a;
  return nullptr;
}

bool Generator::has_cpu() const {
  for (const Variant& v : variants)
    if (v.has_cpu()) return true;
  return false;
}

std::vector<const Generator*> Generators() {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<const Generator*> out;
  for (const Generator& g : r.generators)
    if (!g.variants.empty()) out.push_back(&g);
  return out;
}

const Generator* FindGenerator(const std::string& name) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const Generator& g : r.generators)
    if (g.name == name && !g.variants.empty()) return &g;
  return nullptr;
}

const Variant* SelectVariant(const Generator& g, const sdk::Attrs& attrs) {
  for (const Variant& v : g.variants)
    if (v.Matches(attrs)) return &v;
  return nullptr;
}

sdk::Status ArgTypes(const std::vector<ArgSpec>& args, const sdk::Attrs& attrs,
                     std::vector<sdk::DType>* types) {
  types->clear();
  for (const ArgSpec& a : args) {
    DType t = a.type;
    if (!a.type_attr.empty()) OTF_RETURN_IF_ERROR(attrs.GetAttr(a.type_attr, &t));
    types->push_back(t);
  }
  return sdk::OkStatus();
}

sdk::Status Configure(const Variant& variant, const sdk::Attrs& attrs, Configured* out) {
  const Generator& g = *variant.generator;
  out->generator = &g;
  out->variant = &variant;
  {
    ScopedIeeeSubnormals ieee;
    OTF_RETURN_IF_ERROR(out->batch.Parse(attrs));
  }
  out->params.assign(static_cast<size_t>(variant.def.params_size), '\0');
  out->shapes = sdk::SampleShapes();
  sdk::Status status;
  variant.def.configure(&attrs, out->params.data(), &out->shapes, &status);
  OTF_RETURN_IF_ERROR(status);
  OTF_RETURN_IF_ERROR(ArgTypes(g.outputs, attrs, &out->output_types));
  const std::vector<ArgSpec> own(g.inputs.begin() + sdk::kCommonInputs, g.inputs.end());
  OTF_RETURN_IF_ERROR(ArgTypes(own, attrs, &out->input_types));
  OTF_RETURN_IF_ERROR(sdk::CheckOutputs(out->shapes, out->output_types, out->batch.rows()));
  OTF_RETURN_IF_ERROR(sdk::CheckInputCount(out->shapes, g.own_inputs()));
  for (size_t i = 0; i < out->output_types.size(); ++i) {
    int64_t n = sdk::DTypeSize(out->output_types[i]);
    for (int64_t d : out->shapes.dims[i]) n *= d;
    out->sample_bytes[i] = n;
  }
  return sdk::OkStatus();
}

std::vector<int64_t> Configured::OutputShape(int i) const {
  std::vector<int64_t> shape = {batch.rows()};
  shape.insert(shape.end(), shapes.dims[i].begin(), shapes.dims[i].end());
  return shape;
}

int64_t Configured::ScratchBytes() const {
  if (variant->def.scratch_bytes == nullptr || batch.rows() == 0) return 0;
  return variant->def.scratch_bytes(params.data(), batch.rows());
}

sdk::Status Configured::CheckSteps(int64_t steps) const {
  for (size_t i = 0; i < shapes.names.size(); ++i) {
    const int64_t bytes = batch.rows() * sample_bytes[i];
    OTF_REQUIRE(bytes == 0 || steps <= kMaxOutputBytes / bytes, generator->name, ": output ",
                shapes.names[i], " of ", steps, " steps of ", bytes,
                " bytes each exceeds the per-output cap of ", kMaxOutputBytes,
                " bytes; pass fewer steps a call");
  }
  return sdk::OkStatus();
}

sdk::Status Configured::CheckXlaSteps(int64_t steps) const {
  OTF_RETURN_IF_ERROR(CheckSteps(steps));
  if (!variant->takes_steps()) {
    return sdk::Status(sdk::Code::kUnimplemented,
                       sdk::StrCat(generator->name,
                                   ": a vector of steps under XLA needs its generator's library "
                                   "rebuilt against this tf_onthefly's headers; pass one step a "
                                   "call"));
  }
  return sdk::OkStatus();
}

cudaError_t LaunchSteps(const Variant& variant, const sdk::GpuLaunchArgs& call, int64_t steps) {
  if (variant.def.launch_gpu_steps != nullptr) return variant.def.launch_gpu_steps(&call, steps);
  return sdk::LaunchEachStep(variant.def.launch_gpu, call, steps);
}

std::string Configured::InputRules() const {
  std::string rules;
  for (const sdk::InputSpec& in : shapes.inputs)
    rules.append(reinterpret_cast<const char*>(&in.values), sizeof(in.values));
  return rules;
}

std::string Configured::InputNames() const {
  std::string names;
  for (const sdk::InputSpec& in : shapes.inputs) names += (names.empty() ? "" : ",") + in.name;
  return names;
}

std::vector<std::string> TakeRegistrationErrors() {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> errors;
  errors.swap(r.errors);
  return errors;
}

}  // namespace core
}  // namespace tf_onthefly

extern "C" {

// The library that registers is the caller's: its file names the refusals.
int32_t tf_onthefly_register_generator(const OtfGeneratorDef* def) {
  using namespace tf_onthefly::core;  // NOLINT(build/namespaces)
  const std::string library = LibraryOf(__builtin_return_address(0));
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  tf_onthefly::sdk::Status s = CheckRecord(def);
  const char* name = s.ok() ? def->name : nullptr;
  Generator g;
  if (s.ok()) s = BuildGenerator(*def, &g);
  g.library = library;
  for (const Generator& other : r.generators) {
    if (s.ok() && other.name == g.name) {
      s = tf_onthefly::sdk::Status(
          tf_onthefly::sdk::Code::kAlreadyExists,
          "a generator of that name is registered already, by " + other.library);
    }
  }
  if (!s.ok()) return Refuse(r, library, "generator", name, s);
  r.generators.push_back(std::move(g));
  return 0;
}

int32_t tf_onthefly_register_variant(const OtfVariantDef* def) {
  using namespace tf_onthefly::core;  // NOLINT(build/namespaces)
  const std::string library = LibraryOf(__builtin_return_address(0));
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  tf_onthefly::sdk::Status s = CheckRecord(def, offsetof(OtfVariantDef, launch_gpu_steps));
  const char* name = s.ok() ? def->generator : nullptr;
  Generator* g = nullptr;
  for (Generator& candidate : r.generators)
    if (name != nullptr && candidate.name == name) g = &candidate;
  // A generator whose library's own registration was refused: that refusal says why.
  if (s.ok() && g == nullptr) {
    s = tf_onthefly::sdk::InvalidArgumentError(
        "no OTF_GENERATOR of that name was registered before it (write OTF_GENERATOR before "
        "its OTF_GENERATOR_KERNELS lines, in the same file)");
  }
  if (s.ok() && g->library != library) {
    s = tf_onthefly::sdk::InvalidArgumentError("the generator belongs to another library, " +
                                               g->library);
  }
  Variant v;
  if (s.ok()) s = BuildVariant(VariantRecord(*def), *g, &v);
  if (!s.ok()) return Refuse(r, library, "a variant of", name, s);
  g->variants.push_back(std::move(v));
  return 0;
}

}  // extern "C"

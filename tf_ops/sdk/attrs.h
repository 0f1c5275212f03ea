// An op's attribute values by name, as a generator's Config reads them (generator_def.h):
//
//   OTF_RETURN_IF_ERROR(attrs.GetAttr("feature_dim", &p->feature_dim));
//
// Filled by each front end from its own call (TensorFlow: the node's attributes; the core's
// C API: JSON), with every attribute of the op's spec present, defaults included. A missing
// or mistyped attribute is an error that says which, as TensorFlow's GetAttr says it.
#ifndef TF_ONTHEFLY_SDK_ATTRS_H_
#define TF_ONTHEFLY_SDK_ATTRS_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tf_ops/sdk/dtype.h"
#include "tf_ops/sdk/status.h"

namespace tf_onthefly {
namespace sdk {

struct AttrValue {
  // The attribute types a generator spec may declare ("int", "float", ...).
  enum class Kind : int32_t { kInt, kFloat, kBool, kString, kType, kIntList };
  Kind kind = Kind::kInt;
  int64_t i = 0;  // int
  float f = 0;    // float (TensorFlow's float attributes are float32)
  bool b = false;
  std::string s;
  DType type = DType::kInvalid;
  std::vector<int64_t> list;

  // The type's name in an op spec: "int", "float", "bool", "string", "type", "list(int)".
  static const char* KindName(Kind k) {
    switch (k) {
      case Kind::kInt:
        return "int";
      case Kind::kFloat:
        return "float";
      case Kind::kBool:
        return "bool";
      case Kind::kString:
        return "string";
      case Kind::kType:
        return "type";
      case Kind::kIntList:
        return "list(int)";
    }
    return "?";
  }
};

class Attrs {
 public:
  void SetInt(std::string name, int64_t v) { Value(std::move(name), AttrValue::Kind::kInt)->i = v; }
  void SetFloat(std::string name, float v) {
    Value(std::move(name), AttrValue::Kind::kFloat)->f = v;
  }
  void SetBool(std::string name, bool v) { Value(std::move(name), AttrValue::Kind::kBool)->b = v; }
  void SetString(std::string name, std::string v) {
    Value(std::move(name), AttrValue::Kind::kString)->s = std::move(v);
  }
  void SetType(std::string name, DType v) {
    Value(std::move(name), AttrValue::Kind::kType)->type = v;
  }
  void SetIntList(std::string name, std::vector<int64_t> v) {
    Value(std::move(name), AttrValue::Kind::kIntList)->list = std::move(v);
  }
  void Set(std::string name, AttrValue v) { *Value(std::move(name), v.kind) = std::move(v); }

  // The value of `name`, or nullptr.
  const AttrValue* Find(std::string_view name) const {
    for (const auto& [n, v] : values_)
      if (n == name) return &v;
    return nullptr;
  }
  const std::vector<std::pair<std::string, AttrValue>>& values() const { return values_; }

  Status GetAttr(std::string_view name, int64_t* v) const {
    return Read(name, AttrValue::Kind::kInt, &AttrValue::i, v);
  }
  Status GetAttr(std::string_view name, int32_t* v) const {
    int64_t i;
    OTF_RETURN_IF_ERROR(GetAttr(name, &i));
    if (i < std::numeric_limits<int32_t>::min() || i > std::numeric_limits<int32_t>::max())
      return InvalidArgumentError(
          StrCat("Attr ", name, " has value ", i, " out of range for an int32"));
    *v = static_cast<int32_t>(i);
    return OkStatus();
  }
  Status GetAttr(std::string_view name, float* v) const {
    return Read(name, AttrValue::Kind::kFloat, &AttrValue::f, v);
  }
  Status GetAttr(std::string_view name, bool* v) const {
    return Read(name, AttrValue::Kind::kBool, &AttrValue::b, v);
  }
  Status GetAttr(std::string_view name, std::string* v) const {
    return Read(name, AttrValue::Kind::kString, &AttrValue::s, v);
  }
  Status GetAttr(std::string_view name, DType* v) const {
    return Read(name, AttrValue::Kind::kType, &AttrValue::type, v);
  }
  Status GetAttr(std::string_view name, std::vector<int64_t>* v) const {
    return Read(name, AttrValue::Kind::kIntList, &AttrValue::list, v);
  }

 private:
  AttrValue* Value(std::string name, AttrValue::Kind kind) {
    for (auto& [n, v] : values_) {
      if (n == name) {
        v = AttrValue();
        v.kind = kind;
        return &v;
      }
    }
    values_.emplace_back(std::move(name), AttrValue());
    values_.back().second.kind = kind;
    return &values_.back().second;
  }

  // Member `member` of attribute `name`, which must be of `kind`.
  template <typename T>
  Status Read(std::string_view name, AttrValue::Kind kind, T AttrValue::*member, T* v) const {
    const AttrValue* a = Find(name);
    if (a == nullptr) return InvalidArgumentError(StrCat("No attr named '", name, "'"));
    if (a->kind != kind) {
      return InvalidArgumentError(
          StrCat("AttrValue had value with type '", AttrValue::KindName(a->kind), "' when '",
                 AttrValue::KindName(kind), "' expected for attr '", name, "'"));
    }
    *v = a->*member;
    return OkStatus();
  }

  std::vector<std::pair<std::string, AttrValue>> values_;
};

}  // namespace sdk
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_SDK_ATTRS_H_

// Element types, as the generator SDK names them: TensorFlow's DataType numbers and names
// (DT_FLOAT = 1, "float"; DT_HALF = 19, "half"), with no TensorFlow dependency. A front end
// maps its own types onto these: TensorFlow's are the same numbers.
#ifndef TF_ONTHEFLY_SDK_DTYPE_H_
#define TF_ONTHEFLY_SDK_DTYPE_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace tf_onthefly {
namespace sdk {

enum class DType : int32_t {
  kInvalid = 0,
  kFloat32 = 1,
  kFloat64 = 2,
  kInt32 = 3,
  kUInt8 = 4,
  kInt16 = 5,
  kInt8 = 6,
  kInt64 = 9,
  kBool = 10,
  kBFloat16 = 14,
  kUInt16 = 17,
  kFloat16 = 19,
  kUInt32 = 22,
  kUInt64 = 23,
};

namespace internal {
struct DTypeInfo {
  DType type;
  const char* name;     // TensorFlow's DataTypeString
  const char* numpy;    // NumPy's (and JAX's, PyTorch's) name
  const char* tf_enum;  // the name in an op spec's default: DT_FLOAT
  int64_t size;
};
inline constexpr DTypeInfo kDTypes[] = {
    {DType::kFloat32, "float", "float32", "DT_FLOAT", 4},
    {DType::kFloat64, "double", "float64", "DT_DOUBLE", 8},
    {DType::kInt32, "int32", "int32", "DT_INT32", 4},
    {DType::kUInt8, "uint8", "uint8", "DT_UINT8", 1},
    {DType::kInt16, "int16", "int16", "DT_INT16", 2},
    {DType::kInt8, "int8", "int8", "DT_INT8", 1},
    {DType::kInt64, "int64", "int64", "DT_INT64", 8},
    {DType::kBool, "bool", "bool", "DT_BOOL", 1},
    {DType::kBFloat16, "bfloat16", "bfloat16", "DT_BFLOAT16", 2},
    {DType::kUInt16, "uint16", "uint16", "DT_UINT16", 2},
    {DType::kFloat16, "half", "float16", "DT_HALF", 2},
    {DType::kUInt32, "uint32", "uint32", "DT_UINT32", 4},
    {DType::kUInt64, "uint64", "uint64", "DT_UINT64", 8},
};
inline const DTypeInfo* Info(DType t) {
  for (const DTypeInfo& i : kDTypes)
    if (i.type == t) return &i;
  return nullptr;
}
}  // namespace internal

// TensorFlow's name of the type ("float", "half", "int32"), as DataTypeString writes it.
inline std::string DTypeName(DType t) {
  const internal::DTypeInfo* i = internal::Info(t);
  if (i != nullptr) return i->name;
  if (t == DType::kInvalid) return "INVALID";
  return "unknown dtype enum (" + std::to_string(static_cast<int>(t)) + ")";
}

// NumPy's name of the type ("float32", "float16", "bfloat16").
inline std::string DTypeNumpyName(DType t) {
  const internal::DTypeInfo* i = internal::Info(t);
  return i != nullptr ? i->numpy : DTypeName(t);
}

// Bytes per element; 0 for a type without a fixed size.
inline int64_t DTypeSize(DType t) {
  const internal::DTypeInfo* i = internal::Info(t);
  return i != nullptr ? i->size : 0;
}

// The type named `name`: TensorFlow's name ("float"), its enum ("DT_FLOAT") or NumPy's
// ("float32"). False for no such type.
inline bool DTypeFromName(std::string_view name, DType* t) {
  for (const internal::DTypeInfo& i : internal::kDTypes) {
    if (name == i.name || name == i.numpy || name == i.tf_enum) {
      *t = i.type;
      return true;
    }
  }
  return false;
}

}  // namespace sdk
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_SDK_DTYPE_H_

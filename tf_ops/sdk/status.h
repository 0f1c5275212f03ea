// The generator SDK's status and messages: what a generator's Config returns, with no
// TensorFlow or absl dependency, so the same code runs under TensorFlow, JAX and PyTorch.
//
//   OTF_REQUIRE(p->length >= 1, "length must be >= 1, got ", p->length);
//   OTF_RETURN_IF_ERROR(attrs.GetAttr("length", &p->length));
//
// Codes are numbered as absl's and TensorFlow's (kInvalidArgument = 3, ...), so a front end
// hands them on unchanged. Numbers in messages read as absl::StrCat writes them (floats with
// six significant digits, as printf's %g), so messages are the same whichever front end
// reports them.
#ifndef TF_ONTHEFLY_SDK_STATUS_H_
#define TF_ONTHEFLY_SDK_STATUS_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace tf_onthefly {
namespace sdk {

enum class Code : int32_t {
  kOk = 0,
  kInvalidArgument = 3,
  kNotFound = 5,
  kAlreadyExists = 6,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kUnimplemented = 12,
  kInternal = 13,
};

class Status {
 public:
  Status() = default;
  Status(Code code, std::string message)
      : code_(code), message_(code == Code::kOk ? std::string() : std::move(message)) {}

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // A status of another library built from a code and a message (absl::Status: code(),
  // Status(StatusCode, string_view)), so OTF_REQUIRE and OTF_RETURN_IF_ERROR also serve
  // functions of a framework's front end that return that library's status.
  template <typename S, typename C = decltype(std::declval<const S&>().code()),
            typename = std::enable_if_t<std::is_enum_v<C> &&
                                        std::is_constructible_v<S, C, std::string_view>>>
  operator S() const {  // NOLINT(google-explicit-constructor): implicit by design
    return S(static_cast<C>(code_), message_);
  }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgumentError(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status InternalError(std::string m) { return {Code::kInternal, std::move(m)}; }
inline Status ResourceExhaustedError(std::string m) {
  return {Code::kResourceExhausted, std::move(m)};
}
inline Status UnimplementedError(std::string m) { return {Code::kUnimplemented, std::move(m)}; }

namespace internal {

inline void Append(std::string* s, std::string_view v) { s->append(v.data(), v.size()); }
inline void Append(std::string* s, const char* v) { s->append(v); }
inline void Append(std::string* s, const std::string& v) { s->append(v); }

// Six significant digits, as absl::StrCat (and printf's %g); "nan", "inf" and "-inf" for the
// rest, also as absl writes them.
inline void Append(std::string* s, double v) {
  if (std::isnan(v)) {
    s->append("nan");
  } else if (std::isinf(v)) {
    s->append(v > 0 ? "inf" : "-inf");
  } else {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", v);
    s->append(buf);
  }
}

template <typename T>
std::enable_if_t<std::is_integral_v<T>> Append(std::string* s, T v) {
  if constexpr (std::is_same_v<T, char>) {
    static_assert(!std::is_same_v<T, char>, "StrCat takes strings, not chars");
  } else if constexpr (std::is_signed_v<T>) {
    s->append(std::to_string(static_cast<long long>(v)));
  } else {
    s->append(std::to_string(static_cast<unsigned long long>(v)));
  }
}

inline void Append(std::string* s, float v) { Append(s, static_cast<double>(v)); }

}  // namespace internal

// The pieces, concatenated: strings, integers, floats (six significant digits).
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string s;
  (internal::Append(&s, args), ...);
  return s;
}

}  // namespace sdk
}  // namespace tf_onthefly

// Returns InvalidArgument(StrCat(message...)) from the enclosing function unless `cond`.
#define OTF_REQUIRE(cond, ...)                                                                  \
  do {                                                                                          \
    if (!(cond))                                                                                \
      return ::tf_onthefly::sdk::InvalidArgumentError(::tf_onthefly::sdk::StrCat(__VA_ARGS__)); \
  } while (0)

// Returns the status of `expr` from the enclosing function unless it is OK.
#define OTF_RETURN_IF_ERROR(expr)                    \
  do {                                               \
    ::tf_onthefly::sdk::Status otf_status_ = (expr); \
    if (!otf_status_.ok()) return otf_status_;       \
  } while (0)

#endif  // TF_ONTHEFLY_SDK_STATUS_H_

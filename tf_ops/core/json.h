// The little JSON the core's C API reads and writes (core_api.h): a reader for the
// attributes a front end passes, and a writer for the specs and calls it returns.
#ifndef TF_ONTHEFLY_CORE_JSON_H_
#define TF_ONTHEFLY_CORE_JSON_H_

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tf_ops/sdk/status.h"

namespace tf_onthefly {
namespace core {
namespace json {

struct Value {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool b = false;
  std::string text;  // a number's literal, or a string's characters
  std::vector<Value> items;
  std::vector<std::pair<std::string, Value>> members;

  bool IsInteger() const {
    return type == Type::kNumber && text.find_first_of(".eE") == std::string::npos;
  }
  // What it is, for messages: "a number", "a string", ...
  const char* Kind() const {
    switch (type) {
      case Type::kNull:
        return "null";
      case Type::kBool:
        return "a bool";
      case Type::kNumber:
        return "a number";
      case Type::kString:
        return "a string";
      case Type::kArray:
        return "a list";
      case Type::kObject:
        return "an object";
    }
    return "?";
  }
};

class Reader {
 public:
  explicit Reader(std::string_view text) : s_(text) {}

  sdk::Status Parse(Value* v) {
    OTF_RETURN_IF_ERROR(ParseValue(v, 0));
    Skip();
    OTF_REQUIRE(i_ == s_.size(), "JSON: text after the value at offset ", i_);
    return sdk::OkStatus();
  }

 private:
  void Skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Eat(char c) {
    Skip();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool Word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }

  sdk::Status ParseString(std::string* out) {
    OTF_REQUIRE(Eat('"'), "JSON: a string expected at offset ", i_);
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c == '\\') {
        OTF_REQUIRE(i_ < s_.size(), "JSON: unterminated string");
        c = s_[i_++];
        switch (c) {
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case 'r':
            c = '\r';
            break;
          case 'b':
            c = '\b';
            break;
          case 'f':
            c = '\f';
            break;
          case 'u': {
            unsigned code = 0;
            for (int k = 0; k < 4; ++k, ++i_) {
              OTF_REQUIRE(i_ < s_.size() && std::isxdigit(static_cast<unsigned char>(s_[i_])),
                          "JSON: a bad \\u escape at offset ", i_);
              const char h = static_cast<char>(std::tolower(static_cast<unsigned char>(s_[i_])));
              code = code * 16 + static_cast<unsigned>(h <= '9' ? h - '0' : h - 'a' + 10);
            }
            // UTF-8 of a code point of the Basic Multilingual Plane.
            if (code < 0x80) {
              c = static_cast<char>(code);
            } else if (code < 0x800) {
              out->push_back(static_cast<char>(0xC0 | (code >> 6)));
              c = static_cast<char>(0x80 | (code & 0x3F));
            } else {
              out->push_back(static_cast<char>(0xE0 | (code >> 12)));
              out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
              c = static_cast<char>(0x80 | (code & 0x3F));
            }
            break;
          }
          default:
            break;  // \" \\ \/
        }
      }
      out->push_back(c);
    }
    OTF_REQUIRE(i_ < s_.size(), "JSON: unterminated string");
    ++i_;
    return sdk::OkStatus();
  }

  sdk::Status ParseValue(Value* v, int depth) {
    OTF_REQUIRE(depth < 32, "JSON: nested too deeply");
    Skip();
    OTF_REQUIRE(i_ < s_.size(), "JSON: a value expected at the end");
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      v->type = Value::Type::kObject;
      if (Eat('}')) return sdk::OkStatus();
      do {
        std::pair<std::string, Value> m;
        Skip();
        OTF_RETURN_IF_ERROR(ParseString(&m.first));
        OTF_REQUIRE(Eat(':'), "JSON: ':' expected at offset ", i_);
        OTF_RETURN_IF_ERROR(ParseValue(&m.second, depth + 1));
        v->members.push_back(std::move(m));
      } while (Eat(','));
      OTF_REQUIRE(Eat('}'), "JSON: '}' expected at offset ", i_);
    } else if (c == '[') {
      ++i_;
      v->type = Value::Type::kArray;
      if (Eat(']')) return sdk::OkStatus();
      do {
        v->items.emplace_back();
        OTF_RETURN_IF_ERROR(ParseValue(&v->items.back(), depth + 1));
      } while (Eat(','));
      OTF_REQUIRE(Eat(']'), "JSON: ']' expected at offset ", i_);
    } else if (c == '"') {
      v->type = Value::Type::kString;
      OTF_RETURN_IF_ERROR(ParseString(&v->text));
    } else if (Word("true")) {
      v->type = Value::Type::kBool;
      v->b = true;
    } else if (Word("false")) {
      v->type = Value::Type::kBool;
    } else if (Word("null")) {
      v->type = Value::Type::kNull;
    } else if (Word("NaN")) {  // what Python's json writes for float('nan') and infinities
      v->type = Value::Type::kNumber;
      v->text = "nan";
    } else if (Word("Infinity") || Word("-Infinity")) {
      v->type = Value::Type::kNumber;
      v->text = c == '-' ? "-inf" : "inf";
    } else {
      const size_t start = i_;
      while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) ||
                                std::string_view("+-.eE").find(s_[i_]) != std::string_view::npos))
        ++i_;
      OTF_REQUIRE(i_ > start, "JSON: unexpected '", std::string(1, c), "' at offset ", start);
      v->type = Value::Type::kNumber;
      v->text = std::string(s_.substr(start, i_ - start));
    }
    return sdk::OkStatus();
  }

  std::string_view s_;
  size_t i_ = 0;
};

// A JSON string literal of `s`.
inline std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// A float32's shortest decimal that reads back as the same float32 (9 significant digits).
inline std::string Float(float f) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(f));
  return buf;
}

// Writes JSON objects and lists: key/value pairs and items, commas where they belong.
class Writer {
 public:
  Writer& Open(char bracket) {
    Comma();
    out_ += bracket;
    first_.push_back(true);
    return *this;
  }
  Writer& Close(char bracket) {
    out_ += bracket;
    first_.pop_back();
    return *this;
  }
  Writer& Key(std::string_view key) {
    Comma();
    out_ += Quote(key) + ":";
    first_.back() = true;  // the value that follows takes no comma
    return *this;
  }
  Writer& Raw(std::string_view literal) {
    Comma();
    out_ += literal;
    return *this;
  }
  Writer& String(std::string_view s) { return Raw(Quote(s)); }
  Writer& Int(int64_t v) { return Raw(std::to_string(v)); }
  Writer& Bool(bool v) { return Raw(v ? "true" : "false"); }
  const std::string& str() const { return out_; }

 private:
  void Comma() {
    if (first_.empty()) return;
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
  std::string out_;
  std::vector<bool> first_;
};

}  // namespace json
}  // namespace core
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_CORE_JSON_H_

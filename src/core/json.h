// A small JSON reader (objects, arrays, strings, numbers, booleans, null), for
// --manifest files and test fixtures. Throws std::runtime_error on malformed input.
#pragma once

#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace nnapi_convert::json {

struct Value {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<Value> arr;
  std::map<std::string, Value> obj;

  const Value& operator[](const std::string& key) const {
    auto it = obj.find(key);
    if (kind != Object || it == obj.end()) throw std::runtime_error("missing JSON key " + key);
    return it->second;
  }
  bool has(const std::string& key) const { return kind == Object && obj.count(key); }
  std::vector<std::string> strings() const {
    std::vector<std::string> out;
    for (const Value& v : arr) out.push_back(v.str);
    return out;
  }
  std::vector<int64_t> ints() const {
    std::vector<int64_t> out;
    for (const Value& v : arr) out.push_back(static_cast<int64_t>(v.num));
    return out;
  }
};

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}
  Value parse() {
    Value v = value();
    ws();
    if (i_ != s_.size()) error("trailing characters");
    return v;
  }

 private:
  const std::string& s_;
  size_t i_ = 0;

  [[noreturn]] void error(const std::string& what) {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(i_));
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }
  bool eat(const char* lit) {
    size_t n = std::char_traits<char>::length(lit);
    if (s_.compare(i_, n, lit) == 0) {
      i_ += n;
      return true;
    }
    return false;
  }
  std::string string() {
    if (s_[i_] != '"') error("expected a string");
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) error("bad escape");
      char e = s_[i_++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          if (i_ + 4 > s_.size()) error("bad \\u escape");
          unsigned code = std::stoul(s_.substr(i_, 4), nullptr, 16);
          i_ += 4;
          if (code < 0x80) {
            out += static_cast<char>(code);
          } else if (code < 0x800) {
            out += static_cast<char>(0xC0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3F));
          } else {
            out += static_cast<char>(0xE0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (code & 0x3F));
          }
          break;
        }
        default:
          out += e;
      }
    }
    if (i_ >= s_.size()) error("unterminated string");
    ++i_;
    return out;
  }
  Value value() {
    ws();
    if (i_ >= s_.size()) error("unexpected end");
    Value v;
    char c = s_[i_];
    if (c == '{') {
      v.kind = Value::Object;
      ++i_;
      ws();
      if (s_[i_] == '}') {
        ++i_;
        return v;
      }
      while (true) {
        ws();
        std::string key = string();
        ws();
        if (s_[i_++] != ':') error("expected ':'");
        v.obj[key] = value();
        ws();
        if (s_[i_] == ',') {
          ++i_;
        } else if (s_[i_] == '}') {
          ++i_;
          return v;
        } else {
          error("expected ',' or '}'");
        }
      }
    }
    if (c == '[') {
      v.kind = Value::Array;
      ++i_;
      ws();
      if (s_[i_] == ']') {
        ++i_;
        return v;
      }
      while (true) {
        v.arr.push_back(value());
        ws();
        if (s_[i_] == ',') {
          ++i_;
        } else if (s_[i_] == ']') {
          ++i_;
          return v;
        } else {
          error("expected ',' or ']'");
        }
      }
    }
    if (c == '"') {
      v.kind = Value::String;
      v.str = string();
      return v;
    }
    if (eat("true")) {
      v.kind = Value::Bool;
      v.b = true;
      return v;
    }
    if (eat("false")) {
      v.kind = Value::Bool;
      return v;
    }
    if (eat("null")) return v;
    char* end = nullptr;
    v.num = std::strtod(s_.c_str() + i_, &end);
    if (end == s_.c_str() + i_) error("unexpected character");
    v.kind = Value::Number;
    i_ = end - s_.c_str();
    return v;
  }
};

inline Value parse(const std::string& text) { return Parser(text).parse(); }

// A JSON string literal for `s` (quotes and escapes).
inline std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    switch (ch) {
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
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          const char* hex = "0123456789abcdef";
          out += "\\u00";
          out += hex[(ch >> 4) & 0xF];
          out += hex[ch & 0xF];
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

}  // namespace nnapi_convert::json

#include "nnapi_convert/input_spec.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace nnapi_convert {
namespace {

constexpr size_t kMaxRank = 8;
constexpr int64_t kMaxDim = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxElements = int64_t{1} << 31;

[[noreturn]] void fail(const std::string& spec, const std::string& why) {
  throw SpecError("input spec '" + spec + "': " + why +
                  ". Expected DIMS[,dtype=float32|int32|quint8|int16|bool][,scale=S]"
                  "[,zero_point=Z][,nhwc], e.g. 1x3x224x224 or 1x3x0x0,dtype=quint8,scale=0.0625,"
                  "zero_point=128,nhwc (0 marks a flexible dimension); for an argument that is "
                  "no tensor int=N, float=X, bool=true|false or none; for List[Tensor] and "
                  "Tuple[Tensor, ...] list=SPEC+SPEC... and tuple=SPEC+SPEC...");
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return parts;
}

bool parse_int(const std::string& s, int64_t lo, int64_t hi, int64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i == s.size()) return false;
  for (size_t j = i; j < s.size(); ++j) {
    if (s[j] < '0' || s[j] > '9') return false;
  }
  errno = 0;
  long long v = std::strtoll(s.c_str(), nullptr, 10);
  if (errno != 0 || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool parse_double(const std::string& s, double* out) {
  if (s.empty() || s.find_first_of(" \t\n") != std::string::npos) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace

const char* dtype_name(InputDType dtype) {
  switch (dtype) {
    case InputDType::Float32:
      return "float32";
    case InputDType::Int32:
      return "int32";
    case InputDType::QUInt8:
      return "quint8";
    case InputDType::Int16:
      return "int16";
    case InputDType::Bool:
      return "bool";
  }
  return "?";
}

bool parse_x_dims(const std::string& text, int64_t min_size, std::vector<int64_t>* dims,
                  std::string* why) {
  dims->clear();
  if (text.empty()) {
    *why = "it is empty";
    return false;
  }
  for (const std::string& d : split(text, 'x')) {
    int64_t v = 0;
    bool sign_ok = !d.empty() && (d[0] != '+') && (d[0] != '-' || min_size < 0);
    if (!sign_ok || !parse_int(d, min_size, kMaxDim, &v)) {
      *why = "'" + d + "' is not a size (a whole number from " + std::to_string(min_size) +
             " to 2147483647)";
      return false;
    }
    dims->push_back(v);
  }
  return true;
}

InputSpec parse_input_spec(const std::string& text) {
  InputSpec spec;
  spec.text = text;
  if (text.empty()) fail(text, "it is empty");
  std::vector<std::string> fields = split(text, ',');
  std::vector<std::string> dims = split(fields[0], 'x');
  if (dims.size() > kMaxRank) fail(text, "more than 8 dimensions");
  int64_t elements = 1;
  for (const std::string& d : dims) {
    int64_t v = 0;
    if (!parse_int(d, 0, kMaxDim, &v) || d[0] == '-' || d[0] == '+') {
      fail(text, "'" + d + "' is not a dimension (a whole number from 0 to 2147483647)");
    }
    spec.dims.push_back(v);
    if (v > 0) {
      elements *= v;
      if (elements > kMaxElements) fail(text, "more than 2^31 elements");
    }
  }
  bool has_dtype = false;
  for (size_t i = 1; i < fields.size(); ++i) {
    const std::string& f = fields[i];
    size_t eq = f.find('=');
    std::string key = f.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : f.substr(eq + 1);
    if (key == "nhwc" && eq == std::string::npos) {
      if (spec.nhwc) fail(text, "'nhwc' is given twice");
      spec.nhwc = true;
    } else if (eq == std::string::npos) {
      fail(text, "unknown option '" + f + "'");
    } else if (key == "dtype") {
      if (has_dtype) fail(text, "dtype is given twice");
      has_dtype = true;
      if (value == "float32" || value == "float") {
        spec.dtype = InputDType::Float32;
      } else if (value == "int32") {
        spec.dtype = InputDType::Int32;
      } else if (value == "quint8") {
        spec.dtype = InputDType::QUInt8;
      } else if (value == "int16") {
        spec.dtype = InputDType::Int16;
      } else if (value == "bool") {
        spec.dtype = InputDType::Bool;
      } else {
        fail(text, "unknown dtype '" + value + "' (float32, int32, quint8, int16 or bool)");
      }
    } else if (key == "scale") {
      if (spec.has_scale) fail(text, "scale is given twice");
      if (!parse_double(value, &spec.scale) || !(spec.scale > 0)) {
        fail(text, "scale '" + value + "' is not a finite number greater than 0");
      }
      spec.has_scale = true;
    } else if (key == "zero_point") {
      if (spec.has_zero_point) fail(text, "zero_point is given twice");
      if (!parse_int(value, -32768, 65535, &spec.zero_point)) {
        fail(text, "zero_point '" + value + "' is not a whole number");
      }
      spec.has_zero_point = true;
    } else {
      fail(text, "unknown option '" + key + "'");
    }
  }
  if (spec.nhwc && spec.dims.size() != 4) {
    fail(text,
         "nhwc needs exactly 4 dimensions (N, C, H, W), got " + std::to_string(spec.dims.size()));
  }
  switch (spec.dtype) {
    case InputDType::QUInt8:
      if (!spec.has_scale || !spec.has_zero_point) fail(text, "quint8 needs scale and zero_point");
      if (spec.zero_point < 0 || spec.zero_point > 255) {
        fail(text, "a quint8 zero_point must be from 0 to 255");
      }
      break;
    case InputDType::Int16:
      if (!spec.has_scale) fail(text, "int16 needs a scale (and a zero_point for asymmetric)");
      if (spec.zero_point < -32768 || spec.zero_point > 32767) {
        fail(text, "an int16 zero_point must be from -32768 to 32767");
      }
      break;
    case InputDType::Float32:
    case InputDType::Int32:
    case InputDType::Bool:
      if (spec.has_scale || spec.has_zero_point) {
        fail(text, std::string("scale and zero_point apply only to quint8 and int16, not ") +
                       dtype_name(spec.dtype));
      }
      break;
  }
  return spec;
}

namespace {

// The value after `prefix` when `text` starts with it.
bool after(const std::string& text, const std::string& prefix, std::string* rest) {
  if (text.compare(0, prefix.size(), prefix) != 0) return false;
  *rest = text.substr(prefix.size());
  return true;
}

// A list's items, joined by '+': a '+' after e, E, p or P is a number's
// exponent sign (scale=1e+20, as format_input_spec writes a large scale),
// and no item ends in those letters.
std::vector<std::string> split_items(const std::string& s) {
  std::vector<std::string> items(1);
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+' && (i == 0 || std::string("eEpP").find(s[i - 1]) == std::string::npos)) {
      items.emplace_back();
    } else {
      items.back() += s[i];
    }
  }
  return items;
}

}  // namespace

ArgSpec parse_arg_spec(const std::string& text) {
  ArgSpec a;
  a.text = text;
  std::string v;
  if (text == "none") {
    a.kind = ArgKind::None;
  } else if (after(text, "int=", &v)) {
    a.kind = ArgKind::Int;
    if (!parse_int(v, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                   &a.int_value)) {
      fail(text, "'" + v + "' is not a whole number (int=N gives an int argument its value)");
    }
  } else if (after(text, "float=", &v)) {
    a.kind = ArgKind::Float;
    if (!parse_double(v, &a.float_value)) {
      fail(text, "'" + v + "' is not a finite number (float=X gives a float argument its value)");
    }
  } else if (after(text, "bool=", &v)) {
    a.kind = ArgKind::Bool;
    if (v != "true" && v != "false") {
      fail(text, "'" + v + "' is not true or false (bool=true|false gives a bool argument)");
    }
    a.bool_value = v == "true";
  } else if (after(text, "list=", &v) || after(text, "tuple=", &v)) {
    a.kind = text[0] == 'l' ? ArgKind::List : ArgKind::Tuple;
    if (v.empty()) fail(text, "it names no tensor (give at least one tensor spec after '=')");
    const std::vector<std::string> items = split_items(v);
    for (size_t i = 0; i < items.size(); ++i) {
      try {
        a.tensors.push_back(parse_input_spec(items[i]));
      } catch (const SpecError& e) {
        throw SpecError("input spec '" + text + "', item " + std::to_string(i + 1) + " of " +
                        std::to_string(items.size()) + " (items are joined by '+'): " + e.what());
      }
    }
  } else {
    a.tensors.push_back(parse_input_spec(text));
  }
  return a;
}

std::string format_arg_spec(const ArgSpec& a) {
  std::ostringstream os;
  switch (a.kind) {
    case ArgKind::Tensor:
      return format_input_spec(a.tensors.at(0));
    case ArgKind::Int:
      return "int=" + std::to_string(a.int_value);
    case ArgKind::Float:
      os.precision(17);
      os << "float=" << a.float_value;
      return os.str();
    case ArgKind::Bool:
      return a.bool_value ? "bool=true" : "bool=false";
    case ArgKind::None:
      return "none";
    case ArgKind::List:
    case ArgKind::Tuple:
      os << (a.kind == ArgKind::List ? "list=" : "tuple=");
      for (size_t i = 0; i < a.tensors.size(); ++i) {
        os << (i ? "+" : "") << format_input_spec(a.tensors[i]);
      }
      return os.str();
  }
  return "?";
}

const char* arg_kind_text(ArgKind kind) {
  switch (kind) {
    case ArgKind::Tensor:
      return "a tensor";
    case ArgKind::Int:
      return "an int";
    case ArgKind::Float:
      return "a float";
    case ArgKind::Bool:
      return "a bool";
    case ArgKind::None:
      return "None";
    case ArgKind::List:
      return "a List[Tensor]";
    case ArgKind::Tuple:
      return "a Tuple of tensors";
  }
  return "?";
}

std::vector<InputSpec> tensor_specs(const std::vector<ArgSpec>& args) {
  std::vector<InputSpec> out;
  for (const ArgSpec& a : args) out.insert(out.end(), a.tensors.begin(), a.tensors.end());
  return out;
}

bool all_tensors(const std::vector<ArgSpec>& args) {
  for (const ArgSpec& a : args) {
    if (a.kind != ArgKind::Tensor) return false;
  }
  return true;
}

std::string format_input_spec(const InputSpec& spec) {
  std::ostringstream os;
  for (size_t i = 0; i < spec.dims.size(); ++i) os << (i ? "x" : "") << spec.dims[i];
  if (spec.dtype != InputDType::Float32) os << ",dtype=" << dtype_name(spec.dtype);
  if (spec.has_scale) {
    os.precision(17);
    os << ",scale=" << spec.scale;
  }
  if (spec.has_zero_point) os << ",zero_point=" << spec.zero_point;
  if (spec.nhwc) os << ",nhwc";
  return os.str();
}

}  // namespace nnapi_convert

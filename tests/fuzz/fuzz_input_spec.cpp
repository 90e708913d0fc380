// libFuzzer target: arbitrary text as an `--input SPEC`.
// parse_input_spec and parse_arg_spec may only throw SpecError; an accepted
// spec must format to a spec that parses to the same values (input_spec.h
// promises the round trip).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "nnapi_convert/input_spec.h"

using nnapi_convert::InputSpec;
using nnapi_convert::SpecError;

namespace {

[[noreturn]] void property_failed(const char* what, const std::string& a, const std::string& b) {
  std::fprintf(stderr, "fuzz_input_spec: property failed: %s\n  spec: %s\n  formatted: %s\n", what,
               a.c_str(), b.c_str());
  std::abort();
}

bool same(const InputSpec& a, const InputSpec& b) {
  return a.dims == b.dims && a.dtype == b.dtype && a.has_scale == b.has_scale &&
         (!a.has_scale || a.scale == b.scale) && a.has_zero_point == b.has_zero_point &&
         (!a.has_zero_point || a.zero_point == b.zero_point) && a.nhwc == b.nhwc;
}

bool same_arg(const nnapi_convert::ArgSpec& a, const nnapi_convert::ArgSpec& b) {
  if (a.kind != b.kind || a.int_value != b.int_value || a.float_value != b.float_value ||
      a.bool_value != b.bool_value || a.tensors.size() != b.tensors.size()) {
    return false;
  }
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    if (!same(a.tensors[i], b.tensors[i])) return false;
  }
  return true;
}

// The argument spec (a tensor, a value, a list or tuple of tensors).
void check_arg_spec(const std::string& text) {
  nnapi_convert::ArgSpec arg;
  try {
    arg = nnapi_convert::parse_arg_spec(text);
  } catch (const SpecError& e) {
    if (e.what()[0] == '\0') property_failed("empty error message", text, "");
    return;
  }
  const std::string formatted = nnapi_convert::format_arg_spec(arg);
  nnapi_convert::ArgSpec again;
  try {
    again = nnapi_convert::parse_arg_spec(formatted);
  } catch (const SpecError&) {
    property_failed("formatted argument spec does not parse", text, formatted);
  }
  if (!same_arg(arg, again)) {
    property_failed("formatted argument spec parses differently", text, formatted);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  check_arg_spec(text);
  InputSpec spec;
  try {
    spec = nnapi_convert::parse_input_spec(text);
  } catch (const SpecError& e) {
    if (e.what()[0] == '\0') property_failed("empty error message", text, "");
    return 0;
  }
  const std::string formatted = nnapi_convert::format_input_spec(spec);
  InputSpec again;
  try {
    again = nnapi_convert::parse_input_spec(formatted);
  } catch (const SpecError&) {
    property_failed("formatted spec does not parse", text, formatted);
  }
  if (!same(spec, again)) property_failed("formatted spec parses differently", text, formatted);
  (void)nnapi_convert::dtype_name(spec.dtype);
  return 0;
}

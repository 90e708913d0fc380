// libFuzzer target: arbitrary text as an `--input SPEC`.
// parse_input_spec may only throw SpecError; an accepted spec must format to a
// spec that parses to the same values (input_spec.h promises the round trip).
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
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

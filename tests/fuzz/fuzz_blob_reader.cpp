// libFuzzer target: arbitrary bytes as a serialized NNAPI model blob.
// Besides "no crash, no hang, no unbounded allocation" it checks properties:
//  - only BlobError may escape parse_blob (anything else aborts);
//  - an accepted blob writes back byte for byte (blob_writer.h);
//  - weight sizes only add checks: a blob rejected without them is rejected
//    with them; an accepted one is accepted with exactly fitting buffers and
//    rejected when one referenced buffer is a byte short or missing;
//  - inspect's text and JSON reports (src/inspect/report.cpp) print any
//    accepted blob.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "blob_writer.h"
#include "inspect/report.h"
#include "nnapi_convert/blob.h"

using nnapi_convert::Blob;
using nnapi_convert::BlobError;
using nnapi_convert::parse_blob;

namespace {

[[noreturn]] void property_failed(const char* what) {
  std::fprintf(stderr, "fuzz_blob_reader: property failed: %s\n", what);
  std::abort();
}

bool accepts(const uint8_t* data, size_t size, const std::vector<int64_t>* weights) {
  try {
    parse_blob(data, size, weights);
    return true;
  } catch (const BlobError& e) {
    if (e.what()[0] == '\0') property_failed("empty error message");
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Blob blob;
  try {
    blob = parse_blob(data, size);
  } catch (const BlobError&) {
    static const std::vector<int64_t> some_weights = {0, 12, 144, 1 << 20};
    if (accepts(data, size, &some_weights)) property_failed("weights made a bad blob good");
    return 0;
  }

  const std::vector<uint8_t> original(data, data + size);
  if (nnapi_convert::testing::write_blob(blob) != original)
    property_failed("accepted blob does not write back identically");

  {
    namespace d = nnapi_convert::inspect_detail;
    d::Model m;
    m.path = "fuzz";
    m.blob_bytes = size;
    m.blob = blob;
    // The validator must take any blob the reader accepts: findings, never a
    // crash (numbered-buffer values have no bytes here).
    d::validate(m, {});
    std::ostringstream text, json;
    d::print_text(m, text);
    d::print_json(m, json);
    // As if read from a .nnapi.pt: weights and memory formats are shown too.
    m.torchscript = true;
    m.weights.push_back({12, "Float", {3}});
    m.inp_mem_fmts.assign(blob.inputs.size(), 1);
    m.out_mem_fmts.assign(blob.outputs.size(), 2);
    d::print_text(m, text);
    d::print_json(m, json);
    const std::string j = json.str();
    if (j.empty() || j.front() != '{' || j.back() != '\n') property_failed("malformed JSON report");
  }

  // Bytes each numbered buffer must hold.
  std::vector<int64_t> need;
  int first_ref = -1;
  for (const auto& v : blob.values) {
    if (v.source != nnapi::ValueSource::NumberedBuffer) continue;
    if (v.buffer > 4096) return 0;  // not worth allocating sizes for
    if (need.size() <= v.buffer) need.resize(v.buffer + 1, 0);
    const int64_t end = int64_t{v.buffer_offset} + v.buffer_length;
    need[v.buffer] = std::max(need[v.buffer], end);
    if (first_ref < 0) first_ref = static_cast<int>(v.buffer);
  }
  if (!accepts(data, size, &need)) property_failed("exactly fitting weights rejected");
  const std::vector<int64_t> none;
  if (accepts(data, size, &none) != (first_ref < 0))
    property_failed("missing weight buffers not detected");
  if (first_ref >= 0 && need[first_ref] > 0) {
    std::vector<int64_t> short_by_one = need;
    short_by_one[first_ref] -= 1;
    if (accepts(data, size, &short_by_one)) property_failed("short weight buffer accepted");
  }
  return 0;
}

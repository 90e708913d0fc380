// Test helper: writes a parsed Blob back out in PyTorch's layout. A blob that
// parse_blob accepts must come back byte for byte, which the fuzzer and the
// unit tests use as an oracle.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "nnapi_convert/blob.h"

namespace nnapi_convert::testing {

inline void put_i32(std::vector<uint8_t>& out, int32_t v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(u >> (8 * i)));
}

inline void put_f32(std::vector<uint8_t>& out, float f) {
  int32_t i;
  std::memcpy(&i, &f, sizeof i);
  put_i32(out, i);
}

inline std::vector<uint8_t> write_blob(const Blob& b) {
  std::vector<uint8_t> out;
  put_i32(out, b.version);
  put_i32(out, static_cast<int32_t>(b.operands.size()));
  put_i32(out, static_cast<int32_t>(b.values.size()));
  put_i32(out, static_cast<int32_t>(b.operations.size()));
  put_i32(out, static_cast<int32_t>(b.inputs.size()));
  put_i32(out, static_cast<int32_t>(b.outputs.size()));
  for (const auto& o : b.operands) {
    put_i32(out, static_cast<int32_t>(o.type));
    put_i32(out, static_cast<int32_t>(o.dims.size()));
    put_f32(out, o.scale);
    put_i32(out, o.zero_point);
  }
  for (const auto& v : b.values) {
    put_i32(out, v.operand);
    put_i32(out, static_cast<int32_t>(v.source));
    put_i32(out, static_cast<int32_t>(v.length));
  }
  for (const auto& op : b.operations) {
    put_i32(out, op.opcode);
    put_i32(out, static_cast<int32_t>(op.inputs.size()));
    put_i32(out, static_cast<int32_t>(op.outputs.size()));
  }
  for (const auto& o : b.operands)
    for (uint32_t d : o.dims) put_i32(out, static_cast<int32_t>(d));
  for (const auto& v : b.values) {
    if (v.source == nnapi::ValueSource::Immediate) {
      out.insert(out.end(), v.immediate.begin(), v.immediate.end());
      while (out.size() % 4) out.push_back(0);
    } else {
      put_i32(out, static_cast<int32_t>(v.buffer));
      put_i32(out, static_cast<int32_t>(v.buffer_offset));
      put_i32(out, static_cast<int32_t>(v.buffer_length));
    }
  }
  for (const auto& op : b.operations) {
    for (uint32_t i : op.inputs) put_i32(out, static_cast<int32_t>(i));
    for (uint32_t i : op.outputs) put_i32(out, static_cast<int32_t>(i));
  }
  for (uint32_t i : b.inputs) put_i32(out, static_cast<int32_t>(i));
  for (uint32_t i : b.outputs) put_i32(out, static_cast<int32_t>(i));
  return out;
}

}  // namespace nnapi_convert::testing

// A strict reader of PyTorch's serialized NNAPI model blob (the `ser_model`
// int32 tensor written by torch/backends/_nnapi/serializer.py and read on the
// device by aten/src/ATen/nnapi/nnapi_model_loader.cpp).
//
// Layout (all words little-endian int32):
//   header      version(=1), operand count, value count, operation count,
//               input count, output count
//   operands    {type, rank, scale (float32), zero_point} per operand
//   values      {operand index, source type, source length} per value
//   operations  {opcode, input count, output count} per operation
//   dims        rank words per operand, 0 = flexible
//   value data  each value's bytes padded with zeros to 4 bytes; a numbered
//               buffer value is {buffer number, offset, length}
//   args        inputs then outputs of each operation (operand indices)
//   model inputs, model outputs (operand indices)
//
// Plain C++17, no LibTorch, so a fuzzer can build it on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "nnapi_convert/nnapi_types.h"

namespace nnapi_convert {

// The blob is malformed. what() says what is wrong and where (byte offset,
// operand or operation index).
class BlobError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where a constant operand's value comes from (NumberedMemory is rejected, as
// the device loader does).
struct BlobValue {
  int32_t operand = 0;
  nnapi::ValueSource source = nnapi::ValueSource::Immediate;
  uint32_t length = 0;             // source length as stored (12 for a numbered buffer)
  size_t data_offset = 0;          // byte offset of the value's data in the blob
  std::vector<uint8_t> immediate;  // the bytes of an immediate value (unpadded)
  uint32_t buffer = 0;             // numbered buffer: which weight buffer
  uint32_t buffer_offset = 0;
  uint32_t buffer_length = 0;
};

struct BlobOperand {
  nnapi::OperandType type = nnapi::OperandType::Float32;
  std::vector<uint32_t> dims;  // NNAPI order; 0 marks a flexible dimension
  float scale = 0.0f;
  int32_t zero_point = 0;
  int32_t value = -1;     // index into Blob::values, or -1 if not a constant
  int32_t producer = -1;  // operation that outputs it, or -1
};

struct BlobOperation {
  int32_t opcode = 0;  // a known nnapi::Op code
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
};

struct Blob {
  int32_t version = 0;
  std::vector<BlobOperand> operands;
  std::vector<BlobValue> values;
  std::vector<BlobOperation> operations;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
};

// Parses and validates a blob. When `weight_sizes` is non-null it holds the
// byte size of each weight buffer passed alongside the blob, and every
// numbered-buffer reference must lie inside one of them. Throws BlobError on
// the first violation; never reads outside [data, data + size) and never
// allocates more than a small multiple of `size`.
Blob parse_blob(const uint8_t* data, size_t size,
                const std::vector<int64_t>* weight_sizes = nullptr);

inline Blob parse_blob(const std::vector<uint8_t>& bytes,
                       const std::vector<int64_t>* weight_sizes = nullptr) {
  return parse_blob(bytes.data(), bytes.size(), weight_sizes);
}

// Bytes a fully specified operand of this type and dims occupies; -1 when a
// dimension is flexible, a tensor has rank 0, or the size does not fit in
// int64.
int64_t operand_byte_size(nnapi::OperandType type, const std::vector<uint32_t>& dims);

}  // namespace nnapi_convert

// Unit tests of the strict blob reader (src/inspect/blob_reader.cpp).
//
// The fixtures in tests/fuzz/data/ were written by PyTorch's own serializer
// (tests/fuzz/make_blobs.py, run by hand). manifest.txt holds, for each one,
// the counts the serializer wrote into the blob header (the lengths of its
// operand, value, operation, input and output lists) and the byte sizes of
// the weight tensors it returned; those are the expected numbers here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "blob_writer.h"
#include "nnapi_convert/blob.h"

#ifndef BLOB_DATA_DIR
#error "BLOB_DATA_DIR must point at tests/fuzz/data"
#endif

namespace nnapi_convert {
namespace {

using ::testing::HasSubstr;

struct Fixture {
  std::string name;
  int counts[5] = {0, 0, 0, 0, 0};  // operands values operations inputs outputs
  std::vector<int64_t> weights;
};

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), {});
}

std::vector<Fixture> manifest() {
  std::ifstream f(std::string(BLOB_DATA_DIR) + "/manifest.txt");
  std::vector<Fixture> out;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    Fixture fx;
    s >> fx.name;
    for (int& c : fx.counts) s >> c;
    int64_t w;
    while (s >> w) fx.weights.push_back(w);
    out.push_back(fx);
  }
  return out;
}

std::vector<uint8_t> blob(const std::string& name) {
  return read_bytes(std::string(BLOB_DATA_DIR) + "/" + name + ".bin");
}

int32_t word(const std::vector<uint8_t>& b, size_t offset) {
  int32_t v;
  std::memcpy(&v, b.data() + offset, 4);  // fixtures and host are little-endian
  return v;
}

void set_word(std::vector<uint8_t>& b, size_t offset, int32_t v) {
  std::memcpy(b.data() + offset, &v, 4);
}

// The message parse_blob throws, or "" if it accepts the bytes.
std::string error_of(const std::vector<uint8_t>& b, const std::vector<int64_t>* weights = nullptr) {
  try {
    parse_blob(b, weights);
  } catch (const BlobError& e) {
    return e.what();
  }
  return "";
}

TEST(BlobReader, ManifestListsTheFixtures) {
  // Guards the other tests against silently iterating over nothing.
  EXPECT_EQ(manifest().size(), 6u);
}

TEST(BlobReader, ReferenceBlobsParseWithTheSerializersCounts) {
  for (const Fixture& fx : manifest()) {
    SCOPED_TRACE(fx.name);
    const std::vector<uint8_t> bytes = blob(fx.name);
    for (const std::vector<int64_t>* w :
         {static_cast<const std::vector<int64_t>*>(nullptr), &fx.weights}) {
      const Blob b = parse_blob(bytes, w);
      EXPECT_EQ(b.version, 1);
      EXPECT_EQ(b.operands.size(), size_t(fx.counts[0]));
      EXPECT_EQ(b.values.size(), size_t(fx.counts[1]));
      EXPECT_EQ(b.operations.size(), size_t(fx.counts[2]));
      EXPECT_EQ(b.inputs.size(), size_t(fx.counts[3]));
      EXPECT_EQ(b.outputs.size(), size_t(fx.counts[4]));
      EXPECT_EQ(testing::write_blob(b), bytes) << "does not write back identically";
    }
  }
}

TEST(BlobReader, ConvReluContents) {
  // make_blobs.py: Conv2d(2, 3, 1) then ReLU on a 1x2x4x4 float input.
  const Blob b = parse_blob(blob("conv_relu"));
  ASSERT_EQ(b.operations.size(), 2u);
  EXPECT_EQ(b.operations[0].opcode, static_cast<int32_t>(nnapi::Op::Conv2d));
  EXPECT_EQ(b.operations[1].opcode, static_cast<int32_t>(nnapi::Op::Relu));
  ASSERT_EQ(b.inputs.size(), 1u);
  const BlobOperand& in = b.operands[b.inputs[0]];
  EXPECT_EQ(in.type, nnapi::OperandType::TensorFloat32);
  EXPECT_EQ(in.dims, (std::vector<uint32_t>{1, 2, 4, 4}));
  EXPECT_EQ(in.value, -1);
  EXPECT_EQ(b.operands[b.outputs[0]].producer, 1);
  // Conv weight [3, 1, 1, 2] (NNAPI OHWI) lives in weight buffer 1, all 24 bytes.
  const BlobOperand& weight = b.operands[b.operations[0].inputs[1]];
  EXPECT_EQ(weight.dims, (std::vector<uint32_t>{3, 1, 1, 2}));
  ASSERT_GE(weight.value, 0);
  const BlobValue& v = b.values[weight.value];
  EXPECT_EQ(v.source, nnapi::ValueSource::NumberedBuffer);
  EXPECT_EQ(v.buffer, 1u);
  EXPECT_EQ(v.buffer_offset, 0u);
  EXPECT_EQ(v.buffer_length, 24u);
  // The serializer always adds the bool immediates False and True first.
  ASSERT_GE(b.operands[0].value, 0);
  EXPECT_EQ(b.values[b.operands[0].value].immediate, (std::vector<uint8_t>{0}));
  EXPECT_EQ(b.values[b.operands[1].value].immediate, (std::vector<uint8_t>{1}));
}

TEST(BlobReader, FlexibleNhwcAndQuantizedOperands) {
  const Blob flex = parse_blob(blob("linear_flex"));  // input 0x4: flexible batch
  EXPECT_EQ(flex.operands[flex.inputs[0]].dims, (std::vector<uint32_t>{0, 4}));
  const Blob nhwc = parse_blob(blob("conv_nhwc"));  // 1x2x4x4 input marked nnapi_nhwc
  EXPECT_EQ(nhwc.operands[nhwc.inputs[0]].dims, (std::vector<uint32_t>{1, 4, 4, 2}));
  const Blob q = parse_blob(blob("quant"));  // quint8 input, scale 0.5, zero point 10
  const BlobOperand& qin = q.operands[q.inputs[0]];
  EXPECT_EQ(qin.type, nnapi::OperandType::TensorQuant8Asymm);
  EXPECT_EQ(qin.scale, 0.5f);
  EXPECT_EQ(qin.zero_point, 10);
}

TEST(BlobReader, TruncatedHeader) {
  const std::vector<uint8_t> b = blob("conv_relu");
  EXPECT_THAT(error_of({}), HasSubstr("truncated header"));
  EXPECT_THAT(error_of(std::vector<uint8_t>(b.begin(), b.begin() + 20)),
              HasSubstr("truncated header: the blob has 20 bytes"));
}

TEST(BlobReader, EveryTruncationIsRejected) {
  for (const Fixture& fx : manifest()) {
    const std::vector<uint8_t> b = blob(fx.name);
    for (size_t len = 0; len < b.size(); ++len) {
      EXPECT_NE(error_of(std::vector<uint8_t>(b.begin(), b.begin() + len)), "")
          << fx.name << " cut to " << len << " bytes";
    }
  }
}

TEST(BlobReader, WrongVersion) {
  std::vector<uint8_t> b = blob("quant");
  set_word(b, 0, 2);
  EXPECT_THAT(error_of(b), HasSubstr("unsupported version 2 at byte offset 0"));
}

TEST(BlobReader, NegativeCounts) {
  const char* names[5] = {"operand", "value", "operation", "input", "output"};
  for (int i = 0; i < 5; ++i) {
    std::vector<uint8_t> b = blob("conv_relu");
    set_word(b, 4 + 4 * i, -1);
    EXPECT_THAT(error_of(b), HasSubstr(std::string("negative ") + names[i] + " count -1"));
    EXPECT_THAT(error_of(b), HasSubstr("byte offset " + std::to_string(4 + 4 * i)));
  }
}

TEST(BlobReader, CountsLargerThanTheBlob) {
  std::vector<uint8_t> b = blob("conv_relu");
  set_word(b, 4, 1000);  // 1000 operands cannot fit in 436 bytes
  EXPECT_THAT(error_of(b), HasSubstr("need at least"));
  set_word(b, 4, 1 << 24);  // the device loader's limit
  EXPECT_THAT(error_of(b), HasSubstr("exceeds the loader's limit"));
}

TEST(BlobReader, RanksThatDoNotMatchTheStoredDims) {
  std::vector<uint8_t> b = blob("conv_relu");  // 436 bytes; operand 2 is the 4-d input
  set_word(b, 24 + 16 * 2 + 4, 5);
  EXPECT_THAT(error_of(b), HasSubstr("describe a model of 440 bytes but the blob has only 436"));
  set_word(b, 24 + 16 * 2 + 4, 1000);
  EXPECT_THAT(error_of(b), HasSubstr("operand 2 (byte offset 60): rank 1000 makes the dimension "
                                     "lists longer than the blob"));
  set_word(b, 24 + 4, 1);  // operand 0 is a BOOL scalar
  EXPECT_THAT(error_of(b), HasSubstr("operand 0 (byte offset 28): scalar type BOOL has rank 1"));
}

TEST(BlobReader, OperandIndexOutOfRange) {
  const std::vector<uint8_t> good = blob("conv_relu");
  const Blob parsed = parse_blob(good);
  const int32_t n = static_cast<int32_t>(parsed.operands.size());
  {  // the last word is the model output
    std::vector<uint8_t> b = good;
    set_word(b, b.size() - 4, n);
    EXPECT_THAT(error_of(b),
                HasSubstr("model output 0 (byte offset " + std::to_string(b.size() - 4) +
                          ") refers to operand " + std::to_string(n) + ", out of range"));
  }
  {  // the value table's first operand index
    std::vector<uint8_t> b = good;
    const size_t at = 24 + 16 * parsed.operands.size();
    set_word(b, at, -3);
    EXPECT_THAT(error_of(b), HasSubstr("value 0 (byte offset " + std::to_string(at) +
                                       ") refers to operand -3, out of range"));
  }
  {  // the first argument of operation 0 sits right after the value data
    std::vector<uint8_t> b = good;
    const BlobValue& last = parsed.values.back();
    const size_t at = last.data_offset + ((last.length + 3) & ~3u);
    set_word(b, at, 99);
    EXPECT_THAT(error_of(b), HasSubstr("operation 0 (CONV_2D) input 0 (byte offset " +
                                       std::to_string(at) + ") refers to operand 99"));
  }
}

TEST(BlobReader, OperationOutputAlreadyWrittenOrConstant) {
  // The device loader's rule: an operation writes an operand that no value
  // sets and no other operation writes. The message names the operation,
  // its output and the byte offset of the index.
  const std::vector<uint8_t> good = blob("conv_relu");
  const Blob parsed = parse_blob(good);
  ASSERT_EQ(parsed.operations.size(), 2u);
  const BlobValue& last = parsed.values.back();
  const size_t args_at = last.data_offset + ((last.length + 3) & ~3u);
  const BlobOperation& conv = parsed.operations[0];
  const BlobOperation& relu = parsed.operations[1];
  const size_t relu_out_at =
      args_at + 4 * (conv.inputs.size() + conv.outputs.size() + relu.inputs.size());
  ASSERT_EQ(word(good, relu_out_at), static_cast<int32_t>(relu.outputs[0]));
  {
    std::vector<uint8_t> b = good;
    set_word(b, relu_out_at, static_cast<int32_t>(conv.outputs[0]));
    EXPECT_THAT(error_of(b),
                HasSubstr("operation 1 (RELU) output 0 (byte offset " +
                          std::to_string(relu_out_at) + ") writes operand " +
                          std::to_string(conv.outputs[0]) + ", which operation 0 already writes"));
  }
  {
    std::vector<uint8_t> b = good;
    const int32_t constant = parsed.values[0].operand;
    set_word(b, relu_out_at, constant);
    EXPECT_THAT(error_of(b), HasSubstr("operation 1 (RELU) output 0 (byte offset " +
                                       std::to_string(relu_out_at) + ") writes operand " +
                                       std::to_string(constant) + ", which has a constant value"));
  }
}

TEST(BlobReader, ValueLengthPastEnd) {
  std::vector<uint8_t> b = blob("conv_relu");
  const size_t values_at = 24 + 16 * 9;    // 9 operands, per the manifest
  set_word(b, values_at + 8, 0x7ffffff0);  // value 0 is the immediate bool False
  EXPECT_THAT(error_of(b), HasSubstr("value 0 (byte offset " + std::to_string(values_at + 8) +
                                     ", operand 0): source length 2147483632 runs past the end"));
  set_word(b, values_at + 8, -4);
  EXPECT_THAT(error_of(b), HasSubstr("negative source length -4"));
}

TEST(BlobReader, BufferPastWeightSize) {
  const std::vector<uint8_t> b = blob("conv_relu");
  const std::vector<int64_t> exact = {12, 24};  // from the manifest
  EXPECT_EQ(error_of(b, &exact), "");
  const std::vector<int64_t> short_weight = {12, 23};
  EXPECT_THAT(error_of(b, &short_weight),
              HasSubstr("bytes [0, 24) run past the end of weight buffer 1 (23 bytes)"));
  EXPECT_THAT(error_of(b, &short_weight), HasSubstr("operand 4"));
  const std::vector<int64_t> one_buffer = {12};
  EXPECT_THAT(error_of(b, &one_buffer),
              HasSubstr("refers to weight buffer 1 but only 1 weight buffer(s) are given"));
}

TEST(BlobReader, BufferOffsetPastWeightSize) {
  std::vector<uint8_t> b = blob("conv_relu");
  const Blob parsed = parse_blob(b);
  const BlobValue& bias = parsed.values[parsed.operands[3].value];  // bias: buffer 0
  set_word(b, bias.data_offset + 4, 8);                             // offset 8 + 12 > 12
  const std::vector<int64_t> weights = {12, 24};
  EXPECT_THAT(error_of(b, &weights),
              HasSubstr("bytes [8, 20) run past the end of weight buffer 0"));
  EXPECT_EQ(error_of(b), "") << "without weight sizes the offset cannot be checked";
}

TEST(BlobReader, TrailingBytes) {
  std::vector<uint8_t> b = blob("two_outputs");
  const size_t end = b.size();
  b.insert(b.end(), {0, 0, 0, 0});
  EXPECT_THAT(error_of(b), HasSubstr("4 trailing byte(s) after the model outputs, starting at "
                                     "byte offset " +
                                     std::to_string(end)));
  b.resize(end + 1);
  EXPECT_THAT(error_of(b), HasSubstr("1 trailing byte(s)"));
}

TEST(BlobReader, OperationCountsThatDoNotMatchTheArguments) {
  std::vector<uint8_t> b = blob("quant");
  // quant: 5 operands, 2 values, then operation 0 (RELU: 1 input, 1 output).
  const size_t op0 = 24 + 16 * 5 + 12 * 2;
  ASSERT_EQ(word(b, op0), static_cast<int32_t>(nnapi::Op::Relu));
  set_word(b, op0 + 4, 2);  // claims a second input the args section does not hold
  EXPECT_NE(error_of(b), "");
  set_word(b, op0 + 4, -1);
  EXPECT_THAT(error_of(b), HasSubstr("operation 0 (RELU, byte offset " + std::to_string(op0 + 4) +
                                     "): negative input count -1"));
}

TEST(BlobReader, UnknownCodesAndSources) {
  const std::vector<uint8_t> good = blob("quant");
  std::vector<uint8_t> b = good;
  set_word(b, 24, 99);  // operand 0 type
  EXPECT_THAT(error_of(b), HasSubstr("operand 0 (byte offset 24): unknown operand type 99"));
  b = good;
  set_word(b, 24 + 16 * 5 + 12 * 2, 1000);
  EXPECT_THAT(error_of(b), HasSubstr("operation 0 (byte offset 128): unknown operation code 1000"));
  b = good;
  set_word(b, 24 + 16 * 5 + 4, 3);
  EXPECT_THAT(error_of(b), HasSubstr("numbered memory"));
  set_word(b, 24 + 16 * 5 + 4, 1);
  EXPECT_THAT(error_of(b), HasSubstr("unknown source type 1"));
}

TEST(BlobReader, GraphAndValueConsistency) {
  const std::vector<uint8_t> good = blob("quant");
  const Blob parsed = parse_blob(good);
  std::vector<uint8_t> b = good;
  // Value 1 sets operand 0 again (it set operand 1).
  set_word(b, 24 + 16 * 5 + 12, 0);
  EXPECT_THAT(error_of(b), HasSubstr("sets operand 0 again"));
  // Non-zero padding after the 1-byte bool immediate.
  b = good;
  b[parsed.values[0].data_offset + 1] = 7;
  EXPECT_THAT(error_of(b), HasSubstr("non-zero padding byte at byte offset " +
                                     std::to_string(parsed.values[0].data_offset + 1)));
  // Bool immediate of length 2 no longer matches the operand's size.
  b = good;
  set_word(b, 24 + 16 * 5 + 8, 2);
  EXPECT_THAT(error_of(b), HasSubstr("needs 1 bytes but its value has 2"));
  // Quant8 zero point outside [0, 255].
  b = good;
  set_word(b, 24 + 16 * 2 + 12, 300);
  EXPECT_THAT(error_of(b), HasSubstr("zero point 300 is outside [0, 255]"));
  // Model input that is also operation 0's output.
  b = good;
  set_word(b, b.size() - 8, 3);
  EXPECT_THAT(error_of(b), HasSubstr("model input 0"));
}

}  // namespace
}  // namespace nnapi_convert

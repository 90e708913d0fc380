// The NNAPI model validator (nnapi_convert/validate.h) on models converted by
// nnapi-convert from the reference fixtures, each blob broken on purpose so
// that exactly one of NeuralNetworks.h's rules is broken: the finding must
// name the operation and say what the rule says. Every unbroken model passes.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "../common/fixtures.h"
#include "blob_writer.h"
#include "core/validation.h"
#include "nnapi_convert/blob.h"
#include "nnapi_convert/converter.h"
#include "nnapi_convert/validate.h"

namespace fs = std::filesystem;
using namespace nnapi_convert;
using nnapi::Op;
using nnapi::OperandType;
using nnapi_validate::Finding;
using nnapi_validate::Rule;

namespace {

fs::path fixtures_dir() {
  const char* dir = std::getenv("NNAPI_FIXTURES_DIR");
  return dir ? fs::path(dir) : fs::path();
}

ConvertOptions options_for(const std::string& name) {
  const fs::path dir = fixtures_dir() / name;
  return fixtures::convert_options(dir, fixtures::read_json(dir / "case.json"));
}

// A fixture converted by nnapi-convert: its blob (parsed) and weights.
struct Converted {
  Conversion conversion;
  Blob blob;
};

Converted convert_case(const std::string& name) {
  Converted c;
  c.conversion = convert(options_for(name));
  const auto& w = c.conversion.ser_model;
  c.blob = parse_blob(reinterpret_cast<const uint8_t*>(w.data()), w.size() * 4);
  return c;
}

// The blob written out and read back (the mutation is in the bytes the
// device would get), validated with the conversion's weights.
std::vector<Finding> validate(const Converted& c, const Blob& blob,
                              nnapi_validate::Options options = {}) {
  const std::vector<uint8_t> bytes = nnapi_convert::testing::write_blob(blob);
  std::vector<at::Tensor> weights;
  std::vector<std::pair<const uint8_t*, size_t>> buffers;
  for (const at::Tensor& t : c.conversion.weights) weights.push_back(t.contiguous());
  for (const at::Tensor& t : weights)
    buffers.emplace_back(static_cast<const uint8_t*>(t.data_ptr()),
                         static_cast<size_t>(t.numel() * t.element_size()));
  const Blob reread = parse_blob(bytes);
  return nnapi_validate::validate_model(nnapi_validate::model_of_blob(reread, buffers), options);
}

// For rules the strict blob reader already enforces (so a blob breaking them
// never reaches the validator from a file): the blob must be refused by
// parse_blob, and the same mutation applied to the validator's view of the
// unbroken blob (what the runtime hands it) must be a finding.
template <typename Mutate>
std::vector<Finding> validate_view(const Converted& c, const Blob& broken, Mutate mutate) {
  EXPECT_THROW(parse_blob(nnapi_convert::testing::write_blob(broken)), BlobError);
  nnapi_validate::Model m = nnapi_validate::model_of_blob(c.blob);
  mutate(m);
  return nnapi_validate::validate_model(m);
}

std::string all_text(const std::vector<Finding>& findings) {
  std::string s;
  for (const Finding& f : findings) s += nnapi_validate::describe(f) + "\n";
  return s;
}

size_t first_op(const Blob& b, Op code) {
  for (size_t k = 0; k < b.operations.size(); ++k)
    if (b.operations[k].opcode == static_cast<int32_t>(code)) return k;
  ADD_FAILURE() << "no " << nnapi::op_name(code) << " in the model";
  return 0;
}

// Adds an immediate scalar operand of `type` holding `bytes`; returns its index.
uint32_t add_scalar(Blob& b, OperandType type, std::vector<uint8_t> bytes) {
  BlobOperand o;
  o.type = type;
  o.value = static_cast<int32_t>(b.values.size());
  b.operands.push_back(o);
  BlobValue v;
  v.operand = static_cast<int32_t>(b.operands.size() - 1);
  v.source = nnapi::ValueSource::Immediate;
  v.length = static_cast<uint32_t>(bytes.size());
  v.immediate = std::move(bytes);
  b.values.push_back(v);
  return static_cast<uint32_t>(b.operands.size() - 1);
}

uint32_t add_int(Blob& b, int32_t v) {
  std::vector<uint8_t> bytes(4);
  std::memcpy(bytes.data(), &v, 4);
  return add_scalar(b, OperandType::Int32, bytes);
}

uint32_t add_float(Blob& b, float v) {
  std::vector<uint8_t> bytes(4);
  std::memcpy(bytes.data(), &v, 4);
  return add_scalar(b, OperandType::Float32, bytes);
}

// Replaces the values of an immediate int32 vector operand.
void set_ints(Blob& b, uint32_t operand, const std::vector<int32_t>& v) {
  BlobValue& value = b.values.at(static_cast<size_t>(b.operands.at(operand).value));
  value.immediate.resize(4 * v.size());
  std::memcpy(value.immediate.data(), v.data(), 4 * v.size());
  value.length = static_cast<uint32_t>(value.immediate.size());
  b.operands[operand].dims = {static_cast<uint32_t>(v.size())};
}

// Exactly one finding, at operation `op` (or model-level when -1), of `rule`,
// whose message contains `text`.
void expect_one(const std::vector<Finding>& findings, int64_t op, Rule rule,
                const std::string& text) {
  ASSERT_EQ(findings.size(), 1u) << all_text(findings);
  const Finding& f = findings[0];
  EXPECT_EQ(f.operation, op) << all_text(findings);
  EXPECT_EQ(nnapi_validate::rule_name(f.rule), std::string(nnapi_validate::rule_name(rule)))
      << all_text(findings);
  EXPECT_NE(f.message.find(text), std::string::npos)
      << "expected \"" << text << "\" in: " << f.message;
  if (op >= 0) {
    const std::string prefix = "operation " + std::to_string(op) + " " + f.operation_name + ": ";
    EXPECT_EQ(f.message.rfind(prefix, 0), 0u) << f.message;
  }
}

class Validate : public ::testing::Test {
 protected:
  void SetUp() override {
    if (fixtures_dir().empty()) GTEST_SKIP() << "NNAPI_FIXTURES_DIR is not set";
  }
  // Converts the fixture and checks that the unbroken model passes.
  Converted load(const std::string& name) {
    Converted c = convert_case(name);
    EXPECT_EQ(all_text(validate(c, c.blob)), "") << name << " as converted";
    return c;
  }
  // Converts `fixture` (which must pass), breaks its blob with `mutate(blob,
  // k)`, k the first `op`, and expects exactly one finding, at k.
  template <typename Mutate>
  void expect_broken(const std::string& fixture, Op op, Rule rule, const std::string& text,
                     Mutate mutate) {
    Converted c = load(fixture);
    Blob b = c.blob;
    const size_t k = first_op(b, op);
    mutate(b, k);
    expect_one(validate(c, b), static_cast<int64_t>(k), rule, text);
  }
};

// ---- ranks

TEST_F(Validate, MulOfRank5IsRefused) {
  // NeuralNetworks.h, MUL: "Supported tensor rank: up to 4".
  expect_broken("pointwise_binary-mul", Op::Mul, Rule::Rank,
                "input 0 has rank 5; NNAPI's MUL takes tensors of rank 1 to 4",
                [](Blob& b, size_t k) {
                  b.operands[b.operations[k].inputs[0]].dims = {1, 1, 2, 3, 4};
                });
}

TEST_F(Validate, ModelOutputOfRank0IsRefused) {
  Converted c = load("pointwise_unary-relu");
  Blob b = c.blob;
  b.operands[b.outputs[0]].dims = {};
  expect_one(validate(c, b), -1, Rule::Rank,
             "model output " + std::to_string(b.outputs[0]) + " is a tensor of rank 0");
}

// ---- counts and types

TEST_F(Validate, MissingInputIsRefused) {
  expect_broken("conv2d-float-3x3", Op::Conv2d, Rule::InputCount,
                "has 9 inputs; NNAPI's CONV_2D takes 7, 8, 10, 11 or 13", [](Blob& b, size_t k) {
                  b.operations[k].inputs.resize(9);  // explicit padding needs 10, 11 or 13
                });
}

TEST_F(Validate, ExtraOutputIsRefused) {
  expect_broken("pointwise_unary-relu", Op::Relu, Rule::OutputCount,
                "has 2 outputs; NNAPI's RELU has 1", [](Blob& b, size_t k) {
                  BlobOperand extra = b.operands[b.operations[k].outputs[0]];
                  b.operands.push_back(extra);
                  b.operations[k].outputs.push_back(static_cast<uint32_t>(b.operands.size() - 1));
                });
}

TEST_F(Validate, LayoutFlagOfWrongTypeIsRefused) {
  // CONV_2D's input 10 is the BOOL layout flag (NCHW when true).
  expect_broken("conv2d-float-3x3", Op::Conv2d, Rule::OperandType,
                "input 10 is INT32; NNAPI's CONV_2D takes BOOL there", [](Blob& b, size_t k) {
                  ASSERT_EQ(b.operations[k].inputs.size(), 11u);
                  b.operations[k].inputs[10] = add_int(b, 1);
                });
}

TEST_F(Validate, OperandsOfDifferentTypesAreRefused) {
  expect_broken("pointwise_binary-add", Op::Add, Rule::OperandType,
                "input 1 is TENSOR_INT32 but input 0 is TENSOR_FLOAT32", [](Blob& b, size_t k) {
                  b.operands[b.operations[k].inputs[1]].type = OperandType::TensorInt32;
                });
}

// ---- parameter values

TEST_F(Validate, FuseCodeOutOfRangeIsRefused) {
  expect_broken(
      "pointwise_binary-add", Op::Add, Rule::Parameter,
      "input 2 (fused activation) is 4; NNAPI's FuseCode is 0 (none), 1 (RELU), 2 (RELU1) "
      "or 3 (RELU6)",
      [](Blob& b, size_t k) { b.operations[k].inputs[2] = add_int(b, 4); });
}

TEST_F(Validate, StrideZeroIsRefused) {
  expect_broken("conv2d-float-3x3", Op::Conv2d, Rule::Parameter,
                "input 8 (stride) is 0; NNAPI needs it >= 1", [](Blob& b, size_t k) {
                  b.operations[k].inputs[8] = add_int(b, 0);  // stride (height)
                });
}

TEST_F(Validate, NegativePaddingIsRefused) {
  expect_broken("conv2d-float-3x3p1", Op::Conv2d, Rule::Parameter,
                "input 4 (padding) is -1; NNAPI needs it >= 0", [](Blob& b, size_t k) {
                  b.operations[k].inputs[4] = add_int(b, -1);  // padding right
                });
}

TEST_F(Validate, ImplicitPaddingSchemeOutOfRangeIsRefused) {
  // Rewritten to the implicit form: in, filter, bias, scheme, strides, fuse, layout.
  expect_broken("conv2d-float-3x3", Op::Conv2d, Rule::Parameter,
                "input 3 (implicit padding) is 3; NNAPI's PaddingCode is 1 (SAME) or 2 (VALID)",
                [](Blob& b, size_t k) {
                  std::vector<uint32_t>& in = b.operations[k].inputs;
                  in = {in[0], in[1], in[2], add_int(b, 3), in[7], in[8], in[9], in[10]};
                });
}

TEST_F(Validate, SoftmaxAxisOutOfRangeIsRefused) {
  expect_broken("softmax-default", Op::Softmax, Rule::Parameter,
                "input 2 (axis) is 2; for a tensor of rank 2 NNAPI's SOFTMAX takes -2 to 1",
                [](Blob& b, size_t k) {
                  ASSERT_EQ(b.operations[k].inputs.size(), 3u);
                  b.operations[k].inputs[2] = add_int(b, 2);  // the input is 2-D
                });
}

TEST_F(Validate, SoftmaxBetaNotPositiveIsRefused) {
  expect_broken("softmax-default", Op::Softmax, Rule::Parameter,
                "input 1 (beta) is 0.000000; NNAPI needs a positive beta",
                [](Blob& b, size_t k) { b.operations[k].inputs[1] = add_float(b, 0.0f); });
}

TEST_F(Validate, ConcatenationAxisOutOfRangeIsRefused) {
  // NeuralNetworks.h's reference (Concatenation's prepare): 0 <= axis < rank.
  expect_broken("cat-dim1", Op::Concatenation, Rule::Parameter,
                "(axis) is -1; for a tensor of rank 4 NNAPI's CONCATENATION takes 0 to 3",
                [](Blob& b, size_t k) { b.operations[k].inputs.back() = add_int(b, -1); });
}

TEST_F(Validate, ReshapeChangingTheElementCountIsRefused) {
  expect_broken("reshape-2x4", Op::Reshape, Rule::Shape, "elements but shape [3, 4]",
                [](Blob& b, size_t k) {
                  const uint32_t shape = b.operations[k].inputs[1];
                  set_ints(b, shape, {3, 4});
                  b.operands[b.operations[k].outputs[0]].dims = {3, 4};
                });
}

// ---- quantization

TEST_F(Validate, BiasScaleOtherThanInputTimesFilterIsRefused) {
  expect_broken("conv2d-quant-3x3", Op::Conv2d, Rule::Quantization, "input 2 (bias) has scale",
                [](Blob& b, size_t k) { b.operands[b.operations[k].inputs[2]].scale *= 2; });
}

TEST_F(Validate, QuantizedLogisticWithOtherOutputScaleIsRefused) {
  // NeuralNetworks.h, LOGISTIC: for TENSOR_QUANT8_ASYMM "the scale must be
  // 1.f / 256 and the zeroPoint must be 0". The float model made quantized:
  // with those parameters it passes, with scale 0.5 it does not.
  Converted c = load("pointwise_unary-sigmoid");
  Blob b = c.blob;
  const size_t k = first_op(b, Op::Logistic);
  for (uint32_t id : {b.operations[k].inputs[0], b.operations[k].outputs[0]}) {
    b.operands[id].type = OperandType::TensorQuant8Asymm;
    b.operands[id].scale = 1.0f / 256;
  }
  EXPECT_EQ(all_text(validate(c, b)), "");
  b.operands[b.operations[k].outputs[0]].scale = 0.5f;
  expect_one(validate(c, b), static_cast<int64_t>(k), Rule::Quantization,
             "output 0 has scale 0.5, zero point 0; NNAPI's LOGISTIC of TENSOR_QUANT8_ASYMM gives "
             "scale 0.00390625, zero point 0");
}

TEST_F(Validate, QuantizedPoolChangingParametersIsRefused) {
  // AVERAGE_POOL_2D: a quantized output keeps the input's scale and zeroPoint.
  expect_broken("avg_pool2d-quant-k2", Op::AveragePool2d, Rule::Quantization,
                "NNAPI's quantized AVERAGE_POOL_2D keeps them",
                [](Blob& b, size_t k) { b.operands[b.operations[k].outputs[0]].zero_point += 1; });
}

TEST_F(Validate, QuantizedOperandWithZeroPointOutsideUint8IsRefused) {
  Converted c = load("avg_pool2d-quant-k2");
  Blob b = c.blob;
  const uint32_t input = b.inputs[0];
  b.operands[input].zero_point = 300;
  const auto findings =
      validate_view(c, b, [&](nnapi_validate::Model& m) { m.operands[input].zero_point = 300; });
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].operation, -1);
  EXPECT_EQ(findings[0].rule, Rule::Operand);
  EXPECT_NE(findings[0].message.find("operand " + std::to_string(input) +
                                     ": TENSOR_QUANT8_ASYMM has zero point 300, outside 0 to 255"),
            std::string::npos)
      << all_text(findings);
}

// ---- feature level

TEST_F(Validate, OperationAboveTheTargetLevelIsRefused) {
  // HARD_SWISH came with feature level 4 (Android API level 30).
  Converted c = load("beyond-hardswish-api30-float");
  const size_t k = first_op(c.blob, Op::HardSwish);
  nnapi_validate::Options level3;
  level3.feature_level = 3;
  expect_one(validate(c, c.blob, level3), static_cast<int64_t>(k), Rule::FeatureLevel,
             "HARD_SWISH needs NNAPI feature level 4 (Android API level 30), above the target "
             "level 3 (Android API level 29)");
}

// ---- operand types by feature level (NeuralNetworks.h's "Supported tensor
// OperandCode" lists, packages/modules/NeuralNetworks
// runtime/include/NeuralNetworksTypes.h; Android 10's NeuralNetworks.h lists
// no TENSOR_INT32 for these operations).

// The model made one of TENSOR_INT32 data: every TENSOR_FLOAT32 operand
// retyped (the fixtures below only move their input).
Blob all_int32(const Blob& blob) {
  Blob b = blob;
  for (BlobOperand& o : b.operands)
    if (o.type == OperandType::TensorFloat32) o.type = OperandType::TensorInt32;
  return b;
}

// Among `findings`, the one at operation `op` is of `rule` and says `text`.
void expect_at(const std::vector<Finding>& findings, int64_t op, Rule rule,
               const std::string& text) {
  for (const Finding& f : findings) {
    if (f.operation != op) continue;
    EXPECT_EQ(nnapi_validate::rule_name(f.rule), std::string(nnapi_validate::rule_name(rule)));
    EXPECT_NE(f.message.find(text), std::string::npos)
        << "expected \"" << text << "\" in: " << f.message;
    return;
  }
  ADD_FAILURE() << "no finding at operation " << op << " in:\n" << all_text(findings);
}

// Validated at target level `target`: exactly one finding, of the feature
// level, at the first `op`, saying `text`.
void expect_above_target(const Converted& c, const Blob& b, Op op, int target,
                         const std::string& text) {
  nnapi_validate::Options level;
  level.feature_level = target;
  expect_one(validate(c, b, level), static_cast<int64_t>(first_op(b, op)), Rule::FeatureLevel,
             text);
}

// Validated at target level `target`: no finding.
void expect_valid_at(const Converted& c, const Blob& b, int target) {
  nnapi_validate::Options level;
  level.feature_level = target;
  EXPECT_EQ(all_text(validate(c, b, level)), "");
}

TEST_F(Validate, ReshapeOfInt32NeedsFeatureLevel6) {
  // RESHAPE: "ANEURALNETWORKS_TENSOR_INT32 (since NNAPI feature level 6)".
  Converted c = load("reshape-2x4");
  const Blob b = all_int32(c.blob);
  expect_above_target(c, b, Op::Reshape, 3,
                      "RESHAPE of TENSOR_INT32 needs NNAPI feature level 6 (Android API level 33), "
                      "above the target level 3 (Android API level 29)");
  expect_above_target(c, b, Op::Reshape, 5, "RESHAPE of TENSOR_INT32 needs NNAPI feature level 6");
  expect_valid_at(c, b, 6);
}

TEST_F(Validate, OperandTypeAboveTheTargetLevelIsNamed) {
  // TENSOR_FLOAT16 came with feature level 3 (Android API level 29), and
  // RELU takes it since the same level: the first reason found, the
  // operand's type, is the one named.
  Converted c = load("pointwise_unary-relu");
  Blob b = c.blob;
  for (BlobOperand& o : b.operands)
    if (o.type == OperandType::TensorFloat32) o.type = OperandType::TensorFloat16;
  expect_above_target(c, b, Op::Relu, 2,
                      "an operand of type TENSOR_FLOAT16 needs NNAPI feature level 3 (Android API "
                      "level 29), above the target level 2 (Android API level 28)");
  expect_valid_at(c, b, 3);
}

TEST_F(Validate, MovesWithoutInt32AreRefusedAtEveryLevel) {
  // SQUEEZE, STRIDED_SLICE, TRANSPOSE, CONCATENATION: FLOAT16, FLOAT32,
  // QUANT8_ASYMM (and QUANT8_ASYMM_SIGNED), no TENSOR_INT32 at any level.
  struct Case {
    const char* fixture;
    Op op;
  };
  for (const Case& t :
       {Case{"beyond-dims-squeeze-float-nhwc", Op::Squeeze}, Case{"slice-1to5s2", Op::StridedSlice},
        Case{"beyond-dims-transpose-float-nhwc", Op::Transpose},
        Case{"cat-dim1", Op::Concatenation}}) {
    SCOPED_TRACE(t.fixture);
    Converted c = load(t.fixture);
    const Blob b = all_int32(c.blob);
    const std::string name = nnapi::op_name(t.op);
    expect_at(validate(c, b), static_cast<int64_t>(first_op(b, t.op)), Rule::OperandType,
              "input 0 is TENSOR_INT32; NNAPI's " + name +
                  " takes TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM or TENSOR_FLOAT16 there (at any "
                  "feature level)");
  }
}

TEST_F(Validate, MovesOfLevel3TakeInt32) {
  // EXPAND_DIMS, GATHER, SLICE, SPLIT, TILE list TENSOR_INT32 from their
  // first level (3): an int32 model passes at level 3.
  Converted c = load("unsqueeze-dim1");
  const Blob b = all_int32(c.blob);
  ASSERT_EQ(b.operations.size(), 1u);
  EXPECT_EQ(b.operations[0].opcode, static_cast<int32_t>(Op::ExpandDims));
  nnapi_validate::Options level;
  level.feature_level = 3;
  EXPECT_EQ(all_text(validate(c, b, level)), "");
}

// ---- shapes

TEST_F(Validate, DeclaredOutputDimsOtherThanComputedAreRefused) {
  // The case: STRIDED_SLICE's declared dims differ from the slice.
  expect_broken("slice-1to5s2", Op::StridedSlice, Rule::Shape, "is declared with dims",
                [](Blob& b, size_t k) {
                  std::vector<uint32_t>& dims = b.operands[b.operations[k].outputs[0]].dims;
                  dims.back() += 1;
                });
}

TEST_F(Validate, ConvolutionOutputSizeIsRecomputed) {
  expect_broken("conv2d-float-3x3s2", Op::Conv2d, Rule::Shape, "but NNAPI's CONV_2D computes",
                [](Blob& b, size_t k) {
                  b.operations[k].inputs[7] = add_int(b, 1);  // stride (width) 1 instead of 2
                });
}

TEST_F(Validate, InputsThatDoNotBroadcastAreRefused) {
  expect_broken("pointwise_binary-add", Op::Add, Rule::Shape, "do not broadcast",
                [](Blob& b, size_t k) {
                  std::vector<uint32_t>& dims = b.operands[b.operations[k].inputs[1]].dims;
                  dims.back() += 1;
                });
}

// ---- graph

TEST_F(Validate, OperandWrittenTwiceIsRefused) {
  Converted c = load("seblock_mul");
  Blob b = c.blob;
  ASSERT_GE(b.operations.size(), 2u);
  b.operations[1].outputs[0] = b.operations[0].outputs[0];
  const auto findings = validate_view(c, b, [&](nnapi_validate::Model& m) {
    m.operations[1].outputs[0] = m.operations[0].outputs[0];
  });
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].operation, 1);
  EXPECT_EQ(findings[0].rule, Rule::Graph);
  EXPECT_NE(findings[0].message.find("which operation 0 writes too; NNAPI operands are written "
                                     "once"),
            std::string::npos)
      << all_text(findings);
}

TEST_F(Validate, OperandReadButNeverWrittenIsRefused) {
  expect_broken("pointwise_unary-relu", Op::Relu, Rule::Graph, "which nothing writes",
                [](Blob& b, size_t k) {
                  BlobOperand orphan = b.operands[b.operations[k].inputs[0]];
                  b.operands.push_back(orphan);
                  b.operations[k].inputs[0] = static_cast<uint32_t>(b.operands.size() - 1);
                });
}

TEST_F(Validate, CycleIsRefused) {
  Converted c = load("seblock_mul");
  Blob b = c.blob;
  const size_t last = b.operations.size() - 1;
  // Operation 0 reads the last operation's output, which depends on it.
  b.operations[0].inputs[0] = b.operations[last].outputs[0];
  const auto findings = validate(c, b);
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings.back().rule, Rule::Graph);
  EXPECT_NE(findings.back().message.find("form a cycle"), std::string::npos) << all_text(findings);
}

TEST_F(Validate, ConstantTensorOfRank0IsRefused) {
  // The "0-dim constant operand": setOperandValue needs fixed dims.
  Converted c = load("pointwise_binary_const-arg_plus_const");
  Blob b = c.blob;
  const size_t k = first_op(b, Op::Add);
  const uint32_t constant = b.operations[k].inputs[1];
  ASSERT_GE(b.operands[constant].value, 0);
  b.operands[constant].dims = {};
  const auto findings =
      validate_view(c, b, [&](nnapi_validate::Model& m) { m.operands[constant].dims = {}; });
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].rule, Rule::Operand) << all_text(findings);
  EXPECT_NE(findings[0].message.find("operand " + std::to_string(constant) +
                                     ": a constant tensor of rank 0"),
            std::string::npos)
      << all_text(findings);
}

// ---- the converter's hook: the message names the operation, the node and
// the user's source line.

TEST_F(Validate, ConverterNamesOperationNodeAndSourceLine) {
  const ConvertOptions options = options_for("pointwise_binary-mul");
  Converted c = load("pointwise_binary-mul");
  Blob b = c.blob;
  const size_t k = first_op(b, Op::Mul);
  b.operands[b.operations[k].inputs[0]].dims = {1, 1, 2, 3, 4};
  const std::vector<uint8_t> bytes = nnapi_convert::testing::write_blob(b);
  Conversion broken = c.conversion;
  broken.ser_model.assign(reinterpret_cast<const int32_t*>(bytes.data()),
                          reinterpret_cast<const int32_t*>(bytes.data()) + bytes.size() / 4);
  // The node each operation came from, as lower_graph records it.
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::Node* node = graph->create(c10::Symbol::fromQualString("aten::mul"), 1);
  graph->insertNode(node);
  std::vector<const torch::jit::Node*> op_nodes(b.operations.size(), node);
  const torch::jit::Node* failed = nullptr;
  try {
    validate_conversion(broken, {}, op_nodes, options, &failed);
    FAIL() << "the broken model was not refused";
  } catch (const ConvertError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.exit_code(), 1);
    EXPECT_EQ(failed, node);
    EXPECT_EQ(e.node(), "aten::mul");
    EXPECT_NE(msg.find("node aten::mul"), std::string::npos) << msg;
    EXPECT_NE(msg.find("operation " + std::to_string(k) +
                       " MUL: input 0 has rank 5; NNAPI's MUL takes tensors of rank 1 to 4"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("--cpu-fallback can keep that node in TorchScript"), std::string::npos)
        << msg;
  }
}

TEST_F(Validate, FlexibleModelIsCheckedAtSampleSizes) {
  // Load-time sizes are 0 in the stored blob: the stride's effect on the
  // output shows only once the shape-compute script has filled them in, at
  // the sample sizes (--verify's), as the device loads the module.
  const ConvertOptions options = options_for("conv2d-float-3x3-flex");
  Converted c = load("conv2d-float-3x3-flex");
  ASSERT_FALSE(c.conversion.shape_lines.empty());
  Blob b = c.blob;
  const size_t k = first_op(b, Op::Conv2d);
  // The stride immediate changed in place (same size: the script's word
  // offsets stay right), from 1 to 2.
  const uint32_t stride = b.operations[k].inputs[7];
  BlobValue& value = b.values.at(static_cast<size_t>(b.operands[stride].value));
  ASSERT_EQ(value.immediate.size(), 4u);
  const int32_t two = 2;
  std::memcpy(value.immediate.data(), &two, 4);
  EXPECT_EQ(all_text(validate(c, b)), "") << "the stored blob cannot tell";
  const std::vector<uint8_t> bytes = nnapi_convert::testing::write_blob(b);
  Conversion broken = c.conversion;
  broken.ser_model.assign(reinterpret_cast<const int32_t*>(bytes.data()),
                          reinterpret_cast<const int32_t*>(bytes.data()) + bytes.size() / 4);
  try {
    validate_conversion(broken, {}, {}, options, nullptr);
    FAIL() << "the broken model was not refused";
  } catch (const ConvertError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("when loaded with inputs of sizes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("operation " + std::to_string(k) +
                       " CONV_2D: output 0 is declared with "
                       "dims"),
              std::string::npos)
        << msg;
  }
}

}  // namespace

// ---- PyTorch's converter output: every reference fixture's blob (and, for
// a model with load-time sizes, the blob its shape-compute script prepared
// at the run-time args) passes, except the cases whose case.json says why
// the validator refuses them ("validator_refuses": the sentence of
// NeuralNetworks.h PyTorch's converter breaks, see tools/make_fixtures.py).
namespace {

class ReferenceBlob : public ::testing::Test {
 public:
  explicit ReferenceBlob(fs::path dir) : dir_(std::move(dir)) {}
  void TestBody() override {
    const fs::path ref = dir_ / "ref";
    const std::vector<at::Tensor> weights = fixtures::load_tensors(ref / "weights.pt");
    std::vector<at::Tensor> contiguous;
    std::vector<std::pair<const uint8_t*, size_t>> buffers;
    for (const at::Tensor& t : weights) contiguous.push_back(t.contiguous());
    for (const at::Tensor& t : contiguous)
      buffers.emplace_back(static_cast<const uint8_t*>(t.data_ptr()),
                           static_cast<size_t>(t.numel() * t.element_size()));
    std::string found;
    for (const char* file : {"ser_model.bin", "prepared_ser_model.bin"}) {
      if (!fs::exists(ref / file)) continue;
      const std::vector<char> bytes = fixtures::read_bytes(ref / file);
      const Blob blob = parse_blob(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      nnapi_validate::Model m = nnapi_validate::model_of_blob(blob, buffers);
      nnapi_validate::Options o;
      // The stored blob of a model with load-time sizes holds placeholders
      // where its script patches values: its prepared blob has them.
      const bool flexible =
          !fixtures::read_json(ref / "manifest.json").at("shape_compute_lines").empty();
      o.values = std::string(file) == "prepared_ser_model.bin" || !flexible;
      const std::string text = all_text(nnapi_validate::validate_model(m, o));
      if (!text.empty()) found += std::string(file) + ":\n" + text;
    }
    const std::string name = dir_.filename().string();
    const std::string why = fixtures::validator_refuses(dir_);
    if (!why.empty()) {
      EXPECT_NE(found, "") << name << " is listed as breaking NeuralNetworks.h (" << why
                           << ") but passes";
    } else {
      EXPECT_EQ(found, "") << name;
    }
  }

 private:
  fs::path dir_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const fs::path dir = fixtures_dir();
  if (!dir.empty() && fs::is_directory(dir)) {
    fixtures::register_cases("ReferenceBlob", fixtures::case_dirs(dir, "ok"),
                             [](const fs::path& d) { return new ReferenceBlob(d); });
  }
  return RUN_ALL_TESTS();
}

// Tests of `inspect` (src/inspect/inspect.cpp) on the fixtures written by
// tests/fuzz/make_blobs.py with PyTorch's serializer and convert_model_to_nnapi.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "nnapi_convert/inspect.h"

#ifndef BLOB_DATA_DIR
#error "BLOB_DATA_DIR must point at tests/fuzz/data"
#endif

#include "blob_writer.h"
#include "nnapi_convert/blob.h"

namespace nnapi_convert {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

struct Result {
  int status;
  std::string out, err;
};

Result inspect(const std::string& path, bool json = false) {
  std::ostringstream out, err;
  const int status = inspect_main(path, json, out, err);
  return {status, out.str(), err.str()};
}

std::string data(const std::string& name) { return std::string(BLOB_DATA_DIR) + "/" + name; }

// The line of `text` that starts with `prefix` (after indentation), or "".
std::string line_of(const std::string& text, const std::string& prefix) {
  std::istringstream s(text);
  std::string line;
  while (std::getline(s, line)) {
    const size_t start = line.find_first_not_of(' ');
    if (start != std::string::npos && line.compare(start, prefix.size(), prefix) == 0) return line;
  }
  return "";
}

TEST(Inspect, RawBlob) {
  const Result r = inspect(data("conv_relu.bin"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, HasSubstr("raw NNAPI model blob"));
  EXPECT_THAT(r.out, HasSubstr("9 operands, 6 values, 2 operations, 1 inputs, 1 outputs"));
  EXPECT_THAT(line_of(r.out, "0 "), AllOf(HasSubstr("BOOL"), HasSubstr("immediate false")));
  EXPECT_THAT(line_of(r.out, "2 "), AllOf(HasSubstr("TENSOR_FLOAT32"), HasSubstr("[1, 2, 4, 4]"),
                                          HasSubstr("model input 0")));
  EXPECT_THAT(line_of(r.out, "4 "), HasSubstr("weight buffer 1, 24 bytes"));
  EXPECT_THAT(line_of(r.out, "6 "), AllOf(HasSubstr("INT32"), HasSubstr("immediate 1")));
  EXPECT_THAT(line_of(r.out, "8 "),
              AllOf(HasSubstr("computed by operation 1 (RELU)"), HasSubstr("model output 0")));
  EXPECT_THAT(r.out, HasSubstr("CONV_2D inputs [2, 4, 3, 5, 5, 5, 5, 6, 6, 5, 1] outputs [7]"));
  // Each input's role, as NeuralNetworks.h lists CONV_2D's 11 inputs
  // (explicit padding with the layout flag) and RELU's "0: A tensor,
  // specifying the input".
  EXPECT_THAT(line_of(r.out, "input roles:"),
              HasSubstr("input roles: input, filter, bias, padding left, padding right, padding "
                        "top, padding bottom, stride width, stride height, fused activation, "
                        "NCHW layout flag"));
  EXPECT_THAT(r.out, HasSubstr("RELU inputs [7] outputs [8]\n        input roles: input\n"));
  EXPECT_THAT(r.out, HasSubstr("model inputs: [2]"));
  EXPECT_THAT(r.out, HasSubstr("model outputs: [8]"));
}

// The operations of one fixed form have their input roles too, as
// NeuralNetworks.h lists them: ADD's "0: A tensor. 1: A tensor of the same
// OperandCode ... 2: An INT32 scalar ... FuseCode", FULLY_CONNECTED's input,
// weights, bias and FuseCode.
TEST(Inspect, InputRolesOfFixedForms) {
  const Result arith = inspect(data("add_mul.bin"));
  ASSERT_EQ(arith.status, 0) << arith.err;
  EXPECT_THAT(arith.out, HasSubstr("ADD inputs [2, 3, 5] outputs [4]\n"
                                   "        input roles: input, second input, fused activation\n"));
  EXPECT_THAT(arith.out, HasSubstr("SUB inputs [6, 3, 5] outputs [7]\n"
                                   "        input roles: input, second input, fused activation\n"));
  const Result fc = inspect(data("linear_flex.bin"));
  ASSERT_EQ(fc.status, 0) << fc.err;
  EXPECT_THAT(fc.out, HasSubstr("FULLY_CONNECTED inputs [2, 4, 3, 6] outputs [5]\n"
                                "        input roles: input, weights, bias, fused activation\n"));
}

// CONCATENATION's inputs as NeuralNetworks.h lists them ("0 ~ n-1: The
// list of n input tensors ... n: An ANEURALNETWORKS_INT32 scalar, specifying
// the concatenation axis"), here torch.cat of three tensors; STRIDED_SLICE's
// "0: ... the tensor to be sliced. 1: ... the starts ... 2: ... the ends ...
// 3: ... the strides ... 4: ... begin_mask ... 5: ... end_mask ... 6: ...
// shrink_axis_mask", here a[:, 1:3]. Both blobs written by PyTorch's
// serializer (tests/fuzz/make_blobs.py's seeds).
TEST(Inspect, InputRolesOfConcatenationAndStridedSlice) {
  const std::string seeds = std::string(BLOB_DATA_DIR) + "/../corpus/blob/";
  const Result cat = inspect(seeds + "cat3.bin");
  ASSERT_EQ(cat.status, 0) << cat.err;
  EXPECT_THAT(cat.out, HasSubstr("CONCATENATION inputs [2, 3, 4, 6] outputs [5]\n"
                                 "        input roles: input, input, input, axis\n"));
  const Result slice = inspect(seeds + "slice.bin");
  ASSERT_EQ(slice.status, 0) << slice.err;
  EXPECT_THAT(slice.out,
              HasSubstr("STRIDED_SLICE inputs [2, 4, 5, 6, 7, 7, 7] outputs [3]\n"
                        "        input roles: input, begin, end, strides, begin_mask, end_mask, "
                        "shrink_axis_mask\n"));
  const Result json = inspect(seeds + "cat3.bin", true);
  EXPECT_THAT(json.out, HasSubstr(R"("input_roles":["input","input","input","axis"])"));
}

TEST(Inspect, FlexibleAndQuantized) {
  const Result flex = inspect(data("linear_flex.bin"));
  ASSERT_EQ(flex.status, 0) << flex.err;
  EXPECT_THAT(line_of(flex.out, "2 "), HasSubstr("[?, 4]"));
  EXPECT_THAT(line_of(flex.out, "8 "), AllOf(HasSubstr("FLOAT32"), HasSubstr("immediate 1")));
  const Result q = inspect(data("quant.bin"));
  ASSERT_EQ(q.status, 0) << q.err;
  EXPECT_THAT(line_of(q.out, "2 "),
              AllOf(HasSubstr("TENSOR_QUANT8_ASYMM"), HasSubstr("scale=0.5 zero_point=10")));
  EXPECT_THAT(line_of(q.out, "4 "), AllOf(HasSubstr("TENSOR_FLOAT32"), Not(HasSubstr("scale"))));
}

TEST(Inspect, TorchScriptModule) {
  const Result r = inspect(data("conv_nhwc.nnapi.pt"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("TorchScript NNAPI module"));
  EXPECT_THAT(r.out, HasSubstr("weight buffers: 2"));
  EXPECT_THAT(r.out, HasSubstr("1: 144 bytes, Float [2, 3, 3, 2]"));
  EXPECT_THAT(line_of(r.out, "2 "), HasSubstr("[1, 4, 4, 2]"));  // NHWC as NNAPI sees it
  EXPECT_THAT(r.out, HasSubstr("input memory formats: [channels_last]"));
  EXPECT_THAT(r.out, HasSubstr("output memory formats: [channels_last]"));
  const Result two = inspect(data("two_outputs.nnapi.pt"));
  ASSERT_EQ(two.status, 0) << two.err;
  EXPECT_THAT(two.out, HasSubstr("output memory formats: [contiguous, contiguous]"));
}

TEST(Inspect, Json) {
  const Result r = inspect(data("conv_relu.nnapi.pt"), true);
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.front(), '{');
  EXPECT_EQ(r.out.substr(r.out.size() - 2), "}\n");
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one JSON object on one line";
  EXPECT_THAT(r.out, HasSubstr(R"("format":"torchscript")"));
  EXPECT_THAT(r.out, HasSubstr(R"("weights":[{"bytes":12,"dtype":"Float","shape":[3]})"));
  EXPECT_THAT(r.out, HasSubstr(R"({"index":0,"type":"BOOL","type_code":6,"dims":[],)"
                               R"("source":{"kind":"immediate","bytes":1,"value":false}})"));
  EXPECT_THAT(r.out, HasSubstr(R"("source":{"kind":"weight_buffer","buffer":1,"offset":0,)"
                               R"("bytes":24})"));
  EXPECT_THAT(r.out, HasSubstr(R"("source":{"kind":"operation","operation":1},"model_output":0})"));
  EXPECT_THAT(r.out, HasSubstr(R"({"index":1,"name":"RELU","code":19,"inputs":[7],)"
                               R"("input_roles":["input"],"outputs":[8],"feature_level":1})"));
  // NeuralNetworks.h: RELU and CONV_2D are feature level 1, but the BOOL
  // operand type (the layout flag) came with level 3, Android 10 (API 29).
  EXPECT_THAT(r.out, HasSubstr(R"("outputs":[7],"feature_level":3})"));
  EXPECT_THAT(r.out, HasSubstr(R"("inputs":[2,4,3,5,5,5,5,6,6,5,1],"input_roles":["input",)"
                               R"("filter","bias","padding left","padding right","padding top",)"
                               R"("padding bottom","stride width","stride height",)"
                               R"("fused activation","NCHW layout flag"],"outputs":[7])"));
  EXPECT_THAT(r.out, HasSubstr(R"("nnapi_feature_level":3,"android_api":29)"));
  EXPECT_THAT(r.out, HasSubstr(R"("input_memory_formats":["contiguous"])"));
  const Result flex = inspect(data("linear_flex.bin"), true);
  ASSERT_EQ(flex.status, 0) << flex.err;
  EXPECT_THAT(flex.out, HasSubstr(R"("dims":[null,4])"));
  EXPECT_THAT(flex.out, HasSubstr(R"("input_memory_formats":null)"));
  const Result q = inspect(data("quant.bin"), true);
  EXPECT_THAT(q.out, HasSubstr(R"("scale":0.5,"zero_point":10)"));
}

// The validator's findings (NeuralNetworks.h's rules): none for PyTorch's
// conv_relu; for the same blob with CONV_2D's stride 0 (NeuralNetworks.h:
// strides are >= 1), the report lists the finding and inspect exits 1.
TEST(Inspect, ValidatorFindings) {
  const Result ok = inspect(data("conv_relu.bin"));
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("NeuralNetworks.h rules: no finding\n"));
  EXPECT_THAT(inspect(data("conv_relu.bin"), true).out, HasSubstr(R"("findings":[])"));

  std::ifstream f(data("conv_relu.bin"), std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
  Blob b = parse_blob(bytes);
  ASSERT_EQ(b.operations[0].opcode, static_cast<int32_t>(nnapi::Op::Conv2d));
  BlobOperand zero;
  zero.type = nnapi::OperandType::Int32;
  zero.value = static_cast<int32_t>(b.values.size());
  b.operands.push_back(zero);
  BlobValue v;
  v.operand = static_cast<int32_t>(b.operands.size() - 1);
  v.length = 4;
  v.immediate = {0, 0, 0, 0};
  b.values.push_back(v);
  b.operations[0].inputs[7] = static_cast<uint32_t>(v.operand);  // stride (width)
  const std::string path =
      ::testing::TempDir() + "nnapi-inspect-" + std::to_string(::getpid()) + "-stride0.bin";
  {
    std::ofstream o(path, std::ios::binary);
    const std::vector<uint8_t> broken = testing::write_blob(b);
    o.write(reinterpret_cast<const char*>(broken.data()),
            static_cast<std::streamsize>(broken.size()));
  }
  const Result r = inspect(path);
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("NeuralNetworks.h rules: 1 finding (the device would refuse this "
                               "model):\n  operation 0 CONV_2D: input 7 (stride) is 0; NNAPI "
                               "needs it >= 1 [parameter]\n"));
  EXPECT_THAT(r.err, HasSubstr("stride0.bin: the model breaks NeuralNetworks.h's rules (1 "
                               "finding, listed in the report), so the device would refuse it"));
  const Result j = inspect(path, true);
  EXPECT_EQ(j.status, 1);
  EXPECT_THAT(j.out, HasSubstr(R"("findings":[{"operation":0,"operation_name":"CONV_2D",)"
                               R"("rule":"parameter","message":"operation 0 CONV_2D: input 7 )"
                               R"((stride) is 0; NNAPI needs it >= 1"}])"));
  std::remove(path.c_str());
}

TEST(Inspect, MissingWeightBuffer) {
  const Result r = inspect(data("bad_weights.nnapi.pt"));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err,
              HasSubstr("bad_weights.nnapi.pt: invalid NNAPI model blob in 'mod.ser_model'"));
  EXPECT_THAT(r.err, HasSubstr("refers to weight buffer 1 but only 1 weight buffer(s) are given"));
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one paragraph";
}

TEST(Inspect, UnreadableAndInvalidFiles) {
  Result r = inspect(data("no_such_file.bin"));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("no_such_file.bin: cannot open the file"));
  r = inspect(BLOB_DATA_DIR);
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("is a directory"));
  r = inspect(data("manifest.txt"));  // text, read as a raw blob
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("manifest.txt: invalid NNAPI model blob (read as raw ser_model"));
  EXPECT_THAT(r.err, HasSubstr("unsupported version"));
}

TEST(Inspect, TruncatedArchiveIsRefusedWithoutBacktrace) {
  std::ifstream in(data("conv_relu.nnapi.pt"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GT(bytes.size(), 3000u);
  // Unique per process: two build trees may run this test at once.
  const std::string path =
      ::testing::TempDir() + "nnapi-inspect-" + std::to_string(::getpid()) + "-truncated.nnapi.pt";
  std::ofstream(path, std::ios::binary) << bytes.substr(0, 3000);
  const Result r = inspect(path);
  std::remove(path.c_str());
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("truncated.nnapi.pt: not a valid TorchScript archive: it has no "
                               "zip end-of-central-directory record (is it truncated?)"));
  EXPECT_THAT(r.err, Not(HasSubstr("Exception raised from")));  // c10 backtrace header
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1);
}

}  // namespace
}  // namespace nnapi_convert

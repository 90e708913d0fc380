// --verify when the converted module fails on the NNAPI runtime while its
// NNAPI model is built: a blob the runtime refuses, made on purpose, goes
// through verify_conversion (what `nnapi-convert --verify` runs). The error
// must be one paragraph naming the operation (index and NNAPI type), the
// node it was lowered from with its source line, the call the runtime
// refused and why, instead of the TorchScript interpreter's traceback.
//
// The refusal: the bias of a float CONV_2D declared TENSOR_INT32.
// NeuralNetworks.h (ANEURALNETWORKS_CONV_2D, inputs): "2: A 1-D tensor, of
// shape [depth_out], specifying the bias. For input tensor of type
// ANEURALNETWORKS_TENSOR_FLOAT32 ..., the bias must be of the same type."
// The blob layout (PyTorch's serializer.py, read by nnapi_model_loader.cpp):
// six int32 header words, then four words per operand, its type first.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "nnapi_convert/blob.h"
#include "nnapi_convert/converter.h"
#include "nnapi_convert/verify.h"

namespace fs = std::filesystem;
using namespace nnapi_convert;

namespace {

std::vector<uint8_t> blob_bytes(const std::vector<int32_t>& words) {
  std::vector<uint8_t> bytes(words.size() * 4);
  for (size_t i = 0; i < words.size(); ++i) {
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<uint8_t>(words[i] >> (8 * b));
  }
  return bytes;
}

TEST(RunFailure, RefusedModelNamesOperationAndNode) {
  const char* model = std::getenv("NNAPI_RUN_FAILURE_MODEL");
  ASSERT_TRUE(model) << "set NNAPI_RUN_FAILURE_MODEL to a float conv2d fixture";
  ConvertOptions o;
  o.model_path = model;
  o.inputs.push_back(parse_input_spec(std::getenv("NNAPI_RUN_FAILURE_SPEC")));
  Conversion c = convert(o);

  const Blob blob = parse_blob(blob_bytes(c.ser_model));
  int64_t conv = -1;
  for (size_t k = 0; k < blob.operations.size() && conv < 0; ++k) {
    if (blob.operations[k].opcode == static_cast<int32_t>(nnapi::Op::Conv2d)) conv = int64_t(k);
  }
  ASSERT_GE(conv, 0) << "the fixture has no CONV_2D";
  const uint32_t bias = blob.operations[conv].inputs.at(2);
  ASSERT_EQ(c.ser_model.at(6 + 4 * bias), static_cast<int32_t>(nnapi::OperandType::TensorFloat32));
  c.ser_model[6 + 4 * bias] = static_cast<int32_t>(nnapi::OperandType::TensorInt32);

  fs::path dir = fs::temp_directory_path() / ("nnapi-run-failure-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string module = (dir / "refused.nnapi.pt").string();
  write_nnapi_module(c, o, module, false);

  std::string message;
  try {
    verify_conversion(o, module, VerifyOptions());
  } catch (const ConvertError& e) {
    EXPECT_EQ(e.exit_code(), 1);
    message = e.what();
  }
  fs::remove_all(dir);
  ASSERT_FALSE(message.empty()) << "verify_conversion did not fail";
  std::cout << "[ message  ] " << message << "\n";
  const std::string op = "NNAPI operation #" + std::to_string(conv) + " CONV_2D, lowered from ";
  EXPECT_NE(message.find(op + "aten::_convolution at "), std::string::npos) << message;
  EXPECT_NE(message.find("make_fixtures.py:"), std::string::npos) << message;
  EXPECT_NE(message.find("was refused when the NNAPI model was built: "
                         "ANeuralNetworksModel_addOperation returned ANEURALNETWORKS_BAD_DATA: "
                         "operation " +
                         std::to_string(conv) +
                         " CONV_2D: input 2 is TENSOR_INT32 but input 0 is TENSOR_FLOAT32"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("fault of nnapi-convert"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "not one paragraph: " << message;
  EXPECT_EQ(message.find("TorchScript interpreter"), std::string::npos) << message;
  EXPECT_EQ(message.find("Traceback"), std::string::npos) << message;
}

}  // namespace

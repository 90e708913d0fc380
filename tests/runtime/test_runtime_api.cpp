// Error paths and one hand-computed model for the host NNAPI runtime,
// called through its exported C API.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "nnapi_c_api.h"

namespace {

constexpr int kNoError = 0;
constexpr int kUnexpectedNull = 3;
constexpr int kBadData = 4;
constexpr int kBadState = 6;
constexpr int kOutputInsufficientSize = 8;

constexpr int32_t kInt32 = 1;
constexpr int32_t kTensorFloat32 = 3;
constexpr int32_t kTensorQuant8 = 5;
constexpr int32_t kAdd = 0;
constexpr int32_t kFusedNone = 0;
constexpr int32_t kFusedRelu = 1;

// Owns a model and frees it.
struct ModelHolder {
  ANeuralNetworksModel* model = nullptr;
  ModelHolder() { EXPECT_EQ(ANeuralNetworksModel_create(&model), kNoError); }
  ~ModelHolder() { ANeuralNetworksModel_free(model); }
};

uint32_t dims2[] = {2};
uint32_t dims_unknown[] = {0};

ANeuralNetworksOperandType float_tensor(uint32_t* dims) {
  return ANeuralNetworksOperandType{kTensorFloat32, 1, dims, 0.f, 0};
}
ANeuralNetworksOperandType int_scalar() {
  return ANeuralNetworksOperandType{kInt32, 0, nullptr, 0.f, 0};
}

// Operands 0, 1: float[2] inputs; 2: fuse code; 3: output with `out_dims`.
void build_add(ANeuralNetworksModel* m, int32_t fuse, uint32_t* out_dims) {
  auto in = float_tensor(dims2);
  auto out = float_tensor(out_dims);
  auto scalar = int_scalar();
  ASSERT_EQ(ANeuralNetworksModel_addOperand(m, &in), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_addOperand(m, &in), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_addOperand(m, &scalar), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_addOperand(m, &out), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_setOperandValue(m, 2, &fuse, sizeof(fuse)), kNoError);
  uint32_t ins[] = {0, 1, 2}, outs[] = {3};
  ASSERT_EQ(ANeuralNetworksModel_addOperation(m, kAdd, 3, ins, 1, outs), kNoError);
  uint32_t model_ins[] = {0, 1}, model_outs[] = {3};
  ASSERT_EQ(ANeuralNetworksModel_identifyInputsAndOutputs(m, 2, model_ins, 1, model_outs),
            kNoError);
  ASSERT_EQ(ANeuralNetworksModel_finish(m), kNoError);
}

struct Compiled {
  ANeuralNetworksCompilation* compilation = nullptr;
  ANeuralNetworksExecution* execution = nullptr;
  explicit Compiled(ANeuralNetworksModel* m) {
    EXPECT_EQ(ANeuralNetworksCompilation_create(m, &compilation), kNoError);
    EXPECT_EQ(ANeuralNetworksCompilation_setPreference(compilation, 1), kNoError);
    EXPECT_EQ(ANeuralNetworksCompilation_finish(compilation), kNoError);
    EXPECT_EQ(ANeuralNetworksExecution_create(compilation, &execution), kNoError);
  }
  ~Compiled() {
    ANeuralNetworksExecution_free(execution);
    ANeuralNetworksCompilation_free(compilation);
  }
};

TEST(RuntimeApi, BadOperandIndexInAddOperation) {
  ModelHolder h;
  auto in = float_tensor(dims2);
  auto scalar = int_scalar();
  ASSERT_EQ(ANeuralNetworksModel_addOperand(h.model, &in), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_addOperand(h.model, &scalar), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_addOperand(h.model, &in), kNoError);
  uint32_t ins[] = {0, 7, 1}, outs[] = {2};
  EXPECT_EQ(ANeuralNetworksModel_addOperation(h.model, kAdd, 3, ins, 1, outs), kBadData);
  uint32_t ins_ok[] = {0, 0, 1}, bad_outs[] = {99};
  EXPECT_EQ(ANeuralNetworksModel_addOperation(h.model, kAdd, 3, ins_ok, 1, bad_outs), kBadData);
  EXPECT_EQ(ANeuralNetworksModel_setOperandValue(h.model, -1, &scalar, 4), kBadData);
}

TEST(RuntimeApi, WrongInputCountOrTypes) {
  ModelHolder h;
  auto in = float_tensor(dims2);
  auto scalar = int_scalar();
  ASSERT_EQ(ANeuralNetworksModel_addOperand(h.model, &in), kNoError);      // 0
  ASSERT_EQ(ANeuralNetworksModel_addOperand(h.model, &scalar), kNoError);  // 1
  ASSERT_EQ(ANeuralNetworksModel_addOperand(h.model, &in), kNoError);      // 2
  uint32_t two_ins[] = {0, 0}, outs[] = {2};
  EXPECT_EQ(ANeuralNetworksModel_addOperation(h.model, kAdd, 2, two_ins, 1, outs), kBadData);
  // Fuse code given as a tensor instead of an INT32 scalar.
  uint32_t bad_types[] = {0, 0, 0};
  EXPECT_EQ(ANeuralNetworksModel_addOperation(h.model, kAdd, 3, bad_types, 1, outs), kBadData);
  // Unknown operation code.
  uint32_t ins[] = {0, 0, 1};
  EXPECT_EQ(ANeuralNetworksModel_addOperation(h.model, 12345, 3, ins, 1, outs), kBadData);
  // The right call still works after the rejected ones.
  EXPECT_EQ(ANeuralNetworksModel_addOperation(h.model, kAdd, 3, ins, 1, outs), kNoError);
  // An operation output cannot be written twice.
  EXPECT_EQ(ANeuralNetworksModel_addOperation(h.model, kAdd, 3, ins, 1, outs), kBadData);
}

TEST(RuntimeApi, InvalidOperandTypes) {
  ModelHolder h;
  ANeuralNetworksOperandType bad_code{77, 0, nullptr, 0.f, 0};
  EXPECT_EQ(ANeuralNetworksModel_addOperand(h.model, &bad_code), kBadData);
  ANeuralNetworksOperandType quant_no_scale{kTensorQuant8, 1, dims2, 0.f, 0};
  EXPECT_EQ(ANeuralNetworksModel_addOperand(h.model, &quant_no_scale), kBadData);
  ANeuralNetworksOperandType quant_bad_zp{kTensorQuant8, 1, dims2, 0.5f, 300};
  EXPECT_EQ(ANeuralNetworksModel_addOperand(h.model, &quant_bad_zp), kBadData);
  ANeuralNetworksOperandType scalar_with_dims{kInt32, 1, dims2, 0.f, 0};
  EXPECT_EQ(ANeuralNetworksModel_addOperand(h.model, &scalar_with_dims), kBadData);
}

TEST(RuntimeApi, ValuesOnNonConstantOperands) {
  ModelHolder h;
  build_add(h.model, kFusedNone, dims2);
  float v[2] = {1, 2};
  // Too late: the model is finished.
  EXPECT_EQ(ANeuralNetworksModel_setOperandValue(h.model, 0, v, sizeof(v)), kBadState);

  ModelHolder h2;
  auto in = float_tensor(dims2);
  auto scalar = int_scalar();
  ASSERT_EQ(ANeuralNetworksModel_addOperand(h2.model, &in), kNoError);      // 0
  ASSERT_EQ(ANeuralNetworksModel_addOperand(h2.model, &scalar), kNoError);  // 1
  ASSERT_EQ(ANeuralNetworksModel_addOperand(h2.model, &in), kNoError);      // 2
  // Wrong length for a float[2] value.
  EXPECT_EQ(ANeuralNetworksModel_setOperandValue(h2.model, 0, v, 4), kBadData);
  uint32_t ins[] = {0, 0, 1}, outs[] = {2};
  ASSERT_EQ(ANeuralNetworksModel_addOperation(h2.model, kAdd, 3, ins, 1, outs), kNoError);
  // Operand 2 is written by an operation; operand 0 becomes a model input.
  EXPECT_EQ(ANeuralNetworksModel_setOperandValue(h2.model, 2, v, sizeof(v)), kBadData);
  uint32_t model_ins[] = {0}, model_outs[] = {2};
  ASSERT_EQ(ANeuralNetworksModel_identifyInputsAndOutputs(h2.model, 1, model_ins, 1, model_outs),
            kNoError);
  EXPECT_EQ(ANeuralNetworksModel_setOperandValue(h2.model, 0, v, sizeof(v)), kBadData);
  // Operand 1 (the fuse code) was never given a value: finish must refuse.
  EXPECT_EQ(ANeuralNetworksModel_finish(h2.model), kBadData);
}


// "function: message" of the runtime's last failed call on this thread.
std::string last_error() {
  const char* function = nullptr;
  const char* message = nullptr;
  ANeuralNetworksHost_getLastError(&function, &message, nullptr);
  return std::string(function ? function : "") + ": " + (message ? message : "");
}

// The validator's rules at finish, with its finding as the last error:
// NeuralNetworks.h's ADD gives the broadcast shape of its inputs, [2] here.
TEST(RuntimeApi, FinishRefusesDeclaredDimsOtherThanComputed) {
  ModelHolder h;
  uint32_t dims3[] = {3};
  auto in = float_tensor(dims2);
  auto out = float_tensor(dims3);
  auto scalar = int_scalar();
  ASSERT_EQ(ANeuralNetworksModel_addOperand(h.model, &in), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_addOperand(h.model, &in), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_addOperand(h.model, &scalar), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_addOperand(h.model, &out), kNoError);
  const int32_t fuse = kFusedNone;
  ASSERT_EQ(ANeuralNetworksModel_setOperandValue(h.model, 2, &fuse, sizeof(fuse)), kNoError);
  uint32_t ins[] = {0, 1, 2}, outs[] = {3};
  ASSERT_EQ(ANeuralNetworksModel_addOperation(h.model, kAdd, 3, ins, 1, outs), kNoError);
  uint32_t model_ins[] = {0, 1}, model_outs[] = {3};
  ASSERT_EQ(ANeuralNetworksModel_identifyInputsAndOutputs(h.model, 2, model_ins, 1, model_outs),
            kNoError);
  EXPECT_EQ(ANeuralNetworksModel_finish(h.model), kBadData);
  EXPECT_EQ(last_error(),
               "ANeuralNetworksModel_finish: operation 0 ADD: output 0 is declared with dims [3] "
               "(0 = unknown), but NNAPI's ADD computes [2] from its inputs");
}

// Rules that need no values at addOperation: NeuralNetworks.h's ADD takes
// tensors of rank up to 4.
TEST(RuntimeApi, AddOperationRefusesRank5) {
  ModelHolder h;
  uint32_t dims5[] = {1, 1, 1, 1, 2};
  auto in = float_tensor(dims5);
  in.dimensionCount = 5;
  auto scalar = int_scalar();
  ASSERT_EQ(ANeuralNetworksModel_addOperand(h.model, &in), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_addOperand(h.model, &scalar), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_addOperand(h.model, &in), kNoError);
  uint32_t ins[] = {0, 0, 1}, outs[] = {2};
  EXPECT_EQ(ANeuralNetworksModel_addOperation(h.model, kAdd, 3, ins, 1, outs), kBadData);
  EXPECT_EQ(last_error(),
               "ANeuralNetworksModel_addOperation: operation 0 ADD: input 0 has rank 5; NNAPI's "
               "ADD takes tensors of rank 1 to 4");
}

TEST(RuntimeApi, FinishTwiceIsBadState) {
  ModelHolder h;
  build_add(h.model, kFusedRelu, dims2);
  EXPECT_EQ(ANeuralNetworksModel_finish(h.model), kBadState);
  auto in = float_tensor(dims2);
  EXPECT_EQ(ANeuralNetworksModel_addOperand(h.model, &in), kBadState);

  Compiled c(h.model);
  EXPECT_EQ(ANeuralNetworksCompilation_finish(c.compilation), kBadState);
  EXPECT_EQ(ANeuralNetworksCompilation_setPreference(c.compilation, 0), kBadState);
}

TEST(RuntimeApi, CompilationOfUnfinishedModelIsBadState) {
  ModelHolder h;
  ANeuralNetworksCompilation* c = nullptr;
  EXPECT_EQ(ANeuralNetworksCompilation_create(h.model, &c), kBadState);
  EXPECT_EQ(c, nullptr);
}

TEST(RuntimeApi, NullPointers) {
  EXPECT_EQ(ANeuralNetworksModel_create(nullptr), kUnexpectedNull);
  EXPECT_EQ(ANeuralNetworksModel_finish(nullptr), kUnexpectedNull);
  auto in = float_tensor(dims2);
  EXPECT_EQ(ANeuralNetworksModel_addOperand(nullptr, &in), kUnexpectedNull);
  ModelHolder h;
  EXPECT_EQ(ANeuralNetworksModel_addOperand(h.model, nullptr), kUnexpectedNull);
  ASSERT_EQ(ANeuralNetworksModel_addOperand(h.model, &in), kNoError);
  EXPECT_EQ(ANeuralNetworksModel_setOperandValue(h.model, 0, nullptr, 8), kUnexpectedNull);
  EXPECT_EQ(ANeuralNetworksModel_addOperation(h.model, kAdd, 3, nullptr, 1, nullptr),
            kUnexpectedNull);
  EXPECT_EQ(ANeuralNetworksCompilation_create(h.model, nullptr), kUnexpectedNull);
  EXPECT_EQ(ANeuralNetworksExecution_create(nullptr, nullptr), kUnexpectedNull);
  EXPECT_EQ(ANeuralNetworksExecution_compute(nullptr), kUnexpectedNull);
  EXPECT_EQ(ANeuralNetworksEvent_wait(nullptr), kUnexpectedNull);
  EXPECT_EQ(ANeuralNetworks_getDeviceCount(nullptr), kUnexpectedNull);
  // Freeing null handles is a no-op.
  ANeuralNetworksModel_free(nullptr);
  ANeuralNetworksCompilation_free(nullptr);
  ANeuralNetworksExecution_free(nullptr);
  ANeuralNetworksEvent_free(nullptr);
}

// NNAPI ADD: out = activation(in0 + in1); FUSED_RELU is max(0, x).
TEST(RuntimeApi, AddWithFusedReluByHand) {
  ModelHolder h;
  build_add(h.model, kFusedRelu, dims_unknown);  // output shape computed at run time
  Compiled c(h.model);
  float a[2] = {1.5f, -2.0f}, b[2] = {0.25f, 1.0f};
  float out[2] = {-7.f, -7.f};
  ASSERT_EQ(ANeuralNetworksExecution_setInput(c.execution, 0, nullptr, a, sizeof(a)), kNoError);
  ASSERT_EQ(ANeuralNetworksExecution_setInput(c.execution, 1, nullptr, b, sizeof(b)), kNoError);
  EXPECT_EQ(ANeuralNetworksExecution_setInput(c.execution, 2, nullptr, b, sizeof(b)), kBadData);
  EXPECT_EQ(ANeuralNetworksExecution_setInput(c.execution, 0, nullptr, a, 4), kBadData);
  ASSERT_EQ(ANeuralNetworksExecution_setOutput(c.execution, 0, nullptr, out, sizeof(out)),
            kNoError);
  uint32_t rank = 99;
  EXPECT_EQ(ANeuralNetworksExecution_getOutputOperandRank(c.execution, 0, &rank), kBadState);
  ASSERT_EQ(ANeuralNetworksExecution_compute(c.execution), kNoError);
  EXPECT_FLOAT_EQ(out[0], 1.75f);  // 1.5 + 0.25
  EXPECT_FLOAT_EQ(out[1], 0.0f);   // relu(-2 + 1)
  ASSERT_EQ(ANeuralNetworksExecution_getOutputOperandRank(c.execution, 0, &rank), kNoError);
  EXPECT_EQ(rank, 1u);
  uint32_t dim = 0;
  ASSERT_EQ(ANeuralNetworksExecution_getOutputOperandDimensions(c.execution, 0, &dim), kNoError);
  EXPECT_EQ(dim, 2u);
  // An execution runs once.
  EXPECT_EQ(ANeuralNetworksExecution_compute(c.execution), kBadState);
}

TEST(RuntimeApi, StartComputeAndEventWait) {
  ModelHolder h;
  build_add(h.model, kFusedNone, dims2);
  Compiled c(h.model);
  float a[2] = {1.5f, -2.0f}, b[2] = {0.25f, 1.0f}, out[2] = {0, 0};
  ASSERT_EQ(ANeuralNetworksExecution_setInput(c.execution, 0, nullptr, a, sizeof(a)), kNoError);
  ASSERT_EQ(ANeuralNetworksExecution_setInput(c.execution, 1, nullptr, b, sizeof(b)), kNoError);
  ASSERT_EQ(ANeuralNetworksExecution_setOutput(c.execution, 0, nullptr, out, sizeof(out)),
            kNoError);
  ANeuralNetworksEvent* event = nullptr;
  ASSERT_EQ(ANeuralNetworksExecution_startCompute(c.execution, &event), kNoError);
  ASSERT_NE(event, nullptr);
  EXPECT_EQ(ANeuralNetworksEvent_wait(event), kNoError);
  ANeuralNetworksEvent_free(event);
  EXPECT_FLOAT_EQ(out[0], 1.75f);
  EXPECT_FLOAT_EQ(out[1], -1.0f);  // no activation
}

TEST(RuntimeApi, OutputBufferTooSmall) {
  ModelHolder h;
  build_add(h.model, kFusedNone, dims_unknown);
  Compiled c(h.model);
  float a[2] = {1, 2}, b[2] = {3, 4}, out[1] = {0};
  ASSERT_EQ(ANeuralNetworksExecution_setInput(c.execution, 0, nullptr, a, sizeof(a)), kNoError);
  ASSERT_EQ(ANeuralNetworksExecution_setInput(c.execution, 1, nullptr, b, sizeof(b)), kNoError);
  ASSERT_EQ(ANeuralNetworksExecution_setOutput(c.execution, 0, nullptr, out, sizeof(out)),
            kNoError);
  EXPECT_EQ(ANeuralNetworksExecution_compute(c.execution), kOutputInsufficientSize);
  uint32_t dim = 0;
  ASSERT_EQ(ANeuralNetworksExecution_getOutputOperandDimensions(c.execution, 0, &dim), kNoError);
  EXPECT_EQ(dim, 2u);
}

TEST(RuntimeApi, MissingInputIsBadData) {
  ModelHolder h;
  build_add(h.model, kFusedNone, dims2);
  Compiled c(h.model);
  float a[2] = {1, 2}, out[2];
  ASSERT_EQ(ANeuralNetworksExecution_setInput(c.execution, 0, nullptr, a, sizeof(a)), kNoError);
  ASSERT_EQ(ANeuralNetworksExecution_setOutput(c.execution, 0, nullptr, out, sizeof(out)),
            kNoError);
  EXPECT_EQ(ANeuralNetworksExecution_compute(c.execution), kBadData);
}

// Quantized ADD: real = scale * (q - zero_point); requantized with
// round-to-nearest into the output's parameters and clamped to [0, 255].
TEST(RuntimeApi, QuantizedAddByHand) {
  ModelHolder h;
  ANeuralNetworksModel* m = h.model;
  uint32_t d3[] = {3};
  ANeuralNetworksOperandType qa{kTensorQuant8, 1, d3, 0.5f, 10};
  ANeuralNetworksOperandType qb{kTensorQuant8, 1, d3, 0.25f, 0};
  ANeuralNetworksOperandType qo{kTensorQuant8, 1, d3, 1.0f, 100};
  auto scalar = int_scalar();
  ASSERT_EQ(ANeuralNetworksModel_addOperand(m, &qa), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_addOperand(m, &qb), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_addOperand(m, &scalar), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_addOperand(m, &qo), kNoError);
  int32_t fuse = kFusedRelu;
  ASSERT_EQ(ANeuralNetworksModel_setOperandValue(m, 2, &fuse, sizeof(fuse)), kNoError);
  // in1 is a constant.
  uint8_t b[3] = {2, 4, 255};
  ASSERT_EQ(ANeuralNetworksModel_setOperandValue(m, 1, b, sizeof(b)), kNoError);
  uint32_t ins[] = {0, 1, 2}, outs[] = {3}, model_ins[] = {0};
  ASSERT_EQ(ANeuralNetworksModel_addOperation(m, kAdd, 3, ins, 1, outs), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_identifyInputsAndOutputs(m, 1, model_ins, 1, outs), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_finish(m), kNoError);
  Compiled c(m);
  uint8_t a[3] = {13, 0, 255}, out[3] = {0, 0, 0};
  ASSERT_EQ(ANeuralNetworksExecution_setInput(c.execution, 0, nullptr, a, sizeof(a)), kNoError);
  ASSERT_EQ(ANeuralNetworksExecution_setOutput(c.execution, 0, nullptr, out, sizeof(out)),
            kNoError);
  ASSERT_EQ(ANeuralNetworksExecution_compute(c.execution), kNoError);
  // 0.5*(13-10) + 0.25*2 = 2.0 -> 102; 0.5*(0-10) + 0.25*4 = -4 -> relu -> 100;
  // 0.5*245 + 0.25*255 = 186.25 -> 286 -> saturates at 255.
  EXPECT_EQ(out[0], 102);
  EXPECT_EQ(out[1], 100);
  EXPECT_EQ(out[2], 255);
}

// A constant operand read from an fd-backed ANeuralNetworksMemory, and a
// model input whose length is only given by setInput's operand type.
TEST(RuntimeApi, ConstantFromMemoryAndInputDimsFromType) {
  int fd = memfd_create("nnrt_test", 0);
  ASSERT_GE(fd, 0);
  float constant[2] = {0.f, 10.f};  // the operand uses the second float only
  ASSERT_EQ(write(fd, constant, sizeof(constant)), static_cast<ssize_t>(sizeof(constant)));
  ANeuralNetworksMemory* memory = nullptr;
  ASSERT_EQ(ANeuralNetworksMemory_createFromFd(sizeof(constant), PROT_READ, fd, 0, &memory),
            kNoError);

  ModelHolder h;
  ANeuralNetworksModel* m = h.model;
  uint32_t one[] = {1};
  auto in = float_tensor(dims_unknown);
  auto c = float_tensor(one);
  auto out = float_tensor(dims_unknown);
  auto scalar = int_scalar();
  ASSERT_EQ(ANeuralNetworksModel_addOperand(m, &in), kNoError);      // 0
  ASSERT_EQ(ANeuralNetworksModel_addOperand(m, &c), kNoError);       // 1
  ASSERT_EQ(ANeuralNetworksModel_addOperand(m, &scalar), kNoError);  // 2
  ASSERT_EQ(ANeuralNetworksModel_addOperand(m, &out), kNoError);     // 3
  EXPECT_EQ(ANeuralNetworksModel_setOperandValueFromMemory(m, 1, memory, 8, 4), kBadData);
  ASSERT_EQ(ANeuralNetworksModel_setOperandValueFromMemory(m, 1, memory, 4, 4), kNoError);
  int32_t fuse = kFusedNone;
  ASSERT_EQ(ANeuralNetworksModel_setOperandValue(m, 2, &fuse, sizeof(fuse)), kNoError);
  uint32_t ins[] = {0, 1, 2}, outs[] = {3}, model_ins[] = {0};
  ASSERT_EQ(ANeuralNetworksModel_addOperation(m, kAdd, 3, ins, 1, outs), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_identifyInputsAndOutputs(m, 1, model_ins, 1, outs), kNoError);
  ASSERT_EQ(ANeuralNetworksModel_finish(m), kNoError);
  Compiled compiled(m);
  float a[3] = {1.f, 2.f, 3.f}, result[3] = {0, 0, 0};
  // Without a type the input's length is unknown.
  EXPECT_EQ(ANeuralNetworksExecution_setInput(compiled.execution, 0, nullptr, a, sizeof(a)),
            kBadData);
  uint32_t three[] = {3};
  auto typed = float_tensor(three);
  ASSERT_EQ(ANeuralNetworksExecution_setInput(compiled.execution, 0, &typed, a, sizeof(a)),
            kNoError);
  ASSERT_EQ(
      ANeuralNetworksExecution_setOutput(compiled.execution, 0, nullptr, result, sizeof(result)),
      kNoError);
  ASSERT_EQ(ANeuralNetworksExecution_compute(compiled.execution), kNoError);
  EXPECT_FLOAT_EQ(result[0], 11.f);
  EXPECT_FLOAT_EQ(result[1], 12.f);
  EXPECT_FLOAT_EQ(result[2], 13.f);
  ANeuralNetworksMemory_free(memory);  // the model keeps its own reference
  close(fd);
}

TEST(RuntimeApi, DeviceQueries) {
  uint32_t n = 0;
  ASSERT_EQ(ANeuralNetworks_getDeviceCount(&n), kNoError);
  ASSERT_EQ(n, 1u);
  ANeuralNetworksDevice* dev = nullptr;
  ASSERT_EQ(ANeuralNetworks_getDevice(0, &dev), kNoError);
  EXPECT_EQ(ANeuralNetworks_getDevice(1, &dev), kBadData);
  const char* name = nullptr;
  ASSERT_EQ(ANeuralNetworksDevice_getName(dev, &name), kNoError);
  EXPECT_NE(name, nullptr);
  int64_t level = 0;
  ASSERT_EQ(ANeuralNetworksDevice_getFeatureLevel(dev, &level), kNoError);
  EXPECT_GE(level, 29);
}

}  // namespace

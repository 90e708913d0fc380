// NNAPI operand, operation and fused-activation codes, as numbered by
// Android's NeuralNetworks.h. Shared by the serializer, the
// blob reader and the host runtime; nothing here knows about TorchScript.
#pragma once

#include <cstdint>
#include <string>

namespace nnapi {

// Operand types (OperandCode in NeuralNetworks.h).
enum class OperandType : int32_t {
  Float32 = 0,
  Int32 = 1,
  UInt32 = 2,
  TensorFloat32 = 3,
  TensorInt32 = 4,
  TensorQuant8Asymm = 5,
  Bool = 6,
  TensorQuant16Symm = 7,
  TensorFloat16 = 8,
  TensorBool8 = 9,
  Float16 = 10,
  TensorQuant8SymmPerChannel = 11,
  TensorQuant16Asymm = 12,
  TensorQuant8Symm = 13,
};

// Operation types (OperationCode in NeuralNetworks.h); the feature level of each
// is operation_feature_level() below.
enum class Op : int32_t {
  Add = 0,
  AveragePool2d = 1,
  Concatenation = 2,
  Conv2d = 3,
  DepthwiseConv2d = 4,
  DepthToSpace = 5,
  Dequantize = 6,
  EmbeddingLookup = 7,
  Floor = 8,
  FullyConnected = 9,
  HashtableLookup = 10,
  L2Normalization = 11,
  L2Pool2d = 12,
  LocalResponseNormalization = 13,
  Logistic = 14,
  LshProjection = 15,
  Lstm = 16,
  MaxPool2d = 17,
  Mul = 18,
  Relu = 19,
  Relu1 = 20,
  Relu6 = 21,
  Reshape = 22,
  ResizeBilinear = 23,
  Rnn = 24,
  Softmax = 25,
  SpaceToDepth = 26,
  Svdf = 27,
  Tanh = 28,
  BatchToSpaceNd = 29,
  Div = 30,
  Mean = 31,
  Pad = 32,
  SpaceToBatchNd = 33,
  Squeeze = 34,
  StridedSlice = 35,
  Sub = 36,
  Transpose = 37,
  Abs = 38,
  ArgMax = 39,
  ArgMin = 40,
  AxisAlignedBboxTransform = 41,
  BidirectionalSequenceLstm = 42,
  BidirectionalSequenceRnn = 43,
  BoxWithNmsLimit = 44,
  Cast = 45,
  ChannelShuffle = 46,
  DetectionPostprocessing = 47,
  Equal = 48,
  Exp = 49,
  ExpandDims = 50,
  Gather = 51,
  GenerateProposals = 52,
  Greater = 53,
  GreaterEqual = 54,
  GroupedConv2d = 55,
  HeatmapMaxKeypoint = 56,
  InstanceNormalization = 57,
  Less = 58,
  LessEqual = 59,
  Log = 60,
  LogicalAnd = 61,
  LogicalNot = 62,
  LogicalOr = 63,
  LogSoftmax = 64,
  Maximum = 65,
  Minimum = 66,
  Neg = 67,
  NotEqual = 68,
  PadV2 = 69,
  Pow = 70,
  Prelu = 71,
  Quantize = 72,
  Quantized16BitLstm = 73,
  RandomMultinomial = 74,
  ReduceAll = 75,
  ReduceAny = 76,
  ReduceMax = 77,
  ReduceMin = 78,
  ReduceProd = 79,
  ReduceSum = 80,
  RoiAlign = 81,
  RoiPooling = 82,
  Rsqrt = 83,
  Select = 84,
  Sin = 85,
  Slice = 86,
  Split = 87,
  Sqrt = 88,
  Tile = 89,
  TopKV2 = 90,
  TransposeConv2d = 91,
  UnidirectionalSequenceLstm = 92,
  UnidirectionalSequenceRnn = 93,
  ResizeNearestNeighbor = 94,
  // feature level 4 (API level 30)
  QuantizedLstm = 95,
  If = 96,
  While = 97,
  Elu = 98,
  HardSwish = 99,
  Fill = 100,
  Rank = 101,
  // feature level 6
  BatchMatmul = 102,
};

// Fused activation codes (FuseCode).
enum class Fuse : int32_t { None = 0, Relu = 1, Relu1 = 2, Relu6 = 3 };

// Preference codes for ANeuralNetworksCompilation_setPreference.
enum class Preference : int32_t { LowPower = 0, FastSingleAnswer = 1, SustainedSpeed = 2 };

// Where an operand's constant value lives in PyTorch's serialized blob
// (see aten/src/ATen/nnapi/nnapi_model_loader.cpp).
enum class ValueSource : int32_t { Immediate = 0, NumberedBuffer = 2, NumberedMemory = 3 };

// Result codes (ResultCode).
enum class Result : int {
  NoError = 0,
  OutOfMemory = 1,
  Incomplete = 2,
  UnexpectedNull = 3,
  BadData = 4,
  OpFailed = 5,
  BadState = 6,
  Unmappable = 7,
  OutputInsufficientSize = 8,
  UnavailableDevice = 9,
};

// Human-readable names, for messages and `inspect`.
const char* operand_type_name(OperandType t);
const char* op_name(Op op);
// Returns nullptr for a code outside the table.
const char* op_name_or_null(int32_t code);
const char* operand_type_name_or_null(int32_t code);
// "ANEURALNETWORKS_BAD_DATA", or "result code N" for a code outside the table.
std::string result_name(int code);

// The value of an IEEE 754 half-precision number (FLOAT16 operands).
float half_to_float(uint16_t h);

// Bytes per element of a tensor operand type; 0 for scalar or unknown types.
int element_size(OperandType t);
bool is_tensor_type(OperandType t);
// EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL: a TENSOR_BOOL8 result.
bool is_comparison(Op op);

// NNAPI feature levels. Levels 1 to 5 arrived with Android API levels 27 to
// 31; later levels come with updates of the NNAPI module, first shipped with
// Android 13, 14 and 15 (API levels 33 to 35), which is what they map to here.
constexpr int kMinFeatureLevel = 1;
constexpr int kMaxFeatureLevel = 8;
// PyTorch's NNAPI binding calls ANeuralNetworksExecution_getOutputOperandDimensions,
// which Android 10 (API level 29) introduced: no lower target can load a model.
constexpr int kMinAndroidApi = 29;
constexpr int kMaxAndroidApi = 35;
int android_api_of_feature_level(int level);
// The highest feature level an Android API level has (kMinAndroidApi..kMaxAndroidApi).
int feature_level_of_android_api(int api);

// The feature level an operation needs, from its code and its input count:
// the operation's own level, raised to 4 for RESIZE_BILINEAR and
// RESIZE_NEAREST_NEIGHBOR given the align_corners / half_pixel_centers flags.
// (Optional inputs that came with level 3, such as the NCHW layout flag, are
// not told apart: no model below level 3 can be loaded by PyTorch.)
int operation_feature_level(int32_t op_code, int n_inputs);
// The feature level an operand type needs.
int operand_type_feature_level(int32_t type_code);

}  // namespace nnapi

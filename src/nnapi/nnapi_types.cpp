#include "nnapi_convert/nnapi_types.h"

#include <cmath>
#include <limits>

namespace nnapi {

namespace {

const char* const kOpNames[] = {
    "ADD",                           // 0
    "AVERAGE_POOL_2D",               // 1
    "CONCATENATION",                 // 2
    "CONV_2D",                       // 3
    "DEPTHWISE_CONV_2D",             // 4
    "DEPTH_TO_SPACE",                // 5
    "DEQUANTIZE",                    // 6
    "EMBEDDING_LOOKUP",              // 7
    "FLOOR",                         // 8
    "FULLY_CONNECTED",               // 9
    "HASHTABLE_LOOKUP",              // 10
    "L2_NORMALIZATION",              // 11
    "L2_POOL_2D",                    // 12
    "LOCAL_RESPONSE_NORMALIZATION",  // 13
    "LOGISTIC",                      // 14
    "LSH_PROJECTION",                // 15
    "LSTM",                          // 16
    "MAX_POOL_2D",                   // 17
    "MUL",                           // 18
    "RELU",                          // 19
    "RELU1",                         // 20
    "RELU6",                         // 21
    "RESHAPE",                       // 22
    "RESIZE_BILINEAR",               // 23
    "RNN",                           // 24
    "SOFTMAX",                       // 25
    "SPACE_TO_DEPTH",                // 26
    "SVDF",                          // 27
    "TANH",                          // 28
    "BATCH_TO_SPACE_ND",             // 29
    "DIV",                           // 30
    "MEAN",                          // 31
    "PAD",                           // 32
    "SPACE_TO_BATCH_ND",             // 33
    "SQUEEZE",                       // 34
    "STRIDED_SLICE",                 // 35
    "SUB",                           // 36
    "TRANSPOSE",                     // 37
    "ABS",                           // 38
    "ARGMAX",                        // 39
    "ARGMIN",                        // 40
    "AXIS_ALIGNED_BBOX_TRANSFORM",   // 41
    "BIDIRECTIONAL_SEQUENCE_LSTM",   // 42
    "BIDIRECTIONAL_SEQUENCE_RNN",    // 43
    "BOX_WITH_NMS_LIMIT",            // 44
    "CAST",                          // 45
    "CHANNEL_SHUFFLE",               // 46
    "DETECTION_POSTPROCESSING",      // 47
    "EQUAL",                         // 48
    "EXP",                           // 49
    "EXPAND_DIMS",                   // 50
    "GATHER",                        // 51
    "GENERATE_PROPOSALS",            // 52
    "GREATER",                       // 53
    "GREATER_EQUAL",                 // 54
    "GROUPED_CONV_2D",               // 55
    "HEATMAP_MAX_KEYPOINT",          // 56
    "INSTANCE_NORMALIZATION",        // 57
    "LESS",                          // 58
    "LESS_EQUAL",                    // 59
    "LOG",                           // 60
    "LOGICAL_AND",                   // 61
    "LOGICAL_NOT",                   // 62
    "LOGICAL_OR",                    // 63
    "LOG_SOFTMAX",                   // 64
    "MAXIMUM",                       // 65
    "MINIMUM",                       // 66
    "NEG",                           // 67
    "NOT_EQUAL",                     // 68
    "PAD_V2",                        // 69
    "POW",                           // 70
    "PRELU",                         // 71
    "QUANTIZE",                      // 72
    "QUANTIZED_16BIT_LSTM",          // 73
    "RANDOM_MULTINOMIAL",            // 74
    "REDUCE_ALL",                    // 75
    "REDUCE_ANY",                    // 76
    "REDUCE_MAX",                    // 77
    "REDUCE_MIN",                    // 78
    "REDUCE_PROD",                   // 79
    "REDUCE_SUM",                    // 80
    "ROI_ALIGN",                     // 81
    "ROI_POOLING",                   // 82
    "RSQRT",                         // 83
    "SELECT",                        // 84
    "SIN",                           // 85
    "SLICE",                         // 86
    "SPLIT",                         // 87
    "SQRT",                          // 88
    "TILE",                          // 89
    "TOPK_V2",                       // 90
    "TRANSPOSE_CONV_2D",             // 91
    "UNIDIRECTIONAL_SEQUENCE_LSTM",  // 92
    "UNIDIRECTIONAL_SEQUENCE_RNN",   // 93
    "RESIZE_NEAREST_NEIGHBOR",       // 94
    "QUANTIZED_LSTM",                // 95
    "IF",                            // 96
    "WHILE",                         // 97
    "ELU",                           // 98
    "HARD_SWISH",                    // 99
    "FILL",                          // 100
    "RANK",                          // 101
    "BATCH_MATMUL",                  // 102
};
const char* const kOperandTypeNames[] = {
    "FLOAT32",                         // 0
    "INT32",                           // 1
    "UINT32",                          // 2
    "TENSOR_FLOAT32",                  // 3
    "TENSOR_INT32",                    // 4
    "TENSOR_QUANT8_ASYMM",             // 5
    "BOOL",                            // 6
    "TENSOR_QUANT16_SYMM",             // 7
    "TENSOR_FLOAT16",                  // 8
    "TENSOR_BOOL8",                    // 9
    "FLOAT16",                         // 10
    "TENSOR_QUANT8_SYMM_PER_CHANNEL",  // 11
    "TENSOR_QUANT16_ASYMM",            // 12
    "TENSOR_QUANT8_SYMM",              // 13
};

// NeuralNetworks.h's ResultCode names, by value.
const char* const kResultNames[] = {
    "ANEURALNETWORKS_NO_ERROR",                  // 0
    "ANEURALNETWORKS_OUT_OF_MEMORY",             // 1
    "ANEURALNETWORKS_INCOMPLETE",                // 2
    "ANEURALNETWORKS_UNEXPECTED_NULL",           // 3
    "ANEURALNETWORKS_BAD_DATA",                  // 4
    "ANEURALNETWORKS_OP_FAILED",                 // 5
    "ANEURALNETWORKS_BAD_STATE",                 // 6
    "ANEURALNETWORKS_UNMAPPABLE",                // 7
    "ANEURALNETWORKS_OUTPUT_INSUFFICIENT_SIZE",  // 8
    "ANEURALNETWORKS_UNAVAILABLE_DEVICE",        // 9
};

template <typename T, int N>
constexpr int count(T (&)[N]) {
  return N;
}

}  // namespace

std::string result_name(int code) {
  return code >= 0 && code < count(kResultNames) ? kResultNames[code]
                                                 : "result code " + std::to_string(code);
}

const char* op_name_or_null(int32_t code) {
  return code >= 0 && code < count(kOpNames) ? kOpNames[code] : nullptr;
}

const char* operand_type_name_or_null(int32_t code) {
  return code >= 0 && code < count(kOperandTypeNames) ? kOperandTypeNames[code] : nullptr;
}

const char* op_name(Op op) {
  const char* name = op_name_or_null(static_cast<int32_t>(op));
  return name ? name : "UNKNOWN_OPERATION";
}

const char* operand_type_name(OperandType t) {
  const char* name = operand_type_name_or_null(static_cast<int32_t>(t));
  return name ? name : "UNKNOWN_OPERAND_TYPE";
}

float half_to_float(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  float v;
  if (exponent == 0) {
    v = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    v = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    v = std::ldexp(static_cast<float>(mantissa + 1024), exponent - 25);
  }
  return (h & 0x8000) ? -v : v;
}

int element_size(OperandType t) {
  switch (t) {
    case OperandType::TensorFloat32:
    case OperandType::TensorInt32:
      return 4;
    case OperandType::TensorQuant16Symm:
    case OperandType::TensorQuant16Asymm:
    case OperandType::TensorFloat16:
      return 2;
    case OperandType::TensorQuant8Asymm:
    case OperandType::TensorQuant8SymmPerChannel:
    case OperandType::TensorQuant8Symm:
    case OperandType::TensorBool8:
      return 1;
    default:
      return 0;
  }
}

bool is_tensor_type(OperandType t) { return element_size(t) != 0; }

bool is_comparison(Op op) {
  return op == Op::Equal || op == Op::NotEqual || op == Op::Greater || op == Op::GreaterEqual ||
         op == Op::Less || op == Op::LessEqual;
}

int android_api_of_feature_level(int level) {
  return level <= 5 ? 26 + level : 27 + level;  // 6, 7, 8 -> 33, 34, 35
}

int feature_level_of_android_api(int api) {
  int level = kMinFeatureLevel;
  while (level < kMaxFeatureLevel && android_api_of_feature_level(level + 1) <= api) ++level;
  return level;
}

int operation_feature_level(int32_t op_code, int n_inputs) {
  const auto code = static_cast<Op>(op_code);
  if ((code == Op::ResizeBilinear || code == Op::ResizeNearestNeighbor) && n_inputs > 4) return 4;
  if (op_code <= static_cast<int32_t>(Op::Tanh)) return 1;
  if (op_code <= static_cast<int32_t>(Op::Transpose)) return 2;
  if (op_code <= static_cast<int32_t>(Op::ResizeNearestNeighbor)) return 3;
  if (op_code <= static_cast<int32_t>(Op::Rank)) return 4;
  if (op_code <= static_cast<int32_t>(Op::BatchMatmul)) return 6;
  return 7;  // PACK, MIRROR_PAD, REVERSE and anything newer
}

int operand_type_feature_level(int32_t type_code) {
  if (type_code <= static_cast<int32_t>(OperandType::TensorQuant8Asymm)) return 1;
  if (type_code <= 13) return 3;  // BOOL, QUANT16, FLOAT16, per-channel, QUANT8_SYMM
  return 4;                       // TENSOR_QUANT8_ASYMM_SIGNED, MODEL
}

}  // namespace nnapi

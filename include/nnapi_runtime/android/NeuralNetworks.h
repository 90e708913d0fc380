/* The NNAPI C API as nnapi-convert's host runtime (libneuralnetworks.so on
 * Linux) implements it: the handle types, the operand type record, the
 * constants (operand types, operation codes up to feature level 3 and the
 * later ones this runtime runs, fused activations, padding schemes,
 * preferences, result codes) and every exported function. Written for this
 * project from NNAPI's documented names and values, so that C and C++ code
 * written against Android's <android/NeuralNetworks.h> compiles and runs
 * unchanged on Linux:
 *
 *   cc app.c $(pkg-config --cflags --libs nnapi-convert-runtime)
 *
 * Functions of Android's API that this runtime does not export (hardware
 * buffers, bursts, timing, caching, control flow) are not declared. */
#ifndef NNAPI_CONVERT_RUNTIME_NEURAL_NETWORKS_H
#define NNAPI_CONVERT_RUNTIME_NEURAL_NETWORKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define NNRT_API __attribute__((visibility("default")))
#else
#define NNRT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Operand types (OperandCode). */
enum {
  ANEURALNETWORKS_FLOAT32 = 0,
  ANEURALNETWORKS_INT32 = 1,
  ANEURALNETWORKS_UINT32 = 2,
  ANEURALNETWORKS_TENSOR_FLOAT32 = 3,
  ANEURALNETWORKS_TENSOR_INT32 = 4,
  ANEURALNETWORKS_TENSOR_QUANT8_ASYMM = 5,
  ANEURALNETWORKS_BOOL = 6,
  ANEURALNETWORKS_TENSOR_QUANT16_SYMM = 7,
  ANEURALNETWORKS_TENSOR_FLOAT16 = 8,
  ANEURALNETWORKS_TENSOR_BOOL8 = 9,
  ANEURALNETWORKS_FLOAT16 = 10,
  ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL = 11,
  ANEURALNETWORKS_TENSOR_QUANT16_ASYMM = 12,
  ANEURALNETWORKS_TENSOR_QUANT8_SYMM = 13
};

/* Operation codes (OperationCode): feature levels 1 to 3, then the later
 * ones this runtime implements. */
enum {
  ANEURALNETWORKS_ADD = 0,
  ANEURALNETWORKS_AVERAGE_POOL_2D = 1,
  ANEURALNETWORKS_CONCATENATION = 2,
  ANEURALNETWORKS_CONV_2D = 3,
  ANEURALNETWORKS_DEPTHWISE_CONV_2D = 4,
  ANEURALNETWORKS_DEPTH_TO_SPACE = 5,
  ANEURALNETWORKS_DEQUANTIZE = 6,
  ANEURALNETWORKS_EMBEDDING_LOOKUP = 7,
  ANEURALNETWORKS_FLOOR = 8,
  ANEURALNETWORKS_FULLY_CONNECTED = 9,
  ANEURALNETWORKS_HASHTABLE_LOOKUP = 10,
  ANEURALNETWORKS_L2_NORMALIZATION = 11,
  ANEURALNETWORKS_L2_POOL_2D = 12,
  ANEURALNETWORKS_LOCAL_RESPONSE_NORMALIZATION = 13,
  ANEURALNETWORKS_LOGISTIC = 14,
  ANEURALNETWORKS_LSH_PROJECTION = 15,
  ANEURALNETWORKS_LSTM = 16,
  ANEURALNETWORKS_MAX_POOL_2D = 17,
  ANEURALNETWORKS_MUL = 18,
  ANEURALNETWORKS_RELU = 19,
  ANEURALNETWORKS_RELU1 = 20,
  ANEURALNETWORKS_RELU6 = 21,
  ANEURALNETWORKS_RESHAPE = 22,
  ANEURALNETWORKS_RESIZE_BILINEAR = 23,
  ANEURALNETWORKS_RNN = 24,
  ANEURALNETWORKS_SOFTMAX = 25,
  ANEURALNETWORKS_SPACE_TO_DEPTH = 26,
  ANEURALNETWORKS_SVDF = 27,
  ANEURALNETWORKS_TANH = 28,
  ANEURALNETWORKS_BATCH_TO_SPACE_ND = 29,
  ANEURALNETWORKS_DIV = 30,
  ANEURALNETWORKS_MEAN = 31,
  ANEURALNETWORKS_PAD = 32,
  ANEURALNETWORKS_SPACE_TO_BATCH_ND = 33,
  ANEURALNETWORKS_SQUEEZE = 34,
  ANEURALNETWORKS_STRIDED_SLICE = 35,
  ANEURALNETWORKS_SUB = 36,
  ANEURALNETWORKS_TRANSPOSE = 37,
  ANEURALNETWORKS_ABS = 38,
  ANEURALNETWORKS_ARGMAX = 39,
  ANEURALNETWORKS_ARGMIN = 40,
  ANEURALNETWORKS_AXIS_ALIGNED_BBOX_TRANSFORM = 41,
  ANEURALNETWORKS_BIDIRECTIONAL_SEQUENCE_LSTM = 42,
  ANEURALNETWORKS_BIDIRECTIONAL_SEQUENCE_RNN = 43,
  ANEURALNETWORKS_BOX_WITH_NMS_LIMIT = 44,
  ANEURALNETWORKS_CAST = 45,
  ANEURALNETWORKS_CHANNEL_SHUFFLE = 46,
  ANEURALNETWORKS_DETECTION_POSTPROCESSING = 47,
  ANEURALNETWORKS_EQUAL = 48,
  ANEURALNETWORKS_EXP = 49,
  ANEURALNETWORKS_EXPAND_DIMS = 50,
  ANEURALNETWORKS_GATHER = 51,
  ANEURALNETWORKS_GENERATE_PROPOSALS = 52,
  ANEURALNETWORKS_GREATER = 53,
  ANEURALNETWORKS_GREATER_EQUAL = 54,
  ANEURALNETWORKS_GROUPED_CONV_2D = 55,
  ANEURALNETWORKS_HEATMAP_MAX_KEYPOINT = 56,
  ANEURALNETWORKS_INSTANCE_NORMALIZATION = 57,
  ANEURALNETWORKS_LESS = 58,
  ANEURALNETWORKS_LESS_EQUAL = 59,
  ANEURALNETWORKS_LOG = 60,
  ANEURALNETWORKS_LOGICAL_AND = 61,
  ANEURALNETWORKS_LOGICAL_NOT = 62,
  ANEURALNETWORKS_LOGICAL_OR = 63,
  ANEURALNETWORKS_LOG_SOFTMAX = 64,
  ANEURALNETWORKS_MAXIMUM = 65,
  ANEURALNETWORKS_MINIMUM = 66,
  ANEURALNETWORKS_NEG = 67,
  ANEURALNETWORKS_NOT_EQUAL = 68,
  ANEURALNETWORKS_PAD_V2 = 69,
  ANEURALNETWORKS_POW = 70,
  ANEURALNETWORKS_PRELU = 71,
  ANEURALNETWORKS_QUANTIZE = 72,
  ANEURALNETWORKS_QUANTIZED_16BIT_LSTM = 73,
  ANEURALNETWORKS_RANDOM_MULTINOMIAL = 74,
  ANEURALNETWORKS_REDUCE_ALL = 75,
  ANEURALNETWORKS_REDUCE_ANY = 76,
  ANEURALNETWORKS_REDUCE_MAX = 77,
  ANEURALNETWORKS_REDUCE_MIN = 78,
  ANEURALNETWORKS_REDUCE_PROD = 79,
  ANEURALNETWORKS_REDUCE_SUM = 80,
  ANEURALNETWORKS_ROI_ALIGN = 81,
  ANEURALNETWORKS_ROI_POOLING = 82,
  ANEURALNETWORKS_RSQRT = 83,
  ANEURALNETWORKS_SELECT = 84,
  ANEURALNETWORKS_SIN = 85,
  ANEURALNETWORKS_SLICE = 86,
  ANEURALNETWORKS_SPLIT = 87,
  ANEURALNETWORKS_SQRT = 88,
  ANEURALNETWORKS_TILE = 89,
  ANEURALNETWORKS_TOPK_V2 = 90,
  ANEURALNETWORKS_TRANSPOSE_CONV_2D = 91,
  ANEURALNETWORKS_UNIDIRECTIONAL_SEQUENCE_LSTM = 92,
  ANEURALNETWORKS_UNIDIRECTIONAL_SEQUENCE_RNN = 93,
  ANEURALNETWORKS_RESIZE_NEAREST_NEIGHBOR = 94,
  ANEURALNETWORKS_HARD_SWISH = 99,
  ANEURALNETWORKS_BATCH_MATMUL = 102
};

/* Fused activations (FuseCode). */
enum {
  ANEURALNETWORKS_FUSED_NONE = 0,
  ANEURALNETWORKS_FUSED_RELU = 1,
  ANEURALNETWORKS_FUSED_RELU1 = 2,
  ANEURALNETWORKS_FUSED_RELU6 = 3
};

/* Implicit padding schemes (PaddingCode). */
enum { ANEURALNETWORKS_PADDING_SAME = 1, ANEURALNETWORKS_PADDING_VALID = 2 };

/* Compilation preferences (PreferenceCode); accepted and ignored here. */
enum {
  ANEURALNETWORKS_PREFER_LOW_POWER = 0,
  ANEURALNETWORKS_PREFER_FAST_SINGLE_ANSWER = 1,
  ANEURALNETWORKS_PREFER_SUSTAINED_SPEED = 2
};

/* Device types (DeviceTypeCode); this runtime's one device is a CPU. */
enum {
  ANEURALNETWORKS_DEVICE_UNKNOWN = 0,
  ANEURALNETWORKS_DEVICE_OTHER = 1,
  ANEURALNETWORKS_DEVICE_CPU = 2,
  ANEURALNETWORKS_DEVICE_GPU = 3,
  ANEURALNETWORKS_DEVICE_ACCELERATOR = 4
};

/* Result codes (ResultCode). */
enum {
  ANEURALNETWORKS_NO_ERROR = 0,
  ANEURALNETWORKS_OUT_OF_MEMORY = 1,
  ANEURALNETWORKS_INCOMPLETE = 2,
  ANEURALNETWORKS_UNEXPECTED_NULL = 3,
  ANEURALNETWORKS_BAD_DATA = 4,
  ANEURALNETWORKS_OP_FAILED = 5,
  ANEURALNETWORKS_BAD_STATE = 6,
  ANEURALNETWORKS_UNMAPPABLE = 7,
  ANEURALNETWORKS_OUTPUT_INSUFFICIENT_SIZE = 8,
  ANEURALNETWORKS_UNAVAILABLE_DEVICE = 9
};

/* Largest operand value setOperandValue copies rather than references (as on
 * Android; this runtime copies every buffer value). */
enum { ANEURALNETWORKS_MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES = 128 };

typedef struct ANeuralNetworksModel ANeuralNetworksModel;
typedef struct ANeuralNetworksCompilation ANeuralNetworksCompilation;
typedef struct ANeuralNetworksExecution ANeuralNetworksExecution;
typedef struct ANeuralNetworksEvent ANeuralNetworksEvent;
typedef struct ANeuralNetworksMemory ANeuralNetworksMemory;
typedef struct ANeuralNetworksDevice ANeuralNetworksDevice;

/* An operand's type: `type` is an operand type above; `dimensions` (NNAPI
 * order, 0 = unknown) has `dimensionCount` entries (0 and NULL for scalars);
 * `scale` and `zeroPoint` quantize TENSOR_QUANT* types. */
typedef struct ANeuralNetworksOperandType {
  int32_t type;
  uint32_t dimensionCount;
  const uint32_t* dimensions;
  float scale;
  int32_t zeroPoint;
} ANeuralNetworksOperandType;

typedef int32_t ANeuralNetworksOperationType;

/* The scales of a TENSOR_QUANT8_SYMM_PER_CHANNEL operand: real = scales[i] *
 * value for the values at index i of dimension `channelDim`; `scaleCount`
 * is that dimension's size. */
typedef struct ANeuralNetworksSymmPerChannelQuantParams {
  uint32_t channelDim;
  uint32_t scaleCount;
  const float* scales;
} ANeuralNetworksSymmPerChannelQuantParams;

NNRT_API int ANeuralNetworks_getDeviceCount(uint32_t* numDevices);
NNRT_API int ANeuralNetworks_getDevice(uint32_t devIndex, ANeuralNetworksDevice** device);
NNRT_API int ANeuralNetworksDevice_getName(const ANeuralNetworksDevice* device, const char** name);
NNRT_API int ANeuralNetworksDevice_getVersion(const ANeuralNetworksDevice* device,
                                              const char** version);
NNRT_API int ANeuralNetworksDevice_getType(const ANeuralNetworksDevice* device, int32_t* type);
NNRT_API int ANeuralNetworksDevice_getFeatureLevel(const ANeuralNetworksDevice* device,
                                                   int64_t* featureLevel);

NNRT_API int ANeuralNetworksMemory_createFromFd(size_t size, int protect, int fd, size_t offset,
                                                ANeuralNetworksMemory** memory);
NNRT_API void ANeuralNetworksMemory_free(ANeuralNetworksMemory* memory);

NNRT_API int ANeuralNetworksModel_create(ANeuralNetworksModel** model);
NNRT_API void ANeuralNetworksModel_free(ANeuralNetworksModel* model);
NNRT_API int ANeuralNetworksModel_finish(ANeuralNetworksModel* model);
NNRT_API int ANeuralNetworksModel_addOperand(ANeuralNetworksModel* model,
                                             const ANeuralNetworksOperandType* type);
NNRT_API int ANeuralNetworksModel_setOperandValue(ANeuralNetworksModel* model, int32_t index,
                                                  const void* buffer, size_t length);
/* Sets the per-channel scales of a TENSOR_QUANT8_SYMM_PER_CHANNEL operand
 * (copied); required before finish for every such operand. */
NNRT_API int ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(
    ANeuralNetworksModel* model, int32_t index,
    const ANeuralNetworksSymmPerChannelQuantParams* channelQuant);
NNRT_API int ANeuralNetworksModel_setOperandValueFromMemory(ANeuralNetworksModel* model,
                                                            int32_t index,
                                                            const ANeuralNetworksMemory* memory,
                                                            size_t offset, size_t length);
NNRT_API int ANeuralNetworksModel_addOperation(ANeuralNetworksModel* model,
                                               ANeuralNetworksOperationType type,
                                               uint32_t inputCount, const uint32_t* inputs,
                                               uint32_t outputCount, const uint32_t* outputs);
NNRT_API int ANeuralNetworksModel_identifyInputsAndOutputs(ANeuralNetworksModel* model,
                                                           uint32_t inputCount,
                                                           const uint32_t* inputs,
                                                           uint32_t outputCount,
                                                           const uint32_t* outputs);
/* When `allow` is true, float32 operations may compute with float16's range
 * and precision (see the runtime's README for what this runtime does). */
NNRT_API int ANeuralNetworksModel_relaxComputationFloat32toFloat16(ANeuralNetworksModel* model,
                                                                   bool allow);
NNRT_API int ANeuralNetworksModel_getSupportedOperationsForDevices(
    const ANeuralNetworksModel* model, const ANeuralNetworksDevice* const* devices,
    uint32_t numDevices, bool* supportedOps);

NNRT_API int ANeuralNetworksCompilation_create(ANeuralNetworksModel* model,
                                               ANeuralNetworksCompilation** compilation);
NNRT_API int ANeuralNetworksCompilation_createForDevices(
    ANeuralNetworksModel* model, const ANeuralNetworksDevice* const* devices, uint32_t numDevices,
    ANeuralNetworksCompilation** compilation);
NNRT_API void ANeuralNetworksCompilation_free(ANeuralNetworksCompilation* compilation);
NNRT_API int ANeuralNetworksCompilation_setPreference(ANeuralNetworksCompilation* compilation,
                                                      int32_t preference);
NNRT_API int ANeuralNetworksCompilation_finish(ANeuralNetworksCompilation* compilation);

/* Executions of one finished compilation may run on several threads at once;
 * one execution is used by one thread at a time. */
NNRT_API int ANeuralNetworksExecution_create(ANeuralNetworksCompilation* compilation,
                                             ANeuralNetworksExecution** execution);
NNRT_API void ANeuralNetworksExecution_free(ANeuralNetworksExecution* execution);
NNRT_API int ANeuralNetworksExecution_setInput(ANeuralNetworksExecution* execution, int32_t index,
                                               const ANeuralNetworksOperandType* type,
                                               const void* buffer, size_t length);
NNRT_API int ANeuralNetworksExecution_setInputFromMemory(ANeuralNetworksExecution* execution,
                                                         int32_t index,
                                                         const ANeuralNetworksOperandType* type,
                                                         const ANeuralNetworksMemory* memory,
                                                         size_t offset, size_t length);
NNRT_API int ANeuralNetworksExecution_setOutput(ANeuralNetworksExecution* execution, int32_t index,
                                                const ANeuralNetworksOperandType* type,
                                                void* buffer, size_t length);
NNRT_API int ANeuralNetworksExecution_setOutputFromMemory(ANeuralNetworksExecution* execution,
                                                          int32_t index,
                                                          const ANeuralNetworksOperandType* type,
                                                          const ANeuralNetworksMemory* memory,
                                                          size_t offset, size_t length);
/* Runs the execution and returns when it is done. */
NNRT_API int ANeuralNetworksExecution_compute(ANeuralNetworksExecution* execution);
/* Starts the execution on another thread and returns at once; the event's
 * wait returns the execution's result. */
NNRT_API int ANeuralNetworksExecution_startCompute(ANeuralNetworksExecution* execution,
                                                   ANeuralNetworksEvent** event);
NNRT_API int ANeuralNetworksExecution_getOutputOperandRank(ANeuralNetworksExecution* execution,
                                                           int32_t index, uint32_t* rank);
NNRT_API int ANeuralNetworksExecution_getOutputOperandDimensions(
    ANeuralNetworksExecution* execution, int32_t index, uint32_t* dimensions);

NNRT_API int ANeuralNetworksEvent_wait(ANeuralNetworksEvent* event);
NNRT_API void ANeuralNetworksEvent_free(ANeuralNetworksEvent* event);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NNAPI_CONVERT_RUNTIME_NEURAL_NETWORKS_H */

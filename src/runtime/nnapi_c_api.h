// The C surface of the host NNAPI runtime: opaque handle types, the operand
// type record and the exported ANeuralNetworks* entry points, declared the
// way Android's NeuralNetworks.h declares them (same names, same ABI) so
// that PyTorch's dlsym-based binding can call into this library.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

struct ANeuralNetworksModel;
struct ANeuralNetworksCompilation;
struct ANeuralNetworksExecution;
struct ANeuralNetworksEvent;
struct ANeuralNetworksMemory;
struct ANeuralNetworksDevice;

// Layout-compatible with NeuralNetworks.h's ANeuralNetworksOperandType.
struct ANeuralNetworksOperandType {
  int32_t type;
  uint32_t dimensionCount;
  const uint32_t* dimensions;
  float scale;
  int32_t zeroPoint;
};

typedef int32_t ANeuralNetworksOperationType;

#define NNRT_EXPORT __attribute__((visibility("default")))

NNRT_EXPORT int ANeuralNetworks_getDeviceCount(uint32_t* numDevices);
NNRT_EXPORT int ANeuralNetworks_getDevice(uint32_t devIndex, ANeuralNetworksDevice** device);
NNRT_EXPORT int ANeuralNetworksDevice_getName(const ANeuralNetworksDevice* device,
                                              const char** name);
NNRT_EXPORT int ANeuralNetworksDevice_getVersion(const ANeuralNetworksDevice* device,
                                                 const char** version);
NNRT_EXPORT int ANeuralNetworksDevice_getType(const ANeuralNetworksDevice* device, int32_t* type);
NNRT_EXPORT int ANeuralNetworksDevice_getFeatureLevel(const ANeuralNetworksDevice* device,
                                                      int64_t* featureLevel);

NNRT_EXPORT int ANeuralNetworksMemory_createFromFd(size_t size, int protect, int fd, size_t offset,
                                                   ANeuralNetworksMemory** memory);
NNRT_EXPORT void ANeuralNetworksMemory_free(ANeuralNetworksMemory* memory);

NNRT_EXPORT int ANeuralNetworksModel_create(ANeuralNetworksModel** model);
NNRT_EXPORT void ANeuralNetworksModel_free(ANeuralNetworksModel* model);
NNRT_EXPORT int ANeuralNetworksModel_finish(ANeuralNetworksModel* model);
NNRT_EXPORT int ANeuralNetworksModel_addOperand(ANeuralNetworksModel* model,
                                                const ANeuralNetworksOperandType* type);
NNRT_EXPORT int ANeuralNetworksModel_setOperandValue(ANeuralNetworksModel* model, int32_t index,
                                                     const void* buffer, size_t length);
NNRT_EXPORT int ANeuralNetworksModel_setOperandValueFromMemory(ANeuralNetworksModel* model,
                                                               int32_t index,
                                                               const ANeuralNetworksMemory* memory,
                                                               size_t offset, size_t length);
NNRT_EXPORT int ANeuralNetworksModel_addOperation(ANeuralNetworksModel* model,
                                                  ANeuralNetworksOperationType type,
                                                  uint32_t inputCount, const uint32_t* inputs,
                                                  uint32_t outputCount, const uint32_t* outputs);
NNRT_EXPORT int ANeuralNetworksModel_identifyInputsAndOutputs(ANeuralNetworksModel* model,
                                                              uint32_t inputCount,
                                                              const uint32_t* inputs,
                                                              uint32_t outputCount,
                                                              const uint32_t* outputs);
NNRT_EXPORT int ANeuralNetworksModel_relaxComputationFloat32toFloat16(ANeuralNetworksModel* model,
                                                                      bool allow);
NNRT_EXPORT int ANeuralNetworksModel_getSupportedOperationsForDevices(
    const ANeuralNetworksModel* model, const ANeuralNetworksDevice* const* devices,
    uint32_t numDevices, bool* supportedOps);

NNRT_EXPORT int ANeuralNetworksCompilation_create(ANeuralNetworksModel* model,
                                                  ANeuralNetworksCompilation** compilation);
NNRT_EXPORT int ANeuralNetworksCompilation_createForDevices(
    ANeuralNetworksModel* model, const ANeuralNetworksDevice* const* devices, uint32_t numDevices,
    ANeuralNetworksCompilation** compilation);
NNRT_EXPORT void ANeuralNetworksCompilation_free(ANeuralNetworksCompilation* compilation);
NNRT_EXPORT int ANeuralNetworksCompilation_setPreference(ANeuralNetworksCompilation* compilation,
                                                         int32_t preference);
NNRT_EXPORT int ANeuralNetworksCompilation_finish(ANeuralNetworksCompilation* compilation);

NNRT_EXPORT int ANeuralNetworksExecution_create(ANeuralNetworksCompilation* compilation,
                                                ANeuralNetworksExecution** execution);
NNRT_EXPORT void ANeuralNetworksExecution_free(ANeuralNetworksExecution* execution);
NNRT_EXPORT int ANeuralNetworksExecution_setInput(ANeuralNetworksExecution* execution,
                                                  int32_t index,
                                                  const ANeuralNetworksOperandType* type,
                                                  const void* buffer, size_t length);
NNRT_EXPORT int ANeuralNetworksExecution_setInputFromMemory(ANeuralNetworksExecution* execution,
                                                            int32_t index,
                                                            const ANeuralNetworksOperandType* type,
                                                            const ANeuralNetworksMemory* memory,
                                                            size_t offset, size_t length);
NNRT_EXPORT int ANeuralNetworksExecution_setOutput(ANeuralNetworksExecution* execution,
                                                   int32_t index,
                                                   const ANeuralNetworksOperandType* type,
                                                   void* buffer, size_t length);
NNRT_EXPORT int ANeuralNetworksExecution_setOutputFromMemory(ANeuralNetworksExecution* execution,
                                                             int32_t index,
                                                             const ANeuralNetworksOperandType* type,
                                                             const ANeuralNetworksMemory* memory,
                                                             size_t offset, size_t length);
NNRT_EXPORT int ANeuralNetworksExecution_compute(ANeuralNetworksExecution* execution);
NNRT_EXPORT int ANeuralNetworksExecution_startCompute(ANeuralNetworksExecution* execution,
                                                      ANeuralNetworksEvent** event);
NNRT_EXPORT int ANeuralNetworksExecution_getOutputOperandRank(ANeuralNetworksExecution* execution,
                                                              int32_t index, uint32_t* rank);
NNRT_EXPORT int ANeuralNetworksExecution_getOutputOperandDimensions(
    ANeuralNetworksExecution* execution, int32_t index, uint32_t* dimensions);

NNRT_EXPORT int ANeuralNetworksEvent_wait(ANeuralNetworksEvent* event);
NNRT_EXPORT void ANeuralNetworksEvent_free(ANeuralNetworksEvent* event);

// Not NNAPI: a diagnosis hook of this host runtime. While an observer is set,
// every execution calls it after each operation, once per output operand of
// that operation, with the computed value: its type (dims as computed), its
// data (contiguous, in the NNAPI layout, valid only during the call) and its
// byte length. Null clears it. Not thread-safe: set it while no execution
// runs. nnapi-convert --verify uses it to find the first operation whose
// result differs from eager PyTorch.
typedef void (*ANeuralNetworksHostOperationObserver)(void* context, int32_t operation,
                                                     uint32_t operand,
                                                     const ANeuralNetworksOperandType* type,
                                                     const void* data, size_t length);
NNRT_EXPORT void ANeuralNetworksHost_setOperationObserver(
    ANeuralNetworksHostOperationObserver observer, void* context);

// Not NNAPI: why the last ANeuralNetworks* call of this thread that failed
// did (since ANeuralNetworksHost_clearLastError). Returns its result code
// (0, ANEURALNETWORKS_NO_ERROR, when none failed) and sets `function` (its
// name, e.g. "ANeuralNetworksModel_addOperation"), `message` (what the
// runtime rejected and why; both valid until the thread's next failing call
// or clear) and `operation` (the index of the operation it concerns, in the
// order the model's operations were added, or -1). Any pointer may be null.
// Once a host calls either function, the runtime stops printing execution
// failures to standard error (NNRT_VERBOSE still prints every failure):
// nnapi-convert --verify reports them itself, naming the node the operation
// was lowered from.
NNRT_EXPORT int ANeuralNetworksHost_getLastError(const char** function, const char** message,
                                                 int32_t* operation);
NNRT_EXPORT void ANeuralNetworksHost_clearLastError();

}  // extern "C"

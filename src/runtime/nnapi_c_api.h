// The C surface of the host NNAPI runtime: the NNAPI API itself is the
// installed public header (include/nnapi_runtime/android/NeuralNetworks.h,
// our declarations with NeuralNetworks.h's names, values and ABI, so that
// PyTorch's dlsym-based binding and C/C++ programs can call into this
// library); below are this runtime's own host hooks, which are not NNAPI.
#pragma once

#include <cstddef>
#include <cstdint>

#include "android/NeuralNetworks.h"

#define NNRT_EXPORT NNRT_API

extern "C" {

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

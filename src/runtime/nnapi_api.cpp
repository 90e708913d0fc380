// The exported C entry points. Every function catches everything: no C++ or
// c10 exception crosses the C boundary; errors become NNAPI result codes.
#include <c10/util/Exception.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <new>
#include <string>

#include "execution.h"
#include "kernel.h"
#include "nnapi_c_api.h"

struct ANeuralNetworksModel {
  std::shared_ptr<nnrt::Model> impl = std::make_shared<nnrt::Model>();
};
struct ANeuralNetworksCompilation {
  std::shared_ptr<nnrt::Compilation> impl = std::make_shared<nnrt::Compilation>();
};
// The outcome of an asynchronous run: its result code and, when it failed,
// the worker thread's last error, handed to the thread that waits.
struct AsyncOutcome {
  int result = 0;
  std::string function, message;
  int64_t operation = -1;
};
struct ANeuralNetworksExecution {
  std::unique_ptr<nnrt::Execution> impl;
  // The run started by startCompute, if any: freeing the execution waits for it.
  std::shared_future<AsyncOutcome> pending;
  ~ANeuralNetworksExecution() {
    if (pending.valid()) pending.wait();
  }
};
struct ANeuralNetworksEvent {
  std::shared_future<AsyncOutcome> outcome;
};
struct ANeuralNetworksMemory {
  std::shared_ptr<nnrt::Memory> impl;
};
struct ANeuralNetworksDevice {
  const char* name;
  const char* version;
  int64_t feature_level;
};

namespace {

using nnrt::NnError;
using nnrt::Result;

// The single device this library offers: LibTorch on the host CPU.
ANeuralNetworksDevice g_device{"nnapi-convert-host-cpu", "0.1", 29};
constexpr int32_t kDeviceTypeCpu = 2;  // ANEURALNETWORKS_DEVICE_CPU

int code(Result r) { return static_cast<int>(r); }

bool verbose() {
  static const bool on = std::getenv("NNRT_VERBOSE") != nullptr;
  return on;
}

// The last failed call of this thread (ANeuralNetworksHost_getLastError).
struct LastError {
  Result code = Result::NoError;
  std::string function, message;
  int64_t operation = -1;
};
thread_local LastError t_last_error;
// Set once a host reads the failures (nnapi-convert --verify): it reports
// them itself, so they are printed only with NNRT_VERBOSE.
std::atomic<bool> g_host_reports{false};

void report(const char* fn, Result r, const char* msg, int64_t operation = -1) {
  t_last_error = {r, fn, msg, operation};
  // Execution failures are worth a line unless the host reports them; API
  // misuse only on request.
  // A model the validator refuses at finish is worth a line too.
  const bool refused = r == Result::BadData && std::strcmp(fn, "ANeuralNetworksModel_finish") == 0;
  if (verbose() || ((r == Result::OpFailed || refused) && !g_host_reports.load())) {
    std::fprintf(stderr, "nnrt: %s: %s\n", fn, msg);
  }
}

template <class F>
int guarded(const char* fn, F&& body) {
  try {
    body();
    return code(Result::NoError);
  } catch (const NnError& e) {
    report(fn, e.code(), e.what(), e.operation());
    return code(e.code());
  } catch (const std::bad_alloc&) {
    report(fn, Result::OutOfMemory, "out of memory");
    return code(Result::OutOfMemory);
  } catch (const c10::Error& e) {
    report(fn, Result::OpFailed, e.what_without_backtrace());
    return code(Result::OpFailed);
  } catch (const std::exception& e) {
    report(fn, Result::OpFailed, e.what());
    return code(Result::OpFailed);
  } catch (...) {
    report(fn, Result::OpFailed, "unknown exception");
    return code(Result::OpFailed);
  }
}

void not_null(const void* p, const char* what) {
  if (p == nullptr) nnrt::fail(Result::UnexpectedNull, std::string(what) + " is null");
}

nnrt::Model& model_of(ANeuralNetworksModel* m) {
  not_null(m, "model");
  return *m->impl;
}

nnrt::Operand operand_of(const ANeuralNetworksOperandType* t) {
  return nnrt::operand_from_type(t->type, t->dimensionCount, t->dimensions, t->scale, t->zeroPoint);
}

std::vector<uint32_t> index_list(uint32_t count, const uint32_t* list, const char* what) {
  if (count > 0) not_null(list, what);
  return count > 0 ? std::vector<uint32_t>(list, list + count) : std::vector<uint32_t>{};
}

void check_device_list(const ANeuralNetworksDevice* const* devices, uint32_t num) {
  not_null(devices, "devices");
  nnrt::require(num > 0, "empty device list");
  for (uint32_t i = 0; i < num; ++i) {
    not_null(devices[i], "device");
    nnrt::require(devices[i] == &g_device, "unknown device");
  }
}

}  // namespace

extern "C" {

// ---------------------------------------------------------------- devices

int ANeuralNetworks_getDeviceCount(uint32_t* numDevices) {
  return guarded(__func__, [&] {
    not_null(numDevices, "numDevices");
    *numDevices = 1;
  });
}

int ANeuralNetworks_getDevice(uint32_t devIndex, ANeuralNetworksDevice** device) {
  return guarded(__func__, [&] {
    not_null(device, "device");
    nnrt::require(devIndex == 0, "device index out of range");
    *device = &g_device;
  });
}

int ANeuralNetworksDevice_getName(const ANeuralNetworksDevice* device, const char** name) {
  return guarded(__func__, [&] {
    not_null(device, "device");
    not_null(name, "name");
    *name = device->name;
  });
}

int ANeuralNetworksDevice_getVersion(const ANeuralNetworksDevice* device, const char** version) {
  return guarded(__func__, [&] {
    not_null(device, "device");
    not_null(version, "version");
    *version = device->version;
  });
}

int ANeuralNetworksDevice_getType(const ANeuralNetworksDevice* device, int32_t* type) {
  return guarded(__func__, [&] {
    not_null(device, "device");
    not_null(type, "type");
    *type = kDeviceTypeCpu;
  });
}

int ANeuralNetworksDevice_getFeatureLevel(const ANeuralNetworksDevice* device,
                                          int64_t* featureLevel) {
  return guarded(__func__, [&] {
    not_null(device, "device");
    not_null(featureLevel, "featureLevel");
    *featureLevel = device->feature_level;
  });
}

// ---------------------------------------------------------------- memory

int ANeuralNetworksMemory_createFromFd(size_t size, int protect, int fd, size_t offset,
                                       ANeuralNetworksMemory** memory) {
  return guarded(__func__, [&] {
    not_null(memory, "memory");
    *memory = nullptr;
    nnrt::require(size > 0, "memory size is 0");
    nnrt::require(fd >= 0, "bad file descriptor");
    void* base = mmap(nullptr, size, protect, MAP_SHARED, fd, static_cast<off_t>(offset));
    if (base == MAP_FAILED) nnrt::fail(Result::Unmappable, "mmap failed");
    auto impl = std::make_shared<nnrt::Memory>();
    impl->base = base;
    impl->size = size;
    *memory = new ANeuralNetworksMemory{std::move(impl)};
  });
}

void ANeuralNetworksMemory_free(ANeuralNetworksMemory* memory) { delete memory; }

// ---------------------------------------------------------------- model

int ANeuralNetworksModel_create(ANeuralNetworksModel** model) {
  return guarded(__func__, [&] {
    not_null(model, "model");
    *model = nullptr;
    *model = new ANeuralNetworksModel();
  });
}

void ANeuralNetworksModel_free(ANeuralNetworksModel* model) { delete model; }

int ANeuralNetworksModel_finish(ANeuralNetworksModel* model) {
  return guarded(__func__, [&] { model_of(model).finish(); });
}

int ANeuralNetworksModel_addOperand(ANeuralNetworksModel* model,
                                    const ANeuralNetworksOperandType* type) {
  return guarded(__func__, [&] {
    nnrt::Model& m = model_of(model);
    not_null(type, "type");
    if (m.finished()) nnrt::fail(Result::BadState, "model already finished");
    m.add_operand(operand_of(type));
  });
}

int ANeuralNetworksModel_setOperandValue(ANeuralNetworksModel* model, int32_t index,
                                         const void* buffer, size_t length) {
  return guarded(__func__, [&] { model_of(model).set_value(index, buffer, length); });
}

int ANeuralNetworksModel_setOperandValueFromMemory(ANeuralNetworksModel* model, int32_t index,
                                                   const ANeuralNetworksMemory* memory,
                                                   size_t offset, size_t length) {
  return guarded(__func__, [&] {
    nnrt::Model& m = model_of(model);
    not_null(memory, "memory");
    m.set_value_from_memory(index, memory->impl, offset, length);
  });
}

int ANeuralNetworksModel_addOperation(ANeuralNetworksModel* model,
                                      ANeuralNetworksOperationType type, uint32_t inputCount,
                                      const uint32_t* inputs, uint32_t outputCount,
                                      const uint32_t* outputs) {
  return guarded(__func__, [&] {
    nnrt::Model& m = model_of(model);
    auto ins = index_list(inputCount, inputs, "inputs");
    auto outs = index_list(outputCount, outputs, "outputs");
    m.add_operation(type, std::move(ins), std::move(outs));
  });
}

int ANeuralNetworksModel_identifyInputsAndOutputs(ANeuralNetworksModel* model, uint32_t inputCount,
                                                  const uint32_t* inputs, uint32_t outputCount,
                                                  const uint32_t* outputs) {
  return guarded(__func__, [&] {
    nnrt::Model& m = model_of(model);
    auto ins = index_list(inputCount, inputs, "inputs");
    auto outs = index_list(outputCount, outputs, "outputs");
    m.identify_inputs_outputs(std::move(ins), std::move(outs));
  });
}

// Accepted and ignored: every float32 computation runs in float32.
int ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(
    ANeuralNetworksModel* model, int32_t index,
    const ANeuralNetworksSymmPerChannelQuantParams* channelQuant) {
  return guarded(__func__, [&] {
    nnrt::Model& m = model_of(model);
    not_null(channelQuant, "channelQuant");
    if (channelQuant->scaleCount > 0) not_null(channelQuant->scales, "channelQuant->scales");
    m.set_channel_quant(
        index, channelQuant->channelDim,
        std::vector<float>(channelQuant->scales, channelQuant->scales + channelQuant->scaleCount));
  });
}

int ANeuralNetworksModel_relaxComputationFloat32toFloat16(ANeuralNetworksModel* model, bool allow) {
  return guarded(__func__, [&] { model_of(model).relax_float32_to_float16(allow); });
}

int ANeuralNetworksModel_getSupportedOperationsForDevices(
    const ANeuralNetworksModel* model, const ANeuralNetworksDevice* const* devices,
    uint32_t numDevices, bool* supportedOps) {
  return guarded(__func__, [&] {
    not_null(model, "model");
    not_null(supportedOps, "supportedOps");
    check_device_list(devices, numDevices);
    const nnrt::Model& m = *model->impl;
    if (!m.finished()) nnrt::fail(Result::BadState, "model not finished");
    // Every operation accepted by addOperation has a kernel here.
    for (size_t i = 0; i < m.operations().size(); ++i) supportedOps[i] = true;
  });
}

// ---------------------------------------------------------------- compilation

int ANeuralNetworksCompilation_create(ANeuralNetworksModel* model,
                                      ANeuralNetworksCompilation** compilation) {
  return guarded(__func__, [&] {
    not_null(compilation, "compilation");
    *compilation = nullptr;
    nnrt::Model& m = model_of(model);
    if (!m.finished()) nnrt::fail(Result::BadState, "model not finished");
    auto* c = new ANeuralNetworksCompilation();
    c->impl->model = model->impl;
    *compilation = c;
  });
}

int ANeuralNetworksCompilation_createForDevices(ANeuralNetworksModel* model,
                                                const ANeuralNetworksDevice* const* devices,
                                                uint32_t numDevices,
                                                ANeuralNetworksCompilation** compilation) {
  return guarded(__func__, [&] {
    not_null(compilation, "compilation");
    *compilation = nullptr;
    check_device_list(devices, numDevices);
    int r = ANeuralNetworksCompilation_create(model, compilation);
    if (r != 0) nnrt::fail(static_cast<Result>(r), "Compilation_create failed");
  });
}

void ANeuralNetworksCompilation_free(ANeuralNetworksCompilation* compilation) {
  delete compilation;
}

int ANeuralNetworksCompilation_setPreference(ANeuralNetworksCompilation* compilation,
                                             int32_t preference) {
  return guarded(__func__, [&] {
    not_null(compilation, "compilation");
    if (compilation->impl->finished) nnrt::fail(Result::BadState, "compilation finished");
    nnrt::require(preference >= 0 && preference <= 2, "bad preference");
    compilation->impl->preference = preference;  // accepted; one CPU path for all
  });
}

int ANeuralNetworksCompilation_finish(ANeuralNetworksCompilation* compilation) {
  return guarded(__func__, [&] {
    not_null(compilation, "compilation");
    if (compilation->impl->finished) nnrt::fail(Result::BadState, "compilation finished twice");
    compilation->impl->finished = true;
  });
}

// ---------------------------------------------------------------- execution

int ANeuralNetworksExecution_create(ANeuralNetworksCompilation* compilation,
                                    ANeuralNetworksExecution** execution) {
  return guarded(__func__, [&] {
    not_null(execution, "execution");
    *execution = nullptr;
    not_null(compilation, "compilation");
    if (!compilation->impl->finished) nnrt::fail(Result::BadState, "compilation not finished");
    auto* e = new ANeuralNetworksExecution();
    e->impl = std::make_unique<nnrt::Execution>(compilation->impl);
    *execution = e;
  });
}

void ANeuralNetworksExecution_free(ANeuralNetworksExecution* execution) { delete execution; }

namespace {

// Optional operand type of setInput/setOutput, as an Operand record.
std::unique_ptr<nnrt::Operand> optional_type(const ANeuralNetworksOperandType* type) {
  if (type == nullptr) return nullptr;
  return std::make_unique<nnrt::Operand>(operand_of(type));
}

nnrt::Execution& execution_of(ANeuralNetworksExecution* e) {
  not_null(e, "execution");
  return *e->impl;
}

}  // namespace

int ANeuralNetworksExecution_setInput(ANeuralNetworksExecution* execution, int32_t index,
                                      const ANeuralNetworksOperandType* type, const void* buffer,
                                      size_t length) {
  return guarded(__func__, [&] {
    nnrt::Execution& e = execution_of(execution);
    e.set_input(index, optional_type(type).get(), buffer, length);
  });
}

int ANeuralNetworksExecution_setInputFromMemory(ANeuralNetworksExecution* execution, int32_t index,
                                                const ANeuralNetworksOperandType* type,
                                                const ANeuralNetworksMemory* memory, size_t offset,
                                                size_t length) {
  return guarded(__func__, [&] {
    nnrt::Execution& e = execution_of(execution);
    not_null(memory, "memory");
    e.set_input_memory(index, optional_type(type).get(), memory->impl, offset, length);
  });
}

int ANeuralNetworksExecution_setOutput(ANeuralNetworksExecution* execution, int32_t index,
                                       const ANeuralNetworksOperandType* type, void* buffer,
                                       size_t length) {
  return guarded(__func__, [&] {
    nnrt::Execution& e = execution_of(execution);
    e.set_output(index, optional_type(type).get(), buffer, length);
  });
}

int ANeuralNetworksExecution_setOutputFromMemory(ANeuralNetworksExecution* execution, int32_t index,
                                                 const ANeuralNetworksOperandType* type,
                                                 const ANeuralNetworksMemory* memory, size_t offset,
                                                 size_t length) {
  return guarded(__func__, [&] {
    nnrt::Execution& e = execution_of(execution);
    not_null(memory, "memory");
    e.set_output_memory(index, optional_type(type).get(), memory->impl, offset, length);
  });
}

int ANeuralNetworksExecution_compute(ANeuralNetworksExecution* execution) {
  Result result = Result::NoError;
  int r = guarded(__func__, [&] { result = execution_of(execution).compute(); });
  return r != 0 ? r : code(result);
}

// Checks the execution on the caller's thread (misuse is refused at once,
// with no event), then runs it on a thread of its own; the event's wait
// returns its result.
int ANeuralNetworksExecution_startCompute(ANeuralNetworksExecution* execution,
                                          ANeuralNetworksEvent** event) {
  if (event != nullptr) *event = nullptr;
  return guarded(__func__, [&] {
    not_null(event, "event");
    nnrt::Execution& e = execution_of(execution);
    e.start();
    auto run = [&e]() {
      AsyncOutcome out;
      Result result = Result::NoError;
      out.result = guarded("ANeuralNetworksExecution_startCompute", [&] { result = e.run(); });
      if (out.result == 0) out.result = code(result);
      if (out.result != 0) {
        out.function = t_last_error.function;
        out.message = t_last_error.message;
        out.operation = t_last_error.operation;
      }
      return out;
    };
    auto* ev = new ANeuralNetworksEvent();
    try {
      ev->outcome = std::async(std::launch::async, run).share();
    } catch (...) {
      delete ev;
      throw;
    }
    execution->pending = ev->outcome;
    *event = ev;
  });
}

int ANeuralNetworksExecution_getOutputOperandRank(ANeuralNetworksExecution* execution,
                                                  int32_t index, uint32_t* rank) {
  return guarded(__func__, [&] {
    nnrt::Execution& e = execution_of(execution);
    not_null(rank, "rank");
    *rank = static_cast<uint32_t>(e.output_dims(index).size());
  });
}

int ANeuralNetworksExecution_getOutputOperandDimensions(ANeuralNetworksExecution* execution,
                                                        int32_t index, uint32_t* dimensions) {
  return guarded(__func__, [&] {
    nnrt::Execution& e = execution_of(execution);
    not_null(dimensions, "dimensions");
    const auto& dims = e.output_dims(index);
    nnrt::require(!dims.empty(), "output is a scalar");
    std::copy(dims.begin(), dims.end(), dimensions);
  });
}

// Blocks until the run is done; its failure becomes this thread's last error.
int ANeuralNetworksEvent_wait(ANeuralNetworksEvent* event) {
  if (event == nullptr) return code(Result::UnexpectedNull);
  const AsyncOutcome& out = event->outcome.get();
  if (out.result != 0)
    t_last_error = {static_cast<Result>(out.result), out.function, out.message, out.operation};
  return out.result;
}

// Waits for the run first (the event's shared state does so on destruction).
void ANeuralNetworksEvent_free(ANeuralNetworksEvent* event) {
  if (event != nullptr && event->outcome.valid()) event->outcome.wait();
  delete event;
}

// ---------------------------------------------------------------- host hooks

void ANeuralNetworksHost_setOperationObserver(ANeuralNetworksHostOperationObserver observer,
                                              void* context) {
  nnrt::set_operation_observer(observer, context);
}

int ANeuralNetworksHost_getLastError(const char** function, const char** message,
                                     int32_t* operation) {
  g_host_reports.store(true);
  const LastError& e = t_last_error;
  if (function != nullptr) *function = e.function.c_str();
  if (message != nullptr) *message = e.message.c_str();
  if (operation != nullptr) *operation = static_cast<int32_t>(e.operation);
  return code(e.code);
}

void ANeuralNetworksHost_clearLastError() {
  g_host_reports.store(true);
  t_last_error = LastError();
}

}  // extern "C"

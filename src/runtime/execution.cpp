#include "execution.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "kernel.h"

namespace nnrt {

Execution::Execution(std::shared_ptr<const Compilation> compilation)
    : compilation_(std::move(compilation)), model_(*compilation_->model) {
  inputs_.resize(model_.inputs().size());
  outputs_.resize(model_.outputs().size());
}

IoBinding& Execution::binding(std::vector<IoBinding>& list, int32_t index, const char* what) {
  if (started_) fail(Result::BadState, "execution already started");
  if (index < 0 || static_cast<size_t>(index) >= list.size())
    fail(Result::BadData, std::string(what) + " index " + std::to_string(index) + " out of range");
  return list[static_cast<size_t>(index)];
}

std::vector<uint32_t> Execution::merge_dims(const Operand& decl, const Operand* type) const {
  if (type == nullptr) return decl.dims;
  require(type->type == decl.type, "operand type differs from the model's");
  // Like Android's runtime, only the type code and the dimensions of the
  // given type are checked; the data is interpreted with the model operand's
  // scale and zeroPoint (PyTorch's converter relies on this for flexible
  // inputs whose template was quantized with other parameters).
  if (!decl.is_tensor()) return decl.dims;
  if (decl.dims.empty()) return type->dims;
  require(type->dims.empty() || type->dims.size() == decl.dims.size(), "rank differs from model's");
  if (type->dims.empty()) return decl.dims;
  std::vector<uint32_t> dims = decl.dims;
  for (size_t d = 0; d < dims.size(); ++d) {
    require(dims[d] == 0 || type->dims[d] == 0 || dims[d] == type->dims[d],
            "dimension " + std::to_string(d) + " differs from the model's");
    if (dims[d] == 0) dims[d] = type->dims[d];
  }
  return dims;
}

void Execution::set_input(int32_t index, const Operand* type, const void* buffer, size_t length) {
  IoBinding& b = binding(inputs_, index, "input");
  const Operand& decl = model_.operands()[model_.inputs()[static_cast<size_t>(index)]];
  IoBinding nb;
  nb.set = true;
  if (buffer == nullptr) {
    if (length != 0) fail(Result::UnexpectedNull, "null input buffer");
    nb.omitted = true;
    b = nb;
    return;
  }
  nb.dims = merge_dims(decl, type);
  Operand eff = decl;
  eff.dims = nb.dims;
  require(eff.fully_specified(), "input " + std::to_string(index) + " has unknown dimensions");
  require(eff.byte_size() == length, "input length " + std::to_string(length) +
                                         " does not match operand size " +
                                         std::to_string(eff.byte_size()));
  nb.buffer = static_cast<uint8_t*>(const_cast<void*>(buffer));
  nb.length = length;
  b = nb;
}

void Execution::set_output(int32_t index, const Operand* type, void* buffer, size_t length) {
  IoBinding& b = binding(outputs_, index, "output");
  const Operand& decl = model_.operands()[model_.outputs()[static_cast<size_t>(index)]];
  IoBinding nb;
  nb.set = true;
  if (buffer == nullptr) {
    if (length != 0) fail(Result::UnexpectedNull, "null output buffer");
    nb.omitted = true;
    b = nb;
    return;
  }
  nb.dims = merge_dims(decl, type);
  nb.buffer = static_cast<uint8_t*>(buffer);
  nb.length = length;
  b = nb;
}

void Execution::set_input_memory(int32_t index, const Operand* type, std::shared_ptr<Memory> memory,
                                 size_t offset, size_t length) {
  require(offset <= memory->size && length <= memory->size - offset, "memory region out of bounds");
  set_input(index, type, memory->data() + offset, length);
  inputs_[static_cast<size_t>(index)].memory = std::move(memory);
}

void Execution::set_output_memory(int32_t index, const Operand* type,
                                  std::shared_ptr<Memory> memory, size_t offset, size_t length) {
  require(offset <= memory->size && length <= memory->size - offset, "memory region out of bounds");
  set_output(index, type, static_cast<uint8_t*>(memory->base) + offset, length);
  outputs_[static_cast<size_t>(index)].memory = std::move(memory);
}

namespace {

at::Tensor wrap(const uint8_t* data, const std::vector<uint32_t>& dims, OperandType type) {
  std::vector<int64_t> sizes(dims.begin(), dims.end());
  return at::from_blob(const_cast<uint8_t*>(data), sizes, at::TensorOptions(dtype_for(type)));
}

bool verbose() {
  static const bool on = std::getenv("NNRT_VERBOSE") != nullptr;
  return on;
}

struct Observer {
  ANeuralNetworksHostOperationObserver fn = nullptr;
  void* context = nullptr;
};
Observer g_observer;

// An operation index from the environment variable `name`; -1 when unset.
int64_t operation_from_env(const char* name) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return int64_t{-1};
  char* end = nullptr;
  long long v = std::strtoll(env, &end, 10);
  return *end == '\0' && v >= 0 ? static_cast<int64_t>(v) : int64_t{-1};
}

// A test hook: NNAPI_HOST_FAULT_OPERATION=K[:ADD[:SHARE]] makes operation K's
// outputs wrong (see README.md), so that tests can check how a diverging
// conversion is reported and which differences --verify tolerates. Read once.
struct Fault {
  int64_t operation = -1;  // -1: no fault
  bool whole = true;       // K alone: every element (floats + 1, integers + 8, wrapping)
  double add = 0;          // ADD: added to the first ceil(SHARE * n) elements
  double share = 1;
};

const Fault& fault() {
  static const Fault f = [] {
    Fault r;
    const char* env = std::getenv("NNAPI_HOST_FAULT_OPERATION");
    if (env == nullptr || *env == '\0') return r;
    char* end = nullptr;
    long long k = std::strtoll(env, &end, 10);
    if (end == env || k < 0) return r;
    if (*end == ':') {
      r.whole = false;
      r.add = std::strtod(end + 1, &end);
      if (*end == ':') r.share = std::strtod(end + 1, &end);
    }
    if (*end != '\0' || !(r.share > 0 && r.share <= 1)) return Fault{};
    r.operation = k;
    return r;
  }();
  return f;
}

// The test hook NNAPI_HOST_FAIL_OPERATION=<index>: that operation fails (OP_FAILED) in
// every execution, so that tests can check how a run-time failure is reported.
int64_t fail_operation() {
  static const int64_t index = operation_from_env("NNAPI_HOST_FAIL_OPERATION");
  return index;
}

// A wrong value of the same type and shape. TENSOR_QUANT16_ASYMM's values
// (0 to 65535, stored as int16: quant16_asymm_values) are perturbed as the
// values they stand for, not as their signed storage.
at::Tensor perturbed(const at::Tensor& stored, OperandType type, const Fault& f) {
  const bool unsigned16 = type == OperandType::TensorQuant16Asymm;
  const at::Tensor t = unsigned16 ? quant16_asymm_values(stored) : stored;
  const int64_t top = unsigned16                      ? 65535
                      : t.scalar_type() == at::kByte  ? 255
                      : t.scalar_type() == at::kChar  ? 127
                      : t.scalar_type() == at::kShort ? 32767
                                                      : std::numeric_limits<int32_t>::max();
  auto stored_as = [&](const at::Tensor& wide) {
    return unsigned16 ? quant16_asymm_storage(wide) : wide.to(t.scalar_type());
  };
  if (f.whole) {  // floats + 1, booleans negated, integers (and quantized values) + 8, wrapping
    if (at::isFloatingType(t.scalar_type())) return t + 1.0;
    if (t.scalar_type() == at::kBool) return t.logical_not();
    at::Tensor wide = t.to(at::kLong) + 8;
    return stored_as(unsigned16 ? wide.remainder(65536) : wide);
  }
  // The first ceil(share * n) elements in index order: floats + ADD,
  // booleans negated, integers and quantized values + round(ADD), or
  // - round(ADD) where adding would leave the type's range (so each is off by
  // exactly that much).
  at::Tensor r = t.contiguous().clone();
  at::Tensor flat = r.view({-1});
  const int64_t n = static_cast<int64_t>(std::ceil(f.share * static_cast<double>(flat.numel())));
  at::Tensor head = flat.narrow(0, 0, std::min<int64_t>(n, flat.numel()));
  if (at::isFloatingType(t.scalar_type())) {
    head.add_(f.add);
  } else if (t.scalar_type() == at::kBool) {
    head.logical_not_();
  } else {
    const int64_t add = std::llround(f.add);
    at::Tensor wide = head.to(at::kLong);
    head.copy_(at::where(wide + add > top, wide - add, wide + add));
  }
  return unsigned16 ? stored_as(r) : r;
}

// relaxComputationFloat32toFloat16: NNAPI then lets a device compute float32
// operations with float16's range and precision. This runtime shows what such
// a device may give: with the model relaxed, every float32 tensor an operation
// writes is rounded to the nearest float16 (round half to even; beyond
// float16's range it becomes infinity) before the next operation reads it, and
// so are the model's outputs. The operations themselves compute in float32.
// On by default; NNAPI_HOST_RELAX_FLOAT16=0 (read once) keeps float32 results
// for relaxed models too.
bool relaxed_float16_rounding() {
  static const bool on = [] {
    const char* env = std::getenv("NNAPI_HOST_RELAX_FLOAT16");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }();
  return on;
}

void round_to_float16(const Operation& op, const std::vector<Operand>& operands,
                      std::vector<Value>& values) {
  for (uint32_t o : op.outputs) {
    if (operands[o].type != OperandType::TensorFloat32) continue;
    Value& v = values[o];
    v.t = v.t.to(at::kHalf).to(at::kFloat);
  }
}

void notify_observer(size_t k, const Operation& op, const std::vector<Value>& values) {
  for (uint32_t o : op.outputs) {
    const Value& v = values[o];
    at::Tensor t = v.t.contiguous();
    std::vector<uint32_t> dims(t.sizes().begin(), t.sizes().end());
    ANeuralNetworksOperandType type{static_cast<int32_t>(v.type),
                                    static_cast<uint32_t>(dims.size()), dims.data(), v.scale,
                                    v.zero_point};
    g_observer.fn(g_observer.context, static_cast<int32_t>(k), o, &type, t.data_ptr(), t.nbytes());
  }
}

}  // namespace

void set_operation_observer(ANeuralNetworksHostOperationObserver observer, void* context) {
  g_observer = {observer, context};
}

Result Execution::compute() {
  start();
  return run();
}

void Execution::start() {
  if (started_) fail(Result::BadState, "execution already computed");
  for (size_t i = 0; i < inputs_.size(); ++i)
    require(inputs_[i].set, "input " + std::to_string(i) + " was not set");
  for (size_t i = 0; i < outputs_.size(); ++i)
    require(outputs_[i].set, "output " + std::to_string(i) + " was not set");
  started_ = true;
}

Result Execution::run() {
  if (!started_ || has_result_) fail(Result::BadState, "execution not started, or run twice");

  const auto& operands = model_.operands();
  std::vector<Value> values(operands.size());
  for (size_t k = 0; k < operands.size(); ++k) {
    const Operand& op = operands[k];
    if (op.lifetime != Lifetime::Constant) continue;
    Value& v = values[k];
    v.t = wrap(op.value_data(), op.dims, op.type);
    v.type = op.type;
    v.scale = op.scale;
    v.zero_point = op.zero_point;
    v.present = true;
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const IoBinding& b = inputs_[i];
    if (b.omitted) continue;
    const Operand& op = operands[model_.inputs()[i]];
    Value& v = values[model_.inputs()[i]];
    v.t = wrap(b.buffer, b.dims, op.type);
    v.type = op.type;
    v.scale = op.scale;
    v.zero_point = op.zero_point;
    v.present = true;
  }

  for (size_t k : model_.schedule()) {
    const Operation& op = model_.operations()[k];
    ExecContext ctx(op, model_, values);
    auto failed = [&](const std::string& why) {
      fail_at(k, NnError(Result::OpFailed, std::string(op.kernel->name) + " (operation " +
                                               std::to_string(k) + "): " + why));
    };
    try {
      if (static_cast<int64_t>(k) == fail_operation()) {
        failed("failed on purpose (the test hook NNAPI_HOST_FAIL_OPERATION is set)");
      }
      op.kernel->execute(ctx);
    } catch (const NnError& e) {
      if (e.operation() >= 0) throw;
      failed(e.what());
    } catch (const c10::Error& e) {
      failed(e.what_without_backtrace());
    }
    for (uint32_t o : op.outputs)
      if (!values[o].present) failed("left an output unset");
    if (model_.relaxed() && relaxed_float16_rounding()) round_to_float16(op, operands, values);
    if (static_cast<int64_t>(k) == fault().operation) {
      for (uint32_t o : op.outputs) values[o].t = perturbed(values[o].t, values[o].type, fault());
    }
    if (g_observer.fn != nullptr) notify_observer(k, op, values);
    if (verbose())
      std::fprintf(stderr, "nnrt: op %zu %s -> %s\n", k, op.kernel->name,
                   c10::str(values[op.outputs[0]].t.sizes()).c_str());
  }

  Result result = Result::NoError;
  output_dims_.assign(outputs_.size(), {});
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const at::Tensor& t = values[model_.outputs()[i]].t;
    for (int64_t s : t.sizes()) output_dims_[i].push_back(static_cast<uint32_t>(s));
    const IoBinding& b = outputs_[i];
    if (b.omitted) continue;
    // A shape given to setOutput must agree with what was computed.
    if (!b.dims.empty()) {
      bool ok = b.dims.size() == output_dims_[i].size();
      for (size_t d = 0; ok && d < b.dims.size(); ++d)
        ok = b.dims[d] == 0 || b.dims[d] == output_dims_[i][d];
      if (!ok) fail(Result::OpFailed, "output " + std::to_string(i) + " shape mismatch");
    }
    size_t nbytes = t.nbytes();
    if (nbytes > b.length) {
      result = Result::OutputInsufficientSize;
      continue;
    }
    std::memcpy(b.buffer, t.contiguous().data_ptr(), nbytes);
  }
  has_result_ = true;
  return result;
}

const std::vector<uint32_t>& Execution::output_dims(int32_t index) const {
  if (!has_result_) fail(Result::BadState, "execution has not completed");
  if (index < 0 || static_cast<size_t>(index) >= output_dims_.size())
    fail(Result::BadData, "output index out of range");
  return output_dims_[static_cast<size_t>(index)];
}

}  // namespace nnrt

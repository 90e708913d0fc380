#include "model.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "kernel.h"
#include "nnapi_convert/validate.h"

namespace nnrt {

void fail(Result code, const std::string& msg) { throw NnError(code, msg); }

void fail_at(size_t operation, const NnError& e) {
  throw NnError(e.code(), e.what(), static_cast<int64_t>(operation));
}

void require(bool cond, const std::string& msg) {
  if (!cond) fail(Result::BadData, msg);
}

Memory::~Memory() {
  if (base != nullptr && base != MAP_FAILED) munmap(base, size);
}

namespace {

bool is_scalar_type(OperandType t) {
  switch (t) {
    case OperandType::Float32:
    case OperandType::Int32:
    case OperandType::UInt32:
    case OperandType::Bool:
    case OperandType::Float16:
      return true;
    default:
      return false;
  }
}

size_t scalar_size(OperandType t) {
  switch (t) {
    case OperandType::Bool:
      return 1;
    case OperandType::Float16:
      return 2;
    default:
      return 4;
  }
}

// Operand type codes defined by NeuralNetworks.h (API level 29).
bool known_type(int32_t code) { return nnapi::operand_type_name_or_null(code) != nullptr; }

}  // namespace

nnapi_validate::Operand validation_view(const Operand& o) {
  nnapi_validate::Operand v;
  v.type = o.type;
  v.dims = o.dims;
  v.scale = o.scale;
  v.zero_point = o.zero_point;
  v.channel_dim = o.channel_dim;
  v.channel_scales = o.channel_scales;
  switch (o.lifetime) {
    case Lifetime::Temporary:
      v.lifetime = nnapi_validate::Lifetime::Temporary;
      break;
    case Lifetime::ModelInput:
      v.lifetime = nnapi_validate::Lifetime::ModelInput;
      break;
    case Lifetime::ModelOutput:
      v.lifetime = nnapi_validate::Lifetime::ModelOutput;
      break;
    case Lifetime::Constant:
      v.lifetime = nnapi_validate::Lifetime::Constant;
      v.data = o.value_data();
      v.length = o.length;
      break;
    case Lifetime::NoValue:
      v.lifetime = nnapi_validate::Lifetime::Omitted;
      break;
  }
  return v;
}

bool Operand::fully_specified() const {
  if (!is_tensor()) return true;
  if (dims.empty()) return false;
  return std::all_of(dims.begin(), dims.end(), [](uint32_t d) { return d != 0; });
}

size_t Operand::byte_size() const {
  if (!is_tensor()) return scalar_size(type);
  if (!fully_specified()) return 0;
  size_t n = static_cast<size_t>(nnapi::element_size(type));
  for (uint32_t d : dims) {
    if (n > std::numeric_limits<size_t>::max() / d) fail(Result::BadData, "operand size overflow");
    n *= d;
  }
  return n;
}

Operand operand_from_type(int32_t type, uint32_t dimension_count, const uint32_t* dimensions,
                          float scale, int32_t zero_point) {
  require(known_type(type), "unknown operand type " + std::to_string(type));
  Operand op;
  op.type = static_cast<OperandType>(type);
  if (dimension_count > 0 && dimensions == nullptr)
    fail(Result::UnexpectedNull, "dimensions is null but dimensionCount > 0");
  if (is_scalar_type(op.type)) {
    require(dimension_count == 0, "scalar operand with dimensions");
  } else {
    op.dims.assign(dimensions, dimensions + dimension_count);
  }
  switch (op.type) {
    case OperandType::TensorQuant8Asymm:
      require(scale > 0.f, "TENSOR_QUANT8_ASYMM needs scale > 0");
      require(zero_point >= 0 && zero_point <= 255, "TENSOR_QUANT8_ASYMM zeroPoint out of range");
      break;
    case OperandType::TensorQuant16Asymm:
      require(scale > 0.f, "TENSOR_QUANT16_ASYMM needs scale > 0");
      require(zero_point >= 0 && zero_point <= 65535, "zeroPoint out of range");
      break;
    case OperandType::TensorQuant16Symm:
    case OperandType::TensorQuant8Symm:
      require(scale > 0.f && zero_point == 0,
              "symmetric quantized operand needs scale > 0 and zeroPoint 0");
      break;
    case OperandType::TensorQuant8SymmPerChannel:
      require(scale == 0.f && zero_point == 0,
              "TENSOR_QUANT8_SYMM_PER_CHANNEL needs scale 0 and zeroPoint 0 (its scales come "
              "from setOperandSymmPerChannelQuantParams)");
      break;
    case OperandType::TensorInt32:
      require(scale >= 0.f, "negative scale");
      break;
    default:
      require(scale == 0.f && zero_point == 0,
              std::string("scale/zeroPoint must be 0 for ") + nnapi::operand_type_name(op.type));
  }
  op.scale = scale;
  op.zero_point = zero_point;
  return op;
}

void Model::require_not_finished() const {
  if (finished_) fail(Result::BadState, "model already finished");
}

Operand& Model::operand_at(int64_t index) {
  if (index < 0 || index >= static_cast<int64_t>(operands_.size()))
    fail(Result::BadData, "operand index " + std::to_string(index) + " out of range");
  return operands_[static_cast<size_t>(index)];
}

void Model::add_operand(const Operand& operand) {
  require_not_finished();
  operands_.push_back(operand);
}

void Model::set_value(int32_t index, const void* buffer, size_t length) {
  require_not_finished();
  Operand& op = operand_at(index);
  require(op.lifetime == Lifetime::Temporary || op.lifetime == Lifetime::Constant ||
              op.lifetime == Lifetime::NoValue,
          "cannot set a value on a model input or output");
  require(op.producer < 0, "cannot set a value on an operation's output");
  if (buffer == nullptr) {
    if (length != 0) fail(Result::UnexpectedNull, "null buffer with nonzero length");
    op.lifetime = Lifetime::NoValue;  // an omitted optional input
    op.bytes.clear();
    op.memory.reset();
    op.length = 0;
    return;
  }
  size_t expected = op.byte_size();
  require(expected != 0, "constant operand needs fully specified dimensions");
  require(length == expected, "value length " + std::to_string(length) + " != operand size " +
                                  std::to_string(expected));
  // Values are always copied: PyTorch passes pointers into weight tensors it
  // keeps alive, but copying keeps this runtime independent of the caller.
  const auto* p = static_cast<const uint8_t*>(buffer);
  op.bytes.assign(p, p + length);
  op.memory.reset();
  op.length = length;
  op.lifetime = Lifetime::Constant;
}

void Model::set_value_from_memory(int32_t index, std::shared_ptr<Memory> memory, size_t offset,
                                  size_t length) {
  require_not_finished();
  Operand& op = operand_at(index);
  require(op.lifetime == Lifetime::Temporary || op.lifetime == Lifetime::Constant,
          "cannot set a value on a model input or output");
  require(op.producer < 0, "cannot set a value on an operation's output");
  size_t expected = op.byte_size();
  require(expected != 0, "constant operand needs fully specified dimensions");
  require(length == expected, "value length does not match operand size");
  require(offset <= memory->size && length <= memory->size - offset, "memory region out of bounds");
  op.bytes.clear();
  op.memory = std::move(memory);
  op.memory_offset = offset;
  op.length = length;
  op.lifetime = Lifetime::Constant;
}

void Model::add_operation(int32_t code, std::vector<uint32_t> inputs,
                          std::vector<uint32_t> outputs) {
  require_not_finished();
  const int64_t index = static_cast<int64_t>(operations_.size());
  const OpKernel* kernel = find_kernel(code);
  try {
    if (kernel == nullptr) {
      const char* name = nnapi::op_name_or_null(code);
      fail(Result::BadData, name ? std::string("operation ") + name + " (" + std::to_string(code) +
                                       ") is not implemented by this runtime"
                                 : "unknown operation type " + std::to_string(code));
    }
    std::vector<nnapi_validate::Operand> views;
    views.reserve(inputs.size() + outputs.size());
    for (uint32_t i : inputs) views.push_back(validation_view(operand_at(i)));
    for (uint32_t o : outputs) {
      // What can be told now of the graph (finish's validator checks it all).
      const Operand& op = operand_at(o);
      require(op.lifetime != Lifetime::Constant && op.lifetime != Lifetime::NoValue,
              "operation output " + std::to_string(o) + " is a constant");
      require(op.lifetime != Lifetime::ModelInput, "operation output is a model input");
      require(op.producer < 0, "operand " + std::to_string(o) + " is written twice");
      views.push_back(validation_view(op));
    }
    std::vector<const nnapi_validate::Operand*> ins, outs;
    for (size_t k = 0; k < views.size(); ++k) (k < inputs.size() ? ins : outs).push_back(&views[k]);
    // Types, counts, declared ranks and quantization; values and shapes at finish.
    if (auto finding = nnapi_validate::validate_operation_types(index, code, ins, outs))
      fail(Result::BadData, finding->message);
  } catch (const NnError& e) {
    fail_at(static_cast<size_t>(index), e);
  }
  for (uint32_t o : outputs) operands_[o].producer = static_cast<int>(index);
  operations_.push_back(Operation{code, std::move(inputs), std::move(outputs), kernel});
}

void Model::identify_inputs_outputs(std::vector<uint32_t> inputs, std::vector<uint32_t> outputs) {
  require_not_finished();
  for (uint32_t i : inputs) {
    const Operand& op = operand_at(i);
    require(op.lifetime == Lifetime::Temporary,
            "model input " + std::to_string(i) + " is a constant or already an input/output");
    require(op.producer < 0, "model input is written by an operation");
  }
  for (uint32_t o : outputs) {
    const Operand& op = operand_at(o);
    require(op.lifetime == Lifetime::Temporary,
            "model output " + std::to_string(o) + " is a constant or already an input/output");
  }
  std::vector<uint32_t> all = inputs;
  all.insert(all.end(), outputs.begin(), outputs.end());
  std::sort(all.begin(), all.end());
  require(std::adjacent_find(all.begin(), all.end()) == all.end(),
          "an operand is listed twice among model inputs/outputs");
  for (uint32_t i : inputs) operands_[i].lifetime = Lifetime::ModelInput;
  for (uint32_t o : outputs) operands_[o].lifetime = Lifetime::ModelOutput;
  inputs_ = std::move(inputs);
  outputs_ = std::move(outputs);
  identified_ = true;
}

void Model::set_channel_quant(int32_t index, uint32_t channel_dim, std::vector<float> scales) {
  require_not_finished();
  Operand& op = operand_at(index);
  require(op.type == OperandType::TensorQuant8SymmPerChannel,
          "operand " + std::to_string(index) + " is " + nnapi::operand_type_name(op.type) +
              ", not TENSOR_QUANT8_SYMM_PER_CHANNEL");
  require(channel_dim < op.dims.size(), "channelDim " + std::to_string(channel_dim) +
                                            " is not below the operand's rank " +
                                            std::to_string(op.dims.size()));
  require(op.dims[channel_dim] == 0 || scales.size() == op.dims[channel_dim],
          "scaleCount " + std::to_string(scales.size()) + " differs from dimension " +
              std::to_string(channel_dim) + " of size " + std::to_string(op.dims[channel_dim]));
  for (float s : scales) require(s > 0.f, "every per-channel scale must be > 0");
  op.channel_dim = channel_dim;
  op.channel_scales = std::move(scales);
}

void Model::relax_float32_to_float16(bool allow) {
  require_not_finished();
  relaxed_ = allow;
}

nnapi_validate::Model Model::validation_model() const {
  nnapi_validate::Model m;
  m.operands.reserve(operands_.size());
  for (const Operand& o : operands_) m.operands.push_back(validation_view(o));
  for (const Operation& op : operations_)
    m.operations.push_back(nnapi_validate::Operation{op.code, op.inputs, op.outputs});
  m.inputs = inputs_;
  m.outputs = outputs_;
  m.relaxed = relaxed_;
  return m;
}

void Model::finish() {
  require_not_finished();
  require(identified_, "identifyInputsAndOutputs was not called");
  // NeuralNetworks.h's rules, as the converter checks them before writing a
  // model: the graph, every operation's operands and parameters, and the
  // output shapes recomputed from the inputs'.
  const nnapi_validate::Model view = validation_model();
  const std::vector<nnapi_validate::Finding> findings = nnapi_validate::validate_model(view);
  if (!findings.empty()) {
    std::string msg = findings.front().message;
    if (findings.size() > 1)
      msg += " (and " + std::to_string(findings.size() - 1) + " more finding" +
             (findings.size() > 2 ? "s" : "") + ")";
    const NnError e(Result::BadData, msg);
    if (findings.front().operation >= 0)
      fail_at(static_cast<size_t>(findings.front().operation), e);
    throw e;
  }
  schedule_ = nnapi_validate::execution_order(view);
  finished_ = true;
}

}  // namespace nnrt

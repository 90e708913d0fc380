#include "serialize/model_builder.h"

#include <ATen/ATen.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "nnapi_convert/validate.h"

namespace nnapi_convert {
namespace {

// v's bytes (host order: little-endian) appended to *out.
template <typename T>
void append_bytes(std::vector<uint8_t>* out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out->insert(out->end(), p, p + sizeof(T));
}

class WordWriter {
 public:
  explicit WordWriter(std::vector<int32_t>* words) : words_(words) {}
  void i32(int64_t v) { words_->push_back(static_cast<int32_t>(v)); }
  void f32(double v) {
    float f = static_cast<float>(v);
    int32_t w;
    std::memcpy(&w, &f, sizeof(w));
    words_->push_back(w);
  }
  // Raw bytes, zero-padded to a multiple of 4.
  void bytes(const std::vector<uint8_t>& data) {
    size_t n = (data.size() + 3) / 4;
    size_t start = words_->size();
    words_->resize(start + n, 0);
    if (!data.empty()) std::memcpy(words_->data() + start, data.data(), data.size());
  }
  size_t size() const { return words_->size(); }

 private:
  std::vector<int32_t>* words_;
};

// Little-endian INT32 elements.
std::vector<uint8_t> int32_bytes(const std::vector<int64_t>& v) {
  std::vector<uint8_t> bytes;
  bytes.reserve(v.size() * sizeof(int32_t));
  for (int64_t x : v) append_bytes(&bytes, static_cast<int32_t>(x));
  return bytes;
}

}  // namespace

int32_t ModelBuilder::add_operand(NnapiOperand operand) {
  operands_.push_back(std::move(operand));
  return next_operand_id() - 1;
}

int32_t ModelBuilder::add_weight(NnapiOperand operand, at::Tensor tensor) {
  int64_t size = nnapi::element_size(operand.type);
  for (int64_t d : operand.dims) size *= d;
  int32_t id = add_operand(std::move(operand));
  std::vector<uint8_t> ref;
  ref.reserve(3 * sizeof(int32_t));
  for (int32_t w : {static_cast<int32_t>(weights_.size()), 0, static_cast<int32_t>(size)})
    append_bytes(&ref, w);
  values_.push_back({id, nnapi::ValueSource::NumberedBuffer, std::move(ref), {}});
  weights_.push_back(std::move(tensor));
  return id;
}

int32_t ModelBuilder::add_immediate(nnapi::OperandType type, std::vector<uint8_t> bytes,
                                    std::vector<int64_t> dims) {
  auto key = std::make_pair(static_cast<int32_t>(type), std::move(bytes));
  auto it = immediates_.find(key);
  if (it != immediates_.end()) return it->second;
  int32_t id = add_operand({type, std::move(dims), 0.0, 0, {}});
  values_.push_back({id, nnapi::ValueSource::Immediate, key.second, {}});
  immediates_.emplace(std::move(key), id);
  return id;
}

int32_t ModelBuilder::add_scalar(nnapi::OperandType type, uint32_t bits, size_t bytes) {
  const uint64_t key = (uint64_t{static_cast<uint32_t>(type)} << 32) | bits;
  auto it = scalars_.find(key);
  if (it != scalars_.end()) return it->second;
  // The value's bytes as append_bytes gives them (a bool's one byte, 0 or 1).
  std::vector<uint8_t> data(bytes);
  if (bytes == 1) {
    data[0] = static_cast<uint8_t>(bits);
  } else {
    std::memcpy(data.data(), &bits, bytes);
  }
  const int32_t id = add_immediate(type, std::move(data), {});
  scalars_.emplace(key, id);
  return id;
}

int32_t ModelBuilder::add_int_scalar(int32_t v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return add_scalar(nnapi::OperandType::Int32, bits, sizeof v);
}

int32_t ModelBuilder::add_float_scalar(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return add_scalar(nnapi::OperandType::Float32, bits, sizeof v);
}

int32_t ModelBuilder::add_bool_scalar(bool v) {
  return add_scalar(nnapi::OperandType::Bool, v ? 1 : 0, 1);
}

int32_t ModelBuilder::add_int_vector(const std::vector<int64_t>& v) {
  return add_int_tensor(v, {static_cast<int64_t>(v.size())});
}

int32_t ModelBuilder::add_patched_int_vector(
    const std::vector<int64_t>& v, const std::vector<std::pair<size_t, std::string>>& patches,
    std::vector<int64_t> dims) {
  if (dims.empty()) dims = {static_cast<int64_t>(v.size())};
  const int32_t id = add_operand({nnapi::OperandType::TensorInt32, std::move(dims), 0.0, 0, {}});
  values_.push_back({id, nnapi::ValueSource::Immediate, int32_bytes(v), patches});
  return id;
}

std::vector<int32_t> ModelBuilder::patched_operands() const {
  std::vector<int32_t> ids;
  for (const Value& v : values_)
    if (!v.patches.empty()) ids.push_back(v.operand);
  return ids;
}

int32_t ModelBuilder::add_int_tensor(const std::vector<int64_t>& v, std::vector<int64_t> dims) {
  return add_immediate(nnapi::OperandType::TensorInt32, int32_bytes(v), std::move(dims));
}

void ModelBuilder::add_operation(nnapi::Op op, const std::vector<int32_t>& inputs,
                                 const std::vector<int32_t>& outputs) {
  operations_.push_back(
      {op, static_cast<int32_t>(inputs.size()), static_cast<int32_t>(outputs.size())});
  operation_args_.insert(operation_args_.end(), inputs.begin(), inputs.end());
  operation_args_.insert(operation_args_.end(), outputs.begin(), outputs.end());
  // The level from the validator's rules, which know the operand types each
  // operation takes since which level (RESHAPE of TENSOR_INT32: 6). The views
  // are kept from one operation to the next (their dims' memory too).
  thread_local std::vector<nnapi_validate::Operand> views;
  thread_local std::vector<const nnapi_validate::Operand*> ins, outs;
  if (views.size() < inputs.size() + outputs.size()) views.resize(inputs.size() + outputs.size());
  ins.clear();
  outs.clear();
  size_t k = 0;
  for (const auto* ids : {&inputs, &outputs}) {
    for (int32_t id : *ids) {
      const NnapiOperand& o = operands_.at(id);
      nnapi_validate::Operand& v = views[k++];
      v.type = o.type;
      v.dims.clear();
      for (int64_t d : o.dims) v.dims.push_back(d > 0 ? static_cast<uint32_t>(d) : 0);
      v.scale = static_cast<float>(o.scale);
      v.zero_point = static_cast<int32_t>(o.zero_point);
      (ids == &inputs ? ins : outs).push_back(&v);
    }
  }
  const int level = nnapi_validate::operation_level(static_cast<int32_t>(op), ins, outs, nullptr);
  feature_level_ = std::max(feature_level_, level);
  if (level > level_limit_ && !over_limit_) {
    // The reason's text only for the operation that is reported (the rules
    // run again, as they did).
    std::string why;
    nnapi_validate::operation_level(static_cast<int32_t>(op), ins, outs, &why);
    over_limit_ = OverLimit{op, level, why};
  }
}

std::map<std::string, int> ModelBuilder::operation_histogram() const {
  std::map<std::string, int> h;
  for (const Operation& op : operations_) ++h[nnapi::op_name(op.op)];
  return h;
}

size_t ModelBuilder::args_offset(size_t index) const {
  size_t at = 0;
  for (size_t k = 0; k < index; ++k) at += operations_.at(k).n_inputs + operations_[k].n_outputs;
  return at;
}

ModelBuilder::OperationView ModelBuilder::operation(size_t index) const {
  const Operation& op = operations_.at(index);
  const auto first = operation_args_.begin() + static_cast<std::ptrdiff_t>(args_offset(index));
  return {op.op,
          {first, first + op.n_inputs},
          {first + op.n_inputs, first + op.n_inputs + op.n_outputs}};
}

void ModelBuilder::set_operation_input(size_t index, size_t position, int32_t id) {
  if (position >= static_cast<size_t>(operations_.at(index).n_inputs))
    throw std::out_of_range("operation input position");
  operation_args_.at(args_offset(index) + position) = id;
}

void ModelBuilder::insert_operation(size_t index, nnapi::Op op, const std::vector<int32_t>& inputs,
                                    const std::vector<int32_t>& outputs) {
  const auto at = operation_args_.begin() + static_cast<std::ptrdiff_t>(args_offset(index));
  std::vector<int32_t> ids = inputs;
  ids.insert(ids.end(), outputs.begin(), outputs.end());
  operation_args_.insert(at, ids.begin(), ids.end());
  operations_.insert(
      operations_.begin() + static_cast<std::ptrdiff_t>(index),
      {op, static_cast<int32_t>(inputs.size()), static_cast<int32_t>(outputs.size())});
}

bool ModelBuilder::constant_to_float16(int32_t id) {
  auto v = std::find_if(values_.begin(), values_.end(),
                        [&](const Value& value) { return value.operand == id; });
  if (v == values_.end()) return false;
  NnapiOperand& o = operands_.at(id);
  if (o.type != nnapi::OperandType::TensorFloat32) return false;
  o.type = nnapi::OperandType::TensorFloat16;
  if (v->source == nnapi::ValueSource::NumberedBuffer) {
    int32_t ref[3];
    std::memcpy(ref, v->data.data(), sizeof ref);
    at::Tensor& w = weights_.at(ref[0]);
    w = w.to(at::kHalf);  // round to nearest even, as c10::Half
    ref[2] = static_cast<int32_t>(w.numel() * 2);
    std::memcpy(v->data.data(), ref, sizeof ref);
    return true;
  }
  std::vector<uint8_t> half;
  half.reserve(v->data.size() / 2);
  for (size_t k = 0; k + sizeof(float) <= v->data.size(); k += sizeof(float)) {
    float f;
    std::memcpy(&f, v->data.data() + k, sizeof f);
    append_bytes(&half, c10::Half(f).x);
  }
  v->data = std::move(half);
  return true;
}

std::optional<float> ModelBuilder::float16_overflow(int32_t id) const {
  auto v = std::find_if(values_.begin(), values_.end(),
                        [&](const Value& value) { return value.operand == id; });
  const nnapi::OperandType type = operands_.at(id).type;
  if (v == values_.end() ||
      (type != nnapi::OperandType::TensorFloat32 && type != nnapi::OperandType::Float32)) {
    return std::nullopt;
  }
  at::Tensor w;
  if (v->source == nnapi::ValueSource::NumberedBuffer) {
    int32_t ref[3];
    std::memcpy(ref, v->data.data(), sizeof ref);
    w = weights_.at(ref[0]);
  } else {
    w = at::empty({static_cast<int64_t>(v->data.size() / sizeof(float))}, at::kFloat);
    std::memcpy(w.data_ptr(), v->data.data(), static_cast<size_t>(w.numel()) * sizeof(float));
  }
  // (float32's largest magnitude is a sentinel, max pooling's padding or a
  // mask, which float16's infinity serves as)
  const at::Tensor over = w.isfinite()
                              .logical_and(w.to(at::kHalf).isinf())
                              .logical_and(w.abs().ne(std::numeric_limits<float>::max()));
  if (!over.any().item<bool>()) return std::nullopt;
  return w.masked_select(over).abs().max().item<float>();
}

std::optional<float> ModelBuilder::float32_scalar(int32_t id) const {
  if (operands_.at(id).type != nnapi::OperandType::Float32) return std::nullopt;
  for (const Value& v : values_) {
    if (v.operand != id || v.source != nnapi::ValueSource::Immediate || v.data.size() != 4)
      continue;
    float f;
    std::memcpy(&f, v.data.data(), sizeof f);
    return f;
  }
  return std::nullopt;
}

int32_t ModelBuilder::add_half_scalar(float v) {
  return add_scalar(nnapi::OperandType::Float16, c10::Half(v).x, sizeof(uint16_t));
}

SerializedModel ModelBuilder::serialize() const {
  SerializedModel out;
  WordWriter w(&out.words);
  const int32_t version = 1;
  for (size_t n : {size_t(version), operands_.size(), values_.size(), operations_.size(),
                   inputs_.size(), outputs_.size()}) {
    w.i32(static_cast<int64_t>(n));
  }
  for (const NnapiOperand& o : operands_) {
    w.i32(static_cast<int32_t>(o.type));
    w.i32(static_cast<int64_t>(o.dims.size()));
    w.f32(o.scale);
    w.i32(o.zero_point);
  }
  for (const Value& v : values_) {
    w.i32(v.operand);
    w.i32(static_cast<int32_t>(v.source));
    w.i32(static_cast<int64_t>(v.data.size()));
  }
  for (const Operation& op : operations_) {
    w.i32(static_cast<int32_t>(op.op));
    w.i32(op.n_inputs);
    w.i32(op.n_outputs);
  }
  for (const NnapiOperand& o : operands_) {
    size_t flex = 0;
    for (int64_t d : o.dims) {
      if (d == 0) {
        if (flex >= o.flex_symbols.size()) {
          throw std::logic_error("operand with a load-time flexible dim has no size variable");
        }
        out.patch_lines.push_back("ser_model[" + std::to_string(w.size()) +
                                  "] = " + o.flex_symbols[flex++]);
      }
      w.i32(d == -1 ? 0 : d);
    }
  }
  for (const Value& v : values_) {
    for (const auto& [element, expr] : v.patches) {
      out.patch_lines.push_back("ser_model[" + std::to_string(w.size() + element) + "] = " + expr);
    }
    w.bytes(v.data);
  }
  for (int32_t a : operation_args_) w.i32(a);
  for (int32_t a : inputs_) w.i32(a);
  for (int32_t a : outputs_) w.i32(a);
  return out;
}

}  // namespace nnapi_convert

#include "validate/rule_context.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace nnapi_validate {

namespace {

std::string str(size_t v) { return std::to_string(v); }

std::string quant_text(float scale, int32_t zero_point) {
  std::ostringstream os;
  os << "scale " << scale << ", zero point " << zero_point;
  return os.str();
}

}  // namespace

std::string shape_text(const Shape& s) {
  if (!s.known) return "[unknown rank]";
  std::string r = "[";
  for (size_t k = 0; k < s.d.size(); ++k) {
    r += (k ? ", " : "") + (s.d[k] < 0 ? std::string("?") : std::to_string(s.d[k]));
  }
  return r + "]";
}

Shape declared_shape(const Operand& o) {
  if (o.dims.empty()) return Shape::unknown();
  Shape s = Shape::unknown_of_rank(o.dims.size());
  for (size_t k = 0; k < o.dims.size(); ++k)
    if (o.dims[k] != 0) s.d[k] = o.dims[k];
  return s;
}

std::string type_list(std::initializer_list<T> types) {
  std::string r;
  size_t k = 0;
  for (T t : types) {
    if (k) r += k + 1 == types.size() ? " or " : ", ";
    r += nnapi::operand_type_name(t);
    ++k;
  }
  return r;
}

bool is_quant(T t) {
  return t == T::TensorQuant8Asymm || t == T::TensorQuant16Asymm || t == T::TensorQuant16Symm ||
         t == T::TensorQuant8Symm;
}

Check::Check(int64_t index, int32_t code, const std::vector<const Operand*>& ins,
             const std::vector<const Operand*>& outs, const std::vector<Shape>* in_shapes,
             const Options* options)
    : index_(index),
      code_(code),
      name_(nnapi::op_name(static_cast<nnapi::Op>(code))),
      ins_(ins),
      outs_(outs),
      in_shapes_(in_shapes),
      options_(options),
      out_shapes_(outs.size()) {
  level_ = nnapi::operation_feature_level(code, static_cast<int>(ins.size()));
  level_reason_ = name_;
}

void Check::fail(Rule rule, const std::string& what) const {
  throw Failure{rule, "operation " + std::to_string(index_) + " " + name_ + ": " + what};
}

void Check::input_count(std::initializer_list<size_t> allowed) const {
  input_count(std::vector<size_t>(allowed));
}

void Check::input_count(const std::vector<size_t>& allowed) const {
  if (std::find(allowed.begin(), allowed.end(), n_in()) != allowed.end()) return;
  std::string list;
  size_t k = 0;
  for (size_t n : allowed) {
    if (k) list += k + 1 == allowed.size() ? " or " : ", ";
    list += str(n);
    ++k;
  }
  fail(Rule::InputCount, "has " + str(n_in()) + " inputs; NNAPI's " + name_ + " takes " + list);
}

const nnapi::Form& Check::form() const {
  const nnapi::Signature& s = *nnapi::signature_of_code(code());
  const nnapi::Form& first = s.forms.front();
  if (first.variadic)
    input_count_at_least(first.counts.front());
  else
    input_count(s.counts());
  return *nnapi::form_of(s, n_in(), [&](size_t i) { return type(i); });
}

void Check::input_count_at_least(size_t n) const {
  if (n_in() < n)
    fail(Rule::InputCount,
         "has " + str(n_in()) + " inputs; NNAPI's " + name_ + " takes at least " + str(n));
}

void Check::output_count(size_t n) const {
  if (n_out() != n)
    fail(Rule::OutputCount,
         "has " + str(n_out()) + " outputs; NNAPI's " + name_ + " has " + str(n));
}

void Check::input_type(size_t i, std::initializer_list<T> allowed) const {
  if (std::find(allowed.begin(), allowed.end(), type(i)) != allowed.end()) return;
  fail(Rule::OperandType, "input " + str(i) + " is " + nnapi::operand_type_name(type(i)) +
                              "; NNAPI's " + name_ + " takes " + type_list(allowed) + " there");
}

void Check::output_type(size_t o, std::initializer_list<T> allowed) const {
  if (std::find(allowed.begin(), allowed.end(), out(o).type) != allowed.end()) return;
  fail(Rule::OperandType, "output " + str(o) + " is " + nnapi::operand_type_name(out(o).type) +
                              "; NNAPI's " + name_ + " gives " + type_list(allowed) + " there");
}

void Check::same_type(size_t i, size_t j) const {
  if (type(i) != type(j))
    fail(Rule::OperandType, "input " + str(i) + " is " + nnapi::operand_type_name(type(i)) +
                                " but input " + str(j) + " is " +
                                nnapi::operand_type_name(type(j)) + "; they must have one type");
}

void Check::output_same_type(size_t o, size_t i) const {
  if (out(o).type != type(i))
    fail(Rule::OperandType, "output " + str(o) + " is " + nnapi::operand_type_name(out(o).type) +
                                " but input " + str(i) + " is " +
                                nnapi::operand_type_name(type(i)) + "; they must have one type");
}

namespace {

std::string rank_range(size_t lo, size_t hi) {
  if (lo == hi) return "rank " + str(lo);
  if (hi == SIZE_MAX) return "rank " + str(lo) + " or more";
  if (lo <= 1) return "rank up to " + str(hi);
  return "rank " + str(lo) + " to " + str(hi);
}

}  // namespace

void Check::input_rank(size_t i, size_t lo, size_t hi) const {
  const size_t r = in(i).dims.size();
  if (!nnapi::is_tensor_type(type(i)) || r == 0) return;  // unknown rank: checked by shapes
  if (r < lo || r > hi)
    fail(Rule::Rank, "input " + str(i) + " has rank " + str(r) + "; NNAPI's " + name_ +
                         " takes a tensor of " + rank_range(lo, hi) + " there");
}

void Check::output_rank(size_t o, size_t lo, size_t hi) const {
  const size_t r = out(o).dims.size();
  if (r == 0) return;
  if (r < lo || r > hi)
    fail(Rule::Rank, "output " + str(o) + " has rank " + str(r) + "; NNAPI's " + name_ +
                         " gives a tensor of " + rank_range(lo, hi) + " there");
}

void Check::max_rank(size_t hi) const {
  for (size_t i = 0; i < n_in(); ++i) {
    if (nnapi::is_tensor_type(type(i)) && in(i).dims.size() > hi)
      fail(Rule::Rank, "input " + str(i) + " has rank " + str(in(i).dims.size()) + "; NNAPI's " +
                           name_ + " takes tensors of rank 1 to " + str(hi));
  }
  for (size_t o = 0; o < n_out(); ++o) {
    if (out(o).dims.size() > hi)
      fail(Rule::Rank, "output " + str(o) + " has rank " + str(out(o).dims.size()) + "; NNAPI's " +
                           name_ + " gives tensors of rank 1 to " + str(hi));
  }
}

void Check::same_quant(size_t o, size_t i) const {
  if (!is_quant(out(o).type) || out(o).type != type(i)) return;
  if (out(o).scale != in(i).scale || out(o).zero_point != in(i).zero_point)
    fail(Rule::Quantization, "output " + str(o) + " has " +
                                 quant_text(out(o).scale, out(o).zero_point) + " but input " +
                                 str(i) + " has " + quant_text(in(i).scale, in(i).zero_point) +
                                 "; NNAPI's quantized " + name_ + " keeps them");
}

void Check::fixed_quant(size_t o, float scale, int32_t zero_point) const {
  if (out(o).type != T::TensorQuant8Asymm) return;
  if (out(o).scale != scale || out(o).zero_point != zero_point)
    fail(Rule::Quantization,
         "output " + str(o) + " has " + quant_text(out(o).scale, out(o).zero_point) + "; NNAPI's " +
             name_ + " of TENSOR_QUANT8_ASYMM gives " + quant_text(scale, zero_point));
}

void Check::bias_quant(size_t bias, size_t input, size_t filter) const {
  if (type(input) != T::TensorQuant8Asymm || type(bias) != T::TensorInt32) return;
  if (in(bias).zero_point != 0)
    fail(Rule::Quantization, "input " + str(bias) + " (bias) has zero point " +
                                 std::to_string(in(bias).zero_point) +
                                 "; NNAPI needs 0 for the bias of a quantized input");
  if (type(filter) != T::TensorQuant8Asymm) return;
  // As Android's reference: |input scale x filter scale - bias scale| within
  // 1e-6 of the smaller of the two.
  const double product = static_cast<double>(in(input).scale) * in(filter).scale;
  const double b = in(bias).scale;
  if (!(std::fabs(product - b) <= 1e-6 * std::min(product, b))) {
    std::ostringstream os;
    os << "input " << bias << " (bias) has scale " << b << "; NNAPI needs input scale x filter "
       << "scale = " << in(input).scale << " x " << in(filter).scale << " = " << product;
    fail(Rule::Quantization, os.str());
  }
}

void Check::needs_level(int level, std::string_view what, std::string_view more) {
  if (level > level_) {
    level_ = level;
    level_reason_.assign(what);
    level_reason_.append(more);
  }
}

// ---- values

namespace {

bool readable(const Operand& o, size_t bytes) {
  return o.lifetime == Lifetime::Constant && o.data != nullptr && o.length >= bytes;
}

}  // namespace

std::optional<int32_t> Check::i32(size_t i) const {
  if (!values() || omitted(i) || !readable(in(i), 4)) return std::nullopt;
  if (type(i) != T::Int32 && type(i) != T::UInt32) return std::nullopt;
  int32_t v;
  std::memcpy(&v, in(i).data, 4);
  return v;
}

std::optional<float> Check::f32(size_t i) const {
  if (!values() || omitted(i)) return std::nullopt;
  if (type(i) == T::Float32 && readable(in(i), 4)) {
    float v;
    std::memcpy(&v, in(i).data, 4);
    return v;
  }
  if (type(i) == T::Float16 && readable(in(i), 2)) {
    uint16_t h;
    std::memcpy(&h, in(i).data, 2);
    return nnapi::half_to_float(h);
  }
  return std::nullopt;
}

std::optional<bool> Check::flag(size_t i) const {
  if (!values() || omitted(i) || type(i) != T::Bool || !readable(in(i), 1)) return std::nullopt;
  return in(i).data[0] != 0;
}

std::optional<std::vector<int32_t>> Check::ints(size_t i) const {
  if (!values() || omitted(i) || type(i) != T::TensorInt32) return std::nullopt;
  const Operand& o = in(i);
  if (o.lifetime != Lifetime::Constant || o.data == nullptr) return std::nullopt;
  size_t n = 1;
  for (uint32_t d : o.dims) n *= d;
  if (o.dims.empty() || o.length < 4 * n) return std::nullopt;
  std::vector<int32_t> v(n);
  if (n) std::memcpy(v.data(), o.data, 4 * n);
  return v;
}

void Check::fuse_code(size_t i) const {
  if (auto v = i32(i); v && (*v < 0 || *v > 3))
    fail(Rule::Parameter, "input " + str(i) + " (fused activation) is " + std::to_string(*v) +
                              "; NNAPI's FuseCode is 0 (none), 1 (RELU), 2 (RELU1) or 3 (RELU6)");
}

void Check::at_least(size_t i, int32_t lo, const char* what) const {
  if (auto v = i32(i); v && *v < lo)
    fail(Rule::Parameter, "input " + str(i) + " (" + what + ") is " + std::to_string(*v) +
                              "; NNAPI needs it >= " + std::to_string(lo));
}

int64_t Check::axis(size_t i, int64_t rank, bool negative, const char* what) const {
  auto v = i32(i);
  if (!v || rank < 0) return -1;
  const int64_t lo = negative ? -rank : 0;
  if (*v < lo || *v >= rank)
    fail(Rule::Parameter, "input " + str(i) + " (" + what + ") is " + std::to_string(*v) +
                              "; for a tensor of rank " + std::to_string(rank) + " NNAPI's " +
                              name_ + " takes " + std::to_string(lo) + " to " +
                              std::to_string(rank - 1));
  return *v < 0 ? *v + rank : *v;
}

// ---- shapes

const Shape& Check::shape(size_t i) const {
  static const Shape kUnknown;
  if (!full() || i >= in_shapes_->size()) return kUnknown;
  return (*in_shapes_)[i];
}

int64_t Check::dim(size_t i, size_t k) const {
  const Shape& s = shape(i);
  return s.known && k < s.rank() ? s.d[k] : -1;
}

void Check::set_output(size_t o, Shape s) { out_shapes_.at(o) = std::move(s); }

void Check::equal_dims(int64_t a, int64_t b, const std::string& what) const {
  if (a >= 0 && b >= 0 && a != b)
    fail(Rule::Shape, what + " (" + std::to_string(a) + " and " + std::to_string(b) + ")");
}

Shape broadcast(const Check& c, const Shape& a, const Shape& b) {
  if (!a.known || !b.known) return Shape::unknown();
  const size_t r = std::max(a.rank(), b.rank());
  Shape s = Shape::unknown_of_rank(r);
  for (size_t k = 0; k < r; ++k) {
    const int64_t x = k < r - a.rank() ? 1 : a.d[k - (r - a.rank())];
    const int64_t y = k < r - b.rank() ? 1 : b.d[k - (r - b.rank())];
    if (x == 1) {
      s.d[k] = y;
    } else if (y == 1) {
      s.d[k] = x;
    } else if (x < 0 || y < 0) {
      s.d[k] = x < 0 ? y : x;  // equal or one of them 1 at run time; the known one if any
      if (x < 0 && y < 0) s.d[k] = -1;
    } else if (x != y) {
      c.fail(Rule::Shape, "inputs of shapes " + shape_text(a) + " and " + shape_text(b) +
                              " do not broadcast (dim " + std::to_string(k) + ": " +
                              std::to_string(x) + " vs " + std::to_string(y) + ")");
    } else {
      s.d[k] = x;
    }
  }
  return s;
}

namespace {

void typed_among(Check& c, const TypeLevel* begin, const TypeLevel* end, size_t i) {
  for (const TypeLevel* t = begin; t != end; ++t) {
    if (c.type(i) == t->type) {
      // (The reason's text only where it raises the level.)
      if (t->level > c.level())
        c.needs_level(t->level, std::string(c.name()) + " of " + nnapi::operand_type_name(t->type));
      return;
    }
  }
  std::string list;
  for (const TypeLevel* t = begin; t != end; ++t) {
    if (t != begin) list += t + 1 == end ? " or " : ", ";
    list += nnapi::operand_type_name(t->type);
  }
  c.fail(Rule::OperandType, "input " + std::to_string(i) + " is " +
                                std::string(nnapi::operand_type_name(c.type(i))) + "; NNAPI's " +
                                c.name() + " takes " + list + " there (at any feature level)");
}

// testing::InputTypesOverride's replacements, by operation code.
std::vector<std::pair<int32_t, std::vector<TypeLevel>>>& input_type_overrides() {
  static std::vector<std::pair<int32_t, std::vector<TypeLevel>>> overrides;
  return overrides;
}

}  // namespace

void typed(Check& c, std::initializer_list<TypeLevel> types, size_t i) {
  typed_among(c, types.begin(), types.end(), i);
}

void typed(Check& c) {
  const std::vector<TypeLevel>* types = declared_input_types(c.code());
  if (!types) c.fail(Rule::Operation, "internal: the rule table declares no input types");
  typed_among(c, types->data(), types->data() + types->size(), 0);
}

void float_scalar_for_input(const Check& c, size_t i) {
  c.input_type(i, {c.type(0) == T::TensorFloat16 ? T::Float16 : T::Float32});
}

void same_shape_output(Check& c) {
  if (c.shapes()) c.set_output(0, c.shape(0));
}

int64_t window_out(int64_t in, int64_t filter, int64_t stride, int64_t dilation, int64_t pad_before,
                   int64_t pad_after) {
  if (in < 0 || filter < 0 || stride < 1 || dilation < 1) return -1;
  const int64_t effective = (filter - 1) * dilation + 1;
  const int64_t span = in + pad_before + pad_after - effective;
  if (span < 0) return 0;  // no window fits: a finding for the caller
  return span / stride + 1;
}

int64_t implicit_out(int32_t scheme, int64_t in, int64_t filter, int64_t stride, int64_t dilation) {
  if (in < 0 || filter < 0 || stride < 1 || dilation < 1) return -1;
  const int64_t effective = (filter - 1) * dilation + 1;
  if (scheme == kPaddingSame) return (in + stride - 1) / stride;
  const int64_t span = in - effective + stride;  // VALID: ceil((in - effective + 1) / stride)
  return span <= 0 ? 0 : span / stride;
}

const OpRule* find_rule(int32_t code) {
  static const std::vector<OpRule> table = [] {
    std::vector<OpRule> t;
    add_elementwise_rules(t);
    add_conv_rules(t);
    add_shape_rules(t);
    add_space_batch_rules(t);
    add_lookup_rules(t);
    add_normalization_rules(t);
    add_random_rules(t);
    add_detection_rules(t);
    add_recurrent_rules(t);
    std::sort(t.begin(), t.end(), [](const OpRule& a, const OpRule& b) { return a.code < b.code; });
    return t;
  }();
  auto it = std::lower_bound(table.begin(), table.end(), code, [](const OpRule& r, int32_t c) {
    return static_cast<int32_t>(r.code) < c;
  });
  return it != table.end() && static_cast<int32_t>(it->code) == code ? &*it : nullptr;
}

const std::vector<TypeLevel>* declared_input_types(int32_t code) {
  for (auto it = input_type_overrides().rbegin(); it != input_type_overrides().rend(); ++it) {
    if (it->first == code) return &it->second;
  }
  const OpRule* rule = find_rule(code);
  return rule && !rule->input0.empty() ? &rule->input0 : nullptr;
}

std::optional<int> input_type_level(nnapi::Op code, nnapi::OperandType type) {
  const std::vector<TypeLevel>* types = declared_input_types(static_cast<int32_t>(code));
  if (!types)
    throw std::invalid_argument(std::string("input_type_level: the validator's table declares no "
                                            "input types for ") +
                                nnapi::op_name(code));
  for (const TypeLevel& t : *types) {
    if (t.type == type) return std::max(t.level, level_with_inputs(code, 1));
  }
  return std::nullopt;
}

bool accepts(nnapi::Op code, nnapi::OperandType type, int feature_level) {
  const std::optional<int> level = input_type_level(code, type);
  return level && *level <= feature_level;
}

int level_with_inputs(nnapi::Op code, int n_inputs) {
  return nnapi::operation_feature_level(static_cast<int32_t>(code), n_inputs);
}

namespace testing {

InputTypesOverride::InputTypesOverride(nnapi::Op code,
                                       std::vector<std::pair<nnapi::OperandType, int>> types) {
  std::vector<TypeLevel> table;
  for (const auto& [type, level] : types) table.push_back({type, level});
  input_type_overrides().emplace_back(static_cast<int32_t>(code), std::move(table));
}

InputTypesOverride::~InputTypesOverride() { input_type_overrides().pop_back(); }

}  // namespace testing

}  // namespace nnapi_validate

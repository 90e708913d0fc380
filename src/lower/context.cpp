#include "lower/context.h"

#include <ATen/ATen.h>

#include "lower/fusion.h"
#include "nnapi_convert/validate.h"

namespace nnapi_convert {

std::string value_name(const Value* v) { return "%" + v->debugName(); }

std::string type_kind_name(c10::TypeKind kind) { return c10::typeKindToString(kind); }

int32_t LoweringContext::push_operand(const Operand& o, const at::Tensor* weight) {
  // Immediates are added to the model directly; keep ids aligned.
  operands_.resize(model_.next_operand_id());
  int32_t id = model_.next_operand_id();
  NnapiOperand n{o.type, fix_shape(o.shape, o.dim_order), o.scale, o.zero_point, {}};
  for (size_t d = 0; d < n.dims.size(); ++d) {
    if (n.dims[d] == 0) {
      n.flex_symbols.push_back(flex_name(id, torch_dim(o.dim_order, static_cast<int64_t>(d))));
    }
  }
  if (weight) {
    model_.add_weight(std::move(n), *weight);
  } else {
    model_.add_operand(std::move(n));
  }
  operands_.push_back(o);
  return id;
}

int32_t LoweringContext::add_tensor_operand(const Value* v, const Operand& o) {
  check(!has_operand(v), [&] { return "value " + value_name(v) + " is defined twice"; });
  int32_t id = push_operand(o);
  operand_of_[v] = id;
  return id;
}

int32_t LoweringContext::add_anonymous_operand(const Operand& o) { return push_operand(o); }

OperandHandle LoweringContext::get_operand(const Value* v) const {
  auto it = operand_of_.find(v);
  if (it == operand_of_.end()) {
    if (has_constant(v)) {
      fail("value " + value_name(v) +
           " is a constant here, but this operation needs a tensor computed by the model");
    }
    fail("value " + value_name(v) + " is not a tensor the model computes");
  }
  auto re = reinterpreted_.find(v);
  if (re != reinterpreted_.end()) return {it->second, re->second};
  return {it->second, operands_.at(it->second)};
}

OperandHandle LoweringContext::get_operand_fixed_size(const Value* v) const {
  auto r = get_operand(v);
  for (int64_t s : r.op.shape) {
    check(s != 0, [&] {
      return "flexible size is not supported for this operand (" + value_name(v) + " has shape " +
             shape_str(r.op.shape) + "); give this input fixed sizes in --input";
    });
  }
  return r;
}

OperandHandle LoweringContext::get_operand_or_constant(const Value* v, DimOrder order) {
  if (has_operand(v)) return get_operand(v);
  int32_t id = add_weight(constant_tensor(v), order);
  return {id, operands_.at(id)};
}

OperandHandle LoweringContext::get_weight_operand(const Value* v) {
  int32_t id = add_weight(constant_tensor(v));
  return {id, operands_.at(id)};
}

void LoweringContext::alias(const Value* v, const Value* source) {
  auto [id, op] = get_operand(source);
  operand_of_[v] = id;
  if (reinterpreted_.count(source)) reinterpreted_[v] = op;
  if (auto t = torch_dtype_of(source)) torch_dtypes_[v] = *t;
}

bool LoweringContext::forward_value(const Value* v, const Value* source) {
  if (has_constant(source)) {
    add_constant(v, v->type(), constant(source).value);
  } else if (has_symbolic(source)) {
    add_symbolic(v, sym_int_list(source));
  } else if (has_operand(source)) {
    alias(v, source);
  } else if (has_sequence(source)) {
    add_sequence(v, sequence(source));
  } else {
    return false;
  }
  return true;
}

void LoweringContext::reinterpret(const Value* v, int32_t id, const Operand& o) {
  check(!has_operand(v), [&] { return "value " + value_name(v) + " is defined twice"; });
  operand_of_[v] = id;
  reinterpreted_[v] = o;
}

Operand LoweringContext::tensor_to_operand(const at::Tensor& t, DimOrder order) const {
  Operand o;
  o.shape = t.sizes().vec();
  o.dim_order = order;
  switch (t.scalar_type()) {
    case at::kFloat:
      o.type = nnapi::OperandType::TensorFloat32;
      break;
    case at::kInt:
      o.type = nnapi::OperandType::TensorInt32;
      break;
    case at::kQUInt8:
      o.type = nnapi::OperandType::TensorQuant8Asymm;
      o.scale = t.q_scale();
      o.zero_point = t.q_zero_point();
      break;
    case at::kBool:
      o.type = nnapi::OperandType::TensorBool8;
      break;
    case at::kQInt32:
      o.type = nnapi::OperandType::TensorInt32;
      o.scale = t.q_scale();
      o.zero_point = t.q_zero_point();
      check(o.zero_point == 0, "a qint32 tensor must have zero_point 0");
      break;
    default:
      fail(std::string("can't handle a tensor of dtype ") + c10::toString(t.scalar_type()) +
           " (NNAPI takes float32, int32, quint8, qint32 and bool here)");
  }
  return o;
}

int32_t LoweringContext::add_weight(const at::Tensor& t, DimOrder order) {
  Operand o = tensor_to_operand(t, order);
  // An NHWC operand's data is laid out NHWC too.
  at::Tensor stored = order == DimOrder::ChannelsLast ? t.permute(kToNhwc) : t;
  return push_operand(o, &stored);
}

int32_t LoweringContext::add_input(int arg_index, const Value* v, const Operand& o) {
  int32_t id = add_tensor_operand(v, o);
  model_.add_input(id);
  for (size_t d = 0; d < o.shape.size(); ++d) {
    if (o.shape[d] == 0) {
      compute_operand_shape(
          id, static_cast<int64_t>(d),
          "args[" + std::to_string(arg_index) + "].shape[" + std::to_string(d) + "]");
    }
  }
  return id;
}

void LoweringContext::add_constant(const Value* v, c10::TypePtr type, c10::IValue value) {
  check(!has_constant(v), [&] { return "constant " + value_name(v) + " is defined twice"; });
  constants_.emplace(v, Constant{std::move(type), std::move(value)});
}

const Constant& LoweringContext::constant(const Value* v) const {
  auto it = constants_.find(v);
  if (it == constants_.end()) {
    if (has_symbolic(v)) {
      fail(value_name(v) +
           " is computed from the size of a flexible input dimension, known only when the "
           "model is loaded; this node needs it at conversion time (view and reshape take "
           "such sizes): give that dimension a fixed size in --input");
    }
    fail("could not find a constant value for " + value_name(v) +
         "; NNAPI needs this argument to be known when the model is converted");
  }
  return it->second;
}

const Constant& LoweringContext::constant(const Value* v, c10::TypeKind kind) const {
  const Constant& c = constant(v);
  if (c.type->kind() != kind) {
    fail("expected a constant of type " + type_kind_name(kind) + ", but got " +
         type_kind_name(c.type->kind()) + " for " + value_name(v));
  }
  return c;
}

int64_t LoweringContext::constant_int(const Value* v) const {
  return constant(v, c10::TypeKind::IntType).value.toInt();
}

double LoweringContext::constant_float(const Value* v) const {
  return constant(v, c10::TypeKind::FloatType).value.toDouble();
}

double LoweringContext::constant_number(const Value* v) const {
  const Constant& c = constant(v);
  const c10::TypeKind k = c.type->kind();
  if (k != c10::TypeKind::FloatType && k != c10::TypeKind::IntType &&
      k != c10::TypeKind::BoolType && k != c10::TypeKind::NumberType) {
    fail("expected a number, but got a constant of type " + type_kind_name(k) + " for " +
         value_name(v));
  }
  return c.value.toScalar().toDouble();
}

bool LoweringContext::constant_bool(const Value* v) const {
  return constant(v, c10::TypeKind::BoolType).value.toBool();
}

at::Tensor LoweringContext::constant_tensor(const Value* v) const {
  return constant(v, c10::TypeKind::TensorType).value.toTensor();
}

std::vector<int64_t> LoweringContext::constant_int_list(const Value* v) const {
  const Constant& c = constant(v);
  auto list = c.type->cast<c10::ListType>();
  if (!list || list->getElementType()->kind() != c10::TypeKind::IntType) {
    fail("can't handle a size argument of type " + c.type->repr_str() + " for " + value_name(v));
  }
  return c.value.toIntVector();
}

nnapi::Fuse LoweringContext::fuse_following_activation(const Value* v) {
  using nnapi::Fuse;
  if (!plan_ || !plan_->fuse_activations() || v->uses().size() != 1) return Fuse::None;
  // NeuralNetworks.h: ADD, SUB, MUL and DIV of TENSOR_INT32 take no fused activation.
  for (const Value* in : v->node()->inputs()) {
    if (has_operand(in) && get_operand(in).op.type == nnapi::OperandType::TensorInt32)
      return Fuse::None;
  }
  const Node* user = v->uses()[0].user;
  const std::string kind = user->kind().toQualString();
  Fuse fuse = Fuse::None;
  if (kind == "aten::relu") {
    fuse = Fuse::Relu;
  } else if (kind == "aten::relu6") {
    fuse = Fuse::Relu6;
  } else if (kind == "aten::hardtanh" && user->inputs().size() == 3 &&
             has_constant(user->input(1)) && has_constant(user->input(2))) {
    const c10::IValue& lo = constant(user->input(1)).value;
    const c10::IValue& hi = constant(user->input(2)).value;
    if (lo.isScalar() && hi.isScalar()) {
      const double l = lo.toScalar().toDouble(), h = hi.toScalar().toDouble();
      if (l == 0 && h == 6) fuse = Fuse::Relu6;
      if (l == -1 && h == 1) fuse = Fuse::Relu1;
    }
  }
  if (fuse != Fuse::None) plan_->fold_activation(user);
  return fuse;
}

SymInt LoweringContext::sym_int(const Value* v) const {
  auto it = symbolic_.find(v);
  if (it != symbolic_.end() && it->second.size() == 1 &&
      v->type()->kind() != c10::TypeKind::ListType) {
    return it->second[0];
  }
  const c10::IValue& c = constant(v).value;
  if (c.isInt()) return {c.toInt(), ""};
  if (c.isTensor() && c.toTensor().dim() == 0 && !c.toTensor().is_floating_point()) {
    return {c.toTensor().item<int64_t>(), ""};
  }
  fail(value_name(v) + " is not an int");
}

std::vector<SymInt> LoweringContext::sym_int_list(const Value* v) const {
  auto it = symbolic_.find(v);
  if (it != symbolic_.end()) return it->second;
  std::vector<SymInt> out;
  for (int64_t x : constant_int_list(v)) out.push_back({x, ""});
  return out;
}

bool LoweringContext::constant_is_none(const Value* v) const {
  return constant(v).type->kind() == c10::TypeKind::NoneType;
}

void LoweringContext::add_sequence(const Value* v, std::vector<const Value*> values) {
  check(!has_sequence(v), [&] { return "sequence " + value_name(v) + " is defined twice"; });
  sequences_.emplace(v, std::move(values));
}

const std::vector<const Value*>& LoweringContext::sequence(const Value* v) const {
  auto it = sequences_.find(v);
  if (it == sequences_.end()) fail("value " + value_name(v) + " is not a list of tensors");
  return it->second;
}

OperandHandle LoweringContext::add_output(const Value* v, const Operand& rec,
                                          const std::vector<SymInt>& dims,
                                          const std::vector<std::string>& asserts) {
  Operand o = rec;
  o.shape.clear();
  for (const SymInt& d : dims) o.shape.push_back(d.is_constant() ? d.value : 0);
  const int32_t id = v ? add_tensor_operand(v, o) : add_anonymous_operand(o);
  for (size_t d = 0; d < dims.size(); ++d) {
    if (d < asserts.size() && !asserts[d].empty()) add_shape_line("assert " + asserts[d]);
    if (!dims[d].is_constant()) compute_operand_shape(id, static_cast<int64_t>(d), dims[d].expr);
  }
  return {id, o};
}

void LoweringContext::compute_operand_shape(int32_t id, int64_t dim, const std::string& expr) {
  shape_lines_.push_back(flex_name(id, dim) + " = " + expr);
  flex_defs_[flex_name(id, dim)] = expr;
}

void LoweringContext::add_int(const Value* v, const SymInt& i) {
  if (i.is_constant()) {
    add_constant(v, v->type(), c10::IValue(i.value));
  } else {
    add_symbolic(v, {i});
  }
}

std::string LoweringContext::resolve_flex(std::string expr) const {
  for (auto it = flex_defs_.find(expr); it != flex_defs_.end(); it = flex_defs_.find(expr))
    expr = it->second;
  return expr;
}

void LoweringContext::forward_operand_shape(int32_t out_id, int64_t out_dim, int32_t in_id,
                                            int64_t in_dim) {
  compute_operand_shape(out_id, out_dim, flex_name(in_id, in_dim));
}

bool LoweringContext::takes(nnapi::Op op, nnapi::OperandType type) const {
  return nnapi_validate::accepts(op, type, feature_level_limit_);
}

bool LoweringContext::has_operation(nnapi::Op op, int n_inputs) const {
  return nnapi_validate::level_with_inputs(op, n_inputs) <= feature_level_limit_;
}

int LoweringContext::android_api_taking(nnapi::Op op, nnapi::OperandType type) const {
  const std::optional<int> level = nnapi_validate::input_type_level(op, type);
  if (!level || *level > nnapi::kMaxFeatureLevel) return 0;
  return std::max(nnapi::kMinAndroidApi, nnapi::android_api_of_feature_level(*level));
}

}  // namespace nnapi_convert

// Comparisons, logical operations and selection of tensors the model
// computes (constant ones fold during conversion): eq, ne, gt, ge, lt, le
// (NNAPI's EQUAL ... LESS_EQUAL, broadcasting, a TENSOR_BOOL8 result),
// logical_and/or/xor/not and their bitwise forms on bools (LOGICAL_AND,
// LOGICAL_OR, NOT_EQUAL, LOGICAL_NOT), and where (SELECT, whose operands are
// first broadcast to the result's shape: NNAPI's SELECT does not broadcast).
// All are NNAPI feature level 3 (Android 10). How bools are held: logical.h.
#include "lower/logical.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "lower/emit.h"
#include "lower/pointwise.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {

using nnapi::Fuse;
using nnapi::Op;
using nnapi::OperandType;

bool is_bool_value(const LoweringContext& cx, const Value* v) {
  const auto type = v->type()->cast<c10::TensorType>();
  if (type && type->scalarType() == at::kBool) return true;
  // (Recorded bool before it is bound too: a lowering that moves a bool's
  // 0/1 records its output so, e.g. padding.cpp's.)
  if (cx.torch_dtype_of(v) == at::kBool) return true;
  if (cx.has_operand(v)) return cx.get_operand(v).op.type == OperandType::TensorBool8;
  if (!cx.has_constant(v)) return false;
  const c10::IValue& c = cx.constant(v).value;
  return c.isBool() || (c.isTensor() && c.toTensor().scalar_type() == at::kBool);
}

namespace {

OperandHandle weight(LoweringContext& cx, const at::Tensor& t,
                     DimOrder order = DimOrder::Contiguous) {
  const int32_t id = cx.add_weight(t.contiguous(), order);
  return {id, cx.operand(id)};
}

// A (1) tensor holding the real value `v` exactly in `like`'s type: for a
// quantized `like`, a QUANT8 tensor of its own scale |v| (NNAPI compares
// quantized tensors by their real values, each with its own parameters).
at::Tensor scalar_value(double v, const Operand& like, const char* what) {
  switch (like.type) {
    case OperandType::TensorFloat32:
      return at::full({1}, v, at::kFloat);
    case OperandType::TensorInt32:
      check(v == std::nearbyint(v) && std::abs(v) < 2147483648.0, [&] {
        return std::string(what) + " of an integer tensor and the number " + std::to_string(v) +
               ": NNAPI compares it as int32; compare with an integer";
      });
      return at::full({1}, static_cast<int32_t>(v), at::kInt);
    case OperandType::TensorQuant8Asymm: {
      const auto f = static_cast<float>(v);
      const double scale = f == 0.0f ? 1.0 : std::abs(f);
      const int64_t zero_point = f < 0.0f ? 1 : 0;
      const int64_t q = f > 0.0f ? 1 : 0;  // (q - zero_point) * scale = v
      return at::_make_per_tensor_quantized_tensor(at::full({1}, q, at::kByte), scale, zero_point);
    }
    case OperandType::TensorBool8:
      return at::full({1}, v != 0, at::kBool);
    default:
      fail(std::string(what) + " of a " + nnapi::operand_type_name(like.type) +
           " tensor is not supported");
  }
}

OperandHandle scalar_like(LoweringContext& cx, double v, const Operand& like, const char* what) {
  return weight(cx, scalar_value(v, like, what));
}

}  // namespace

OperandHandle bool8_of(LoweringContext& cx, const OperandHandle& t) {
  if (t.op.type == OperandType::TensorBool8) return t;
  check(t.op.type != OperandType::TensorQuant8Asymm || t.op.scale > 0,
        "internal: quantized operand without a scale");
  return emit_binary(cx, Op::NotEqual, t, scalar_like(cx, 0.0, t.op, "truth"));
}

OperandHandle bool8_operand(LoweringContext& cx, const Value* v) {
  if (cx.has_operand(v)) return bool8_of(cx, cx.get_operand(v));
  if (const std::optional<double> n = number_operand(cx, v)) {
    return weight(cx, at::full({1}, *n != 0, at::kBool));
  }
  at::Tensor t = cx.constant_tensor(v);
  check(!t.is_quantized() && !t.is_complex(), "a quantized or complex constant as a bool");
  t = t.ne(0);
  return weight(cx, t.dim() == 0 ? t.reshape({1}) : t);
}

OperandHandle emit_expand(LoweringContext& cx, const OperandHandle& x,
                          const std::vector<SymInt>& target, const Value* out) {
  const Shape& s = x.op.shape;
  check(s.size() == target.size(), "internal: emit_expand needs the target's rank");
  std::vector<int64_t> multiples(s.size(), 1);
  std::vector<std::pair<size_t, std::string>> patches;
  Shape out_shape;
  bool any = false;
  for (size_t d = 0; d < s.size(); ++d) {
    const SymInt& t = target[d];
    out_shape.push_back(t.is_constant() ? t.value : 0);
    const bool same = t.is_constant() ? s[d] == t.value : s[d] == 0;
    if (same) continue;
    check(s[d] == 1, [&] {
      return "can't broadcast shape " + shape_str(s) + " to a size of " + t.str() + " in dim " +
             std::to_string(d);
    });
    any = true;
    // NNAPI axis a holds PyTorch dim d.
    const auto a = static_cast<size_t>(nnapi_axis(x.op, static_cast<int64_t>(d)));
    if (t.is_constant()) {
      multiples[a] = t.value;
    } else {
      multiples[a] = 0;
      patches.emplace_back(a, t.expr);
    }
  }
  if (!any) {
    check(out == nullptr, "internal: emit_expand bound to a value when nothing is broadcast");
    return x;
  }
  ModelBuilder& m = cx.model();
  const int32_t multiples_id =
      patches.empty() ? m.add_int_vector(multiples) : m.add_patched_int_vector(multiples, patches);
  const OperandHandle y = cx.add_output(out, x.op.with_shape(out_shape), target);
  add_tile(m, x.id, multiples_id, y.id);
  return y;
}

OperandHandle bool_as(LoweringContext& cx, const OperandHandle& b, OperandType type,
                      const Value* out) {
  check(b.op.type == OperandType::TensorBool8, "internal: bool_as needs a TENSOR_BOOL8");
  const std::vector<SymInt> dims = sym_shape(b);
  const Shape ones_shape(b.op.shape.size(), 1);
  const DimOrder order = b.op.shape.size() == 4 ? b.op.dim_order : DimOrder::Contiguous;
  auto filled = [&](int32_t v) {
    at::Tensor t = at::full(ones_shape.empty() ? Shape{1} : ones_shape, v,
                            type == OperandType::TensorFloat32 ? at::kFloat : at::kInt);
    OperandHandle c = weight(cx, t, order);
    return ones_shape.empty() ? c : emit_expand(cx, c, dims);
  };
  const OperandHandle ones = filled(1), zeros = filled(0);
  Operand o = b.op;
  o.type = type;
  const OperandHandle y = cx.add_output(out, o, dims);
  add_select(cx.model(), b.id, ones.id, zeros.id, y.id);
  return y;
}

namespace {

// ---- comparisons

// a op b == b mirrored(op) a.
Op mirrored(Op op) {
  switch (op) {
    case Op::Greater:
      return Op::Less;
    case Op::GreaterEqual:
      return Op::LessEqual;
    case Op::Less:
      return Op::Greater;
    case Op::LessEqual:
      return Op::GreaterEqual;
    default:
      return op;  // EQUAL, NOT_EQUAL
  }
}

// The operand `v` is compared as beside computed `x`: bools as TENSOR_BOOL8,
// a number or constant tensor in x's type, a computed tensor of x's type.
OperandHandle compared_beside(LoweringContext& cx, const Value* v, const OperandHandle& x,
                              const char* what) {
  if (x.op.type == OperandType::TensorBool8) return bool8_operand(cx, v);
  if (cx.has_operand(v)) {
    OperandHandle y = cx.get_operand(v);
    check(y.op.type == x.op.type, [&] {
      return std::string(what) + " of a " + nnapi::operand_type_name(x.op.type) + " and a " +
             nnapi::operand_type_name(y.op.type) +
             " tensor: NNAPI compares tensors of one type; convert one side first";
    });
    return y;
  }
  if (const std::optional<double> n = number_operand(cx, v)) return scalar_like(cx, *n, x.op, what);
  const at::Tensor c = cx.constant_tensor(v);
  if (c.dim() == 0 && !c.is_quantized()) return scalar_like(cx, c.item<double>(), x.op, what);
  check(x.op.type == OperandType::TensorFloat32 || x.op.type == OperandType::TensorInt32, [&] {
    return std::string(what) + " of a " + nnapi::operand_type_name(x.op.type) +
           " tensor and a constant tensor is not supported";
  });
  return elementwise_operands(cx, x, v).second;
}

void lower_compare(LoweringContext& cx, const Node* node, Op op) {
  check(node->inputs().size() == 2, "malformed comparison");
  const char* what = node->kind().toUnqualString();
  const Value* a = node->input(0);
  const Value* b = node->input(1);
  if (!cx.has_operand(a)) {  // a constant or a number on the left: b mirrored(op) a
    std::swap(a, b);
    op = mirrored(op);
  }
  OperandHandle x = cx.get_operand(a);
  if (is_bool_value(cx, a) || (cx.has_operand(b) && is_bool_value(cx, b))) {
    check(is_bool_value(cx, a) && (!cx.has_operand(b) || is_bool_value(cx, b)),
          [&] { return std::string(what) + " of a bool and a non-bool tensor is not supported"; });
    x = bool8_of(cx, x);
  }
  OperandHandle y = compared_beside(cx, b, x, what);
  if (x.op.type == OperandType::TensorBool8) y = bool8_of(cx, y);
  // Quantized sides keep their own parameters (align_layouts compares types only).
  auto [x2, y2] = align_layouts(cx, x, y);
  emit_binary(cx, op, x2, y2, Fuse::None, node->output());
}

// ---- logical operations on bools (and PyTorch's truth of numbers)

// Both int32 0/1 bools: an int32 result by `int_op` (MINIMUM for and,
// MAXIMUM for or), as before NNAPI's LOGICAL_* were used, so that a mask
// computed from bool inputs alone stays int32 (consumers such as
// nn.TransformerEncoder's fast path take it so).
void lower_logical_binary(LoweringContext& cx, const Node* node, Op op, std::optional<Op> int_op) {
  check(node->inputs().size() == 2, "malformed logical operation");
  const char* what = node->kind().toUnqualString();
  const Value* a = node->input(0);
  const Value* b = node->input(1);
  if (node->kind().toUnqualString() != std::string("logical_and") &&
      node->kind().toUnqualString() != std::string("logical_or") &&
      node->kind().toUnqualString() != std::string("logical_xor")) {
    check(is_bool_value(cx, a) && is_bool_value(cx, b), [&] {
      return std::string(what) +
             " is supported on bool tensors only (NNAPI has no integer bitwise operations)";
    });
  }
  if (!cx.has_operand(a)) std::swap(a, b);
  if (int_op && cx.has_operand(b) && is_bool_value(cx, a) && is_bool_value(cx, b)) {
    const OperandHandle x = cx.get_operand(a), y = cx.get_operand(b);
    if (x.op.type == OperandType::TensorInt32 && y.op.type == OperandType::TensorInt32) {
      auto [x2, y2] = align_layouts(cx, x, y);
      emit_binary(cx, *int_op, x2, y2, Fuse::None, node->output());
      cx.set_torch_dtype(node->output(), at::kBool);
      return;
    }
  }
  auto [x, y] = align_layouts(cx, bool8_operand(cx, a), bool8_operand(cx, b));
  emit_binary(cx, op, x, y, Fuse::None, node->output());
  // emit_binary gives a comparison (NOT_EQUAL, logical_xor) a BOOL8 result,
  // and LOGICAL_AND/OR their inputs' BOOL8 type.
}

// logical_not (and bitwise_not of a bool): LOGICAL_NOT of the truth; of an
// int32 0/1 bool, 1 - m through float32 (an int32 result, see above).
void lower_logical_not(LoweringContext& cx, const Node* node) {
  const Value* v = node->input(0);
  if (node->kind() != c10::aten::logical_not) {
    check(is_bool_value(cx, v),
          "bitwise_not is supported on bool tensors only (NNAPI has no "
          "integer bitwise operations)");
  }
  const OperandHandle x = cx.get_operand(v);
  if (x.op.type == OperandType::TensorInt32 && is_bool_value(cx, v)) {
    Operand f = x.op;
    f.type = OperandType::TensorFloat32;
    const OperandHandle xf = emit_unary_to(cx, Op::Cast, x, f);
    const OperandHandle inv = emit_binary(cx, Op::Sub, weight(cx, at::ones({1}, at::kFloat)), xf);
    emit_unary_to(cx, Op::Cast, inv, x.op.with_shape(inv.op.shape), node->output());
    cx.set_torch_dtype(node->output(), at::kBool);
    return;
  }
  const OperandHandle b = bool8_of(cx, x);
  emit_unary_to(cx, Op::LogicalNot, b, b.op, node->output());
}

// ---- where(condition, x, y): SELECT of operands broadcast to the result.

// The dtype of where's result: that of a computed x or y (float32, int32;
// the graph of a loaded model carries no dtypes), else float32 unless both
// are integers.
OperandType result_type(LoweringContext& cx, const Value* a, const Value* b) {
  for (const Value* v : {a, b}) {
    if (!cx.has_operand(v)) continue;
    const OperandType t = cx.get_operand(v).op.type;
    check(t == OperandType::TensorFloat32 || t == OperandType::TensorInt32, [&] {
      return std::string("where of a ") + nnapi::operand_type_name(t) +
             " tensor is not supported (float32 and integer tensors are)";
    });
    return t;
  }
  auto integer = [&](const Value* v) {
    const c10::IValue& c = cx.constant(v).value;
    return c.isInt() || (c.isTensor() && !c.toTensor().is_floating_point());
  };
  return integer(a) && integer(b) ? OperandType::TensorInt32 : OperandType::TensorFloat32;
}

}  // namespace

OperandHandle emit_where(LoweringContext& cx, const Value* condition, const Value* a,
                         const Value* b, const Value* out) {
  const OperandType type = result_type(cx, a, b);
  OperandHandle mask = bool8_operand(cx, condition);
  // The result's rank: constants are made of it here (a RESHAPE of an int32
  // operand would need feature level 6).
  size_t rank = mask.op.shape.size();
  for (const Value* v : {a, b}) {
    if (cx.has_operand(v)) {
      rank = std::max(rank, cx.get_operand(v).op.shape.size());
    } else if (!number_operand(cx, v)) {
      rank = std::max(rank, static_cast<size_t>(cx.constant_tensor(v).dim()));
    }
  }
  auto at_rank = [&](const at::Tensor& c) {
    std::vector<int64_t> dims(rank - std::min<size_t>(rank, c.dim()), 1);
    for (int64_t d : c.sizes()) dims.push_back(d);
    return weight(cx, c.reshape(dims.empty() ? std::vector<int64_t>{1} : dims));
  };
  auto side = [&](const Value* v) -> OperandHandle {
    if (cx.has_operand(v)) {
      OperandHandle t = cx.get_operand(v);
      check(t.op.type == type, [&] {
        return std::string("where of a ") + nnapi::operand_type_name(t.op.type) + " tensor for a " +
               nnapi::operand_type_name(type) +
               " result is not supported; convert it to the result's dtype first";
      });
      return t;
    }
    if (const std::optional<double> n = number_operand(cx, v)) {
      Operand like;
      like.type = type;
      return at_rank(scalar_value(*n, like, "where").reshape({}));
    }
    at::Tensor c = cx.constant_tensor(v);
    check(!c.is_quantized() && !c.is_complex(), "where of a quantized or complex constant");
    return at_rank(c.to(type == OperandType::TensorFloat32 ? at::kFloat : at::kInt));
  };
  OperandHandle x = side(a), y = side(b);
  // The result's shape, and its layout: NHWC when a 4-D operand is and the result is 4-D.
  const Shape shape = broadcast_shape(broadcast_shape(mask.op.shape, x.op.shape), y.op.shape);
  std::vector<SymInt> dims = broadcast_dims(shape, {&mask, &x, &y});
  // The result's layout is the mask's when both are 4-D (NNAPI's TRANSPOSE
  // takes no TENSOR_BOOL8), else NCHW: x and y are laid out so.
  const DimOrder order =
      shape.size() == 4 && mask.op.shape.size() == 4 ? mask.op.dim_order : DimOrder::Contiguous;
  // x and y at the result's rank and layout.
  auto placed = [&](OperandHandle t) {
    const size_t rank = t.op.shape.size();
    if (rank < shape.size()) {
      check(t.op.dim_order != DimOrder::ChannelsLast, "internal: NHWC operand of rank < 4");
      std::vector<SymInt> d(shape.size() - rank, SymInt{1, ""});
      for (const SymInt& s : sym_shape(t)) d.push_back(s);
      t = emit_reshape(cx, t, d);
    }
    return shape.size() == 4 ? emit_relayout(cx, t, order) : t;
  };
  x = emit_expand(cx, placed(x), dims);
  y = emit_expand(cx, placed(y), dims);
  if (mask.op.shape != shape) {
    // LOGICAL_AND with an all-true tensor of the result's shape broadcasts
    // the mask: (x == x) or (x != x) is true for every x, NaN too.
    const OperandHandle all = emit_binary(cx, Op::LogicalOr, emit_binary(cx, Op::Equal, x, x),
                                          emit_binary(cx, Op::NotEqual, x, x));
    mask = emit_binary(cx, Op::LogicalAnd, all, mask);
  }
  const OperandHandle result = cx.add_output(out, x.op, dims);
  add_select(cx.model(), mask.id, x.id, y.id, result.id);
  return result;
}

namespace {

void lower_where(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 3,
        "where(condition) (nonzero) is not supported: NNAPI tensors have sizes fixed before "
        "the model runs");
  emit_where(cx, node->input(0), node->input(1), node->input(2), node->output());
}

}  // namespace

void register_logical_ops(LoweringTable& t) {
  // The note of a family of kinds sits on its first kind.
  const char* compare_note =
      "also ne, gt, ge, lt, le: EQUAL ... LESS_EQUAL (feature level 3) of a computed tensor and "
      "a tensor, constant or number (float32, int32, quantized, bool), broadcasting; the result "
      "is TENSOR_BOOL8, a bool model output leaves as int32 0/1 made bool by the converted "
      "module";
  for (auto [kind, op, note] :
       {std::tuple{"aten::eq", Op::Equal, compare_note}, std::tuple{"aten::ne", Op::NotEqual, ""},
        std::tuple{"aten::gt", Op::Greater, ""}, std::tuple{"aten::ge", Op::GreaterEqual, ""},
        std::tuple{"aten::lt", Op::Less, ""}, std::tuple{"aten::le", Op::LessEqual, ""}}) {
    t.add(kind, [op = op](LoweringContext& cx, const Node* n) { lower_compare(cx, n, op); })
        .with_folds()
        .with_note(note);
  }
  const char* and_note =
      "also or, xor and the bitwise forms on bools: LOGICAL_AND/OR, NOT_EQUAL (of int32 0/1 bool "
      "inputs alone: MINIMUM/MAXIMUM)";
  for (auto [kind, note] : {std::pair{"aten::logical_and", and_note},
                            std::pair{"aten::bitwise_and", ""}, std::pair{"aten::__and__", ""}}) {
    t.add(kind, [](LoweringContext& cx, const Node* n) {
       lower_logical_binary(cx, n, Op::LogicalAnd, Op::Minimum);
     }).with_note(note);
  }
  for (const char* kind : {"aten::logical_or", "aten::bitwise_or", "aten::__or__"}) {
    t.add(kind, [](LoweringContext& cx, const Node* n) {
      lower_logical_binary(cx, n, Op::LogicalOr, Op::Maximum);
    });
  }
  for (const char* kind : {"aten::logical_xor", "aten::bitwise_xor", "aten::__xor__"}) {
    t.add(kind, [](LoweringContext& cx, const Node* n) {
      lower_logical_binary(cx, n, Op::NotEqual, std::nullopt);
    });
  }
  t.add("aten::logical_not", lower_logical_not)
      .with_folds()
      .with_note(
          "also bitwise_not of bools: LOGICAL_NOT (of an int32 0/1 bool input: CAST, SUB from "
          "1, CAST)");
  t.add("aten::bitwise_not", lower_logical_not).with_folds();
  t.add("aten::where", lower_where)
      .with_folds()
      .with_note(
          "where(cond, x, y), float32 or integer: SELECT of x and y broadcast by TILE to the "
          "result (multiples set at load for flexible sizes), the mask by LOGICAL_AND");
}

}  // namespace nnapi_convert

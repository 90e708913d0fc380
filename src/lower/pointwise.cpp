// Pointwise ops: unary activations, broadcasting binary arithmetic (with
// tensors or Python numbers), rsub, neg, abs, exp, log, log1p, sqrt, rsqrt,
// pow, softmax, log_softmax, prelu, addcmul, addcdiv.
#include "lower/pointwise.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>
#include <tuple>

#include "lower/emit.h"
#include "lower/forms.h"
#include "lower/rank_reduce.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {

using nnapi::Fuse;
using nnapi::Op;
using nnapi::OperandType;

std::optional<double> number_operand(const LoweringContext& cx, const Value* v) {
  if (!cx.has_constant(v)) return std::nullopt;
  const c10::IValue& iv = cx.constant(v).value;
  if (iv.isInt() || iv.isDouble() || iv.isBool()) return iv.toScalar().toDouble();
  if (!iv.isTensor()) return std::nullopt;
  const at::Tensor& t = iv.toTensor();
  if (t.dim() != 0 || t.scalar_type() == at::kFloat || t.is_quantized() || t.is_complex()) {
    return std::nullopt;
  }
  return t.item<double>();
}

namespace {

// The reference's rule for tensors of equal rank: broadcast_shape (emit.h),
// except that a flexible dim broadcasts only against 1 or a flexible dim.
Shape broadcast_equal_ranks(const Shape& a, const Shape& b) {
  check(a.size() == b.size(), [&] {
    return "non-equal-rank broadcast is not supported yet: " + shape_str(a) + " and " +
           shape_str(b);
  });
  for (size_t i = 0; i < a.size(); ++i) {
    check((a[i] == 0) == (b[i] == 0) || a[i] == 1 || b[i] == 1,
          [&] { return "cannot broadcast shapes " + shape_str(a) + " and " + shape_str(b); });
  }
  return broadcast_shape(a, b);
}

// An NCHW operand with H = W = 1 made NHWC by a TRANSPOSE (as the reference does).
OperandHandle transpose_to_nhwc(LoweringContext& cx, const OperandHandle& x) {
  const Shape& s = x.op.shape;
  check(s.size() == 4 && s[2] == 1 && s[3] == 1, [&] {
    return "automatic transpose to NHWC is only supported for H = W = 1, got " + shape_str(s);
  });
  return emit_relayout(cx, x, DimOrder::ChannelsLast);
}

void lower_unary(LoweringContext& cx, const Node* node, Op op) {
  emit_unary(cx, op, cx.get_operand(node->input(0)), node->output());
}

// neg(x) (what a scripted `1 - x` becomes after freezing: neg, then add) and
// abs(x). NNAPI's NEG and ABS take float32 and int32 tensors, not quantized ones.
void lower_signed_unary(LoweringContext& cx, const Node* node, Op op) {
  const Operand& in = cx.get_operand(node->input(0)).op;
  check(in.type != OperandType::TensorQuant8Asymm, [&] {
    return std::string(node->kind().toQualString()) + " of a quantized tensor is not supported";
  });
  lower_unary(cx, node, op);
}

// exp, log, sqrt and rsqrt: NNAPI's EXP, LOG, SQRT and RSQRT, which take float
// tensors only.
void check_float_unary(const OperandHandle& x, const Node* node, Op op) {
  check(x.op.type == OperandType::TensorFloat32, [&] {
    return std::string(node->kind().toQualString()) +
           " is supported of float32 tensors only (NNAPI's " + nnapi::op_name(op) +
           " takes float tensors)";
  });
}

void lower_float_unary(LoweringContext& cx, const Node* node, Op op) {
  check_float_unary(cx.get_operand(node->input(0)), node, op);
  lower_unary(cx, node, op);
}

// log1p(x) = log(u) * (x / (u - 1)) with u = 1 + x, and x itself where u
// rounds to 1 (SELECT, NNAPI feature level 3): Goldberg's formula ("What
// every computer scientist should know about floating-point arithmetic",
// theorem 4), within a few ulps of log(1 + x) for small x too, where LOG(1 +
// x) keeps none of x's bits below 2^-24. (x = inf gives NaN.)
void lower_log1p(LoweringContext& cx, const Node* node) {
  const OperandHandle x = cx.get_operand(node->input(0));
  check_float_unary(x, node, Op::Log);
  const OperandHandle u = emit_binary(cx, Op::Add, x, float_scalar_tensor(cx, 1.0f));
  const OperandHandle d = emit_binary(cx, Op::Sub, u, float_scalar_tensor(cx, 1.0f));
  const OperandHandle r =
      emit_binary(cx, Op::Mul, emit_unary(cx, Op::Log, u), emit_binary(cx, Op::Div, x, d));
  const OperandHandle exact = emit_binary(cx, Op::Equal, d, float_scalar_tensor(cx, 0.0f));
  const int32_t out_id = make_output(cx, node->output(), x.op, &x);
  add_select(cx.model(), exact.id, x.id, r.id, out_id);
}

// pow(x, number) and pow(number, x). Exponents PyTorch computes otherwise than
// with std::pow get the same operation here: 1 is x, 2 is x * x, 0.5 sqrt,
// -0.5 rsqrt; any other is NNAPI's POW with a float32 (1) constant.
void lower_pow(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 2, "malformed aten::pow");
  // Any 0-dim constant is a number here: `2 ** x` makes a float32 one.
  auto number = [&](const Value* v) -> std::optional<double> {
    if (cx.has_constant(v) && cx.constant(v).value.isTensor()) {
      const at::Tensor& t = cx.constant(v).value.toTensor();
      if (t.dim() == 0 && t.scalar_type() == at::kFloat) return t.item<double>();
    }
    return number_operand(cx, v);
  };
  const std::optional<double> base = number(node->input(0));
  const std::optional<double> exponent = number(node->input(1));
  check(!(base && exponent), "pow of two numbers");
  if (!base && !exponent) {
    // Two tensors (computed or constant): POW with PyTorch's broadcasting.
    const auto [x, y] = elementwise_operands(cx, node->input(0), node->input(1));
    check(x.op.type == OperandType::TensorFloat32, "pow of a non-float tensor is not supported");
    emit_binary(cx, Op::Pow, x, y, Fuse::None, node->output());
    return;
  }
  const OperandHandle x = cx.get_operand(node->input(base ? 1 : 0));
  check(x.op.type == OperandType::TensorFloat32, "pow of a non-float tensor is not supported");
  if (base) {
    emit_binary(cx, Op::Pow, float_scalar_tensor(cx, static_cast<float>(*base)), x, Fuse::None,
                node->output());
    return;
  }
  const double e = *exponent;
  if (e == 1) {
    cx.alias(node->output(), node->input(0));
  } else if (e == 2) {
    emit_binary(cx, Op::Mul, x, x, Fuse::None, node->output());
  } else if (e == 0.5) {
    emit_unary(cx, Op::Sqrt, x, node->output());
  } else if (e == -0.5) {
    emit_unary(cx, Op::Rsqrt, x, node->output());
  } else {
    emit_binary(cx, Op::Pow, x, float_scalar_tensor(cx, static_cast<float>(e)), Fuse::None,
                node->output());
  }
}

void lower_alpha_add_sub(LoweringContext& cx, const Node* node, Op op, const Value* a,
                         const Value* b, double alpha, Fuse fuse);

// add/sub(a, b, alpha); with `relu` aten::_add_relu (what optimize_for_mobile
// makes of add followed by relu): the ADD with its fused RELU.
void lower_add_sub(LoweringContext& cx, const Node* node, Op op, bool relu = false) {
  const double alpha = cx.constant_number(node->input(2));
  const Fuse fuse = relu ? Fuse::Relu : cx.fuse_following_activation(node->output());
  if (alpha != 1) {
    lower_alpha_add_sub(cx, node, op, node->input(0), node->input(1), alpha, fuse);
    return;
  }
  lower_binary(cx, node, op, fuse);
}

// rsub(x, y, alpha) = y - alpha * x: what `1 - x` becomes.
void lower_rsub(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 3, "malformed aten::rsub");
  const double alpha = cx.constant_number(node->input(2));
  if (alpha != 1) {
    lower_alpha_add_sub(cx, node, Op::Sub, node->input(1), node->input(0), alpha,
                        cx.fuse_following_activation(node->output()));
    return;
  }
  lower_binary_values(cx, node->input(1), node->input(0), node->output(), Op::Sub,
                      cx.fuse_following_activation(node->output()));
}

void lower_div_mode(LoweringContext& cx, const Node* node, const Value* a, const Value* b,
                    const std::string& mode);

void lower_mul_div(LoweringContext& cx, const Node* node, Op op) {
  if (op == Op::Div && node->inputs().size() == 3 &&
      node->input(2)->type()->kind() != c10::TypeKind::TensorType) {
    // div.Tensor_mode / div.Scalar_mode(self, other, rounding_mode)
    const c10::IValue& mode = cx.constant(node->input(2)).value;
    lower_div_mode(cx, node, node->input(0), node->input(1),
                   mode.isNone() ? std::string("none") : mode.toStringRef());
    return;
  }
  check(node->inputs().size() == 2,
        "only plain tensor-by-tensor mul and div convert (no rounding_mode or out= arguments)");
  for (const Value* v : node->inputs()) {
    // (int32 / number is refused by lower_binary_number)
    check(op != Op::Div || !cx.has_operand(v) ||
              cx.get_operand(v).op.type != OperandType::TensorInt32,
          "true division (`/`, torch.div without rounding_mode) of int32 or bool tensors is not "
          "supported: PyTorch's result is float32, NNAPI's DIV of TENSOR_INT32 an integer "
          "quotient; convert the tensors with .float() first");
  }
  lower_binary(cx, node, op, cx.fuse_following_activation(node->output()));
}

// SOFTMAX / LOG_SOFTMAX of x over PyTorch dim `dim`, output parameters `o`.
OperandHandle emit_softmax_like(LoweringContext& cx, const Value* out, Op op,
                                const OperandHandle& x, int64_t dim, const Operand& o) {
  bool is_log = op == Op::LogSoftmax;
  if (x.op.dim_order == DimOrder::ChannelsLast) {
    // The NNAPI axis that holds PyTorch dim `dim` (the reference passes `dim`
    // as is, which is a different axis of NHWC data).
    dim = nnapi_axis(x.op.dim_order, py_index(dim, 4));
  }
  ModelBuilder& m = cx.model();
  int32_t out_id = -1, beta = -1, axis = -1;
  // The reference makes log_softmax's immediates before its output, softmax's after.
  if (is_log) {
    beta = m.add_float_scalar(1.0f);
    axis = m.add_int_scalar(static_cast<int32_t>(dim));
  }
  out_id = make_output(cx, out, o, &x);
  if (!is_log) {
    beta = m.add_float_scalar(1.0f);
    axis = m.add_int_scalar(static_cast<int32_t>(dim));
  }
  add_by_roles(m, op,
               {{nnapi::Role::Input, x.id}, {nnapi::Role::Beta, beta}, {nnapi::Role::Axis, axis}},
               {out_id});
  return {out_id, cx.operand(out_id)};
}

void lower_softmax_like(LoweringContext& cx, const Node* node, Op op) {
  const OperandHandle x = cx.get_operand(node->input(0));
  if (node->inputs().size() > 2) {
    check_dtype_argument(cx, node->input(2), x, node->kind().toQualString());
  }
  emit_softmax_like(cx, node->output(), op, x, cx.constant_int(node->input(1)), x.op);
}

// softmax / log_softmax of a tensor of rank > 4 over a dim of fixed size
// (MaxViT's `F.softmax(dot_prod + pos_bias, dim=-1)` of (B, G, H, P, P)): the
// operation along dim 1 of the tensor read as 3-D around that dim.
bool lower_high_rank_softmax_like(LoweringContext& cx, const Node* node, Op op) {
  if (!cx.has_operand(node->input(0))) return false;
  const OperandHandle x = cx.get_operand(node->input(0));
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  if (rank <= 4) return false;
  if (node->inputs().size() > 2) {
    check_dtype_argument(cx, node->input(2), x, node->kind().toQualString());
  }
  const int64_t d = py_index(cx.constant_int(node->input(1)), rank);
  check(x.op.shape[d] != 0, [&] {
    return std::string(node->kind().toQualString()) + " of a tensor of shape " +
           shape_str(x.op.shape) + " (0: flexible) along its flexible dim " + std::to_string(d) +
           ": NNAPI takes rank 4 at most, and nnapi-convert merges the other dims only around a "
           "dim of fixed size; give it a fixed size in --input";
  });
  const OperandHandle x3 = read_around(cx, x, d);
  const OperandHandle y = emit_softmax_like(cx, nullptr, op, x3, 1, x3.op);
  bind_reshaped(cx, y, sym_shape(x), node->output());
  return true;
}

// quantized::softmax(qx, dim, output_scale, output_zero_point): a quant8
// SOFTMAX, whose output NeuralNetworks.h fixes at scale 1/256, zero point 0
// (what --quantize gives it); at other output parameters the float SOFTMAX
// between DEQUANTIZE and QUANTIZE.
void lower_quantized_softmax(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 4, "malformed quantized::softmax");
  const OperandHandle x = cx.get_operand(node->input(0));
  check(x.op.type == OperandType::TensorQuant8Asymm, "quantized::softmax of a float tensor");
  const int64_t dim = cx.constant_int(node->input(1));
  const double scale = cx.constant_float(node->input(2));
  const int64_t zero_point = cx.constant_int(node->input(3));
  Operand o = x.op;
  if (scale == 1.0 / 256 && zero_point == 0) {
    o.scale = scale;
    o.zero_point = zero_point;
    emit_softmax_like(cx, node->output(), Op::Softmax, x, dim, o);
    return;
  }
  const OperandHandle f = emit_dequantize(cx, x);
  const OperandHandle y = emit_softmax_like(cx, nullptr, Op::Softmax, f, dim, f.op);
  emit_quantize(cx, y, scale, zero_point, node->output());
}

void lower_prelu(LoweringContext& cx, const Node* node) {
  auto [in_id, in] = cx.get_operand(node->input(0));
  auto [w_id, w] = cx.get_weight_operand(node->input(1));
  check(w.shape.size() == 1 && w.shape[0] > 0, "prelu weight must be a non-empty vector");
  check(w.shape[0] == 1 || !in.use_nchw(),
        "per-channel PReLU is only supported on channels-last (NHWC) inputs; add ,nhwc to the "
        "input spec or --nhwc");
  for (size_t d = 0; d < 2 && d < in.shape.size(); ++d) {
    check(in.shape[d] > 0, "PReLU requires fixed size for dim 0 and dim 1");
  }
  const int32_t out_id = cx.add_output(node->output(), in, sym_shape({in_id, in})).id;
  add_prelu(cx.model(), in_id, w_id, out_id);
}

std::optional<QuantParams> quant_params(std::optional<std::pair<double, int64_t>> qparams) {
  if (!qparams) return std::nullopt;
  return QuantParams{qparams->first, qparams->second};
}

size_t rank_of(const LoweringContext& cx, const Value* v) {
  if (cx.has_operand(v)) return cx.get_operand(v).op.shape.size();
  if (cx.has_constant(v) && cx.constant(v).value.isTensor()) {
    return static_cast<size_t>(cx.constant(v).value.toTensor().dim());
  }
  return 0;
}

// PyTorch broadcasting aligns trailing dims. A constant is reshaped with
// leading 1s and laid out like the other side; two computed tensors broadcast
// in NNAPI itself (numpy rules), which is right when both are contiguous.
void lower_binary_ranks_differ(LoweringContext& cx, const Value* a, const Value* b,
                               const Value* out_value, Op op, Fuse fuse,
                               std::optional<std::pair<double, int64_t>> qparams) {
  check(cx.has_operand(a) || cx.has_operand(b), "can't do an NNAPI binary op on two constants");
  auto side = [&](const Value* v, const Value* other) -> OperandHandle {
    if (cx.has_operand(v)) return cx.get_operand(v);
    const Operand& o = cx.get_operand(other).op;
    at::Tensor t = cx.constant_tensor(v);
    std::vector<int64_t> shape(o.shape.size() - std::min<size_t>(o.shape.size(), t.dim()), 1);
    for (int64_t d : t.sizes()) shape.push_back(d);
    t = t.reshape(shape);
    DimOrder order = t.dim() == 4 ? o.dim_order : DimOrder::Contiguous;
    int32_t id = cx.add_weight(t.contiguous(), order);
    return {id, cx.operand(id)};
  };
  OperandHandle x = side(a, b), y = side(b, a);
  check(x.op.type == y.op.type, "binary op inputs have different types");
  bool mixed =
      x.op.shape.size() != y.op.shape.size() &&
      (x.op.dim_order == DimOrder::ChannelsLast || y.op.dim_order == DimOrder::ChannelsLast);
  check(!mixed,
        "broadcasting a channels-last tensor against a computed tensor of lower rank is "
        "not supported");
  emit_binary(cx, op, x, y, fuse, out_value, quant_params(qparams));
}

// A float32 tensor and a number, in either order. PyTorch's type promotion
// keeps the tensor's float32 (a number or a 0-dim tensor does not widen a
// dimensioned tensor of the same or a lower category), and converts the
// number to float32: a (1) constant, which NNAPI broadcasts.
void lower_binary_number(LoweringContext& cx, const Value* a, const Value* b,
                         const Value* out_value, Op op, Fuse fuse, bool number_first, double number,
                         bool quantized_op) {
  const Value* tensor = number_first ? b : a;
  check(cx.has_operand(tensor), "can't do an NNAPI binary op on two constants");
  const OperandHandle x = cx.get_operand(tensor);
  OperandHandle k;
  if (x.op.type == OperandType::TensorInt32 && !quantized_op) {
    // An int32 tensor and an integer (or bool) stay int32 under PyTorch's
    // promotion; a float number would make a float result, and `/` of
    // integers divides truly.
    const c10::IValue& n = cx.constant(number_first ? a : b).value;
    const bool integral = n.isInt() || n.isBool() ||
                          (n.isTensor() && !at::isFloatingType(n.toTensor().scalar_type()));
    check(integral && (op == Op::Add || op == Op::Sub || op == Op::Mul), [&] {
      return std::string(nnapi::op_name(op)) + " of an int32 or bool tensor and a " +
             (integral ? "number" : "float number") +
             " is not supported (NNAPI has int32 ADD, SUB and MUL only, and a float number "
             "makes PyTorch's result float32); convert the tensor with .float() first";
    });
    const int32_t id = cx.add_weight(at::full({1}, static_cast<int64_t>(number), at::kInt));
    k = {id, cx.operand(id)};
  } else {
    check(x.op.type == OperandType::TensorFloat32 && !quantized_op,
          "a binary op between a number and a non-float tensor is not supported");
    k = float_scalar_tensor(cx, static_cast<float>(number));
  }
  if (x.op.shape.empty()) {
    // A 0-dim tensor and a number give a 0-dim tensor (both NNAPI shape [1]).
    const OperandHandle r = emit_binary(cx, op, number_first ? k : x, number_first ? x : k, fuse);
    cx.reinterpret(out_value, r.id, x.op);
    return;
  }
  emit_binary(cx, op, number_first ? k : x, number_first ? x : k, fuse, out_value);
}

}  // namespace

void lower_binary(LoweringContext& cx, const Node* node, Op op, Fuse fuse,
                  std::optional<std::pair<double, int64_t>> qparams) {
  lower_binary_values(cx, node->input(0), node->input(1), node->output(), op, fuse, qparams);
}

void lower_binary_values(LoweringContext& cx, const Value* a, const Value* b,
                         const Value* out_value, Op op, Fuse fuse,
                         std::optional<std::pair<double, int64_t>> qparams) {
  const std::optional<double> na = number_operand(cx, a), nb = number_operand(cx, b);
  if (na || nb) {
    check(!(na && nb), "can't do an NNAPI binary op on two constants");
    lower_binary_number(cx, a, b, out_value, op, fuse, na.has_value(), na ? *na : *nb,
                        qparams.has_value());
    return;
  }
  check(a->type()->kind() == c10::TypeKind::TensorType &&
            b->type()->kind() == c10::TypeKind::TensorType,
        "binary ops with a scalar operand are not supported; use a tensor");
  if (rank_of(cx, a) != rank_of(cx, b)) {
    lower_binary_ranks_differ(cx, a, b, out_value, op, fuse, qparams);
    return;
  }
  OperandHandle x, y;
  if (cx.has_operand(a)) {
    x = cx.get_operand(a);
    y = cx.get_operand_or_constant(b, x.op.dim_order);
  } else if (cx.has_operand(b)) {
    y = cx.get_operand(b);
    x = cx.get_operand_or_constant(a, y.op.dim_order);
  } else {
    fail("can't do an NNAPI binary op on two constants");
  }
  check(x.op.type == y.op.type, "binary op inputs have different types");
  if (x.op.dim_order != y.op.dim_order) {
    // NHWC wins on a mismatch.
    if (x.op.dim_order == DimOrder::Contiguous && y.op.dim_order == DimOrder::ChannelsLast) {
      x = transpose_to_nhwc(cx, x);
    } else if (x.op.dim_order == DimOrder::ChannelsLast && y.op.dim_order == DimOrder::Contiguous) {
      y = transpose_to_nhwc(cx, y);
    } else {
      fail("automatic transpose is not supported between these memory layouts");
    }
  }
  const auto& [id0, o0] = x;
  const auto& [id1, o1] = y;
  Operand out = o0.with_shape(broadcast_equal_ranks(o0.shape, o1.shape));
  if (qparams) {
    out.scale = qparams->first;
    out.zero_point = qparams->second;
  }
  // A flexible dim comes from the input that has it flexible (x on a tie,
  // after the reference's assert that both sizes agree).
  std::vector<std::string> asserts(o0.shape.size());
  for (size_t d = 0; d < o0.shape.size(); ++d) {
    if (o0.shape[d] == 0 && o1.shape[d] == 0) {
      asserts[d] = flex_name(id0, d) + " == " + flex_name(id1, d);
    }
  }
  const int32_t out_id =
      cx.add_output(out_value, out, broadcast_dims(out.shape, {&x, &y}), asserts).id;
  int32_t fuse_id = cx.model().add_int_scalar(static_cast<int32_t>(fuse));
  add_by_roles(
      cx.model(), op,
      {{nnapi::Role::Input, id0}, {nnapi::Role::SecondInput, id1}, {nnapi::Role::Fuse, fuse_id}},
      {out_id});
}

namespace {

// A constant tensor as an operand beside `other`: its dtype, leading 1s up to
// its rank, and its layout when both are 4-D.
OperandHandle tensor_beside(LoweringContext& cx, at::Tensor t, const OperandHandle& other) {
  check(!t.is_quantized() && !t.is_complex(),
        "elementwise operation with a quantized or complex "
        "constant is not supported");
  switch (other.op.type) {
    case OperandType::TensorFloat32:
      t = t.to(at::kFloat);
      break;
    case OperandType::TensorInt32:
      t = t.to(at::kInt);
      break;
    default:
      fail("an elementwise operation between a constant and a quantized tensor is not supported");
  }
  const auto rank = static_cast<int64_t>(other.op.shape.size());
  if (t.dim() == 0) {
    t = t.reshape({1});
  } else if (t.dim() < rank) {
    std::vector<int64_t> shape(rank - t.dim(), 1);
    for (int64_t d : t.sizes()) shape.push_back(d);
    t = t.reshape(shape);
  }
  const DimOrder order = t.dim() == 4 && rank == 4 ? other.op.dim_order : DimOrder::Contiguous;
  const int32_t id = cx.add_weight(t.contiguous(), order);
  return {id, cx.operand(id)};
}

OperandHandle constant_beside(LoweringContext& cx, const Value* v, const OperandHandle& other) {
  return tensor_beside(cx, cx.constant_tensor(v), other);
}

}  // namespace

namespace {

// `v` as an operand beside `other`: its own operand when computed, else a
// float32 (1) constant for a number, else constant_beside.
OperandHandle operand_beside(LoweringContext& cx, const Value* v, const OperandHandle& other) {
  if (cx.has_operand(v)) return cx.get_operand(v);
  if (const std::optional<double> n = number_operand(cx, v)) {
    check(other.op.type == OperandType::TensorFloat32,
          "an elementwise operation between a number and a non-float tensor is not supported");
    return float_scalar_tensor(cx, static_cast<float>(*n));
  }
  return constant_beside(cx, v, other);
}

}  // namespace

std::pair<OperandHandle, OperandHandle> align_layouts(LoweringContext& cx, OperandHandle x,
                                                      OperandHandle y) {
  check(x.op.type == y.op.type, [&] {
    return std::string("elementwise operation on tensors of different types (") +
           nnapi::operand_type_name(x.op.type) + " and " + nnapi::operand_type_name(y.op.type) +
           ")";
  });
  const bool x_nhwc = x.op.dim_order == DimOrder::ChannelsLast;
  const bool y_nhwc = y.op.dim_order == DimOrder::ChannelsLast;
  auto single = [](const OperandHandle& t) {
    return std::all_of(t.op.shape.begin(), t.op.shape.end(), [](int64_t n) { return n == 1; });
  };
  if (x_nhwc != y_nhwc && !single(x) && !single(y)) {
    OperandHandle& nchw = x_nhwc ? y : x;
    OperandHandle& nhwc = x_nhwc ? x : y;
    if (x.op.shape.size() == y.op.shape.size()) {
      nchw = emit_relayout(cx, nchw, DimOrder::ChannelsLast);
    } else {
      nhwc = emit_relayout(cx, nhwc, DimOrder::Contiguous);
    }
  }
  return {x, y};
}

std::pair<OperandHandle, OperandHandle> elementwise_operands(LoweringContext& cx, const Value* a,
                                                             const Value* b) {
  check(cx.has_operand(a) || cx.has_operand(b),
        "can't do an NNAPI elementwise operation on two constants");
  if (!cx.has_operand(a)) {
    const OperandHandle y = cx.get_operand(b);
    return align_layouts(cx, operand_beside(cx, a, y), y);
  }
  return elementwise_operands(cx, cx.get_operand(a), b);
}

std::pair<OperandHandle, OperandHandle> elementwise_operands(LoweringContext& cx,
                                                             const OperandHandle& x,
                                                             const Value* v) {
  return align_layouts(cx, x, operand_beside(cx, v, x));
}

namespace {

// Refuses a non-float32 operand of a decomposition that NNAPI computes in float.
void check_float(const OperandHandle& t, const Node* node) {
  check(t.op.type == OperandType::TensorFloat32, [&] {
    return std::string(node->kind().toQualString()) + " of a " +
           nnapi::operand_type_name(t.op.type) + " tensor is not supported (float32 only)";
  });
}

// a + alpha * b, a - alpha * b, and rsub's b - alpha * a, for alpha != 1:
// MUL of the scaled side by alpha (float32, as PyTorch rounds alpha * b), then
// ADD or SUB. A number side is scaled in float32 here.
void lower_alpha_add_sub(LoweringContext& cx, const Node* node, Op op, const Value* a,
                         const Value* b, double alpha, Fuse fuse) {
  const float k = static_cast<float>(alpha);
  OperandHandle x, y;
  if (const std::optional<double> n = number_operand(cx, b)) {
    x = cx.get_operand(a);
    check_float(x, node);
    y = float_scalar_tensor(cx, k * static_cast<float>(*n));
  } else {
    std::tie(x, y) = elementwise_operands(cx, a, b);
    check_float(x, node);
    y = emit_binary(cx, Op::Mul, y, float_scalar_tensor(cx, k));
  }
  emit_binary(cx, op, x, y, fuse, node->output());
}

// trunc(q) = floor(relu(q)) - floor(relu(-q)): floor(q) for q >= 0, -floor(-q)
// below (FLOOR is NNAPI feature level 1, no select needed).
OperandHandle emit_trunc(LoweringContext& cx, const OperandHandle& q, const Value* out) {
  OperandHandle up = emit_unary(cx, Op::Floor, emit_unary(cx, Op::Relu, q));
  OperandHandle down =
      emit_unary(cx, Op::Floor, emit_unary(cx, Op::Relu, emit_unary(cx, Op::Neg, q)));
  return emit_binary(cx, Op::Sub, up, down, Fuse::None, out);
}

// div(a, b, rounding_mode): None is DIV; 'trunc' is trunc(a / b), 'floor'
// FLOOR(a / b) (float32). PyTorch's floor mode derives the quotient from fmod
// (Python's `//`), which differs from floor(a / b) only where a / b rounds up
// to a whole number (1 // 0.1 is 9 there, 10 here).
void lower_div_mode(LoweringContext& cx, const Node* node, const Value* a, const Value* b,
                    const std::string& mode) {
  const auto [x, y] = elementwise_operands(cx, a, b);
  check_float(x, node);
  if (mode == "none") {
    emit_binary(cx, Op::Div, x, y, Fuse::None, node->output());
    return;
  }
  OperandHandle q = emit_binary(cx, Op::Div, x, y);
  if (mode == "floor") {
    emit_unary(cx, Op::Floor, q, node->output());
  } else {
    check(mode == "trunc",
          [&] { return "div with unknown rounding_mode '" + mode + "' (trunc or floor)"; });
    emit_trunc(cx, q, node->output());
  }
}

// remainder(a, b) = a - floor(a / b) * b (float32): PyTorch's fmod with the
// divisor's sign, to the rounding of those three operations.
void lower_remainder(LoweringContext& cx, const Node* node) {
  const auto [x, y] = elementwise_operands(cx, node->input(0), node->input(1));
  check_float(x, node);
  OperandHandle f = emit_unary(cx, Op::Floor, emit_binary(cx, Op::Div, x, y));
  emit_binary(cx, Op::Sub, x, emit_binary(cx, Op::Mul, f, y), Fuse::None, node->output());
}

// addcmul(self, t1, t2, value) = self + value * t1 * t2 and addcdiv's
// self + value * t1 / t2 (float32), in PyTorch's kernel's order: MUL of t1 by
// value, MUL or DIV by t2, then ADD of self (with a following activation
// fused). t1 and t2 both constant are folded here, in that order.
void lower_addc(LoweringContext& cx, const Node* node, Op op) {
  check(node->inputs().size() == 4, [&] {
    return std::string("malformed ") + node->kind().toQualString() +
           " (expected self, tensor1, tensor2, value)";
  });
  const Value* self = node->input(0);
  const Value* t1 = node->input(1);
  const Value* t2 = node->input(2);
  const double value = cx.constant_number(node->input(3));
  const Fuse fuse = cx.fuse_following_activation(node->output());
  if (!cx.has_operand(t1) && !cx.has_operand(t2)) {
    const OperandHandle s = cx.get_operand(self);
    check_float(s, node);
    at::Tensor k = cx.constant_tensor(t1).to(at::kFloat) * value;
    k = op == Op::Mul ? k * cx.constant_tensor(t2).to(at::kFloat)
                      : k / cx.constant_tensor(t2).to(at::kFloat);
    const auto [a, b] = align_layouts(cx, s, tensor_beside(cx, k, s));
    emit_binary(cx, Op::Add, a, b, fuse, node->output());
    return;
  }
  auto [x, y] = elementwise_operands(cx, t1, t2);
  check_float(x, node);
  if (value != 1)
    x = emit_binary(cx, Op::Mul, x, float_scalar_tensor(cx, static_cast<float>(value)));
  const OperandHandle p = emit_binary(cx, op, x, y);
  const auto [q, s] = elementwise_operands(cx, p, self);
  emit_binary(cx, Op::Add, s, q, fuse, node->output());
}

void lower_max_min(LoweringContext& cx, const Node* node, Op op) {
  check(node->inputs().size() == 2, "malformed elementwise maximum/minimum");
  const auto [x, y] = elementwise_operands(cx, node->input(0), node->input(1));
  check(x.op.type != OperandType::TensorQuant8Asymm ||
            (x.op.scale == y.op.scale && x.op.zero_point == y.op.zero_point),
        "quantized maximum/minimum of tensors with different scales or zero points is not "
        "supported");
  emit_binary(cx, op, x, y, Fuse::None, node->output());
}

}  // namespace

void register_pointwise_ops(LoweringTable& t) {
  t.add("aten::relu", [](LoweringContext& cx, const Node* n) { lower_unary(cx, n, Op::Relu); })
      .with_above_rank_4(lower_high_rank_elementwise)
      .with_frames(frames_per_frame());
  t.add("aten::sigmoid",
        [](LoweringContext& cx, const Node* n) { lower_unary(cx, n, Op::Logistic); })
      .with_above_rank_4(lower_high_rank_elementwise)
      .with_frames(frames_per_frame());
  t.add("aten::add", [](LoweringContext& cx, const Node* n) { lower_add_sub(cx, n, Op::Add); })
      .with_above_rank_4(lower_high_rank_elementwise)
      .with_frames(frames_per_frame());
  t.add("aten::_add_relu", [](LoweringContext& cx, const Node* n) {
     lower_add_sub(cx, n, Op::Add, true);
   }).with_note("optimize_for_mobile's add followed by relu (resnets): ADD with its fused RELU");
  t.add("aten::sub", [](LoweringContext& cx, const Node* n) { lower_add_sub(cx, n, Op::Sub); })
      .with_above_rank_4(lower_high_rank_elementwise)
      .with_frames(frames_per_frame());
  t.add("aten::rsub", lower_rsub).with_folds();
  t.add("aten::neg", [](LoweringContext& cx, const Node* n) {
     lower_signed_unary(cx, n, Op::Neg);
   }).with_above_rank_4(lower_high_rank_elementwise);
  t.add("aten::abs", [](LoweringContext& cx, const Node* n) { lower_signed_unary(cx, n, Op::Abs); })
      .with_above_rank_4(lower_high_rank_elementwise)
      .with_complex(lower_complex_abs);
  for (auto [kind, op] : {std::pair{"aten::exp", Op::Exp}, std::pair{"aten::log", Op::Log},
                          std::pair{"aten::sqrt", Op::Sqrt}, std::pair{"aten::rsqrt", Op::Rsqrt}}) {
    t.add(kind, [op = op](LoweringContext& cx, const Node* n) {
       lower_float_unary(cx, n, op);
     }).with_above_rank_4(lower_high_rank_elementwise);
  }
  t.add("aten::log1p", lower_log1p)
      .with_note(
          "float32: log(u) * x / (u - 1) with u = 1 + x, x where u rounds to 1 (SELECT): exact for "
          "small x, where LOG(1 + x) is not");
  t.add("aten::pow", lower_pow).with_above_rank_4(lower_high_rank_pow).with_folds();
  t.add("aten::mul", [](LoweringContext& cx, const Node* n) { lower_mul_div(cx, n, Op::Mul); })
      .with_above_rank_4(lower_high_rank_elementwise)
      .with_frames(frames_per_frame());
  t.add("aten::div", [](LoweringContext& cx, const Node* n) { lower_mul_div(cx, n, Op::Div); })
      .with_note(
          "rounding_mode='trunc': trunc(a/b) exactly; 'floor': FLOOR(a/b), which differs from "
          "PyTorch's fmod-based quotient where a/b rounds up to a whole number")
      .with_above_rank_4(lower_high_rank_elementwise)
      .with_frames(frames_per_frame());
  t.add("aten::softmax", [](LoweringContext& cx, const Node* n) {
     lower_softmax_like(cx, n, Op::Softmax);
   }).with_above_rank_4([](LoweringContext& cx, const Node* n) {
    return lower_high_rank_softmax_like(cx, n, Op::Softmax);
  });
  t.add("quantized::softmax", lower_quantized_softmax);
  t.add("aten::log_softmax", [](LoweringContext& cx, const Node* n) {
     lower_softmax_like(cx, n, Op::LogSoftmax);
   }).with_above_rank_4([](LoweringContext& cx, const Node* n) {
    return lower_high_rank_softmax_like(cx, n, Op::LogSoftmax);
  });
  t.add("aten::prelu", lower_prelu);
  t.add("aten::floor_divide", [](LoweringContext& cx, const Node* n) {
     lower_div_mode(cx, n, n->input(0), n->input(1), "floor");
   }).with_note("FLOOR(a/b) (float32), see aten::div");
  t.add("aten::remainder", lower_remainder).with_note("a - FLOOR(a/b)*b (float32)");
  t.add("aten::maximum",
        [](LoweringContext& cx, const Node* n) { lower_max_min(cx, n, Op::Maximum); });
  t.add("aten::minimum",
        [](LoweringContext& cx, const Node* n) { lower_max_min(cx, n, Op::Minimum); });
  t.add("aten::addcmul", [](LoweringContext& cx, const Node* n) { lower_addc(cx, n, Op::Mul); })
      .with_note("self + value*t1*t2: MUL, MUL, ADD (float32; rank <= 4)")
      .with_folds();
  t.add("aten::addcdiv", [](LoweringContext& cx, const Node* n) { lower_addc(cx, n, Op::Div); })
      .with_note("self + value*t1/t2: MUL, DIV, ADD (float32; rank <= 4)")
      .with_folds();
}

}  // namespace nnapi_convert

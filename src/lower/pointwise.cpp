// Pointwise ops: unary activations, broadcasting binary arithmetic,
// softmax, log_softmax, hardtanh, prelu.
#include "lower/pointwise.h"

#include <ATen/ATen.h>

#include "lower/emit.h"
#include "lower/registry.h"

namespace nnapi_convert {

using nnapi::Fuse;
using nnapi::Op;
using nnapi::OperandType;

namespace {

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  check(!a.empty() && !b.empty(), "broadcast of a 0-dim tensor");
  check(a.size() == b.size(), [&] {
    return "non-equal-rank broadcast is not supported yet: " + shape_str(a) + " and " +
           shape_str(b);
  });
  Shape out;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == 1) {
      out.push_back(b[i]);
    } else if (b[i] == 1 || a[i] == b[i]) {
      out.push_back(a[i]);
    } else {
      fail("cannot broadcast shapes " + shape_str(a) + " and " + shape_str(b));
    }
  }
  return out;
}

// An NCHW operand with H = W = 1 made NHWC by a TRANSPOSE (as the reference does).
std::pair<int32_t, Operand> transpose_to_nhwc(LoweringContext& cx, int32_t id, const Operand& o) {
  check(o.shape.size() == 4 && o.shape[2] == 1 && o.shape[3] == 1, [&] {
    return "automatic transpose to NHWC is only supported for H = W = 1, got " + shape_str(o.shape);
  });
  Operand2 r = emit_relayout(cx, {id, o}, DimOrder::ChannelsLast);
  return {r.id, r.op};
}

void lower_unary(LoweringContext& cx, const Node* node, Op op) {
  auto [in_id, in] = cx.get_operand(node->input(0));
  Operand out = in;
  if (op == Op::Logistic && in.type == OperandType::TensorQuant8Asymm) {
    // NNAPI: quantized LOGISTIC output has scale 1/256 and zero point 0.
    out.scale = 1.0 / 256;
    out.zero_point = 0;
  }
  Operand2 like{in_id, in};
  int32_t out_id = make_output(cx, node->output(), out, &like);
  cx.model().add_operation(op, {in_id}, {out_id});
}

void lower_add_sub(LoweringContext& cx, const Node* node, Op op) {
  int64_t alpha = cx.constant_int(node->input(2));
  check(alpha == 1, "NNAPI does not support add/sub with alpha");
  lower_binary(cx, node, op, cx.fuse_following_activation(node->output()));
}

void lower_mul_div(LoweringContext& cx, const Node* node, Op op) {
  check(node->inputs().size() == 2,
        "only plain tensor-by-tensor mul and div convert (no rounding_mode or out= arguments)");
  lower_binary(cx, node, op, cx.fuse_following_activation(node->output()));
}

void lower_softmax_like(LoweringContext& cx, const Node* node, Op op) {
  bool is_log = op == Op::LogSoftmax;
  auto [in_id, in] = cx.get_operand(node->input(0));
  int64_t dim = cx.constant_int(node->input(1));
  ModelBuilder& m = cx.model();
  int32_t out_id = -1, beta = -1, axis = -1;
  // The reference makes log_softmax's immediates before its output, softmax's after.
  if (is_log) {
    beta = m.add_float_scalar(1.0f);
    axis = m.add_int_scalar(static_cast<int32_t>(dim));
  }
  Operand2 like{in_id, in};
  out_id = make_output(cx, node->output(), in, &like);
  if (!is_log) {
    beta = m.add_float_scalar(1.0f);
    axis = m.add_int_scalar(static_cast<int32_t>(dim));
  }
  m.add_operation(op, {in_id, beta, axis}, {out_id});
}

void lower_hardtanh(LoweringContext& cx, const Node* node) {
  auto [in_id, in] = cx.get_operand(node->input(0));
  double lo = cx.constant_float(node->input(1));
  double hi = cx.constant_float(node->input(2));
  Op op;
  if (lo == -1.0 && hi == 1.0) {
    op = Op::Relu1;
  } else if (lo == 0.0 && hi == 6.0) {
    op = Op::Relu6;
  } else {
    // Not a single NNAPI activation: MAXIMUM and MINIMUM with constants.
    lower_clamp_bounds(cx, node, lo, hi);
    return;
  }
  Operand2 like{in_id, in};
  int32_t out_id = make_output(cx, node->output(), in, &like);
  cx.model().add_operation(op, {in_id}, {out_id});
}

void lower_prelu(LoweringContext& cx, const Node* node) {
  auto [in_id, in] = cx.get_operand(node->input(0));
  auto [w_id, w] = cx.get_weight_operand(node->input(1));
  check(w.shape.size() == 1 && w.shape[0] > 0, "prelu weight must be a non-empty vector");
  check(w.shape[0] == 1 || !in.use_nchw(),
        "per-channel PReLU is only supported on channels-last (NHWC) inputs; add ,nhwc to the "
        "input spec or --nhwc");
  int32_t out_id = cx.add_tensor_operand(node->output(), in);
  for (size_t d = 0; d < in.shape.size(); ++d) {
    if (in.shape[d] > 0) continue;
    check(d > 1, "PReLU requires fixed size for dim 0 and dim 1");
    cx.forward_operand_shape(out_id, d, in_id, d);
  }
  cx.model().add_operation(Op::Prelu, {in_id, w_id}, {out_id});
}

size_t rank_of(const LoweringContext& cx, const Value* v) {
  if (cx.has_operand(v)) return cx.get_operand(v).second.shape.size();
  if (cx.has_constant(v) && cx.constant(v).value.isTensor()) {
    return static_cast<size_t>(cx.constant(v).value.toTensor().dim());
  }
  return 0;
}

// PyTorch broadcasting aligns trailing dims. A constant is reshaped with
// leading 1s and laid out like the other side; two computed tensors broadcast
// in NNAPI itself (numpy rules), which is right when both are contiguous.
void lower_binary_ranks_differ(LoweringContext& cx, const Node* node, Op op, Fuse fuse,
                               std::optional<std::pair<double, int64_t>> qparams) {
  const Value* a = node->input(0);
  const Value* b = node->input(1);
  check(cx.has_operand(a) || cx.has_operand(b), "can't do an NNAPI binary op on two constants");
  auto side = [&](const Value* v, const Value* other) -> Operand2 {
    if (cx.has_operand(v)) {
      auto [id, o] = cx.get_operand(v);
      return {id, o};
    }
    const Operand& o = cx.get_operand(other).second;
    at::Tensor t = cx.constant_tensor(v);
    std::vector<int64_t> shape(o.shape.size() - std::min<size_t>(o.shape.size(), t.dim()), 1);
    for (int64_t d : t.sizes()) shape.push_back(d);
    t = t.reshape(shape);
    DimOrder order = t.dim() == 4 ? o.dim_order : DimOrder::Contiguous;
    int32_t id = cx.add_weight(t.contiguous(), order);
    return {id, cx.operand(id)};
  };
  Operand2 x = side(a, b), y = side(b, a);
  check(x.op.type == y.op.type, "binary op inputs have different types");
  bool mixed =
      x.op.shape.size() != y.op.shape.size() &&
      (x.op.dim_order == DimOrder::ChannelsLast || y.op.dim_order == DimOrder::ChannelsLast);
  check(!mixed,
        "broadcasting a channels-last tensor against a computed tensor of lower rank is "
        "not supported");
  const Operand2& big = x.op.shape.size() >= y.op.shape.size() ? x : y;
  Operand out = big.op.with_shape(broadcast_shape(x.op.shape, y.op.shape));
  if (qparams) {
    out.scale = qparams->first;
    out.zero_point = qparams->second;
  }
  int32_t out_id = cx.add_tensor_operand(node->output(), out);
  forward_broadcast_dims(cx, out_id, out.shape, {&x, &y});
  int32_t fuse_id = cx.model().add_int_scalar(static_cast<int32_t>(fuse));
  cx.model().add_operation(op, {x.id, y.id, fuse_id}, {out_id});
}

}  // namespace

void lower_binary(LoweringContext& cx, const Node* node, Op op, Fuse fuse,
                  std::optional<std::pair<double, int64_t>> qparams) {
  const Value* a = node->input(0);
  const Value* b = node->input(1);
  check(a->type()->kind() == c10::TypeKind::TensorType &&
            b->type()->kind() == c10::TypeKind::TensorType,
        "binary ops with a scalar operand are not supported; use a tensor");
  int32_t id0, id1;
  Operand o0, o1;
  if (rank_of(cx, a) != rank_of(cx, b)) {
    lower_binary_ranks_differ(cx, node, op, fuse, qparams);
    return;
  }
  if (cx.has_operand(a)) {
    std::tie(id0, o0) = cx.get_operand(a);
    std::tie(id1, o1) = cx.get_operand_or_constant(b, o0.dim_order);
  } else if (cx.has_operand(b)) {
    std::tie(id1, o1) = cx.get_operand(b);
    std::tie(id0, o0) = cx.get_operand_or_constant(a, o1.dim_order);
  } else {
    fail("can't do an NNAPI binary op on two constants");
  }
  check(o0.type == o1.type, "binary op inputs have different types");
  if (o0.dim_order != o1.dim_order) {
    // NHWC wins on a mismatch.
    if (o0.dim_order == DimOrder::Contiguous && o1.dim_order == DimOrder::ChannelsLast) {
      std::tie(id0, o0) = transpose_to_nhwc(cx, id0, o0);
    } else if (o0.dim_order == DimOrder::ChannelsLast && o1.dim_order == DimOrder::Contiguous) {
      std::tie(id1, o1) = transpose_to_nhwc(cx, id1, o1);
    } else {
      fail("automatic transpose is not supported between these memory layouts");
    }
  }
  Operand out = o0.with_shape(broadcast_shapes(o0.shape, o1.shape));
  if (qparams) {
    out.scale = qparams->first;
    out.zero_point = qparams->second;
  }
  int32_t out_id = cx.add_tensor_operand(node->output(), out);
  for (size_t d = 0; d < o0.shape.size(); ++d) {
    int64_t d0 = o0.shape[d], d1 = o1.shape[d];
    if (d0 == 1 && d1 == 0) {
      cx.forward_operand_shape(out_id, d, id1, d);
    } else if (d0 == 0 && d1 == 1) {
      cx.forward_operand_shape(out_id, d, id0, d);
    } else if (d0 == 0 && d1 == 0) {
      cx.add_shape_line("assert " + flex_name(id0, d) + " == " + flex_name(id1, d));
      cx.forward_operand_shape(out_id, d, id0, d);
    }
  }
  int32_t fuse_id = cx.model().add_int_scalar(static_cast<int32_t>(fuse));
  cx.model().add_operation(op, {id0, id1, fuse_id}, {out_id});
}

void register_pointwise_ops(LoweringTable& t) {
  t.add("aten::relu", [](LoweringContext& cx, const Node* n) { lower_unary(cx, n, Op::Relu); });
  t.add("aten::sigmoid",
        [](LoweringContext& cx, const Node* n) { lower_unary(cx, n, Op::Logistic); });
  t.add("aten::add", [](LoweringContext& cx, const Node* n) { lower_add_sub(cx, n, Op::Add); });
  t.add("aten::sub", [](LoweringContext& cx, const Node* n) { lower_add_sub(cx, n, Op::Sub); });
  t.add("aten::mul", [](LoweringContext& cx, const Node* n) { lower_mul_div(cx, n, Op::Mul); });
  t.add("aten::div", [](LoweringContext& cx, const Node* n) { lower_mul_div(cx, n, Op::Div); });
  t.add("aten::softmax",
        [](LoweringContext& cx, const Node* n) { lower_softmax_like(cx, n, Op::Softmax); });
  t.add("aten::log_softmax",
        [](LoweringContext& cx, const Node* n) { lower_softmax_like(cx, n, Op::LogSoftmax); });
  t.add("aten::hardtanh", lower_hardtanh);
  t.add("aten::prelu", lower_prelu);
}

}  // namespace nnapi_convert

// Normalization: aten::batch_norm that freezing could not fold into a
// convolution (a per-channel multiply and add with constant operands), and
// aten::layer_norm over the trailing dims (MEAN/SUB/MUL/RSQRT sequence).
#include <ATen/ATen.h>

#include "lower/emit.h"
#include "lower/registry.h"

namespace nnapi_convert {

using nnapi::Fuse;
using nnapi::Op;
using nnapi::OperandType;

namespace {

void lower_batch_norm(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 9, "malformed aten::batch_norm");
  auto [x_id, x] = cx.get_operand(node->input(0));
  check(x.type == OperandType::TensorFloat32, "batch_norm of a non-float tensor");
  check(!cx.constant_bool(node->input(5)), "batch_norm in training mode: call .eval() first");
  at::Tensor mean = cx.constant_tensor(node->input(3)).to(at::kDouble);
  at::Tensor var = cx.constant_tensor(node->input(4)).to(at::kDouble);
  double eps = cx.constant_float(node->input(7));
  int64_t channels = mean.numel();
  at::Tensor weight = cx.constant_is_none(node->input(1))
                          ? at::ones({channels}, at::kDouble)
                          : cx.constant_tensor(node->input(1)).to(at::kDouble);
  at::Tensor bias = cx.constant_is_none(node->input(2))
                        ? at::zeros({channels}, at::kDouble)
                        : cx.constant_tensor(node->input(2)).to(at::kDouble);
  check(x.shape.size() >= 2 && x.shape[1] == channels,
        "batch_norm statistics do not match the input's channels");
  // y = x * scale + shift with scale = w / sqrt(var + eps), shift = b - mean * scale,
  // shaped (1, C, 1, ...) to broadcast over the input.
  at::Tensor scale = weight / at::sqrt(var + eps);
  at::Tensor shift = bias - mean * scale;
  std::vector<int64_t> shape(x.shape.size(), 1);
  shape[1] = channels;
  Operand2 in{x_id, x};
  Operand2 s = float_weight_like(cx, scale.reshape(shape), x);
  Operand2 b = float_weight_like(cx, shift.reshape(shape), x);
  Operand2 scaled = emit_binary(cx, Op::Mul, in, s);
  emit_binary(cx, Op::Add, scaled, b, Fuse::None, node->output());
}

// MEAN over `axes` (NNAPI order), keeping dims.
Operand2 emit_mean(LoweringContext& cx, const Operand2& x, const std::vector<int64_t>& axes) {
  Operand o = x.op;
  for (int64_t a : axes) o.shape[a] = 1;
  int32_t id = make_output(cx, nullptr, o, &x);
  ModelBuilder& m = cx.model();
  m.add_operation(Op::Mean, {x.id, m.add_int_vector(axes), m.add_int_scalar(1)}, {id});
  return {id, o};
}

void lower_layer_norm(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 6, "malformed aten::layer_norm");
  auto [x_id, x] = cx.get_operand(node->input(0));
  check(x.type == OperandType::TensorFloat32, "layer_norm of a non-float tensor");
  check(x.dim_order == DimOrder::Contiguous,
        "layer_norm of a channels-last tensor is supported only after a permute to (N, H, W, C)");
  std::vector<int64_t> normalized = cx.constant_int_list(node->input(1));
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t k = static_cast<int64_t>(normalized.size());
  check(k >= 1 && k <= rank, "layer_norm normalized_shape longer than the input rank");
  for (int64_t i = 0; i < k; ++i) {
    check(x.shape[rank - k + i] == normalized[i], [&] {
      return "layer_norm normalized_shape " + shape_str(normalized) + " does not match input " +
             shape_str(x.shape);
    });
  }
  double eps = cx.constant_float(node->input(4));
  std::vector<int64_t> axes;
  for (int64_t i = rank - k; i < rank; ++i) axes.push_back(i);
  Operand2 in{x_id, x};
  Operand2 mean = emit_mean(cx, in, axes);
  Operand2 centered = emit_binary(cx, Op::Sub, in, mean);
  Operand2 var = emit_mean(cx, emit_binary(cx, Op::Mul, centered, centered), axes);
  Operand2 inv =
      emit_unary(cx, Op::Rsqrt,
                 emit_binary(cx, Op::Add, var, float_scalar_tensor(cx, static_cast<float>(eps))));
  bool has_w = !cx.constant_is_none(node->input(2));
  bool has_b = !cx.constant_is_none(node->input(3));
  Operand2 y = emit_binary(cx, Op::Mul, centered, inv, Fuse::None,
                           has_w || has_b ? nullptr : node->output());
  if (has_w) {
    int32_t w = cx.add_weight(cx.constant_tensor(node->input(2)).to(at::kFloat).contiguous());
    y = emit_binary(cx, Op::Mul, y, {w, cx.operand(w)}, Fuse::None,
                    has_b ? nullptr : node->output());
  }
  if (has_b) {
    int32_t b = cx.add_weight(cx.constant_tensor(node->input(3)).to(at::kFloat).contiguous());
    emit_binary(cx, Op::Add, y, {b, cx.operand(b)}, Fuse::None, node->output());
  }
}

}  // namespace

void register_normalization_ops(LoweringTable& t) {
  t.add("aten::batch_norm", lower_batch_norm);
  t.add("aten::layer_norm", lower_layer_norm);
}

}  // namespace nnapi_convert

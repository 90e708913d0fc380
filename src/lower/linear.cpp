// Fully connected layers: aten::linear and aten::addmm.
#include <ATen/ATen.h>

#include "lower/emit.h"
#include "lower/matmul.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {
namespace {

using nnapi::Fuse;
using nnapi::Op;

// linear on (..., K): RESHAPE to (M, K), FULLY_CONNECTED, RESHAPE to (..., N).
void add_linear_nd(LoweringContext& cx, const Node* node, const OperandHandle& x,
                   const Value* weight, const Value* bias) {
  const Operand& in = x.op;
  check(in.dim_order == DimOrder::Contiguous,
        "linear over a channels-last tensor needs a permute to (N, H, W, C) first");
  std::vector<SymInt> dims = sym_shape(x);
  check(dims.back().is_constant(), "linear over a flexible feature dimension is not supported");
  at::Tensor w = cx.constant_tensor(weight);
  check(w.dim() == 2 && w.size(1) == in.shape.back(), "linear weight does not match the input");
  const SymInt k = dims.back();
  SymInt rows{1, ""};
  for (size_t i = 0; i + 1 < dims.size(); ++i) rows = sym_arith(rows, '*', dims[i]);
  ModelBuilder& m = cx.model();
  OperandHandle flat = emit_reshape(cx, x, {rows, k});
  int32_t bias_id = cx.get_weight_operand(bias).id;
  int32_t weight_id = cx.add_weight(w.contiguous());
  const SymInt n{w.size(0), ""};
  int32_t fc_id = make_output(cx, nullptr, in.with_shape({flat.op.shape[0], n.value}), &flat);
  int32_t fuse = m.add_int_scalar(static_cast<int32_t>(Fuse::None));
  add_fully_connected(m, flat.id, weight_id, bias_id, fuse, fc_id);
  dims.back() = n;
  emit_reshape(cx, {fc_id, cx.operand(fc_id)}, dims, node->output());
}

void add_fully_connected(LoweringContext& cx, const Node* node, bool transpose_weight,
                         const Value* input, const Value* weight, const Value* bias) {
  const OperandHandle x = cx.get_operand(input);
  const auto& [input_id, in] = x;
  if (in.shape.size() > 2 && !transpose_weight) {
    add_linear_nd(cx, node, x, weight, bias);
    return;
  }
  auto [bias_id, b] = cx.get_weight_operand(bias);
  check(in.shape.size() == 2, [&] {
    return "fully connected layers need a 2-D input, got " + shape_str(in.shape) +
           "; flatten it first";
  });
  check(b.shape.size() == 1, "fully connected bias must be 1-D");
  at::Tensor w = cx.constant_tensor(weight);
  check(w.dim() == 2, "fully connected weight must be 2-D");
  // NNAPI's FULLY_CONNECTED weight is (units, input size).
  const at::Tensor w_nk = transpose_weight ? w.t() : w;
  check(in.shape[1] == w_nk.size(1), [&] {
    return "the layer's weight expects " + std::to_string(w_nk.size(1)) +
           " input features, but its input " + shape_str(in.shape) + " has " +
           std::to_string(in.shape[1]) + "; check the --input spec";
  });
  check(b.shape[0] == w_nk.size(0), "fully connected bias does not match the weight");
  int32_t weight_id = cx.add_weight(w_nk.contiguous());
  const int32_t out_id =
      cx.add_output(node->output(), in,
                    {sym_dim(input_id, in.shape, 0), {cx.operand(weight_id).shape[0], ""}})
          .id;
  const Fuse activation = cx.fuse_following_activation(node->output());
  int32_t fuse = cx.model().add_int_scalar(static_cast<int32_t>(activation));
  add_fully_connected(cx.model(), input_id, weight_id, bias_id, fuse, out_id);
}

void lower_linear(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 3, "malformed aten::linear");
  if (cx.constant_is_none(node->input(2))) {
    // No bias (maxvit's classifier): the product with w.t() and a zero bias.
    product_with_constant(cx, product_operand(cx, node->input(0), "linear", 1),
                          cx.constant_tensor(node->input(1)).t(), node->output());
    return;
  }
  add_fully_connected(cx, node, false, node->input(0), node->input(1), node->input(2));
}

// addmm(bias, x, w, beta, alpha) = beta * bias + alpha * (x @ w). With alpha
// and beta 1 (PyTorch's converter's only form) FULLY_CONNECTED as linear; else
// the constant weight and bias are scaled at conversion (float32; alpha * w
// rounds before the product, where PyTorch rounds alpha * (x @ w)), and beta
// 0 drops the bias.
void lower_addmm(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 5, "malformed aten::addmm");
  double scale[2];
  for (int i = 0; i < 2; ++i) {
    const c10::IValue& s = cx.constant(node->input(3 + i)).value;
    check(s.isInt() || s.isDouble(), "addmm alpha and beta must be numbers");
    scale[i] = s.toScalar().toDouble();
  }
  const double beta = scale[0], alpha = scale[1];
  if (beta == 1 && alpha == 1) {
    add_fully_connected(cx, node, true, node->input(1), node->input(2), node->input(0));
    return;
  }
  check(cx.has_constant(node->input(0)) && !cx.has_operand(node->input(0)) &&
            cx.has_constant(node->input(2)) && !cx.has_operand(node->input(2)),
        "addmm with alpha or beta needs a constant weight and bias");
  const at::Tensor w = cx.constant_tensor(node->input(2)).to(at::kFloat);
  at::Tensor b = cx.constant_tensor(node->input(0)).to(at::kFloat);
  check(b.dim() <= 1, "addmm with alpha or beta needs a 1-D bias");
  b = beta == 0 ? at::zeros({w.size(1)}, at::kFloat)
                : (b.expand({w.size(1)}) * static_cast<float>(beta)).contiguous();
  product_with_constant(cx, product_operand(cx, node->input(1), "addmm", 2),
                        w * static_cast<float>(alpha), node->output(), &b);
}

}  // namespace

void register_linear_ops(LoweringTable& t) {
  t.add("aten::linear", lower_linear).with_note("needs a bias");
  t.add("aten::addmm", lower_addmm)
      .with_note("alpha/beta other than 1: constant weight and bias scaled at conversion");
}

}  // namespace nnapi_convert

// aten::_native_multi_head_attention, the fused path nn.MultiheadAttention
// takes in eval mode without gradients (ViT's encoder): decomposed into
// FULLY_CONNECTED projections, BATCH_MATMULs and a SOFTMAX. Batch-first
// (B, L, E) float32 inputs of fixed sizes, no mask, the attention weights
// unused.
#include <ATen/ATen.h>

#include <cmath>

#include "lower/matmul.h"
#include "lower/registry.h"

namespace nnapi_convert {
namespace {

using nnapi::Fuse;
using nnapi::Op;

// x (B, L, E) @ w.t() + b, with w (N, E) and b (N) constants.
Tensor project(LoweringContext& cx, const Tensor& x, const at::Tensor& w, const at::Tensor& b,
               const Value* out) {
  Tensor y = product_with_constant(cx, x, w.t(), nullptr);
  auto bias = cx.add_weight(b.contiguous(), DimOrder::Contiguous);
  return emit_binary(cx, Op::Add, y, {bias, cx.operand(bias)}, Fuse::None, out);
}

void lower_native_mha(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() >= 9, "malformed aten::_native_multi_head_attention");
  const char* what = "_native_multi_head_attention";
  check(node->input(0) == node->input(1) && node->input(1) == node->input(2),
        "_native_multi_head_attention is supported for self-attention only (query = key = value)");
  check(node->inputs().size() < 10 || cx.constant_is_none(node->input(9)),
        "_native_multi_head_attention with a mask is not supported");
  check(node->outputs().size() < 2 || !node->output(1)->hasUses(),
        "_native_multi_head_attention's attention weights are not supported");
  const int64_t e = cx.constant_int(node->input(3)), h = cx.constant_int(node->input(4));
  Tensor x = product_operand(cx, node->input(0), what, 3);
  check(x.op.shape.size() == 3 && x.op.shape[0] != 0 && x.op.shape[1] != 0 && x.op.shape[2] == e,
        "_native_multi_head_attention needs a (B, L, E) input of fixed sizes");
  const int64_t batch = x.op.shape[0], len = x.op.shape[1], d = e / h;
  const at::Tensor qkv_w = cx.constant_tensor(node->input(5));
  const at::Tensor qkv_b = cx.constant_tensor(node->input(6));
  auto heads = [&](int part, std::vector<int64_t> perm) {
    Tensor p = project(cx, x, qkv_w.narrow(0, part * e, e), qkv_b.narrow(0, part * e, e), nullptr);
    Tensor r =
        emit_reshape(cx, p, {SymInt{batch, ""}, SymInt{len, ""}, SymInt{h, ""}, SymInt{d, ""}});
    return emit_permute(cx, r, perm);
  };
  Tensor q = heads(0, {0, 2, 1, 3});  // (B, H, L, D)
  Tensor k = heads(1, {0, 2, 3, 1});  // (B, H, D, L)
  Tensor v = heads(2, {0, 2, 1, 3});  // (B, H, L, D)
  q = emit_binary(cx, Op::Mul, q, float_scalar_tensor(cx, 1.0f / std::sqrt(float(d))));
  Tensor scores = emit_batch_matmul(cx, q, k, nullptr);
  ModelBuilder& m = cx.model();
  const int32_t beta = m.add_float_scalar(1.0f), axis = m.add_int_scalar(3);
  const int32_t sm = make_output(cx, nullptr, scores.op, &scores);
  m.add_operation(Op::Softmax, {scores.id, beta, axis}, {sm});
  Tensor attn = emit_batch_matmul(cx, {sm, scores.op}, v, nullptr);  // (B, H, L, D)
  Tensor merged = emit_reshape(cx, emit_permute(cx, attn, {0, 2, 1, 3}),
                               {SymInt{batch, ""}, SymInt{len, ""}, SymInt{e, ""}});
  project(cx, merged, cx.constant_tensor(node->input(7)), cx.constant_tensor(node->input(8)),
          node->output(0));
}

}  // namespace

void register_attention_ops(LoweringTable& t) {
  t.add("aten::_native_multi_head_attention", lower_native_mha);
  t.note("aten::_native_multi_head_attention",
         "self-attention, batch-first, fixed sizes, no mask, weights unused: FULLY_CONNECTED "
         "projections, BATCH_MATMUL, SOFTMAX");
}

}  // namespace nnapi_convert

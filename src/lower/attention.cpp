// aten::_native_multi_head_attention, the fused path nn.MultiheadAttention
// takes in eval mode without gradients (ViT's encoder): decomposed into
// FULLY_CONNECTED projections, BATCH_MATMULs and a SOFTMAX. Batch-first
// (B, L, E) float32 inputs of fixed L and E (a flexible batch B needs
// BATCH_MATMUL: --min-android-api 33), no mask, the attention weights unused.
// aten::_transformer_encoder_layer_fwd, nn.TransformerEncoderLayer's fused eval path: that
// self-attention, layer norms and the feed-forward.
#include <ATen/ATen.h>

#include <cmath>

#include "lower/activation.h"
#include "lower/matmul.h"
#include "lower/normalization.h"
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

// Self-attention of x (B, L, E), fixed L and E, no mask: q/k/v projections by
// the packed (3E, E) weights, softmax(q k^T / sqrt(D)) v per head, the output
// projection. The result is `out`'s operand when given.
Tensor self_attention(LoweringContext& cx, const Tensor& x, int64_t e, int64_t h,
                      const at::Tensor& qkv_w, const at::Tensor& qkv_b, const at::Tensor& proj_w,
                      const at::Tensor& proj_b, const char* what, const Value* out) {
  check(x.op.shape.size() == 3 && x.op.shape[1] != 0 && x.op.shape[2] == e, [&] {
    return std::string(what) +
           " needs a (B, L, E) input with a fixed length L and width E: give them fixed sizes "
           "in --input";
  });
  check(h > 0 && e % h == 0, [&] { return std::string(what) + ": bad number of heads"; });
  const SymInt batch = sym_shape(x)[0];  // flexible: emit_batch_matmul needs API 33
  const int64_t len = x.op.shape[1], d = e / h;
  auto heads = [&](int part, std::vector<int64_t> perm) {
    Tensor p = project(cx, x, qkv_w.narrow(0, part * e, e), qkv_b.narrow(0, part * e, e), nullptr);
    Tensor r = emit_reshape(cx, p, {batch, SymInt{len, ""}, SymInt{h, ""}, SymInt{d, ""}});
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
                               {batch, SymInt{len, ""}, SymInt{e, ""}});
  return project(cx, merged, proj_w, proj_b, out);
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
  self_attention(cx, product_operand(cx, node->input(0), what, 3), e, h,
                 cx.constant_tensor(node->input(5)), cx.constant_tensor(node->input(6)),
                 cx.constant_tensor(node->input(7)), cx.constant_tensor(node->input(8)), what,
                 node->output(0));
}

// aten::_transformer_encoder_layer_fwd, the fused path nn.TransformerEncoderLayer
// takes in eval mode without gradients (batch-first): with norm_first,
//   x = src + mha(ln1(src)); out = x + ffn(ln2(x)),
// otherwise
//   x = ln1(src + mha(src)); out = ln2(x + ffn(x)),
// ffn(y) = linear2(relu or gelu(linear1(y))); one eps for both norms.
void lower_transformer_encoder_layer(LoweringContext& cx, const Node* node) {
  const char* what = "_transformer_encoder_layer_fwd";
  check(node->inputs().size() >= 18, "malformed aten::_transformer_encoder_layer_fwd");
  check(node->inputs().size() < 19 || cx.constant_is_none(node->input(18)),
        "_transformer_encoder_layer_fwd with a mask (src_mask or src_key_padding_mask) is not "
        "supported");
  auto t = [&](size_t i) { return cx.constant_tensor(node->input(i)); };
  const int64_t e = cx.constant_int(node->input(1)), h = cx.constant_int(node->input(2));
  const bool use_gelu = cx.constant(node->input(7)).value.toBool();
  const bool norm_first = cx.constant(node->input(8)).value.toBool();
  const double eps = cx.constant_float(node->input(9));
  Tensor src = product_operand(cx, node->input(0), what, 3);
  auto ln = [&](const Tensor& y, size_t i, const Value* out) {  // over the last dim, E
    const at::Tensor w = t(i), b = t(i + 1);
    return emit_layer_norm(cx, y, {2}, eps, &w, &b, out);
  };
  auto attention = [&](const Tensor& y) {
    return self_attention(cx, y, e, h, t(3), t(4), t(5), t(6), what, nullptr);
  };
  auto ffn = [&](const Tensor& y) {
    Tensor hidden = project(cx, y, t(14), t(15), nullptr);
    hidden = use_gelu ? gelu_erf(cx, hidden, nullptr) : emit_unary(cx, Op::Relu, hidden);
    return project(cx, hidden, t(16), t(17), nullptr);
  };
  if (norm_first) {
    Tensor x = emit_binary(cx, Op::Add, src, attention(ln(src, 10, nullptr)));
    emit_binary(cx, Op::Add, x, ffn(ln(x, 12, nullptr)), Fuse::None, node->output());
  } else {
    Tensor x = ln(emit_binary(cx, Op::Add, src, attention(src)), 10, nullptr);
    ln(emit_binary(cx, Op::Add, x, ffn(x)), 12, node->output());
  }
}

}  // namespace

void register_attention_ops(LoweringTable& t) {
  t.add("aten::_native_multi_head_attention", lower_native_mha);
  t.note("aten::_native_multi_head_attention",
         "self-attention, batch-first, fixed length and width (a flexible batch needs "
         "--min-android-api 33), no mask, weights unused: FULLY_CONNECTED projections, "
         "BATCH_MATMUL, SOFTMAX");
  t.add("aten::_transformer_encoder_layer_fwd", lower_transformer_encoder_layer);
  t.note("aten::_transformer_encoder_layer_fwd",
         "nn.TransformerEncoderLayer's eval fast path (batch-first, no mask): the "
         "self-attention above, layer norms (MEAN/SUB/MUL/RSQRT), relu or gelu feed-forward");
}

}  // namespace nnapi_convert

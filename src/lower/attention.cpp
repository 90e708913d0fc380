// aten::_native_multi_head_attention, the fused path nn.MultiheadAttention
// takes in eval mode without gradients (ViT's encoder): decomposed into
// FULLY_CONNECTED projections, BATCH_MATMULs and a SOFTMAX. Batch-first
// (B, L, E) float32 inputs of fixed E; a flexible batch B or length L needs
// BATCH_MATMUL (--min-android-api 33); the attention weights unused.
// aten::_transformer_encoder_layer_fwd, nn.TransformerEncoderLayer's fused eval path: that
// self-attention, layer norms and the feed-forward.
//
// Masks: PyTorch 1.13's modules hand these ops a key padding mask only
// (mask_type 1, shape (B, L)); an attn_mask/src_mask makes them take the
// unfused path. ATen turns a float mask into a bool one (non-zero = masked
// out) and its masked softmax gives a masked key the weight 0, and a row
// whose keys are all masked NaN. Here the mask becomes a (B, 1, 1, L)
// float bias of 0 (kept) or -inf (masked) added to the scores before the
// SOFTMAX, which computes exactly that. A bool model input (--input
// ...,dtype=bool) arrives as int32 0/1.
#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <optional>

#include "lower/activation.h"
#include "lower/factory.h"
#include "lower/logical.h"
#include "lower/matmul.h"
#include "lower/normalization.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {
namespace {

using nnapi::Fuse;
using nnapi::Op;

// x (B, L, E) @ w.t() + b, with w (N, E) and b (N) constants.
OperandHandle project(LoweringContext& cx, const OperandHandle& x, const at::Tensor& w,
                      const at::Tensor& b, const Value* out) {
  OperandHandle y = product_with_constant(cx, x, w.t(), nullptr);
  auto bias = cx.add_weight(b.contiguous(), DimOrder::Contiguous);
  return emit_binary(cx, Op::Add, y, {bias, cx.operand(bias)}, Fuse::None, out);
}

// A bool tensor the model computes: an int32 0/1 operand (bool inputs arrive
// so, see InputDType::Bool; a TENSOR_BOOL8 one is made so), or a constant
// made one.
OperandHandle bool_operand(LoweringContext& cx, const Value* v, const char* what) {
  if (!cx.has_operand(v)) {
    const int32_t id =
        cx.add_weight(cx.constant_tensor(v).ne(0).to(at::kInt).contiguous(), DimOrder::Contiguous);
    return {id, cx.operand(id)};
  }
  OperandHandle m = cx.get_operand(v);
  if (m.op.type == nnapi::OperandType::TensorBool8 && m.op.dim_order == DimOrder::Contiguous) {
    m = int01_of(cx, m);  // a mask computed by comparisons
  }
  check(m.op.type == nnapi::OperandType::TensorInt32 && m.op.dim_order == DimOrder::Contiguous,
        [&] {
          return std::string(what) + " needs a bool mask: a bool model input (--input " +
                 "...,dtype=bool) or a tensor computed from one, got " +
                 nnapi::operand_type_name(m.op.type);
        });
  return m;
}

// CAST of an int32 0/1 mask to float32 0/1.
OperandHandle as_float(LoweringContext& cx, const OperandHandle& m) {
  Operand f = m.op;
  f.type = nnapi::OperandType::TensorFloat32;
  return emit_unary_to(cx, Op::Cast, m, f);
}

// The additive bias of a key padding mask `v` of shape (B, L) for scores of
// (B, H, L, L): (B, 1, 1, L), 0 where a key is kept, -inf where it is masked
// (non-zero). A constant mask folds; a computed one (float, or int32 0/1 from
// a bool input) is CAST to float, mapped to 0/1 (MUL by 2^75 and MINIMUM with
// 1, twice, sends every non-zero float to 1) and to LOG(1 - m).
OperandHandle padding_mask_bias(LoweringContext& cx, const Value* v, const OperandHandle& x,
                                const char* what) {
  auto refuse = [&](const std::string& why) {
    fail(std::string(what) + ": the key padding mask " + why +
         "; give a bool or float (B, L) mask (True or non-zero = masked out) matching the input");
  };
  const SymInt batch = sym_shape(x)[0], len = sym_shape(x)[1];
  if (!cx.has_operand(v)) {
    at::Tensor m = cx.constant_tensor(v);
    if (m.dim() != 2 || (x.op.shape[0] != 0 && m.size(0) != x.op.shape[0]) ||
        (x.op.shape[1] != 0 && m.size(1) != x.op.shape[1])) {
      refuse("is a constant of shape " + shape_str(m.sizes().vec()));
    }
    if (x.op.shape[0] == 0 || x.op.shape[1] == 0) {
      refuse("is a constant, but the input's batch or length is flexible");
    }
    at::Tensor masked = m.scalar_type() == at::kBool ? m : m.ne(0);
    at::Tensor bias = at::zeros(m.sizes(), at::kFloat)
                          .masked_fill(masked, -std::numeric_limits<float>::infinity())
                          .reshape({m.size(0), 1, 1, m.size(1)});
    const int32_t id = cx.add_weight(bias.contiguous(), DimOrder::Contiguous);
    return {id, cx.operand(id)};
  }
  OperandHandle m = cx.get_operand(v);
  if (m.op.type == nnapi::OperandType::TensorBool8) m = int01_of(cx, m);
  if (m.op.shape.size() != 2) refuse("has shape " + shape_str(m.op.shape));
  const bool from_bool = m.op.type == nnapi::OperandType::TensorInt32;
  if (!from_bool && m.op.type != nnapi::OperandType::TensorFloat32) {
    refuse("is neither float32 nor a bool input (--input ...,dtype=bool)");
  }
  for (size_t d = 0; d < 2; ++d) {
    if (m.op.shape[d] != 0 && x.op.shape[d] != 0 && m.op.shape[d] != x.op.shape[d]) {
      refuse("has shape " + shape_str(m.op.shape) + ", not the input's (B, L)");
    }
  }
  if (from_bool) {
    m = as_float(cx, m);
  } else {
    m = emit_unary(cx, Op::Abs, m);
    for (int i = 0; i < 2; ++i) {
      m = emit_binary(cx, Op::Mul, m, float_scalar_tensor(cx, std::ldexp(1.0f, 75)));
      m = emit_binary(cx, Op::Minimum, m, float_scalar_tensor(cx, 1.0f));
    }
  }
  OperandHandle keep = emit_binary(cx, Op::Sub, float_scalar_tensor(cx, 1.0f), m);
  OperandHandle bias = emit_unary(cx, Op::Log, keep);
  return emit_reshape(cx, bias, {batch, SymInt{1, ""}, SymInt{1, ""}, len});
}

// Self-attention of x (B, L, E), fixed E: q/k/v projections by the packed
// (3E, E) weights, softmax(q k^T / sqrt(D) + mask) v per head, the output
// projection. `mask` is a (B, 1, 1, L) additive bias or null. The result is
// `out`'s operand when given.
OperandHandle self_attention(LoweringContext& cx, const OperandHandle& x, int64_t e, int64_t h,
                             const at::Tensor& qkv_w, const at::Tensor& qkv_b,
                             const at::Tensor& proj_w, const at::Tensor& proj_b,
                             const OperandHandle* mask, const char* what, const Value* out) {
  check(x.op.shape.size() == 3 && x.op.shape[2] == e, [&] {
    return std::string(what) + " needs a (B, L, E) input with a fixed width E of " +
           std::to_string(e) + ": give it a fixed size in --input";
  });
  check(h > 0 && e % h == 0, [&] { return std::string(what) + ": bad number of heads"; });
  // A flexible batch or length: emit_batch_matmul is BATCH_MATMUL at API 33,
  // a broadcast MUL and REDUCE_SUM below it.
  const SymInt batch = sym_shape(x)[0], len = sym_shape(x)[1];
  const int64_t d = e / h;
  auto heads = [&](int part, std::vector<int64_t> perm) {
    OperandHandle p =
        project(cx, x, qkv_w.narrow(0, part * e, e), qkv_b.narrow(0, part * e, e), nullptr);
    OperandHandle r = emit_reshape(cx, p, {batch, len, SymInt{h, ""}, SymInt{d, ""}});
    return emit_permute(cx, r, perm);
  };
  OperandHandle q = heads(0, {0, 2, 1, 3});  // (B, H, L, D)
  OperandHandle k = heads(1, {0, 2, 3, 1});  // (B, H, D, L)
  OperandHandle v = heads(2, {0, 2, 1, 3});  // (B, H, L, D)
  q = emit_binary(cx, Op::Mul, q, float_scalar_tensor(cx, 1.0f / std::sqrt(float(d))));
  OperandHandle scores = emit_batch_matmul(cx, q, k, nullptr);
  if (mask) scores = emit_binary(cx, Op::Add, scores, *mask);
  ModelBuilder& m = cx.model();
  const int32_t beta = m.add_float_scalar(1.0f), axis = m.add_int_scalar(3);
  const int32_t sm = make_output(cx, nullptr, scores.op, &scores);
  add_by_roles(
      m, Op::Softmax,
      {{nnapi::Role::Input, scores.id}, {nnapi::Role::Beta, beta}, {nnapi::Role::Axis, axis}},
      {sm});
  OperandHandle attn = emit_batch_matmul(cx, {sm, scores.op}, v, nullptr);  // (B, H, L, D)
  OperandHandle merged =
      emit_reshape(cx, emit_permute(cx, attn, {0, 2, 1, 3}), {batch, len, SymInt{e, ""}});
  return project(cx, merged, proj_w, proj_b, out);
}

// The (B, 1, 1, L) bias of a `keep` mask (True = a token): LOG(keep) is 0 or -inf.
OperandHandle keep_mask_bias(LoweringContext& cx, const Value* keep, const OperandHandle& x,
                             const char* what) {
  OperandHandle f = as_float(cx, bool_operand(cx, keep, what));
  check(f.op.shape.size() == 2, [&] {
    return std::string(what) + ": the nested tensor's mask has shape " + shape_str(f.op.shape) +
           ", not (B, L)";
  });
  const SymInt batch = sym_shape(x)[0], len = sym_shape(x)[1];
  return emit_reshape(cx, emit_unary(cx, Op::Log, f), {batch, SymInt{1, ""}, SymInt{1, ""}, len});
}

// nn.TransformerEncoder's sparsity fast path (PyTorch 1.13, a key padding
// mask, batch-first, not norm_first, an even number of heads, no gradients):
//   output = _nested_tensor_from_mask(src, mask.logical_not())
//   output = _transformer_encoder_layer_fwd(output, ...)  per layer, no mask
//   output = to_padded_tensor(output, 0.)
// The nested tensor is src itself here, whose `keep` mask the layers and
// to_padded_tensor find by walking back to _nested_tensor_from_mask: the
// keep mask of nested value `v`, or null when `v` is not one.
const Value* nested_keep_mask(const Value* v) {
  static const c10::Symbol layer = c10::aten::_transformer_encoder_layer_fwd;
  static const c10::Symbol from_mask = c10::aten::_nested_tensor_from_mask;
  const Node* n = v->node();
  while (n->kind() == layer) n = n->input(0)->node();
  return n->kind() == from_mask ? n->input(1) : nullptr;
}

// The mask argument `mask_at` of a fused op and its mask_type (at type_at):
// the additive bias of a key padding mask, or none.
std::optional<OperandHandle> fused_mask(LoweringContext& cx, const Node* node, size_t mask_at,
                                        size_t type_at, const OperandHandle& x, const char* what) {
  if (node->inputs().size() <= mask_at ||
      (!cx.has_operand(node->input(mask_at)) && cx.constant_is_none(node->input(mask_at)))) {
    if (const Value* keep = nested_keep_mask(node->input(0))) {
      return keep_mask_bias(cx, keep, x, what);
    }
    return std::nullopt;
  }
  const bool padding = node->inputs().size() > type_at &&
                       !cx.constant_is_none(node->input(type_at)) &&
                       cx.constant_int(node->input(type_at)) == 1;
  check(padding, [&] {
    return std::string(what) +
           " with a mask other than a key padding mask (mask_type 1) is not supported; "
           "nn.MultiheadAttention and nn.TransformerEncoderLayer pass attn_mask/src_mask "
           "through their unfused path, which converts";
  });
  return padding_mask_bias(cx, node->input(mask_at), x, what);
}

void lower_native_mha(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() >= 9, "malformed aten::_native_multi_head_attention");
  const char* what = "_native_multi_head_attention";
  check(node->input(0) == node->input(1) && node->input(1) == node->input(2),
        "_native_multi_head_attention is supported for self-attention only (query = key = value)");
  check(node->outputs().size() < 2 || !node->output(1)->hasUses(),
        "_native_multi_head_attention's attention weights are not supported");
  const int64_t e = cx.constant_int(node->input(3)), h = cx.constant_int(node->input(4));
  const OperandHandle x = product_operand(cx, node->input(0), what, 3);
  const std::optional<OperandHandle> mask = fused_mask(cx, node, 9, 12, x, what);
  self_attention(cx, x, e, h, cx.constant_tensor(node->input(5)),
                 cx.constant_tensor(node->input(6)), cx.constant_tensor(node->input(7)),
                 cx.constant_tensor(node->input(8)), mask ? &*mask : nullptr, what,
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
  auto t = [&](size_t i) { return cx.constant_tensor(node->input(i)); };
  const int64_t e = cx.constant_int(node->input(1)), h = cx.constant_int(node->input(2));
  const bool use_gelu = cx.constant(node->input(7)).value.toBool();
  const bool norm_first = cx.constant(node->input(8)).value.toBool();
  const double eps = cx.constant_float(node->input(9));
  OperandHandle src = product_operand(cx, node->input(0), what, 3);
  const std::optional<OperandHandle> mask = fused_mask(cx, node, 18, 19, src, what);
  auto ln = [&](const OperandHandle& y, size_t i, const Value* out) {  // over the last dim, E
    const at::Tensor w = t(i), b = t(i + 1);
    return emit_layer_norm(cx, y, {2}, eps, &w, &b, out);
  };
  auto attention = [&](const OperandHandle& y) {
    return self_attention(cx, y, e, h, t(3), t(4), t(5), t(6), mask ? &*mask : nullptr, what,
                          nullptr);
  };
  auto ffn = [&](const OperandHandle& y) {
    OperandHandle hidden = project(cx, y, t(14), t(15), nullptr);
    hidden = use_gelu ? gelu_erf(cx, hidden, nullptr) : emit_unary(cx, Op::Relu, hidden);
    return project(cx, hidden, t(16), t(17), nullptr);
  };
  if (norm_first) {
    OperandHandle x = emit_binary(cx, Op::Add, src, attention(ln(src, 10, nullptr)));
    emit_binary(cx, Op::Add, x, ffn(ln(x, 12, nullptr)), Fuse::None, node->output());
  } else {
    OperandHandle x = ln(emit_binary(cx, Op::Add, src, attention(src)), 10, nullptr);
    ln(emit_binary(cx, Op::Add, x, ffn(x)), 12, node->output());
  }
}

// The nested tensor is the padded tensor itself (see nested_keep_mask); the
// mask must be a bool the model computes or a constant.
void lower_nested_tensor_from_mask(LoweringContext& cx, const Node* node) {
  const char* what = "_nested_tensor_from_mask";
  OperandHandle x = product_operand(cx, node->input(0), what, 3);
  check(x.op.shape.size() == 3, "_nested_tensor_from_mask is supported on (B, L, E) tensors only");
  bool_operand(cx, node->input(1), what);
  cx.alias(node->output(), node->input(0));
}

// Padded positions (keep False) become `padding`. PyTorch pads to the longest
// sequence of the batch; the converted model always returns all L positions
// (the same when some sequence of the batch has no padding).
void lower_to_padded_tensor(LoweringContext& cx, const Node* node) {
  const char* what = "to_padded_tensor";
  const Value* keep = nested_keep_mask(node->input(0));
  check(keep != nullptr,
        "to_padded_tensor is supported on the nested tensors of nn.TransformerEncoder's fast "
        "path only (_nested_tensor_from_mask, then _transformer_encoder_layer_fwd)");
  check(node->inputs().size() < 3 || cx.constant_is_none(node->input(2)),
        "to_padded_tensor with an output_size is not supported");
  const double padding = cx.constant_number(node->input(1));
  OperandHandle y = product_operand(cx, node->input(0), what, 3);
  const std::vector<SymInt> dims = sym_shape(y);
  OperandHandle f = emit_reshape(cx, as_float(cx, bool_operand(cx, keep, what)),
                                 {dims[0], dims[1], SymInt{1, ""}});
  if (padding == 0) {
    emit_binary(cx, Op::Mul, y, f, Fuse::None, node->output());
    return;
  }
  OperandHandle kept = emit_binary(cx, Op::Mul, y, f);
  OperandHandle pad =
      emit_binary(cx, Op::Mul, emit_binary(cx, Op::Sub, float_scalar_tensor(cx, 1.0f), f),
                  float_scalar_tensor(cx, static_cast<float>(padding)));
  emit_binary(cx, Op::Add, kept, pad, Fuse::None, node->output());
}

// masked_fill(x, mask, value) with a computed bool mask (a constant one folds
// during conversion): where(mask, value, x), a SELECT, exact for every x
// (inf and NaN too) and value, of float32 and int32 tensors.
void lower_masked_fill(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 3, "malformed masked_fill");
  if (cx.has_operand(node->input(0))) {  // named here: SELECT's own check says `where`
    const nnapi::OperandType type = cx.get_operand(node->input(0)).op.type;
    check(type == nnapi::OperandType::TensorFloat32 || type == nnapi::OperandType::TensorInt32,
          [&] {
            return std::string("masked_fill of a ") + nnapi::operand_type_name(type) +
                   " tensor is not supported (float32 and integer tensors are): dequantize it "
                   "before the masked_fill (x.dequantize().masked_fill(mask, value), quantized "
                   "again after it if need be), or convert with --cpu-fallback to keep the node "
                   "in TorchScript";
          });
  }
  emit_where(cx, node->input(1), node->input(2), node->input(0), node->output());
}

// zeros_like(mask, dtype=float32) of a computed bool mask (a constant one
// folds during conversion), as F.multi_head_attention_forward makes a float
// mask of a bool one: CAST and MUL by 0, of any (also load-time) shape.
// zeros_like(x) of a float32 tensor the model computes (an input with
// flexible sizes too): a (1, ..., 1) zero constant TILEd to x's shape
// (multiples set when the model is loaded for flexible dims); exact for any
// x, where x * 0 would give NaN for infinities.
void lower_zeros_like_of_mask(LoweringContext& cx, const Node* node) {
  const char* what = "zeros_like";
  const Value* dtype = node->inputs().size() > 1 ? node->input(1) : nullptr;
  if (cx.has_operand(node->input(0))) {
    const OperandHandle x = cx.get_operand(node->input(0));
    if (x.op.type == nnapi::OperandType::TensorFloat32 &&
        (!dtype || cx.constant_is_none(dtype) ||
         static_cast<c10::ScalarType>(cx.constant_int(dtype)) == at::kFloat)) {
      emit_filled_like(cx, x, 0.0f, node->output());
      return;
    }
  }
  check(dtype && !cx.constant_is_none(dtype) &&
            static_cast<c10::ScalarType>(cx.constant_int(dtype)) == at::kFloat,
        "zeros_like of a tensor the model computes is supported for a bool mask to float32 "
        "only (dtype=torch.float32)");
  OperandHandle f = as_float(cx, bool_operand(cx, node->input(0), what));
  emit_binary(cx, Op::Mul, f, float_scalar_tensor(cx, 0.0f), Fuse::None, node->output());
}

}  // namespace

void register_attention_ops(LoweringTable& t) {
  t.add("aten::_native_multi_head_attention", lower_native_mha)
      .with_note(
          "self-attention, batch-first, fixed width (a flexible batch or length needs "
          "--min-android-api 33), a key padding mask (bool or float, an input or a constant) "
          "or none, weights unused: FULLY_CONNECTED projections, BATCH_MATMUL, SOFTMAX");
  t.add("aten::_transformer_encoder_layer_fwd", lower_transformer_encoder_layer)
      .with_note(
          "nn.TransformerEncoderLayer's eval fast path (batch-first, a key padding mask or "
          "none): the self-attention above, layer norms (MEAN/SUB/MUL/RSQRT), relu or gelu "
          "feed-forward");
  t.add("aten::_nested_tensor_from_mask", lower_nested_tensor_from_mask)
      .with_note(
          "nn.TransformerEncoder's fast path with a key padding mask: the padded tensor itself, "
          "its mask applied by the encoder layers and to_padded_tensor");
  t.add("aten::to_padded_tensor", lower_to_padded_tensor)
      .with_note(
          "of that nested tensor: MUL by the mask (all L positions are returned; PyTorch pads "
          "to the longest sequence of the batch)");
  t.add("aten::masked_fill", lower_masked_fill)
      .with_note(
          "with a computed bool mask, float32 or int32: SELECT of the value and x, the mask and "
          "value broadcast to x (a constant mask folds during conversion)")
      .with_folds();
  t.add("aten::zeros_like", lower_zeros_like_of_mask)
      .with_note(
          "of a computed float32 tensor: a zero constant TILEd to its shape (flexible sizes "
          "too); of a computed bool mask, dtype float32: CAST, MUL by 0 (constant inputs fold "
          "during conversion)")
      .with_folds();
}

}  // namespace nnapi_convert

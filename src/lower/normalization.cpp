// Normalization: aten::batch_norm that freezing could not fold into a
// convolution (a per-channel multiply and add with constant operands), and
// aten::layer_norm over the trailing dims (MEAN/SUB/MUL/RSQRT sequence),
// aten::group_norm (the same sequence over groups of channels) and
// aten::instance_norm (INSTANCE_NORMALIZATION on 4-D tensors); their quantized
// forms (quantized::batch_norm(1d/2d)(_relu), layer_norm, group_norm,
// instance_norm), which NNAPI has no quant8 operation for: DEQUANTIZE, the
// float sequence, QUANTIZE to the node's output scale and zero point, as
// PyTorch's quantized kernels compute them in float on the dequantized values.
#include "lower/normalization.h"

#include <ATen/ATen.h>

#include <functional>

#include "lower/emit.h"
#include "lower/forms.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {

using nnapi::Fuse;
using nnapi::Op;
using nnapi::OperandType;

namespace {

// x * w / sqrt(var + eps) + (b - mean * w / sqrt(var + eps)) per channel
// (dim 1) of x, the statistics and affine parameters the node's `first`
// input and the three after it (weight, bias, running mean, running var;
// weight and bias may be None).
OperandHandle emit_batch_norm(LoweringContext& cx, const Node* node, const OperandHandle& in,
                              size_t first, double eps, Fuse fuse, const Value* out) {
  const Operand& x = in.op;
  at::Tensor mean = cx.constant_tensor(node->input(first + 2)).to(at::kDouble);
  at::Tensor var = cx.constant_tensor(node->input(first + 3)).to(at::kDouble);
  int64_t channels = mean.numel();
  at::Tensor weight = cx.constant_is_none(node->input(first))
                          ? at::ones({channels}, at::kDouble)
                          : cx.constant_tensor(node->input(first)).to(at::kDouble);
  at::Tensor bias = cx.constant_is_none(node->input(first + 1))
                        ? at::zeros({channels}, at::kDouble)
                        : cx.constant_tensor(node->input(first + 1)).to(at::kDouble);
  check(x.shape.size() >= 2 && x.shape[1] == channels,
        "batch_norm statistics do not match the input's channels");
  // y = x * scale + shift with scale = w / sqrt(var + eps), shift = b - mean * scale,
  // shaped (1, C, 1, ...) to broadcast over the input.
  at::Tensor scale = weight / at::sqrt(var + eps);
  at::Tensor shift = bias - mean * scale;
  std::vector<int64_t> shape(x.shape.size(), 1);
  shape[1] = channels;
  OperandHandle s = float_weight_like(cx, scale.reshape(shape), x);
  OperandHandle b = float_weight_like(cx, shift.reshape(shape), x);
  OperandHandle scaled = emit_binary(cx, Op::Mul, in, s);
  return emit_binary(cx, Op::Add, scaled, b, fuse, out);
}

void lower_batch_norm(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 9, "malformed aten::batch_norm");
  const OperandHandle in = cx.get_operand(node->input(0));
  check(in.op.type == OperandType::TensorFloat32, "batch_norm of a non-float tensor");
  check(!cx.constant_bool(node->input(5)),
        "batch_norm in training mode (training=True in the graph): it would normalize by the "
        "batch's own statistics. A scripted model converts with --eval; a traced one recorded "
        "the mode when it was traced: call .eval() before tracing, then save it again");
  emit_batch_norm(cx, node, in, 1, cx.constant_float(node->input(7)), Fuse::None, node->output());
}

// MEAN over `axes` (NNAPI order), keeping dims.
OperandHandle emit_mean(LoweringContext& cx, const OperandHandle& x,
                        const std::vector<int64_t>& axes) {
  Operand o = x.op;
  for (int64_t a : axes) o.shape[a] = 1;
  int32_t id = make_output(cx, nullptr, o, &x);
  ModelBuilder& m = cx.model();
  const int32_t axes_id = m.add_int_vector(axes);
  add_reduce(m, Op::Mean, x.id, axes_id, m.add_int_scalar(1), id);
  return {id, o};
}

// layer_norm(x, normalized_shape, weight, bias, eps, ...) of the float
// operand `in` (the quantized form's arguments are in the same places).
OperandHandle layer_norm_of(LoweringContext& cx, const Node* node, const OperandHandle& in,
                            const Value* out) {
  const auto& [x_id, x] = in;
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
  at::Tensor w, b;
  if (!cx.constant_is_none(node->input(2))) w = cx.constant_tensor(node->input(2));
  if (!cx.constant_is_none(node->input(3))) b = cx.constant_tensor(node->input(3));
  return emit_layer_norm(cx, in, axes, eps, w.defined() ? &w : nullptr, b.defined() ? &b : nullptr,
                         out);
}

void lower_layer_norm(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 6, "malformed aten::layer_norm");
  const OperandHandle in = cx.get_operand(node->input(0));
  check(in.op.type == OperandType::TensorFloat32, "layer_norm of a non-float tensor");
  layer_norm_of(cx, node, in, node->output());
}

}  // namespace

OperandHandle emit_normalize(LoweringContext& cx, const OperandHandle& x,
                             const std::vector<int64_t>& axes, double eps, const Value* out) {
  OperandHandle mean = emit_mean(cx, x, axes);
  OperandHandle centered = emit_binary(cx, Op::Sub, x, mean);
  OperandHandle var = emit_mean(cx, emit_binary(cx, Op::Mul, centered, centered), axes);
  OperandHandle inv =
      emit_unary(cx, Op::Rsqrt,
                 emit_binary(cx, Op::Add, var, float_scalar_tensor(cx, static_cast<float>(eps))));
  return emit_binary(cx, Op::Mul, centered, inv, Fuse::None, out);
}

OperandHandle emit_layer_norm(LoweringContext& cx, const OperandHandle& x,
                              const std::vector<int64_t>& axes, double eps,
                              const at::Tensor* weight, const at::Tensor* bias, const Value* out) {
  OperandHandle y = emit_normalize(cx, x, axes, eps, weight || bias ? nullptr : out);
  if (weight) {
    int32_t w = cx.add_weight(weight->to(at::kFloat).contiguous());
    y = emit_binary(cx, Op::Mul, y, {w, cx.operand(w)}, Fuse::None, bias ? nullptr : out);
  }
  if (bias) {
    int32_t b = cx.add_weight(bias->to(at::kFloat).contiguous());
    y = emit_binary(cx, Op::Add, y, {b, cx.operand(b)}, Fuse::None, out);
  }
  return y;
}

namespace {

// y * weight + bias with per-channel (dim 1) constants; either may be None.
OperandHandle emit_channel_affine(LoweringContext& cx, OperandHandle y, const Value* weight,
                                  const Value* bias) {
  std::vector<int64_t> shape(y.op.shape.size(), 1);
  shape[1] = y.op.shape[1];
  if (!cx.constant_is_none(weight)) {
    OperandHandle w = float_weight_like(cx, cx.constant_tensor(weight).reshape(shape), y.op);
    y = emit_binary(cx, Op::Mul, y, w);
  }
  if (!cx.constant_is_none(bias)) {
    OperandHandle b = float_weight_like(cx, cx.constant_tensor(bias).reshape(shape), y.op);
    y = emit_binary(cx, Op::Add, y, b);
  }
  return y;
}

// A float32 (N, C, *) operand with a fixed channel count.
OperandHandle channel_input(const OperandHandle& x, const char* what) {
  check(x.op.type == OperandType::TensorFloat32,
        [&] { return std::string(what) + " is supported on float32 tensors only"; });
  check(x.op.shape.size() >= 2 && x.op.shape[1] != 0, [&] {
    return std::string(what) + " needs an (N, C, ...) input with a fixed C, got " +
           shape_str(x.op.shape);
  });
  check(x.op.dim_order == DimOrder::Contiguous || x.op.dim_order == DimOrder::ChannelsLast,
        "unknown memory layout");
  return x;
}

// Normalization over groups of `groups` channels and every position after
// dim 1: RESHAPE of the NCHW-ordered data to (N, G, C/G * spatial), the
// statistics over axis 2, RESHAPE back, then the per-channel affine.
// Channels-last data is transposed to NCHW and back.
OperandHandle emit_group_norm(LoweringContext& cx, OperandHandle x, int64_t groups,
                              const Value* weight, const Value* bias, double eps) {
  const DimOrder order = x.op.dim_order;
  x = emit_relayout(cx, x, DimOrder::Contiguous);
  std::vector<SymInt> dims = sym_shape(x);
  const int64_t c = x.op.shape[1];
  SymInt per_group{c / groups, ""};
  for (size_t d = 2; d < dims.size(); ++d) per_group = sym_arith(per_group, '*', dims[d]);
  OperandHandle grouped = emit_reshape(cx, x, {dims[0], SymInt{groups, ""}, per_group});
  OperandHandle normalized = emit_normalize(cx, grouped, {2}, eps);
  OperandHandle y = emit_channel_affine(cx, emit_reshape(cx, normalized, dims), weight, bias);
  return emit_relayout(cx, y, order);
}

// group_norm(x, num_groups, weight, bias, eps, ...) of the float operand `in`
// (the quantized form's arguments are in the same places).
OperandHandle group_norm_of(LoweringContext& cx, const Node* node, const OperandHandle& in) {
  const OperandHandle x = channel_input(in, "group_norm");
  const int64_t groups = cx.constant_int(node->input(1));
  check(groups > 0 && x.op.shape[1] % groups == 0, [&] {
    return "group_norm: " + std::to_string(x.op.shape[1]) + " channels do not split into " +
           std::to_string(groups) + " groups";
  });
  return emit_group_norm(cx, x, groups, node->input(2), node->input(3),
                         cx.constant_float(node->input(4)));
}

void bind(LoweringContext& cx, const Node* node, const OperandHandle& y) {
  cx.reinterpret(node->output(), y.id, y.op);
}

// group_norm(x, num_groups, weight, bias, eps, cudnn_enabled).
void lower_group_norm(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 6, "malformed aten::group_norm");
  bind(cx, node, group_norm_of(cx, node, cx.get_operand(node->input(0))));
}

// Normalization of each channel by the input's own statistics:
// INSTANCE_NORMALIZATION (gamma 1, beta 0; NNAPI's gamma and beta are
// scalars) and the per-channel affine for 4-D inputs, the group_norm sequence
// with one group per channel otherwise.
OperandHandle instance_norm_of(LoweringContext& cx, const OperandHandle& in, const Value* weight,
                               const Value* bias, double eps) {
  const OperandHandle x = channel_input(in, "instance_norm");
  if (x.op.shape.size() != 4) return emit_group_norm(cx, x, x.op.shape[1], weight, bias, eps);
  ModelBuilder& m = cx.model();
  const int32_t gamma = m.add_float_scalar(1.0f);
  const int32_t beta = m.add_float_scalar(0.0f);
  const int32_t epsilon = m.add_float_scalar(static_cast<float>(eps));
  const int32_t layout = m.add_bool_scalar(x.op.use_nchw());
  const int32_t id = make_output(cx, nullptr, x.op, &x);
  using R = nnapi::Role;
  add_by_roles(m, Op::InstanceNormalization,
               {{R::Input, x.id},
                {R::Gamma, gamma},
                {R::Beta, beta},
                {R::Epsilon, epsilon},
                {R::Layout, layout}},
               {id});
  return emit_channel_affine(cx, {id, x.op}, weight, bias);
}

// instance_norm(x, weight, bias, running_mean, running_var, use_input_stats,
// momentum, eps, cudnn_enabled). With the input's own statistics (the
// InstanceNorm default): instance_norm_of. With running statistics it is
// batch_norm's per-channel multiply and add (same arguments).
void lower_instance_norm(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 9, "malformed aten::instance_norm");
  if (!cx.constant_bool(node->input(5))) {
    lower_batch_norm(cx, node);
    return;
  }
  bind(cx, node,
       instance_norm_of(cx, cx.get_operand(node->input(0)), node->input(1), node->input(2),
                        cx.constant_float(node->input(7))));
}

// A quantized normalization (its last two arguments the output scale and zero
// point): DEQUANTIZE of input 0, `normalize` of the float operand, QUANTIZE.
void lower_through_float(LoweringContext& cx, const Node* node, size_t arity,
                         const std::function<OperandHandle(const OperandHandle&)>& normalize) {
  const std::string what = node->kind().toQualString();
  check(node->inputs().size() == arity, [&] { return "malformed " + what; });
  const OperandHandle x = cx.get_operand(node->input(0));
  check(x.op.type == OperandType::TensorQuant8Asymm, [&] { return what + " of a float tensor"; });
  const OperandHandle y = normalize(emit_dequantize(cx, x));
  emit_quantize(cx, y, cx.constant_float(node->input(arity - 2)),
                cx.constant_int(node->input(arity - 1)), node->output());
}

// quantized::batch_norm(1d, 2d)(_relu)(qx, weight, bias, mean, var, eps,
// output_scale, output_zero_point), what eager quantization makes of a
// BatchNorm it cannot fold into a convolution (and FX of one after a
// non-convolution); the ReLU fused into the ADD.
void lower_qbatch_norm(LoweringContext& cx, const Node* node, Fuse fuse) {
  lower_through_float(cx, node, 8, [&](const OperandHandle& x) {
    return emit_batch_norm(cx, node, x, 1, cx.constant_float(node->input(5)), fuse, nullptr);
  });
}

}  // namespace

void register_normalization_ops(LoweringTable& t) {
  t.add("aten::batch_norm", lower_batch_norm).with_frames(frames_per_frame());
  t.add("aten::layer_norm", lower_layer_norm);
  t.add("aten::group_norm", lower_group_norm);
  t.add("aten::instance_norm", lower_instance_norm);
  for (const char* kind :
       {"quantized::batch_norm", "quantized::batch_norm1d", "quantized::batch_norm2d"}) {
    t.add(kind, [](LoweringContext& cx, const Node* n) { lower_qbatch_norm(cx, n, Fuse::None); });
  }
  for (const char* kind : {"quantized::batch_norm_relu", "quantized::batch_norm1d_relu",
                           "quantized::batch_norm2d_relu"}) {
    t.add(kind, [](LoweringContext& cx, const Node* n) { lower_qbatch_norm(cx, n, Fuse::Relu); });
  }
  // quantized::layer_norm(x, normalized_shape, weight, bias, eps, scale,
  // zero_point): what FX graph-mode quantization makes of every LayerNorm.
  t.add("quantized::layer_norm",
        [](LoweringContext& cx, const Node* n) {
          lower_through_float(cx, n, 7, [&](const OperandHandle& x) {
            // NHWC data (a quantized convolution's output) in PyTorch's order.
            return layer_norm_of(cx, n, emit_relayout(cx, x, DimOrder::Contiguous), nullptr);
          });
        })
      .with_note(
          "DEQUANTIZE, aten::layer_norm's float sequence, QUANTIZE (NNAPI has no quant8 "
          "normalization); so are quantized::group_norm, instance_norm and "
          "batch_norm(1d/2d)(_relu)");
  // quantized::group_norm(x, num_groups, weight, bias, eps, scale, zero_point).
  t.add("quantized::group_norm", [](LoweringContext& cx, const Node* n) {
    lower_through_float(cx, n, 7, [&](const OperandHandle& x) { return group_norm_of(cx, n, x); });
  });
  // quantized::instance_norm(x, weight, bias, eps, scale, zero_point).
  t.add("quantized::instance_norm", [](LoweringContext& cx, const Node* n) {
    lower_through_float(cx, n, 6, [&](const OperandHandle& x) {
      return instance_norm_of(cx, x, n->input(1), n->input(2), cx.constant_float(n->input(3)));
    });
  });
}

}  // namespace nnapi_convert

// Convolutions: aten::conv2d and aten::_convolution (incl. transposed, with
// output_padding; 1-D ones, nn.Conv1d's 3-D weights, as the 2-D convolution
// over (N, C, 1, L)), and emit_conv2d, the NNAPI convolution both they
// and the quantized convolutions of quantized.cpp use.
#include "lower/convolution.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/constants.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "lower/constant_value.h"
#include "lower/emit.h"
#include "lower/forms.h"
#include "lower/relayout.h"

namespace nnapi_convert {

using nnapi::Fuse;
using nnapi::Op;
using nnapi::OperandType;

OperandHandle conv1d_as_2d(LoweringContext& cx, const OperandHandle& x) {
  check(x.op.shape.size() == 3 && x.op.dim_order == DimOrder::Contiguous, [&] {
    return "1-D convolution needs a 3-D (N, C, L) input, got " + shape_str(x.op.shape);
  });
  std::vector<SymInt> dims = sym_shape(x);
  dims.insert(dims.begin() + 2, SymInt{1, ""});
  return emit_reshape(cx, x, dims);
}

void conv1d_result(LoweringContext& cx, const OperandHandle& y, const Value* out) {
  std::vector<SymInt> dims = sym_shape(y);
  dims.erase(dims.begin() + 2);
  emit_reshape(cx, y, dims, out);
}

namespace {

// A bias argument as a tensor: undefined when None.
at::Tensor optional_bias(LoweringContext& cx, const Value* bias) {
  return cx.constant_is_none(bias) ? at::Tensor() : cx.constant_tensor(bias);
}

std::vector<int64_t> kernel_of(const at::Tensor& weight) {
  check(weight.dim() == 4, "only 1-D and 2-D convolutions (3-D or 4-D weights) are supported");
  return {weight.size(2), weight.size(3)};
}

// A convolution argument as the 2-D pair: as given for a 2-D convolution, {first, v}
// for a 1-D one (over (N, C, 1, L)).
std::vector<int64_t> pair_of(std::vector<int64_t> v, int64_t first, bool one_d, const char* what) {
  if (!one_d) return v;
  check(v.size() == 1, [&] { return std::string("1-D convolution needs one ") + what; });
  return {first, v[0]};
}

// The window of a 1-D (3-D weight) or 2-D convolution; padding is an int list,
// or the string 'valid' or 'same' (conv1d/conv2d.padding, _convolution_mode).
// 'same' pads dilation * (kernel - 1) in all, the odd element after (bottom,
// right), as ATen's _convolution_mode does; PyTorch allows it with stride 1 only.
ConvPoolArgs conv_args(LoweringContext& cx, const at::Tensor& weight, const Value* stride,
                       const Value* padding, const Value* dilation, const Value* groups) {
  const bool one_d = weight.dim() == 3;
  const std::vector<int64_t> kernel =
      one_d ? std::vector<int64_t>{1, weight.size(2)} : kernel_of(weight);
  const c10::IValue& pad = cx.constant(padding).value;
  std::vector<int64_t> pads = {0, 0};
  if (!pad.isString()) pads = pair_of(cx.constant_int_list(padding), 0, one_d, "padding");
  ConvPoolArgs a = make_conv_pool_args(
      kernel, pair_of(cx.constant_int_list(stride), 1, one_d, "stride"), pads,
      pair_of(cx.constant_int_list(dilation), 1, one_d, "dilation"), cx.constant_int(groups));
  if (pad.isString() && pad.toStringRef() == "same") {
    check(a.stride_h == 1 && a.stride_w == 1,
          "padding='same' needs stride 1 (PyTorch refuses strided 'same' convolutions)");
    const int64_t th = a.dilation_h * (a.kernel_h - 1), tw = a.dilation_w * (a.kernel_w - 1);
    a.pad_t = th / 2;
    a.pad_b = th - a.pad_t;
    a.pad_l = tw / 2;
    a.pad_r = tw - a.pad_l;
  } else if (pad.isString()) {
    check(pad.toStringRef() == "valid",
          [&] { return "unknown convolution padding '" + pad.toStringRef() + "'"; });
  }
  return a;
}

// A transposed convolution's output_padding adds rows and columns at the
// bottom and right of PyTorch's output. Within the padding they are rows of
// the full product that the padding would crop, so the bottom/right padding
// shrinks by it; beyond it they hold the bias alone (no input reaches them):
// returned as (extra rows, extra columns) for emit_transposed_extra.
std::pair<int64_t, int64_t> apply_output_padding(ConvPoolArgs& a,
                                                 const std::vector<int64_t>& output_padding) {
  check(output_padding.size() == 2, "malformed output_padding");
  const int64_t extra_h = std::max<int64_t>(0, output_padding[0] - a.pad_b);
  const int64_t extra_w = std::max<int64_t>(0, output_padding[1] - a.pad_r);
  a.pad_b = std::max<int64_t>(0, a.pad_b - output_padding[0]);
  a.pad_r = std::max<int64_t>(0, a.pad_r - output_padding[1]);
  return {extra_h, extra_w};
}

// A float transposed convolution whose output_padding exceeds its padding:
// TRANSPOSE_CONV_2D with a zero bias, PAD of the extra rows and columns with
// zeros, and ADD of the bias per channel (the extra cells are bias only).
OperandHandle emit_transposed_extra(LoweringContext& cx, const Value* out,
                                    const OperandHandle& image, const at::Tensor& weight,
                                    const at::Tensor& bias_in, const ConvPoolArgs& a,
                                    std::pair<int64_t, int64_t> extra, Fuse fuse) {
  check(image.op.type == OperandType::TensorFloat32,
        "quantized transposed convolution with output_padding larger than its padding is not "
        "supported");
  const at::Tensor bias = bias_in.defined() ? bias_in.to(at::kFloat)
                                            : at::zeros({weight.size(1) * a.group}, at::kFloat);
  const int32_t zero_bias = cx.add_weight(at::zeros_like(bias));
  OperandHandle y = emit_conv2d(cx, nullptr, 0.0, 0, image, weight, zero_bias, a, true, Fuse::None);
  y = emit_pad(cx, y, {0, 0, 0, 0}, {0, 0, extra.first, extra.second}, 0.0);
  const OperandHandle b = float_weight_like(cx, bias.reshape({1, -1, 1, 1}), y.op);
  return emit_binary(cx, Op::Add, y, b, fuse, out);
}

// conv1d / conv2d(input, weight, bias, stride, padding, dilation, groups),
// padding an int list or 'same'/'valid' (also aten::_convolution_mode, what
// tracing records for string padding).
void lower_conv(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 7,
        [&] { return std::string("malformed ") + node->kind().toQualString(); });
  at::Tensor weight = cx.constant_tensor(node->input(1));
  static const c10::Symbol conv1d_kind = c10::aten::conv1d;
  const bool conv1d = node->kind() == conv1d_kind;
  check(!conv1d || weight.dim() == 3, "aten::conv1d needs a 3-D weight");
  ConvPoolArgs a =
      conv_args(cx, weight, node->input(3), node->input(4), node->input(5), node->input(6));
  emit_conv_any(cx, cx.get_operand(node->input(0)), weight, optional_bias(cx, node->input(2)), a,
                false, {}, cx.fuse_following_activation(node->output()), node->output());
}

void lower_convolution(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 13, "malformed aten::_convolution");
  at::Tensor weight = cx.constant_tensor(node->input(1));
  bool transpose = cx.constant(node->input(6)).value.toBool();
  ConvPoolArgs a =
      conv_args(cx, weight, node->input(3), node->input(4), node->input(5), node->input(8));
  emit_conv_any(cx, cx.get_operand(node->input(0)), weight, optional_bias(cx, node->input(2)), a,
                transpose,
                transpose ? cx.constant_int_list(node->input(7)) : std::vector<int64_t>{},
                cx.fuse_following_activation(node->output()), node->output());
}

// A float transposed convolution that TRANSPOSE_CONV_2D cannot take as it is,
// made one it can: groups as one dense convolution whose (in, out) weight is
// block diagonal, dilation as a kernel with dilation - 1 zeros between taps.
// Both add only products with zero weights (exact); a grouped one costs
// `groups` times the multiplications.
void densify_transposed_weight(at::Tensor* weight, ConvPoolArgs* a) {
  at::Tensor w = *weight;  // (in, out / groups, kh, kw)
  if (a->group > 1) {
    const int64_t in = w.size(0), per_out = w.size(1), g = a->group;
    check(in % g == 0, "transposed convolution input channels are not a multiple of groups");
    at::Tensor dense = at::zeros({in, per_out * g, w.size(2), w.size(3)}, w.options());
    const int64_t per_in = in / g;
    for (int64_t k = 0; k < g; ++k) {
      dense.slice(0, k * per_in, (k + 1) * per_in)
          .slice(1, k * per_out, (k + 1) * per_out)
          .copy_(w.slice(0, k * per_in, (k + 1) * per_in));
    }
    w = dense;
    a->group = 1;
  }
  if (a->dilation_h != 1 || a->dilation_w != 1) {
    const int64_t kh = a->dilation_h * (w.size(2) - 1) + 1,
                  kw = a->dilation_w * (w.size(3) - 1) + 1;
    at::Tensor dilated = at::zeros({w.size(0), w.size(1), kh, kw}, w.options());
    dilated.slice(2, 0, kh, a->dilation_h).slice(3, 0, kw, a->dilation_w).copy_(w);
    w = dilated;
    a->kernel_h = kh;
    a->kernel_w = kw;
    a->dilation_h = a->dilation_w = 1;
  }
  *weight = w;
}

bool approx_equal(double a, double b) { return std::abs(a - b) <= 1e-6 * std::min(a, b); }

}  // namespace

OperandHandle emit_conv_any(LoweringContext& cx, OperandHandle x, at::Tensor weight,
                            const at::Tensor& bias, ConvPoolArgs a, bool transpose,
                            const std::vector<int64_t>& output_padding, Fuse fuse,
                            const Value* out) {
  const bool one_d = weight.dim() == 3;
  check(one_d || weight.dim() == 4,
        "only 1-D and 2-D convolutions (3-D or 4-D weights) are supported");
  // The bias operand: the given one, or zeros of the weight's dtype.
  const int64_t channels = transpose ? weight.size(1) * a.group : weight.size(0);
  const int32_t bias_id =
      cx.add_weight(bias.defined() ? bias : at::zeros({channels}, weight.options()));
  std::pair<int64_t, int64_t> extra{0, 0};
  if (transpose)
    extra = apply_output_padding(a, pair_of(output_padding, 0, one_d, "output_padding"));
  if (one_d) {
    check(out != nullptr, "internal: a 1-D convolution needs its output value");
    x = conv1d_as_2d(cx, x);
    weight = weight.unsqueeze(2);
  }
  const Value* out_2d = one_d ? nullptr : out;
  OperandHandle y;
  if (extra.first || extra.second) {
    y = emit_transposed_extra(cx, out_2d, x, weight, bias, a, extra, fuse);
  } else {
    y = emit_conv2d(cx, out_2d, 0.0, 0, x, weight, bias_id, a, transpose, fuse);
  }
  if (one_d) {
    conv1d_result(cx, y, out);
    return cx.get_operand(out);
  }
  return y;
}

ConvPoolArgs conv2d_window(const at::Tensor& weight, const std::vector<int64_t>& stride,
                           const std::vector<int64_t>& padding,
                           const std::vector<int64_t>& dilation, int64_t groups) {
  return make_conv_pool_args(kernel_of(weight), stride, padding, dilation, groups);
}

OperandHandle emit_conv2d(LoweringContext& cx, const Value* out, double out_scale,
                          int64_t out_zero_point, const OperandHandle& image_operand,
                          const at::Tensor& weight, int32_t bias_id, const ConvPoolArgs& args_in,
                          bool transpose, Fuse fuse) {
  const auto& [image_id, image] = image_operand;
  check(image.shape.size() == 4,
        [&] { return "convolution needs a 4-D input, got " + shape_str(image.shape); });
  if (transpose && weight.scalar_type() == at::kFloat &&
      (args_in.group > 1 || args_in.dilation_h != 1 || args_in.dilation_w != 1)) {
    at::Tensor dense = weight;
    ConvPoolArgs a = args_in;
    densify_transposed_weight(&dense, &a);
    return emit_conv2d(cx, out, out_scale, out_zero_point, image_operand, dense, bias_id, a, true,
                       fuse);
  }
  const ConvPoolArgs& args = args_in;
  int64_t in_c = image.shape[1];
  check(args.group >= 1, "convolution groups must be positive");
  // Which NNAPI convolution, and how the PyTorch weight is permuted for it.
  enum class Kind { Full, Depthwise, Grouped } kind;
  std::vector<int64_t> perm;
  if (args.group == 1) {
    kind = Kind::Full;
    // (out, in, kh, kw) as NNAPI's (out, kh, kw, in); a transposed weight's
    // (in, out, kh, kw) as (out, kh, kw, in).
    perm = transpose ? std::vector<int64_t>{1, 2, 3, 0} : perm_vector(kToNhwc);
  } else if (args.group == in_c) {
    kind = Kind::Depthwise;
    perm = {1, 2, 3, 0};
  } else {
    check(in_c % args.group == 0, [&] {
      return "input channels (" + std::to_string(in_c) + ") are not a multiple of groups (" +
             std::to_string(args.group) + ")";
    });
    kind = Kind::Grouped;
    perm = perm_vector(kToNhwc);
  }
  bool dilated = args.dilation_h != 1 || args.dilation_w != 1;
  check(!(transpose && kind != Kind::Full),
        "grouped or depthwise transposed convolution is not supported");
  check(!(transpose && dilated), "dilated transposed convolution is not supported");
  check(!(kind == Kind::Grouped && dilated),
        "NNAPI's GROUPED_CONV_2D has no dilation: dilated grouped convolution is not supported");
  int32_t weight_id = cx.add_weight(permuted_contiguous(weight, perm));
  const Operand w = cx.operand(weight_id);
  const Operand bias = cx.operand(bias_id);
  if (image.type == OperandType::TensorFloat32) {
    check(w.type == OperandType::TensorFloat32 && bias.type == OperandType::TensorFloat32,
          "a float convolution needs float weight and bias");
  } else if (image.type == OperandType::TensorQuant8Asymm) {
    check(w.type == OperandType::TensorQuant8Asymm && bias.type == OperandType::TensorInt32,
          "a quantized convolution needs quint8 weight and int32 bias");
    check(approx_equal(image.scale * w.scale, bias.scale) && bias.zero_point == 0,
          "quantized convolution bias scale must equal input scale * weight scale");
  } else {
    fail("unsupported input type for conv2d: " + std::string(nnapi::operand_type_name(image.type)));
  }
  check(w.shape.size() == 4 && bias.shape.size() == 1, "bad convolution weight or bias rank");
  int64_t out_c;
  int64_t multiplier = 1;
  if (kind == Kind::Depthwise) {
    out_c = w.shape[3];
    check(w.shape[0] == 1, "bad depthwise weight shape");
    check(out_c % in_c == 0, "depthwise output channels must be a multiple of input channels");
    multiplier = out_c / in_c;
  } else {
    out_c = w.shape[0];
    int64_t per_group = kind == Kind::Grouped ? in_c / args.group : in_c;
    check(w.shape[3] == per_group, [&] {
      return "convolution weight has " + std::to_string(w.shape[3]) +
             " input channels per group, input has " + std::to_string(per_group);
    });
  }
  check(out_c == bias.shape[0], "convolution bias size does not match output channels");
  ModelBuilder& m = cx.model();
  using R = nnapi::Role;
  // The operands by role, created in this order; op_signature.h places them.
  std::vector<std::pair<R, int32_t>> given = {
      {R::Input, image_id}, {R::Filter, weight_id}, {R::Bias, bias_id}};
  auto add_int = [&](R role, int64_t v) {
    given.push_back({role, m.add_int_scalar(static_cast<int32_t>(v))});
  };
  add_int(R::PadLeft, args.pad_l);
  add_int(R::PadRight, args.pad_r);
  add_int(R::PadTop, args.pad_t);
  add_int(R::PadBottom, args.pad_b);
  add_int(R::StrideW, args.stride_w);
  add_int(R::StrideH, args.stride_h);
  if (kind == Kind::Depthwise) add_int(R::DepthMultiplier, multiplier);
  if (kind == Kind::Grouped) add_int(R::Groups, args.group);
  add_int(R::Fuse, static_cast<int32_t>(fuse));
  given.push_back({R::Layout, m.add_bool_scalar(image.use_nchw())});
  if (dilated) {
    add_int(R::DilationW, args.dilation_w);
    add_int(R::DilationH, args.dilation_h);
  }
  Operand out_rec = image;
  out_rec.scale = out_scale;
  out_rec.zero_point = out_zero_point;
  const auto [out_id, out_op] =
      cx.add_output(out, out_rec, conv_pool_out_dims({image_id, image}, args, out_c, transpose));
  Op op = kind == Kind::Depthwise ? Op::DepthwiseConv2d
          : kind == Kind::Grouped ? Op::GroupedConv2d
          : transpose             ? Op::TransposeConv2d
                                  : Op::Conv2d;
  add_by_roles(m, op, given, {out_id});
  return {out_id, out_op};
}

std::string conv_support(const at::Tensor& w, bool transpose, int64_t groups,
                         const std::vector<int64_t>& dilation) {
  // A transposed convolution takes groups, dilation and any output_padding
  // (densify_transposed_weight, emit_transposed_extra).
  // (out, in / groups, kh, kw): depthwise when each group has one input channel.
  if (transpose || w.dim() < 2 || w.size(1) == 1 || groups == 1) return "";
  const bool dilated =
      std::any_of(dilation.begin(), dilation.end(), [](int64_t d) { return d != 1; });
  return dilated ? "dilated grouped" : "";
}

namespace {

// What emit_conv2d and the lowerings above refuse, read off the node's
// constant arguments before anything is lowered (see SupportFn): "" when
// they may convert it. conv2d(x, w, b, stride, padding, dilation, groups);
// _convolution(x, w, b, stride, padding, dilation, transposed, output_padding,
// groups, ...).
std::string convolution_support(const Node* node) {
  static const c10::Symbol convolution = c10::aten::_convolution;
  const bool full = node->kind() == convolution;
  if (node->inputs().size() != (full ? 13u : 7u)) return "";
  const auto weight = constant_value(node->input(1));
  if (!weight || !weight->isTensor()) return "";
  const at::Tensor& w = weight->toTensor();
  if (w.dim() < 3 || w.dim() > 5) return std::to_string(w.dim() - 2) + "-D";
  auto ints = [&](size_t i) -> std::vector<int64_t> {
    const auto v = torch::jit::toIValue(node->input(i));
    return v && v->isIntList() ? v->toIntVector() : std::vector<int64_t>{};
  };
  auto integer = [&](size_t i) -> int64_t {
    const auto v = torch::jit::toIValue(node->input(i));
    return v && v->isInt() ? v->toInt() : 1;
  };
  const auto transposed = full ? torch::jit::toIValue(node->input(6)) : c10::nullopt;
  const bool transpose = transposed && transposed->isBool() && transposed->toBool();
  if (w.dim() == 5) return "";  // video.cpp (which refuses a transposed one, naming the node)
  return conv_support(w, transpose, integer(full ? 8 : 6), ints(5));
}

}  // namespace

void register_convolution_ops(LoweringTable& t) {
  t.add("aten::conv1d", lower_conv);
  t.add("aten::conv2d", lower_conv).with_support(convolution_support);
  // A 5-D weight's is video.cpp's 3-D convolution of the frames.
  t.add("aten::_convolution_mode", lower_conv)
      .with_frames(frames_conv3d())
      .with_note(
          "padding='same' pads dilation*(kernel-1), the odd element at the bottom/right as ATen "
          "does (stride 1); 'valid' pads nothing. Also aten::conv1d/conv2d with string padding");
  t.add("aten::_convolution", lower_convolution)
      .with_support(convolution_support)
      .with_frames(frames_conv3d())
      .with_note(
          "transposed: output_padding beyond the padding is TRANSPOSE_CONV_2D with a zero bias, "
          "PAD and ADD of the bias; groups and dilation (float) a dense block-diagonal or "
          "zero-dilated kernel (groups times the multiplications)");
}

}  // namespace nnapi_convert

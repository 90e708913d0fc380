// Convolutions: aten::conv2d and aten::_convolution (incl. transposed, with
// output_padding; 1-D ones, nn.Conv1d's 3-D weights, as the 2-D convolution
// over (N, C, 1, L)), and add_conv2d_common, the NNAPI convolution both they
// and the quantized convolutions of quantized.cpp use.
#include "lower/convolution.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/constants.h>

#include <algorithm>
#include <cmath>

#include "lower/emit.h"
#include "lower/registry.h"
#include "lower/relayout.h"

namespace nnapi_convert {

using nnapi::Fuse;
using nnapi::Op;
using nnapi::OperandType;

namespace {

// The bias operand: the given constant, or zeros of the weight's dtype.
int32_t optional_bias(LoweringContext& cx, const Value* bias, const at::Tensor& weight,
                      bool transpose) {
  if (cx.constant_is_none(bias)) {
    int64_t channels = weight.size(transpose ? 1 : 0);
    return cx.add_weight(at::zeros({channels}, weight.options()));
  }
  return cx.get_weight_operand(bias).id;
}

std::vector<int64_t> kernel_of(const at::Tensor& weight) {
  check(weight.dim() == 4, "only 1-D and 2-D convolutions (3-D or 4-D weights) are supported");
  return {weight.size(2), weight.size(3)};
}

void lower_conv2d(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 7, "malformed aten::conv2d");
  at::Tensor weight = cx.constant_tensor(node->input(1));
  int32_t bias_id = optional_bias(cx, node->input(2), weight, false);
  ConvPoolArgs a = make_conv_pool_args(
      kernel_of(weight), cx.constant_int_list(node->input(3)), cx.constant_int_list(node->input(4)),
      cx.constant_int_list(node->input(5)), cx.constant_int(node->input(6)));
  add_conv2d_common(cx, node->output(), 0.0, 0, node->input(0), weight, bias_id, a, false,
                    cx.fuse_following_activation(node->output()));
}

// A transposed convolution's output_padding adds rows and columns at the
// bottom and right of PyTorch's output: they are rows of the full product
// that the padding would crop, so the bottom/right padding shrinks by it
// (refused when the padding is smaller).
void apply_output_padding(ConvPoolArgs& a, const std::vector<int64_t>& output_padding) {
  check(output_padding.size() == 2, "malformed output_padding");
  check(output_padding[0] <= a.pad_b && output_padding[1] <= a.pad_r,
        "transposed convolution with output_padding larger than its padding is not supported");
  a.pad_b -= output_padding[0];
  a.pad_r -= output_padding[1];
}

// A one-element list of a 1-D convolution argument, as the 2-D pair {first, v}.
std::vector<int64_t> pair_1d(const std::vector<int64_t>& v, int64_t first, const char* what) {
  check(v.size() == 1, [&] { return std::string("1-D convolution needs one ") + what; });
  return {first, v[0]};
}

// nn.Conv1d / ConvTranspose1d: the (N, C, L) input reshaped to (N, C, 1, L),
// the 2-D convolution with the weight's (O, I, 1, K) view, reshaped back.
void lower_convolution_1d(LoweringContext& cx, const Node* node, at::Tensor weight, bool transpose,
                          int32_t bias_id) {
  auto [in_id, in] = cx.get_operand(node->input(0));
  check(in.shape.size() == 3 && in.dim_order == DimOrder::Contiguous,
        [&] { return "1-D convolution needs a 3-D (N, C, L) input, got " + shape_str(in.shape); });
  ConvPoolArgs a = make_conv_pool_args({1, weight.size(2)},
                                       pair_1d(cx.constant_int_list(node->input(3)), 1, "stride"),
                                       pair_1d(cx.constant_int_list(node->input(4)), 0, "padding"),
                                       pair_1d(cx.constant_int_list(node->input(5)), 1, "dilation"),
                                       cx.constant_int(node->input(8)));
  if (transpose) {
    apply_output_padding(a, pair_1d(cx.constant_int_list(node->input(7)), 0, "output_padding"));
  }
  std::vector<SymInt> dims = sym_shape({in_id, in});
  dims.insert(dims.begin() + 2, SymInt{1, ""});
  Tensor conv =
      emit_conv2d(cx, nullptr, 0.0, 0, emit_reshape(cx, {in_id, in}, dims), weight.unsqueeze(2),
                  bias_id, a, transpose, cx.fuse_following_activation(node->output()));
  std::vector<SymInt> out_dims = sym_shape(conv);
  out_dims.erase(out_dims.begin() + 2);
  emit_reshape(cx, conv, out_dims, node->output());
}

void lower_convolution(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 13, "malformed aten::_convolution");
  at::Tensor weight = cx.constant_tensor(node->input(1));
  bool transpose = cx.constant(node->input(6)).value.toBool();
  int32_t bias_id = optional_bias(cx, node->input(2), weight, transpose);
  if (weight.dim() == 3) {
    lower_convolution_1d(cx, node, weight, transpose, bias_id);
    return;
  }
  ConvPoolArgs a = make_conv_pool_args(
      kernel_of(weight), cx.constant_int_list(node->input(3)), cx.constant_int_list(node->input(4)),
      cx.constant_int_list(node->input(5)), cx.constant_int(node->input(8)));
  if (transpose) apply_output_padding(a, cx.constant_int_list(node->input(7)));
  add_conv2d_common(cx, node->output(), 0.0, 0, node->input(0), weight, bias_id, a, transpose,
                    cx.fuse_following_activation(node->output()));
}

bool approx_equal(double a, double b) { return std::abs(a - b) <= 1e-6 * std::min(a, b); }

}  // namespace

void add_conv2d_common(LoweringContext& cx, const Value* out, double out_scale,
                       int64_t out_zero_point, const Value* image_value, const at::Tensor& weight,
                       int32_t bias_id, const ConvPoolArgs& args, bool transpose, Fuse fuse) {
  auto [image_id, image] = cx.get_operand(image_value);
  emit_conv2d(cx, out, out_scale, out_zero_point, {image_id, image}, weight, bias_id, args,
              transpose, fuse);
}

Tensor emit_conv2d(LoweringContext& cx, const Value* out, double out_scale, int64_t out_zero_point,
                   const Tensor& image_operand, const at::Tensor& weight, int32_t bias_id,
                   const ConvPoolArgs& args, bool transpose, Fuse fuse) {
  const auto& [image_id, image] = image_operand;
  check(image.shape.size() == 4,
        [&] { return "convolution needs a 4-D input, got " + shape_str(image.shape); });
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
  std::vector<int32_t> inputs = {image_id, weight_id, bias_id};
  for (int64_t v : {args.pad_l, args.pad_r, args.pad_t, args.pad_b, args.stride_w, args.stride_h}) {
    inputs.push_back(m.add_int_scalar(static_cast<int32_t>(v)));
  }
  if (kind == Kind::Depthwise) inputs.push_back(m.add_int_scalar(static_cast<int32_t>(multiplier)));
  if (kind == Kind::Grouped) inputs.push_back(m.add_int_scalar(static_cast<int32_t>(args.group)));
  inputs.push_back(m.add_int_scalar(static_cast<int32_t>(fuse)));
  inputs.push_back(m.add_bool_scalar(image.use_nchw()));
  if (dilated) {
    inputs.push_back(m.add_int_scalar(static_cast<int32_t>(args.dilation_w)));
    inputs.push_back(m.add_int_scalar(static_cast<int32_t>(args.dilation_h)));
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
  m.add_operation(op, inputs, {out_id});
  return {out_id, out_op};
}

namespace {

// What emit_conv2d and the lowerings above refuse, read off the node's
// constant arguments before anything is lowered (see SupportFn): "" when
// they may convert it. conv2d(x, w, b, stride, padding, dilation, groups);
// _convolution(x, w, b, stride, padding, dilation, transposed, output_padding,
// groups, ...).
std::string convolution_support(const Node* node) {
  const bool full = node->kind() == c10::Symbol::fromQualString("aten::_convolution");
  if (node->inputs().size() != (full ? 13u : 7u)) return "";
  const auto weight = torch::jit::toIValue(node->input(1));
  if (!weight || !weight->isTensor()) return "";
  const at::Tensor& w = weight->toTensor();
  if (w.dim() != 3 && w.dim() != 4) return std::to_string(w.dim() - 2) + "-D";
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
  const int64_t groups = integer(full ? 8 : 6);
  const std::vector<int64_t> dilation = ints(5);
  const bool dilated =
      std::any_of(dilation.begin(), dilation.end(), [](int64_t d) { return d != 1; });
  if (transpose && groups != 1) return "grouped transposed";
  if (transpose && dilated) return "dilated transposed";
  if (transpose) {
    const std::vector<int64_t> padding = ints(4), output_padding = ints(7);
    for (size_t i = 0; i < output_padding.size() && i < padding.size(); ++i) {
      if (output_padding[i] > padding[i]) return "transposed, output_padding over padding";
    }
  }
  // (out, in / groups, kh, kw): depthwise when each group has one input channel.
  if (!transpose && groups != 1 && w.size(1) != 1 && dilated) return "dilated grouped";
  return "";
}

}  // namespace

void register_convolution_ops(LoweringTable& t) {
  t.add("aten::conv2d", lower_conv2d);
  t.add("aten::_convolution", lower_convolution);
  t.add_support_check("aten::conv2d", convolution_support);
  t.add_support_check("aten::_convolution", convolution_support);
}

}  // namespace nnapi_convert

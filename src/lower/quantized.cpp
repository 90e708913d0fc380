// Quantized ops: quantize/dequantize, quantized::linear (+relu),
// quantized::conv2d (+relu, transposed), quantized::conv1d (+relu,
// transposed), quantized::add/add_relu/mul/mul_relu of two tensors or of a
// tensor and a number (add_scalar, mul_scalar and their relu forms);
// per-tensor or per-channel quantized weights.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <string>
#include <vector>

#include "lower/convolution.h"
#include "lower/emit.h"
#include "lower/forms.h"
#include "lower/matmul.h"
#include "lower/packed_params.h"
#include "lower/pointwise.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {

c10::IValue packed_state(const c10::IValue& packed) {
  check(packed.isObject(), "quantized weights are not a packed-params object");
  auto obj = packed.toObject();
  torch::jit::Function* getstate = obj->type()->findMethod("__getstate__");
  check(getstate != nullptr, "packed params have no __getstate__");
  return (*getstate)({packed});
}

PackedConv packed_conv_params(const c10::IValue& packed, const std::string& cls) {
  check(packed.isObject() && packed.toObject()->type()->name() &&
            packed.toObject()->type()->name()->name() == cls,
        [&] { return "quantized convolution weights are not " + cls; });
  auto state = packed_state(packed).toTuple();
  check(state->elements().at(0).toStringRef() == "2",
        "unsupported packed convolution params version");
  auto tensors = state->elements().at(1).toTensorVector();
  auto opt_tensors = state->elements().at(2).toList();
  check(tensors.size() == 2 && opt_tensors.size() == 1, "malformed packed convolution params");
  PackedConv p;
  const at::Tensor& config = tensors[0];
  for (int64_t i = 0; i < config.numel(); ++i) p.config.push_back(config[i].item<int64_t>());
  const int64_t dims = p.config.empty() ? 0 : p.config[0];
  check(dims >= 2 && static_cast<int64_t>(p.config.size()) == 3 + 4 * dims,
        "malformed packed convolution config");
  // Stride, padding, dilation and output padding (one per spatial dim), then
  // groups. PyTorch keeps them as 16-bit integers here (conv_serialization.h,
  // version 2): a module's setting of 32768 or more reads back wrapped.
  auto setting = [&](int64_t k) {
    const auto from = p.config.begin() + 1 + k * dims;
    return std::vector<int64_t>(from, from + dims);
  };
  auto text = [](const std::vector<int64_t>& v) {
    std::string t;
    for (int64_t x : v) t += (t.empty() ? "" : ", ") + std::to_string(x);
    return "[" + t + "]";
  };
  auto all_at_least = [](const std::vector<int64_t>& v, int64_t low) {
    return std::all_of(v.begin(), v.end(), [&](int64_t x) { return x >= low; });
  };
  const int64_t groups = p.config[1 + 4 * dims];
  check(all_at_least(setting(0), 1) && all_at_least(setting(1), 0) && all_at_least(setting(2), 1) &&
            all_at_least(setting(3), 0) && groups >= 1,
        [&] {
          return "its packed parameters hold stride " + text(setting(0)) + ", padding " +
                 text(setting(1)) + ", dilation " + text(setting(2)) + ", output padding " +
                 text(setting(3)) + " and groups " + std::to_string(groups) +
                 ", which no convolution has: PyTorch keeps these settings as 16-bit integers "
                 "there, so a setting of 32768 or more reads back wrapped (a stride of 65536 "
                 "as 0); give the convolution settings below 32768 and export the model again";
        });
  p.weight = tensors[1];
  p.bias = opt_tensors.get(0);
  return p;
}

namespace {

using nnapi::Fuse;
using nnapi::Op;
using nnapi::OperandType;

// A quantization parameter: a number, or (as FX graph-mode quantization
// traces it) a one-element tensor constant.
c10::Scalar qparam(LoweringContext& cx, const Value* v) {
  const Constant& c = cx.constant(v);
  if (!c.value.isTensor()) return c.value.toScalar();
  const at::Tensor& t = c.value.toTensor();
  check(t.numel() == 1 && !t.is_quantized(), [&] {
    return "quantize_per_tensor's scale and zero point must be numbers or one-element tensors; " +
           value_name(v) + " has " + std::to_string(t.numel()) + " elements";
  });
  return t.item();
}

// QUANTIZE, of NHWC input as the reference converts it, or of NCHW input,
// which the reference refuses ("most hardware backends prefer NHWC quantized
// tensors"): the quantized tensor keeps the input's dim order and the
// lowerings after it handle NCHW as the float ones do.
void lower_quantize(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 4, "malformed aten::quantize_per_tensor");
  const OperandHandle x = cx.get_operand(node->input(0));
  check(x.op.type == OperandType::TensorFloat32, "quantize_per_tensor of a non-float tensor");
  double scale = qparam(cx, node->input(1)).toDouble();
  int64_t zero_point = qparam(cx, node->input(2)).toLong();
  int64_t dtype = cx.constant_int(node->input(3));
  check(dtype == static_cast<int64_t>(at::kQUInt8),
        "NNAPI export only supports quantized tensors with the quint8 dtype");
  emit_quantize(cx, x, scale, zero_point, node->output());
}

void lower_dequantize(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 1, "malformed aten::dequantize");
  emit_dequantize(cx, cx.get_operand(node->input(0)), node->output());
}

// A weight quantized per channel (fbgemm's and x86's default qconfigs). NNAPI
// has per-channel filters (TENSOR_QUANT8_SYMM_PER_CHANNEL, API 29), but
// PyTorch's on-device loader (nnapi_model_loader.cpp, format version 1) gives
// each operand one scale and zero point and never sets per-channel
// parameters. Such a layer becomes DEQUANTIZE of its input, the float
// operation with the weight dequantized exactly per channel and a float bias,
// and QUANTIZE to the layer's output scale and zero point
// (docs/quantization.md: the measured alternative, one per-tensor scale for
// the filter, loses up to several quanta).
bool per_channel(const at::Tensor& w) {
  const at::QScheme q = w.qscheme();
  if (q == at::kPerTensorAffine) return false;
  check(q == at::kPerChannelAffine || q == at::kPerChannelAffineFloatQParams,
        "quantized weights must be per-tensor or per-channel affine");
  return true;
}

// NNAPI takes quint8 weights: a qint8 weight is shifted by 128.
at::Tensor unsigned_weight(const at::Tensor& w) {
  if (w.scalar_type() == at::kQUInt8) return w;
  check(w.scalar_type() == at::kQInt8, "quantized weights must be qint8 or quint8");
  // q + 128 for q in [-128, 127] is q's bit pattern with the top bit flipped:
  // one pass over the bytes, exactly the reference's (q + 128) as uint8.
  at::Tensor shifted = at::bitwise_xor(w.int_repr().view(at::kByte), 0x80);
  return at::_make_per_tensor_quantized_tensor(shifted, w.q_scale(), w.q_zero_point() + 128);
}

int32_t quantized_bias(LoweringContext& cx, const at::Tensor& bias, double input_scale,
                       double weight_scale, double out_scale) {
  double bias_scale = input_scale * weight_scale;
  int32_t id = cx.add_weight(at::quantize_per_tensor(bias, bias_scale, 0, at::kQInt32));
  double multiplier = input_scale * weight_scale / out_scale;
  check(multiplier > 0, "quantized multiplier must be positive");
  check(multiplier < 1,
        "quantized convolution multiplier is greater than 1; this is supported by NNAPI, but not "
        "by most hardware backends; try a model trained without quantization-aware training");
  return id;
}

// quantized::linear: FULLY_CONNECTED of a 2-D input. An input of higher rank
// (..., K), which PyTorch's converter refuses, as linear's: RESHAPE to (M, K)
// (of NCHW data: an NHWC 4-D input is TRANSPOSEd first), FULLY_CONNECTED,
// RESHAPE to (..., N); RESHAPE and TRANSPOSE keep the quantization.
// quantized::linear_relu: the same with the ReLU fused (FULLY_CONNECTED's
// fuse code; the float product's on the per-channel path).
void lower_qlinear(LoweringContext& cx, const Node* node, Fuse fuse) {
  check(node->inputs().size() == 4, "malformed quantized::linear");
  OperandHandle x = cx.get_operand(node->input(0));
  std::vector<SymInt> dims;  // rank > 2: the input's PyTorch shape
  if (x.op.shape.size() > 2) {
    x = emit_relayout(cx, x, DimOrder::Contiguous);
    dims = sym_shape(x);
    check(dims.back().is_constant() && dims.back().value != 0,
          "quantized linear over a flexible feature dimension is not supported");
    SymInt rows{1, ""};
    for (size_t i = 0; i + 1 < dims.size(); ++i) rows = sym_arith(rows, '*', dims[i]);
    x = emit_reshape(cx, x, {rows, dims.back()});
  }
  // The 2-D result: the node's output, or the operand RESHAPEd to it.
  const Value* out_value = dims.empty() ? node->output() : nullptr;
  auto [input_id, in] = x;
  check(in.shape.size() == 2 && in.shape[1] != 0,
        "quantized linear needs an input of rank 2 or more with a fixed number of features");
  double out_scale = cx.constant_float(node->input(2));
  int64_t out_zero_point = cx.constant_int(node->input(3));
  const Constant& packed = cx.constant(node->input(1));
  auto cls = packed.type->cast<c10::ClassType>();
  check(cls && cls->name() && cls->name()->name() == "LinearPackedParamsBase",
        "quantized::linear weights are not LinearPackedParamsBase");
  auto state = packed_state(packed.value).toTuple();
  at::Tensor raw_weight = state->elements().at(0).toTensor();
  const c10::IValue& raw_bias_iv = state->elements().at(1);
  check(!raw_bias_iv.isNone(), "quantized linear without bias is not supported");
  at::Tensor raw_bias = raw_bias_iv.toTensor();
  check(raw_weight.dim() == 2 && raw_bias.dim() == 1 && raw_bias.size(0) == raw_weight.size(0) &&
            raw_weight.size(1) == in.shape[1],
        "quantized linear weight, bias and input shapes do not match");
  OperandHandle y;
  if (per_channel(raw_weight)) {
    const OperandHandle xf = emit_dequantize(cx, {input_id, in});
    const at::Tensor w = raw_weight.dequantize().t();
    const OperandHandle yf = product_with_constant(cx, xf, w, nullptr, &raw_bias, fuse);
    y = emit_quantize(cx, yf, out_scale, out_zero_point, out_value);
  } else {
    at::Tensor weight = unsigned_weight(raw_weight);
    int32_t bias_id = quantized_bias(cx, raw_bias, in.scale, weight.q_scale(), out_scale);
    int32_t weight_id = cx.add_weight(weight.contiguous());
    Operand out = in;
    out.scale = out_scale;
    out.zero_point = out_zero_point;
    int32_t fuse_id = cx.model().add_int_scalar(static_cast<int32_t>(fuse));
    y = cx.add_output(out_value, out,
                      {sym_dim(input_id, in.shape, 0), {cx.operand(weight_id).shape[0], ""}});
    add_fully_connected(cx.model(), input_id, weight_id, bias_id, fuse_id, y.id);
  }
  if (dims.empty()) return;
  dims.back() = SymInt{raw_weight.size(0), ""};
  emit_reshape(cx, y, dims, node->output());
}

// quantized::conv2d (+relu, transposed) and quantized::conv1d (+relu), whose
// packed params are 2-D ones over (N, C, 1, L).
void lower_qconv(LoweringContext& cx, const Node* node, Fuse fuse, bool transpose) {
  check(node->inputs().size() == 4, "malformed quantized convolution");
  double out_scale = cx.constant_float(node->input(2));
  int64_t out_zero_point = cx.constant_int(node->input(3));
  PackedConv packed =
      packed_conv_params(cx.constant(node->input(1)).value, "Conv2dPackedParamsBase");
  const std::vector<int64_t>& pc = packed.config;
  at::Tensor raw_weight = packed.weight;
  const c10::IValue& raw_bias_iv = packed.bias;
  check(!raw_bias_iv.isNone(), "quantized convolution without bias is not supported");
  check(pc[0] == 2, "malformed packed convolution config");
  check(pc[7] == 0 && pc[8] == 0, "transposed convolution with output_padding is not supported");
  if (raw_weight.dim() == 3) raw_weight = raw_weight.unsqueeze(2);
  check(raw_weight.dim() == 4, "quantized convolution weight must be 3-D or 4-D");
  ConvPoolArgs a = make_conv_pool_args({raw_weight.size(2), raw_weight.size(3)}, {pc[1], pc[2]},
                                       {pc[3], pc[4]}, {pc[5], pc[6]}, pc[9]);
  OperandHandle image = cx.get_operand(node->input(0));
  const bool one_d = image.op.shape.size() == 3;
  if (one_d) image = conv1d_as_2d(cx, image);
  const Value* out = one_d ? nullptr : node->output();
  OperandHandle y;
  if (per_channel(raw_weight)) {
    const OperandHandle x = emit_dequantize(cx, image);
    const int32_t bias_id = cx.add_weight(raw_bias_iv.toTensor().contiguous());
    y = emit_conv2d(cx, nullptr, 0.0, 0, x, raw_weight.dequantize(), bias_id, a, transpose, fuse);
    y = emit_quantize(cx, y, out_scale, out_zero_point, out);
  } else {
    at::Tensor weight = unsigned_weight(raw_weight);
    int32_t bias_id =
        quantized_bias(cx, raw_bias_iv.toTensor(), image.op.scale, weight.q_scale(), out_scale);
    y = emit_conv2d(cx, out, out_scale, out_zero_point, image, weight, bias_id, a, transpose, fuse);
  }
  if (one_d) conv1d_result(cx, y, node->output());
}

// The tensor-and-number forms (FX's quantized::add.Scalar, .Scalar2,
// mul.Scalar and their relu forms; eager's QFunctional add_scalar and
// mul_scalar(_relu)) take no output parameters: PyTorch's kernel derives
// them from the input's (qadd.cpp/qmul.cpp in ATen's quantized CPU ops), so
// they are read here from that kernel run on a one-element tensor at the
// input's scale and zero point. The value is DEQUANTIZE, the float ADD or
// MUL, QUANTIZE to them. The kernel adds the number rounded to the input's
// grid, round(c / scale) * scale, so that is the constant ADDed, which makes
// the result PyTorch's exactly (up to the rounding of ties); a product keeps
// the integers, so MUL takes the number as it is.
void lower_qscalar(LoweringContext& cx, const Node* node, Op op, Fuse fuse) {
  const std::string what = node->kind().toQualString();
  check(node->inputs().size() == 2, [&] { return "malformed " + what; });
  const bool tensor_first = cx.has_operand(node->input(0));
  const Value* tv = node->input(tensor_first ? 0 : 1);
  const OperandHandle x = cx.get_operand(tv);
  check(x.op.type == OperandType::TensorQuant8Asymm, [&] { return what + " of a float tensor"; });
  // A number, or (the .Tensor overloads) a one-element tensor constant.
  const c10::IValue number_iv = cx.constant(node->input(tensor_first ? 1 : 0)).value;
  check(!number_iv.isTensor() || number_iv.toTensor().numel() == 1,
        [&] { return what + " of a tensor that is not one number"; });
  const c10::Scalar number =
      number_iv.isTensor() ? number_iv.toTensor().item() : number_iv.toScalar();
  const c10::FunctionSchema* schema = node->maybeSchema();
  check(schema != nullptr, [&] { return what + " with no known schema"; });
  const auto handle =
      c10::Dispatcher::singleton().findSchemaOrThrow(what.c_str(), schema->overload_name().c_str());
  const at::Tensor one = at::_make_per_tensor_quantized_tensor(
      at::full({1}, x.op.zero_point, at::kByte), x.op.scale, x.op.zero_point);
  torch::jit::Stack stack;
  if (tensor_first) {
    stack = {one, number_iv};
  } else {
    stack = {number_iv, one};
  }
  handle.callBoxed(&stack);
  const at::Tensor probe = stack.at(0).toTensor();
  double c = number.toDouble();
  if (op == Op::Add) c = std::nearbyint(c / x.op.scale) * x.op.scale;
  const OperandHandle y = emit_binary(cx, op, emit_dequantize(cx, x),
                                      float_scalar_tensor(cx, static_cast<float>(c)), fuse);
  emit_quantize(cx, y, probe.q_scale(), probe.q_zero_point(), node->output());
}

void lower_qbinary(LoweringContext& cx, const Node* node, Op op, Fuse fuse) {
  if (node->inputs().size() == 2) {
    lower_qscalar(cx, node, op, fuse);
    return;
  }
  check(node->inputs().size() == 4, "malformed quantized binary op");
  double scale = cx.constant_float(node->input(2));
  int64_t zero_point = cx.constant_int(node->input(3));
  lower_binary(cx, node, op, fuse, std::make_pair(scale, zero_point));
}

}  // namespace

void register_quantized_ops(LoweringTable& t) {
  t.add("aten::quantize_per_tensor", lower_quantize).with_frames(frames_per_frame()).with_folds();
  t.add("aten::dequantize", lower_dequantize)
      .with_above_rank_4(lower_high_rank_dequantize)
      .with_frames(frames_per_frame());
  t.add("quantized::linear",
        [](LoweringContext& cx, const Node* n) { lower_qlinear(cx, n, Fuse::None); });
  t.add("quantized::linear_relu",
        [](LoweringContext& cx, const Node* n) { lower_qlinear(cx, n, Fuse::Relu); });
  for (const char* kind : {"quantized::conv2d", "quantized::conv1d"}) {
    t.add(kind, [](LoweringContext& cx, const Node* n) { lower_qconv(cx, n, Fuse::None, false); });
  }
  for (const char* kind : {"quantized::conv2d_relu", "quantized::conv1d_relu"}) {
    t.add(kind, [](LoweringContext& cx, const Node* n) { lower_qconv(cx, n, Fuse::Relu, false); });
  }
  for (const char* kind : {"quantized::conv_transpose2d", "quantized::conv_transpose1d"}) {
    t.add(kind, [](LoweringContext& cx, const Node* n) { lower_qconv(cx, n, Fuse::None, true); });
  }
  t.add("quantized::add", [](LoweringContext& cx, const Node* n) {
     lower_qbinary(cx, n, Op::Add, Fuse::None);
   }).with_frames(frames_per_frame());
  t.add("quantized::add_relu", [](LoweringContext& cx, const Node* n) {
     lower_qbinary(cx, n, Op::Add, Fuse::Relu);
   }).with_frames(frames_per_frame());
  t.add("quantized::mul", [](LoweringContext& cx, const Node* n) {
     lower_qbinary(cx, n, Op::Mul, Fuse::None);
   }).with_frames(frames_per_frame());
  t.add("quantized::mul_relu", [](LoweringContext& cx, const Node* n) {
     lower_qbinary(cx, n, Op::Mul, Fuse::Relu);
   }).with_frames(frames_per_frame());
  const std::tuple<const char*, Op, Fuse> scalar_forms[] = {
      {"quantized::add_scalar", Op::Add, Fuse::None},
      {"quantized::add_scalar_relu", Op::Add, Fuse::Relu},
      {"quantized::mul_scalar", Op::Mul, Fuse::None},
      {"quantized::mul_scalar_relu", Op::Mul, Fuse::Relu}};
  for (const auto& [kind, op, fuse] : scalar_forms) {
    t.add(kind, [op = op, fuse = fuse](LoweringContext& cx, const Node* n) {
      lower_qscalar(cx, n, op, fuse);
    });
  }
}

}  // namespace nnapi_convert

// Activations PyTorch's converter does not handle: hardswish, hardsigmoid,
// silu, gelu, tanh, relu6, clamp (and hardtanh with any bounds), leaky_relu,
// and the quantized hardswish. Where NNAPI has no single operation, a short
// sequence with the same semantics.
#include "lower/activation.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <cmath>

#include "lower/emit.h"
#include "lower/registry.h"

namespace nnapi_convert {

using nnapi::Fuse;
using nnapi::Op;
using nnapi::OperandType;

namespace {

bool is_quant(const Operand& o) { return o.type == OperandType::TensorQuant8Asymm; }

// hardsigmoid(x) = relu6(x + 3) / 6, on float32.
Tensor float_hardsigmoid(LoweringContext& cx, const Tensor& x, const Value* out) {
  Tensor t = emit_binary(cx, Op::Add, x, float_scalar_tensor(cx, 3.0f), Fuse::Relu6);
  return emit_binary(cx, Op::Mul, t, float_scalar_tensor(cx, 1.0f / 6.0f), Fuse::None, out);
}

void lower_hardsigmoid(LoweringContext& cx, const Node* node) {
  Tensor x = cx.get_operand(node->input(0));
  if (!is_quant(x.op)) {
    float_hardsigmoid(cx, x, node->output());
    return;
  }
  // PyTorch's quantized hardsigmoid outputs scale 1/256, zero point 0.
  Tensor f = float_hardsigmoid(cx, emit_dequantize(cx, x), nullptr);
  emit_quantize(cx, f, 1.0 / 256, 0, node->output());
}

// HARD_SWISH came with NNAPI feature level 4 (Android 11).
constexpr int kHardSwishLevel = 4;

// hardswish(x) = x * relu6(x + 3) / 6, on float32, from feature level 1 operations.
Tensor float_hardswish(LoweringContext& cx, const Tensor& x, const Value* out) {
  return emit_binary(cx, Op::Mul, x, float_hardsigmoid(cx, x, nullptr), Fuse::None, out);
}

void lower_hardswish(LoweringContext& cx, const Node* node) {
  Tensor x = cx.get_operand(node->input(0));
  check(!is_quant(x.op), "aten::hardswish of a quantized tensor; expected quantized::hardswish");
  if (!cx.allows_feature_level(kHardSwishLevel)) {
    float_hardswish(cx, x, node->output());
    return;
  }
  emit_unary(cx, Op::HardSwish, x, node->output());
}

// PyTorch's own quantized hardswish of each of the 256 values a quint8 tensor
// of x's parameters can hold, on the QNNPACK engine (as on Android): a (256)
// quint8 tensor with the output's scale and zero point.
at::Tensor quantized_hardswish_table(const Operand& x, double scale, int64_t zero_point) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("quantized::hardswish", "")
                             .typed<at::Tensor(const at::Tensor&, double, int64_t)>();
  at::Context& ctx = at::globalContext();
  const at::QEngine engine = ctx.qEngine();
  const auto& engines = ctx.supportedQEngines();
  if (std::find(engines.begin(), engines.end(), at::QEngine::QNNPACK) != engines.end())
    ctx.setQEngine(at::QEngine::QNNPACK);
  at::Tensor all =
      at::_make_per_tensor_quantized_tensor(at::arange(256, at::kByte), x.scale, x.zero_point);
  at::Tensor table = op.call(all, scale, zero_point);
  ctx.setQEngine(engine);
  return table;
}

void lower_quantized_hardswish(LoweringContext& cx, const Node* node) {
  Tensor x = cx.get_operand(node->input(0));
  check(is_quant(x.op), "quantized::hardswish of a float tensor");
  const QuantParams out_quant{cx.constant_float(node->input(1)), cx.constant_int(node->input(2))};
  if (!cx.allows_feature_level(kHardSwishLevel)) {
    // Below Android 11: a lookup table. An input holds one of 256 stored
    // values, so the output is GATHER (feature level 3) from the table of
    // PyTorch's results by the stored value (CAST to TENSOR_INT32 keeps stored
    // values). Exact, where DEQUANTIZE, float arithmetic and QUANTIZE rounded
    // ties otherwise than QNNPACK's table (up to 5% of outputs one quantum off).
    const int32_t table_id =
        cx.add_weight(quantized_hardswish_table(x.op, out_quant.scale, out_quant.zero_point));
    Operand index = x.op;
    index.type = OperandType::TensorInt32;
    index.scale = 0.0;
    index.zero_point = 0;
    const Tensor indices = emit_unary_to(cx, Op::Cast, x, index);
    Operand out = x.op;
    out.scale = out_quant.scale;
    out.zero_point = out_quant.zero_point;
    ModelBuilder& m = cx.model();
    const int32_t axis = m.add_int_scalar(0);
    const int32_t out_id = make_output(cx, node->output(), out, &indices);
    m.add_operation(Op::Gather, {table_id, axis, indices.id}, {out_id});
    return;
  }
  emit_unary(cx, Op::HardSwish, x, node->output(), out_quant);
}

void lower_silu(LoweringContext& cx, const Node* node) {
  Tensor x = cx.get_operand(node->input(0));
  check(!is_quant(x.op), "silu of a quantized tensor is not supported");
  Tensor s = emit_unary(cx, Op::Logistic, x);
  emit_binary(cx, Op::Mul, x, s, Fuse::None, node->output());
}

// A quantized TANH outputs scale 1/128, zero point 128 (NNAPI's rule, and
// PyTorch's), see emit_unary.
void lower_tanh(LoweringContext& cx, const Node* node) {
  emit_unary(cx, Op::Tanh, cx.get_operand(node->input(0)), node->output());
}

}  // namespace

// gelu(x) = x * Phi(x) = 0.5 x + 0.5 |x| erf(|x| / sqrt 2), with erf on z >= 0
// by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7):
// erf(z) = 1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) exp(-z^2), t = 1 / (1 + p z).
Tensor gelu_erf(LoweringContext& cx, const Tensor& x, const Value* out) {
  const float p = 0.3275911f;
  const float a[5] = {0.254829592f, -0.284496736f, 1.421413741f, -1.453152027f, 1.061405429f};
  auto k = [&](float v) { return float_scalar_tensor(cx, v); };
  Tensor ax = emit_unary(cx, Op::Abs, x);
  Tensor z = emit_binary(cx, Op::Mul, ax, k(static_cast<float>(M_SQRT1_2)));
  Tensor den = emit_binary(cx, Op::Add, emit_binary(cx, Op::Mul, z, k(p)), k(1.0f));
  Tensor t = emit_binary(cx, Op::Div, k(1.0f), den);
  Tensor poly = emit_binary(cx, Op::Mul, t, k(a[4]));
  for (int i = 3; i >= 0; --i) {
    poly = emit_binary(cx, Op::Mul, emit_binary(cx, Op::Add, poly, k(a[i])), t);
  }
  Tensor e = emit_unary(cx, Op::Exp, emit_unary(cx, Op::Neg, emit_binary(cx, Op::Mul, z, z)));
  Tensor erf = emit_binary(cx, Op::Sub, k(1.0f), emit_binary(cx, Op::Mul, poly, e));
  Tensor half_x = emit_binary(cx, Op::Mul, x, k(0.5f));
  Tensor half_ax_erf = emit_binary(cx, Op::Mul, emit_binary(cx, Op::Mul, ax, k(0.5f)), erf);
  return emit_binary(cx, Op::Add, half_x, half_ax_erf, Fuse::None, out);
}

namespace {

// gelu(x, approximate='tanh') = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Tensor gelu_tanh(LoweringContext& cx, const Tensor& x, const Value* out) {
  auto k = [&](float v) { return float_scalar_tensor(cx, v); };
  Tensor x3 = emit_binary(cx, Op::Mul, emit_binary(cx, Op::Mul, x, x), x);
  Tensor inner = emit_binary(cx, Op::Add, x, emit_binary(cx, Op::Mul, x3, k(0.044715f)));
  Tensor th = emit_unary(
      cx, Op::Tanh, emit_binary(cx, Op::Mul, inner, k(static_cast<float>(std::sqrt(2.0 / M_PI)))));
  Tensor one_plus = emit_binary(cx, Op::Add, th, k(1.0f));
  return emit_binary(cx, Op::Mul, emit_binary(cx, Op::Mul, x, k(0.5f)), one_plus, Fuse::None, out);
}

void lower_gelu(LoweringContext& cx, const Node* node) {
  Tensor x = cx.get_operand(node->input(0));
  check(!is_quant(x.op), "gelu of a quantized tensor is not supported");
  std::string approximate = "none";
  if (node->inputs().size() > 1) approximate = cx.constant(node->input(1)).value.toStringRef();
  if (approximate == "tanh") {
    gelu_tanh(cx, x, node->output());
  } else {
    check(approximate == "none",
          [&] { return "unknown gelu approximation '" + approximate + "'"; });
    gelu_erf(cx, x, node->output());
  }
}

void lower_relu6(LoweringContext& cx, const Node* node) {
  Tensor x = cx.get_operand(node->input(0));
  emit_unary(cx, Op::Relu6, x, node->output());
}

std::optional<double> optional_number(LoweringContext& cx, const Value* v) {
  const c10::IValue& iv = cx.constant(v).value;
  if (iv.isNone()) return std::nullopt;
  check(iv.isDouble() || iv.isInt(), "clamp bounds must be numbers");
  return iv.toScalar().toDouble();
}

// A constant of shape (1) in x's type: float, or quantized with x's params.
Tensor bound_constant(LoweringContext& cx, const Operand& x, double v) {
  if (!is_quant(x)) return float_scalar_tensor(cx, static_cast<float>(v));
  at::Tensor q =
      at::quantize_per_tensor(at::full({1}, v, at::kFloat), x.scale, x.zero_point, at::kQUInt8);
  int32_t id = cx.add_weight(q);
  return {id, cx.operand(id)};
}

// clamp(x, lo, hi) with either bound optional: RELU6, RELU1 or RELU where the
// bounds are theirs, else MAXIMUM and MINIMUM with constants.
void lower_clamp_bounds(LoweringContext& cx, const Node* node, std::optional<double> lo,
                        std::optional<double> hi) {
  Tensor x = cx.get_operand(node->input(0));
  check(lo || hi, "clamp needs at least one bound");
  check(!lo || !hi || *lo <= *hi, "clamp with min > max");
  if (lo && hi && *lo == 0 && *hi == 6) {
    emit_unary(cx, Op::Relu6, x, node->output());
  } else if (lo && hi && *lo == -1 && *hi == 1) {
    emit_unary(cx, Op::Relu1, x, node->output());
  } else if (lo && !hi && *lo == 0) {
    emit_unary(cx, Op::Relu, x, node->output());
  } else {
    Tensor y = x;
    if (lo) {
      y = emit_binary(cx, Op::Maximum, y, bound_constant(cx, x.op, *lo), Fuse::None,
                      hi ? nullptr : node->output());
    }
    if (hi) {
      y = emit_binary(cx, Op::Minimum, y, bound_constant(cx, x.op, *hi), Fuse::None,
                      node->output());
    }
  }
}

void lower_clamp(LoweringContext& cx, const Node* node) {
  lower_clamp_bounds(cx, node, optional_number(cx, node->input(1)),
                     optional_number(cx, node->input(2)));
}

// hardtanh(x, lo, hi): clamp with both bounds (RELU1 and RELU6 where they fit).
void lower_hardtanh(LoweringContext& cx, const Node* node) {
  const Tensor x = cx.get_operand(node->input(0));
  double lo = cx.constant_number(node->input(1));
  double hi = cx.constant_number(node->input(2));
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
  emit_unary(cx, op, x, node->output());
}

// leaky_relu(x, slope) = x for x >= 0, slope * x otherwise: NNAPI's PRELU
// with a (1) alpha, which it broadcasts. A quantized alpha is exact: value 1 at
// scale |slope| (zero point 0 for slope > 0, 2 for slope < 0); the output keeps
// x's parameters, as PyTorch's quantized leaky_relu does.
void lower_leaky_relu(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 2, "malformed aten::leaky_relu");
  Tensor x = cx.get_operand(node->input(0));
  const double slope = cx.constant_number(node->input(1));
  Tensor alpha;
  if (!is_quant(x.op)) {
    alpha = float_scalar_tensor(cx, static_cast<float>(slope));
  } else if (slope == 0) {
    emit_unary(cx, Op::Relu, x, node->output());
    return;
  } else {
    const int64_t zero_point = slope > 0 ? 0 : 2;
    at::Tensor q = at::_make_per_tensor_quantized_tensor(at::full({1}, 1, at::kByte),
                                                         std::abs(slope), zero_point);
    int32_t id = cx.add_weight(q);
    alpha = {id, cx.operand(id)};
  }
  int32_t id = make_output(cx, node->output(), x.op, &x);
  cx.model().add_operation(Op::Prelu, {x.id, alpha.id}, {id});
}

}  // namespace

void register_activation_ops(LoweringTable& t) {
  t.add("aten::hardsigmoid", lower_hardsigmoid);
  t.add("aten::hardswish", lower_hardswish);
  t.add("quantized::hardswish", lower_quantized_hardswish);
  t.add("aten::silu", lower_silu);
  t.add("aten::gelu", lower_gelu);
  t.add("aten::tanh", lower_tanh);
  t.add("aten::relu6", lower_relu6);
  // quantized::relu6(qx, inplace): the output keeps qx's scale and zero
  // point, as NNAPI's quantized RELU6 does.
  t.add("quantized::relu6", [](LoweringContext& cx, const Node* node) {
    check(node->inputs().size() == 2, "malformed quantized::relu6");
    check(is_quant(cx.get_operand(node->input(0)).op),
          "quantized::relu6 of a non-quantized tensor");
    lower_relu6(cx, node);
  });
  t.add("aten::clamp", lower_clamp);
  t.add("aten::hardtanh", lower_hardtanh);
  t.add("aten::leaky_relu", lower_leaky_relu);
}

}  // namespace nnapi_convert

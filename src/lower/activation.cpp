// Activations PyTorch's converter does not handle: hardswish, hardsigmoid,
// silu, gelu, tanh, relu6, clamp (number or tensor bounds; clamp_min,
// clamp_max, hardtanh with any bounds), leaky_relu, the quantized hardswish,
// and by decomposition into NNAPI feature level 1 to 3 operations glu,
// softplus, mish, elu, celu, selu (and quantized::elu), log_sigmoid,
// hardshrink and erf. Where NNAPI has no single operation, a short sequence
// with the same semantics; a select (NNAPI's SELECT and comparisons are newer
// than the default target) is a 0/1 mask made with FLOOR (step_above).
#include "lower/activation.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "lower/emit.h"
#include "lower/forms.h"
#include "lower/node_args.h"
#include "lower/pointwise.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {

using nnapi::Fuse;
using nnapi::Op;
using nnapi::OperandType;

namespace {

bool is_quant(const Operand& o) { return o.type == OperandType::TensorQuant8Asymm; }

// PyTorch's own result of a quantized elementwise op `f` on each of the 256
// values a quint8 tensor of x's parameters can hold, on the QNNPACK engine
// (as on Android): a (256) quint8 tensor at the output's parameters.
at::Tensor quantized_table(const Operand& x,
                           const std::function<at::Tensor(const at::Tensor&)>& f) {
  at::Context& ctx = at::globalContext();
  const at::QEngine engine = ctx.qEngine();
  const auto& engines = ctx.supportedQEngines();
  if (std::find(engines.begin(), engines.end(), at::QEngine::QNNPACK) != engines.end())
    ctx.setQEngine(at::QEngine::QNNPACK);
  at::Tensor all =
      at::_make_per_tensor_quantized_tensor(at::arange(256, at::kByte), x.scale, x.zero_point);
  at::Tensor table = f(all);
  ctx.setQEngine(engine);
  return table;
}

// y = table[x] for a quant8 x: an input holds one of 256 stored values, so
// the output is GATHER (feature level 3) from the table by the stored value
// (CAST to TENSOR_INT32 keeps stored values). Exact to PyTorch's kernel,
// where DEQUANTIZE, float arithmetic and QUANTIZE round ties otherwise (up
// to 5% of outputs one quantum off, measured on hardswish).
void emit_table_lookup(LoweringContext& cx, const OperandHandle& x, const at::Tensor& table,
                       const Value* out_value) {
  const int32_t table_id = cx.add_weight(table);
  Operand index = x.op;
  index.type = OperandType::TensorInt32;
  index.scale = 0.0;
  index.zero_point = 0;
  const OperandHandle indices = emit_unary_to(cx, Op::Cast, x, index);
  Operand out = x.op;
  out.scale = table.q_scale();
  out.zero_point = table.q_zero_point();
  ModelBuilder& m = cx.model();
  const int32_t axis = m.add_int_scalar(0);
  const int32_t out_id = make_output(cx, out_value, out, &indices);
  add_gather(m, table_id, axis, indices.id, out_id);
}

// hardsigmoid(x) = relu6(x + 3) / 6, on float32.
OperandHandle float_hardsigmoid(LoweringContext& cx, const OperandHandle& x, const Value* out) {
  OperandHandle t = emit_binary(cx, Op::Add, x, float_scalar_tensor(cx, 3.0f), Fuse::Relu6);
  return emit_binary(cx, Op::Mul, t, float_scalar_tensor(cx, 1.0f / 6.0f), Fuse::None, out);
}

void lower_hardsigmoid(LoweringContext& cx, const Node* node) {
  OperandHandle x = cx.get_operand(node->input(0));
  if (!is_quant(x.op)) {
    float_hardsigmoid(cx, x, node->output());
    return;
  }
  // NNAPI has no HARD_SIGMOID: PyTorch's quantized hardsigmoid (output scale
  // 1/256, zero point 0) as a lookup table.
  emit_table_lookup(cx, x,
                    quantized_table(x.op, [](const at::Tensor& t) { return at::hardsigmoid(t); }),
                    node->output());
}

// hardswish(x) = x * relu6(x + 3) / 6, on float32, from feature level 1 operations.
OperandHandle float_hardswish(LoweringContext& cx, const OperandHandle& x, const Value* out) {
  return emit_binary(cx, Op::Mul, x, float_hardsigmoid(cx, x, nullptr), Fuse::None, out);
}

void lower_hardswish(LoweringContext& cx, const Node* node) {
  OperandHandle x = cx.get_operand(node->input(0));
  check(!is_quant(x.op), "aten::hardswish of a quantized tensor; expected quantized::hardswish");
  if (!cx.has_operation(Op::HardSwish, 1)) {  // before feature level 4 (Android 11)
    float_hardswish(cx, x, node->output());
    return;
  }
  emit_unary(cx, Op::HardSwish, x, node->output());
}

void lower_quantized_hardswish(LoweringContext& cx, const Node* node) {
  OperandHandle x = cx.get_operand(node->input(0));
  check(is_quant(x.op), "quantized::hardswish of a float tensor");
  const QuantParams out_quant{cx.constant_float(node->input(1)), cx.constant_int(node->input(2))};
  if (!cx.has_operation(Op::HardSwish, 1)) {
    // Below Android 11: PyTorch's quantized hardswish as a lookup table.
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("quantized::hardswish", "")
                               .typed<at::Tensor(const at::Tensor&, double, int64_t)>();
    emit_table_lookup(cx, x,
                      quantized_table(x.op,
                                      [&](const at::Tensor& t) {
                                        return op.call(t, out_quant.scale, out_quant.zero_point);
                                      }),
                      node->output());
    return;
  }
  emit_unary(cx, Op::HardSwish, x, node->output(), out_quant);
}

void lower_silu(LoweringContext& cx, const Node* node) {
  OperandHandle x = cx.get_operand(node->input(0));
  check(!is_quant(x.op), "silu of a quantized tensor is not supported");
  OperandHandle s = emit_unary(cx, Op::Logistic, x);
  emit_binary(cx, Op::Mul, x, s, Fuse::None, node->output());
}

// A quantized TANH outputs scale 1/128, zero point 128 (NNAPI's rule, and
// PyTorch's), see emit_unary.
void lower_tanh(LoweringContext& cx, const Node* node) {
  emit_unary(cx, Op::Tanh, cx.get_operand(node->input(0)), node->output());
}

}  // namespace

namespace {

// erf(z) for z >= 0 by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7):
// erf(z) = 1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) exp(-z^2), t = 1 / (1 + p z).
OperandHandle erf_nonnegative(LoweringContext& cx, const OperandHandle& z) {
  const float p = 0.3275911f;
  const float a[5] = {0.254829592f, -0.284496736f, 1.421413741f, -1.453152027f, 1.061405429f};
  auto k = [&](float v) { return float_scalar_tensor(cx, v); };
  OperandHandle den = emit_binary(cx, Op::Add, emit_binary(cx, Op::Mul, z, k(p)), k(1.0f));
  OperandHandle t = emit_binary(cx, Op::Div, k(1.0f), den);
  OperandHandle poly = emit_binary(cx, Op::Mul, t, k(a[4]));
  for (int i = 3; i >= 0; --i) {
    poly = emit_binary(cx, Op::Mul, emit_binary(cx, Op::Add, poly, k(a[i])), t);
  }
  OperandHandle e =
      emit_unary(cx, Op::Exp, emit_unary(cx, Op::Neg, emit_binary(cx, Op::Mul, z, z)));
  return emit_binary(cx, Op::Sub, k(1.0f), emit_binary(cx, Op::Mul, poly, e));
}

}  // namespace

// gelu(x) = x * Phi(x) = 0.5 x + 0.5 |x| erf(|x| / sqrt 2).
OperandHandle gelu_erf(LoweringContext& cx, const OperandHandle& x, const Value* out) {
  auto k = [&](float v) { return float_scalar_tensor(cx, v); };
  OperandHandle ax = emit_unary(cx, Op::Abs, x);
  OperandHandle erf =
      erf_nonnegative(cx, emit_binary(cx, Op::Mul, ax, k(static_cast<float>(M_SQRT1_2))));
  OperandHandle half_x = emit_binary(cx, Op::Mul, x, k(0.5f));
  OperandHandle half_ax_erf = emit_binary(cx, Op::Mul, emit_binary(cx, Op::Mul, ax, k(0.5f)), erf);
  return emit_binary(cx, Op::Add, half_x, half_ax_erf, Fuse::None, out);
}

namespace {

// gelu(x, approximate='tanh') = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
OperandHandle gelu_tanh(LoweringContext& cx, const OperandHandle& x, const Value* out) {
  auto k = [&](float v) { return float_scalar_tensor(cx, v); };
  OperandHandle x3 = emit_binary(cx, Op::Mul, emit_binary(cx, Op::Mul, x, x), x);
  OperandHandle inner = emit_binary(cx, Op::Add, x, emit_binary(cx, Op::Mul, x3, k(0.044715f)));
  OperandHandle th = emit_unary(
      cx, Op::Tanh, emit_binary(cx, Op::Mul, inner, k(static_cast<float>(std::sqrt(2.0 / M_PI)))));
  OperandHandle one_plus = emit_binary(cx, Op::Add, th, k(1.0f));
  return emit_binary(cx, Op::Mul, emit_binary(cx, Op::Mul, x, k(0.5f)), one_plus, Fuse::None, out);
}

void lower_gelu(LoweringContext& cx, const Node* node) {
  OperandHandle x = cx.get_operand(node->input(0));
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
  OperandHandle x = cx.get_operand(node->input(0));
  emit_unary(cx, Op::Relu6, x, node->output());
}

std::optional<double> optional_number(LoweringContext& cx, const Value* v) {
  const c10::IValue& iv = cx.constant(v).value;
  if (iv.isNone()) return std::nullopt;
  check(iv.isDouble() || iv.isInt(), "clamp bounds must be numbers");
  return iv.toScalar().toDouble();
}

// A constant of shape (1) in x's type: float, or quantized with x's params.
OperandHandle bound_constant(LoweringContext& cx, const Operand& x, double v) {
  if (x.type == OperandType::TensorInt32) {
    check(v == std::nearbyint(v) && std::abs(v) < 2147483648.0, [&] {
      return "clamp of an int32 tensor by " + std::to_string(v) +
             ", not an int32 number, is not supported; convert the tensor with .float() first";
    });
    const int32_t id = cx.add_weight(at::full({1}, static_cast<int32_t>(v), at::kInt));
    return {id, cx.operand(id)};
  }
  if (!is_quant(x)) return float_scalar_tensor(cx, static_cast<float>(v));
  at::Tensor q =
      at::quantize_per_tensor(at::full({1}, v, at::kFloat), x.scale, x.zero_point, at::kQUInt8);
  int32_t id = cx.add_weight(q);
  return {id, cx.operand(id)};
}

}  // namespace

// clamp(x, lo, hi) with either bound optional: RELU6, RELU1 or RELU where the
// bounds are theirs, else MAXIMUM and MINIMUM with constants.
OperandHandle emit_clamp(LoweringContext& cx, const OperandHandle& x, std::optional<double> lo,
                         std::optional<double> hi, const Value* out) {
  check(lo || hi, "clamp needs at least one bound");
  check(!lo || !hi || *lo <= *hi, "clamp with min > max");
  // RELU, RELU1 and RELU6 take no TENSOR_INT32; MAXIMUM and MINIMUM do (from
  // feature level 3, NeuralNetworks.h).
  const bool relu = x.op.type != OperandType::TensorInt32;
  if (relu && lo && hi && *lo == 0 && *hi == 6) {
    return emit_unary(cx, Op::Relu6, x, out);
  }
  if (relu && lo && hi && *lo == -1 && *hi == 1) {
    return emit_unary(cx, Op::Relu1, x, out);
  }
  if (relu && lo && !hi && *lo == 0) {
    return emit_unary(cx, Op::Relu, x, out);
  }
  OperandHandle y = x;
  if (lo) {
    y = emit_binary(cx, Op::Maximum, y, bound_constant(cx, x.op, *lo), Fuse::None,
                    hi ? nullptr : out);
  }
  if (hi) y = emit_binary(cx, Op::Minimum, y, bound_constant(cx, x.op, *hi), Fuse::None, out);
  return y;
}

namespace {

// clamp(x, lo, hi) of a node's input: emit_clamp.
void lower_clamp_bounds(LoweringContext& cx, const Node* node, std::optional<double> lo,
                        std::optional<double> hi) {
  emit_clamp(cx, cx.get_operand(node->input(0)), lo, hi, node->output());
}

// Whether a clamp bound is given (not None).
bool has_bound(LoweringContext& cx, const Value* v) {
  return cx.has_operand(v) || !cx.constant_is_none(v);
}

// A bound given as a tensor (clamp.Tensor, clamp_min.Tensor, ...), computed
// or constant; a number is not one.
bool is_tensor_bound(LoweringContext& cx, const Value* v) {
  return cx.has_operand(v) || (cx.has_constant(v) && cx.constant(v).value.isTensor());
}

// clamp(x, min, max) with tensor bounds (either may be None): MAXIMUM with min,
// then MINIMUM with max (PyTorch's order: where min > max the result is max),
// with PyTorch's broadcasting.
void lower_clamp_tensors(LoweringContext& cx, const Node* node, const Value* lo, const Value* hi) {
  check(lo || hi, "clamp needs at least one bound");
  OperandHandle y = cx.get_operand(node->input(0));
  if (lo) {
    const auto [a, b] = elementwise_operands(cx, y, lo);
    y = emit_binary(cx, Op::Maximum, a, b, Fuse::None, hi ? nullptr : node->output());
  }
  if (hi) {
    const auto [a, b] = elementwise_operands(cx, y, hi);
    emit_binary(cx, Op::Minimum, a, b, Fuse::None, node->output());
  }
}

// clamp(x, min, max), clamp_min(x, min), clamp_max(x, max): numbers (RELU,
// RELU1, RELU6 or MAXIMUM/MINIMUM with constants) or tensors.
void lower_clamp(LoweringContext& cx, const Node* node) {
  const std::string kind = node->kind().toUnqualString();
  const Value* lo = kind == "clamp_max" ? nullptr : node->input(1);
  const Value* hi = kind == "clamp_min" ? nullptr : node->input(kind == "clamp" ? 2 : 1);
  if (lo && !has_bound(cx, lo)) lo = nullptr;
  if (hi && !has_bound(cx, hi)) hi = nullptr;
  if ((lo && is_tensor_bound(cx, lo)) || (hi && is_tensor_bound(cx, hi))) {
    lower_clamp_tensors(cx, node, lo, hi);
    return;
  }
  lower_clamp_bounds(cx, node, lo ? optional_number(cx, lo) : std::nullopt,
                     hi ? optional_number(cx, hi) : std::nullopt);
}

// hardtanh(x, lo, hi): clamp with both bounds (RELU1 and RELU6 where they fit).
void lower_hardtanh(LoweringContext& cx, const Node* node) {
  const OperandHandle x = cx.get_operand(node->input(0));
  check(x.op.type != OperandType::TensorInt32,
        "hardtanh of an int32 tensor is not supported (NNAPI's RELU1/RELU6 take float and "
        "quantized tensors, and its bounds are float numbers); use torch.clamp with integer "
        "bounds, or convert the tensor with .float() first");
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
// scale |slope| (zero point 0 for slope > 0, 2 for slope < 0; for slope 0,
// value 0 at scale 1); the output keeps x's parameters, as PyTorch's
// quantized aten::leaky_relu does, or takes `out_quant`'s
// (quantized::leaky_relu, whose kernel dequantizes, computes in float and
// quantizes to them: PRELU's quant8 output rescales the same way).
void emit_leaky_relu(LoweringContext& cx, const Node* node, const OperandHandle& x, double slope,
                     std::optional<QuantParams> out_quant) {
  OperandHandle alpha;
  if (!is_quant(x.op)) {
    alpha = float_scalar_tensor(cx, static_cast<float>(slope));
  } else if (slope == 0 && !out_quant) {
    emit_unary(cx, Op::Relu, x, node->output());
    return;
  } else {
    const int64_t zero_point = slope >= 0 ? 0 : 2;
    at::Tensor q = at::_make_per_tensor_quantized_tensor(
        at::full({1}, slope == 0 ? 0 : 1, at::kByte), slope == 0 ? 1.0 : std::abs(slope),
        zero_point);
    int32_t id = cx.add_weight(q);
    alpha = {id, cx.operand(id)};
  }
  Operand o = x.op;
  if (out_quant) {
    o.scale = out_quant->scale;
    o.zero_point = out_quant->zero_point;
  }
  int32_t id = make_output(cx, node->output(), o, &x);
  add_prelu(cx.model(), x.id, alpha.id, id);
}

void lower_leaky_relu(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 2, "malformed aten::leaky_relu");
  emit_leaky_relu(cx, node, cx.get_operand(node->input(0)), cx.constant_number(node->input(1)),
                  std::nullopt);
}

// quantized::leaky_relu(qx, negative_slope, inplace, output_scale,
// output_zero_point).
void lower_quantized_leaky_relu(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 5, "malformed quantized::leaky_relu");
  const OperandHandle x = cx.get_operand(node->input(0));
  check(is_quant(x.op), "quantized::leaky_relu of a float tensor");
  emit_leaky_relu(cx, node, x, cx.constant_number(node->input(1)),
                  QuantParams{cx.constant_float(node->input(3)), cx.constant_int(node->input(4))});
}

// --- decompositions into feature level 1 to 3 operations --------------------

OperandHandle k_float(LoweringContext& cx, double v) {
  return float_scalar_tensor(cx, static_cast<float>(v));
}

// 1 where v > 0, else 0: ceil(v) = -floor(-v) is >= 1 for v > 0 and <= 0
// otherwise, so min(relu(ceil(v)), 1) (NEG, FLOOR, NEG, RELU, MINIMUM).
// Exact, and what stands for a comparison and SELECT below feature level 4.
OperandHandle step_above(LoweringContext& cx, const OperandHandle& v) {
  OperandHandle ceil =
      emit_unary(cx, Op::Neg, emit_unary(cx, Op::Floor, emit_unary(cx, Op::Neg, v)));
  return emit_binary(cx, Op::Minimum, emit_unary(cx, Op::Relu, ceil), k_float(cx, 1.0));
}

// m * a + (1 - m) * b for a 0/1 mask m: a where m is 1, b where it is 0,
// exactly (both finite).
OperandHandle select_by_mask(LoweringContext& cx, const OperandHandle& m, const OperandHandle& a,
                             const OperandHandle& b, const Value* out) {
  OperandHandle not_m = emit_binary(cx, Op::Sub, k_float(cx, 1.0), m);
  return emit_binary(cx, Op::Add, emit_binary(cx, Op::Mul, m, a),
                     emit_binary(cx, Op::Mul, not_m, b), Fuse::None, out);
}

// log(1 + exp(-|z|)): never overflows (EXP of a value <= 0).
OperandHandle log1p_exp_neg_abs(LoweringContext& cx, const OperandHandle& z) {
  OperandHandle e = emit_unary(cx, Op::Exp, emit_unary(cx, Op::Neg, emit_unary(cx, Op::Abs, z)));
  return emit_unary(cx, Op::Log, emit_binary(cx, Op::Add, e, k_float(cx, 1.0)));
}

// log(1 + exp(z)) in the stable form max(z, 0) + log(1 + exp(-|z|)); where
// exp(-|z|) is below float32's epsilon the log term is lost (an absolute
// error under 1.2e-7 against log1p).
OperandHandle softplus_stable(LoweringContext& cx, const OperandHandle& z) {
  return emit_binary(cx, Op::Add, emit_unary(cx, Op::Relu, z), log1p_exp_neg_abs(cx, z));
}

OperandHandle float_input(LoweringContext& cx, const Node* node) {
  OperandHandle x = cx.get_operand(node->input(0));
  check(x.op.type == OperandType::TensorFloat32, [&] {
    return std::string(node->kind().toQualString()) + " of a " +
           nnapi::operand_type_name(x.op.type) + " tensor is not supported (float32 only)";
  });
  return x;
}

// softplus(x, beta, threshold) = x where x * beta > threshold, else
// log1p(exp(x * beta)) / beta (PyTorch's kernel): z = x * beta, the stable
// log(1 + exp(z)) divided by beta, and the threshold as a mask
// step_above(z - threshold) selecting x exactly.
void lower_softplus(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  const OperandHandle x = float_input(cx, node);
  const double beta = cx.constant_number(args.value("beta"));
  const double threshold = cx.constant_number(args.value("threshold"));
  OperandHandle z = beta == 1 ? x : emit_binary(cx, Op::Mul, x, k_float(cx, beta));
  OperandHandle sp = softplus_stable(cx, z);
  if (beta != 1) sp = emit_binary(cx, Op::Div, sp, k_float(cx, beta));
  OperandHandle m = step_above(cx, emit_binary(cx, Op::Sub, z, k_float(cx, threshold)));
  select_by_mask(cx, m, x, sp, node->output());
}

// mish(x) = x * tanh(log1p(exp(x))), the softplus in the stable form.
void lower_mish(LoweringContext& cx, const Node* node) {
  const OperandHandle x = float_input(cx, node);
  OperandHandle t = emit_unary(cx, Op::Tanh, softplus_stable(cx, x));
  emit_binary(cx, Op::Mul, x, t, Fuse::None, node->output());
}

// elu(x, alpha, scale, input_scale) = x * scale for x > 0, else
// (exp(x * input_scale) - 1) * alpha * scale (PyTorch's kernel). Without a
// select: relu(x) * scale + (exp(min(x, 0) * input_scale) - 1) * (alpha *
// scale), whose second term is exactly 0 for x > 0 and first for x <= 0.
OperandHandle emit_elu(LoweringContext& cx, const OperandHandle& x, double alpha, double scale,
                       double input_scale, const Value* out) {
  OperandHandle pos = emit_unary(cx, Op::Relu, x);
  if (scale != 1) pos = emit_binary(cx, Op::Mul, pos, k_float(cx, scale));
  OperandHandle neg = emit_binary(cx, Op::Minimum, x, k_float(cx, 0.0));
  if (input_scale != 1) neg = emit_binary(cx, Op::Mul, neg, k_float(cx, input_scale));
  OperandHandle em1 = emit_binary(cx, Op::Sub, emit_unary(cx, Op::Exp, neg), k_float(cx, 1.0));
  // PyTorch's negcoef = alpha * scale in float32.
  const float negcoef = static_cast<float>(alpha) * static_cast<float>(scale);
  em1 = emit_binary(cx, Op::Mul, em1, float_scalar_tensor(cx, negcoef));
  return emit_binary(cx, Op::Add, pos, em1, Fuse::None, out);
}

// SELU's constants (torch.nn.functional.selu).
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

void lower_elu(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  const OperandHandle x = float_input(cx, node);
  const std::string kind = node->kind().toUnqualString();
  if (kind == "selu") {
    emit_elu(cx, x, kSeluAlpha, kSeluScale, 1.0, node->output());
  } else if (kind == "celu") {
    // celu(x, alpha) = elu(x, alpha, 1, 1 / alpha), as PyTorch computes it.
    const double alpha = cx.constant_number(args.value("alpha"));
    check(alpha != 0, "celu with alpha 0");
    emit_elu(cx, x, alpha, 1.0, 1.0 / alpha, node->output());
  } else {
    emit_elu(cx, x, cx.constant_number(args.value("alpha")),
             cx.constant_number(args.value("scale")), cx.constant_number(args.value("input_scale")),
             node->output());
  }
}

// quantized::elu(x, output_scale, output_zero_point, alpha, scale,
// input_scale): DEQUANTIZE, the float elu, QUANTIZE (PyTorch's kernel computes
// in float on the dequantized values too).
void lower_quantized_elu(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  const OperandHandle x = args.tensor("self");
  check(is_quant(x.op), "quantized::elu of a float tensor");
  OperandHandle y = emit_elu(cx, emit_dequantize(cx, x), cx.constant_number(args.value("alpha")),
                             cx.constant_number(args.value("scale")),
                             cx.constant_number(args.value("input_scale")), nullptr);
  emit_quantize(cx, y, cx.constant_float(args.value("output_scale")),
                cx.constant_int(args.value("output_zero_point")), node->output());
}

// log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|)), PyTorch's stable form.
void lower_log_sigmoid(LoweringContext& cx, const Node* node) {
  const OperandHandle x = float_input(cx, node);
  OperandHandle lo = emit_binary(cx, Op::Minimum, x, k_float(cx, 0.0));
  emit_binary(cx, Op::Sub, lo, log1p_exp_neg_abs(cx, x), Fuse::None, node->output());
}

// hardshrink(x, lambd) = x where |x| > lambd, else 0: x times the mask
// step_above(|x| - lambd).
void lower_hardshrink(LoweringContext& cx, const Node* node) {
  const OperandHandle x = float_input(cx, node);
  const double lambd = cx.constant_number(node->input(1));
  OperandHandle m =
      step_above(cx, emit_binary(cx, Op::Sub, emit_unary(cx, Op::Abs, x), k_float(cx, lambd)));
  emit_binary(cx, Op::Mul, x, m, Fuse::None, node->output());
}

// erf(x) = sign(x) erf(|x|), erf(|x|) by gelu's polynomial (|error| <=
// 1.5e-7) and sign(x) = x / max(|x|, 1e-30) (where |x| < 1e-30 the product
// is below 1e-36 either way).
void lower_erf(LoweringContext& cx, const Node* node) {
  const OperandHandle x = float_input(cx, node);
  OperandHandle ax = emit_unary(cx, Op::Abs, x);
  OperandHandle sign =
      emit_binary(cx, Op::Div, x, emit_binary(cx, Op::Maximum, ax, k_float(cx, 1e-30)));
  emit_binary(cx, Op::Mul, sign, erf_nonnegative(cx, ax), Fuse::None, node->output());
}

// glu(x, dim) = a * sigmoid(b) for the halves a, b of x along dim (SPLIT,
// LOGISTIC, MUL).
void lower_glu(LoweringContext& cx, const Node* node) {
  const OperandHandle x = float_input(cx, node);
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  const int64_t dim = py_index(cx.constant_int(node->input(1)), rank);
  const int64_t n = x.op.shape[dim];
  check(n != 0, "glu over a flexible dimension is not supported; give it a fixed size in --input");
  check(n % 2 == 0, [&] {
    return "glu halves dimension " + std::to_string(dim) + ", whose size " + std::to_string(n) +
           " is odd";
  });
  const std::vector<int32_t> halves = emit_split(cx, x, dim, {n / 2, n / 2});
  const OperandHandle a{halves[0], cx.operand(halves[0])}, b{halves[1], cx.operand(halves[1])};
  emit_binary(cx, Op::Mul, a, emit_unary(cx, Op::Logistic, b), Fuse::None, node->output());
}

}  // namespace

void register_activation_ops(LoweringTable& t) {
  t.add("aten::hardsigmoid", lower_hardsigmoid).with_frames(frames_per_frame());
  t.add("aten::hardswish", lower_hardswish).with_frames(frames_per_frame());
  t.add("quantized::hardswish", lower_quantized_hardswish);
  t.add("aten::silu", lower_silu).with_frames(frames_per_frame());
  t.add("aten::gelu", lower_gelu);
  t.add("aten::tanh", lower_tanh).with_frames(frames_per_frame());
  t.add("aten::relu6", lower_relu6).with_frames(frames_per_frame());
  // quantized::relu6(qx, inplace): the output keeps qx's scale and zero
  // point, as NNAPI's quantized RELU6 does.
  t.add("quantized::relu6", [](LoweringContext& cx, const Node* node) {
    check(node->inputs().size() == 2, "malformed quantized::relu6");
    check(is_quant(cx.get_operand(node->input(0)).op),
          "quantized::relu6 of a non-quantized tensor");
    lower_relu6(cx, node);
  });
  t.add("aten::clamp", lower_clamp).with_frames(frames_per_frame());
  t.add("aten::clamp_min", lower_clamp);
  t.add("aten::clamp_max", lower_clamp);
  t.add("aten::hardtanh", lower_hardtanh).with_frames(frames_per_frame());
  t.add("aten::leaky_relu", lower_leaky_relu).with_frames(frames_per_frame());
  t.add("quantized::leaky_relu", lower_quantized_leaky_relu);
  t.add("aten::softplus", lower_softplus)
      .with_note(
          "stable max(z,0)+log(1+exp(-|z|)), z = beta*x; threshold as an exact FLOOR-made mask");
  t.add("aten::mish", lower_mish);
  t.add("aten::elu", lower_elu).with_frames(frames_per_frame());
  t.add("aten::celu", lower_elu);
  t.add("aten::selu", lower_elu);
  t.add("quantized::elu", lower_quantized_elu);
  t.add("aten::log_sigmoid", lower_log_sigmoid);
  t.add("aten::hardshrink", lower_hardshrink)
      .with_note("x times an exact FLOOR-made mask |x| > lambd");
  t.add("aten::erf", lower_erf).with_note("A&S 7.1.26 polynomial, |error| <= 1.5e-7");
  t.add("aten::glu", lower_glu);
}

}  // namespace nnapi_convert

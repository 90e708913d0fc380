// Pointwise activations and normalizations: RELU, RELU1, RELU6, LOGISTIC,
// TANH, HARD_SWISH, EXP, SIN, SQRT, RSQRT, ABS, NEG, FLOOR, LOG, PRELU, SOFTMAX,
// LOG_SOFTMAX, L2_NORMALIZATION, INSTANCE_NORMALIZATION. Quantized inputs are dequantized, the
// function is applied in double, and the result is requantized into the
// output operand's (scale, zeroPoint) with round-to-nearest and saturation,
// except quantized HARD_SWISH, which is QNNPACK's float32 table (see
// execute_hard_swish) so that converted models reproduce eager PyTorch.
#include <algorithm>
#include <cmath>

#include "../kernel.h"

namespace nnrt {
namespace {

using T = OperandType;

constexpr int32_t kHardSwishCode = 99;  // ANEURALNETWORKS_HARD_SWISH (API level 30)

template <at::Tensor (*F)(const at::Tensor&)>
void execute_unary(ExecContext& ctx) {
  const Value& x = ctx.in(0);
  const auto dtype = is_quant8(x.type) ? at::kDouble : at::kFloat;
  if (x.type == T::TensorInt32) {
    ctx.set_output(0, F(x.t).to(at::kInt));
    return;
  }
  ctx.set_output(0, to_operand(F(real_values(x, dtype)), ctx.out_operand(0)));
}

at::Tensor relu(const at::Tensor& x) { return at::clamp_min(x, 0); }
at::Tensor relu1(const at::Tensor& x) { return at::clamp(x, -1, 1); }
at::Tensor relu6(const at::Tensor& x) { return at::clamp(x, 0, 6); }
at::Tensor logistic(const at::Tensor& x) { return at::sigmoid(x); }
at::Tensor tanh_fn(const at::Tensor& x) { return at::tanh(x); }
at::Tensor hard_swish(const at::Tensor& x) { return x * at::clamp(x + 3, 0, 6) / 6; }
at::Tensor exp_fn(const at::Tensor& x) { return at::exp(x); }
at::Tensor sin_fn(const at::Tensor& x) { return at::sin(x); }

// Quantized HARD_SWISH as QNNPACK's (eager PyTorch's quantized hardswish on
// the qnnpack engine): a table over the 256 inputs computed in float32, with
// x = in_scale * (q - zeroPoint), h = x * clamp(x + 3, 0, 6) / 6 and
// (1 / out_scale) * h + out_zeroPoint saturated, then rounded half to even.
void execute_hard_swish(ExecContext& ctx) {
  const Value& x = ctx.in(0);
  if (!is_quant8(x.type)) {
    execute_unary<hard_swish>(ctx);
    return;
  }
  const Operand& out = ctx.out_operand(0);
  const float inverse_out_scale = 1.0f / out.scale;
  const auto out_zero_point = static_cast<float>(out.zero_point);
  at::Tensor table = at::empty({256}, at::kByte);
  uint8_t* entry = table.data_ptr<uint8_t>();
  for (int32_t q = 0; q < 256; ++q) {
    const float real = x.scale * static_cast<float>(q - x.zero_point);
    const float h = real * std::min(std::max(real + 3.0f, 0.0f), 6.0f) / 6.0f;
    const float scaled = std::min(std::max(inverse_out_scale * h + out_zero_point, 0.0f), 255.0f);
    entry[q] = static_cast<uint8_t>(std::nearbyint(scaled));
  }
  ctx.set_output(0, table.index({x.t.to(at::kLong)}));
}
at::Tensor sqrt_fn(const at::Tensor& x) { return at::sqrt(x); }
at::Tensor rsqrt_fn(const at::Tensor& x) { return at::rsqrt(x); }
at::Tensor log_fn(const at::Tensor& x) { return at::log(x); }
at::Tensor floor_fn(const at::Tensor& x) { return at::floor(x); }
at::Tensor abs_fn(const at::Tensor& x) { return at::abs(x); }
at::Tensor neg_fn(const at::Tensor& x) { return at::neg(x); }

// ---- PRELU: out = x >= 0 ? x : alpha * x, alpha broadcast against x.

void execute_prelu(ExecContext& ctx) {
  const Value& x = ctx.in(0);
  const auto dtype = is_quant8(x.type) ? at::kDouble : at::kFloat;
  at::Tensor xr = real_values(x, dtype);
  at::Tensor ar = real_values(ctx.in(ctx.form().at(R::AlphaTensor)), dtype);
  auto shape = at::infer_size(xr.sizes(), ar.sizes());
  if (at::IntArrayRef(shape) != xr.sizes())
    fail(Result::BadData, "alpha does not broadcast to the input");
  ctx.set_output(0, to_operand(at::where(xr >= 0, xr, xr * ar), ctx.out_operand(0)));
}

// ---- SOFTMAX / LOG_SOFTMAX: input, beta, [axis].

void execute_softmax(ExecContext& ctx) {
  const Value& x = ctx.in(0);
  const auto dtype = is_quant8(x.type) ? at::kDouble : at::kFloat;
  at::Tensor xr = real_values(x, dtype);
  const nnapi::Form& f = ctx.form();
  const float beta = ctx.f32(f.at(R::Beta));
  if (!(beta > 0.f)) fail(Result::BadData, "softmax beta must be positive");
  const int64_t axis = wrap_axis(ctx.i32_or(f.at(R::Axis), -1), xr.dim());
  ctx.set_output(0,
                 to_operand(at::softmax(xr * static_cast<double>(beta), axis), ctx.out_operand(0)));
}

void execute_log_softmax(ExecContext& ctx) {
  at::Tensor xr = real_values(ctx.in(0));
  const nnapi::Form& f = ctx.form();
  const double beta = ctx.f32(f.at(R::Beta));
  const int64_t axis = wrap_axis(ctx.i32(f.at(R::Axis)), xr.dim());
  ctx.set_output(0, to_operand(at::log_softmax(xr * beta, axis), ctx.out_operand(0)));
}

// ---- L2_NORMALIZATION: input, [axis]; out = x / sqrt(max(sum(x^2), eps)).

void execute_l2norm(ExecContext& ctx) {
  const Value& x = ctx.in(0);
  at::Tensor xr = real_values(x, at::kDouble);
  const int64_t axis = wrap_axis(ctx.i32_or(ctx.form().at(R::Axis), -1), xr.dim());
  at::Tensor norm = at::sqrt(at::clamp_min((xr * xr).sum({axis}, true), 1e-6));
  ctx.set_output(0, to_operand(xr / norm, ctx.out_operand(0)));
}

// ---- INSTANCE_NORMALIZATION: 4-D input, gamma, beta, epsilon (FLOAT32
// scalars for TENSOR_FLOAT32), layout (BOOL, true = NCHW). Per batch and
// channel, over height and width:
//   out = (x - mean(x)) * gamma / sqrt(var(x) + epsilon) + beta
// with the biased variance (the mean of the squared deviations).

void execute_instance_norm(ExecContext& ctx) {
  at::Tensor x = ctx.in(0).t.to(at::kDouble);
  const nnapi::Form& f = ctx.form();
  const double gamma = ctx.f32(f.at(R::Gamma)), beta = ctx.f32(f.at(R::Beta)),
               eps = ctx.f32(f.at(R::Epsilon));
  const std::vector<int64_t> spatial =
      ctx.flag(f.at(R::Layout)) ? std::vector<int64_t>{2, 3} : std::vector<int64_t>{1, 2};
  at::Tensor centered = x - x.mean(spatial, true);
  at::Tensor var = (centered * centered).mean(spatial, true);
  at::Tensor y = centered * gamma / at::sqrt(var + eps) + beta;
  ctx.set_output(0, y.to(at::kFloat).contiguous());
}

}  // namespace

void add_activation_kernels(std::vector<OpKernel>& table) {
  table.push_back({Op::Relu, "RELU", execute_unary<relu>});
  table.push_back({Op::Relu1, "RELU1", execute_unary<relu1>});
  table.push_back({Op::Relu6, "RELU6", execute_unary<relu6>});
  table.push_back({Op::Logistic, "LOGISTIC", execute_unary<logistic>});
  table.push_back({Op::Tanh, "TANH", execute_unary<tanh_fn>});
  table.push_back({static_cast<Op>(kHardSwishCode), "HARD_SWISH", execute_hard_swish});
  table.push_back({Op::Exp, "EXP", execute_unary<exp_fn>});
  table.push_back({Op::Sin, "SIN", execute_unary<sin_fn>});
  table.push_back({Op::Sqrt, "SQRT", execute_unary<sqrt_fn>});
  table.push_back({Op::Rsqrt, "RSQRT", execute_unary<rsqrt_fn>});
  table.push_back({Op::Log, "LOG", execute_unary<log_fn>});
  table.push_back({Op::Floor, "FLOOR", execute_unary<floor_fn>});
  table.push_back({Op::Abs, "ABS", execute_unary<abs_fn>});
  table.push_back({Op::Neg, "NEG", execute_unary<neg_fn>});
  table.push_back({Op::Prelu, "PRELU", execute_prelu});
  table.push_back({Op::Softmax, "SOFTMAX", execute_softmax});
  table.push_back({Op::LogSoftmax, "LOG_SOFTMAX", execute_log_softmax});
  table.push_back({Op::L2Normalization, "L2_NORMALIZATION", execute_l2norm});
  table.push_back({Op::InstanceNormalization, "INSTANCE_NORMALIZATION", execute_instance_norm});
}

}  // namespace nnrt

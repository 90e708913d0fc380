// Broadcasting binary arithmetic: ADD, SUB, MUL, DIV (with a fused
// activation), MAXIMUM, MINIMUM, POW. Quantized operands are computed on real
// values in double precision and requantized into the output's parameters,
// except a quantized ADD, which follows PyTorch's QNNPACK add for two tensors
// of the same shape (fixed-point multipliers, see qnnpack_add) and its generic
// float32 kernel for broadcasting ones, and a
// quantized MUL, which follows PyTorch's quantized mul (float32 multiplier,
// ties to even), so that converted models reproduce eager PyTorch exactly.
#include <cmath>

#include "../kernel.h"

namespace nnrt {
namespace {

using T = OperandType;

enum class Binary { Add, Sub, Mul, Div, Max, Min };

at::Tensor apply(Binary kind, const at::Tensor& a, const at::Tensor& b, bool integer) {
  switch (kind) {
    case Binary::Add:
      return at::add(a, b);
    case Binary::Sub:
      return at::sub(a, b);
    case Binary::Mul:
      return at::mul(a, b);
    case Binary::Div:
      if (integer) {
        if (at::any(b == 0).item<bool>()) fail(Result::OpFailed, "integer division by zero");
        return at::div(a, b, "floor");
      }
      return at::div(a, b);
    case Binary::Max:
      return at::maximum(a, b);
    case Binary::Min:
      return at::minimum(a, b);
  }
  return a;
}

// QUANT8 a + b of equal shapes as QNNPACK adds: each input's scale relative to
// the output's, as float32, becomes an integer multiplier with `shift`
// fractional bits (the larger one in [2^21, 2^22)); the sum of (q - zeroPoint)
// times the multipliers is shifted right, rounding half away from zero.
// Returns an undefined tensor when the scale ratios are outside QNNPACK's
// range [2^-14, 2^8); the caller then computes on real values.
at::Tensor qnnpack_add(const Value& a, const Value& b, const Operand& out, int32_t fuse) {
  const float a_ratio = a.scale / out.scale, b_ratio = b.scale / out.scale;
  const float lo_ratio = std::ldexp(1.0f, -14), hi_ratio = std::ldexp(1.0f, 8);
  if (a_ratio < lo_ratio || b_ratio < lo_ratio || a_ratio >= hi_ratio || b_ratio >= hi_ratio)
    return {};
  int exponent = 0;
  std::frexp(std::max(a_ratio, b_ratio), &exponent);  // max = m * 2^exponent, m in [0.5, 1)
  const int shift = 21 - (exponent - 1);
  const auto a_mult = static_cast<int64_t>(std::nearbyint(std::ldexp(a_ratio, shift)));
  const auto b_mult = static_cast<int64_t>(std::nearbyint(std::ldexp(b_ratio, shift)));
  at::Tensor acc =
      (a.t.to(at::kLong) - a.zero_point) * a_mult + (b.t.to(at::kLong) - b.zero_point) * b_mult;
  const int64_t unit = int64_t{1} << shift;
  at::Tensor q = at::div(acc, unit, "floor");
  at::Tensor remainder = acc - q * unit - at::lt(acc, 0).to(at::kLong);
  q = q + at::gt(remainder, (unit - 1) >> 1).to(at::kLong);
  auto [lo, hi] = quant_activation_range(fuse, out.scale, out.zero_point);
  return (q + out.zero_point).clamp(lo, hi).to(at::kByte);
}

template <Binary kind>
void execute(ExecContext& ctx) {
  const Value& a = ctx.in(0);
  const Value& b = ctx.in(ctx.form().at(R::SecondInput));
  const bool has_fuse = kind != Binary::Max && kind != Binary::Min;
  const int32_t fuse = has_fuse ? ctx.i32(ctx.form().at(R::Fuse)) : 0;
  check_fuse_code(fuse);
  const Operand& out = ctx.out_operand(0);
  // Shapes broadcast numpy-style from the trailing dimension; throws if not.
  at::infer_size(a.t.sizes(), b.t.sizes());
  at::Tensor exact_add;
  if (kind == Binary::Add && is_quant8(a.type) && a.t.sizes() == b.t.sizes()) {
    exact_add = qnnpack_add(a, b, out, fuse);
  }
  if (exact_add.defined()) {
    ctx.set_output(0, exact_add);
  } else if (kind == Binary::Mul && is_quant8(a.type)) {
    // PyTorch's quantized mul: the exact product of (q - zeroPoint)s,
    // requantized with the float32 multiplier (a_scale * b_scale) *
    // (1 / out_scale), half to even (as a convolution's accumulator).
    at::Tensor product = (a.t.to(at::kLong) - a.zero_point) * (b.t.to(at::kLong) - b.zero_point);
    ctx.set_output(0, requantize_accumulator(product, a.scale, b.scale, out, fuse));
  } else if (kind == Binary::Add && is_quant8(a.type)) {
    // PyTorch's quantized add of other shapes (broadcasting; its generic
    // kernel): both inputs dequantized in float32, added in float32 and
    // quantized as torch.quantize_per_tensor does. In double, about one
    // output in ten of a broadcasting add rounded the other way.
    at::Tensor r = real_values(a, at::kFloat) + real_values(b, at::kFloat);
    ctx.set_output(0, quantize_like_pytorch(r, out, fuse));
  } else if (is_quant8(a.type)) {
    at::Tensor r = apply(kind, real_values(a, at::kDouble), real_values(b, at::kDouble), false);
    ctx.set_output(0, to_operand(r, out, fuse));
  } else if (a.type == T::TensorInt32) {
    ctx.set_output(0, to_operand(apply(kind, a.t, b.t, true), out, fuse));
  } else {
    at::Tensor r = apply(kind, a.t.to(at::kFloat), b.t.to(at::kFloat), false);
    ctx.set_output(0, to_operand(r, out, fuse));
  }
}

// ---- POW: base, exponent (same float type, broadcast numpy-style).

void execute_pow(ExecContext& ctx) {
  const at::Tensor& base = ctx.in(0).t;
  const at::Tensor& exponent = ctx.in(ctx.form().at(R::SecondInput)).t;
  at::infer_size(base.sizes(), exponent.sizes());
  ctx.set_output(0, at::pow(base, exponent).to(base.scalar_type()));
}

}  // namespace

void add_elementwise_kernels(std::vector<OpKernel>& table) {
  table.push_back({Op::Pow, "POW", execute_pow});
  table.push_back({Op::Add, "ADD", execute<Binary::Add>});
  table.push_back({Op::Sub, "SUB", execute<Binary::Sub>});
  table.push_back({Op::Mul, "MUL", execute<Binary::Mul>});
  table.push_back({Op::Div, "DIV", execute<Binary::Div>});
  table.push_back({Op::Maximum, "MAXIMUM", execute<Binary::Max>});
  table.push_back({Op::Minimum, "MINIMUM", execute<Binary::Min>});
}

}  // namespace nnrt

// LOCAL_RESPONSE_NORMALIZATION (FLOAT32, FLOAT16; any rank up to 4; axis,
// default -1), as NeuralNetworks.h defines it along the axis:
//   sqr_sum[..., d] = sum of input[..., k]^2 for k in [d - radius, d + radius]
//                     (clipped to the axis)
//   output = input / (bias + alpha * sqr_sum)^beta
// computed in float32 (a FLOAT16 input is widened, its result rounded back).
#include "../kernel.h"

namespace nnrt {
namespace {

void execute_local_response_norm(ExecContext& ctx) {
  const Value& in = ctx.in(0);
  const nnapi::Form& f = ctx.form();
  const int64_t radius = ctx.i32(f.at(R::Radius));
  if (radius < 0) fail(Result::BadData, "radius must be >= 0");
  const double bias = ctx.f32(f.at(R::LrnBias)), alpha = ctx.f32(f.at(R::Alpha)),
               beta = ctx.f32(f.at(R::Beta));
  const int64_t axis = wrap_axis(ctx.i32_or(f.at(R::Axis), -1), in.t.dim());
  at::Tensor x = in.t.to(at::kFloat).movedim(axis, -1);
  // Windowed sums of squares: zero-pad the axis by `radius` on both sides.
  at::Tensor sq = at::constant_pad_nd(x * x, {radius, radius}, 0);
  at::Tensor sums = sq.unfold(-1, 2 * radius + 1, 1).sum(-1);
  at::Tensor y = x / at::pow(sums * alpha + bias, beta);
  ctx.set_output(0, y.movedim(-1, axis).to(in.t.scalar_type()).contiguous());
}

}  // namespace

void add_normalization_kernels(std::vector<OpKernel>& table) {
  table.push_back({Op::LocalResponseNormalization, "LOCAL_RESPONSE_NORMALIZATION",
                   execute_local_response_norm});
}

}  // namespace nnrt

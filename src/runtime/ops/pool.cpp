// AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D (explicit and implicit padding,
// optional NCHW flag), MEAN and REDUCE_SUM.
//
// Average pooling follows NNAPI: padded cells are not counted. For
// TENSOR_QUANT8_ASYMM the output keeps the input's (scale, zeroPoint) and the
// average is rounded as PyTorch's QNNPACK average pools do: the sum of
// q - zeroPoint times the float32 multiplier in_scale / (out_scale * count),
// rounded half to even. Though the scales are equal, that multiplier is not
// always float32(1 / count) (an ulp above or below it for about a quarter of
// scales and counts; scale / (scale * 196) is above for about a fifth of
// scales), which decides ties. (NNAPI leaves the rounding to the driver; its
// reference CPU code computes (sum + count / 2) / count, which differs on
// ties.) Quantized MEAN rounds the same way (the sum of q - zeroPoint over the
// axes, the multiplier with count = the number of elements averaged), as
// PyTorch's quantized mean over H and W and adaptive_avg_pool2d to 1x1 do on
// the qnnpack engine (QNNPACK's global average pool). PyTorch's mean over
// other dims rounds otherwise (raw values averaged in float, or dequantized
// and quantized): a converted model averaging other axes may differ on ties.
#include <algorithm>
#include <cmath>
#include <limits>

#include "../kernel.h"

namespace nnrt {
namespace {

using T = OperandType;

enum class Pool { Average, Max, L2 };

struct PoolArgs : Window {
  int64_t kernel_w = 1, kernel_h = 1;
  int32_t fuse = 0;
  bool nchw = false;
};

void same_padding(int64_t in, int64_t k, int64_t s, int64_t* before, int64_t* after) {
  const int64_t out = (in + s - 1) / s;
  const int64_t total = std::max<int64_t>((out - 1) * s + k - in, 0);
  *before = total / 2;
  *after = total - *before;
}

PoolArgs read_args(ExecContext& ctx, int64_t in_h, int64_t in_w) {
  PoolArgs a;
  const nnapi::Form& f = ctx.form();
  const bool implicit = f.has(R::PaddingScheme);
  static_cast<Window&>(a) = read_window(ctx, f);
  const int32_t scheme = a.implicit_scheme;
  a.kernel_w = ctx.i32(f.at(R::FilterW));
  a.kernel_h = ctx.i32(f.at(R::FilterH));
  a.fuse = ctx.i32(f.at(R::Fuse));
  a.nchw = ctx.flag_or(f.at(R::Layout), false);
  if (a.stride_w < 1 || a.stride_h < 1 || a.kernel_w < 1 || a.kernel_h < 1)
    fail(Result::BadData, "strides and filter sizes must be >= 1");
  check_fuse_code(a.fuse);
  if (implicit) {
    if (scheme == nnapi::kPaddingSame) {
      same_padding(in_h, a.kernel_h, a.stride_h, &a.pad_t, &a.pad_b);
      same_padding(in_w, a.kernel_w, a.stride_w, &a.pad_l, &a.pad_r);
    } else if (scheme != nnapi::kPaddingValid) {
      fail(Result::BadData, "bad padding scheme");
    }
  }
  if (a.pad_l < 0 || a.pad_r < 0 || a.pad_t < 0 || a.pad_b < 0)
    fail(Result::BadData, "negative padding");
  // Every window must overlap the input, or its average would be 0 / 0.
  if (a.pad_l >= a.kernel_w || a.pad_r >= a.kernel_w || a.pad_t >= a.kernel_h ||
      a.pad_b >= a.kernel_h)
    fail(Result::BadData, "padding must be smaller than the filter");
  return a;
}

// QNNPACK's average of quantized values: the sums of q - zeroPoint over
// `count` elements times the float32 multiplier in_scale / (out_scale *
// count), rounded half to even, plus the output's zeroPoint (as double, not
// yet saturated).
at::Tensor qnnpack_average(const at::Tensor& centered_sum, const at::Tensor& count, float in_scale,
                           const Operand& out) {
  const at::Tensor in = at::scalar_tensor(in_scale, at::kFloat);
  const at::Tensor out_scale = at::scalar_tensor(out.scale, at::kFloat);
  at::Tensor multiplier = in / (out_scale * count.to(at::kFloat));
  return at::round(centered_sum.to(at::kFloat) * multiplier).to(at::kDouble) + out.zero_point;
}

// PyTorch's generic quantized average (its kernel for ceil_mode, and for
// count_include_pad=False on other engines than QNNPACK, whose kernel ignores
// count_include_pad: the only PyTorch pools whose windows NNAPI's padding
// cuts): the multiplier in_scale / out_scale / count computed in double and
// narrowed to float32, then sum * multiplier + zeroPoint in float32, rounded
// half to even.
at::Tensor generic_average(const at::Tensor& centered_sum, const at::Tensor& count, float in_scale,
                           const Operand& out) {
  at::Tensor multiplier =
      (static_cast<double>(in_scale) / static_cast<double>(out.scale) / count.to(at::kDouble))
          .to(at::kFloat);
  at::Tensor y = centered_sum.to(at::kFloat) * multiplier + static_cast<float>(out.zero_point);
  return at::round(y).to(at::kDouble);
}

bool padded(const PoolArgs& a) { return a.pad_l || a.pad_r || a.pad_t || a.pad_b; }

template <Pool kind>
void execute_pool(ExecContext& ctx) {
  const Value& x = ctx.in(0);
  if (x.t.dim() != 4) fail(Result::BadData, "input must be 4-D");
  // The layout flag, when the operation has it.
  const size_t layout_at = ctx.form().at(R::Layout);
  const bool nchw = layout_at < ctx.num_inputs() && ctx.flag(layout_at);
  const bool quant = is_quant8(x.type);
  // Quantized pooling works on the stored integers; float pooling on values.
  at::Tensor v = quant ? x.t.to(at::kDouble) : x.t.to(at::kFloat);
  if (!nchw) v = nhwc_to_nchw(v);
  PoolArgs a = read_args(ctx, v.size(2), v.size(3));
  const std::vector<int64_t> pad = {a.pad_l, a.pad_r, a.pad_t, a.pad_b};
  const std::vector<int64_t> k = {a.kernel_h, a.kernel_w}, s = {a.stride_h, a.stride_w};
  if (v.size(2) + a.pad_t + a.pad_b < a.kernel_h || v.size(3) + a.pad_l + a.pad_r < a.kernel_w)
    fail(Result::BadData, "filter larger than the padded input");
  at::Tensor y;
  if (kind == Pool::Max) {
    y = at::max_pool2d(at::constant_pad_nd(v, pad, -std::numeric_limits<double>::infinity()), k, s);
  } else {
    // Sums over the window and counts of real (non-padded) cells.
    at::Tensor ones = at::ones({1, 1, v.size(2), v.size(3)}, v.options());
    const double area = static_cast<double>(a.kernel_h * a.kernel_w);
    at::Tensor src = kind == Pool::L2 ? v * v : v;
    at::Tensor sum = at::avg_pool2d(at::constant_pad_nd(src, pad, 0), k, s) * area;
    at::Tensor count = at::avg_pool2d(at::constant_pad_nd(ones, pad, 0), k, s) * area;
    count = at::round(count);
    if (kind == Pool::L2) {
      y = at::sqrt(sum / count);
    } else if (quant && padded(a)) {
      y = generic_average(at::round(sum) - count * x.zero_point, count, x.scale,
                          ctx.out_operand(0));
    } else if (quant) {
      y = qnnpack_average(at::round(sum) - count * x.zero_point, count, x.scale,
                          ctx.out_operand(0));
    } else {
      y = sum / count;
    }
  }
  at::Tensor out;
  if (quant) {
    auto [lo, hi] = quant_activation_range(a.fuse, x.scale, x.zero_point);
    out = y.clamp(lo, hi).to(at::kByte);
  } else {
    out = to_operand(y, ctx.out_operand(0), a.fuse);
  }
  ctx.set_output(0, nchw ? out.contiguous() : nchw_to_nhwc(out));
}

// ---- MEAN: input, axes (TENSOR_INT32), keep_dims (INT32)

// MEAN's and REDUCE_SUM's axes, wrapped, each once, in their order.
std::vector<int64_t> distinct_axes(const ExecContext& ctx, int64_t rank) {
  std::vector<int64_t> axes;
  for (int64_t a : ctx.int_list(ctx.form().at(R::Axes))) {
    int64_t w = wrap_axis(a, rank);
    if (std::find(axes.begin(), axes.end(), w) == axes.end()) axes.push_back(w);
  }
  return axes;
}

void execute_mean(ExecContext& ctx) {
  const Value& x = ctx.in(0);
  const std::vector<int64_t> axes = distinct_axes(ctx, x.t.dim());
  const bool keep = ctx.i32(ctx.form().at(R::KeepDims)) != 0;
  if (is_quant8(x.type)) {
    // As PyTorch's quantized mean over H and W (QNNPACK's global average
    // pool) and its adaptive_avg_pool2d to 1x1: see qnnpack_average.
    at::Tensor centered = x.t.to(at::kDouble) - x.zero_point;
    int64_t count = 1;
    for (int64_t a : axes) count *= x.t.size(a);
    at::Tensor sum = axes.empty() ? centered : at::sum(centered, axes, keep);
    at::Tensor y = qnnpack_average(sum, at::scalar_tensor(static_cast<double>(count)), x.scale,
                                   ctx.out_operand(0));
    ctx.set_output(0, y.clamp(0, 255).to(at::kByte));
    return;
  }
  at::Tensor xr = real_values(x, at::kFloat);
  at::Tensor y = axes.empty() ? xr : at::mean(xr, axes, keep);
  ctx.set_output(0, to_operand(y, ctx.out_operand(0)));
}

// ---- REDUCE_SUM: input (TENSOR_FLOAT32 or FLOAT16), axes (1-D TENSOR_INT32,
// each in [-rank, rank)), keep_dims (BOOL): the sum over the axes.

void execute_reduce_sum(ExecContext& ctx) {
  const at::Tensor& x = ctx.in(0).t;
  const std::vector<int64_t> axes = distinct_axes(ctx, x.dim());
  at::Tensor y = axes.empty() ? x : at::sum(x, axes, ctx.flag(ctx.form().at(R::KeepDims)));
  ctx.set_output(0, y.contiguous());
}

}  // namespace

void add_pool_kernels(std::vector<OpKernel>& table) {
  table.push_back({Op::AveragePool2d, "AVERAGE_POOL_2D", execute_pool<Pool::Average>});
  table.push_back({Op::MaxPool2d, "MAX_POOL_2D", execute_pool<Pool::Max>});
  table.push_back({Op::L2Pool2d, "L2_POOL_2D", execute_pool<Pool::L2>});
  table.push_back({Op::Mean, "MEAN", execute_mean});
  table.push_back({Op::ReduceSum, "REDUCE_SUM", execute_reduce_sum});
}

}  // namespace nnrt

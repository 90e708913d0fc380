// Convolutions and matrix products: CONV_2D, DEPTHWISE_CONV_2D,
// GROUPED_CONV_2D, TRANSPOSE_CONV_2D (explicit and implicit padding forms,
// optional NCHW flag and dilation) on at::conv2d / at::conv_transpose2d;
// FULLY_CONNECTED and BATCH_MATMUL.
//
// Quantized (TENSOR_QUANT8_ASYMM) convolutions accumulate exactly in the
// integer domain: (q_in - z_in) convolved with (q_w - z_w) plus the INT32
// bias, held in double, where every sum of 8-bit products is exact. The
// accumulator is requantized as PyTorch's QNNPACK kernels do (float32
// multiplier, round half to even; see requantize_accumulator), with the fused
// activation clamping in the quantized domain.
#include <cmath>

#include "../kernel.h"

namespace nnrt {
namespace {

using T = OperandType;

enum PaddingScheme { kPaddingSame = 1, kPaddingValid = 2 };

struct ConvArgs : Window {
  int64_t dil_w = 1, dil_h = 1;
  int64_t groups = 1;
  int64_t multiplier = 1;
  int32_t fuse = 0;
  bool nchw = false;
};

// Explicit padding from an implicit scheme, for one spatial dimension.
void implicit_padding(int32_t scheme, int64_t in, int64_t kernel, int64_t stride, int64_t dil,
                      int64_t* before, int64_t* after) {
  const int64_t eff = (kernel - 1) * dil + 1;
  if (scheme == kPaddingValid) {
    *before = *after = 0;
  } else if (scheme == kPaddingSame) {
    const int64_t out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>((out - 1) * stride + eff - in, 0);
    *before = total / 2;
    *after = total - *before;
  } else {
    fail(Result::BadData, "bad padding scheme " + std::to_string(scheme));
  }
}

void check_args(const ConvArgs& a) {
  if (a.stride_w < 1 || a.stride_h < 1 || a.dil_w < 1 || a.dil_h < 1)
    fail(Result::BadData, "strides and dilations must be >= 1");
  if (a.pad_l < 0 || a.pad_r < 0 || a.pad_t < 0 || a.pad_b < 0)
    fail(Result::BadData, "negative padding");
  check_fuse_code(a.fuse);
}

// The values a convolution computes on: real values for floats, the integer
// accumulator domain for a quantized input `x`.
at::Tensor conv_values(const Value& v, const Value& x) {
  return is_quant8(x.type) ? accumulator_values(v) : real_values(v, at::kFloat);
}

// Input image as NCHW conv_values.
at::Tensor image_nchw(const Value& x, bool nchw) {
  if (x.t.dim() != 4) fail(Result::BadData, "image input must be 4-D");
  at::Tensor r = conv_values(x, x);
  return nchw ? r : nhwc_to_nchw(r);
}

// Output 0 from the result in conv_values (input 0 the data, input 1 the filter).
at::Tensor conv_output(const ExecContext& ctx, const at::Tensor& y, int32_t fuse) {
  const Value& x = ctx.in(0);
  if (is_quant8(x.type) && ctx.in(1).type == T::TensorQuant8SymmPerChannel) {
    // The filter's scales run along the output channels: dim 1 of the NCHW result.
    return requantize_accumulator(y, x.scale, channel_scales(ctx.in_operand(1), y.dim(), 1),
                                  ctx.out_operand(0), fuse);
  }
  if (is_quant8(x.type))
    return requantize_accumulator(y, x.scale, ctx.in(1).scale, ctx.out_operand(0), fuse);
  return to_operand(y, ctx.out_operand(0), fuse);
}

at::Tensor pad_spatial(const at::Tensor& x, const ConvArgs& a) {
  if (a.pad_l == 0 && a.pad_r == 0 && a.pad_t == 0 && a.pad_b == 0) return x;
  return at::constant_pad_nd(x, {a.pad_l, a.pad_r, a.pad_t, a.pad_b}, 0);
}

void write_image(ExecContext& ctx, const at::Tensor& result_nchw, const ConvArgs& a) {
  at::Tensor out = conv_output(ctx, result_nchw, a.fuse);
  ctx.set_output(0, a.nchw ? out.contiguous() : nchw_to_nhwc(out));
}

// ---- CONV_2D
// explicit: in, w, b, pad l r t b, stride w h, fuse [, nchw [, dil w h]]  (10, 11, 13)
// implicit: in, w, b, scheme, stride w h, fuse [, nchw [, dil w h]]       (7, 8, 10)

bool conv2d_is_implicit(const ExecContext& ctx) {
  const size_t n = ctx.num_inputs();
  if (n == 7 || n == 8) return true;
  // 10 inputs: explicit without layout, or implicit with layout + dilation.
  return n == 10 && ctx.in(7).type == T::Bool;
}

// Padding (four explicit values, or an implicit scheme) and strides, from input 3 on.
ConvArgs read_padding_and_strides(ExecContext& ctx, bool implicit, size_t* next) {
  ConvArgs a;
  *next = 3;
  static_cast<Window&>(a) = read_window(ctx, implicit, next);
  return a;
}

ConvArgs read_conv2d_args(ExecContext& ctx, size_t* next) {
  return read_padding_and_strides(ctx, conv2d_is_implicit(ctx), next);
}

void read_tail(ExecContext& ctx, size_t i, ConvArgs& a) {
  a.fuse = ctx.i32(i++);
  a.nchw = ctx.flag_or(i++, false);
  a.dil_w = ctx.i32_or(i++, 1);
  a.dil_h = ctx.i32_or(i++, 1);
}

void resolve_implicit(ConvArgs& a, const at::Tensor& x_nchw, int64_t kh, int64_t kw) {
  if (a.implicit_scheme == 0) return;
  implicit_padding(a.implicit_scheme, x_nchw.size(2), kh, a.stride_h, a.dil_h, &a.pad_t, &a.pad_b);
  implicit_padding(a.implicit_scheme, x_nchw.size(3), kw, a.stride_w, a.dil_w, &a.pad_l, &a.pad_r);
}

// Runs a convolution; `w_torch` is [out, in/groups, kh, kw].
void run_conv(ExecContext& ctx, ConvArgs a, const at::Tensor& w_torch) {
  const Value& x = ctx.in(0);
  at::Tensor xr = image_nchw(x, a.nchw);
  resolve_implicit(a, xr, w_torch.size(2), w_torch.size(3));
  check_args(a);
  at::Tensor b = conv_values(ctx.in(2), x);
  if (b.numel() != w_torch.size(0)) fail(Result::BadData, "bias size != output channels");
  if (xr.size(1) != w_torch.size(1) * a.groups)
    fail(Result::BadData, "input channels do not match the filter");
  const std::vector<int64_t> stride = {a.stride_h, a.stride_w}, dil = {a.dil_h, a.dil_w};
  const std::vector<int64_t> no_pad = {0, 0};
  at::Tensor y = at::conv2d(pad_spatial(xr, a), w_torch.to(xr.scalar_type()),
                            b.to(xr.scalar_type()), stride, no_pad, dil, a.groups);
  write_image(ctx, y, a);
}

at::Tensor filter_values(const ExecContext& ctx) {
  const Value& w = ctx.in(1);
  if (w.t.dim() != 4) fail(Result::BadData, "filter must be 4-D");
  return conv_values(w, ctx.in(0));
}

void execute_conv2d(ExecContext& ctx) {
  size_t i = 0;
  ConvArgs a = read_conv2d_args(ctx, &i);
  read_tail(ctx, i, a);
  // NNAPI filter [out, kh, kw, in] -> torch [out, in, kh, kw].
  run_conv(ctx, a, filter_values(ctx).permute({0, 3, 1, 2}));
}

// ---- DEPTHWISE_CONV_2D
// explicit: in, w, b, pad l r t b, stride w h, mult, fuse [, nchw [, dil w h]]  (11, 12, 14)
// implicit: in, w, b, scheme, stride w h, mult, fuse [, nchw [, dil w h]]       (8, 9, 11)

bool depthwise_is_implicit(size_t n, OperandType at8) {
  if (n == 8 || n == 9) return true;
  if (n != 11) return false;
  return at8 == T::Bool;
}

void execute_depthwise(ExecContext& ctx) {
  const bool implicit =
      depthwise_is_implicit(ctx.num_inputs(), ctx.num_inputs() > 8 ? ctx.in(8).type : T::Int32);
  size_t i = 0;
  ConvArgs a = read_padding_and_strides(ctx, implicit, &i);
  a.multiplier = ctx.i32(i++);
  read_tail(ctx, i, a);
  if (a.multiplier < 1) fail(Result::BadData, "depth multiplier must be >= 1");
  // NNAPI filter [1, kh, kw, in * mult] -> torch [in * mult, 1, kh, kw], groups = in.
  at::Tensor w = filter_values(ctx);
  if (w.size(0) != 1) fail(Result::BadData, "depthwise filter must have leading dim 1");
  const int64_t in_c = ctx.in(0).t.size(a.nchw ? 1 : 3);
  if (w.size(3) != in_c * a.multiplier)
    fail(Result::BadData, "depthwise filter depth != input channels * multiplier");
  a.groups = in_c;
  run_conv(ctx, a, w.permute({3, 0, 1, 2}));
}

// ---- GROUPED_CONV_2D
// explicit: in, w, b, pad l r t b, stride w h, groups, fuse, nchw  (12)
// implicit: in, w, b, scheme, stride w h, groups, fuse, nchw       (9)

void execute_grouped(ExecContext& ctx) {
  ConvArgs a;
  size_t i = 3;
  if (ctx.num_inputs() == 9) {
    a.implicit_scheme = ctx.i32(i++);
  } else {
    a.pad_l = ctx.i32(i++);
    a.pad_r = ctx.i32(i++);
    a.pad_t = ctx.i32(i++);
    a.pad_b = ctx.i32(i++);
  }
  a.stride_w = ctx.i32(i++);
  a.stride_h = ctx.i32(i++);
  a.groups = ctx.i32(i++);
  a.fuse = ctx.i32(i++);
  a.nchw = ctx.flag(i++);
  if (a.groups < 1) fail(Result::BadData, "num_groups must be >= 1");
  at::Tensor w = filter_values(ctx);
  if (w.size(0) % a.groups != 0) fail(Result::BadData, "output channels % groups != 0");
  run_conv(ctx, a, w.permute({0, 3, 1, 2}));
}

// ---- TRANSPOSE_CONV_2D
// explicit: in, w, b, pad l r t b, stride w h, fuse, nchw                 (11)
// implicit: in, w, b, output_shape (TENSOR_INT32), scheme, stride w h, fuse, nchw  (9)

void execute_transpose_conv(ExecContext& ctx) {
  ConvArgs a;
  const Value& x = ctx.in(0);
  const bool implicit = ctx.num_inputs() == 9;
  a.nchw = ctx.flag(ctx.num_inputs() - 1);
  at::Tensor xr = image_nchw(x, a.nchw);
  at::Tensor w = filter_values(ctx);  // [out, kh, kw, in]
  const int64_t kh = w.size(1), kw = w.size(2);
  if (implicit) {
    const std::vector<int64_t> out_shape = ctx.int_list(3);
    const int32_t scheme = ctx.i32(4);
    a.stride_w = ctx.i32(5);
    a.stride_h = ctx.i32(6);
    a.fuse = ctx.i32(7);
    if (out_shape.size() != 4) fail(Result::BadData, "output_shape must have 4 entries");
    if (scheme != kPaddingSame && scheme != kPaddingValid) fail(Result::BadData, "bad scheme");
    check_args(a);
    nnapi_validate::transpose_conv_implicit_padding(scheme, out_shape[a.nchw ? 2 : 1], kh,
                                                    a.stride_h, &a.pad_t, &a.pad_b);
    nnapi_validate::transpose_conv_implicit_padding(scheme, out_shape[a.nchw ? 3 : 2], kw,
                                                    a.stride_w, &a.pad_l, &a.pad_r);
  } else {
    a.pad_l = ctx.i32(3);
    a.pad_r = ctx.i32(4);
    a.pad_t = ctx.i32(5);
    a.pad_b = ctx.i32(6);
    a.stride_w = ctx.i32(7);
    a.stride_h = ctx.i32(8);
    a.fuse = ctx.i32(9);
    check_args(a);
  }
  if (xr.size(1) != w.size(3)) fail(Result::BadData, "input channels do not match the filter");
  at::Tensor b = conv_values(ctx.in(2), x);
  if (b.numel() != w.size(0)) fail(Result::BadData, "bias size != output channels");
  // torch conv_transpose2d weight is [in, out, kh, kw]; the natural result
  // ((in - 1) * stride + kernel) is cropped by the paddings, or extended by a
  // negative trailing one, before the bias is added everywhere.
  at::Tensor wt = w.permute({3, 0, 1, 2}).to(xr.scalar_type());
  const std::vector<int64_t> stride = {a.stride_h, a.stride_w};
  at::Tensor y = at::conv_transpose2d(xr, wt, {}, stride);
  if (y.size(2) - a.pad_t - a.pad_b < 1 || y.size(3) - a.pad_l - a.pad_r < 1)
    fail(Result::BadData, "padding too large");
  y = at::constant_pad_nd(y, {-a.pad_l, -a.pad_r, -a.pad_t, -a.pad_b}, 0);
  y = y + b.to(xr.scalar_type()).view({1, -1, 1, 1});
  write_image(ctx, y, a);
}

// ---- FULLY_CONNECTED: in, weights [units, in_size], bias [units], fuse.

void execute_fc(ExecContext& ctx) {
  const Value& x = ctx.in(0);
  at::Tensor w = conv_values(ctx.in(1), x);
  if (w.dim() != 2) fail(Result::BadData, "weights must be 2-D");
  const int64_t in_size = w.size(1);
  if (in_size == 0 || x.t.numel() % in_size != 0)
    fail(Result::BadData, "input size is not a multiple of the weights' input size");
  // Inputs of rank > 2 are flattened to [numel / in_size, in_size].
  at::Tensor xr = conv_values(x, x).reshape({-1, in_size});
  at::Tensor b = conv_values(ctx.in(2), x);
  if (b.numel() != w.size(0)) fail(Result::BadData, "bias size != number of units");
  ctx.set_output(0, conv_output(ctx, at::linear(xr, w, b), ctx.i32(3)));
}

// ---- BATCH_MATMUL (NNAPI feature level 6): x [..., r_x, c_x], y [..., r_y,
// c_y] of the same rank (2 to 4) and the same batch dims, optional BOOL
// adj_x, adj_y (default false) that transpose each slice of x, y first.
// Output [..., r_o, c_o]. This runtime implements TENSOR_FLOAT32 and
// TENSOR_INT32; the spec's QUANT8 forms are refused at addOperation.

void execute_batch_matmul(ExecContext& ctx) {
  at::Tensor x = ctx.in(0).t, y = ctx.in(1).t;
  if (x.dim() != y.dim() || x.dim() < 2 || x.dim() > 4)
    fail(Result::BadData, "BATCH_MATMUL inputs must have the same rank, 2 to 4");
  for (int64_t d = 0; d + 2 < x.dim(); ++d) {
    if (x.size(d) != y.size(d)) fail(Result::BadData, "BATCH_MATMUL batch dims differ");
  }
  if (ctx.flag_or(2, false)) x = x.transpose(-1, -2);
  if (ctx.flag_or(3, false)) y = y.transpose(-1, -2);
  if (x.size(-1) != y.size(-2)) fail(Result::BadData, "BATCH_MATMUL inner dims differ");
  if (x.scalar_type() == at::kInt) {
    ctx.set_output(0, at::matmul(x.to(at::kLong), y.to(at::kLong)).to(at::kInt).contiguous());
  } else {
    ctx.set_output(0, at::matmul(x, y).contiguous());
  }
}

}  // namespace

void add_conv_kernels(std::vector<OpKernel>& table) {
  table.push_back({Op::Conv2d, "CONV_2D", execute_conv2d});
  table.push_back({Op::DepthwiseConv2d, "DEPTHWISE_CONV_2D", execute_depthwise});
  table.push_back({Op::GroupedConv2d, "GROUPED_CONV_2D", execute_grouped});
  table.push_back({Op::TransposeConv2d, "TRANSPOSE_CONV_2D", execute_transpose_conv});
  table.push_back({Op::FullyConnected, "FULLY_CONNECTED", execute_fc});
  table.push_back({Op::BatchMatmul, "BATCH_MATMUL", execute_batch_matmul});
}

}  // namespace nnrt

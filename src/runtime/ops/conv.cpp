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
using nnapi::kPaddingSame;
using nnapi::kPaddingValid;

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

// A convolution's or FULLY_CONNECTED's input in role `r`.
const Value& conv_in(const ExecContext& ctx, R r) { return ctx.in(ctx.form().at(r)); }

// Output 0 from the result in conv_values (of the data input and the filter
// or weights).
at::Tensor conv_output(const ExecContext& ctx, const at::Tensor& y, int32_t fuse) {
  const nnapi::Form& f = ctx.form();
  const Value& x = ctx.in(f.at(R::Input));
  const size_t w_at = f.has(R::Filter) ? f.at(R::Filter) : f.at(R::Weights);
  if (is_quant8(x.type) && ctx.in(w_at).type == T::TensorQuant8SymmPerChannel) {
    // The filter's scales run along the output channels: dim 1 of the NCHW result.
    return requantize_accumulator(y, x.scale, channel_scales(ctx.in_operand(w_at), y.dim(), 1),
                                  ctx.out_operand(0), fuse);
  }
  if (is_quant8(x.type))
    return requantize_accumulator(y, x.scale, ctx.in(w_at).scale, ctx.out_operand(0), fuse);
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

// The parameters of a convolution, where its form (op_signature.h) has them:
// padding, strides, DEPTHWISE_CONV_2D's multiplier, GROUPED_CONV_2D's groups,
// the fused activation, the layout flag (optional for CONV_2D and
// DEPTHWISE_CONV_2D) and dilation (optional).
ConvArgs read_conv_args(const ExecContext& ctx) {
  const nnapi::Form& f = ctx.form();
  ConvArgs a;
  static_cast<Window&>(a) = read_window(ctx, f);
  if (f.has(R::DepthMultiplier)) a.multiplier = ctx.i32(f.at(R::DepthMultiplier));
  if (f.has(R::Groups)) a.groups = ctx.i32(f.at(R::Groups));
  a.fuse = ctx.i32(f.at(R::Fuse));
  a.nchw = f.optional(R::Layout) ? ctx.flag_or(f.at(R::Layout), false) : ctx.flag(f.at(R::Layout));
  a.dil_w = ctx.i32_or(f.at(R::DilationW), 1);
  a.dil_h = ctx.i32_or(f.at(R::DilationH), 1);
  return a;
}

void resolve_implicit(ConvArgs& a, const at::Tensor& x_nchw, int64_t kh, int64_t kw) {
  if (a.implicit_scheme == 0) return;
  implicit_padding(a.implicit_scheme, x_nchw.size(2), kh, a.stride_h, a.dil_h, &a.pad_t, &a.pad_b);
  implicit_padding(a.implicit_scheme, x_nchw.size(3), kw, a.stride_w, a.dil_w, &a.pad_l, &a.pad_r);
}

// Runs a convolution; `w_torch` is [out, in/groups, kh, kw].
void run_conv(ExecContext& ctx, ConvArgs a, const at::Tensor& w_torch) {
  const Value& x = conv_in(ctx, R::Input);
  at::Tensor xr = image_nchw(x, a.nchw);
  resolve_implicit(a, xr, w_torch.size(2), w_torch.size(3));
  check_args(a);
  at::Tensor b = conv_values(conv_in(ctx, R::Bias), x);
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
  const Value& w = conv_in(ctx, R::Filter);
  if (w.t.dim() != 4) fail(Result::BadData, "filter must be 4-D");
  return conv_values(w, conv_in(ctx, R::Input));
}

// ---- CONV_2D: in, w, b, padding, strides, fuse [, nchw [, dil w h]]

void execute_conv2d(ExecContext& ctx) {
  // NNAPI filter [out, kh, kw, in] -> torch [out, in, kh, kw].
  run_conv(ctx, read_conv_args(ctx), filter_values(ctx).permute({0, 3, 1, 2}));
}

// ---- DEPTHWISE_CONV_2D: in, w, b, padding, strides, mult, fuse [, nchw [, dil w h]]

void execute_depthwise(ExecContext& ctx) {
  ConvArgs a = read_conv_args(ctx);
  if (a.multiplier < 1) fail(Result::BadData, "depth multiplier must be >= 1");
  // NNAPI filter [1, kh, kw, in * mult] -> torch [in * mult, 1, kh, kw], groups = in.
  at::Tensor w = filter_values(ctx);
  if (w.size(0) != 1) fail(Result::BadData, "depthwise filter must have leading dim 1");
  const int64_t in_c = conv_in(ctx, R::Input).t.size(a.nchw ? 1 : 3);
  if (w.size(3) != in_c * a.multiplier)
    fail(Result::BadData, "depthwise filter depth != input channels * multiplier");
  a.groups = in_c;
  run_conv(ctx, a, w.permute({3, 0, 1, 2}));
}

// ---- GROUPED_CONV_2D: in, w, b, padding, strides, groups, fuse, nchw

void execute_grouped(ExecContext& ctx) {
  ConvArgs a = read_conv_args(ctx);
  if (a.groups < 1) fail(Result::BadData, "num_groups must be >= 1");
  at::Tensor w = filter_values(ctx);
  if (w.size(0) % a.groups != 0) fail(Result::BadData, "output channels % groups != 0");
  run_conv(ctx, a, w.permute({0, 3, 1, 2}));
}

// ---- TRANSPOSE_CONV_2D
// explicit: in, w, b, pad l r t b, strides, fuse, nchw
// implicit: in, w, b, output_shape (TENSOR_INT32), scheme, strides, fuse, nchw

void execute_transpose_conv(ExecContext& ctx) {
  const nnapi::Form& f = ctx.form();
  ConvArgs a = read_conv_args(ctx);
  const Value& x = ctx.in(f.at(R::Input));
  at::Tensor xr = image_nchw(x, a.nchw);
  at::Tensor w = filter_values(ctx);  // [out, kh, kw, in]
  const int64_t kh = w.size(1), kw = w.size(2);
  if (f.has(R::OutputShape)) {
    const std::vector<int64_t> out_shape = ctx.int_list(f.at(R::OutputShape));
    const int32_t scheme = a.implicit_scheme;
    a.implicit_scheme = 0;  // resolved here, from the requested shape
    if (out_shape.size() != 4) fail(Result::BadData, "output_shape must have 4 entries");
    if (scheme != kPaddingSame && scheme != kPaddingValid) fail(Result::BadData, "bad scheme");
    check_args(a);
    nnapi_validate::transpose_conv_implicit_padding(scheme, out_shape[a.nchw ? 2 : 1], kh,
                                                    a.stride_h, &a.pad_t, &a.pad_b);
    nnapi_validate::transpose_conv_implicit_padding(scheme, out_shape[a.nchw ? 3 : 2], kw,
                                                    a.stride_w, &a.pad_l, &a.pad_r);
  } else {
    check_args(a);
  }
  if (xr.size(1) != w.size(3)) fail(Result::BadData, "input channels do not match the filter");
  at::Tensor b = conv_values(ctx.in(f.at(R::Bias)), x);
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
  const nnapi::Form& f = ctx.form();
  const Value& x = conv_in(ctx, R::Input);
  at::Tensor w = conv_values(conv_in(ctx, R::Weights), x);
  if (w.dim() != 2) fail(Result::BadData, "weights must be 2-D");
  const int64_t in_size = w.size(1);
  if (in_size == 0 || x.t.numel() % in_size != 0)
    fail(Result::BadData, "input size is not a multiple of the weights' input size");
  // Inputs of rank > 2 are flattened to [numel / in_size, in_size].
  at::Tensor xr = conv_values(x, x).reshape({-1, in_size});
  at::Tensor b = conv_values(conv_in(ctx, R::Bias), x);
  if (b.numel() != w.size(0)) fail(Result::BadData, "bias size != number of units");
  ctx.set_output(0, conv_output(ctx, at::linear(xr, w, b), ctx.i32(f.at(R::Fuse))));
}

// ---- BATCH_MATMUL (NNAPI feature level 6): x [..., r_x, c_x], y [..., r_y,
// c_y] of the same rank (2 to 4) and the same batch dims, optional BOOL
// adj_x, adj_y (default false) that transpose each slice of x, y first.
// Output [..., r_o, c_o]. This runtime implements TENSOR_FLOAT32 and
// TENSOR_INT32; the spec's QUANT8 forms are refused at addOperation.

void execute_batch_matmul(ExecContext& ctx) {
  const nnapi::Form& f = ctx.form();
  at::Tensor x = ctx.in(f.at(R::Input)).t, y = ctx.in(f.at(R::SecondInput)).t;
  if (x.dim() != y.dim() || x.dim() < 2 || x.dim() > 4)
    fail(Result::BadData, "BATCH_MATMUL inputs must have the same rank, 2 to 4");
  for (int64_t d = 0; d + 2 < x.dim(); ++d) {
    if (x.size(d) != y.size(d)) fail(Result::BadData, "BATCH_MATMUL batch dims differ");
  }
  if (ctx.flag_or(f.at(R::AdjX), false)) x = x.transpose(-1, -2);
  if (ctx.flag_or(f.at(R::AdjY), false)) y = y.transpose(-1, -2);
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

// RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR:
//   input, (INT32 out_w, INT32 out_h | FLOAT32 scale_w, FLOAT32 scale_h)
//   [, nchw [, align_corners [, half_pixel_centers]]]
// The scale form's output size is floor(in * scale). Source coordinates are
// computed in float as in NNAPI's reference: scale = in / out (or
// (in - 1) / (out - 1) with align_corners). Quantized RESIZE_BILINEAR
// interpolates the stored values in float32 and rounds half to even, as
// PyTorch's quantized upsample_bilinear2d (see quantized_bilinear).
#include <algorithm>
#include <cmath>

#include "../kernel.h"

namespace nnrt {
namespace {

struct ResizeArgs {
  int64_t out_h = 0, out_w = 0;
  bool nchw = false, align_corners = false, half_pixel = false;
};

ResizeArgs read_args(ExecContext& ctx, int64_t in_h, int64_t in_w) {
  ResizeArgs a;
  const nnapi::Form& f = ctx.form();
  if (f.has(R::OutputW)) {
    a.out_w = ctx.i32(f.at(R::OutputW));
    a.out_h = ctx.i32(f.at(R::OutputH));
  } else {
    const float sw = ctx.f32(f.at(R::ScaleW)), sh = ctx.f32(f.at(R::ScaleH));
    if (!(sw > 0.f) || !(sh > 0.f)) fail(Result::BadData, "scales must be positive");
    a.out_w = static_cast<int64_t>(std::floor(static_cast<float>(in_w) * sw));
    a.out_h = static_cast<int64_t>(std::floor(static_cast<float>(in_h) * sh));
  }
  if (a.out_w < 1 || a.out_h < 1) fail(Result::BadData, "output size must be positive");
  a.nchw = ctx.flag_or(f.at(R::Layout), false);
  a.align_corners = ctx.flag_or(f.at(R::AlignCorners), false);
  a.half_pixel = ctx.flag_or(f.at(R::HalfPixelCenters), false);
  if (a.align_corners && a.half_pixel)
    fail(Result::BadData, "align_corners and half_pixel_centers are exclusive");
  return a;
}

float axis_scale(int64_t in, int64_t out, bool align_corners) {
  if (align_corners && out > 1) return static_cast<float>(in - 1) / static_cast<float>(out - 1);
  return static_cast<float>(in) / static_cast<float>(out);
}

at::Tensor nearest_index(int64_t in, int64_t out, const ResizeArgs& a) {
  const float scale = axis_scale(in, out, a.align_corners);
  std::vector<int64_t> idx(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const float src = (static_cast<float>(o) + (a.half_pixel ? 0.5f : 0.f)) * scale;
    int64_t i = static_cast<int64_t>(a.align_corners ? std::round(src) : std::floor(src));
    idx[static_cast<size_t>(o)] = std::clamp<int64_t>(i, 0, in - 1);
  }
  return at::tensor(idx, at::TensorOptions(at::kLong));
}

// Layout helpers: index of the H and W dimensions.
int64_t h_dim(bool nchw) { return nchw ? 2 : 1; }
int64_t w_dim(bool nchw) { return nchw ? 3 : 2; }

void execute_nearest(ExecContext& ctx) {
  const Value& x = ctx.in(0);
  const bool nchw = nchw_flag(ctx);
  const int64_t in_h = x.t.size(h_dim(nchw)), in_w = x.t.size(w_dim(nchw));
  ResizeArgs a = read_args(ctx, in_h, in_w);
  at::Tensor y = x.t.index_select(h_dim(nchw), nearest_index(in_h, a.out_h, a))
                     .index_select(w_dim(nchw), nearest_index(in_w, a.out_w, a));
  ctx.set_output(0, y);
}

// Lower source index, upper source index and weight of the upper one.
void linear_taps(int64_t in, int64_t out, const ResizeArgs& a, at::Tensor* lo, at::Tensor* hi,
                 at::Tensor* frac) {
  const float scale = axis_scale(in, out, a.align_corners);
  std::vector<int64_t> l(static_cast<size_t>(out)), h(static_cast<size_t>(out));
  std::vector<double> f(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    float src = a.half_pixel ? (static_cast<float>(o) + 0.5f) * scale - 0.5f
                             : static_cast<float>(o) * scale;
    src = std::max(src, 0.f);
    const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(std::floor(src)), in - 1);
    const size_t k = static_cast<size_t>(o);
    l[k] = i0;
    h[k] = std::min<int64_t>(i0 + 1, in - 1);
    f[k] = static_cast<double>(src) - static_cast<double>(i0);
  }
  *lo = at::tensor(l, at::TensorOptions(at::kLong));
  *hi = at::tensor(h, at::TensorOptions(at::kLong));
  *frac = at::tensor(f, at::TensorOptions(at::kDouble));
}

// Quantized bilinear resize as PyTorch's quantized upsample_bilinear2d (the
// output keeps the input's parameters): on the stored values `q` (NCHW,
// float32), with the upper taps' weights l1 = fh, fw and l0 = 1 - l1 in
// float32, h_l0 * (w_l0 * q00 + w_l1 * q01) + h_l1 * (w_l0 * q10 + w_l1 * q11)
// - zeroPoint in float32, rounded half to even, plus the zeroPoint.
at::Tensor quantized_bilinear(const at::Tensor& q, const at::Tensor& h0, const at::Tensor& h1,
                              const at::Tensor& fh, const at::Tensor& w0, const at::Tensor& w1,
                              const at::Tensor& fw, int32_t zero_point, const Operand& out) {
  const at::Tensor h_l1 = fh.to(at::kFloat), w_l1 = fw.to(at::kFloat);
  const at::Tensor h_l0 = 1.0f - h_l1, w_l0 = 1.0f - w_l1;
  auto horizontal = [&](const at::Tensor& rows) {
    return w_l0 * rows.index_select(3, w0) + w_l1 * rows.index_select(3, w1);
  };
  at::Tensor y = h_l0 * horizontal(q.index_select(2, h0)) +
                 h_l1 * horizontal(q.index_select(2, h1)) - static_cast<float>(zero_point);
  return (at::round(y) + out.zero_point).clamp(0, 255).to(at::kByte);
}

void execute_bilinear(ExecContext& ctx) {
  const Value& x = ctx.in(0);
  const bool nchw = nchw_flag(ctx);
  at::Tensor v = is_quant8(x.type) ? x.t : real_values(x, at::kDouble);
  if (!nchw) v = nhwc_to_nchw(v);
  const int64_t in_h = v.size(2), in_w = v.size(3);
  ResizeArgs a = read_args(ctx, in_h, in_w);
  at::Tensor h0, h1, fh, w0, w1, fw;
  linear_taps(in_h, a.out_h, a, &h0, &h1, &fh);
  linear_taps(in_w, a.out_w, a, &w0, &w1, &fw);
  fh = fh.view({1, 1, -1, 1});
  fw = fw.view({1, 1, 1, -1});
  at::Tensor out;
  if (is_quant8(x.type)) {
    out = quantized_bilinear(v.to(at::kFloat), h0, h1, fh, w0, w1, fw, x.zero_point,
                             ctx.out_operand(0));
  } else {
    at::Tensor top = v.index_select(2, h0), bottom = v.index_select(2, h1);
    at::Tensor rows = top + (bottom - top) * fh;
    at::Tensor left = rows.index_select(3, w0), right = rows.index_select(3, w1);
    out = to_operand(left + (right - left) * fw, ctx.out_operand(0));
  }
  ctx.set_output(0, nchw ? out.contiguous() : nchw_to_nhwc(out));
}

}  // namespace

void add_resize_kernels(std::vector<OpKernel>& table) {
  table.push_back({Op::ResizeNearestNeighbor, "RESIZE_NEAREST_NEIGHBOR", execute_nearest});
  table.push_back({Op::ResizeBilinear, "RESIZE_BILINEAR", execute_bilinear});
}

}  // namespace nnrt

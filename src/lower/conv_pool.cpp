#include "lower/conv_pool.h"

namespace nnapi_convert {

ConvPoolArgs make_conv_pool_args(const std::vector<int64_t>& kernel,
                                 const std::vector<int64_t>& strides,
                                 const std::vector<int64_t>& paddings,
                                 const std::vector<int64_t>& dilations, int64_t group) {
  check(kernel.size() == 2 && strides.size() == 2 && paddings.size() == 2 && dilations.size() == 2,
        "only 2-D windows (two kernel sizes, strides, paddings and dilations) are supported");
  ConvPoolArgs a;
  a.kernel_h = kernel[0];
  a.kernel_w = kernel[1];
  a.stride_h = strides[0];
  a.stride_w = strides[1];
  a.pad_t = a.pad_b = paddings[0];
  a.pad_l = a.pad_r = paddings[1];
  a.dilation_h = dilations[0];
  a.dilation_w = dilations[1];
  a.group = group;
  check(a.stride_h > 0 && a.stride_w > 0, "strides must be positive");
  return a;
}

namespace {

// The output size along one axis, written once: (in - k + p0 + p1) // s + 1,
// or (in - 1) * s + k - p0 - p1 for a transposed convolution, with `k` the
// window a dilated kernel spans. A number for a fixed `in`; for a load-time
// size the shape-compute text, in the reference's unsimplified form.
SymInt conv_out_dim(const SymInt& in, int64_t k, int64_t p0, int64_t p1, int64_t s,
                    bool transpose) {
  if (in.is_constant()) {
    return {transpose ? (in.value - 1) * s + k - p0 - p1 : (in.value - k + p0 + p1) / s + 1, ""};
  }
  auto num = [](int64_t v) { return std::to_string(v); };
  if (transpose) {
    return {0, "(" + in.expr + " - 1) * " + num(s) + " + " + num(k) + " - " + num(p0) + " - " +
                   num(p1)};
  }
  return {0, "(" + in.expr + " - " + num(k) + " + " + num(p0) + " + " + num(p1) + ") // " + num(s) +
                 " + 1"};
}

// The output height (d = 2) or width (d = 3) for input size `in`.
SymInt conv_pool_out_dim(const SymInt& in, const ConvPoolArgs& a, int64_t d, bool transpose) {
  if (d == 2) {
    const int64_t kh = a.dilation_h * (a.kernel_h - 1) + 1;
    return conv_out_dim(in, kh, a.pad_t, a.pad_b, a.stride_h, transpose);
  }
  const int64_t kw = a.dilation_w * (a.kernel_w - 1) + 1;
  return conv_out_dim(in, kw, a.pad_l, a.pad_r, a.stride_w, transpose);
}

}  // namespace

Shape conv_pool_out_shape(const Shape& image, const ConvPoolArgs& a, int64_t out_ch,
                          bool transpose) {
  check(image.size() == 4, [&] { return "expected a 4-D image, got " + shape_str(image); });
  int64_t in_h = image[2], in_w = image[3];
  if (!transpose) {
    // The window a dilated kernel spans.
    int64_t kh = a.dilation_h * (a.kernel_h - 1) + 1, kw = a.dilation_w * (a.kernel_w - 1) + 1;
    check(in_h <= 0 || in_h + a.pad_t + a.pad_b >= kh, [&] {
      return "the window (" + std::to_string(kh) + ") is larger than the padded input height";
    });
    check(in_w <= 0 || in_w + a.pad_l + a.pad_r >= kw, [&] {
      return "the window (" + std::to_string(kw) + ") is larger than the padded input width";
    });
  }
  // 0 (flexible) stays 0: its size is a shape-compute line (conv_pool_flexible_input).
  auto out = [&](int64_t in, int64_t d) {
    return in == 0 ? 0 : conv_pool_out_dim({in, ""}, a, d, transpose).value;
  };
  return {image[0], out_ch, out(in_h, 2), out(in_w, 3)};
}

void conv_pool_flexible_input(LoweringContext& cx, int32_t out_id, const Tensor& image,
                              const ConvPoolArgs& a, bool transpose) {
  const Shape& s = image.op.shape;
  if (s[0] == 0) cx.forward_operand_shape(out_id, 0, image.id, 0);
  check(s[1] != 0, "input channels can't be flexible");
  for (int64_t d : {2, 3}) {
    if (s[d] != 0) continue;
    cx.compute_operand_shape(out_id, d,
                             conv_pool_out_dim(sym_dim(image.id, s, d), a, d, transpose).expr);
  }
}

}  // namespace nnapi_convert

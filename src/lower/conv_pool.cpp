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

Shape conv_pool_out_shape(const Shape& image, const ConvPoolArgs& a, int64_t out_ch,
                          bool transpose) {
  check(image.size() == 4, [&] { return "expected a 4-D image, got " + shape_str(image); });
  int64_t in_h = image[2], in_w = image[3], out_h, out_w;
  // The window a dilated kernel spans.
  int64_t kh = a.dilation_h * (a.kernel_h - 1) + 1, kw = a.dilation_w * (a.kernel_w - 1) + 1;
  if (transpose) {
    out_h = (in_h - 1) * a.stride_h + kh - a.pad_t - a.pad_b;
    out_w = (in_w - 1) * a.stride_w + kw - a.pad_l - a.pad_r;
  } else {
    check(in_h <= 0 || in_h + a.pad_t + a.pad_b >= kh, [&] {
      return "the window (" + std::to_string(kh) + ") is larger than the padded input height";
    });
    check(in_w <= 0 || in_w + a.pad_l + a.pad_r >= kw, [&] {
      return "the window (" + std::to_string(kw) + ") is larger than the padded input width";
    });
    out_h = (in_h - kh + a.pad_t + a.pad_b) / a.stride_h + 1;
    out_w = (in_w - kw + a.pad_l + a.pad_r) / a.stride_w + 1;
  }
  if (in_h == 0) out_h = 0;
  if (in_w == 0) out_w = 0;
  return {image[0], out_ch, out_h, out_w};
}

void conv_pool_flexible_input(LoweringContext& cx, int32_t out_id, const Tensor& image,
                              const ConvPoolArgs& a, bool transpose) {
  const int32_t image_id = image.id;
  const Operand& op = image.op;
  const Shape& s = op.shape;
  if (s[0] == 0) cx.forward_operand_shape(out_id, 0, image_id, 0);
  check(s[1] != 0, "input channels can't be flexible");
  auto num = [](int64_t v) { return std::to_string(v); };
  // Dilated kernels span a wider window; for dilation 1 this is the kernel.
  ConvPoolArgs e = a;
  e.kernel_h = a.dilation_h * (a.kernel_h - 1) + 1;
  e.kernel_w = a.dilation_w * (a.kernel_w - 1) + 1;
  if (transpose) {
    if (s[2] == 0) {
      cx.compute_operand_shape(out_id, 2,
                               "(" + flex_name(image_id, 2) + " - 1) * " + num(a.stride_h) + " + " +
                                   num(e.kernel_h) + " - " + num(a.pad_t) + " - " + num(a.pad_b));
    }
    if (s[3] == 0) {
      cx.compute_operand_shape(out_id, 3,
                               "(" + flex_name(image_id, 3) + " - 1) * " + num(a.stride_w) + " + " +
                                   num(e.kernel_w) + " - " + num(a.pad_l) + " - " + num(a.pad_r));
    }
  } else {
    if (s[2] == 0) {
      cx.compute_operand_shape(out_id, 2,
                               "(" + flex_name(image_id, 2) + " - " + num(e.kernel_h) + " + " +
                                   num(a.pad_t) + " + " + num(a.pad_b) + ") // " + num(a.stride_h) +
                                   " + 1");
    }
    if (s[3] == 0) {
      cx.compute_operand_shape(out_id, 3,
                               "(" + flex_name(image_id, 3) + " - " + num(e.kernel_w) + " + " +
                                   num(a.pad_l) + " + " + num(a.pad_r) + ") // " + num(a.stride_w) +
                                   " + 1");
    }
  }
}

}  // namespace nnapi_convert

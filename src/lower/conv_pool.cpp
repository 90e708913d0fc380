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

void apply_ceil_mode(const Shape& image, ConvPoolArgs* a) {
  auto extra = [](int64_t in, int64_t k, int64_t s, int64_t pad) {
    if (in == 0) {
      // A flexible size: s - 1 more cells give ceil((in + 2 pad - k) / s) + 1
      // windows for every size. PyTorch drops a last window that would start
      // at in + pad or later, which needs (ceil_out - 1) s <= in + 2 pad - k
      // + s - 1 to reach in + pad, that is s > k - pad; else it never does.
      check(s <= k - pad, [&] {
        return "ceil_mode over a flexible height or width with stride " + std::to_string(s) +
               " greater than the kernel size " + std::to_string(k) + " minus the padding " +
               std::to_string(pad) +
               ": PyTorch then drops a last window that starts in the padding at some sizes "
               "only, which NNAPI's fixed padding cannot follow; give height and width fixed "
               "sizes in --input";
      });
      return s - 1;
    }
    int64_t floor_out = (in + 2 * pad - k) / s + 1;
    int64_t ceil_out = (in + 2 * pad - k + s - 1) / s + 1;
    if ((ceil_out - 1) * s >= in + pad) --ceil_out;
    return ceil_out > floor_out ? (ceil_out - 1) * s + k - (in + 2 * pad) : int64_t{0};
  };
  a->pad_b += extra(image[2], a->kernel_h, a->stride_h, a->pad_t);
  a->pad_r += extra(image[3], a->kernel_w, a->stride_w, a->pad_l);
}

namespace {

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

std::vector<SymInt> conv_pool_out_dims(const OperandHandle& image, const ConvPoolArgs& a,
                                       int64_t out_ch, bool transpose) {
  const Shape& s = image.op.shape;
  check(s.size() == 4, [&] { return "expected a 4-D image, got " + shape_str(s); });
  if (!transpose) {
    // The window a dilated kernel spans.
    int64_t kh = a.dilation_h * (a.kernel_h - 1) + 1, kw = a.dilation_w * (a.kernel_w - 1) + 1;
    check(s[2] <= 0 || s[2] + a.pad_t + a.pad_b >= kh, [&] {
      return "the window (" + std::to_string(kh) + ") is larger than the padded input height";
    });
    check(s[3] <= 0 || s[3] + a.pad_l + a.pad_r >= kw, [&] {
      return "the window (" + std::to_string(kw) + ") is larger than the padded input width";
    });
  }
  check(s[1] != 0, "input channels can't be flexible");
  return {sym_dim(image.id, s, 0),
          {out_ch, ""},
          conv_pool_out_dim(sym_dim(image.id, s, 2), a, 2, transpose),
          conv_pool_out_dim(sym_dim(image.id, s, 3), a, 3, transpose)};
}

}  // namespace nnapi_convert

// The 2-D pools of pooling.cpp, also used per frame by video.cpp's 3-D pools.
#pragma once

#include <vector>

#include "lower/conv_pool.h"

namespace nnapi_convert {

// MAX_POOL_2D over a 4-D image; `out` may be null (an anonymous result).
OperandHandle emit_max_pool(LoweringContext& cx, const OperandHandle& image, ConvPoolArgs a,
                            bool ceil_mode, const Value* out);

// How PyTorch divides an average pool's window sums.
struct AvgDivisor {
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // 0: none
};

// avg_pool2d, each form PyTorch has. PyTorch sums window (i, j) clamped to the
// input and divides by divisor_override, or by the window's cells within the
// padded input (count_include_pad; ceil_mode's extra windows stop at the
// padding) or within the input. NNAPI's AVERAGE_POOL_2D with explicit padding
// (ceil_mode's extra windows as more bottom/right padding, apply_ceil_mode)
// divides by the cells within the input, so:
// - count_include_pad=False (or no padding and no ceil_mode overhang), no
//   divisor_override: AVERAGE_POOL_2D alone (any height and width);
// - count_include_pad with padding and nothing else: PAD with zeros, then the
//   pool (as before; quantized too);
// - otherwise: AVERAGE_POOL_2D, then MUL by the constant map of (cells within
//   the input) / (PyTorch's divisor) per output position (float32, fixed
//   height and width; exact up to the rounding of that product).
OperandHandle emit_avg_pool(LoweringContext& cx, const OperandHandle& image, ConvPoolArgs a,
                            bool ceil_mode, const Value* out, AvgDivisor div = {});

// adaptive_avg_pool2d / adaptive_max_pool2d (`op` AVERAGE_POOL_2D or
// MAX_POOL_2D) to `size`: one window over the whole image for (1, 1), else a
// plain pool when the sizes divide the input's (then PyTorch's adaptive
// windows are equal and do not overlap); other sizes (average, float32) by
// PyTorch's window weights.
OperandHandle emit_adaptive_pool(LoweringContext& cx, nnapi::Op op, const OperandHandle& image,
                                 const std::vector<int64_t>& size, const Value* out);

// A separable linear map of float `x` (N, C, H, W) to (N, C, out_h, out_w):
// out = A_h^T x A_w per channel with constant `a_h` (H, out_h) and `a_w` (W,
// out_w) (adaptive pools' window weights; upsample.cpp's bilinear weights).
OperandHandle separable_by_products(LoweringContext& cx, const OperandHandle& x,
                                    const at::Tensor& a_h, const at::Tensor& a_w);

}  // namespace nnapi_convert

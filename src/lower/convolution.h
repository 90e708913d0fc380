#pragma once

#include <ATen/Tensor.h>

#include "lower/conv_pool.h"
#include "lower/emit.h"

namespace nnapi_convert {

// CONV_2D, DEPTHWISE_CONV_2D or TRANSPOSE_CONV_2D of `image` with a PyTorch
// (OIHW, or IOHW when transposed) weight; `bias_id` is already an operand.
void add_conv2d_common(LoweringContext& cx, const Value* out, double out_scale,
                       int64_t out_zero_point, const Value* image, const at::Tensor& weight,
                       int32_t bias_id, const ConvPoolArgs& args, bool transpose, nnapi::Fuse fuse);
// The same of an operand; the result is `out`'s operand, or anonymous when null.
Tensor emit_conv2d(LoweringContext& cx, const Value* out, double out_scale, int64_t out_zero_point,
                   const Tensor& image, const at::Tensor& weight, int32_t bias_id,
                   const ConvPoolArgs& args, bool transpose, nnapi::Fuse fuse);

// A 1-D convolution as the 2-D one over (N, C, 1, L): x (N, C, L) reshaped so,
// and the (N, C', 1, L') result reshaped back to `out`.
Tensor conv1d_as_2d(LoweringContext& cx, const Tensor& x);
void conv1d_result(LoweringContext& cx, const Tensor& y, const Value* out);

}  // namespace nnapi_convert

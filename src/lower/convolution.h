#pragma once

#include <ATen/Tensor.h>

#include <string>
#include <vector>

#include "lower/conv_pool.h"
#include "lower/emit.h"

namespace nnapi_convert {

// CONV_2D, DEPTHWISE_CONV_2D or TRANSPOSE_CONV_2D of `image` with a PyTorch
// (OIHW, or IOHW when transposed) weight; `bias_id` is already an operand.
// The result is `out`'s operand, or anonymous when null.
OperandHandle emit_conv2d(LoweringContext& cx, const Value* out, double out_scale,
                          int64_t out_zero_point, const OperandHandle& image,
                          const at::Tensor& weight, int32_t bias_id, const ConvPoolArgs& args,
                          bool transpose, nnapi::Fuse fuse);

// The convolution of `x` as PyTorch's conv1d/conv2d/conv_transpose2d compute
// it: `weight` OIHW (IOHW when `transpose`; 3-D for a 1-D convolution over
// (N, C, L), lowered as the 2-D one over (N, C, 1, L)), `bias` undefined for
// none, `output_padding` (transposed only) as PyTorch's, `fuse` the NNAPI
// activation fused into the result. The result is `out`'s operand, or
// anonymous when null (2-D only). aten::conv2d, aten::_convolution and the
// XNNPACK convolutions of prepacked.cpp all lower through it.
OperandHandle emit_conv_any(LoweringContext& cx, OperandHandle x, at::Tensor weight,
                            const at::Tensor& bias, ConvPoolArgs a, bool transpose,
                            const std::vector<int64_t>& output_padding, nnapi::Fuse fuse,
                            const Value* out);
// The window of a 2-D convolution with a 4-D weight and PyTorch's int pairs.
ConvPoolArgs conv2d_window(const at::Tensor& weight, const std::vector<int64_t>& stride,
                           const std::vector<int64_t>& padding,
                           const std::vector<int64_t>& dilation, int64_t groups);
// What emit_conv2d refuses of a 2-D convolution, known from its constant
// arguments before lowering (a SupportFn's answer): "" when it converts.
std::string conv_support(const at::Tensor& weight, bool transpose, int64_t groups,
                         const std::vector<int64_t>& dilation);

// A 1-D convolution as the 2-D one over (N, C, 1, L): x (N, C, L) reshaped so,
// and the (N, C', 1, L') result reshaped back to `out`.
OperandHandle conv1d_as_2d(LoweringContext& cx, const OperandHandle& x);
void conv1d_result(LoweringContext& cx, const OperandHandle& y, const Value* out);

}  // namespace nnapi_convert

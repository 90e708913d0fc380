// Window arguments shared by convolutions and pooling.
#pragma once

#include <vector>

#include "lower/context.h"
#include "lower/emit.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {

struct ConvPoolArgs {
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w;
  int64_t pad_t, pad_b, pad_l, pad_r;
  int64_t dilation_h, dilation_w;
  int64_t group;  // 0 when not given
};

ConvPoolArgs make_conv_pool_args(const std::vector<int64_t>& kernel,
                                 const std::vector<int64_t>& strides,
                                 const std::vector<int64_t>& paddings,
                                 const std::vector<int64_t>& dilations, int64_t group);

// ceil_mode: PyTorch rounds the output size up, but drops a last window that
// would start in the bottom/right padding. NNAPI has no ceil mode: pads the
// bottom/right edge of `a` so the floor formula gives the same size over the
// `image`. Max pooling ignores padded positions, so values are unchanged. A
// flexible (0) height or width gets stride - 1 more cells, which gives the
// ceil size at every size when no last window can start in the padding
// (stride <= kernel - padding); otherwise it is refused.
void apply_ceil_mode(const Shape& image, ConvPoolArgs* a);

// The PyTorch (NCHW) output dims of a convolution or pool over `image`, with
// `out_ch` channels: N as the image's, H and W by conv_out_dim (dims.h).
std::vector<SymInt> conv_pool_out_dims(const OperandHandle& image, const ConvPoolArgs& a,
                                       int64_t out_ch, bool transpose);

}  // namespace nnapi_convert

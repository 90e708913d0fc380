// The handlers of inputs in forms other than a rank <= 4 tensor, which the
// family files put in their kinds' specs (registry.h; dispatch.h chooses).
#pragma once

#include "lower/registry.h"

namespace nnapi_convert {

// rank_reduce.cpp: tensors of rank > 4, held by NNAPI as rank <= 4 operands
// of the same elements. Each returns false for a node it does not take.
bool lower_high_rank_view(LoweringContext& cx, const Node* node);  // view, reshape
bool lower_high_rank_permute(LoweringContext& cx, const Node* node);
bool lower_high_rank_transpose(LoweringContext& cx, const Node* node);
bool lower_high_rank_select(LoweringContext& cx, const Node* node);
bool lower_high_rank_slice(LoweringContext& cx, const Node* node);
bool lower_high_rank_unsqueeze(LoweringContext& cx, const Node* node);
bool lower_high_rank_pow(LoweringContext& cx, const Node* node);
bool lower_high_rank_cat(LoweringContext& cx, const Node* node);
bool lower_high_rank_unbind(LoweringContext& cx, const Node* node);
bool lower_high_rank_dequantize(LoweringContext& cx, const Node* node);
// add, sub, mul, div; and relu, sigmoid, exp, log, sqrt, rsqrt, neg, abs.
bool lower_high_rank_elementwise(LoweringContext& cx, const Node* node);

// video.cpp: video tensors held as frames.
// The 2-D lowering of each frame, for elementwise operations, identities and
// batch_norm (per channel), which treat each of the N samples alike, so
// each of the T*N frames alike.
FramesSpec frames_per_frame();
// The lowering reads the frames itself (3-D convolutions and pools).
FramesSpec frames_read();
// aten::_convolution and _convolution_mode: a 5-D weight's 3-D convolution.
FramesSpec frames_conv3d();
// aten::size: read from the video's 5-D record, but with a flexible N.
FramesSpec frames_size();

// spectral.cpp: abs() of a complex aten::stft result (its real pairs).
void lower_complex_abs(LoweringContext& cx, const Node* node);

}  // namespace nnapi_convert

// Normalization sequences shared with attention.cpp's fused encoder layer.
#pragma once

#include <ATen/Tensor.h>

#include <vector>

#include "lower/emit.h"

namespace nnapi_convert {

// (x - mean) * rsqrt(var + eps) over `axes` of x (NNAPI order), with the
// biased variance: MEAN, SUB, MUL, MEAN, ADD, RSQRT, MUL; the result is
// `out`'s operand when given.
OperandHandle emit_normalize(LoweringContext& cx, const OperandHandle& x,
                             const std::vector<int64_t>& axes, double eps,
                             const Value* out = nullptr);
// layer_norm: emit_normalize, then MUL by `weight` and ADD of `bias`
// (constants broadcast over the trailing dims; either may be null).
OperandHandle emit_layer_norm(LoweringContext& cx, const OperandHandle& x,
                              const std::vector<int64_t>& axes, double eps,
                              const at::Tensor* weight, const at::Tensor* bias, const Value* out);

}  // namespace nnapi_convert

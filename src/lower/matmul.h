// Matrix product helpers shared by matmul.cpp and einsum.cpp.
#pragma once

#include <ATen/Tensor.h>

#include "lower/emit.h"

namespace nnapi_convert {

// A float32 operand of a product (computed or constant), in PyTorch's element
// order, of at least `min_rank` dims; `what` names the op in messages.
OperandHandle product_operand(LoweringContext& cx, const Value* v, const char* what,
                              size_t min_rank = 2);
// x (..., K) @ w (K, N) with w constant: FULLY_CONNECTED with weight w.t()
// and a zero bias (or `bias`, (N) float32) on x flattened to (M, K), reshaped
// back to (..., N); `fuse` is FULLY_CONNECTED's fused activation.
OperandHandle product_with_constant(LoweringContext& cx, const OperandHandle& x,
                                    const at::Tensor& w, const Value* out,
                                    const at::Tensor* bias = nullptr,
                                    nnapi::Fuse fuse = nnapi::Fuse::None);
// BATCH_MATMUL of a (..., R, K) and b (..., K, C) with equal batch dims; below
// feature level 6 (--min-android-api under 33), FULLY_CONNECTED per batch entry.
OperandHandle emit_batch_matmul(LoweringContext& cx, const OperandHandle& a, const OperandHandle& b,
                                const Value* out);

}  // namespace nnapi_convert

#pragma once

#include "lower/context.h"

namespace nnapi_convert {

// A float32 tensor of x's shape (flexible sizes too) and layout holding
// `value`: a (1, ..., 1) constant TILEd to x's shape; bound to `out` when
// given.
OperandHandle emit_filled_like(LoweringContext& cx, const OperandHandle& x, float value,
                               const Value* out = nullptr);

}  // namespace nnapi_convert

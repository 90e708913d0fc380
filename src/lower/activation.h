// Activation sequences shared with attention.cpp's fused encoder layer and the
// clamp of prepacked.cpp's XNNPACK operations.
#pragma once

#include <optional>

#include "lower/emit.h"

namespace nnapi_convert {

// gelu with the exact (erf) formula of PyTorch's default approximate='none',
// erf as a polynomial to 1.5e-7; the result is `out`'s operand when given.
OperandHandle gelu_erf(LoweringContext& cx, const OperandHandle& x, const Value* out);

// clamp(x, lo, hi) with either bound optional (not both absent): RELU6, RELU1
// or RELU where the bounds are theirs, else MAXIMUM and MINIMUM with constants
// in x's type; the result is `out`'s operand when given.
OperandHandle emit_clamp(LoweringContext& cx, const OperandHandle& x, std::optional<double> lo,
                         std::optional<double> hi, const Value* out);

}  // namespace nnapi_convert

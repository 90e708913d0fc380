// Activation sequences shared with attention.cpp's fused encoder layer.
#pragma once

#include "lower/emit.h"

namespace nnapi_convert {

// gelu with the exact (erf) formula of PyTorch's default approximate='none',
// erf as a polynomial to 1.5e-7; the result is `out`'s operand when given.
Tensor gelu_erf(LoweringContext& cx, const Tensor& x, const Value* out);

}  // namespace nnapi_convert

// pixel_shuffle as an emitter, for lowerings that build its input themselves.
#pragma once

#include "lower/context.h"

namespace nnapi_convert {

// pixel_shuffle(x, r) of a 4-D operand with a fixed channel count divisible
// by r * r (a GATHER of the channels into NNAPI's depth order and
// DEPTH_TO_SPACE); bound to `out` when given.
OperandHandle emit_pixel_shuffle(LoweringContext& cx, const OperandHandle& x, int64_t r,
                                 const Value* out);

}  // namespace nnapi_convert

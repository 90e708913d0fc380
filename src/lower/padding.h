// Padding shared with other lowerings (torch.stft's center=True).
#pragma once

#include <string>
#include <vector>

#include "lower/context.h"

namespace nnapi_convert {

// Pads `x` (rank <= 4) by before[d] / after[d] elements in each PyTorch dim d
// as aten::pad does in `mode`: "constant" with `value`, or "reflect",
// "replicate" or "circular" (slices of the input concatenated around it,
// fixed sizes in the padded dims); bound to `out` when given.
OperandHandle emit_mode_pad(LoweringContext& cx, const OperandHandle& x,
                            const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                            const std::string& mode, double value, const Value* out = nullptr);

}  // namespace nnapi_convert

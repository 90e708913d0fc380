#pragma once

#include <optional>
#include <utility>

#include "lower/context.h"

namespace nnapi_convert {

// A broadcasting binary op (ADD, SUB, MUL, DIV) with a fused activation;
// `qparams` sets the output's scale and zero point (quantized ops).
void lower_binary(LoweringContext& cx, const Node* node, nnapi::Op op, nnapi::Fuse fuse,
                  std::optional<std::pair<double, int64_t>> qparams = std::nullopt);
// Same, on values: out_value = a op b. Either side may be a Python number (a
// constant int or float, or the 0-dim tensor the tracer wraps one in).
void lower_binary_values(LoweringContext& cx, const Value* a, const Value* b,
                         const Value* out_value, nnapi::Op op, nnapi::Fuse fuse,
                         std::optional<std::pair<double, int64_t>> qparams = std::nullopt);

}  // namespace nnapi_convert

#pragma once

#include <optional>
#include <utility>

#include "lower/context.h"

namespace nnapi_convert {

// A broadcasting binary op (ADD, SUB, MUL, DIV) with a fused activation;
// `qparams` sets the output's scale and zero point (quantized ops).
void lower_binary(LoweringContext& cx, const Node* node, nnapi::Op op, nnapi::Fuse fuse,
                  std::optional<std::pair<double, int64_t>> qparams = std::nullopt);

// clamp(x, lo, hi) with either bound optional (activation.cpp).
void lower_clamp_bounds(LoweringContext& cx, const Node* node, std::optional<double> lo,
                        std::optional<double> hi);

}  // namespace nnapi_convert

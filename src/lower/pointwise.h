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

// The two operands of an elementwise operation PyTorch's converter does not
// lower (MAXIMUM, MINIMUM, POW of two tensors, add with alpha, ...): each a
// computed tensor, a constant tensor or a Python number (a float32 (1)
// constant, which NNAPI broadcasts), for PyTorch's broadcasting. They are laid
// out alike: against a 4-D channels-last operand a 4-D NCHW one is made NHWC
// (any shape: a TRANSPOSE); against an operand of another rank a channels-last
// one is made NCHW. A constant takes the other side's dtype and layout.
std::pair<OperandHandle, OperandHandle> elementwise_operands(LoweringContext& cx, const Value* a,
                                                             const Value* b);
// The same for an operand already made (`x`, e.g. an intermediate result) and
// a value `v`: v's operand beside x, both laid out alike.
std::pair<OperandHandle, OperandHandle> elementwise_operands(LoweringContext& cx,
                                                             const OperandHandle& x,
                                                             const Value* v);
// Two operands of one type laid out alike, as elementwise_operands does.
std::pair<OperandHandle, OperandHandle> align_layouts(LoweringContext& cx, OperandHandle x,
                                                      OperandHandle y);

// A Python number where PyTorch takes a Scalar: a constant int, float or bool
// (aten::mul.Scalar and the like in scripted models), or the 0-dim int64,
// float64 or bool tensor the tracer wraps such a number in. A 0-dim float32
// constant is an ordinary tensor constant, left to the tensor path.
std::optional<double> number_operand(const LoweringContext& cx, const Value* v);

}  // namespace nnapi_convert

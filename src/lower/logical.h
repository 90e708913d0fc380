// Bool tensors inside the NNAPI model. A bool the model computes is a
// TENSOR_BOOL8 operand (what NNAPI's comparisons give), or a TENSOR_INT32 of
// 0/1: a bool model input (--input ...,dtype=bool; PyTorch's NNAPI binding
// takes no bool tensors) and what is computed from such inputs alone by the
// int32 formulas (logical_not as 1 - m, logical_or as MAXIMUM). A bool model
// output leaves the model as int32 0/1 and the converted module makes it
// bool again.
#pragma once

#include <vector>

#include "lower/context.h"
#include "lower/operand.h"

namespace nnapi_convert {

// `v` is a bool tensor: so typed in the graph, held as TENSOR_BOOL8, or
// recorded bool (LoweringContext::torch_dtype_of: bool inputs, int32 0/1
// results).
bool is_bool_value(const LoweringContext& cx, const Value* v);
// The truth of `t` as TENSOR_BOOL8: itself when it is one, else NOT_EQUAL
// to 0 (int32 0/1 bools, and PyTorch's truth of numbers: non-zero is true).
OperandHandle bool8_of(LoweringContext& cx, const OperandHandle& t);
// Value `v` as TENSOR_BOOL8: a computed tensor through bool8_of, a constant
// (tensor or Python number) as a TENSOR_BOOL8 constant of its truth.
OperandHandle bool8_operand(LoweringContext& cx, const Value* v);
// A TENSOR_BOOL8 `b` as 0/1 of `type` (TENSOR_INT32 or TENSOR_FLOAT32):
// SELECT of ones and zeros expanded to b's shape (any, flexible too), bound
// to `out` when given.
OperandHandle bool_as(LoweringContext& cx, const OperandHandle& b, nnapi::OperandType type,
                      const Value* out = nullptr);
inline OperandHandle int01_of(LoweringContext& cx, const OperandHandle& b,
                              const Value* out = nullptr) {
  return bool_as(cx, b, nnapi::OperandType::TensorInt32, out);
}
// Numeric `x` broadcast to `target` (x's rank; each x dim 1 or the target's):
// TILE, whose multiples are set when the model is loaded for flexible target
// dims; bound to `out` when given (then something must be broadcast). `x`
// itself when nothing is broadcast.
OperandHandle emit_expand(LoweringContext& cx, const OperandHandle& x,
                          const std::vector<SymInt>& target, const Value* out = nullptr);
// where(condition, a, b): SELECT of a and b (computed float32 or int32
// tensors, or constants) broadcast by TILE to the result's shape, the
// condition broadcast by LOGICAL_AND; bound to `out` when given.
OperandHandle emit_where(LoweringContext& cx, const Value* condition, const Value* a,
                         const Value* b, const Value* out = nullptr);

}  // namespace nnapi_convert

// Tensors of rank > 4 held by NNAPI as rank <= 4 operands of the same
// elements (rank_reduce.cpp): the helpers other lowerings call.
#pragma once

#include <cstdint>
#include <vector>

#include "lower/context.h"
#include "lower/dims.h"

namespace nnapi_convert {

// permute of a fixed-size tensor of any rank by `perm` in operations of rank
// <= 4 (rank_reduce.cpp: adjacent dims merged): the result's record has the
// permuted shape, which may have rank > 4 (its operand then holds the same
// elements with fewer dims; bind it with bind_reshaped).
// A flexible leading size (a load-time batch) is allowed: see rank_reduce.cpp.
OperandHandle permute_merged(LoweringContext& cx, const OperandHandle& x,
                             std::vector<int64_t> perm);
// permute_merged of `x` of sizes `dims` (one may be a load-time size) whose
// record need not say them.
OperandHandle permute_merged(LoweringContext& cx, const OperandHandle& x,
                             const std::vector<SymInt>& dims, std::vector<int64_t> perm);
// The operation of permute_merged for `x` of sizes `dims` (one may be a
// load-time size) whose record need not say them: the operand holding the
// permuted elements, with its own (rank <= 4) shape.
OperandHandle permute_merged_raw(LoweringContext& cx, const OperandHandle& x,
                                 const std::vector<SymInt>& dims, std::vector<int64_t> perm);
// `x`'s contiguous data read as `shape` (same element count), bound to
// `out`: for rank > 4 no operation when every use of `out` reads it so (the
// rank > 4 views, permutes, selects, slices, cat and elementwise operations
// of rank_reduce.cpp, or the model's return), else a RESHAPE.
void bind_reshaped(LoweringContext& cx, const OperandHandle& x, const Shape& shape,
                   const Value* out);
// bind_reshaped of `x` read as `dims` (one may be a load-time size).
void bind_reshaped(LoweringContext& cx, const OperandHandle& x, const std::vector<SymInt>& dims,
                   const Value* out);
// A contiguous tensor `x` of rank > 4 read as 3-D around its dim d: (the
// product of the dims before d, dim d, the product of the dims after d), a
// RESHAPE where its operand has another shape. An operation along d (a
// softmax, a split) is then one along dim 1 of the 3-D operand.
OperandHandle read_around(LoweringContext& cx, const OperandHandle& x, int64_t d);

}  // namespace nnapi_convert

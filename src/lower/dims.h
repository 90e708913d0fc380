// Output-shape formulas, each written once. A dim is a SymInt: a number for a
// fixed size, or the shape-compute script's text for a size known when the
// model is loaded (operand.h). Each formula gives both from one place; for
// ops PyTorch's converter covers, the text is the reference's own, verbatim
// and unsimplified (torch/backends/_nnapi/serializer.py), since the
// shape-compute script is compared byte for byte. LoweringContext::add_output
// writes a formula's dims: the number, or 0 and the script line.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "lower/operand.h"

namespace nnapi_convert {

// A convolution's or pool's output size along one axis, for a window of `k`
// (the span of a dilated kernel), paddings p0 and p1 and stride s:
// (in - k + p0 + p1) // s + 1, or (in - 1) * s + k - p0 - p1 when `transpose`.
SymInt conv_out_dim(const SymInt& in, int64_t k, int64_t p0, int64_t p1, int64_t s, bool transpose);
// in + n (padding): "(in + n)" for a load-time size, `in` itself for n = 0.
SymInt padded_dim(const SymInt& in, int64_t n);
// in * m (TILE): "(in * m)" for a load-time size, `in` itself for m = 1.
SymInt tiled_dim(const SymInt& in, int64_t m);
// in * r and in // r (DEPTH_TO_SPACE's and SPACE_TO_DEPTH's height and
// width for block size r): "in * r", "in // r" for a load-time size.
SymInt depth_to_space_dim(const SymInt& in, int64_t r);
SymInt space_to_depth_dim(const SymInt& in, int64_t r);
// The sum of the parts' sizes along a concatenated dim: a number when every
// part's size is one, else the text "a + b + ..." (numbers and load-time
// sizes). The reference sums the numbers with load-time parts counting 0, and
// writes the text only when that sum is 0: the same where every part is
// fixed or every part load-time; for a mix its fixed size is wrong.
SymInt concat_dim(const std::vector<SymInt>& parts);
// The dims of a broadcast result whose PyTorch shape is `shape` (0 =
// flexible): a flexible dim is that dim of the first input that has it
// flexible (dims aligned from the end), a fixed one its number.
std::vector<SymInt> broadcast_dims(const Shape& shape,
                                   std::initializer_list<const OperandHandle*> inputs);
// The dims of `x` permuted: dim i of the result is dim perm[i] of `x`.
std::vector<SymInt> permuted_dims(const OperandHandle& x, const std::vector<int64_t>& perm);
// `x`'s dims as they are (flexible ones forwarded from `x`).
std::vector<SymInt> sym_shape(const OperandHandle& x);
// A record's shape for sizes `dims`: 0 for each load-time size.
Shape shape_of(const std::vector<SymInt>& dims);
// `x`'s element count: the product of its dims, "1 * a * b ..." text where
// one is load-time.
SymInt sym_numel(const OperandHandle& x);
// `shape` with its flexible dims forwarded from the same dims of `like` when
// given (a dim flexible in `shape` but not in `like` stays a plain 0).
std::vector<SymInt> dims_like(const Shape& shape, const OperandHandle* like);

}  // namespace nnapi_convert

// Helpers for lowerings that emit a short sequence of NNAPI operations:
// intermediate operands, constants, and the final binding to a JIT value.
#pragma once

#include <ATen/Tensor.h>

#include <initializer_list>
#include <vector>

#include "lower/context.h"

namespace nnapi_convert {

// An NNAPI operand together with its record.
struct Operand2 {
  int32_t id;
  Operand op;
};

// Creates the output operand: bound to `out` when given, anonymous otherwise.
// Load-time flexible dims are forwarded from `like` (same shape).
int32_t make_output(LoweringContext& cx, const Value* out, const Operand& o,
                    const Operand2* like = nullptr);

// Shape-compute lines for the flexible dims of operand `id`, a broadcast result
// of `shape`: each from the first input that has that dim flexible (dims
// aligned from the end, as in broadcasting).
void forward_broadcast_dims(LoweringContext& cx, int32_t id, const Shape& shape,
                            std::initializer_list<const Operand2*> inputs);
// A float32 constant of shape (1), broadcast by NNAPI against any tensor.
Operand2 float_scalar_tensor(LoweringContext& cx, float v);

// A float32 weight laid out like `like` (NCHW or NHWC) from a PyTorch tensor
// of `like`'s rank (e.g. a (1, C, 1, 1) per-channel vector).
Operand2 float_weight_like(LoweringContext& cx, const at::Tensor& t, const Operand& like);

// Elementwise ops on operands of the same layout; the result has a's record.
Operand2 emit_binary(LoweringContext& cx, nnapi::Op op, const Operand2& a, const Operand2& b,
                     nnapi::Fuse fuse = nnapi::Fuse::None, const Value* out = nullptr);
Operand2 emit_unary(LoweringContext& cx, nnapi::Op op, const Operand2& a,
                    const Value* out = nullptr);

// DEQUANTIZE a quant8 operand to float32, and QUANTIZE back with given params.
Operand2 emit_dequantize(LoweringContext& cx, const Operand2& a);
Operand2 emit_quantize(LoweringContext& cx, const Operand2& a, double scale, int64_t zero_point,
                       const Value* out = nullptr);

// A TRANSPOSE that lays a 4-D operand's data out in `to` (NHWC for
// ChannelsLast, NCHW for Contiguous); the PyTorch shape is unchanged. Returns
// `x` itself when it already is.
Operand2 emit_relayout(LoweringContext& cx, const Operand2& x, DimOrder to);

// RESHAPE of contiguous `x` to `dims` (constants or load-time sizes, no -1).
// Flexible output dims get shape-compute lines; NNAPI's shape operand holds -1
// for the first of them and has any others set when the model is loaded.
Operand2 emit_reshape(LoweringContext& cx, const Operand2& x, const std::vector<SymInt>& dims,
                      const Value* out = nullptr);
// TILE of `x` by `multiples` (one per PyTorch dim, in PyTorch's dim order):
// output dim d is x's dim d times multiples[d]. Flexible output dims get
// shape-compute lines.
Operand2 emit_tile(LoweringContext& cx, const Operand2& x, const std::vector<int64_t>& multiples,
                   const Value* out = nullptr);
// Splits `x` along PyTorch dim `dim` into consecutive parts of `sizes`: one
// SPLIT when the parts are equal, else a SLICE per part. Returns the parts.
std::vector<int32_t> emit_split(LoweringContext& cx, const Operand2& x, int64_t dim,
                                const std::vector<int64_t>& sizes);
// CONCATENATION of `parts` (same layout) along PyTorch dim d.
Operand2 emit_concat(LoweringContext& cx, const std::vector<Operand2>& parts, int64_t d,
                     const Value* out = nullptr);
// The dims of `x` as constants or load-time sizes.
std::vector<SymInt> sym_shape(const Operand2& x);
// Pads `x` by before[d] / after[d] elements in each PyTorch dim d with
// `value`: NNAPI PAD, which fills with the logical zero (a quantized tensor's
// zero point), or PAD_V2 for another value (quantized for QUANT8 tensors).
// Padded flexible dims get shape-compute lines.
Operand2 emit_pad(LoweringContext& cx, const Operand2& x, const std::vector<int64_t>& before,
                  const std::vector<int64_t>& after, double value, const Value* out = nullptr);
// Broadcast output shape per PyTorch's rules (trailing alignment); 0 = flexible.
Shape broadcast_shape(const Shape& a, const Shape& b);

// `count` elements of x along PyTorch dim d, from `begin` in steps of `step`
// (1 or -1): a STRIDED_SLICE taking the other dims whole.
Operand2 emit_take(LoweringContext& cx, const Operand2& x, int64_t d, int64_t begin, int64_t count,
                   int64_t step);
// TRANSPOSE of `x` (in PyTorch's element order, fixed sizes) by `perm`; `x`
// itself for the identity.
Operand2 emit_permute(LoweringContext& cx, const Operand2& x, const std::vector<int64_t>& perm);

}  // namespace nnapi_convert

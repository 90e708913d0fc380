// Helpers for lowerings that emit a short sequence of NNAPI operations:
// intermediate operands, constants, and the final binding to a JIT value.
#pragma once

#include <ATen/Tensor.h>

#include <functional>
#include <initializer_list>
#include <optional>
#include <vector>

#include "lower/context.h"
#include "lower/dims.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {

// The dtype of the tensor PyTorch's NNAPI binding hands back for an operand
// of `type` (float32, int32, quint8), or Undefined for types it has no such
// tensor for.
c10::ScalarType torch_dtype(nnapi::OperandType type);
// A `dtype` argument (softmax's, sum's, ...): None, or the dtype NNAPI
// computes `x` in (float32 for float32 data); any other is refused, since the
// converted module would return another dtype than the model.
void check_dtype_argument(LoweringContext& cx, const Value* dtype, const OperandHandle& x,
                          const char* what);
// The same for a dtype known here (aten::_cast_Float's float32, ...).
void check_dtype(c10::ScalarType wanted, const OperandHandle& x, const char* what);

// Creates the output operand: bound to `out` when given, anonymous otherwise.
// Load-time flexible dims are forwarded from `like` (same shape).
int32_t make_output(LoweringContext& cx, const Value* out, const Operand& o,
                    const OperandHandle* like = nullptr);

// A float32 constant of shape (1), broadcast by NNAPI against any tensor.
OperandHandle float_scalar_tensor(LoweringContext& cx, float v);

// A float32 weight laid out like `like` (NCHW or NHWC) from a PyTorch tensor
// of `like`'s rank (e.g. a (1, C, 1, 1) per-channel vector).
OperandHandle float_weight_like(LoweringContext& cx, const at::Tensor& t, const Operand& like);

// A quantized output's scale and zero point.
struct QuantParams {
  double scale = 0.0;
  int64_t zero_point = 0;
};

// The one binary path for operands already in the same layout: `a op b` with
// PyTorch's broadcasting (dims aligned from the end; flexible output dims get
// shape-compute lines from the input that has them). The result has the
// record of the higher-rank operand (of `a` on a tie), with `out_quant`'s
// parameters when given; a comparison (EQUAL ... LESS_EQUAL) gives a
// TENSOR_BOOL8 of that shape and layout. ADD, SUB, MUL and DIV take `fuse` (an immediate
// made after the output); other operations take none. (The reference's own
// equal-rank rules, with NHWC/NCHW reconciling and `assert` shape lines,
// are lower_binary_values in pointwise.h, which reproduces them byte for
// byte.)
OperandHandle emit_binary(LoweringContext& cx, nnapi::Op op, const OperandHandle& a,
                          const OperandHandle& b, nnapi::Fuse fuse = nnapi::Fuse::None,
                          const Value* out = nullptr,
                          std::optional<QuantParams> out_quant = std::nullopt);
// The one unary path: operation `op` on `x` with output record `rec` (x's
// shape; flexible dims forwarded from x), bound to `out` when given.
OperandHandle emit_unary_to(LoweringContext& cx, nnapi::Op op, const OperandHandle& x,
                            const Operand& rec, const Value* out = nullptr);
// An elementwise operation that keeps x's record, except where NNAPI fixes a
// quantized output's parameters (LOGISTIC: 1/256, 0; TANH: 1/128, 128) or
// `out_quant` gives them (quantized hardswish).
OperandHandle emit_unary(LoweringContext& cx, nnapi::Op op, const OperandHandle& x,
                         const Value* out = nullptr,
                         std::optional<QuantParams> out_quant = std::nullopt);

// DEQUANTIZE an operand to float32, and QUANTIZE one to quant8 with given params.
OperandHandle emit_dequantize(LoweringContext& cx, const OperandHandle& a,
                              const Value* out = nullptr);
OperandHandle emit_quantize(LoweringContext& cx, const OperandHandle& a, double scale,
                            int64_t zero_point, const Value* out = nullptr);

// A TRANSPOSE that lays a 4-D operand's data out in `to` (NHWC for
// ChannelsLast, NCHW for Contiguous); the PyTorch shape is unchanged. Returns
// `x` itself when it already is.
OperandHandle emit_relayout(LoweringContext& cx, const OperandHandle& x, DimOrder to);

// `move(ins, out)`, which emits the NNAPI operations `ops` on the tensors
// `ins` of one type. Where they are int32 and one of `ops` takes no
// TENSOR_INT32 at the target feature level (the validator's table, asked
// through LoweringContext::takes: CONCATENATION, TRANSPOSE at none, RESHAPE
// below level 6), `move` of them as float32 between CASTs instead, the result
// bound to `out`, which must hold bools (0 and 1 are exact in float32); int32
// numbers are refused, naming that operation. With lower/moves.h's driver
// (whole kinds moved as float32, asking the same question), the one place
// where bools go through float32.
OperandHandle move_int32(
    LoweringContext& cx, std::initializer_list<nnapi::Op> ops,
    const std::vector<OperandHandle>& ins, const Value* out,
    const std::function<OperandHandle(const std::vector<OperandHandle>&, const Value*)>& move);
// The refusal of `what` ("squeeze", ...) of an int32 tensor that `why`
// (which NNAPI operation takes no TENSOR_INT32) and saying what to do.
std::string int32_refusal(const std::string& what, const std::string& why);
// RESHAPE of contiguous `x` to `dims` (constants or load-time sizes, no -1).
// Flexible output dims get shape-compute lines; NNAPI's shape operand holds -1
// for the first of them and has any others set when the model is loaded.
OperandHandle emit_reshape(LoweringContext& cx, const OperandHandle& x,
                           const std::vector<SymInt>& dims, const Value* out = nullptr);
// TILE of `x` by `multiples` (one per PyTorch dim, in PyTorch's dim order):
// output dim d is x's dim d times multiples[d]. Flexible output dims get
// shape-compute lines.
OperandHandle emit_tile(LoweringContext& cx, const OperandHandle& x,
                        const std::vector<int64_t>& multiples, const Value* out = nullptr);
// The sizes of the parts torch.split makes of a dim of `n` elements: parts of
// `split_size`, the last one smaller when it does not divide `n`.
std::vector<int64_t> split_sizes(int64_t n, int64_t split_size);
// Splits `x` along PyTorch dim `dim` into consecutive parts of `sizes`: one
// SPLIT when the parts are equal, else a SLICE per part. Returns the parts.
std::vector<int32_t> emit_split(LoweringContext& cx, const OperandHandle& x, int64_t dim,
                                const std::vector<int64_t>& sizes);
// CONCATENATION of `parts` (same layout) along PyTorch dim d.
OperandHandle emit_concat(LoweringContext& cx, const std::vector<OperandHandle>& parts, int64_t d,
                          const Value* out = nullptr);
// Pads `x` by before[d] / after[d] elements in each PyTorch dim d with
// `value`: NNAPI PAD, which fills with the logical zero (a quantized tensor's
// zero point), or PAD_V2 for another value (quantized for QUANT8 tensors).
// Negative amounts crop that many elements first (emit_crop), as PyTorch's
// constant padding does. Padded flexible dims get shape-compute lines.
OperandHandle emit_pad(LoweringContext& cx, const OperandHandle& x,
                       const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                       double value, const Value* out = nullptr);
// emit_pad's operation: PAD, or PAD_V2 by `value`, of `x` with the
// TENSOR_INT32 (rank, 2) `paddings` (rows in the NNAPI operand's dim order),
// giving a result of `dims`.
OperandHandle emit_pad_operation(LoweringContext& cx, const OperandHandle& x, int32_t paddings,
                                 const std::vector<SymInt>& dims, double value,
                                 const Value* out = nullptr);
// Removes before[d] elements from the start and after[d] from the end of each
// PyTorch dim d (all >= 0): one STRIDED_SLICE (a negative end counts from the
// end, so flexible dims can be cropped too).
OperandHandle emit_crop(LoweringContext& cx, const OperandHandle& x,
                        const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                        const Value* out = nullptr);
// Broadcast output shape per PyTorch's rules (trailing alignment); 0 = flexible.
Shape broadcast_shape(const Shape& a, const Shape& b);

// A STRIDED_SLICE of an int32 (or bool) tensor, which NNAPI's STRIDED_SLICE
// does not take: SLICE or GATHER into `out_id` (arguments as
// strided_slice_roles'); refused where neither can express it.
void emit_int32_slice(LoweringContext& cx, const OperandHandle& x,
                      const std::vector<int64_t>& begins, const std::vector<int64_t>& ends,
                      const std::vector<int64_t>& strides, int32_t end_mask, int32_t out_id);
// The inputs of a STRIDED_SLICE of operand `x` by role (for add_by_roles):
// begins, ends and strides per NNAPI axis, begin mask 0, `end_mask` and
// `shrink_mask` (operands made in that order).
RoleIds strided_slice_roles(LoweringContext& cx, int32_t x, const std::vector<int64_t>& begins,
                            const std::vector<int64_t>& ends, const std::vector<int64_t>& strides,
                            int32_t end_mask, int32_t shrink_mask);
// `count` elements of x along PyTorch dim d, from `begin` in steps of `step`
// (-1, or 1 and more): a STRIDED_SLICE taking the other dims whole.
OperandHandle emit_take(LoweringContext& cx, const OperandHandle& x, int64_t d, int64_t begin,
                        int64_t count, int64_t step);
// TRANSPOSE of `x` (in PyTorch's element order, fixed sizes) by `perm`; `x`
// itself for the identity.
OperandHandle emit_permute(LoweringContext& cx, const OperandHandle& x,
                           const std::vector<int64_t>& perm);

}  // namespace nnapi_convert

// Operand signatures: for each NNAPI operation the converter emits (unit test
// OpSignature.EveryOperationTheLoweringNamesHasOne), the role of each input
// position and its arity forms (CONCATENATION's with any number of input tensors), as
// NeuralNetworks.h lists them (e.g. CONV_2D's explicit padding form: input, filter, bias, padding
// left, right, top, bottom, stride width, height, fused activation [, NCHW layout flag [, dilation
// width, height]]). This is the one place those positions are written: the emitters in src/lower
// arrange their operand lists by it, the validator's layouts and the host runtime's argument
// readers find their parameters by it, and `inspect` names each input's role
// from it. Only positions live here; each reader keeps its own checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "nnapi_convert/nnapi_types.h"

namespace nnapi {

// Implicit padding schemes (PaddingCode in NeuralNetworks.h).
constexpr int32_t kPaddingSame = 1, kPaddingValid = 2;

// What one input of an operation is.
enum class Role : uint8_t {
  Input,          // the data tensor
  Filter,         // a convolution's weights
  Bias,           // a convolution's bias
  OutputShape,    // TRANSPOSE_CONV_2D's requested output shape (TENSOR_INT32)
  PaddingScheme,  // implicit padding: a PaddingCode
  PadLeft,        // explicit padding, in elements
  PadRight,
  PadTop,
  PadBottom,
  StrideW,
  StrideH,
  DepthMultiplier,  // DEPTHWISE_CONV_2D
  Groups,           // GROUPED_CONV_2D
  FilterW,          // a pool's window
  FilterH,
  Fuse,    // FuseCode
  Layout,  // BOOL: true for NCHW
  DilationW,
  DilationH,
  OutputW,  // a resize by size (INT32)
  OutputH,
  ScaleW,  // a resize by scale (FLOAT32 or FLOAT16)
  ScaleH,
  AlignCorners,      // BOOL
  HalfPixelCenters,  // BOOL
  BlockSize,         // DEPTH_TO_SPACE, SPACE_TO_DEPTH
  Beta,              // SOFTMAX's, LRN's exponent, INSTANCE_NORMALIZATION's offset (a float)
  Axis,              // INT32
  // The operations of one fixed form.
  SecondInput,  // the second data tensor (ADD, MUL, SUB, DIV, BATCH_MATMUL)
  Weights,      // FULLY_CONNECTED's (units, input size) tensor
  Axes,         // MEAN's and REDUCE_*'s TENSOR_INT32 dimensions to reduce
  KeepDims,     // MEAN's INT32 (nonzero keeps the reduced dimensions), REDUCE_*'s BOOL
  Paddings,     // PAD, PAD_V2, SPACE_TO_BATCH_ND: TENSOR_INT32 of (before, after) pairs
  PadValue,     // PAD_V2's scalar of the input's element type
  AdjX,         // BATCH_MATMUL's BOOL: transpose the first input's last two dimensions
  AdjY,         // ... the second input's
  Radius,       // LOCAL_RESPONSE_NORMALIZATION's INT32 window radius
  LrnBias,      // LOCAL_RESPONSE_NORMALIZATION's scalar bias (k)
  Alpha,        // LOCAL_RESPONSE_NORMALIZATION's scale factor
  Gamma,        // INSTANCE_NORMALIZATION's scale factor
  Epsilon,      // INSTANCE_NORMALIZATION's epsilon
  BlockShape,   // BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND: TENSOR_INT32 block sizes
  Shape,        // RESHAPE's TENSOR_INT32 output shape
  Perm,         // TRANSPOSE's TENSOR_INT32 permutation
  Indices,      // GATHER's TENSOR_INT32 indices
  // Slicing, tiling and splitting.
  Begin,      // SLICE's, STRIDED_SLICE's TENSOR_INT32 starts, one per dim
  Size,       // SLICE's TENSOR_INT32 sizes (-1: the rest of the dim)
  End,        // STRIDED_SLICE's TENSOR_INT32 ends
  Strides,    // STRIDED_SLICE's TENSOR_INT32 strides
  BeginMask,  // STRIDED_SLICE's INT32 bit masks
  EndMask,
  ShrinkAxisMask,
  NumSplits,  // SPLIT's INT32 number of outputs
  Multiples,  // TILE's TENSOR_INT32 repeats, one per dim
  // The elementwise operations, selection, top-k, channel shuffle.
  Mask,         // SELECT's TENSOR_BOOL8 condition
  IfTrue,       // SELECT's tensor taken where the mask is true
  IfFalse,      // ... where it is false
  AlphaTensor,  // PRELU's alpha, a tensor broadcast to the input's shape
  K,            // TOPK_V2's INT32 number of top elements
};

// "padding left", "NCHW layout flag", ...: for messages and `inspect`.
const char* role_name(Role r);

// One arity form: every input position's role, the optional trailing ones
// included, and the input counts the form may have (each a prefix of roles).
// A variadic form (CONCATENATION's "0 ~ n-1: The list of n input tensors
// ... n: ... the concatenation axis") repeats its first role: an operation
// of n inputs has n - (roles.size() - 1) of it, then the other roles; its
// counts hold its fewest inputs, and any more are allowed. A variadic form
// is its signature's only form.
struct Form {
  static constexpr size_t npos = static_cast<size_t>(-1);
  const char* name;  // "explicit padding", "implicit padding", "by size", "by scale"
  std::vector<Role> roles;
  std::vector<size_t> counts;
  bool variadic = false;

  // The position of role `r`, or npos when the form has none. (It may lie
  // past the inputs an operation has, for an optional trailing role.) Of a
  // variadic form, npos for the roles after the repeated one, whose position
  // depends on the input count: ask at(r, n).
  size_t at(Role r) const;
  // The position of role `r` in an operation of `n` inputs (the first one,
  // for a variadic form's repeated role); npos when the form has none.
  size_t at(Role r, size_t n) const;
  // The role of input `i` of an operation of `n` inputs (i < n, allows(n)).
  Role role_at(size_t i, size_t n) const;
  // Whether an operation of the form may have `n` inputs.
  bool allows(size_t n) const;
  bool has(Role r) const { return at(r) != npos; }
  // Whether the form may leave role `r` out (it lies past its fewest inputs).
  bool optional(Role r) const { return at(r) >= counts.front(); }
};

struct Signature {
  Op op;
  std::vector<Form> forms;
  // Every input count some form allows, ascending (a variadic form's
  // fewest: it allows any more).
  std::vector<size_t> counts() const;
};

// The signature of `op`; nullptr for an operation the table does not hold.
const Signature* signature(Op op);
const Signature* signature_of_code(int32_t code);

// The form of an operation with `n` inputs whose input i has type type_at(i)
// (called for i < n only). Among the forms that allow n inputs, the one whose
// role at the first position where they differ in kind (INT32, BOOL, FLOAT,
// tensor) matches the operand there, else the first of them: CONV_2D with 10
// inputs is the explicit form when input 7 is INT32, the implicit one (with
// layout flag and dilation) when it is BOOL. nullptr when no form allows n.
const Form* form_of(const Signature& s, size_t n,
                    const std::function<OperandType(size_t)>& type_at);

// An emitter's operand list in the table's order: `given` holds the
// operand id of each role it writes (in any order); the result is the ids in
// the positions of the form and count those roles make up, or empty when no
// form of `op` has exactly them (an internal error of the emitter).
std::vector<int32_t> arrange_inputs(Op op, const std::vector<std::pair<Role, int32_t>>& given);

}  // namespace nnapi

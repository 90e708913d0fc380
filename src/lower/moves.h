// The node kinds that only move elements (views, slices, reorderings, joins,
// copies): each says so in its spec (KindSpec::moves, registry.h), read by
// the dispatch around each node's lowering (a bool or int64 value keeps its
// PyTorch dtype through them; bools are moved in types NNAPI's operations
// take) and by the lowerings that move bools through float32 themselves
// (emit.cpp's RESHAPE and CONCATENATION, ...).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "lower/context.h"

namespace nnapi_convert {

// How a node of some kind takes its elements.
enum class Moves {
  None,       // it computes new values
  First,      // from its first input (view, slice, permute, ...)
  Parts,      // from the tensors of the list it joins (cat, stack)
  SplitPart,  // a prim::ListUnpack: from the input of the split whose list it unpacks
  Split,      // a split, chunk or unbind: from its first input, into a list
};

// A kind's entry: how it moves; the NNAPI operation its lowering applies to
// int32 data itself (none where the lowering moves bools through float32
// itself, or its operations take TENSOR_INT32 wherever they exist): where the
// validator's table says that operation takes no TENSOR_INT32 at the target
// feature level, bools go through the lowering as float32; whether its
// lowering makes channels-last data contiguous first (a TRANSPOSE, asked
// likewise).
struct MoveEntry {
  Moves how;
  std::optional<nnapi::Op> int32_op;
  bool relayouts;
};

// The entry of `kind`'s spec (Moves::None for a kind that computes).
Moves moves_of(c10::Symbol kind);

// The values `node` takes its elements from: its first input, the parts of
// a cat or stack (when known), the input of the split a ListUnpack unpacks;
// empty for a node that computes new values.
std::vector<const Value*> moved_inputs(const LoweringContext& cx, const Node* node);

// Whether `node` only moves elements and every value it moves them from is a
// bool (is_bool_value: so typed, a TENSOR_BOOL8 operand or a recorded bool).
bool moves_bools(const LoweringContext& cx, const Node* node);

// Lowers `node` by `lower` (its spec's handler), for the kinds with an
// `entry` (none: `lower` alone):
// - each TENSOR_BOOL8 value it moves from is held from then on as int32 0/1
//   (SELECT, feature level 3), recorded bool: no NNAPI operation that moves
//   data (RESHAPE, SQUEEZE, EXPAND_DIMS, SLICE, STRIDED_SLICE, GATHER, TILE,
//   TRANSPOSE, CONCATENATION, SPLIT, ...) takes TENSOR_BOOL8 at any feature
//   level, nor does CAST (the validator's type lists, validate/ops_shape.cpp
//   and ops_elementwise.cpp);
// - int32 0/1 bools go through `lower` as float32 (a CAST before, a CAST of
//   each result back to int32 after; 0 and 1 are exact) where the
//   operation that kind's lowering emits takes no TENSOR_INT32 at the target
//   feature level, as the validator's table says (LoweringContext::takes:
//   SQUEEZE and STRIDED_SLICE at none, RESHAPE below level 6);
// - a bool (or int64) held as int32 keeps its PyTorch dtype in the results,
//   so that the converted module returns it as the model does; a cat or stack
//   of parts of other dtypes (bool with int) is promoted.
void lower_moving_node(LoweringContext& cx, const Node* node, const MoveEntry* entry,
                       const std::function<void(LoweringContext&, const Node*)>& lower);

}  // namespace nnapi_convert

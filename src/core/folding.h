// Constant folding: node kinds that run during conversion when their inputs
// are constant (shape arithmetic of traced models; masks and index tables a
// model builds from its fixed sizes), and the folder that runs them in graph
// order.
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <set>
#include <vector>

#include "lower/context.h"
#include "lower/kind_set.h"

namespace nnapi_convert {

// Scalar and shape arithmetic (x.size(0) // 2, ...).
const KindSet& foldable_kinds();
// Tensor operations folded when all their inputs are constant.
const KindSet& tensor_foldable_kinds();
// Whether constant folding takes nodes of `kind` (when their inputs are constant).
bool is_foldable(c10::Symbol kind);
// Whether the lowering table or constant folding takes nodes of `kind`.
bool handled_kind(c10::Symbol kind);
// What makes a node of a kind the table lowers unsupported with its
// arguments ("3-D" for a Conv3d's aten::_convolution; see SupportFn), or "".
std::string unsupported_node_reason(const torch::jit::Node* node);
// handled_kind, and no support check refuses the node.
bool handled_node(const torch::jit::Node* node);

// Runs nodes on their constant inputs, in graph order, so in-place writes
// into folded tensors (`mask[a:b, c:d] = k` is a slice and a fill_ of that
// view) happen where eager PyTorch does them. A write is folded only into
// storage that folding made (zeros, new_zeros, a computed result, ...: not a
// weight of the model) and that no NNAPI operation has read.
class Folder {
 public:
  // Runs `node` on its constant inputs and records its outputs as constants.
  // Returns false when the node is not foldable or an input is not constant.
  bool try_fold(LoweringContext& cx, const torch::jit::Node* node);
  // Zero-sized pieces: a node that reads a constant zero-sized tensor, or a
  // slice, whose every result PyTorch computes as zero-sized (Emformer's
  // right context of length 0, a clamp of it, ...) gets those empty tensors
  // as constants and no NNAPI operation (NNAPI has no zero-sized operands; a
  // zero-sized input is an omitted one). Found by running the node on its
  // constants and, for its computed inputs, uninitialized tensors of their
  // (fixed) shapes. Returns false when it does not apply (a flexible size,
  // a result with elements, a node PyTorch refuses these inputs for).
  bool try_empty(LoweringContext& cx, const torch::jit::Node* node);
  // `node` is lowered to NNAPI: constant tensors it reads become weights.
  void note_lowered(const LoweringContext& cx, const torch::jit::Node* node);

 private:
  std::set<const c10::StorageImpl*> made_;
  // Storages NNAPI operations read as constants (a weight per operation, so
  // appended as read; looked up only by an in-place write).
  std::vector<const c10::StorageImpl*> read_;
};

}  // namespace nnapi_convert

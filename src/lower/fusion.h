// Look-ahead decisions that take nodes out of the driver's loop, kept in one
// place instead of inside lowerings:
// - node groups (NodeGroup, registry.h), found before lowering by the
//   table's matchers: the driver skips a group's nodes and lowers the group
//   at its last node;
// - activations folded into their input's producer (--fuse-activations):
//   only the producer's lowering knows whether its operation takes a fused
//   activation (ADD, MUL, convolutions, FULLY_CONNECTED do; pooling does
//   not), so it decides, through LoweringContext::fuse_following_activation,
//   and the decision is recorded here; the driver then aliases the
//   activation's output to its input.
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <unordered_map>
#include <unordered_set>

#include "lower/registry.h"

namespace nnapi_convert {

class FusionPlan {
 public:
  // Groups in graph order; a node belongs to one group at most (the first
  // that matches claims it).
  FusionPlan(const torch::jit::Graph& graph, const LoweringTable& table, bool fuse_activations);

  // A node lowered as part of a group that ends later: the driver skips it.
  bool claimed(const Node* n) const { return claimed_.count(n) != 0; }
  // The group whose last node is `n`, lowered there instead of `n` alone.
  const NodeGroup* group_ending_at(const Node* n) const;

  bool fuse_activations() const { return fuse_activations_; }
  // `activation` is computed by its input's producer (a fused activation).
  void fold_activation(const Node* activation) { folded_.insert(activation); }
  bool folded_activation(const Node* n) const { return folded_.count(n) != 0; }

 private:
  std::unordered_set<const Node*> claimed_;
  std::unordered_map<const Node*, NodeGroup> groups_;  // by last node
  std::unordered_set<const Node*> folded_;
  bool fuse_activations_;
};

}  // namespace nnapi_convert

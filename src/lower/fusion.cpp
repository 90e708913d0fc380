#include "lower/fusion.h"

#include <algorithm>

namespace nnapi_convert {

FusionPlan::FusionPlan(const torch::jit::Graph& graph, const LoweringTable& table,
                       bool fuse_activations)
    : fuse_activations_(fuse_activations) {
  for (const Node* node : graph.nodes()) {
    if (claimed_.count(node) || groups_.count(node)) continue;
    for (const GroupMatcher& match : table.group_matchers(node->kind())) {
      std::optional<NodeGroup> group = match(node);
      if (!group) continue;
      const auto& nodes = group->nodes;
      bool free = std::none_of(nodes.begin(), nodes.end(), [&](const Node* n) {
        return claimed_.count(n) != 0 || groups_.count(n) != 0;
      });
      if (!free) continue;
      claimed_.insert(nodes.begin(), nodes.end() - 1);
      groups_.emplace(nodes.back(), std::move(*group));
      break;
    }
  }
}

const NodeGroup* FusionPlan::group_ending_at(const Node* n) const {
  auto it = groups_.find(n);
  return it == groups_.end() ? nullptr : &it->second;
}

}  // namespace nnapi_convert

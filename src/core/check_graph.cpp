// check --dot's picture of a model (check_graph.h).
#include "core/check_graph.h"

#include <algorithm>
#include <map>

#include "core/diagnostics.h"
#include "core/folding.h"
#include "lower/registry.h"

namespace nnapi_convert {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// What a node the lowering failed at reads in the error: the message without
// "model '...': node ... (`...`): ", which the picture shows by itself.
std::string failure_reason(const Node* node, const std::string& error) {
  const std::string head = describe_node(node) + ": ";
  const size_t at = error.find(head);
  return at == std::string::npos ? error : error.substr(at + head.size());
}

}  // namespace

CheckGraph check_graph(const torch::jit::Graph& graph, const LoweringTrace& trace, bool converts,
                       const std::string& error) {
  CheckGraph g;
  std::map<const Node*, std::string> id;  // drawn node -> "n<k>"
  std::map<const Value*, std::string> input_id;
  const auto inputs = graph.inputs();
  for (size_t i = 1; i < inputs.size(); ++i) {  // input 0 is the module itself
    input_id[inputs[i]] = "in" + std::to_string(i - 1);
    g.inputs.push_back(inputs[i]->debugName());
  }
  auto source = [&](const Value* v) -> std::string {
    auto in = input_id.find(v);
    if (in != input_id.end()) return in->second;
    auto n = id.find(v->node());
    return n == id.end() ? "" : n->second;
  };
  std::map<const Node*, int64_t> operations;
  if (converts) {
    for (const Node* n : trace.operations) ++operations[n];
  }
  const Node* failed = converts ? nullptr : trace.failed;
  const std::vector<LoweringTrace::Placement>& placements = trace.placements;
  std::map<const Node*, const LoweringTrace::Placement*> placed;
  for (const LoweringTrace::Placement& p : placements) {
    placed[p.node] = &p;
    g.parts = std::max(g.parts, p.part + 1);
  }
  bool readable = true;  // the model's debug records (node places)
  for (const Node* node : graph.nodes()) {
    if (node->kind() == c10::prim::Constant) continue;
    CheckNode n;
    n.kind = node->kind().toQualString();
    if (readable) n.location = place_or_empty(node, &readable);
    n.text = node_text(node);
    const std::string why = unsupported_node_reason(node);
    if (!placements.empty()) {
      // --cpu-fallback split the model: the nodes not placed are computed
      // during conversion (in each part that reads them).
      auto p = placed.find(node);
      n.verdict = p == placed.end()      ? CheckNode::Verdict::Folded
                  : p->second->part >= 0 ? CheckNode::Verdict::Nnapi
                                         : CheckNode::Verdict::TorchScript;
      if (p != placed.end()) {
        n.part = p->second->part;
        n.reason = p->second->why;
      }
    } else if (!why.empty() || !handled_kind(node->kind())) {
      n.verdict = CheckNode::Verdict::Unsupported;
      n.reason = why.empty() ? "nnapi-convert has no lowering of " + n.kind : why;
    } else if (node == failed) {
      n.verdict = CheckNode::Verdict::Unsupported;
      n.reason = failure_reason(node, error);
    } else if (converts) {
      n.operations = operations[node];
      n.verdict = n.operations > 0 ? CheckNode::Verdict::Nnapi : CheckNode::Verdict::Folded;
    } else {
      // The model does not convert: what its kind does.
      n.verdict = lowering_table().lowers(node->kind()) ? CheckNode::Verdict::Nnapi
                                                        : CheckNode::Verdict::Folded;
    }
    for (const Value* v : node->inputs()) {
      const std::string from = source(v);
      if (!from.empty()) n.from.push_back(from);
    }
    id[node] = "n" + std::to_string(g.nodes.size());
    g.nodes.push_back(std::move(n));
  }
  for (const Value* v : graph.outputs()) g.outputs.push_back(source(v));
  g.return_fails = failed != nullptr && failed == graph.return_node();
  return g;
}

}  // namespace nnapi_convert

// The value of a prim::Constant as torch::jit::toIValue gives it, a tensor
// read off the node's attribute directly: toIValue tests the value's type
// against each constant type in turn, which for a weight costs more than the
// rest of lowering a constant.
#pragma once

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/operator.h>

namespace nnapi_convert {

inline c10::optional<c10::IValue> constant_value(const torch::jit::Value* v) {
  const torch::jit::Node* n = v->node();
  if (n->kind() == c10::prim::Constant && v->type()->kind() == c10::TypeKind::TensorType &&
      n->hasAttribute(c10::attr::value) &&
      n->kindOf(c10::attr::value) == torch::jit::AttributeKind::t) {
    return c10::IValue(n->t(c10::attr::value));
  }
  return torch::jit::toIValue(v);
}

// Runs `node`'s operator on its inputs in `stack`, leaving its outputs there
// (constant folding). A vararg operator (aten::format) takes its input count
// on top of the inputs, as TorchScript's interpreter pushes it.
inline void run_operator(const torch::jit::Node* node, torch::jit::Stack& stack) {
  if (node->maybeSchema() && node->schema().is_vararg()) {
    stack.emplace_back(static_cast<int64_t>(node->inputs().size()));
  }
  node->getOperation()(stack);
}

}  // namespace nnapi_convert

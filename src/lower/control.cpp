// Control flow decided during conversion: scripted models check their input
// (`assert x.dim() == 4`, torchvision's `_assert`) and branch on sizes
// (`if x.size(1) == 3:`, F.adaptive_avg_pool2d's argument handling). With
// the sizes fixed (or the rank, for dim()), the condition is a constant here:
// the branch taken is lowered in place of the prim::If and the other is
// dropped, as NNAPI has no control flow below feature level 4 (IF, WHILE).
// A raise in the branch taken is the model refusing these input sizes.
#include "lower/registry.h"

namespace nnapi_convert {
namespace {

// The If's outputs are the taken block's: constants, load-time ints, tensors
// or sequences of them.
void bind_outputs(LoweringContext& cx, const Node* node, const torch::jit::Block* block) {
  for (size_t i = 0; i < node->outputs().size(); ++i) {
    const Value* in = block->outputs()[i];
    check(cx.forward_value(node->output(i), in), [&] {
      return "output " + std::to_string(i) + " of the branch taken (" + value_name(in) +
             ") has no value during conversion";
    });
  }
}

// prim::RaiseException(message, class name) in the branch taken (or outside
// any branch): the model refuses these input sizes. The message is a constant,
// or folded from its f-string (aten::format) before.
[[noreturn]] void fail_raise(LoweringContext& cx, const Node* node) {
  std::string message;
  if (node->inputs().size() > 0 && cx.has_constant(node->input(0)) &&
      cx.constant(node->input(0)).value.isString()) {
    message = cx.constant(node->input(0)).value.toStringRef();
  }
  fail("the model raises an exception for these input sizes" +
       (message.empty() ? std::string() : " (\"" + message + "\")") +
       "; check the --input spec against what the model expects");
}

void lower_if(LoweringContext& cx, const Node* node) {
  const Value* cond = node->input(0);
  check(cx.has_constant(cond), [&] {
    return "this `if` depends on values known only when the model runs (" + value_name(cond) +
           "); nnapi-convert takes a branch only when its condition is known during conversion "
           "(from fixed sizes, ranks or dtypes). Compute the condition from sizes given in "
           "--input, or move the branch out of the model";
  });
  const torch::jit::Block* taken = node->blocks()[cx.constant_bool(cond) ? 0 : 1];
  for (const Node* n : taken->nodes()) cx.lower_nested(n);
  bind_outputs(cx, node, taken);
}

}  // namespace

void register_control_ops(LoweringTable& t) {
  t.add("prim::If", lower_if)
      .with_note(
          "only when its condition is known during conversion (fixed sizes, ranks, dtypes): the "
          "branch taken is lowered in its place; the other is dropped unlowered, whatever it "
          "holds (prim::RaiseException, aten::format); a raise in the branch taken refuses, "
          "quoting the model's message");
  t.add("prim::RaiseException", fail_raise)
      .with_note(
          "a raise the conversion reaches (in the branch taken) refuses the conversion, quoting "
          "the model's message; in a branch not taken it is dropped, see prim::If");
}

}  // namespace nnapi_convert

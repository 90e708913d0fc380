// Graph plumbing: constants, module attributes, lists and tuples, and the
// Optional and list handling of scripted models (`is None`, unchecked_cast,
// list(...)).
#include <torch/csrc/jit/ir/constants.h>

#include "lower/constant_value.h"
#include "lower/registry.h"

namespace nnapi_convert {
namespace {

void lower_getattr(LoweringContext& cx, const Node* node) {
  const Constant& obj = cx.constant(node->input(0));
  check(obj.value.isObject() && obj.type->str().rfind("__torch__.", 0) == 0,
        "prim::GetAttr reads an attribute of something that is not a module");
  const std::string& name = node->s(c10::attr::name);
  c10::IValue value = obj.value.toObject()->getAttr(name);
  cx.add_constant(node->output(), node->output()->type(), std::move(value));
}

void lower_constant(LoweringContext& cx, const Node* node) {
  check(node->inputs().empty() && node->outputs().size() == 1, "malformed prim::Constant");
  auto value = constant_value(node->output());
  check(value.has_value(), "prim::Constant without a value");
  cx.add_constant(node->output(), node->output()->type(), *value);
}

void lower_list_construct(LoweringContext& cx, const Node* node) {
  const Value* out = node->output();
  bool all_constant = true;
  bool all_tensors = true;
  std::vector<const Value*> tensors;
  for (const Value* in : node->inputs()) {
    all_constant = all_constant && cx.has_constant(in);
    all_tensors = all_tensors && in->type()->kind() == c10::TypeKind::TensorType;
    tensors.push_back(in);
  }
  if (all_constant) {
    auto list_type = out->type()->expect<c10::ListType>();
    c10::impl::GenericList list(list_type->getElementType());
    for (const Value* in : node->inputs()) list.push_back(cx.constant(in).value);
    cx.add_constant(out, out->type(), c10::IValue(std::move(list)));
  }
  if (all_tensors) cx.add_sequence(out, std::move(tensors));
  check(all_constant || all_tensors,
        "a list whose items are neither all constants nor all tensors can't be converted");
}

void lower_tuple_construct(LoweringContext& cx, const Node* node) {
  std::vector<const Value*> values(node->inputs().begin(), node->inputs().end());
  cx.add_sequence(node->output(), std::move(values));
}

// `x is None`, `x is not None` (aten::__is__, __isnot__) on a value the
// model computes (a tensor, a list of them, load-time ints), which is never
// None: Optional values that are None are constants (freezing, or an omitted
// input), and two constants are folded (core/folding.cpp).
void lower_is(LoweringContext& cx, const Node* node) {
  const Value* computed = nullptr;
  const Value* other = nullptr;
  for (size_t i = 0; i < 2; ++i) {
    if (cx.has_constant(node->input(i))) {
      other = node->input(i);
    } else {
      computed = node->input(i);
    }
  }
  check(computed && other && cx.constant(other).value.isNone(), [&] {
    return std::string(node->kind().toQualString()) +
           " compares two values the model computes; nnapi-convert decides `is` during "
           "conversion only against None or between constants";
  });
  const bool is_not = node->kind() == c10::aten::__isnot__;
  cx.add_constant(node->output(), node->output()->type(), c10::IValue(is_not));
}

// prim::unchecked_cast (an Optional refined by `if x is not None:`),
// prim::data (x.data) and aten::list (list(x.shape), a copy) of a value the
// model computes: the same value (a constant list is copied by constant
// folding).
void lower_same_value(LoweringContext& cx, const Node* node) {
  check(cx.forward_value(node->output(), node->input(0)), [&] {
    return "its input " + value_name(node->input(0)) + " has no value during conversion";
  });
}

}  // namespace

void register_graph_ops(LoweringTable& t) {
  t.add("prim::GetAttr", lower_getattr);
  t.add("prim::Constant", lower_constant);
  // A list or tuple of tensors of rank > 4 holds them as they are.
  t.add("prim::ListConstruct", lower_list_construct).with_reads_above_rank_4();
  t.add("prim::TupleConstruct", lower_tuple_construct).with_reads_above_rank_4();
  for (const char* kind : {"aten::__is__", "aten::__isnot__"}) {
    t.add(kind, lower_is)
        .with_note(
            "folded: a value the model computes is never None; two constants are compared "
            "during conversion");
  }
  t.add("prim::unchecked_cast", lower_same_value)
      .with_note("folded: the value itself (an Optional refined by a check)");
  t.add("aten::list", lower_same_value)
      .with_note(
          "folded: a copy of a constant list, or of a size list with flexible sizes (carried "
          "into the shape-compute script), or of a tensor list");
  t.add("prim::data", lower_same_value)
      .with_note("x.data: the identity (lowered as the tensor itself, folded on a constant)");
}

}  // namespace nnapi_convert

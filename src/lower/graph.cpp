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

// prim::TupleIndex (constant index) and prim::TupleUnpack of a tuple of
// computed values (constant tuples fold): its items. A tuple flowing out of
// an `if` (nn.LSTM's `hx`, batched or not) is one LowerSimpleTuples leaves.
void lower_tuple_items(LoweringContext& cx, const Node* node) {
  check(cx.has_sequence(node->input(0)), [&] {
    return "its tuple " + value_name(node->input(0)) + " has no value during conversion";
  });
  const std::vector<const Value*> items = cx.sequence(node->input(0));
  if (node->kind() == c10::prim::TupleUnpack) {
    check(items.size() == node->outputs().size(), "TupleUnpack of a tuple of the wrong length");
    for (size_t i = 0; i < items.size(); ++i) {
      check(cx.forward_value(node->output(i), items[i]), "a tuple item has no value");
    }
    return;
  }
  check(cx.has_constant(node->input(1)), "prim::TupleIndex at an index the model computes");
  const int64_t n = static_cast<int64_t>(items.size());
  int64_t i = cx.constant(node->input(1)).value.toInt();
  i = i < 0 ? i + n : i;
  check(i >= 0 && i < n, "prim::TupleIndex out of range");
  check(cx.forward_value(node->output(), items[static_cast<size_t>(i)]),
        "a tuple item has no value");
}

// aten::_set_item(list, index, size) on a list of sizes the model made
// (`shape = list(x.shape); shape[1] = -1; x.view(shape)`), at a constant
// index: the list changes in place, so later reads of it (and the node's
// output, the same list) see the new item. A list of fixed sizes is a
// constant (a fresh one: aten::list and aten::size fold to copies) and
// changes in place; a list with load-time sizes is rebound to its new items.
void lower_set_item(LoweringContext& cx, const Node* node) {
  const Value* list = node->input(0);
  const auto type = list->type()->cast<c10::ListType>();
  check(type && type->getElementType()->kind() == c10::TypeKind::IntType,
        "aten::_set_item of a list that is not a list of ints: nnapi-convert changes lists of "
        "sizes only (lists of tensors are built without writes into them)");
  check(cx.has_constant(node->input(1)),
        "aten::_set_item at an index the model computes at run time");
  std::vector<SymInt> items = cx.sym_int_list(list);
  const auto n = static_cast<int64_t>(items.size());
  int64_t i = cx.constant_int(node->input(1));
  check(i >= -n && i < n, [&] {
    return "aten::_set_item at index " + std::to_string(i) + " of a list of " + std::to_string(n) +
           " sizes";
  });
  i = i < 0 ? i + n : i;
  items[static_cast<size_t>(i)] = cx.sym_int(node->input(2));
  if (!cx.has_constant(list)) {
    cx.add_symbolic(list, items);
    cx.add_symbolic(node->output(), items);
    return;
  }
  const c10::Symbol made = list->node()->kind();
  check(made == c10::aten::list || made == c10::aten::size || made == c10::prim::ListConstruct,
        [&] {
          return "aten::_set_item into a list made by " + std::string(made.toQualString()) +
                 "; nnapi-convert changes lists of sizes made by list(...), .size() or [...] "
                 "only";
        });
  check(items[static_cast<size_t>(i)].is_constant(),
        "aten::_set_item writes a size known only when the model is loaded into a list of fixed "
        "sizes; give that input dimension a fixed size in --input, or build the list from "
        "x.size() with the flexible dimension");
  c10::List<int64_t> shared = cx.constant(list).value.toIntList();  // the constant's own storage
  shared.set(static_cast<size_t>(i), items[static_cast<size_t>(i)].value);
  cx.add_constant(node->output(), node->output()->type(), c10::IValue(shared));
}

}  // namespace

void register_graph_ops(LoweringTable& t) {
  t.add("aten::_set_item", lower_set_item)
      .with_note(
          "on a list of sizes made by list(x.shape), x.size() or [...], at a constant index: "
          "folded (fixed sizes) or a shape-compute expression (flexible ones); later reads of "
          "the list see the new size");
  t.add("prim::TupleIndex", lower_tuple_items);
  t.add("prim::TupleUnpack", lower_tuple_items);
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

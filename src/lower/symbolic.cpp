// Shape arithmetic over flexible sizes. With fixed sizes, traced models'
// arithmetic (x.size(0) // 2, ...) folds to constants (core/converter.cpp);
// when a size comes from a flexible dim, aten::size gives a load-time int
// (SymInt), and the nodes here carry it on as an expression of the
// shape-compute script, which view and reshape then consume.
#include "lower/registry.h"

namespace nnapi_convert {
namespace {

c10::Symbol sym(const char* name) { return c10::Symbol::fromQualString(name); }

bool any_symbolic(const LoweringContext& cx, const Node* node) {
  for (const Value* in : node->inputs()) {
    if (cx.has_symbolic(in)) return true;
  }
  return false;
}

}  // namespace

bool lower_symbolic_arithmetic(LoweringContext& cx, const Node* node) {
  if (!any_symbolic(cx, node)) return false;
  const c10::Symbol kind = node->kind();
  const Value* out = node->outputs().size() == 1 ? node->output() : nullptr;
  if (kind == sym("prim::NumToTensor") || kind == sym("aten::Int") ||
      kind == sym("aten::ScalarImplicit")) {
    cx.add_symbolic(out, {cx.sym_int(node->input(0))});
    return true;
  }
  if (kind == sym("aten::floor_divide") || kind == sym("aten::floordiv") ||
      kind == sym("aten::div")) {
    if (kind == sym("aten::div")) {
      // Sizes are positive, so "trunc" and "floor" agree.
      check(node->inputs().size() == 3 && cx.has_constant(node->input(2)) &&
                cx.constant(node->input(2)).value.isString(),
            "true division of a flexible size gives a float; use // for shape arithmetic");
    }
    cx.add_symbolic(out, {sym_arith(cx.sym_int(node->input(0)), '/', cx.sym_int(node->input(1)))});
    return true;
  }
  if (kind == sym("aten::mul")) {
    cx.add_symbolic(out, {sym_arith(cx.sym_int(node->input(0)), '*', cx.sym_int(node->input(1)))});
    return true;
  }
  if (kind == sym("aten::add") || kind == sym("aten::sub")) {
    if (node->inputs().size() == 3) {
      check(cx.sym_int(node->input(2)).value == 1 && cx.sym_int(node->input(2)).is_constant(),
            "add/sub with alpha in shape arithmetic is not supported");
    }
    cx.add_symbolic(out,
                    {sym_arith(cx.sym_int(node->input(0)), kind == sym("aten::add") ? '+' : '-',
                               cx.sym_int(node->input(1)))});
    return true;
  }
  if (kind == sym("prim::ListConstruct")) {
    std::vector<SymInt> items;
    for (const Value* in : node->inputs()) items.push_back(cx.sym_int(in));
    cx.add_symbolic(out, std::move(items));
    return true;
  }
  if (kind == sym("prim::ListUnpack")) {
    std::vector<SymInt> items = cx.sym_int_list(node->input(0));
    check(items.size() == node->outputs().size(), "ListUnpack of a list of the wrong length");
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].is_constant()) {
        cx.add_constant(node->output(i), node->output(i)->type(), c10::IValue(items[i].value));
      } else {
        cx.add_symbolic(node->output(i), {items[i]});
      }
    }
    return true;
  }
  // Consumers (view, reshape) read symbolic inputs themselves.
  return false;
}

}  // namespace nnapi_convert

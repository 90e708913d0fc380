// Shape arithmetic over flexible sizes. With fixed sizes, traced models'
// arithmetic (x.size(0) // 2, ...) folds to constants (core/converter.cpp);
// when a size comes from a flexible dim, aten::size gives a load-time int
// (SymInt), and the nodes here carry it on as an expression of the
// shape-compute script, which view and reshape then consume.
#include <algorithm>
#include <string>

#include "lower/constant_value.h"
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
  if (kind == sym("aten::add") && node->input(0)->type()->kind() == c10::TypeKind::ListType) {
    // [1] * (3 - x.dim()) + list(x.size()): torch.stft's (center=True) view
    // to 3-D, a list joined to a size list.
    std::vector<SymInt> items = cx.sym_int_list(node->input(0));
    const std::vector<SymInt> more = cx.sym_int_list(node->input(1));
    items.insert(items.end(), more.begin(), more.end());
    cx.add_symbolic(out, std::move(items));
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
    for (size_t i = 0; i < items.size(); ++i) cx.add_int(node->output(i), items[i]);
    return true;
  }
  // x.shape[i], x.shape[a:b] and len(x.shape) over a size list with load-time
  // items: the list's length is fixed, so the indices are plain numbers.
  if (kind == sym("aten::__getitem__") && cx.has_symbolic(node->input(0))) {
    const std::vector<SymInt> items = cx.sym_int_list(node->input(0));
    const auto n = static_cast<int64_t>(items.size());
    int64_t i = cx.constant_int(node->input(1));
    check(i >= -n && i < n,
          "index " + std::to_string(i) + " of a size list of length " + std::to_string(n));
    cx.add_int(out, items[static_cast<size_t>(i < 0 ? i + n : i)]);
    return true;
  }
  if (kind == sym("aten::len") && cx.has_symbolic(node->input(0))) {
    const auto n = static_cast<int64_t>(cx.sym_int_list(node->input(0)).size());
    cx.add_constant(out, out->type(), c10::IValue(n));
    return true;
  }
  if (kind == sym("aten::slice") && node->inputs().size() == 4 &&
      node->input(0)->type()->kind() == c10::TypeKind::ListType &&
      cx.has_symbolic(node->input(0))) {
    const std::vector<SymInt> items = cx.sym_int_list(node->input(0));
    const auto n = static_cast<int64_t>(items.size());
    const auto bound = [&](const Value* v, int64_t none) {
      if (cx.has_constant(v) && cx.constant(v).value.isNone()) return none;
      const int64_t b = cx.constant_int(v);
      return std::clamp(b < 0 ? b + n : b, int64_t{0}, n);
    };
    const int64_t start = bound(node->input(1), 0), end = bound(node->input(2), n);
    const int64_t step = cx.constant_int(node->input(3));
    check(step > 0, "a slice of a size list needs a positive step");
    std::vector<SymInt> picked;
    for (int64_t k = start; k < end; k += step) picked.push_back(items[static_cast<size_t>(k)]);
    cx.add_symbolic(out, std::move(picked));
    return true;
  }
  if (kind == sym("aten::format")) {
    // An f-string of a flexible size (torch._assert formats its message
    // before the check): only a message, of a raise the conversion decides,
    // so each load-time size is shown as "?".
    torch::jit::Stack stack;
    for (const Value* in : node->inputs()) {
      if (cx.has_constant(in)) {
        stack.push_back(cx.constant(in).value);
        continue;
      }
      check(cx.has_symbolic(in), "an f-string of a value known only when the model runs");
      std::string text;
      for (const SymInt& item : cx.sym_int_list(in)) {
        text += (text.empty() ? "" : ", ") +
                (item.is_constant() ? std::to_string(item.value) : std::string("?"));
      }
      const bool list = in->type()->kind() == c10::TypeKind::ListType;
      stack.emplace_back(list ? "[" + text + "]" : text);
    }
    run_operator(node, stack);
    cx.add_constant(out, out->type(), stack.back());
    return true;
  }
  for (const char* cmp : {"aten::eq", "aten::ne", "aten::lt", "aten::le", "aten::gt", "aten::ge",
                          "aten::__contains__"}) {
    check(kind != sym(cmp),
          "this compares a size known only when the model runs (a flexible dim of --input), "
          "so the condition cannot be decided during conversion; NNAPI below feature level 4 "
          "has no control flow. Give that dim a fixed size in --input");
  }
  // Consumers (view, reshape) read symbolic inputs themselves.
  return false;
}

}  // namespace nnapi_convert

// Graph plumbing: constants, module attributes, lists and tuples.
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

}  // namespace

void register_graph_ops(LoweringTable& t) {
  t.add("prim::GetAttr", lower_getattr);
  t.add("prim::Constant", lower_constant);
  t.add("prim::ListConstruct", lower_list_construct);
  t.add("prim::TupleConstruct", lower_tuple_construct);
}

}  // namespace nnapi_convert

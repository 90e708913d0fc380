// A node's arguments by the names of its schema, the way the runtime's
// ExecContext reads an operation's inputs (runtime/kernel.h):
//
//   NodeArgs a(cx, node);
//   Tensor x = a.tensor("self");
//   std::vector<int64_t> kernel = a.ints("kernel_size");
//   bool ceil = a.flag("ceil_mode");
//
// Overloads are told apart by name (upsample's scale_factors or scales_h and
// scales_w), not by input count. A missing argument is refused naming the
// node kind and the argument. prim:: nodes have no schema: they keep
// positional node->input(i).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lower/context.h"

namespace nnapi_convert {

class NodeArgs {
 public:
  NodeArgs(LoweringContext& cx, const Node* node);

  // Whether the node's schema (its overload) has argument `name`.
  bool has(const char* name) const { return index(name).has_value(); }
  const Value* value(const char* name) const;
  OperandHandle tensor(const char* name) const { return cx_.get_operand(value(name)); }
  std::vector<int64_t> ints(const char* name) const { return cx_.constant_int_list(value(name)); }
  int64_t integer(const char* name) const { return cx_.constant_int(value(name)); }
  bool flag(const char* name) const { return cx_.constant_bool(value(name)); }
  // The argument's constant value (None included).
  const c10::IValue& constant(const char* name) const { return cx_.constant(value(name)).value; }
  // None when the schema has no such argument or the constant is None.
  bool is_none(const char* name) const { return !has(name) || constant(name).isNone(); }

 private:
  std::optional<size_t> index(const char* name) const;

  LoweringContext& cx_;
  const Node* node_;
  const c10::FunctionSchema* schema_;
};

}  // namespace nnapi_convert

// aten::roll: per rolled dim, the last `shift` elements then the others, two
// STRIDED_SLICEs and a CONCATENATION (NNAPI has no roll). A constant input is
// folded into a constant of the result.
#include <ATen/ATen.h>

#include "lower/emit.h"
#include "lower/registry.h"

namespace nnapi_convert {
namespace {

// roll(x, shifts, dims): dims given, one shift each (or one shift for one dim).
void lower_roll(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 3, "malformed aten::roll");
  const std::vector<int64_t> shifts = cx.constant_int_list(node->input(1));
  const std::vector<int64_t> dims = cx.constant_int_list(node->input(2));
  const Value* in = node->input(0);
  if (cx.has_constant(in) && !cx.has_operand(in)) {
    cx.add_constant(node->output(), node->output()->type(),
                    cx.constant_tensor(in).roll(shifts, dims).contiguous());
    return;
  }
  check(!dims.empty(), "roll without dims (of the flattened tensor) is not supported");
  check(shifts.size() == dims.size(), "roll needs one shift per dim");
  OperandHandle x = cx.get_operand(in);
  const Operand o = x.op;  // the input's record (x is the rolled result below)
  const auto rank = static_cast<int64_t>(o.shape.size());
  // Dims that actually move, each with its shift in [1, n).
  std::vector<std::pair<int64_t, int64_t>> moves;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = py_index(dims[i], rank);
    const int64_t n = o.shape[d];
    check(n != 0, [&] {
      return "roll of the flexible dimension " + std::to_string(d) +
             " is not supported; give it a fixed size in --input";
    });
    const int64_t s = ((shifts[i] % n) + n) % n;
    if (s != 0) moves.emplace_back(d, s);
  }
  if (moves.empty()) {
    cx.alias(node->output(), in);
    return;
  }
  for (size_t i = 0; i < moves.size(); ++i) {
    const auto [d, s] = moves[i];
    const int64_t n = x.op.shape[d];
    const OperandHandle tail = emit_take(cx, x, d, n - s, s, 1);
    const OperandHandle head = emit_take(cx, x, d, 0, n - s, 1);
    x = emit_concat(cx, {tail, head}, d, i + 1 == moves.size() ? node->output() : nullptr);
  }
}

}  // namespace

void register_roll_ops(LoweringTable& t) {
  t.add("aten::roll", lower_roll)
      .with_note(
          "two STRIDED_SLICEs and a CONCATENATION per rolled dim (fixed size); dims required")
      .with_moves(Moves::First);
}

}  // namespace nnapi_convert

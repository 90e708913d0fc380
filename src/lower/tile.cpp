// Repetition: aten::expand and aten::repeat as NNAPI's TILE, after a RESHAPE
// that adds the new leading dims as 1s. A constant input is folded into a
// constant of the result instead.
#include <ATen/ATen.h>

#include <algorithm>

#include "lower/emit.h"
#include "lower/registry.h"

namespace nnapi_convert {
namespace {

bool is_constant_tensor(const LoweringContext& cx, const Value* v) {
  return cx.has_constant(v) && !cx.has_operand(v);
}

// `x` read with `rank` dims (leading 1s added), tiled by `multiples`, bound to
// `out`; no operation at all when nothing changes.
void tile_to(LoweringContext& cx, const Node* node, Tensor x,
             const std::vector<int64_t>& multiples) {
  const size_t rank = multiples.size();
  const bool tiled =
      std::any_of(multiples.begin(), multiples.end(), [](int64_t m) { return m != 1; });
  if (x.op.shape.size() == rank && !tiled) {
    cx.alias(node->output(), node->input(0));
    return;
  }
  if (x.op.shape.size() < rank) {
    x = emit_relayout(cx, x, DimOrder::Contiguous);
    std::vector<SymInt> dims(rank - x.op.shape.size(), SymInt{1, ""});
    for (const SymInt& d : sym_shape(x)) dims.push_back(d);
    x = emit_reshape(cx, x, dims, tiled ? nullptr : node->output());
    if (!tiled) return;
  }
  emit_tile(cx, x, multiples, node->output());
}

// x expanded to `size`: dims of size 1 repeated to size[d]; -1 keeps a dim;
// new dims are added in front.
void expand_to(LoweringContext& cx, const Node* node, const std::vector<SymInt>& size) {
  const Value* in = node->input(0);
  if (is_constant_tensor(cx, in)) {
    std::vector<int64_t> fixed;
    for (const SymInt& s : size) {
      check(s.is_constant(), "expand of a constant to a size known only when the model is loaded");
      fixed.push_back(s.value);
    }
    at::Tensor e;
    try {
      e = cx.constant_tensor(in).expand(fixed).contiguous();
    } catch (const c10::Error& err) {
      fail(std::string("can't expand the constant: ") + err.what_without_backtrace());
    }
    cx.add_constant(node->output(), node->output()->type(), e);
    return;
  }
  auto [id, o] = cx.get_operand(in);
  const size_t rank = size.size(), extra = rank - o.shape.size();
  check(rank >= o.shape.size() && rank <= 4, [&] {
    return "expand to " + std::to_string(rank) + " dims of a " + std::to_string(o.shape.size()) +
           "-D tensor is not supported (NNAPI's TILE: at most 4 dims here)";
  });
  std::vector<int64_t> multiples(rank, 1);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t s = d < extra ? 1 : o.shape[d - extra];
    const SymInt& target = size[d];
    if (target.is_constant() && (target.value == -1 || target.value == s) && s != 0) continue;
    if (target.is_constant() && target.value == -1 && d >= extra) continue;  // keeps a flexible dim
    if (s == 1 && target.is_constant() && target.value > 0) {
      multiples[d] = target.value;
      continue;
    }
    if (s == 0 && !target.is_constant()) {
      // A flexible dim expanded to a load-time size: the same size, or PyTorch fails.
      cx.add_shape_line("assert " + target.expr + " == " + flex_name(id, d - extra));
      continue;
    }
    fail("expand of " + shape_str(o.shape) + " to size " + target.str() + " in dim " +
         std::to_string(d) + " is not supported (only dims of size 1 repeat a fixed number of " +
         "times)");
  }
  tile_to(cx, node, {id, o}, multiples);
}

// expand(x, size, implicit).
void lower_expand(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 3, "malformed aten::expand");
  expand_to(cx, node, cx.sym_int_list(node->input(1)));
}

// expand_as(x, other): expand to other's sizes (flexible ones as load-time
// sizes).
void lower_expand_as(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 2, "malformed aten::expand_as");
  const Value* other = node->input(1);
  std::vector<SymInt> size;
  if (cx.has_operand(other)) {
    size = sym_shape(cx.get_operand(other));
  } else {
    for (int64_t s : cx.constant_tensor(other).sizes()) size.push_back({s, ""});
  }
  expand_to(cx, node, size);
}

// repeat(x, repeats): x tiled repeats[d] times along each dim, with
// len(repeats) - x.dim() new leading dims.
void lower_repeat(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 2, "malformed aten::repeat");
  const Value* in = node->input(0);
  const std::vector<int64_t> repeats = cx.constant_int_list(node->input(1));
  for (int64_t r : repeats) check(r > 0, "repeat counts must be positive");
  if (is_constant_tensor(cx, in)) {
    at::Tensor t = cx.constant_tensor(in);
    check(static_cast<int64_t>(repeats.size()) >= t.dim(),
          "repeat needs at least one count per dim");
    cx.add_constant(node->output(), node->output()->type(), t.repeat(repeats).contiguous());
    return;
  }
  auto [id, o] = cx.get_operand(in);
  check(repeats.size() >= o.shape.size() && repeats.size() <= 4, [&] {
    return "repeat by " + std::to_string(repeats.size()) + " counts of a " +
           std::to_string(o.shape.size()) + "-D tensor is not supported (at most 4 dims)";
  });
  tile_to(cx, node, {id, o}, repeats);
}

}  // namespace

void register_tile_ops(LoweringTable& t) {
  t.add("aten::expand", lower_expand);
  t.add("aten::expand_as", lower_expand_as);
  t.add("aten::repeat", lower_repeat);
}

}  // namespace nnapi_convert

// Repetition: aten::expand and aten::repeat as NNAPI's TILE, after a RESHAPE
// that adds the new leading dims as 1s. A constant input is folded into a
// constant of the result instead.
#include <ATen/ATen.h>

#include <algorithm>

#include "lower/emit.h"
#include "lower/logical.h"
#include "lower/registry.h"

namespace nnapi_convert {
namespace {

bool is_constant_tensor(const LoweringContext& cx, const Value* v) {
  return cx.has_constant(v) && !cx.has_operand(v);
}

// `x` read with `rank` dims: leading 1s added by a RESHAPE (bound to `out`
// when given), `x` itself when it has them.
OperandHandle with_rank(LoweringContext& cx, OperandHandle x, size_t rank,
                        const Value* out = nullptr) {
  if (x.op.shape.size() == rank) return x;
  x = emit_relayout(cx, x, DimOrder::Contiguous);
  std::vector<SymInt> dims(rank - x.op.shape.size(), SymInt{1, ""});
  for (const SymInt& d : sym_shape(x)) dims.push_back(d);
  return emit_reshape(cx, x, dims, out);
}

// `x` read with `rank` dims (leading 1s added), tiled by `multiples`, bound to
// `out`; no operation at all when nothing changes.
void tile_to(LoweringContext& cx, const Node* node, OperandHandle x,
             const std::vector<int64_t>& multiples) {
  const size_t rank = multiples.size();
  const bool tiled =
      std::any_of(multiples.begin(), multiples.end(), [](int64_t m) { return m != 1; });
  if (x.op.shape.size() == rank && !tiled) {
    cx.alias(node->output(), node->input(0));
    return;
  }
  if (x.op.shape.size() < rank) {
    x = with_rank(cx, x, rank, tiled ? nullptr : node->output());
    if (!tiled) return;
  }
  emit_tile(cx, x, multiples, node->output());
}

bool is_load_time(const SymInt& s) { return !s.is_constant(); }

// The constant `in` expanded to `size` (load-time sizes there as 1s).
at::Tensor expanded_constant(LoweringContext& cx, const Value* in,
                             const std::vector<SymInt>& size) {
  std::vector<int64_t> fixed;
  for (const SymInt& s : size) fixed.push_back(is_load_time(s) ? 1 : s.value);
  const at::Tensor c = cx.constant_tensor(in);
  const auto extra = static_cast<int64_t>(size.size()) - c.dim();
  for (size_t d = 0; d < size.size(); ++d) {
    const int64_t cd = static_cast<int64_t>(d) - extra;
    check(!is_load_time(size[d]) || cd < 0 || c.size(cd) == 1, [&] {
      return "expand of a constant of shape " + shape_str(c.sizes().vec()) + " to size " +
             size[d].str() + " (known when the model is loaded) in dim " + std::to_string(d) +
             ": only a dim of size 1 repeats (PyTorch's expand fails at any other size): give "
             "that " +
             "size a fixed value in --input";
    });
  }
  try {
    return c.expand(fixed).contiguous();
  } catch (const c10::Error& err) {
    fail(std::string("can't expand the constant: ") + err.what_without_backtrace());
  }
}

// x expanded to `size`: dims of size 1 repeated to size[d]; -1 keeps a dim;
// new dims are added in front. A size known only when the model is loaded
// (another tensor's flexible dim: a class token expanded to the batch) is a
// TILE whose multiples the shape-compute script sets (emit_expand).
void expand_to(LoweringContext& cx, const Node* node, const std::vector<SymInt>& size) {
  const Value* in = node->input(0);
  const bool load_time = std::any_of(size.begin(), size.end(), is_load_time);
  if (is_constant_tensor(cx, in)) {
    const at::Tensor e = expanded_constant(cx, in, size);
    if (!load_time) {
      cx.add_constant(node->output(), node->output()->type(), e);
      return;
    }
    // Bools are held as int32 0/1 (moves.cpp): TILE takes no TENSOR_BOOL8.
    // With --nhwc a 4-D result is laid out NHWC, as the model's 4-D data.
    const bool bools = e.scalar_type() == at::kBool;
    const DimOrder order =
        e.dim() == 4 && cx.nhwc() ? DimOrder::ChannelsLast : DimOrder::Contiguous;
    const int32_t id = cx.add_weight(bools ? e.to(at::kInt) : e, order);
    std::vector<SymInt> target;
    for (size_t d = 0; d < size.size(); ++d) {
      target.push_back(is_load_time(size[d]) ? size[d]
                                             : SymInt{e.size(static_cast<int64_t>(d)), ""});
    }
    emit_expand(cx, {id, cx.operand(id)}, target, node->output());
    if (bools) cx.set_torch_dtype(node->output(), at::kBool);
    return;
  }
  auto [id, o] = cx.get_operand(in);
  const size_t rank = size.size(), extra = rank - o.shape.size();
  check(rank >= o.shape.size() && rank <= 4, [&] {
    return "expand to " + std::to_string(rank) + " dims of a " + std::to_string(o.shape.size()) +
           "-D tensor is not supported (NNAPI's TILE: at most 4 dims here)";
  });
  std::vector<int64_t> multiples(rank, 1);
  // The result's dims, for a TILE to load-time sizes.
  std::vector<SymInt> target;
  bool repeats_to_load_time = false;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t s = d < extra ? 1 : o.shape[d - extra];
    const SymInt& t = size[d];
    target.push_back(d < extra ? SymInt{1, ""}
                               : sym_dim(id, o.shape, static_cast<int64_t>(d - extra)));
    if (t.is_constant() && (t.value == -1 || t.value == s) && s != 0) continue;
    if (t.is_constant() && t.value == -1 && d >= extra) continue;  // keeps a flexible dim
    if (s == 1 && t.is_constant() && t.value > 0) {
      multiples[d] = t.value;
      target[d] = t;
      continue;
    }
    if (s == 0 && !t.is_constant()) {
      // A flexible dim expanded to a load-time size: the same size, or PyTorch fails.
      cx.add_shape_line("assert " + t.expr + " == " + flex_name(id, d - extra));
      continue;
    }
    if (s == 1 && !t.is_constant()) {
      repeats_to_load_time = true;
      target[d] = t;
      continue;
    }
    fail("expand of " + shape_str(o.shape) + " to size " + t.str() + " in dim " +
         std::to_string(d) + " is not supported (only dims of size 1 repeat)");
  }
  if (repeats_to_load_time) {
    emit_expand(cx, with_rank(cx, {id, o}, rank), target, node->output());
    return;
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
  t.add("aten::expand", lower_expand).with_moves(Moves::First);
  t.add("aten::expand_as", lower_expand_as).with_moves(Moves::First);
  t.add("aten::repeat", lower_repeat).with_moves(Moves::First);
}

}  // namespace nnapi_convert

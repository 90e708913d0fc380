// Views and permutes of rank > 4 (Swin's window partition
// `x.view(B, H/w, w, W/w, w, C).permute(0, 1, 3, 2, 4, 5).reshape(-1, w*w, C)`,
// MaxViT's), with fixed sizes. NNAPI's RESHAPE and TRANSPOSE take rank <= 4:
// - a view to rank > 4 whose uses only reshape or permute it again emits
//   nothing: the (contiguous) buffer is read with the new shape;
// - a permute of rank > 4 merges the input dims that stay adjacent under the
//   permutation (and drops size-1 dims): one RESHAPE and one TRANSPOSE of
//   rank <= 4, e.g. (0, 1, 3, 2, 4, 5) over (1, 8, 7, 8, 7, C) is (0, 2, 1, 3)
//   over (8, 7, 8, 7*C). Where more than 4 groups remain, each output group in
//   turn is moved in front of the ones not placed yet, a 4-D (0, 2, 1, 3)
//   TRANSPOSE of (placed, skipped, moved, rest).
// - a select or slice of rank > 4 is a STRIDED_SLICE of the tensor read as 3-D.
// - add, sub, mul and div of rank > 4 (Swin's attention mask,
//   `attn.view(B, nW, heads, N, N) + mask`) drop the dims that are 1 in both
//   operands and, if more than 4 remain, merge adjacent dims that broadcast
//   alike (both full, or the same operand broadcasting): computed operands are
//   RESHAPEd (nothing when the buffer already has that shape), constants
//   reshaped here. More than 4 such groups are refused.
// A result is again read with its full shape when its uses only reshape,
// permute, select from or do such arithmetic on it, else RESHAPEd to it.
// Registered after view.cpp, layout.cpp, slicing.cpp and pointwise.cpp: other
// views, permutes, selects, slices and arithmetic go to their lowerings.
#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "lower/emit.h"
#include "lower/registry.h"

namespace nnapi_convert {
namespace {

bool has_flexible(const Shape& s) { return std::find(s.begin(), s.end(), 0) != s.end(); }

// The elementwise arithmetic lowered below, by kind.
const std::map<c10::Symbol, nnapi::Op>& arithmetic() {
  static const std::map<c10::Symbol, nnapi::Op> ops = {
      {c10::Symbol::fromQualString("aten::add"), nnapi::Op::Add},
      {c10::Symbol::fromQualString("aten::sub"), nnapi::Op::Sub},
      {c10::Symbol::fromQualString("aten::mul"), nnapi::Op::Mul},
      {c10::Symbol::fromQualString("aten::div"), nnapi::Op::Div}};
  return ops;
}

// Whether every use of `v` only reshapes, permutes, selects from it or is an
// operand of arithmetic: then `v` may stay a buffer read with its rank > 4
// shape. (A view whose use is a transpose may be ShuffleNet's channel
// shuffle, a FusionPlan group of layout.cpp.)
bool only_reshaped(const Value* v, bool transposes) {
  static const std::set<c10::Symbol> kinds = {
      c10::Symbol::fromQualString("aten::view"), c10::Symbol::fromQualString("aten::reshape"),
      c10::Symbol::fromQualString("aten::permute"), c10::Symbol::fromQualString("aten::select")};
  static const c10::Symbol transpose = c10::Symbol::fromQualString("aten::transpose");
  for (const torch::jit::Use& u : v->uses()) {
    const c10::Symbol k = u.user->kind();
    if (arithmetic().count(k) && u.offset < 2) continue;
    const bool ok = kinds.count(k) || (transposes && k == transpose);
    if (!ok || u.offset != 0) return false;
  }
  return v->hasUses();
}

// `x`'s contiguous buffer read as `shape` (same element count), bound to `out`:
// no operation when `shape` has rank > 4 (so the uses come here) and `out` is
// only reshaped again, else a RESHAPE.
void bind_as(LoweringContext& cx, const Tensor& x, const Shape& shape, const Value* out) {
  if (shape.size() > 4 && only_reshaped(out, true)) {
    cx.reinterpret(out, x.id, x.op.with_shape(shape));
    return;
  }
  std::vector<SymInt> dims;
  for (int64_t d : shape) dims.push_back(SymInt{d, ""});
  emit_reshape(cx, x, dims, out);
}

// A RESHAPE of contiguous `x` to `shape`, or `x` when it already has it.
Tensor reshape_to(LoweringContext& cx, const Tensor& x, const Shape& shape) {
  if (x.op.shape == shape) return x;
  std::vector<SymInt> dims;
  for (int64_t d : shape) dims.push_back(SymInt{d, ""});
  return emit_reshape(cx, x, dims);
}

int64_t product(const Shape& s, size_t begin, size_t end) {
  return std::accumulate(s.begin() + begin, s.begin() + end, int64_t{1}, std::multiplies<>());
}

// view/reshape to rank > 4 of fixed sizes, only reshaped again.
bool lower_high_rank_view(LoweringContext& cx, const Node* node) {
  if (!cx.has_operand(node->input(0)) || cx.has_symbolic(node->input(1))) {
    return false;
  }
  auto [id, in] = cx.get_operand(node->input(0));
  if (has_flexible(in.shape) || !only_reshaped(node->output(), false)) return false;
  Shape shape = cx.constant_int_list(node->input(1));
  if (shape.size() <= 4) return false;
  try {
    shape = at::zeros({1}).expand(in.shape).reshape(shape).sizes().vec();
  } catch (const c10::Error& e) {
    fail("can't reshape " + shape_str(in.shape) + " to " + shape_str(shape) + ": " +
         e.what_without_backtrace());
  }
  const Tensor x = emit_relayout(cx, {id, in}, DimOrder::Contiguous);
  cx.reinterpret(node->output(), x.id, x.op.with_shape(shape));
  return true;
}

// permute (or transpose) by `dims` of a fixed-size tensor of rank > 4.
bool lower_high_rank_permute(LoweringContext& cx, const Node* node, std::vector<int64_t> dims) {
  if (!cx.has_operand(node->input(0))) return false;
  auto [id, in] = cx.get_operand(node->input(0));
  const auto rank = static_cast<int64_t>(in.shape.size());
  if (rank <= 4 || has_flexible(in.shape)) return false;
  check(static_cast<int64_t>(dims.size()) == rank, "permute needs one dim per input dim");
  for (int64_t& d : dims) d = py_index(d, rank);
  Shape out_shape;
  for (int64_t d : dims) out_shape.push_back(in.shape[d]);
  // Groups of input dims (size-1 dims dropped) that stay adjacent in the output.
  std::vector<std::vector<int64_t>> groups;  // in output order
  for (int64_t d : dims) {
    if (in.shape[d] == 1) continue;
    if (!groups.empty() && groups.back().back() + 1 == d) {
      groups.back().push_back(d);
    } else {
      groups.push_back({d});
    }
  }
  // The groups in input order, and their sizes.
  std::vector<size_t> order(groups.size());  // group indexes by first input dim
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return groups[a][0] < groups[b][0]; });
  std::vector<int64_t> size(groups.size(), 1);
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int64_t d : groups[g]) size[g] *= in.shape[d];
  }
  Shape merged;
  for (size_t g : order) merged.push_back(size[g]);
  Tensor x = reshape_to(cx, emit_relayout(cx, {id, in}, DimOrder::Contiguous), merged);
  if (groups.size() <= 4) {
    std::vector<int64_t> perm(groups.size());
    for (size_t i = 0; i < groups.size(); ++i) {
      perm[i] = std::find(order.begin(), order.end(), i) - order.begin();
    }
    x = emit_permute(cx, x, perm);
  } else {
    // cur: the groups in their current order; place output group i at i.
    std::vector<size_t> cur = order;
    for (size_t i = 0; i < groups.size(); ++i) {
      const size_t j = std::find(cur.begin(), cur.end(), i) - cur.begin();
      if (j == i) continue;
      Shape s;
      for (size_t g : cur) s.push_back(size[g]);
      x = reshape_to(cx, x,
                     {product(s, 0, i), product(s, i, j), s[j], product(s, j + 1, s.size())});
      x = emit_permute(cx, x, {0, 2, 1, 3});
      std::rotate(cur.begin() + i, cur.begin() + j, cur.begin() + j + 1);
    }
  }
  bind_as(cx, x, out_shape, node->output());
  return true;
}

// select(x, d, i) of a fixed-size tensor of rank > 4: x read as (dims before
// d, dim d, dims after d), a STRIDED_SLICE of [i, i + 1) along the middle.
bool lower_high_rank_select(LoweringContext& cx, const Node* node) {
  if (!cx.has_operand(node->input(0))) return false;
  auto [id, in] = cx.get_operand(node->input(0));
  const auto rank = static_cast<int64_t>(in.shape.size());
  if (rank <= 4 || has_flexible(in.shape)) return false;
  const int64_t d = py_index(cx.constant_int(node->input(1)), rank);
  const int64_t i = py_index(cx.constant_int(node->input(2)), in.shape[d]);
  const Tensor x =
      reshape_to(cx, emit_relayout(cx, {id, in}, DimOrder::Contiguous),
                 {product(in.shape, 0, d), in.shape[d], product(in.shape, d + 1, in.shape.size())});
  Shape out_shape = in.shape;
  out_shape.erase(out_shape.begin() + d);
  bind_as(cx, emit_take(cx, x, 1, i, 1, 1), out_shape, node->output());
  return true;
}

// slice(x, d, start, stop, step) of a fixed-size tensor of rank > 4 (a
// detection head's `p[..., 4:]`): x read as (dims before d, dim d, dims after
// d), a STRIDED_SLICE along the middle (NNAPI's takes rank <= 4).
bool lower_high_rank_slice(LoweringContext& cx, const Node* node) {
  if (!cx.has_operand(node->input(0)) || cx.has_symbolic(node->input(3))) return false;
  auto [id, in] = cx.get_operand(node->input(0));
  const auto rank = static_cast<int64_t>(in.shape.size());
  if (rank <= 4 || has_flexible(in.shape)) return false;
  const int64_t d = py_index(cx.constant_int(node->input(1)), rank);
  const int64_t size = in.shape[d];
  auto bound = [&](const Value* v, int64_t none_value) {  // Python's slice bounds
    const c10::IValue& iv = cx.constant(v).value;
    int64_t i = iv.isNone() ? none_value : iv.toInt();
    if (i < 0) i += size;
    return std::clamp<int64_t>(i, 0, size);
  };
  const int64_t start = bound(node->input(2), 0), stop = bound(node->input(3), size);
  const int64_t step = cx.constant_int(node->input(4));
  // The slicing lowering refuses empty slices and takes the whole dim (x[:, :])
  // as the identity.
  const c10::IValue& raw_stop = cx.constant(node->input(3)).value;
  const bool whole = start == 0 && step == 1 &&
                     (raw_stop.isNone() || raw_stop.toInt() == std::numeric_limits<int64_t>::max());
  if (step <= 0 || stop <= start || whole) return false;
  const int64_t count = (stop - start + step - 1) / step;
  const Tensor x =
      reshape_to(cx, emit_relayout(cx, {id, in}, DimOrder::Contiguous),
                 {product(in.shape, 0, d), size, product(in.shape, d + 1, in.shape.size())});
  Shape out_shape = in.shape;
  out_shape[d] = count;
  bind_as(cx, emit_take(cx, x, 1, start, count, step), out_shape, node->output());
  return true;
}

// One side of arithmetic of rank > 4: an operand, or a constant tensor or
// number (float32 when the other side is).
struct Side {
  std::optional<Tensor> x;
  at::Tensor t;
  Shape shape;
};

std::optional<Side> arithmetic_side(LoweringContext& cx, const Value* v) {
  if (cx.has_operand(v)) {
    const Tensor x = cx.get_operand(v);
    return Side{x, {}, x.op.shape};
  }
  if (!cx.has_constant(v)) return std::nullopt;
  const c10::IValue& iv = cx.constant(v).value;
  at::Tensor t;
  if (iv.isTensor()) {
    t = iv.toTensor();
    if (t.is_quantized()) return std::nullopt;
    if (t.dim() == 0) t = t.to(at::kFloat);  // a number the tracer wrapped
  } else if (iv.isInt() || iv.isDouble() || iv.isBool()) {
    t = at::scalar_tensor(iv.toScalar(), at::kFloat);
  } else {
    return std::nullopt;
  }
  return Side{std::nullopt, t, t.sizes().vec()};
}

// `s` as `shape` (same element count, contiguous): a weight for a constant,
// else the operand itself when its buffer has that shape, else a RESHAPE.
Tensor side_as(LoweringContext& cx, const Side& s, const Shape& shape) {
  if (!s.x) {
    const int32_t id = cx.add_weight(s.t.reshape(shape).contiguous(), DimOrder::Contiguous);
    return {id, cx.operand(id)};
  }
  const Operand& real = cx.operand(s.x->id);
  if (real.shape == shape && real.dim_order == DimOrder::Contiguous) return {s.x->id, real};
  return reshape_to(cx, emit_relayout(cx, *s.x, DimOrder::Contiguous), shape);
}

// add/sub/mul/div of rank > 4 as the op on dims merged to rank <= 4.
bool lower_high_rank_arithmetic(LoweringContext& cx, const Node* node, nnapi::Op op) {
  const bool add_sub = op == nnapi::Op::Add || op == nnapi::Op::Sub;
  if (node->inputs().size() != (add_sub ? 3u : 2u)) return false;
  std::optional<Side> a = arithmetic_side(cx, node->input(0));
  std::optional<Side> b = arithmetic_side(cx, node->input(1));
  if (!a || !b || !(a->x || b->x)) return false;
  const size_t rank = std::max(a->shape.size(), b->shape.size());
  if (rank <= 4 || (add_sub && cx.constant_number(node->input(2)) != 1)) return false;
  const std::string where = "%" + node->output()->debugName() + " = " +
                            node->kind().toQualString() + " of rank " + std::to_string(rank);
  // Flexible sizes (a load-time batch) are left to pointwise.cpp.
  if (has_flexible(a->shape) || has_flexible(b->shape)) return false;
  for (Side* s : {&*a, &*b}) s->shape.insert(s->shape.begin(), rank - s->shape.size(), 1);
  const Shape out_shape = broadcast_shape(a->shape, b->shape);
  // Dims grouped by how they broadcast: bit 0 a broadcasts, bit 1 b does;
  // dims where both are 1 are dropped.
  std::vector<int> kind;
  std::vector<std::vector<size_t>> groups;
  for (size_t d = 0; d < rank; ++d) {
    if (out_shape[d] == 1) continue;
    kind.push_back((a->shape[d] == 1 ? 1 : 0) | (b->shape[d] == 1 ? 2 : 0));
    groups.push_back({d});
  }
  if (groups.size() > 4) {
    std::vector<std::vector<size_t>> merged;
    for (size_t g = 0; g < groups.size(); ++g) {
      if (g > 0 && kind[g] == kind[g - 1]) {
        merged.back().push_back(groups[g][0]);
      } else {
        merged.push_back(groups[g]);
      }
    }
    groups = std::move(merged);
  }
  check(groups.size() <= 4, [&] {
    return where + " of " + shape_str(a->shape) + " and " + shape_str(b->shape) +
           ": NNAPI takes rank <= 4, and the dims merge to no fewer than " +
           std::to_string(groups.size()) + " groups that broadcast alike";
  });
  auto grouped = [&](const Shape& s) {
    Shape r;
    for (const auto& g : groups) {
      int64_t n = 1;
      for (size_t d : g) n *= s[d];
      r.push_back(n);
    }
    if (r.empty()) r.push_back(1);
    return r;
  };
  const Tensor x = side_as(cx, *a, grouped(a->shape));
  const Tensor y = side_as(cx, *b, grouped(b->shape));
  check(x.op.type == y.op.type, [&] { return where + ": operands have different types"; });
  const Tensor r = emit_binary(cx, op, x, y, cx.fuse_following_activation(node->output()));
  bind_as(cx, r, out_shape, node->output());
  return true;
}

// `fallback`, the lowering registered before, for what the above leave.
void chain(LoweringTable& t, const char* kind,
           std::function<bool(LoweringContext& cx, const Node* node)> lower) {
  const LowerFn* found = t.find(c10::Symbol::fromQualString(kind));
  check(found != nullptr, std::string("internal: no lowering of ") + kind + " to extend");
  LowerFn fallback = *found;
  t.add(kind, [lower, fallback](LoweringContext& cx, const Node* node) {
    if (!lower(cx, node)) fallback(cx, node);
  });
}

}  // namespace

void register_rank_reduce_ops(LoweringTable& t) {
  chain(t, "aten::view", lower_high_rank_view);
  chain(t, "aten::reshape", lower_high_rank_view);
  chain(t, "aten::permute", [](LoweringContext& cx, const Node* node) {
    return lower_high_rank_permute(cx, node, cx.constant_int_list(node->input(1)));
  });
  chain(t, "aten::select", lower_high_rank_select);
  chain(t, "aten::slice", lower_high_rank_slice);
  chain(t, "aten::transpose", [](LoweringContext& cx, const Node* node) {
    if (!cx.has_operand(node->input(0))) return false;
    const auto rank = static_cast<int64_t>(cx.get_operand(node->input(0)).op.shape.size());
    if (rank <= 4) return false;
    std::vector<int64_t> dims(rank);
    std::iota(dims.begin(), dims.end(), 0);
    std::swap(dims[py_index(cx.constant_int(node->input(1)), rank)],
              dims[py_index(cx.constant_int(node->input(2)), rank)]);
    return lower_high_rank_permute(cx, node, dims);
  });
}

void register_rank_reduce_arithmetic(LoweringTable& t) {
  for (const auto& [kind, op] : arithmetic()) {
    chain(t, kind.toQualString(), [op = op](LoweringContext& cx, const Node* node) {
      return lower_high_rank_arithmetic(cx, node, op);
    });
  }
}

}  // namespace nnapi_convert

// Views and permutes of rank > 4 (Swin's window partition
// `x.view(B, H/w, w, W/w, w, C).permute(0, 1, 3, 2, 4, 5).reshape(-1, w*w, C)`,
// MaxViT's). NNAPI's RESHAPE and TRANSPOSE take rank <= 4:
// - a view to rank > 4 whose uses only reshape or permute it again emits
//   nothing: the (contiguous) buffer is read with the new shape;
// - a permute of rank > 4 merges the input dims that stay adjacent under the
//   permutation (and drops size-1 dims): one RESHAPE and one TRANSPOSE of
//   rank <= 4, e.g. (0, 1, 3, 2, 4, 5) over (1, 8, 7, 8, 7, C) is (0, 2, 1, 3)
//   over (8, 7, 8, 7*C). Where more than 4 groups remain, each output group in
//   turn is moved in front of the ones not placed yet, a 4-D (0, 2, 1, 3)
//   TRANSPOSE of (placed, skipped, moved, rest).
// - a select or slice of rank > 4 is a STRIDED_SLICE of the tensor read as 3-D;
//   an unbind of rank 5 (timm's attention, `qkv.reshape(B, N, 3, H,
//   D).permute(2, 0, 3, 1, 4).unbind(0)`) one SPLIT of it, each part RESHAPEd
//   to its rank-4 piece (softmax of rank > 4, pointwise.cpp, is the same
//   reading around its dim); a dequantize of rank > 4 is one of the data as 1-D.
// - add, sub, mul and div of rank > 4 (Swin's attention mask,
//   `attn.view(B, nW, heads, N, N) + mask`) drop the dims that are 1 in both
//   operands and, if more than 4 remain, merge adjacent dims that broadcast
//   alike (both full, or the same operand broadcasting): computed operands are
//   RESHAPEd (nothing when the buffer already has that shape), constants
//   reshaped here. More than 4 such groups are refused.
// A result is again read with its full shape when its uses only reshape,
// permute, select from, unbind, softmax, dequantize or do such arithmetic on
// it, or pass it to einsum (einsum.cpp reads rank > 4), else RESHAPEd to it.
// One size may be flexible (a load-time batch; Swin's B rides along in the
// window partition, (B, H/w, w, W/w, w, C)). The flexible size is then
// merged with its neighbours like any other, a -1 in each RESHAPE, and a
// record of rank > 4 with a flexible dim f names an operand whose dim f is
// that size (so that the shape-compute lines read it there, sym_dim): one of
// (dims before f, dim f, the product of the rest), RESHAPEd to it where the
// operand made has another shape. So f is 0, 1 or 2.
// The handlers (forms.h) sit in the specs of view.cpp, layout.cpp,
// slicing.cpp and pointwise.cpp, tried before the kind's lowering (dispatch.h):
// each returns false for what it leaves to that lowering.
#include "lower/rank_reduce.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "lower/emit.h"
#include "lower/forms.h"
#include "lower/kind_set.h"
#include "lower/registry.h"
#include "lower/view.h"

namespace nnapi_convert {
namespace {

using Dims = std::vector<SymInt>;

bool has_flexible(const Shape& s) { return std::find(s.begin(), s.end(), 0) != s.end(); }

Dims fixed_dims(const Shape& shape) {
  Dims dims;
  for (int64_t d : shape) dims.push_back(SymInt{d, ""});
  return dims;
}

SymInt product(const Dims& dims, size_t begin, size_t end) {
  SymInt p{1, ""};
  for (size_t i = begin; i < end; ++i) p = sym_arith(p, '*', dims[i]);
  return p;
}

// Whether `a` and `b` are one size: equal numbers, or load-time sizes of one
// expression.
bool same_size(const LoweringContext& cx, const SymInt& a, const SymInt& b) {
  if (a.is_constant() || b.is_constant()) {
    return a.is_constant() && b.is_constant() && a.value == b.value;
  }
  return cx.resolve_flex(a.expr) == cx.resolve_flex(b.expr);
}

// Whether a record of rank > 4 may have `shape`: one flexible dim at most,
// at 0, 1 or 2 (see the top).
bool holdable(const Shape& shape) {
  const auto n = std::count(shape.begin(), shape.end(), 0);
  return n == 0 || (n == 1 && std::find(shape.begin(), shape.end(), 0) - shape.begin() <= 2);
}

// Contiguous `x` (an operand, or the record of one) holding the elements of
// a tensor of sizes `dims`, as that tensor's record: where a size is
// flexible, the operand RESHAPEd to (dims before it, it, the product of the
// rest) unless its dim there is that size already.
OperandHandle hold(LoweringContext& cx, const OperandHandle& x, const Dims& dims) {
  const Shape shape = shape_of(dims);
  check(holdable(shape), [&] {
    return "a tensor of shape " + shape_str(shape) +
           " (0: flexible) has rank > 4, which NNAPI takes as a rank <= 4 operand with one "
           "flexible size among its first three dims only; give fixed sizes in --input";
  });
  const auto f = static_cast<size_t>(std::find(shape.begin(), shape.end(), 0) - shape.begin());
  OperandHandle r = x;
  if (f < shape.size()) {
    const Operand& real = cx.operand(x.id);
    const bool held = f < real.shape.size() && real.shape[f] == 0 &&
                      same_size(cx, sym_dim(x.id, real.shape, static_cast<int64_t>(f)), dims[f]);
    if (!held) {
      Dims to(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(f) + 1);
      to.push_back(product(dims, f + 1, dims.size()));
      r = emit_reshape(cx, {x.id, real}, to);
    }
  }
  return {r.id, r.op.with_shape(shape)};
}

// The elementwise arithmetic lowered below, by kind.
const std::map<c10::Symbol, nnapi::Op>& arithmetic() {
  static const std::map<c10::Symbol, nnapi::Op> ops = {{c10::aten::add, nnapi::Op::Add},
                                                       {c10::aten::sub, nnapi::Op::Sub},
                                                       {c10::aten::mul, nnapi::Op::Mul},
                                                       {c10::aten::div, nnapi::Op::Div}};
  return ops;
}

// The elementwise operations of one tensor lowered below for rank > 4, by kind.
const std::map<c10::Symbol, nnapi::Op>& unary_elementwise() {
  static const std::map<c10::Symbol, nnapi::Op> ops = {
      {c10::aten::sigmoid, nnapi::Op::Logistic}, {c10::aten::relu, nnapi::Op::Relu},
      {c10::aten::exp, nnapi::Op::Exp},          {c10::aten::log, nnapi::Op::Log},
      {c10::aten::sqrt, nnapi::Op::Sqrt},        {c10::aten::rsqrt, nnapi::Op::Rsqrt},
      {c10::aten::neg, nnapi::Op::Neg},          {c10::aten::abs, nnapi::Op::Abs}};
  return ops;
}

// The identity ops: their result is their input (view.cpp, layout.cpp).
bool is_identity(c10::Symbol k) {
  static const KindSet kinds(
      {c10::aten::contiguous, c10::aten::detach, c10::aten::dropout, c10::aten::to});
  return kinds.count(k) != 0;
}

// Whether every use of `v` only reshapes, permutes, selects from, slices or
// unbinds it, is an operand of arithmetic, of an elementwise operation, of a
// dequantize or of a softmax lowered below, or is a part of a cat or an einsum (through its
// list), or an identity op whose result is used so: then `v` may stay a buffer read with its rank >
// 4 shape. (A view whose use is a transpose may be ShuffleNet's channel shuffle, a FusionPlan group
// of layout.cpp.) Whether `v` is only returned by the graph (itself or in the returned tuple): the
// converted module reshapes such outputs (converter.cpp).
bool only_returned(const Value* v) {
  for (const torch::jit::Use& u : v->uses()) {
    const Node* n = u.user;
    if (n->kind() == c10::prim::TupleConstruct && n->output()->uses().size() == 1) {
      n = n->output()->uses()[0].user;
    }
    if (n->kind() != c10::prim::Return) return false;
  }
  return v->hasUses();
}

bool only_reshaped(const Value* v, bool transposes) {
  if (only_returned(v)) return true;
  static const KindSet kinds({c10::aten::view, c10::aten::reshape, c10::aten::permute,
                              c10::aten::select, c10::aten::slice, c10::aten::pow,
                              c10::aten::unbind, c10::aten::softmax, c10::aten::log_softmax,
                              c10::aten::dequantize});
  static const c10::Symbol transpose = c10::aten::transpose;
  for (const torch::jit::Use& u : v->uses()) {
    const c10::Symbol k = u.user->kind();
    if (arithmetic().count(k) && u.offset < 2) continue;
    if (is_identity(k) && u.offset == 0 && only_reshaped(u.user->output(), transposes)) continue;
    if (k == c10::prim::ListConstruct) {
      const auto& list_uses = u.user->output()->uses();
      const bool to_reader = std::all_of(list_uses.begin(), list_uses.end(), [](const auto& l) {
        const c10::Symbol lk = l.user->kind();
        return (lk == c10::aten::cat && l.offset == 0) ||
               (lk == c10::aten::einsum && l.offset == 1);
      });
      if (to_reader && !list_uses.empty()) continue;
      return false;
    }
    const bool ok =
        kinds.count(k) || unary_elementwise().count(k) || (transposes && k == transpose);
    if (!ok || u.offset != 0) return false;
  }
  return v->hasUses();
}

// `x`'s contiguous buffer read as `dims` (same element count), bound to `out`:
// no operation (or a RESHAPE that hold needs) when `dims` has rank > 4 (so the
// uses come here) and `out` is only reshaped again, else a RESHAPE.
void bind_as(LoweringContext& cx, const OperandHandle& x, const Dims& dims, const Value* out) {
  if (dims.size() > 4 && holdable(shape_of(dims)) && only_reshaped(out, true)) {
    const OperandHandle h = hold(cx, x, dims);
    cx.reinterpret(out, h.id, h.op);
    return;
  }
  emit_reshape(cx, x, dims, out);
}

// A RESHAPE of contiguous `x` to `dims`, or `x` when it already has them.
OperandHandle reshape_to(LoweringContext& cx, const OperandHandle& x, const Dims& dims) {
  if (x.op.shape == shape_of(dims)) {
    const Dims have = sym_shape(x);
    bool same = true;
    for (size_t d = 0; d < dims.size(); ++d) same = same && same_size(cx, have[d], dims[d]);
    if (same) return x;
  }
  return emit_reshape(cx, x, dims);
}

}  // namespace

// view/reshape to rank > 4, only reshaped again.
bool lower_high_rank_view(LoweringContext& cx, const Node* node) {
  if (!cx.has_operand(node->input(0)) || !only_reshaped(node->output(), false)) return false;
  OperandHandle in = cx.get_operand(node->input(0));
  Dims dims = cx.sym_int_list(node->input(1));
  if (dims.size() <= 4) return false;
  const bool fixed =
      !has_flexible(in.op.shape) &&
      std::all_of(dims.begin(), dims.end(), [](const SymInt& d) { return d.is_constant(); });
  if (fixed) {
    Shape shape = shape_of(dims);
    try {
      shape = at::scalar_tensor(0).expand(in.op.shape).reshape(shape).sizes().vec();
    } catch (const c10::Error& e) {
      fail("can't reshape " + shape_str(in.op.shape) + " to " + shape_str(shape) + ": " +
           e.what_without_backtrace());
    }
    dims = fixed_dims(shape);
  } else {
    dims = view_dims(cx, in, std::move(dims));
    if (!holdable(shape_of(dims))) return false;
  }
  const OperandHandle x = emit_relayout(cx, in, DimOrder::Contiguous);
  const OperandHandle h = hold(cx, x, dims);
  cx.reinterpret(node->output(), h.id, h.op);
  return true;
}

// The groups of input dims (size-1 dims dropped) that stay adjacent under
// the permutation `dims` of a contiguous `in_tensor` of sizes `in`, merged:
// one RESHAPE and one TRANSPOSE of rank <= 4, or more where more than 4
// groups remain. The operand made.
OperandHandle permute_merged_raw(LoweringContext& cx, const OperandHandle& in_tensor,
                                 const Dims& in, std::vector<int64_t> dims) {
  const auto rank = static_cast<int64_t>(in.size());
  check(static_cast<int64_t>(dims.size()) == rank, "permute needs one dim per input dim");
  for (int64_t& d : dims) d = py_index(d, rank);
  auto is_one = [&](int64_t d) { return in[d].is_constant() && in[d].value == 1; };
  // Groups of input dims (size-1 dims dropped) that stay adjacent in the output.
  std::vector<std::vector<int64_t>> groups;  // in output order
  for (int64_t d : dims) {
    if (is_one(d)) continue;
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
  Dims size(groups.size(), SymInt{1, ""});
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int64_t d : groups[g]) size[g] = sym_arith(size[g], '*', in[d]);
  }
  Dims merged;
  for (size_t g : order) merged.push_back(size[g]);
  OperandHandle x = emit_relayout(cx, in_tensor, DimOrder::Contiguous);
  if (groups.size() <= 4) {
    x = reshape_to(cx, x, merged);
    std::vector<int64_t> perm(groups.size());
    for (size_t i = 0; i < groups.size(); ++i) {
      perm[i] = std::find(order.begin(), order.end(), i) - order.begin();
    }
    return emit_permute(cx, x, perm);
  }
  // cur: the groups in their current order; place output group i at i.
  std::vector<size_t> cur = order;
  for (size_t i = 0; i < groups.size(); ++i) {
    const size_t j = std::find(cur.begin(), cur.end(), i) - cur.begin();
    if (j == i) continue;
    Dims s;
    for (size_t g : cur) s.push_back(size[g]);
    x = reshape_to(cx, x, {product(s, 0, i), product(s, i, j), s[j], product(s, j + 1, s.size())});
    x = emit_permute(cx, x, {0, 2, 1, 3});
    std::rotate(cur.begin() + i, cur.begin() + j, cur.begin() + j + 1);
  }
  return x;
}

// permute by `perm` of contiguous `in` of sizes `dims`: permute_merged_raw,
// held as the permuted sizes.
OperandHandle permute_merged(LoweringContext& cx, const OperandHandle& in, const Dims& dims,
                             std::vector<int64_t> perm) {
  const OperandHandle x = permute_merged_raw(cx, in, dims, perm);
  Dims out;
  for (int64_t d : perm) out.push_back(dims[py_index(d, static_cast<int64_t>(dims.size()))]);
  return hold(cx, {x.id, cx.operand(x.id)}, out);
}

// permute by `perm` of a contiguous tensor of rank > 4 (a record holding it
// as hold says).
OperandHandle permute_merged(LoweringContext& cx, const OperandHandle& in,
                             std::vector<int64_t> perm) {
  return permute_merged(cx, in, sym_shape(in), std::move(perm));
}

void bind_reshaped(LoweringContext& cx, const OperandHandle& x, const Shape& shape,
                   const Value* out) {
  bind_as(cx, x, fixed_dims(shape), out);
}

namespace {

// permute (or transpose) by `dims` of a tensor of rank > 4.
bool lower_high_rank_permute(LoweringContext& cx, const Node* node, std::vector<int64_t> dims) {
  if (!cx.has_operand(node->input(0))) return false;
  const OperandHandle in = cx.get_operand(node->input(0));
  const auto rank = static_cast<int64_t>(in.op.shape.size());
  if (rank <= 4) return false;
  const Dims in_dims = sym_shape(in);
  const OperandHandle r = permute_merged_raw(cx, in, in_dims, dims);
  Dims out;
  for (int64_t d : dims) out.push_back(in_dims[py_index(d, rank)]);
  bind_as(cx, {r.id, cx.operand(r.id)}, out, node->output());
  return true;
}

// A tensor of rank > 4 read as 3-D: (dims before d, dim d, dims after d).
OperandHandle as_3d(LoweringContext& cx, const OperandHandle& x, int64_t d) {
  const Dims s = sym_shape(x);
  const auto at = static_cast<size_t>(d);
  return reshape_to(cx, emit_relayout(cx, x, DimOrder::Contiguous),
                    {product(s, 0, at), s[at], product(s, at + 1, s.size())});
}

// `x`'s sizes with dim d of size `size`, or without dim d (size < 0).
Dims with_dim(const OperandHandle& x, int64_t d, int64_t size) {
  Dims dims = sym_shape(x);
  if (size < 0) {
    dims.erase(dims.begin() + d);
  } else {
    dims[d] = SymInt{size, ""};
  }
  return dims;
}

// The input of rank > 4 of a node along a dim (select, slice, unbind:
// input 0, the dim input 1).
struct AlongDim {
  OperandHandle x;
  int64_t d;
};

std::optional<AlongDim> high_rank_along(LoweringContext& cx, const Node* node) {
  if (!cx.has_operand(node->input(0))) return std::nullopt;
  const OperandHandle x = cx.get_operand(node->input(0));
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  if (rank <= 4) return std::nullopt;
  return AlongDim{x, py_index(cx.constant_int(node->input(1)), rank)};
}

}  // namespace

// select(x, d, i) of a tensor of rank > 4 (d not flexible): x read as (dims
// before d, dim d, dims after d), a STRIDED_SLICE of [i, i + 1) along the middle.
bool lower_high_rank_select(LoweringContext& cx, const Node* node) {
  const std::optional<AlongDim> a = high_rank_along(cx, node);
  if (!a || a->x.op.shape[a->d] == 0) return false;
  const OperandHandle& in = a->x;
  const int64_t d = a->d;
  const int64_t i = py_index(cx.constant_int(node->input(2)), in.op.shape[d]);
  bind_as(cx, emit_take(cx, as_3d(cx, in, d), 1, i, 1, 1), with_dim(in, d, -1), node->output());
  return true;
}

// slice(x, d, start, stop, step) of a tensor of rank > 4 (d not flexible; a
// detection head's `p[..., 4:]`): x read as (dims before d, dim d, dims after
// d), a STRIDED_SLICE along the middle (NNAPI's takes rank <= 4).
bool lower_high_rank_slice(LoweringContext& cx, const Node* node) {
  if (cx.has_symbolic(node->input(3))) return false;
  const std::optional<AlongDim> a = high_rank_along(cx, node);
  if (!a) return false;
  const OperandHandle& in = a->x;
  const int64_t d = a->d;
  const int64_t size = in.op.shape[d];
  if (size == 0) return false;
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
  bind_as(cx, emit_take(cx, as_3d(cx, in, d), 1, start, count, step), with_dim(in, d, count),
          node->output());
  return true;
}

// unbind(x, d) of a tensor of rank 5 (d not flexible; timm's attention
// `q, k, v = qkv.reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4).unbind(0)`):
// x read as (dims before d, dim d, dims after d), one SPLIT along the middle,
// each part RESHAPEd to its rank-4 piece (the ListUnpack binds the parts).
bool lower_high_rank_unbind(LoweringContext& cx, const Node* node) {
  const std::optional<AlongDim> a = high_rank_along(cx, node);
  if (!a) return false;
  const OperandHandle& in = a->x;
  const int64_t d = a->d;
  check(in.op.shape.size() == 5 && in.op.shape[d] != 0, [&] {
    return "unbind of a tensor of shape " + shape_str(in.op.shape) + " (0: flexible) along dim " +
           std::to_string(d) +
           ": nnapi-convert unbinds a tensor of rank > 4 only when it has rank 5 and the dim "
           "has a fixed size (the pieces are then NNAPI tensors of rank 4); select the pieces "
           "one by one (x[0], x[1], ...) or reshape the tensor to rank 4 or less first";
  });
  const Dims piece = with_dim(in, d, -1);
  std::vector<int32_t> parts;
  for (int32_t id : emit_split(cx, as_3d(cx, in, d), 1, std::vector<int64_t>(in.op.shape[d], 1))) {
    parts.push_back(emit_reshape(cx, {id, cx.operand(id)}, piece).id);
  }
  cx.add_split_outputs(node->output(), parts);
  return true;
}

OperandHandle read_around(LoweringContext& cx, const OperandHandle& x, int64_t d) {
  return as_3d(cx, x, d);
}

void bind_reshaped(LoweringContext& cx, const OperandHandle& x, const std::vector<SymInt>& dims,
                   const Value* out) {
  bind_as(cx, x, dims, out);
}

namespace {

// One side of arithmetic of rank > 4: an operand, or a constant tensor or
// number (float32 when the other side is), and its sizes.
struct Side {
  std::optional<OperandHandle> x;
  at::Tensor t;
  Dims dims;
};

std::optional<Side> arithmetic_side(LoweringContext& cx, const Value* v) {
  if (cx.has_operand(v)) {
    const OperandHandle x = cx.get_operand(v);
    return Side{x, {}, sym_shape(x)};
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
  return Side{std::nullopt, t, fixed_dims(t.sizes().vec())};
}

// `s` as `dims` (same element count, contiguous): a weight for a constant,
// else the operand itself when its buffer has those sizes, else a RESHAPE.
OperandHandle side_as(LoweringContext& cx, const Side& s, const Dims& dims) {
  if (!s.x) {
    const int32_t id =
        cx.add_weight(s.t.reshape(shape_of(dims)).contiguous(), DimOrder::Contiguous);
    return {id, cx.operand(id)};
  }
  const OperandHandle real{s.x->id, cx.operand(s.x->id)};
  if (real.op.dim_order == DimOrder::Contiguous && real.op.shape == shape_of(dims)) {
    const Dims have = sym_shape(real);
    bool same = true;
    for (size_t d = 0; d < dims.size(); ++d) same = same && same_size(cx, have[d], dims[d]);
    if (same) return real;
  }
  return reshape_to(cx, emit_relayout(cx, *s.x, DimOrder::Contiguous), dims);
}

// add/sub/mul/div of rank > 4 as the op on dims merged to rank <= 4.
bool lower_high_rank_arithmetic(LoweringContext& cx, const Node* node, nnapi::Op op) {
  const bool add_sub = op == nnapi::Op::Add || op == nnapi::Op::Sub;
  if (node->inputs().size() != (add_sub ? 3u : 2u)) return false;
  std::optional<Side> a = arithmetic_side(cx, node->input(0));
  std::optional<Side> b = arithmetic_side(cx, node->input(1));
  if (!a || !b || !(a->x || b->x)) return false;
  const size_t rank = std::max(a->dims.size(), b->dims.size());
  if (rank <= 4 || (add_sub && cx.constant_number(node->input(2)) != 1)) return false;
  const std::string where = "%" + node->output()->debugName() + " = " +
                            node->kind().toQualString() + " of rank " + std::to_string(rank);
  for (Side* s : {&*a, &*b}) s->dims.insert(s->dims.begin(), rank - s->dims.size(), SymInt{1, ""});
  auto is_one = [](const SymInt& d) { return d.is_constant() && d.value == 1; };
  // The result's sizes; a flexible size broadcasts with 1 or itself only
  // (else pointwise.cpp decides).
  Dims out;
  for (size_t d = 0; d < rank; ++d) {
    const SymInt &p = a->dims[d], &q = b->dims[d];
    if (is_one(p) || same_size(cx, p, q)) {
      out.push_back(q);
    } else if (is_one(q)) {
      out.push_back(p);
    } else if (p.is_constant() && q.is_constant()) {
      fail(where + ": cannot broadcast shapes " + shape_str(shape_of(a->dims)) + " and " +
           shape_str(shape_of(b->dims)));
    } else {
      return false;
    }
  }
  // Dims grouped by how they broadcast: bit 0 a broadcasts, bit 1 b does;
  // dims where both are 1 are dropped.
  std::vector<int> kind;
  std::vector<std::vector<size_t>> groups;
  for (size_t d = 0; d < rank; ++d) {
    if (is_one(out[d])) continue;
    kind.push_back((is_one(a->dims[d]) ? 1 : 0) | (is_one(b->dims[d]) ? 2 : 0));
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
    return where + " of " + shape_str(shape_of(a->dims)) + " and " + shape_str(shape_of(b->dims)) +
           ": NNAPI takes rank <= 4, and the dims merge to no fewer than " +
           std::to_string(groups.size()) + " groups that broadcast alike";
  });
  auto grouped = [&](const Dims& s) {
    Dims r;
    for (const auto& g : groups) r.push_back(product(s, g.front(), g.back() + 1));
    if (r.empty()) r.push_back(SymInt{1, ""});
    return r;
  };
  const OperandHandle x = side_as(cx, *a, grouped(a->dims));
  const OperandHandle y = side_as(cx, *b, grouped(b->dims));
  check(x.op.type == y.op.type, [&] { return where + ": operands have different types"; });
  const OperandHandle r = emit_binary(cx, op, x, y, cx.fuse_following_activation(node->output()));
  bind_as(cx, r, out, node->output());
  return true;
}

// An operand of rank > 4.
std::optional<OperandHandle> high_rank_operand(LoweringContext& cx, const Value* v) {
  if (!cx.has_operand(v)) return std::nullopt;
  const OperandHandle x = cx.get_operand(v);
  if (x.op.shape.size() <= 4) return std::nullopt;
  return x;
}

// `x` of rank > 4 as its data in 1-D.
OperandHandle flat(LoweringContext& cx, const OperandHandle& x) {
  return side_as(cx, Side{x, {}, sym_shape(x)}, {sym_numel(x)});
}

// sigmoid, relu, ... of rank > 4: the operation on the data as 1-D.
bool lower_high_rank_unary(LoweringContext& cx, const Node* node, nnapi::Op op) {
  const std::optional<OperandHandle> x = high_rank_operand(cx, node->input(0));
  if (!x) return false;
  bind_as(cx, emit_unary(cx, op, flat(cx, *x)), sym_shape(*x), node->output());
  return true;
}

}  // namespace

// dequantize of rank > 4 (FX quantization dequantizes timm's qkv permute
// before its unbind): DEQUANTIZE of the data as 1-D.
bool lower_high_rank_dequantize(LoweringContext& cx, const Node* node) {
  const std::optional<OperandHandle> x = high_rank_operand(cx, node->input(0));
  if (!x || node->inputs().size() != 1) return false;
  bind_as(cx, emit_dequantize(cx, flat(cx, *x)), sym_shape(*x), node->output());
  return true;
}

// pow(x, 2) of rank > 4 (YOLO's `(xy * 2) ** 2`): x * x on the data as 1-D;
// other exponents go to pointwise.cpp, as an elementwise op of the 1-D data.
bool lower_high_rank_pow(LoweringContext& cx, const Node* node) {
  const std::optional<OperandHandle> x = high_rank_operand(cx, node->input(0));
  if (!x || node->inputs().size() != 2 || !cx.has_constant(node->input(1))) return false;
  const c10::IValue& e = cx.constant(node->input(1)).value;
  if (!e.isScalar() && !(e.isTensor() && e.toTensor().dim() == 0)) return false;
  const double exponent = e.isScalar() ? e.toScalar().toDouble() : e.toTensor().item<double>();
  check(x->op.type == nnapi::OperandType::TensorFloat32,
        "pow of a non-float tensor is not supported");
  const OperandHandle data = flat(cx, *x);
  OperandHandle r;
  if (exponent == 1) {
    r = data;
  } else if (exponent == 2) {
    r = emit_binary(cx, nnapi::Op::Mul, data, data);
  } else if (exponent == 0.5) {
    r = emit_unary(cx, nnapi::Op::Sqrt, data);
  } else if (exponent == -0.5) {
    r = emit_unary(cx, nnapi::Op::Rsqrt, data);
  } else {
    r = emit_binary(cx, nnapi::Op::Pow, data,
                    float_scalar_tensor(cx, static_cast<float>(exponent)));
  }
  bind_as(cx, r, sym_shape(*x), node->output());
  return true;
}

// cat of rank > 4 tensors along d, not a flexible dim (YOLO's
// torch.cat((xy, wh, conf), -1)): a CONCATENATION of the middle dims of the
// parts read as 3-D.
bool lower_high_rank_cat(LoweringContext& cx, const Node* node) {
  if (!cx.has_sequence(node->input(0))) return false;
  const std::vector<const Value*>& values = cx.sequence(node->input(0));
  std::vector<OperandHandle> parts;
  for (const Value* v : values) {
    const std::optional<OperandHandle> x = high_rank_operand(cx, v);
    if (!x) return false;
    parts.push_back(*x);
  }
  if (parts.empty()) return false;
  const auto rank = static_cast<int64_t>(parts[0].op.shape.size());
  const int64_t d = py_index(cx.constant_int(node->input(1)), rank);
  const Dims first = sym_shape(parts[0]);
  for (const OperandHandle& p : parts) {
    if (static_cast<int64_t>(p.op.shape.size()) > d && p.op.shape[d] == 0) return false;
  }
  Dims along;
  std::vector<OperandHandle> parts_3d;
  for (const OperandHandle& p : parts) {
    const Dims a = sym_shape(p);
    check(static_cast<int64_t>(a.size()) == rank && p.op.type == parts[0].op.type, [&] {
      return "cat inputs have different ranks or types: " + shape_str(p.op.shape) + ", " +
             shape_str(parts[0].op.shape);
    });
    along.push_back(a[d]);
    bool same = true;
    for (int64_t i = 0; i < rank; ++i) same = same && (i == d || same_size(cx, a[i], first[i]));
    check(same, [&] {
      return "cat inputs differ outside the cat dim: " + shape_str(p.op.shape) + " vs " +
             shape_str(parts[0].op.shape);
    });
    const auto at = static_cast<size_t>(d);
    parts_3d.push_back(
        side_as(cx, Side{p, {}, a}, {product(a, 0, at), a[at], product(a, at + 1, a.size())}));
  }
  Dims out = first;
  out[d] = concat_dim(along);
  bind_as(cx, emit_concat(cx, parts_3d, 1), out, node->output());
  return true;
}

// unsqueeze to rank > 4: the same buffer read with a 1 inserted, no
// operation, when its uses read it so (bind_as); with a flexible size when
// it is returned (the module reshapes it, with -1 for that size) or the 1
// goes after that size (the operand holds the record, see hold).
bool lower_high_rank_unsqueeze(LoweringContext& cx, const Node* node) {
  if (!cx.has_operand(node->input(0))) return false;
  const OperandHandle x = cx.get_operand(node->input(0));
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  if (rank < 4) return false;
  int64_t dim = cx.constant_int(node->input(1));
  if (dim < 0) dim += rank + 1;
  check(dim >= 0 && dim <= rank, "unsqueeze dim out of range");
  Shape shape = x.op.shape;
  shape.insert(shape.begin() + dim, 1);
  const auto f = std::find(shape.begin(), shape.end(), 0) - shape.begin();
  const bool held = holdable(shape) && f < dim;
  if (has_flexible(shape) && !held && !only_returned(node->output())) return false;
  if (!only_reshaped(node->output(), true)) return false;
  const OperandHandle c = emit_relayout(cx, x, DimOrder::Contiguous);
  cx.reinterpret(node->output(), c.id, c.op.with_shape(shape));
  return true;
}

bool lower_high_rank_permute(LoweringContext& cx, const Node* node) {
  return lower_high_rank_permute(cx, node, cx.constant_int_list(node->input(1)));
}

bool lower_high_rank_transpose(LoweringContext& cx, const Node* node) {
  if (!cx.has_operand(node->input(0))) return false;
  const auto rank = static_cast<int64_t>(cx.get_operand(node->input(0)).op.shape.size());
  if (rank <= 4) return false;
  std::vector<int64_t> dims(rank);
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[py_index(cx.constant_int(node->input(1)), rank)],
            dims[py_index(cx.constant_int(node->input(2)), rank)]);
  return lower_high_rank_permute(cx, node, dims);
}

bool lower_high_rank_elementwise(LoweringContext& cx, const Node* node) {
  const auto binary = arithmetic().find(node->kind());
  if (binary != arithmetic().end()) return lower_high_rank_arithmetic(cx, node, binary->second);
  return lower_high_rank_unary(cx, node, unary_elementwise().at(node->kind()));
}

}  // namespace nnapi_convert

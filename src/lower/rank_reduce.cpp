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

// The elementwise operations of one tensor lowered below for rank > 4, by kind.
const std::map<c10::Symbol, nnapi::Op>& unary_elementwise() {
  static const std::map<c10::Symbol, nnapi::Op> ops = {
      {c10::Symbol::fromQualString("aten::sigmoid"), nnapi::Op::Logistic},
      {c10::Symbol::fromQualString("aten::relu"), nnapi::Op::Relu},
      {c10::Symbol::fromQualString("aten::exp"), nnapi::Op::Exp},
      {c10::Symbol::fromQualString("aten::log"), nnapi::Op::Log},
      {c10::Symbol::fromQualString("aten::sqrt"), nnapi::Op::Sqrt},
      {c10::Symbol::fromQualString("aten::rsqrt"), nnapi::Op::Rsqrt},
      {c10::Symbol::fromQualString("aten::neg"), nnapi::Op::Neg},
      {c10::Symbol::fromQualString("aten::abs"), nnapi::Op::Abs}};
  return ops;
}

// The identity ops: their result is their input (view.cpp, layout.cpp).
bool is_identity(c10::Symbol k) {
  static const std::set<c10::Symbol> kinds = {
      c10::Symbol::fromQualString("aten::contiguous"), c10::Symbol::fromQualString("aten::detach"),
      c10::Symbol::fromQualString("aten::dropout"), c10::Symbol::fromQualString("aten::to")};
  return kinds.count(k) != 0;
}

// Whether every use of `v` only reshapes, permutes, selects from or slices it,
// is an operand of arithmetic or of an elementwise operation lowered below,
// or is a part of a cat (through its list), or an identity op whose result is
// used so: then `v` may stay a buffer read with its rank > 4 shape. (A view
// whose use is a transpose may be ShuffleNet's channel shuffle, a FusionPlan
// group of layout.cpp.)
// Whether `v` is only returned by the graph (itself or in the returned
// tuple): the converted module reshapes such outputs (converter.cpp).
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
  static const std::set<c10::Symbol> kinds = {
      c10::Symbol::fromQualString("aten::view"),    c10::Symbol::fromQualString("aten::reshape"),
      c10::Symbol::fromQualString("aten::permute"), c10::Symbol::fromQualString("aten::select"),
      c10::Symbol::fromQualString("aten::slice"),   c10::Symbol::fromQualString("aten::pow")};
  static const c10::Symbol transpose = c10::Symbol::fromQualString("aten::transpose");
  for (const torch::jit::Use& u : v->uses()) {
    const c10::Symbol k = u.user->kind();
    if (arithmetic().count(k) && u.offset < 2) continue;
    if (is_identity(k) && u.offset == 0 && only_reshaped(u.user->output(), transposes)) continue;
    if (k == c10::prim::ListConstruct) {
      const auto& list_uses = u.user->output()->uses();
      const bool to_cat = std::all_of(list_uses.begin(), list_uses.end(), [](const auto& l) {
        return l.user->kind() == c10::Symbol::fromQualString("aten::cat") && l.offset == 0;
      });
      if (to_cat && !list_uses.empty()) continue;
      return false;
    }
    const bool ok =
        kinds.count(k) || unary_elementwise().count(k) || (transposes && k == transpose);
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
    shape = at::scalar_tensor(0).expand(in.shape).reshape(shape).sizes().vec();
  } catch (const c10::Error& e) {
    fail("can't reshape " + shape_str(in.shape) + " to " + shape_str(shape) + ": " +
         e.what_without_backtrace());
  }
  const Tensor x = emit_relayout(cx, {id, in}, DimOrder::Contiguous);
  cx.reinterpret(node->output(), x.id, x.op.with_shape(shape));
  return true;
}

}  // namespace

// permute by `dims` of a fixed-size contiguous tensor of rank > 4: the input
// dims that stay adjacent merged (size-1 dims dropped), one RESHAPE and one
// TRANSPOSE of rank <= 4, or more where more than 4 groups remain.
Tensor permute_merged(LoweringContext& cx, const Tensor& in_tensor, std::vector<int64_t> dims) {
  const Operand& in = in_tensor.op;
  const auto rank = static_cast<int64_t>(in.shape.size());
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
  Tensor x = emit_relayout(cx, in_tensor, DimOrder::Contiguous);
  if (groups.size() <= 4) {
    x = reshape_to(cx, x, merged);
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
  return {x.id, x.op.with_shape(out_shape)};
}

void bind_reshaped(LoweringContext& cx, const Tensor& x, const Shape& shape, const Value* out) {
  bind_as(cx, x, shape, out);
}

namespace {

// permute (or transpose) by `dims` of a fixed-size tensor of rank > 4.
bool lower_high_rank_permute(LoweringContext& cx, const Node* node, std::vector<int64_t> dims) {
  if (!cx.has_operand(node->input(0))) return false;
  const Tensor in = cx.get_operand(node->input(0));
  if (in.op.shape.size() <= 4 || has_flexible(in.op.shape)) return false;
  const Tensor r = permute_merged(cx, in, std::move(dims));
  bind_as(cx, {r.id, cx.operand(r.id)}, r.op.shape, node->output());
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

// A fixed-size operand of rank > 4 as its contiguous data read as `shape`.
std::optional<Tensor> high_rank_operand(LoweringContext& cx, const Value* v) {
  if (!cx.has_operand(v)) return std::nullopt;
  const Tensor x = cx.get_operand(v);
  if (x.op.shape.size() <= 4 || has_flexible(x.op.shape)) return std::nullopt;
  return x;
}

// The rank > 4 tensor `x` read as 3-D: (dims before d, dim d, dims after d).
Tensor as_3d(LoweringContext& cx, const Tensor& x, int64_t d) {
  const Shape& s = x.op.shape;
  return side_as(cx, Side{x, {}, s}, {product(s, 0, d), s[d], product(s, d + 1, s.size())});
}

// sigmoid, relu, ... of rank > 4: the operation on the data as 1-D.
bool lower_high_rank_unary(LoweringContext& cx, const Node* node, nnapi::Op op) {
  const std::optional<Tensor> x = high_rank_operand(cx, node->input(0));
  if (!x) return false;
  const Shape& s = x->op.shape;
  const Tensor flat = side_as(cx, Side{*x, {}, s}, {product(s, 0, s.size())});
  bind_as(cx, emit_unary(cx, op, flat), s, node->output());
  return true;
}

// pow(x, 2) of rank > 4 (YOLO's `(xy * 2) ** 2`): x * x on the data as 1-D;
// other exponents go to pointwise.cpp, as an elementwise op of the 1-D data.
bool lower_high_rank_pow(LoweringContext& cx, const Node* node) {
  const std::optional<Tensor> x = high_rank_operand(cx, node->input(0));
  if (!x || node->inputs().size() != 2 || !cx.has_constant(node->input(1))) return false;
  const c10::IValue& e = cx.constant(node->input(1)).value;
  if (!e.isScalar() && !(e.isTensor() && e.toTensor().dim() == 0)) return false;
  const double exponent = e.isScalar() ? e.toScalar().toDouble() : e.toTensor().item<double>();
  check(x->op.type == nnapi::OperandType::TensorFloat32,
        "pow of a non-float tensor is not supported");
  const Shape& s = x->op.shape;
  const Tensor flat = side_as(cx, Side{*x, {}, s}, {product(s, 0, s.size())});
  Tensor r;
  if (exponent == 1) {
    r = flat;
  } else if (exponent == 2) {
    r = emit_binary(cx, nnapi::Op::Mul, flat, flat);
  } else if (exponent == 0.5) {
    r = emit_unary(cx, nnapi::Op::Sqrt, flat);
  } else if (exponent == -0.5) {
    r = emit_unary(cx, nnapi::Op::Rsqrt, flat);
  } else {
    r = emit_binary(cx, nnapi::Op::Pow, flat,
                    float_scalar_tensor(cx, static_cast<float>(exponent)));
  }
  bind_as(cx, r, s, node->output());
  return true;
}

// cat of rank > 4 tensors along d (YOLO's torch.cat((xy, wh, conf), -1)): a
// CONCATENATION of the middle dims of the parts read as 3-D.
bool lower_high_rank_cat(LoweringContext& cx, const Node* node) {
  if (!cx.has_sequence(node->input(0))) return false;
  const std::vector<const Value*>& values = cx.sequence(node->input(0));
  std::vector<Tensor> parts;
  for (const Value* v : values) {
    const std::optional<Tensor> x = high_rank_operand(cx, v);
    if (!x) return false;
    parts.push_back(*x);
  }
  if (parts.empty()) return false;
  const auto rank = static_cast<int64_t>(parts[0].op.shape.size());
  const int64_t d = py_index(cx.constant_int(node->input(1)), rank);
  const Shape first = parts[0].op.shape;
  Shape out_shape = first;
  out_shape[d] = 0;
  std::vector<Tensor> parts_3d;
  for (const Tensor& p : parts) {
    Shape a = p.op.shape, b = first;
    check(static_cast<int64_t>(a.size()) == rank && p.op.type == parts[0].op.type, [&] {
      return "cat inputs have different ranks or types: " + shape_str(a) + ", " + shape_str(b);
    });
    out_shape[d] += a[d];
    a[d] = b[d] = -1;
    check(a == b, [&] {
      return "cat inputs differ outside the cat dim: " + shape_str(p.op.shape) + " vs " +
             shape_str(first);
    });
    parts_3d.push_back(as_3d(cx, p, d));
  }
  bind_as(cx, emit_concat(cx, parts_3d, 1), out_shape, node->output());
  return true;
}

// unsqueeze to rank > 4: the same buffer read with a 1 inserted, no
// operation, when its uses read it so (bind_as); a flexible size only when
// it is returned (the module reshapes it, with -1 for that size).
bool lower_high_rank_unsqueeze(LoweringContext& cx, const Node* node) {
  if (!cx.has_operand(node->input(0))) return false;
  const Tensor x = cx.get_operand(node->input(0));
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  if (rank < 4) return false;
  int64_t dim = cx.constant_int(node->input(1));
  if (dim < 0) dim += rank + 1;
  check(dim >= 0 && dim <= rank, "unsqueeze dim out of range");
  Shape shape = x.op.shape;
  shape.insert(shape.begin() + dim, 1);
  if (has_flexible(shape) && !only_returned(node->output())) return false;
  if (!only_reshaped(node->output(), true)) return false;
  const Tensor c = emit_relayout(cx, x, DimOrder::Contiguous);
  cx.reinterpret(node->output(), c.id, c.op.with_shape(shape));
  return true;
}

// `fallback`, the lowering registered before, for what the above leave.
void chain(LoweringTable& t, const char* kind,
           std::function<bool(LoweringContext& cx, const Node* node)> lower) {
  t.extend(kind, [lower = std::move(lower)](LoweringContext& cx, const Node* node, const LowerFn&) {
    return lower(cx, node);
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
  chain(t, "aten::unsqueeze", lower_high_rank_unsqueeze);
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

bool takes_rank_above_4(c10::Symbol kind) {
  static const std::set<c10::Symbol> kinds = [] {
    std::set<c10::Symbol> k;
    for (const char* name : {"aten::view",
                             "aten::reshape",
                             "aten::flatten",
                             "aten::permute",
                             "aten::transpose",
                             "aten::select",
                             "aten::slice",
                             "aten::unsqueeze",
                             "aten::pow",
                             "aten::size",
                             "aten::einsum",
                             "aten::pad",
                             "aten::constant_pad_nd",
                             "aten::reflection_pad3d",
                             "aten::replication_pad3d",
                             "aten::feature_dropout",
                             "aten::alpha_dropout",
                             "aten::feature_alpha_dropout",
                             "prim::ListConstruct",
                             "prim::TupleConstruct"}) {
      k.insert(c10::Symbol::fromQualString(name));
    }
    return k;
  }();
  return kinds.count(kind) || arithmetic().count(kind) || unary_elementwise().count(kind) ||
         is_identity(kind);
}

void register_rank_reduce_arithmetic(LoweringTable& t) {
  for (const auto& [kind, op] : arithmetic()) {
    chain(t, kind.toQualString(), [op = op](LoweringContext& cx, const Node* node) {
      return lower_high_rank_arithmetic(cx, node, op);
    });
  }
  for (const auto& [kind, op] : unary_elementwise()) {
    chain(t, kind.toQualString(), [op = op](LoweringContext& cx, const Node* node) {
      return lower_high_rank_unary(cx, node, op);
    });
  }
  chain(t, "aten::pow", lower_high_rank_pow);
  chain(t, "aten::cat", lower_high_rank_cat);
}

}  // namespace nnapi_convert

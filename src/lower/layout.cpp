// Layout ops: permute, transpose, contiguous, and ShuffleNet's channel
// shuffle (a view/transpose/contiguous/view group, see fusion.h).
#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "lower/dispatch.h"
#include "lower/emit.h"
#include "lower/forms.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {
namespace {

using nnapi::Op;

// permute(x, dims). NHWC data read as (N, H, W, C), or (N, H, W, C) data read
// as NCHW, needs no operation: the buffer is already in that order.
void permute_value(LoweringContext& cx, const Value* out_value, const Value* in_value,
                   std::vector<int64_t> dims) {
  auto [in_id, in] = cx.get_operand(in_value);
  int64_t rank = static_cast<int64_t>(in.shape.size());
  check(static_cast<int64_t>(dims.size()) == rank, "permute needs one dim per input dim");
  for (int64_t& d : dims) d = py_index(d, rank);
  Shape out_shape;
  for (int64_t d : dims) out_shape.push_back(in.shape[d]);
  // A flexible dim's size variable is named by its position: reading the same
  // buffer with another shape is only possible when flexible dims stay put.
  bool flexible_moves = false;
  for (int64_t i = 0; i < rank; ++i) flexible_moves |= out_shape[i] == 0 && dims[i] != i;
  if (in.dim_order == DimOrder::ChannelsLast && dims == perm_vector(kToNhwc) && !flexible_moves) {
    Operand o = in.with_shape(out_shape);
    o.dim_order = DimOrder::Contiguous;
    cx.reinterpret(out_value, in_id, o);
    return;
  }
  if (in.dim_order == DimOrder::Contiguous && rank == 4 && dims == perm_vector(kToNchw) &&
      !flexible_moves) {
    Operand o = in.with_shape(out_shape);
    o.dim_order = DimOrder::ChannelsLast;
    cx.reinterpret(out_value, in_id, o);
    return;
  }
  // A real TRANSPOSE, in NNAPI dim order; the result is contiguous.
  std::vector<int64_t> perm = dims;
  for (int64_t& p : perm) p = nnapi_axis(in.dim_order, p);
  const auto transpose = [&](const OperandHandle& x, const Value* out) {
    Operand o = x.op;
    o.dim_order = DimOrder::Contiguous;
    int32_t perm_id = cx.model().add_int_vector(perm);
    const OperandHandle y = cx.add_output(out, o, permuted_dims(x, dims));
    add_transpose(cx.model(), x.id, perm_id, y.id);
    return y;
  };
  if (in.type == nnapi::OperandType::TensorInt32) {
    move_int32(cx, {Op::Transpose}, {{in_id, in}}, out_value,
               [&](const std::vector<OperandHandle>& x, const Value* out) {
                 return transpose(x[0], out);
               });
    return;
  }
  transpose({in_id, in}, out_value);
}

void lower_permute(LoweringContext& cx, const Node* node) {
  permute_value(cx, node->output(), node->input(0), cx.constant_int_list(node->input(1)));
}

// aten::movedim(x, source, destination), ints or int lists: dim source[i]
// goes to destination[i], the other dims keep their order (PyTorch's rule).
void lower_movedim(LoweringContext& cx, const Node* node) {
  const auto rank = static_cast<int64_t>(cx.get_operand(node->input(0)).op.shape.size());
  auto dims_of = [&](const Value* v) {
    std::vector<int64_t> dims = v->type()->kind() == c10::TypeKind::IntType
                                    ? std::vector<int64_t>{cx.constant_int(v)}
                                    : cx.constant_int_list(v);
    for (int64_t& d : dims) d = py_index(d, rank);
    return dims;
  };
  const std::vector<int64_t> src = dims_of(node->input(1)), dst = dims_of(node->input(2));
  check(src.size() == dst.size(), "movedim: source and destination differ in length");
  std::vector<int64_t> perm(rank, -1);
  std::vector<bool> moved(rank, false);
  for (size_t i = 0; i < src.size(); ++i) {
    check(perm[dst[i]] < 0 && !moved[src[i]], "movedim: a dim is named twice");
    perm[dst[i]] = src[i];
    moved[src[i]] = true;
  }
  int64_t next = 0;
  for (int64_t& p : perm) {
    if (p >= 0) continue;
    while (moved[next]) ++next;
    p = next++;
  }
  permute_value(cx, node->output(), node->input(0), perm);
}

void lower_transpose(LoweringContext& cx, const Node* node) {
  auto [id, in] = cx.get_operand(node->input(0));
  (void)id;
  int64_t rank = static_cast<int64_t>(in.shape.size());
  int64_t a = py_index(cx.constant_int(node->input(1)), rank);
  int64_t b = py_index(cx.constant_int(node->input(2)), rank);
  std::vector<int64_t> dims(rank);
  for (int64_t i = 0; i < rank; ++i) dims[i] = i;
  std::swap(dims[a], dims[b]);
  permute_value(cx, node->output(), node->input(0), dims);
}

// The only use of `v`, or nullptr.
const Node* single_use(const Value* v) {
  return v->uses().size() == 1 ? v->uses()[0].user : nullptr;
}

bool is_view(const Node* n) {
  return n && (n->kind() == c10::aten::view || n->kind() == c10::aten::reshape);
}

void lower_channel_shuffle(LoweringContext& cx, const NodeGroup& group);

// The channel shuffle of ShuffleNet:
//   view(x, [N, g, C/g, H, W]) -> transpose(1, 2) -> contiguous -> view(., [N, C, H, W])
// (contiguous optional) is NNAPI's CHANNEL_SHUFFLE, which keeps NHWC data
// NHWC. The driver lowers the group at its last view (whose size list may be
// computed after the first view) and skips the others.
std::optional<NodeGroup> match_channel_shuffle(const Node* first) {
  const Node* t = single_use(first->output());
  if (!t || t->kind() != c10::aten::transpose) return std::nullopt;
  const Node* c = single_use(t->output());
  std::vector<const Node*> nodes;
  if (c && c->kind() == c10::aten::contiguous) {
    const Node* last = single_use(c->output());
    if (!is_view(last)) return std::nullopt;
    nodes = {first, t, c, last};
  } else if (is_view(c)) {
    nodes = {first, t, c};
  } else {
    return std::nullopt;
  }
  return NodeGroup{std::move(nodes), lower_channel_shuffle};
}

void lower_channel_shuffle(LoweringContext& cx, const NodeGroup& group) {
  const Node* first = group.nodes.front();
  const Node* node = group.nodes.back();
  const OperandHandle x = cx.get_operand(first->input(0));
  const auto& [in_id, in] = x;
  std::vector<SymInt> split = cx.sym_int_list(first->input(1));
  std::vector<SymInt> merged = cx.sym_int_list(node->input(1));
  const Node* t = group.nodes[1];
  int64_t ta = cx.constant_int(t->input(1)), tb = cx.constant_int(t->input(2));
  const Shape& s = in.shape;
  // `v` is dim d of the input (the same load-time size where it is flexible).
  auto is_dim = [&, id = in_id](const SymInt& v, int64_t d) {
    return s[d] == 0 ? v.expr == flex_name(id, d) : v.is_constant() && v.value == s[d];
  };
  bool ok = s.size() == 4 && s[1] != 0 && split.size() == 5 && merged.size() == 4 &&
            split[1].is_constant() && split[2].is_constant() &&
            split[1].value * split[2].value == s[1] && is_dim(split[0], 0) && is_dim(split[3], 2) &&
            is_dim(split[4], 3) && std::min(ta, tb) == 1 && std::max(ta, tb) == 2 &&
            is_dim(merged[0], 0) &&
            (is_dim(merged[1], 1) || (merged[1].is_constant() && merged[1].value == -1)) &&
            is_dim(merged[2], 2) && is_dim(merged[3], 3);
  if (!ok) {  // an ordinary view, transpose and view: each node lowered by its kind
    for (const Node* n : group.nodes) lower_by_form(cx, *lowering_table().find(n->kind()), n);
    return;
  }
  int64_t axis = in.dim_order == DimOrder::ChannelsLast ? 3 : 1;
  ModelBuilder& m = cx.model();
  int32_t groups = m.add_int_scalar(static_cast<int32_t>(split[1].value));
  int32_t axis_id = m.add_int_scalar(static_cast<int32_t>(axis));
  int32_t out_id = make_output(cx, node->output(), in, &x);
  add_by_roles(
      m, Op::ChannelShuffle,
      {{nnapi::Role::Input, in_id}, {nnapi::Role::Groups, groups}, {nnapi::Role::Axis, axis_id}},
      {out_id});
}

// aten::contiguous(x, memory_format) and aten::clone(x, memory_format): the
// same values; how NNAPI holds them (NCHW or NHWC) is the operand's dim order.
void lower_contiguous(LoweringContext& cx, const Node* node) {
  cx.alias(node->output(), node->input(0));
}

}  // namespace

void register_layout_ops(LoweringTable& t) {
  t.add("aten::permute", lower_permute)
      .with_above_rank_4(lower_high_rank_permute)
      .with_moves(Moves::First)
      .with_folds();
  t.add("aten::transpose", lower_transpose)
      .with_above_rank_4(lower_high_rank_transpose)
      .with_moves(Moves::First)
      .with_folds();
  t.add("aten::movedim", lower_movedim).with_moves(Moves::First);
  t.add("aten::contiguous", lower_contiguous)
      .with_reads_above_rank_4()
      .with_frames(frames_per_frame())
      .with_moves(Moves::First)
      .with_folds();
  t.add("aten::clone", lower_contiguous).with_moves(Moves::First).with_folds();
  t.add_group("aten::view", match_channel_shuffle);
  t.add_group("aten::reshape", match_channel_shuffle);
}

}  // namespace nnapi_convert

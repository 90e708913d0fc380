// Padding: aten::pad and aten::constant_pad_nd with a constant, lowered by
// emit_pad (emit.cpp); aten::pad in modes "reflect", "replicate" and
// "circular", and aten::reflection_padNd / replication_padNd, which NNAPI has
// no operation for: per padded dim, slices of the input (STRIDED_SLICE,
// reversed for reflect) concatenated around it.
#include "lower/padding.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "lower/emit.h"
#include "lower/logical.h"
#include "lower/rank_reduce.h"
#include "lower/registry.h"

namespace nnapi_convert {
namespace {

using nnapi::Op;
using nnapi::OperandType;

// The value to pad with (inputs: aten::pad x, pad, mode, value?;
// aten::constant_pad_nd x, pad, value).
double pad_value(LoweringContext& cx, const Node* node) {
  const bool is_pad = node->kind() == c10::aten::pad;
  const c10::IValue& v = cx.constant(node->input(is_pad ? 3 : 2)).value;
  return v.isNone() ? 0.0 : v.toScalar().toDouble();
}

// Per-dim (before, after) amounts from PyTorch's padding list, which holds
// pairs from the last dimension backwards (numbers, or SymInts where amounts
// are known only when the model is loaded).
template <class Amount>
void pad_amounts(const std::vector<Amount>& pad, int64_t rank, std::vector<Amount>* before,
                 std::vector<Amount>* after) {
  check(pad.size() % 2 == 0 && static_cast<int64_t>(pad.size()) <= 2 * rank, [&] {
    return "a padding list of " + std::to_string(pad.size()) + " entries does not fit a rank-" +
           std::to_string(rank) + " tensor (it needs pairs, at most two per dimension)";
  });
  before->assign(rank, Amount{});
  after->assign(rank, Amount{});
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const int64_t d = rank - 1 - static_cast<int64_t>(i);
    (*before)[d] = pad[2 * i];
    (*after)[d] = pad[2 * i + 1];
  }
}

enum class EdgeMode { Reflect, Replicate, Circular };

// Pads x by before[d] / after[d] in each dim d with its own elements:
// reflected about the edge element (reflect), the edge element repeated
// (replicate), or the other end's elements (circular). The padded dims need
// fixed sizes; the others may be flexible.
OperandHandle emit_edge_pad(LoweringContext& cx, OperandHandle x,
                            const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                            EdgeMode mode, const char* mode_name, const Value* out) {
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  int64_t last = -1;
  for (int64_t d = 0; d < rank; ++d) {
    check(before[d] >= 0 && after[d] >= 0,
          "negative padding (cropping) is not supported; slice the tensor instead");
    if (before[d] || after[d]) last = d;
  }
  if (last < 0) {
    if (out) cx.reinterpret(out, x.id, x.op);
    return x;
  }
  for (int64_t d = 0; d <= last; ++d) {
    const int64_t b = before[d], a = after[d], n = x.op.shape[d];
    if (!b && !a) continue;
    check(n != 0, [&] {
      return std::string(mode_name) + " padding of the flexible dimension " + std::to_string(d) +
             " is not supported; give it a fixed size in --input";
    });
    const int64_t limit = mode == EdgeMode::Reflect ? n - 1 : n;
    check(mode == EdgeMode::Replicate || (b <= limit && a <= limit), [&] {
      return std::string(mode_name) + " padding by " + std::to_string(std::max(b, a)) +
             " needs a dimension " + std::to_string(d) + " larger than that, got size " +
             std::to_string(n);
    });
    std::vector<OperandHandle> parts;
    if (b) {
      if (mode == EdgeMode::Reflect) {
        parts.push_back(emit_take(cx, x, d, b, b, -1));
      } else if (mode == EdgeMode::Circular) {
        parts.push_back(emit_take(cx, x, d, n - b, b, 1));
      } else {
        parts.insert(parts.end(), b, emit_take(cx, x, d, 0, 1, 1));
      }
    }
    parts.push_back(x);
    if (a) {
      if (mode == EdgeMode::Reflect) {
        parts.push_back(emit_take(cx, x, d, n - 2, a, -1));
      } else if (mode == EdgeMode::Circular) {
        parts.push_back(emit_take(cx, x, d, 0, a, 1));
      } else {
        parts.insert(parts.end(), a, emit_take(cx, x, d, n - 1, 1, 1));
      }
    }
    x = emit_concat(cx, parts, d, d == last ? out : nullptr);
  }
  return x;
}

// PAD or PAD_V2 by `value` (emit_pad); a bool's 0/1 (padded_operand) padded
// as float32.
OperandHandle constant_pad(LoweringContext& cx, const OperandHandle& x,
                           const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                           double value, const Value* out) {
  if (x.op.type != OperandType::TensorInt32) return emit_pad(cx, x, before, after, value, out);
  Operand f = x.op;
  f.type = OperandType::TensorFloat32;
  const OperandHandle y =
      emit_pad(cx, emit_unary_to(cx, Op::Cast, x, f), before, after, value, nullptr);
  Operand back = y.op;
  back.type = OperandType::TensorInt32;
  return emit_unary_to(cx, Op::Cast, y, back, out);
}

}  // namespace

OperandHandle emit_mode_pad(LoweringContext& cx, const OperandHandle& x,
                            const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                            const std::string& mode, double value, const Value* out) {
  if (mode == "constant") return constant_pad(cx, x, before, after, value, out);
  EdgeMode edge;
  if (mode == "reflect") {
    edge = EdgeMode::Reflect;
  } else if (mode == "replicate") {
    edge = EdgeMode::Replicate;
  } else if (mode == "circular") {
    edge = EdgeMode::Circular;
  } else {
    fail("padding mode '" + mode + "' is not supported");
  }
  return emit_edge_pad(cx, x, before, after, edge, mode.c_str(), out);
}

namespace {

// Pads `x` by before / after with `pad`, bound to `out`. A fixed-size tensor
// of rank > 4 padded in its last 3 dims at most (replication_pad3d of (N, C,
// D, H, W)) has its unpadded leading dims merged into one first, as NNAPI's
// operations take rank <= 4, and the result is read with its full shape.
using PadFn = std::function<OperandHandle(const OperandHandle&, const std::vector<int64_t>&,
                                          const std::vector<int64_t>&, const Value*)>;
void pad_any_rank(LoweringContext& cx, const OperandHandle& x, const std::vector<int64_t>& before,
                  const std::vector<int64_t>& after, const Value* out, const PadFn& pad) {
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  const Shape& s = x.op.shape;
  if (rank <= 4 || std::find(s.begin(), s.end(), 0) != s.end()) {
    pad(x, before, after, out);
    return;
  }
  int64_t first = 0;  // the first padded dim
  while (first < rank && !before[first] && !after[first]) ++first;
  first = std::min(first, rank - 1);
  check(rank - first <= 3, [&] {
    return "padding " + std::to_string(rank - first) + " dims of a rank-" + std::to_string(rank) +
           " tensor: NNAPI's operations take rank 4 at most, and the unpadded leading dims "
           "merged leave more; pad 3 dims at most";
  });
  std::vector<SymInt> merged = {{1, ""}};
  for (int64_t d = 0; d < first; ++d) merged[0].value *= s[d];
  Shape padded = s;
  std::vector<int64_t> b = {0}, a = {0};
  for (int64_t d = first; d < rank; ++d) {
    merged.push_back({s[d], ""});
    b.push_back(before[d]);
    a.push_back(after[d]);
    padded[d] += before[d] + after[d];
  }
  const OperandHandle y =
      pad(emit_reshape(cx, emit_relayout(cx, x, DimOrder::Contiguous), merged), b, a, nullptr);
  bind_reshaped(cx, y, padded, out);
}

// emit_edge_pad of a tensor of any rank (pad_any_rank).
void lower_edge_pad_values(LoweringContext& cx, const OperandHandle& x,
                           const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                           EdgeMode mode, const char* mode_name, const Value* out) {
  pad_any_rank(
      cx, x, before, after, out,
      [&](const OperandHandle& y, const std::vector<int64_t>& b, const std::vector<int64_t>& a,
          const Value* o) { return emit_edge_pad(cx, y, b, a, mode, mode_name, o); });
}

// The tensor to pad. PAD, PAD_V2 and CONCATENATION take no TENSOR_INT32 nor
// TENSOR_BOOL8 at any feature level (NeuralNetworks.h): int32 numbers are
// refused; a bool is padded as int32 0/1, which moves as float32 between
// CASTs, and recorded bool.
OperandHandle padded_operand(LoweringContext& cx, const Node* node) {
  OperandHandle x = cx.get_operand(node->input(0));
  if (x.op.type == OperandType::TensorBool8) {
    x = int01_of(cx, x);
    cx.set_torch_dtype(node->output(), at::kBool);
  }
  check(x.op.type != OperandType::TensorInt32 || is_bool_value(cx, node->input(0)),
        [] { return int32_refusal("padding", "NNAPI's PAD, PAD_V2 and CONCATENATION take none"); });
  return x;
}

// Whether `node`'s padding list holds an amount known only when the model is
// loaded (computed from a flexible size).
bool pads_at_load_time(const LoweringContext& cx, const Node* node) {
  if (!cx.has_symbolic(node->input(1))) return false;
  for (const SymInt& item : cx.sym_int_list(node->input(1))) {
    if (!item.is_constant()) return true;
  }
  return false;
}

// Constant padding by amounts known only when the model is loaded (TF-style
// "same" padding of a flexible height and width, max((ceil(i / s) - 1) * s +
// (k - 1) * d + 1 - i, 0)): PAD (PAD_V2 for another value) whose paddings
// the shape-compute script sets at load time; each padded dim is the input's
// plus its amounts.
void lower_load_time_pad(LoweringContext& cx, const Node* node, const OperandHandle& x,
                         const std::string& mode, double value) {
  const std::string fix = "; give the dims the amounts are computed from fixed sizes in --input";
  check(mode == "constant",
        "padding by amounts computed from a flexible size is supported in "
        "constant mode only" +
            fix);
  check(x.op.type != OperandType::TensorInt32,
        "padding a bool tensor by amounts computed from a flexible size" + fix);
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  check(rank <= 4 && !is_frames(x.op.dim_order),
        "padding a tensor of rank above 4 by amounts computed from a flexible size" + fix);
  std::vector<SymInt> before, after;
  pad_amounts(cx.sym_int_list(node->input(1)), rank, &before, &after);
  std::vector<SymInt> dims;
  std::vector<int64_t> rows;
  std::vector<std::pair<size_t, std::string>> patches;
  for (int64_t d = 0; d < rank; ++d) {
    dims.push_back(
        sym_arith(sym_arith(sym_dim(x.id, x.op.shape, d), '+', before[d]), '+', after[d]));
  }
  for (int64_t nd = 0; nd < rank; ++nd) {
    const int64_t d = torch_dim(x.op.dim_order, nd);
    for (const SymInt* amount : {&before[d], &after[d]}) {
      check(
          !amount->is_constant() || amount->value >= 0,
          "negative padding (cropping) together with amounts computed from a flexible size" + fix);
      if (!amount->is_constant()) {
        // NNAPI's PAD takes no negative amount: the model fails to load
        // with a message instead.
        cx.add_shape_line("assert " + amount->expr + " >= 0, 'padding amount " + amount->expr +
                          " is negative'");
        patches.emplace_back(rows.size(), amount->expr);
      }
      rows.push_back(amount->is_constant() ? amount->value : 0);
    }
  }
  const int32_t paddings = cx.model().add_patched_int_vector(rows, patches, {rank, 2});
  emit_pad_operation(cx, x, paddings, dims, value, node->output());
}

void lower_pad(LoweringContext& cx, const Node* node) {
  std::string mode = "constant";
  if (node->kind() == c10::aten::pad) {
    mode = cx.constant(node->input(2)).value.toStringRef();
  }
  const double value = mode == "constant" ? pad_value(cx, node) : 0.0;
  if (pads_at_load_time(cx, node)) {
    lower_load_time_pad(cx, node, padded_operand(cx, node), mode, value);
    return;
  }
  const std::vector<int64_t> pad = cx.constant_int_list(node->input(1));
  const OperandHandle x = padded_operand(cx, node);
  std::vector<int64_t> before, after;
  pad_amounts(pad, static_cast<int64_t>(x.op.shape.size()), &before, &after);
  pad_any_rank(
      cx, x, before, after, node->output(),
      [&](const OperandHandle& y, const std::vector<int64_t>& b, const std::vector<int64_t>& a,
          const Value* out) { return emit_mode_pad(cx, y, b, a, mode, value, out); });
}

// aten::reflection_padNd / replication_padNd(x, padding).
void lower_edge_pad(LoweringContext& cx, const Node* node, EdgeMode mode, const char* name) {
  auto [in_id, in] = padded_operand(cx, node);
  std::vector<int64_t> before, after;
  pad_amounts(cx.constant_int_list(node->input(1)), static_cast<int64_t>(in.shape.size()), &before,
              &after);
  lower_edge_pad_values(cx, {in_id, in}, before, after, mode, name, node->output());
}

}  // namespace

void register_padding_ops(LoweringTable& t) {
  t.add("aten::pad", lower_pad).with_reads_above_rank_4();
  t.add("aten::constant_pad_nd", lower_pad).with_reads_above_rank_4();
  for (auto [kind, rank_above_4] :
       {std::pair{"aten::reflection_pad1d", false}, std::pair{"aten::reflection_pad2d", false},
        std::pair{"aten::reflection_pad3d", true}}) {
    KindSpec& spec = t.add(kind, [](LoweringContext& cx, const Node* n) {
      lower_edge_pad(cx, n, EdgeMode::Reflect, "reflect");
    });
    if (rank_above_4) spec.with_reads_above_rank_4();
  }
  for (auto [kind, rank_above_4] :
       {std::pair{"aten::replication_pad1d", false}, std::pair{"aten::replication_pad2d", false},
        std::pair{"aten::replication_pad3d", true}}) {
    KindSpec& spec = t.add(kind, [](LoweringContext& cx, const Node* n) {
      lower_edge_pad(cx, n, EdgeMode::Replicate, "replicate");
    });
    if (rank_above_4) spec.with_reads_above_rank_4();
  }
}

}  // namespace nnapi_convert

// Reductions and selection along dims: mean and sum over dims (MEAN,
// REDUCE_SUM; a quantized mean as PyTorch rounds it), and (NNAPI feature
// level 3) max/min over
// a dim (values: REDUCE_MAX/MIN, indices: ARGMAX/ARGMIN), amax/amin,
// argmax/argmin, whole-tensor max()/min(), prod (REDUCE_PROD), any/all
// (REDUCE_ANY/ALL of the truth, TENSOR_BOOL8), topk (TOPK_V2), and sin/cos
// (SIN; cos(x) = 1 - 2 sin(x/2)^2), and vector and Frobenius norms. Integer results are int32 in
// NNAPI; a model output PyTorch gives as int64 (indices) is made int64 by the converted module.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <string>

#include "lower/emit.h"
#include "lower/logical.h"
#include "lower/node_args.h"
#include "lower/pointwise.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {
namespace {

using nnapi::Fuse;
using nnapi::Op;
using nnapi::OperandType;

std::string kind_name(const Node* node) { return node->kind().toUnqualString(); }

// The NNAPI axes holding PyTorch dims `dims` of `x`, and the layout of a
// result that drops (or, with keep, keeps as 1) them: x is first laid out
// NCHW when a channels-last result would not hold the remaining dims in
// PyTorch's order (NHWC minus the dims is NCHW minus them when C, or H and W,
// are reduced).
struct AxesPlan {
  OperandHandle x;
  std::vector<int64_t> axes;  // NNAPI axes
  DimOrder out_order = DimOrder::Contiguous;
};

AxesPlan plan_axes(LoweringContext& cx, OperandHandle x, const std::vector<int64_t>& dims,
                   bool keep) {
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  std::vector<bool> reduced(rank, false);
  for (int64_t d : dims) reduced[py_index(d, rank)] = true;
  if (x.op.dim_order == DimOrder::ChannelsLast && !keep &&
      !(reduced[1] || (reduced[2] && reduced[3]))) {
    if (x.op.type == OperandType::TensorBool8) {
      // NNAPI's TRANSPOSE takes no TENSOR_BOOL8: through float32 0/1.
      x = bool8_of(
          cx, emit_relayout(cx, bool_as(cx, x, OperandType::TensorFloat32), DimOrder::Contiguous));
    } else {
      x = emit_relayout(cx, x, DimOrder::Contiguous);
    }
  }
  AxesPlan p{x, {}, keep ? x.op.dim_order : DimOrder::Contiguous};
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d]) p.axes.push_back(nnapi_axis(x.op, d));
  }
  std::sort(p.axes.begin(), p.axes.end());
  return p;
}

// The dims of x's result without (or, keep, with 1 for) the reduced dims.
std::vector<SymInt> reduced_dims(const OperandHandle& x, const std::vector<int64_t>& dims,
                                 bool keep) {
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  std::vector<bool> reduced(rank, false);
  for (int64_t d : dims) reduced[py_index(d, rank)] = true;
  std::vector<SymInt> out;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d]) {
      out.push_back(sym_dim(x.id, x.op.shape, d));
    } else if (keep) {
      out.push_back({1, ""});
    }
  }
  return out;
}

// REDUCE_* (`op`) of x over PyTorch dims `dims` (empty: every dim).
OperandHandle emit_reduce(LoweringContext& cx, Op op, const OperandHandle& x,
                          std::vector<int64_t> dims, bool keep, const Value* out,
                          const std::string& what) {
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  check(rank >= 1, [&] { return what + " of a 0-dim tensor is not supported"; });
  if (dims.empty()) {
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  }
  const AxesPlan p = plan_axes(cx, x, dims, keep);
  Operand o = p.x.op;
  o.dim_order = p.out_order;
  const std::vector<SymInt> out_dims = reduced_dims(p.x, dims, keep);
  ModelBuilder& m = cx.model();
  const int32_t axes = m.add_int_vector(p.axes), keep_id = m.add_bool_scalar(keep);
  const OperandHandle y = cx.add_output(out, o, out_dims);
  add_reduce(m, op, p.x.id, axes, keep_id, y.id);
  return y;
}

// ARGMAX/ARGMIN (`op`) of x along PyTorch dim `dim` (int32 indices), with
// the dim kept as 1 (keep: a RESHAPE after).
OperandHandle emit_arg(LoweringContext& cx, Op op, const OperandHandle& x, int64_t dim, bool keep,
                       const Value* out, const std::string& what) {
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  check(rank >= 1, [&] { return what + " of a 0-dim tensor is not supported"; });
  dim = py_index(dim, rank);
  const AxesPlan p = plan_axes(cx, x, {dim}, false);
  Operand o = p.x.op;
  o.type = OperandType::TensorInt32;
  o.scale = 0.0;
  o.zero_point = 0;
  o.dim_order = DimOrder::Contiguous;
  const std::vector<SymInt> dropped = reduced_dims(p.x, {dim}, false);
  ModelBuilder& m = cx.model();
  const int32_t axis = m.add_int_scalar(static_cast<int32_t>(p.axes.at(0)));
  const OperandHandle y = cx.add_output(keep ? nullptr : out, o, dropped);
  add_by_roles(m, op, {{nnapi::Role::Input, p.x.id}, {nnapi::Role::Axis, axis}}, {y.id});
  if (out) cx.set_torch_dtype(out, at::kLong);  // PyTorch's indices are int64
  if (!keep) return y;
  return emit_reshape(cx, y, reduced_dims(p.x, {dim}, true), out);
}

// x flattened to 1-D (argmax/argmin without a dim).
OperandHandle flattened(LoweringContext& cx, const OperandHandle& x) {
  OperandHandle c = emit_relayout(cx, x, DimOrder::Contiguous);
  SymInt n{1, ""};
  for (const SymInt& d : sym_shape(c)) n = sym_arith(n, '*', d);
  return emit_reshape(cx, c, {n});
}

bool output_used(const Node* node, size_t i) {
  return node->outputs().size() > i && node->output(i)->hasUses();
}

// `v`'s operand, of a type the reduction takes: float32, quantized when
// `allow_quant`, int32 when `allow_int` (ARGMAX/ARGMIN).
OperandHandle reduced_operand(LoweringContext& cx, const Value* v, const std::string& what,
                              bool allow_quant, bool allow_int = false) {
  const OperandHandle x = cx.get_operand(v);
  check(x.op.type == OperandType::TensorFloat32 ||
            (allow_quant && x.op.type == OperandType::TensorQuant8Asymm) ||
            (allow_int && x.op.type == OperandType::TensorInt32),
        [&] {
          return what + " of a " + nnapi::operand_type_name(x.op.type) +
                 " tensor is not supported (NNAPI's " +
                 (allow_int ? "ARGMAX/ARGMIN" : "reductions") + " take float" +
                 (allow_quant ? ", quantized" : "") + (allow_int ? ", int32" : "") + " tensors)";
        });
  return x;
}

// ---- norms: norm(x, p, dim, keepdim[, dtype]), linalg_vector_norm(x, ord,
// dim, keepdim, dtype), linalg_norm (a vector norm, or Frobenius without an
// ord), frobenius_norm(x, dim, keepdim). p = 2 (and Frobenius) is
// SQRT(REDUCE_SUM(x * x)), 1 REDUCE_SUM(ABS(x)), inf and -inf
// REDUCE_MAX/MIN(ABS(x)), float32; other p are refused. All are NNAPI
// feature level 3, the level of the lowest --min-android-api (29).
void lower_norm(LoweringContext& cx, const Node* node) {
  const std::string what = node->kind().toQualString();
  NodeArgs args(cx, node);
  const OperandHandle x = reduced_operand(cx, node->input(0), what, false);
  if (args.has("dtype")) check_dtype_argument(cx, args.value("dtype"), x, what.c_str());
  const char* p_name = args.has("p") ? "p" : args.has("ord") ? "ord" : nullptr;
  std::vector<int64_t> dims;
  if (!args.is_none("dim")) {
    const c10::IValue& dim = args.constant("dim");
    dims = dim.isInt() ? std::vector<int64_t>{dim.toInt()} : args.ints("dim");
  }
  double p = 2;
  if (p_name != nullptr && !args.is_none(p_name)) {
    const c10::IValue& v = args.constant(p_name);
    if (v.isString()) {
      check(v.toStringRef() == "fro", [&] {
        return what + " with " + p_name + "='" + v.toStringRef() +
               "' is not supported (numbers 1, 2, inf, -inf and 'fro' are)";
      });
    } else {
      p = v.toScalar().toDouble();
      check(node->kind() != c10::Symbol::fromQualString("aten::linalg_norm") || dims.size() == 1,
            [&] {
              return what + " with a number ord over " + std::to_string(dims.size()) +
                     " dims is a matrix norm, which is not supported (vector norms over one "
                     "dim and ord=None are)";
            });
    }
  }
  const bool keep = args.flag("keepdim");
  const bool inf = std::isinf(p);
  const Op reduce = !inf ? Op::ReduceSum : p > 0 ? Op::ReduceMax : Op::ReduceMin;
  check(p == 1 || p == 2 || inf, [&] {
    std::ostringstream os;
    os << what << " with " << (p_name ? p_name : "p") << "=" << p
       << " is not supported (1, 2, inf, -inf and Frobenius norms are)";
    return os.str();
  });
  if (p == 2) {
    const OperandHandle sq = emit_binary(cx, Op::Mul, x, x);
    const OperandHandle sum = emit_reduce(cx, reduce, sq, dims, keep, nullptr, what);
    emit_unary(cx, Op::Sqrt, sum, node->output());
    return;
  }
  emit_reduce(cx, reduce, emit_unary(cx, Op::Abs, x), dims, keep, node->output(), what);
}

// ---- max/min: max(x) (every element), max(x, dim, keepdim) -> (values,
// indices), max(x, y) (elementwise, MAXIMUM).
void lower_max_min(LoweringContext& cx, const Node* node, bool is_max) {
  const std::string what = kind_name(node);
  const Op reduce = is_max ? Op::ReduceMax : Op::ReduceMin;
  NodeArgs args(cx, node);
  if (args.has("other")) {
    const auto [x, y] = elementwise_operands(cx, node->input(0), node->input(1));
    check(x.op.type != OperandType::TensorQuant8Asymm ||
              (x.op.scale == y.op.scale && x.op.zero_point == y.op.zero_point),
          what + " of quantized tensors with different scales or zero points is not supported");
    emit_binary(cx, is_max ? Op::Maximum : Op::Minimum, x, y, Fuse::None, node->output());
    return;
  }
  const bool values = !args.has("dim") || output_used(node, 0);
  // Indices alone (ARGMAX/ARGMIN) take int32 too; values (REDUCE_MAX/MIN) do not.
  const OperandHandle x = reduced_operand(cx, node->input(0), what, true, !values);
  if (!args.has("dim")) {
    emit_reduce(cx, reduce, x, {}, false, node->output(0), what);
    return;
  }
  const int64_t dim = args.integer("dim");
  const bool keep = args.flag("keepdim");
  if (values) emit_reduce(cx, reduce, x, {dim}, keep, node->output(0), what);
  if (output_used(node, 1)) {
    emit_arg(cx, is_max ? Op::ArgMax : Op::ArgMin, x, dim, keep, node->output(1), what);
  }
}

// amax/amin(x, dims, keepdim): REDUCE_MAX/MIN (no dims: every dim).
void lower_amax(LoweringContext& cx, const Node* node, Op op) {
  const std::string what = kind_name(node);
  NodeArgs args(cx, node);
  const OperandHandle x = reduced_operand(cx, node->input(0), what, true);
  emit_reduce(cx, op, x, args.ints("dim"), args.flag("keepdim"), node->output(), what);
}

// argmax/argmin(x, dim=None, keepdim): ARGMAX/ARGMIN; no dim: of x flattened.
void lower_argmax(LoweringContext& cx, const Node* node, Op op) {
  const std::string what = kind_name(node);
  NodeArgs args(cx, node);
  const OperandHandle x = reduced_operand(cx, node->input(0), what, true, true);
  const bool keep = args.flag("keepdim");
  if (args.is_none("dim")) {
    check(!keep || x.op.shape.size() <= 1,
          [&] { return what + " without a dim and with keepdim=True is not supported"; });
    emit_arg(cx, op, x.op.shape.size() == 1 ? x : flattened(cx, x), 0, false, node->output(), what);
    return;
  }
  emit_arg(cx, op, x, args.integer("dim"), keep, node->output(), what);
}

// prod(x[, dim, keepdim], dtype): REDUCE_PROD, float32.
void lower_prod(LoweringContext& cx, const Node* node) {
  const std::string what = "prod";
  NodeArgs args(cx, node);
  const OperandHandle x = reduced_operand(cx, node->input(0), what, false);
  check_dtype_argument(cx, args.value("dtype"), x, "aten::prod");
  if (!args.has("dim")) {
    emit_reduce(cx, Op::ReduceProd, x, {}, false, node->output(), what);
    return;
  }
  emit_reduce(cx, Op::ReduceProd, x, {args.integer("dim")}, args.flag("keepdim"), node->output(),
              what);
}

// any/all(x[, dim, keepdim]): REDUCE_ANY/ALL of x's truth (TENSOR_BOOL8).
void lower_any_all(LoweringContext& cx, const Node* node, Op op) {
  const std::string what = kind_name(node);
  NodeArgs args(cx, node);
  const OperandHandle b = bool8_operand(cx, node->input(0));
  if (!args.has("dim")) {
    emit_reduce(cx, op, b, {}, false, node->output(), what);
    return;
  }
  const c10::IValue& dim = args.constant("dim");
  std::vector<int64_t> dims;
  if (dim.isInt()) {
    dims.push_back(dim.toInt());
  } else {
    dims = args.ints("dim");
    check(!dims.empty(), [&] { return what + " over an empty dim list is not supported"; });
  }
  emit_reduce(cx, op, b, dims, args.flag("keepdim"), node->output(), what);
}

// topk(x, k, dim=-1, largest=True, sorted=True) -> (values, indices):
// TOPK_V2 along the last NNAPI axis (x is permuted when dim is another);
// largest=False is TOPK_V2 of NEG(x), its values negated back (exact).
void lower_topk(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  OperandHandle x = cx.get_operand(node->input(0));
  const int64_t k = args.integer("k");
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  check(rank >= 1, "topk of a 0-dim tensor is not supported");
  const int64_t dim = py_index(args.integer("dim"), rank);
  const bool largest = args.flag("largest");
  check(args.flag("sorted"), "topk with sorted=False is not supported (TOPK_V2 sorts)");
  check(x.op.type == OperandType::TensorFloat32 || x.op.type == OperandType::TensorInt32 ||
            (largest && x.op.type == OperandType::TensorQuant8Asymm),
        [&] {
          return std::string("topk of a ") + nnapi::operand_type_name(x.op.type) + " tensor" +
                 (largest ? "" : " with largest=False") + " is not supported";
        });
  check(x.op.shape[dim] != 0, "topk along a flexible dim is not supported: give it a fixed size");
  check(k >= 1 && k <= x.op.shape[dim], [&] {
    return "topk's k is " + std::to_string(k) + " for a dim of size " +
           std::to_string(x.op.shape[dim]);
  });
  // The dim NNAPI's last axis holds: x as it is (C of an NHWC tensor, the
  // last dim of an NCHW one), else NCHW permuted to bring `dim` last.
  std::vector<int64_t> perm;
  if (!(x.op.dim_order == DimOrder::ChannelsLast && dim == 1)) {
    // TRANSPOSE takes no TENSOR_INT32 at any feature level (NeuralNetworks.h),
    // and int32 numbers above 2^24 would not survive float32.
    check(x.op.type != OperandType::TensorInt32 ||
              (x.op.dim_order == DimOrder::Contiguous && dim == rank - 1),
          [] {
            return int32_refusal("topk along another dim than the last",
                                 "NNAPI's TRANSPOSE, which brings the dim last, takes none");
          });
    x = emit_relayout(cx, x, DimOrder::Contiguous);
    if (dim != rank - 1) {
      for (int64_t d = 0; d < rank; ++d) {
        if (d != dim) perm.push_back(d);
      }
      perm.push_back(dim);
      x = emit_permute(cx, x, perm);
    }
  }
  if (!largest) x = emit_unary(cx, Op::Neg, x);
  Shape shape = x.op.shape;
  std::vector<SymInt> dims = sym_shape(x);
  const int64_t last = x.op.dim_order == DimOrder::ChannelsLast ? 1 : rank - 1;
  shape[last] = k;
  dims[last] = {k, ""};
  Operand values = x.op.with_shape(shape);
  Operand indices = values;
  indices.type = OperandType::TensorInt32;
  indices.scale = 0.0;
  indices.zero_point = 0;
  // When the result is taken back (NEG, permute), the node's outputs are bound then.
  const bool direct = perm.empty() && largest;
  const OperandHandle v = cx.add_output(direct ? node->output(0) : nullptr, values, dims);
  const OperandHandle i = cx.add_output(perm.empty() ? node->output(1) : nullptr, indices, dims);
  const int32_t k_id = cx.model().add_int_scalar(static_cast<int32_t>(k));
  add_by_roles(cx.model(), Op::TopKV2, {{nnapi::Role::Input, x.id}, {nnapi::Role::K, k_id}},
               {v.id, i.id});
  cx.set_torch_dtype(node->output(1), at::kLong);  // PyTorch's indices are int64
  if (direct) return;
  std::vector<int64_t> back(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) back[perm[d]] = static_cast<int64_t>(d);
  OperandHandle vals = v;
  if (!largest) vals = emit_unary(cx, Op::Neg, vals, perm.empty() ? node->output(0) : nullptr);
  if (perm.empty()) return;
  auto bind = [&](const OperandHandle& t, const Value* out) {  // emit_permute, bound to `out`
    const OperandHandle r = cx.add_output(out, t.op, permuted_dims(t, back));
    add_transpose(cx.model(), t.id, cx.model().add_int_vector(back), r.id);
    return r;
  };
  bind(vals, node->output(0));
  // TRANSPOSE takes no TENSOR_INT32: the indices (below 2^24, exact in
  // float32) move as float32 between CASTs.
  Operand as_float = i.op;
  as_float.type = OperandType::TensorFloat32;
  const OperandHandle moved = bind(emit_unary_to(cx, Op::Cast, i, as_float), nullptr);
  Operand as_int = moved.op;
  as_int.type = OperandType::TensorInt32;
  emit_unary_to(cx, Op::Cast, moved, as_int, node->output(1));
}

// sin(x): SIN; cos(x) = 1 - 2 sin(x/2)^2, float32 (x/2 is exact, so the
// error does not grow with |x| as sin(x + pi/2)'s does).
void lower_sin_cos(LoweringContext& cx, const Node* node, bool is_cos) {
  const OperandHandle x = cx.get_operand(node->input(0));
  check(x.op.type == OperandType::TensorFloat32, [&] {
    return std::string(is_cos ? "cos" : "sin") +
           " is supported of float32 tensors only (NNAPI's SIN takes float tensors)";
  });
  if (!is_cos) {
    emit_unary(cx, Op::Sin, x, node->output());
    return;
  }
  const OperandHandle s =
      emit_unary(cx, Op::Sin, emit_binary(cx, Op::Mul, x, float_scalar_tensor(cx, 0.5f)));
  const OperandHandle s2 = emit_binary(cx, Op::Mul, s, s);
  const OperandHandle t = emit_binary(cx, Op::Mul, s2, float_scalar_tensor(cx, -2.0f));
  emit_binary(cx, Op::Add, t, float_scalar_tensor(cx, 1.0f), Fuse::None, node->output());
}

// How PyTorch (1.13, quint8, the qnnpack engine) computes a quantized mean
// over `dims` of a contiguous tensor of rank `rank` (ReduceOps.cpp's
// mean_out_quantized_cpu), in three ways: dims literally (2, 3) of a 4-D
// tensor, QNNPACK's global average pool (the host MEAN kernel rounds as it
// does); dims that are the innermost ones (-1, (-2, -1), ...), the raw stored
// values averaged in float and rounded half to even (qmean_inner_dim);
// otherwise dequantized, averaged in float32 and quantized to the input's
// scale and zero point. OneMean: one MEAN (also every float mean).
enum class QuantMean { OneMean, Innermost, Float };

QuantMean quant_mean_path(const std::vector<int64_t>& dims, int64_t rank) {
  if (rank == 4 && dims == std::vector<int64_t>{2, 3}) return QuantMean::OneMean;
  std::vector<int64_t> wrapped;
  for (int64_t d : dims) wrapped.push_back(py_index(d, rank));
  std::sort(wrapped.rbegin(), wrapped.rend());
  for (size_t i = 0; i < wrapped.size(); ++i) {
    if (wrapped[i] != rank - 1 - static_cast<int64_t>(i)) return QuantMean::Float;
  }
  return QuantMean::Innermost;
}

// mean(x, dims, keepdim, dtype) as MEAN; sum(x, dims, keepdim, dtype) as
// REDUCE_SUM (float32; its keep_dims is a BOOL where MEAN's is an INT32).
// NeuralNetworks.h says nothing of how a quantized MEAN rounds (its output is
// "of the same OperandCode as input0"; the host runtime rounds as QNNPACK's
// global average pool), so a quantized mean PyTorch does not compute as that
// pool is lowered so that any driver that follows the spec matches eager:
// the float MEAN of the stored values (CAST, exact) QUANTIZEd at scale 1
// (half to even) and CAST to the input's parameters, or of the DEQUANTIZEd
// values QUANTIZEd to the input's parameters, as quant_mean_path says.
void lower_reduce(LoweringContext& cx, const Node* node, Op op) {
  const char* what = op == Op::Mean ? "mean" : "sum";
  check(node->inputs().size() == 4, [&] {
    return std::string("only ") + what + " over given dims converts (aten::" + what +
           ".dim_IntList)";
  });
  auto [in_id, in] = cx.get_operand(node->input(0));
  std::vector<int64_t> dims = cx.constant_int_list(node->input(1));
  bool keep_dim = cx.constant_bool(node->input(2));
  check_dtype_argument(cx, node->input(3), {in_id, in}, node->kind().toQualString());
  check(op == Op::Mean || in.type == nnapi::OperandType::TensorFloat32,
        "sum is supported on float32 tensors only (NNAPI's REDUCE_SUM)");
  int64_t rank = static_cast<int64_t>(in.shape.size());
  std::vector<bool> collapsed(rank, false);
  for (int64_t d : dims) collapsed[py_index(d, rank)] = true;
  const QuantMean path = in.type == nnapi::OperandType::TensorQuant8Asymm
                             ? quant_mean_path(dims, rank)
                             : QuantMean::OneMean;
  if (in.dim_order == DimOrder::ChannelsLast &&
      (path == QuantMean::Float || (!keep_dim && !(collapsed[2] && collapsed[3])))) {
    // Dropping a dim other than H and W leaves no layout to keep the result
    // channels-last in: the reduction runs on the NCHW relayout. So does a
    // float mean of dequantized values, whose rounding depends on the order
    // of the sum: PyTorch's runs on the contiguous (NCHW) tensor.
    const OperandHandle nchw = emit_relayout(cx, {in_id, in}, DimOrder::Contiguous);
    in_id = nchw.id;
    in = nchw.op;
  }
  std::vector<int64_t> nnapi_dims = dims;
  if (in.dim_order == DimOrder::ChannelsLast) {
    check(rank == 4, [&] { return std::string("channels-last ") + what + " needs 4 dims"; });
    for (int64_t& d : nnapi_dims) d = nnapi_axis(in.dim_order, py_index(d, 4));
  }
  // Without keepdim, a channels-last input reduced over H and W (at least)
  // leaves (N, C) or fewer dims, which are in NCHW order.
  const DimOrder out_order = keep_dim ? in.dim_order : DimOrder::Contiguous;
  // Kept dims as they are, reduced ones 1 (keepdim) or dropped.
  std::vector<SymInt> out_dims;
  for (int64_t i = 0; i < rank; ++i) {
    if (!collapsed[i]) {
      out_dims.push_back(sym_dim(in_id, in.shape, i));
    } else if (keep_dim) {
      out_dims.push_back({1, ""});
    }
  }
  Operand out = in;
  out.dim_order = out_order;
  int32_t dims_id = cx.model().add_int_vector(nnapi_dims);
  int32_t keep_id = op == Op::Mean ? cx.model().add_int_scalar(keep_dim ? 1 : 0)
                                   : cx.model().add_bool_scalar(keep_dim);
  if (path == QuantMean::OneMean) {
    const int32_t out_id = cx.add_output(node->output(), out, out_dims).id;
    add_reduce(cx.model(), op, in_id, dims_id, keep_id, out_id);
    return;
  }
  const OperandHandle x{in_id, in};
  Operand real = in;
  real.type = nnapi::OperandType::TensorFloat32;
  real.scale = 0.0;
  real.zero_point = 0;
  const OperandHandle xf =
      path == QuantMean::Innermost ? emit_unary_to(cx, Op::Cast, x, real) : emit_dequantize(cx, x);
  Operand mean_rec = out;
  mean_rec.type = real.type;
  mean_rec.scale = 0.0;
  mean_rec.zero_point = 0;
  const OperandHandle mean = cx.add_output(nullptr, mean_rec, out_dims);
  add_reduce(cx.model(), op, xf.id, dims_id, keep_id, mean.id);
  if (path == QuantMean::Float) {
    emit_quantize(cx, mean, in.scale, in.zero_point, node->output());
    return;
  }
  const OperandHandle rounded = emit_quantize(cx, mean, 1.0, 0);
  Operand requantized = rounded.op;
  requantized.scale = in.scale;
  requantized.zero_point = in.zero_point;
  emit_unary_to(cx, Op::Cast, rounded, requantized, node->output());
}

}  // namespace

void register_reduction_ops(LoweringTable& t) {
  t.add("aten::mean", [](LoweringContext& cx, const Node* n) { lower_reduce(cx, n, Op::Mean); });
  t.add("aten::sum",
        [](LoweringContext& cx, const Node* n) { lower_reduce(cx, n, Op::ReduceSum); });
  t.add("aten::max", [](LoweringContext& cx, const Node* n) { lower_max_min(cx, n, true); })
      .with_note(
          "also min: over a dim, values REDUCE_MAX/MIN and indices ARGMAX/ARGMIN (first index on "
          "ties, as PyTorch; int64 outputs are made so by the converted module); of every "
          "element REDUCE_MAX/MIN (a 0-dim result); of two tensors MAXIMUM/MINIMUM. Float32 "
          "and quantized");
  t.add("aten::min", [](LoweringContext& cx, const Node* n) { lower_max_min(cx, n, false); });
  t.add("aten::amax", [](LoweringContext& cx, const Node* n) {
     lower_amax(cx, n, Op::ReduceMax);
   }).with_note("also amin: REDUCE_MAX/MIN over the dims (float32, quantized)");
  t.add("aten::amin", [](LoweringContext& cx, const Node* n) { lower_amax(cx, n, Op::ReduceMin); });
  t.add("aten::argmax", [](LoweringContext& cx, const Node* n) { lower_argmax(cx, n, Op::ArgMax); })
      .with_note(
          "also argmin: ARGMAX/ARGMIN (first index on ties; without a dim, of the flattened "
          "tensor)");
  t.add("aten::argmin",
        [](LoweringContext& cx, const Node* n) { lower_argmax(cx, n, Op::ArgMin); });
  t.add("aten::prod", lower_prod).with_note("REDUCE_PROD, float32, over one dim or every element");
  t.add("aten::any", [](LoweringContext& cx, const Node* n) {
     lower_any_all(cx, n, Op::ReduceAny);
   }).with_note("also all: REDUCE_ANY/ALL of the truth (non-zero) of the input");
  t.add("aten::all",
        [](LoweringContext& cx, const Node* n) { lower_any_all(cx, n, Op::ReduceAll); });
  t.add("aten::topk", lower_topk)
      .with_note(
          "TOPK_V2 (sorted; another dim than the last is permuted there; largest=False is "
          "TOPK_V2 of NEG(x), not for quantized tensors). Of equal values NNAPI returns the "
          "larger index first, PyTorch's order among ties is unspecified: indices of tied "
          "values may differ");
  t.add("aten::norm", lower_norm)
      .with_note(
          "also linalg_vector_norm, linalg_norm (vector norms), frobenius_norm: p=2 and "
          "Frobenius SQRT(REDUCE_SUM(x*x)), p=1 REDUCE_SUM(ABS), p=+-inf REDUCE_MAX/MIN(ABS); "
          "float32; other p and matrix norms refused");
  for (const char* kind :
       {"aten::linalg_vector_norm", "aten::linalg_norm", "aten::frobenius_norm"}) {
    t.add(kind, lower_norm);
  }
  t.add("aten::sin", [](LoweringContext& cx, const Node* n) { lower_sin_cos(cx, n, false); });
  t.add("aten::cos", [](LoweringContext& cx, const Node* n) {
     lower_sin_cos(cx, n, true);
   }).with_note("float32: 1 - 2 sin(x/2)^2 with NNAPI's SIN");
}

}  // namespace nnapi_convert

// Shape and layout ops: unsqueeze, squeeze, reshape, flatten, slice, select, size,
// cat, and the identity ops (to, detach, dropout at inference).
#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "lower/emit.h"
#include "lower/registry.h"

namespace nnapi_convert {
namespace {

using nnapi::Op;

void lower_identity(LoweringContext& cx, const Node* node) {
  cx.alias(node->output(), node->input(0));
}

// aten::to(Tensor, ...): a device move is free; a dtype change is not supported.
void lower_to(LoweringContext& cx, const Node* node) {
  for (size_t i = 1; i < node->inputs().size(); ++i) {
    const Value* in = node->input(i);
    if (in->type()->kind() != c10::TypeKind::IntType || !cx.has_constant(in)) continue;
    // The ScalarType argument of aten::to.
    auto dtype = static_cast<c10::ScalarType>(cx.constant_int(in));
    auto [id, op] = cx.get_operand(node->input(0));
    (void)id;
    bool same = (dtype == at::kFloat && op.type == nnapi::OperandType::TensorFloat32) ||
                (dtype == at::kInt && op.type == nnapi::OperandType::TensorInt32) ||
                (dtype == at::kQUInt8 && op.type == nnapi::OperandType::TensorQuant8Asymm);
    check(same, [&] {
      return std::string("aten::to changes the dtype to ") + c10::toString(dtype) +
             ", which NNAPI conversion does not support; only device moves are free";
    });
    break;
  }
  lower_identity(cx, node);
}

std::pair<int32_t, Operand> to_contiguous(LoweringContext& cx, int32_t id, const Operand& in);

void lower_unsqueeze(LoweringContext& cx, const Node* node) {
  auto [in_id, in] = cx.get_operand(node->input(0));
  int64_t dim = cx.constant_int(node->input(1));
  if (in.dim_order == DimOrder::ChannelsLast) {
    // A rank-5 result has no channels-last layout: make the data NCHW first.
    std::tie(in_id, in) = to_contiguous(cx, in_id, in);
  }
  check(in.dim_order == DimOrder::Contiguous,
        "unsqueeze of a tensor with this memory layout is not supported");
  int64_t rank = static_cast<int64_t>(in.shape.size());
  int64_t real_dim = dim >= 0 ? dim : dim + rank + 1;
  check(real_dim >= 0 && real_dim <= rank, "unsqueeze dim out of range");
  Shape out_shape = in.shape;
  out_shape.insert(out_shape.begin() + real_dim, 1);
  int32_t dim_id = cx.model().add_int_scalar(static_cast<int32_t>(dim));
  int32_t out_id = cx.add_tensor_operand(node->output(), in.with_shape(out_shape));
  for (int64_t d = 0; d < rank; ++d) {
    if (in.shape[d] == 0) cx.forward_operand_shape(out_id, d < real_dim ? d : d + 1, in_id, d);
  }
  cx.model().add_operation(Op::ExpandDims, {in_id, dim_id}, {out_id});
}

// squeeze(x, dim) and squeeze(x): SQUEEZE of the given dim (when it is 1,
// else x itself) or of every dim of size 1. A flexible dim may or may not be 1
// when the model runs: squeezing it, or squeezing all dims of a tensor with
// one, is refused.
void lower_squeeze(LoweringContext& cx, const Node* node) {
  auto [in_id, in] = cx.get_operand(node->input(0));
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  std::vector<int64_t> axes;
  if (node->inputs().size() > 1) {
    int64_t dim = cx.constant_int(node->input(1));
    if (dim < 0) dim += rank;
    check(dim >= 0 && dim < rank, "squeeze dim out of range");
    check(in.shape[dim] != 0,
          "squeeze of a flexible dimension: its size is known only when the model is loaded; "
          "give it a fixed size in --input");
    if (in.shape[dim] == 1) axes.push_back(dim);
  } else {
    for (int64_t d = 0; d < rank; ++d) {
      check(in.shape[d] != 0,
            "squeeze() of a tensor with a flexible dimension: give squeeze a dim, or fixed "
            "sizes in --input");
      if (in.shape[d] == 1) axes.push_back(d);
    }
  }
  if (axes.empty()) {
    lower_identity(cx, node);
    return;
  }
  if (in.dim_order == DimOrder::ChannelsLast) {
    // A result of lower rank has no channels-last layout: make the data NCHW first.
    std::tie(in_id, in) = to_contiguous(cx, in_id, in);
  }
  check(in.dim_order == DimOrder::Contiguous,
        "squeeze of a tensor with this memory layout is not supported");
  Shape out_shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) out_shape.push_back(in.shape[d]);
  }
  int32_t axes_id = cx.model().add_int_vector(axes);
  int32_t out_id = cx.add_tensor_operand(node->output(), in.with_shape(out_shape));
  for (int64_t d = 0, o = 0; d < rank; ++d) {
    if (std::find(axes.begin(), axes.end(), d) != axes.end()) continue;
    if (in.shape[d] == 0) cx.forward_operand_shape(out_id, o, in_id, d);
    ++o;
  }
  cx.model().add_operation(Op::Squeeze, {in_id, axes_id}, {out_id});
}

bool lower_channel_shuffle(LoweringContext& cx, const Node* node);

// Reshape where the input or the target has load-time sizes.
void lower_flexible_reshape(LoweringContext& cx, const Node* node, Operand2 in,
                            std::vector<SymInt> dims) {
  // PyTorch reshapes in NCHW element order: make the data NCHW first.
  in = emit_relayout(cx, in, DimOrder::Contiguous);
  SymInt numel{1, ""}, known{1, ""};
  for (const SymInt& d : sym_shape(in)) numel = sym_arith(numel, '*', d);
  int64_t inferred = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].is_constant() && dims[i].value == -1) {
      check(inferred < 0, "only one dimension of a view can be -1");
      inferred = static_cast<int64_t>(i);
    } else {
      known = sym_arith(known, '*', dims[i]);
    }
  }
  if (inferred >= 0) dims[inferred] = sym_arith(numel, '/', known);
  emit_reshape(cx, in, dims, node->output());
}

void lower_reshape(LoweringContext& cx, const Node* node) {
  if (lower_channel_shuffle(cx, node)) return;
  auto [in_id, in] = cx.get_operand(node->input(0));
  std::vector<SymInt> target = cx.sym_int_list(node->input(1));
  const bool flexible =
      std::find(in.shape.begin(), in.shape.end(), 0) != in.shape.end() ||
      std::any_of(target.begin(), target.end(), [](const SymInt& v) { return !v.is_constant(); });
  if (flexible) {
    lower_flexible_reshape(cx, node, {in_id, in}, std::move(target));
    return;
  }
  std::vector<int64_t> shape;
  for (const SymInt& v : target) shape.push_back(v.value);
  // The reference keeps NHWC data for a [X, -1] target; that is PyTorch's
  // element order only when C = 1 or H = W = 1.
  const Shape& s = in.shape;
  bool trivial = shape.size() == 2 && shape[1] == -1 && s.size() == 4 &&
                 (s[1] == 1 || (s[2] == 1 && s[3] == 1));
  if (in.dim_order == DimOrder::ChannelsLast && !trivial) {
    // PyTorch reshapes in NCHW element order: make the data NCHW first.
    std::tie(in_id, in) = to_contiguous(cx, in_id, in);
  }
  Shape out_shape;
  try {
    out_shape = at::zeros({1}).expand(in.shape).reshape(shape).sizes().vec();
  } catch (const c10::Error& e) {
    fail("can't reshape " + shape_str(in.shape) + " to " + shape_str(shape) + ": " +
         e.what_without_backtrace());
  }
  Operand out = in.with_shape(out_shape);
  out.dim_order = DimOrder::Contiguous;
  int32_t shape_id = cx.model().add_int_vector(shape);
  int32_t out_id = cx.add_tensor_operand(node->output(), out);
  cx.model().add_operation(Op::Reshape, {in_id, shape_id}, {out_id});
}

void lower_flatten(LoweringContext& cx, const Node* node) {
  auto [in_id, in] = cx.get_operand(node->input(0));
  int64_t start = cx.constant_int(node->input(1));
  int64_t end = cx.constant_int(node->input(2));
  const Shape& s = in.shape;
  int64_t rank = static_cast<int64_t>(s.size());
  bool trivial = rank == 4 && (s[1] == 1 || (s[2] == 1 && s[3] == 1));
  if (in.dim_order == DimOrder::ChannelsLast && !trivial) {
    // PyTorch flattens in NCHW element order: make the data NCHW first.
    std::tie(in_id, in) = to_contiguous(cx, in_id, in);
  }
  check(in.dim_order == DimOrder::Contiguous || trivial,
        "flatten of an NHWC tensor is only supported when C = 1 or H = W = 1");
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  check(start >= 0 && end < rank && start <= end, "flatten dims out of range");
  int64_t product = 1;
  for (int64_t d = start; d <= end; ++d) {
    check(s[d] != 0, "flattening flexible dims is not supported");
    product *= s[d];
  }
  Shape out_shape(s.begin(), s.begin() + start);
  out_shape.push_back(product);
  out_shape.insert(out_shape.end(), s.begin() + end + 1, s.end());
  int flexible = 0;
  for (int64_t d = 0; d < rank; ++d) flexible += (d < start || d > end) && s[d] == 0;
  check(flexible <= 1, "only 1 dim can be flexible when flattening");
  Operand out = in.with_shape(out_shape);
  out.dim_order = DimOrder::Contiguous;
  int32_t out_id = cx.add_tensor_operand(node->output(), out);
  int64_t first_flex = std::find(s.begin(), s.end(), 0) - s.begin();
  std::vector<int64_t> target;
  for (size_t i = 0; i < out_shape.size(); ++i) {
    if (out_shape[i] == 0)
      cx.forward_operand_shape(out_id, static_cast<int64_t>(i), in_id, first_flex);
    target.push_back(out_shape[i] != 0 ? out_shape[i] : -1);
  }
  int32_t target_id = cx.model().add_int_vector(target);
  cx.model().add_operation(Op::Reshape, {in_id, target_id}, {out_id});
}

void lower_slice(LoweringContext& cx, const Node* node) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  auto [in_id, in] = cx.get_operand(node->input(0));
  int64_t rank = static_cast<int64_t>(in.shape.size());
  int64_t dim = py_index(cx.constant(node->input(1)).value.toInt(), rank);
  auto optional_int = [&](const Value* v, int64_t none_value) {
    const Constant& c = cx.constant(v);
    return c.value.isNone() ? none_value : c.value.toInt();
  };
  int64_t start = optional_int(node->input(2), 0);
  int64_t stop = optional_int(node->input(3), kMax);
  int64_t step = cx.constant(node->input(4)).value.toInt();
  int64_t size = in.shape[dim];
  if (start < 0) {
    start += size;
  } else if (start == kMax) {
    start = 0;
  }
  // (The reference takes any whole-range slice as the identity, also x[::2].)
  if (start == 0 && stop == kMax && step == 1) {
    lower_identity(cx, node);
    return;
  }
  check(size != 0, [&] {
    return "unable to slice with flexible shape (dim " + std::to_string(dim) + " of " +
           shape_str(in.shape) + ")";
  });
  if (stop < 0) {
    stop += size;
  } else if (stop > size) {
    stop = size;  // Python slicing clamps; so does PyTorch
  }
  check(start < stop, "slice start value should be less than stop value");
  check(step > 0, "slice step must be positive");
  Shape out_shape = in.shape;
  out_shape[dim] = (stop - start + step - 1) / step;
  int32_t out_id = cx.add_tensor_operand(node->output(), in.with_shape(out_shape));
  int32_t end_mask = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (out_shape[i] == 0) {
      cx.forward_operand_shape(out_id, i, in_id, i);
      end_mask |= 1 << i;
    }
  }
  std::vector<int64_t> begins(rank, 0), ends = in.shape, strides(rank, 1);
  begins[dim] = start;
  ends[dim] = stop;
  strides[dim] = step;
  ModelBuilder& m = cx.model();
  std::vector<int32_t> inputs = {in_id,
                                 m.add_int_vector(begins),
                                 m.add_int_vector(ends),
                                 m.add_int_vector(strides),
                                 m.add_int_scalar(0),
                                 m.add_int_scalar(end_mask),
                                 m.add_int_scalar(0)};
  m.add_operation(Op::StridedSlice, inputs, {out_id});
}

// select(x, dim, index): x[..., index, ...], one dim fewer. STRIDED_SLICE
// taking [index, index + 1) along the dim with that dim's shrink bit set; a
// negative index counts from the end there too, so a flexible dim needs no
// size (index -1 ends at the end: the end mask); a fixed one gets the index
// counted from the start. Sliced NHWC data keeps NHWC's dim order (N, H, W, C
// less the selected one), PyTorch's order unless C is selected: a TRANSPOSE of
// the (smaller) slice follows.
void lower_select(LoweringContext& cx, const Node* node) {
  auto [in_id, in] = cx.get_operand(node->input(0));
  const auto rank = static_cast<int64_t>(in.shape.size());
  check(rank >= 2, "select of a 1-D tensor gives a 0-dim tensor, which NNAPI does not support");
  check(in.dim_order == DimOrder::Contiguous || in.dim_order == DimOrder::ChannelsLast,
        "select of a tensor with this memory layout is not supported");
  const int64_t dim = py_index(cx.constant_int(node->input(1)), rank);
  int64_t index = cx.constant_int(node->input(2));
  const int64_t size = in.shape[dim];
  check(size == 0 || (index >= -size && index < size), [&] {
    return "select index " + std::to_string(index) + " is out of range for dim " +
           std::to_string(dim) + " of size " + std::to_string(size);
  });
  if (index < 0 && size != 0) index += size;
  const bool nhwc = in.dim_order == DimOrder::ChannelsLast;
  static const int64_t kPos[] = {0, 3, 1, 2};  // PyTorch dim -> NNAPI dim of NHWC data
  const int64_t axis = nhwc ? kPos[dim] : dim;
  std::vector<int64_t> begins(rank, 0), ends(rank, 0), strides(rank, 1);
  int32_t end_mask = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis) end_mask |= 1 << d;  // whole dims, flexible or not
  }
  begins[axis] = index;
  if (index == -1) {
    end_mask |= 1 << axis;
  } else {
    ends[axis] = index + 1;
  }
  // The PyTorch dim each dim of the slice holds, and the slice as a
  // contiguous tensor of that shape.
  std::vector<int64_t> src;
  Shape slice_shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis) continue;
    src.push_back(nhwc ? reverse_map_dim(in.dim_order, static_cast<int>(d)) : d);
    slice_shape.push_back(in.shape[src.back()]);
  }
  const bool in_order = std::is_sorted(src.begin(), src.end());
  Operand sliced = in.with_shape(slice_shape);
  sliced.dim_order = DimOrder::Contiguous;
  ModelBuilder& m = cx.model();
  std::vector<int32_t> inputs = {in_id,
                                 m.add_int_vector(begins),
                                 m.add_int_vector(ends),
                                 m.add_int_vector(strides),
                                 m.add_int_scalar(0),
                                 m.add_int_scalar(end_mask),
                                 m.add_int_scalar(1 << axis)};
  const int32_t slice_id =
      in_order ? cx.add_tensor_operand(node->output(), sliced) : cx.add_anonymous_operand(sliced);
  for (size_t j = 0; j < src.size(); ++j) {
    if (slice_shape[j] == 0) cx.forward_operand_shape(slice_id, j, in_id, src[j]);
  }
  m.add_operation(Op::StridedSlice, inputs, {slice_id});
  if (in_order) return;
  // Output dim k holds PyTorch dim k (< dim) or k + 1: the slice's dim with it.
  std::vector<int64_t> perm;
  Shape out_shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == dim) continue;
    perm.push_back(std::find(src.begin(), src.end(), d) - src.begin());
    out_shape.push_back(in.shape[d]);
  }
  const int32_t perm_id = m.add_int_vector(perm);
  const int32_t out_id = cx.add_tensor_operand(node->output(), sliced.with_shape(out_shape));
  for (size_t k = 0; k < perm.size(); ++k) {
    if (out_shape[k] == 0) cx.forward_operand_shape(out_id, k, slice_id, perm[k]);
  }
  m.add_operation(Op::Transpose, {slice_id, perm_id}, {out_id});
}

// aten::dropout and its variants (input, p, train): the identity at
// inference (train false) and for p = 0, as PyTorch's kernels return the
// input then. In training with p > 0 the result is random: refused.
void lower_dropout(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 3,
        [&] { return std::string("malformed ") + node->kind().toQualString(); });
  const double p = cx.constant_number(node->input(1));
  const bool train = cx.constant_bool(node->input(2));
  check(!train || p == 0, [&] {
    return std::string(node->kind().toQualString()) +
           " in training mode is random; export the model in eval mode (model.eval())";
  });
  lower_identity(cx, node);
}

// aten::size(x, dim) and aten::size(x): a constant for fixed dims, a load-time
// int (symbolic.cpp) for flexible ones.
void lower_size(LoweringContext& cx, const Node* node) {
  auto [in_id, in] = cx.get_operand(node->input(0));
  const auto rank = static_cast<int64_t>(in.shape.size());
  auto dim_value = [&, id = in_id](int64_t d) { return sym_dim(id, in.shape, d); };
  if (node->inputs().size() == 1) {
    std::vector<SymInt> dims;
    c10::List<int64_t> values;
    bool flexible = false;
    for (int64_t d = 0; d < rank; ++d) {
      dims.push_back(dim_value(d));
      values.push_back(in.shape[d]);
      flexible = flexible || in.shape[d] == 0;
    }
    if (flexible) {
      cx.add_symbolic(node->output(), std::move(dims));
    } else {
      cx.add_constant(node->output(), node->output()->type(), c10::IValue(values));
    }
    return;
  }
  const int64_t dim = py_index(cx.constant(node->input(1)).value.toInt(), rank);
  SymInt v = dim_value(dim);
  if (v.is_constant()) {
    cx.add_constant(node->output(), node->output()->type(), c10::IValue(v.value));
  } else {
    cx.add_symbolic(node->output(), {v});
  }
}

void lower_cat(LoweringContext& cx, const Node* node) {
  std::optional<std::pair<double, int64_t>> qparams;
  if (node->kind() == c10::Symbol::fromQualString("quantized::cat")) {
    check(node->inputs().size() == 4, "malformed quantized::cat");
    qparams = std::make_pair(cx.constant_float(node->input(2)), cx.constant_int(node->input(3)));
  }
  const auto& tensors = cx.sequence(node->input(0));
  int64_t dim = cx.constant_int(node->input(1));
  check(!tensors.empty(), "cat of an empty list");
  std::vector<int32_t> in_ids;
  Operand out;
  int64_t rank = 0;
  int64_t d = 0;
  int64_t out_dim_size = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    auto [id, op] = cx.get_operand_or_constant(tensors[i], DimOrder::Contiguous);
    if (i == 0) {
      out = op;
      rank = static_cast<int64_t>(op.shape.size());
      d = py_index(dim, rank);
    }
    check(op.type == out.type, "cat inputs have different types");
    check(op.dim_order == out.dim_order, "cat inputs have different memory layouts");
    Shape a = op.shape, b = out.shape;
    check(static_cast<int64_t>(a.size()) == rank, "cat inputs have different ranks");
    a[d] = b[d] = -1;
    check(a == b, [&] {
      return "cat inputs differ outside the cat dim: " + shape_str(op.shape) + " vs " +
             shape_str(out.shape);
    });
    in_ids.push_back(id);
    out_dim_size += op.shape[d];
  }
  out.shape[d] = out_dim_size;
  if (qparams) {
    out.scale = qparams->first;
    out.zero_point = qparams->second;
  }
  int64_t nnapi_dim = dim;
  if (out.dim_order == DimOrder::ChannelsLast) {
    check(rank == 4, "channels-last cat needs 4 dims");
    static const int64_t kMap[] = {0, 3, 1, 2};
    nnapi_dim = kMap[d];
  }
  int32_t out_id = cx.add_tensor_operand(node->output(), out);
  for (int64_t i = 0; i < rank; ++i) {
    if (out.shape[i] != 0) continue;
    if (i == d) {
      std::string sum;
      for (size_t k = 0; k < in_ids.size(); ++k) {
        sum += (k ? " + " : "") + flex_name(in_ids[k], d);
      }
      cx.compute_operand_shape(out_id, i, sum);
    } else {
      cx.forward_operand_shape(out_id, i, in_ids[0], i);
    }
  }
  std::vector<int32_t> inputs = in_ids;
  inputs.push_back(cx.model().add_int_scalar(static_cast<int32_t>(nnapi_dim)));
  cx.model().add_operation(Op::Concatenation, inputs, {out_id});
}

// A TRANSPOSE that makes an NHWC operand's data NCHW (a contiguous operand).
std::pair<int32_t, Operand> to_contiguous(LoweringContext& cx, int32_t id, const Operand& in) {
  Operand2 r = emit_relayout(cx, {id, in}, DimOrder::Contiguous);
  return {r.id, r.op};
}

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
  const std::vector<int64_t> to_nhwc = {0, 2, 3, 1}, to_nchw = {0, 3, 1, 2};
  if (in.dim_order == DimOrder::ChannelsLast && dims == to_nhwc && !flexible_moves) {
    Operand o = in.with_shape(out_shape);
    o.dim_order = DimOrder::Contiguous;
    cx.reinterpret(out_value, in_id, o);
    return;
  }
  if (in.dim_order == DimOrder::Contiguous && rank == 4 && dims == to_nchw && !flexible_moves) {
    Operand o = in.with_shape(out_shape);
    o.dim_order = DimOrder::ChannelsLast;
    cx.reinterpret(out_value, in_id, o);
    return;
  }
  // A real TRANSPOSE, in NNAPI dim order; the result is contiguous.
  std::vector<int64_t> perm = dims;
  if (in.dim_order == DimOrder::ChannelsLast) {
    static const int64_t kPos[] = {0, 3, 1, 2};  // PyTorch dim -> NNAPI dim
    for (int64_t& p : perm) p = kPos[p];
  }
  Operand o = in.with_shape(out_shape);
  o.dim_order = DimOrder::Contiguous;
  int32_t perm_id = cx.model().add_int_vector(perm);
  int32_t out_id = cx.add_tensor_operand(out_value, o);
  for (int64_t i = 0; i < rank; ++i) {
    if (out_shape[i] == 0) cx.forward_operand_shape(out_id, i, in_id, dims[i]);
  }
  cx.model().add_operation(Op::Transpose, {in_id, perm_id}, {out_id});
}

void lower_permute(LoweringContext& cx, const Node* node) {
  permute_value(cx, node->output(), node->input(0), cx.constant_int_list(node->input(1)));
}

void lower_transpose(LoweringContext& cx, const Node* node) {
  if (cx.skipped(node)) return;
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
  return n && (n->kind() == c10::Symbol::fromQualString("aten::view") ||
               n->kind() == c10::Symbol::fromQualString("aten::reshape"));
}

// The channel shuffle of ShuffleNet:
//   view(x, [N, g, C/g, H, W]) -> transpose(1, 2) -> contiguous -> view(., [N, C, H, W])
// is NNAPI's CHANNEL_SHUFFLE, which keeps NHWC data NHWC. Called for each
// view: the first view of the chain is skipped with its transpose and
// contiguous; the last one emits the operation.
bool lower_channel_shuffle(LoweringContext& cx, const Node* node) {
  auto chain_after = [](const Node* first) -> std::vector<const Node*> {
    const Node* t = single_use(first->output());
    if (!t || t->kind() != c10::Symbol::fromQualString("aten::transpose")) return {};
    const Node* c = single_use(t->output());
    if (c && c->kind() == c10::Symbol::fromQualString("aten::contiguous")) {
      const Node* last = single_use(c->output());
      if (is_view(last)) return {t, c, last};
      return {};
    }
    if (is_view(c)) return {t, c};
    return {};
  };
  if (cx.skipped(node)) return true;
  std::vector<const Node*> chain = chain_after(node);
  if (!chain.empty() && cx.has_operand(node->input(0))) {
    // The first view: defer everything to the last one.
    for (const Node* n : chain) {
      if (n != chain.back()) cx.skip(n);
    }
    cx.skip_pending_view(chain.back(), node);
    return true;
  }
  const Node* first = cx.pending_view(node);
  if (!first) return false;
  auto [in_id, in] = cx.get_operand(first->input(0));
  std::vector<SymInt> split = cx.sym_int_list(first->input(1));
  std::vector<SymInt> merged = cx.sym_int_list(node->input(1));
  const Node* t = single_use(first->output());
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
  check(ok, "a view/transpose/view sequence that is not a channel shuffle is not supported");
  int64_t axis = in.dim_order == DimOrder::ChannelsLast ? 3 : 1;
  ModelBuilder& m = cx.model();
  int32_t groups = m.add_int_scalar(static_cast<int32_t>(split[1].value));
  int32_t axis_id = m.add_int_scalar(static_cast<int32_t>(axis));
  Operand2 like{in_id, in};
  int32_t out_id = make_output(cx, node->output(), in, &like);
  m.add_operation(Op::ChannelShuffle, {in_id, groups, axis_id}, {out_id});
  return true;
}

void lower_contiguous(LoweringContext& cx, const Node* node) {
  if (cx.skipped(node)) return;
  lower_identity(cx, node);
}

// Parts of at most `split_size` along a dim of `n` elements, as torch.split makes.
std::vector<int64_t> split_sizes(int64_t n, int64_t split_size) {
  check(split_size > 0, "split size must be positive");
  std::vector<int64_t> sizes;
  for (int64_t at = 0; at < n; at += split_size) sizes.push_back(std::min(split_size, n - at));
  return sizes;
}

// aten::chunk(x, chunks, dim), aten::split(x, int split_size | int[] sizes, dim),
// aten::split_with_sizes(x, sizes, dim).
void lower_split(LoweringContext& cx, const Node* node) {
  auto [in_id, in] = cx.get_operand(node->input(0));
  const auto rank = static_cast<int64_t>(in.shape.size());
  const int64_t dim = py_index(cx.constant_int(node->input(2)), rank);
  const int64_t n = in.shape[dim];
  check(n != 0, [&] {
    return "splitting the flexible dimension " + std::to_string(dim) +
           " is not supported; give it a fixed size in --input";
  });
  std::vector<int64_t> sizes;
  if (node->kind() == c10::Symbol::fromQualString("aten::chunk")) {
    const int64_t chunks = cx.constant_int(node->input(1));
    check(chunks > 0, "chunk count must be positive");
    sizes = split_sizes(n, (n + chunks - 1) / chunks);
  } else if (node->input(1)->type()->kind() == c10::TypeKind::IntType) {
    sizes = split_sizes(n, cx.constant_int(node->input(1)));
  } else {
    sizes = cx.constant_int_list(node->input(1));
    int64_t total = 0;
    for (int64_t size : sizes) {
      check(size > 0, "split sizes must be positive");
      total += size;
    }
    check(total == n, [&] {
      return "split sizes add up to " + std::to_string(total) + ", not the " + std::to_string(n) +
             " elements of dimension " + std::to_string(dim);
    });
  }
  cx.add_split_outputs(node->output(), emit_split(cx, {in_id, in}, dim, sizes));
}

// prim::ListUnpack of a list of tensors made by chunk/split.
void lower_list_unpack(LoweringContext& cx, const Node* node) {
  const std::vector<int32_t>& parts = cx.split_outputs(node->input(0));
  check(parts.size() == node->outputs().size(), "ListUnpack of a list of the wrong length");
  for (size_t i = 0; i < parts.size(); ++i) {
    cx.reinterpret(node->output(i), parts[i], cx.operand(parts[i]));
  }
}

}  // namespace

void register_shape_ops(LoweringTable& t) {
  t.add("aten::to", lower_to);
  t.add("aten::detach", lower_identity);
  t.add("aten::unsqueeze", lower_unsqueeze);
  t.add("aten::squeeze", lower_squeeze);
  t.add("aten::reshape", lower_reshape);
  t.add("aten::view", lower_reshape);
  t.add("aten::permute", lower_permute);
  t.add("aten::transpose", lower_transpose);
  t.add("aten::contiguous", lower_contiguous);
  t.add("aten::chunk", lower_split);
  t.add("aten::split", lower_split);
  t.add("aten::split_with_sizes", lower_split);
  t.add("prim::ListUnpack", lower_list_unpack);
  t.add("aten::flatten", lower_flatten);
  t.add("aten::slice", lower_slice);
  t.add("aten::select", lower_select);
  for (const char* kind : {"aten::dropout", "aten::feature_dropout", "aten::alpha_dropout",
                           "aten::feature_alpha_dropout"}) {
    t.add(kind, lower_dropout);
  }
  t.add("aten::size", lower_size);
  t.add("aten::cat", lower_cat);
  t.add("quantized::cat", lower_cat);
}

}  // namespace nnapi_convert

// Slicing and joining: slice, select, cat, chunk/split and the
// ListUnpack of their parts.
#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "lower/emit.h"
#include "lower/forms.h"
#include "lower/node_args.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {
namespace {

using nnapi::Op;

// slice(x, dim, start, stop) with a load-time stop (x.size(1) of a flexible
// input, e.g. a positional table cut to the sequence length): SLICE whose
// size along `dim` is min(stop, size) - start, written when the model is
// loaded; x (a constant, or computed) must have a fixed size along `dim`.
void lower_slice_to_load_time_stop(LoweringContext& cx, const Node* node) {
  OperandHandle x = cx.get_operand_or_constant(node->input(0), DimOrder::Contiguous);
  check(x.op.dim_order == DimOrder::Contiguous,
        "slice to a load-time size is supported on contiguous tensors only");
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  const int64_t dim = py_index(cx.constant(node->input(1)).value.toInt(), rank);
  const c10::IValue& start_v = cx.constant(node->input(2)).value;
  const int64_t start = start_v.isNone() ? 0 : start_v.toInt();
  const int64_t step = cx.constant(node->input(4)).value.toInt();
  const int64_t size = x.op.shape[dim];
  check(step == 1 && start >= 0 && size != 0, [&] {
    return "slice to a size known only when the model is loaded needs step 1, a start from 0 "
           "and a fixed size along dim " +
           std::to_string(dim) + " of " + shape_str(x.op.shape);
  });
  const SymInt stop = cx.sym_int(node->input(3));
  std::string len = "min(" + stop.expr + ", " + std::to_string(size) + ")";
  if (start > 0) len = "max(" + len + " - " + std::to_string(start) + ", 0)";
  std::vector<int64_t> begins(rank, 0), sizes(rank, -1);
  begins[dim] = start;
  sizes[dim] = 0;  // written when the model is loaded
  Shape out_shape = x.op.shape;
  out_shape[dim] = 0;
  const int32_t id = cx.add_tensor_operand(node->output(), x.op.with_shape(out_shape));
  for (int64_t i = 0; i < rank; ++i) {
    if (i == dim) {
      cx.compute_operand_shape(id, i, len);
    } else if (out_shape[i] == 0) {
      cx.forward_operand_shape(id, i, x.id, i);
    }
  }
  ModelBuilder& m = cx.model();
  const int32_t begin_id = m.add_int_vector(begins);
  const int32_t size_id = m.add_patched_int_vector(sizes, {{static_cast<size_t>(dim), len}});
  add_slice(m, x.id, begin_id, size_id, id);
}

void lower_slice(LoweringContext& cx, const Node* node) {
  if (cx.has_symbolic(node->input(3)) && !cx.sym_int(node->input(3)).is_constant()) {
    lower_slice_to_load_time_stop(cx, node);
    return;
  }
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
    // Python clamps a start before the first element to 0 (x[..., -9:] of 7
    // elements is all 7); NNAPI would read a negative begin from the end. Of
    // a flexible dim (size 0 here) the start stays negative: refused below,
    // as PyTorch's converter does (clamped, it would be the identity).
    if (size != 0) start = std::max<int64_t>(start + size, 0);
  } else if (start == kMax) {
    start = 0;
  }
  // (The reference takes any whole-range slice as the identity, also x[::2].)
  if (start == 0 && stop == kMax && step == 1) {
    cx.alias(node->output(), node->input(0));  // the whole dim: the identity
    return;
  }
  check(size != 0, [&] {
    return "unable to slice with flexible shape (dim " + std::to_string(dim) + " of " +
           shape_str(in.shape) +
           "): of a flexible dim only the whole is taken; give the input dims it comes from "
           "fixed sizes in --input";
  });
  if (stop < 0) {
    stop = std::max<int64_t>(stop + size, 0);
  } else if (stop > size) {
    stop = size;  // Python slicing clamps; so does PyTorch
  }
  check(start < stop, [&] {
    return "this slice is empty (" + std::to_string(start) + ":" + std::to_string(stop) +
           " of dim " + std::to_string(dim) + " of " + shape_str(in.shape) +
           "), and NNAPI has no zero-sized operands; an empty piece is dropped during "
           "conversion when every size of the sliced tensor is fixed: give its flexible dims "
           "fixed sizes in --input";
  });
  check(step > 0, "slice step must be positive");
  // The sliced dim is fixed (checked above); the others are the input's.
  std::vector<SymInt> dims = sym_shape({in_id, in});
  dims[dim] = {(stop - start + step - 1) / step, ""};
  int32_t out_id = cx.add_output(node->output(), in, dims).id;
  // STRIDED_SLICE's vectors and mask are per NNAPI axis: for NHWC data, axis
  // a holds PyTorch dim torch_dim(a) (the reference indexes them by PyTorch
  // dim, which slices the wrong axes of NHWC data).
  const int64_t axis = nnapi_axis(in, dim);
  std::vector<int64_t> begins(rank, 0), ends = fix_shape(in.shape, in.dim_order), strides(rank, 1);
  int32_t end_mask = 0;
  for (int64_t a = 0; a < rank; ++a) {
    if (ends[a] == 0) end_mask |= 1 << a;  // a whole flexible dim
  }
  begins[axis] = start;
  ends[axis] = stop;
  strides[axis] = step;
  if (in.type == nnapi::OperandType::TensorInt32) {
    emit_int32_slice(cx, {in_id, in}, begins, ends, strides, end_mask, out_id);
    return;
  }
  add_by_roles(cx.model(), Op::StridedSlice,
               strided_slice_roles(cx, in_id, begins, ends, strides, end_mask, 0), {out_id});
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
  if (rank == 1) {
    // A 0-dim result: NNAPI shape [1] (fix_shape), the slice [index, index + 1).
    check(in.shape[0] != 0,
          "select from a flexible 1-D tensor is not supported; give it a "
          "fixed size in --input");
    check(cx.constant_int(node->input(1)) == 0 || cx.constant_int(node->input(1)) == -1,
          "select dim out of range");
    const int64_t index = py_index(cx.constant_int(node->input(2)), in.shape[0]);
    const OperandHandle one = emit_take(cx, {in_id, in}, 0, index, 1, 1);
    cx.reinterpret(node->output(), one.id, one.op.with_shape({}));
    return;
  }
  check(in.dim_order == DimOrder::Contiguous || in.dim_order == DimOrder::ChannelsLast,
        "select of a tensor with this memory layout is not supported");
  check(in.type != nnapi::OperandType::TensorInt32,
        "selecting one index of an int32 or bool tensor is not supported (NNAPI's STRIDED_SLICE "
        "takes no int32 tensor, and RESHAPE none before Android 13); slice it with x[:, i:i+1] "
        "instead, or select after converting it with .float()");
  const int64_t dim = py_index(cx.constant_int(node->input(1)), rank);
  int64_t index = cx.constant_int(node->input(2));
  const int64_t size = in.shape[dim];
  check(size == 0 || (index >= -size && index < size), [&] {
    return "select index " + std::to_string(index) + " is out of range for dim " +
           std::to_string(dim) + " of size " + std::to_string(size);
  });
  if (index < 0 && size != 0) index += size;
  const int64_t axis = nnapi_axis(in.dim_order, dim);
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
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis) src.push_back(torch_dim(in.dim_order, d));
  }
  const bool in_order = std::is_sorted(src.begin(), src.end());
  Operand sliced = in;
  sliced.dim_order = DimOrder::Contiguous;
  const RoleIds inputs = strided_slice_roles(cx, in_id, begins, ends, strides, end_mask, 1 << axis);
  const OperandHandle slice =
      cx.add_output(in_order ? node->output() : nullptr, sliced, permuted_dims({in_id, in}, src));
  const int32_t slice_id = slice.id;
  ModelBuilder& m = cx.model();
  add_by_roles(m, Op::StridedSlice, inputs, {slice_id});
  if (in_order) return;
  // Output dim k holds PyTorch dim k (< dim) or k + 1: the slice's dim with it.
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != dim) perm.push_back(std::find(src.begin(), src.end(), d) - src.begin());
  }
  const int32_t perm_id = m.add_int_vector(perm);
  const int32_t out_id = cx.add_output(node->output(), sliced, permuted_dims(slice, perm)).id;
  add_transpose(m, slice_id, perm_id, out_id);
}

// The layout a cat's inputs are brought to: the first input's, unless the
// inputs mix NCHW and NHWC 4-D tensors (PyTorch's converter refuses that);
// then NHWC, each NCHW input relaid by a TRANSPOSE.
DimOrder cat_layout(LoweringContext& cx, const std::vector<const Value*>& tensors) {
  bool nchw = false, nhwc = false;
  for (const Value* v : tensors) {
    if (!cx.has_operand(v)) continue;
    const Operand& o = cx.get_operand(v).op;
    if (o.shape.size() != 4) return DimOrder::Contiguous;
    nchw = nchw || o.dim_order == DimOrder::Contiguous;
    nhwc = nhwc || o.dim_order == DimOrder::ChannelsLast;
  }
  if (nchw && nhwc) return DimOrder::ChannelsLast;
  // No mix: each input as it is (emit_relayout returns it unchanged).
  return tensors.empty() || !cx.has_operand(tensors[0]) ? DimOrder::Contiguous
                                                        : cx.get_operand(tensors[0]).op.dim_order;
}

// The pieces of cat(pieces, dim) that have elements: a constant zero-sized
// piece adds nothing (PyTorch also skips a 1-D one of size 0 whatever the
// others' rank: torch.empty(0), Emformer's memory without memory), and NNAPI
// has no zero-sized operands. When every piece is zero-sized, the result is
// their cat, recorded as a constant here; when one piece is left, the result
// is that piece.
std::vector<const Value*> nonempty_pieces(LoweringContext& cx, const Node* node) {
  const std::vector<const Value*>& all = cx.sequence(node->input(0));
  std::vector<const Value*> kept;
  std::vector<at::Tensor> empty;
  for (const Value* v : all) {
    const bool zero_sized = cx.has_constant(v) && cx.constant(v).value.isTensor() &&
                            cx.constant(v).value.toTensor().numel() == 0;
    if (zero_sized) {
      empty.push_back(cx.constant(v).value.toTensor());
    } else {
      kept.push_back(v);
    }
  }
  if (kept.empty()) {
    cx.add_constant(node->output(), node->output()->type(),
                    c10::IValue(at::cat(empty, cx.constant_int(node->input(1)))));
  } else if (kept.size() == 1 && !empty.empty() && node->kind() == c10::aten::cat) {
    cx.forward_value(node->output(), kept[0]);
    return {};
  }
  return kept;
}

void lower_cat(LoweringContext& cx, const Node* node) {
  // quantized::cat(_relu)(tensors, dim, scale, zero_point): the output's
  // parameters, or (None) the first input's, as PyTorch's kernel takes them;
  // cat_relu is CONCATENATION, then RELU (which clamps at the zero point).
  std::optional<std::pair<double, int64_t>> qparams;
  const bool relu = node->kind() == c10::Symbol::fromQualString("quantized::cat_relu");
  if (relu || node->kind() == c10::Symbol::fromQualString("quantized::cat")) {
    check(node->inputs().size() == 4, "malformed quantized::cat");
    if (!cx.constant_is_none(node->input(2))) {
      qparams = std::make_pair(cx.constant_float(node->input(2)), cx.constant_int(node->input(3)));
    }
  }
  int64_t dim = cx.constant_int(node->input(1));
  check(!cx.sequence(node->input(0)).empty(), "cat of an empty list");
  const std::vector<const Value*> tensors = nonempty_pieces(cx, node);
  if (tensors.empty()) return;  // every piece zero-sized: the result is a constant
  std::vector<int32_t> in_ids;
  std::vector<SymInt> parts;  // the inputs' sizes along the cat dim
  Operand out;
  std::vector<SymInt> dims;
  int64_t rank = 0;
  int64_t d = 0;
  const DimOrder order = cat_layout(cx, tensors);
  if (cx.get_operand_or_constant(tensors[0], DimOrder::Contiguous).op.type ==
      nnapi::OperandType::TensorInt32) {
    // Bools joined as float32 (relaid out there: TRANSPOSE takes no
    // TENSOR_INT32 either); int32 numbers are refused.
    std::vector<OperandHandle> parts;
    for (const Value* v : tensors) {
      parts.push_back(cx.get_operand_or_constant(v, DimOrder::Contiguous));
    }
    const int64_t axis = py_index(dim, static_cast<int64_t>(parts[0].op.shape.size()));
    move_int32(cx, {nnapi::Op::Concatenation}, parts, node->output(),
               [&](const std::vector<OperandHandle>& f, const Value* out) {
                 std::vector<OperandHandle> nchw;
                 for (const OperandHandle& x : f)
                   nchw.push_back(emit_relayout(cx, x, DimOrder::Contiguous));
                 return emit_concat(cx, nchw, axis, out);
               });
    return;
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const OperandHandle part =
        emit_relayout(cx, cx.get_operand_or_constant(tensors[i], DimOrder::Contiguous), order);
    const auto& [id, op] = part;
    if (i == 0) {
      out = op;
      rank = static_cast<int64_t>(op.shape.size());
      d = py_index(dim, rank);
      dims = sym_shape({id, op});  // the other dims are the first input's
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
    parts.push_back(sym_dim(id, op.shape, d));
  }
  dims[d] = concat_dim(parts);
  if (qparams) {
    out.scale = qparams->first;
    out.zero_point = qparams->second;
  }
  // NeuralNetworks.h's CONCATENATION takes an axis in [0, rank): the
  // reference passes a negative dim through as it is.
  int64_t nnapi_dim = d;
  if (out.dim_order == DimOrder::ChannelsLast) {
    check(rank == 4, "channels-last cat needs 4 dims");
    nnapi_dim = nnapi_axis(out.dim_order, d);
  }
  const OperandHandle y = cx.add_output(relu ? nullptr : node->output(), out, dims);
  const int32_t axis_id = cx.model().add_int_scalar(static_cast<int32_t>(nnapi_dim));
  add_concatenation(cx.model(), in_ids, axis_id, y.id);
  if (relu) emit_unary(cx, Op::Relu, y, node->output());
}

// aten::chunk(x, chunks, dim), aten::split(x, int split_size | int[] sizes, dim),
// aten::split_with_sizes(x, sizes, dim).
void lower_split(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  const OperandHandle x = args.tensor("self");
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  const int64_t dim = py_index(args.integer("dim"), rank);
  const int64_t n = x.op.shape[dim];
  check(n != 0, [&] {
    return "splitting the flexible dimension " + std::to_string(dim) +
           " is not supported; give it a fixed size in --input";
  });
  std::vector<int64_t> sizes;
  if (args.has("chunks")) {
    const int64_t chunks = args.integer("chunks");
    check(chunks > 0, "chunk count must be positive");
    sizes = split_sizes(n, (n + chunks - 1) / chunks);
  } else if (args.has("split_size") &&
             args.value("split_size")->type()->kind() == c10::TypeKind::IntType) {
    sizes = split_sizes(n, args.integer("split_size"));  // split.Tensor
  } else {
    // split.sizes, split_with_sizes
    sizes = args.ints(args.has("split_sizes") ? "split_sizes" : "split_size");
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
  cx.add_split_outputs(node->output(), emit_split(cx, x, dim, sizes));
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

void register_slicing_ops(LoweringTable& t) {
  t.add("aten::slice", lower_slice)
      .with_above_rank_4(lower_high_rank_slice)
      .with_moves(Moves::First)
      .with_folds();
  t.add("aten::select", lower_select)
      .with_above_rank_4(lower_high_rank_select)
      .with_moves(Moves::First, nnapi::Op::StridedSlice, true)
      .with_folds();
  t.add("aten::cat", lower_cat)
      .with_above_rank_4(lower_high_rank_cat)
      .with_moves(Moves::Parts)
      .with_folds();
  t.add("quantized::cat", lower_cat);
  t.add("quantized::cat_relu", lower_cat);
  t.add("aten::chunk", lower_split).with_moves(Moves::Split);
  t.add("aten::split", lower_split).with_moves(Moves::Split);
  t.add("aten::split_with_sizes", lower_split).with_moves(Moves::Split);
  t.add("prim::ListUnpack", lower_list_unpack).with_moves(Moves::SplitPart);
}

}  // namespace nnapi_convert

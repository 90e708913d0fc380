// Indexing and stacking with constant indices: stack, unbind, narrow, flip and
// index_select, from NNAPI's CONCATENATION, SPLIT, RESHAPE, STRIDED_SLICE and
// GATHER (feature levels 1 to 3).
#include <ATen/ATen.h>

#include <algorithm>

#include "lower/emit.h"
#include "lower/forms.h"
#include "lower/node_args.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {
namespace {

using nnapi::Op;
using nnapi::OperandType;

// `x`'s data in PyTorch's element order (a channels-last operand relaid NCHW).
OperandHandle contiguous(LoweringContext& cx, const OperandHandle& x) {
  return emit_relayout(cx, x, DimOrder::Contiguous);
}

// stack(tensors, dim): each input reshaped with a dim of 1 at `dim`, then
// CONCATENATION along it. Channels-last inputs are made NCHW first (the result
// has another rank).
void lower_stack(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  const auto& values = cx.sequence(args.value("tensors"));
  check(!values.empty(), "stack of an empty list");
  std::vector<OperandHandle> xs;
  for (const Value* v : values) {
    const OperandHandle x = contiguous(cx, cx.get_operand_or_constant(v, DimOrder::Contiguous));
    xs.push_back(x);
  }
  const int64_t d = py_index(args.integer("dim"), static_cast<int64_t>(xs[0].op.shape.size()) + 1);
  const auto stack = [&](const std::vector<OperandHandle>& ins, const Value* out) {
    std::vector<OperandHandle> parts;
    for (const OperandHandle& x : ins) {
      const Operand& first = ins[0].op;
      check(x.op.type == first.type && x.op.shape == first.shape && x.op.scale == first.scale &&
                x.op.zero_point == first.zero_point,
            [&] {
              return "stack inputs differ in shape or type: " + shape_str(first.shape) + " and " +
                     shape_str(x.op.shape);
            });
      std::vector<SymInt> dims = sym_shape(x);
      dims.insert(dims.begin() + d, SymInt{1, ""});
      parts.push_back(emit_reshape(cx, x, dims, ins.size() == 1 ? out : nullptr));
    }
    return parts.size() > 1 ? emit_concat(cx, parts, d, out) : parts[0];
  };
  // Bools stacked as float32 (CONCATENATION and, below level 6, RESHAPE take
  // no TENSOR_INT32); int32 numbers are refused there.
  move_int32(cx, {nnapi::Op::Concatenation, nnapi::Op::Reshape}, xs, node->output(), stack);
}

// unbind(x, dim): SPLIT into size-1 parts along dim, each reshaped without it;
// a prim::ListUnpack takes the parts (slicing.cpp).
void lower_unbind(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  const OperandHandle x = contiguous(cx, args.tensor("self"));
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  const int64_t d = py_index(args.integer("dim"), rank);
  const int64_t n = x.op.shape[d];
  check(n > 0, "unbind of a flexible dimension is not supported; give it a fixed size in --input");
  std::vector<int32_t> parts;
  for (int32_t id : emit_split(cx, x, d, std::vector<int64_t>(n, 1))) {
    std::vector<SymInt> dims = sym_shape({id, cx.operand(id)});
    dims.erase(dims.begin() + d);
    parts.push_back(emit_reshape(cx, {id, cx.operand(id)}, dims).id);
  }
  cx.add_split_outputs(node->output(), parts);
}

// narrow(x, dim, start, length) = x[..., start:start + length, ...]: a
// STRIDED_SLICE (emit_take); a negative start counts from the end.
void lower_narrow(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  const OperandHandle x = args.tensor("self");
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  const int64_t d = py_index(args.integer("dim"), rank);
  const int64_t n = x.op.shape[d];
  int64_t start = args.integer("start");
  const int64_t length = args.integer("length");
  check(start >= 0 || n > 0,
        "narrow from a negative start along a flexible dimension is not supported");
  if (start < 0) start += n;
  check(start >= 0 && length >= 0 && (n == 0 || start + length <= n), [&] {
    return "narrow of " + std::to_string(length) + " elements from " + std::to_string(start) +
           " is out of range for dimension " + std::to_string(d) + " of size " + std::to_string(n);
  });
  check(length > 0, "narrow to an empty tensor is not supported");
  const OperandHandle y = emit_take(cx, x, d, start, length, 1);
  cx.reinterpret(node->output(), y.id, y.op);
}

// flip(x, dims): per flipped dim a STRIDED_SLICE with stride -1 (NNAPI allows
// negative strides from feature level 2). The flipped dims need fixed sizes.
void lower_flip(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  OperandHandle x = args.tensor("self");
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  std::vector<bool> flipped(rank, false);
  for (int64_t dim : args.ints("dims")) {
    const int64_t d = py_index(dim, rank);
    check(!flipped[d], "flip names a dimension twice");
    flipped[d] = true;
    const int64_t n = x.op.shape[d];
    check(n > 0, [&] {
      return "flip of the flexible dimension " + std::to_string(d) +
             " is not supported; give it a fixed size in --input";
    });
    x = emit_take(cx, x, d, n - 1, n, -1);
  }
  if (x.id == args.tensor("self").id) {
    cx.alias(node->output(), node->input(0));
  } else {
    cx.reinterpret(node->output(), x.id, x.op);
  }
}

// index_select(x, dim, index): GATHER along dim by int32 indices, a constant
// (PyTorch's int64, checked against the dim's size) or a computed int32 tensor.
void lower_index_select(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  const OperandHandle x = cx.get_operand_or_constant(args.value("self"), DimOrder::Contiguous);
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  const int64_t d = py_index(args.integer("dim"), std::max<int64_t>(rank, 1));
  const Value* index = args.value("index");
  OperandHandle idx;
  if (cx.has_operand(index)) {
    idx = cx.get_operand(index);
    check(
        idx.op.type == OperandType::TensorInt32 && idx.op.shape.size() == 1 && idx.op.shape[0] > 0,
        "index_select needs a 1-D int32 index tensor of a fixed size (NNAPI has no int64)");
  } else {
    at::Tensor i = cx.constant_tensor(index).reshape({-1});
    check(!at::isFloatingType(i.scalar_type()), "index_select indices must be integers");
    const int64_t n = x.op.shape[d];
    check(n > 0, "index_select along a flexible dimension is not supported");
    check(i.numel() > 0, "index_select with no indices is not supported");
    check(i.min().item<int64_t>() >= 0 && i.max().item<int64_t>() < n, [&] {
      return "index_select index out of range for dimension " + std::to_string(d) + " of size " +
             std::to_string(n);
    });
    const int32_t id = cx.add_weight(i.to(at::kInt).contiguous(), DimOrder::Contiguous);
    idx = {id, cx.operand(id)};
  }
  Shape shape = x.op.shape;
  shape[d] = idx.op.shape[0];
  ModelBuilder& m = cx.model();
  const int32_t axis = m.add_int_scalar(static_cast<int32_t>(nnapi_axis(x.op, d)));
  const int32_t out_id = make_output(cx, node->output(), x.op.with_shape(shape), &x);
  add_gather(m, x.id, axis, idx.id, out_id);
}

}  // namespace

void register_indexing_ops(LoweringTable& t) {
  t.add("aten::stack", lower_stack).with_moves(Moves::Parts);
  t.add("aten::unbind", lower_unbind)
      .with_above_rank_4(lower_high_rank_unbind)
      .with_moves(Moves::Split, nnapi::Op::Reshape, true);
  t.add("aten::narrow", lower_narrow).with_moves(Moves::First);
  t.add("aten::flip", lower_flip)
      .with_note("STRIDED_SLICE with stride -1 per flipped dim (fixed sizes)")
      .with_moves(Moves::First);
  t.add("aten::index_select", lower_index_select)
      .with_note("GATHER by constant or int32 indices")
      .with_moves(Moves::First)
      .with_folds();
}

}  // namespace nnapi_convert

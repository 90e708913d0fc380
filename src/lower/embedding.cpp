// Table lookups: aten::embedding as NNAPI's GATHER along the table's rows;
// quantized::embedding_bag_byte (eager quantization's EmbeddingBag) of 2-D
// indices as GATHERs of the 8-bit table and its per-row scale and bias, and
// a reduction over each bag.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include "lower/emit.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {
namespace {

using nnapi::Op;
using nnapi::OperandType;

// GATHER of the rows of a constant (V, ...) table by int32 indices: shape
// indices.shape + the table's row shape.
OperandHandle gather_rows(LoweringContext& cx, const at::Tensor& table,
                          const OperandHandle& indices, const Value* out) {
  const auto& [idx_id, idx] = indices;
  check(idx.type == OperandType::TensorInt32, [&] {
    return std::string("embedding indices must be an int32 tensor (NNAPI has no int64); give ") +
           "the input ,dtype=int32 in --input and feed int32 indices";
  });
  check(idx.dim_order == DimOrder::Contiguous, "embedding indices must be contiguous");
  const int32_t table_id = cx.add_weight(table.contiguous(), DimOrder::Contiguous);
  ModelBuilder& m = cx.model();
  const int32_t axis = m.add_int_scalar(0);
  Shape shape = idx.shape;
  for (int64_t d = 1; d < table.dim(); ++d) shape.push_back(table.size(d));
  Operand o = cx.operand(table_id).with_shape(shape);
  const int32_t out_id = make_output(cx, out, o, &indices);
  add_gather(m, table_id, axis, idx_id, out_id);
  return {out_id, cx.operand(out_id)};
}

// embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse): row
// indices[...] of the (V, D) table, shape indices.shape + (D). The last three
// arguments only change training. The table is a constant (a frozen
// parameter); the indices are an int32 model input or computed from one
// (NNAPI has no int64 tensors).
void lower_embedding(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 5, "malformed aten::embedding");
  check(cx.has_constant(node->input(0)) && !cx.has_operand(node->input(0)),
        "embedding needs a constant table (a frozen parameter)");
  at::Tensor table = cx.constant_tensor(node->input(0));
  check(table.dim() == 2, "embedding needs a 2-D table");
  check(table.scalar_type() == at::kFloat, [&] {
    return std::string("embedding tables of dtype ") + c10::toString(table.scalar_type()) +
           " are not supported (float32 only)";
  });
  gather_rows(cx, table, cx.get_operand(node->input(1)), node->output());
}

// quantized::embedding_bag_byte(weight, indices, offsets, scale_grad_by_freq,
// mode, pruned_weights, per_sample_weights, compressed_indices_mapping,
// include_last_offset): each bag the sum (mode 0), mean (1) or max (2) of
// its rows, row r being q[r] * scale[r] + bias[r] with q[r] the 8-bit row and
// scale[r], bias[r] floats (the table as quantized::embedding_bag_unpack gives
// it: per-row float scales and zero points, bias = -zero_point * scale).
// Bags of 2-D (bags, length) indices without offsets: GATHER of the quint8
// table (scale 1, zero point 0), DEQUANTIZE to the integers, MUL and ADD by the
// GATHERed scale and bias, REDUCE_SUM / MEAN / REDUCE_MAX over each bag.
// Offsets (1-D indices cut into bags of lengths read when the model runs)
// have no NNAPI operation: refused.
void lower_embedding_bag_byte(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 9, "malformed quantized::embedding_bag_byte");
  const Value* offsets = node->input(2);
  check(!cx.has_operand(offsets) && cx.constant_is_none(offsets),
        "quantized::embedding_bag_byte with offsets: NNAPI has no operation that sums rows in "
        "bags whose lengths are read when the model runs. Give the indices as one 2-D (bags, "
        "length) tensor without offsets (every bag of one length), or run the bag outside the "
        "NNAPI model (--cpu-fallback)");
  check(!cx.constant_bool(node->input(5)) && cx.constant_is_none(node->input(6)) &&
            cx.constant_is_none(node->input(7)),
        "quantized::embedding_bag_byte with pruned weights or per-sample weights is not "
        "supported; quantize the EmbeddingBag without them");
  const int64_t mode = cx.constant_int(node->input(4));
  check(mode >= 0 && mode <= 2, "quantized::embedding_bag_byte mode must be sum, mean or max");
  const OperandHandle indices = cx.get_operand(node->input(1));
  check(indices.op.shape.size() == 2, [&] {
    return "quantized::embedding_bag_byte needs 2-D (bags, length) indices, got " +
           shape_str(indices.op.shape);
  });
  torch::jit::Stack stack{cx.constant(node->input(0)).value};
  c10::Dispatcher::singleton()
      .findSchemaOrThrow("quantized::embedding_bag_unpack", "")
      .callBoxed(&stack);
  const at::Tensor q = stack.at(0).toTensor();
  check(q.dim() == 2 && q.scalar_type() == at::kQUInt8 &&
            q.qscheme() == at::kPerChannelAffineFloatQParams,
        "quantized::embedding_bag_byte weights are not an 8-bit table with per-row parameters");
  // Copies: the per-row parameters may be views of the unpacked table's data.
  const at::Tensor scale = q.q_per_channel_scales().to(at::kFloat).clone().reshape({-1, 1});
  const at::Tensor bias =
      (-q.q_per_channel_zero_points().to(at::kFloat) * scale.flatten()).reshape({-1, 1});
  const OperandHandle rows = emit_dequantize(
      cx, gather_rows(cx, at::_make_per_tensor_quantized_tensor(q.int_repr(), 1.0, 0), indices,
                      nullptr));
  const OperandHandle y = emit_binary(
      cx, Op::Add, emit_binary(cx, Op::Mul, rows, gather_rows(cx, scale, indices, nullptr)),
      gather_rows(cx, bias, indices, nullptr));
  ModelBuilder& m = cx.model();
  const Op reduce = mode == 0 ? Op::ReduceSum : mode == 1 ? Op::Mean : Op::ReduceMax;
  const int32_t keep = reduce == Op::Mean ? m.add_int_scalar(0) : m.add_bool_scalar(false);
  const OperandHandle out = cx.add_output(
      node->output(), y.op, {sym_dim(indices.id, indices.op.shape, 0), SymInt{q.size(1), ""}});
  add_reduce(m, reduce, y.id, m.add_int_vector({1}), keep, out.id);
}

}  // namespace

void register_embedding_ops(LoweringTable& t) {
  t.add("aten::embedding", lower_embedding).with_folds();
  t.add("quantized::embedding_bag_byte", lower_embedding_bag_byte)
      .with_note(
          "2-D int32 (bags, length) indices without offsets, per_sample_weights or pruned "
          "weights: GATHER of the 8-bit table and its per-row scale and bias, DEQUANTIZE, MUL, "
          "ADD, REDUCE_SUM / MEAN / REDUCE_MAX over each bag");
}

}  // namespace nnapi_convert

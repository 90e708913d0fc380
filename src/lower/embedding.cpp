// Table lookups: aten::embedding as NNAPI's GATHER along the table's rows.
#include <ATen/ATen.h>

#include "lower/emit.h"
#include "lower/registry.h"

namespace nnapi_convert {
namespace {

using nnapi::Op;
using nnapi::OperandType;

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
  const OperandHandle indices = cx.get_operand(node->input(1));
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
  shape.push_back(table.size(1));
  Operand out = cx.operand(table_id).with_shape(shape);
  const int32_t out_id = make_output(cx, node->output(), out, &indices);
  m.add_operation(Op::Gather, {table_id, axis, idx_id}, {out_id});
}

}  // namespace

void register_embedding_ops(LoweringTable& t) {
  t.add("aten::embedding", lower_embedding).with_folds();
}

}  // namespace nnapi_convert

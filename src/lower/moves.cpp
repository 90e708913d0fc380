#include "lower/moves.h"

#include <ATen/ATen.h>

#include <utility>

#include "lower/emit.h"
#include "lower/logical.h"
#include "lower/registry.h"

namespace nnapi_convert {

namespace {

const MoveEntry* entry_of(c10::Symbol kind) {
  const KindSpec* spec = lowering_table().find(kind);
  return spec && spec->moves ? &*spec->moves : nullptr;
}

std::vector<const Value*> moved_inputs(const LoweringContext& cx, const Node* node,
                                       const MoveEntry* entry) {
  if (!entry || node->inputs().empty()) return {};
  const Value* in = node->input(0);
  switch (entry->how) {
    case Moves::Parts:
      if (cx.has_sequence(in)) return cx.sequence(in);
      return {};
    case Moves::SplitPart:
      if (moves_of(in->node()->kind()) == Moves::Split) return {in->node()->input(0)};
      return {};
    default:
      return {in};
  }
}

Operand of_type(Operand o, nnapi::OperandType type) {
  o.type = type;
  return o;
}

// The results of `node` as int32 0/1 bools: each float32 result (an operand,
// or the parts of a split's list) CAST back to int32 and bound in its place.
void results_to_int32(LoweringContext& cx, const Node* node, const MoveEntry& entry) {
  const auto back = [&](const OperandHandle& y) {
    return emit_unary_to(cx, nnapi::Op::Cast, y, of_type(y.op, nnapi::OperandType::TensorInt32));
  };
  for (const Value* out : node->outputs()) {
    if (entry.how == Moves::Split && out->type()->kind() == c10::TypeKind::ListType) {
      std::vector<int32_t> parts;
      for (int32_t id : cx.split_outputs(out)) parts.push_back(back({id, cx.operand(id)}).id);
      cx.add_split_outputs(out, std::move(parts));
      continue;
    }
    if (!cx.has_operand(out)) continue;
    const OperandHandle y = cx.get_operand(out);
    if (y.op.type != nnapi::OperandType::TensorFloat32) continue;
    const OperandHandle b = back(y);
    cx.rebind(out, b.id, b.op);
    cx.set_torch_dtype(out, at::kBool);
  }
}

// Lowers `node` with its int32 bool inputs seen as float32 (moves_bools).
void lower_as_float(LoweringContext& cx, const Node* node, const MoveEntry& entry,
                    const std::function<void(LoweringContext&, const Node*)>& lower) {
  std::vector<std::pair<const Value*, OperandHandle>> held;
  for (const Value* v : moved_inputs(cx, node, &entry)) {
    if (!cx.has_operand(v)) continue;
    const OperandHandle x = cx.get_operand(v);
    if (x.op.type != nnapi::OperandType::TensorInt32) continue;
    const OperandHandle f =
        emit_unary_to(cx, nnapi::Op::Cast, x, of_type(x.op, nnapi::OperandType::TensorFloat32));
    held.emplace_back(v, x);
    cx.rebind(v, f.id, f.op);
  }
  lower(cx, node);
  for (const auto& [v, x] : held) cx.rebind(v, x.id, x.op);
  results_to_int32(cx, node, entry);
}

// The PyTorch dtype of a bool or int64 held as int32, carried to the results.
void carry_torch_dtype(LoweringContext& cx, const Node* node,
                       const std::vector<const Value*>& from) {
  if (from.empty()) return;
  const auto dtype = cx.torch_dtype_of(from[0]);
  if (!dtype) return;
  for (const Value* part : from) {
    if (cx.torch_dtype_of(part) != dtype) return;
  }
  for (const Value* out : node->outputs()) {
    if (cx.has_operand(out) && !cx.torch_dtype_of(out) &&
        cx.get_operand(out).op.type == nnapi::OperandType::TensorInt32)
      cx.set_torch_dtype(out, *dtype);
  }
}

}  // namespace

Moves moves_of(c10::Symbol kind) {
  const MoveEntry* entry = entry_of(kind);
  return entry ? entry->how : Moves::None;
}

std::vector<const Value*> moved_inputs(const LoweringContext& cx, const Node* node) {
  return moved_inputs(cx, node, entry_of(node->kind()));
}

bool moves_bools(const LoweringContext& cx, const Node* node) {
  const std::vector<const Value*> from = moved_inputs(cx, node);
  if (from.empty()) return false;
  for (const Value* v : from) {
    if (!is_bool_value(cx, v)) return false;
  }
  return true;
}

void lower_moving_node(LoweringContext& cx, const Node* node, const MoveEntry* entry,
                       const std::function<void(LoweringContext&, const Node*)>& lower) {
  if (!entry) {
    lower(cx, node);
    return;
  }
  bool int32 = false, channels_last = false;
  for (const Value* v : moved_inputs(cx, node, entry)) {
    if (!cx.has_operand(v)) continue;
    OperandHandle x = cx.get_operand(v);
    if (x.op.type == nnapi::OperandType::TensorBool8) {
      x = int01_of(cx, x);
      cx.rebind(v, x.id, x.op);
      cx.set_torch_dtype(v, at::kBool);
    }
    if (x.op.type != nnapi::OperandType::TensorInt32) continue;
    int32 = true;
    channels_last = channels_last || x.op.dim_order == DimOrder::ChannelsLast;
  }
  const nnapi::OperandType i32 = nnapi::OperandType::TensorInt32;
  const bool refused =
      (entry->relayouts && channels_last && !cx.takes(nnapi::Op::Transpose, i32)) ||
      (entry->int32_op && !cx.takes(*entry->int32_op, i32));
  if (int32 && refused && moves_bools(cx, node)) {
    lower_as_float(cx, node, *entry, lower);
  } else {
    lower(cx, node);
  }
  carry_torch_dtype(cx, node, moved_inputs(cx, node, entry));
}

}  // namespace nnapi_convert

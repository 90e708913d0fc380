#include "lower/dispatch.h"

#include <ATen/ATen.h>

#include "lower/moves.h"
#include "lower/refusal.h"

namespace nnapi_convert {

namespace {

// A tensor of rank > 4 is held by NNAPI as a rank <= 4 operand of the same
// elements (a model input, a view, a permute): only the kinds whose spec
// takes it may read it (KindSpec::takes_rank_above_4); any other node is
// refused here, before it would compute on the operand's dims as if they
// were the tensor's.
void check_input_ranks(const LoweringContext& cx, const Node* node) {
  for (const Value* v : node->inputs()) {
    if (!cx.has_operand(v)) continue;
    const Shape& shape = cx.get_operand(v).op.shape;
    check(shape.size() <= 4, [&] {
      return "this node reads " + value_name(v) + " of rank " + std::to_string(shape.size()) + " " +
             shape_str(shape) +
             ", but NNAPI operations take tensors of rank 4 at most, and nnapi-convert merges "
             "dims for views, permutes, selects, slices, unbind, cat, einsum, padding, softmax, "
             "dequantize and elementwise operations only: reshape the tensor to rank 4 or less "
             "before this operation";
    });
  }
}

bool takes_frames(const LoweringContext& cx, const KindSpec* spec, const Node* node) {
  return spec != nullptr && spec->frames.takes && spec->frames.takes(cx, node);
}

}  // namespace

void lower_plain(LoweringContext& cx, const KindSpec& spec, const Node* node) {
  if (spec.above_rank_4 && spec.above_rank_4(cx, node)) return;
  spec.lower(cx, node);
}

namespace {

// lower_by_form, where `frames` says whether the node takes its video inputs
// as frames (KindSpec::frames.takes, asked once per node).
void lower_by_form(LoweringContext& cx, const KindSpec& spec, const Node* node, bool frames) {
  if (spec.complex && cx.torch_dtype_of(node->input(0)) == at::kComplexFloat) {
    spec.complex(cx, node);
    return;
  }
  if (frames && spec.frames.lower && spec.frames.lower(cx, node, spec)) return;
  lower_plain(cx, spec, node);
}

}  // namespace

void lower_by_form(LoweringContext& cx, const KindSpec& spec, const Node* node) {
  lower_by_form(cx, spec, node, takes_frames(cx, &spec, node));
}

Dispatch dispatch(LoweringContext& cx, const Node* node, const NodeGroup* group) {
  const KindSpec* spec = lowering_table().find(node->kind());
  if (!group && (!spec || !spec->lower)) {
    if (spec && spec->folds) {
      fail(
          "nnapi-convert computes this operation only during conversion, when all its "
          "inputs are constant (a mask built from fixed sizes), but here an input is a "
          "tensor the model computes, or a size of a flexible input dimension");
    }
    fail(
        "this node computes with values known only when the model runs (sizes of "
        "flexible dims?); nnapi-convert folds it only when all its inputs are constant");
  }
  const bool frames = takes_frames(cx, spec, node);
  if (!frames) {
    for (const Value* v : node->inputs()) unfold_video_value(cx, v);
    if (!spec || !spec->takes_rank_above_4()) check_input_ranks(cx, node);
  }
  return Dispatch(node, group, spec, frames);
}

void Dispatch::lower(LoweringContext& cx) const {
  if (group_) {
    group_->lower(cx, *group_);
    return;
  }
  const KindSpec& spec = *spec_;
  const bool frames = frames_;
  lower_moving_node(
      cx, node_, spec.moves ? &*spec.moves : nullptr,
      [&spec, frames](LoweringContext& c, const Node* n) { lower_by_form(c, spec, n, frames); });
}

}  // namespace nnapi_convert

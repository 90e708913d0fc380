// The dispatch: for each node, the handler of its kind's spec (registry.h)
// that the form of its inputs calls for, in one place:
// - a complex input (an aten::stft result): the spec's `complex` lowering;
// - video tensors held as frames: where the spec's `frames.takes` says the
//   node takes them, its `frames.lower` first; else each video input leaves
//   the frames layout before the node reads it;
// - rank > 4: the spec's `above_rank_4` handler first (each handler also
//   takes the rank <= 4 nodes that make a tensor of rank > 4: a view or an
//   unsqueeze to rank 5); a node whose spec takes no rank > 4 input is
//   refused when it reads one;
// - otherwise (rank <= 4): the spec's `lower`.
// A handler tried first returns false for a node it does not take, and the
// next form's handler is tried. Around all of it, the bool and int data of
// the kinds that only move elements is moved as NNAPI takes it (moves.h).
#pragma once

#include "lower/registry.h"

namespace nnapi_convert {

// A node ready to be lowered (dispatch): its inputs are in the form its
// kind's handler reads.
class Dispatch {
 public:
  Dispatch(const Node* node, const NodeGroup* group, const KindSpec* spec, bool frames)
      : node_(node), group_(group), spec_(spec), frames_(frames) {}
  // Lowers the node (its group, when it ends one) by the handler chosen.
  void lower(LoweringContext& cx) const;

 private:
  const Node* node_;
  const NodeGroup* group_;
  const KindSpec* spec_;
  bool frames_;  // the spec's frames.takes said the node takes its video inputs as frames
};

// Prepares `node` for lowering, or lowers the group `group` (when not null)
// it ends: refuses a kind with no lowering (one folded only when its inputs
// are constant, or unknown), unfolds the video inputs its kind does not take
// as frames and refuses an input of rank > 4 its kind does not take.
Dispatch dispatch(LoweringContext& cx, const Node* node, const NodeGroup* group);

// The spec's lowering for rank <= 4 and rank > 4 (no frames, no complex
// input, no moves): what a per-frame handler lowers each frame by.
void lower_plain(LoweringContext& cx, const KindSpec& spec, const Node* node);

// The spec's handler for the node's form (complex, frames, rank > 4 or plain)
// without the driver's checks and moves: how a group lowers its nodes one by
// one when it is not the pattern it looks for.
void lower_by_form(LoweringContext& cx, const KindSpec& spec, const Node* node);

}  // namespace nnapi_convert

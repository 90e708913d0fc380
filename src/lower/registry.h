// The lowering table: one KindSpec per TorchScript node kind, declared by the
// family file that lowers the kind (register_*_ops below), beside its
// lowering. A spec holds everything nnapi-convert knows about the kind: its
// lowering, its support checks, how it moves bool and int data, its handlers
// of inputs of other forms (rank > 4, video frames, complex), whether it is
// folded at conversion, and its list-ops note. dispatch.h chooses the handler
// for a node from its inputs' form; the order of registration does not matter.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "lower/context.h"
#include "lower/moves.h"

namespace nnapi_convert {

using LowerFn = std::function<void(LoweringContext&, const Node*)>;
// Whether the lowering of a node's kind takes this node, from the graph alone
// (its constant arguments and types), before anything is lowered: "" when it
// may, else what makes it unsupported ("3-D", "dilated grouped"), named in
// the up-front census beside the kind. Kept apart from the lowering, as ONNX
// Runtime's NNAPI op builders keep IsOpSupported apart from AddToModelBuilder.
using SupportFn = std::function<std::string(const Node*)>;
// A handler of inputs of one form (rank > 4): lowers the node and returns
// true, or returns false for a node it does not take (its kind's lowering
// then does).
using FormFn = std::function<bool(LoweringContext&, const Node*)>;

struct KindSpec;
// How a kind reads video tensors held as frames (DimOrder::FramesNchw /
// FramesNhwc, video.cpp). Without one, each video input leaves the frames
// layout (unfold_video_value) before the node reads it.
struct FramesSpec {
  // Whether the node takes its video inputs as they are held; when it does,
  // they are not unfolded, and its inputs' ranks are not checked.
  std::function<bool(const LoweringContext&, const Node*)> takes;
  // Tried first when `takes`: lowers the node and returns true, or returns
  // false for the kind's own lowering (lower_plain of dispatch.h).
  std::function<bool(LoweringContext&, const Node*, const KindSpec&)> lower;
};

struct KindSpec {
  std::string kind;
  LowerFn lower;  // none for a kind only folded at conversion
  std::vector<SupportFn> support;
  std::optional<MoveEntry> moves;  // a kind that only moves elements (moves.h)
  // Rank > 4 (rank_reduce.cpp): the handler tried before `lower`, and
  // whether the node may read an input of rank > 4 at all (a handler, or a
  // lowering that knows the operand holds the tensor's elements merged);
  // the driver refuses any other node reading one.
  FormFn above_rank_4;
  bool reads_above_rank_4 = false;
  FramesSpec frames;   // video inputs held as frames (video.cpp)
  LowerFn complex;     // a complex input (an aten::stft result, spectral.cpp)
  bool folds = false;  // run at conversion when its inputs are constant (core/folding.h)
  std::string note;    // for list-ops: a limit, a decomposition
  std::string family;  // the file that declares it (set by the registry)

  // Declaration helpers, chained after LoweringTable::add.
  KindSpec& with_note(std::string text);
  KindSpec& with_support(SupportFn fn);
  KindSpec& with_moves(Moves how, std::optional<nnapi::Op> int32_op = std::nullopt,
                       bool relayouts = false);
  KindSpec& with_above_rank_4(FormFn handler);
  KindSpec& with_reads_above_rank_4();
  KindSpec& with_frames(FramesSpec how);
  KindSpec& with_complex(LowerFn lower_complex);
  KindSpec& with_folds();
  // Whether a node of this kind may read a tensor of rank > 4.
  bool takes_rank_above_4() const { return above_rank_4 != nullptr || reads_above_rank_4; }
};

// Nodes lowered together as one pattern (ShuffleNet's view/transpose/view as
// CHANNEL_SHUFFLE): the driver skips all but the last, and there calls `lower`.
struct NodeGroup {
  std::vector<const Node*> nodes;  // in graph order
  std::function<void(LoweringContext&, const NodeGroup&)> lower;
};
// The group that starts at `first`, or none. Matchers look at the graph only
// (kinds and uses), before anything is lowered (fusion.h).
using GroupMatcher = std::function<std::optional<NodeGroup>(const Node* first)>;

class LoweringTable {
 public:
  // Kinds declared from now on belong to `family` (the file that lowers them).
  void set_family(std::string family) { family_ = std::move(family); }
  // Declares `kind` with its lowering (none: folded only); the rest of its
  // spec is chained on the result. A kind declared twice is an internal
  // error, raised when the table is built (at startup).
  KindSpec& add(const std::string& kind, LowerFn fn);
  // What makes `node` unsupported by its kind's lowering ("" when nothing
  // known up front does; the lowering may still refuse it).
  std::string unsupported_because(const Node* node) const;
  // A pattern that starts at a node of `first_kind` (see NodeGroup). Kept
  // apart from the specs: a pattern spans several kinds and is declared by
  // the family that lowers it (layout.cpp), not by its first kind's.
  void add_group(const std::string& first_kind, GroupMatcher match);
  // The spec of `kind`, or none. By interned symbol: no string is built per node.
  const KindSpec* find(c10::Symbol kind) const;
  // Whether `kind` has a lowering (not only folding).
  bool lowers(c10::Symbol kind) const {
    const KindSpec* spec = find(kind);
    return spec != nullptr && spec->lower != nullptr;
  }
  // The group matchers for nodes of `kind` (empty for most kinds).
  const std::vector<GroupMatcher>& group_matchers(c10::Symbol kind) const;
  // Every spec, sorted by family then kind.
  std::vector<const KindSpec*> specs() const;

 private:
  std::unordered_map<c10::Symbol, KindSpec> specs_;
  std::unordered_map<c10::Symbol, std::vector<GroupMatcher>> matchers_;
  std::string family_;
};

// Shape arithmetic on load-time ints (symbolic.cpp): lowers `node` and
// returns true when an input is a symbolic size and the node is arithmetic,
// a list or an unpack of one; returns false otherwise.
bool lower_symbolic_arithmetic(LoweringContext& cx, const Node* node);

// The table with every family registered.
const LoweringTable& lowering_table();

// video.cpp: a video tensor held as frames leaves that layout, as a
// contiguous 5-D tensor (the driver does this for each input of a node whose
// kind does not take frames, and for a value the model returns).
void unfold_video_value(LoweringContext& cx, const Value* v);

// One per file in src/lower/.
void register_graph_ops(LoweringTable& t);          // graph.cpp: constants, attributes, lists
void register_folded_ops(LoweringTable& t);         // folded.cpp: kinds only folded
void register_view_ops(LoweringTable& t);           // view.cpp
void register_layout_ops(LoweringTable& t);         // layout.cpp
void register_slicing_ops(LoweringTable& t);        // slicing.cpp
void register_pointwise_ops(LoweringTable& t);      // pointwise.cpp
void register_pooling_ops(LoweringTable& t);        // pooling.cpp
void register_upsample_ops(LoweringTable& t);       // upsample.cpp
void register_convolution_ops(LoweringTable& t);    // convolution.cpp
void register_linear_ops(LoweringTable& t);         // linear.cpp
void register_prepacked_ops(LoweringTable& t);      // prepacked.cpp (optimize_for_mobile's)
void register_quantized_ops(LoweringTable& t);      // quantized.cpp
void register_dynamic_quant_ops(LoweringTable& t);  // dynamic_quant.cpp
void register_activation_ops(LoweringTable& t);     // activation.cpp
void register_normalization_ops(LoweringTable& t);  // normalization.cpp
void register_padding_ops(LoweringTable& t);        // padding.cpp
void register_pixel_shuffle_ops(LoweringTable& t);  // pixel_shuffle.cpp
void register_embedding_ops(LoweringTable& t);      // embedding.cpp
void register_matmul_ops(LoweringTable& t);         // matmul.cpp
void register_tile_ops(LoweringTable& t);           // tile.cpp
void register_recurrent_ops(LoweringTable& t);      // recurrent.cpp
void register_roll_ops(LoweringTable& t);           // roll.cpp
void register_einsum_ops(LoweringTable& t);         // einsum.cpp
void register_attention_ops(LoweringTable& t);      // attention.cpp
void register_indexing_ops(LoweringTable& t);       // indexing.cpp
void register_logical_ops(LoweringTable& t);        // logical.cpp
void register_reduction_ops(LoweringTable& t);      // reduction.cpp
void register_video_ops(LoweringTable& t);          // video.cpp
void register_spectral_ops(LoweringTable& t);       // spectral.cpp
void register_control_ops(LoweringTable& t);        // control.cpp (prim::If decided here)
void register_factory_ops(LoweringTable& t);        // factory.cpp: zeros, ones, full, ...

}  // namespace nnapi_convert

// The lowering table: TorchScript node kind -> the function that lowers it.
// Each op family registers its kinds from its own file.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "lower/context.h"

namespace nnapi_convert {

using LowerFn = std::function<void(LoweringContext&, const Node*)>;
// Whether the lowering of a node's kind takes this node, from the graph alone
// (its constant arguments and types), before anything is lowered: "" when it
// may, else what makes it unsupported ("3-D", "dilated grouped"), named in
// the up-front census beside the kind. Kept apart from the lowering, as ONNX
// Runtime's NNAPI op builders keep IsOpSupported apart from AddToModelBuilder.
using SupportFn = std::function<std::string(const Node*)>;

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
  // Kinds added from now on belong to `family` (the file that lowers them).
  void set_family(std::string family) { family_ = std::move(family); }
  void add(const std::string& kind, LowerFn fn);
  // Wraps the lowering of `kind` added before: `lower` first (which may call
  // the earlier lowering, passed to it), and where it returns false (a node it
  // does not take) the earlier lowering.
  using ExtendFn = std::function<bool(LoweringContext&, const Node*, const LowerFn& earlier)>;
  void extend(const std::string& kind, ExtendFn lower);
  // A remark for list-ops on a kind already added (a limit, a decomposition).
  void note(const std::string& kind, std::string text);
  // A support check for nodes of `kind` (see SupportFn); several add up.
  void add_support_check(const std::string& kind, SupportFn fn);
  // What makes `node` unsupported by its kind's lowering ("" when nothing
  // known up front does; the lowering may still refuse it).
  std::string unsupported_because(const Node* node) const;
  // A pattern that starts at a node of `first_kind` (see NodeGroup).
  void add_group(const std::string& first_kind, GroupMatcher match);
  // By interned symbol: no string is built per node.
  const LowerFn* find(c10::Symbol kind) const;
  // The group matchers for nodes of `kind` (empty for most kinds).
  const std::vector<GroupMatcher>& group_matchers(c10::Symbol kind) const;

  struct Entry {
    std::string kind, family, note;
  };
  // Every kind, sorted by family then kind.
  std::vector<Entry> entries() const;

 private:
  std::unordered_map<c10::Symbol, LowerFn> fns_;
  std::unordered_map<c10::Symbol, std::vector<GroupMatcher>> matchers_;
  std::unordered_map<c10::Symbol, std::vector<SupportFn>> support_;
  std::unordered_map<std::string, Entry> entries_;
  std::string family_;
};

// Shape arithmetic on load-time ints (symbolic.cpp): lowers `node` and
// returns true when an input is a symbolic size and the node is arithmetic,
// a list or an unpack of one; returns false otherwise.
bool lower_symbolic_arithmetic(LoweringContext& cx, const Node* node);

// The table with every family registered.
const LoweringTable& lowering_table();

// rank_reduce.cpp: add/sub/mul/div of rank > 4, registered after pointwise.cpp.
void register_rank_reduce_arithmetic(LoweringTable& t);
// Whether the lowering of `kind` takes a tensor of rank > 4, which NNAPI
// holds as a rank <= 4 operand of the same elements (views, permutes,
// selects, slices, cat, elementwise operations, einsum, padding, sizes: see
// rank_reduce.cpp). The driver refuses any other node reading one.
bool takes_rank_above_4(c10::Symbol kind);
// video.cpp: whether the lowering of `node` takes video tensors (N, C, T, H,
// W), as NNAPI frames (DimOrder::FramesNchw / FramesNhwc) or contiguous;
// where not, each one held as frames leaves that layout, as a contiguous 5-D
// tensor, before the node reads it. unfold_video_value does the same for a
// value the model returns.
bool takes_video_inputs(LoweringContext& cx, const Node* node);
void unfold_video_value(LoweringContext& cx, const Value* v);

// One per file in src/lower/.
void register_graph_ops(LoweringTable& t);          // graph.cpp: constants, attributes, lists
void register_view_ops(LoweringTable& t);           // view.cpp
void register_layout_ops(LoweringTable& t);         // layout.cpp
void register_slicing_ops(LoweringTable& t);        // slicing.cpp
void register_rank_reduce_ops(LoweringTable& t);    // rank_reduce.cpp (rank > 4; after the above)
void register_pointwise_ops(LoweringTable& t);      // pointwise.cpp
void register_pooling_ops(LoweringTable& t);        // pooling.cpp
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
void register_video_ops(LoweringTable& t);          // video.cpp (after pointwise, convolution)
void register_spectral_ops(LoweringTable& t);       // spectral.cpp (after pointwise: abs)
void register_control_ops(LoweringTable& t);        // control.cpp (prim::If decided here)

}  // namespace nnapi_convert

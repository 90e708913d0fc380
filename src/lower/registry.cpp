#include "lower/registry.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "lower/refusal.h"

namespace nnapi_convert {

KindSpec& KindSpec::with_note(std::string text) {
  note = std::move(text);
  return *this;
}

KindSpec& KindSpec::with_support(SupportFn fn) {
  support.push_back(std::move(fn));
  return *this;
}

KindSpec& KindSpec::with_moves(Moves how, std::optional<nnapi::Op> int32_op, bool relayouts) {
  moves = MoveEntry{how, int32_op, relayouts};
  return *this;
}

KindSpec& KindSpec::with_above_rank_4(FormFn handler) {
  above_rank_4 = std::move(handler);
  return *this;
}

KindSpec& KindSpec::with_reads_above_rank_4() {
  reads_above_rank_4 = true;
  return *this;
}

KindSpec& KindSpec::with_frames(FramesSpec how) {
  frames = std::move(how);
  return *this;
}

KindSpec& KindSpec::with_complex(LowerFn lower_complex) {
  complex = std::move(lower_complex);
  return *this;
}

KindSpec& KindSpec::with_folds() {
  folds = true;
  return *this;
}

KindSpec& LoweringTable::add(const std::string& kind, LowerFn fn) {
  const auto [it, fresh] = specs_.try_emplace(c10::Symbol::fromQualString(kind));
  check(fresh, [&] {
    return "internal: node kind " + kind + " declared twice (by " + it->second.family + " and " +
           family_ + "); declare each kind once, in the file that lowers it";
  });
  KindSpec& spec = it->second;
  spec.kind = kind;
  spec.lower = std::move(fn);
  spec.family = family_;
  return spec;
}

std::vector<const KindSpec*> LoweringTable::specs() const {
  std::vector<const KindSpec*> out;
  for (const auto& kv : specs_) out.push_back(&kv.second);
  std::sort(out.begin(), out.end(), [](const KindSpec* a, const KindSpec* b) {
    return std::tie(a->family, a->kind) < std::tie(b->family, b->kind);
  });
  return out;
}

void LoweringTable::add_group(const std::string& first_kind, GroupMatcher match) {
  matchers_[c10::Symbol::fromQualString(first_kind)].push_back(std::move(match));
}

const std::vector<GroupMatcher>& LoweringTable::group_matchers(c10::Symbol kind) const {
  static const std::vector<GroupMatcher> kNone;
  auto it = matchers_.find(kind);
  return it == matchers_.end() ? kNone : it->second;
}

std::string LoweringTable::unsupported_because(const Node* node) const {
  const KindSpec* spec = find(node->kind());
  if (!spec) return "";
  for (const SupportFn& check_node : spec->support) {
    std::string why = check_node(node);
    if (!why.empty()) return why;
  }
  return "";
}

const KindSpec* LoweringTable::find(c10::Symbol kind) const {
  auto it = specs_.find(kind);
  return it == specs_.end() ? nullptr : &it->second;
}

const LoweringTable& lowering_table() {
  static const LoweringTable table = [] {
    LoweringTable t;
    // Each family declares its kinds; the order of this list does not matter.
    const std::pair<const char*, void (*)(LoweringTable&)> families[] = {
        {"graph", register_graph_ops},
        {"folded", register_folded_ops},
        {"view", register_view_ops},
        {"layout", register_layout_ops},
        {"slicing", register_slicing_ops},
        {"pointwise", register_pointwise_ops},
        {"pooling", register_pooling_ops},
        {"upsample", register_upsample_ops},
        {"convolution", register_convolution_ops},
        {"linear", register_linear_ops},
        {"prepacked", register_prepacked_ops},
        {"quantized", register_quantized_ops},
        {"quantized", register_dynamic_quant_ops},
        {"activation", register_activation_ops},
        {"normalization", register_normalization_ops},
        {"padding", register_padding_ops},
        {"pixel_shuffle", register_pixel_shuffle_ops},
        {"embedding", register_embedding_ops},
        {"matmul", register_matmul_ops},
        {"tile", register_tile_ops},
        {"recurrent", register_recurrent_ops},
        {"roll", register_roll_ops},
        {"einsum", register_einsum_ops},
        {"attention", register_attention_ops},
        {"indexing", register_indexing_ops},
        {"logical", register_logical_ops},
        {"reduction", register_reduction_ops},
        {"video", register_video_ops},
        {"spectral", register_spectral_ops},
        {"control", register_control_ops},
        {"factory", register_factory_ops},
    };
    for (const auto& [family, register_family] : families) {
      t.set_family(family);
      register_family(t);
    }
    return t;
  }();
  return table;
}

}  // namespace nnapi_convert

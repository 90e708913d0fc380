#include "lower/registry.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace nnapi_convert {

void LoweringTable::add(const std::string& kind, LowerFn fn) {
  fns_[c10::Symbol::fromQualString(kind)] = std::move(fn);
  // A kind added again (rank_reduce.cpp wraps earlier lowerings) stays listed
  // under the family that first lowered it.
  entries_.try_emplace(kind, Entry{kind, family_, ""});
}

void LoweringTable::extend(const std::string& kind, ExtendFn lower) {
  const LowerFn* found = find(c10::Symbol::fromQualString(kind));
  check(found != nullptr, "internal: no lowering of " + kind + " to extend");
  LowerFn fallback = *found;
  add(kind, [lower = std::move(lower), fallback](LoweringContext& cx, const Node* node) {
    if (!lower(cx, node, fallback)) fallback(cx, node);
  });
}

void LoweringTable::note(const std::string& kind, std::string text) {
  auto it = entries_.find(kind);
  if (it != entries_.end()) it->second.note = std::move(text);
}

std::vector<LoweringTable::Entry> LoweringTable::entries() const {
  std::vector<Entry> out;
  for (const auto& kv : entries_) out.push_back(kv.second);
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.family, a.kind) < std::tie(b.family, b.kind);
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

void LoweringTable::add_support_check(const std::string& kind, SupportFn fn) {
  support_[c10::Symbol::fromQualString(kind)].push_back(std::move(fn));
}

std::string LoweringTable::unsupported_because(const Node* node) const {
  auto it = support_.find(node->kind());
  if (it == support_.end()) return "";
  for (const SupportFn& check_node : it->second) {
    std::string why = check_node(node);
    if (!why.empty()) return why;
  }
  return "";
}

const LowerFn* LoweringTable::find(c10::Symbol kind) const {
  auto it = fns_.find(kind);
  return it == fns_.end() ? nullptr : &it->second;
}

const LoweringTable& lowering_table() {
  static const LoweringTable table = [] {
    LoweringTable t;
    const std::pair<const char*, void (*)(LoweringTable&)> families[] = {
        {"graph", register_graph_ops},
        {"view", register_view_ops},
        {"layout", register_layout_ops},
        {"slicing", register_slicing_ops},
        {"view", register_rank_reduce_ops},  // wraps view/permute/select lowerings
        {"pointwise", register_pointwise_ops},
        {"pointwise", register_rank_reduce_arithmetic},
        {"pooling", register_pooling_ops},
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
    };
    for (const auto& [family, register_family] : families) {
      t.set_family(family);
      register_family(t);
    }
    // What a user of list-ops should know beyond "supported".
    t.note("aten::upsample_bilinear2d",
           "RESIZE_BILINEAR with its corner flags at --min-android-api 30 (fixed or flexible "
           "height and width; by output size or whole scale factor); below: fixed sizes as "
           "FULLY_CONNECTED products with PyTorch's weights, a flexible size by one whole scale "
           "factor with align_corners=False as replicate padding, DEPTHWISE_CONV_2D and "
           "pixel_shuffle; quantized through DEQUANTIZE and a QUANTIZE rounding half to even");
    t.note("aten::linear", "needs a bias");
    t.note("aten::matmul",
           "float32; with a constant 2-D right side it is FULLY_CONNECTED; a product of two "
           "computed tensors is BATCH_MATMUL (NNAPI feature level 6) with --min-android-api 33 "
           "or more, else one FULLY_CONNECTED per batch entry (fixed sizes only)");
    t.note("aten::bmm", "as aten::matmul of two computed tensors");
    t.note("aten::max_pool2d",
           "ceil_mode over a flexible height or width: stride - 1 more bottom/right padding "
           "(refused when stride > kernel - padding)");
    t.note("aten::lstm",
           "unrolled per time step (FULLY_CONNECTED, SPLIT, LOGISTIC, TANH, MUL, ADD, "
           "CONCATENATION); fixed sizes, no proj_size, no packed sequences");
    t.note("aten::gru",
           "unrolled per time step (FULLY_CONNECTED, SPLIT, LOGISTIC, TANH, MUL, ADD, SUB, "
           "CONCATENATION); fixed sizes, no packed sequences");
    t.note("aten::zeros", "constant sizes only: a constant tensor (an RNN's zero initial state)");
    // Issue 20: decompositions into NNAPI feature level 1 to 3 operations.
    t.note("aten::_convolution_mode",
           "padding='same' pads dilation*(kernel-1), the odd element at the bottom/right as ATen "
           "does (stride 1); 'valid' pads nothing. Also aten::conv1d/conv2d with string padding");
    t.note("aten::_convolution",
           "transposed: output_padding beyond the padding is TRANSPOSE_CONV_2D with a zero bias, "
           "PAD and ADD of the bias; groups and dilation (float) a dense block-diagonal or "
           "zero-dilated kernel (groups times the multiplications)");
    t.note("aten::avg_pool2d",
           "count_include_pad=False: AVERAGE_POOL_2D with explicit padding; padding with "
           "count_include_pad: PAD then AVERAGE_POOL_2D (PyTorch's converter passes the padding "
           "to AVERAGE_POOL_2D, which does not count padded cells); divisor_override, or ceil_mode "
           "past the padding with count_include_pad: MUL by a constant map of divisors (float32, "
           "fixed height and width; over a flexible one: PAD, then ceil_mode as max_pool2d's, "
           "divisor_override without ceil_mode as one MUL)");
    t.note("aten::adaptive_avg_pool2d",
           "output sizes that divide the input: AVERAGE_POOL_2D; others (interpolate "
           "mode='area'): float32, FULLY_CONNECTED over W and H with PyTorch's window weights; "
           "to 1x1 over a flexible height or width: MEAN (adaptive_max_pool2d: REDUCE_MAX); "
           "other output sizes over a flexible size are refused");
    t.note("aten::cumsum",
           "float32: FULLY_CONNECTED with a triangular matrix of ones along the dim (fixed size)");
    t.note("aten::softplus",
           "stable max(z,0)+log(1+exp(-|z|)), z = beta*x; threshold as an exact FLOOR-made mask");
    t.note("aten::erf", "A&S 7.1.26 polynomial, |error| <= 1.5e-7");
    t.note("aten::div",
           "rounding_mode='trunc': trunc(a/b) exactly; 'floor': FLOOR(a/b), which differs from "
           "PyTorch's fmod-based quotient where a/b rounds up to a whole number");
    t.note("aten::floor_divide", "FLOOR(a/b) (float32), see aten::div");
    t.note("aten::remainder", "a - FLOOR(a/b)*b (float32)");
    t.note("aten::addmm", "alpha/beta other than 1: constant weight and bias scaled at conversion");
    t.note("aten::flip", "STRIDED_SLICE with stride -1 per flipped dim (fixed sizes)");
    t.note("aten::index_select", "GATHER by constant or int32 indices");
    t.note("aten::hardshrink", "x times an exact FLOOR-made mask |x| > lambd");
    return t;
  }();
  return table;
}

}  // namespace nnapi_convert

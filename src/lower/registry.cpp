#include "lower/registry.h"

namespace nnapi_convert {

void LoweringTable::add(const std::string& kind, LowerFn fn) {
  fns_[c10::Symbol::fromQualString(kind)] = std::move(fn);
}

const LowerFn* LoweringTable::find(c10::Symbol kind) const {
  auto it = fns_.find(kind);
  return it == fns_.end() ? nullptr : &it->second;
}

const LoweringTable& lowering_table() {
  static const LoweringTable table = [] {
    LoweringTable t;
    register_graph_ops(t);
    register_shape_ops(t);
    register_pointwise_ops(t);
    register_pooling_ops(t);
    register_convolution_ops(t);
    register_linear_ops(t);
    register_quantized_ops(t);
    register_activation_ops(t);
    register_normalization_ops(t);
    register_padding_ops(t);
    register_pixel_shuffle_ops(t);
    register_embedding_ops(t);
    return t;
  }();
  return table;
}

}  // namespace nnapi_convert

// The record of where each NNAPI operation and operand came from (--verify).
#include "core/trace.h"

#include <map>

#include "core/converter.h"
#include "core/loader.h"
#include "lower/context.h"

namespace nnapi_convert {

// The trace's values: per operand, the last node output in graph order that
// names it.
void record_values(const LoweringContext& cx, const torch::jit::Graph& graph,
                   LoweringTrace* trace) {
  std::map<int32_t, TracedValue> by_operand;
  for (const Node* node : graph.nodes()) {
    for (const Value* v : node->outputs()) {
      if (!cx.has_operand(v)) continue;
      auto [id, op] = cx.get_operand(v);
      if (is_frames(op.dim_order)) continue;  // a video tensor's frames (video.cpp)
      bool nhwc = op.dim_order == DimOrder::ChannelsLast && op.shape.size() == 4;
      by_operand[id] = TracedValue{v, id, nhwc};
    }
  }
  trace->values.clear();
  for (const auto& entry : by_operand) trace->values.push_back(entry.second);
}

torch::jit::Module trace_conversion(const ConvertOptions& options, LoweringTrace* trace,
                                    Conversion* conversion) {
  double load_ms = 0, freeze_ms = 0;
  torch::jit::Module module = load_frozen_model(options, &load_ms, &freeze_ms);
  *conversion = lower_module(module, options, trace);
  return module;
}

}  // namespace nnapi_convert

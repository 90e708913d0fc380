// Where each part of an NNAPI model came from: the TorchScript node each
// operation was lowered from and the TorchScript value each operand holds.
// Recorded only on request (--verify's diagnosis of a mismatch), never
// written into the converted module.
#pragma once

#include <torch/csrc/jit/api/module.h>

#include <cstdint>
#include <string>
#include <vector>

#include "nnapi_convert/conversion.h"

namespace nnapi_convert {

struct TracedValue {
  const torch::jit::Value* value;  // a node output (never a graph input)
  int32_t operand;                 // the NNAPI operand that holds it
  bool nhwc;                       // the operand holds the NCHW value as NHWC
};

struct LoweringTrace {
  // Per NNAPI operation, in model order: the node it was lowered from.
  std::vector<const torch::jit::Node*> operations;
  // The operands that hold a node's output: for an operand that several
  // values name (identity ops, an activation folded into its producer), the
  // last of them in graph order, the one whose value the operand ends with.
  std::vector<TracedValue> values;
  // When the lowering fails: the node it failed at (lower_graph's `failed`).
  const torch::jit::Node* failed = nullptr;
  // When --cpu-fallback split the model (lower_with_fallback): per node of
  // the forward graph but those computed during conversion, the NNAPI part
  // that runs it, or -1 and why it stays TorchScript (check --dot).
  struct Placement {
    const torch::jit::Node* node;
    int part;
    std::string why;
  };
  std::vector<Placement> placements;
};

// Loads, freezes and lowers the model as convert() does, recording `trace`,
// whose pointers point into the returned module's forward graph; the
// conversion itself goes to `conversion`.
torch::jit::Module trace_conversion(const ConvertOptions& options, LoweringTrace* trace,
                                    Conversion* conversion);

// Where the user's code made `node`: "model.py:12" (see the converter's
// messages) and that line's text, trimmed (for a traced model, whose
// records hold no code: the node as TorchScript prints it). Either may be "".
struct NodePlace {
  std::string location;
  std::string code;
};
NodePlace node_place(const torch::jit::Node* node);

class LoweringContext;
// Fills trace->values from the lowered graph: per operand, the last node
// output in graph order that names it.
void record_values(const LoweringContext& cx, const torch::jit::Graph& graph, LoweringTrace* trace);

}  // namespace nnapi_convert

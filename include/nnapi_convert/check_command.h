// `nnapi-convert check` and `list-ops`: what in a model converts, without
// writing anything, and what converts at all.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nnapi_convert/conversion.h"

namespace nnapi_convert {

struct CheckReport {
  std::string model;
  int64_t node_count = 0;
  std::vector<NodeKindCount> kinds;               // every node kind, in order of first use
  bool converts = false;                          // the whole lowering succeeded
  std::string error, error_node, error_location;  // why not
  int64_t operand_count = 0, operation_count = 0;
  int feature_level = 0, android_api = 0;
  std::map<std::string, int> operations;
  // With --cpu-fallback, when the model is split: its NNAPI models and the
  // nodes that stay TorchScript, by kind.
  int64_t nnapi_models = 0;
  std::vector<NodeKindCount> torchscript_nodes;
  // The state forward keeps between calls (Conversion::state), when it converts.
  std::vector<StateAttribute> state;
  PhaseTimes times;
};

// check --dot: the graph check walks (loaded, frozen, in-place writes made
// functional), one entry per node that is no prim::Constant, in graph order.
// A node inside an if or loop is drawn as its prim::If or prim::Loop node.
struct CheckNode {
  enum class Verdict {
    Nnapi,   // lowered to NNAPI operations (or, when the model does not
             // convert, of a kind nnapi-convert lowers)
    Folded,  // no NNAPI operation of its own: computed during conversion,
             // an alias, or part of a neighbour's operation
    Unsupported,
    TorchScript  // --cpu-fallback: stays TorchScript (`reason` says why)
  };
  std::string kind;      // "aten::conv2d"
  std::string location;  // "model.py:12", or ""
  std::string text;      // the node as TorchScript prints it, in backquotes
  Verdict verdict = Verdict::Nnapi;
  std::string reason;      // why it does not convert (Unsupported)
  int64_t operations = 0;  // NNAPI operations lowered from it (a model that converts)
  int part = -1;           // --cpu-fallback: the NNAPI part (model) that runs it
  // Where each input that is drawn comes from: "in<i>" (model input i) or
  // "n<k>" (node k); constants and the module itself are not drawn.
  std::vector<std::string> from;
};
struct CheckGraph {
  std::vector<std::string> inputs;   // per model input: its name in the graph
  std::vector<CheckNode> nodes;      // node k is "n<k>"
  std::vector<std::string> outputs;  // per graph output: where it comes from, or ""
  bool return_fails = false;         // the conversion failed at the model's return
  int parts = 0;                     // --cpu-fallback: the NNAPI parts it was split into
};

// A node kind nnapi-convert handles: the op family that lowers it (or
// "folded": evaluated during conversion) and what to know about it
// (list-ops; core/folding.cpp).
struct SupportedKind {
  std::string kind, family, note;
};
std::vector<SupportedKind> supported_node_kinds();

// Loads and freezes the model, counts its node kinds and tries the lowering;
// with `graph`, also fills it (without --cpu-fallback). Throws ConvertError
// for what stops it before the lowering (a file that cannot be loaded: 1;
// input specs that do not fit: 2).
CheckReport check_model(const ConvertOptions& options, CheckGraph* graph = nullptr);

}  // namespace nnapi_convert

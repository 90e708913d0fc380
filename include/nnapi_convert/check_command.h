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

// A node kind nnapi-convert handles: the op family that lowers it (or
// "folded": evaluated during conversion) and what to know about it
// (list-ops; core/folding.cpp).
struct SupportedKind {
  std::string kind, family, note;
};
std::vector<SupportedKind> supported_node_kinds();

// Loads and freezes the model, counts its node kinds and tries the lowering.
// Throws ConvertError for what stops it before the lowering (a file that
// cannot be loaded: 1; input specs that do not fit: 2).
CheckReport check_model(const ConvertOptions& options);

}  // namespace nnapi_convert

// The converter's safety net: NeuralNetworks.h's rules (nnapi_convert/validate.h)
// checked on every NNAPI model before it is written, so that a model the
// device would refuse is a conversion error naming the operation, the
// TorchScript node it came from and the user's source line.
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <cstdint>
#include <string>
#include <vector>

#include "nnapi_convert/conversion.h"

namespace nnapi_convert {

// Validates the serialized model of `c` (ser_model, weights; for a model with
// sizes fixed at load time also the blob at sample sizes, filled in by its
// shape-compute script). `patched` are the operands whose values that script
// patches; `op_nodes[k]` the node operation k was lowered from. On a finding,
// sets *failed (when given) to that node and throws ConvertError (exit 1).
void validate_conversion(const Conversion& c, const std::vector<int32_t>& patched,
                         const std::vector<const torch::jit::Node*>& op_nodes,
                         const ConvertOptions& options, const torch::jit::Node** failed);

}  // namespace nnapi_convert

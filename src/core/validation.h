// The converter's safety net: NeuralNetworks.h's rules (nnapi_convert/validate.h)
// checked on every NNAPI model before it is written, so that a model the
// device would refuse is a conversion error naming the operation, the
// TorchScript node it came from and the user's source line.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/ir.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nnapi_convert/conversion.h"

namespace nnapi_convert {

// Whether the model itself (eager TorchScript) runs on these inputs.
using ModelRuns = std::function<bool(const std::vector<at::Tensor>&)>;

// Validates the serialized model of `c` (ser_model, weights; for a model with
// sizes fixed at load time also the blob at sample sizes, filled in by its
// shape-compute script). `patched` are the operands whose values that script
// patches; `op_nodes[k]` the node operation k was lowered from. On a finding,
// sets *failed (when given) to that node and throws ConvertError (exit 1).
// The sample sizes are --verify's defaults; where the blob breaks the rules
// there and `model_runs` (when given) says the model itself fails at them
// too (a size that must be a multiple of something), the next sizes the model
// runs at decide instead (runnable_sizes, core/sample_inputs.h).
void validate_conversion(const Conversion& c, const std::vector<int32_t>& patched,
                         const std::vector<const torch::jit::Node*>& op_nodes,
                         const ConvertOptions& options, const torch::jit::Node** failed,
                         const ModelRuns& model_runs = {});

}  // namespace nnapi_convert

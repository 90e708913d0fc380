// --float16: the finished NNAPI model (after lowering, before serializing and
// validating) rewritten to compute in TENSOR_FLOAT16, so that no lowering
// needs to know about it.
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <string>
#include <vector>

#include "nnapi_convert/conversion.h"
#include "serialize/model_builder.h"

namespace nnapi_convert {

// Every TENSOR_FLOAT32 operand becomes TENSOR_FLOAT16, constant ones with
// their values rounded to the nearest half (ties to even). The model's
// float32 inputs stay float32 and are CAST to float16 first; its float
// outputs are CAST back to float32 last, or (options.float16_io) returned as
// TENSOR_FLOAT16 (their templates' type changed). Each operation is then
// asked of the validator (validate_operation_types, operation_level) with
// its new types; when it refuses one whose FLOAT32 scalar parameters are
// given as FLOAT16 too (NeuralNetworks.h: a float16 tensor's alpha, beta,
// epsilon, scales, pad value are FLOAT16), those are replaced by FLOAT16
// scalars; an operation it refuses either way, or that needs a feature level
// above the target's, is refused (ConvertError 1) naming `op_nodes`' node
// (the return node `ret`, or none, for the model's own operations). A target
// below feature level 3 (no TENSOR_FLOAT16) is a usage error (exit 2).
// `op_nodes` gets an entry (nullptr) for each CAST inserted.
void convert_to_float16(ModelBuilder& m, std::vector<const torch::jit::Node*>& op_nodes,
                        std::vector<OutputTemplate>& templates, const ConvertOptions& options,
                        const torch::jit::Node* ret);

}  // namespace nnapi_convert

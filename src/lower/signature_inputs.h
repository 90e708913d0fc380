// An emitter's operand list in NeuralNetworks.h's order: the emitter names
// the role of each operand it creates, op_signature.h places it.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "nnapi_convert/op_signature.h"

namespace nnapi_convert {

// The inputs of NNAPI operation `op` in the positions its signature gives
// the roles in `given` (each with its operand id); an internal error when no
// form of `op` has exactly those roles.
std::vector<int32_t> signature_inputs(nnapi::Op op,
                                      const std::vector<std::pair<nnapi::Role, int32_t>>& given);

}  // namespace nnapi_convert

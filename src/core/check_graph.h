// check --dot's picture of a model: per graph node its verdict (lowered to
// NNAPI, no operation of its own, not supported) and the values between
// nodes, as torch-free data (nnapi_convert/check_command.h).
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <string>

#include "core/trace.h"
#include "nnapi_convert/check_command.h"

namespace nnapi_convert {

// `graph` as check walked it. `trace`: the lowering's record (with
// --cpu-fallback's placements when it split the model); `converts`: whether
// the lowering succeeded; `error`: its message when not.
CheckGraph check_graph(const torch::jit::Graph& graph, const LoweringTrace& trace, bool converts,
                       const std::string& error);

}  // namespace nnapi_convert

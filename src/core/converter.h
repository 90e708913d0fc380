// The driver (converter.cpp): a loaded, frozen module or one of its graphs
// lowered into one NNAPI model (src/lower), serialized and validated. What
// runs around it (loading, --quantize, writing, --verify) is src/pipeline's.
#pragma once

#include <torch/csrc/jit/api/module.h>

#include "core/trace.h"
#include "nnapi_convert/check_command.h"
#include "nnapi_convert/conversion.h"

namespace nnapi_convert {

// One --input spec per input of `graph` (a forward: input 0 is `self`).
// Throws ConvertError(2) otherwise.
void check_input_count(const torch::jit::Graph& graph, const ConvertOptions& options);

// Lowers `module`'s forward (loaded and frozen): with its state made inputs
// and outputs (state.h), split by --cpu-fallback (fallback.h) unless a trace
// is recorded. Throws ConvertError.
Conversion lower_module(const torch::jit::Module& module, const ConvertOptions& options,
                        LoweringTrace* trace = nullptr);

// Lowers `graph` (input 0 is `self`, bound to `self`). When a node fails,
// `*failed` is set to it before ConvertError is thrown; when an output
// cannot be one (a constant, an input unchanged, another output), to the
// node that gives that output; else to the return node.
Conversion lower_graph(torch::jit::Graph& graph, const c10::IValue& self,
                       const ConvertOptions& options, LoweringTrace* trace = nullptr,
                       const torch::jit::Node** failed = nullptr);

}  // namespace nnapi_convert

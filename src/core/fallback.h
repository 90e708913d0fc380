// --cpu-fallback: a model with nodes NNAPI cannot run becomes one TorchScript
// module in which those nodes stay TorchScript and each run of the other
// nodes between them (in graph order) is an NNAPI model of its own.
#pragma once

#include <torch/csrc/jit/api/module.h>

#include <memory>
#include <string>

#include "core/trace.h"
#include "nnapi_convert/conversion.h"
#include "serialize/fallback_graph.h"

namespace nnapi_convert {

// Lowers what NNAPI can run of `module` (loaded and frozen) and leaves the
// rest to TorchScript. A model that converts whole gives the usual one-model
// Conversion. Throws ConvertError when no node can run on NNAPI.
Conversion lower_with_fallback(const torch::jit::Module& module, const ConvertOptions& options);

// converter.cpp: lowers `graph` (input 0 is `self`, bound to `self`). When a
// node fails, `*failed` is set to it before ConvertError is thrown; when an
// output cannot be one (a constant, an input unchanged, another output), to
// the node that gives that output; else to the return node.
Conversion lower_graph(torch::jit::Graph& graph, const c10::IValue& self,
                       const ConvertOptions& options, LoweringTrace* trace = nullptr,
                       const torch::jit::Node** failed = nullptr);

}  // namespace nnapi_convert

// --cpu-fallback: a model with nodes NNAPI cannot run becomes one TorchScript
// module in which those nodes stay TorchScript and each run of the other
// nodes between them (in graph order) is an NNAPI model of its own.
#pragma once

#include <torch/csrc/jit/api/module.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/trace.h"
#include "nnapi_convert/conversion.h"
#include "serialize/fallback_graph.h"

namespace nnapi_convert {

// Lowers what NNAPI can run of `module` (loaded and frozen) and leaves the
// rest to TorchScript. A model that converts whole gives the usual one-model
// Conversion (`trace`, when given, records its lowering); for a split one,
// `trace` gets the placement of each node. Throws ConvertError when no node
// can run on NNAPI.
Conversion lower_with_fallback(const torch::jit::Module& module, const ConvertOptions& options,
                               LoweringTrace* trace = nullptr);

// The sizes the probe runs of the model gave each tensor the calling graph
// passes to an NNAPI part (values of `Conversion::fallback`'s graph).
using SizesSeen = std::unordered_map<const torch::jit::Value*, std::vector<int64_t>>;

// Every model input of every NNAPI part of `c` (a --cpu-fallback conversion)
// is fed by the calling graph: each part is called once, with as many values
// as its NNAPI model has inputs, each a tensor that the runs gave elements
// (NNAPI takes a zero-sized input as an omitted one: the part would fail when
// it runs). Throws ConvertError (exit 1) naming the part and the input
// otherwise, before anything is written.
void check_parts_fed(const Conversion& c, const SizesSeen& seen, const std::string& model_path);

}  // namespace nnapi_convert

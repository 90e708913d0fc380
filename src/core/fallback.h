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

}  // namespace nnapi_convert

// --cpu-fallback's hand-over from the converter to the module writer.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/ir/ir.h>

#include <memory>

namespace nnapi_convert {

// The converted module's forward: the frozen model's graph in which the nodes
// of NNAPI segment k are one node of kind kSegmentKind (int attribute
// kSegmentIndex = k) that takes the segment's inputs and gives its outputs.
// The module writer replaces it with a call of the k-th NNAPI module.
struct FallbackGraph {
  std::shared_ptr<torch::jit::Graph> graph;
  // The model's module object, input 0 of `graph`: the attributes the
  // TorchScript part reads from it (what freezing kept: attributes the model
  // writes, submodules whose methods it calls) become the converted module's.
  c10::IValue self;
};
extern const char* const kSegmentKind;   // "nnapi_convert::segment"
extern const char* const kSegmentIndex;  // "index"

}  // namespace nnapi_convert

// A stateful model's TorchScript part: what the converted module runs in
// TorchScript around its NNAPI model (src/core/state.cpp builds it, the
// module writer adds it to the wrapper).
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/ir/ir.h>

#include <memory>
#include <string>
#include <vector>

namespace nnapi_convert {

// An attribute of type int, float or bool that forward writes (Silero's
// `self._last_sr = sr`): the converted module keeps it as an attribute of the
// same name, starting from the file's value.
struct ScalarState {
  std::string name;
  c10::TypePtr type;
  c10::IValue initial;
  std::string node;  // where forward writes it (describe_node)
};

// A method of the model that writes the state only (`reset_states`, exported
// with @torch.jit.export), carried over to the converted module: its graph
// inlined, its input 0 the model.
struct CarriedMethod {
  std::string name;
  std::shared_ptr<torch::jit::Graph> graph;
  c10::FunctionSchema schema;
};

struct StateProgram {
  std::vector<ScalarState> scalars;
  // Run in TorchScript before the NNAPI model on each call (null when
  // forward has none): forward's branches that write the state on ints and
  // sizes (Silero's `if not self._last_batch_size: self.reset_states(...)`)
  // and its writes of the scalar attributes, in forward's order. Its inputs:
  // the model, then the tensors the NNAPI model takes before the state; it
  // returns None.
  std::shared_ptr<torch::jit::Graph> prologue;
  std::vector<CarriedMethod> methods;
};

}  // namespace nnapi_convert

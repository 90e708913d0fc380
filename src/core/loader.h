#pragma once

#include <torch/csrc/jit/api/module.h>

#include <string>
#include <vector>

#include "nnapi_convert/conversion.h"

namespace nnapi_convert {

// torch::jit::load, with its failures as ConvertError(1) naming the file
// (`what`: "model file"; empty: the caller names the file). Check the archive first
// (check_torchscript_archive): LibTorch trusts what it reads.
torch::jit::Module load_torchscript(const std::string& path, const std::string& what);

// The entry point options.submodule / options.method name in `model`: the
// submodule, and for a method other than forward a module whose forward calls
// it. Throws ConvertError(2) naming what exists when the path or the method
// does not.
torch::jit::Module entry_module(const torch::jit::Module& model, const ConvertOptions& options);

// What load_frozen_model found besides the module: notes for the user, and
// the entry point's arguments (with ConvertOptions::args).
struct LoadedEntry {
  std::vector<std::string> notes;
  std::vector<EntryArgument> arguments;
  // Without --submodule: the model's submodules (named_children), which
  // --submodule could convert instead of a forward that cannot be.
  std::vector<std::string> submodules;
  // The entry module before freezing: its other methods (a stateful model's
  // reset method, carry_state_methods).
  torch::jit::Module entry;
};

// Checks the archive, loads options.model_path, picks the entry point
// (entry_module), refuses modules in training mode whose code reads the flag
// (unless options.eval), freezes it, rewrites in-place ops to their
// functional forms and specializes its arguments (specialize_arguments).
// Throws ConvertError.
torch::jit::Module load_frozen_model(const ConvertOptions& options, double* load_ms,
                                     double* freeze_ms, LoadedEntry* entry = nullptr);

// forward's arguments as options give them: a value (int=, float=, bool=,
// none) becomes a constant in the graph, whose branches on it then fold; a
// List/Tuple argument becomes one graph input per tensor, the list built
// from them in the graph (its indexing, unpacking and loops over it
// folded). Omitted trailing arguments that default to None become None.
// Then forward's schema is the graph's tensor inputs. A spec that does not
// fit its argument's type is ConvertError(2). Returns the arguments (empty
// without options.args).
std::vector<EntryArgument> specialize_arguments(torch::jit::Module& module,
                                                const ConvertOptions& options);

}  // namespace nnapi_convert

// `nnapi-convert inspect FILE [--json]`: shows what the device will see in an
// NNAPI model, either a raw serialized blob (ser_model.bin) or a .nnapi.pt
// TorchScript module written by PyTorch's convert_model_to_nnapi.
#pragma once

#include <ostream>
#include <string>

namespace nnapi_convert {

// Prints operands, operations, model inputs/outputs and memory formats of the
// model in `path` to `out` (as one JSON object when `json` is set), with what
// the NNAPI model validator finds (nnapi_convert/validate.h: the rules of
// NeuralNetworks.h the device applies when it loads the model). The file is
// read strictly (see blob.h); problems go to `err` as one paragraph naming the
// file. Returns the process exit status: 0 when the model was printed and has
// no finding; 1 when the file is unreadable or invalid, or when the model was
// printed with findings (a model the device would refuse; `err` says so).
int inspect_main(const std::string& path, bool json, std::ostream& out, std::ostream& err);

// inspect --dot: the same reading and exit status, the model printed as one
// Graphviz digraph (a cluster per NNAPI model of a --cpu-fallback module).
enum class InspectFormat { Text, Json, Dot };
int inspect_main(const std::string& path, InspectFormat format, std::ostream& out,
                 std::ostream& err);

}  // namespace nnapi_convert

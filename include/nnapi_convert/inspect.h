// `nnapi-convert inspect FILE [--json]`: shows what the device will see in an
// NNAPI model, either a raw serialized blob (ser_model.bin) or a .nnapi.pt
// TorchScript module written by PyTorch's convert_model_to_nnapi.
#pragma once

#include <ostream>
#include <string>

namespace nnapi_convert {

// Prints operands, operations, model inputs/outputs and memory formats of the
// model in `path` to `out` (as one JSON object when `json` is set). The file
// is validated strictly (see blob.h); problems go to `err` as one paragraph
// naming the file. Returns the process exit status: 0 when the model was
// printed, 1 when the file is unreadable or invalid.
int inspect_main(const std::string& path, bool json, std::ostream& out, std::ostream& err);

}  // namespace nnapi_convert

// nnapi-convert's library interface: TorchScript model in, NNAPI model out.
#pragma once

#include <string>
#include <vector>

#include "nnapi_convert/conversion.h"
#include "nnapi_convert/writer.h"

namespace nnapi_convert {

// A node kind nnapi-convert handles: the op family that lowers it (or
// "folded": evaluated during conversion) and what to know about it.
struct SupportedKind {
  std::string kind, family, note;
};
std::vector<SupportedKind> supported_node_kinds();

// Loads, freezes, rewrites and lowers the model. Throws ConvertError.
Conversion convert(const ConvertOptions& options);

}  // namespace nnapi_convert

// nnapi-convert's library interface: TorchScript model in, NNAPI model out.
#pragma once

#include <string>
#include <vector>

#include "nnapi_convert/check_command.h"
#include "nnapi_convert/conversion.h"
#include "nnapi_convert/writer.h"

namespace nnapi_convert {

// Loads, freezes, rewrites, --quantizes and lowers the model (src/pipeline,
// convert.cpp). Throws ConvertError.
Conversion convert(const ConvertOptions& options);

}  // namespace nnapi_convert

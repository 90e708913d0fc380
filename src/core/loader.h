#pragma once

#include <torch/csrc/jit/api/module.h>

#include <string>

namespace nnapi_convert {

// Loads a TorchScript file, refuses training-mode modules, freezes it and
// rewrites in-place ops to their functional forms. Throws ConvertError.
torch::jit::Module load_frozen_model(const std::string& path, double* load_ms, double* freeze_ms);

}  // namespace nnapi_convert

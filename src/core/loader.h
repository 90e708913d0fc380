#pragma once

#include <torch/csrc/jit/api/module.h>

#include <string>

namespace nnapi_convert {

// torch::jit::load, with its failures as ConvertError(1) naming the file
// (`what`: "model file"; empty: the caller names the file). Check the archive first
// (check_torchscript_archive): LibTorch trusts what it reads.
torch::jit::Module load_torchscript(const std::string& path, const std::string& what);

// Checks the archive, loads a TorchScript file, refuses training-mode modules, freezes it and
// rewrites in-place ops to their functional forms. Throws ConvertError.
torch::jit::Module load_frozen_model(const std::string& path, double* load_ms, double* freeze_ms);

// With fewer --input specs (`given`) than forward takes, the omitted trailing
// inputs that default to None (`mask: Optional[Tensor] = None`) become that
// None constant in forward's graph, whose branches on it then fold; else
// nothing changes (the input count check reports the mismatch).
void specialize_omitted_inputs(torch::jit::Module& module, size_t given);

}  // namespace nnapi_convert

#include "core/loader.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/passes/remove_mutation.h>
#include <torch/csrc/jit/serialization/import.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "nnapi_convert/converter.h"

namespace nnapi_convert {
namespace {

namespace fs = std::filesystem;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void check_file(const std::string& path) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    throw ConvertError(1, "model file '" + path +
                              "' does not exist; give the path of a "
                              "TorchScript model saved with torch.jit.save");
  }
  if (fs::is_directory(st)) {
    throw ConvertError(1, "model file '" + path + "' is a directory, not a TorchScript model file");
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ConvertError(1, "model file '" + path + "' cannot be read (permissions?)");
  char magic[2] = {0, 0};
  f.read(magic, 2);
  if (f.gcount() == 0) throw ConvertError(1, "model file '" + path + "' is empty");
  if (f.gcount() < 2 || magic[0] != 'P' || magic[1] != 'K') {
    throw ConvertError(1, "model file '" + path +
                              "' is not a TorchScript archive (a TorchScript "
                              "model is a zip file written by torch.jit.save)");
  }
}

}  // namespace

torch::jit::Module load_frozen_model(const std::string& path, double* load_ms, double* freeze_ms) {
  check_file(path);
  auto t0 = std::chrono::steady_clock::now();
  torch::jit::Module module;
  try {
    module = torch::jit::load(path);
  } catch (const c10::Error& e) {
    throw ConvertError(1, "model file '" + path +
                              "' could not be loaded as TorchScript (is it "
                              "truncated, or saved by torch.save rather than torch.jit.save?): " +
                              e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw ConvertError(1,
                       "model file '" + path + "' could not be loaded as TorchScript: " + e.what());
  }
  *load_ms = ms_since(t0);
  if (module.hasattr("training") && module.is_training()) {
    throw ConvertError(1, "model '" + path +
                              "' was saved in training mode; call .eval() on the "
                              "module before tracing or scripting it, then save it again");
  }
  if (!module.find_method("forward")) {
    throw ConvertError(1, "model '" + path + "' has no forward method");
  }
  t0 = std::chrono::steady_clock::now();
  torch::jit::Module frozen;
  try {
    frozen = torch::jit::freeze(module);
    auto graph = frozen.get_method("forward").graph();
    torch::jit::RemoveListMutation(graph);
    torch::jit::RemoveTensorMutation(graph);
  } catch (const c10::Error& e) {
    throw ConvertError(1,
                       "model '" + path + "' could not be frozen: " + e.what_without_backtrace());
  }
  *freeze_ms = ms_since(t0);
  return frozen;
}

}  // namespace nnapi_convert

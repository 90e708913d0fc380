// The floor programs of issues 6 and 24: what any LibTorch-based converter
// must do at least -- load a TorchScript model, freeze it, save it. Nothing
// else.
//
//   floor MODEL.pt OUT.pt                         load, freeze, save
//   floor --save-only [--durable] MODULE.pt OUT.pt load, then time
//       Module::save alone ("save N ms" on standard output); --durable: and
//       fsync OUT.pt and its directory, as nnapi-convert does
//
// --save-only gives the write phase's floor: LibTorch saving the bytes
// nnapi-convert wrote (load its output, save it again).
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/serialization/import.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "durable.h"

int main(int argc, char** argv) {
  const bool save_only = argc >= 4 && std::strcmp(argv[1], "--save-only") == 0;
  const bool durable = save_only && argc == 5 && std::strcmp(argv[2], "--durable") == 0;
  if (argc != 3 && !(save_only && argc == 4) && !durable) {
    std::fprintf(stderr, "usage: %s [--save-only [--durable]] MODEL.pt OUT.pt\n", argv[0]);
    return 2;
  }
  if (save_only) {
    const char* in = argv[argc - 2];
    const char* out = argv[argc - 1];
    torch::jit::Module module = torch::jit::load(in);
    const auto t0 = std::chrono::steady_clock::now();
    module.save(out);
    if (durable && !bench::sync_file_and_directory(out)) {
      std::fprintf(stderr, "fsync of %s failed\n", out);
      return 1;
    }
    std::printf(
        "save %.3f ms\n",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    return 0;
  }
  torch::jit::Module module = torch::jit::load(argv[1]);
  torch::jit::Module frozen = torch::jit::freeze(module);
  frozen.save(argv[2]);
  return 0;
}

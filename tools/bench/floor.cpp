// The floor program of issue 6: what any LibTorch-based converter must do at
// least -- load a TorchScript model, freeze it, save it. Nothing else.
//
//   floor MODEL.pt OUT.pt
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/serialization/import.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MODEL.pt OUT.pt\n", argv[0]);
    return 2;
  }
  torch::jit::Module module = torch::jit::load(argv[1]);
  torch::jit::Module frozen = torch::jit::freeze(module);
  frozen.save(argv[2]);
  return 0;
}

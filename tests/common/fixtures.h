// Reading the oracle's fixture files (layout: tests/reference/README.md).
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/json.h"

namespace fixtures {

inline std::vector<char> read_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + p.string());
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

inline nnapi_convert::json::Value read_json(const std::filesystem::path& p) {
  auto b = read_bytes(p);
  return nnapi_convert::json::parse(std::string(b.begin(), b.end()));
}

// A torch.save'd tuple (the fixtures: see save_tensors in
// tools/fixtures_common.py) or list (our --parts weights.pt) of tensors.
inline std::vector<at::Tensor> load_tensors(const std::filesystem::path& p) {
  c10::IValue v = torch::jit::pickle_load(read_bytes(p));
  std::vector<at::Tensor> out;
  if (v.isTuple()) {
    for (const c10::IValue& t : v.toTupleRef().elements()) out.push_back(t.toTensor());
  } else {
    for (const c10::IValue& t : v.toListRef()) out.push_back(t.toTensor());
  }
  return out;
}

}  // namespace fixtures

// Reading the oracle's fixture files (layout: tests/reference/README.md).
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "nnapi_convert/conversion.h"
#include "nnapi_convert/input_spec.h"

namespace fixtures {

inline std::vector<char> read_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + p.string());
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

inline nlohmann::json read_json(const std::filesystem::path& p) {
  auto b = read_bytes(p);
  return nlohmann::json::parse(std::string(b.begin(), b.end()));
}

// The Android API level a case targets: its options are empty (the default,
// 29) or "--min-android-api N"; nothing else is written by make_fixtures.py.
inline int min_android_api_of(const nlohmann::json& cs) {
  const auto options = cs.at("options").get<std::vector<std::string>>();
  if (options.empty()) return 29;
  if (options.size() != 2 || options[0] != "--min-android-api")
    throw std::runtime_error("case options not handled by the tests: " + cs.at("options").dump());
  return std::stoi(options[1]);
}

// Why nnapi-convert's validator refuses the case (case.json's
// "validator_refuses": its NNAPI model breaks NeuralNetworks.h), or "".
inline std::string validator_refuses(const std::filesystem::path& dir) {
  const nlohmann::json why =
      read_json(dir / "case.json").value("validator_refuses", nlohmann::json());
  return why.is_string() ? why.get<std::string>() : "";
}

// The options nnapi-convert converts a case with: its model, its --input
// specs and target Android API level.
inline nnapi_convert::ConvertOptions convert_options(const std::filesystem::path& dir,
                                                     const nlohmann::json& cs) {
  nnapi_convert::ConvertOptions o;
  o.model_path = (dir / "model.pt").string();
  for (const std::string& s : cs.at("inputs").get<std::vector<std::string>>())
    o.inputs.push_back(nnapi_convert::parse_input_spec(s));
  o.min_android_api = min_android_api_of(cs);
  return o;
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

// Case directories (those with a case.json) under `root`, sorted; with
// `expect`, only the cases whose case.json says so ("ok" or "refused").
inline std::vector<std::filesystem::path> case_dirs(const std::filesystem::path& root,
                                                    const std::string& expect = "") {
  std::vector<std::filesystem::path> dirs;
  for (const auto& e : std::filesystem::directory_iterator(root)) {
    if (!std::filesystem::exists(e.path() / "case.json")) continue;
    if (!expect.empty() &&
        read_json(e.path() / "case.json").at("expect").get<std::string>() != expect)
      continue;
    dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// One gtest per case directory, in `suite`, named after the directory;
// `make(dir)` returns the test object.
template <typename Make>
void register_cases(const char* suite, const std::vector<std::filesystem::path>& dirs, Make make) {
  for (const std::filesystem::path& d : dirs) {
    std::string name = d.filename().string();
    for (char& ch : name) {
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    }
    testing::RegisterTest(suite, name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [d, make]() -> testing::Test* { return make(d); });
  }
}

}  // namespace fixtures

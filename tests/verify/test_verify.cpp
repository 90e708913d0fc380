// End to end: every model nnapi-convert converts in the reference suites is
// run on the host NNAPI runtime (libneuralnetworks.so) and compared with
// eager PyTorch, in-process through the --verify library.
//
// One test per fixture directory (tools/make_fixtures.py, layout in
// tests/reference/README.md) whose reference converts; with
// NNAPI_VERIFY_FUSE_ACTIVATIONS=1 (--fuse-activations) also every case that
// nnapi-convert must convert where the reference refuses (the beyond-* and
// fuse-* cases, whose unfused numbers tests/reference checks). Each test:
//   1. converts model.pt with the case's --input specs and options and
//      writes the module;
//   2. runs it on args.pt (the inputs test_nnapi.py runs) and compares every
//      output with eager.pt (what eager PyTorch returned, recorded by the
//      oracle);
//   3. where the reference converts, runs verify_conversion (what
//      `nnapi-convert --verify` does): the traced model and the module on
//      seeded random inputs of the specs' shapes;
//   4. with --fuse-activations, where case.json states `fold` (the
//      activations the fused conversion must fold, one (operation, fused
//      activation) pair each): the fused conversion has one operation fewer per
//      pair than the unfused one, and per pair one more operation of that type
//      whose fuse-code operand holds NeuralNetworks.h's code for that
//      activation.
// Tolerances: fixtures::tolerance_for (test_nnapi.py's for its cases). Every
// output must also be checked once in a way a constant output would fail
// (fixtures::MeaningfulChecks): a check an all-zero output passes proves
// nothing. Cases whose case.json says `not_runnable` (why) are byte-checked
// only (tests/reference) and named on the standard output.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/import.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "../common/fixtures.h"
#include "nnapi_convert/blob.h"
#include "nnapi_convert/converter.h"
#include "nnapi_convert/verify.h"

namespace fs = std::filesystem;
using namespace nnapi_convert;

namespace {

using fixtures::load_tensors;
using fixtures::read_json;

bool fuse_activations() {
  const char* fuse = std::getenv("NNAPI_VERIFY_FUSE_ACTIVATIONS");
  return fuse && std::string(fuse) == "1";
}

// NeuralNetworks.h: the FuseCode values.
const std::map<std::string, int32_t> kFuseCodes = {
    {"NONE", 0}, {"RELU", 1}, {"RELU1", 2}, {"RELU6", 3}};

// NeuralNetworks.h: the operations that take a fused activation, their
// OperationCode, and which input holds the FuseCode (the convolutions in their
// explicit-padding form, the only one nnapi-convert writes: CONV_2D and
// TRANSPOSE_CONV_2D input 9 after the four paddings and two strides,
// DEPTHWISE_CONV_2D and GROUPED_CONV_2D input 10 after the multiplier or
// group count; FULLY_CONNECTED input 3; ADD, SUB, MUL, DIV input 2).
struct FusingOp {
  const char* name;
  size_t fuse_input;
};
const std::map<int32_t, FusingOp> kFusingOps = {{0, {"ADD", 2}},
                                                {3, {"CONV_2D", 9}},
                                                {4, {"DEPTHWISE_CONV_2D", 10}},
                                                {9, {"FULLY_CONNECTED", 3}},
                                                {18, {"MUL", 2}},
                                                {30, {"DIV", 2}},
                                                {36, {"SUB", 2}},
                                                {55, {"GROUPED_CONV_2D", 10}},
                                                {91, {"TRANSPOSE_CONV_2D", 9}}};

std::string fuse_name(int32_t code) {
  for (const auto& [name, c] : kFuseCodes)
    if (c == code) return name;
  return "fuse code " + std::to_string(code);
}

// How many operations of each (type, fused activation) the conversion has;
// the explicit-padding form of each convolution is checked on the way.
std::map<std::pair<std::string, std::string>, int> fused_operations(const Conversion& c) {
  const Blob b =
      parse_blob(reinterpret_cast<const uint8_t*>(c.ser_model.data()), c.ser_model.size() * 4);
  std::map<std::pair<std::string, std::string>, int> counts;
  for (const BlobOperation& op : b.operations) {
    auto it = kFusingOps.find(op.opcode);
    if (it == kFusingOps.end()) continue;
    const FusingOp& f = it->second;
    EXPECT_GT(op.inputs.size(), f.fuse_input) << f.name << " has too few inputs";
    if (op.inputs.size() <= f.fuse_input) continue;
    if (op.opcode == 3 || op.opcode == 91) {  // explicit padding: input 7 is the width stride
      EXPECT_EQ(b.operands[op.inputs[7]].type, nnapi::OperandType::Int32)
          << f.name << " in its implicit-padding form";
    }
    const BlobOperand& fuse = b.operands[op.inputs[f.fuse_input]];
    EXPECT_EQ(fuse.type, nnapi::OperandType::Int32) << f.name << "'s fuse operand";
    if (fuse.value < 0) {
      ADD_FAILURE() << f.name << "'s fuse code is not a constant";
      continue;
    }
    const std::vector<uint8_t>& bytes = b.values[fuse.value].immediate;
    int32_t code = -1;
    if (bytes.size() == 4) std::memcpy(&code, bytes.data(), 4);
    ++counts[{f.name, fuse_name(code)}];
  }
  return counts;
}

// Step 4: what --fuse-activations folded against the case's `fold`.
void expect_folds(const ConvertOptions& fused_options, const Conversion& fused,
                  const nlohmann::json& fold) {
  ConvertOptions plain = fused_options;
  plain.fuse_activations = false;
  const Conversion unfused = convert(plain);
  std::map<std::pair<std::string, std::string>, int> want;
  for (const auto& pair : fold) {
    const auto name = pair.at(1).get<std::string>();
    ASSERT_TRUE(kFuseCodes.count(name)) << "unknown activation " << name << " in fold";
    ++want[{pair.at(0).get<std::string>(), name}];
  }
  EXPECT_EQ(fused.operation_count, unfused.operation_count - static_cast<int64_t>(fold.size()))
      << "--fuse-activations must fold " << fold.size() << " activation(s)";
  auto before = fused_operations(unfused);
  auto after = fused_operations(fused);
  std::set<std::pair<std::string, std::string>> keys;
  for (const auto& m : {before, after, want})
    for (const auto& [k, n] : m) keys.insert(k);
  for (const auto& k : keys) {
    if (k.second == "NONE") continue;  // the producers that lost NONE
    EXPECT_EQ(after[k] - before[k], want[k])
        << k.first << " operations with fused " << k.second << ": " << before[k] << " unfused, "
        << after[k] << " with --fuse-activations";
  }
}

class VerifyCase : public testing::Test {
 public:
  explicit VerifyCase(fs::path dir) : dir_(std::move(dir)) {}

  void TestBody() override {
    nlohmann::json cs = read_json(dir_ / "case.json");
    const std::string name = cs.at("name").get<std::string>();
    ConvertOptions o = fixtures::convert_options(dir_, cs);
    o.fuse_activations = fuse_activations();
    VerifyOptions tol = fixtures::tolerance_for(cs, load_tensors(dir_ / "eager.pt"));

    fs::path out = fixtures::unique_temp_path("verify-" + dir_.filename().string());
    fs::create_directories(out);
    const std::string module = (out / "m.nnapi.pt").string();
    const Conversion c = convert(o);
    write_nnapi_module(c, o, module, false);

    // 2. The oracle's inputs and eager outputs.
    fixtures::MeaningfulChecks checks(name);
    std::vector<OutputCheck> on_args = fixtures::compare_with_eager(dir_, module, o, tol);
    for (size_t i = 0; i < on_args.size(); ++i) {
      std::cout << "[ numbers  ] " << name << " eager.pt " << format_output_check(i, on_args[i])
                << "\n";
      checks.add(i, "eager.pt output " + std::to_string(i), on_args[i]);
    }

    // 3. What --verify does: seeded random inputs of the specs' shapes (of
    // args.pt's shapes where --return-shape fixes the outputs' sizes). Only
    // where the reference converts: the others (masks, token ids, sizes of
    // 224) take inputs random ones are not, and tests/reference checks them
    // on args.pt alike.
    if (cs.at("expect").get<std::string>() == "ok") {
      if (!o.return_shapes.empty()) {
        for (const at::Tensor& a : load_tensors(dir_ / "args.pt"))
          tol.shapes.push_back(a.sizes().vec());
      }
      VerifyReport r = verify_conversion(o, module, tol);
      for (size_t i = 0; i < r.outputs.size(); ++i) {
        std::cout << "[ numbers  ] " << name << " random " << format_output_check(i, r.outputs[i])
                  << "\n";
        checks.add(i, "random inputs, output " + std::to_string(i), r.outputs[i]);
      }
      EXPECT_TRUE(r.ok);
    }
    checks.finish();

    // 4. What --fuse-activations folded.
    if (o.fuse_activations && cs.contains("fold") && !cs.at("fold").is_null()) {
      expect_folds(o, c, cs.at("fold"));
    }
    fs::remove_all(out);
  }

 private:
  fs::path dir_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const char* roots = std::getenv("NNAPI_FIXTURES_DIRS");
  if (!roots || !*roots) {
    std::cerr << "NNAPI_FIXTURES_DIRS must list (':'-separated) directories made by "
                 "tools/make_fixtures.py\n";
    return 1;
  }
  const bool fused = fuse_activations();
  std::vector<fs::path> dirs;
  std::string list = roots;
  for (size_t start = 0; start <= list.size();) {
    size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    fs::path root = list.substr(start, end - start);
    start = end + 1;
    if (root.empty()) continue;
    if (!fs::is_directory(root)) {
      std::cerr << root << " is not a directory\n";
      return 1;
    }
    std::vector<fs::path> found = fixtures::case_dirs_if(root, [&](const nlohmann::json& cs) {
      if (cs.contains("not_runnable") && cs.at("not_runnable").is_string()) {
        std::cout << "not run on NNAPI: " << cs.at("name").get<std::string>() << ": "
                  << cs.at("not_runnable").get<std::string>() << "\n";
        return false;
      }
      return fused ? fixtures::must_convert(cs) : cs.at("expect").get<std::string>() == "ok";
    });
    if (found.empty()) {
      std::cerr << "no converted fixtures in " << root << "\n";
      return 1;
    }
    // Not the cases nnapi-convert must refuse though the reference converts
    // them (test_reference checks the refusal).
    for (const fs::path& d : found) {
      if (!fixtures::read_json(d / "case.json").value("must_refuse", false)) dirs.push_back(d);
    }
  }
  std::sort(dirs.begin(), dirs.end());
  fixtures::register_cases("Verify", dirs, [](const fs::path& d) { return new VerifyCase(d); });
  return RUN_ALL_TESTS();
}

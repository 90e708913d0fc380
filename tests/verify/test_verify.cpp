// End to end: every model nnapi-convert converts in the reference suites is
// run on the host NNAPI runtime (libneuralnetworks.so) and compared with
// eager PyTorch, in-process through the --verify library.
//
// One test per fixture directory (tools/make_fixtures.py, layout in
// tests/reference/README.md) whose reference converts. Each test:
//   1. converts model.pt with the case's --input specs and writes the module;
//   2. runs it on args.pt (the inputs test_nnapi.py runs) and compares every
//      output with eager.pt (what eager PyTorch returned, recorded by the
//      oracle);
//   3. runs verify_conversion (what `nnapi-convert --verify` does): the traced
//      model and the module on seeded random inputs of the specs' shapes.
//
// Tolerances (see tolerance_for):
//   * test_nnapi cases: what PyTorch's test/test_nnapi.py asserts for them.
//     Its check() calls assertEqual(eager, nnapi) with torch.testing's float32
//     defaults (atol 1e-5, rtol 1.3e-6) unless the case passes atol_rtol:
//     conv2d_transpose (atol 2e-4, rtol 0). Quantized outputs are compared
//     there after dequantizing with float32 tolerances, i.e. exactly, except
//     where the test passes `limit`: conv2d quant (at most 3% of the elements
//     differ, atol_rtol (1, 0)) and avg_pool2d quant (limit = every element,
//     atol_rtol (1, 0)). For those we require none off by more than one
//     quantum (stricter than atol 1.0, which is 16-33 quanta there) and at
//     most 3% (conv2d) or any share (avg_pool2d) off by one.
//   * torchvision cases: not in test_nnapi.py; the --verify defaults (float
//     atol 1e-4, rtol 1e-4; quantized: none more than one quantum off and at
//     most 3% off by one). Note: with the fixtures' random initialisation,
//     googlenet's and mnasnet's activations fade (googlenet's features are
//     ~1e-11, its output is the fc bias), so these two cases only prove that
//     the modules run.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>

#include "../common/fixtures.h"
#include "nnapi_convert/converter.h"
#include "nnapi_convert/verify.h"

namespace fs = std::filesystem;
using namespace nnapi_convert;

namespace {

using fixtures::load_tensors;
using fixtures::read_bytes;
using fixtures::read_json;

bool matches(const std::string& name, const char* re) {
  return std::regex_search(name, std::regex(re));
}

// The tolerance PyTorch's test_nnapi.py applies to this case (see the top).
VerifyOptions tolerance_for(const std::string& name, const std::string& source) {
  VerifyOptions v;  // atol 1e-4, rtol 1e-4, quantized: one quantum, 3%
  if (source != "test_nnapi") return v;
  v.atol = 1e-5;  // torch.testing.assert_close's float32 defaults
  v.rtol = 1.3e-6;
  if (matches(name, "^conv2d_transpose-")) {
    v.atol = 2e-4;  // test_conv2d_transpose: atol_rtol = (0.0002, 0)
    v.rtol = 0;
  }
  if (matches(name, "^avg_pool2d-quant")) {
    // test_avg_pool2d: limit = every element, atol_rtol = (1, 0): on a
    // device, NNAPI drivers may round quantized averages differently from
    // QNNPACK. (The host runtime rounds as QNNPACK does.)
    v.max_off_by_one_share = 1.0;
  } else if (!matches(name, "^conv2d-quant")) {
    v.max_off_by_one_share = 0;  // no `limit`: quantized outputs must be equal
  }
  return v;
}

class VerifyCase : public testing::Test {
 public:
  explicit VerifyCase(fs::path dir) : dir_(std::move(dir)) {}

  void TestBody() override {
    nlohmann::json cs = read_json(dir_ / "case.json");
    const std::string name = cs.at("name").get<std::string>();
    const std::string source = cs.at("source").get<std::string>();
    ConvertOptions o;
    o.model_path = (dir_ / "model.pt").string();
    for (const std::string& s : cs.at("inputs").get<std::vector<std::string>>())
      o.inputs.push_back(parse_input_spec(s));
    o.min_android_api = fixtures::min_android_api_of(cs);
    // NNAPI_VERIFY_FUSE_ACTIVATIONS=1: the same checks with --fuse-activations.
    const char* fuse = std::getenv("NNAPI_VERIFY_FUSE_ACTIVATIONS");
    o.fuse_activations = fuse && std::string(fuse) == "1";
    VerifyOptions tol = tolerance_for(name, source);

    fs::path out = fs::temp_directory_path() /
                   ("nnapi-verify-" + dir_.filename().string() + "-" + std::to_string(::getpid()));
    fs::create_directories(out);
    const std::string module = (out / "m.nnapi.pt").string();
    write_nnapi_module(convert(o), o, module, false);

    // 2. The oracle's inputs and eager outputs.
    std::vector<at::Tensor> args = load_tensors(dir_ / "args.pt");
    std::vector<at::Tensor> eager = load_tensors(dir_ / "eager.pt");
    std::vector<at::Tensor> nnapi = run_converted(module, args);
    ASSERT_EQ(nnapi.size(), eager.size()) << "number of outputs";
    for (size_t i = 0; i < eager.size(); ++i) {
      at::Tensor got = nnapi[i];
      // test_nnapi.py's flexible quantized cases convert with template inputs
      // of other quantization parameters than the run-time args (e.g. scale
      // 1/16 vs 0.03); NNAPI then reads the args' integers with the template's
      // parameters, so only the integers are comparable (as in
      // tests/runtime/test_reference_models.py).
      if (got.is_quantized() && eager[i].is_quantized() &&
          (got.q_scale() != eager[i].q_scale() || got.q_zero_point() != eager[i].q_zero_point()) &&
          args_have_other_qparams(o, args)) {
        got = at::_make_per_tensor_quantized_tensor(got.int_repr(), eager[i].q_scale(),
                                                    eager[i].q_zero_point());
      }
      OutputCheck c = compare_output(got, eager[i], quantum_of(module, i), tol);
      std::cout << "[ numbers  ] " << name << " eager.pt " << format_output_check(i, c) << "\n";
      EXPECT_TRUE(c.ok) << "eager.pt output " << i << ": " << c.problem;
    }

    // 3. What --verify does: seeded random inputs of the specs' shapes.
    VerifyReport r = verify_conversion(o, module, tol);
    for (size_t i = 0; i < r.outputs.size(); ++i) {
      std::cout << "[ numbers  ] " << name << " random " << format_output_check(i, r.outputs[i])
                << "\n";
      EXPECT_TRUE(r.outputs[i].ok) << "random inputs, output " << i << ": " << r.outputs[i].problem;
    }
    EXPECT_TRUE(r.ok);
    fs::remove_all(out);
  }

 private:
  static bool args_have_other_qparams(const ConvertOptions& o, const std::vector<at::Tensor>& a) {
    for (size_t i = 0; i < a.size() && i < o.inputs.size(); ++i) {
      if (a[i].is_quantized() &&
          (a[i].q_scale() != o.inputs[i].scale || a[i].q_zero_point() != o.inputs[i].zero_point)) {
        return true;
      }
    }
    return false;
  }

  static double quantum_of(const std::string& module, size_t output) {
    torch::jit::Module m = torch::jit::load(module);
    at::Tensor ser = m.attr("mod").toModule().attr("ser_model").toTensor().contiguous();
    std::vector<double> q = dequantized_output_quanta(
        std::vector<int32_t>(ser.data_ptr<int32_t>(), ser.data_ptr<int32_t>() + ser.numel()));
    return output < q.size() ? q[output] : 0.0;
  }

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
    std::vector<fs::path> found = fixtures::case_dirs(root, "ok");
    // A case the validator refuses has nothing to verify (tests/reference
    // checks the refusal).
    found.erase(
        std::remove_if(found.begin(), found.end(),
                       [](const fs::path& d) { return !fixtures::validator_refuses(d).empty(); }),
        found.end());
    if (found.empty()) {
      std::cerr << "no converted fixtures in " << root << "\n";
      return 1;
    }
    dirs.insert(dirs.end(), found.begin(), found.end());
  }
  std::sort(dirs.begin(), dirs.end());
  fixtures::register_cases("Verify", dirs, [](const fs::path& d) { return new VerifyCase(d); });
  return RUN_ALL_TESTS();
}

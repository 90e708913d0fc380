// Reading the oracle's fixture files (layout: tests/reference/README.md).
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "nnapi_convert/batch.h"
#include "nnapi_convert/conversion.h"
#include "nnapi_convert/input_spec.h"
#include "nnapi_convert/verify.h"

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

// A path under the temporary directory that no other process uses:
// nnapi-<what>-<pid> (two build trees may run the same test at once).
inline std::filesystem::path unique_temp_path(const std::string& what) {
  return std::filesystem::temp_directory_path() /
         ("nnapi-" + what + "-" + std::to_string(::getpid()));
}

// The case's options (case.json "options", nnapi-convert's command-line
// options as make_fixtures.py writes them) applied to `o`.
inline void apply_case_options(const nlohmann::json& cs, nnapi_convert::ConvertOptions& o) {
  const auto options = cs.at("options").get<std::vector<std::string>>();
  auto value = [&](size_t i) {
    if (i + 1 >= options.size())
      throw std::runtime_error("case option " + options[i] + " lacks its value");
    return options[i + 1];
  };
  for (size_t i = 0; i < options.size(); ++i) {
    const std::string& opt = options[i];
    if (opt == "--min-android-api") {
      o.min_android_api = std::stoi(value(i++));
    } else if (opt == "--preference") {
      o.compilation_preference = nnapi_convert::preference_code(value(i++));
      if (o.compilation_preference < 0) throw std::runtime_error("bad --preference in case");
    } else if (opt == "--nhwc") {  // the video frames' layout (beyond-video-*)
      o.nhwc = true;
    } else if (opt == "--fuse-activations") {
      o.fuse_activations = true;
    } else if (opt == "--relax-f32-to-f16") {
      o.relax_f32_to_f16 = true;
    } else if (opt == "--int16-for-qint16") {
      o.use_int16_for_qint16 = true;
    } else if (opt == "--return-shape") {
      o.return_shapes.push_back(nnapi_convert::parse_return_shape(value(i++)));
    } else {
      throw std::runtime_error("case option not handled by the tests: " + opt);
    }
  }
}

// The options nnapi-convert converts a case with: model.pt, its --input
// specs and the case's options.
inline nnapi_convert::ConvertOptions convert_options(const std::filesystem::path& dir,
                                                     const nlohmann::json& cs) {
  nnapi_convert::ConvertOptions o;
  o.model_path = (dir / "model.pt").string();
  for (const std::string& s : cs.at("inputs").get<std::vector<std::string>>())
    o.inputs.push_back(nnapi_convert::parse_input_spec(s));
  apply_case_options(cs, o);
  return o;
}

// Why nnapi-convert's validator refuses the reference's model of the case
// (case.json's "validator_refuses": PyTorch's converter's NNAPI model breaks
// NeuralNetworks.h; nnapi-convert writes a valid one), or "".
inline std::string validator_refuses(const std::filesystem::path& dir) {
  const nlohmann::json why =
      read_json(dir / "case.json").value("validator_refuses", nlohmann::json());
  return why.is_string() ? why.get<std::string>() : "";
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

inline bool name_matches(const std::string& name, const char* re) {
  return std::regex_search(name, std::regex(re));
}

inline double rms_of(const std::vector<at::Tensor>& outputs) {
  double sum = 0;
  int64_t n = 0;
  for (const at::Tensor& t : outputs) {
    at::Tensor d = (t.is_quantized() ? t.dequantize() : t).to(at::kDouble);
    sum += d.pow(2).sum().item<double>();
    n += d.numel();
  }
  return n ? std::sqrt(sum / static_cast<double>(n)) : 0.0;
}

// The tolerance for a case's outputs (`eager`: its outputs on args.pt).
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
//   * torchvision cases (whole models with realistic weights, outputs of order
//     1 to 1e4): rtol 1e-4 and atol 1e-4 times the output's RMS when that
//     exceeds 1 (float32 rounding grows with the activations); quantized: the
//     project's rule, none more than one quantum off and at most 3% off by one.
//   * every other case (beyond, fuse, options): torch.testing's float32
//     defaults, and the project's quantized rule.
inline nnapi_convert::VerifyOptions case_tolerance(const nlohmann::json& cs,
                                                   const std::vector<at::Tensor>& eager) {
  nnapi_convert::VerifyOptions v;  // quantized: one quantum, 3%
  const std::string name = cs.at("name").get<std::string>();
  const std::string source = cs.at("source").get<std::string>();
  if (source == "torchvision") {
    v.atol = 1e-4 * std::max(1.0, rms_of(eager));
    v.rtol = 1e-4;
    return v;
  }
  v.atol = 1e-5;  // torch.testing.assert_close's float32 defaults
  v.rtol = 1.3e-6;
  if (name_matches(name, "^beyond-dynamic_quant-")) {
    // Dynamic quantization converted as float on the dequantized weights:
    // eager quantizes each input to 8 bits at run time. At most 1.2% of the
    // output's RMS apart on tests/verify/test_dynamic_quant.py's models (it
    // checks the float twin to 1e-5 and this bound): 5% of max(1, RMS) + 5%.
    v.atol = 0.05 * std::max(1.0, rms_of(eager));
    v.rtol = 0.05;
    return v;
  }
  if (name == "beyond-leaky_relu-negative-quant") {
    // Slope -0.5 of quantum-aligned inputs: every odd negative input lands
    // exactly half way between two output integers (5% of this output),
    // which NNAPI's PRELU rounds away from zero and PyTorch's quantized
    // leaky_relu to even. As test_nnapi.py's avg_pool2d quant (the same
    // kind of tie): any share off by one, none by more.
    v.max_off_by_one_share = 1.0;
  }
  if (source != "test_nnapi") return v;
  if (name_matches(name, "^conv2d_transpose-")) {
    v.atol = 2e-4;  // test_conv2d_transpose: atol_rtol = (0.0002, 0)
    v.rtol = 0;
  }
  if (name_matches(name, "^avg_pool2d-quant")) {
    // test_avg_pool2d: limit = every element, atol_rtol = (1, 0): on a
    // device, NNAPI drivers may round quantized averages differently from
    // QNNPACK. (The host runtime rounds as QNNPACK does.)
    v.max_off_by_one_share = 1.0;
  } else if (!name_matches(name, "^conv2d-quant")) {
    v.max_off_by_one_share = 0;  // no `limit`: quantized outputs must be equal
  }
  return v;
}

// case_tolerance, widened as --verify widens it for the case's options
// (relaxed_tolerances: float16 computation under --relax-f32-to-f16).
inline nnapi_convert::VerifyOptions tolerance_for(const nlohmann::json& cs,
                                                  const std::vector<at::Tensor>& eager) {
  nnapi_convert::ConvertOptions o;
  apply_case_options(cs, o);
  return nnapi_convert::relaxed_tolerances(o, case_tolerance(cs, eager));
}

// The scale of the quantized operand the converted module's output `output`
// is dequantized from (0: not a DEQUANTIZE result).
inline double dequantized_quantum(const std::string& module, size_t output) {
  torch::jit::Module m = torch::jit::load(module);
  at::Tensor ser = m.attr("mod").toModule().attr("ser_model").toTensor().contiguous();
  std::vector<double> q = nnapi_convert::dequantized_output_quanta(
      std::vector<int32_t>(ser.data_ptr<int32_t>(), ser.data_ptr<int32_t>() + ser.numel()));
  return output < q.size() ? q[output] : 0.0;
}

// The converted `module` run on the host runtime on the case's args.pt, each
// output compared with eager.pt by --verify's rules (compare_output).
// test_nnapi.py's flexible quantized cases convert with template inputs of
// other quantization parameters than the run-time args (e.g. scale 1/16 vs
// 0.03); NNAPI then reads the args' integers with the template's parameters,
// so only the integers are comparable (as in
// tests/runtime/test_reference_models.py).
inline std::vector<nnapi_convert::OutputCheck> compare_with_eager(
    const std::filesystem::path& dir, const std::string& module,
    const nnapi_convert::ConvertOptions& o, const nnapi_convert::VerifyOptions& tol) {
  std::vector<at::Tensor> args = load_tensors(dir / "args.pt");
  std::vector<at::Tensor> eager = load_tensors(dir / "eager.pt");
  std::vector<at::Tensor> nnapi = nnapi_convert::run_converted(module, args);
  std::vector<nnapi_convert::OutputCheck> checks;
  if (nnapi.size() != eager.size()) {
    nnapi_convert::OutputCheck c;
    c.problem = "the converted module returns " + std::to_string(nnapi.size()) +
                " outputs, eager " + std::to_string(eager.size());
    checks.push_back(c);
    return checks;
  }
  bool other_qparams = false;
  for (size_t i = 0; i < args.size() && i < o.inputs.size(); ++i) {
    other_qparams = other_qparams ||
                    (args[i].is_quantized() && (args[i].q_scale() != o.inputs[i].scale ||
                                                args[i].q_zero_point() != o.inputs[i].zero_point));
  }
  for (size_t i = 0; i < eager.size(); ++i) {
    at::Tensor got = nnapi[i];
    if (other_qparams && got.is_quantized() && eager[i].is_quantized()) {
      got = at::_make_per_tensor_quantized_tensor(got.int_repr(), eager[i].q_scale(),
                                                  eager[i].q_zero_point());
    }
    checks.push_back(
        nnapi_convert::compare_output(got, eager[i], dequantized_quantum(module, i), tol));
  }
  return checks;
}

// Cases an output of which no check can tell from a constant (see
// constant_output_would_pass), and why that is right. Every other output
// must be checked at least once in a way a constant output would fail; an
// entry here whose outputs are all checked meaningfully fails as stale.
inline const std::map<std::string, std::string>& weak_output_cases() {
  static const std::map<std::string, std::string> cases = {};
  return cases;
}

// The numeric checks of one case, per output: each must pass, and each output
// must have one check a constant output would have failed (a weak check
// beside it is reported, not failed: e.g. random inputs driving a 2-element
// output to one value while the oracle's inputs do not).
class MeaningfulChecks {
 public:
  explicit MeaningfulChecks(std::string name) : name_(std::move(name)) {}
  void add(size_t output, const std::string& what, const nnapi_convert::OutputCheck& c) {
    EXPECT_TRUE(c.ok) << what << ": " << c.problem;
    if (outputs_.size() <= output) outputs_.resize(output + 1);
    if (c.warning.empty()) {
      outputs_[output].meaningful = true;
    } else {
      outputs_[output].weak.push_back(what + ": " + c.warning);
    }
  }
  // After every check of the case.
  void finish() const {
    const bool listed = weak_output_cases().count(name_) != 0;
    bool any_weak = false;
    for (size_t i = 0; i < outputs_.size(); ++i) {
      if (outputs_[i].meaningful) continue;
      any_weak = true;
      std::string why;
      for (const std::string& w : outputs_[i].weak) why += "\n  " + w;
      EXPECT_TRUE(listed) << "output " << i << " is never checked in a way a constant output "
                          << "would fail:" << why
                          << "\nGive the case inputs or weights that exercise it (or list it in "
                             "weak_output_cases with the reason)";
    }
    EXPECT_TRUE(!listed || any_weak)
        << name_ << " is listed in weak_output_cases ("
        << (listed ? weak_output_cases().at(name_) : "")
        << "), but every output is checked meaningfully now: remove the entry";
  }

 private:
  struct Output {
    bool meaningful = false;
    std::vector<std::string> weak;
  };
  std::string name_;
  std::vector<Output> outputs_;
};

// Case directories (those with a case.json) under `root`, sorted; with
// `expect`, only the cases whose case.json says so ("ok" or "refused").
template <typename Keep>
std::vector<std::filesystem::path> case_dirs_if(const std::filesystem::path& root, Keep keep) {
  std::vector<std::filesystem::path> dirs;
  for (const auto& e : std::filesystem::directory_iterator(root)) {
    if (!std::filesystem::exists(e.path() / "case.json")) continue;
    if (!keep(read_json(e.path() / "case.json"))) continue;
    dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

inline std::vector<std::filesystem::path> case_dirs(const std::filesystem::path& root,
                                                    const std::string& expect = "") {
  return case_dirs_if(root, [&](const nlohmann::json& cs) {
    return expect.empty() || cs.at("expect").get<std::string>() == expect;
  });
}

// A case nnapi-convert must convert: the reference converts it, or it is
// marked must_convert (an operation the reference has no lowering for).
inline bool must_convert(const nlohmann::json& cs) {
  return cs.at("expect").get<std::string>() == "ok" ||
         (cs.contains("must_convert") && cs.at("must_convert").get<bool>());
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

// The failing side of --verify's rules (issue 25), clause by clause, on
// tensors built here: what README's "Checking a conversion" and verify.h
// state. Quantized outputs (compared as int_repr after checking scale and
// zero point) and float outputs dequantized from a quantized operand
// (measured in its quanta) pass when no element is off by more than one
// quantum and at most 3% of the elements are off by one (test_nnapi.py's
// limit for quantized convolutions). A check that a constant output would
// pass proves little (constant_output_would_pass).
//
// Then end to end: verify_conversion of a conversion whose output template
// has another scale than the model's output, the integers being right.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/import.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <utility>

#include "../common/fixtures.h"
#include "nnapi_convert/converter.h"
#include "nnapi_convert/input_spec.h"
#include "nnapi_convert/verify.h"

namespace fs = std::filesystem;
using namespace nnapi_convert;

namespace {

constexpr double kScale = 0.0625;
constexpr int64_t kZeroPoint = 128;

// 1000 quint8 values between 10 and 240.
at::Tensor quantized_output() {
  at::Tensor ints = at::arange(1000, at::kLong).remainder(231).add(10).to(at::kByte);
  return at::_make_per_tensor_quantized_tensor(ints, kScale, kZeroPoint);
}

// The first `n` elements of `q`'s integers moved by `by`.
at::Tensor shifted(const at::Tensor& q, int64_t n, int64_t by, double scale = kScale,
                   int64_t zero_point = kZeroPoint) {
  at::Tensor ints = q.int_repr().clone();
  ints.narrow(0, 0, n).add_(by);
  return at::_make_per_tensor_quantized_tensor(ints, scale, zero_point);
}

TEST(VerifyRules, QuantizedThreePercentOffByOnePass) {
  const at::Tensor eager = quantized_output();
  OutputCheck c = compare_output(shifted(eager, 30, 1), eager, 0, VerifyOptions());
  EXPECT_TRUE(c.ok) << c.problem;
  EXPECT_EQ(c.off_by_one, 30);
  EXPECT_EQ(c.max_quanta, 1);
}

TEST(VerifyRules, QuantizedMoreThanThreePercentOffByOneFails) {
  const at::Tensor eager = quantized_output();
  OutputCheck c = compare_output(shifted(eager, 31, -1), eager, 0, VerifyOptions());
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.problem.find("31 of 1000 elements off by one quantum or more (3.1%, at most 3% "
                           "allowed), the largest by 1 quanta"),
            std::string::npos)
      << c.problem;
}

TEST(VerifyRules, QuantizedTwoQuantaFails) {
  const at::Tensor eager = quantized_output();
  OutputCheck c = compare_output(shifted(eager, 1, 2), eager, 0, VerifyOptions());
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.max_quanta, 2);
  EXPECT_NE(c.problem.find("the largest by 2 quanta (at most 1 allowed"), std::string::npos)
      << c.problem;
}

TEST(VerifyRules, QuantizedScaleOrZeroPointFails) {
  const at::Tensor eager = quantized_output();
  for (auto [scale, zero_point] : {std::pair{kScale * 2, kZeroPoint}, {kScale, kZeroPoint + 1}}) {
    OutputCheck c =
        compare_output(shifted(eager, 0, 0, scale, zero_point), eager, 0, VerifyOptions());
    EXPECT_FALSE(c.ok) << "scale " << scale << ", zero point " << zero_point;
    EXPECT_NE(c.problem.find("but the model's output has scale"), std::string::npos) << c.problem;
  }
}

TEST(VerifyRules, DequantizedOutputIsMeasuredInQuanta) {
  // A float output computed by DEQUANTIZE: one quantum (0.0625) is far past
  // the float tolerance (1e-4), so only the quanta rule can pass it.
  const at::Tensor eager = quantized_output().dequantize();
  auto off = [&](int64_t n, double by) {
    at::Tensor t = eager.clone();
    t.narrow(0, 0, n).add_(by);
    return t;
  };
  OutputCheck within = compare_output(off(30, kScale), eager, kScale, VerifyOptions());
  EXPECT_TRUE(within.ok) << within.problem;
  OutputCheck share = compare_output(off(31, kScale), eager, kScale, VerifyOptions());
  EXPECT_FALSE(share.ok);
  EXPECT_NE(share.problem.find("as a dequantized output: 31 of 1000 elements off by one quantum"),
            std::string::npos)
      << share.problem;
  OutputCheck two = compare_output(off(1, 2 * kScale), eager, kScale, VerifyOptions());
  EXPECT_FALSE(two.ok);
  EXPECT_NE(two.problem.find("the largest by 2 quanta"), std::string::npos) << two.problem;
  // Not dequantized (quantum 0): the same difference is a float mismatch.
  OutputCheck plain = compare_output(off(1, kScale), eager, 0, VerifyOptions());
  EXPECT_FALSE(plain.ok);
}

TEST(VerifyRules, AConstantOutputWouldPass) {
  VerifyOptions v;  // atol 1e-4, rtol 1e-4
  EXPECT_NE(constant_output_would_pass(at::zeros({4, 5}), 0, v), "");
  EXPECT_NE(constant_output_would_pass(at::full({4, 5}, 3.0), 0, v), "");
  EXPECT_NE(constant_output_would_pass(at::randn({4, 5}) * 1e-9, 0, v), "")
      << "an output within atol of 0 passes as all zeros";
  EXPECT_NE(constant_output_would_pass(at::linspace(1, 1.0001, 20), 0, v), "")
      << "within the tolerance of its middle value";
  EXPECT_EQ(constant_output_would_pass(at::linspace(1, 1.01, 20), 0, v), "");
  EXPECT_EQ(constant_output_would_pass(at::full({1}, 5.0), 0, v), "")
      << "one element: only being too small counts";
  EXPECT_NE(constant_output_would_pass(at::full({1}, 5e-5), 0, v), "");
  // Dequantized: within one quantum of one value.
  EXPECT_NE(constant_output_would_pass(at::linspace(0, 0.1, 20), 0.0625, v), "");
  EXPECT_EQ(constant_output_would_pass(at::linspace(0, 0.2, 20), 0.0625, v), "");
  // Quantized: integers spanning 2 (a constant is off by at most one).
  at::Tensor span2 = at::_make_per_tensor_quantized_tensor(
      at::tensor({127, 128, 129, 128}, at::kLong).to(at::kByte), kScale, kZeroPoint);
  at::Tensor span3 = at::_make_per_tensor_quantized_tensor(
      at::tensor({127, 128, 130, 128}, at::kLong).to(at::kByte), kScale, kZeroPoint);
  EXPECT_NE(constant_output_would_pass(span2, 0, v), "");
  EXPECT_EQ(constant_output_would_pass(span3, 0, v), "");
  // compare_output warns with it.
  EXPECT_NE(compare_output(at::zeros({4}), at::zeros({4}), 0, v).warning, "");
}

// --verify of a conversion whose output template has twice the scale of the
// model's output: the integers NNAPI computes are right, the tensor the
// module returns is not.
TEST(VerifyRules, VerifyFailsOnTheOutputTemplatesScale) {
  const char* root = std::getenv("NNAPI_FIXTURES_DIR");
  ASSERT_TRUE(root) << "NNAPI_FIXTURES_DIR must name the test_nnapi fixtures";
  const fs::path dir = fs::path(root) / "conv2d-quant-nhwc-3x3";
  ConvertOptions o = fixtures::convert_options(dir, fixtures::read_json(dir / "case.json"));
  Conversion c = convert(o);
  ASSERT_EQ(c.templates.size(), 1u);
  const fs::path out = fixtures::unique_temp_path("verify-rules");
  fs::create_directories(out);
  write_nnapi_module(c, o, (out / "right.nnapi.pt").string(), false);
  VerifyReport right = verify_conversion(o, (out / "right.nnapi.pt").string(), VerifyOptions());
  EXPECT_TRUE(right.ok);
  c.templates[0].scale *= 2;
  write_nnapi_module(c, o, (out / "wrong.nnapi.pt").string(), false);
  VerifyReport wrong = verify_conversion(o, (out / "wrong.nnapi.pt").string(), VerifyOptions());
  EXPECT_FALSE(wrong.ok);
  ASSERT_EQ(wrong.outputs.size(), 1u);
  EXPECT_NE(wrong.outputs[0].problem.find("but the model's output has scale"), std::string::npos)
      << wrong.outputs[0].problem;
  fs::remove_all(out);
}

// A quint8 avg_pool2d with count_include_pad=False and no ceil_mode: the
// conversion's AVERAGE_POOL_2D averages over the cells within the input
// (NeuralNetworks.h), as the flag asks, where eager PyTorch's QNNPACK kernel
// divides by the whole window; --verify compares with what the flag asks, so
// the right conversion passes and one whose output scale is doubled fails.
TEST(VerifyRules, QuantizedAvgPoolExcludingPaddingAsTheFlagAsks) {
  const char* root = std::getenv("NNAPI_FIXTURES_DIR");
  ASSERT_TRUE(root) << "NNAPI_FIXTURES_DIR must name the test_nnapi fixtures";
  for (const char* name :
       {"beyond-qavg_pool2d-exclude-pad-quant", "beyond-qavg_pool2d-exclude-pad-quant-nhwc"}) {
    const fs::path dir = fs::path(root) / name;
    ConvertOptions o = fixtures::convert_options(dir, fixtures::read_json(dir / "case.json"));
    Conversion c = convert(o);
    const fs::path out = fixtures::unique_temp_path("verify-qavg");
    fs::create_directories(out);
    write_nnapi_module(c, o, (out / "right.nnapi.pt").string(), false);
    VerifyReport right = verify_conversion(o, (out / "right.nnapi.pt").string(), VerifyOptions());
    EXPECT_TRUE(right.ok) << name << ": "
                          << (right.outputs.empty() ? "" : right.outputs[0].problem);
    ASSERT_EQ(c.templates.size(), 1u);
    c.templates[0].scale *= 2;
    write_nnapi_module(c, o, (out / "wrong.nnapi.pt").string(), false);
    VerifyReport wrong = verify_conversion(o, (out / "wrong.nnapi.pt").string(), VerifyOptions());
    EXPECT_FALSE(wrong.ok) << name;
    fs::remove_all(out);
  }
}

// A converted module with a flexible batch called at batch 1, 3, then 1 again:
// it compiles again for each new size (the reference's NnapiModule compiles
// once, and PyTorch's NNAPI binding then refuses other sizes at
// Execution_setInput), and each call matches eager PyTorch.
TEST(VerifyRules, FlexibleModuleCompilesAgainForOtherSizes) {
  const char* root = std::getenv("NNAPI_FIXTURES_DIR");
  ASSERT_TRUE(root) << "NNAPI_FIXTURES_DIR must name the test_nnapi fixtures";
  const fs::path dir = fs::path(root) / "beyond-split-flex-batch";  // --input 0x3x4
  ConvertOptions o = fixtures::convert_options(dir, fixtures::read_json(dir / "case.json"));
  ASSERT_EQ(o.inputs.size(), 1u);
  ASSERT_EQ(o.inputs[0].dims[0], 0) << "the fixture's batch is flexible";
  Conversion c = convert(o);
  const fs::path out = fixtures::unique_temp_path("verify-resize");
  fs::create_directories(out);
  write_nnapi_module(c, o, (out / "m.nnapi.pt").string(), false);
  load_nnapi_runtime(std::getenv("NNAPI_CONVERT_RUNTIME") ? std::getenv("NNAPI_CONVERT_RUNTIME")
                                                          : "");
  torch::jit::Module converted = torch::jit::load((out / "m.nnapi.pt").string());
  torch::jit::Module model = torch::jit::load((dir / "model.pt").string());
  model.eval();
  at::NoGradGuard no_grad;
  for (int64_t batch : {1, 3, 1}) {
    const at::Tensor x = at::randn({batch, 3, 4});
    c10::IValue got, want = model.forward({x.clone()});
    ASSERT_NO_THROW(got = converted.forward({x.clone()})) << "batch " << batch;
    const auto& g = got.toTupleRef().elements();
    const auto& w = want.toTupleRef().elements();
    ASSERT_EQ(g.size(), w.size());
    for (size_t i = 0; i < g.size(); ++i) {
      EXPECT_EQ(g[i].toTensor().sizes(), w[i].toTensor().sizes()) << "batch " << batch;
      EXPECT_TRUE(at::allclose(g[i].toTensor(), w[i].toTensor(), 1e-4, 1e-4))
          << "batch " << batch << ", output " << i;
    }
  }
  fs::remove_all(out);
}

// float16 computation's rule (--float16, --relax-f32-to-f16): a float output
// that fails element by element passes when rms(nnapi - model) is at most
// float16_roundings x 2^-11 of the model output's RMS; float32 conversions
// (float16_roundings 0) keep the element-by-element rule alone.
// 1000 logits of RMS about 3 and the same plus noise of RMS `share` x theirs.
std::pair<at::Tensor, at::Tensor> noisy_logits(double share) {
  at::manual_seed(3);
  const at::Tensor eager = at::randn({1, 1000}) * 3.0;
  const at::Tensor noise = at::randn({1, 1000});
  const double rms = eager.pow(2).mean().sqrt().item<double>();
  return {eager + noise * (share * rms / noise.pow(2).mean().sqrt().item<double>()), eager};
}

VerifyOptions float16_verify(int64_t roundings) {
  VerifyOptions v;
  v.atol = v.rtol = kFloat16Tolerance;
  v.float16_roundings = roundings;
  return v;
}

TEST(Float16Rule, NoiseWithinTheRmsBoundPasses) {
  const auto [nnapi, eager] = noisy_logits(0.01);  // 20 u, bound 100 u
  const OutputCheck c = compare_output(nnapi, eager, 0, float16_verify(100));
  EXPECT_TRUE(c.ok) << c.problem;
  EXPECT_EQ(c.rule, "float16 rms");
  EXPECT_NEAR(c.rms_rel_err, 0.01, 1e-6);
  EXPECT_DOUBLE_EQ(c.rms_bound, 100.0 / 2048.0);
  EXPECT_NE(format_output_check(0, c).find("of the output's RMS (float16 bound 0.049"),
            std::string::npos)
      << format_output_check(0, c);
}

TEST(Float16Rule, TheSameNoiseFailsElementByElementWithoutIt) {
  const auto [nnapi, eager] = noisy_logits(0.01);
  const OutputCheck c = compare_output(nnapi, eager, 0, float16_verify(0));
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.rule, "elementwise");
  EXPECT_EQ(c.problem.find("RMS"), std::string::npos) << c.problem;
}

TEST(Float16Rule, NoiseOverTheRmsBoundFails) {
  const auto [nnapi, eager] = noisy_logits(0.06);  // bound 100 u = 0.0488
  const OutputCheck c = compare_output(nnapi, eager, 0, float16_verify(100));
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.rule, "float16 rms");
  EXPECT_NE(c.problem.find("and its RMS error is 0.06 of the model output's RMS, over float16 "
                           "computation's bound 0.049 (100 operations x float16's unit "
                           "roundoff 2^-11)"),
            std::string::npos)
      << c.problem;
}

TEST(Float16Rule, WithinTheElementwiseToleranceStaysElementwise) {
  const auto [nnapi, eager] = noisy_logits(1e-4);
  const OutputCheck c = compare_output(nnapi, eager, 0, float16_verify(100));
  EXPECT_TRUE(c.ok) << c.problem;
  EXPECT_EQ(c.rule, "elementwise");
}

// End to end on torchvision's MobileNetV2 at 1x3x64x64
// (tests/verify/make_float16_deep.py in $NNAPI_F16_DEEP_DIR): its --float16
// conversion passes --verify; the conversions of four wrong forms of it,
// verified against it, fail by the RMS rule.
ConvertOptions deep_options(const std::string& model) {
  ConvertOptions o;
  o.model_path = model;
  o.inputs.push_back(parse_input_spec("1x3x64x64"));
  o.float16 = true;
  return o;
}

TEST(Float16Deep, ACorrectConversionPassesAndWrongOnesFail) {
  const char* root = std::getenv("NNAPI_F16_DEEP_DIR");
  ASSERT_TRUE(root) << "NNAPI_F16_DEEP_DIR must name make_float16_deep.py's directory";
  const fs::path dir(root);
  const ConvertOptions deep = deep_options((dir / "deep.pt").string());
  const std::string runtime =
      std::getenv("NNAPI_CONVERT_RUNTIME") ? std::getenv("NNAPI_CONVERT_RUNTIME") : "";
  VerifyOptions verify;
  verify.runtime_library = runtime;
  auto module_of = [&](const std::string& name) {
    const ConvertOptions o = deep_options((dir / (name + ".pt")).string());
    const std::string path = (dir / (name + ".f16.nnapi.pt")).string();
    write_nnapi_module(convert(o), o, path, false);
    return path;
  };
  const VerifyReport right = verify_conversion(deep, module_of("deep"), verify);
  ASSERT_EQ(right.outputs.size(), 1u);
  const OutputCheck& r = right.outputs[0];
  std::cout << "deep: " << format_output_check(0, r) << "\n";
  EXPECT_TRUE(right.ok) << r.problem;
  EXPECT_EQ(r.rule, "float16 rms");  // it fails element by element
  EXPECT_GT(right.float16_roundings, 50);
  EXPECT_DOUBLE_EQ(right.float16_rms_bound, right.float16_roundings / 2048.0);
  for (const char* kind : {"transposed", "padding", "channels", "activation"}) {
    const VerifyReport wrong =
        verify_conversion(deep, module_of(std::string("wrong-") + kind), verify);
    ASSERT_EQ(wrong.outputs.size(), 1u) << kind;
    const OutputCheck& w = wrong.outputs[0];
    std::cout << kind << ": " << format_output_check(0, w) << "\n";
    EXPECT_FALSE(wrong.ok) << kind;
    EXPECT_EQ(w.rule, "float16 rms") << kind;
    EXPECT_GT(w.rms_rel_err, w.rms_bound) << kind;
  }
}

}  // namespace

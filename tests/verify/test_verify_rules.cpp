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

#include "../common/fixtures.h"
#include "nnapi_convert/converter.h"
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

}  // namespace

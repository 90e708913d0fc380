// --quantize's pieces: the observers against PyTorch's, and the proof
// failing on a deliberately wrong scale. The model and its samples are made
// by the fixture verify.quantize_fixture (NNAPI_QUANTIZE_DIR: net.pt, a
// conv + relu, mean, linear model taking 1x3x8x8; samples.pt, 12 samples).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "nnapi_convert/converter.h"
#include "nnapi_convert/writer.h"
#include "quantize/plan.h"
#include "util/output_file.h"

namespace fs = std::filesystem;
using namespace nnapi_convert;

namespace {

// PyTorch's MinMaxObserver(dtype=torch.quint8, qscheme=torch.per_tensor_affine)
// .calculate_qparams() after observing [lo, hi]: the range widened to hold
// 0, scale = (max - min) / 255, zero_point = 0 - round(min / scale) in [0, 255].
TEST(Observer, QParamsAreMinMaxObserversOnes) {
  QParams a = qparams_for_range(-1.0, 3.0);  // torch: scale 0.0156862754, zero_point 64
  EXPECT_FLOAT_EQ(static_cast<float>(a.scale), 4.0f / 255.0f);
  EXPECT_EQ(a.zero_point, 64);
  QParams b = qparams_for_range(0.5, 2.0);  // torch: scale 2/255, zero_point 0
  EXPECT_FLOAT_EQ(static_cast<float>(b.scale), 2.0f / 255.0f);
  EXPECT_EQ(b.zero_point, 0);
  QParams c = qparams_for_range(-2.0, -1.0);  // torch: scale 2/255, zero_point 255
  EXPECT_FLOAT_EQ(static_cast<float>(c.scale), 2.0f / 255.0f);
  EXPECT_EQ(c.zero_point, 255);
}

// The histogram observer trades clipping error for rounding error (the
// expected squared error: clipped values' distance, step^2 / 12 inside). N
// values in [0, 1) and one at 100: with the range [0, b], (100 - b)^2 +
// N (b / 255)^2 / 12 is least at b = 100 / (1 + N / 780300): 7.2 for
// N = 1e7 (the outlier clipped), 88.6 for N = 1e5 (kept: rounding
// everything to a step of 0.39 costs less than moving one value by 99).
// A uniform distribution is not clipped.
TEST(Observer, HistogramMinimizesTheExpectedSquaredError) {
  std::vector<double> counts(1000, 0.0);
  for (int i = 0; i < 10; ++i) counts[i] = 1e6;  // [0, 1) of [0, 100]
  counts[999] = 1;
  auto [lo, hi] = histogram_range(counts, 0.0, 100.0);
  EXPECT_EQ(lo, 0.0);
  EXPECT_NEAR(hi, 7.2, 0.5);
  // (Here clipping the lowest bins, values 0.05 from the edge, costs less
  // than their rounding error at a step of 0.35: the bulk's range and so b
  // move by a few bins.)
  for (int i = 0; i < 10; ++i) counts[i] = 1e4;
  auto [lo2, hi2] = histogram_range(counts, 0.0, 100.0);
  EXPECT_NEAR(hi2, 88.6, 2.0);
  EXPECT_LT(lo2, 1.0);
  std::vector<double> uniform(1000, 100.0);
  auto [ulo, uhi] = histogram_range(uniform, -1.0, 1.0);
  EXPECT_NEAR(ulo, -1.0, 0.01);
  EXPECT_NEAR(uhi, 1.0, 0.01);
}

class Proof : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("NNAPI_QUANTIZE_DIR");
    ASSERT_TRUE(dir) << "set NNAPI_QUANTIZE_DIR to the directory verify.quantize_fixture writes";
    dir_ = dir;
    options_.model_path = (dir_ / "net.pt").string();
    options_.inputs = {parse_input_spec("1x3x8x8")};
    options_.quantize.enabled = true;
    options_.quantize.calibration_file = (dir_ / "samples.pt").string();
    options_.quantize.holdout = 4;
  }
  fs::path dir_;
  ConvertOptions options_;
};

// The proof passes on the module written from the plan; with one
// convolution's output scale changed in the plan afterwards (the module
// keeps the scale it was written with), the check of the lowering (the
// NNAPI module against the quantized graph of the plan) fails.
TEST_F(Proof, FailsOnADeliberatelyWrongScale) {
  Conversion c = convert(options_);
  ASSERT_TRUE(c.quantized);
  ConversionFiles files = write_conversion(c, options_, (dir_ / "net.q.pt").string(), false, "");
  const std::string module = files.module->temp_path();
  nlohmann::ordered_json good = prove_quantization(*c.quantized, options_, module);
  EXPECT_TRUE(good["fake_quant"]["ok"].get<bool>()) << good.dump(1);
  EXPECT_EQ(good["proof_on"], "holdout");

  QuantizedModel wrong = *c.quantized;
  bool changed = false;
  for (NodePlan& p : wrong.nodes) {
    if (p.role == Role::Conv && !changed) {
      p.out.scale *= 1.5;
      changed = true;
    }
  }
  ASSERT_TRUE(changed);
  nlohmann::ordered_json bad = prove_quantization(wrong, options_, module);
  EXPECT_FALSE(bad["fake_quant"]["ok"].get<bool>()) << bad.dump(1);
  EXPECT_FALSE(bad["ok"].get<bool>());
}

}  // namespace

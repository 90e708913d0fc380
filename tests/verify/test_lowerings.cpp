// The lowerings PyTorch's converter does not have, pinned. The reference
// tests cannot see them (the oracle refuses these ops), so each case here
// converts a one-op TorchScript module and checks
//   1. the NNAPI operation sequence against a list written by hand from the
//      decomposition its lowering documents (the formula is stated next to
//      each list; nothing here is produced by the code under test), so that
//      a refactor cannot silently change or grow an expansion;
//   2. the numbers: the converted module, run on the host NNAPI runtime
//      (libneuralnetworks.so), against eager PyTorch on seeded random inputs,
//      with --verify's default tolerances (what `nnapi-convert --verify` does).
// The modules are compiled from the TorchScript source below, so `torch.x`
// is the ATen operator aten::x.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/script.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nnapi_convert/blob.h"
#include "nnapi_convert/converter.h"
#include "nnapi_convert/input_spec.h"
#include "nnapi_convert/nnapi_types.h"
#include "nnapi_convert/validate.h"
#include "nnapi_convert/verify.h"
#include "nnapi_convert/writer.h"

namespace fs = std::filesystem;
using namespace nnapi_convert;

namespace {

struct Case {
  std::string name;  // also the file name stem
  std::string
      source;  // `forward`; buffers self.w, self.b (8), self.mean, self.var, self.cw, self.cb (4)
  std::vector<std::string> inputs;  // --input specs
  int min_android_api = 29;
  std::vector<std::string> ops;  // the expected NNAPI operations, in model order
};

// Where the modules go: lowerings/ in the test's working directory (ctest's:
// the build tree).
fs::path work_dir() {
  fs::path d = fs::current_path() / "lowerings";
  fs::create_directories(d);
  return d;
}

// A module with `source` as its code and a few buffers for the cases to read,
// saved as TorchScript.
std::string save_module(const Case& c) {
  torch::jit::Module m("__torch__.Fixture");
  m.register_attribute("training", c10::BoolType::get(), false);
  m.register_buffer("w", at::linspace(0.5, 1.5, 8));
  m.register_buffer("b", at::linspace(-1.0, 1.0, 8));
  m.register_buffer("mean", at::linspace(-0.5, 0.5, 4));
  m.register_buffer("var", at::linspace(0.5, 2.0, 4));
  m.register_buffer("cw", at::linspace(0.8, 1.2, 4));
  m.register_buffer("cb", at::linspace(-0.3, 0.3, 4));
  m.define(c.source);
  const std::string path = (work_dir() / (c.name + ".pt")).string();
  m.save(path);
  return path;
}

std::vector<std::string> op_names(const Conversion& conv) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(conv.ser_model.data());
  const Blob blob = parse_blob(bytes, conv.ser_model.size() * sizeof(int32_t));
  std::vector<std::string> names;
  for (const BlobOperation& op : blob.operations) {
    const char* name = nnapi::op_name_or_null(op.opcode);
    names.push_back(name ? name : "?");
  }
  return names;
}

// --verify's check of the case: seed 1, --verify-strict (an output a constant
// would pass fails: the check must prove something).
VerifyOptions strict_verify() {
  VerifyOptions verify;
  verify.seed = 1;
  verify.strict = true;
  return verify;
}

void check_case(const Case& c, const VerifyOptions& verify = strict_verify()) {
  ConvertOptions options;
  options.model_path = save_module(c);
  for (const std::string& spec : c.inputs) options.inputs.push_back(parse_input_spec(spec));
  options.min_android_api = c.min_android_api;
  const Conversion conv = convert(options);
  EXPECT_EQ(op_names(conv), c.ops) << c.name;

  const std::string module_path = (work_dir() / (c.name + ".nnapi.pt")).string();
  write_nnapi_module(conv, options, module_path, false);
  const VerifyReport report = verify_conversion(options, module_path, verify);
  ASSERT_FALSE(report.outputs.empty()) << c.name;
  for (size_t i = 0; i < report.outputs.size(); ++i) {
    EXPECT_TRUE(report.outputs[i].ok)
        << c.name << " output " << i << ": " << report.outputs[i].problem;
  }
}

const char* kForward = "def forward(self, x):\n    return ";

Case unary(const std::string& name, const std::string& expr, std::vector<std::string> ops,
           int api = 29, std::string input = "2x8") {
  return {name, kForward + expr + "\n", {std::move(input)}, api, std::move(ops)};
}

}  // namespace

// gelu(x) = x Phi(x) = 0.5 x + 0.5 |x| erf(|x| / sqrt 2) with, for z >= 0,
// erf(z) = 1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) exp(-z^2),
// t = 1 / (1 + p z) (Abramowitz & Stegun 7.1.26), the polynomial by Horner:
// ((((a5 t + a4) t + a3) t + a2) t + a1) t.
const std::vector<std::string> kGeluErfOps = {"ABS",                       // |x|
                                              "MUL",                       // z = |x| / sqrt 2
                                              "MUL", "ADD",                // 1 + p z
                                              "DIV",                       // t
                                              "MUL",                       // a5 t
                                              "ADD", "MUL", "ADD", "MUL",  // (+ a4) t, (+ a3) t
                                              "ADD", "MUL", "ADD", "MUL",  // (+ a2) t, (+ a1) t
                                              "MUL", "NEG", "EXP",         // exp(-z^2)
                                              "MUL", "SUB",  // erf = 1 - poly exp(-z^2)
                                              "MUL",         // 0.5 x
                                              "MUL", "MUL",  // 0.5 |x| erf
                                              "ADD"};        // the sum

TEST(Lowerings, GeluErf) { check_case(unary("gelu", "torch.gelu(x)", kGeluErfOps)); }

// The error docs/families.md states for gelu's erf polynomial (1.5e-7, A&S
// 7.1.26's bound), on 4,097 points of [-6, 6] rather than at --verify's
// default tolerance (1e-4 + 1e-4 |x|): gelu is off from eager by at most
// 0.5 |x| 1.5e-7 (the polynomial), up to 4.5e-7 at |x| = 6, plus float32
// rounding of the result (2^-22 |gelu|, 2 units in the last place): atol
// 4.5e-7, rtol 2.4e-7.
TEST(Lowerings, GeluErfDenseGrid) {
  const fs::path grid = work_dir() / "gelu_grid_input.pt";
  {
    const std::vector<char> bytes =
        torch::jit::pickle_save(at::linspace(-6.0, 6.0, 4097).reshape({1, -1}));
    std::ofstream(grid, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  VerifyOptions verify = strict_verify();
  verify.input_file = grid.string();
  verify.atol = 4.5e-7;
  verify.rtol = 2.4e-7;
  check_case(unary("gelu_grid", "torch.gelu(x)", kGeluErfOps, 29, "1x4097"), verify);
}

// gelu(x, approximate='tanh') = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
TEST(Lowerings, GeluTanh) {
  check_case(unary("gelu_tanh", "torch.gelu(x, approximate='tanh')",
                   {"MUL", "MUL",     // x^3
                    "MUL", "ADD",     // x + 0.044715 x^3
                    "MUL", "TANH",    // tanh(sqrt(2/pi) (...))
                    "ADD",            // 1 + tanh
                    "MUL", "MUL"}));  // 0.5 x, times (1 + tanh)
}

// hardsigmoid(x) = relu6(x + 3) / 6: an ADD with the fused RELU6, a MUL by 1/6.
TEST(Lowerings, Hardsigmoid) {
  check_case(unary("hardsigmoid", "torch.hardsigmoid(x)", {"ADD", "MUL"}));
}

// hardswish(x) = x relu6(x + 3) / 6 before Android 11 (API 30), HARD_SWISH after.
TEST(Lowerings, Hardswish) {
  check_case(unary("hardswish", "torch.hardswish(x)", {"ADD", "MUL", "MUL"}));
  check_case(unary("hardswish_30", "torch.hardswish(x)", {"HARD_SWISH"}, 30));
}

// silu(x) = x sigmoid(x).
TEST(Lowerings, Silu) { check_case(unary("silu", "torch.silu(x)", {"LOGISTIC", "MUL"})); }

// layer_norm over the last dim: m = mean(x), c = x - m, v = mean(c c),
// y = c rsqrt(v + eps), then y w + b.
TEST(Lowerings, LayerNorm) {
  check_case(unary("layer_norm", "torch.layer_norm(x, [8], self.w, self.b, 1e-5, False)",
                   {"MEAN", "SUB",          // c = x - mean(x)
                    "MUL", "MEAN",          // v = mean(c c)
                    "ADD", "RSQRT", "MUL",  // y = c rsqrt(v + eps)
                    "MUL", "ADD"},          // y w + b
                   29, "2x3x8"));
}

// batch_norm with no convolution to fold into: x scale + shift per channel,
// scale = w / sqrt(var + eps), shift = b - mean scale (constants).
TEST(Lowerings, BatchNormAfterNonConv) {
  check_case(unary("batch_norm",
                   "torch.batch_norm(torch.relu(x), self.cw, self.cb, self.mean, self.var, "
                   "False, 0.1, 1e-5, True)",
                   {"RELU", "MUL", "ADD"}, 29, "2x4x5x5"));
}

// Bilinear upsampling: RESIZE_BILINEAR (NNAPI feature level 4: API 30).
TEST(Lowerings, UpsampleBilinear) {
  check_case(unary("upsample_bilinear", "torch.upsample_bilinear2d(x, None, False, [2.0, 2.0])",
                   {"RESIZE_BILINEAR"}, 30, "1x3x4x6"));
}

// Constant padding: PAD fills with zero, PAD_V2 with another value.
TEST(Lowerings, ConstantPad) {
  check_case(
      unary("pad_zero", "torch.constant_pad_nd(x, [1, 2, 3, 0], 0.0)", {"PAD"}, 29, "1x3x4x6"));
  check_case(
      unary("pad_value", "torch.constant_pad_nd(x, [1, 2], 1.5)", {"PAD_V2"}, 29, "1x3x4x6"));
}

// split: one SPLIT for equal parts, one SLICE per part otherwise.
TEST(Lowerings, Split) {
  check_case({"split_equal",
              "def forward(self, x):\n    a, b = torch.split(x, 4, 1)\n    return a, b\n",
              {"2x8"},
              29,
              {"SPLIT"}});
  check_case({"split_unequal",
              "def forward(self, x):\n    a, b, c = torch.split(x, 3, 1)\n    return a, b, c\n",
              {"2x8"},
              29,
              {"SLICE", "SLICE", "SLICE"}});
}

// ShuffleNet's channel shuffle, view(N, g, C/g, H, W) -> transpose(1, 2) ->
// contiguous -> view(N, C, H, W): one CHANNEL_SHUFFLE.
TEST(Lowerings, ChannelShuffle) {
  check_case(unary("channel_shuffle",
                   "x.view(1, 2, 4, 5, 5).transpose(1, 2).contiguous().view(1, 8, 5, 5)",
                   {"CHANNEL_SHUFFLE"}, 29, "1x8x5x5"));
}

namespace {

// The NNAPI operations of `c` converted at --min-android-api `api`.
std::vector<std::string> ops_at(Case c, int api) {
  c.name += "_" + std::to_string(api);
  ConvertOptions options;
  options.model_path = save_module(c);
  for (const std::string& spec : c.inputs) options.inputs.push_back(parse_input_spec(spec));
  options.min_android_api = api;
  return op_names(convert(options));
}

size_t count_of(const std::vector<std::string>& ops, const std::string& name) {
  return static_cast<size_t>(std::count(ops.begin(), ops.end(), name));
}

}  // namespace

// The lowering asks the validator what the target takes: at every
// --min-android-api it emits HARD_SWISH, BATCH_MATMUL and RESIZE_BILINEAR
// with its align_corners / half_pixel_centers flags exactly where
// nnapi_validate::level_with_inputs says the target's feature level has them,
// and moves a bool through float32 (a CAST before RESHAPE, one after) exactly
// where nnapi_validate::accepts says RESHAPE takes no TENSOR_INT32.
TEST(Lowerings, ChoicesFollowTheValidatorAtEveryTarget) {
  using nnapi::Op;
  const Case hardswish = unary("ask_hardswish", "torch.hardswish(x)", {});
  const Case bmm{"ask_bmm",
                 "def forward(self, x, y):\n    return torch.bmm(x, y)\n",
                 {"2x3x5", "2x5x4"},
                 29,
                 {}};
  const Case resize =
      unary("ask_resize", "torch.upsample_bilinear2d(x, [5, 7], True, None)", {}, 29, "1x3x4x6");
  const Case bool_view = unary("ask_bool_view", "(x > 0).view(16)", {});
  for (int api = nnapi::kMinAndroidApi; api <= nnapi::kMaxAndroidApi; ++api) {
    const int level = nnapi::feature_level_of_android_api(api);
    const auto has = [&](Op op, int n_inputs) {
      return nnapi_validate::level_with_inputs(op, n_inputs) <= level ? 1u : 0u;
    };
    EXPECT_EQ(count_of(ops_at(hardswish, api), "HARD_SWISH"), has(Op::HardSwish, 1)) << api;
    EXPECT_EQ(count_of(ops_at(bmm, api), "BATCH_MATMUL"), has(Op::BatchMatmul, 4)) << api;
    EXPECT_EQ(count_of(ops_at(resize, api), "RESIZE_BILINEAR"), has(Op::ResizeBilinear, 6)) << api;
    const bool int32_reshape =
        nnapi_validate::accepts(Op::Reshape, nnapi::OperandType::TensorInt32, level);
    const std::vector<std::string> viewed = ops_at(bool_view, api);
    EXPECT_EQ(count_of(viewed, "RESHAPE"), 1u) << api;
    EXPECT_EQ(count_of(viewed, "CAST"), int32_reshape ? 0u : 2u) << api;
  }
}

// A correction to a rule in src/validate changes the lowering's choices: with
// RESHAPE taking TENSOR_INT32 from level 5 (Android 12, API 31) instead of 6,
// a bool viewed (emit_reshape) or flattened (a kind the driver moves as
// float32, lower/moves.cpp) at API 31 is reshaped as int32, without CASTs.
TEST(Lowerings, ACorrectedValidatorRuleChangesTheLowering) {
  using T = nnapi::OperandType;
  const Case view = unary("fix_bool_view", "(x > 0).view(16)", {});
  const Case flatten = unary("fix_bool_flatten", "(x > 0).flatten()", {});
  EXPECT_EQ(count_of(ops_at(view, 31), "CAST"), 2u);
  EXPECT_EQ(count_of(ops_at(flatten, 31), "CAST"), 2u);
  const nnapi_validate::testing::InputTypesOverride corrected(nnapi::Op::Reshape,
                                                              {{T::TensorFloat32, 1},
                                                               {T::TensorQuant8Asymm, 1},
                                                               {T::TensorFloat16, 3},
                                                               {T::TensorInt32, 5}});
  for (const Case& c : {view, flatten}) {
    const std::vector<std::string> ops = ops_at(c, 31);
    EXPECT_EQ(count_of(ops, "CAST"), 0u) << c.name;
    EXPECT_EQ(count_of(ops, "RESHAPE"), 1u) << c.name;
  }
  EXPECT_EQ(count_of(ops_at(view, 30), "CAST"), 2u);  // level 4: still below 5
}

// ---- --float16 (src/core/float16.h): what NeuralNetworks.h states of a
// TENSOR_FLOAT16 model, checked on the blob, and the numbers against eager
// PyTorch at float16's tolerance.
namespace {

Conversion convert_float16(const Case& c, ConvertOptions* options, bool io = false) {
  options->model_path = save_module(c);
  for (const std::string& spec : c.inputs) options->inputs.push_back(parse_input_spec(spec));
  options->float16 = true;
  options->float16_io = io;
  return convert(*options);
}

Blob blob_of(const Conversion& conv) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(conv.ser_model.data());
  return parse_blob(bytes, conv.ser_model.size() * sizeof(int32_t));
}

// A linear map, tanh, a product by a constant and softmax
// (its beta scalar: NeuralNetworks.h's SOFTMAX takes a FLOAT16 beta with a
// TENSOR_FLOAT16 input).
const Case kFloat16Case =
    unary("fp16_mix", "torch.softmax(torch.tanh(x * self.w + self.b) * 3.0, 1)", {});

}  // namespace

TEST(Float16, TheModelComputesInFloat16BetweenCasts) {
  using T = nnapi::OperandType;
  ConvertOptions options;
  const Conversion conv = convert_float16(kFloat16Case, &options);
  const Blob blob = blob_of(conv);
  ASSERT_EQ(blob.inputs.size(), 1u);
  ASSERT_EQ(blob.outputs.size(), 1u);
  // The module's input and output stay float32, CAST first and last.
  EXPECT_EQ(blob.operands[blob.inputs[0]].type, T::TensorFloat32);
  EXPECT_EQ(blob.operands[blob.outputs[0]].type, T::TensorFloat32);
  ASSERT_GE(blob.operations.size(), 3u);
  const BlobOperation& first = blob.operations.front();
  const BlobOperation& last = blob.operations.back();
  EXPECT_EQ(first.opcode, static_cast<int32_t>(nnapi::Op::Cast));
  EXPECT_EQ(first.inputs, std::vector<uint32_t>{blob.inputs[0]});
  EXPECT_EQ(blob.operands[first.outputs[0]].type, T::TensorFloat16);
  EXPECT_EQ(last.opcode, static_cast<int32_t>(nnapi::Op::Cast));
  EXPECT_EQ(last.outputs, std::vector<uint32_t>{blob.outputs[0]});
  // No other float32 tensor, no FLOAT32 scalar read by an operation.
  for (size_t k = 0; k < blob.operands.size(); ++k) {
    if (k == blob.inputs[0] || k == blob.outputs[0]) continue;
    EXPECT_NE(blob.operands[k].type, T::TensorFloat32) << "operand " << k;
  }
  bool softmax = false;
  for (const BlobOperation& op : blob.operations) {
    for (uint32_t in : op.inputs) EXPECT_NE(blob.operands[in].type, T::Float32) << op.opcode;
    if (op.opcode == static_cast<int32_t>(nnapi::Op::Softmax)) {
      softmax = true;
      EXPECT_EQ(blob.operands[op.inputs[1]].type, T::Float16);
    }
  }
  EXPECT_TRUE(softmax);
  // The weights are float16: w and b, rounded to nearest as PyTorch's half.
  ASSERT_FALSE(conv.weights.empty());
  for (const at::Tensor& w : conv.weights) EXPECT_EQ(w.scalar_type(), at::kHalf);
  EXPECT_GE(conv.feature_level, 3);

  const std::string module_path = (work_dir() / "fp16_mix.nnapi.pt").string();
  write_nnapi_module(conv, options, module_path, false);
  const VerifyReport report = verify_conversion(options, module_path, strict_verify());
  EXPECT_DOUBLE_EQ(report.atol, kFloat16Tolerance);
  ASSERT_EQ(report.outputs.size(), 1u);
  EXPECT_TRUE(report.outputs[0].ok) << report.outputs[0].problem;
}

// --float16-io: the NNAPI output is TENSOR_FLOAT16 and the module returns
// torch.half; it takes torch.half.
TEST(Float16, FloatSixteenInputsAndOutputs) {
  ConvertOptions options;
  const Conversion conv = convert_float16(kFloat16Case, &options, /*io=*/true);
  const Blob blob = blob_of(conv);
  EXPECT_EQ(blob.operands[blob.outputs[0]].type, nnapi::OperandType::TensorFloat16);
  const std::string module_path = (work_dir() / "fp16_io.nnapi.pt").string();
  write_nnapi_module(conv, options, module_path, false);
  at::manual_seed(5);
  const at::Tensor x = at::randn({2, 8}).to(at::kHalf);
  const std::vector<at::Tensor> out = run_converted(module_path, {x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].scalar_type(), at::kHalf);
  const at::Tensor w = at::linspace(0.5, 1.5, 8), b = at::linspace(-1.0, 1.0, 8);
  const at::Tensor eager = at::softmax(at::tanh(x.to(at::kFloat) * w + b) * 3.0, 1);
  EXPECT_TRUE(at::allclose(out[0].to(at::kFloat), eager, kFloat16Tolerance, kFloat16Tolerance))
      << (out[0].to(at::kFloat) - eager).abs().max().item<double>();
  const VerifyReport report = verify_conversion(options, module_path, strict_verify());
  ASSERT_EQ(report.outputs.size(), 1u);
  EXPECT_TRUE(report.outputs[0].ok) << report.outputs[0].problem;
}

// An operation the validator says takes no TENSOR_FLOAT16 (here RESHAPE, by a
// rule corrected to drop it) is refused, naming the node it came from.
TEST(Float16, AnOperationWithoutAFloat16FormIsRefusedNamingItsNode) {
  using T = nnapi::OperandType;
  const Case c = unary("fp16_view", "(x * 2.0).view(16)", {});
  {
    ConvertOptions options;
    EXPECT_NO_THROW(convert_float16(c, &options));
  }
  const nnapi_validate::testing::InputTypesOverride corrected(
      nnapi::Op::Reshape, {{T::TensorFloat32, 1}, {T::TensorQuant8Asymm, 1}});
  ConvertOptions options;
  try {
    convert_float16(c, &options);
    ADD_FAILURE() << "converted";
  } catch (const ConvertError& e) {
    EXPECT_EQ(e.exit_code(), 1);
    EXPECT_EQ(e.node(), "aten::view");
    const std::string what = e.what();
    EXPECT_NE(what.find("RESHAPE"), std::string::npos) << what;
    EXPECT_NE(what.find("TENSOR_FLOAT16"), std::string::npos) << what;
    EXPECT_NE(what.find("without --float16"), std::string::npos) << what;
  }
}

// Byte-exactness against PyTorch's own NNAPI converter (the oracle).
//
// Each fixture directory (made by tools/make_fixtures.py, layout in
// tests/reference/README.md) holds a traced model, the --input specs, and
// what torch.backends._nnapi produced for it. For every case that the
// reference converts, nnapi-convert must produce the same blob bytes, the
// same weights (dtype, shape, strides, values, quantization), the same
// memory formats and shape-compute lines, and its shape-compute script must
// have the same effect on ser_model and return the same output templates.
// Where the reference refuses, nnapi-convert must either refuse (exit status
// 1) with a message that matches the reference test's regex and names the
// node, or convert, and then the converted module, run on the host NNAPI
// runtime, must match eager PyTorch; cases marked must_convert (operations
// the reference has no lowering for) must convert. Where the reference is
// known to be wrong (kKnownReferenceBugs), the bytes differ on purpose and the
// same numeric check applies instead. Numeric checks use --verify's rules
// (compare_output) and fail when a constant output would have passed them.
// The case's options (case.json "options": --preference,
// --relax-f32-to-f16, --int16-for-qint16, --return-shape,
// --min-android-api) are given to both converters.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "../common/fixtures.h"
#include "nnapi_convert/blob.h"
#include "nnapi_convert/converter.h"
#include "nnapi_convert/nnapi_types.h"
#include "nnapi_convert/verify.h"

namespace fs = std::filesystem;
using namespace nnapi_convert;

namespace {

using fixtures::load_tensors;
using fixtures::read_bytes;
using fixtures::read_json;

// Same dtype, sizes, strides, quantization and values.
void expect_same_tensor(const at::Tensor& ours, const at::Tensor& ref, const std::string& what,
                        bool check_strides) {
  ASSERT_EQ(ours.scalar_type(), ref.scalar_type()) << what;
  ASSERT_EQ(ours.sizes(), ref.sizes()) << what;
  if (check_strides) {
    EXPECT_EQ(ours.strides(), ref.strides()) << what;
  }
  if (ref.is_quantized()) {
    EXPECT_EQ(ours.q_scale(), ref.q_scale()) << what;
    EXPECT_EQ(ours.q_zero_point(), ref.q_zero_point()) << what;
    EXPECT_TRUE(at::equal(ours.int_repr(), ref.int_repr())) << what << ": values differ";
  } else {
    EXPECT_TRUE(at::equal(ours, ref)) << what << ": values differ";
  }
}

void expect_same_words(const std::vector<int32_t>& ours, const std::vector<char>& ref_bytes,
                       const std::string& what) {
  ASSERT_EQ(ours.size() * 4, ref_bytes.size()) << what << ": length differs";
  const int32_t* ref = reinterpret_cast<const int32_t*>(ref_bytes.data());
  for (size_t i = 0; i < ours.size(); ++i) {
    ASSERT_EQ(ours[i], ref[i]) << what << ": first difference at int32 word " << i;
  }
}

std::vector<int32_t> words_of(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  return std::vector<int32_t>(c.data_ptr<int32_t>(), c.data_ptr<int32_t>() + c.numel());
}

// Cases where the reference's output is wrong, so byte-identity is not the goal.
const std::map<std::string, std::string> kKnownReferenceBugs = {
    {"tv-googlenet-nchw", "the reference ignores max_pool2d ceil_mode (55x55 instead of 56x56)"},
    {"tv-googlenet-nhwc", "the reference ignores max_pool2d ceil_mode (55x55 instead of 56x56)"},
};

// Same, for every case whose name starts with one of these.
const std::map<std::string, std::string> kKnownReferenceBugPrefixes = {
    {"beyond-pad-avg_pool2d-",
     "the reference hands avg_pool2d's padding to AVERAGE_POOL_2D, which leaves padded cells out "
     "of the count; PyTorch's count_include_pad counts them"},
    {"beyond-flexhw-avg_pool2d-ceil-pad-",
     "the reference ignores avg_pool2d's ceil_mode (a smaller output at some sizes) and hands "
     "its padding to AVERAGE_POOL_2D, which leaves padded cells out of the count"},
    {"beyond-softmax-4d-nhwc",
     "the reference passes softmax's PyTorch dim as the NNAPI axis, which is another dim of NHWC "
     "data"},
    {"beyond-conv_transpose2d-output_padding-",
     "the reference ignores a transposed convolution's output_padding: its output is smaller "
     "than PyTorch's"},
    {"beyond-dims-slice-",
     "the reference indexes STRIDED_SLICE's begins, ends, strides and masks by PyTorch dim, "
     "which slices other axes of NHWC data"},
    {"beyond-ghost-slice-float-nhwc", "as beyond-dims-slice-"},
    {"beyond-ghost-slice-flex-batch-nhwc", "as beyond-dims-slice-"},
    {"beyond-dims-softmax-", "as beyond-softmax-4d-nhwc"},
    {"beyond-int32-slice-batch",
     "the reference slices int32 data with STRIDED_SLICE, which takes no TENSOR_INT32 "
     "(NeuralNetworks.h), and takes x[::2] for the whole dim"},
    {"beyond-qmean-",
     "the reference lowers a quantized mean over any dims to one MEAN, whose rounding "
     "NeuralNetworks.h leaves to the driver; eager rounds a mean over dims other than (2, 3) "
     "otherwise (stored values averaged and rounded half to even, or dequantized, averaged in "
     "float32 and quantized), so ties come out a quantum off"},
    {"beyond-rank0-",
     "the reference declares a rank-0 output operand, whose dimensions PyTorch's NNAPI binding "
     "cannot read back (Execution_getOutputOperandDimensions fails)"},
    {"beyond-upsample_nearest-1.7-",
     "the reference maps output pixels as NNAPI's RESIZE_NEAREST_NEIGHBOR does, by in / out, "
     "where PyTorch maps them by 1 / scale_factor"},
    {"beyond-upsample_nearest-0.6-", "as beyond-upsample_nearest-1.7-"},
    {"beyond-cat-flex-inputs-",
     "the reference declares a cat's size along a flexible dim as its fixed parts' sum, a "
     "load-time size counting 0: smaller than eager's"},
    {"flatten-",
     "the reference hands a rank-5 input to NNAPI, whose RESHAPE takes rank 4 at most "
     "(NeuralNetworks.h); the converted module merges its leading dims first"},
};

// The highest rank of a tensor operand of a serialized model.
size_t max_rank(const uint8_t* bytes, size_t size) {
  size_t rank = 0;
  for (const auto& o : parse_blob(bytes, size).operands) rank = std::max(rank, o.dims.size());
  return rank;
}

// Every tensor operand of what nnapi-convert wrote has rank 1 to 4: NNAPI's
// operations take rank 4 at most (NeuralNetworks.h: ADD, RESHAPE, TRANSPOSE,
// STRIDED_SLICE, CONCATENATION and the like take "up to 4"), and it has no
// rank-0 tensors (its scalar results, MEAN or SQUEEZE of every dim, have
// shape [1]; PyTorch's binding cannot read back a rank-0 output). The host
// runtime runs such operands all the same, so this is checked here.
void expect_ranks_1_to_4(const Conversion& c, const std::string& name) {
  const Blob b =
      parse_blob(reinterpret_cast<const uint8_t*>(c.ser_model.data()), c.ser_model.size() * 4);
  for (size_t i = 0; i < b.operands.size(); ++i) {
    if (!nnapi::is_tensor_type(b.operands[i].type)) continue;
    EXPECT_LE(b.operands[i].dims.size(), 4u) << name << ": operand " << i;
    EXPECT_GE(b.operands[i].dims.size(), 1u) << name << ": operand " << i;
  }
}

const std::string* known_reference_bug(const std::string& name) {
  auto bug = kKnownReferenceBugs.find(name);
  if (bug != kKnownReferenceBugs.end()) return &bug->second;
  for (const auto& [prefix, why] : kKnownReferenceBugPrefixes) {
    if (name.rfind(prefix, 0) == 0) return &why;
  }
  return nullptr;
}

// Runs the converted module on the host runtime (found through
// LD_LIBRARY_PATH) on the fixture's args and compares with eager.pt by
// --verify's rules, with the case's tolerance (fixtures::tolerance_for:
// test_nnapi.py's for its cases, torch.testing's float32 defaults for the
// others; quantized outputs: the same scale and zero point, none off by more
// than one quantum, at most 3% off by one). Every output must be one a
// constant output would fail.
void expect_runs_like_eager(const fs::path& dir, const nlohmann::json& cs, const ConvertOptions& o,
                            const std::string& module_path) {
  const std::string name = cs.at("name").get<std::string>();
  const VerifyOptions tol = fixtures::tolerance_for(cs, load_tensors(dir / "eager.pt"));
  std::vector<OutputCheck> results = fixtures::compare_with_eager(dir, module_path, o, tol);
  fixtures::MeaningfulChecks checks(name);
  for (size_t i = 0; i < results.size(); ++i) {
    std::cout << "[ numbers  ] " << name << " " << format_output_check(i, results[i]) << "\n";
    checks.add(i, "output " + std::to_string(i), results[i]);
  }
  checks.finish();
}

void check_refused(const fs::path& dir, const nlohmann::json& cs) {
  ConvertOptions o = fixtures::convert_options(dir, cs);
  try {
    Conversion c = convert(o);
    // Converted where the reference refuses: prove it on the runtime.
    fs::path out = fixtures::unique_temp_path("ref-" + cs.at("name").get<std::string>() + ".pt");
    write_nnapi_module(c, o, out.string(), false);
    expect_runs_like_eager(dir, cs, o, out.string());
    fs::remove(out);
    expect_ranks_1_to_4(c, cs.at("name").get<std::string>());
  } catch (const ConvertError& e) {
    std::string msg = e.what();
    EXPECT_FALSE(cs.contains("must_convert") && cs.at("must_convert").get<bool>())
        << "a case nnapi-convert must convert was refused: " << msg;
    EXPECT_EQ(e.exit_code(), 1) << msg;
    EXPECT_NE(msg.find("node "), std::string::npos) << "message does not name the node: " << msg;
    if (cs.at("error_regex").is_string()) {
      std::regex re(cs.at("error_regex").get<std::string>(), std::regex::icase);
      EXPECT_TRUE(std::regex_search(msg, re))
          << "message does not match the reference test's /"
          << cs.at("error_regex").get<std::string>() << "/: " << msg;
    }
  }
}

void check_converted(const fs::path& dir, const nlohmann::json& cs) {
  ConvertOptions o = fixtures::convert_options(dir, cs);
  Conversion c = convert(o);
  expect_ranks_1_to_4(c, cs.at("name").get<std::string>());
  const fs::path ref = dir / "ref";
  if (const std::string* bug = known_reference_bug(cs.at("name").get<std::string>())) {
    fs::path out = fixtures::unique_temp_path("ref-" + cs.at("name").get<std::string>() + ".pt");
    write_nnapi_module(c, o, out.string(), false);
    expect_runs_like_eager(dir, cs, o, out.string());
    fs::remove(out);
    std::vector<char> ref_bytes = read_bytes(ref / "ser_model.bin");
    // Where the reference's own module was kept (every case but the
    // torchvision ones other than googlenet), it must show the bug: an operand
    // NNAPI rejects (rank > 4; the host runtime runs it all the same), a model
    // the runtime's validator refuses at ANeuralNetworksModel_finish
    // (BAD_DATA: NeuralNetworks.h's rules broken, e.g. a rank-0 model output
    // or a STRIDED_SLICE whose declared shape is not what it computes), or
    // values other than eager's by the same rules.
    const size_t ref_rank =
        max_rank(reinterpret_cast<const uint8_t*>(ref_bytes.data()), ref_bytes.size());
    if (ref_rank > 4) {
      // (ours is checked by expect_ranks_1_to_4 above)
    } else if (fs::exists(ref / "converted.pt")) {
      const VerifyOptions tol = fixtures::tolerance_for(cs, load_tensors(dir / "eager.pt"));
      bool all_ok = true;
      try {
        for (const OutputCheck& r :
             fixtures::compare_with_eager(dir, (ref / "converted.pt").string(), o, tol)) {
          all_ok = all_ok && r.ok;
        }
      } catch (const std::exception& e) {
        const std::string msg = e.what();
        // The runtime's validator refuses an operation's types when it is
        // added, the rest when the model is finished.
        EXPECT_TRUE(std::regex_search(msg, std::regex("ANeuralNetworksModel_(finish|addOperation) "
                                                      "returned ANEURALNETWORKS_BAD_DATA")))
            << "the reference's module failed otherwise than by the validator's refusal: " << msg;
        std::cout << "[ ref bug  ] " << cs.at("name").get<std::string>()
                  << ": the runtime refuses the reference's module: " << msg << "\n";
        all_ok = false;
      }
      EXPECT_FALSE(all_ok) << "the reference's module matches eager, though " << *bug;
    } else {
      EXPECT_EQ(cs.at("source").get<std::string>(), "torchvision")
          << "the reference's module was not kept";
    }
    bool same = ref_bytes.size() == c.ser_model.size() * 4 &&
                std::memcmp(ref_bytes.data(), c.ser_model.data(), ref_bytes.size()) == 0;
    EXPECT_FALSE(same) << "identical to the reference again, though " << *bug
                       << ": update kKnownReferenceBugs";
    return;
  }

  // The blob.
  expect_same_words(c.ser_model, read_bytes(ref / "ser_model.bin"), "ser_model");

  // The weights, as the serializer hands them over (NHWC views included).
  std::vector<at::Tensor> ref_weights = load_tensors(ref / "weights.pt");
  ASSERT_EQ(c.weights.size(), ref_weights.size()) << "weight count";
  for (size_t i = 0; i < ref_weights.size(); ++i) {
    expect_same_tensor(c.weights[i], ref_weights[i], "weight " + std::to_string(i), true);
  }

  // Memory formats, return count and the shape-compute script's text.
  nlohmann::json manifest = read_json(ref / "manifest.json");
  EXPECT_EQ(c.inp_mem_fmts, manifest.at("inp_mem_fmts").get<std::vector<int64_t>>());
  EXPECT_EQ(c.out_mem_fmts, manifest.at("out_mem_fmts").get<std::vector<int64_t>>());
  EXPECT_EQ(c.retval_count, manifest.at("retval_count").get<int>());
  EXPECT_EQ(prepare_lines(c, false),
            manifest.at("shape_compute_lines").get<std::vector<std::string>>());
  EXPECT_EQ(c.operand_count, manifest.at("operand_count").get<int64_t>());
  EXPECT_EQ(c.operation_count, manifest.at("operation_count").get<int64_t>());

  // The written module: the shape-compute script's effect on run-time args.
  fs::path out = fixtures::unique_temp_path("ref-" + cs.at("name").get<std::string>());
  fs::create_directories(out);
  write_nnapi_module(c, o, (out / "m.nnapi.pt").string(), false);
  write_parts(c, o, (out / "parts").string());
  torch::jit::Module wrapper = torch::jit::load((out / "m.nnapi.pt").string());
  torch::jit::Module mod = wrapper.attr("mod").toModule();
  torch::jit::Module shape = mod.attr("shape_compute_module").toModule();
  at::Tensor ser = mod.attr("ser_model").toTensor().clone();
  c10::List<at::Tensor> args;
  for (const at::Tensor& t : load_tensors(dir / "args.pt")) args.push_back(t);
  c10::IValue templates = shape.get_method("prepare")({ser, args});
  expect_same_words(words_of(ser), read_bytes(ref / "prepared_ser_model.bin"),
                    "ser_model after prepare");
  std::vector<at::Tensor> ref_templates = load_tensors(ref / "out_templates.pt");
  const auto ours = templates.toTensorVector();
  ASSERT_EQ(ours.size(), ref_templates.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    expect_same_tensor(ours[i], ref_templates[i], "output template " + std::to_string(i), false);
  }

  // The module's attributes have the reference module's names and types, so
  // an app that loads the reference's output can load ours; the compilation
  // options it hands NNAPI have its values (the defaults, or the case's
  // --preference / --relax-f32-to-f16).
  if (fs::exists(ref / "converted.pt")) {
    torch::jit::Module ref_mod = torch::jit::load((ref / "converted.pt").string());
    for (const char* attr : {"compilation_preference", "relax_f32_to_f16"}) {
      EXPECT_EQ(mod.attr(attr), ref_mod.attr("mod").toModule().attr(attr)) << "attribute " << attr;
    }
    auto ref_type = ref_mod.attr("mod").toModule().type();
    auto our_type = mod.type();
    for (size_t i = 0; i < ref_type->numAttributes(); ++i) {
      const std::string& name = ref_type->getAttributeName(i);
      ASSERT_TRUE(our_type->hasAttribute(name)) << "missing attribute " << name;
      if (name == "shape_compute_module") continue;  // a class of its own in each
      EXPECT_EQ(our_type->getAttribute(name)->annotation_str(),
                ref_type->getAttribute(i)->annotation_str())
          << "attribute " << name;
    }
    for (const char* method : {"forward", "init"}) {
      EXPECT_TRUE(mod.find_method(method).has_value()) << "missing method " << method;
    }
  }

  // --parts round-trips: the blob and a weights.pt that torch.load reads.
  auto part_blob = read_bytes(out / "parts" / "ser_model.bin");
  expect_same_words(c.ser_model, part_blob, "parts/ser_model.bin");
  std::vector<at::Tensor> part_weights = load_tensors(out / "parts" / "weights.pt");
  ASSERT_EQ(part_weights.size(), ref_weights.size());
  for (size_t i = 0; i < ref_weights.size(); ++i) {
    expect_same_tensor(part_weights[i], ref_weights[i], "parts weight " + std::to_string(i), false);
  }
  fs::remove_all(out);
}

// A case nnapi-convert must refuse whatever the reference does (it converts
// some of them into modules that return wrong values or dtypes): exit 1, the
// node named, the message matching the case's regex.
void check_must_refuse(const fs::path& dir, const nlohmann::json& cs) {
  ConvertOptions o = fixtures::convert_options(dir, cs);
  try {
    convert(o);
    ADD_FAILURE() << "converted a model nnapi-convert must refuse";
  } catch (const ConvertError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.exit_code(), 1) << msg;
    EXPECT_NE(msg.find("node "), std::string::npos) << "message does not name the node: " << msg;
    std::regex re(cs.at("error_regex").get<std::string>());
    EXPECT_TRUE(std::regex_search(msg, re))
        << "message does not match /" << cs.at("error_regex").get<std::string>() << "/: " << msg;
  }
}

class ReferenceCase : public testing::Test {
 public:
  explicit ReferenceCase(fs::path dir) : dir_(std::move(dir)) {}
  void TestBody() override {
    nlohmann::json cs = read_json(dir_ / "case.json");
    if (cs.value("must_refuse", false)) {
      check_must_refuse(dir_, cs);
    } else if (cs.at("expect").get<std::string>() == "refused") {
      check_refused(dir_, cs);
    } else {
      check_converted(dir_, cs);
    }
  }

 private:
  fs::path dir_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const char* root = std::getenv("NNAPI_FIXTURES_DIR");
  if (!root || !fs::is_directory(root)) {
    std::cerr << "NNAPI_FIXTURES_DIR must name a directory made by tools/make_fixtures.py\n";
    return 1;
  }
  std::vector<fs::path> dirs = fixtures::case_dirs(root);
  if (dirs.empty()) {
    std::cerr << "no fixtures in " << root << "\n";
    return 1;
  }
  fixtures::register_cases("Reference", dirs,
                           [](const fs::path& d) { return new ReferenceCase(d); });
  return RUN_ALL_TESTS();
}

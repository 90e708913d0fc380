// nnapi-convert: the command line. Parses arguments, calls the library,
// reports errors as one paragraph with exit status 1 (model) or 2 (usage).
#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>

#include "nnapi_convert/converter.h"
#include "nnapi_convert/inspect.h"
#include "nnapi_convert/verify.h"

namespace fs = std::filesystem;
using namespace nnapi_convert;

namespace {

struct Args {
  std::vector<std::string> models;
  std::vector<std::string> input_specs;
  std::vector<std::string> return_shapes;
  std::string output;
  std::string out_dir;
  std::string parts;
  std::string preference = "sustained-speed";
  bool nhwc = false;
  bool int16 = false;
  bool relax = false;
  bool lite = false;
  bool timings = false;
  bool verbose = false;
  bool quiet = false;
  bool verify = false;
  std::vector<std::string> verify_shapes;
  double atol = 1e-4;
  double rtol = 1e-4;
};

std::vector<int64_t> parse_return_shape(const std::string& text) {
  std::vector<int64_t> dims;
  size_t start = 0;
  while (true) {
    size_t pos = text.find('x', start);
    std::string d = text.substr(start, pos == std::string::npos ? std::string::npos : pos - start);
    char* end = nullptr;
    long long v = std::strtoll(d.c_str(), &end, 10);
    if (d.empty() || *end != '\0' || v < -1 || v > 2147483647) {
      throw ConvertError(2, "--return-shape '" + text + "': '" + d +
                                "' is not a dimension; write sizes joined by x, 0 for a size "
                                "fixed at load time and -1 for one known only at run time, "
                                "e.g. 1x8x0x0");
    }
    dims.push_back(v);
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return dims;
}

std::string default_output(const std::string& model, const std::string& out_dir) {
  fs::path p(model);
  fs::path out = p.stem();
  out += ".nnapi.pt";
  if (!out_dir.empty()) return (fs::path(out_dir) / out).string();
  return (p.parent_path() / out).string();
}

// --verify: the parsed options (throws ConvertError(2) on a bad --verify-shape).
VerifyOptions verify_options(const Args& a) {
  VerifyOptions v;
  for (const std::string& s : a.verify_shapes) v.shapes.push_back(parse_verify_shape(s));
  v.atol = a.atol;
  v.rtol = a.rtol;
  return v;
}

// --verify after a successful conversion: one line per output on stdout,
// exit status 1 with one paragraph when an output is past the tolerances.
int run_verify(const Args& a, const ConvertOptions& options, const std::string& out) {
  VerifyReport r = verify_conversion(options, out, verify_options(a));
  spdlog::debug("verify: runtime {}", r.runtime_library);
  std::string shapes;
  for (const auto& s : r.shapes) {
    std::string d;
    for (int64_t v : s) d += (d.empty() ? "" : "x") + std::to_string(v);
    shapes += (shapes.empty() ? "" : ", ") + (s.empty() ? std::string("scalar") : d);
  }
  if (!a.quiet) {
    std::cout << options.model_path << ": verify on inputs " << shapes << "\n";
    for (size_t i = 0; i < r.outputs.size(); ++i) {
      std::cout << "  " << format_output_check(i, r.outputs[i]) << "\n";
    }
    std::cout.flush();
  }
  if (r.ok) return 0;
  std::string why;
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    if (!r.outputs[i].ok) why += " Output " + std::to_string(i) + ": " + r.outputs[i].problem + ".";
  }
  spdlog::error(
      "model '{}': the converted module '{}' does not match the model on seeded random "
      "inputs of shape {} (float outputs: |nnapi - model| <= atol {} + rtol {} * |model|; "
      "quantized: at most 3% of elements off by one quantum, none by more).{}",
      options.model_path, out, shapes, a.atol, a.rtol, why);
  return 1;
}

int convert_one(const Args& a, const std::string& model, ConvertOptions options) {
  options.model_path = model;
  std::string out = a.output.empty() ? default_output(model, a.out_dir) : a.output;
  Conversion c = convert(options);
  auto t0 = std::chrono::steady_clock::now();
  if (!a.parts.empty()) write_parts(c, options, a.parts);
  write_nnapi_module(c, options, out, a.lite);
  c.times.write_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info("{} -> {} ({} operands, {} operations, {} weight bytes)", model, out,
               c.operand_count, c.operation_count, c.weight_bytes);
  if (a.timings) {
    spdlog::info("timings (ms): load {:.2f}, freeze {:.2f}, lower {:.3f}, serialize {:.3f}, "
                 "write {:.2f}",
                 c.times.load_ms, c.times.freeze_ms, c.times.lower_ms, c.times.serialize_ms,
                 c.times.write_ms);
  }
  if (a.verify) return run_verify(a, options, out);
  return 0;
}

// `nnapi-convert inspect FILE [--json]`: what the device will see.
int run_inspect(int argc, char** argv) {
  std::string file;
  bool json = false;
  CLI::App app{"Print the NNAPI model inside a .nnapi.pt or ser_model.bin, checked as strictly "
               "as PyTorch's on-device loader checks it.",
               "nnapi-convert inspect"};
  app.add_option("file", file, ".nnapi.pt module or raw ser_model.bin")->required();
  app.add_flag("--json", json, "Print one JSON object");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "nnapi-convert inspect: " << e.what() << "\n";
    return 2;
  }
  return inspect_main(file, json, std::cout, std::cerr);
}

int run(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "inspect") return run_inspect(argc - 1, argv + 1);
  Args a;
  CLI::App app{"Convert TorchScript models to Android NNAPI models, as PyTorch's "
               "convert_model_to_nnapi does, in one native binary.",
               "nnapi-convert"};
  app.set_version_flag("--version", std::string("nnapi-convert ") + NNAPI_CONVERT_VERSION);
  app.add_option("models", a.models, "TorchScript model file(s) (torch.jit.save)")->required();
  app.add_option("--input", a.input_specs,
                 "One per model input, in order: DIMS[,dtype=float32|int32|quint8|int16]"
                 "[,scale=S][,zero_point=Z][,nhwc]; DIMS like 1x3x224x224, 0 = flexible")
      ->required();
  app.add_flag("--nhwc", a.nhwc, "Every 4-D input is channels-last (NHWC)");
  app.add_option("-o,--output", a.output, "Output file (default: <model>.nnapi.pt beside it)");
  app.add_option("--out-dir", a.out_dir, "Directory for outputs (several models)");
  app.add_option("--parts", a.parts,
                 "Also write ser_model.bin, weights.pt, shape_compute.py, manifest.json here");
  app.add_flag("--lite", a.lite, "Also write <output>.ptl for the lite interpreter");
  app.add_flag("--int16-for-qint16", a.int16, "int16 inputs carry NNAPI qint16 values");
  app.add_option("--preference", a.preference, "NNAPI compilation preference")
      ->check(CLI::IsMember({"low-power", "fast-single-answer", "sustained-speed"}));
  app.add_flag("--relax-f32-to-f16", a.relax, "Allow NNAPI to compute float32 as float16");
  app.add_option("--return-shape", a.return_shapes,
                 "Per output: its shape (x-joined, -1 = run-time size)");
  auto* verify = app.add_flag(
      "--verify", a.verify,
      "After converting, run the model and the converted module (on the host NNAPI runtime) on "
      "seeded random inputs and print each output's max error; exit 1 past the tolerances: "
      "float |nnapi - model| <= atol + rtol * |model| everywhere; quantized (and dequantized) "
      "outputs at most 3% of elements off by one quantum, none by more. The runtime is "
      "<dir of nnapi-convert>/runtime/libneuralnetworks.so, else $NNAPI_CONVERT_RUNTIME, else "
      "found on LD_LIBRARY_PATH");
  app.add_option("--verify-shape", a.verify_shapes,
                 "With --verify, once per input: its run-time size, e.g. 1x3x320x240 (default "
                 "for flexible dims: 1 for dim 0, 224 for H and W of 4-D inputs, 8 otherwise)")
      ->needs(verify);
  app.add_option("--atol", a.atol, "With --verify: absolute tolerance (default 1e-4)")
      ->check(CLI::NonNegativeNumber)
      ->needs(verify);
  app.add_option("--rtol", a.rtol, "With --verify: relative tolerance (default 1e-4)")
      ->check(CLI::NonNegativeNumber)
      ->needs(verify);
  app.add_flag("--timings", a.timings, "Print the time of each phase");
  app.add_flag("-v,--verbose", a.verbose, "More output");
  app.add_flag("-q,--quiet", a.quiet, "Errors only");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "nnapi-convert: " << e.what() << "\nRun nnapi-convert --help for usage.\n";
    return 2;
  }
  spdlog::set_level(a.quiet ? spdlog::level::err
                            : a.verbose ? spdlog::level::debug : spdlog::level::info);

  ConvertOptions options;
  try {
    if (a.models.size() > 1 && !a.output.empty()) {
      throw ConvertError(2, "-o names one output file, but " + std::to_string(a.models.size()) +
                                " models were given; use --out-dir for several models");
    }
    for (const std::string& s : a.input_specs) options.inputs.push_back(parse_input_spec(s));
    for (const std::string& s : a.return_shapes) {
      options.return_shapes.push_back(parse_return_shape(s));
    }
    if (a.verify) verify_input_shapes(options.inputs, verify_options(a));  // usage errors first
  } catch (const SpecError& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const ConvertError& e) {
    spdlog::error("{}", e.what());
    return e.exit_code();
  }
  options.nhwc = a.nhwc;
  options.use_int16_for_qint16 = a.int16;
  options.relax_f32_to_f16 = a.relax;
  options.compilation_preference =
      a.preference == "low-power" ? 0 : a.preference == "fast-single-answer" ? 1 : 2;
  if (!a.out_dir.empty()) {
    std::error_code ec;
    fs::create_directories(a.out_dir, ec);
  }

  int status = 0;
  for (const std::string& model : a.models) {
    try {
      if (convert_one(a, model, options) != 0) status = 1;  // --verify failed
    } catch (const ConvertError& e) {
      spdlog::error("{}", e.what());
      if (e.exit_code() == 2) return 2;
      status = 1;
    } catch (const c10::Error& e) {
      spdlog::error("model '{}': {}", model, e.what_without_backtrace());
      status = 1;
    } catch (const std::exception& e) {
      spdlog::error("model '{}': {}", model, e.what());
      status = 1;
    }
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  auto logger = spdlog::stderr_color_mt("nnapi-convert");
  logger->set_pattern("nnapi-convert: %^%l%$: %v");
  spdlog::set_default_logger(logger);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}

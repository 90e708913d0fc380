// nnapi-convert: the command line. Parses arguments and runs one command:
// convert (the default), check, inspect or list-ops. Errors are one paragraph
// with exit status 1 (model) or 2 (usage).
#include <dlfcn.h>
#include <malloc.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <torch/version.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "cli/cli.h"
#include "util/output_file.h"

namespace fs = std::filesystem;
using namespace nnapi_convert;
using namespace nnapi_convert::cli;

namespace {

const char* const kCommands[] = {"convert", "check", "inspect", "list-ops", "merge-reports"};

const char* const kFooter = R"(Examples:
  nnapi-convert model.pt --input 1x3x224x224 --nhwc         writes model.nnapi.pt
  nnapi-convert model.pt --input 1x3x0x0,nhwc -o out.pt     flexible height and width
  nnapi-convert q.pt --input 1x3x224x224,dtype=quint8,scale=0.0625,zero_point=128
  nnapi-convert model.pt --input 1x3x224x224 --verify       check it on the host runtime
  nnapi-convert a.pt b.pt --input 1x3x224x224 --out-dir out --report - --junit j.xml
  nnapi-convert check model.pt --input 1x3x224x224          what converts, writes nothing
  nnapi-convert inspect model.nnapi.pt                      what the device will see
  nnapi-convert list-ops                                    the node kinds it lowers
  nnapi-convert a.pt b.pt c.pt --input 1x3x224x224 --out-dir out --shard 2/3 --report r2.json
  nnapi-convert merge-reports r1.json r2.json r3.json --report all.json --junit all.xml

Exit status: 0 converted (and verified); 1 a model cannot be converted, or
--verify failed (the message names the file, the node and its source line);
2 a usage error, before any work (options, specs, a manifest, output paths).)";

// Edits between a and b (Levenshtein), to suggest a command for a typo.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

// `nnapi-convert inpsect x.pt`: a first word that is no file, has no path or
// extension, and is close to a command, is a mistyped command (exit 2).
int mistyped_command(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return 0;
  const std::string word = argv[1];
  std::error_code ec;
  if (word.find_first_of("./") != std::string::npos || fs::exists(word, ec)) return 0;
  for (const char* command : kCommands) {
    if (word == command) return 0;
  }
  for (const char* command : kCommands) {
    if (edit_distance(word, command) <= 2) {
      spdlog::error(
          "unknown command '{}'; did you mean '{}'? (nnapi-convert --help lists the "
          "commands)",
          word, command);
      return 2;
    }
  }
  return 0;
}

// The options of convert and check, on the top-level command (`convert` and
// `check` take them after their name too).
void add_conversion_options(CLI::App& app, Args& a, std::vector<CLI::Option*>& paths) {
  app.add_option("--input", a.input_specs,
                 "One per model input, in order: DIMS[,dtype=float32|int32|quint8|int16|bool]"
                 "[,scale=S][,zero_point=Z][,nhwc]; DIMS like 1x3x224x224, 0 = flexible. An "
                 "argument that is no tensor: int=N, float=X, bool=true|false or none (the "
                 "model is specialized on it); a List[Tensor] or Tuple[Tensor, ...]: "
                 "list=SPEC+SPEC... or tuple=SPEC+SPEC...")
      ->allow_extra_args(false);
  app.add_flag("--eval", a.eval,
               "Set eval mode on the whole model before freezing (a model saved in training "
               "mode: BatchNorm, Dropout and code that reads self.training then compute as in "
               "eval)");
  app.add_option("--submodule", a.submodule,
                 "Convert this submodule (a dotted path, e.g. _model or backbone.body) in place "
                 "of the model");
  app.add_option("--method", a.method,
                 "Convert this method (of the model, or of --submodule) in place of forward; the "
                 "output's forward runs it");
  paths.push_back(app.add_option(
      "--manifest", a.manifest,
      "JSON list of {model, inputs, output, options} for models that need different inputs "
      "(see docs/batch-and-ci.md)"));
  app.add_option("-j,--jobs", a.jobs, "Models converted at a time (default: the number of cores)")
      ->check(CLI::Range(1, 256));
  app.add_option("--shard", a.shard,
                 "K/N: convert only the K-th of N shares of the models (1 <= K <= N), for a CI "
                 "matrix or an indexed job; a model's share follows from a hash of its path as "
                 "written, so the N runs convert each model once, on any machine, in any order "
                 "(merge-reports joins their reports)")
      ->each([&a](const std::string&) { a.shard_given = true; });
  paths.push_back(app.add_option(
      "--report", a.report,
      "Write a JSON report (- for standard output): per model its status, output, error with "
      "node, source and the unsupported node kinds, operand and operation counts, weight bytes "
      "and phase times"));
  paths.push_back(app.add_option("--junit", a.junit,
                                 "Write a JUnit XML report for CI (one test case per model)"));
  app.add_option("--timeout", a.timeout,
                 "Seconds one model may take before it is stopped and fails (default 1800; 0 = "
                 "no limit). Loading a model runs its code, which may never finish")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--nhwc", a.nhwc, "Every 4-D input is channels-last (NHWC)");
  paths.push_back(
      app.add_option("-o,--output", a.output,
                     "Output file (default: <model>.nnapi.pt beside it; - or /dev/stdout for "
                     "standard output; a FIFO or character device is written through)"));
  paths.push_back(app.add_option("--out-dir", a.out_dir, "Directory for outputs (several models)"));
  paths.push_back(
      app.add_option("--parts", a.parts,
                     "Also write ser_model.bin, weights.pt, shape_compute.py, manifest.json here"));
  app.add_flag("--lite", a.lite, "Also write <output>.ptl for the lite interpreter");
  app.add_option("--lite-bytecode-version", a.lite_bytecode_version,
                 "Write the .ptl at this lite-interpreter bytecode version (4 to 8; implies "
                 "--lite), for an app on an older PyTorch Android (docs/cli.md has the table)")
      ->each([&a](const std::string&) { a.lite_bytecode_given = true; });
  app.add_flag("--int16-for-qint16", a.int16, "int16 inputs carry NNAPI qint16 values");
  app.add_option("--preference", a.preference, "NNAPI compilation preference")
      ->check(CLI::IsMember({"low-power", "fast-single-answer", "sustained-speed"}));
  app.add_flag("--relax-f32-to-f16", a.relax, "Allow NNAPI to compute float32 as float16");
  app.add_flag("--float16", a.float16,
               "Write weights and computation as TENSOR_FLOAT16 (NNAPI feature level 3, Android "
               "10): half the file size, the form GPU drivers run natively; the converted "
               "module still takes and returns float32 (CAST inside the NNAPI model). An "
               "operation NNAPI has no float16 form of is refused naming its node. --verify "
               "then uses float16 tolerances (atol and rtol at least 5/1024)");
  app.add_flag("--float16-io", a.float16_io,
               "--float16, and the converted module takes and returns float16 (torch.half) "
               "tensors instead of float32 ones");
  app.add_flag("--fuse-activations", a.fuse,
               "Fold a ReLU/ReLU6 that follows a convolution, linear or add/sub/mul/div into that "
               "operation (fewer NNAPI operations; differs from PyTorch's converter)");
  app.add_flag("--cpu-fallback", a.cpu_fallback,
               "Keep the nodes NNAPI cannot run as TorchScript in the converted module, and "
               "convert the parts between them to NNAPI models it calls (flexible --input sizes "
               "are tried at several values; differs from PyTorch's converter, which refuses "
               "such models)");
  app.add_option("--min-android-api", a.min_android_api,
                 "Oldest Android API level the model must run on (29 = Android 10, the default "
                 "and the least PyTorch's NNAPI runtime needs, to 35): newer NNAPI operations are "
                 "decomposed into older ones, or the node is refused naming the level it needs")
      ->check(CLI::Range(29, 35));
  app.add_option("--ops-library", a.ops_libraries,
                 "A shared library of custom TorchScript operators the model uses, loaded "
                 "before the model (as torch.ops.load_library does), e.g. torchvision's _C.so "
                 "for torchvision::nms; repeatable")
      ->allow_extra_args(false);
  app.add_option("--return-shape", a.return_shapes,
                 "Per output: its shape (x-joined, -1 = run-time size)")
      ->allow_extra_args(false);
  auto* verify = app.add_flag(
      "--verify", a.verify,
      "After converting, run the model and the converted module (on the host NNAPI runtime) on "
      "seeded random inputs (or --verify-input) and print each output's max error; exit 1 past "
      "the tolerances, and then the output is not written: float |nnapi - model| <= atol + "
      "rtol * |model| everywhere; quantized (and dequantized) outputs at most 3% of elements "
      "off by one quantum, none by more; NaN or infinity fails. The runtime is "
      "<dir of nnapi-convert>/runtime/libneuralnetworks.so (a build tree), else "
      "<dir of nnapi-convert>/../lib/nnapi-convert/libneuralnetworks.so (an installation), "
      "else $NNAPI_CONVERT_RUNTIME, else found on LD_LIBRARY_PATH");
  app.add_flag("--verify-strict", a.verify_strict,
               "With --verify: fail (exit 1, nothing written) where the comparison proves little "
               "(a constant output would pass it), instead of passing with a warning")
      ->needs(verify);
  app.add_option("--verify-shape", a.verify_shapes,
                 "With --verify, once per input: its run-time size, e.g. 1x3x320x240 (default "
                 "for flexible dims: 1 for dim 0, 224 for H and W of 4-D inputs, 8 otherwise)")
      ->allow_extra_args(false)
      ->needs(verify);
  paths.push_back(app.add_option("--verify-input", a.verify_input,
                                 "With --verify: real inputs instead of random ones, a file "
                                 "written by torch.save (a tensor, or a tuple or list of tensors, "
                                 "one per input)")
                      ->needs(verify));
  app.add_option("--atol", a.atol, "With --verify: absolute tolerance (default 1e-4)")
      ->check(CLI::NonNegativeNumber)
      ->needs(verify);
  app.add_option("--rtol", a.rtol, "With --verify: relative tolerance (default 1e-4)")
      ->check(CLI::NonNegativeNumber)
      ->needs(verify);
  auto* quantize =
      app.add_option("--quantize", a.quantize,
                     "Post-training quantization of a float model: uint8 (TENSOR_QUANT8_ASYMM "
                     "activations, per-tensor int8 weights), calibrated on --calibration or "
                     "--calibration-dir; inputs and outputs stay float (see --quantized-io). "
                     "Prints, and --report "
                     "holds, the proof: each output against the float graph fake-quantized "
                     "at the chosen scales (within one quantum) and against the float model "
                     "(SQNR, max abs error, top-1 agreement), and the layers' SQNR worst first; "
                     "with --verify, exit 1 when it fails")
          ->check(CLI::IsMember({"uint8"}));
  paths.push_back(app.add_option("--calibration", a.quantization.calibration_file,
                                 "With --quantize: a file written by torch.save, a float32 "
                                 "tensor whose dim 0 runs over the samples (one-input models) "
                                 "or a list with one tuple of input tensors per sample")
                      ->needs(quantize));
  auto* calibration_dir =
      app.add_option("--calibration-dir", a.quantization.calibration_dir,
                     "With --quantize: a directory of such .pt files, or of PNG/JPEG images "
                     "(.png, .jpg, .jpeg; not both kinds), in name order; other files are "
                     "ignored. Images calibrate a one-input N x C x H x W model (C 1 or 3): "
                     "each is made C channels, resized to cover H x W (antialiased bilinear, "
                     "aspect ratio kept), center cropped, divided by 255 and normalized with "
                     "--mean and --std")
          ->needs(quantize);
  paths.push_back(calibration_dir);
  app.add_option("--mean", a.quantization.mean,
                 "With --calibration-dir of images: per channel mean subtracted, in the 0..1 "
                 "scale of pixel/255, comma-separated (torchvision's Normalize; default 0)")
      ->delimiter(',')
      ->needs(calibration_dir);
  app.add_option("--std", a.quantization.stddev,
                 "With --calibration-dir of images: per channel standard deviation divided by, "
                 "comma-separated (default 1), e.g. --mean 0.485,0.456,0.406 --std "
                 "0.229,0.224,0.225 for ImageNet's")
      ->delimiter(',')
      ->needs(calibration_dir);
  app.add_option("--calibration-method", a.quantization.method,
                 "With --quantize: how a value's range is chosen: histogram (default; the "
                 "range minimizing the quantization error, as PyTorch's HistogramObserver) or "
                 "minmax")
      ->check(CLI::IsMember({"minmax", "histogram"}))
      ->needs(quantize);
  app.add_option("--calibration-holdout", a.quantization.holdout,
                 "With --quantize: the last N samples are not calibrated on; the proof is "
                 "measured on them (default 0: measured on the calibration samples)")
      ->check(CLI::NonNegativeNumber)
      ->needs(quantize);
  app.add_option("--quantize-skip", a.quantization.skip,
                 "With --quantize: keep float the nodes of this kind (aten::add) or computing "
                 "this value (%input.3, as the per-layer table names it); repeatable")
      ->allow_extra_args(false)
      ->needs(quantize);
  app.add_flag("--quantized-io", a.quantization.quantized_io,
               "With --quantize: the converted module takes and returns quint8 tensors at "
               "the calibrated scale and zero point of each input and output (printed, and "
               "in --report), instead of float ones")
      ->needs(quantize);
  app.add_option("--min-sqnr", a.quantization.min_sqnr,
                 "With --quantize --verify: fail when an output's SQNR against the float "
                 "model is below this (dB, default 20)")
      ->needs(quantize);
  app.add_flag("--timings", a.timings, "Print the time of each phase");
  app.add_flag("-v,--verbose", a.verbose, "More output");
  app.add_flag("-q,--quiet", a.quiet, "Errors only");
}

int run(int argc, char** argv) {
  if (int status = mistyped_command(argc, argv)) return status;
  Args a;
  std::vector<CLI::Option*> paths;
  CLI::App app{
      "Convert TorchScript models to Android NNAPI models, as PyTorch's "
      "convert_model_to_nnapi does, in one native binary.",
      "nnapi-convert"};
  app.set_version_flag("--version", std::string("nnapi-convert ") + NNAPI_CONVERT_VERSION +
                                        " (LibTorch " + TORCH_VERSION + ")");
  app.footer(kFooter);
  app.require_subcommand(0, 1);
  app.add_option("models", a.models, "TorchScript model file(s) (torch.jit.save)");
  add_conversion_options(app, a, paths);

  std::vector<std::string> command_models;
  CLI::App* convert = app.add_subcommand("convert", "Convert models (the default command)");
  convert->fallthrough();
  convert->add_option("models", command_models, "TorchScript model file(s)");
  CLI::App* check = app.add_subcommand(
      "check",
      "Show which node kinds of a model convert and which do not (with the lines of your code "
      "that use them), and whether the whole model converts; writes nothing. Takes the "
      "conversion options (--input, --nhwc, ...). Exit 1 if a model does not convert");
  check->fallthrough();
  check->add_option("models", command_models, "TorchScript model file(s)");
  check->add_flag("--json", a.json, "Print one JSON document");
  check->add_flag("--dot", a.dot,
                  "Print the model's graph as Graphviz DOT (one model): a node per graph node "
                  "but constants, with its source line, coloured by whether it lowers to NNAPI, "
                  "is computed during conversion, or does not convert (why: in its tooltip); with "
                  "--cpu-fallback, a box per NNAPI model and the nodes that stay TorchScript");

  std::string inspect_file;
  bool inspect_json = false;
  double inspect_timeout = 1800;
  CLI::App* inspect = app.add_subcommand(
      "inspect",
      "Print the NNAPI model inside a .nnapi.pt or ser_model.bin, checked as strictly as "
      "PyTorch's on-device loader checks it");
  inspect->add_option("file", inspect_file, ".nnapi.pt module or raw ser_model.bin")->required();
  inspect->add_flag("--json", inspect_json, "Print one JSON object");
  bool inspect_dot = false;
  inspect->add_flag("--dot", inspect_dot, "Print the NNAPI operations as Graphviz DOT")
      ->excludes("--json");
  inspect
      ->add_option("--ops-library", a.ops_libraries,
                   "A library of custom operators the module's TorchScript part uses (a "
                   "--cpu-fallback module), loaded first")
      ->allow_extra_args(false);
  inspect
      ->add_option("--timeout", inspect_timeout,
                   "Seconds before giving up (default 1800; 0 = no limit)")
      ->check(CLI::NonNegativeNumber);

  std::vector<std::string> merge_inputs;
  std::string merge_report, merge_junit;
  CLI::App* merge = app.add_subcommand(
      "merge-reports",
      "Join the JSON --report files of several runs (the shards of one batch) into one report "
      "and/or JUnit file; exit 1 if any model failed");
  merge->add_option("reports", merge_inputs, "--report JSON files")->required();
  merge->add_option("--report", merge_report,
                    "The joined JSON report (- for standard output, the default when neither "
                    "--report nor --junit is given)");
  merge->add_option("--junit", merge_junit, "The joined JUnit XML report");

  bool list_json = false;
  CLI::App* list_ops =
      app.add_subcommand("list-ops", "List the TorchScript node kinds nnapi-convert lowers");
  list_ops->add_flag("--json", list_json, "Print a JSON list");

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
  spdlog::set_level(a.quiet     ? spdlog::level::err
                    : a.verbose ? spdlog::level::debug
                                : spdlog::level::info);
  for (const std::string& lib : a.ops_libraries) {
    // RTLD_GLOBAL, as torch.ops.load_library: the operators register themselves.
    if (!::dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
      const char* why = ::dlerror();
      spdlog::error(
          "--ops-library '{}' cannot be loaded: {}; give the path of a shared library "
          "that registers TorchScript operators (e.g. torchvision's _C.so)",
          lib, why ? why : "unknown error");
      return 2;
    }
  }
  if (inspect->parsed()) {
    return run_inspect(inspect_file, inspect_json, inspect_timeout, inspect_dot);
  }
  if (list_ops->parsed()) return run_list_ops(list_json);
  if (merge->parsed()) return run_merge_reports(merge_inputs, merge_report, merge_junit);
  a.models.insert(a.models.end(), command_models.begin(), command_models.end());
  for (CLI::Option* o : paths) {
    if (o->count() > 0) a.given_paths.emplace_back(o->get_name(), o->as<std::string>());
  }
  return check->parsed() ? run_check(a) : run_convert(a);
}

}  // namespace

int main(int argc, char** argv) {
  // Large buffers (weights, their NNAPI-layout copies) are mmapped and so
  // returned to the system when freed: glibc's adaptive threshold otherwise
  // keeps them, which raised the peak of quantized models past the weights'
  // size (README, performance).
  ::mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  // Temporaries are removed on SIGINT/SIGTERM/SIGHUP/SIGPIPE; a file-size
  // limit (SIGXFSZ) becomes a write error with a message.
  install_output_signal_handlers();
  auto logger = spdlog::stderr_color_mt("nnapi-convert");
  logger->set_pattern("nnapi-convert: %^%l%$: %v");
  spdlog::set_default_logger(logger);
  int status = 1;
  try {
    status = run(argc, argv);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
  }
  // Skip LibTorch's teardown at exit (about 0.2 s, see the README's
  // performance notes): everything is written and flushed by now.
  std::cout.flush();
  std::cerr.flush();
  spdlog::shutdown();
  std::fflush(nullptr);
  ::_exit(status);
}

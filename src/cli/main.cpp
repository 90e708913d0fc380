// nnapi-convert: the command line. Parses arguments, calls the library,
// reports errors as one paragraph with exit status 1 (model) or 2 (usage).
#include <c10/util/Exception.h>
#include <malloc.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/isolation.h"
#include "nnapi_convert/batch.h"
#include "nnapi_convert/converter.h"
#include "nnapi_convert/inspect.h"
#include "nnapi_convert/verify.h"
#include "util/output_file.h"

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
  bool fuse = false;
  bool lite = false;
  bool timings = false;
  bool verbose = false;
  bool quiet = false;
  bool verify = false;
  std::vector<std::string> verify_shapes;
  double atol = 1e-4;
  double rtol = 1e-4;
  std::string manifest;
  std::string report;
  int jobs = 0;
  double timeout = 1800;
};

// --verify: the parsed options (throws ConvertError(2) on a bad --verify-shape).
VerifyOptions verify_options(const Args& a) {
  VerifyOptions v;
  for (const std::string& s : a.verify_shapes) v.shapes.push_back(parse_verify_shape(s));
  v.atol = a.atol;
  v.rtol = a.rtol;
  return v;
}

// --verify results: one line per output on stdout; a paragraph on failure.
void print_verify(const Args& a, const JobResult& r) {
  const VerifyReport& v = *r.verify;
  spdlog::debug("verify: runtime {}", v.runtime_library);
  std::string shapes;
  for (const auto& s : v.shapes) {
    std::string d;
    for (int64_t x : s) d += (d.empty() ? "" : "x") + std::to_string(x);
    shapes += (shapes.empty() ? "" : ", ") + (s.empty() ? std::string("scalar") : d);
  }
  if (!a.quiet) {
    // Standard output may carry the module (-o -) or the report (--report -).
    std::ostream& out = a.output == "-" || a.report == "-" ? std::cerr : std::cout;
    out << r.model << ": verify on inputs " << shapes << "\n";
    for (size_t i = 0; i < v.outputs.size(); ++i) {
      out << "  " << format_output_check(i, v.outputs[i]) << "\n";
    }
    out.flush();
  }
  if (v.ok) return;
  std::string why;
  for (size_t i = 0; i < v.outputs.size(); ++i) {
    if (!v.outputs[i].ok) why += " Output " + std::to_string(i) + ": " + v.outputs[i].problem + ".";
  }
  spdlog::error(
      "model '{}': the converted module '{}' does not match the model on seeded random "
      "inputs of shape {} (float outputs: |nnapi - model| <= atol {} + rtol {} * |model|; "
      "quantized: at most 3% of elements off by one quantum, none by more).{}",
      r.model, r.output, shapes, a.atol, a.rtol, why);
}

// What happened to one model: errors always; a progress line on a terminal
// (or with -v), timings with --timings.
void report_progress(const Args& a, bool terminal, size_t done, size_t total, const JobResult& r) {
  // A verify mismatch is explained by print_verify; every other failure here.
  bool verify_ran = r.verify.has_value();
  if (!r.ok && !verify_ran) spdlog::error("{}", r.error);
  if (r.ok || verify_ran) {
    if (terminal || a.verbose) {
      spdlog::info("[{}/{}] {} -> {} ({} operands, {} operations, {} weight bytes, {:.0f} ms)",
                   done, total, r.model, r.output, r.operand_count, r.operation_count,
                   r.weight_bytes, r.total_ms);
    }
    if (a.timings) {
      const PhaseTimes& t = r.times;
      spdlog::info(
          "{}: timings (ms): load {:.2f}, freeze {:.2f}, lower {:.3f}, serialize {:.3f}, "
          "write {:.2f}",
          r.model, t.load_ms, t.freeze_ms, t.lower_ms, t.serialize_ms, t.write_ms);
    }
    if (r.verify) print_verify(a, r);
  }
}

// `nnapi-convert inspect FILE [--json]`: what the device will see.
int run_inspect(int argc, char** argv) {
  std::string file;
  bool json = false;
  double timeout = 1800;
  CLI::App app{
      "Print the NNAPI model inside a .nnapi.pt or ser_model.bin, checked as strictly "
      "as PyTorch's on-device loader checks it.",
      "nnapi-convert inspect"};
  app.add_option("file", file, ".nnapi.pt module or raw ser_model.bin")->required();
  app.add_flag("--json", json, "Print one JSON object");
  app.add_option("--timeout", timeout, "Seconds before giving up (default 1800; 0 = no limit)")
      ->check(CLI::NonNegativeNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "nnapi-convert inspect: " << e.what() << "\n";
    return 2;
  }
  // In a worker process, as conversions are: loading a module runs its code.
  IsolationOptions iso;
  iso.timeout_s = timeout;
  std::string result = run_isolated(
      1, iso,
      [&](size_t) {
        std::ostringstream out, err;
        int status = inspect_main(file, json, out, err);
        return nlohmann::json{{"status", status}, {"out", out.str()}, {"err", err.str()}}.dump(
            -1, ' ', false, nlohmann::json::error_handler_t::replace);
      },
      [&](size_t, const TaskFailure& how) {
        std::string err = "nnapi-convert inspect: " + file + ": reading it " + how.describe() +
                          "; the file is malformed or was crafted\n";
        return nlohmann::json{{"status", 1}, {"out", ""}, {"err", err}}.dump(
            -1, ' ', false, nlohmann::json::error_handler_t::replace);
      },
      nullptr)[0];
  nlohmann::json r = nlohmann::json::parse(result);
  std::cout << r["out"].get<std::string>();
  std::cerr << r["err"].get<std::string>();
  return r["status"].get<int>();
}

int run(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "inspect") return run_inspect(argc - 1, argv + 1);
  Args a;
  CLI::App app{
      "Convert TorchScript models to Android NNAPI models, as PyTorch's "
      "convert_model_to_nnapi does, in one native binary.",
      "nnapi-convert"};
  app.set_version_flag("--version", std::string("nnapi-convert ") + NNAPI_CONVERT_VERSION);
  app.add_option("models", a.models, "TorchScript model file(s) (torch.jit.save)");
  app.add_option("--input", a.input_specs,
                 "One per model input, in order: DIMS[,dtype=float32|int32|quint8|int16]"
                 "[,scale=S][,zero_point=Z][,nhwc]; DIMS like 1x3x224x224, 0 = flexible");
  auto* manifest_opt =
      app.add_option("--manifest", a.manifest,
                     "JSON list of {model, inputs, output, options} for models that need different "
                     "inputs (see README)");
  app.add_option("-j,--jobs", a.jobs, "Models converted at a time (default: the number of cores)")
      ->check(CLI::Range(1, 256));
  auto* report_opt = app.add_option(
      "--report", a.report,
      "Write a JSON report (- for standard output): per model its status, output, error with "
      "node and source, operand and operation counts, weight bytes and phase times");
  app.add_option("--timeout", a.timeout,
                 "Seconds one model may take before it is stopped and fails (default 1800; 0 = "
                 "no limit). Loading a model runs its code, which may never finish")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--nhwc", a.nhwc, "Every 4-D input is channels-last (NHWC)");
  auto* output_opt =
      app.add_option("-o,--output", a.output,
                     "Output file (default: <model>.nnapi.pt beside it; - for standard output)");
  auto* out_dir_opt =
      app.add_option("--out-dir", a.out_dir, "Directory for outputs (several models)");
  auto* parts_opt =
      app.add_option("--parts", a.parts,
                     "Also write ser_model.bin, weights.pt, shape_compute.py, manifest.json here");
  app.add_flag("--lite", a.lite, "Also write <output>.ptl for the lite interpreter");
  app.add_flag("--int16-for-qint16", a.int16, "int16 inputs carry NNAPI qint16 values");
  app.add_option("--preference", a.preference, "NNAPI compilation preference")
      ->check(CLI::IsMember({"low-power", "fast-single-answer", "sustained-speed"}));
  app.add_flag("--relax-f32-to-f16", a.relax, "Allow NNAPI to compute float32 as float16");
  app.add_flag("--fuse-activations", a.fuse,
               "Fold a ReLU/ReLU6 that follows a convolution, linear or add/sub/mul/div into that "
               "operation (fewer NNAPI operations; differs from PyTorch's converter)");
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
  spdlog::set_level(a.quiet     ? spdlog::level::err
                    : a.verbose ? spdlog::level::debug
                                : spdlog::level::info);

  // Everything a user can get wrong is checked before any work: exit 2.
  std::vector<Job> jobs;
  try {
    Job defaults;
    for (CLI::Option* o : {output_opt, report_opt, out_dir_opt, parts_opt, manifest_opt}) {
      if (o->count() > 0 && o->as<std::string>().empty()) {
        throw ConvertError(2, o->get_name() +
                                  " was given an empty path; name a file or "
                                  "directory (for -o and --report, - is standard "
                                  "output)");
      }
    }
    if (a.models.empty() && a.manifest.empty()) {
      throw ConvertError(2, "no model given: name TorchScript model files, or a --manifest");
    }
    if (!a.models.empty() && a.input_specs.empty()) {
      throw ConvertError(2,
                         "--input is required: give one --input SPEC per model input, in "
                         "order, e.g. --input 1x3x224x224");
    }
    if (!a.output.empty() && (a.models.size() > 1 || !a.manifest.empty())) {
      throw ConvertError(2,
                         "-o names one output file, but several models were given; use "
                         "--out-dir for several models");
    }
    for (const std::string& s : a.input_specs)
      defaults.options.inputs.push_back(parse_input_spec(s));
    for (const std::string& s : a.return_shapes) {
      defaults.options.return_shapes.push_back(parse_return_shape(s));
    }
    defaults.options.nhwc = a.nhwc;
    defaults.options.use_int16_for_qint16 = a.int16;
    defaults.options.relax_f32_to_f16 = a.relax;
    defaults.options.fuse_activations = a.fuse;
    defaults.options.compilation_preference = preference_code(a.preference);
    defaults.lite = a.lite;
    defaults.parts = a.parts;
    defaults.verify = a.verify;
    if (a.verify) defaults.verify_options = verify_options(a);
    for (const std::string& model : a.models) {
      Job job = defaults;
      job.options.model_path = model;
      job.output = a.output.empty() ? default_output_path(model, a.out_dir) : a.output;
      jobs.push_back(std::move(job));
    }
    if (!a.manifest.empty()) {
      for (Job& job : read_manifest(a.manifest, defaults, a.out_dir))
        jobs.push_back(std::move(job));
    }
    for (const Job& job : jobs) {
      if (job.verify) verify_input_shapes(job.options.inputs, job.verify_options);
    }
    check_output_plan(jobs, a.report, a.manifest);
  } catch (const SpecError& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const ConvertError& e) {
    spdlog::error("{}", e.what());
    return e.exit_code();
  }
  if (!a.out_dir.empty()) {
    std::error_code ec;
    fs::create_directories(a.out_dir, ec);
    if (ec) {
      spdlog::error("--out-dir '{}' cannot be created: {}", a.out_dir, ec.message());
      return 2;
    }
  }

  int parallel =
      a.jobs > 0 ? a.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool terminal = ::isatty(STDERR_FILENO) && !a.quiet;
  std::vector<JobResult> results =
      run_jobs(jobs, parallel, a.timeout, [&](size_t done, size_t total, const JobResult& r) {
        report_progress(a, terminal, done, total, r);
      });
  int status = 0;
  for (const JobResult& r : results) {
    if (!r.ok) status = std::max(status, r.exit_code == 2 && jobs.size() == 1 ? 2 : 1);
  }
  if (!a.report.empty()) {
    try {
      write_output_file(a.report, "--report", report_json(results));
    } catch (const OutputError& e) {
      spdlog::error("--report: {}", e.what());
      return 1;
    }
  }
  return status;
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

// `nnapi-convert [convert] MODEL... --input SPEC ...`: convert, report progress,
// write --report and --junit.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <thread>

#include "cli/cli.h"
#include "core/sample_inputs.h"
#include "nnapi_convert/verify.h"
#include "nnapi_convert/writer.h"
#include "quantize/quantize.h"
#include "util/output_file.h"

namespace nnapi_convert::cli {
namespace {

namespace fs = std::filesystem;

// --verify: the parsed options (throws ConvertError(2) on a bad --verify-shape).
VerifyOptions verify_options(const Args& a) {
  VerifyOptions v;
  for (const std::string& s : a.verify_shapes) v.shapes.push_back(parse_verify_shape(s));
  v.input_file = a.verify_input;
  v.atol = a.atol;
  v.rtol = a.rtol;
  v.strict = a.verify_strict;
  return v;
}

std::string shapes_text(const VerifyReport& v) {
  std::string shapes;
  for (const auto& s : v.shapes) {
    std::string d;
    for (int64_t x : s) d += (d.empty() ? "" : "x") + std::to_string(x);
    shapes += (shapes.empty() ? "" : ", ") + (s.empty() ? std::string("scalar") : d);
  }
  return shapes;
}

// --verify results: one line per output on stdout; a paragraph on failure.
void print_verify(const Args& a, const JobResult& r) {
  const VerifyReport& v = *r.verify;
  spdlog::debug("verify: runtime {}", v.runtime_library);
  const std::string shapes = shapes_text(v);
  if (!a.quiet) {
    // Standard output may carry the module (-o -) or the report (--report -).
    std::ostream& out =
        names_standard_output(a.output) || names_standard_output(a.report) ? std::cerr : std::cout;
    if (a.verify_input.empty()) {
      out << r.model << ": verify on inputs " << shapes << "\n";
    } else {
      out << r.model << ": verify on the --verify-input tensors '" << a.verify_input << "' ("
          << shapes << ")\n";
    }
    if (v.shapes_multiple) {
      out << "  the model fails at --verify's default sizes, so every flexible size is rounded up "
             "to a multiple of "
          << v.shapes_multiple
          << ", the first it runs at (as the converter's validator does); --verify-shape "
             "chooses other sizes\n";
    }
    if ((a.relax || a.float16 || a.float16_io) && v.float16_roundings > 0) {
      out << "  float16 computation's RMS rule: an output outside the float tolerances below "
             "passes when its RMS error is at most "
          << v.float16_rms_bound << " of the model output's RMS (" << v.float16_roundings
          << (v.float16_roundings == 1 ? " operation" : " operations")
          << " rounding to float16 x float16's unit roundoff 2^-11: error that accumulates "
             "through the model's depth)\n";
    }
    if (a.relax) {
      out << "  relaxed float32 -> float16 computation: float tolerances atol " << v.atol
          << ", rtol " << v.rtol << "\n";
    }
    if (a.float16 || a.float16_io) {
      out << "  float16 computation (--float16): float tolerances atol " << v.atol << ", rtol "
          << v.rtol << " (float16's precision, not float32's)\n";
    }
    if (v.dynamic_quantization) {
      out << "  dynamic quantization (eager rounds activations to 8 bits at run time, the NNAPI "
             "model computes in float): float tolerances atol "
          << v.atol << ", rtol " << v.rtol << "\n";
    }
    if (v.eager_default_engine) {
      out << "  eager on PyTorch's default quantized engine: QNNPACK (Android's) cannot load the "
             "model's quantized weights (its quantized 3-D convolutions)\n";
    }
    if (!v.state.empty()) {
      std::string names;
      for (const std::string& n : v.state) names += (names.empty() ? "" : ", ") + n;
      out << "  the model keeps state between calls (" << names << "): " << v.calls
          << " calls in sequence, on fresh inputs each, comparing each call's outputs and the "
             "state after it\n";
    }
    for (size_t i = 0; i < v.outputs.size(); ++i) {
      out << "  " << format_output_check(i, v.outputs[i]) << "\n";
    }
    out.flush();
  }
  if (v.ok) return;
  std::string why;
  bool only_strict = true;  // every failing output only failed --verify-strict
  for (size_t i = 0; i < v.outputs.size(); ++i) {
    if (v.outputs[i].ok) continue;
    why += " " + (v.outputs[i].name.empty() ? "Output " + std::to_string(i) : v.outputs[i].name) +
           ": " + v.outputs[i].problem + ".";
    only_strict = only_strict && v.outputs[i].problem.rfind(kVerifyStrictProblem, 0) == 0;
  }
  if (only_strict && !why.empty()) {
    spdlog::error(
        "model '{}': the converted module matches the model on {} inputs of shape {}, but a "
        "constant output would have matched too, so with --verify-strict '{}' was not written; "
        "give inputs that exercise the model with --verify-input, or leave out --verify-strict.{}",
        r.model, a.verify_input.empty() ? "seeded random" : "the --verify-input", shapes, r.output,
        why);
    return;
  }
  spdlog::error(
      "model '{}': the converted module does not match the model on {} inputs of shape {} "
      "(float outputs: |nnapi - model| <= atol {} + rtol {} * |model|; quantized: at most 3% "
      "of elements off by one quantum, none by more{}), so '{}' was not written.{}{}",
      r.model, a.verify_input.empty() ? "seeded random" : "the --verify-input", shapes, v.atol,
      v.rtol,
      v.float16_roundings > 0
          ? "; float16 computation: or an RMS error of at most " +
                fmt::format("{}", v.float16_rms_bound) + " of the model output's RMS"
          : std::string(),
      r.output, why, v.divergence ? "\n" + format_divergence(*v.divergence) + "." : "");
}

// --cpu-fallback's split, on standard error: what stays TorchScript, where.
void print_fallback(const JobResult& r) {
  int64_t nodes = 0;
  std::string kinds;
  for (const NodeKindCount& k : r.torchscript_nodes) {
    nodes += k.count;
    if (k.kind.rfind("prim::", 0) == 0) continue;  // lists and tuples around them
    kinds += std::string(kinds.empty() ? "" : "; ") + k.kind + " x" + std::to_string(k.count);
    if (!k.locations.empty()) kinds += " at " + k.locations[0];
    if (k.locations.size() > 1) kinds += " and " + std::to_string(k.locations.size() - 1) + " more";
  }
  spdlog::info("{}: --cpu-fallback: {} NNAPI model(s), {} node(s) stay TorchScript: {}", r.model,
               r.nnapi_models, nodes, kinds);
}

// A stateful model, on standard error: the attributes kept between calls.
void print_state(const JobResult& r) {
  std::string attrs;
  for (const auto& s : r.state) {
    attrs += (attrs.empty() ? "" : "; ") + s.at("attribute").get<std::string>() + " (" +
             join_dims(s.at("shape").get<std::vector<int64_t>>()) + ", NNAPI input " +
             std::to_string(s.at("nnapi_input").get<int64_t>()) + " and output " +
             std::to_string(s.at("nnapi_output").get<int64_t>()) + ")";
  }
  spdlog::info(
      "{}: note: forward keeps state between calls: {}; the converted module keeps it as "
      "attributes of the same names, starts from the file's values (reset_state() restores "
      "them) and writes the new values back after each call",
      r.model, attrs);
}

// Progress on standard error: every error; per model a line on a terminal
// (or with -v) and timings with --timings; on a terminal, with several
// models, a status line kept at the bottom.
class Progress {
 public:
  Progress(const Args& a, size_t total)
      : a_(a),
        total_(total),
        terminal_(::isatty(STDERR_FILENO) && !a.quiet),
        status_line_(terminal_ && total > 1),
        t0_(std::chrono::steady_clock::now()) {}

  void model_done(const JobResult& r) {
    clear_status();
    ++done_;
    failed_ += !r.ok;
    // A verify mismatch is explained by print_verify; every other failure here.
    const bool verify_ran = r.verify.has_value();
    if (!r.ok && !verify_ran) spdlog::error("{}", r.error);
    if (r.ok || verify_ran) {
      if (terminal_ || a_.verbose) {
        spdlog::info("[{}/{}] {} -> {} ({} operands, {} operations, {} weight bytes, {:.0f} ms)",
                     done_, total_, r.model, r.output, r.operand_count, r.operation_count,
                     r.weight_bytes, r.total_ms);
      }
      if (a_.timings) {
        const PhaseTimes& t = r.times;
        spdlog::info(
            "{}: timings (ms): load {:.2f}, freeze {:.2f}, lower {:.3f}, serialize {:.3f}, "
            "validate {:.3f}, write {:.2f}",
            r.model, t.load_ms, t.freeze_ms, t.lower_ms, t.serialize_ms, t.validate_ms, t.write_ms);
      }
      if (r.nnapi_models > 0 && r.ok && !a_.quiet) print_fallback(r);
      if (!r.state.is_null() && !a_.quiet) print_state(r);
      if (!a_.quiet) {
        for (const std::string& note : r.notes) spdlog::info("{}: note: {}", r.model, note);
      }
      if (r.verify) print_verify(a_, r);
      if (!r.quantization.is_null() && !a_.quiet) {
        std::ostream& out = names_standard_output(a_.output) || names_standard_output(a_.report)
                                ? std::cerr
                                : std::cout;
        out << r.model << ": " << format_quantization(r.quantization, a_.verbose ? 20 : 5)
            << std::flush;
      }
    }
    if (status_line_ && done_ < total_) {
      std::cerr << "[" << done_ << "/" << total_ << "] " << done_ - failed_ << " converted, "
                << failed_ << " failed, " << seconds() << " s" << std::flush;
      status_shown_ = true;
    }
  }

  // The closing summary, for batches (or -v).
  void finish() {
    clear_status();
    if (a_.quiet || (total_ < 2 && !a_.verbose)) return;
    spdlog::info("{} of {} model(s) converted, {} failed, in {} s", done_ - failed_, total_,
                 failed_, seconds());
  }

 private:
  void clear_status() {
    if (status_shown_) std::cerr << "\r\033[K" << std::flush;
    status_shown_ = false;
  }
  std::string seconds() const {
    std::ostringstream os;
    os.precision(1);
    os << std::fixed
       << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    return os.str();
  }

  const Args& a_;
  size_t total_, done_ = 0, failed_ = 0;
  bool terminal_, status_line_, status_shown_ = false;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace

namespace {

// The jobs of `shard`: each model's path as the user wrote it decides (the
// first `from_command_line` jobs as given, the manifest's relative to it).
std::vector<Job> shard_of(const std::vector<Job>& jobs, size_t from_command_line,
                          const Shard& shard, const std::string& manifest) {
  const fs::path base = fs::path(manifest).parent_path();
  std::vector<Job> mine;
  for (size_t i = 0; i < jobs.size(); ++i) {
    fs::path key = fs::path(jobs[i].options.model_path);
    if (i >= from_command_line && !base.empty()) key = key.lexically_relative(base);
    if (shard.contains(key.lexically_normal().generic_string())) mine.push_back(jobs[i]);
  }
  spdlog::info("--shard {}/{}: {} of the {} models", shard.index, shard.count, mine.size(),
               jobs.size());
  return mine;
}

}  // namespace

std::vector<Job> plan_jobs(const Args& a) {
  for (const auto& [name, value] : a.given_paths) {
    if (value.empty()) {
      throw ConvertError(2, name +
                                " was given an empty path; name a file or directory (for -o, "
                                "--report and --junit, - is standard output)");
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
  if (!a.quantize.empty()) {
    if (a.quantization.calibration_file.empty() == a.quantization.calibration_dir.empty()) {
      throw ConvertError(2,
                         "--quantize needs calibration samples: give one of --calibration "
                         "FILE.pt (a tensor batch or a list of input tuples, torch.save'd) and "
                         "--calibration-dir DIR (.pt files, or PNG/JPEG images)");
    }
    if (a.cpu_fallback) {
      throw ConvertError(2, "--quantize cannot be combined with --cpu-fallback yet");
    }
    if (!a.manifest.empty()) {
      throw ConvertError(2,
                         "--quantize applies to the models on the command line, not to a "
                         "--manifest's");
    }
  }
  if ((a.float16 || a.float16_io) && !a.quantize.empty()) {
    throw ConvertError(2,
                       "--float16 cannot be combined with --quantize: a quantized model "
                       "computes in 8 bits already; give one of them");
  }
  if (a.float16_io && a.cpu_fallback) {
    throw ConvertError(2,
                       "--float16-io cannot be combined with --cpu-fallback: the TorchScript "
                       "parts between the NNAPI models compute in float32; give --float16 "
                       "(float32 inputs and outputs)");
  }
  Job defaults;
  defaults.options.quantize = a.quantization;
  defaults.options.quantize.enabled = !a.quantize.empty();
  set_input_specs(defaults.options, a.input_specs);
  for (const std::string& s : a.return_shapes) {
    defaults.options.return_shapes.push_back(parse_return_shape(s));
  }
  defaults.options.nhwc = a.nhwc;
  defaults.options.use_int16_for_qint16 = a.int16;
  defaults.options.relax_f32_to_f16 = a.relax;
  defaults.options.fuse_activations = a.fuse;
  defaults.options.cpu_fallback = a.cpu_fallback;
  defaults.options.eval = a.eval;
  defaults.options.submodule = a.submodule;
  defaults.options.method = a.method;
  defaults.options.min_android_api = a.min_android_api;
  defaults.options.float16 = a.float16 || a.float16_io;
  defaults.options.float16_io = a.float16_io;
  defaults.options.compilation_preference = preference_code(a.preference);
  defaults.lite = a.lite;
  if (a.lite_bytecode_given) {
    check_lite_bytecode_version(a.lite_bytecode_version, "--lite-bytecode-version");
    defaults.lite = true;
    defaults.options.lite_bytecode_version = a.lite_bytecode_version;
  }
  defaults.parts = a.parts;
  defaults.verify = a.verify;
  defaults.output_sha256 = !a.report.empty();
  if (a.verify) defaults.verify_options = verify_options(a);
  std::vector<Job> jobs;
  for (const std::string& model : a.models) {
    Job job = defaults;
    job.options.model_path = model;
    job.output = a.output.empty() ? default_output_path(model, a.out_dir) : a.output;
    jobs.push_back(std::move(job));
  }
  if (!a.manifest.empty()) {
    for (Job& job : read_manifest(a.manifest, defaults, a.out_dir)) jobs.push_back(std::move(job));
  }
  if (a.shard_given) jobs = shard_of(jobs, a.models.size(), parse_shard(a.shard), a.manifest);
  for (const Job& job : jobs) {
    if (job.verify && job.verify_options.input_file.empty()) {
      verify_input_shapes(job.options.inputs, job.verify_options);
    }
    if (job.verify && !job.verify_options.input_file.empty()) {
      load_verify_inputs(job.verify_options.input_file, job.options.inputs, job.options.nhwc);
    }
  }
  return jobs;
}

int run_convert(const Args& a) {
  std::vector<Job> jobs;
  try {
    jobs = plan_jobs(a);
    std::vector<std::pair<std::string, std::string>> extra;
    if (!a.report.empty()) extra.emplace_back(a.report, "--report");
    if (!a.junit.empty()) extra.emplace_back(a.junit, "--junit");
    check_output_plan(jobs, extra, a.manifest);
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

  const int parallel =
      a.jobs > 0 ? a.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  Progress progress(a, jobs.size());
  std::vector<JobResult> results =
      run_jobs(jobs, parallel, a.timeout,
               [&](size_t, size_t, const JobResult& r) { progress.model_done(r); });
  progress.finish();
  int status = 0;
  for (const JobResult& r : results) {
    if (!r.ok) status = std::max(status, r.exit_code == 2 && jobs.size() == 1 ? 2 : 1);
  }
  try {
    if (!a.report.empty()) write_output_file(a.report, "--report", report_json(results));
    if (!a.junit.empty()) write_output_file(a.junit, "--junit", junit_xml(results));
  } catch (const OutputError& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return status;
}

}  // namespace nnapi_convert::cli

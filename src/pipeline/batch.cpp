#include "nnapi_convert/batch.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <malloc.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "core/isolation.h"
#include "core/summary.h"
#include "lower/registry.h"
#include "nnapi_convert/converter.h"
#include "nnapi_convert/nnapi_types.h"
#include "nnapi_convert/writer.h"
#include "quantize/quantize.h"
#include "util/output_file.h"
#include "util/sha256.h"
#include "util/timing.h"

namespace nnapi_convert {
namespace {

namespace fs = std::filesystem;

// verify draws inputs from LibTorch's global generator: one at a time.
std::mutex verify_mutex;

}  // namespace

std::string default_output_path(const std::string& model, const std::string& out_dir) {
  fs::path p(model);
  fs::path out = p.stem();
  out += ".nnapi.pt";
  if (!out_dir.empty()) return (fs::path(out_dir) / out).string();
  return (p.parent_path() / out).string();
}

std::vector<int64_t> parse_return_shape(const std::string& text) {
  std::vector<int64_t> dims;
  std::string why;
  if (!parse_x_dims(text, -1, &dims, &why)) {
    throw ConvertError(2, "--return-shape '" + text + "': " + why +
                              "; write sizes joined by x, 0 for a size fixed at load time and "
                              "-1 for one known only at run time, e.g. 1x8x0x0");
  }
  return dims;
}

void set_input_specs(ConvertOptions& options, const std::vector<std::string>& specs) {
  std::vector<ArgSpec> args;
  for (const std::string& s : specs) args.push_back(parse_arg_spec(s));
  options.inputs = tensor_specs(args);
  options.args.clear();
  if (!all_tensors(args)) options.args = std::move(args);
}

int preference_code(const std::string& name) {
  if (name == "low-power") return 0;
  if (name == "fast-single-answer") return 1;
  if (name == "sustained-speed") return 2;
  return -1;
}

JobResult run_job(const Job& job, std::vector<Staged>* handed_over) {
  JobResult r;
  r.model = job.options.model_path;
  r.output = job.output;
  auto t0 = std::chrono::steady_clock::now();
  // The model file's SHA-256 for the outputs' metadata, read beside the
  // conversion (a second reading of the file, mostly from the page cache).
  std::future<std::string> source_sha256;
  if (!job.output.empty()) {
    source_sha256 = std::async(std::launch::async, sha256_file, job.options.model_path);
  }
  try {
    Conversion c = convert(job.options);
    auto tw = std::chrono::steady_clock::now();
    // Every output of the model is written and verified before any replaces
    // an existing file: all of them appear together, or none.
    std::string sha;
    try {
      if (source_sha256.valid()) sha = source_sha256.get();
    } catch (const std::runtime_error&) {
      // write_conversion reads it again and says why it cannot
    }
    ConversionFiles files =
        write_conversion(c, c.quantized ? lowering_options(*c.quantized, job.options) : job.options,
                         job.output, job.lite, job.parts, sha, job.output_sha256);
    c.times.write_ms = ms_since(tw);
    copy_summary(c, r);
    r.output_sha256 = files.module_sha256;
    r.lite_sha256 = files.lite_sha256;
    r.weight_bytes = c.weight_bytes;
    r.state = state_json(c);
    r.arguments = c.arguments;
    r.notes = c.notes;
    r.times = c.times;
    if (c.quantized) {
      // The proof replaces --verify's comparison with the float model (which
      // a quantized module matches only to its quantization error): --verify
      // fails when the proof does.
      std::lock_guard<std::mutex> lock(verify_mutex);
      r.quantization = prove_quantization(*c.quantized, job.options, files.module->temp_path());
      if (job.verify && !r.quantization["ok"].get<bool>()) {
        r.exit_code = 1;
        r.error = "model '" + r.model + "': the --quantize proof failed (" +
                  (r.quantization["fake_quant"]["ok"].get<bool>()
                       ? "an output's SQNR against the float model is below --min-sqnr " +
                             std::to_string(job.options.quantize.min_sqnr) +
                             " dB: keep the worst layers float with --quantize-skip, give "
                             "more representative calibration samples, or lower --min-sqnr"
                       : "the NNAPI module does not match the fake-quantized graph within "
                         "one quantum: a fault of nnapi-convert, please report it with the "
                         "model") +
                  "); '" + r.output + "' was not written";
      }
    } else if (job.verify) {
      std::lock_guard<std::mutex> lock(verify_mutex);
      r.verify = verify_conversion(job.options, files.module->temp_path(), job.verify_options);
      if (!r.verify->ok) {
        r.exit_code = 1;
        r.error = "model '" + r.model + "': the converted module does not match the model on " +
                  (job.verify_options.input_file.empty() ? "seeded random inputs"
                                                         : "the --verify-input tensors") +
                  "; '" + r.output + "' was not written";
      }
    }
    if (r.exit_code == 0) {
      // The renames and the directory's fsync are the write phase's too (as a
      // save's truncation and fsyncs would be): --timings' write includes them.
      const auto tc = std::chrono::steady_clock::now();
      if (handed_over) *handed_over = files.hand_over();
      if (!handed_over || handed_over->empty()) {
        try {
          files.commit();
        } catch (const OutputError& e) {
          throw ConvertError(1, e.what());
        }
      }
      r.times.write_ms += ms_since(tc);
      r.ok = true;
    }
  } catch (const ConvertError& e) {
    r.exit_code = e.exit_code();
    r.error = e.what();
    r.error_node = e.node();
    r.error_location = e.location();
    r.unsupported = e.unsupported();
  } catch (const c10::Error& e) {
    r.exit_code = 1;
    r.error = "model '" + r.model + "': " + e.what_without_backtrace();
  } catch (const std::bad_alloc&) {
    r.exit_code = 1;
    r.error = "model '" + r.model + "': out of memory while converting it";
  } catch (const std::exception& e) {
    r.exit_code = 1;
    r.error = "model '" + r.model + "': " + e.what();
  }
  r.total_ms = ms_since(t0);
  return r;
}

namespace {

// JobResult <-> JSON, for reports and for results that come from a worker.
nlohmann::ordered_json to_json(const OutputCheck& o) {
  return {{"name", o.name},
          {"shape", o.shape},
          {"dtype", o.dtype},
          {"quantized", o.quantized},
          {"quantum", o.quantum},
          {"max_abs_err", o.max_abs_err},
          {"max_rel_err", o.max_rel_err},
          {"rms_rel_err", o.rms_rel_err},
          {"rule", o.rule},
          {"rms_bound", o.rms_bound},
          {"max_quanta", o.max_quanta},
          {"off_by_one", o.off_by_one},
          {"off_by_one_share", o.off_by_one_share()},
          {"numel", o.numel},
          {"ok", o.ok},
          {"problem", o.problem},
          {"warning", o.warning}};
}

// NaN and infinities travel as null (JSON has no such numbers).
double number(const nlohmann::ordered_json& j) {
  return j.is_number() ? j.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

OutputCheck output_check_from(const nlohmann::ordered_json& j) {
  OutputCheck o;
  o.name = j.value("name", std::string());
  o.shape = j.at("shape").get<std::vector<int64_t>>();
  o.dtype = j.at("dtype").get<std::string>();
  o.quantized = j.at("quantized").get<bool>();
  o.quantum = number(j.at("quantum"));
  o.max_abs_err = number(j.at("max_abs_err"));
  o.max_rel_err = number(j.at("max_rel_err"));
  o.rms_rel_err = j.contains("rms_rel_err") ? number(j.at("rms_rel_err")) : 0.0;
  o.rule = j.value("rule", std::string());
  o.rms_bound = j.contains("rms_bound") ? number(j.at("rms_bound")) : 0.0;
  o.max_quanta = j.at("max_quanta").get<int64_t>();
  o.off_by_one = j.at("off_by_one").get<int64_t>();
  o.numel = j.at("numel").get<int64_t>();
  o.ok = j.at("ok").get<bool>();
  o.problem = j.at("problem").get<std::string>();
  o.warning = j.at("warning").get<std::string>();
  return o;
}

nlohmann::ordered_json to_json(const Divergence& d) {
  auto or_null = [](bool known, auto v) {
    return known ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
  };
  const bool found = d.error.empty() && d.operation >= 0;
  return {{"located", found},
          {"error", or_null(!d.error.empty(), d.error)},
          {"operation", or_null(found, d.operation)},
          {"type", or_null(found, d.type)},
          {"node", or_null(found, d.node)},
          {"source", or_null(found && !d.source.empty(), d.source)},
          {"code", or_null(found, d.code)},
          {"value", or_null(found, d.value)},
          {"tolerance", or_null(found, d.tolerance)},
          {"check", found ? to_json(d.check) : nlohmann::ordered_json(nullptr)},
          {"compared", d.compared},
          {"uncompared", d.uncompared}};
}

Divergence divergence_from(const nlohmann::ordered_json& j) {
  Divergence d;
  auto text = [&](const char* key) {
    return j.at(key).is_string() ? j.at(key).get<std::string>() : std::string();
  };
  d.error = text("error");
  if (j.at("operation").is_number()) d.operation = j.at("operation").get<int64_t>();
  d.type = text("type");
  d.node = text("node");
  d.source = text("source");
  d.code = text("code");
  d.value = text("value");
  d.tolerance = text("tolerance");
  if (j.at("check").is_object()) d.check = output_check_from(j.at("check"));
  d.compared = j.at("compared").get<int64_t>();
  d.uncompared = j.at("uncompared").get<int64_t>();
  return d;
}

}  // namespace

nlohmann::ordered_json kinds_json(const std::vector<NodeKindCount>& kinds) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const NodeKindCount& k : kinds) {
    out.push_back({{"kind", k.kind},
                   {"count", k.count},
                   {"supported", k.supported},
                   {"locations", k.locations},
                   {"first_node", k.first_node}});
  }
  return out;
}

namespace {

std::vector<NodeKindCount> kinds_from(const nlohmann::ordered_json& j) {
  std::vector<NodeKindCount> out;
  for (const nlohmann::ordered_json& k : j) {
    NodeKindCount n;
    n.kind = k.at("kind").get<std::string>();
    n.count = k.at("count").get<int64_t>();
    n.supported = k.at("supported").get<bool>();
    n.locations = k.at("locations").get<std::vector<std::string>>();
    n.first_node = k.at("first_node").get<std::string>();
    out.push_back(std::move(n));
  }
  return out;
}

nlohmann::ordered_json to_json(const JobResult& r) {
  nlohmann::ordered_json j = {
      {"model", r.model},
      {"status", r.ok ? "ok" : "failed"},
      {"output", r.ok ? nlohmann::ordered_json(r.output) : nlohmann::ordered_json(nullptr)},
  };
  if (!r.ok) {
    auto or_null = [](const std::string& s) {
      return s.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s);
    };
    j["exit_code"] = r.exit_code;
    j["error"] = {{"message", r.error},
                  {"node", or_null(r.error_node)},
                  {"source", or_null(r.error_location)}};
    if (!r.unsupported.empty()) j["unsupported"] = kinds_json(r.unsupported);
  }
  if (r.ok && !r.output_sha256.empty()) j["output_sha256"] = r.output_sha256;
  if (r.ok && !r.lite_sha256.empty()) j["lite_sha256"] = r.lite_sha256;
  if (r.operation_count > 0) {
    j["operand_count"] = r.operand_count;
    j["operation_count"] = r.operation_count;
    j["operations"] = r.operations;
    j["nnapi_feature_level"] = r.feature_level;
    j["android_api"] = r.android_api;
    j["weight_bytes"] = r.weight_bytes;
  }
  if (r.nnapi_models > 0) {
    j["cpu_fallback"] = {{"nnapi_models", r.nnapi_models},
                         {"torchscript_nodes", kinds_json(r.torchscript_nodes)}};
  }
  if (!r.arguments.empty()) {
    nlohmann::ordered_json args = nlohmann::ordered_json::array();
    for (const EntryArgument& a : r.arguments) {
      args.push_back({{"name", a.name}, {"type", a.type}, {"spec", a.spec.text}});
    }
    j["arguments"] = std::move(args);
  }
  if (!r.notes.empty()) j["notes"] = r.notes;
  const PhaseTimes& t = r.times;
  j["times_ms"] = {{"load", t.load_ms},         {"freeze", t.freeze_ms},
                   {"lower", t.lower_ms},       {"serialize", t.serialize_ms},
                   {"validate", t.validate_ms}, {"write", t.write_ms},
                   {"total", r.total_ms}};
  if (r.verify) {
    nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
    for (const OutputCheck& o : r.verify->outputs) outputs.push_back(to_json(o));
    j["verify"] = {{"ok", r.verify->ok},         {"runtime", r.verify->runtime_library},
                   {"atol", r.verify->atol},     {"rtol", r.verify->rtol},
                   {"shapes", r.verify->shapes}, {"outputs", outputs}};
    if (r.verify->float16_roundings > 0) {
      j["verify"]["float16_rms"] = {{"operations", r.verify->float16_roundings},
                                    {"unit_roundoff", kFloat16UnitRoundoff},
                                    {"bound", r.verify->float16_rms_bound}};
    }
    if (r.verify->dynamic_quantization) j["verify"]["dynamic_quantization"] = true;
    if (r.verify->eager_default_engine) j["verify"]["eager_default_engine"] = true;
    if (r.verify->shapes_multiple) j["verify"]["shapes_multiple"] = r.verify->shapes_multiple;
    if (r.verify->divergence) j["verify"]["divergence"] = to_json(*r.verify->divergence);
    if (!r.verify->state.empty()) {
      j["verify"]["state"] = r.verify->state;
      j["verify"]["calls"] = r.verify->calls;
    }
  }
  if (!r.state.is_null()) j["state"] = r.state;
  if (!r.quantization.is_null()) j["quantization"] = r.quantization;
  return j;
}

}  // namespace

JobResult job_result_from(const nlohmann::ordered_json& j, const std::string& output) {
  JobResult r;
  r.model = j.at("model").get<std::string>();
  r.output = output;
  r.ok = j.at("status") == "ok";
  if (j.contains("output_sha256")) r.output_sha256 = j.at("output_sha256").get<std::string>();
  if (j.contains("lite_sha256")) r.lite_sha256 = j.at("lite_sha256").get<std::string>();
  if (!r.ok) {
    r.exit_code = j.at("exit_code").get<int>();
    const nlohmann::ordered_json& e = j.at("error");
    r.error = e.at("message").get<std::string>();
    if (e.at("node").is_string()) r.error_node = e.at("node").get<std::string>();
    if (e.at("source").is_string()) r.error_location = e.at("source").get<std::string>();
    if (j.contains("unsupported")) r.unsupported = kinds_from(j.at("unsupported"));
  }
  if (j.contains("operation_count")) {
    r.operand_count = j.at("operand_count").get<int64_t>();
    r.operation_count = j.at("operation_count").get<int64_t>();
    r.operations = j.at("operations").get<std::map<std::string, int>>();
    r.feature_level = j.at("nnapi_feature_level").get<int>();
    r.android_api = j.at("android_api").get<int>();
    r.weight_bytes = j.at("weight_bytes").get<int64_t>();
  }
  if (j.contains("cpu_fallback")) {
    r.nnapi_models = j.at("cpu_fallback").at("nnapi_models").get<int64_t>();
    r.torchscript_nodes = kinds_from(j.at("cpu_fallback").at("torchscript_nodes"));
  }
  if (j.contains("arguments")) {
    for (const nlohmann::ordered_json& a : j.at("arguments")) {
      EntryArgument arg{a.at("name").get<std::string>(), a.at("type").get<std::string>(), {}};
      arg.spec.text = a.at("spec").get<std::string>();  // all a report says of it
      r.arguments.push_back(std::move(arg));
    }
  }
  if (j.contains("notes")) r.notes = j.at("notes").get<std::vector<std::string>>();
  const nlohmann::ordered_json& t = j.at("times_ms");
  r.times = {number(t.at("load")),      number(t.at("freeze")),   number(t.at("lower")),
             number(t.at("serialize")), number(t.at("validate")), number(t.at("write"))};
  r.total_ms = number(t.at("total"));
  if (j.contains("verify")) {
    const nlohmann::ordered_json& v = j.at("verify");
    VerifyReport rep;
    rep.ok = v.at("ok").get<bool>();
    rep.runtime_library = v.at("runtime").get<std::string>();
    rep.atol = v.value("atol", 0.0);
    rep.rtol = v.value("rtol", 0.0);
    if (v.contains("float16_rms")) {
      rep.float16_roundings = v.at("float16_rms").at("operations").get<int64_t>();
      rep.float16_rms_bound = number(v.at("float16_rms").at("bound"));
    }
    rep.dynamic_quantization = v.value("dynamic_quantization", false);
    rep.eager_default_engine = v.value("eager_default_engine", false);
    rep.shapes = v.at("shapes").get<std::vector<std::vector<int64_t>>>();
    rep.shapes_multiple = v.value("shapes_multiple", int64_t{0});
    for (const nlohmann::ordered_json& o : v.at("outputs"))
      rep.outputs.push_back(output_check_from(o));
    if (v.contains("divergence")) rep.divergence = divergence_from(v.at("divergence"));
    if (v.contains("state")) rep.state = v.at("state").get<std::vector<std::string>>();
    rep.calls = v.value("calls", int64_t{1});
    r.verify = std::move(rep);
  }
  if (j.contains("quantization")) r.quantization = j.at("quantization");
  if (j.contains("state")) r.state = j.at("state");
  return r;
}

namespace {

std::string dump(const nlohmann::ordered_json& j, int indent) {
  // Paths are bytes: invalid UTF-8 is replaced, so the document stays JSON.
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

// A worker's result with the outputs it handed over ("staged", which no
// report shows), and the parent's side: those outputs made durable and
// renamed into place (commit_staged), the model failing with the message a
// commit in the worker would have given if that fails, its write time
// including it.
// Paths are bytes, and JSON text is UTF-8: they travel in hexadecimal.
std::string hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string unhex(const std::string& text) {
  auto value = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw std::runtime_error("bad hexadecimal path");
  };
  if (text.size() % 2 != 0) throw std::runtime_error("bad hexadecimal path");
  std::string out;
  for (size_t i = 0; i < text.size(); i += 2) {
    out += static_cast<char>(value(text[i]) * 16 + value(text[i + 1]));
  }
  return out;
}

std::string with_staged(const JobResult& r, const std::vector<Staged>& staged) {
  nlohmann::ordered_json j = to_json(r);
  if (!staged.empty()) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const Staged& f : staged) {
      list.push_back(
          {hex(f.temp), hex(f.target), hex(f.path), f.what});  // what: ASCII, from the program
    }
    j["staged"] = std::move(list);
  }
  return dump(j, -1);
}

std::string settle_outputs(const std::string& line, const std::string& output) {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(line);
  } catch (const std::exception&) {
    return line;  // run_jobs reports it unreadable
  }
  if (!j.is_object() || !j.contains("staged")) return line;
  JobResult r;
  std::vector<Staged> staged;
  try {
    r = job_result_from(j, output);
    for (const nlohmann::ordered_json& f : j.at("staged")) {
      staged.push_back({unhex(f.at(0).get<std::string>()), unhex(f.at(1).get<std::string>()),
                        unhex(f.at(2).get<std::string>()), f.at(3).get<std::string>()});
    }
  } catch (const std::exception& e) {
    return std::string("(staged outputs: ") + e.what() + ")";  // unreadable, as above
  }
  const auto t0 = std::chrono::steady_clock::now();
  try {
    commit_staged(staged);
  } catch (const OutputError& e) {
    r.ok = false;
    r.exit_code = 1;
    r.error = e.what();
  }
  const double ms = ms_since(t0);
  r.times.write_ms += ms;
  r.total_ms += ms;
  return dump(to_json(r), -1);
}

// What to do about a model whose worker did not report.
std::string worker_failure_advice(const TaskFailure& how, double timeout_s) {
  if (!how.start_error.empty())
    return "Raise the limit (ulimit -n, ulimit -u) or give fewer --jobs.";
  if (how.timed_out) {
    return "It ran for " + std::to_string(static_cast<int>(timeout_s)) +
           " s. Loading a TorchScript model runs its code (__setstate__): a model that never "
           "finishes loading is broken or hostile; give a longer --timeout if it is only slow.";
  }
  return "LibTorch failed on it: the file is malformed or was crafted. Save the model again with "
         "torch.jit.save; if it loads in Python, please report it with the file.";
}

}  // namespace

std::vector<size_t> schedule_order(const std::vector<Job>& jobs, int parallel) {
  // Longest-processing-time-first scheduling; a model's file size stands for
  // its conversion time.
  std::vector<size_t> order;
  if (parallel < 2 || jobs.size() <= static_cast<size_t>(parallel)) return order;
  std::vector<uintmax_t> size(jobs.size(), 0);
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::error_code ec;
    const uintmax_t s = fs::file_size(jobs[i].options.model_path, ec);
    size[i] = ec ? 0 : s;
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return size[a] > size[b]; });
  return order;
}

std::vector<JobResult> run_jobs(
    const std::vector<Job>& jobs, int parallel, double timeout_s,
    const std::function<void(size_t, size_t, const JobResult&)>& progress) {
  std::vector<JobResult> results(jobs.size());
  size_t done = 0;
  if (const char* in_process = std::getenv("NNAPI_CONVERT_IN_PROCESS");
      in_process && std::string(in_process) == "1") {
    // For debuggers: no worker processes, so no crash isolation or timeout.
    for (size_t i = 0; i < jobs.size(); ++i) {
      results[i] = run_job(jobs[i]);
      if (progress) progress(++done, jobs.size(), results[i]);
    }
    return results;
  }
  // The lowering table is the same for every model: built once here, before
  // the workers are forked, rather than in each worker's first lowering.
  lowering_table();
  IsolationOptions iso;
  iso.parallel = parallel;
  iso.timeout_s = timeout_s;
  iso.order = schedule_order(jobs, parallel);
  // A worker hands its outputs over once they are written (and verified):
  // this process fsyncs them, renames them into place and fsyncs their
  // directories while the worker loads its next model; the model is done
  // (progress, report, exit status) only after that.
  iso.settle = [&](size_t i, const std::string& line) {
    return settle_outputs(line, jobs[i].output);
  };
  // Workers that together fill the CPUs convert with one intra-op thread
  // each: LibTorch's OpenMP threads of several processes would otherwise
  // compete for the same CPUs, spinning while they wait (a fifth of a
  // two-worker batch's CPU time on two CPUs went to libgomp's spinning).
  const size_t workers = std::min(jobs.size(), static_cast<size_t>(std::max(parallel, 1)));
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int intra_op = workers > 1 ? std::max(1, cpus / static_cast<int>(workers)) : 0;
  // A worker that converts several models keeps the memory one frees for the
  // next: main() has every buffer of 128 KiB or more mmapped and unmapped
  // again (for a single conversion's peak), so each model faulted in all of
  // its weights afresh. Here buffers up to 32 MiB come from the heap and up
  // to 128 MiB of free heap is kept: the batch of tools/bench/run.py took
  // 69 k page faults instead of 131 k, 1.79 s of CPU time instead of 2.02 s
  // (perf stat, two runs each), its largest worker peaking at 195-199 MiB
  // instead of 177 MiB.
  const bool reuse_memory = jobs.size() > workers;
  run_isolated(
      jobs.size(), iso,
      [&](size_t i) {
        if (intra_op > 0) at::set_num_threads(intra_op);  // on this task's thread
        if (reuse_memory) {
          ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
          ::mallopt(M_TRIM_THRESHOLD, 128 << 20);
        }
        std::vector<Staged> staged;
        JobResult r = run_job(jobs[i], &staged);
        return with_staged(r, staged);
      },
      [&](size_t i, const TaskFailure& how) {
        JobResult r;
        r.model = jobs[i].options.model_path;
        r.output = jobs[i].output;
        r.exit_code = 1;
        r.error = "model '" + r.model + "': converting it " + how.describe() + ". " +
                  worker_failure_advice(how, timeout_s) + " No output was written for it.";
        return dump(to_json(r), -1);
      },
      [&](size_t i, const std::string& line) {
        try {
          results[i] = job_result_from(nlohmann::ordered_json::parse(line), jobs[i].output);
        } catch (const std::exception& e) {
          results[i] = JobResult();
          results[i].model = jobs[i].options.model_path;
          results[i].exit_code = 1;
          results[i].error = "model '" + results[i].model +
                             "': its worker process sent an unreadable result (" + e.what() + ")";
        }
        if (progress) progress(++done, jobs.size(), results[i]);
      });
  return results;
}

namespace {

// What an entry's options imply and exclude, as the command line's options
// do (src/cli/convert_command.cpp): float16_io is float16 with float16 inputs
// and outputs, which --cpu-fallback's float32 TorchScript parts cannot take;
// a lite_bytecode_version writes the .ptl.
void check_entry_options(Job& job, bool float16_off, const nlohmann::ordered_json& entry,
                         const std::string& where) {
  const nlohmann::ordered_json* o = entry.contains("options") ? &entry["options"] : nullptr;
  auto said = [&](const char* key) { return o && o->contains(key); };
  auto source = [&](const char* key, const char* cli) {
    return said(key) ? std::string("option \"") + key + "\"" : std::string(cli);
  };
  if (job.options.float16_io) {
    if (float16_off) {
      throw ConvertError(2, where + ": option \"float16\": false contradicts " +
                                source("float16_io", "--float16-io") +
                                ", which is float16 with float16 inputs and outputs; give one");
    }
    if (job.options.cpu_fallback) {
      throw ConvertError(2, where + ": " + source("float16_io", "--float16-io") +
                                " cannot be combined with " +
                                source("cpu_fallback", "--cpu-fallback") +
                                ": the TorchScript parts between the NNAPI models compute in "
                                "float32; give \"float16\": true (float32 inputs and outputs)");
    }
    job.options.float16 = true;
  }
  if (job.options.lite_bytecode_version != 0) {
    if (said("lite") && !o->at("lite").get<bool>()) {
      throw ConvertError(2, where + ": option \"lite\": false contradicts " +
                                source("lite_bytecode_version", "--lite-bytecode-version") +
                                ", which writes the .ptl at that version; give one");
    }
    job.lite = true;
  }
}

}  // namespace

std::vector<Job> read_manifest(const std::string& path, const Job& defaults,
                               const std::string& out_dir) {
  using json = nlohmann::ordered_json;
  std::ifstream f(path);
  if (!f) {
    throw ConvertError(2, "manifest '" + path + "' cannot be read: " + std::strerror(errno));
  }
  std::stringstream ss;
  ss << f.rdbuf();
  json doc;
  try {
    constexpr int kMaxDepth = 64;
    doc = json::parse(ss.str(), [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxDepth) {
        throw std::runtime_error("nested more than " + std::to_string(kMaxDepth) + " levels deep");
      }
      return true;
    });
  } catch (const std::exception& e) {
    throw ConvertError(2, "manifest '" + path + "' is not valid JSON: " + e.what());
  }
  const json* list = &doc;
  if (doc.is_object()) {
    for (const auto& kv : doc.items()) {
      if (kv.key() != "models") {
        throw ConvertError(2, "manifest '" + path + "': unknown key \"" + kv.key() +
                                  "\" (the only top-level key is \"models\")");
      }
    }
    if (doc.contains("models")) list = &doc["models"];
  }
  if (!list->is_array()) {
    throw ConvertError(2, "manifest '" + path +
                              "' must be a JSON list of "
                              "{\"model\", \"inputs\", \"output\", \"options\"} objects, or an "
                              "object with such a list under \"models\"");
  }
  fs::path base = fs::path(path).parent_path();
  auto resolve = [&](const std::string& p) {
    return fs::path(p).is_absolute() || base.empty() ? p : (base / p).string();
  };
  std::vector<Job> jobs;
  for (size_t i = 0; i < list->size(); ++i) {
    const json& e = (*list)[i];
    std::string where = "manifest '" + path + "' entry " + std::to_string(i);
    auto need = [&](bool ok, const std::string& what) {
      if (!ok) throw ConvertError(2, where + ": " + what);
    };
    auto path_of = [&](const char* key) {
      need(e[key].is_string() && !e[key].get<std::string>().empty() &&
               e[key].get<std::string>().find('\0') == std::string::npos,
           std::string("\"") + key + "\" must be a non-empty path (without NUL characters)");
      return resolve(e[key].get<std::string>());
    };
    need(e.is_object(), "is not an object");
    for (const auto& kv : e.items()) {
      static const std::set<std::string> keys = {"model", "inputs", "output", "options"};
      need(keys.count(kv.key()) != 0, "unknown key \"" + kv.key() +
                                          "\" (an entry has \"model\", \"inputs\", "
                                          "\"output\" and \"options\")");
    }
    need(e.contains("model"), "needs \"model\": PATH");
    Job job = defaults;
    bool float16_off = false;  // the entry says "float16": false
    job.options.model_path = path_of("model");
    if (e.contains("inputs")) {
      need(e["inputs"].is_array(), "\"inputs\" must be a list of specs");
      std::vector<std::string> specs;
      for (const json& s : e["inputs"]) {
        need(s.is_string(), "\"inputs\" must be a list of spec strings");
        specs.push_back(s.get<std::string>());
      }
      try {
        set_input_specs(job.options, specs);
      } catch (const SpecError& err) {
        throw ConvertError(2, where + ": " + err.what());
      }
    }
    need(!job.options.inputs.empty(), "has no \"inputs\" (and no --input was given)");
    job.output = e.contains("output") ? path_of("output")
                                      : default_output_path(job.options.model_path, out_dir);
    if (e.contains("options")) {
      const json& o = e["options"];
      need(o.is_object(), "\"options\" must be an object");
      for (const auto& kv : o.items()) {
        const std::string& k = kv.key();
        const json& v = kv.value();
        auto flag = [&](bool* dst) {
          need(v.is_boolean(), "option \"" + k + "\" must be true or false");
          *dst = v.get<bool>();
        };
        if (k == "nhwc") {
          flag(&job.options.nhwc);
        } else if (k == "float16") {
          flag(&job.options.float16);
          float16_off = !job.options.float16;
        } else if (k == "float16_io") {
          flag(&job.options.float16_io);
        } else if (k == "lite_bytecode_version") {
          // (a bound first, so an absurd number is named as the JSON has it)
          need(v.is_number_integer() && std::abs(v.get<double>()) < 1e6,
               "option \"lite_bytecode_version\" must be a lite-interpreter bytecode version, a "
               "whole number from " +
                   std::to_string(kOldestLiteBytecodeVersion) + " to " +
                   std::to_string(kNewestLiteBytecodeVersion));
          check_lite_bytecode_version(v.get<int>(), where + ": option \"lite_bytecode_version\"");
          job.options.lite_bytecode_version = v.get<int>();
        } else if (k == "relax_f32_to_f16") {
          flag(&job.options.relax_f32_to_f16);
        } else if (k == "fuse_activations") {
          flag(&job.options.fuse_activations);
        } else if (k == "cpu_fallback") {
          flag(&job.options.cpu_fallback);
        } else if (k == "min_android_api") {
          need(v.is_number_integer() && v.get<int64_t>() >= nnapi::kMinAndroidApi &&
                   v.get<int64_t>() <= nnapi::kMaxAndroidApi,
               "option \"min_android_api\" must be an Android API level from 29 to 35");
          job.options.min_android_api = v.get<int>();
        } else if (k == "eval") {
          flag(&job.options.eval);
        } else if (k == "submodule" || k == "method") {
          need(v.is_string() && !v.get<std::string>().empty(),
               "option \"" + k + "\" must be a non-empty name");
          (k == "method" ? job.options.method : job.options.submodule) = v.get<std::string>();
        } else if (k == "int16_for_qint16") {
          flag(&job.options.use_int16_for_qint16);
        } else if (k == "lite") {
          flag(&job.lite);
        } else if (k == "preference") {
          int code = v.is_string() ? preference_code(v.get<std::string>()) : -1;
          need(code >= 0,
               "option \"preference\" must be low-power, fast-single-answer or "
               "sustained-speed");
          job.options.compilation_preference = code;
        } else if (k == "parts") {
          need(v.is_string() && !v.get<std::string>().empty() &&
                   v.get<std::string>().find('\0') == std::string::npos,
               "option \"parts\" must be a directory path");
          job.parts = resolve(v.get<std::string>());
        } else if (k == "return_shapes") {
          need(v.is_array(), "option \"return_shapes\" must be a list");
          job.options.return_shapes.clear();
          for (const json& s : v) {
            need(s.is_string(), "return_shapes are strings like \"1x8x0x0\"");
            job.options.return_shapes.push_back(parse_return_shape(s.get<std::string>()));
          }
        } else {
          throw ConvertError(2, where + ": unknown option \"" + k + "\"");
        }
      }
    }
    check_entry_options(job, float16_off, e, where);
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) throw ConvertError(2, "manifest '" + path + "' lists no models");
  return jobs;
}

namespace {

// One file, however it is named: its inode when it exists (hard links and
// symlinks compare equal), else its absolute path; "-", /dev/stdout and
// /dev/fd/N name descriptors.
std::string file_key(const std::string& path) {
  const int fd = output_descriptor(path);
  if (fd >= 0) return "descriptor " + std::to_string(fd);
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    return "inode " + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  }
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return "path " + (ec ? path : p.string());
}

}  // namespace

void check_output_plan(const std::vector<Job>& jobs,
                       const std::vector<std::pair<std::string, std::string>>& other_outputs,
                       const std::string& manifest) {
  std::map<std::string, std::string> inputs, outputs;  // key -> description
  if (!manifest.empty()) inputs.emplace(file_key(manifest), "the manifest '" + manifest + "'");
  for (const Job& job : jobs) {
    inputs.emplace(file_key(job.options.model_path), "the model '" + job.options.model_path + "'");
  }
  auto plan = [&](const std::string& path, const std::string& what, const std::string& model) {
    bool device = false;
    try {
      const OutputTarget target = resolve_output_target(path, what);
      struct stat st;
      device = target.kind == OutputTarget::Kind::Node && ::stat(path.c_str(), &st) == 0 &&
               S_ISCHR(st.st_mode);
    } catch (const OutputError& e) {
      throw ConvertError(2, e.what());
    }
    std::string key = file_key(path);
    std::string desc =
        what + " '" + path + "'" + (model.empty() ? "" : " of model '" + model + "'");
    auto in = inputs.find(key);
    if (in != inputs.end()) {
      throw ConvertError(
          2, desc + " would overwrite " + in->second + ", which is read: write it somewhere else");
    }
    // Several outputs may go to one character device (/dev/null): each is
    // written through, none replaces another.
    if (device) return;
    auto [it, fresh] = outputs.emplace(key, desc);
    if (!fresh) {
      throw ConvertError(
          2, it->second + " and " + desc +
                 " would both be written to one file; give them different names (for several "
                 "models, --out-dir or a --manifest with an \"output\" per "
                 "model)");
    }
  };
  for (const Job& job : jobs) {
    const std::string& model = job.options.model_path;
    plan(job.output, "output", model);
    if (job.lite) plan(lite_output_path(job.output), "--lite output", model);
    if (!job.parts.empty()) {
      for (const std::string& p : parts_paths(job.parts)) plan(p, "--parts file", model);
    }
  }
  for (const auto& [path, what] : other_outputs) plan(path, what, "");
}

std::string report_json(const std::vector<JobResult>& results) {
  nlohmann::ordered_json models = nlohmann::ordered_json::array();
  size_t failed = 0;
  for (const JobResult& r : results) {
    models.push_back(to_json(r));
    failed += !r.ok;
  }
  nlohmann::ordered_json doc = {{"schema_version", 3},
                                {"models", models},
                                {"converted", results.size() - failed},
                                {"failed", failed}};
  return dump(doc, 2) + "\n";
}

}  // namespace nnapi_convert

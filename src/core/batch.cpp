#include "nnapi_convert/batch.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/json.h"

namespace nnapi_convert {
namespace {

namespace fs = std::filesystem;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

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

int preference_code(const std::string& name) {
  if (name == "low-power") return 0;
  if (name == "fast-single-answer") return 1;
  if (name == "sustained-speed") return 2;
  return -1;
}

JobResult run_job(const Job& job) {
  JobResult r;
  r.model = job.options.model_path;
  r.output = job.output;
  auto t0 = std::chrono::steady_clock::now();
  try {
    Conversion c = convert(job.options);
    auto tw = std::chrono::steady_clock::now();
    if (!job.parts.empty()) write_parts(c, job.options, job.parts);
    write_nnapi_module(c, job.options, job.output, job.lite);
    c.times.write_ms = ms_since(tw);
    r.operand_count = c.operand_count;
    r.operation_count = c.operation_count;
    r.weight_bytes = c.weight_bytes;
    r.operations = c.operations;
    r.times = c.times;
    if (job.verify) {
      std::lock_guard<std::mutex> lock(verify_mutex);
      r.verify = verify_conversion(job.options, job.output, job.verify_options);
      if (!r.verify->ok) {
        r.exit_code = 1;
        r.error = "model '" + r.model + "': the converted module '" + r.output +
                  "' does not match the model on seeded random inputs";
      }
    }
    // Only now: a throw from verify above must leave the job failed.
    r.ok = r.exit_code == 0;
  } catch (const ConvertError& e) {
    r.exit_code = e.exit_code();
    r.error = e.what();
    r.error_node = e.node();
    r.error_location = e.location();
  } catch (const c10::Error& e) {
    r.exit_code = 1;
    r.error = "model '" + r.model + "': " + e.what_without_backtrace();
  } catch (const std::exception& e) {
    r.exit_code = 1;
    r.error = "model '" + r.model + "': " + e.what();
  }
  r.total_ms = ms_since(t0);
  return r;
}

std::vector<JobResult> run_jobs(
    const std::vector<Job>& jobs, int parallel,
    const std::function<void(size_t, size_t, const JobResult&)>& progress) {
  std::vector<JobResult> results(jobs.size());
  std::atomic<size_t> next{0};
  size_t done = 0;
  std::mutex progress_mutex;
  auto worker = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      results[i] = run_job(jobs[i]);
      std::lock_guard<std::mutex> lock(progress_mutex);
      ++done;
      if (progress) progress(done, jobs.size(), results[i]);
    }
  };
  size_t n = std::min<size_t>(std::max(parallel, 1), jobs.size());
  if (n <= 1) {
    worker();
    return results;
  }
  std::vector<std::thread> threads;
  for (size_t t = 0; t < n; ++t) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  return results;
}

std::vector<Job> read_manifest(const std::string& path, const Job& defaults,
                               const std::string& out_dir) {
  std::ifstream f(path);
  if (!f) throw ConvertError(2, "manifest '" + path + "' cannot be read");
  std::stringstream ss;
  ss << f.rdbuf();
  json::Value doc;
  try {
    doc = json::parse(ss.str());
  } catch (const std::exception& e) {
    throw ConvertError(2, "manifest '" + path + "' is not valid JSON: " + e.what());
  }
  const json::Value* list = &doc;
  if (doc.kind == json::Value::Object && doc.has("models")) list = &doc["models"];
  if (list->kind != json::Value::Array) {
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
  for (size_t i = 0; i < list->arr.size(); ++i) {
    const json::Value& e = list->arr[i];
    std::string where = "manifest '" + path + "' entry " + std::to_string(i);
    auto need = [&](bool ok, const std::string& what) {
      if (!ok) throw ConvertError(2, where + ": " + what);
    };
    need(e.kind == json::Value::Object, "is not an object");
    need(e.has("model") && e["model"].kind == json::Value::String, "needs \"model\": PATH");
    Job job = defaults;
    job.options.model_path = resolve(e["model"].str);
    if (e.has("inputs")) {
      need(e["inputs"].kind == json::Value::Array, "\"inputs\" must be a list of specs");
      job.options.inputs.clear();
      for (const json::Value& s : e["inputs"].arr) {
        need(s.kind == json::Value::String, "\"inputs\" must be a list of spec strings");
        try {
          job.options.inputs.push_back(parse_input_spec(s.str));
        } catch (const SpecError& err) {
          throw ConvertError(2, where + ": " + err.what());
        }
      }
    }
    need(!job.options.inputs.empty(), "has no \"inputs\" (and no --input was given)");
    job.output = e.has("output") ? resolve(e["output"].str)
                                 : default_output_path(job.options.model_path, out_dir);
    if (e.has("options")) {
      const json::Value& o = e["options"];
      need(o.kind == json::Value::Object, "\"options\" must be an object");
      for (const auto& kv : o.obj) {
        const std::string& k = kv.first;
        const json::Value& v = kv.second;
        auto flag = [&](bool* dst) {
          need(v.kind == json::Value::Bool, "option \"" + k + "\" must be true or false");
          *dst = v.b;
        };
        if (k == "nhwc") {
          flag(&job.options.nhwc);
        } else if (k == "relax_f32_to_f16") {
          flag(&job.options.relax_f32_to_f16);
        } else if (k == "fuse_activations") {
          flag(&job.options.fuse_activations);
        } else if (k == "int16_for_qint16") {
          flag(&job.options.use_int16_for_qint16);
        } else if (k == "lite") {
          flag(&job.lite);
        } else if (k == "preference") {
          int code = v.kind == json::Value::String ? preference_code(v.str) : -1;
          need(code >= 0,
               "option \"preference\" must be low-power, fast-single-answer or "
               "sustained-speed");
          job.options.compilation_preference = code;
        } else if (k == "parts") {
          need(v.kind == json::Value::String, "option \"parts\" must be a directory path");
          job.parts = resolve(v.str);
        } else if (k == "return_shapes") {
          need(v.kind == json::Value::Array, "option \"return_shapes\" must be a list");
          job.options.return_shapes.clear();
          for (const json::Value& s : v.arr) {
            need(s.kind == json::Value::String, "return_shapes are strings like \"1x8x0x0\"");
            job.options.return_shapes.push_back(parse_return_shape(s.str));
          }
        } else {
          throw ConvertError(2, where + ": unknown option \"" + k + "\"");
        }
      }
    }
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) throw ConvertError(2, "manifest '" + path + "' lists no models");
  return jobs;
}

std::string report_json(const std::vector<JobResult>& results) {
  std::ostringstream os;
  os.precision(6);
  os << "{\n  \"models\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    const JobResult& r = results[i];
    os << (i ? "," : "") << "\n    {\"model\": " << json::quote(r.model)
       << ", \"status\": " << (r.ok ? "\"ok\"" : "\"failed\"")
       << ", \"output\": " << (r.ok ? json::quote(r.output) : "null");
    if (!r.ok) {
      os << ", \"exit_code\": " << r.exit_code
         << ", \"error\": {\"message\": " << json::quote(r.error)
         << ", \"node\": " << (r.error_node.empty() ? "null" : json::quote(r.error_node))
         << ", \"source\": " << (r.error_location.empty() ? "null" : json::quote(r.error_location))
         << "}";
    }
    if (r.operation_count > 0) {
      os << ", \"operand_count\": " << r.operand_count
         << ", \"operation_count\": " << r.operation_count << ", \"operations\": {";
      bool first = true;
      for (const auto& kv : r.operations) {
        os << (first ? "" : ", ") << json::quote(kv.first) << ": " << kv.second;
        first = false;
      }
      os << "}, \"weight_bytes\": " << r.weight_bytes;
    }
    const PhaseTimes& t = r.times;
    os << ", \"times_ms\": {\"load\": " << t.load_ms << ", \"freeze\": " << t.freeze_ms
       << ", \"lower\": " << t.lower_ms << ", \"serialize\": " << t.serialize_ms
       << ", \"write\": " << t.write_ms << ", \"total\": " << r.total_ms << "}";
    if (r.verify) {
      os << ", \"verify\": {\"ok\": " << (r.verify->ok ? "true" : "false") << ", \"outputs\": [";
      for (size_t k = 0; k < r.verify->outputs.size(); ++k) {
        const OutputCheck& o = r.verify->outputs[k];
        os << (k ? ", " : "") << "{\"max_abs_err\": " << o.max_abs_err
           << ", \"max_rel_err\": " << o.max_rel_err
           << ", \"off_by_one_share\": " << o.off_by_one_share()
           << ", \"ok\": " << (o.ok ? "true" : "false") << "}";
      }
      os << "]}";
    }
    os << "}";
  }
  size_t failed = 0;
  for (const JobResult& r : results) failed += !r.ok;
  os << "\n  ],\n  \"converted\": " << results.size() - failed << ",\n  \"failed\": " << failed
     << "\n}\n";
  return os.str();
}

}  // namespace nnapi_convert

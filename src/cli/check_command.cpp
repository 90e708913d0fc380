// `nnapi-convert check MODEL... --input SPEC ...`: which node kinds convert and
// which do not, and whether the whole model does; writes nothing.
// `nnapi-convert list-ops`: the node kinds nnapi-convert lowers.
#include "nnapi_convert/check_command.h"

#include <spdlog/spdlog.h>

#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli.h"
#include "core/isolation.h"
#include "nnapi_convert/converter.h"

namespace nnapi_convert::cli {
namespace {

using Json = nlohmann::ordered_json;

std::string dump(const Json& j, int indent) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

Json check_json(const CheckReport& r) {
  Json j = {{"model", r.model},
            {"converts", r.converts},
            {"nodes", r.node_count},
            {"kinds", kinds_json(r.kinds)}};
  if (r.converts) {
    j["operand_count"] = r.operand_count;
    j["operation_count"] = r.operation_count;
    j["operations"] = r.operations;
    j["nnapi_feature_level"] = r.feature_level;
    j["android_api"] = r.android_api;
    if (!r.state.empty()) {
      Json state = Json::array();
      for (const StateAttribute& s : r.state) {
        state.push_back(
            {{"attribute", s.name}, {"shape", s.initial.sizes().vec()}, {"written_by", s.node}});
      }
      j["state"] = state;
    }
    if (r.nnapi_models > 0) {
      j["cpu_fallback"] = {{"nnapi_models", r.nnapi_models},
                           {"torchscript_nodes", kinds_json(r.torchscript_nodes)}};
    }
  } else {
    j["error"] = {{"message", r.error}, {"node", r.error_node}, {"source", r.error_location}};
  }
  return j;
}

Json failure_json(const std::string& model, const std::string& message) {
  return {{"model", model},
          {"converts", false},
          {"error", {{"message", message}, {"node", ""}, {"source", ""}}}};
}

void print_text(const Json& j) {
  std::ostringstream os;
  const std::string model = j["model"].get<std::string>();
  if (!j.contains("kinds")) {
    os << model << ": cannot be checked: " << j["error"]["message"].get<std::string>() << "\n";
    std::cout << os.str();
    return;
  }
  size_t width = 0;
  int unsupported = 0;
  for (const Json& k : j["kinds"]) {
    width = std::max(width, k["kind"].get<std::string>().size());
    unsupported += !k["supported"].get<bool>();
  }
  os << model << ": " << j["nodes"].get<int64_t>() << " nodes of " << j["kinds"].size()
     << " kinds, " << unsupported << " of them not supported\n";
  for (const Json& k : j["kinds"]) {
    os << "  " << std::left << std::setw(static_cast<int>(width)) << k["kind"].get<std::string>()
       << std::right << std::setw(6) << k["count"].get<int64_t>() << "  "
       << (k["supported"].get<bool>() ? "ok" : "NOT SUPPORTED");
    if (!k["supported"].get<bool>() && !k["locations"].empty()) {
      os << " at ";
      size_t shown = 0;
      for (const Json& loc : k["locations"]) {
        if (shown == 3) {
          os << " and " << k["locations"].size() - 3 << " more";
          break;
        }
        os << (shown++ ? ", " : "") << loc.get<std::string>();
      }
    }
    os << "\n";
  }
  if (j["converts"].get<bool>()) {
    os << "converts: " << j["operation_count"].get<int64_t>() << " NNAPI operations (";
    bool first = true;
    for (const auto& op : j["operations"].items()) {
      os << (first ? "" : ", ") << op.key() << " " << op.value().get<int>();
      first = false;
    }
    os << ")\nneeds NNAPI feature level " << j["nnapi_feature_level"].get<int>()
       << ": Android API level " << j["android_api"].get<int>() << " or later\n";
    for (const Json& s : j.value("state", Json::array())) {
      os << "state kept between calls: attribute " << s["attribute"].get<std::string>()
         << " (written by " << s["written_by"].get<std::string>()
         << "), an extra NNAPI input and output\n";
    }
    if (j.contains("cpu_fallback")) {
      const Json& f = j["cpu_fallback"];
      int64_t nodes = 0;
      for (const Json& k : f["torchscript_nodes"]) nodes += k["count"].get<int64_t>();
      os << "--cpu-fallback: " << f["nnapi_models"].get<int64_t>() << " NNAPI model(s); " << nodes
         << " node(s) stay TorchScript\n";
    }
  } else {
    os << "does not convert: " << j["error"]["message"].get<std::string>() << "\n";
  }
  std::cout << os.str();
}

}  // namespace

int run_check(const Args& a) {
  // `check` converts in memory only: the options that write, run or quantize
  // a conversion would be ignored, so they are refused.
  std::string conversion_only;
  for (const auto& [given, name] : {std::pair{!a.output.empty(), "-o"},
                                    {!a.out_dir.empty(), "--out-dir"},
                                    {!a.report.empty(), "--report"},
                                    {!a.junit.empty(), "--junit"},
                                    {a.verify, "--verify"},
                                    {!a.quantize.empty(), "--quantize"}}) {
    if (given) conversion_only += std::string(conversion_only.empty() ? "" : ", ") + name;
  }
  if (!conversion_only.empty()) {
    spdlog::error(
        "check writes, runs and quantizes nothing, so it does not take {}: those are options "
        "of a conversion. Drop them to see what converts, or leave out `check` to convert",
        conversion_only);
    return 2;
  }
  if (a.dot && a.json) {
    spdlog::error(
        "check --dot prints the model's graph as Graphviz DOT and --json a JSON document, both "
        "on standard output: give one of them");
    return 2;
  }
  std::vector<Job> jobs;
  try {
    jobs = plan_jobs(a);
  } catch (const SpecError& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const ConvertError& e) {
    spdlog::error("{}", e.what());
    return e.exit_code();
  }
  if (a.dot && jobs.size() != 1) {
    spdlog::error(
        "check --dot draws one model's graph, but {} models were given; run it once per model "
        "(Graphviz's dot reads one graph per document)",
        jobs.size());
    return 2;
  }
  IsolationOptions iso;
  iso.parallel = 1;
  iso.timeout_s = a.timeout;
  int usage_errors = 0;
  std::vector<std::string> results = run_isolated(
      jobs.size(), iso,
      [&](size_t i) {
        try {
          if (a.dot) {
            CheckGraph graph;
            CheckReport r = check_model(jobs[i].options, &graph);
            Json j = check_json(r);
            j["dot"] = check_dot(r, graph);
            return dump(j, -1);
          }
          return dump(check_json(check_model(jobs[i].options)), -1);
        } catch (const ConvertError& e) {
          Json j = failure_json(jobs[i].options.model_path, e.what());
          j["exit_code"] = e.exit_code();
          return dump(j, -1);
        } catch (const std::exception& e) {
          return dump(failure_json(jobs[i].options.model_path, e.what()), -1);
        }
      },
      [&](size_t i, const TaskFailure& how) {
        const std::string& model = jobs[i].options.model_path;
        return dump(failure_json(model, "model '" + model + "': checking it " + how.describe()),
                    -1);
      },
      nullptr);
  int status = 0;
  Json all = Json::array();
  for (const std::string& line : results) {
    Json j = Json::parse(line);
    if (j.contains("exit_code") && j["exit_code"] == 2) ++usage_errors;
    if (!j["converts"].get<bool>()) status = 1;
    if (a.json) {
      all.push_back(j);
    } else if (a.dot) {
      // Standard output holds the graph alone; why the model does not convert
      // (or cannot be checked) goes to standard error.
      if (j.contains("dot")) std::cout << j["dot"].get<std::string>();
      if (!j["converts"].get<bool>()) spdlog::error("{}", j["error"]["message"].get<std::string>());
    } else {
      print_text(j);
    }
  }
  if (a.json) std::cout << dump(Json{{"schema_version", 1}, {"models", all}}, 2) << "\n";
  std::cout.flush();
  return usage_errors > 0 && jobs.size() == 1 ? 2 : status;
}

int run_list_ops(bool json) {
  std::vector<SupportedKind> kinds = supported_node_kinds();
  if (json) {
    Json out = Json::array();
    for (const SupportedKind& k : kinds) {
      out.push_back({{"kind", k.kind}, {"family", k.family}, {"note", k.note}});
    }
    std::cout << dump(out, 2) << "\n";
    return 0;
  }
  std::ostringstream os;
  os << "nnapi-convert lowers " << kinds.size()
     << " TorchScript node kinds (by the file of src/lower/ that lowers them):\n";
  std::string family;
  for (const SupportedKind& k : kinds) {
    if (k.family != family) {
      family = k.family;
      os << "\n" << family << (family == "folded" ? " (evaluated during conversion)" : "") << ":\n";
    }
    os << "  " << k.kind;
    if (!k.note.empty() && family != "folded") os << "  -- " << k.note;
    os << "\n";
  }
  std::cout << os.str();
  return 0;
}

}  // namespace nnapi_convert::cli

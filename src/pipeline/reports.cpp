// What a batch reports beyond one run: the JUnit XML document, the --shard
// split of a batch across runs, reading --report documents back to merge
// the shards' reports (merge-reports), and a stateful model's `state`.
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "nnapi_convert/batch.h"

namespace nnapi_convert {
namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        // Control characters other than tab and newline are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

// FNV-1a, 64 bits: fixed by its definition, so a model's shard is the same
// with every compiler and library (std::hash promises no such thing).
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

// --junit: one test case per model, for CI systems that read JUnit XML.
std::string junit_xml(const std::vector<JobResult>& results) {
  size_t failures = 0;
  double total_s = 0;
  for (const JobResult& r : results) {
    failures += !r.ok;
    total_s += r.total_ms / 1000;
  }
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << "<testsuite name=\"nnapi-convert\" tests=\"" << results.size() << "\" failures=\""
     << failures << "\" errors=\"0\" time=\"" << total_s << "\">\n";
  for (const JobResult& r : results) {
    os << "  <testcase classname=\"nnapi-convert\" name=\"" << xml_escape(r.model) << "\" time=\""
       << r.total_ms / 1000 << "\"";
    if (r.ok) {
      os << "/>\n";
      continue;
    }
    std::string first_line = r.error.substr(0, r.error.find('\n'));
    os << ">\n    <failure message=\"" << xml_escape(first_line) << "\" type=\"exit " << r.exit_code
       << "\">" << xml_escape(r.error) << "</failure>\n  </testcase>\n";
  }
  os << "</testsuite>\n";
  return os.str();
}

bool Shard::contains(const std::string& model_key) const {
  return static_cast<int>(fnv1a(model_key) % static_cast<uint64_t>(count)) == index - 1;
}

Shard parse_shard(const std::string& text) {
  Shard s;
  const size_t slash = text.find('/');
  auto number = [&](const std::string& part, int& out) {
    if (part.empty() || part.size() > 6 ||
        part.find_first_not_of("0123456789") != std::string::npos)
      return false;
    out = std::stoi(part);
    return true;
  };
  if (slash == std::string::npos || !number(text.substr(0, slash), s.index) ||
      !number(text.substr(slash + 1), s.count) || s.count < 1 || s.index < 1 || s.index > s.count) {
    throw ConvertError(2, "--shard '" + text +
                              "' is not K/N with 1 <= K <= N (e.g. --shard 2/4: the second of "
                              "four shares of the models; a Kubernetes indexed job gives "
                              "--shard $((JOB_COMPLETION_INDEX + 1))/N)");
  }
  return s;
}

std::vector<JobResult> read_reports(const std::vector<std::string>& paths) {
  std::vector<JobResult> results;
  std::set<std::string> seen;
  for (const std::string& path : paths) {
    auto bad = [&](const std::string& why) {
      return ConvertError(2, "merge-reports: '" + path + "' " + why +
                                 "; give the JSON files nnapi-convert --report wrote");
    };
    std::ifstream in(path, std::ios::binary);
    if (!in) throw bad("cannot be read");
    nlohmann::ordered_json doc;
    try {
      doc = nlohmann::ordered_json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw bad(std::string("is not JSON (") + e.what() + ")");
    }
    if (!doc.is_object() || !doc.contains("models") || !doc.at("models").is_array() ||
        !doc.contains("schema_version") || doc.at("schema_version") != 3) {
      throw bad("is not a report of this nnapi-convert (schema_version 3 with a models list)");
    }
    for (const nlohmann::ordered_json& m : doc.at("models")) {
      try {
        const std::string output = m.contains("output") && m.at("output").is_string()
                                       ? m.at("output").get<std::string>()
                                       : "";
        JobResult r = job_result_from(m, output);
        if (!seen.insert(r.model).second) {
          throw ConvertError(2, "merge-reports: '" + path + "' reports model '" + r.model +
                                    "', which an earlier report has too; give each shard's "
                                    "report once (and the shards of one --shard K/N split)");
        }
        results.push_back(std::move(r));
      } catch (const nlohmann::json::exception& e) {
        throw bad(std::string("has a model entry that is not as --report writes it (") + e.what() +
                  ")");
      }
    }
  }
  return results;
}

nlohmann::ordered_json state_json(const Conversion& c) {
  if (c.state.empty()) return nullptr;
  const size_t inputs = c.inp_mem_fmts.size() - c.state.size();
  const size_t outputs = c.retval_count < 0 ? 1 : static_cast<size_t>(c.retval_count);
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (size_t k = 0; k < c.state.size(); ++k) {
    const StateAttribute& s = c.state[k];
    out.push_back({{"attribute", s.name},
                   {"shape", s.first.sizes().vec()},
                   {"dtype", c10::toString(s.first.scalar_type())},
                   {"nnapi_input", inputs + k},
                   {"nnapi_output", outputs + k},
                   {"written_by", s.node}});
  }
  return out;
}

}  // namespace nnapi_convert

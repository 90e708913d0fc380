// `nnapi-convert merge-reports R1.json R2.json ... [--report F] [--junit F]`:
// the reports of a batch's shards (--shard K/N) as one.
#include <spdlog/spdlog.h>

#include "cli/cli.h"
#include "util/output_file.h"

namespace nnapi_convert::cli {

int run_merge_reports(const std::vector<std::string>& reports, const std::string& report,
                      const std::string& junit) {
  std::vector<JobResult> results;
  try {
    results = read_reports(reports);
  } catch (const ConvertError& e) {
    spdlog::error("{}", e.what());
    return e.exit_code();
  }
  size_t failed = 0;
  for (const JobResult& r : results) failed += !r.ok;
  try {
    // Standard output when no file is named: the joined report is the result.
    if (!report.empty() || junit.empty())
      write_output_file(report.empty() ? "-" : report, "--report", report_json(results));
    if (!junit.empty()) write_output_file(junit, "--junit", junit_xml(results));
  } catch (const OutputError& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  spdlog::info("{} reports, {} models: {} converted, {} failed", reports.size(), results.size(),
               results.size() - failed, failed);
  return failed > 0 ? 1 : 0;
}

}  // namespace nnapi_convert::cli

// `nnapi-convert inspect FILE [--json]`: what the device will see.
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli.h"
#include "core/isolation.h"
#include "nnapi_convert/inspect.h"

namespace nnapi_convert::cli {

int run_inspect(const std::string& file, bool json, double timeout, bool dot) {
  // In a worker process, as conversions are: loading a module runs its code,
  // which prints to standard error there and never into the --json document.
  IsolationOptions iso;
  iso.timeout_s = timeout;
  auto result = [](int status, const std::string& out, const std::string& err) {
    return nlohmann::json{{"status", status}, {"out", out}, {"err", err}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  std::string line = run_isolated(
      1, iso,
      [&](size_t) {
        std::ostringstream out, err;
        int status = inspect_main(file,
                                  dot    ? InspectFormat::Dot
                                  : json ? InspectFormat::Json
                                         : InspectFormat::Text,
                                  out, err);
        return result(status, out.str(), err.str());
      },
      [&](size_t, const TaskFailure& how) {
        return result(1, "",
                      "nnapi-convert inspect: " + file + ": reading it " + how.describe() +
                          "; the file is malformed or was crafted\n");
      },
      nullptr)[0];
  nlohmann::json r = nlohmann::json::parse(line);
  std::cout << r["out"].get<std::string>() << std::flush;
  std::cerr << r["err"].get<std::string>() << std::flush;
  return r["status"].get<int>();
}

}  // namespace nnapi_convert::cli

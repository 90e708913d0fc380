// The command line's pieces: one file per command (convert, check, inspect,
// list-ops, merge-reports); main.cpp parses and dispatches.
#pragma once

#include <string>
#include <vector>

#include "nnapi_convert/batch.h"
#include "nnapi_convert/check_command.h"

namespace nnapi_convert::cli {

// The options of convert and check (check reads the conversion options only).
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
  bool float16 = false;     // --float16
  bool float16_io = false;  // --float16-io
  bool fuse = false;
  bool cpu_fallback = false;
  bool eval = false;                       // --eval
  std::string submodule;                   // --submodule PATH
  std::string method;                      // --method NAME
  std::vector<std::string> ops_libraries;  // --ops-library
  int min_android_api = 29;
  bool lite = false;
  int lite_bytecode_version = 0;  // --lite-bytecode-version (0: not given)
  bool lite_bytecode_given = false;
  bool timings = false;
  bool verbose = false;
  bool quiet = false;
  bool verify = false;
  bool verify_strict = false;
  std::vector<std::string> verify_shapes;
  std::string verify_input;
  double atol = 1e-4;
  double rtol = 1e-4;
  std::string manifest;
  std::string report;
  std::string junit;
  int jobs = 0;
  std::string shard;  // --shard K/N
  bool shard_given = false;
  double timeout = 1800;
  std::string quantize;          // --quantize uint8
  QuantizeOptions quantization;  // --calibration* and the others of --quantize
  bool json = false;             // check: one JSON document on standard output
  bool dot = false;              // check --dot: Graphviz DOT on standard output
  // Path options the user gave explicitly (an empty one is a usage error).
  std::vector<std::pair<std::string, std::string>> given_paths;  // option name, value
};

// The jobs the arguments describe, checked before any work: throws
// ConvertError(2) or SpecError for everything a user can get wrong.
std::vector<Job> plan_jobs(const Args& a);

int run_convert(const Args& a);
int run_check(const Args& a);
// check --dot's document (check_dot.cpp): the graph, coloured by verdict.
std::string check_dot(const CheckReport& r, const CheckGraph& g);
int run_inspect(const std::string& file, bool json, double timeout, bool dot = false);
int run_list_ops(bool json);
int run_merge_reports(const std::vector<std::string>& reports, const std::string& report,
                      const std::string& junit);

}  // namespace nnapi_convert::cli

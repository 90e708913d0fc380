// Many conversions in one process (LibTorch starts once), N at a time, with
// per-model results for reports. One model's failure never stops the others.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nnapi_convert/conversion.h"
#include "nnapi_convert/verify.h"

namespace nnapi_convert {

struct Job {
  ConvertOptions options;  // options.model_path is the model
  std::string output;      // the .nnapi.pt to write
  bool lite = false;
  std::string parts;  // --parts directory, or empty
  bool verify = false;
  VerifyOptions verify_options;
  // --report: the outputs' SHA-256 in JobResult (hashed as they are written;
  // off without a report, where it would only cost time).
  bool output_sha256 = false;
};

struct JobResult {
  std::string model;
  std::string output;
  // The SHA-256 (hex) of the written output and of its --lite .ptl, when written.
  std::string output_sha256, lite_sha256;
  bool ok = false;
  int exit_code = 0;  // 0 ok, 1 cannot convert (or verify failed)
  std::string error;
  std::string error_node;                  // node kind, when a node failed
  std::string error_location;              // its source location
  std::vector<NodeKindCount> unsupported;  // node kinds that cannot be lowered
  int64_t operand_count = 0;
  int64_t operation_count = 0;
  int feature_level = 0;  // NNAPI feature level the model needs
  int android_api = 0;    // the oldest Android API level that has it
  int64_t weight_bytes = 0;
  std::map<std::string, int> operations;
  // --cpu-fallback split the model: its NNAPI models, and the nodes left to
  // TorchScript by kind (0 and empty when the model is one NNAPI model).
  int64_t nnapi_models = 0;
  std::vector<NodeKindCount> torchscript_nodes;
  PhaseTimes times;
  double total_ms = 0;
  std::optional<VerifyReport> verify;
  // --quantize: the proof (src/quantize/quantize.h, prove_quantization);
  // null otherwise.
  nlohmann::ordered_json quantization;
  // A stateful model (Conversion::state): per attribute its name, shape,
  // dtype, the NNAPI input and output that carry it and the node that writes
  // it (state_json); null otherwise.
  nlohmann::ordered_json state;
  // The entry point's arguments (with a value, list or tuple spec among the
  // --input specs) and the notes of the conversion (Conversion's).
  std::vector<EntryArgument> arguments;
  std::vector<std::string> notes;
};

// The report's `state` of a conversion: null for a model without state.
nlohmann::ordered_json state_json(const Conversion& c);

struct Staged;  // util/output_file.h

// Runs one job; never throws. With `handed_over`, outputs that are renamed
// into place are not committed but handed over into it (the result says ok
// if committing them succeeds: commit_staged, then settle_outputs).
JobResult run_job(const Job& job, std::vector<Staged>* handed_over = nullptr);

// The order run_jobs hands `jobs` to `parallel` workers in: with more jobs
// than workers, largest model file first (so no large model starts last
// while the other workers run dry), ties and unreadable files in the order
// given; else the order given (an empty vector).
std::vector<size_t> schedule_order(const std::vector<Job>& jobs, int parallel);

// Runs `jobs`, `parallel` (>= 1) at a time, each in a worker process (see
// core/isolation.h: a crash or a hang fails that job only; `timeout_s` > 0
// bounds each job; schedule_order says which starts when; with several
// workers each converts on cpus/workers intra-op threads). `progress` is called in this process as
// each job ends, with how many have ended. Results are in job order. Call it from a process that
// runs no other threads (it forks). NNAPI_CONVERT_IN_PROCESS=1 runs the jobs here instead, one
// after another, for debuggers.
std::vector<JobResult> run_jobs(
    const std::vector<Job>& jobs, int parallel, double timeout_s,
    const std::function<void(size_t, size_t, const JobResult&)>& progress);

// Before any work: every file the jobs and the reports would write can be
// written (no device, FIFO or directory; "-" is standard output), and none is
// a model, the manifest, or another output (compared by inode where the file
// exists). Throws ConvertError(2).
// `other_outputs`: (path, option) of the files written besides the models'
// outputs (--report, --junit).
void check_output_plan(const std::vector<Job>& jobs,
                       const std::vector<std::pair<std::string, std::string>>& other_outputs,
                       const std::string& manifest);

// A --manifest file: a JSON list (or {"models": [...]}) of
// {"model": PATH, "inputs": [SPEC...], "output": PATH, "options": {...}} with
// options nhwc, relax_f32_to_f16, fuse_activations, cpu_fallback, min_android_api,
// int16_for_qint16, lite, preference, parts, return_shapes, eval, submodule, method. Paths are
// relative to the manifest's directory. `defaults` gives what an entry leaves out. Throws
// ConvertError(2) naming the entry.
std::vector<Job> read_manifest(const std::string& path, const Job& defaults,
                               const std::string& out_dir);

// Node kinds as JSON objects {kind, count, supported, locations, first_node}.
nlohmann::ordered_json kinds_json(const std::vector<NodeKindCount>& kinds);

// The --report document: one object per model.
std::string report_json(const std::vector<JobResult>& results);

// One model's object of a --report document back as a JobResult (`output`
// is the output path it names); throws nlohmann::json::exception when a
// field is missing or of the wrong type.
JobResult job_result_from(const nlohmann::ordered_json& j, const std::string& output);

// --junit: the JUnit XML document, one test case per model.
std::string junit_xml(const std::vector<JobResult>& results);

// --shard K/N: this run converts the K-th of N shares (1 <= K <= N) of the
// models. A model's share follows from its path as the user wrote it (on the
// command line, or in the manifest, relative to it), hashed: the split is
// the same on every machine and whatever the order of the models.
struct Shard {
  int index = 1;  // K
  int count = 1;  // N
  bool contains(const std::string& model_key) const;
};
Shard parse_shard(const std::string& text);  // "K/N"; throws ConvertError(2)

// merge-reports: the --report documents of several runs (e.g. the shards of
// one batch) as one list of results, in the order given. Throws
// ConvertError(2) naming the file for one that cannot be read or is no
// report, or a model that two of them report.
std::vector<JobResult> read_reports(const std::vector<std::string>& paths);

// "<model stem>.nnapi.pt" in `out_dir`, or beside the model.
std::string default_output_path(const std::string& model, const std::string& out_dir);

// Parses "1x8x0x0" (-1 allowed) for --return-shape; throws ConvertError(2).
std::vector<int64_t> parse_return_shape(const std::string& text);
int preference_code(const std::string& name);  // -1 when unknown

}  // namespace nnapi_convert

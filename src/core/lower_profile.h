// Where the lowering's time goes, per step and per node kind (issue 24): with
// NNAPI_CONVERT_PROFILE_LOWER set in the environment, each lowering prints a
// table to stderr. For developers (tools/bench/profile_lower.py reads it);
// off, it costs one branch per node.
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nnapi_convert {

class LowerProfile {
 public:
  LowerProfile();
  bool on() const { return on_; }
  // The time since the last step (or construction) belongs to `step`.
  void step(const char* name);
  // A node's lowering; nested ones (an `if` branch lowered inside its node)
  // count towards the outermost.
  void begin_node() {
    if (on_ && depth_++ == 0) node_t0_ = Clock::now();
  }
  void end_node(c10::Symbol kind);
  // Prints the table (when on); the time since the last step is `last`'s.
  void report(const std::string& model, const char* last);

 private:
  using Clock = std::chrono::steady_clock;
  struct KindTime {
    int64_t count = 0;
    int64_t ns = 0;
  };
  bool on_ = false;
  int depth_ = 0;
  Clock::time_point t0_, node_t0_;
  int64_t faults0_ = 0;  // minor page faults of this thread at t0_
  int64_t cpu0_ = 0;     // this thread's CPU time at t0_, ns
  struct Step {
    std::string name;
    int64_t ns, cpu_ns, faults;
  };
  std::vector<Step> steps_;
  std::unordered_map<c10::Symbol, KindTime> kinds_;
  // Each outermost node's time, in graph order (the slowest are listed).
  std::vector<std::pair<c10::Symbol, int64_t>> nodes_;
};

}  // namespace nnapi_convert

#include "core/lower_profile.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace nnapi_convert {
namespace {

int64_t minor_faults() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

// This thread's CPU time: unlike the wall clock, not counting the time
// other processes had the core.
int64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

}  // namespace

LowerProfile::LowerProfile() : on_(std::getenv("NNAPI_CONVERT_PROFILE_LOWER") != nullptr) {
  if (!on_) return;
  faults0_ = minor_faults();
  cpu0_ = thread_cpu_ns();
  t0_ = Clock::now();
}

void LowerProfile::step(const char* name) {
  if (!on_) return;
  const Clock::time_point now = Clock::now();
  const int64_t cpu = thread_cpu_ns();
  const int64_t faults = minor_faults();
  steps_.push_back({name, std::chrono::duration_cast<std::chrono::nanoseconds>(now - t0_).count(),
                    cpu - cpu0_, faults - faults0_});
  faults0_ = faults;
  cpu0_ = thread_cpu_ns();
  t0_ = Clock::now();  // (the fault count's own time left out)
}

void LowerProfile::end_node(c10::Symbol kind) {
  if (!on_ || --depth_ > 0) return;
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - node_t0_).count();
  KindTime& k = kinds_[kind];
  ++k.count;
  k.ns += ns;
  nodes_.emplace_back(kind, ns);
}

void LowerProfile::report(const std::string& model, const char* last) {
  if (!on_) return;
  step(last);
  std::vector<std::pair<c10::Symbol, KindTime>> rows(kinds_.begin(), kinds_.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  int64_t total = 0, cpu = 0;
  for (const Step& s : steps_) {
    total += s.ns;
    cpu += s.cpu_ns;
  }
  std::fprintf(stderr, "nnapi-convert: profile: %s: lower %.3f ms (CPU %.3f ms)\n", model.c_str(),
               total / 1e6, cpu / 1e6);
  for (const Step& s : steps_) {
    std::fprintf(stderr, "  step %-28s %9.3f ms (CPU %.3f ms) %5lld page faults\n", s.name.c_str(),
                 s.ns / 1e6, s.cpu_ns / 1e6, static_cast<long long>(s.faults));
  }
  for (const auto& r : rows) {
    std::fprintf(stderr, "  kind %-28s %9.3f ms %5lld nodes %8.2f us/node\n",
                 r.first.toQualString(), r.second.ns / 1e6, static_cast<long long>(r.second.count),
                 r.second.ns / 1e3 / static_cast<double>(r.second.count));
  }
  // The slowest nodes: a first call's cost (a cold path, an operator's
  // first dispatch) shows here rather than in its kind's average.
  std::vector<size_t> order(nodes_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const size_t shown = std::min<size_t>(order.size(), 8);
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shown), order.end(),
                    [&](size_t a, size_t b) { return nodes_[a].second > nodes_[b].second; });
  for (size_t i = 0; i < shown; ++i) {
    const auto& [kind, ns] = nodes_[order[i]];
    std::fprintf(stderr, "  node %-5zu %-27s %9.3f ms\n", order[i], kind.toQualString(), ns / 1e6);
  }
}

}  // namespace nnapi_convert

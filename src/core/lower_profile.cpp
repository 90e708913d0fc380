#include "core/lower_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace nnapi_convert {

LowerProfile::LowerProfile() : on_(std::getenv("NNAPI_CONVERT_PROFILE_LOWER") != nullptr) {
  if (on_) t0_ = Clock::now();
}

void LowerProfile::step(const char* name) {
  if (!on_) return;
  const Clock::time_point now = Clock::now();
  steps_.emplace_back(name,
                      std::chrono::duration_cast<std::chrono::nanoseconds>(now - t0_).count());
  t0_ = now;
}

void LowerProfile::end_node(c10::Symbol kind) {
  if (!on_ || --depth_ > 0) return;
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - node_t0_).count();
  KindTime& k = kinds_[kind];
  ++k.count;
  k.ns += ns;
}

void LowerProfile::report(const std::string& model, const char* last) {
  if (!on_) return;
  step(last);
  std::vector<std::pair<c10::Symbol, KindTime>> rows(kinds_.begin(), kinds_.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  int64_t total = 0;
  for (const auto& s : steps_) total += s.second;
  std::fprintf(stderr, "nnapi-convert: profile: %s: lower %.3f ms\n", model.c_str(), total / 1e6);
  for (const auto& s : steps_)
    std::fprintf(stderr, "  step %-28s %9.3f ms\n", s.first.c_str(), s.second / 1e6);
  for (const auto& r : rows) {
    std::fprintf(stderr, "  kind %-28s %9.3f ms %5lld nodes %8.2f us/node\n",
                 r.first.toQualString(), r.second.ns / 1e6, static_cast<long long>(r.second.count),
                 r.second.ns / 1e3 / static_cast<double>(r.second.count));
  }
}

}  // namespace nnapi_convert

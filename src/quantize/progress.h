// A terminal progress line on standard error (calibration, image decoding):
// "WHAT done/total", rewritten in place and erased when done; nothing when
// standard error is not a terminal, nor when the log level hides information
// (-q/--quiet: errors only).
#pragma once

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <utility>

namespace nnapi_convert {

class Progress {
 public:
  Progress(std::string what, size_t total)
      : what_(std::move(what)),
        total_(total),
        on_(::isatty(STDERR_FILENO) && spdlog::should_log(spdlog::level::info)) {}
  void step(size_t done) {
    if (on_) std::cerr << "\r" << what_ << " " << done << "/" << total_ << std::flush;
  }
  ~Progress() {
    if (on_) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  std::string what_;
  size_t total_;
  bool on_;
};

}  // namespace nnapi_convert

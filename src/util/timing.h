// Phase timings (--timings, --report's times_ms).
#pragma once

#include <chrono>

namespace nnapi_convert {

// Milliseconds since `t0` on the steady clock.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace nnapi_convert

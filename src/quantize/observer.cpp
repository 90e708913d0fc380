// Observers: the quint8 parameters of a range, and the histogram observer's
// search for the range that minimizes the quantization error.
#include <algorithm>
#include <cmath>
#include <limits>

#include "quantize/quantize.h"

namespace nnapi_convert {

QParams qparams_for_range(double lo, double hi) {
  // As PyTorch's MinMaxObserver for quint8 per-tensor affine: the range
  // holds 0 (so that 0, padding, is exact), 256 levels, the smallest scale
  // float32's epsilon.
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  QParams q;
  q.scale = std::max((hi - lo) / 255.0, double(std::numeric_limits<float>::epsilon()));
  q.scale = static_cast<float>(q.scale);  // as NNAPI stores it
  q.zero_point = std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(-lo / q.scale)), 0, 255);
  return q;
}

std::pair<double, double> histogram_range(const std::vector<double>& counts, double lo, double hi) {
  const size_t n = counts.size();
  if (n == 0 || !(hi > lo)) return {lo, hi};
  const double w = (hi - lo) / static_cast<double>(n);
  // Prefix sums of c, c*x, c*x^2 (x: bin centers) give each candidate's
  // error in O(1): below a, sum c (a - x)^2; above b, sum c (x - b)^2;
  // inside, count * step^2 / 12 with step = (b - a) / 255.
  std::vector<double> c(n + 1, 0), cx(n + 1, 0), cxx(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const double x = lo + (static_cast<double>(i) + 0.5) * w;
    c[i + 1] = c[i] + counts[i];
    cx[i + 1] = cx[i] + counts[i] * x;
    cxx[i + 1] = cxx[i] + counts[i] * x * x;
  }
  auto error = [&](size_t s, size_t e) {  // range: bins [s, e)
    const double a = lo + static_cast<double>(s) * w, b = lo + static_cast<double>(e) * w;
    const double below = a * a * c[s] - 2 * a * cx[s] + cxx[s];
    const double above = (cxx[n] - cxx[e]) - 2 * b * (cx[n] - cx[e]) + b * b * (c[n] - c[e]);
    const double step = (b - a) / 255.0;
    return below + above + (c[e] - c[s]) * step * step / 12.0;
  };
  // Every range of whole bins: O(bins^2) evaluations of O(1) each (4M for
  // 2048 bins, milliseconds). PyTorch's HistogramObserver shrinks greedily
  // from one side or the other, which can leave the optimum (a side moved
  // early stays moved).
  size_t best_s = 0, best_e = n;
  double best = error(0, n);
  for (size_t s = 0; s < n; ++s) {
    for (size_t e = s + 1; e <= n; ++e) {
      const double err = error(s, e);
      if (err < best) {
        best = err;
        best_s = s;
        best_e = e;
      }
    }
  }
  return {lo + static_cast<double>(best_s) * w, lo + static_cast<double>(best_e) * w};
}

}  // namespace nnapi_convert

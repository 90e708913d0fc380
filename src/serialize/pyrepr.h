// Python's repr() of a float, so generated shape-compute lines match the
// reference converter's text exactly.
#pragma once

#include <string>

namespace nnapi_convert {

// Shortest round-trip digits, fixed notation for exponents in [-4, 16),
// scientific ("1e-05", "1.5e+16") otherwise; "inf", "-inf", "nan".
std::string py_float_repr(double v);

}  // namespace nnapi_convert

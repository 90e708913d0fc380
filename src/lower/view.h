// Views (view.cpp): the helper other lowerings call.
#pragma once

#include <vector>

#include "lower/context.h"
#include "lower/dims.h"

namespace nnapi_convert {

// The target sizes of x.view(dims) with a -1 resolved (view.cpp): a number
// where the load-time sizes of `in` and `dims` cancel.
std::vector<SymInt> view_dims(const LoweringContext& cx, const OperandHandle& in,
                              std::vector<SymInt> dims);

}  // namespace nnapi_convert

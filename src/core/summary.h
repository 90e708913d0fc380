// What the check and batch reports say of a conversion's NNAPI model, copied
// from the Conversion in one place: check_model's CheckReport and run_job's
// JobResult have the same fields for it.
#pragma once

#include <cstdint>

#include "nnapi_convert/conversion.h"

namespace nnapi_convert {

// Sets `r`'s operand and operation counts, feature level and Android API,
// operations by name and, when --cpu-fallback split the model, its NNAPI
// models and the nodes left to TorchScript by kind.
template <class Report>
void copy_summary(const Conversion& c, Report& r) {
  r.operand_count = c.operand_count;
  r.operation_count = c.operation_count;
  r.feature_level = c.feature_level;
  r.android_api = c.android_api;
  r.operations = c.operations;
  r.nnapi_models = static_cast<int64_t>(c.segments.size());
  r.torchscript_nodes = c.cpu_kinds;
}

}  // namespace nnapi_convert

// The conversion pipeline's first half (issue 36): load and freeze the
// model, --quantize it, then lower it (src/core: lowering, serializing and
// validating). Writing it and --verify follow in run_job (batch.cpp).
#include <memory>
#include <string>

#include "core/converter.h"
#include "core/loader.h"
#include "core/state.h"
#include "nnapi_convert/converter.h"
#include "quantize/quantize.h"

namespace nnapi_convert {

Conversion convert(const ConvertOptions& options) {
  PhaseTimes times;
  LoadedEntry entry;
  torch::jit::Module module = load_frozen_model(options, &times.load_ms, &times.freeze_ms, &entry);
  std::shared_ptr<const QuantizedModel> quantized;
  if (options.quantize.enabled) {
    refuse_state_options(module, options);
    // Before the calibration samples are read against the specs.
    check_input_count(*module.get_method("forward").graph(), options);
    quantized = quantize_module(module, options);
  }
  Conversion result;
  try {
    result = lower_module(module, quantized ? lowering_options(*quantized, options) : options);
  } catch (const ConvertError& e) {
    // Published files wrap the network in logic NNAPI cannot hold: point at
    // the network.
    if (e.unsupported().empty() || entry.submodules.empty() || !options.method.empty()) throw;
    std::string names;
    for (const std::string& n : entry.submodules) names += (names.empty() ? "" : ", ") + n;
    ConvertError hinted(e.exit_code(),
                        std::string(e.what()) +
                            " If the network NNAPI should run is a submodule (the model has " +
                            names +
                            "), convert it alone with --submodule PATH (and --method NAME "
                            "for another method than its forward).",
                        e.node(), e.location());
    hinted.set_unsupported(e.unsupported());
    throw hinted;
  }
  result.quantized = quantized;
  result.arguments = std::move(entry.arguments);
  result.notes = std::move(entry.notes);
  if (result.state_program) carry_state_methods(entry.entry, result, &result.notes);
  result.times.load_ms += times.load_ms;  // (the lowering's part: the debug records' read)
  result.times.freeze_ms = times.freeze_ms;
  return result;
}

}  // namespace nnapi_convert

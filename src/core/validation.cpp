#include "core/validation.h"

#include <algorithm>
#include <optional>

#include "core/diagnostics.h"
#include "core/sample_inputs.h"
#include "nnapi_convert/blob.h"
#include "nnapi_convert/validate.h"
#include "nnapi_convert/writer.h"

namespace nnapi_convert {

namespace {

Blob parse(const std::vector<int32_t>& words, const std::vector<int64_t>& weight_sizes) {
  return parse_blob(reinterpret_cast<const uint8_t*>(words.data()), words.size() * 4,
                    &weight_sizes);
}

// Findings of one blob; `unknown` operands have no known value.
std::vector<nnapi_validate::Finding> findings_of(
    const Blob& blob, const std::vector<std::pair<const uint8_t*, size_t>>& buffers,
    const std::vector<int32_t>& unknown, int feature_level) {
  nnapi_validate::Model m = nnapi_validate::model_of_blob(blob, buffers);
  for (int32_t id : unknown) {
    if (id >= 0 && static_cast<size_t>(id) < m.operands.size()) m.operands[id].data = nullptr;
  }
  nnapi_validate::Options o;
  o.feature_level = feature_level;
  return nnapi_validate::validate_model(m, o);
}

std::string model_fails_text() {
  return ". The model itself fails at these sizes too, and at each flexible size rounded up to "
         "a multiple of 2 to " +
         std::to_string(kMaxSizeMultiple) +
         ": check that the model runs at the --input spec's fixed sizes, or fix more of them";
}

}  // namespace

void validate_conversion(const Conversion& c, const std::vector<int32_t>& patched,
                         const std::vector<const torch::jit::Node*>& op_nodes,
                         const ConvertOptions& options, const torch::jit::Node** failed,
                         const ModelRuns& model_runs) {
  const std::string& path = options.model_path;
  // Weight bytes are read only where they are contiguous (no copy): the
  // rules read small parameters, which are immediates.
  std::vector<std::pair<const uint8_t*, size_t>> buffers;
  std::vector<int64_t> sizes;
  for (const at::Tensor& w : c.weights) {
    const size_t bytes = static_cast<size_t>(w.numel()) * w.element_size();
    buffers.emplace_back(w.is_contiguous() ? static_cast<const uint8_t*>(w.data_ptr()) : nullptr,
                         bytes);
    sizes.push_back(static_cast<int64_t>(bytes));
  }
  const int level = nnapi::feature_level_of_android_api(options.min_android_api);
  Blob blob;
  try {
    blob = parse(c.ser_model, sizes);
  } catch (const BlobError& e) {
    throw ConvertError(1, "model '" + path +
                              "': nnapi-convert wrote an NNAPI model blob that "
                              "PyTorch's loader would reject (" +
                              std::string(e.what()) +
                              "); this is a bug in nnapi-convert, please report it with the model");
  }
  std::vector<nnapi_validate::Finding> findings = findings_of(blob, buffers, patched, level);
  // Sizes fixed when the model loads: the device sees the blob after the
  // shape-compute script has filled them in. Check it at the sample sizes
  // --verify and --cpu-fallback use.
  std::string at_sizes;
  bool model_fails = false;  // the model itself fails at every size tried
  if (findings.empty() && !c.shape_lines.empty()) {
    // The findings at `shapes`; nullopt where the shape-compute script fails.
    auto findings_at =
        [&](const std::vector<std::vector<int64_t>>& shapes,
            std::string* script_error) -> std::optional<std::vector<nnapi_validate::Finding>> {
      std::vector<int32_t> words;
      try {
        words = prepared_ser_model(c, sample_inputs(options.inputs, shapes, options.nhwc, 0));
      } catch (const c10::Error& e) {
        *script_error = e.what_without_backtrace();
        return std::nullopt;
      }
      return findings_of(parse(words, sizes), buffers, {}, level);
    };
    std::vector<std::vector<int64_t>> shapes = default_sample_shapes(options.inputs);
    std::string script_error;
    auto found = findings_at(shapes, &script_error);
    auto model_runs_at = [&](const std::vector<std::vector<int64_t>>& s) {
      return model_runs(sample_inputs(options.inputs, s, options.nhwc, 0));
    };
    if ((!found || !found->empty()) && model_runs && !model_runs_at(shapes)) {
      // The model itself fails at these sizes: try sizes it runs at.
      model_fails = true;
      if (auto fit = runnable_sizes(options.inputs, shapes, model_runs_at)) {
        model_fails = false;
        shapes = fit->shapes;
        found = findings_at(shapes, &script_error);
      }
    }
    for (const auto& s : shapes) at_sizes += (at_sizes.empty() ? "" : ", ") + join_dims(s);
    if (!found) {
      throw ConvertError(1, "model '" + path +
                                "': the shape-compute script of the converted "
                                "model fails at the sample input sizes " +
                                at_sizes + " (" + script_error + ")" +
                                (model_fails ? model_fails_text()
                                             : "; this is a bug in nnapi-convert, please report "
                                               "it with the model"));
    }
    findings = *found;
  }
  if (findings.empty()) return;

  const nnapi_validate::Finding& f = findings.front();
  const torch::jit::Node* node =
      f.operation >= 0 && static_cast<size_t>(f.operation) < op_nodes.size()
          ? op_nodes[static_cast<size_t>(f.operation)]
          : nullptr;
  std::string msg = "model '" + path + "': ";
  msg += node ? describe_node(node) + " was lowered to NNAPI operations that break "
              : std::string("the converted NNAPI model breaks ");
  msg += "NeuralNetworks.h's rules, so the device would refuse the model";
  if (!at_sizes.empty()) msg += " when loaded with inputs of sizes " + at_sizes;
  msg += ": " + f.message;
  if (findings.size() > 1)
    msg += " (and " + std::to_string(findings.size() - 1) + " more finding" +
           (findings.size() > 2 ? "s" : "") + ")";
  if (model_fails) {
    msg += model_fails_text();
  } else {
    msg += ". This is a bug in nnapi-convert; please report it with the model";
    msg += node ? ". --cpu-fallback can keep that node in TorchScript" : "";
  }
  if (failed && node) *failed = node;
  throw ConvertError(1, msg, node ? node->kind().toQualString() : "",
                     node ? node_location(node) : "");
}

}  // namespace nnapi_convert

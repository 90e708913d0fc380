#include "serialize/metadata.h"

#include <torch/version.h>

#include <nlohmann/json.hpp>

#include "nnapi_convert/nnapi_types.h"

namespace nnapi_convert {
namespace {

using Json = nlohmann::ordered_json;

const char* preference_name(int code) {
  switch (code) {
    case 0:
      return "low-power";
    case 1:
      return "fast-single-answer";
    default:
      return "sustained-speed";
  }
}

Json quantize_json(const QuantizeOptions& q) {
  if (!q.enabled) return nullptr;
  // Where the samples came from is a path of the machine that converted: the
  // record keeps what shaped the scales, not where the files were.
  Json j = {{"dtype", "uint8"},
            {"calibration", q.calibration_dir.empty() ? "file" : "directory"},
            {"method", q.method},
            {"holdout", q.holdout},
            {"skip", q.skip},
            {"min_sqnr", q.min_sqnr},
            {"quantized_io", q.quantized_io}};
  if (!q.mean.empty()) j["mean"] = q.mean;
  if (!q.stddev.empty()) j["std"] = q.stddev;
  return j;
}

Json tensor_json(int32_t type, double scale, int64_t zero_point) {
  Json j = {{"type", nnapi::operand_type_name(static_cast<nnapi::OperandType>(type))}};
  if (scale != 0 || zero_point != 0) {
    j["scale"] = scale;
    j["zero_point"] = zero_point;
  }
  return j;
}

// The nodes one NNAPI model's operations came from, as runs of consecutive
// operations of one node kind at one place: {"node", "at", "operations"}.
Json origins_json(const std::vector<NodeOrigin>& origins) {
  Json runs = Json::array();
  for (size_t k = 0; k < origins.size();) {
    size_t end = k + 1;
    while (end < origins.size() && origins[end].kind == origins[k].kind &&
           origins[end].location == origins[k].location) {
      ++end;
    }
    runs.push_back(
        {{"node", origins[k].kind}, {"at", origins[k].location}, {"operations", end - k}});
    k = end;
  }
  return runs;
}

}  // namespace

std::string metadata_json(const Conversion& c, const ConvertOptions& options,
                          const std::string& source_sha256) {
  Json inputs = Json::array();
  for (const InputSpec& s : options.inputs) {
    Json in = {{"spec", format_input_spec(s)}, {"dtype", dtype_name(s.dtype)}};
    if (s.has_scale) in["scale"] = s.scale;
    if (s.has_zero_point) in["zero_point"] = s.zero_point;
    inputs.push_back(std::move(in));
  }
  Json arguments = Json::array();
  for (const ArgSpec& a : options.args) arguments.push_back(format_arg_spec(a));
  Json outputs = Json::array();
  for (const OutputTemplate& t : c.templates) {
    outputs.push_back(tensor_json(t.type, t.scale, t.zero_point));
  }
  Json return_shapes = Json::array();
  for (const auto& s : options.return_shapes) return_shapes.push_back(s);
  Json j = {
      {"format", "nnapi-convert metadata"},
      {"format_version", 1},
      {"converter",
       {{"name", "nnapi-convert"},
        {"version", NNAPI_CONVERT_VERSION},
        {"libtorch", TORCH_VERSION}}},
      {"source", {{"sha256", source_sha256}}},
      {"inputs", inputs},
      {"arguments", arguments},
      {"outputs", outputs},
      {"options",
       {{"nhwc", options.nhwc},
        {"eval", options.eval},
        {"submodule", options.submodule},
        {"method", options.method},
        {"preference", preference_name(options.compilation_preference)},
        {"relax_f32_to_f16", options.relax_f32_to_f16},
        {"int16_for_qint16", options.use_int16_for_qint16},
        {"fuse_activations", options.fuse_activations},
        {"min_android_api", options.min_android_api},
        {"return_shapes", return_shapes},
        {"cpu_fallback", options.cpu_fallback},
        {"float16", options.float16},
        {"float16_io", options.float16_io},
        // The .ptl's bytecode version when --lite-bytecode-version chose one;
        // null: LibTorch's own.
        {"lite_bytecode_version",
         options.lite_bytecode_version > 0 ? Json(options.lite_bytecode_version) : Json(nullptr)}}},
      {"quantize", quantize_json(options.quantize)},
      {"nnapi",
       {{"feature_level", c.feature_level},
        {"android_api", c.android_api},
        {"operation_count", c.operation_count},
        {"nnapi_models", c.fallback ? c.segments.size() : size_t{1}}}},
  };
  // Per NNAPI model, where its operations came from (issue 37 item 5).
  Json nodes = Json::array();
  if (c.fallback) {
    for (const Conversion& s : c.segments) nodes.push_back(origins_json(s.origins));
  } else {
    nodes.push_back(origins_json(c.origins));
  }
  j["nodes"] = std::move(nodes);
  return j.dump(2) + "\n";
}

}  // namespace nnapi_convert

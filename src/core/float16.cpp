// --float16 (core/float16.h): TENSOR_FLOAT32 made TENSOR_FLOAT16 over the
// finished model, each operation asked of the validator.
#include "core/float16.h"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/diagnostics.h"
#include "lower/signature_inputs.h"
#include "nnapi_convert/validate.h"

namespace nnapi_convert {
namespace {

using nnapi::OperandType;

// The validator's view of operand `id` (types, dims, quantization: what the
// type rules read).
nnapi_validate::Operand view_of(const ModelBuilder& m, int32_t id) {
  const NnapiOperand& o = m.operand(id);
  nnapi_validate::Operand v;
  v.type = o.type;
  for (int64_t d : o.dims) v.dims.push_back(d > 0 ? static_cast<uint32_t>(d) : 0);
  v.scale = static_cast<float>(o.scale);
  v.zero_point = static_cast<int32_t>(o.zero_point);
  return v;
}

struct Views {
  std::vector<nnapi_validate::Operand> in, out;
  std::vector<const nnapi_validate::Operand*> ins() const { return pointers(in); }
  std::vector<const nnapi_validate::Operand*> outs() const { return pointers(out); }
  static std::vector<const nnapi_validate::Operand*> pointers(
      const std::vector<nnapi_validate::Operand>& v) {
    std::vector<const nnapi_validate::Operand*> p;
    for (const auto& o : v) p.push_back(&o);
    return p;
  }
};

Views views_of(const ModelBuilder& m, const ModelBuilder::OperationView& op) {
  Views v;
  for (int32_t id : op.inputs) v.in.push_back(view_of(m, id));
  for (int32_t id : op.outputs) v.out.push_back(view_of(m, id));
  return v;
}

// A copy of operand `id` of another type: the float32 side of a CAST at the
// model's edge (its load-time sizes named as the original's).
int32_t retyped_copy(ModelBuilder& m, int32_t id, OperandType type) {
  NnapiOperand o = m.operand(id);
  o.type = type;
  return m.add_operand(std::move(o));
}

std::string level_text(int level) {
  return "NNAPI feature level " + std::to_string(level) + " (Android API level " +
         std::to_string(
             std::max(nnapi::kMinAndroidApi, nnapi::android_api_of_feature_level(level))) +
         ")";
}

// A finite float32 value that float16 cannot hold, and why it matters.
std::string beyond_half(float magnitude) {
  std::ostringstream os;
  os << magnitude << ", beyond float16's largest finite value 65504 (it would become infinity)";
  return os.str();
}

[[noreturn]] void refuse(const ConvertOptions& options, const torch::jit::Node* node,
                         const torch::jit::Node* ret, size_t index, nnapi::Op op,
                         const std::string& why) {
  const std::string what = "--float16: NNAPI operation #" + std::to_string(index) + " " +
                           nnapi::op_name(op) + " " + why +
                           "; or convert this model without --float16 (--relax-f32-to-f16 lets a "
                           "device compute float32 operations in float16 instead)";
  if (node && node != ret) throw node_error(options.model_path, ret, node, what);
  throw ConvertError(1, "model '" + options.model_path + "': " + what);
}

// Operation `index` with its new types: accepted as it is, or with its
// FLOAT32 scalars as FLOAT16 (replaced then); refused otherwise.
void check_operation(ModelBuilder& m, size_t index, int target_level,
                     const std::vector<const torch::jit::Node*>& op_nodes,
                     const ConvertOptions& options, const torch::jit::Node* ret) {
  const ModelBuilder::OperationView op = m.operation(index);
  const torch::jit::Node* node = index < op_nodes.size() ? op_nodes[index] : nullptr;
  const int32_t code = static_cast<int32_t>(op.op);
  Views v = views_of(m, op);
  std::optional<nnapi_validate::Finding> finding = nnapi_validate::validate_operation_types(
      static_cast<int64_t>(index), code, v.ins(), v.outs());
  if (finding) {
    std::vector<size_t> scalars;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (v.in[i].type == OperandType::Float32) scalars.push_back(i);
    }
    for (size_t i : scalars) v.in[i].type = OperandType::Float16;
    if (scalars.empty() || nnapi_validate::validate_operation_types(static_cast<int64_t>(index),
                                                                    code, v.ins(), v.outs())) {
      refuse(options, node, ret, index, op.op,
             "takes no TENSOR_FLOAT16 in this form (" + finding->message +
                 "): compute this node another way in the model");
    }
    for (size_t i : scalars) {
      const std::optional<float> value = m.float32_scalar(op.inputs[i]);
      if (!value) {
        refuse(options, node, ret, index, op.op,
               "needs its input " + std::to_string(i) +
                   " as a FLOAT16 scalar, and it is no constant nnapi-convert can convert: "
                   "please report it with the model");
      }
      if (const std::optional<float> big = m.float16_overflow(op.inputs[i])) {
        refuse(options, node, ret, index, op.op,
               "needs its input " + std::to_string(i) + " as a FLOAT16 scalar, and its value is " +
                   beyond_half(*big) + ": give the node a smaller value");
      }
      m.set_operation_input(index, i, m.add_half_scalar(*value));
    }
  }
  std::string why;
  const int level = nnapi_validate::operation_level(code, v.ins(), v.outs(), &why);
  if (level > target_level) {
    refuse(options, node, ret, index, op.op,
           "of TENSOR_FLOAT16 (" + why + ") needs " + level_text(level) + ", above the target " +
               level_text(target_level) + "; give --min-android-api " +
               std::to_string(nnapi::android_api_of_feature_level(level)) + " or later");
  }
  m.raise_feature_level(level);
}

// CAST's inputs, in NeuralNetworks.h's positions (op_signature.h), for the tensor `x`.
std::vector<int32_t> cast_inputs(int32_t x) {
  return signature_inputs(nnapi::Op::Cast, {{nnapi::Role::Input, x}});
}

}  // namespace

void convert_to_float16(ModelBuilder& m, std::vector<const torch::jit::Node*>& op_nodes,
                        std::vector<OutputTemplate>& templates, const ConvertOptions& options,
                        const torch::jit::Node* ret) {
  const int target_level = nnapi::feature_level_of_android_api(options.min_android_api);
  const int half_level =
      nnapi::operand_type_feature_level(static_cast<int32_t>(OperandType::TensorFloat16));
  if (target_level < half_level) {
    throw ConvertError(2, "--float16 needs TENSOR_FLOAT16, which came with " +
                              level_text(half_level) + "; the target is " +
                              level_text(target_level) +
                              ": give --min-android-api 29 or later, or convert without --float16");
  }
  const size_t n_operations = m.operation_count();
  op_nodes.resize(n_operations, nullptr);

  // The float32 model inputs: read through a float16 copy, CAST first.
  std::vector<std::pair<int32_t, int32_t>> input_casts;  // float32 input, its float16 copy
  std::set<int32_t> float32_inputs;
  for (int32_t id : m.model_inputs()) {
    if (m.operand(id).type != OperandType::TensorFloat32) continue;
    const int32_t half = retyped_copy(m, id, OperandType::TensorFloat16);
    input_casts.emplace_back(id, half);
    float32_inputs.insert(id);
  }
  for (size_t k = 0; k < n_operations; ++k) {
    const ModelBuilder::OperationView op = m.operation(k);
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      for (const auto& [input, half] : input_casts) {
        if (op.inputs[i] == input) m.set_operation_input(k, i, half);
      }
    }
  }

  // Every other TENSOR_FLOAT32 operand, constant or computed; a constant
  // with values beyond float16's range is refused, naming its first reader.
  for (int32_t id = 0; id < static_cast<int32_t>(m.operand_count()); ++id) {
    if (m.operand(id).type != OperandType::TensorFloat32 || float32_inputs.count(id)) continue;
    if (const std::optional<float> big = m.float16_overflow(id)) {
      for (size_t k = 0; k < n_operations; ++k) {
        const ModelBuilder::OperationView op = m.operation(k);
        if (std::find(op.inputs.begin(), op.inputs.end(), id) == op.inputs.end()) continue;
        refuse(options, op_nodes[k], ret, k, op.op,
               "reads a constant (operand " + std::to_string(id) + ") with a value of " +
                   beyond_half(*big) +
                   ": scale the model so that its constants fit (a mask value such as -1e9 "
                   "can be -1e4)");
      }
    }
    if (!m.constant_to_float16(id)) m.set_operand_type(id, OperandType::TensorFloat16);
  }

  // The outputs: CAST back to float32 last, or returned as float16.
  std::vector<std::pair<int32_t, int32_t>> output_casts;  // float16 result, float32 output
  for (size_t k = 0; k < m.model_outputs().size(); ++k) {
    const int32_t id = m.model_outputs()[k];
    if (m.operand(id).type != OperandType::TensorFloat16) continue;
    if (options.float16_io) {
      if (k < templates.size())
        templates[k].type = static_cast<int32_t>(OperandType::TensorFloat16);
      continue;
    }
    const int32_t wide = retyped_copy(m, id, OperandType::TensorFloat32);
    output_casts.emplace_back(id, wide);
    m.set_model_output(k, wide);
  }

  for (size_t k = 0; k < n_operations; ++k)
    check_operation(m, k, target_level, op_nodes, options, ret);
  for (size_t k = 0; k < input_casts.size(); ++k) {
    m.insert_operation(k, nnapi::Op::Cast, cast_inputs(input_casts[k].first),
                       {input_casts[k].second});
    op_nodes.insert(op_nodes.begin() + static_cast<std::ptrdiff_t>(k), nullptr);
  }
  for (const auto& [half, wide] : output_casts) {
    m.insert_operation(m.operation_count(), nnapi::Op::Cast, cast_inputs(half), {wide});
    op_nodes.push_back(nullptr);
  }
  if (!input_casts.empty() || !output_casts.empty()) m.raise_feature_level(half_level);
}

}  // namespace nnapi_convert

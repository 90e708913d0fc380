// Text and JSON reports of a parsed NNAPI model for `inspect`. No LibTorch.
#include "inspect/report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "nnapi_convert/nnapi_types.h"
#include "nnapi_convert/op_signature.h"
#include "util/dot.h"

namespace nnapi_convert::inspect_detail {

namespace {

// The shortest decimal text that reads back as the same float.
std::string float_text(double d) {
  const float f = static_cast<float>(d);
  std::ostringstream o;
  for (int precision = 6; precision <= 9; ++precision) {
    o.str("");
    o << std::setprecision(precision) << f;
    if (std::strtof(o.str().c_str(), nullptr) == f) break;
  }
  return o.str();
}

// A float32 as the JSON number with the shortest text that reads back as the
// same float (0.1f prints as 0.1); NaN and infinity as null (JSON has neither).
nlohmann::ordered_json json_float(double d) {
  if (!std::isfinite(d)) return nullptr;
  return std::strtod(float_text(d).c_str(), nullptr);
}

}  // namespace

const char* mem_fmt_name(int64_t f) {
  switch (f) {
    case 0:
      return "contiguous";
    case 1:
      return "channels_last";
    case 2:
      return "scalar_or_vector";
    default:
      return "invalid";
  }
}

namespace {

// --- describing operands ------------------------------------------------------

bool is_quantized(nnapi::OperandType t) {
  switch (t) {
    case nnapi::OperandType::TensorQuant8Asymm:
    case nnapi::OperandType::TensorQuant16Symm:
    case nnapi::OperandType::TensorQuant16Asymm:
    case nnapi::OperandType::TensorQuant8SymmPerChannel:
    case nnapi::OperandType::TensorQuant8Symm:
      return true;
    case nnapi::OperandType::TensorInt32:
      return false;
    default:
      return false;
  }
}

// A quantized int32 tensor (bias of a quantized op) carries a scale too.
bool shows_quant_params(const BlobOperand& op) {
  return is_quantized(op.type) || (op.type == nnapi::OperandType::TensorInt32 && op.scale != 0.0f);
}

uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// One decoded element of an immediate value.
struct Scalar {
  enum Kind { Int, Float, Bool } kind = Int;
  int64_t i = 0;
  double f = 0;
};

constexpr size_t kMaxShownElements = 16;

// Decodes up to kMaxShownElements elements of an immediate value; `total` is
// the element count. Returns false when the type has no element decoding.
bool decode_immediate(const BlobOperand& op, const std::vector<uint8_t>& bytes,
                      std::vector<Scalar>& out, size_t& total) {
  size_t width = 0;
  switch (op.type) {
    case nnapi::OperandType::Bool:
    case nnapi::OperandType::TensorBool8:
    case nnapi::OperandType::TensorQuant8Asymm:
    case nnapi::OperandType::TensorQuant8SymmPerChannel:
    case nnapi::OperandType::TensorQuant8Symm:
      width = 1;
      break;
    case nnapi::OperandType::Float16:
    case nnapi::OperandType::TensorFloat16:
    case nnapi::OperandType::TensorQuant16Symm:
    case nnapi::OperandType::TensorQuant16Asymm:
      width = 2;
      break;
    default:
      width = 4;
  }
  total = bytes.size() / width;
  for (size_t e = 0; e < total && e < kMaxShownElements; ++e) {
    const uint8_t* p = bytes.data() + e * width;
    Scalar s;
    switch (op.type) {
      case nnapi::OperandType::Bool:
      case nnapi::OperandType::TensorBool8:
        s.kind = p[0] <= 1 ? Scalar::Bool : Scalar::Int;
        s.i = p[0];
        break;
      case nnapi::OperandType::TensorQuant8Asymm:
        s.i = p[0];
        break;
      case nnapi::OperandType::TensorQuant8SymmPerChannel:
      case nnapi::OperandType::TensorQuant8Symm:
        s.i = static_cast<int8_t>(p[0]);
        break;
      case nnapi::OperandType::Float16:
      case nnapi::OperandType::TensorFloat16:
        s.kind = Scalar::Float;
        s.f = nnapi::half_to_float(static_cast<uint16_t>(p[0] | (p[1] << 8)));
        break;
      case nnapi::OperandType::TensorQuant16Symm:
        s.i = static_cast<int16_t>(static_cast<uint16_t>(p[0] | (p[1] << 8)));
        break;
      case nnapi::OperandType::TensorQuant16Asymm:
        s.i = static_cast<uint16_t>(p[0] | (p[1] << 8));
        break;
      case nnapi::OperandType::Float32:
      case nnapi::OperandType::TensorFloat32: {
        const uint32_t u = le32(p);
        float f;
        std::memcpy(&f, &u, sizeof f);
        s.kind = Scalar::Float;
        s.f = f;
        break;
      }
      case nnapi::OperandType::UInt32:
        s.i = le32(p);
        break;
      default: {  // Int32, TensorInt32
        const uint32_t u = le32(p);
        int32_t i;
        std::memcpy(&i, &u, sizeof i);
        s.i = i;
      }
    }
    out.push_back(s);
  }
  return true;
}

std::string scalar_text(const Scalar& s) {
  std::ostringstream o;
  switch (s.kind) {
    case Scalar::Bool:
      o << (s.i ? "true" : "false");
      break;
    case Scalar::Float:
      o << float_text(s.f);
      break;
    case Scalar::Int:
      o << s.i;
  }
  return o.str();
}

std::string dims_text(const std::vector<uint32_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += dims[i] == 0 ? "?" : std::to_string(dims[i]);
  }
  return s + "]";
}

template <typename T>
std::string list_text(const std::vector<T>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string immediate_text(const BlobOperand& op, const BlobValue& v) {
  std::vector<Scalar> elems;
  size_t total = 0;
  decode_immediate(op, v.immediate, elems, total);
  std::string s = "immediate ";
  const bool scalar = !nnapi::is_tensor_type(op.type);
  if (scalar && elems.size() == 1) return s + scalar_text(elems[0]);
  s += "[";
  for (size_t i = 0; i < elems.size(); ++i) s += (i ? ", " : "") + scalar_text(elems[i]);
  if (total > elems.size()) s += ", ... (" + std::to_string(total) + " elements)";
  return s + "]";
}

// Where model input / output `index` of operand `o` appears, or -1.
int position_of(const std::vector<uint32_t>& list, size_t o) {
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i] == o) return static_cast<int>(i);
  return -1;
}

std::string source_text(const Model& m, size_t index) {
  const BlobOperand& op = m.blob.operands[index];
  std::vector<std::string> parts;
  const int in = position_of(m.blob.inputs, index);
  if (in >= 0) parts.push_back("model input " + std::to_string(in));
  if (op.value >= 0) {
    const BlobValue& v = m.blob.values[static_cast<size_t>(op.value)];
    if (v.source == nnapi::ValueSource::Immediate) {
      parts.push_back(immediate_text(op, v));
    } else {
      std::string s = "weight buffer " + std::to_string(v.buffer) + ", " +
                      std::to_string(v.buffer_length) + " bytes";
      if (v.buffer_offset != 0) s += " at offset " + std::to_string(v.buffer_offset);
      parts.push_back(s);
    }
  }
  if (op.producer >= 0)
    parts.push_back("computed by operation " + std::to_string(op.producer) + " (" +
                    nnapi::op_name(static_cast<nnapi::Op>(
                        m.blob.operations[static_cast<size_t>(op.producer)].opcode)) +
                    ")");
  const int out = position_of(m.blob.outputs, index);
  if (out >= 0) parts.push_back("model output " + std::to_string(out));
  if (parts.empty()) return "never written";
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? "; " : "") + parts[i];
  return s;
}

nlohmann::ordered_json json_scalar(const Scalar& s) {
  switch (s.kind) {
    case Scalar::Bool:
      return s.i != 0;
    case Scalar::Float:
      return json_float(s.f);
    case Scalar::Int:
      break;
  }
  return s.i;
}

// Each input's role in the operation (op_signature.h: "input", "filter",
// "padding left", ...); empty for an operation whose inputs the table does not
// describe, or with an input count no form of it has.
std::vector<std::string> input_roles(const Blob& b, const BlobOperation& op) {
  const nnapi::Signature* s = nnapi::signature_of_code(op.opcode);
  if (!s) return {};
  const nnapi::Form* f = nnapi::form_of(*s, op.inputs.size(), [&](size_t i) {
    return op.inputs[i] < b.operands.size() ? b.operands[op.inputs[i]].type
                                            : nnapi::OperandType::Float32;
  });
  if (!f) return {};
  std::vector<std::string> roles;
  for (size_t i = 0; i < op.inputs.size(); ++i)
    roles.push_back(nnapi::role_name(f->role_at(i, op.inputs.size())));
  return roles;
}

// The NNAPI feature level each operation of the blob needs, given its
// operand types (the validator's rules: RESHAPE of TENSOR_INT32 needs 6).
std::vector<int> operation_levels(const Blob& b) {
  const nnapi_validate::Model m = nnapi_validate::model_of_blob(b);
  std::vector<int> levels;
  std::vector<const nnapi_validate::Operand*> ins, outs;
  for (const BlobOperation& op : b.operations) {
    ins.clear();
    outs.clear();
    for (uint32_t id : op.inputs) ins.push_back(&m.operands.at(id));
    for (uint32_t id : op.outputs) outs.push_back(&m.operands.at(id));
    levels.push_back(nnapi_validate::operation_level(op.opcode, ins, outs));
  }
  return levels;
}

int model_level(const Blob& b) {
  const std::vector<int> levels = operation_levels(b);
  return std::max(nnapi::kMinFeatureLevel,
                  levels.empty() ? 0 : *std::max_element(levels.begin(), levels.end()));
}

int oldest_android_api(int level) {
  return std::max(nnapi::kMinAndroidApi, nnapi::android_api_of_feature_level(level));
}

// "aten::conv2d at model.py:12": the node operation `k` came from, or ""
// when the file does not record it.
std::string origin_text(const Model& m, size_t k) {
  if (k >= m.origins.size()) return "";
  const Origin& o = m.origins[k];
  if (o.kind.empty()) return "none (nnapi-convert added it)";
  return o.location.empty() ? o.kind : o.kind + " at " + o.location;
}

// The metadata record as printed: without its "nodes" (shown per operation).
std::string metadata_text(const std::string& metadata) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(metadata, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("nodes")) return metadata;
  j.erase("nodes");
  return j.dump(2) + "\n";
}

}  // namespace

// --- text output -----------------------------------------------------------------

void validate(Model& m, const std::vector<std::pair<const uint8_t*, size_t>>& buffers) {
  m.findings = nnapi_validate::validate_model(nnapi_validate::model_of_blob(m.blob, buffers));
}

void print_text(const Model& m, std::ostream& out) {
  const Blob& b = m.blob;
  out << m.path << ": "
      << (m.torchscript ? "TorchScript NNAPI module (convert_model_to_nnapi)"
                        : "raw NNAPI model blob")
      << "\n";
  out << "blob: " << m.blob_bytes << " bytes, version " << b.version << ", " << b.operands.size()
      << " operands, " << b.values.size() << " values, " << b.operations.size() << " operations, "
      << b.inputs.size() << " inputs, " << b.outputs.size() << " outputs\n";
  const int level = model_level(b);
  out << "needs: NNAPI feature level " << level << ", Android API level "
      << oldest_android_api(level) << " or later\n";
  if (m.torchscript) {
    out << "weight buffers: " << m.weights.size() << "\n";
    for (size_t i = 0; i < m.weights.size(); ++i)
      out << "  " << i << ": " << m.weights[i].bytes << " bytes, " << m.weights[i].dtype << " "
          << list_text(m.weights[i].shape) << "\n";
  }
  out << "operands (dims in NNAPI order, ? = flexible):\n";
  size_t type_w = 0, dims_w = 0;
  for (const auto& op : b.operands) {
    type_w = std::max(type_w, std::strlen(nnapi::operand_type_name(op.type)));
    dims_w = std::max(dims_w, dims_text(op.dims).size());
  }
  for (size_t i = 0; i < b.operands.size(); ++i) {
    const BlobOperand& op = b.operands[i];
    out << "  " << std::setw(4) << std::left << std::to_string(i) << std::setw(type_w + 2)
        << nnapi::operand_type_name(op.type) << std::setw(dims_w + 2) << dims_text(op.dims)
        << std::right;
    if (shows_quant_params(op))
      out << "scale=" << float_text(op.scale) << " zero_point=" << op.zero_point << "  ";
    out << source_text(m, i) << "\n";
  }
  out << "operations:\n";
  const std::vector<int> levels = operation_levels(b);
  for (size_t k = 0; k < b.operations.size(); ++k) {
    const BlobOperation& op = b.operations[k];
    out << "  " << std::setw(4) << std::left << std::to_string(k) << std::right
        << nnapi::op_name(static_cast<nnapi::Op>(op.opcode)) << " inputs " << list_text(op.inputs)
        << " outputs " << list_text(op.outputs);
    const int level = levels[k];
    if (level > nnapi::feature_level_of_android_api(nnapi::kMinAndroidApi))
      out << "  (feature level " << level << ")";
    out << "\n";
    const std::vector<std::string> roles = input_roles(b, op);
    for (size_t i = 0; i < roles.size(); ++i)
      out << (i ? ", " : "        input roles: ") << roles[i]
          << (i + 1 == roles.size() ? "\n" : "");
    const std::string origin = origin_text(m, k);
    if (!origin.empty()) out << "        node: " << origin << "\n";
  }
  out << "model inputs: " << list_text(b.inputs) << "\n";
  out << "model outputs: " << list_text(b.outputs) << "\n";
  if (m.findings.empty()) {
    out << "NeuralNetworks.h rules: no finding\n";
  } else {
    out << "NeuralNetworks.h rules: " << m.findings.size() << " finding"
        << (m.findings.size() > 1 ? "s" : "") << " (the device would refuse this model):\n";
    for (const nnapi_validate::Finding& f : m.findings)
      out << "  " << nnapi_validate::describe(f) << "\n";
  }
  if (m.torchscript) {
    auto fmts = [](const std::vector<int64_t>& v) {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::string(mem_fmt_name(v[i]));
      return s + "]";
    };
    out << "input memory formats: " << fmts(m.inp_mem_fmts) << "\n";
    out << "output memory formats: " << fmts(m.out_mem_fmts) << "\n";
    for (size_t k = 0; k < m.state.size(); ++k) {
      const size_t back = m.state.size() - k;
      out << "state kept between calls: attribute " << m.state[k] << ", model input "
          << b.inputs[b.inputs.size() - back] << " in, output "
          << b.outputs[b.outputs.size() - back] << " written back after each call\n";
    }
    for (const std::string& v : m.state_values) {
      out << "state kept between calls in TorchScript: attribute " << v << "\n";
    }
    if (m.state_prologue) {
      out << "state_prologue: forward's branches that write the state, run before the NNAPI "
             "model on each call\n";
    }
    for (const std::string& name : m.state_methods) {
      out << "the model's method " << name << "() carried over: it writes the state\n";
    }
    if (!m.arguments.empty()) {
      out << "arguments of forward (values are fixed: the model was specialized on them, and "
             "forward raises for others):\n";
      for (const std::string& a : m.arguments) out << "  " << a << "\n";
    }
    if (!m.metadata.empty()) {
      out << "made by (nnapi_convert.json):\n";
      std::istringstream lines(m.origins.empty() ? m.metadata : metadata_text(m.metadata));
      for (std::string line; std::getline(lines, line);) out << "  " << line << "\n";
      if (!m.origins.empty()) out << "  (its \"nodes\": each operation's node: above)\n";
    }
  } else {
    out << "memory formats: not stored in a raw blob\n";
  }
}

// --- DOT output -----------------------------------------------------------------

namespace {

// "model.py:12" of "dir/model.py:12": the place as a label shows it
// (the whole path goes into the tooltip).
std::string short_location(const std::string& location) {
  const size_t slash = location.rfind('/');
  return slash == std::string::npos ? location : location.substr(slash + 1);
}

// A node's label, and the whole place of its TorchScript node as its tooltip.
std::string dot_label(const std::string& label, const std::string& kind,
                      const std::string& location) {
  std::string text = label;
  if (!kind.empty()) text += "\n" + kind;
  if (!location.empty()) text += "\n" + short_location(location);
  std::string attrs = "label=" + dot::quoted(text);
  if (!location.empty()) attrs += ", tooltip=" + dot::quoted(kind + " at " + location);
  return attrs;
}

}  // namespace

void print_dot(const Model& m, const std::string& prefix, std::ostream& out) {
  const Blob& b = m.blob;
  const std::vector<int> levels = operation_levels(b);
  auto operand_label = [&](uint32_t i) {
    const BlobOperand& o = b.operands[i];
    return "#" + std::to_string(i) + " " + nnapi::operand_type_name(o.type) + " " +
           dims_text(o.dims);
  };
  for (size_t j = 0; j < b.inputs.size(); ++j) {
    out << "  " << prefix << "in" << j << " [shape=invhouse, style=filled, fillcolor=\""
        << dot::kInputFill << "\", label="
        << dot::quoted("input " + std::to_string(j) + "\n" + operand_label(b.inputs[j])) << "];\n";
  }
  for (size_t k = 0; k < b.operations.size(); ++k) {
    const BlobOperation& op = b.operations[k];
    int constants = 0;
    for (uint32_t i : op.inputs) constants += b.operands[i].value >= 0;
    const std::string what = std::to_string(k) + ": " +
                             nnapi::op_name(static_cast<nnapi::Op>(op.opcode)) +
                             "\nfeature level " + std::to_string(levels[k]) + ", " +
                             std::to_string(constants) + " constant operand(s)";
    const Origin none{k < m.origins.size() ? "no TorchScript node" : "", ""};
    const Origin& from = k < m.origins.size() && !m.origins[k].kind.empty() ? m.origins[k] : none;
    out << "  " << prefix << "op" << k << " [shape=box, style=filled, fillcolor=\""
        << dot::kNnapiFill << "\", " << dot_label(what, from.kind, from.location) << "];\n";
  }
  for (size_t j = 0; j < b.outputs.size(); ++j) {
    out << "  " << prefix << "out" << j << " [shape=house, style=filled, fillcolor=\""
        << dot::kOutputFill << "\", label="
        << dot::quoted("output " + std::to_string(j) + "\n" + operand_label(b.outputs[j]))
        << "];\n";
  }
  auto from = [&](uint32_t i) -> std::string {
    if (b.operands[i].producer >= 0) return prefix + "op" + std::to_string(b.operands[i].producer);
    const int in = position_of(b.inputs, i);
    return in >= 0 ? prefix + "in" + std::to_string(in) : "";
  };
  for (size_t k = 0; k < b.operations.size(); ++k) {
    for (uint32_t i : b.operations[k].inputs) {
      const std::string src = from(i);
      if (src.empty()) continue;  // a constant
      out << "  " << src << " -> " << prefix << "op" << k
          << " [label=" << dot::quoted(operand_label(i)) << "];\n";
    }
  }
  for (size_t j = 0; j < b.outputs.size(); ++j) {
    const std::string src = from(b.outputs[j]);
    if (!src.empty()) out << "  " << src << " -> " << prefix << "out" << j << ";\n";
  }
}

void print_dot_script(const ScriptPart& s, std::ostream& out) {
  using End = ScriptPart::End;
  auto name = [](const End& e) -> std::string {
    switch (e.kind) {
      case End::Argument:
        return "ts_arg" + std::to_string(e.index);
      case End::Script:
        return "ts" + std::to_string(e.index);
      case End::NnapiInput:
        return "m" + std::to_string(e.index) + "_in" + std::to_string(e.port);
      case End::NnapiOutput:
        return "m" + std::to_string(e.index) + "_out" + std::to_string(e.port);
      case End::Return:
        break;
    }
    return "ts_return";
  };
  for (size_t i = 0; i < s.arguments.size(); ++i) {
    out << "  " << name({End::Argument, i}) << " [shape=invhouse, style=filled, fillcolor=\""
        << dot::kInputFill << "\", label="
        << dot::quoted("forward argument " + std::to_string(i) + "\n" + s.arguments[i]) << "];\n";
  }
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    out << "  " << name({End::Script, i}) << " [shape=ellipse, style=filled, fillcolor=\""
        << dot::kTorchScriptFill << "\", "
        << dot_label("TorchScript (CPU)", s.nodes[i].kind, s.nodes[i].location) << "];\n";
  }
  out << "  " << name({End::Return}) << " [shape=house, style=filled, fillcolor=\""
      << dot::kOutputFill << "\", label=\"forward's return\"];\n";
  for (const auto& [from, to] : s.edges) out << "  " << name(from) << " -> " << name(to) << ";\n";
}

// --- JSON output -----------------------------------------------------------------

void print_json(const Model& m, std::ostream& out) {
  using Json = nlohmann::ordered_json;
  const Blob& b = m.blob;
  Json j = {{"file", m.path},
            {"format", m.torchscript ? "torchscript" : "blob"},
            {"blob_bytes", m.blob_bytes},
            {"version", b.version},
            {"nnapi_feature_level", model_level(b)},
            {"android_api", oldest_android_api(model_level(b))}};
  if (m.torchscript) {
    Json weights = Json::array();
    for (const WeightInfo& w : m.weights) {
      weights.push_back({{"bytes", w.bytes}, {"dtype", w.dtype}, {"shape", w.shape}});
    }
    j["weights"] = weights;
  }
  Json operands = Json::array();
  for (size_t i = 0; i < b.operands.size(); ++i) {
    const BlobOperand& op = b.operands[i];
    Json dims = Json::array();  // NNAPI order; null = flexible
    for (uint32_t d : op.dims) dims.push_back(d == 0 ? Json(nullptr) : Json(d));
    Json o = {{"index", i},
              {"type", nnapi::operand_type_name(op.type)},
              {"type_code", static_cast<int32_t>(op.type)},
              {"dims", dims}};
    if (shows_quant_params(op)) {
      o["scale"] = json_float(op.scale);
      o["zero_point"] = op.zero_point;
    }
    Json source;
    const int in = position_of(b.inputs, i);
    if (in >= 0) {
      source = {{"kind", "model_input"}, {"input", in}};
    } else if (op.value >= 0) {
      const BlobValue& v = b.values[static_cast<size_t>(op.value)];
      if (v.source == nnapi::ValueSource::Immediate) {
        std::vector<Scalar> elems;
        size_t total = 0;
        decode_immediate(op, v.immediate, elems, total);
        source = {{"kind", "immediate"}, {"bytes", v.immediate.size()}};
        if (!nnapi::is_tensor_type(op.type) && elems.size() == 1) {
          source["value"] = json_scalar(elems[0]);
        } else {
          Json values = Json::array();
          for (const Scalar& e : elems) values.push_back(json_scalar(e));
          source["elements"] = total;
          source["value"] = values;
          source["truncated"] = total > elems.size();
        }
      } else {
        source = {{"kind", "weight_buffer"},
                  {"buffer", v.buffer},
                  {"offset", v.buffer_offset},
                  {"bytes", v.buffer_length}};
      }
    } else if (op.producer >= 0) {
      source = {{"kind", "operation"}, {"operation", op.producer}};
    } else {
      source = {{"kind", "none"}};
    }
    o["source"] = source;
    const int out_pos = position_of(b.outputs, i);
    if (out_pos >= 0) o["model_output"] = out_pos;
    operands.push_back(o);
  }
  j["operands"] = operands;
  Json operations = Json::array();
  const std::vector<int> levels = operation_levels(b);
  for (size_t k = 0; k < b.operations.size(); ++k) {
    const BlobOperation& op = b.operations[k];
    Json o = {{"index", k},
              {"name", nnapi::op_name(static_cast<nnapi::Op>(op.opcode))},
              {"code", op.opcode},
              {"inputs", op.inputs}};
    const std::vector<std::string> roles = input_roles(b, op);
    if (!roles.empty()) o["input_roles"] = roles;
    o["outputs"] = op.outputs;
    o["feature_level"] = levels[k];
    if (k < m.origins.size()) {
      // The TorchScript node it came from (null: none, the converter added it).
      const Origin& from = m.origins[k];
      o["node"] = from.kind.empty() ? Json(nullptr)
                                    : Json{{"kind", from.kind}, {"location", from.location}};
    }
    operations.push_back(o);
  }
  j["operations"] = operations;
  j["inputs"] = b.inputs;
  j["outputs"] = b.outputs;
  Json findings = Json::array();
  for (const nnapi_validate::Finding& f : m.findings) {
    findings.push_back(
        {{"operation", f.operation >= 0 ? Json(f.operation) : Json(nullptr)},
         {"operation_name", f.operation >= 0 ? Json(f.operation_name) : Json(nullptr)},
         {"rule", nnapi_validate::rule_name(f.rule)},
         {"message", f.message}});
  }
  j["findings"] = findings;
  auto fmts = [&](const std::vector<int64_t>& v) {
    if (!m.torchscript) return Json(nullptr);  // a raw blob does not record memory formats
    Json names = Json::array();
    for (int64_t f : v) names.push_back(mem_fmt_name(f));
    return names;
  };
  j["input_memory_formats"] = fmts(m.inp_mem_fmts);
  j["output_memory_formats"] = fmts(m.out_mem_fmts);
  Json state = Json::array();
  for (size_t k = 0; k < m.state.size(); ++k) {
    const size_t back = m.state.size() - k;
    state.push_back({{"attribute", m.state[k]},
                     {"input", b.inputs[b.inputs.size() - back]},
                     {"output", b.outputs[b.outputs.size() - back]}});
  }
  j["state"] = state;
  if (!m.state_values.empty() || m.state_prologue || !m.state_methods.empty()) {
    j["state_values"] = m.state_values;
    j["state_prologue"] = m.state_prologue;
    j["state_methods"] = m.state_methods;
  }
  if (!m.arguments.empty()) j["arguments"] = m.arguments;
  if (!m.metadata.empty()) {
    j["metadata"] = Json::parse(m.metadata, nullptr, false);
    if (j["metadata"].is_discarded()) j["metadata"] = m.metadata;  // not JSON: its text
  }
  out << j.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
}

}  // namespace nnapi_convert::inspect_detail

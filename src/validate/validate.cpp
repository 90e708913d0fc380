// The validator's driver: operand and graph rules, then every operation's
// rules in an order where producers come first, so that each operation's
// output shapes (recomputed by its rule) become the input shapes of its
// consumers.
#include <algorithm>
#include <sstream>

#include "nnapi_convert/blob.h"
#include "validate/rule_context.h"

namespace nnapi_validate {

const char* rule_name(Rule rule) {
  switch (rule) {
    case Rule::Graph:
      return "graph";
    case Rule::Operand:
      return "operand";
    case Rule::Operation:
      return "operation";
    case Rule::InputCount:
      return "input-count";
    case Rule::OutputCount:
      return "output-count";
    case Rule::OperandType:
      return "operand-type";
    case Rule::Rank:
      return "rank";
    case Rule::Parameter:
      return "parameter";
    case Rule::Quantization:
      return "quantization";
    case Rule::FeatureLevel:
      return "feature-level";
    case Rule::Shape:
      return "shape";
  }
  return "unknown";
}

std::string describe(const Finding& f) { return f.message + " [" + rule_name(f.rule) + "]"; }

namespace {

std::string str(size_t v) { return std::to_string(v); }

bool is_scalar(T t) { return !nnapi::is_tensor_type(t); }

Finding model_finding(Rule rule, const std::string& message) {
  return Finding{-1, "", rule, message};
}

// An operand's own declaration: quantization parameters, scalar dims, a
// constant's dims and size.
std::optional<std::string> operand_problem(const Operand& o) {
  switch (o.type) {
    case T::TensorQuant8Asymm:
      if (!(o.scale > 0.0f)) return std::string("TENSOR_QUANT8_ASYMM needs a scale > 0");
      if (o.zero_point < 0 || o.zero_point > 255)
        return "TENSOR_QUANT8_ASYMM has zero point " + std::to_string(o.zero_point) +
               ", outside 0 to 255";
      break;
    case T::TensorQuant16Asymm:
      if (!(o.scale > 0.0f)) return std::string("TENSOR_QUANT16_ASYMM needs a scale > 0");
      if (o.zero_point < 0 || o.zero_point > 65535)
        return "TENSOR_QUANT16_ASYMM has zero point " + std::to_string(o.zero_point) +
               ", outside 0 to 65535";
      break;
    case T::TensorQuant16Symm:
      if (!(o.scale > 0.0f) || o.zero_point != 0)
        return std::string("TENSOR_QUANT16_SYMM needs a scale > 0 and zero point 0");
      break;
    case T::TensorQuant8Symm:
      if (!(o.scale > 0.0f) || o.zero_point != 0)
        return std::string("TENSOR_QUANT8_SYMM needs a scale > 0 and zero point 0");
      break;
    case T::TensorQuant8SymmPerChannel: {
      if (o.scale != 0.0f || o.zero_point != 0)
        return std::string(
            "TENSOR_QUANT8_SYMM_PER_CHANNEL needs scale 0 and zero point 0 in its operand type "
            "(its scales are set by setOperandSymmPerChannelQuantParams)");
      if (o.channel_scales.empty())
        return std::string(
            "TENSOR_QUANT8_SYMM_PER_CHANNEL without per-channel scales: NNAPI needs "
            "ANeuralNetworksModel_setOperandSymmPerChannelQuantParams before finish (PyTorch's "
            "serialized models cannot carry them)");
      if (o.channel_dim >= o.dims.size())
        return "per-channel scales along dimension " + str(o.channel_dim) +
               " of a tensor of rank " + str(o.dims.size());
      const uint32_t n = o.dims[o.channel_dim];
      if (n != 0 && o.channel_scales.size() != n)
        return str(o.channel_scales.size()) + " per-channel scales for dimension " +
               str(o.channel_dim) + " of size " + str(n);
      for (float s : o.channel_scales)
        if (!(s > 0.0f)) return std::string("a per-channel scale is not > 0");
      break;
    }
    case T::TensorInt32:
      if (o.scale < 0.0f) return std::string("TENSOR_INT32 has a negative scale");
      break;
    default:
      if (o.scale != 0.0f || o.zero_point != 0)
        return std::string(nnapi::operand_type_name(o.type)) +
               " has a scale or zero point; NNAPI needs 0 for both";
  }
  if (is_scalar(o.type) && !o.dims.empty())
    return std::string("the scalar ") + nnapi::operand_type_name(o.type) + " has dims";
  if (o.lifetime == Lifetime::Constant && nnapi::is_tensor_type(o.type)) {
    if (o.dims.empty() ||
        std::any_of(o.dims.begin(), o.dims.end(), [](uint32_t d) { return d == 0; }))
      return std::string("a constant tensor of ") + (o.dims.empty() ? "rank 0" : "unknown dims") +
             "; NNAPI needs the fully specified dims of a constant (setOperandValue)";
    if (o.data != nullptr) {
      size_t bytes = static_cast<size_t>(nnapi::element_size(o.type));
      for (uint32_t d : o.dims) bytes *= d;
      if (o.length != bytes)
        return "a constant of " + str(o.length) + " bytes where its type and dims need " +
               str(bytes);
    }
  }
  return std::nullopt;
}

// Kahn's algorithm: producers before consumers.
std::vector<size_t> order_of(const Model& m, const std::vector<int64_t>& producer) {
  const size_t ops = m.operations.size();
  std::vector<size_t> pending(ops, 0), order;
  std::vector<std::vector<size_t>> consumers(ops);
  for (size_t k = 0; k < ops; ++k) {
    for (uint32_t i : m.operations[k].inputs) {
      const int64_t p = i < producer.size() ? producer[i] : -1;
      if (p >= 0) {
        ++pending[k];
        consumers[static_cast<size_t>(p)].push_back(k);
      }
    }
  }
  std::vector<size_t> ready;
  for (size_t k = ops; k-- > 0;)
    if (pending[k] == 0) ready.push_back(k);
  while (!ready.empty()) {
    const size_t k = ready.back();
    ready.pop_back();
    order.push_back(k);
    for (size_t c : consumers[k])
      if (--pending[c] == 0) ready.push_back(c);
  }
  return order;
}

struct Graph {
  std::vector<int64_t> producer;  // per operand: the operation writing it, or -1
  std::vector<size_t> order;      // operations, producers first
};

// Graph rules; fills `g`. Findings go to `out`; returns false when the graph
// is too broken to look at operations (an index out of range, a cycle).
bool check_graph(const Model& m, Graph& g, std::vector<Finding>& out) {
  const size_t n = m.operands.size();
  auto in_range = [&](uint32_t i) { return i < n; };
  bool ok = true;
  for (uint32_t i : m.inputs)
    if (!in_range(i)) {
      out.push_back(model_finding(Rule::Graph, "model input " + str(i) + " is no operand"));
      ok = false;
    }
  for (uint32_t i : m.outputs)
    if (!in_range(i)) {
      out.push_back(model_finding(Rule::Graph, "model output " + str(i) + " is no operand"));
      ok = false;
    }
  g.producer.assign(n, -1);
  for (size_t k = 0; k < m.operations.size(); ++k) {
    const Operation& op = m.operations[k];
    const char* name = nnapi::op_name_or_null(op.code);
    const auto where = [&] {
      return "operation " + str(k) + " " + (name ? name : "#" + std::to_string(op.code));
    };
    for (uint32_t i : op.inputs)
      if (!in_range(i)) {
        out.push_back({static_cast<int64_t>(k), name ? name : "", Rule::Graph,
                       where() + ": input operand " + str(i) + " does not exist"});
        ok = false;
      }
    for (uint32_t o : op.outputs) {
      if (!in_range(o)) {
        out.push_back({static_cast<int64_t>(k), name ? name : "", Rule::Graph,
                       where() + ": output operand " + str(o) + " does not exist"});
        ok = false;
        continue;
      }
      const Operand& d = m.operands[o];
      std::string problem;
      if (g.producer[o] >= 0) {
        problem = "writes operand " + str(o) + ", which operation " +
                  std::to_string(g.producer[o]) + " writes too; NNAPI operands are written once";
      } else if (d.lifetime == Lifetime::Constant || d.lifetime == Lifetime::Omitted) {
        problem = "writes operand " + str(o) + ", a constant";
      } else if (d.lifetime == Lifetime::ModelInput) {
        problem = "writes operand " + str(o) + ", a model input";
      } else if (is_scalar(d.type)) {
        problem = "writes operand " + str(o) + ", a scalar; NNAPI operations output tensors";
      }
      if (!problem.empty()) {
        out.push_back(
            {static_cast<int64_t>(k), name ? name : "", Rule::Graph, where() + ": " + problem});
      } else {
        g.producer[o] = static_cast<int64_t>(k);
      }
    }
  }
  if (!ok) return false;
  if (m.operations.empty())
    out.push_back(model_finding(Rule::Graph, "the model has no operations"));
  // Model inputs and outputs: distinct, inputs not written, outputs written,
  // no output of rank 0.
  std::vector<uint32_t> all = m.inputs;
  all.insert(all.end(), m.outputs.begin(), m.outputs.end());
  std::sort(all.begin(), all.end());
  if (auto dup = std::adjacent_find(all.begin(), all.end()); dup != all.end())
    out.push_back(model_finding(Rule::Graph, "operand " + str(*dup) +
                                                 " is listed twice among the model's inputs and "
                                                 "outputs; NNAPI rejects such a model"));
  for (uint32_t i : m.inputs) {
    const Operand& d = m.operands[i];
    if (g.producer[i] >= 0)
      out.push_back(model_finding(
          Rule::Graph,
          "model input " + str(i) + " is written by operation " + std::to_string(g.producer[i])));
    if (d.lifetime == Lifetime::Constant)
      out.push_back(model_finding(Rule::Graph, "model input " + str(i) + " is a constant"));
  }
  for (uint32_t o : m.outputs) {
    const Operand& d = m.operands[o];
    if (g.producer[o] < 0)
      out.push_back(
          model_finding(Rule::Graph, "model output " + str(o) + " is written by no operation"));
    if (nnapi::is_tensor_type(d.type) && d.dims.empty())
      out.push_back(
          model_finding(Rule::Rank, "model output " + str(o) +
                                        " is a tensor of rank 0; NNAPI has no rank-0 "
                                        "model outputs (PyTorch's binding fails on them)"));
  }
  // Every input of an operation is available: a constant, omitted, a model
  // input or some operation's output.
  for (size_t k = 0; k < m.operations.size(); ++k) {
    const Operation& op = m.operations[k];
    for (uint32_t i : op.inputs) {
      const Lifetime l = m.operands[i].lifetime;
      if (l == Lifetime::Constant || l == Lifetime::Omitted || l == Lifetime::ModelInput ||
          g.producer[i] >= 0)
        continue;
      const char* name = nnapi::op_name_or_null(op.code);
      out.push_back({static_cast<int64_t>(k), name ? name : "", Rule::Graph,
                     "operation " + str(k) + " " + (name ? name : "?") + ": reads operand " +
                         str(i) + ", which nothing writes (no value, model input or operation)"});
      break;
    }
  }
  g.order = order_of(m, g.producer);
  if (g.order.size() != m.operations.size()) {
    out.push_back(model_finding(Rule::Graph,
                                "the operations form a cycle (an operation reads, "
                                "through others, its own output)"));
    return false;
  }
  return true;
}

// Declared dims completed by inferred ones; a finding when they differ.
Shape merge_output(const Check& c, size_t o, const Shape& declared, const Shape& inferred) {
  if (!inferred.known) return declared;
  if (!declared.known) return inferred;
  bool same = declared.rank() == inferred.rank();
  for (size_t k = 0; same && k < declared.rank(); ++k)
    same = declared.d[k] < 0 || inferred.d[k] < 0 || declared.d[k] == inferred.d[k];
  if (!same) {
    std::string d = "[";
    for (size_t k = 0; k < c.out(o).dims.size(); ++k) d += (k ? " " : "") + str(c.out(o).dims[k]);
    c.fail(Rule::Shape, "output " + str(o) + " is declared with dims " + d +
                            "] (0 = unknown), "
                            "but NNAPI's " +
                            c.name() + " computes " + shape_text(inferred) + " from its inputs");
  }
  Shape s = declared;
  for (size_t k = 0; k < s.rank(); ++k)
    if (s.d[k] < 0) s.d[k] = inferred.d[k];
  return s;
}

std::optional<Finding> to_finding(int64_t index, int32_t code, const Failure& f) {
  return Finding{index, nnapi::op_name(static_cast<nnapi::Op>(code)), f.rule, f.message};
}

// Operand types' levels on top of the rule's.
void operand_levels(Check& c, const std::vector<const Operand*>& ins,
                    const std::vector<const Operand*>& outs) {
  for (const auto* list : {&ins, &outs}) {
    for (const Operand* o : *list) {
      const int level = nnapi::operand_type_feature_level(static_cast<int32_t>(o->type));
      // (The reason's text only where it raises the level.)
      if (level > c.level())
        c.needs_level(level,
                      std::string("an operand of type ") + nnapi::operand_type_name(o->type));
    }
  }
}

}  // namespace

std::vector<size_t> execution_order(const Model& m) {
  std::vector<int64_t> producer(m.operands.size(), -1);
  for (size_t k = 0; k < m.operations.size(); ++k) {
    for (uint32_t o : m.operations[k].outputs) {
      if (o >= producer.size()) return {};
      if (producer[o] < 0) producer[o] = static_cast<int64_t>(k);
    }
  }
  for (const Operation& op : m.operations)
    for (uint32_t i : op.inputs)
      if (i >= producer.size()) return {};
  std::vector<size_t> order = order_of(m, producer);
  if (order.size() != m.operations.size()) order.clear();
  return order;
}

std::optional<Finding> validate_operation_types(int64_t index, int32_t code,
                                                const std::vector<const Operand*>& inputs,
                                                const std::vector<const Operand*>& outputs) {
  const OpRule* rule = find_rule(code);
  if (!rule) {
    const char* name = nnapi::op_name_or_null(code);
    return Finding{
        index, name ? name : "", Rule::Operation,
        "operation " + std::to_string(index) + " " +
            (name ? std::string(name) + " is not supported by this validator"
                  : "has code " + std::to_string(code) + ", which NNAPI does not define")};
  }
  Check c(index, code, inputs, outputs, nullptr, nullptr);
  try {
    rule->fn(c);
  } catch (const Failure& f) {
    return to_finding(index, code, f);
  }
  return std::nullopt;
}

int operation_level(int32_t code, const std::vector<const Operand*>& inputs,
                    const std::vector<const Operand*>& outputs, std::string* why) {
  const OpRule* rule = find_rule(code);
  Check c(0, code, inputs, outputs, nullptr, nullptr);
  operand_levels(c, inputs, outputs);
  try {
    if (rule) rule->fn(c);
  } catch (const Failure&) {
  }
  if (why) *why = c.level_reason();
  return c.level();
}

std::vector<Finding> validate_model(const Model& m, const Options& options) {
  std::vector<Finding> findings;
  for (size_t i = 0; i < m.operands.size(); ++i) {
    if (auto p = operand_problem(m.operands[i]))
      findings.push_back(model_finding(Rule::Operand, "operand " + str(i) + ": " + *p));
  }
  Graph g;
  if (!check_graph(m, g, findings)) return findings;

  std::vector<Shape> shapes(m.operands.size());
  std::vector<bool> shaped(m.operands.size(), false);
  auto shape_of = [&](uint32_t i) -> Shape {
    return shaped[i] ? shapes[i] : declared_shape(m.operands[i]);
  };
  std::vector<Finding> op_findings;
  std::vector<const Operand*> ins, outs;
  std::vector<Shape> in_shapes;
  for (size_t k : g.order) {
    const Operation& op = m.operations[k];
    ins.clear();
    outs.clear();
    in_shapes.clear();
    for (uint32_t i : op.inputs) {
      ins.push_back(&m.operands[i]);
      in_shapes.push_back(shape_of(i));
    }
    for (uint32_t o : op.outputs) outs.push_back(&m.operands[o]);
    const int64_t index = static_cast<int64_t>(k);
    const OpRule* rule = find_rule(op.code);
    if (!rule) {
      op_findings.push_back(*validate_operation_types(index, op.code, ins, outs));
      continue;
    }
    Check c(index, op.code, ins, outs, &in_shapes, &options);
    try {
      operand_levels(c, ins, outs);
      rule->fn(c);
      if (c.level() > options.feature_level)
        c.fail(Rule::FeatureLevel,
               c.level_reason() + " needs NNAPI feature level " + std::to_string(c.level()) +
                   " (Android API level " +
                   std::to_string(nnapi::android_api_of_feature_level(c.level())) +
                   "), above the target level " + std::to_string(options.feature_level) +
                   " (Android API level " +
                   std::to_string(nnapi::android_api_of_feature_level(options.feature_level)) +
                   ")");
      for (size_t o = 0; o < op.outputs.size(); ++o) {
        const uint32_t id = op.outputs[o];
        shapes[id] = merge_output(c, o, declared_shape(m.operands[id]), c.outputs()[o]);
        shaped[id] = true;
      }
    } catch (const Failure& f) {
      op_findings.push_back(*to_finding(index, op.code, f));
    }
  }
  std::stable_sort(op_findings.begin(), op_findings.end(),
                   [](const Finding& a, const Finding& b) { return a.operation < b.operation; });
  findings.insert(findings.end(), op_findings.begin(), op_findings.end());
  return findings;
}

Model model_of_blob(const nnapi_convert::Blob& blob,
                    const std::vector<std::pair<const uint8_t*, size_t>>& buffers) {
  Model m;
  m.operands.resize(blob.operands.size());
  for (size_t i = 0; i < blob.operands.size(); ++i) {
    const nnapi_convert::BlobOperand& b = blob.operands[i];
    Operand& o = m.operands[i];
    o.type = b.type;
    o.dims = b.dims;
    o.scale = b.scale;
    o.zero_point = b.zero_point;
    if (b.value < 0) continue;
    const nnapi_convert::BlobValue& v = blob.values.at(static_cast<size_t>(b.value));
    o.lifetime = Lifetime::Constant;
    if (v.source == nnapi::ValueSource::Immediate) {
      if (v.length == 0) {
        o.lifetime = Lifetime::Omitted;
      } else {
        o.data = v.immediate.data();
        o.length = v.immediate.size();
      }
    } else if (v.buffer < buffers.size() && buffers[v.buffer].first != nullptr &&
               static_cast<size_t>(v.buffer_offset) + v.buffer_length <= buffers[v.buffer].second) {
      o.data = buffers[v.buffer].first + v.buffer_offset;
      o.length = v.buffer_length;
    } else {
      o.length = v.buffer_length;
    }
  }
  for (uint32_t i : blob.inputs)
    if (i < m.operands.size()) m.operands[i].lifetime = Lifetime::ModelInput;
  for (uint32_t i : blob.outputs)
    if (i < m.operands.size() && m.operands[i].lifetime == Lifetime::Temporary)
      m.operands[i].lifetime = Lifetime::ModelOutput;
  for (const nnapi_convert::BlobOperation& op : blob.operations)
    m.operations.push_back(Operation{op.opcode, op.inputs, op.outputs});
  m.inputs = blob.inputs;
  m.outputs = blob.outputs;
  return m;
}

}  // namespace nnapi_validate

// --quantize: plan, calibrate and rewrite the frozen float graph into a
// quantized TorchScript graph (design: quantize.h).
#include "quantize/quantize.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <spdlog/spdlog.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <set>

#include "core/diagnostics.h"
#include "nnapi_convert/verify.h"
#include "quantize/plan.h"
#include "quantize/progress.h"

namespace nnapi_convert {
namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

c10::Symbol sym(const char* name) { return c10::Symbol::fromQualString(name); }

bool is_kind(const Node* n, std::initializer_list<const char*> kinds) {
  for (const char* k : kinds)
    if (n->kind() == sym(k)) return true;
  return false;
}

// What the first calibration pass saw of a value.
struct Seen {
  bool is_float = true;  // a float32 tensor in every sample
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  std::vector<int64_t> sizes;  // in the first sample
  std::vector<double> histogram;
};

std::vector<Node*> top_nodes(Graph& g) {
  std::vector<Node*> nodes;
  for (Node* n : g.nodes()) nodes.push_back(n);
  return nodes;
}

std::unordered_map<const Value*, ValueRef> value_refs(Graph& g) {
  std::unordered_map<const Value*, ValueRef> refs;
  for (size_t i = 1; i < g.inputs().size(); ++i) refs[g.inputs()[i]] = {-1, int(i - 1)};
  int k = 0;
  for (Node* n : g.nodes()) {
    for (size_t o = 0; o < n->outputs().size(); ++o) refs[n->outputs()[o]] = {k, int(o)};
    ++k;
  }
  return refs;
}

Value* value_at(Graph& g, const std::vector<Node*>& nodes, ValueRef r) {
  return r.node < 0 ? g.inputs()[r.output + 1] : nodes[r.node]->outputs()[r.output];
}

std::optional<at::Tensor> constant_tensor(const Value* v) {
  auto iv = torch::jit::toIValue(v);
  if (iv && iv->isTensor()) return iv->toTensor();
  return std::nullopt;
}

// The node that is `v`'s only use, if there is one.
Node* only_user(const Value* v) { return v->uses().size() == 1 ? v->uses()[0].user : nullptr; }

bool is_relu(const Node* n) { return is_kind(n, {"aten::relu"}); }
bool is_relu6(const Node* n) {
  if (is_kind(n, {"aten::relu6"})) return true;
  if (!is_kind(n, {"aten::hardtanh"}) || n->inputs().size() != 3) return false;
  auto lo = torch::jit::toIValue(n->input(1)), hi = torch::jit::toIValue(n->input(2));
  return lo && hi && lo->isScalar() && hi->isScalar() && lo->toScalar().toDouble() == 0.0 &&
         hi->toScalar().toDouble() == 6.0;
}

// The output quantization NNAPI prescribes for a TENSOR_QUANT8_ASYMM
// LOGISTIC and SOFTMAX (scale 1/256, zero point 0) and TANH (1/128, 128),
// NeuralNetworks.h; PyTorch's quantized sigmoid, softmax, tanh and
// hardsigmoid (which NNAPI has not: a lookup table) output the same.
std::optional<QParams> fixed_output(const Node* n) {
  if (is_kind(n, {"aten::sigmoid", "aten::hardsigmoid", "aten::softmax"}))
    return QParams{1.0 / 256, 0};
  if (is_kind(n, {"aten::tanh"})) return QParams{1.0 / 128, 128};
  return std::nullopt;
}

// --- the plan -----------------------------------------------------------

class Planner {
 public:
  Planner(Graph& g, const std::map<ValueRef, Seen>& seen, const QuantizeOptions& opts)
      : nodes_(top_nodes(g)), refs_(value_refs(g)), seen_(seen), opts_(opts) {}

  std::vector<NodePlan> plan(std::vector<std::string>* notes) {
    std::vector<NodePlan> plans(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      Node* n = nodes_[i];
      if (plans[i].role == Role::Absorbed) continue;
      if (skipped(n)) {
        notes->push_back("kept float by --quantize-skip: " + describe_node(n));
        continue;
      }
      plans[i].role = role_of(n, plans);
      plans[i].range_node = static_cast<int>(i);
      if (plans[i].role == Role::Float || plans[i].role == Role::Keep) continue;
      if (plans[i].role == Role::Unary && fixed_output(n)) continue;
      // A ReLU / ReLU6 that is the only use: its range is this output's
      // (so the clamp at 0 costs no levels); a ReLU after a convolution or
      // ADD is absorbed into conv2d_relu / add_relu.
      Node* user = only_user(n->output());
      if (user && !skipped(user) && (is_relu(user) || is_relu6(user))) {
        const int u = index_of(user);
        plans[i].range_node = u;
        if (is_relu(user) && (plans[i].role == Role::Conv || plans[i].role == Role::Add)) {
          plans[i].fused_relu = true;
          plans[u].role = Role::Absorbed;
          plans[u].range_node = u;
        }
      }
    }
    for (const std::string& s : opts_.skip) {
      if (!matched_.count(s)) {
        throw ConvertError(2, "--quantize-skip '" + s +
                                  "' names no node of the model: give a node kind as "
                                  "`nnapi-convert check` lists them (aten::add) or a value "
                                  "name as the report's per-layer table prints it (%input.3)");
      }
    }
    return plans;
  }

 private:
  int index_of(const Node* n) const {
    return static_cast<int>(std::find(nodes_.begin(), nodes_.end(), n) - nodes_.begin());
  }

  bool skipped(const Node* n) {
    for (const std::string& s : opts_.skip) {
      bool hit = n->kind().toQualString() == s;
      for (const Value* o : n->outputs()) {
        hit = hit || o->debugName() == s || "%" + o->debugName() == s;
      }
      if (hit) {
        matched_.insert(s);
        return true;
      }
    }
    return false;
  }

  const Seen* seen(const Value* v) const {
    auto r = refs_.find(v);
    if (r == refs_.end()) return nullptr;
    auto s = seen_.find(r->second);
    return s == seen_.end() || !s->second.is_float ? nullptr : &s->second;
  }
  size_t rank(const Value* v) const { return seen(v) ? seen(v)->sizes.size() : 0; }

  bool quantized_output(const Value* v, const std::vector<NodePlan>& plans) const {
    auto r = refs_.find(v);
    if (r == refs_.end() || r->second.node < 0) return false;
    const Role role = plans[r->second.node].role;
    return role != Role::Float;
  }

  Role role_of(const Node* n, const std::vector<NodePlan>& plans) {
    if (n->outputs().size() != 1 || !seen(n->output())) return Role::Float;
    if (is_kind(n, {"aten::conv2d", "aten::_convolution"}) && seen(n->input(0)) &&
        rank(n->input(0)) == 4) {
      auto w = constant_tensor(n->input(1));
      if (!w || w->dim() != 4 || n->inputs().size() < 7) return Role::Float;
      if (n->kind() == sym("aten::_convolution")) {
        auto transposed = torch::jit::toIValue(n->input(6));
        if (!transposed || !transposed->isBool() || transposed->toBool()) return Role::Float;
      } else if (!torch::jit::toIValue(n->input(4)) ||
                 !torch::jit::toIValue(n->input(4))->isIntList()) {
        return Role::Float;  // padding='same' / 'valid'
      }
      return Role::Conv;
    }
    if (is_kind(n, {"aten::linear"}) && seen(n->input(0)) && rank(n->input(0)) == 2) {
      auto w = constant_tensor(n->input(1));
      return w && w->dim() == 2 ? Role::Linear : Role::Float;
    }
    if (is_kind(n, {"aten::add", "aten::mul"}) && seen(n->input(0)) && seen(n->input(1)) &&
        rank(n->input(0)) == rank(n->input(1)) && rank(n->input(0)) > 0) {
      if (n->kind() == sym("aten::add")) {
        auto alpha = n->inputs().size() == 3 ? torch::jit::toIValue(n->input(2)) : c10::nullopt;
        if (!alpha || !alpha->isScalar() || alpha->toScalar().toDouble() != 1.0) return Role::Float;
        return Role::Add;
      }
      return Role::Mul;
    }
    if (is_kind(n, {"aten::sigmoid", "aten::tanh", "aten::hardsigmoid", "aten::hardswish"}) &&
        n->inputs().size() == 1 && quantized_output(n->input(0), plans)) {
      return Role::Unary;
    }
    if (is_kind(n, {"aten::softmax"}) && n->inputs().size() == 3 &&
        quantized_output(n->input(0), plans)) {
      auto dim = torch::jit::toIValue(n->input(1)), dtype = torch::jit::toIValue(n->input(2));
      if (dim && dim->isInt() && dtype && dtype->isNone()) return Role::Unary;
    }
    if (is_kind(n, {"aten::relu", "aten::relu6", "aten::hardtanh", "aten::max_pool2d",
                    "aten::adaptive_avg_pool2d", "aten::flatten", "aten::reshape", "aten::view",
                    "aten::dropout"}) &&
        quantized_output(n->input(0), plans)) {
      return Role::Keep;
    }
    return Role::Float;
  }

  std::vector<Node*> nodes_;
  std::unordered_map<const Value*, ValueRef> refs_;
  const std::map<ValueRef, Seen>& seen_;
  const QuantizeOptions& opts_;
  std::set<std::string> matched_;
};

// --- calibration --------------------------------------------------------

constexpr int kBins = 2048;

// Every tensor output of a top-level node (and every input), over the
// calibration samples: pass 1 ranges and shapes; pass 2 (histogram) bins
// over those ranges for `wanted`.
std::map<ValueRef, Seen> observe(const std::shared_ptr<Graph>& graph, const c10::IValue& self,
                                 const std::vector<Sample>& samples, const std::string& model,
                                 const std::set<ValueRef>* wanted, std::map<ValueRef, Seen> seen) {
  std::vector<Node*> nodes = top_nodes(*graph);
  std::vector<ValueRef> refs;
  std::vector<Value*> probes;
  auto consider = [&](ValueRef r) {
    Value* v = value_at(*graph, nodes, r);
    if (v->type()->kind() != c10::TypeKind::TensorType) return;
    if (wanted && !wanted->count(r)) return;
    refs.push_back(r);
    probes.push_back(v);
  };
  for (size_t i = 1; i < graph->inputs().size(); ++i) consider({-1, int(i - 1)});
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (nodes[k]->kind() == c10::prim::Constant) continue;
    for (size_t o = 0; o < nodes[k]->outputs().size(); ++o) consider({int(k), int(o)});
  }
  Progress progress(std::string(wanted ? "histograms" : "calibrating") + " on samples",
                    samples.size());
  GraphRunner runner(graph, self, probes);
  for (size_t s = 0; s < samples.size(); ++s) {
    progress.step(s);
    std::vector<at::Tensor> out;
    try {
      out = runner.run(samples[s]);
    } catch (const std::exception& e) {
      throw ConvertError(1, "model '" + model + "' failed on calibration sample " +
                                std::to_string(s) + ": " + script_error_text(e) +
                                ". Check that the samples are inputs the model takes.");
    }
    const size_t first = out.size() - probes.size();
    for (size_t k = 0; k < refs.size(); ++k) {
      const at::Tensor& t = out[first + k];
      Seen& st = seen[refs[k]];
      if (!t.defined() || t.scalar_type() != at::kFloat || t.numel() == 0 || t.is_quantized()) {
        st.is_float = false;
        continue;
      }
      if (!wanted) {
        if (st.sizes.empty()) st.sizes = t.sizes().vec();
        st.lo = std::min(st.lo, t.min().item<double>());
        st.hi = std::max(st.hi, t.max().item<double>());
        continue;
      }
      if (st.histogram.empty()) st.histogram.assign(kBins, 0.0);
      if (!(st.hi > st.lo)) continue;
      at::Tensor h = at::histc(t, kBins, st.lo, st.hi).to(at::kDouble).contiguous();
      const double* p = h.data_ptr<double>();
      for (int b = 0; b < kBins; ++b) st.histogram[b] += p[b];
    }
  }
  return seen;
}

QParams range_qparams(const Seen& s, const std::string& method) {
  if (method == "histogram" && !s.histogram.empty()) {
    auto [lo, hi] = histogram_range(s.histogram, s.lo, s.hi);
    return qparams_for_range(lo, hi);
  }
  return qparams_for_range(s.lo, s.hi);
}

// qint8 symmetric per tensor, as PyTorch's qnnpack weight observer.
at::Tensor quantize_weight(const at::Tensor& w) {
  const double amax = w.abs().max().item<double>();
  const double scale = std::max(amax / 127.5, double(std::numeric_limits<float>::epsilon()));
  return at::quantize_per_tensor(w.contiguous(), static_cast<float>(scale), 0, at::kQInt8);
}

// --- the graphs ---------------------------------------------------------

c10::IValue prepack(const NodePlan& p, const Node* n) {
  auto& dispatcher = c10::Dispatcher::singleton();
  torch::jit::Stack stack;
  if (p.role == Role::Linear) {
    auto op = dispatcher.findSchemaOrThrow("quantized::linear_prepack", "");
    stack = {p.weight, p.bias};
    op.callBoxed(&stack);
    return stack.at(0);
  }
  const bool full = n->kind() == sym("aten::_convolution");
  auto ivalue = [&](size_t i) { return *torch::jit::toIValue(n->input(i)); };
  auto op = dispatcher.findSchemaOrThrow("quantized::conv2d_prepack", "");
  stack = {p.weight, p.bias, ivalue(3), ivalue(4), ivalue(5), ivalue(full ? 8 : 6)};
  op.callBoxed(&stack);
  return stack.at(0);
}

class Builder {
 public:
  Builder(const QuantizedModel& q, Mode mode, std::shared_ptr<Graph> g)
      : q_(q), mode_(mode), g_(std::move(g)), nodes_(top_nodes(*g_)), refs_(value_refs(*g_)) {}

  std::shared_ptr<Graph> build(std::map<int, Value*>* probes) {
    const bool io = mode_ == Mode::Quantized && !q_.io_inputs.empty();
    if (io) quantized_inputs_io();
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const NodePlan& p = q_.nodes[i];
      Node* n = nodes_[i];
      const bool quantized = mode_ == Mode::Quantized || mode_ == Mode::QuantizedEager;
      if (p.role == Role::Float || (p.role == Role::Absorbed && quantized)) continue;
      Value* out = quantized ? quantized_node(n, p)
                   : mode_ == Mode::Float
                       // The float value the quantized one stands for: after the
                       // ReLU / ReLU6 whose range it takes.
                       ? nodes_[p.range_node >= 0 ? p.range_node : i]->output()
                       : fake_node(n, p);
      if (probes) (*probes)[static_cast<int>(i)] = out;
    }
    if (io) quantized_outputs_io();
    torch::jit::EliminateDeadCode(g_);
    return g_;
  }

 private:
  Value* constant(const c10::IValue& v) { return g_->insertConstant(v); }

  // --quantized-io: a quint8 model input is read as it is by quantized
  // nodes, dequantized by float ones.
  void quantized_inputs_io() {
    for (size_t i = 0; i < q_.io_inputs.size(); ++i) {
      if (!q_.io_inputs[i]) continue;
      Value* v = g_->inputs()[i + 1];
      torch::jit::WithInsertPoint guard(g_->block()->nodes().front());
      Value* f = g_->insert(sym("aten::dequantize"), {v});
      v->replaceAllUsesWith(f);
      f->node()->replaceInput(0, v);
      quantized_[f] = v;
    }
  }

  // --quantized-io: each returned value quint8: a quantized node's own
  // output (not its DEQUANTIZE), a float one QUANTIZEd at its range.
  void quantized_outputs_io() {
    Node* ret = g_->outputs()[0]->node();
    const bool tuple = ret->kind() == c10::prim::TupleConstruct;
    std::vector<Value*> values = returned_values(*g_);
    for (size_t k = 0; k < values.size(); ++k) {
      Value* v = values[k];
      Value* qv = nullptr;
      if (auto it = quantized_.find(v); it != quantized_.end()) {
        qv = it->second;
      } else {
        torch::jit::WithInsertPoint guard(tuple ? ret : g_->return_node());
        const QParams& qp = q_.io_outputs[k];
        qv = g_->insert(sym("aten::quantize_per_tensor"),
                        {v, qp.scale, qp.zero_point, static_cast<int64_t>(at::kQUInt8)});
      }
      if (tuple) {
        ret->replaceInput(k, qv);
      } else {
        g_->return_node()->replaceInput(0, qv);
      }
    }
  }

  // The quantized counterpart of float value `v` (its QUANTIZE, once).
  Value* quantized_of(Value* v) {
    if (auto it = quantized_.find(v); it != quantized_.end()) return it->second;
    const QParams& qp = q_.quantized_at.at(refs_.at(v));
    torch::jit::WithInsertPoint guard(
        v->node()->kind() == c10::prim::Param ? g_->block()->nodes().front() : v->node()->next());
    Value* qv = g_->insert(sym("aten::quantize_per_tensor"),
                           {v, qp.scale, qp.zero_point, static_cast<int64_t>(at::kQUInt8)});
    quantized_[v] = qv;
    return qv;
  }

  // `n` on `in` instead of its first input.
  Value* clone_on(Node* n, Value* in) {
    Node* c = g_->createClone(n, [&](Value* v) { return v == n->input(0) ? in : v; });
    g_->insertNode(c);
    return c->output();
  }

  Value* quantized_node(Node* n, const NodePlan& p) {
    torch::jit::WithInsertPoint guard(n);
    Value* q = nullptr;
    if (p.role == Role::Keep) {
      Value* in = quantized_of(n->input(0));
      if (mode_ == Mode::QuantizedEager && is_kind(n, {"aten::hardtanh", "aten::relu6"})) {
        in = g_->insert(sym("aten::contiguous"), {in});
      }
      q = clone_on(n, in);
    } else if (p.role == Role::Unary) {
      // PyTorch's quantized sigmoid, tanh and hardsigmoid output the fixed
      // quantization (p.out); hardswish and softmax take theirs.
      Value* in = quantized_of(n->input(0));
      if (is_kind(n, {"aten::hardswish"})) {
        q = g_->insert(sym("quantized::hardswish"), {in, p.out.scale, p.out.zero_point});
      } else if (is_kind(n, {"aten::softmax"})) {
        q = g_->insert(sym("quantized::softmax"), {in, n->input(1), p.out.scale, p.out.zero_point});
      } else {
        q = clone_on(n, in);
      }
    } else if (p.role == Role::Conv || p.role == Role::Linear) {
      Value* x = quantized_of(n->input(0));
      const char* kind = p.role == Role::Linear ? "quantized::linear"
                         : p.fused_relu         ? "quantized::conv2d_relu"
                                                : "quantized::conv2d";
      q = g_->insert(sym(kind), {x, constant(prepack(p, n)), p.out.scale, p.out.zero_point});
    } else {
      Value* a = quantized_of(n->input(0));
      Value* b = quantized_of(n->input(1));
      const char* kind = p.role == Role::Mul ? "quantized::mul"
                         : p.fused_relu      ? "quantized::add_relu"
                                             : "quantized::add";
      q = g_->insert(sym(kind), {a, b, p.out.scale, p.out.zero_point});
    }
    // Float readers read its DEQUANTIZE; quantized readers the value itself.
    Value* stands_for = p.fused_relu ? only_user(n->output())->output() : n->output();
    Value* f = g_->insert(sym("aten::dequantize"), {q});
    stands_for->replaceAllUsesWith(f);
    quantized_[f] = q;
    return q;
  }

  Value* fake_quantize(Value* v, const QParams& qp) {
    return g_->insert(sym("aten::fake_quantize_per_tensor_affine"),
                      {v, qp.scale, qp.zero_point, int64_t{0}, int64_t{255}});
  }

  // FakeQuant: fake-quantized inputs (each float one at its own scale),
  // weights and biases as the quantized graph holds them, the output
  // fake-quantized at its scale. Float: the probes only.
  Value* fake_node(Node* n, const NodePlan& p) {
    if (mode_ == Mode::Float) return n->output();
    if (p.role != Role::Keep && p.role != Role::Absorbed) {
      const size_t tensors = p.role == Role::Add || p.role == Role::Mul ? 2 : 1;
      for (size_t k = 0; k < tensors; ++k) {
        Value* in = n->input(k);
        auto r = refs_.find(in);
        if (r == refs_.end()) continue;  // already fake-quantized
        auto qa = q_.quantized_at.find(r->second);
        if (qa == q_.quantized_at.end()) continue;  // a quantized node's output
        torch::jit::WithInsertPoint guard(n);
        n->replaceInput(k, fake_quantize(in, qa->second));
      }
    }
    if (p.role == Role::Conv || p.role == Role::Linear) {
      torch::jit::WithInsertPoint guard(n);
      const QParams& in = input_qparams(n->input(0));
      const double bias_scale = in.scale * p.weight.q_scale();
      at::Tensor bias = at::quantize_per_tensor(p.bias, bias_scale, 0, at::kQInt32).dequantize();
      n->replaceInput(1, constant(p.weight.dequantize()));
      n->replaceInput(2, constant(bias));
    }
    torch::jit::WithInsertPoint guard(n->next());
    Value* f = fake_quantize(n->output(), p.out);
    n->output()->replaceAllUsesWith(f);
    f->node()->replaceInput(0, n->output());
    fq_of_[f] = p.out;
    return f;
  }

  const QParams& input_qparams(Value* v) {
    if (auto it = fq_of_.find(v); it != fq_of_.end()) return it->second;
    // `v` is the FAKE_QUANTIZE inserted for a float input: its input's.
    return q_.quantized_at.at(refs_.at(v->node()->input(0)));
  }

  const QuantizedModel& q_;
  Mode mode_;
  std::shared_ptr<Graph> g_;
  std::vector<Node*> nodes_;
  std::unordered_map<const Value*, ValueRef> refs_;
  std::unordered_map<const Value*, Value*> quantized_;
  std::unordered_map<const Value*, QParams> fq_of_;
};

// The float values each quantized node reads that no quantized node
// computes: they get a QUANTIZE at their own range.
std::set<ValueRef> quantized_inputs(Graph& g, const std::vector<NodePlan>& plans) {
  std::set<ValueRef> out;
  auto refs = value_refs(g);
  std::vector<Node*> nodes = top_nodes(g);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Role role = plans[i].role;
    if (role == Role::Float || role == Role::Absorbed || role == Role::Keep) continue;
    const size_t tensors = role == Role::Add || role == Role::Mul ? 2 : 1;
    for (size_t k = 0; k < tensors; ++k) {
      const ValueRef r = refs.at(nodes[i]->input(k));
      if (r.node < 0 || plans[r.node].role == Role::Float) out.insert(r);
    }
  }
  return out;
}

// --quantized-io: the model's float tensor inputs and its returned values
// (which must be float tensors), added to `to_quantize` where no quantized
// node computes them. Returns the returned values' refs.
std::vector<ValueRef> io_values(const QuantizedModel& q, const std::map<ValueRef, Seen>& seen,
                                const ConvertOptions& options, std::set<ValueRef>* to_quantize) {
  Graph& g = *q.float_graph;
  auto refs = value_refs(g);
  auto is_float = [&](ValueRef r) {
    auto s = seen.find(r);
    return s != seen.end() && s->second.is_float;
  };
  for (size_t i = 0; i + 1 < g.inputs().size(); ++i) {
    if (is_float({-1, int(i)})) to_quantize->insert({-1, int(i)});
  }
  std::vector<ValueRef> out;
  std::vector<Value*> values = returned_values(g);
  for (size_t k = 0; k < values.size(); ++k) {
    auto r = refs.find(values[k]);
    if (r == refs.end() || !is_float(r->second)) {
      throw ConvertError(1, "model '" + options.model_path + "': --quantized-io: output " +
                                std::to_string(k) +
                                " is not a float32 tensor on the calibration samples, and "
                                "only float tensors become quint8; convert without "
                                "--quantized-io");
    }
    if (r->second.node < 0 || q.nodes[r->second.node].role == Role::Float)
      to_quantize->insert(r->second);
    out.push_back(r->second);
  }
  return out;
}

}  // namespace

std::vector<Value*> returned_values(Graph& g) {
  Value* ret = g.outputs()[0];
  if (ret->node()->kind() == c10::prim::TupleConstruct) return ret->node()->inputs().vec();
  return {ret};
}

GraphRunner::GraphRunner(const std::shared_ptr<Graph>& graph, c10::IValue self,
                         const std::vector<Value*>& extra)
    : self_(std::move(self)), extra_(!extra.empty()) {
  std::shared_ptr<Graph> g = graph->copy();
  if (extra_) {
    // The copy's output is (the model's output, extra...).
    std::vector<Node*> to = top_nodes(*g);
    auto refs = value_refs(*graph);
    std::vector<Value*> outs{g->outputs()[0]};
    for (Value* v : extra) outs.push_back(value_at(*g, to, refs.at(v)));
    Value* tuple = g->insertNode(g->createTuple(outs))->output();
    g->eraseOutput(0);
    g->registerOutput(tuple);
  }
  fn_ = std::make_unique<torch::jit::GraphFunction>("forward", g, nullptr);
}

GraphRunner::~GraphRunner() = default;

std::vector<at::Tensor> GraphRunner::run(const Sample& sample) {
  torch::jit::Stack stack{self_};
  for (const at::Tensor& t : sample) stack.emplace_back(t);
  at::NoGradGuard no_grad;
  fn_->run(stack);
  std::vector<at::Tensor> out;
  std::function<void(const c10::IValue&)> flatten = [&](const c10::IValue& v) {
    if (v.isTensor()) {
      out.push_back(v.toTensor());
    } else if (v.isTuple()) {
      for (const c10::IValue& e : v.toTupleRef().elements()) flatten(e);
    } else if (v.isList()) {
      for (const c10::IValue& e : v.toListRef()) flatten(e);
    } else {
      out.emplace_back();  // not a tensor
    }
  };
  if (!extra_) {
    flatten(stack.at(0));
    return out;
  }
  const auto elements = stack.at(0).toTupleRef().elements();
  flatten(elements[0]);
  for (size_t k = 1; k < elements.size(); ++k) {
    out.push_back(elements[k].isTensor() ? elements[k].toTensor() : at::Tensor());
  }
  return out;
}

ConvertOptions lowering_options(const QuantizedModel& q, const ConvertOptions& options) {
  ConvertOptions o = options;
  for (size_t i = 0; i < q.io_inputs.size() && i < o.inputs.size(); ++i) {
    if (!q.io_inputs[i]) continue;
    InputSpec& s = o.inputs[i];
    s.dtype = InputDType::QUInt8;
    s.scale = q.io_inputs[i]->scale;
    s.zero_point = q.io_inputs[i]->zero_point;
    s.has_scale = s.has_zero_point = true;
    s.text = format_input_spec(s);
  }
  return o;
}

std::shared_ptr<Graph> build_graph(const QuantizedModel& q, Mode mode,
                                   std::map<int, Value*>* probes) {
  return Builder(q, mode, q.float_graph->copy()).build(probes);
}

std::shared_ptr<const QuantizedModel> quantize_module(torch::jit::Module& module,
                                                      const ConvertOptions& options) {
  const QuantizeOptions& opts = options.quantize;
  auto q = std::make_shared<QuantizedModel>();
  q->samples = load_calibration_samples(opts, options.inputs);
  q->holdout = opts.holdout;
  std::shared_ptr<Graph> graph = module.get_method("forward").graph();
  q->float_graph = graph->copy();
  q->self = module._ivalue();
  const std::vector<Sample> calibration(q->samples.begin(), q->samples.end() - opts.holdout);

  std::map<ValueRef, Seen> seen =
      observe(q->float_graph, q->self, calibration, options.model_path, nullptr, {});
  q->nodes = Planner(*q->float_graph, seen, opts).plan(&q->notes);
  std::set<ValueRef> to_quantize = quantized_inputs(*q->float_graph, q->nodes);
  const std::vector<ValueRef> returned =
      opts.quantized_io ? io_values(*q, seen, options, &to_quantize) : std::vector<ValueRef>();
  std::set<ValueRef> wanted = to_quantize;
  for (const NodePlan& p : q->nodes)
    if (p.role != Role::Float && p.role != Role::Keep) wanted.insert({p.range_node, 0});
  if (opts.method == "histogram") {
    seen = observe(q->float_graph, q->self, calibration, options.model_path, &wanted, seen);
  }
  for (const ValueRef& r : to_quantize) q->quantized_at[r] = range_qparams(seen.at(r), opts.method);

  // Scales in model order: a Keep node takes its input's; a convolution's
  // or linear's output scale must exceed input scale x weight scale (NNAPI's
  // and the lowering's multiplier < 1).
  std::vector<Node*> nodes = top_nodes(*q->float_graph);
  auto refs = value_refs(*q->float_graph);
  auto scale_of_input = [&](const Value* v) {
    const ValueRef r = refs.at(v);
    if (auto it = q->quantized_at.find(r); it != q->quantized_at.end()) return it->second;
    return q->nodes[r.node].out;
  };
  int64_t quantized = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodePlan& p = q->nodes[i];
    Node* n = nodes[i];
    if (p.role == Role::Float) continue;
    quantized += p.role != Role::Keep && p.role != Role::Absorbed;
    if (p.role == Role::Keep) {
      p.out = scale_of_input(n->input(0));
      continue;
    }
    if (auto fixed = fixed_output(n); p.role == Role::Unary && fixed) {
      p.out = *fixed;
      continue;
    }
    if (p.role == Role::Absorbed) {
      p.out = q->nodes[refs.at(n->input(0)).node].out;
      continue;
    }
    p.out = range_qparams(seen.at({p.range_node, 0}), opts.method);
    if (p.role == Role::Conv || p.role == Role::Linear) {
      at::Tensor w = *constant_tensor(n->input(1));
      auto b = constant_tensor(n->input(2));
      p.weight = quantize_weight(w);
      p.bias = b ? b->to(at::kFloat).contiguous() : at::zeros({w.size(0)}, at::kFloat);
      const double floor = scale_of_input(n->input(0)).scale * p.weight.q_scale();
      if (p.out.scale <= floor) p.out.scale = static_cast<float>(floor * 1.0001);
    }
  }
  if (quantized == 0) {
    throw ConvertError(
        1, "model '" + options.model_path +
               "': --quantize found no node it quantizes (convolutions, linear, "
               "tensor add and mul with float32 inputs, and the activations after them" +
               std::string(opts.skip.empty() ? "" : ", not --quantize-skip'd") +
               "), so the model would stay float; convert it without --quantize");
  }
  if (opts.quantized_io) {
    for (size_t i = 0; i + 1 < q->float_graph->inputs().size(); ++i) {
      auto it = q->quantized_at.find({-1, int(i)});
      q->io_inputs.push_back(it == q->quantized_at.end() ? std::nullopt
                                                         : std::optional<QParams>(it->second));
    }
    for (const ValueRef& r : returned) {
      auto it = q->quantized_at.find(r);
      q->io_outputs.push_back(it != q->quantized_at.end() ? it->second : q->nodes[r.node].out);
    }
  }
  spdlog::debug("--quantize: {} quantized nodes", quantized);
  QnnpackEngine qnnpack;  // weights packed for Android's engine
  Builder(*q, Mode::Quantized, graph).build(nullptr);
  return q;
}

}  // namespace nnapi_convert

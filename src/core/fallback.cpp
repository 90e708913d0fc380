// --cpu-fallback. The frozen graph's nodes are split, in graph order, into
// nodes left to TorchScript ("CPU nodes") and runs of the nodes between them
// ("segments"), each lowered as an NNAPI model of its own:
// - a node is a CPU node when no lowering takes its kind, when it has blocks,
//   when it reads a non-tensor value computed outside its segment (or the
//   module itself), when a value it computes leaves its segment as anything
//   but a tensor, or when its segment's lowering fails at it;
// - nodes computed from constants alone (prim::Constant, folded shape and
//   mask arithmetic) belong to no segment: every segment gets a copy of those
//   before it, and the TorchScript part keeps them;
// - a segment's inputs are the tensors it reads from outside; their sizes,
//   dtypes and quantization come from running the model on seeded random
//   inputs (kProbeRuns times); a tensor whose size differs between the runs (data-dependent, e.g.
//   after NMS or a boolean mask) cannot be one, as the NNAPI module fixes its sizes when first run;
// - with flexible (0) --input sizes the model also runs with those at other
//   sizes (kFlexibleSteps): a boundary tensor's dim that follows them is a
//   flexible dim of the segment's input, which the segment's own
//   shape-compute sets when the module first runs (a node that cannot take
//   it flexible fails to lower and stays TorchScript); one whose rank
//   follows them cannot be an input;
// - a segment whose output comes back with another dtype than the model's
//   (int32 for int64, ...), or that cannot be an NNAPI output (a constant
//   there, an input unchanged), gives that output's node to TorchScript; a
//   segment that fails otherwise at its return goes to TorchScript whole.
// Each change re-splits the graph, until every segment converts.
#include "core/fallback.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/converter.h"
#include "core/diagnostics.h"
#include "core/folding.h"
#include "core/sample_inputs.h"
#include "lower/emit.h"
#include "nnapi_convert/nnapi_types.h"

namespace nnapi_convert {

namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

struct Segment {
  std::vector<Node*> nodes;  // in graph order
  std::vector<Value*> inputs, outputs;
  const Node* after = nullptr;  // the last CPU node it runs after (nullptr: none)
};

bool is_tensor(const Value* v) { return v->type()->kind() == c10::TypeKind::TensorType; }

// Nodes whose outputs follow from constants alone: prim::Constant, and
// foldable kinds (shape and mask arithmetic) on such outputs only.
std::set<const Node*> constant_nodes(const Graph& g) {
  std::set<const Node*> nodes;
  std::set<const Value*> values;
  for (const Node* n : g.nodes()) {
    bool constant = n->kind() == c10::prim::Constant;
    if (!constant && is_foldable(n->kind()) && n->blocks().empty()) {
      constant = std::all_of(n->inputs().begin(), n->inputs().end(),
                             [&](const Value* v) { return values.count(v) != 0; });
    }
    if (!constant) continue;
    nodes.insert(n);
    for (const Value* v : n->outputs()) values.insert(v);
  }
  return nodes;
}

// Whether `n` (or a node in its blocks) writes into a tensor argument.
bool writes_tensor(const Node* n) {
  if (const c10::FunctionSchema* schema = n->maybeSchema()) {
    for (const c10::Argument& a : schema->arguments()) {
      if (a.alias_info() && a.alias_info()->isWrite() &&
          a.type()->kind() == c10::TypeKind::TensorType) {
        return true;
      }
    }
  }
  for (const torch::jit::Block* b : n->blocks()) {
    for (const Node* m : b->nodes()) {
      if (writes_tensor(m)) return true;
    }
  }
  return false;
}

// Whether node `m` is `n` or inside one of its blocks.
bool within(const Node* m, const Node* n) {
  for (; m; m = m->owningBlock()->owningNode()) {
    if (m == n) return true;
  }
  return false;
}

// The values `n` reads: its inputs, and those its blocks read from outside it
// (a prim::If whose branches reshape a tensor computed before it).
std::vector<const Value*> reads(const Node* n) {
  std::vector<const Value*> out(n->inputs().begin(), n->inputs().end());
  std::vector<const torch::jit::Block*> blocks(n->blocks().begin(), n->blocks().end());
  while (!blocks.empty()) {
    const torch::jit::Block* b = blocks.back();
    blocks.pop_back();
    std::vector<const Node*> inner(b->nodes().begin(), b->nodes().end());
    inner.push_back(b->return_node());
    for (const Node* m : inner) {
      for (const Value* v : m->inputs()) {
        if (!within(v->node(), n)) out.push_back(v);
      }
      blocks.insert(blocks.end(), m->blocks().begin(), m->blocks().end());
    }
  }
  return out;
}

// The NNAPI parts: each node that is not a CPU node joins the earliest part
// its inputs allow (part k runs after the CPU nodes that feed it, which run
// after part k - 1), so a CPU node that only reads a part's result (a list
// append, a size) does not cut the nodes after it into another part. CPU
// nodes keep their order, and no node is moved before a CPU node that writes
// into a tensor. With what each part reads from outside and gives to later
// nodes or the return.
std::vector<Segment> split(Graph& g, const std::map<const Node*, std::string>& cpu,
                           const std::set<const Node*>& constant) {
  // A part's index, or for a CPU node the last part it runs after (-1: none).
  std::unordered_map<const Node*, int> level;
  std::vector<std::pair<Node*, int>> cpu_nodes;
  std::map<int, Segment> parts;
  int cpu_floor = -1, barrier = 0;
  for (Node* n : g.nodes()) {
    if (constant.count(n)) continue;
    const bool on_cpu = cpu.count(n) != 0;
    int l = on_cpu ? cpu_floor : barrier;
    for (const Value* v : reads(n)) {
      auto it = level.find(v->node());
      if (it == level.end()) continue;  // a graph input or a constant
      l = std::max(l, it->second + (!on_cpu && cpu.count(v->node()) ? 1 : 0));
    }
    level[n] = l;
    if (!on_cpu) {
      parts[l].nodes.push_back(n);
      continue;
    }
    cpu_floor = l;
    cpu_nodes.emplace_back(n, l);
    if (writes_tensor(n)) barrier = std::max(barrier, l + 1);
  }
  std::vector<Segment> segments;
  for (auto& [l, part] : parts) {
    for (const auto& [n, c] : cpu_nodes) {
      if (c < l) part.after = n;
    }
    segments.push_back(std::move(part));
  }
  for (Segment& s : segments) {
    const std::set<const Node*> inside(s.nodes.begin(), s.nodes.end());
    std::set<const Value*> read;
    for (Node* n : s.nodes) {
      for (Value* v : n->inputs()) {
        if (inside.count(v->node()) || constant.count(v->node())) continue;
        if (read.insert(v).second) s.inputs.push_back(v);
      }
    }
    for (Node* n : s.nodes) {
      for (Value* v : n->outputs()) {
        const auto& uses = v->uses();
        if (std::any_of(uses.begin(), uses.end(),
                        [&](const torch::jit::Use& u) { return !inside.count(u.user); })) {
          s.outputs.push_back(v);
        }
      }
    }
  }
  return segments;
}

// A copy of a graph, with its values and nodes by the original's.
struct GraphCopy {
  std::shared_ptr<Graph> graph;
  std::unordered_map<const Value*, Value*> values;
  std::unordered_map<const Node*, Node*> nodes;
};

GraphCopy copy_graph(Graph& g) {
  GraphCopy c{g.copy(), {}, {}};
  for (size_t i = 0; i < g.inputs().size(); ++i) c.values[g.inputs()[i]] = c.graph->inputs()[i];
  auto a = g.nodes().begin();
  for (Node* b : c.graph->nodes()) {
    c.nodes[*a] = b;
    for (size_t i = 0; i < b->outputs().size(); ++i) c.values[(*a)->output(i)] = b->output(i);
    ++a;
  }
  return c;
}

// The frozen graph made to return what each of `values` holds, compiled once
// and run per set of inputs; with `last`, the graph up to that node only
// (`values` computed there or before).
class Probe {
 public:
  Probe(Graph& g, const std::vector<const Value*>& values, const Node* last = nullptr) {
    GraphCopy c = copy_graph(g);
    std::vector<Value*> wanted;
    for (const Value* v : values) wanted.push_back(c.values.at(v));
    while (!c.graph->outputs().empty()) c.graph->eraseOutput(0);
    Node* tuple = c.graph->insertNode(c.graph->createTuple(wanted));
    c.graph->registerOutput(tuple->output());
    if (last) {
      std::vector<Node*> after;
      for (Node* n : c.graph->nodes()) {
        if (n != tuple && n->isAfter(c.nodes.at(last))) after.push_back(n);
      }
      for (auto it = after.rbegin(); it != after.rend(); ++it) (*it)->destroy();
    }
    code_ = std::make_unique<torch::jit::Code>(c.graph, "cpu_fallback_probe");
  }

  std::vector<c10::IValue> run(const c10::IValue& self, const std::vector<at::Tensor>& inputs) {
    torch::jit::InterpreterState state(*code_);
    torch::jit::Stack stack{self};
    for (const at::Tensor& t : inputs) stack.emplace_back(t);
    state.run(stack);
    return stack.back().toTupleRef().elements().vec();
  }

 private:
  std::unique_ptr<torch::jit::Code> code_;
};

// What the probe runs saw in a value: its tensor in the first run (kept
// without data), whether the runs at the same input sizes gave the same
// sizes, and which of its dims follow the flexible input sizes.
struct Seen {
  bool tensor = false;
  at::Tensor first;        // sizes, dtype and quantization only
  std::string sizes_seen;  // the runs' sizes when they differ at the same input sizes, else empty
  std::string ranks_seen;  // the runs' sizes when their rank follows the input sizes, else empty
  std::vector<int64_t> dims;  // first's sizes, 0 where they follow the input sizes
};

// A segment input's spec from what the runs gave it, or nullopt with the
// reason it cannot be one in `why`.
std::optional<InputSpec> boundary_spec(const Seen& seen, std::string* why) {
  if (!seen.tensor) {
    *why = "not a tensor when the model runs";
    return std::nullopt;
  }
  const at::Tensor& a = seen.first;
  InputSpec s;
  if (a.is_quantized()) {
    if (a.scalar_type() != at::kQUInt8 || a.qscheme() != at::kPerTensorAffine) {
      *why = "a quantized tensor other than per-tensor quint8";
      return std::nullopt;
    }
    s.dtype = InputDType::QUInt8;
    s.scale = a.q_scale();
    s.zero_point = a.q_zero_point();
    s.has_scale = s.has_zero_point = true;
  } else if (a.scalar_type() == at::kFloat) {
    s.dtype = InputDType::Float32;
  } else if (a.scalar_type() == at::kInt) {
    s.dtype = InputDType::Int32;
  } else {
    *why = std::string("a ") + c10::toString(a.scalar_type()) +
           " tensor (NNAPI inputs are float32, int32 or quint8)";
    return std::nullopt;
  }
  if (a.dim() == 0 || a.dim() > 4) {
    *why = a.dim() ? "a tensor of rank > 4" : "a 0-dim tensor";
    return std::nullopt;
  }
  if (a.numel() == 0) {
    *why = "a zero-sized tensor (" + shape_str(a.sizes().vec()) +
           "): NNAPI has no zero-sized operands, and takes an empty input as an omitted one";
    return std::nullopt;
  }
  if (!seen.sizes_seen.empty()) {
    *why = "whose size depends on the data (runs on random inputs gave " + seen.sizes_seen +
           "), while an NNAPI model's sizes are set when it is first run";
    return std::nullopt;
  }
  if (!seen.ranks_seen.empty()) {
    *why = "whose rank depends on the flexible input sizes (runs at several sizes gave " +
           seen.ranks_seen + "), while an NNAPI model's ranks are fixed";
    return std::nullopt;
  }
  s.dims = seen.dims;
  return s;
}

// How often the model runs at the same input sizes to learn the sizes at
// segment boundaries.
constexpr uint64_t kProbeRuns = 4;
// With flexible input sizes, the model runs kProbeRuns times with each at
// --verify's default (default_verify_size), then once with each at that
// plus each of these steps times flexible_step (batch 1: 2 and 4; 224: 256
// and 320; 8: 9 and 11), so that a size that follows them is seen to.
constexpr int64_t kFlexibleSteps[] = {1, 3};
int64_t flexible_step(int64_t base) { return base >= 32 ? 32 : 1; }

// The runs' sizes, each once in the order seen, joined: "8, 2x8, 4x8".
std::string runs_text(const std::vector<std::vector<int64_t>>& runs) {
  std::string text;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (std::find(runs.begin(), runs.begin() + i, runs[i]) != runs.begin() + i) continue;
    text += (text.empty() ? "" : ", ") + join_dims(runs[i]);
  }
  return text;
}

class Planner {
 public:
  Planner(const torch::jit::Module& module, const ConvertOptions& options, LoweringTrace* trace)
      : graph_(*module.get_method("forward").graph()),
        self_(module._ivalue()),
        options_(options),
        trace_(trace),
        constant_(constant_nodes(graph_)) {}

  Conversion run();

 private:
  // Makes `n` a CPU node; false when it already was.
  bool to_cpu(const Node* n, const std::string& why) {
    if (!cpu_.emplace(n, why).second) return false;
    spdlog::debug("--cpu-fallback: {} stays TorchScript: {}", describe_node(n), why);
    return true;
  }
  bool apply_type_rules(const std::vector<Segment>& segments);
  void probe_all();
  const Node* failing_node(const std::vector<at::Tensor>& inputs);
  bool apply_probe(const std::vector<Segment>& segments);
  std::optional<Conversion> convert_segment(const Segment& s, size_t index);
  Conversion assemble(const std::vector<Segment>& segments, std::vector<Conversion> parts);

  Graph& graph_;
  c10::IValue self_;
  const ConvertOptions& options_;
  LoweringTrace* trace_;  // the lowering of a whole model, the placements of a split one
  std::set<const Node*> constant_;
  std::map<const Node*, std::string> cpu_;   // the CPU nodes, each with why it stays TorchScript
  std::map<const Value*, InputSpec> specs_;  // segment inputs, from the probe
  std::map<const Value*, Seen> seen_;        // what the probe runs saw
  std::map<std::string, Conversion> converted_;  // parts converted in earlier rounds
};

bool Planner::apply_type_rules(const std::vector<Segment>& segments) {
  bool changed = false;
  for (const Segment& s : segments) {
    const std::set<const Node*> inside(s.nodes.begin(), s.nodes.end());
    for (const Value* v : s.inputs) {
      if (is_tensor(v)) continue;
      for (const torch::jit::Use& u : v->uses()) {
        if (inside.count(u.user)) {
          changed |= to_cpu(u.user, "it reads " + v->type()->repr_str() + " %" + v->debugName() +
                                        ", which is not a tensor NNAPI could take as an input");
        }
      }
    }
    for (const Value* v : s.outputs) {
      if (!is_tensor(v)) {
        changed |= to_cpu(v->node(), "TorchScript reads its " + v->type()->repr_str() +
                                         " result, which an NNAPI model cannot return");
      }
    }
  }
  return changed;
}

// Runs the model kProbeRuns times on seeded random inputs of the --input
// sizes (flexible ones at their defaults), and with flexible sizes once more
// at each of kFlexibleSteps, recording what each value any split could put
// at a part's boundary holds: the graph's inputs and the outputs of its
// non-constant nodes.
void Planner::probe_all() {
  std::vector<const Value*> values(graph_.inputs().begin() + 1, graph_.inputs().end());
  for (const Node* n : graph_.nodes()) {
    if (constant_.count(n)) continue;
    for (const Value* v : n->outputs()) values.push_back(v);
  }
  // The input sizes of each run.
  std::vector<std::vector<std::vector<int64_t>>> run_shapes(kProbeRuns,
                                                            default_sample_shapes(options_.inputs));
  bool flexible = false;
  for (const InputSpec& spec : options_.inputs) {
    flexible |= std::find(spec.dims.begin(), spec.dims.end(), 0) != spec.dims.end();
  }
  if (flexible) {
    for (int64_t step : kFlexibleSteps) {
      std::vector<std::vector<int64_t>> shapes = run_shapes[0];
      for (size_t i = 0; i < shapes.size(); ++i) {
        for (size_t d = 0; d < shapes[i].size(); ++d) {
          if (options_.inputs[i].dims[d] == 0) shapes[i][d] += step * flexible_step(shapes[i][d]);
        }
      }
      run_shapes.push_back(shapes);
    }
  }
  std::vector<std::vector<std::vector<int64_t>>> sizes(values.size());
  size_t run = 0;
  try {
    Probe probe(graph_, values);
    for (; run < run_shapes.size(); ++run) {
      const std::vector<c10::IValue> got =
          probe.run(self_, sample_inputs(options_.inputs, run_shapes[run], options_.nhwc, run));
      for (size_t i = 0; i < values.size(); ++i) {
        Seen& s = seen_[values[i]];  // not a tensor unless the first run says so
        if (!got[i].isTensor()) continue;
        const at::Tensor& t = got[i].toTensor();
        sizes[i].push_back(t.sizes().vec());
        if (run > 0) continue;
        s.tensor = true;
        s.first = t.is_quantized() ? at::_empty_affine_quantized(
                                         t.sizes(), t.options(),
                                         t.qscheme() == at::kPerTensorAffine ? t.q_scale() : 1.0,
                                         t.qscheme() == at::kPerTensorAffine ? t.q_zero_point() : 0)
                                   : at::empty(t.sizes(), t.options());
      }
    }
  } catch (const ConvertError&) {
    throw;
  } catch (const std::exception& e) {
    const std::vector<at::Tensor> inputs =
        sample_inputs(options_.inputs, run_shapes.at(run), options_.nhwc, run);
    const Node* culprit = failing_node(inputs);
    std::string at_sizes;
    for (const auto& dims : run_shapes.at(run)) {
      at_sizes += (at_sizes.empty() ? "" : ", ") + join_dims(dims);
    }
    throw ConvertError(
        1, "model '" + options_.model_path +
               "': --cpu-fallback runs the model on random inputs of the --input sizes" +
               (flexible ? " (flexible ones at several sizes)" : "") +
               " to learn the sizes between its NNAPI and TorchScript parts, and the model "
               "failed on inputs of size " +
               at_sizes + (culprit ? " at " + describe_node(culprit) : std::string()) + ": " +
               script_error_text(e) +
               (flexible && run >= kProbeRuns
                    ? ". A flexible (0) size in --input says the model takes any size there; "
                      "if it does not, give that size fixed"
                    : ""));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const auto& runs = sizes[i];
    Seen& seen = seen_[values[i]];
    if (runs.size() != run_shapes.size()) {  // not a tensor in every run
      seen.tensor = false;
      continue;
    }
    const std::vector<std::vector<int64_t>> same(runs.begin(), runs.begin() + kProbeRuns);
    if (std::any_of(same.begin(), same.end(), [&](const auto& r) { return r != runs[0]; })) {
      seen.sizes_seen = runs_text(same);
      continue;
    }
    if (std::any_of(runs.begin(), runs.end(),
                    [&](const auto& r) { return r.size() != runs[0].size(); })) {
      seen.ranks_seen = runs_text(runs);
      continue;
    }
    seen.dims = runs[0];
    for (const auto& r : runs) {
      for (size_t d = 0; d < r.size(); ++d) {
        if (r[d] != runs[0][d]) seen.dims[d] = 0;
      }
    }
  }
}

// The first top-level node at which the model fails on `inputs`, or nullptr
// (the model gets that far): the graph's prefixes bisected.
const Node* Planner::failing_node(const std::vector<at::Tensor>& inputs) {
  std::vector<const Node*> order;
  for (const Node* n : graph_.nodes()) {
    if (!constant_.count(n)) order.push_back(n);
  }
  auto fails = [&](size_t k) {
    try {
      Probe(graph_, {}, order[k]).run(self_, inputs);
      return false;
    } catch (const std::exception&) {
      return true;
    }
  };
  if (order.empty() || !fails(order.size() - 1)) return nullptr;
  size_t lo = 0, hi = order.size() - 1;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (fails(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return order[lo];
}

bool Planner::apply_probe(const std::vector<Segment>& segments) {
  bool changed = false;
  specs_.clear();
  for (const Segment& s : segments) {
    const std::set<const Node*> inside(s.nodes.begin(), s.nodes.end());
    for (const Value* v : s.inputs) {
      std::string why;
      std::optional<InputSpec> spec = boundary_spec(seen_.at(v), &why);
      if (spec) {
        spec->text = "%" + v->debugName() + " " + format_input_spec(*spec);
        specs_[v] = *spec;
        continue;
      }
      for (const torch::jit::Use& u : v->uses()) {
        if (inside.count(u.user)) {
          changed |= to_cpu(u.user, "it reads %" + v->debugName() + ", " + why);
        }
      }
    }
  }
  return changed;
}

// The segment lowered, or nullopt after giving the node it failed at (or the
// whole segment) to TorchScript.
std::optional<Conversion> Planner::convert_segment(const Segment& s, size_t index) {
  // A part the split left as it was converts as it did.
  std::ostringstream key;
  for (const Node* n : s.nodes) key << n << ' ';
  for (const Value* v : s.inputs) key << '|' << v << ' ' << specs_.at(v).text;
  for (const Value* v : s.outputs) key << '>' << v;
  if (auto it = converted_.find(key.str()); it != converted_.end()) return it->second;
  auto sg = std::make_shared<Graph>();
  std::unordered_map<const Value*, Value*> env;
  std::map<const Node*, const Node*> origin;
  Value* self = sg->addInput("self");
  self->setType(graph_.inputs()[0]->type());
  env[graph_.inputs()[0]] = self;
  ConvertOptions o = options_;
  o.inputs.clear();
  o.return_shapes.clear();
  o.cpu_fallback = false;
  for (Value* v : s.inputs) {
    Value* x = sg->addInput();
    x->setType(v->type());
    env[v] = x;
    o.inputs.push_back(specs_.at(v));
  }
  const std::set<const Node*> inside(s.nodes.begin(), s.nodes.end());
  for (Node* n : graph_.nodes()) {
    if (!constant_.count(n) && !inside.count(n)) continue;
    Node* c = sg->createClone(n, [&](Value* v) { return env.at(v); });
    sg->insertNode(c);
    origin[c] = n;
    for (size_t i = 0; i < n->outputs().size(); ++i) env[n->output(i)] = c->output(i);
    if (n == s.nodes.back()) break;
  }
  std::vector<Value*> outs;
  for (Value* v : s.outputs) outs.push_back(env.at(v));
  sg->registerOutput(outs.size() == 1 ? outs[0] : sg->insertNode(sg->createTuple(outs))->output());

  const Node* failed = nullptr;  // the node lowering failed at, or that gave a constant output
  try {
    Conversion c = lower_graph(*sg, self_, o, nullptr, &failed);
    bool ok = true;
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      const Seen& seen = seen_.at(s.outputs[i]);
      if (!seen.tensor) continue;
      const at::ScalarType model = seen.first.scalar_type();
      // The dtype NNAPI gives the segment output (torch_dtype, lower/emit.h).
      const at::ScalarType nnapi =
          torch_dtype(static_cast<nnapi::OperandType>(c.templates.at(i).type));
      if (nnapi != model) {
        ok = false;
        to_cpu(s.outputs[i]->node(),
               std::string("NNAPI computes its result as ") +
                   (nnapi != at::ScalarType::Undefined ? c10::toString(nnapi) : "another type") +
                   ", the model as " + c10::toString(model));
      }
    }
    if (ok) {
      converted_.emplace(key.str(), c);
      return c;
    }
  } catch (const ConvertError& e) {
    auto it = origin.find(failed);
    if (it != origin.end() && !constant_.count(it->second)) {
      to_cpu(it->second, e.what());
    } else {
      spdlog::debug("--cpu-fallback: segment {} stays TorchScript whole: {}", index, e.what());
      for (const Node* n : s.nodes) {
        cpu_.emplace(n, std::string("its NNAPI part does not convert: ") + e.what());
      }
    }
  }
  return std::nullopt;
}

Conversion Planner::assemble(const std::vector<Segment>& segments, std::vector<Conversion> parts) {
  GraphCopy copy = copy_graph(graph_);
  std::shared_ptr<Graph> top = copy.graph;
  Node* previous = nullptr;  // the call of the part before
  for (size_t k = 0; k < segments.size(); ++k) {
    const Segment& s = segments[k];
    std::vector<Value*> ins;
    for (const Value* v : s.inputs) ins.push_back(copy.values.at(v));
    Node* call = top->create(c10::Symbol::fromQualString(kSegmentKind), ins, s.outputs.size());
    call->i_(c10::Symbol::attr(kSegmentIndex), static_cast<int64_t>(k));
    Node* anchor = s.after ? copy.nodes.at(s.after) : top->block()->param_node();
    if (previous && (anchor == top->block()->param_node() || previous->isAfter(anchor))) {
      anchor = previous;
    }
    call->insertAfter(anchor);
    previous = call;
    std::set<const Node*> inside;
    for (const Node* n : s.nodes) inside.insert(copy.nodes.at(n));
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      Value* old = copy.values.at(s.outputs[i]);
      call->output(i)->setType(old->type());
      for (const torch::jit::Use& u : std::vector<torch::jit::Use>(old->uses())) {
        if (!inside.count(u.user)) u.user->replaceInput(u.offset, call->output(i));
      }
      copy.values[s.outputs[i]] = call->output(i);  // for the segments after this one
    }
    for (auto it = s.nodes.rbegin(); it != s.nodes.rend(); ++it) copy.nodes.at(*it)->destroy();
  }
  if (!options_.return_shapes.empty()) {
    throw ConvertError(2, "model '" + options_.model_path +
                              "': --return-shape sets the shapes of one NNAPI model's outputs, "
                              "but --cpu-fallback split the model into " +
                              std::to_string(parts.size()) +
                              " NNAPI model(s) and TorchScript; leave out --return-shape");
  }
  Conversion c;
  c.retval_count = graph_.outputs().at(0)->type()->kind() == c10::TypeKind::TupleType
                       ? static_cast<int>(graph_.outputs().at(0)->node()->inputs().size())
                       : -1;
  for (const Conversion& p : parts) {
    c.operand_count += p.operand_count;
    c.operation_count += p.operation_count;
    c.weight_bytes += p.weight_bytes;
    for (const auto& [op, n] : p.operations) c.operations[op] += n;
    c.feature_level = std::max(c.feature_level, p.feature_level);
    c.android_api = std::max(c.android_api, p.android_api);
    c.times.load_ms += p.times.load_ms;
    c.times.lower_ms += p.times.lower_ms;
    c.times.serialize_ms += p.times.serialize_ms;
    c.times.validate_ms += p.times.validate_ms;
  }
  std::vector<const Node*> left;
  for (const Node* n : graph_.nodes()) {
    if (cpu_.count(n)) left.push_back(n);
  }
  c.cpu_kinds = census_of(left);
  if (trace_) {
    for (size_t k = 0; k < segments.size(); ++k) {
      for (const Node* n : segments[k].nodes) {
        trace_->placements.push_back({n, static_cast<int>(k), ""});
      }
    }
    for (const Node* n : left) trace_->placements.push_back({n, -1, cpu_.at(n)});
  }
  c.segments = std::move(parts);
  auto fg = std::make_shared<FallbackGraph>();
  fg->graph = top;
  fg->self = self_;
  c.fallback = fg;
  SizesSeen fed;
  for (const Segment& s : segments) {
    for (const Value* v : s.inputs) {
      const Seen& seen = seen_.at(v);
      if (seen.tensor) fed[copy.values.at(v)] = seen.first.sizes().vec();
    }
  }
  check_parts_fed(c, fed, options_.model_path);
  return c;
}

Conversion Planner::run() {
  for (const InputSpec& spec : options_.inputs) {
    if (spec.dtype == InputDType::Bool) {
      throw ConvertError(2, "input spec '" + spec.text +
                                "': bool inputs are not supported with --cpu-fallback; "
                                "convert without it, or pass the mask as float32");
    }
  }
  for (const Node* n : graph_.nodes()) {
    if (constant_.count(n)) continue;
    if (!handled_kind(n->kind()))
      to_cpu(n, "nnapi-convert has no lowering of this kind");
    else if (!handled_node(n))
      to_cpu(n, "its lowering does not take these arguments (" + unsupported_node_reason(n) + ")");
    else if (!n->blocks().empty())
      to_cpu(n, "it has blocks (control flow)");
  }
  if (cpu_.empty()) {
    // The whole model may convert as one NNAPI model: the usual module.
    const Node* failed = nullptr;
    try {
      return lower_graph(graph_, self_, options_, trace_, &failed);
    } catch (const ConvertError& e) {
      if (e.exit_code() == 2 || !failed || failed == graph_.return_node()) throw;
      to_cpu(failed, e.what());
    }
  }
  probe_all();  // once: a re-split costs a lowering, not a run of the model
  const size_t limit = std::distance(graph_.nodes().begin(), graph_.nodes().end()) + 2;
  for (size_t round = 0; round < limit; ++round) {
    std::vector<Segment> segments = split(graph_, cpu_, constant_);
    spdlog::debug("--cpu-fallback: round {}: {} NNAPI part(s), {} node(s) in TorchScript",
                  round + 1, segments.size(), cpu_.size());
    if (segments.empty()) {
      throw ConvertError(1, "model '" + options_.model_path +
                                "': with --cpu-fallback no part of the model is left to run on "
                                "NNAPI (run with -v to see why each node stays TorchScript)");
    }
    if (apply_type_rules(segments)) continue;
    if (apply_probe(segments)) continue;
    std::vector<Conversion> parts;
    for (size_t k = 0; k < segments.size(); ++k) {
      // A failure re-splits the model, but the other parts' failures are
      // found in the same round.
      std::optional<Conversion> c = convert_segment(segments[k], k);
      if (c) parts.push_back(std::move(*c));
    }
    if (parts.size() == segments.size()) return assemble(segments, std::move(parts));
  }
  throw ConvertError(1, "model '" + options_.model_path +
                            "': --cpu-fallback did not settle on a split of the model");
}

}  // namespace

void check_parts_fed(const Conversion& c, const SizesSeen& seen, const std::string& model_path) {
  const auto refuse = [&](int64_t part, const std::string& what) {
    throw ConvertError(
        1, "model '" + model_path + "': --cpu-fallback: NNAPI part " + std::to_string(part) +
               " of " + std::to_string(c.segments.size()) + ": " + what +
               ". A part whose inputs are not all fed fails when it runs, so no module is "
               "written; please report this with the model. Converting without "
               "--cpu-fallback, or a --submodule that leaves out the nodes around it, may "
               "avoid it");
  };
  const c10::Symbol call = c10::Symbol::fromQualString(kSegmentKind);
  std::vector<int> calls(c.segments.size(), 0);
  for (const Node* n : c.fallback->graph->nodes()) {
    if (n->kind() != call) continue;
    const int64_t k = n->i(c10::Symbol::attr(kSegmentIndex));
    if (k < 0 || k >= static_cast<int64_t>(c.segments.size())) {
      refuse(k, "the calling graph calls a part that was not converted");
    }
    ++calls[static_cast<size_t>(k)];
    const size_t want = c.segments[static_cast<size_t>(k)].inp_mem_fmts.size();
    const auto ins = n->inputs();
    const auto input = [&](size_t i) { return "its model input " + std::to_string(i); };
    for (size_t i = 0; i < want; ++i) {
      if (i >= ins.size()) {
        refuse(k, input(i) + " is not fed: the calling graph passes " + std::to_string(ins.size()) +
                      " value(s) to its " + std::to_string(want) + " input(s)");
      }
      const Value* v = ins[i];
      const std::string from = " (%" + v->debugName() + ", from " + describe_node(v->node()) + ")";
      if (v->type()->kind() != c10::TypeKind::TensorType) {
        refuse(k, input(i) + from + " is fed a " + v->type()->repr_str() + ", not a tensor");
      }
      auto it = seen.find(v);
      if (it == seen.end()) {
        refuse(k, input(i) + from + " is fed a value that no run of the model gave a tensor");
      }
      int64_t numel = 1;
      for (int64_t d : it->second) numel *= d;
      if (numel == 0) {
        refuse(k, input(i) + from + " is fed a zero-sized tensor (" + shape_str(it->second) +
                      "), which NNAPI takes as an omitted input (\"missing value for input " +
                      std::to_string(i) + "\")");
      }
    }
    if (ins.size() > want) {
      refuse(k, "its NNAPI model has " + std::to_string(want) +
                    " input(s), but the calling graph passes " + std::to_string(ins.size()));
    }
  }
  for (size_t k = 0; k < calls.size(); ++k) {
    if (calls[k] != 1) {
      refuse(static_cast<int64_t>(k),
             "the calling graph calls it " + std::to_string(calls[k]) + " time(s), not once");
    }
  }
}

Conversion lower_with_fallback(const torch::jit::Module& module, const ConvertOptions& options,
                               LoweringTrace* trace) {
  return Planner(module, options, trace).run();
}

}  // namespace nnapi_convert

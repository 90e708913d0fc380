// The driver: model inputs -> lowering table -> serialized NNAPI model.
#include "nnapi_convert/converter.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/frontend/source_range.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <initializer_list>
#include <set>
#include <sstream>

#include "core/fallback.h"
#include "core/loader.h"
#include "core/trace.h"
#include "lower/fusion.h"
#include "nnapi_convert/check.h"
#include "serialize/pyrepr.h"
#include "util/timing.h"

namespace nnapi_convert {

Conversion lower_module(const torch::jit::Module& module, const ConvertOptions& options,
                        LoweringTrace* trace = nullptr);

namespace {

// A node lowered to an operation newer than --min-android-api allows.
[[noreturn]] void fail_above_target(const ModelBuilder::OverLimit& over,
                                    const ConvertOptions& options) {
  int api = nnapi::android_api_of_feature_level(over.level);
  fail(std::string("this node needs the NNAPI operation ") + nnapi::op_name(over.op) +
       ", of NNAPI feature level " + std::to_string(over.level) + " (Android API level " +
       std::to_string(api) + "), but the target is API level " +
       std::to_string(options.min_android_api) +
       " and nnapi-convert has no decomposition of it into older operations; give "
       "--min-android-api " +
       std::to_string(api) + " if every device you ship to runs that Android or later");
}

// Whether `file` is PyTorch's own Python code (torch.nn.functional, ...).
bool is_torch_file(const std::string& file) {
  for (const char* dir : {"/site-packages/torch/", "/dist-packages/torch/"}) {
    if (file.find(dir) != std::string::npos) return true;
  }
  return file.compare(0, 6, "torch/") == 0;
}

// The frames a source range names, innermost first: a traced node's range
// is the Python stack when it was traced ("file.py(12): forward" lines, no
// code); a scripted node's is one place in its TorchScript source, whose
// line it gives as the code.
std::vector<NodePlace> frames_of(torch::jit::SourceRange sr) {
  if (auto orig = sr.findSourceRangeThatGenerated()) sr = *orig;
  std::vector<NodePlace> frames;
  if (sr.source()) {
    std::string text(sr.text().str());
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      size_t close = line.find("): ");
      size_t open = close == std::string::npos ? close : line.rfind('(', close);
      if (open == std::string::npos || open == 0) continue;
      std::string number = line.substr(open + 1, close - open - 1);
      if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos) continue;
      frames.push_back({line.substr(0, open) + ":" + number, ""});
    }
  }
  if (frames.empty()) {
    // A range in code without a file (":0") names no place.
    auto loc = sr.file_line_col();
    if (loc && !std::get<0>(*loc).empty()) {
      const auto& source = sr.source();
      std::string code(source->get_line(source->lineno_for_offset(sr.start())).str());
      const char* blank = " \t\r\n";
      size_t b = code.find_first_not_of(blank), e = code.find_last_not_of(blank);
      code = b == std::string::npos ? "" : code.substr(b, e - b + 1);
      frames.push_back({std::get<0>(*loc) + ":" + std::to_string(std::get<1>(*loc)), code});
    }
  }
  return frames;
}

// The innermost place in the user's code that made the node (skipping
// PyTorch's own modules and functionals), else its own place.
NodePlace innermost_user_frame(const Node* node) {
  std::vector<torch::jit::SourceRange> ranges = {node->sourceRange()};
  if (auto cs = node->callstack()) {
    std::vector<torch::jit::InlinedCallStackEntry> calls = (*cs)->vec();  // outermost first
    for (auto it = calls.rbegin(); it != calls.rend(); ++it) ranges.push_back(std::get<1>(*it));
  }
  NodePlace first;
  for (const torch::jit::SourceRange& sr : ranges) {
    for (const NodePlace& frame : frames_of(sr)) {
      if (first.location.empty()) first = frame;
      if (!is_torch_file(frame.location)) return frame;
    }
  }
  return first;
}

// "model.py:12", or "".
std::string node_location(const Node* node) { return innermost_user_frame(node).location; }

// The node as TorchScript prints it, in backquotes.
std::string node_text(const Node* node) {
  std::ostringstream text;
  node->print(text, 0, nullptr, /*print_source_locations=*/false);
  std::string t = text.str();
  // A node with blocks (prim::If, prim::Loop) prints them too: its first line is enough.
  if (!node->blocks().empty()) t = t.substr(0, t.find('\n')) + " ...";
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return "`" + t + "`";
}

}  // namespace

std::string describe_node(const Node* node) {
  std::string location = node_location(node);
  return "node " + std::string(node->kind().toQualString()) +
         (location.empty() ? "" : " at " + location) + " (" + node_text(node) + ")";
}

namespace {

ConvertError node_error(const std::string& path, const Node* ret, const Node* current,
                        const std::string& what) {
  if (current == ret) {
    return ConvertError(1, "model '" + path + "': the model's return: " + what, "return");
  }
  return ConvertError(1, "model '" + path + "': " + describe_node(current) + ": " + what,
                      current->kind().toQualString(), node_location(current));
}

Operand operand_for_input(const InputSpec& spec, bool nhwc_all, bool use_int16) {
  Operand o;
  o.shape = spec.dims;
  o.dim_order = spec.nhwc || (nhwc_all && spec.dims.size() == 4) ? DimOrder::ChannelsLast
                                                                 : DimOrder::Contiguous;
  switch (spec.dtype) {
    case InputDType::Float32:
      o.type = nnapi::OperandType::TensorFloat32;
      break;
    case InputDType::Int32:
    case InputDType::Bool:  // 0/1: the converted module passes bool inputs as int32
      o.type = nnapi::OperandType::TensorInt32;
      break;
    case InputDType::QUInt8:
      o.type = nnapi::OperandType::TensorQuant8Asymm;
      o.scale = spec.scale;
      o.zero_point = spec.zero_point;
      break;
    case InputDType::Int16:
      if (!use_int16) {
        throw ConvertError(2, "input spec '" + spec.text +
                                  "': int16 isn't supported unless "
                                  "--int16-for-qint16 says int16 carries NNAPI qint16 values");
      }
      o.type = spec.zero_point == 0 && !spec.has_zero_point
                   ? nnapi::OperandType::TensorQuant16Symm
                   : nnapi::OperandType::TensorQuant16Asymm;
      o.scale = spec.scale;
      o.zero_point = spec.zero_point;
      break;
  }
  return o;
}

std::set<c10::Symbol> symbols(std::initializer_list<const char*> names) {
  std::set<c10::Symbol> out;
  for (const char* name : names) out.insert(c10::Symbol::fromQualString(name));
  return out;
}

// Scalar and shape arithmetic that traced models carry (x.size(0) // 2, ...).
// With fixed input sizes every input is a constant, so it runs once here.
const std::set<c10::Symbol>& foldable_kinds() {
  static const std::set<c10::Symbol> kinds = symbols({
      "prim::NumToTensor",  "aten::Int",      "aten::Float",      "aten::ScalarImplicit",
      "aten::floor_divide", "aten::floordiv", "aten::div",        "aten::mul",
      "aten::add",          "aten::sub",      "aten::remainder",  "aten::neg",
      "aten::__getitem__",  "aten::len",      "prim::ListUnpack", "prim::TupleUnpack",
      "prim::TupleIndex",   "aten::size",     "aten::floor",      "aten::ceil",
  });
  return kinds;
}

// Tensor operations that run during conversion when their inputs are
// constant: masks and index tables a model builds from its (fixed) sizes,
// e.g. Swin's shifted-window attention mask (new_zeros, slice assignments,
// masked_fill). The new_* and *_like factories read only the dtype of their
// first input (and the *_like ones its shape), so that may be computed.
const std::set<c10::Symbol>& tensor_foldable_kinds() {
  static const std::set<c10::Symbol> kinds = symbols({
      "aten::zeros",        "aten::ones",     "aten::full",       "aten::new_zeros",
      "aten::new_ones",     "aten::new_full", "aten::zeros_like", "aten::ones_like",
      "aten::full_like",    "aten::arange",   "aten::slice",      "aten::select",
      "aten::view",         "aten::reshape",  "aten::permute",    "aten::transpose",
      "aten::unsqueeze",    "aten::squeeze",  "aten::flatten",    "aten::contiguous",
      "aten::index",        "aten::eq",       "aten::ne",         "aten::lt",
      "aten::le",           "aten::gt",       "aten::ge",         "aten::masked_fill",
      "aten::where",        "aten::fill_",    "aten::zero_",      "aten::copy_",
      "aten::masked_fill_", "aten::pow",      "aten::rsub",       "aten::clone",
  });
  return kinds;
}

}  // namespace

bool is_foldable(c10::Symbol kind) {
  return foldable_kinds().count(kind) != 0 || tensor_foldable_kinds().count(kind) != 0;
}

bool handled_kind(c10::Symbol kind) { return lowering_table().find(kind) || is_foldable(kind); }

namespace {

// The in-place operations among the foldable kinds: they write their first input.
bool writes_input(c10::Symbol kind) {
  const std::string name = kind.toUnqualString();
  return !name.empty() && name.back() == '_';
}

// Whether the first input only gives the dtype (new_*) or dtype and shape (*_like).
bool reads_only_dtype(c10::Symbol kind) {
  const std::string name = kind.toUnqualString();
  return name.rfind("new_", 0) == 0 || (name.size() > 5 && name.substr(name.size() - 5) == "_like");
}

// A quantized:: node computes on quantized tensors; a float operand there
// means a float --input spec for a model that takes quantized input.
void check_quantized_inputs(const LoweringContext& cx, const Node* node,
                            const std::vector<int32_t>& input_ids) {
  static const c10::Symbol quantized = c10::Symbol::fromQualString("namespaces::quantized");
  if (node->kind().ns() != quantized) return;
  for (const Value* v : node->inputs()) {
    if (!cx.has_operand(v)) continue;
    auto [id, op] = cx.get_operand(v);
    if (op.type != nnapi::OperandType::TensorFloat32) continue;
    auto k = std::find(input_ids.begin(), input_ids.end(), id);
    fail("this quantized operation gets a float32 tensor" +
         (k == input_ids.end() ? std::string()
                               : " (model input " + std::to_string(k - input_ids.begin()) + ")") +
         ": the model takes quantized input. Give that input's --input spec "
         "dtype=quint8,scale=S,zero_point=Z with the scale and zero point of the model's "
         "quantization (the QuantStub's), e.g. 1x3x224x224,dtype=quint8,scale=0.0078,"
         "zero_point=128");
  }
}

const c10::StorageImpl* storage_of(const c10::IValue& v) {
  return v.isTensor() ? v.toTensor().storage().unsafeGetStorageImpl() : nullptr;
}

// Constant folding: runs nodes on their constant inputs, in graph order, so
// in-place writes into folded tensors (`mask[a:b, c:d] = k` is a slice and a
// fill_ of that view) happen where eager PyTorch does them. A write is folded
// only into storage that folding made (zeros, new_zeros, a computed
// result, ...: not a weight of the model) and that no NNAPI operation has read.
class Folder {
 public:
  // Runs `node` on its constant inputs and records its outputs as constants.
  // Returns false when the node is not foldable or an input is not constant.
  bool try_fold(LoweringContext& cx, const Node* node);
  // `node` is lowered to NNAPI: constant tensors it reads become weights.
  void note_lowered(const LoweringContext& cx, const Node* node);

 private:
  std::set<const c10::StorageImpl*> made_, read_;
};

// A stand-in for a computed first input of new_* (its dtype) or *_like (its
// dtype and shape). None when its type or a flexible size doesn't allow one.
std::optional<c10::IValue> dtype_stand_in(const LoweringContext& cx, const Node* node) {
  const Value* v = node->input(0);
  if (!cx.has_operand(v)) return std::nullopt;
  const Operand o = cx.get_operand(v).op;
  const bool like = node->kind().toUnqualString()[0] != 'n';  // not new_*
  if (like && std::find(o.shape.begin(), o.shape.end(), 0) != o.shape.end()) return std::nullopt;
  const Shape shape = like ? o.shape : Shape{0};
  switch (o.type) {
    case nnapi::OperandType::TensorFloat32:
      return c10::IValue(at::zeros(shape, at::kFloat));
    case nnapi::OperandType::TensorInt32:
      return c10::IValue(at::zeros(shape, at::kInt));
    default:
      return std::nullopt;
  }
}

bool Folder::try_fold(LoweringContext& cx, const Node* node) {
  if (!is_foldable(node->kind())) return false;
  torch::jit::Stack stack;
  for (const Value* in : node->inputs()) {
    if (cx.has_constant(in)) {
      stack.push_back(cx.constant(in).value);
    } else if (stack.empty() && reads_only_dtype(node->kind())) {
      auto stand_in = dtype_stand_in(cx, node);
      if (!stand_in) return false;
      stack.push_back(*stand_in);
    } else {
      return false;
    }
  }
  const c10::StorageImpl* written = nullptr;
  if (writes_input(node->kind())) {
    written = storage_of(stack.at(0));
    check(made_.count(written) != 0,
          "this in-place operation writes into a constant of the model (a weight or a tensor "
          "that shares its storage); nnapi-convert folds in-place writes only into tensors the "
          "model builds itself from constants (zeros, new_zeros, ...). Write into a copy "
          "(.clone()) instead");
    check(read_.count(written) == 0,
          "this in-place operation writes into a tensor that an NNAPI operation has already "
          "read as a constant; build the tensor completely before the model uses it");
  }
  std::vector<const c10::StorageImpl*> inputs;
  for (const c10::IValue& v : stack) inputs.push_back(storage_of(v));
  torch::jit::Operation op = node->getOperation();
  op(stack);
  check(stack.size() == node->outputs().size(), "constant folding gave the wrong output count");
  for (size_t i = 0; i < stack.size(); ++i) {
    const c10::StorageImpl* s = storage_of(stack[i]);
    if (s && std::find(inputs.begin(), inputs.end(), s) == inputs.end()) made_.insert(s);
    cx.add_constant(node->output(i), node->output(i)->type(), stack[i]);
  }
  return true;
}

void Folder::note_lowered(const LoweringContext& cx, const Node* node) {
  for (const Value* in : node->inputs()) {
    if (!cx.has_constant(in)) continue;
    const c10::IValue& v = cx.constant(in).value;
    if (v.isTensor()) read_.insert(storage_of(v));
    if (v.isList()) {
      for (const c10::IValue& item : v.toListRef()) read_.insert(storage_of(item));
    }
  }
}

}  // namespace

std::vector<NodeKindCount> census_of(const std::vector<const Node*>& nodes) {
  std::vector<NodeKindCount> kinds;
  std::map<c10::Symbol, size_t> index;
  for (const Node* node : nodes) {
    auto [it, fresh] = index.emplace(node->kind(), kinds.size());
    if (fresh) {
      NodeKindCount k;
      k.kind = node->kind().toQualString();
      k.supported = handled_kind(node->kind());
      k.first_node = node_text(node);
      kinds.push_back(std::move(k));
    }
    NodeKindCount& k = kinds[it->second];
    ++k.count;
    std::string location = node_location(node);
    if (!location.empty() &&
        std::find(k.locations.begin(), k.locations.end(), location) == k.locations.end()) {
      k.locations.push_back(location);
    }
  }
  return kinds;
}

namespace {

// Every node kind of the graph, in order of first use, with whether the
// lowering table (or constant folding) handles it.
std::vector<NodeKindCount> census(const torch::jit::Graph& graph) {
  const auto range = graph.nodes();
  return census_of(std::vector<const Node*>(range.begin(), range.end()));
}

void check_supported(const torch::jit::Graph& graph, const std::string& path) {
  std::vector<NodeKindCount> missing;
  int64_t nodes = 0;
  for (NodeKindCount& k : census(graph)) {
    if (k.supported) continue;
    nodes += k.count;
    missing.push_back(std::move(k));
  }
  if (missing.empty()) return;
  std::ostringstream os;
  os << "model '" << path << "' uses " << nodes << " node(s) of " << missing.size()
     << " kind(s) that nnapi-convert cannot lower to NNAPI:";
  constexpr size_t kShown = 3;
  for (const NodeKindCount& k : missing) {
    os << "\n  - " << k.kind;
    if (!k.locations.empty()) os << " at ";
    for (size_t i = 0; i < k.locations.size() && i < kShown; ++i) {
      os << (i ? ", " : "") << k.locations[i];
    }
    if (k.locations.size() > kShown) os << " and " << k.locations.size() - kShown << " more places";
    os << (k.count > 1 ? " (" + std::to_string(k.count) + " nodes; the first: " : " (")
       << k.first_node << ")";
  }
  os << "\nRewrite these parts of the model with supported operators (nnapi-convert list-ops "
        "lists them), or run them outside the NNAPI model.";
  ConvertError e(1, os.str());
  e.set_unsupported(std::move(missing));
  throw e;
}

// The trace's values: per operand, the last node output in graph order that
// names it.
void record_values(const LoweringContext& cx, const torch::jit::Graph& graph,
                   LoweringTrace* trace) {
  std::map<int32_t, TracedValue> by_operand;
  for (const Node* node : graph.nodes()) {
    for (const Value* v : node->outputs()) {
      if (!cx.has_operand(v)) continue;
      auto [id, op] = cx.get_operand(v);
      bool nhwc = op.dim_order == DimOrder::ChannelsLast && op.shape.size() == 4;
      by_operand[id] = TracedValue{v, id, nhwc};
    }
  }
  trace->values.clear();
  for (const auto& entry : by_operand) trace->values.push_back(entry.second);
}

}  // namespace

std::vector<SupportedKind> supported_node_kinds() {
  std::vector<SupportedKind> out;
  for (const LoweringTable::Entry& e : lowering_table().entries()) {
    out.push_back({e.kind, e.family, e.note});
  }
  std::vector<SupportedKind> folded;
  for (c10::Symbol kind : foldable_kinds()) {
    if (lowering_table().find(kind)) continue;
    folded.push_back({kind.toQualString(), "folded",
                      "computed during conversion when its inputs are constant (shape "
                      "arithmetic); on flexible sizes only where the shape-compute script can"});
  }
  for (c10::Symbol kind : tensor_foldable_kinds()) {
    if (lowering_table().find(kind) || foldable_kinds().count(kind)) continue;
    folded.push_back({kind.toQualString(), "folded",
                      "computed during conversion when its inputs are constant (masks and "
                      "index tables built from fixed sizes; in-place writes only into such "
                      "tensors)"});
  }
  std::sort(folded.begin(), folded.end(),
            [](const SupportedKind& a, const SupportedKind& b) { return a.kind < b.kind; });
  out.insert(out.end(), folded.begin(), folded.end());
  return out;
}

Conversion convert(const ConvertOptions& options) {
  PhaseTimes times;
  torch::jit::Module module =
      load_frozen_model(options.model_path, &times.load_ms, &times.freeze_ms);
  Conversion result = lower_module(module, options);
  result.times.load_ms = times.load_ms;
  result.times.freeze_ms = times.freeze_ms;
  return result;
}

CheckReport check_model(const ConvertOptions& options) {
  CheckReport r;
  r.model = options.model_path;
  torch::jit::Module module =
      load_frozen_model(options.model_path, &r.times.load_ms, &r.times.freeze_ms);
  std::shared_ptr<torch::jit::Graph> graph = module.get_method("forward").graph();
  r.kinds = census(*graph);
  for (const NodeKindCount& k : r.kinds) r.node_count += k.count;
  try {
    Conversion c = lower_module(module, options);
    r.converts = true;
    r.operand_count = c.operand_count;
    r.operation_count = c.operation_count;
    r.feature_level = c.feature_level;
    r.android_api = c.android_api;
    r.operations = c.operations;
    r.nnapi_models = static_cast<int64_t>(c.segments.size());
    r.torchscript_nodes = c.cpu_kinds;
    r.times.lower_ms = c.times.lower_ms;
  } catch (const ConvertError& e) {
    if (e.exit_code() == 2) throw;
    r.error = e.what();
    r.error_node = e.node();
    r.error_location = e.location();
  }
  return r;
}

NodePlace node_place(const Node* node) {
  NodePlace place = innermost_user_frame(node);
  if (place.code.empty()) {
    std::string text = node_text(node);  // in backquotes
    place.code = text.substr(1, text.size() - 2);
  }
  return place;
}

torch::jit::Module trace_conversion(const ConvertOptions& options, LoweringTrace* trace,
                                    Conversion* conversion) {
  double load_ms = 0, freeze_ms = 0;
  torch::jit::Module module = load_frozen_model(options.model_path, &load_ms, &freeze_ms);
  *conversion = lower_module(module, options, trace);
  return module;
}

Conversion lower_module(const torch::jit::Module& module, const ConvertOptions& options,
                        LoweringTrace* trace) {
  if (options.cpu_fallback && !trace) return lower_with_fallback(module, options);
  return lower_graph(*module.get_method("forward").graph(), module._ivalue(), options, trace);
}

Conversion lower_graph(torch::jit::Graph& graph_ref, const c10::IValue& self,
                       const ConvertOptions& options, LoweringTrace* trace, const Node** failed) {
  Conversion result;
  auto t0 = std::chrono::steady_clock::now();
  torch::jit::Graph* graph = &graph_ref;
  const std::string& path = options.model_path;

  auto graph_inputs = graph->inputs();
  size_t n_args = graph_inputs.size() - 1;
  if (options.inputs.size() != n_args) {
    throw ConvertError(2, "model '" + path + "' takes " + std::to_string(n_args) +
                              " input(s), but " + std::to_string(options.inputs.size()) +
                              " --input spec(s) were given; give one --input per model input, "
                              "in order");
  }
  for (size_t i = 0; i < n_args; ++i) {
    const Value* v = graph_inputs[i + 1];
    if (v->type()->kind() != c10::TypeKind::TensorType) {
      throw ConvertError(1, "model '" + path + "': input " + std::to_string(i) + " (" +
                                v->debugName() + ") is a " + v->type()->repr_str() +
                                ", not a Tensor; NNAPI models take tensors only");
    }
    auto tt = v->type()->cast<c10::TensorType>();
    if (auto rank = tt->dim()) {
      if (*rank != options.inputs[i].dims.size()) {
        throw ConvertError(2, "input spec '" + options.inputs[i].text + "' has " +
                                  std::to_string(options.inputs[i].dims.size()) +
                                  " dims, but model input " + std::to_string(i) + " has " +
                                  std::to_string(*rank));
      }
    }
  }
  check_supported(*graph, path);

  LoweringContext cx;
  FusionPlan plan(*graph, lowering_table(), options.fuse_activations);
  cx.set_fusion_plan(&plan);
  cx.set_min_android_api(options.min_android_api);
  ModelBuilder& m = cx.model();
  m.add_bool_scalar(false);
  m.add_bool_scalar(true);
  cx.add_constant(graph_inputs[0], graph_inputs[0]->type(), self);
  std::vector<int32_t> input_ids;
  for (size_t i = 0; i < n_args; ++i) {
    Operand o = operand_for_input(options.inputs[i], options.nhwc, options.use_int16_for_qint16);
    int32_t id = cx.add_input(static_cast<int>(i), graph_inputs[i + 1], o);
    input_ids.push_back(id);
    result.inp_mem_fmts.push_back(static_cast<int64_t>(cx.operand(id).dim_order));
  }
  const Node* current = nullptr;
  const Node* offending = nullptr;  // the node of a returned value that is no operand
  Folder folder;
  try {
    for (const Node* node : graph->nodes()) {
      if (trace) trace->operations.resize(m.operation_count(), current);
      current = node;
      if (folder.try_fold(cx, node) || lower_symbolic_arithmetic(cx, node)) continue;
      if (plan.claimed(node)) continue;  // lowered with its group, at the group's last node
      if (plan.folded_activation(node)) {
        cx.alias(node->output(), node->input(0));  // computed by the producer's fused activation
        continue;
      }
      const NodeGroup* group = plan.group_ending_at(node);
      const LowerFn* fn = group ? nullptr : lowering_table().find(node->kind());
      if (!group && !fn && tensor_foldable_kinds().count(node->kind())) {
        fail(
            "nnapi-convert computes this operation only during conversion, when all its "
            "inputs are constant (a mask built from fixed sizes), but here an input is a "
            "tensor the model computes, or a size of a flexible input dimension");
      }
      if (!group && !fn) {
        fail(
            "this node computes with values known only when the model runs (sizes of "
            "flexible dims?); nnapi-convert folds it only when all its inputs are constant");
      }
      check_quantized_inputs(cx, node, input_ids);
      folder.note_lowered(cx, node);
      if (group) {
        group->lower(cx, *group);
      } else {
        (*fn)(cx, node);
      }
      if (const auto& over = m.first_over_limit()) fail_above_target(*over, options);
    }
    if (trace) {
      trace->operations.resize(m.operation_count(), current);
      record_values(cx, *graph, trace);
    }
    current = graph->return_node();
    const Value* ret = graph->outputs().at(0);
    std::vector<const Value*> returns;
    if (ret->type()->kind() == c10::TypeKind::TensorType) {
      returns = {ret};
      result.retval_count = -1;
    } else if (ret->type()->kind() == c10::TypeKind::TupleType) {
      returns = cx.sequence(ret);
      result.retval_count = static_cast<int>(returns.size());
    } else {
      fail("the model returns a " + ret->type()->repr_str() +
           "; only a tensor or a tuple of tensors can be returned");
    }
    if (!options.return_shapes.empty() && options.return_shapes.size() != returns.size()) {
      throw ConvertError(2, "--return-shape was given " +
                                std::to_string(options.return_shapes.size()) +
                                " time(s), but the model returns " +
                                std::to_string(returns.size()) + " tensor(s)");
    }
    // NNAPI rejects a model (BAD_DATA, when it is compiled on the device)
    // whose output is one of its inputs, or that lists one operand twice as
    // an output; PyTorch's converter writes such models without a word.
    std::vector<int32_t> output_ids;
    for (size_t i = 0; i < returns.size(); ++i) {
      if (!cx.has_operand(returns[i])) offending = returns[i]->node();  // a constant here
      int32_t id = cx.get_operand(returns[i]).id;
      for (size_t k = 0; k < input_ids.size(); ++k) {
        if (input_ids[k] == id) {
          offending = returns[i]->node();
          fail("output " + std::to_string(i) + " is input " + std::to_string(k) +
               " unchanged, and NNAPI cannot return a model input as an output (the device "
               "rejects such a model); return it outside the converted module, or compute "
               "the output from it");
        }
      }
      for (size_t k = 0; k < output_ids.size(); ++k) {
        if (output_ids[k] == id) {
          offending = returns[i]->node();
          fail("outputs " + std::to_string(k) + " and " + std::to_string(i) +
               " are the same tensor, and NNAPI cannot list one operand as two outputs (the "
               "device rejects such a model); return it once and copy it outside the "
               "converted module");
        }
      }
      output_ids.push_back(id);
    }
    for (size_t i = 0; i < returns.size(); ++i) {
      auto [id, op] = cx.get_operand(returns[i]);
      m.add_output(id);
      result.out_mem_fmts.push_back(static_cast<int64_t>(op.dim_order));
      OutputTemplate t{id, static_cast<int32_t>(op.type), op.shape, op.scale, op.zero_point};
      if (!options.return_shapes.empty()) {
        if (options.return_shapes[i].size() != op.shape.size()) {
          throw ConvertError(2, "--return-shape for output " + std::to_string(i) + " has " +
                                    std::to_string(options.return_shapes[i].size()) +
                                    " dims, but the output has " + std::to_string(op.shape.size()));
        }
        t.shape = options.return_shapes[i];
      }
      result.templates.push_back(std::move(t));
    }
  } catch (const LoweringError& e) {
    if (failed) *failed = offending ? offending : current;
    throw node_error(path, graph->return_node(), current, e.what());
  } catch (const c10::Error& e) {
    if (failed) *failed = offending ? offending : current;
    throw node_error(path, graph->return_node(), current, e.what_without_backtrace());
  }
  result.times.lower_ms = ms_since(t0);

  t0 = std::chrono::steady_clock::now();
  SerializedModel ser;
  try {
    ser = m.serialize();
  } catch (const std::exception& e) {
    throw ConvertError(1, "model '" + path + "' could not be serialized: " + e.what());
  }
  result.ser_model = std::move(ser.words);
  result.shape_lines = cx.shape_lines();
  result.shape_lines.insert(result.shape_lines.end(), ser.patch_lines.begin(),
                            ser.patch_lines.end());
  result.operand_count = static_cast<int64_t>(m.operand_count());
  result.operation_count = static_cast<int64_t>(m.operation_count());
  result.operations = m.operation_histogram();
  result.feature_level = m.feature_level();
  result.android_api =
      std::max(nnapi::kMinAndroidApi, nnapi::android_api_of_feature_level(m.feature_level()));
  result.weights = m.take_weights();
  for (const at::Tensor& w : result.weights) result.weight_bytes += w.numel() * w.element_size();
  result.times.serialize_ms = ms_since(t0);
  return result;
}

}  // namespace nnapi_convert

// Where graph nodes come from in the user's code, and the messages naming them.
#include "core/diagnostics.h"

#include <c10/util/Exception.h>
#include <torch/csrc/jit/frontend/source_range.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "core/folding.h"
#include "core/trace.h"
#include "lower/refusal.h"

namespace nnapi_convert {

// A node lowered to an operation newer than --min-android-api allows.
void fail_above_target(const ModelBuilder::OverLimit& over, const ConvertOptions& options) {
  int api = nnapi::android_api_of_feature_level(over.level);
  // "RESHAPE", "RESHAPE of TENSOR_INT32", or the op and what else needs the level.
  const std::string op = nnapi::op_name(over.op);
  const std::string what = over.why.empty() || over.why == op ? op
                           : over.why.rfind(op + " ", 0) == 0 ? over.why
                                                              : op + " (" + over.why + ")";
  fail(std::string("this node needs the NNAPI operation ") + what + ", of NNAPI feature level " +
       std::to_string(over.level) + " (Android API level " + std::to_string(api) +
       "), but the target is API level " + std::to_string(options.min_android_api) +
       " and nnapi-convert has no decomposition of it into older operations; give "
       "--min-android-api " +
       std::to_string(api) + " if every device you ship to runs that Android or later");
}

namespace {

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

}  // namespace

// "model.py:12", or "".
std::string node_location(const Node* node) { return innermost_user_frame(node).location; }

std::string place_or_empty(const Node* node, bool* readable) {
  try {
    return node_location(node);
  } catch (const std::exception&) {
    // Debug records LibTorch cannot read (a crafted or damaged file: it
    // asserts on their form) name no place; the model converts all the same.
    *readable = false;
    return "";
  }
}

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

std::string describe_node(const Node* node) {
  std::string location = node_location(node);
  return "node " + std::string(node->kind().toQualString()) +
         (location.empty() ? "" : " at " + location) + " (" + node_text(node) + ")";
}

std::vector<NodeOrigin> operation_origins(const std::vector<const Node*>& op_nodes) {
  std::vector<NodeOrigin> origins;
  origins.reserve(op_nodes.size());
  const Node* last = nullptr;
  bool readable = true;  // the model's debug records, which LibTorch reads on the first place
  for (const Node* node : op_nodes) {
    if (node && node == last) {  // a node's operations are consecutive: its place read once
      origins.push_back(origins.back());
      continue;
    }
    last = node;
    if (!node) {
      origins.emplace_back();
      continue;
    }
    NodeOrigin o{node->kind().toQualString(), ""};
    if (readable) o.location = place_or_empty(node, &readable);
    origins.push_back(std::move(o));
  }
  return origins;
}

ConvertError node_error(const std::string& path, const Node* ret, const Node* current,
                        const std::string& what) {
  if (current == ret) {
    return ConvertError(1, "model '" + path + "': the model's return: " + what, "return");
  }
  return ConvertError(1, "model '" + path + "': " + describe_node(current) + ": " + what,
                      current->kind().toQualString(), node_location(current));
}

bool is_dynamic_quantization_kind(const std::string& kind) {
  const std::string suffix = "_dynamic";
  if (kind.rfind("quantized::", 0) == 0 && kind.size() > suffix.size() &&
      kind.compare(kind.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return true;
  }
  return kind == "aten::quantized_lstm" || kind == "aten::quantized_gru";
}

// A quantized:: node computes on quantized tensors; a float operand there
// means a float --input spec for a model that takes quantized input. The
// dynamic ones (quantized::linear_dynamic, ...) take float tensors.
void check_quantized_inputs(const LoweringContext& cx, const Node* node,
                            const std::vector<int32_t>& input_ids) {
  static const c10::Symbol quantized = c10::Symbol::fromQualString("namespaces::quantized");
  if (node->kind().ns() != quantized) return;
  if (is_dynamic_quantization_kind(node->kind().toQualString())) return;
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

std::vector<NodeKindCount> census_of(const std::vector<const Node*>& nodes) {
  std::vector<NodeKindCount> kinds;
  std::map<std::string, size_t> index;
  for (const Node* node : nodes) {
    // A kind the table lowers, but not with this node's arguments, is a kind
    // of its own: "aten::_convolution (3-D)".
    const std::string why = unsupported_node_reason(node);
    std::string kind = node->kind().toQualString();
    if (!why.empty()) kind += " (" + why + ")";
    auto [it, fresh] = index.emplace(kind, kinds.size());
    if (fresh) {
      NodeKindCount k;
      k.kind = kind;
      k.supported = why.empty() && handled_kind(node->kind());
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

// Every node kind of the graph, in order of first use, with whether the
// lowering table (or constant folding) handles it.
std::vector<NodeKindCount> census(const torch::jit::Graph& graph) {
  const auto range = graph.nodes();
  return census_of(std::vector<const Node*>(range.begin(), range.end()));
}

void check_supported(const torch::jit::Graph& graph, const std::string& path) {
  if (std::all_of(graph.nodes().begin(), graph.nodes().end(),
                  [](const torch::jit::Node* n) { return handled_node(n); }))
    return;
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
  const auto in_place = std::find_if(missing.begin(), missing.end(), [](const NodeKindCount& k) {
    const std::string kind = k.kind.substr(0, k.kind.find(' '));
    return kind.rfind("aten::", 0) == 0 && kind.back() == '_';
  });
  if (in_place != missing.end()) {
    // The loader makes every other in-place write of a computed tensor
    // functional (core/loader.cpp, functionalize_computed_mutations).
    os << " An in-place node (" << in_place->first_node
       << " above) stays where another value that shares its tensor, one that exists before "
          "the write, is read after it (a view or slice of the tensor, or the tensor it is a "
          "view of): write it out of place (y = y * g instead of y.mul_(g); torch.cat of the "
          "pieces instead of writing into a slice).";
  }
  ConvertError e(1, os.str());
  e.set_unsupported(std::move(missing));
  throw e;
}

NodePlace node_place(const Node* node) {
  NodePlace place = innermost_user_frame(node);
  if (place.code.empty()) {
    std::string text = node_text(node);  // in backquotes
    place.code = text.substr(1, text.size() - 2);
  }
  return place;
}

}  // namespace nnapi_convert

namespace nnapi_convert {

std::string script_error_text(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string m = c10_error ? c10_error->what_without_backtrace() : e.what();
  // The interpreter's report: a header, the TorchScript tracebacks, then the
  // error itself (its first line names its type: "RuntimeError: ...").
  if (m.find("The following operation failed in the TorchScript interpreter") !=
      std::string::npos) {
    size_t start = std::string::npos;
    for (size_t at = 0; at < m.size();) {
      size_t end = m.find('\n', at);
      if (end == std::string::npos) end = m.size();
      const std::string line = m.substr(at, end - at);
      const size_t colon = line.find(": ");
      if (colon != std::string::npos && colon >= 5 && line.find_first_of(" ()<>/") > colon &&
          line.compare(colon - 5, 5, "Error") == 0) {
        start = at;  // the last such line: nested failures print each
      }
      at = end + 1;
    }
    if (start != std::string::npos) m = m.substr(start);
  }
  // One paragraph: lines joined, surrounding space trimmed.
  std::string out;
  std::istringstream lines(m);
  for (std::string line; std::getline(lines, line);) {
    size_t b = line.find_first_not_of(" \t"), e2 = line.find_last_not_of(" \t\r");
    if (b == std::string::npos) continue;
    out += (out.empty() ? "" : " ") + line.substr(b, e2 - b + 1);
  }
  return out;
}

}  // namespace nnapi_convert

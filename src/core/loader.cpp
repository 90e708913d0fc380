#include "core/loader.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/passes/loop_unrolling.h>
#include <torch/csrc/jit/passes/lower_tuples.h>
#include <torch/csrc/jit/passes/peephole_list_idioms.h>
#include <torch/csrc/jit/passes/remove_mutation.h>
#include <torch/csrc/jit/serialization/import.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "core/archive_check.h"
#include "core/folding.h"
#include "nnapi_convert/conversion.h"
#include "util/timing.h"

namespace nnapi_convert {
namespace {

namespace fs = std::filesystem;

void check_file(const std::string& path) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    throw ConvertError(1, "model file '" + path +
                              "' does not exist; give the path of a "
                              "TorchScript model saved with torch.jit.save");
  }
  if (fs::is_directory(st)) {
    throw ConvertError(1, "model file '" + path + "' is a directory, not a TorchScript model file");
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    throw ConvertError(1, "model file '" + path + "' cannot be read: " + std::strerror(errno));
  }
  char magic[2] = {0, 0};
  f.read(magic, 2);
  if (f.gcount() == 0) throw ConvertError(1, "model file '" + path + "' is empty");
  if (f.gcount() < 2 || magic[0] != 'P' || magic[1] != 'K') {
    throw ConvertError(1, "model file '" + path +
                              "' is not a TorchScript archive (a TorchScript "
                              "model is a zip file written by torch.jit.save)");
  }
}

}  // namespace

namespace {

// LibTorch's internal checks read "cond INTERNAL ASSERT FAILED at "file":N,
// please report a bug to PyTorch. details": for a malformed file the file is
// at fault, so say what failed without the bug-report plea.
std::string plain_loader_message(std::string why) {
  const std::string marker = " INTERNAL ASSERT FAILED at ";
  size_t at = why.find(marker);
  if (at == std::string::npos) return why;
  size_t rest = why.find(", ", at + marker.size());
  std::string details = rest == std::string::npos ? "" : why.substr(rest + 2);
  const std::string plea = "please report a bug to PyTorch. ";
  if (details.compare(0, plea.size(), plea) == 0) details.erase(0, plea.size());
  return "LibTorch's check `" + why.substr(0, at) + "` failed" +
         (details.empty() ? "" : ": " + details);
}

// For TorchScript's "Unknown builtin op: ns::name": what to do about it.
std::string unknown_op_hint(const std::string& message) {
  const std::string marker = "Unknown builtin op: ";
  const size_t at = message.find(marker);
  if (at == std::string::npos) return "";
  const size_t begin = at + marker.size();
  const size_t end = message.find_first_of(". \n", message.find("::", begin));
  const std::string op = message.substr(begin, end - begin);
  const std::string ns = op.substr(0, op.find("::"));
  return " The model uses the operator " + op +
         ", which is registered by a library this process has not loaded: give that library "
         "with --ops-library PATH (" +
         (ns == "torchvision" ? std::string("torchvision's ops are in its _C.so, e.g. "
                                            "/usr/lib/python3/dist-packages/torchvision/"
                                            "_C.cpython-*.so")
                              : std::string("the .so that torch.ops.load_library loads in "
                                            "Python")) +
         ").";
}

// PyTorch 1.3 and 1.4 saved a quantized layer's packed weights as a plain
// Tensor attribute (`_packed_params`) and passed it to quantized::conv2d or
// quantized::linear; since 1.5 they are a Conv2dPackedParamsBase (or
// Conv3d..., LinearPackedParamsBase) object, the only type LibTorch 1.13's
// operators take, so compiling such a file's code fails with "Expected a
// value of type '...PackedParamsBase ...' ... but instead found type 'Tensor'".
void refuse_old_quantized(const std::string& file, const std::string& why) {
  if (why.find("PackedParamsBase") == std::string::npos ||
      why.find("but instead found type 'Tensor'") == std::string::npos) {
    return;
  }
  throw ConvertError(
      1, file +
             "was saved by an old PyTorch (1.3 or 1.4, 2019), whose quantized layers keep their "
             "packed weights as a plain Tensor; LibTorch 1.13 cannot read those layers. Load "
             "the model in PyTorch 1.5 or later and save it again with torch.jit.save (or "
             "quantize the float model again), then convert the new file");
}

}  // namespace

torch::jit::Module load_torchscript(const std::string& path, const std::string& what) {
  const std::string file = what.empty() ? "" : what + " '" + path + "' ";
  try {
    return torch::jit::load(path);
  } catch (const std::bad_alloc&) {
    throw ConvertError(1, file +
                              "could not be loaded: out of memory (is the machine's memory, "
                              "or ulimit -v, smaller than the model?)");
  } catch (const c10::Error& e) {
    refuse_old_quantized(file, e.what_without_backtrace());
    throw ConvertError(1, file +
                              "could not be loaded as TorchScript (was it saved by torch.save "
                              "rather than torch.jit.save, or damaged?): " +
                              plain_loader_message(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    refuse_old_quantized(file, e.what());
    throw ConvertError(
        1, file + "could not be loaded as TorchScript: " + e.what() + unknown_op_hint(e.what()));
  }
}

namespace {

// Replaces in-place `node` (aten::relu_, a mutable schema) writing `target`
// by its functional kind (aten::relu) with the same inputs, inserted before
// it: every later use of `target`, and every use of the node's result, reads
// the functional result instead. Returns false (the graph unchanged) when the
// kind has no functional variant or when `lowered_only` and nothing lowers it.
bool make_functional(torch::jit::Graph& graph, torch::jit::Node* node, torch::jit::Value* target,
                     bool lowered_only) {
  const std::string kind = node->kind().toQualString();
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (!node->kind().is_aten() || node->outputs().size() != 1 || node->input(0) != target ||
      kind.back() != '_' || !schema || !schema->is_mutable()) {
    return false;
  }
  const c10::Symbol functional_kind = c10::Symbol::fromQualString(kind.substr(0, kind.size() - 1));
  if (lowered_only && !handled_kind(functional_kind)) return false;
  torch::jit::Node* functional = graph.create(functional_kind, node->inputs(), 1);
  functional->insertBefore(node);
  if (!functional->maybeSchema()) {
    functional->destroy();
    return false;
  }
  functional->output()->setType(node->output()->type());
  functional->copyMetadata(node);
  node->output()->replaceAllUsesWith(functional->output());
  target->replaceAllUsesAfterNodeWith(functional, functional->output());
  node->destroy();
  return true;
}

// An in-place operation on a model input that is that input's first use
// (`x.relu_()` opening forward) made functional: RemoveTensorMutation leaves
// mutations of graph inputs alone, since the caller could see them, but the
// converted module never writes into its inputs.
void functionalize_input_mutations(torch::jit::Graph& graph) {
  for (torch::jit::Value* input : graph.inputs()) {
    if (!input->type()->cast<c10::TensorType>() || input->uses().empty()) continue;
    torch::jit::Node* first = nullptr;
    for (const torch::jit::Use& use : input->uses()) {
      if (use.user->owningBlock() != graph.block()) {
        first = nullptr;
        break;
      }
      if (!first || use.user->isBefore(first)) first = use.user;
    }
    if (first) make_functional(graph, first, input, false);
  }
}

// Whether `v` may share memory with a value that exists before `node` and is
// read after it (a view of v, the tensor v is a view of, a list holding
// either), or with a model input or a constant: an in-place write of v by
// `node` is then seen through that value, and making it functional would
// change what that value reads.
bool aliased_around(const torch::jit::AliasDb& db, torch::jit::Graph& graph, torch::jit::Value* v,
                    torch::jit::Node* node) {
  auto read_after = [&](torch::jit::Value* w) {
    for (const torch::jit::Use& use : w->uses()) {
      if (use.user->kind() == c10::prim::Return || use.user->isAfter(node)) return true;
    }
    return false;
  };
  auto shares = [&](torch::jit::Value* w) { return w != v && db.mayContainAlias(w, v); };
  for (torch::jit::Value* w : graph.inputs()) {
    if (shares(w)) return true;
  }
  std::function<bool(torch::jit::Block*)> scan = [&](torch::jit::Block* block) {
    for (torch::jit::Node* n : block->nodes()) {
      for (torch::jit::Block* b : n->blocks()) {
        if (scan(b)) return true;
      }
      if (!n->isBefore(node)) continue;
      const bool weight = n->kind() == c10::prim::Constant || n->kind() == c10::prim::GetAttr;
      for (torch::jit::Value* w : n->outputs()) {
        if (shares(w) && (weight || read_after(w))) return true;
      }
    }
    return false;
  };
  return scan(graph.block());
}

// In-place operations RemoveTensorMutation leaves on computed tensors, made
// functional where no other live value sees the write. The pass leaves a
// write of v when v is read between its creation and the write
// (`y.mul_(y.sigmoid())`, the creation and the write cannot be made one
// step), and when v is a view (`out[:, :n].mul_(g)`, GhostNet's gate on a
// slice of a cat). Both are functional in effect when nothing that shares
// v's memory and exists before the write is read after it; the others (a
// view or the base of v read after the write) stay, and the census refuses
// them naming the node. Only kinds whose functional form is lowered.
void functionalize_computed_mutations(const std::shared_ptr<torch::jit::Graph>& graph) {
  for (bool changed = true; changed;) {
    changed = false;
    const torch::jit::AliasDb db(graph);
    for (torch::jit::Node* node : graph->nodes()) {
      if (node->inputs().empty()) continue;
      const std::string kind = node->kind().toQualString();
      torch::jit::Value* v = node->input(0);
      const c10::Symbol made_by = v->node()->kind();
      if (kind.back() != '_' || made_by == c10::prim::Param || made_by == c10::prim::Constant ||
          made_by == c10::prim::GetAttr || v->node()->owningBlock() != node->owningBlock() ||
          aliased_around(db, *graph, v, node)) {
        continue;
      }
      if (make_functional(*graph, node, v, true)) {
        changed = true;
        break;  // the alias database is stale
      }
    }
  }
}

}  // namespace

namespace {

using torch::jit::Module;

std::vector<std::string> split_path(const std::string& s) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    parts.push_back(s.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::vector<std::string> method_names(const Module& m) {
  std::vector<std::string> names;
  for (const torch::jit::Method& method : m.get_methods()) names.push_back(method.name());
  return names;
}

// A default value the entry's source can write (None, an int, a float, a
// bool), or "" for one it cannot.
std::string default_source(const c10::IValue& v) {
  if (v.isNone()) return "None";
  if (v.isBool()) return v.toBool() ? "True" : "False";
  if (v.isInt()) return std::to_string(v.toInt());
  if (v.isDouble()) {
    std::ostringstream os;
    os.precision(17);
    os << v.toDouble();
    const std::string s = os.str();
    return s.find_first_of(".e") == std::string::npos ? s + ".0" : s;
  }
  return "";
}

// A module whose forward calls `method` of `m` with the same arguments.
Module method_entry(const Module& m, const std::string& method) {
  const c10::FunctionSchema& schema = m.get_method(method).function().getSchema();
  std::string params, passed;
  for (size_t i = 1; i < schema.arguments().size(); ++i) {
    const c10::Argument& a = schema.arguments()[i];
    params += ", " + a.name() + ": " + a.type()->annotation_str();
    if (a.default_value()) {
      const std::string d = default_source(*a.default_value());
      if (!d.empty()) params += " = " + d;
    }
    passed += (i > 1 ? ", " : "") + a.name();
  }
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  Module entry("__torch__.nnapi_convert.Entry", cu, true);
  entry.register_attribute("training", c10::BoolType::get(), false);
  entry.register_module("entry", m);
  entry.define("def forward(self" + params + "):\n    return self.entry." + method + "(" + passed +
               ")\n");
  return entry;
}

}  // namespace

namespace {

// The submodule options.submodule names (the model itself when none); its
// dotted path in `walked`.
Module chosen_submodule(const Module& model, const ConvertOptions& options, std::string* walked) {
  Module m = model;
  if (options.submodule.empty()) return m;
  for (const std::string& part : split_path(options.submodule)) {
    std::optional<Module> child;
    std::vector<std::string> names;
    for (const auto& c : m.named_children()) {
      names.push_back(c.name);
      if (c.name == part) child = c.value;
    }
    if (!child) {
      throw ConvertError(
          2, "--submodule '" + options.submodule + "': " +
                 (walked->empty() ? std::string("the model") : "its submodule '" + *walked + "'") +
                 " in '" + options.model_path + "' has no submodule '" + part + "'; " +
                 (names.empty() ? std::string("it has no submodules")
                                : "its submodules are " + joined(names)) +
                 " (give a dotted path of submodule names, as named_modules() lists them)");
    }
    m = *child;
    *walked += (walked->empty() ? "" : ".") + part;
  }
  return m;
}

// `m` itself for forward, else a module whose forward calls options.method.
Module chosen_method(const Module& m, const ConvertOptions& options, const std::string& walked) {
  const std::string where =
      walked.empty() ? "model '" + options.model_path + "'"
                     : "submodule '" + walked + "' of model '" + options.model_path + "'";
  const std::string method = options.method.empty() ? "forward" : options.method;
  if (!m.find_method(method)) {
    const std::vector<std::string> names = method_names(m);
    const std::string has =
        names.empty() ? std::string("it has no methods") : "its methods are " + joined(names);
    if (options.method.empty()) {
      throw ConvertError(1, where + " has no forward method; " + has +
                                (names.empty() ? "" : " (convert one with --method NAME)"));
    }
    throw ConvertError(
        2, "--method '" + method + "': " + where + " has no method '" + method + "'; " + has);
  }
  if (method == "forward") return m;
  try {
    return method_entry(m, method);
  } catch (const c10::Error& e) {
    throw ConvertError(1, "--method '" + method + "' of " + where +
                              " cannot be called from a forward: " + e.what_without_backtrace());
  }
}

}  // namespace

Module entry_module(const Module& model, const ConvertOptions& options) {
  std::string walked;
  const Module m = chosen_submodule(model, options, &walked);
  return chosen_method(m, options, walked);
}

namespace {

// The module types whose `training` flag some method of `model` reads
// (a scripted BatchNorm, Dropout, or code of the user's that branches on
// it). A module in training mode of another type computes the same in
// either mode: its code never looks at the flag (a traced module's graph
// holds what tracing recorded, the lowerings refuse training-mode
// batch_norm and dropout nodes). Pickling's hooks are left out: quantized
// modules' __getstate__/__setstate__ save and restore the flag, which no
// computation reads (eager-quantized Conv3d, ConvReLU3d).
std::set<const c10::Type*> types_reading_training(const Module& model) {
  std::set<const c10::Type*> types;
  std::function<void(const torch::jit::Block*)> walk = [&](const torch::jit::Block* b) {
    for (const torch::jit::Node* n : b->nodes()) {
      if (n->kind() == c10::prim::GetAttr && n->s(c10::attr::name) == "training") {
        types.insert(n->input(0)->type().get());
      }
      for (const torch::jit::Block* sub : n->blocks()) walk(sub);
    }
  };
  for (const Module& m : model.modules()) {
    for (const torch::jit::Method& method : m.get_methods()) {
      if (method.name() == "__getstate__" || method.name() == "__setstate__") continue;
      walk(method.graph()->block());
    }
  }
  return types;
}

std::string module_text(const std::string& name, const Module& m) {
  const std::string type = m.type()->name() ? m.type()->name()->name() : "?";
  return (name.empty() ? std::string("the top-level module") : "'" + name + "'") + " (" + type +
         ")";
}

std::string first_few(const std::vector<std::string>& items) {
  constexpr size_t kShown = 4;
  std::vector<std::string> shown(items.begin(), items.begin() + std::min(items.size(), kShown));
  std::string s = joined(shown);
  if (items.size() > kShown) s += " and " + std::to_string(items.size() - kShown) + " more";
  return s;
}

// Training mode: refused only for modules whose code reads the flag, unless
// --eval; every module is put in eval mode for freezing (which needs it).
void settle_training_mode(Module& m, const ConvertOptions& options,
                          std::vector<std::string>* notes) {
  const std::set<const c10::Type*> reading = types_reading_training(m);
  std::vector<std::string> training, matters;
  for (const auto& nm : m.named_modules()) {
    if (!nm.value.hasattr("training") || !nm.value.is_training()) continue;
    training.push_back(module_text(nm.name, nm.value));
    if (reading.count(nm.value.type().get())) matters.push_back(training.back());
  }
  if (training.empty()) {
    if (options.eval) notes->push_back("--eval: every module was in eval mode already");
    return;
  }
  if (!matters.empty() && !options.eval) {
    throw ConvertError(
        1, "model '" + options.model_path +
               "' was saved in training mode: " + std::to_string(matters.size()) +
               " module(s) whose code reads `self.training` are in training mode (" +
               first_few(matters) +
               "), so they would compute as in training (batch statistics, random dropout). "
               "Convert with --eval, which sets eval mode on the whole model before freezing, "
               "or call .eval() on the module before scripting and saving it");
  }
  m.eval();
  if (options.eval) {
    notes->push_back(
        "--eval: " + std::to_string(training.size()) +
        " module(s) in training mode were set to eval mode (" + first_few(training) + ")" +
        (matters.empty() ? std::string("; none of them reads self.training")
                         : "; " + std::to_string(matters.size()) + " of them read self.training (" +
                               first_few(matters) + ")"));
  } else {
    notes->push_back(std::to_string(training.size()) + " module(s) were saved in training mode (" +
                     first_few(training) +
                     "), but no code of theirs reads self.training, so they compute the same in "
                     "eval mode: converted as is");
  }
}

// --- arguments ---------------------------------------------------------------

bool is_optional(const c10::TypePtr& t) {
  return t->kind() == c10::TypeKind::OptionalType || t->kind() == c10::TypeKind::NoneType;
}

c10::TypePtr unwrapped(const c10::TypePtr& t) {
  if (auto o = t->cast<c10::OptionalType>()) return o->getElementType();
  return t;
}

bool is_tensor(const c10::TypePtr& t) { return t->kind() == c10::TypeKind::TensorType; }

// How to give an argument of this type, or "" when it cannot be given.
std::string spec_hint(const c10::TypePtr& type) {
  const c10::TypePtr t = unwrapped(type);
  std::string hint;
  if (is_tensor(t)) {
    hint = "a tensor spec such as 1x3x224x224";
  } else if (t->kind() == c10::TypeKind::IntType) {
    hint = "its value as int=N";
  } else if (t->kind() == c10::TypeKind::FloatType) {
    hint = "its value as float=X";
  } else if (t->kind() == c10::TypeKind::BoolType) {
    hint = "its value as bool=true or bool=false";
  } else if (auto l = t->cast<c10::ListType>(); l && is_tensor(l->getElementType())) {
    hint = "its tensors as list=SPEC+SPEC..., e.g. list=1x3x224x224+1x3x224x224";
  } else if (auto tu = t->cast<c10::TupleType>()) {
    bool tensors = !tu->elements().empty();
    for (const c10::TypePtr& e : tu->elements()) tensors = tensors && is_tensor(e);
    if (tensors) {
      hint = "its " + std::to_string(tu->elements().size()) +
             " tensors as tuple=SPEC+SPEC..., e.g. tuple=1x64+1x64";
    }
  }
  if (is_optional(type)) hint += hint.empty() ? "none" : ", or none";
  return hint;
}

std::string argument_text(size_t i, const c10::Argument& a) {
  return "argument " + std::to_string(i) + " of forward, '" + a.name() + "' (" +
         a.type()->annotation_str() + ")";
}

// Whether `spec` fits an argument of type `type`; else why not.
std::string misfit(const ArgSpec& spec, const c10::TypePtr& type) {
  const c10::TypePtr t = unwrapped(type);
  bool fits = false;
  switch (spec.kind) {
    case ArgKind::Tensor:
      fits = is_tensor(t);
      break;
    case ArgKind::Int:
      fits = t->kind() == c10::TypeKind::IntType;
      break;
    case ArgKind::Float:
      fits = t->kind() == c10::TypeKind::FloatType;
      break;
    case ArgKind::Bool:
      fits = t->kind() == c10::TypeKind::BoolType;
      break;
    case ArgKind::None:
      fits = is_optional(type);
      break;
    case ArgKind::List:
      if (auto l = t->cast<c10::ListType>()) fits = is_tensor(l->getElementType());
      break;
    case ArgKind::Tuple:
      if (auto tu = t->cast<c10::TupleType>()) {
        fits = true;
        for (const c10::TypePtr& e : tu->elements()) fits = fits && is_tensor(e);
        if (fits && tu->elements().size() != spec.tensors.size()) {
          return "it is a tuple of " + std::to_string(tu->elements().size()) +
                 " tensors, but the spec gives " + std::to_string(spec.tensors.size());
        }
      }
      break;
  }
  if (fits) return "";
  const std::string hint = spec_hint(type);
  return std::string("the spec gives ") + arg_kind_text(spec.kind) +
         (hint.empty() ? std::string("; nnapi-convert takes tensors, int, float, bool, None, "
                                     "List[Tensor] and Tuple[Tensor, ...] arguments only")
                       : "; give " + hint);
}

c10::IValue value_of(const ArgSpec& a) {
  switch (a.kind) {
    case ArgKind::Int:
      return a.int_value;
    case ArgKind::Float:
      return a.float_value;
    case ArgKind::Bool:
      return a.bool_value;
    default:
      return c10::IValue();
  }
}

// Folds what a list or tuple built from the graph's inputs makes foldable:
// len(), constant indexing and unpacking, loops over it (unrolled), appends
// to lists built in those loops.
void fold_sequences(std::shared_ptr<torch::jit::Graph>& graph) {
  constexpr int kMaxRounds = 16;
  for (int round = 0; round < kMaxRounds; ++round) {
    bool changed = torch::jit::PeepholeOptimizeListIdioms(graph, /*refine_list_len=*/true);
    torch::jit::LowerSimpleTuples(graph);
    changed = torch::jit::UnrollConstantLoops(graph) || changed;
    changed = torch::jit::RemoveListMutation(graph) || changed;
    changed = torch::jit::ConstantPropagation(graph) || changed;
    torch::jit::EliminateDeadCode(graph);
    if (!changed) return;
  }
}

}  // namespace

std::vector<EntryArgument> specialize_arguments(Module& module, const ConvertOptions& options) {
  torch::jit::Method forward = module.get_method("forward");
  std::shared_ptr<torch::jit::Graph> graph = forward.graph();
  const c10::FunctionSchema& schema = forward.function().getSchema();
  const std::vector<c10::Argument>& args = schema.arguments();
  const size_t n = graph->inputs().size() - 1;  // after `self`
  if (args.size() != n + 1) return {};
  const bool given_args = !options.args.empty();
  const size_t given = given_args ? options.args.size() : options.inputs.size();
  auto count_error = [&](const std::string& why) {
    return ConvertError(2, "model '" + options.model_path + "' takes " + std::to_string(n) +
                               " input(s), but " + std::to_string(given) +
                               " --input spec(s) were given; give one --input per model input, "
                               "in order" +
                               why);
  };
  if (given > n) {
    if (given_args) throw count_error("");
    return {};  // lower_graph's input count check says so
  }
  for (size_t i = 0; i < given; ++i) {
    const ArgSpec* spec = given_args ? &options.args[i] : nullptr;
    ArgSpec tensor;
    if (!spec) {
      tensor.tensors = {options.inputs[i]};
      tensor.text = options.inputs[i].text;
      spec = &tensor;
    }
    const std::string why = misfit(*spec, args[i + 1].type());
    // A tensor spec for an argument nnapi-convert cannot take at all is the
    // model's limit (lower_graph says so), not a usage error.
    if (why.empty() || (!given_args && spec_hint(args[i + 1].type()).empty())) continue;
    throw ConvertError(2, "input spec '" + spec->text + "' is for " +
                              argument_text(i, args[i + 1]) + " of model '" + options.model_path +
                              "', but " + why);
  }
  std::string missing;
  for (size_t i = given; i < n; ++i) {
    const auto& d = args[i + 1].default_value();
    if (d && d->isNone()) continue;
    const std::string hint = spec_hint(args[i + 1].type());
    missing += "; " + argument_text(i, args[i + 1]) + " has no --input" +
               (hint.empty() ? "" : ": give " + hint);
  }
  if (!missing.empty()) throw count_error(missing);
  if (!given_args && given == n) return {};

  const torch::jit::Node* first = graph->block()->param_node()->next();
  torch::jit::WithInsertPoint guard(const_cast<torch::jit::Node*>(first));
  bool sequences = false;
  for (size_t i = n; i-- > 0;) {
    torch::jit::Value* in = graph->inputs()[i + 1];
    const ArgSpec* spec = i < given && given_args ? &options.args[i] : nullptr;
    if (i < given && (!spec || spec->kind == ArgKind::Tensor)) continue;
    if (spec && (spec->kind == ArgKind::List || spec->kind == ArgKind::Tuple)) {
      std::vector<torch::jit::Value*> items;
      for (size_t k = 0; k < spec->tensors.size(); ++k) {
        torch::jit::Value* item = graph->insertInput(i + 2 + k);
        item->setType(c10::TensorType::get());
        item->setDebugName(args[i + 1].name() + "_" + std::to_string(k));
        items.push_back(item);
      }
      torch::jit::Node* built = spec->kind == ArgKind::List
                                    ? graph->createList(c10::TensorType::get(), items)
                                    : graph->createTuple(items);
      in->replaceAllUsesWith(graph->insertNode(built)->output());
      sequences = true;
    } else {
      in->replaceAllUsesWith(graph->insertConstant(spec ? value_of(*spec) : c10::IValue()));
    }
    graph->eraseInput(i + 1);
  }
  torch::jit::ConstantPropagation(graph);
  if (sequences) fold_sequences(graph);
  torch::jit::EliminateDeadCode(graph);
  if (!given_args) return {};  // only omitted None inputs: as before
  for (const torch::jit::Node* node : graph->nodes()) {
    if (node->kind() != c10::prim::RaiseException) continue;
    const auto message =
        node->inputs().empty() ? c10::nullopt : torch::jit::toIValue(node->input(0));
    std::string values;
    for (const ArgSpec& a : options.args) {
      if (a.kind != ArgKind::Tensor) values += (values.empty() ? "" : ", ") + a.text;
    }
    throw ConvertError(
        1, "model '" + options.model_path +
               "' raises an exception whatever its tensors hold when given " + values +
               (message && message->isString() ? " (\"" + message->toStringRef() + "\")" : "") +
               "; give --input values the model accepts");
  }

  std::vector<c10::Argument> now = {args[0]};
  for (size_t i = 1; i < graph->inputs().size(); ++i) {
    now.emplace_back(graph->inputs()[i]->debugName(), graph->inputs()[i]->type());
  }
  torch::jit::toGraphFunction(forward.function()).setSchema(schema.cloneWithArguments(now));
  std::vector<EntryArgument> entry;
  for (size_t i = 0; i < given; ++i) {
    entry.push_back({args[i + 1].name(), args[i + 1].type()->annotation_str(), options.args[i]});
  }
  return entry;
}

Module load_frozen_model(const ConvertOptions& options, double* load_ms, double* freeze_ms,
                         LoadedEntry* entry) {
  const std::string& path = options.model_path;
  check_file(path);
  auto t0 = std::chrono::steady_clock::now();
  check_torchscript_archive(path, "model file");
  Module model = load_torchscript(path, "model file");
  *load_ms = ms_since(t0);
  if (model.hasattr("mod") && model.attr("mod").isModule() &&
      model.attr("mod").toModule().hasattr("ser_model")) {
    throw ConvertError(1, "model '" + path +
                              "' is already a converted NNAPI module (it holds a serialized "
                              "NNAPI model, 'mod.ser_model'); convert the original TorchScript "
                              "model instead, or run `nnapi-convert inspect " +
                              path + "` to see what this one holds");
  }
  LoadedEntry local;
  if (!entry) entry = &local;
  std::string walked;
  Module chosen = chosen_submodule(model, options, &walked);
  if (options.submodule.empty()) {
    for (const auto& c : model.named_children()) entry->submodules.push_back(c.name);
  }
  if (!options.submodule.empty() || !options.method.empty()) {
    entry->notes.push_back(
        "converted " + (options.submodule.empty() ? std::string("the model") : options.submodule) +
        "." + (options.method.empty() ? std::string("forward") : options.method) +
        " in place of the model's forward");
  }
  settle_training_mode(chosen, options, &entry->notes);
  Module module = chosen_method(chosen, options, walked);
  entry->entry = module;
  t0 = std::chrono::steady_clock::now();
  Module frozen;
  try {
    frozen = torch::jit::freeze(module);
    entry->arguments = specialize_arguments(frozen, options);
    for (const EntryArgument& a : entry->arguments) {
      if (a.spec.kind == ArgKind::Tensor) continue;
      const bool sequence = a.spec.kind == ArgKind::List || a.spec.kind == ArgKind::Tuple;
      entry->notes.push_back(
          sequence ? "argument '" + a.name + "' (" + a.type + ") holds " +
                         std::to_string(a.spec.tensors.size()) + " tensors (" + a.spec.text +
                         "), each an NNAPI input; the converted module's forward takes it whole" +
                         (a.spec.kind == ArgKind::List ? " and raises for another length" : "")
                   : "specialized on " + a.name + " = " + a.spec.text +
                         ": the model's branches on it were folded; the converted module's "
                         "forward still takes " +
                         a.name + " and raises for any other value");
    }
    auto graph = frozen.get_method("forward").graph();
    functionalize_input_mutations(*graph);
    torch::jit::RemoveListMutation(graph);
    torch::jit::RemoveTensorMutation(graph);
    functionalize_computed_mutations(graph);
  } catch (const c10::Error& e) {
    throw ConvertError(1,
                       "model '" + path + "' could not be frozen: " + e.what_without_backtrace());
  }
  *freeze_ms = ms_since(t0);
  return frozen;
}

}  // namespace nnapi_convert

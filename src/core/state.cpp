#include "core/state.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/diagnostics.h"
#include "core/sample_inputs.h"
#include "nnapi_convert/nnapi_types.h"
#include "serialize/state_program.h"

namespace nnapi_convert {
namespace {

using torch::jit::Node;
using torch::jit::Value;

bool on_self(const Node* n, const Value* self, c10::Symbol kind) {
  return n->kind() == kind && n->input(0) == self;
}

// Whether `v` is the module `self` or one of its submodules (prim::GetAttr
// of a module from it): what a prim::SetAttr on it writes persists between
// calls. A write into another object (torchvision's ImageList, made by
// forward) does not.
bool module_of(const Value* v, const Value* self) {
  if (v == self) return true;
  const auto cls = v->type()->cast<c10::ClassType>();
  return cls && cls->is_module() && v->node()->kind() == c10::prim::GetAttr &&
         module_of(v->node()->input(0), self);
}

// The first prim::SetAttr on `self` or a submodule anywhere in `block`.
const Node* first_module_write(const torch::jit::Block* block, const Value* self) {
  for (const Node* n : block->nodes()) {
    if (n->kind() == c10::prim::SetAttr && module_of(n->input(0), self)) return n;
    for (const torch::jit::Block* b : n->blocks()) {
      if (const Node* found = first_module_write(b, self)) return found;
    }
  }
  return nullptr;
}

// The write `n` (prim::SetAttr), and, since freezing leaves such nodes
// without a source range, the node that computes the value written.
std::string describe_write(const Node* n) {
  std::string s = describe_node(n);
  if (node_location(n).empty() && n->inputs().size() > 1) {
    s += ", the value from " + describe_node(n->input(1)->node());
  }
  return s;
}

std::string write_location(const Node* n) {
  std::string at = node_location(n);
  return at.empty() && n->inputs().size() > 1 ? node_location(n->input(1)->node()) : at;
}

[[noreturn]] void refuse(const std::string& path, const std::string& name, const Node* n,
                         const std::string& why) {
  throw ConvertError(1,
                     "model '" + path + "': forward writes the attribute '" + name + "' (" +
                         describe_write(n) + "), " + why,
                     n->kind().toQualString(), write_location(n));
}

bool is_scalar_type(const c10::TypePtr& t) {
  const c10::TypeKind k = t->kind();
  return k == c10::TypeKind::IntType || k == c10::TypeKind::FloatType ||
         k == c10::TypeKind::BoolType;
}

// What a node of the TorchScript part may do with a tensor the model was
// given or keeps as state: ask its sizes, or take a view of it (whose sizes
// it may ask in turn). Anything else would read the tensor's data, which is
// NNAPI's to compute.
bool asks_sizes(c10::Symbol k) {
  return k == c10::aten::size || k == c10::aten::dim || k == c10::aten::len ||
         k == c10::Symbol::fromQualString("aten::numel") || k == c10::aten::__is__ ||
         k == c10::aten::__isnot__ || k == c10::prim::dtype || k == c10::prim::device ||
         k == c10::aten::is_floating_point;
}

bool is_view(c10::Symbol k) {
  return k == c10::aten::unsqueeze || k == c10::aten::squeeze || k == c10::aten::view ||
         k == c10::aten::reshape || k == c10::aten::flatten || k == c10::aten::slice ||
         k == c10::aten::select || k == c10::aten::transpose || k == c10::aten::permute ||
         k == c10::aten::expand;
}

// The first node of `block` (in `data`: the tensors whose data is the
// model's) that reads a tensor's data; views of data join `data`, and so do
// the outputs of a branch or loop that gives data.
const Node* first_data_read(const torch::jit::Block* block, std::set<const Value*>* data) {
  for (const Node* n : block->nodes()) {
    for (const torch::jit::Block* b : n->blocks()) {
      if (const Node* found = first_data_read(b, data)) return found;
    }
    bool reads = false;
    for (const Value* in : n->inputs()) reads = reads || data->count(in);
    if (!n->blocks().empty()) {
      for (size_t i = 0; i < n->outputs().size(); ++i) {
        for (const torch::jit::Block* b : n->blocks()) {
          const size_t at = n->kind() == c10::prim::Loop ? i + 1 : i;  // a loop's condition first
          if (at < b->outputs().size() && data->count(b->outputs()[at])) {
            data->insert(n->outputs()[i]);
          }
        }
      }
      continue;
    }
    if (!reads || asks_sizes(n->kind())) continue;
    if (!is_view(n->kind())) return n;
    for (const Value* out : n->outputs()) data->insert(out);
  }
  return nullptr;
}

// Whether `n` (a prim::If or prim::Loop at forward's top level) writes an
// attribute of the model or a submodule anywhere inside.
bool writes_inside(const Node* n, const Value* self) {
  for (const torch::jit::Block* b : n->blocks()) {
    if (first_module_write(b, self)) return true;
  }
  return false;
}

// The attributes of `self` written anywhere in `block`, with their first write.
void writes_in(const torch::jit::Block* block, const Value* self,
               std::vector<std::pair<std::string, const Node*>>* out) {
  for (const Node* n : block->nodes()) {
    if (on_self(n, self, c10::prim::SetAttr)) {
      const std::string name = n->s(c10::attr::name);
      if (std::none_of(out->begin(), out->end(), [&](const auto& w) { return w.first == name; })) {
        out->push_back({name, n});
      }
    }
    for (const torch::jit::Block* b : n->blocks()) writes_in(b, self, out);
  }
}

// Forward's TorchScript part (StateProgram): the scalar state, and the
// prologue split off `frozen`'s forward, whose graph then no longer holds
// it. `tensor_writes`: the tensor attributes the prologue writes, each with
// its write (they must be state forward writes at its top level too).
struct Split {
  std::shared_ptr<torch::jit::Graph> prologue;
  std::vector<ScalarState> scalars;
  std::vector<std::pair<std::string, const Node*>> tensor_writes;
};

Split split_prologue(torch::jit::Module& frozen, const std::string& path) {
  std::shared_ptr<torch::jit::Graph> graph = frozen.get_method("forward").graph();
  Value* self = graph->inputs().at(0);
  const c10::ClassTypePtr type = frozen.type();
  Split split;
  std::vector<std::pair<std::string, const Node*>> writes;
  writes_in(graph->block(), self, &writes);
  std::set<std::string> scalars;
  for (const auto& [name, n] : writes) {
    const c10::TypePtr t = type->getAttribute(name);
    if (t->cast<c10::TensorType>()) continue;
    if (!is_scalar_type(t)) {
      refuse(path, name, n,
             "a value of type " + t->repr_str() +
                 " kept between calls; nnapi-convert keeps tensors (passed to NNAPI) and int, "
                 "float and bool attributes (kept in the converted module's TorchScript) only "
                 "(make it one of those, or drop it if forward need not keep it)");
    }
    scalars.insert(name);
    split.scalars.push_back({name, t, frozen.attr(name), describe_write(n)});
  }
  // The top-level nodes the prologue runs: the writes of scalar state, and
  // branches that write attributes before forward first writes a tensor one.
  std::vector<Node*> top(graph->nodes().begin(), graph->nodes().end());
  std::vector<size_t> effects;
  const Node* first_tensor_write = nullptr;
  for (size_t i = 0; i < top.size(); ++i) {
    Node* n = top[i];
    if (on_self(n, self, c10::prim::SetAttr)) {
      if (scalars.count(n->s(c10::attr::name))) {
        effects.push_back(i);
      } else if (!first_tensor_write) {
        first_tensor_write = n;
      }
      continue;
    }
    if (n->kind() != c10::prim::If || !writes_inside(n, self)) continue;
    const Node* set = nullptr;
    for (const torch::jit::Block* b : n->blocks()) set = set ? set : first_module_write(b, self);
    const std::string name = set->s(c10::attr::name);
    bool used = false;
    for (const Value* out : n->outputs()) used = used || out->hasUses();
    if (first_tensor_write || used) {
      refuse(path, name, set,
             "inside the branch or loop of " + describe_node(n) + ", which " +
                 (used ? std::string("gives values forward computes with")
                       : "comes after forward writes " + describe_write(first_tensor_write)) +
                 "; nnapi-convert converts state that forward writes unconditionally, once per "
                 "call, at its top level, and runs branches that write it before that (on ints "
                 "and sizes) in TorchScript (write the attribute after the branch, with the "
                 "value the branch chooses)");
    }
    effects.push_back(i);
    std::vector<std::pair<std::string, const Node*>> inside;
    for (const torch::jit::Block* b : n->blocks()) writes_in(b, self, &inside);
    for (const auto& w : inside) {
      if (!scalars.count(w.first)) split.tensor_writes.push_back(w);
    }
  }
  if (effects.empty()) return split;

  // The prologue: a copy of forward without its outputs and every node the
  // effects do not need.
  std::shared_ptr<torch::jit::Graph> prologue = graph->copy();
  std::vector<Node*> ptop(prologue->nodes().begin(), prologue->nodes().end());
  std::set<Node*> keep;
  for (size_t i : effects) keep.insert(ptop[i]);
  while (!prologue->outputs().empty()) prologue->eraseOutput(0);
  for (auto it = ptop.rbegin(); it != ptop.rend(); ++it) {
    bool used = keep.count(*it) > 0;
    for (const Value* out : (*it)->outputs()) used = used || out->hasUses();
    if (!used) (*it)->destroy();
  }
  {
    torch::jit::WithInsertPoint at_return(prologue->return_node());
    prologue->registerOutput(prologue->insertConstant(c10::IValue()));
  }
  // It may ask sizes, never read data, and touch the state only.
  const Node* first_effect = top[effects.front()];
  const Node* named = first_effect->kind() == c10::prim::SetAttr ? first_effect : [&] {
    const Node* set = nullptr;
    for (const torch::jit::Block* b : first_effect->blocks()) {
      set = set ? set : first_module_write(b, self);
    }
    return set;
  }();
  const std::string what =
      first_effect->kind() == c10::prim::SetAttr
          ? "a " + type->getAttribute(named->s(c10::attr::name))->repr_str() + " kept between calls"
          : "inside the branch or loop of " + describe_node(first_effect);
  std::set<const Value*> data;
  Value* pself = prologue->inputs().at(0);
  for (size_t i = 1; i < prologue->inputs().size(); ++i) data.insert(prologue->inputs()[i]);
  std::function<const Node*(const torch::jit::Block*)> stranger =
      [&](const torch::jit::Block* b) -> const Node* {
    for (const Node* n : b->nodes()) {
      const bool attr = n->kind() == c10::prim::GetAttr || n->kind() == c10::prim::SetAttr;
      if (attr && n->input(0) != pself) return n;
      if (attr && !type->hasAttribute(n->s(c10::attr::name))) return n;
      if (attr && type->getAttribute(n->s(c10::attr::name))->cast<c10::ClassType>()) return n;
      if (n->kind() == c10::prim::GetAttr && n->output()->type()->cast<c10::TensorType>()) {
        data.insert(n->output());
      }
      if (n->kind() == c10::prim::CallMethod || n->kind() == c10::prim::CallFunction) return n;
      for (const torch::jit::Block* sub : n->blocks()) {
        if (const Node* found = stranger(sub)) return found;
      }
    }
    return nullptr;
  };
  const Node* odd = stranger(prologue->block());
  const Node* read = odd ? nullptr : first_data_read(prologue->block(), &data);
  if (odd || read) {
    refuse(path, named->s(c10::attr::name), named,
           what +
               ", which nnapi-convert runs in the converted module's TorchScript before NNAPI on "
               "each call; but that part " +
               (odd ? "uses another object than the model's own state (" + describe_node(odd) + ")"
                    : "reads the data of a tensor (" + describe_node(read) + ")") +
               ", and it may use only sizes, int, float and bool values and the state (branch on "
               "those, or write the state unconditionally at forward's top level)");
  }
  // Forward without them; the NNAPI part must not read the scalar state.
  for (auto it = effects.rbegin(); it != effects.rend(); ++it) top[*it]->destroy();
  torch::jit::EliminateDeadCode(graph);
  std::function<void(torch::jit::Block*)> scalar_reads = [&](torch::jit::Block* b) {
    for (Node* n : b->nodes()) {
      if (on_self(n, self, c10::prim::GetAttr) && scalars.count(n->s(c10::attr::name))) {
        // Freezing leaves the read without a source range: its first user has one.
        const Node* user = n->output()->uses().empty() ? n : n->output()->uses()[0].user;
        throw ConvertError(
            1,
            "model '" + path + "': forward computes with the attribute '" + n->s(c10::attr::name) +
                "' (read by " + describe_node(user) +
                "), which it changes between calls; nnapi-convert keeps such int, float and "
                "bool attributes in TorchScript, and NNAPI's part of forward may not read them "
                "(compute from tensors, or from values fixed by --input)",
            user->kind().toQualString(), node_location(user));
      }
      for (torch::jit::Block* sub : n->blocks()) scalar_reads(sub);
    }
  };
  scalar_reads(graph->block());
  split.prologue = prologue;
  return split;
}

// The state's values as the NNAPI model takes them on the first call and
// on the next: the prologue run on a copy of the model from the file's
// state (sample inputs of `specs`' sizes, flexible sizes 1), then again
// from the state it would hand on. Throws when the two differ in shape or
// dtype.
void first_state(const torch::jit::Module& frozen, const Split& split,
                 const std::vector<InputSpec>& specs, const std::string& path,
                 std::vector<StateAttribute>* state) {
  if (!split.prologue || split.prologue->inputs().size() != specs.size() + 1) return;
  torch::jit::Module probe = frozen.deepcopy();
  std::vector<at::Tensor> inputs;
  for (const InputSpec& spec : specs) {
    std::vector<int64_t> shape = spec.dims;
    for (int64_t& d : shape) d = d == 0 ? 1 : d;
    inputs.push_back(sample_input(spec, shape, false));
  }
  torch::jit::GraphFunction fn("state_prologue", split.prologue->copy(), nullptr);
  auto run = [&](int call) {
    torch::jit::Stack stack{probe._ivalue()};
    for (const at::Tensor& t : inputs) stack.emplace_back(t);
    try {
      fn.run(stack);
    } catch (const c10::Error& e) {
      throw ConvertError(1, "model '" + path +
                                "': the part of forward that nnapi-convert keeps in TorchScript "
                                "for its state (branches that write it, int, float and bool "
                                "attributes) fails on call " +
                                std::to_string(call) +
                                " at the --input sizes: " + e.what_without_backtrace());
    }
  };
  run(1);
  for (StateAttribute& s : *state) s.first = probe.attr(s.name).toTensor().clone();
  for (const StateAttribute& s : *state) probe.setattr(s.name, s.first.clone());
  run(2);
  for (const StateAttribute& s : *state) {
    const at::Tensor now = probe.attr(s.name).toTensor();
    if (now.sizes() != s.first.sizes() || now.scalar_type() != s.first.scalar_type()) {
      throw ConvertError(
          1, "model '" + path + "': the state attribute '" + s.name + "' (written by " + s.node +
                 ") holds " + c10::toString(s.first.scalar_type()) + " " +
                 join_dims(s.first.sizes().vec()) + " on the first call but " +
                 c10::toString(now.scalar_type()) + " " + join_dims(now.sizes().vec()) +
                 " on the next, after forward's branches that write it: an NNAPI model's inputs "
                 "have fixed sizes (keep the state's shape the same on every call)");
    }
  }
}

}  // namespace

void refuse_state_options(const torch::jit::Module& frozen, const ConvertOptions& options) {
  if (!options.cpu_fallback && !options.quantize.enabled) return;
  // Only state extract_state would take (a tensor attribute of the module
  // written at forward's top level): other writes are left to those options'
  // own paths (--cpu-fallback keeps a submodule's writes in TorchScript).
  const std::shared_ptr<torch::jit::Graph> graph = frozen.get_method("forward").graph();
  const Node* n = nullptr;
  for (const Node* node : graph->nodes()) {
    if (on_self(node, graph->inputs().at(0), c10::prim::SetAttr) &&
        frozen.type()->getAttribute(node->s(c10::attr::name))->cast<c10::TensorType>()) {
      n = node;
      break;
    }
  }
  if (!n) return;
  const std::string option = options.cpu_fallback ? "--cpu-fallback" : "--quantize";
  refuse(options.model_path, n->s(c10::attr::name), n,
         "state kept between calls, which nnapi-convert converts without " + option +
             " only; leave " + option + " out");
}

std::vector<StateAttribute> extract_state(torch::jit::Module& frozen, const ConvertOptions& options,
                                          int* user_retval_count,
                                          std::shared_ptr<StateProgram>* program) {
  const std::string& path = options.model_path;
  Split split = split_prologue(frozen, path);
  std::shared_ptr<torch::jit::Graph> graph = frozen.get_method("forward").graph();
  Value* self = graph->inputs().at(0);
  const c10::ClassTypePtr type = frozen.type();
  std::vector<StateAttribute> state;
  std::map<std::string, size_t> index;  // attribute -> its place in `state`
  // The attributes written, in order of first use (read or write).
  for (Node* n : graph->nodes()) {
    for (const torch::jit::Block* b : n->blocks()) {
      if (const Node* set = first_module_write(b, self)) {
        const std::string name = set->s(c10::attr::name);
        refuse(path, name, set,
               "inside the branch or loop of " + describe_node(n) +
                   "; nnapi-convert converts state that forward writes "
                   "unconditionally, once per call, at its top level (write the attribute after "
                   "the branch, with the value the branch chooses)");
      }
    }
    if (n->kind() == c10::prim::SetAttr && n->input(0) != self && module_of(n->input(0), self)) {
      refuse(path, n->s(c10::attr::name), n,
             "which belongs to a submodule; nnapi-convert keeps state only in attributes of the "
             "top-level module (keep the state there)");
    }
    if (!on_self(n, self, c10::prim::SetAttr)) continue;
    const std::string name = n->s(c10::attr::name);
    if (index.count(name)) continue;
    index[name] = state.size();
    const at::Tensor initial = frozen.attr(name).toTensor().detach().clone();
    state.push_back({name, initial, describe_write(n), initial});
  }
  for (const auto& [name, n] : split.tensor_writes) {
    if (index.count(name)) continue;
    refuse(path, name, n,
           "inside a branch only; nnapi-convert converts state that forward writes "
           "unconditionally, once per call, at its top level (write the attribute there too)");
  }
  if (state.empty() && split.scalars.empty()) return state;
  first_state(frozen, split, options.inputs, path, &state);
  *program = std::make_shared<StateProgram>();
  (*program)->scalars = split.scalars;
  (*program)->prologue = split.prologue;
  if (state.empty()) return state;

  // Reads and writes become the state's values: the input, then whatever was
  // last written. A read inside a branch takes the value current at its
  // top-level node (writes happen at the top level only).
  std::vector<Value*> current;
  for (const StateAttribute& s : state) {
    Value* in = graph->addInput(s.name);
    in->setType(c10::TensorType::get());
    current.push_back(in);
  }
  std::vector<Node*> dead;
  std::function<void(torch::jit::Block*)> replace_reads = [&](torch::jit::Block* block) {
    for (Node* n : block->nodes()) {
      if (on_self(n, self, c10::prim::GetAttr) && index.count(n->s(c10::attr::name))) {
        n->output()->replaceAllUsesWith(current[index.at(n->s(c10::attr::name))]);
        dead.push_back(n);
      }
      for (torch::jit::Block* b : n->blocks()) replace_reads(b);
    }
  };
  for (Node* n : graph->nodes()) {
    if (on_self(n, self, c10::prim::SetAttr)) {
      current[index.at(n->s(c10::attr::name))] = n->input(1);
      dead.push_back(n);
      continue;
    }
    if (on_self(n, self, c10::prim::GetAttr) && index.count(n->s(c10::attr::name))) {
      n->output()->replaceAllUsesWith(current[index.at(n->s(c10::attr::name))]);
      dead.push_back(n);
      continue;
    }
    for (torch::jit::Block* b : n->blocks()) replace_reads(b);
  }
  for (Node* n : dead) n->destroy();

  // forward returns the user's outputs, then the state.
  Value* ret = graph->outputs().at(0);
  std::vector<Value*> outs;
  torch::jit::WithInsertPoint at_return(graph->return_node());
  if (ret->node()->kind() == c10::prim::TupleConstruct) {
    for (Value* v : ret->node()->inputs()) outs.push_back(v);
    *user_retval_count = static_cast<int>(outs.size());
  } else if (ret->type()->kind() == c10::TypeKind::TupleType) {
    Node* unpack = graph->insertNode(graph->createTupleUnpack(ret));
    for (Value* v : unpack->outputs()) outs.push_back(v);
    *user_retval_count = static_cast<int>(outs.size());
  } else {
    outs.push_back(ret);
    *user_retval_count = -1;
  }
  outs.insert(outs.end(), current.begin(), current.end());
  Node* all = graph->insertNode(graph->createTuple(outs));
  graph->eraseOutput(0);
  graph->registerOutput(all->output());
  if (ret->uses().empty() && ret->node()->kind() == c10::prim::TupleConstruct) {
    ret->node()->destroy();
  }
  // The method's schema as the graph now reads (the validator runs it).
  std::vector<c10::Argument> args;
  for (const Value* in : graph->inputs()) args.emplace_back(in->debugName(), in->type());
  torch::jit::toGraphFunction(frozen.get_method("forward").function())
      .setSchema(c10::FunctionSchema("forward", "", std::move(args),
                                     {c10::Argument("", all->output()->type())}));
  return state;
}

ConvertOptions with_state_inputs(const ConvertOptions& options,
                                 const std::vector<StateAttribute>& state) {
  ConvertOptions o = options;
  for (const StateAttribute& s : state) {
    const at::Tensor& t = s.first;
    const bool fp32 = t.scalar_type() == at::kFloat, i32 = t.scalar_type() == at::kInt;
    if ((!fp32 && !i32) || t.dim() < 1 || t.dim() > 4 || t.is_quantized()) {
      throw ConvertError(1, "model '" + options.model_path + "': the state attribute '" + s.name +
                                "' (written by " + s.node + ") is a " +
                                c10::toString(t.scalar_type()) + " tensor of rank " +
                                std::to_string(t.dim()) +
                                ", but nnapi-convert passes state to NNAPI as float32 or int32 "
                                "tensors of rank 1 to 4 only; keep the state in such a tensor");
    }
    InputSpec spec;
    spec.dims = t.sizes().vec();
    spec.dtype = fp32 ? InputDType::Float32 : InputDType::Int32;
    spec.text = "state " + s.name + " " + format_input_spec(spec);
    o.inputs.push_back(spec);
  }
  return o;
}

void finish_state_conversion(Conversion& c, std::vector<StateAttribute> state,
                             int user_retval_count, const std::string& path) {
  const size_t first = user_retval_count < 0 ? 1 : static_cast<size_t>(user_retval_count);
  for (size_t k = 0; k < state.size(); ++k) {
    const int i = static_cast<int>(first + k);
    const StateAttribute& s = state[k];
    const auto reshape = c.output_reshapes.find(i);
    const std::vector<int64_t> shape =
        reshape != c.output_reshapes.end() ? reshape->second : c.templates.at(i).shape;
    const auto wanted = s.first.scalar_type() == at::kFloat ? nnapi::OperandType::TensorFloat32
                                                            : nnapi::OperandType::TensorInt32;
    const bool same_type =
        c.templates.at(i).type == static_cast<int32_t>(wanted) && !c.output_casts.count(i);
    const bool flexible = std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d <= 0; });
    if (shape != s.first.sizes().vec() || !same_type) {
      throw ConvertError(
          1, "model '" + path + "': forward writes the attribute '" + s.name + "' (" + s.node +
                 ") with a " + (same_type ? "" : "another dtype or ") + "shape " +
                 join_dims(shape) +
                 (flexible ? " (0 or -1: a size that follows a flexible input size)" : "") +
                 ", but it holds " + c10::toString(s.first.scalar_type()) + " " +
                 join_dims(s.first.sizes().vec()) +
                 " on the first call: the state's shape would change between calls, and "
                 "an NNAPI model's inputs have fixed sizes. Write the state back with the "
                 "shape and dtype it has in the file (give fixed sizes in --input if it "
                 "follows one)");
    }
  }
  c.retval_count = user_retval_count;
  c.state = std::move(state);
}

}  // namespace nnapi_convert

namespace nnapi_convert {

void carry_state_methods(const torch::jit::Module& model, Conversion& c,
                         std::vector<std::string>* notes) {
  auto program = std::make_shared<StateProgram>(*c.state_program);
  std::set<std::string> kept;  // the attributes the converted module keeps
  for (const StateAttribute& s : c.state) kept.insert(s.name);
  for (const ScalarState& s : program->scalars) kept.insert(s.name);
  std::string names;
  for (const std::string& n : kept) names += (names.empty() ? "" : ", ") + n;
  bool branches = false;
  if (program->prologue) {
    for (const Node* n : program->prologue->nodes()) branches = branches || !n->blocks().empty();
  }
  if (branches) {
    notes->push_back(
        "forward's branches that write the state before computing it, and the int, float and "
        "bool attributes it keeps, run in the converted module's TorchScript before NNAPI on "
        "each call (on sizes and those attributes only): the converted module keeps " +
        names);
  } else if (!program->scalars.empty()) {
    notes->push_back(
        "the converted module keeps the int, float and bool attributes forward "
        "writes in TorchScript: " +
        names);
  }
  for (const torch::jit::Method& method : model.get_methods()) {
    const std::string name = method.name();
    if (name == "forward" || name == "__getstate__" || name == "__setstate__") continue;
    std::shared_ptr<torch::jit::Graph> g = method.graph()->copy();
    torch::jit::Inline(*g);
    Value* self = g->inputs().at(0);
    bool writes_state = false;
    const Node* other = nullptr;   // what keeps it from being carried over
    std::vector<Node*> constants;  // reads of attributes the model never changes
    std::function<void(torch::jit::Block*)> walk = [&](torch::jit::Block* b) {
      for (Node* n : b->nodes()) {
        const c10::Symbol k = n->kind();
        if (k == c10::prim::SetAttr || k == c10::prim::GetAttr) {
          const std::string attr = n->s(c10::attr::name);
          if (n->input(0) != self) {
            other = other ? other : n;
          } else if (kept.count(attr)) {
            writes_state = writes_state || k == c10::prim::SetAttr;
          } else if (k == c10::prim::GetAttr &&
                     !model.type()->getAttribute(attr)->cast<c10::ClassType>()) {
            constants.push_back(n);
          } else {
            other = other ? other : n;
          }
        } else if (k == c10::prim::CallMethod || k == c10::prim::CallFunction) {
          other = other ? other : n;
        }
        for (torch::jit::Block* sub : n->blocks()) walk(sub);
      }
    };
    walk(g->block());
    if (!writes_state) continue;
    const std::string reserved[] = {"reset_state", "state_prologue", "state_attributes",
                                    "state_values"};
    if (!other && std::find(std::begin(reserved), std::end(reserved), name) != std::end(reserved)) {
      notes->push_back("the model's method " + name +
                       "() writes the state, but the converted module has its own method of "
                       "that name: not carried over (reset_state() restores the file's state)");
      continue;
    }
    for (Node* n : constants) {
      if (other) break;
      torch::jit::WithInsertPoint here(n);
      const c10::optional<Value*> v =
          torch::jit::tryInsertConstant(*g, model.attr(n->s(c10::attr::name)));
      if (!v) {
        other = n;
        break;
      }
      n->output()->replaceAllUsesWith(*v);
      n->destroy();
    }
    if (other) {
      notes->push_back("the model's method " + name + "() writes the state, but also uses " +
                       describe_node(other) +
                       ", which the converted module does not have: not carried over "
                       "(reset_state() restores the file's state)");
      continue;
    }
    program->methods.push_back({name, g, method.function().getSchema()});
    notes->push_back("the model's method " + name +
                     "() writes the state only: carried over to the converted module, where it "
                     "writes the state the converted module keeps");
  }
  c.state_program = program;
}

}  // namespace nnapi_convert

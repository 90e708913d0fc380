#include "core/state.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "core/diagnostics.h"
#include "core/sample_inputs.h"
#include "nnapi_convert/nnapi_types.h"

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

std::vector<StateAttribute> extract_state(torch::jit::Module& frozen, const std::string& path,
                                          int* user_retval_count) {
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
    const c10::TypePtr t = type->getAttribute(name);
    if (!t->cast<c10::TensorType>()) {
      refuse(path, name, n,
             "a value of type " + t->repr_str() +
                 " kept between calls; NNAPI takes tensors only, so only tensor attributes can "
                 "be state (make it a tensor, or drop it if forward need not keep it)");
    }
    index[name] = state.size();
    state.push_back({name, frozen.attr(name).toTensor().detach().clone(), describe_write(n)});
  }
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
    const at::Tensor& t = s.initial;
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
    const auto wanted = s.initial.scalar_type() == at::kFloat ? nnapi::OperandType::TensorFloat32
                                                              : nnapi::OperandType::TensorInt32;
    const bool same_type =
        c.templates.at(i).type == static_cast<int32_t>(wanted) && !c.output_casts.count(i);
    const bool flexible = std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d <= 0; });
    if (shape != s.initial.sizes().vec() || !same_type) {
      throw ConvertError(
          1, "model '" + path + "': forward writes the attribute '" + s.name + "' (" + s.node +
                 ") with a " + (same_type ? "" : "another dtype or ") + "shape " +
                 join_dims(shape) +
                 (flexible ? " (0 or -1: a size that follows a flexible input size)" : "") +
                 ", but it holds " + c10::toString(s.initial.scalar_type()) + " " +
                 join_dims(s.initial.sizes().vec()) +
                 " when the model is loaded: the state's shape would change between calls, and "
                 "an NNAPI model's inputs have fixed sizes. Write the state back with the "
                 "shape and dtype it has in the file (give fixed sizes in --input if it "
                 "follows one)");
    }
  }
  c.retval_count = user_retval_count;
  c.state = std::move(state);
}

}  // namespace nnapi_convert

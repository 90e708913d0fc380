// Wraps a conversion in the TorchScript module layout that PyTorch's NNAPI
// runtime loads (the same attributes and methods as the module
// convert_model_to_nnapi returns), and writes it, or its parts, atomically.
#include <ATen/ATen.h>
#include <caffe2/serialize/versions.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/csrc/jit/frontend/sugared_value.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/custom_class.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "nnapi_convert/writer.h"
#include "serialize/fallback_graph.h"
#include "serialize/metadata.h"
#include "serialize/prepare_script.h"
#include "serialize/pyrepr.h"
#include "serialize/state_program.h"
#include "util/output_file.h"
#include "util/sha256.h"

// torch/csrc/jit/mobile/compatibility/backport.h, which Debian's libtorch-dev
// does not install; libtorch_cpu exports the function.
namespace torch::jit {
TORCH_API bool _backport_for_mobile(std::istream& in, std::ostream& out, int64_t to_version);
}  // namespace torch::jit

namespace nnapi_convert {

const char* const kSegmentKind = "nnapi_convert::segment";
const char* const kSegmentIndex = "index";
const char* const kArgumentsAttribute = "nnapi_convert_arguments";

namespace {

namespace fs = std::filesystem;
using torch::jit::Module;

const char* const kPrefix = "__torch__.torch.backends._nnapi.prepare.";

// Resolves `Compilation` to PyTorch's NNAPI binding class, `Exception` to
// TorchScript's exception, everything else natively.
class NnapiResolver : public torch::jit::Resolver {
 public:
  explicit NnapiResolver(c10::ClassTypePtr compilation) : compilation_(std::move(compilation)) {}
  std::shared_ptr<torch::jit::SugaredValue> resolveValue(
      const std::string& name, torch::jit::GraphFunction& m,
      const torch::jit::SourceRange& loc) override {
    if (name == "Compilation") return std::make_shared<torch::jit::ClassValue>(compilation_);
    if (name == "Exception") return std::make_shared<torch::jit::ExceptionValue>(name);
    return torch::jit::nativeResolver()->resolveValue(name, m, loc);
  }
  c10::TypePtr resolveType(const std::string& name, const torch::jit::SourceRange& loc) override {
    if (name == "Compilation") return compilation_;
    return torch::jit::nativeResolver()->resolveType(name, loc);
  }

 private:
  c10::ClassTypePtr compilation_;
};

// NnapiModule's methods: compile on first use, then run with the inputs and
// outputs permuted to and from NHWC as their memory formats say. Unlike the
// reference's, it compiles again when the inputs' sizes differ from those it
// was compiled for: the shape-compute script fills the flexible sizes into
// ser_model (every one of them, each time) and NNAPI's Execution_setInput
// refuses inputs of other sizes than the compiled model's.
const char* const kNnapiModuleSource = R"TS(
def input_sizes(self, args: List[Tensor]) -> List[int]:
    sizes: List[int] = []
    for a in args:
        sizes.append(a.dim())
        sizes.extend(a.size())
    return sizes

def init(self, args: List[Tensor]):
    assert self.comp is None
    self.out_templates = self.shape_compute_module.prepare(self.ser_model, args)
    self.weights = [w.contiguous() for w in self.weights]
    comp = Compilation()
    comp.init2(self.ser_model, self.weights, self.compilation_preference, self.relax_f32_to_f16)
    self.comp = comp
    self.compiled_sizes = self.input_sizes(args)

def forward(self, args: List[Tensor]) -> List[Tensor]:
    if self.comp is not None and self.input_sizes(args) != self.compiled_sizes:
        self.comp = None
    if self.comp is None:
        self.init(args)
    comp = self.comp
    assert comp is not None
    outs = [torch.empty_like(out) for out in self.out_templates]
    assert len(args) == len(self.inp_mem_fmts)
    fixed_args: List[Tensor] = []
    for idx in range(len(args)):
        fmt = self.inp_mem_fmts[idx]
        if fmt == 0:
            fixed_args.append(args[idx].contiguous())
        elif fmt == 1:
            fixed_args.append(args[idx].permute(0, 2, 3, 1).contiguous())
        else:
            raise Exception("Invalid mem_fmt")
    comp.run(fixed_args, outs)
    assert len(outs) == len(self.out_mem_fmts)
    for idx in range(len(self.out_templates)):
        fmt = self.out_mem_fmts[idx]
        if fmt == 0 or fmt == 2:
            pass
        elif fmt == 1:
            outs[idx] = outs[idx].permute(0, 3, 1, 2)
        else:
            raise Exception("Invalid mem_fmt")
    return outs
)TS";

std::string prepare_source(const Conversion& c, bool numeric_dtypes) {
  std::string src =
      "def prepare(self, ser_model: torch.Tensor, args: List[torch.Tensor]) -> "
      "List[torch.Tensor]:\n";
  for (const std::string& line : prepare_lines(c, numeric_dtypes)) src += "    " + line + "\n";
  return src;
}

// The converted module's forward parameters, the checks that open it and the
// tensors it hands on, in NNAPI input order. Without Conversion::arguments,
// as the reference writes it: `arg_0, arg_1`, each a tensor. With them, the
// entry point's own arguments: a value the model was specialized on is still
// taken (the app's call does not change) and anything else raises; a
// List/Tuple of tensors is taken whole and its items handed on.
struct Signature {
  std::string params;
  std::string checks;                // lines of forward's body
  std::vector<std::string> tensors;  // "arg_0", "arg_1[0]", ...
};

Signature signature(const Conversion& c, size_t n_inputs) {
  Signature s;
  if (c.arguments.empty()) {
    for (size_t i = 0; i < n_inputs; ++i) {
      s.tensors.push_back("arg_" + std::to_string(i));
      s.params += (i ? ", " : "") + s.tensors.back();
    }
    return s;
  }
  for (size_t i = 0; i < c.arguments.size(); ++i) {
    const EntryArgument& a = c.arguments[i];
    const std::string name = "arg_" + std::to_string(i);
    std::string type, differs;
    switch (a.spec.kind) {
      case ArgKind::Tensor:
        type = "Tensor";
        s.tensors.push_back(name);
        break;
      case ArgKind::Int:
        type = "int";
        differs = name + " != " + std::to_string(a.spec.int_value);
        break;
      case ArgKind::Float:
        type = "float";
        differs = name + " != " + py_float_repr(a.spec.float_value);
        break;
      case ArgKind::Bool:
        type = "bool";
        differs = name + (a.spec.bool_value ? " != True" : " != False");
        break;
      case ArgKind::None:
        type = a.type;
        differs = name + " is not None";
        break;
      case ArgKind::List:
      case ArgKind::Tuple:
        type = a.spec.kind == ArgKind::List ? "List[Tensor]" : "Tuple[";
        for (size_t k = 0; k < a.spec.tensors.size(); ++k) {
          if (a.spec.kind == ArgKind::Tuple) type += k ? ", Tensor" : "Tensor";
          s.tensors.push_back(name + "[" + std::to_string(k) + "]");
        }
        if (a.spec.kind == ArgKind::Tuple) type += "]";
        if (a.spec.kind == ArgKind::List) {
          differs = "len(" + name + ") != " + std::to_string(a.spec.tensors.size());
        }
        break;
    }
    s.params += (i ? ", " : "") + name + ": " + type;
    if (!differs.empty()) {
      s.checks += "    if " + differs + ":\n        raise Exception(\"nnapi-convert converted " +
                  "this model for " + a.name + " = " + format_arg_spec(a.spec) +
                  " (its --input); convert it again for another " +
                  (a.spec.kind == ArgKind::List ? "length" : "value") + "\")\n";
    }
  }
  return s;
}

// What the converted module records of its arguments (inspect shows it):
// "name (type): spec" each.
c10::List<std::string> argument_record(const Conversion& c) {
  c10::List<std::string> record;
  for (const EntryArgument& a : c.arguments) {
    record.push_back(a.name + " (" + a.type + "): " + format_arg_spec(a.spec));
  }
  return record;
}

// Bool inputs (--input ...,dtype=bool) are handed to NNAPI as int32 0/1,
// inputs of rank > 4 with their leading dims merged (nnapi_input_dims);
// outputs NNAPI holds with another shape (output_reshapes) are reshaped,
// bool and int64 outputs (int32 in NNAPI) cast back (output_casts).
// A stateful model's state (c.state) is passed after the inputs, from the
// wrapper's attributes, and its new values, the NNAPI model's last outputs,
// are written back to them before the user's outputs are returned.
std::string wrapper_forward_source(const std::vector<InputSpec>& inputs, const Conversion& c) {
  const Signature sig = signature(c, inputs.size());
  std::string passed, state, writes;
  for (size_t k = 0; k < c.state.size(); ++k) {
    const std::string& name = c.state[k].name;
    const size_t out = (c.retval_count < 0 ? 1 : c.retval_count) + k;
    state += (inputs.empty() && k == 0 ? "self." : ", self.") + name;
    writes += "    self." + name + " = retvals[" + std::to_string(out) + "]\n";
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    passed +=
        (i ? ", " : "") + sig.tensors.at(i) + (inputs[i].dtype == InputDType::Bool ? ".int()" : "");
    // --float16-io: PyTorch's NNAPI binding takes no float16 input
    // (nnapi_bind.cpp's get_operand_type), so float16 arrives as float32.
    if (c.float16_io && inputs[i].dtype == InputDType::Float32) passed += ".float()";
    if (inputs[i].dims.size() > 4) {  // as nnapi_input_dims merges them
      const size_t first = inputs[i].dims[0] == 0 ? 1 : 0;
      passed += ".flatten(" + std::to_string(first) + ", " +
                std::to_string(inputs[i].dims.size() - 4 + first) + ")";
    }
  }
  auto retval = [&](int i) {
    std::string r = "retvals[" + std::to_string(i) + "]";
    auto reshape = c.output_reshapes.find(i);
    if (reshape != c.output_reshapes.end()) {
      r += ".reshape([";
      for (size_t d = 0; d < reshape->second.size(); ++d) {
        r += (d ? ", " : "") + std::to_string(reshape->second[d]);
      }
      r += "])";
    }
    auto cast = c.output_casts.find(i);
    if (cast != c.output_casts.end()) {  // the dtype's number (torch.bool 11, torch.int64 4)
      r += ".to(" +
           std::to_string(static_cast<int>(cast->second == "bool" ? at::kBool : at::kLong)) + ")";
    }
    return r;
  };
  std::string ret;
  if (c.retval_count < 0) {
    ret = retval(0);
  } else {
    for (int i = 0; i < c.retval_count; ++i) ret += retval(i) + ", ";
  }
  std::string prologue;
  if (c.state_program && c.state_program->prologue) {
    std::string args;
    for (size_t i = 0; i < inputs.size(); ++i) args += (i ? ", " : "") + sig.tensors.at(i);
    prologue = "    self.state_prologue(" + args + ")\n";
  }
  return "def forward(self, " + sig.params + "):\n" + sig.checks + prologue +
         "    retvals = self.mod.forward([" + passed + state + "])\n" + writes + "    return " +
         ret + "\n";
}

at::Tensor ser_model_tensor(const Conversion& c) {
  auto* data = const_cast<int32_t*>(c.ser_model.data());
  return at::from_blob(data, {static_cast<int64_t>(c.ser_model.size())}, at::kInt).clone();
}

// What every module of one output shares: the compilation unit its classes
// are defined in and the resolver of their TorchScript.
struct ModuleScope {
  c10::ClassTypePtr compilation;
  std::shared_ptr<NnapiResolver> resolver;
  std::shared_ptr<torch::jit::CompilationUnit> cu = std::make_shared<torch::jit::CompilationUnit>();

  ModuleScope() {
    compilation = torch::getCustomClass("__torch__.torch.classes._nnapi.Compilation");
    if (!compilation) {
      throw ConvertError(1,
                         "this LibTorch has no NNAPI binding (torch.classes._nnapi.Compilation)");
    }
    resolver = std::make_shared<NnapiResolver>(compilation);
  }

  // A module with the attributes PyTorch's scripted nn.Modules start with.
  Module module_of(const std::string& qualified_name) const {
    Module m(qualified_name, cu, true);
    m.register_attribute("training", c10::BoolType::get(), true);
    m.register_attribute("_is_full_backward_hook", c10::NoneType::get(), c10::IValue());
    return m;
  }
};

// The reference's NnapiModule of one NNAPI model, with its ShapeComputeModule.
Module nnapi_module(const ModuleScope& scope, const Conversion& c, const ConvertOptions& options) {
  Module shape = scope.module_of(std::string(kPrefix) + "ShapeComputeModule");
  shape.define(prepare_source(c, /*numeric_dtypes=*/true), scope.resolver);

  Module nnapi = scope.module_of(std::string(kPrefix) + "NnapiModule");
  nnapi.register_attribute("ser_model", c10::TensorType::get(), ser_model_tensor(c));
  c10::List<at::Tensor> weights;
  for (const at::Tensor& w : c.weights) weights.push_back(w);
  nnapi.register_attribute("weights", c10::ListType::ofTensors(), weights);
  nnapi.register_attribute("inp_mem_fmts", c10::ListType::ofInts(),
                           c10::List<int64_t>(c.inp_mem_fmts));
  nnapi.register_attribute("out_mem_fmts", c10::ListType::ofInts(),
                           c10::List<int64_t>(c.out_mem_fmts));
  nnapi.register_attribute("out_templates", c10::ListType::ofTensors(), c10::List<at::Tensor>());
  nnapi.register_attribute("comp", c10::OptionalType::create(scope.compilation), c10::IValue());
  nnapi.register_attribute("compiled_sizes", c10::ListType::ofInts(), c10::List<int64_t>());
  nnapi.register_attribute("compilation_preference", c10::IntType::get(),
                           int64_t{options.compilation_preference});
  nnapi.register_attribute("relax_f32_to_f16", c10::BoolType::get(), options.relax_f32_to_f16);
  nnapi.register_module("shape_compute_module", shape);
  nnapi.define(kNnapiModuleSource, scope.resolver);
  return nnapi;
}

}  // namespace

std::vector<int32_t> prepared_ser_model(const Conversion& c, const std::vector<at::Tensor>& args) {
  ModuleScope scope;
  Module shape = scope.module_of(std::string(kPrefix) + "ShapeComputeModule");
  shape.define(prepare_source(c, /*numeric_dtypes=*/true), scope.resolver);
  at::Tensor ser = ser_model_tensor(c);
  // Run once, so not worth the graph executor's profiling and optimization
  // passes (MobileNetV2 with a flexible batch: 33 ms of the validator's 40,
  // 1.7 ms without). The switch is process-wide: restored however this ends.
  struct NoGraphOptimization {
    bool was = torch::jit::getGraphExecutorOptimize();
    NoGraphOptimization() { torch::jit::setGraphExecutorOptimize(false); }
    ~NoGraphOptimization() { torch::jit::setGraphExecutorOptimize(was); }
  } no_optimization;
  shape.run_method("prepare", ser, c10::List<at::Tensor>(args));
  const int32_t* words = ser.data_ptr<int32_t>();
  return std::vector<int32_t>(words, words + ser.numel());
}

namespace {

// --cpu-fallback: the model's forward calling NnapiModule `nnapi_K` where the
// fallback graph has segment K: forward([inputs]) gives a list of its outputs.
Module fallback_module(const ModuleScope& scope, const Conversion& c,
                       const ConvertOptions& options) {
  Module top = scope.module_of("__torch__.nnapi_convert.CpuFallbackModule");
  for (size_t k = 0; k < c.segments.size(); ++k) {
    top.register_module("nnapi_" + std::to_string(k), nnapi_module(scope, c.segments[k], options));
  }
  std::shared_ptr<torch::jit::Graph> g = c.fallback->graph->copy();
  torch::jit::Value* self = g->inputs()[0];
  const auto model = c.fallback->self.toObject();
  for (const torch::jit::Use& u : self->uses()) {
    const std::string name = u.user->kind() == c10::prim::GetAttr ? u.user->s(c10::attr::name) : "";
    if (name.empty() || !model->type()->hasAttribute(name)) {
      throw ConvertError(1,
                         "--cpu-fallback: the model's TorchScript part uses the module "
                         "itself other than by reading an attribute (" +
                             std::string(u.user->kind().toQualString()) +
                             "), which the converted module cannot give it");
    }
    if (!top.hasattr(name)) {
      top.register_attribute(name, model->type()->getAttribute(name), model->getAttr(name));
    }
  }
  self->setType(top.type());
  const c10::Symbol segment = c10::Symbol::fromQualString(kSegmentKind);
  std::vector<torch::jit::Node*> calls;
  for (torch::jit::Node* n : g->nodes()) {
    if (n->kind() == segment) calls.push_back(n);
  }
  for (torch::jit::Node* n : calls) {
    torch::jit::WithInsertPoint here(n);
    const int64_t k = n->i(c10::Symbol::attr(kSegmentIndex));
    torch::jit::Value* args =
        g->insertNode(g->createList(c10::TensorType::get(), n->inputs()))->output();
    torch::jit::Value* mod = g->insertGetAttr(self, "nnapi_" + std::to_string(k));
    torch::jit::Node* call = g->insertNode(g->create(c10::prim::CallMethod, {mod, args}));
    call->s_(c10::attr::name, "forward");
    call->output()->setType(c10::ListType::ofTensors());
    torch::jit::Node* outs =
        g->insertNode(g->createListUnpack(call->output(), n->outputs().size()));
    const auto& reshapes = c.segments[k].output_reshapes;
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      torch::jit::Value* out = outs->output(i);
      auto reshape = reshapes.find(static_cast<int>(i));
      if (reshape != reshapes.end()) {
        // NNAPI returns it with another shape (a 0-dim result as (1)).
        out = g->insert(c10::aten::reshape,
                        {out, g->insertConstant(c10::IValue(c10::List<int64_t>(reshape->second)))});
      }
      auto cast = c.segments[k].output_casts.find(static_cast<int>(i));
      if (cast != c.segments[k].output_casts.end()) {
        // A bool or int64 result NNAPI computes as int32.
        const auto dtype = cast->second == "bool" ? at::kBool : at::kLong;
        out = g->insert(c10::aten::to, {out, c10::IValue(static_cast<int64_t>(dtype)),
                                        c10::IValue(false), c10::IValue(false)});
      }
      n->output(i)->replaceAllUsesWith(out);
    }
    n->destroy();
  }
  // With arguments (Conversion::arguments) the graph takes the tensors
  // alone: forward takes the entry point's arguments and calls it.
  const bool adapted = !c.arguments.empty();
  auto fn = scope.cu->create_function(
      c10::QualifiedName(*top.type()->name(), adapted ? "forward_tensors" : "forward"), g);
  top.type()->addMethod(fn);
  if (adapted) {
    const Signature sig = signature(c, g->inputs().size() - 1);
    std::string passed;
    for (const std::string& t : sig.tensors) passed += (passed.empty() ? "" : ", ") + t;
    top.define("def forward(self, " + sig.params + "):\n" + sig.checks +
                   "    return self.forward_tensors(" + passed + ")\n",
               scope.resolver);
  }
  return top;
}

// A stateful model's state (c.state): attributes of the wrapper, with the
// values the model file holds, which `reset_state()` restores (from
// `<name>_initial`); `state_attributes` lists their names (for inspect).
// The int, float and bool attributes kept (StateProgram::scalars) are
// attributes too, with `<name>_initial`, listed in `state_values`; the
// prologue is the method `state_prologue`, and the model's own methods that
// write the state are carried over under their names.
void add_state(Module& wrapper, const Conversion& c, const ModuleScope& scope) {
  if (c.state.empty() && !c.state_program) return;
  c10::List<std::string> names, values;
  std::string reset = "def reset_state(self):\n";
  auto add = [&](const std::string& attr, const std::string& node, const c10::TypePtr& type,
                 const c10::IValue& initial, const std::string& copy) {
    for (const std::string& name : {attr, attr + "_initial"}) {
      if (wrapper.hasattr(name) || name == "state_attributes" || name == "state_values" ||
          name == "reset_state" || name == "state_prologue") {
        throw ConvertError(1, "the model's state attribute '" + attr + "' (written by " + node +
                                  ") has a name the converted module uses itself ('" + name +
                                  "'); rename the attribute");
      }
      wrapper.register_attribute(name, type, initial);
    }
    reset += "    self." + attr + " = self." + attr + "_initial" + copy + "\n";
  };
  for (const StateAttribute& s : c.state) {
    add(s.name, s.node, c10::TensorType::get(), s.initial.clone(), ".clone()");
    names.push_back(s.name);
  }
  if (c.state_program) {
    for (const ScalarState& s : c.state_program->scalars) {
      add(s.name, s.node, s.type, s.initial, "");
      values.push_back(s.name);
    }
  }
  wrapper.register_attribute("state_attributes", c10::ListType::ofStrings(), names);
  wrapper.register_attribute("state_values", c10::ListType::ofStrings(), values);
  wrapper.define(reset, scope.resolver);
  if (!c.state_program) return;
  auto add_method = [&](const std::string& name, const std::shared_ptr<torch::jit::Graph>& graph,
                        const c10::FunctionSchema* schema) {
    std::shared_ptr<torch::jit::Graph> g = graph->copy();
    g->inputs().at(0)->setType(wrapper.type());
    auto* fn = scope.cu->create_function(c10::QualifiedName(*wrapper.type()->name(), name), g);
    if (schema) {
      std::vector<c10::Argument> args = schema->arguments();
      args.at(0) = c10::Argument("self", wrapper.type());
      torch::jit::toGraphFunction(*fn).setSchema(schema->cloneWithArguments(args));
    }
    wrapper.type()->addMethod(fn);
  };
  if (c.state_program->prologue) add_method("state_prologue", c.state_program->prologue, nullptr);
  for (const CarriedMethod& m : c.state_program->methods) add_method(m.name, m.graph, &m.schema);
}

Module build_module(const Conversion& c, const ConvertOptions& options) {
  ModuleScope scope;
  Module wrapper;
  if (c.fallback) {
    wrapper = fallback_module(scope, c, options);
  } else {
    wrapper = scope.module_of(std::string(kPrefix) + "NnapiInterfaceWrapper");
    wrapper.register_module("mod", nnapi_module(scope, c, options));
    add_state(wrapper, c, scope);
    wrapper.define(wrapper_forward_source(options.inputs, c), scope.resolver);
  }
  if (!c.arguments.empty()) {
    wrapper.register_attribute(kArgumentsAttribute, c10::ListType::ofStrings(), argument_record(c));
  }
  return wrapper;
}

// Writes `m` with the metadata record; the lite-interpreter copy (`mobile`)
// at bytecode `lite_version` (0: LibTorch's own, the newest), which
// torch::jit::_backport_for_mobile rewrites from LibTorch's own one version at
// a time. Returns the SHA-256 of the bytes written with `hash`, else "".
std::string save_module(const Module& m, PendingFile& file, bool mobile,
                        const std::string& metadata, bool hash, int lite_version = 0) {
  if (mobile && lite_version != 0 && lite_version != kNewestLiteBytecodeVersion) {
    std::stringstream own;
    torch::jit::ExportModule(m, own, {{kMetadataFile, metadata}}, /*bytecode_format=*/true);
    std::stringstream older;
    if (!torch::jit::_backport_for_mobile(own, older, lite_version)) {
      throw ConvertError(1,
                         "LibTorch could not backport the lite-interpreter copy to bytecode "
                         "version " +
                             std::to_string(lite_version) + " (--lite-bytecode-version)");
    }
    const std::string bytes = older.str();
    file.write(bytes.data(), bytes.size());
    if (!hash) return "";
    Sha256 sha;
    sha.update(bytes.data(), bytes.size());
    return sha.hex();
  }
  // LibTorch's zip writer throws from its destructor when a write fails, so
  // the writer never reports a failure to it: the file records the error and
  // finish() throws it.
  Sha256 sha;
  torch::jit::ExportModule(
      m,
      [&file, &sha, hash](const void* data, size_t size) {
        if (hash) sha.update(data, size);
        file.write_nothrow(data, size);
        return size;
      },
      {{kMetadataFile, metadata}}, /*bytecode_format=*/mobile);
  return hash ? sha.hex() : "";
}

nlohmann::json parts_manifest(const Conversion& c, const ConvertOptions& options) {
  nlohmann::json inputs = nlohmann::json::array();
  for (const InputSpec& s : options.inputs) inputs.push_back(format_input_spec(s));
  nlohmann::json state = nlohmann::json::array();  // the inputs and outputs after the user's
  for (const StateAttribute& s : c.state) {
    state.push_back({{"attribute", s.name}, {"shape", s.initial.sizes().vec()}});
  }
  nlohmann::json j = {
      {"state", state},
      {"inp_mem_fmts", c.inp_mem_fmts},
      {"out_mem_fmts", c.out_mem_fmts},
      {"retval_count", c.retval_count},
      {"inputs", inputs},
      {"shape_compute_lines", c.shape_lines},
      {"operand_count", c.operand_count},
      {"operation_count", c.operation_count},
      {"operations", c.operations},
      {"weight_bytes", c.weight_bytes},
      {"compilation_preference", options.compilation_preference},
      {"relax_f32_to_f16", options.relax_f32_to_f16},
  };
  if (!c.arguments.empty()) j["arguments"] = argument_record(c).vec();
  return j;
}

}  // namespace

const int kOldestLiteBytecodeVersion = 4;
const int kNewestLiteBytecodeVersion =
    static_cast<int>(caffe2::serialize::kProducedBytecodeVersion);

void check_lite_bytecode_version(int version, const std::string& option) {
  if (version >= kOldestLiteBytecodeVersion && version <= kNewestLiteBytecodeVersion) return;
  throw ConvertError(
      2, option + " " + std::to_string(version) + ": LibTorch 1.13 writes lite-interpreter " +
             "bytecode versions " + std::to_string(kOldestLiteBytecodeVersion) + " (the oldest, " +
             "through its backport) to " + std::to_string(kNewestLiteBytecodeVersion) +
             " (its own). Give a version in that range: docs/cli.md lists which PyTorch Android " +
             "release reads which");
}

std::string lite_output_path(const std::string& path) {
  // out.nnapi.pt -> out.nnapi.ptl; a name without .pt gets .ptl appended.
  std::string ptl = path;
  if (ptl.size() > 3 && ptl.compare(ptl.size() - 3, 3, ".pt") == 0) ptl.erase(ptl.size() - 3);
  return ptl + ".ptl";
}

std::vector<std::string> parts_paths(const std::string& dir) {
  std::vector<std::string> out;
  for (const char* name : {"ser_model.bin", "weights.pt", "shape_compute.py", "manifest.json"}) {
    out.push_back((fs::path(dir) / name).string());
  }
  return out;
}

void ConversionFiles::commit() {
  std::vector<PendingFile*> all;
  for (auto& f : files) all.push_back(f.get());
  commit_all(all);
}

std::vector<Staged> ConversionFiles::hand_over() {
  std::vector<Staged> staged;
  for (const auto& f : files) {
    if (!f->renamed_into_place()) return staged;
  }
  for (auto& f : files) staged.push_back(f->hand_over());
  return staged;
}

ConversionFiles::ConversionFiles() = default;
ConversionFiles::ConversionFiles(ConversionFiles&&) noexcept = default;
ConversionFiles::~ConversionFiles() = default;

ConversionFiles write_conversion(const Conversion& c, const ConvertOptions& options,
                                 const std::string& path, bool lite, const std::string& parts,
                                 const std::string& source_sha256, bool hash_outputs) {
  ConversionFiles out;
  if (c.fallback && !parts.empty()) {
    throw ConvertError(2, "--parts writes the files of one NNAPI model, but --cpu-fallback made " +
                              std::to_string(c.segments.size()) +
                              " NNAPI model(s) and TorchScript of model '" + options.model_path +
                              "'; leave out --parts (the .nnapi.pt holds every part)");
  }
  try {
    Module wrapper;
    try {
      wrapper = build_module(c, options);
    } catch (const c10::Error& e) {
      throw ConvertError(
          1, std::string("could not build the NNAPI module: ") + e.what_without_backtrace());
    }
    std::string sha = source_sha256;
    if (sha.empty() && (!path.empty() || lite)) {
      try {
        sha = sha256_file(options.model_path);
      } catch (const std::runtime_error& e) {
        throw ConvertError(1, "model '" + options.model_path + "': " + e.what() +
                                  " after it was loaded; was it replaced or removed meanwhile?");
      }
    }
    const std::string metadata = metadata_json(c, options, sha);
    auto add = [&](const std::string& p, const std::string& what) -> PendingFile& {
      out.files.push_back(std::make_unique<PendingFile>(p, what));
      return *out.files.back();
    };
    if (!path.empty()) {
      out.module = &add(path, "output");
      out.module_sha256 = save_module(wrapper, *out.module, false, metadata, hash_outputs);
      out.module->finish();
    }
    if (lite && !path.empty()) {
      PendingFile& ptl = add(lite_output_path(path), "--lite output");
      out.lite_sha256 = save_module(wrapper, ptl, true, metadata, hash_outputs,
                                    options.lite_bytecode_version);
      ptl.finish();
    }
    if (!parts.empty()) {
      std::vector<std::string> p = parts_paths(parts);
      std::error_code ec;
      fs::create_directories(parts, ec);
      if (ec)
        throw ConvertError(1,
                           "could not create --parts directory '" + parts + "': " + ec.message());
      PendingFile& ser = add(p[0], "--parts file");
      ser.write(c.ser_model.data(), c.ser_model.size() * sizeof(int32_t));
      ser.finish();
      c10::List<at::Tensor> weights;
      for (const at::Tensor& w : c.weights) weights.push_back(w);
      std::vector<char> pickled = torch::jit::pickle_save(c10::IValue(weights));
      PendingFile& wf = add(p[1], "--parts file");
      wf.write(pickled.data(), pickled.size());
      wf.finish();
      std::string py = "from typing import List\nimport torch\n\n\n" + prepare_source(c, false);
      PendingFile& pf = add(p[2], "--parts file");
      pf.write(py.data(), py.size());
      pf.finish();
      std::string js = parts_manifest(c, options).dump(2) + "\n";
      PendingFile& mf = add(p[3], "--parts file");
      mf.write(js.data(), js.size());
      mf.finish();
    }
  } catch (const OutputError& e) {
    throw ConvertError(e.usage() ? 2 : 1, e.what());
  }
  return out;
}

void write_nnapi_module(const Conversion& c, const ConvertOptions& options, const std::string& path,
                        bool lite) {
  write_conversion(c, options, path, lite, "").commit();
}

void write_parts(const Conversion& c, const ConvertOptions& options, const std::string& dir) {
  write_conversion(c, options, "", false, dir).commit();
}

}  // namespace nnapi_convert

// The driver: model inputs -> lowering table -> serialized NNAPI model.
#include "core/converter.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/api/module.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include "core/check_graph.h"
#include "core/diagnostics.h"
#include "core/fallback.h"
#include "core/float16.h"
#include "core/folding.h"
#include "core/loader.h"
#include "core/lower_profile.h"
#include "core/state.h"
#include "core/summary.h"
#include "core/trace.h"
#include "core/validation.h"
#include "lower/dispatch.h"
#include "lower/emit.h"
#include "lower/fusion.h"
#include "lower/logical.h"
#include "lower/registry.h"
#include "nnapi_convert/check_command.h"
#include "util/timing.h"

namespace nnapi_convert {

void check_input_count(const torch::jit::Graph& graph, const ConvertOptions& options) {
  const size_t n_args = graph.inputs().size() - 1;
  if (options.inputs.size() != n_args) {
    throw ConvertError(2, "model '" + options.model_path + "' takes " + std::to_string(n_args) +
                              " input(s), but " + std::to_string(options.inputs.size()) +
                              " --input spec(s) were given; give one --input per model input, "
                              "in order");
  }
}

namespace {

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

// The converted module returns each output with the dtype of its NNAPI
// operand; where the model's graph says it returns another (a float64
// softmax, a bool mask computed as int32 0/1), the conversion is refused
// rather than written with a silently changed dtype.
void check_output_dtype(const Value* v, const Operand& op, size_t i, const Node** offending) {
  const auto type = v->type()->cast<c10::TensorType>();
  const auto model = type ? type->scalarType() : c10::nullopt;
  const c10::ScalarType nnapi = torch_dtype(op.type);
  if (!model || nnapi == at::ScalarType::Undefined || *model == nnapi) return;
  *offending = v->node();
  fail("output " + std::to_string(i) + ", computed by " + describe_node(v->node()) + ", is " +
       c10::toString(*model) + " in the model, but NNAPI computes it as " + c10::toString(nnapi) +
       ", so the converted module would return another dtype; make the model return " +
       c10::toString(nnapi) + " (convert the dtype outside the NNAPI model)");
}

// NNAPI's operations take tensors of rank 4 at most (NeuralNetworks.h: "up
// to 4" for ADD, RESHAPE, TRANSPOSE, STRIDED_SLICE, CONCATENATION, ...): an
// operand of higher rank made by the node just lowered would have the device
// reject the model. (Rank 0 cannot occur: fix_shape makes it [1].)
void check_operand_ranks(const ModelBuilder& m, size_t first) {
  for (size_t i = first; i < m.operand_count(); ++i) {
    const std::vector<int64_t>& dims = m.operand(static_cast<int32_t>(i)).dims;
    check(dims.size() <= 4, [&] {
      return "this node needs an NNAPI tensor of rank " + std::to_string(dims.size()) + " (" +
             shape_str(dims) +
             "), but NNAPI operations take tensors of rank 4 at most. nnapi-convert merges "
             "dims for views, permutes, selects, slices, unbind, cat, softmax, dequantize and "
             "elementwise operations of rank > 4 (with one flexible size at most, among the first "
             "three dims), but not "
             "here: reshape the tensor to rank 4 or less before this operation (or give "
             "fixed sizes in --input)";
    });
  }
}

// Whether the module `self` runs on given inputs, where `graph` is its
// forward (not a segment of it): the validator's test of a sample size.
ModelRuns model_runs(const torch::jit::Graph& graph, const c10::IValue& self) {
  if (!self.isObject()) return {};
  torch::jit::Module module(self.toObject());
  const auto forward = module.find_method("forward");
  if (!forward || forward->graph().get() != &graph) return {};
  return [module](const std::vector<at::Tensor>& inputs) mutable {
    c10::InferenceMode guard;
    try {
      module.forward(std::vector<c10::IValue>(inputs.begin(), inputs.end()));
      return true;
    } catch (const std::exception&) {
      return false;
    }
  };
}

}  // namespace

CheckReport check_model(const ConvertOptions& options, CheckGraph* drawn) {
  CheckReport r;
  r.model = options.model_path;
  torch::jit::Module module = load_frozen_model(options, &r.times.load_ms, &r.times.freeze_ms);
  std::shared_ptr<torch::jit::Graph> graph = module.get_method("forward").graph();
  // check --dot records which node each NNAPI operation came from, and with
  // --cpu-fallback where each node runs.
  LoweringTrace trace;
  auto lower = [&] {
    if (!drawn || !options.cpu_fallback) {
      return lower_module(module, options, drawn ? &trace : nullptr);
    }
    refuse_state_options(module, options);  // as lower_module does
    return lower_with_fallback(module, options, &trace);
  };
  try {
    Conversion c = lower();
    r.converts = true;
    copy_summary(c, r);
    r.state = c.state;
    r.times.lower_ms = c.times.lower_ms;
    r.times.load_ms += c.times.load_ms;  // the debug records read for the source lines
  } catch (const ConvertError& e) {
    if (e.exit_code() == 2) throw;
    r.error = e.what();
    r.error_node = e.node();
    r.error_location = e.location();
  }
  // Counted after the lowering, which makes a stateful forward's attribute
  // reads and writes its inputs and outputs (extract_state).
  r.kinds = census(*graph);
  for (const NodeKindCount& k : r.kinds) r.node_count += k.count;
  if (drawn) *drawn = check_graph(*graph, trace, r.converts, r.error);
  return r;
}

Conversion lower_module(const torch::jit::Module& module, const ConvertOptions& options,
                        LoweringTrace* trace) {
  refuse_state_options(module, options);
  if (options.cpu_fallback && !trace) return lower_with_fallback(module, options);
  int user_retval_count = -1;
  torch::jit::Module m = module;  // the same module: extract_state rewrites its forward
  std::shared_ptr<StateProgram> program;
  std::vector<StateAttribute> state = extract_state(m, options, &user_retval_count, &program);
  if (state.empty()) {
    Conversion c =
        lower_graph(*module.get_method("forward").graph(), module._ivalue(), options, trace);
    c.state_program = program;
    return c;
  }
  Conversion c = lower_graph(*module.get_method("forward").graph(), module._ivalue(),
                             with_state_inputs(options, state), trace);
  finish_state_conversion(c, std::move(state), user_retval_count, options.model_path);
  c.state_program = program;
  return c;
}

namespace {

// The stages of lower_graph, in order: the model's inputs, the node pipeline
// (kNodeSteps, per node in graph order), the model's outputs, then the
// serialized model and its validation. GraphLowering is what they share.
struct GraphLowering {
  GraphLowering(torch::jit::Graph& graph, const c10::IValue& self, const ConvertOptions& options)
      : graph(graph), self(self), options(options), path(options.model_path) {}
  GraphLowering(const GraphLowering&) = delete;
  GraphLowering& operator=(const GraphLowering&) = delete;

  torch::jit::Graph& graph;
  const c10::IValue& self;
  const ConvertOptions& options;
  const std::string& path;
  Conversion result;
  LowerProfile profile;
  LoweringContext cx;
  std::optional<FusionPlan> plan;  // made once check_supported has passed
  std::vector<int32_t> input_ids;  // the NNAPI operand of each model input
  Folder folder;
  const Node* current = nullptr;    // the node being lowered (for error messages)
  const Node* offending = nullptr;  // the node of a returned value that is no operand
  // Per NNAPI operation: the node it was lowered from (for the validator's
  // messages, and the trace).
  std::vector<const Node*> op_nodes;

  ModelBuilder& model() { return cx.model(); }
  size_t arg_count() const { return graph.inputs().size() - 1; }
};

// ---- Stage 1: the model's inputs.

// Each input a tensor, of the rank its --input spec gives.
void check_graph_inputs(GraphLowering& g) {
  const auto graph_inputs = g.graph.inputs();
  check_input_count(g.graph, g.options);
  for (size_t i = 0; i < g.arg_count(); ++i) {
    const Value* v = graph_inputs[i + 1];
    if (v->type()->kind() != c10::TypeKind::TensorType) {
      throw ConvertError(1, "model '" + g.path + "': input " + std::to_string(i) + " (" +
                                v->debugName() + ") is a " + v->type()->repr_str() +
                                ", not a Tensor; NNAPI models take tensors only");
    }
    auto tt = v->type()->cast<c10::TensorType>();
    if (auto rank = tt->dim()) {
      if (*rank != g.options.inputs[i].dims.size()) {
        throw ConvertError(2, "input spec '" + g.options.inputs[i].text + "' has " +
                                  std::to_string(g.options.inputs[i].dims.size()) +
                                  " dims, but model input " + std::to_string(i) + " has " +
                                  std::to_string(*rank));
      }
    }
  }
}

// Every node kind against the lowering table at once, then the fusion plan
// and the context the nodes are lowered into.
void prepare_lowering(GraphLowering& g) {
  lowering_table();
  g.profile.step("lowering table");
  check_supported(g.graph, g.path);
  g.profile.step("check_supported");
  g.plan.emplace(g.graph, lowering_table(), g.options.fuse_activations);
  g.profile.step("fusion plan");
  g.cx.set_fusion_plan(&*g.plan);
  g.cx.set_min_android_api(g.options.min_android_api);
  g.cx.set_nhwc(g.options.nhwc);
  g.model().add_bool_scalar(false);
  g.model().add_bool_scalar(true);
  g.cx.add_constant(g.graph.inputs()[0], g.graph.inputs()[0]->type(), g.self);
}

// One NNAPI input operand per model input, in order.
void add_model_inputs(GraphLowering& g) {
  const auto graph_inputs = g.graph.inputs();
  const ConvertOptions& options = g.options;
  for (size_t i = 0; i < g.arg_count(); ++i) {
    // A bool input arrives as int32 0/1; its graph value says bool, so that a
    // lowering can tell those 0/1 values from other int32 data (emit_reshape).
    if (options.inputs[i].dtype == InputDType::Bool) {
      if (auto t = graph_inputs[i + 1]->type()->cast<c10::TensorType>())
        graph_inputs[i + 1]->setType(t->withScalarType(at::kBool));
    }
    Operand o = operand_for_input(options.inputs[i], options.nhwc, options.use_int16_for_qint16);
    // NNAPI operations take rank <= 4: an input of rank r > 4 reaches NNAPI
    // with its first r - 3 dims merged (the converted module's forward
    // flattens it, nnapi_input_dims) and is read as its full shape here.
    const Shape dims = nnapi_input_dims(options.inputs[i].dims);
    if (dims != o.shape) {
      if (std::find(o.shape.begin() + 1, o.shape.end(), 0) != o.shape.end()) {
        throw ConvertError(1, "model '" + g.path + "': input " + std::to_string(i) + " (spec '" +
                                  options.inputs[i].text + "') has " +
                                  std::to_string(o.shape.size()) +
                                  " dims, which NNAPI takes merged to 4 with a flexible batch "
                                  "(dim 0) at most; give every other size in --input");
      }
      const int32_t id =
          g.cx.add_input(static_cast<int>(i), graph_inputs[i + 1], o.with_shape(dims));
      g.cx.rebind(graph_inputs[i + 1], id, o);
      g.input_ids.push_back(id);
      g.result.inp_mem_fmts.push_back(static_cast<int64_t>(DimOrder::Contiguous));
      continue;
    }
    int32_t id = g.cx.add_input(static_cast<int>(i), graph_inputs[i + 1], o);
    if (options.inputs[i].dtype == InputDType::Bool)
      g.cx.set_torch_dtype(graph_inputs[i + 1], at::kBool);
    g.input_ids.push_back(id);
    g.result.inp_mem_fmts.push_back(static_cast<int64_t>(g.cx.operand(id).dim_order));
  }
}

// ---- Stage 2: the node pipeline.

// One node on its way through kNodeSteps.
struct NodeLowering {
  const Node* node;
  std::optional<Dispatch> lowering = std::nullopt;  // choose_lowering's choice
  size_t operands_before = 0;  // the model's operand count before the node's lowering
};

// A step returns true when it has dealt with the node: the steps after it
// are skipped.
using NodeStepFn = bool (*)(GraphLowering&, NodeLowering&);

// The operations made since the previous node came from it; this node is
// the current one.
bool attribute_operations(GraphLowering& g, NodeLowering& n) {
  g.op_nodes.resize(g.model().operation_count(), g.current);
  g.current = n.node;
  return false;
}

// All inputs constant: computed now (Folder), no operation.
bool fold_constant(GraphLowering& g, NodeLowering& n) { return g.folder.try_fold(g.cx, n.node); }

// A zero-sized result PyTorch computes from a zero-sized piece or an empty
// slice: a constant, no operation (Folder::try_empty).
bool empty_result(GraphLowering& g, NodeLowering& n) { return g.folder.try_empty(g.cx, n.node); }

// Arithmetic on load-time sizes: shape-compute lines (lower/symbolic.cpp).
bool shape_arithmetic(GraphLowering& g, NodeLowering& n) {
  return lower_symbolic_arithmetic(g.cx, n.node);
}

// Lowered with its group, at the group's last node.
bool skip_group_member(GraphLowering& g, NodeLowering& n) { return g.plan->claimed(n.node); }

// Computed by its producer's fused activation (--fuse-activations).
bool alias_folded_activation(GraphLowering& g, NodeLowering& n) {
  if (!g.plan->folded_activation(n.node)) return false;
  g.cx.alias(n.node->output(), n.node->input(0));
  return true;
}

// A quantized operation reading a float32 tensor: the model takes quantized
// input (diagnostics.h).
bool check_quantized_operands(GraphLowering& g, NodeLowering& n) {
  check_quantized_inputs(g.cx, n.node, g.input_ids);
  return false;
}

// The constants a lowered node reads, which a later in-place write may not
// fold into (Folder).
bool note_constant_reads(GraphLowering& g, NodeLowering& n) {
  g.folder.note_lowered(g.cx, n.node);
  return false;
}

// The node's lowering, chosen: its group's (fusion.h), else the handler of
// its kind's spec for the form of its inputs (lower/dispatch.h). Video
// inputs held as frames are unfolded into ordinary tensors unless the
// handler reads frames, and a node whose kind takes no rank > 4 input is
// refused one. (This and lower_node are the steps that ask the lowering
// table about the node.)
bool choose_lowering(GraphLowering& g, NodeLowering& n) {
  n.lowering.emplace(dispatch(g.cx, n.node, g.plan->group_ending_at(n.node)));
  return false;
}

// The chosen lowering, called.
bool lower_node(GraphLowering& g, NodeLowering& n) {
  n.operands_before = g.model().operand_count();
  n.lowering->lower(g.cx);
  return false;
}

// No operand the lowering made is of rank > 4.
bool check_new_operand_ranks(GraphLowering& g, NodeLowering& n) {
  check_operand_ranks(g.model(), n.operands_before);
  return false;
}

// No operation above --min-android-api's feature level.
bool check_target_level(GraphLowering& g, NodeLowering&) {
  if (const auto& over = g.model().first_over_limit()) fail_above_target(*over, g.options);
  return false;
}

// The node pipeline: what happens to each node, in order. The first step
// that deals with the node ends its way.
struct NodeStep {
  const char* name;
  NodeStepFn run;
};
constexpr NodeStep kNodeSteps[] = {
    {"attribute operations", attribute_operations},
    {"fold constant", fold_constant},
    {"empty result", empty_result},
    {"shape arithmetic", shape_arithmetic},
    {"skip group member", skip_group_member},
    {"alias folded activation", alias_folded_activation},
    {"choose lowering", choose_lowering},
    {"check quantized operands", check_quantized_operands},
    {"note constant reads", note_constant_reads},
    {"lower node", lower_node},
    {"check new operand ranks", check_new_operand_ranks},
    {"check target level", check_target_level},
};

// One node through the pipeline, timed by kind (LowerProfile). The nodes of
// an `if` branch taken during conversion come here too (control.cpp).
void lower_one_node(GraphLowering& g, const Node* node) {
  g.profile.begin_node();
  NodeLowering n{node};
  for (const NodeStep& step : kNodeSteps) {
    if (step.run(g, n)) break;
  }
  g.profile.end_node(node->kind());
}

void lower_nodes(GraphLowering& g, LoweringTrace* trace) {
  g.cx.set_node_lowerer([&g](const Node* node) { lower_one_node(g, node); });
  for (const Node* node : g.graph.nodes()) lower_one_node(g, node);
  g.op_nodes.resize(g.model().operation_count(), g.current);
  g.profile.step("nodes");
  if (trace) {
    trace->operations = g.op_nodes;
    record_values(g.cx, g.graph, trace);
  }
}

// ---- Stage 3: the model's outputs.

// The values the model returns: a tensor or a tuple of tensors, one
// --return-shape each when given.
std::vector<const Value*> returned_values(GraphLowering& g) {
  g.current = g.graph.return_node();
  const Value* ret = g.graph.outputs().at(0);
  std::vector<const Value*> returns;
  if (ret->type()->kind() == c10::TypeKind::TensorType) {
    returns = {ret};
    g.result.retval_count = -1;
  } else if (ret->type()->kind() == c10::TypeKind::TupleType) {
    returns = g.cx.sequence(ret);
    g.result.retval_count = static_cast<int>(returns.size());
  } else {
    fail("the model returns a " + ret->type()->repr_str() +
         "; only a tensor or a tuple of tensors can be returned");
  }
  const std::vector<std::vector<int64_t>>& return_shapes = g.options.return_shapes;
  if (!return_shapes.empty() && return_shapes.size() != returns.size()) {
    throw ConvertError(2, "--return-shape was given " + std::to_string(return_shapes.size()) +
                              " time(s), but the model returns " + std::to_string(returns.size()) +
                              " tensor(s)");
  }
  return returns;
}

// Each returned value's operand, as the converted module receives it: a
// video tensor unfolded; a bool result as int32 0/1 (PyTorch's NNAPI binding
// takes no bool tensors; a TENSOR_BOOL8 one is made so by SELECT), an int64
// one (indices) as the int32 NNAPI computes, which the converted module casts
// back (output_casts).
std::vector<OperandHandle> cast_outputs(GraphLowering& g,
                                        const std::vector<const Value*>& returns) {
  LoweringContext& cx = g.cx;
  std::vector<OperandHandle> outs;
  for (size_t i = 0; i < returns.size(); ++i) {
    if (!cx.has_operand(returns[i])) g.offending = returns[i]->node();  // a constant here
    unfold_video_value(cx, returns[i]);
    OperandHandle t = cx.get_operand(returns[i]);
    const auto type = returns[i]->type()->cast<c10::TensorType>();
    auto dtype = type ? type->scalarType() : c10::nullopt;
    if (auto held = cx.torch_dtype_of(returns[i]); !dtype && held) dtype = *held;
    if (t.op.type == nnapi::OperandType::TensorBool8) {
      g.offending = returns[i]->node();
      t = int01_of(cx, t);
      g.offending = nullptr;
      dtype = at::kBool;
    }
    if (t.op.type == nnapi::OperandType::TensorInt32 &&
        (dtype == at::kBool || dtype == at::kLong)) {
      g.result.output_casts[static_cast<int>(i)] = dtype == at::kBool ? "bool" : "int64";
    }
    outs.push_back(t);
  }
  return outs;
}

// NNAPI rejects a model (BAD_DATA, when it is compiled on the device) whose
// output is one of its inputs, or that lists one operand twice as an output;
// PyTorch's converter writes such models without a word.
void check_distinct_outputs(GraphLowering& g, const std::vector<const Value*>& returns,
                            const std::vector<OperandHandle>& outs) {
  std::vector<int32_t> output_ids;
  for (size_t i = 0; i < returns.size(); ++i) {
    int32_t id = outs[i].id;
    for (size_t k = 0; k < g.input_ids.size(); ++k) {
      if (g.input_ids[k] == id) {
        g.offending = returns[i]->node();
        fail("output " + std::to_string(i) + " is input " + std::to_string(k) +
             " unchanged, and NNAPI cannot return a model input as an output (the device "
             "rejects such a model); return it outside the converted module, or compute "
             "the output from it");
      }
    }
    for (size_t k = 0; k < output_ids.size(); ++k) {
      if (output_ids[k] == id) {
        g.offending = returns[i]->node();
        fail("outputs " + std::to_string(k) + " and " + std::to_string(i) +
             " are the same tensor, and NNAPI cannot list one operand as two outputs (the "
             "device rejects such a model); return it once and copy it outside the "
             "converted module");
      }
    }
    output_ids.push_back(id);
  }
}

// Output `i` of the NNAPI model, and the template the converted module
// allocates it by.
OutputTemplate add_model_output(GraphLowering& g, const Value* returned, const OperandHandle& out,
                                size_t i) {
  if (!g.result.output_casts.count(static_cast<int>(i))) {
    check_output_dtype(returned, out.op, i, &g.offending);
  }
  g.model().add_output(out.id);
  g.result.out_mem_fmts.push_back(static_cast<int64_t>(out.op.dim_order));
  return OutputTemplate{out.id, static_cast<int32_t>(out.op.type), out.op.shape, out.op.scale,
                        out.op.zero_point};
}

// A result NNAPI holds with another shape (a 0-dim result as (1), a rank > 4
// one as a rank <= 4 buffer): the template has NNAPI's shape, and the module
// reshapes it back (output_reshapes).
void reshape_back(GraphLowering& g, const OperandHandle& out, size_t i, OutputTemplate* t) {
  const Operand& op = out.op;
  const Operand& real = g.cx.operand(out.id);
  const Shape nnapi_shape = fix_shape(real.shape, real.dim_order);
  if (!op.shape.empty() && nnapi_shape == fix_shape(op.shape, op.dim_order)) return;
  check(op.dim_order != DimOrder::ChannelsLast && real.dim_order != DimOrder::ChannelsLast &&
            std::count(op.shape.begin(), op.shape.end(), 0) <= 1,
        [&] {
          return "output " + std::to_string(i) + " of shape " + shape_str(op.shape) +
                 " is held by NNAPI as " + shape_str(nnapi_shape) +
                 ", and the converted module can reshape it back with one flexible size "
                 "at most; give fixed sizes in --input";
        });
  t->shape = real.shape.empty() ? Shape{1} : real.shape;
  // A flexible size (at most one) is what remains: -1 in the reshape.
  Shape back = op.shape;
  std::replace(back.begin(), back.end(), int64_t{0}, int64_t{-1});
  g.result.output_reshapes[static_cast<int>(i)] = back;
}

// --return-shape: the shape the converted module allocates output `i` with.
void apply_return_shape(GraphLowering& g, const OperandHandle& out, size_t i, OutputTemplate* t) {
  if (g.options.return_shapes.empty()) return;
  const std::vector<int64_t>& shape = g.options.return_shapes[i];
  if (shape.size() != out.op.shape.size()) {
    throw ConvertError(2, "--return-shape for output " + std::to_string(i) + " has " +
                              std::to_string(shape.size()) + " dims, but the output has " +
                              std::to_string(out.op.shape.size()));
  }
  t->shape = shape;
}

void add_model_outputs(GraphLowering& g) {
  const std::vector<const Value*> returns = returned_values(g);
  const std::vector<OperandHandle> outs = cast_outputs(g, returns);
  check_distinct_outputs(g, returns, outs);
  for (size_t i = 0; i < returns.size(); ++i) {
    OutputTemplate t = add_model_output(g, returns[i], outs[i], i);
    reshape_back(g, outs[i], i, &t);
    apply_return_shape(g, outs[i], i, &t);
    g.result.templates.push_back(std::move(t));
  }
}

// ---- Stage 3b: --float16, the finished model made TENSOR_FLOAT16
// (core/float16.h).

void make_float16(GraphLowering& g, LoweringTrace* trace) {
  if (!g.options.float16 && !g.options.float16_io) return;
  g.op_nodes.resize(g.model().operation_count(), g.current);
  convert_to_float16(g.model(), g.op_nodes, g.result.templates, g.options, g.graph.return_node());
  g.result.float16_io = g.options.float16_io;
  if (trace) trace->operations = g.op_nodes;
}

// ---- Stage 4: the serialized model, and the validator's verdict on it.

void serialize_model(GraphLowering& g) {
  ModelBuilder& m = g.model();
  Conversion& result = g.result;
  SerializedModel ser;
  try {
    ser = m.serialize();
  } catch (const std::exception& e) {
    throw ConvertError(1, "model '" + g.path + "' could not be serialized: " + e.what());
  }
  result.ser_model = std::move(ser.words);
  result.shape_lines = g.cx.shape_lines();
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
}

}  // namespace

Conversion lower_graph(torch::jit::Graph& graph, const c10::IValue& self,
                       const ConvertOptions& options, LoweringTrace* trace, const Node** failed) {
  auto t0 = std::chrono::steady_clock::now();
  if (trace && !failed) failed = &trace->failed;
  GraphLowering g(graph, self, options);
  check_graph_inputs(g);
  g.profile.step("input checks");
  prepare_lowering(g);
  add_model_inputs(g);
  g.profile.step("model inputs");
  try {
    lower_nodes(g, trace);
    add_model_outputs(g);
  } catch (const LoweringError& e) {
    if (failed) *failed = g.offending ? g.offending : g.current;
    throw node_error(g.path, graph.return_node(), g.current, e.what());
  } catch (const c10::Error& e) {
    if (failed) *failed = g.offending ? g.offending : g.current;
    throw node_error(g.path, graph.return_node(), g.current, e.what_without_backtrace());
  }
  make_float16(g, trace);
  // The operations the outputs needed came from the model's return.
  g.op_nodes.resize(g.model().operation_count(), g.current);
  g.result.times.lower_ms = ms_since(t0);
  g.profile.report(g.path, "model outputs");

  t0 = std::chrono::steady_clock::now();
  serialize_model(g);
  g.result.times.serialize_ms = ms_since(t0);

  t0 = std::chrono::steady_clock::now();
  validate_conversion(g.result, g.model().patched_operands(), g.op_nodes, options, failed,
                      model_runs(graph, self));
  g.result.times.validate_ms = ms_since(t0);

  // Each operation's source line. The first one asked makes LibTorch read the
  // file's debug records, which it defers from the load (about 7 ms for a
  // traced mobilenet_v2): counted with the load, and read last, as its
  // allocations slow the two steps above by half (docs/performance.md).
  t0 = std::chrono::steady_clock::now();
  g.result.origins = operation_origins(g.op_nodes);
  g.result.times.load_ms = ms_since(t0);
  return std::move(g.result);
}

}  // namespace nnapi_convert

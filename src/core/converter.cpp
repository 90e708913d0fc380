// The driver: model inputs -> lowering table -> serialized NNAPI model.
#include "nnapi_convert/converter.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/api/module.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "core/diagnostics.h"
#include "core/fallback.h"
#include "core/folding.h"
#include "core/loader.h"
#include "core/lower_profile.h"
#include "core/state.h"
#include "core/trace.h"
#include "core/validation.h"
#include "lower/dispatch.h"
#include "lower/emit.h"
#include "lower/fusion.h"
#include "lower/logical.h"
#include "lower/registry.h"
#include "nnapi_convert/check.h"
#include "quantize/quantize.h"
#include "util/timing.h"

namespace nnapi_convert {

Conversion lower_module(const torch::jit::Module& module, const ConvertOptions& options,
                        LoweringTrace* trace = nullptr);

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
             "dims for views, permutes, selects, slices, cat and elementwise operations of "
             "rank > 4 (with one flexible size at most, among the first three dims), but not "
             "here: reshape the tensor to rank 4 or less before this operation (or give "
             "fixed sizes in --input)";
    });
  }
}

// One --input spec per model input (usage: exit 2).
void check_input_count(const torch::jit::Graph& graph, const ConvertOptions& options) {
  const size_t n_args = graph.inputs().size() - 1;
  if (options.inputs.size() != n_args) {
    throw ConvertError(2, "model '" + options.model_path + "' takes " + std::to_string(n_args) +
                              " input(s), but " + std::to_string(options.inputs.size()) +
                              " --input spec(s) were given; give one --input per model input, "
                              "in order");
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

Conversion convert(const ConvertOptions& options) {
  PhaseTimes times;
  LoadedEntry entry;
  torch::jit::Module module = load_frozen_model(options, &times.load_ms, &times.freeze_ms, &entry);
  std::shared_ptr<const QuantizedModel> quantized;
  if (options.quantize.enabled) {
    refuse_state_options(module, options);
    // Before the calibration samples are read against the specs.
    check_input_count(*module.get_method("forward").graph(), options);
    quantized = quantize_module(module, options);
  }
  Conversion result;
  try {
    result = lower_module(module, quantized ? lowering_options(*quantized, options) : options);
  } catch (const ConvertError& e) {
    // Published files wrap the network in logic NNAPI cannot hold: point at
    // the network.
    if (e.unsupported().empty() || entry.submodules.empty() || !options.method.empty()) throw;
    std::string names;
    for (const std::string& n : entry.submodules) names += (names.empty() ? "" : ", ") + n;
    ConvertError hinted(e.exit_code(),
                        std::string(e.what()) +
                            " If the network NNAPI should run is a submodule (the model has " +
                            names +
                            "), convert it alone with --submodule PATH (and --method NAME "
                            "for another method than its forward).",
                        e.node(), e.location());
    hinted.set_unsupported(e.unsupported());
    throw hinted;
  }
  result.quantized = quantized;
  result.arguments = std::move(entry.arguments);
  result.notes = std::move(entry.notes);
  result.times.load_ms = times.load_ms;
  result.times.freeze_ms = times.freeze_ms;
  return result;
}

CheckReport check_model(const ConvertOptions& options) {
  CheckReport r;
  r.model = options.model_path;
  torch::jit::Module module = load_frozen_model(options, &r.times.load_ms, &r.times.freeze_ms);
  std::shared_ptr<torch::jit::Graph> graph = module.get_method("forward").graph();
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
    r.state = c.state;
    r.times.lower_ms = c.times.lower_ms;
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
  return r;
}

Conversion lower_module(const torch::jit::Module& module, const ConvertOptions& options,
                        LoweringTrace* trace) {
  refuse_state_options(module, options);
  if (options.cpu_fallback && !trace) return lower_with_fallback(module, options);
  int user_retval_count = -1;
  torch::jit::Module m = module;  // the same module: extract_state rewrites its forward
  std::vector<StateAttribute> state = extract_state(m, options.model_path, &user_retval_count);
  if (state.empty()) {
    return lower_graph(*module.get_method("forward").graph(), module._ivalue(), options, trace);
  }
  Conversion c = lower_graph(*module.get_method("forward").graph(), module._ivalue(),
                             with_state_inputs(options, state), trace);
  finish_state_conversion(c, std::move(state), user_retval_count, options.model_path);
  return c;
}

Conversion lower_graph(torch::jit::Graph& graph_ref, const c10::IValue& self,
                       const ConvertOptions& options, LoweringTrace* trace, const Node** failed) {
  Conversion result;
  auto t0 = std::chrono::steady_clock::now();
  LowerProfile profile;
  torch::jit::Graph* graph = &graph_ref;
  const std::string& path = options.model_path;

  auto graph_inputs = graph->inputs();
  size_t n_args = graph_inputs.size() - 1;
  check_input_count(*graph, options);
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
  profile.step("input checks");
  lowering_table();
  profile.step("lowering table");
  check_supported(*graph, path);
  profile.step("check_supported");

  LoweringContext cx;
  FusionPlan plan(*graph, lowering_table(), options.fuse_activations);
  profile.step("fusion plan");
  cx.set_fusion_plan(&plan);
  cx.set_min_android_api(options.min_android_api);
  cx.set_nhwc(options.nhwc);
  ModelBuilder& m = cx.model();
  m.add_bool_scalar(false);
  m.add_bool_scalar(true);
  cx.add_constant(graph_inputs[0], graph_inputs[0]->type(), self);
  std::vector<int32_t> input_ids;
  for (size_t i = 0; i < n_args; ++i) {
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
        throw ConvertError(1, "model '" + path + "': input " + std::to_string(i) + " (spec '" +
                                  options.inputs[i].text + "') has " +
                                  std::to_string(o.shape.size()) +
                                  " dims, which NNAPI takes merged to 4 with a flexible batch "
                                  "(dim 0) at most; give every other size in --input");
      }
      const int32_t id = cx.add_input(static_cast<int>(i), graph_inputs[i + 1], o.with_shape(dims));
      cx.rebind(graph_inputs[i + 1], id, o);
      input_ids.push_back(id);
      result.inp_mem_fmts.push_back(static_cast<int64_t>(DimOrder::Contiguous));
      continue;
    }
    int32_t id = cx.add_input(static_cast<int>(i), graph_inputs[i + 1], o);
    if (options.inputs[i].dtype == InputDType::Bool)
      cx.set_torch_dtype(graph_inputs[i + 1], at::kBool);
    input_ids.push_back(id);
    result.inp_mem_fmts.push_back(static_cast<int64_t>(cx.operand(id).dim_order));
  }
  profile.step("model inputs");
  const Node* current = nullptr;
  const Node* offending = nullptr;  // the node of a returned value that is no operand
  // Per NNAPI operation: the node it was lowered from (for the validator's
  // messages, and the trace).
  std::vector<const Node*> op_nodes;
  Folder folder;
  // One node: folded, shape arithmetic, part of a group, or its kind's
  // lowering. The nodes of an `if` branch taken during conversion come here
  // too (control.cpp).
  const auto lower_node = [&](const Node* node) {
    op_nodes.resize(m.operation_count(), current);
    current = node;
    if (folder.try_fold(cx, node) || lower_symbolic_arithmetic(cx, node)) return;
    if (plan.claimed(node)) return;  // lowered with its group, at the group's last node
    if (plan.folded_activation(node)) {
      cx.alias(node->output(), node->input(0));  // computed by the producer's fused activation
      return;
    }
    // The handler for the node's input form (lower/dispatch.h).
    const Dispatch lowering = dispatch(cx, node, plan.group_ending_at(node));
    check_quantized_inputs(cx, node, input_ids);
    folder.note_lowered(cx, node);
    const size_t operands_before = m.operand_count();
    lowering.lower(cx);
    check_operand_ranks(m, operands_before);
    if (const auto& over = m.first_over_limit()) fail_above_target(*over, options);
  };
  const auto lower_one = [&](const Node* node) {
    profile.begin_node();
    lower_node(node);
    profile.end_node(node->kind());
  };
  cx.set_node_lowerer(lower_one);
  try {
    for (const Node* node : graph->nodes()) lower_one(node);
    op_nodes.resize(m.operation_count(), current);
    profile.step("nodes");
    if (trace) {
      trace->operations = op_nodes;
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
    // A bool result leaves the model as int32 0/1 (PyTorch's NNAPI binding
    // takes no bool tensors; a TENSOR_BOOL8 one is made so by SELECT), an
    // int64 one (indices) as the int32 NNAPI computes; the converted module
    // casts them back.
    std::vector<Tensor> outs;
    for (size_t i = 0; i < returns.size(); ++i) {
      if (!cx.has_operand(returns[i])) offending = returns[i]->node();  // a constant here
      unfold_video_value(cx, returns[i]);
      Tensor t = cx.get_operand(returns[i]);
      const auto type = returns[i]->type()->cast<c10::TensorType>();
      auto dtype = type ? type->scalarType() : c10::nullopt;
      if (auto held = cx.torch_dtype_of(returns[i]); !dtype && held) dtype = *held;
      if (t.op.type == nnapi::OperandType::TensorBool8) {
        offending = returns[i]->node();
        t = int01_of(cx, t);
        offending = nullptr;
        dtype = at::kBool;
      }
      if (t.op.type == nnapi::OperandType::TensorInt32 &&
          (dtype == at::kBool || dtype == at::kLong)) {
        result.output_casts[static_cast<int>(i)] = dtype == at::kBool ? "bool" : "int64";
      }
      outs.push_back(t);
    }
    std::vector<int32_t> output_ids;
    for (size_t i = 0; i < returns.size(); ++i) {
      int32_t id = outs[i].id;
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
      auto [id, op] = outs[i];
      if (!result.output_casts.count(static_cast<int>(i))) {
        check_output_dtype(returns[i], op, i, &offending);
      }
      m.add_output(id);
      result.out_mem_fmts.push_back(static_cast<int64_t>(op.dim_order));
      OutputTemplate t{id, static_cast<int32_t>(op.type), op.shape, op.scale, op.zero_point};
      // A result NNAPI holds with another shape (a 0-dim result as (1), a
      // rank > 4 one as a rank <= 4 buffer): the module reshapes it.
      const Operand& real = cx.operand(id);
      const Shape nnapi_shape = fix_shape(real.shape, real.dim_order);
      if (op.shape.empty() || nnapi_shape != fix_shape(op.shape, op.dim_order)) {
        check(op.dim_order != DimOrder::ChannelsLast && real.dim_order != DimOrder::ChannelsLast &&
                  std::count(op.shape.begin(), op.shape.end(), 0) <= 1,
              [&] {
                return "output " + std::to_string(i) + " of shape " + shape_str(op.shape) +
                       " is held by NNAPI as " + shape_str(nnapi_shape) +
                       ", and the converted module can reshape it back with one flexible size "
                       "at most; give fixed sizes in --input";
              });
        t.shape = real.shape.empty() ? Shape{1} : real.shape;
        // A flexible size (at most one) is what remains: -1 in the reshape.
        Shape back = op.shape;
        std::replace(back.begin(), back.end(), int64_t{0}, int64_t{-1});
        result.output_reshapes[static_cast<int>(i)] = back;
      }
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
  profile.report(path, "model outputs");

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

  t0 = std::chrono::steady_clock::now();
  validate_conversion(result, m.patched_operands(), op_nodes, options, failed,
                      model_runs(graph_ref, self));
  result.times.validate_ms = ms_since(t0);
  return result;
}

}  // namespace nnapi_convert

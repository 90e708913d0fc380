// State shared by all lowerings while one graph is converted: the NNAPI
// model under construction, the operand record of each JIT value, the
// constant values, tensor sequences and the shape-compute script.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/ir/ir.h>

#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lower/operand.h"
#include "lower/refusal.h"
#include "serialize/model_builder.h"

namespace nnapi_convert {

using torch::jit::Node;
using torch::jit::Value;

class FusionPlan;

std::string value_name(const Value* v);

struct Constant {
  c10::TypePtr type;
  c10::IValue value;
};

class LoweringContext {
 public:
  ModelBuilder& model() { return model_; }
  const Operand& operand(int32_t id) const { return operands_.at(id); }

  // --- tensor operands -------------------------------------------------------
  int32_t add_tensor_operand(const Value* v, const Operand& o);
  int32_t add_anonymous_operand(const Operand& o);
  bool has_operand(const Value* v) const { return operand_of_.count(v) != 0; }
  // The operand already produced for `v`.
  OperandHandle get_operand(const Value* v) const;
  // Same, refusing operands with load-time flexible sizes.
  OperandHandle get_operand_fixed_size(const Value* v) const;
  // `v`'s operand, or a weight operand made from its constant tensor.
  OperandHandle get_operand_or_constant(const Value* v, DimOrder order = DimOrder::Contiguous);
  // A weight operand made from `v`'s constant tensor.
  OperandHandle get_weight_operand(const Value* v);
  // The output operand of a lowering: record `rec` with PyTorch shape `dims`
  // (e.g. from a formula of dims.h), bound to `v`, or anonymous when `v` is
  // null. A fixed dim is its number in the NNAPI dims; a load-time one is 0
  // there, and gets the shape-compute line `s_<id>_<d> = <text>`, in dim
  // order, each after `asserts[d]` (an `assert` line) when that is given.
  OperandHandle add_output(const Value* v, const Operand& rec, const std::vector<SymInt>& dims,
                           const std::vector<std::string>& asserts = {});
  // `v` names the same operand as `source` (identity ops; its torch dtype
  // below goes with it).
  void alias(const Value* v, const Value* source);
  // `v` names what `source` names during conversion: a constant, load-time
  // ints, a tensor (alias) or a sequence (an `if` branch's result,
  // prim::unchecked_cast). False when `source` has none of them.
  bool forward_value(const Value* v, const Value* source);
  // The dtype PyTorch gives `v` where NNAPI holds it in another type (a bool
  // as int32 0/1, int64 indices as int32), recorded by the bool model inputs
  // and the lowerings that make such values (the graph of a loaded model
  // carries no dtypes); nullopt when none was recorded.
  void set_torch_dtype(const Value* v, c10::ScalarType t) { torch_dtypes_[v] = t; }
  std::optional<c10::ScalarType> torch_dtype_of(const Value* v) const {
    auto it = torch_dtypes_.find(v);
    if (it == torch_dtypes_.end()) return std::nullopt;
    return it->second;
  }
  // `v` names operand `id` with a different record: the same NNAPI buffer seen
  // with another PyTorch shape or dim order (e.g. NHWC data read as a
  // contiguous (N, H, W, C) tensor after a permute).
  void reinterpret(const Value* v, int32_t id, const Operand& o);
  // Same for a `v` already bound: it now names operand `id` with record `o`
  // (a model input of rank > 4 that NNAPI takes as rank 4, converter.cpp).
  void rebind(const Value* v, int32_t id, const Operand& o) {
    operand_of_[v] = id;
    reinterpreted_[v] = o;
  }

  // Multi-output operations (SPLIT) whose outputs a list value stands for.
  void add_split_outputs(const Value* list, std::vector<int32_t> ids) {
    split_outputs_[list] = std::move(ids);
  }
  const std::vector<int32_t>& split_outputs(const Value* list) const {
    auto it = split_outputs_.find(list);
    if (it == split_outputs_.end()) fail("value " + value_name(list) + " is not a split result");
    return it->second;
  }

  // --- target (--min-android-api) ---------------------------------------------
  void set_min_android_api(int api) {
    feature_level_limit_ = nnapi::feature_level_of_android_api(api);
    model_.set_feature_level_limit(feature_level_limit_);
  }
  // What NNAPI takes at the target feature level, asked of the validator
  // (nnapi_validate::accepts and level_with_inputs: NeuralNetworks.h's rules
  // are stated there only). Where the answer is no, a lowering decomposes or
  // leaves the operation for the driver to refuse with the node's name (see
  // ModelBuilder::first_over_limit).
  // Whether `op` takes a tensor of `type` as its input 0.
  bool takes(nnapi::Op op, nnapi::OperandType type) const;
  // Whether `op` may be emitted with `n_inputs` inputs.
  bool has_operation(nnapi::Op op, int n_inputs) const;
  // The --min-android-api from which `op` takes a tensor of `type` as its
  // input 0 (for messages); 0 when no Android version's NNAPI does.
  int android_api_taking(nnapi::Op op, nnapi::OperandType type) const;

  // --- layout of video tensors (--nhwc): NNAPI frames in NHWC, else NCHW ----
  void set_nhwc(bool nhwc) { nhwc_ = nhwc; }
  bool nhwc() const { return nhwc_; }

  // --- activation fusion (--fuse-activations) --------------------------------
  // Where folded activations are recorded (the driver's plan, fusion.h).
  void set_fusion_plan(FusionPlan* plan) { plan_ = plan; }
  // With fusion on, when the only use of `v` is a ReLU, ReLU6 or hardtanh with
  // bounds (0, 6) or (-1, 1): marks that node as folded into `v`'s producer
  // and returns its NNAPI fused-activation code; otherwise Fuse::None. The
  // caller passes the code to the operation that produces `v`.
  nnapi::Fuse fuse_following_activation(const Value* v);

  Operand tensor_to_operand(const at::Tensor& t, DimOrder order) const;
  int32_t add_weight(const at::Tensor& t, DimOrder order = DimOrder::UnknownConstant);
  int32_t add_input(int arg_index, const Value* v, const Operand& o);

  // --- constants and sequences ----------------------------------------------
  void add_constant(const Value* v, c10::TypePtr type, c10::IValue value);
  bool has_constant(const Value* v) const { return constants_.count(v) != 0; }
  const Constant& constant(const Value* v) const;
  // The constant, checking its type kind (as the reference does).
  const Constant& constant(const Value* v, c10::TypeKind kind) const;
  int64_t constant_int(const Value* v) const;
  double constant_float(const Value* v) const;
  // A Number argument: a float, or an int (or bool) where PyTorch takes a
  // Scalar, e.g. hardtanh(x, 0, 6).
  double constant_number(const Value* v) const;
  bool constant_bool(const Value* v) const;
  at::Tensor constant_tensor(const Value* v) const;
  std::vector<int64_t> constant_int_list(const Value* v) const;
  bool constant_is_none(const Value* v) const;

  void add_sequence(const Value* v, std::vector<const Value*> values);
  const std::vector<const Value*>& sequence(const Value* v) const;
  bool has_sequence(const Value* v) const { return sequences_.count(v) != 0; }

  // --- load-time ints (shape arithmetic over flexible sizes, symbolic.cpp) ----
  // `v` is an int, a 0-dim int tensor or an int list with at least one item
  // known only at load time.
  void add_symbolic(const Value* v, std::vector<SymInt> items) { symbolic_[v] = std::move(items); }
  // An int result: a constant when `i` is a number, else a load-time int.
  void add_int(const Value* v, const SymInt& i);
  bool has_symbolic(const Value* v) const { return symbolic_.count(v) != 0; }
  // An int (or 0-dim int tensor) input, constant or symbolic.
  SymInt sym_int(const Value* v) const;
  // An int list input, constant or symbolic.
  std::vector<SymInt> sym_int_list(const Value* v) const;

  // --- nested blocks (control.cpp) -------------------------------------------
  // How the driver lowers one node (folding, shape arithmetic, the table):
  // the nodes of an `if` branch taken during conversion go through it too.
  void set_node_lowerer(std::function<void(const Node*)> f) { node_lowerer_ = std::move(f); }
  void lower_nested(const Node* n) const {
    if (!node_lowerer_) fail("nested blocks are lowered only inside a conversion");
    node_lowerer_(n);
  }

  // --- shape-compute script -------------------------------------------------
  void compute_operand_shape(int32_t id, int64_t dim, const std::string& expr);
  // A load-time size's text with forwarded names followed to their source
  // ("s_7_0 = s_3_0" makes "s_7_0" read "s_3_0"): equal results mean equal
  // sizes when the model runs.
  std::string resolve_flex(std::string expr) const;
  void forward_operand_shape(int32_t out_id, int64_t out_dim, int32_t in_id, int64_t in_dim);
  void add_shape_line(std::string line) { shape_lines_.push_back(std::move(line)); }
  const std::vector<std::string>& shape_lines() const { return shape_lines_; }

 private:
  ModelBuilder model_;
  std::vector<Operand> operands_;  // parallel to the model's operands
  std::unordered_map<const Value*, int32_t> operand_of_;
  std::unordered_map<const Value*, Operand> reinterpreted_;
  std::unordered_map<const Value*, c10::ScalarType> torch_dtypes_;
  FusionPlan* plan_ = nullptr;
  int feature_level_limit_ = nnapi::kMaxFeatureLevel;
  bool nhwc_ = false;
  std::unordered_map<const Value*, std::vector<int32_t>> split_outputs_;
  std::unordered_map<const Value*, Constant> constants_;
  std::unordered_map<const Value*, std::vector<const Value*>> sequences_;
  std::unordered_map<const Value*, std::vector<SymInt>> symbolic_;
  std::vector<std::string> shape_lines_;
  std::unordered_map<std::string, std::string> flex_defs_;  // s_<id>_<d> -> its text
  std::function<void(const Node*)> node_lowerer_;

  int32_t push_operand(const Operand& o, const at::Tensor* weight = nullptr);
};

std::string type_kind_name(c10::TypeKind kind);

}  // namespace nnapi_convert

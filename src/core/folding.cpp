// Constant folding during conversion.
#include "core/folding.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <algorithm>
#include <optional>

#include "lower/constant_value.h"
#include "lower/kind_set.h"
#include "lower/refusal.h"
#include "lower/registry.h"
#include "nnapi_convert/check_command.h"

namespace nnapi_convert {

// Scalar and shape arithmetic that traced models carry (x.size(0) // 2, ...),
// and the conditions and messages of scripted models' checks (`not`, `in`,
// `is None`, f-strings). With fixed input sizes every input is a constant, so
// it runs once here. prim::max and prim::min: max(pad, 0) of scripted "same"
// padding.
const KindSet& foldable_kinds() {
  static const KindSet kinds({
      c10::prim::NumToTensor,   c10::aten::Int,
      c10::aten::Float,         c10::aten::ScalarImplicit,
      c10::aten::floor_divide,  c10::aten::floordiv,
      c10::aten::div,           c10::aten::mul,
      c10::aten::add,           c10::aten::sub,
      c10::aten::remainder,     c10::aten::neg,
      c10::aten::__getitem__,   c10::aten::len,
      c10::prim::ListUnpack,    c10::prim::TupleUnpack,
      c10::prim::TupleIndex,    c10::aten::size,
      c10::aten::floor,         c10::aten::ceil,
      c10::prim::Uninitialized, c10::aten::__not__,
      c10::aten::__contains__,  c10::aten::__is__,
      c10::aten::__isnot__,     c10::aten::format,
      c10::aten::list,          c10::prim::max,
      c10::prim::min,
  });
  return kinds;
}

// Tensor operations that run during conversion when their inputs are
// constant: the kinds whose spec says so (KindSpec::folds), lowered as well
// (views, comparisons, casts of constant tensors) or folded only
// (lower/folded.cpp).
const KindSet& tensor_foldable_kinds() {
  static const KindSet kinds = [] {
    std::vector<c10::Symbol> folded;
    for (const KindSpec* spec : lowering_table().specs()) {
      if (spec->folds) folded.push_back(c10::Symbol::fromQualString(spec->kind));
    }
    return KindSet(folded);
  }();
  return kinds;
}

// The XNNPACK context objects prepacked::*_clamp_run reads (lower/prepacked.cpp),
// built from constant weights: torch.jit.freeze keeps these operations in the
// graph (only optimize_for_mobile's own pass folds them into constants).
const KindSet& prepack_foldable_kinds() {
  static const KindSet kinds({
      c10::Symbol::fromQualString("prepacked::conv2d_clamp_prepack"),
      c10::Symbol::fromQualString("prepacked::conv2d_transpose_clamp_prepack"),
      c10::Symbol::fromQualString("prepacked::linear_clamp_prepack"),
  });
  return kinds;
}

bool is_foldable(c10::Symbol kind) {
  return foldable_kinds().count(kind) != 0 || tensor_foldable_kinds().count(kind) != 0 ||
         prepack_foldable_kinds().count(kind) != 0;
}

bool handled_kind(c10::Symbol kind) { return lowering_table().lowers(kind) || is_foldable(kind); }

std::string unsupported_node_reason(const Node* node) {
  // A node of constants alone is folded, whatever its arguments.
  const auto inputs = node->inputs();
  const bool constant = std::all_of(inputs.begin(), inputs.end(), [](const torch::jit::Value* v) {
    return v->node()->kind() == c10::prim::Constant;
  });
  if (constant || !lowering_table().lowers(node->kind())) return "";
  return lowering_table().unsupported_because(node);
}

bool handled_node(const Node* node) {
  return handled_kind(node->kind()) && unsupported_node_reason(node).empty();
}

namespace {

// The in-place operations among the foldable kinds (fill_, copy_, ...): they
// write their first input. Python's dunder methods (aten::__getitem__) write
// nothing.
bool writes_input(c10::Symbol kind) {
  const std::string name = kind.toUnqualString();
  return !name.empty() && name.back() == '_' && name.rfind("__", 0) != 0;
}

// Runs `node` on its inputs in `stack`, leaving its outputs there. LibTorch's
// interpreter unpacks lists and tuples itself (no operator to look up), so
// those are done here.
void run_node(const Node* node, torch::jit::Stack& stack) {
  const c10::Symbol kind = node->kind();
  if (kind == c10::prim::Uninitialized) {  // the value a raising branch "returns"
    stack.emplace_back();
    return;
  }
  if (kind == c10::prim::ListUnpack || kind == c10::prim::TupleUnpack) {
    const c10::IValue packed = stack.at(0);
    stack.clear();
    if (packed.isList()) {
      for (const c10::IValue& item : packed.toListRef()) stack.push_back(item);
    } else {
      for (const c10::IValue& item : packed.toTupleRef().elements()) stack.push_back(item);
    }
    check(stack.size() == node->outputs().size(),
          "unpacks " + std::to_string(stack.size()) + " values into " +
              std::to_string(node->outputs().size()) + " names");
    return;
  }
  run_operator(node, stack);
}

// Whether the first input only gives the dtype (new_*) or dtype and shape (*_like).
bool reads_only_dtype(c10::Symbol kind) {
  const std::string name = kind.toUnqualString();
  return name.rfind("new_", 0) == 0 || (name.size() > 5 && name.substr(name.size() - 5) == "_like");
}

const c10::StorageImpl* storage_of(const c10::IValue& v) {
  return v.isTensor() ? v.toTensor().storage().unsafeGetStorageImpl() : nullptr;
}

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

// A number, a 0-dim tensor (what traced size arithmetic computes with:
// prim::NumToTensor of x.size(2), then div, ceil, clamp, ... of it), or a
// tensor that folding made (`made`: the model built it from constants, as
// Emformer's lengths and attention masks; not a weight).
bool is_folded_value(const c10::IValue& v, const std::set<const c10::StorageImpl*>& made) {
  if (v.isTensor()) return v.toTensor().dim() == 0 || made.count(storage_of(v)) != 0;
  return v.isInt() || v.isDouble() || v.isBool() || v.isNone() || v.isString();
}

// Size arithmetic traced as tensor operations, and what a model computes
// from tensors it builds from its sizes: a node of a lowered kind
// (aten::clamp, aten::ceil, aten::sub, aten::max, ...) whose inputs are all
// constant numbers, 0-dim tensors or tensors folding made, as timm's
// get_same_padding computes torch.clamp(((x / s).ceil() - 1) * s + (k - 1) *
// d + 1 - x, min=0) on a traced size. In-place writes are left to the kinds
// that fold them.
bool folds_as_size_arithmetic(const LoweringContext& cx, const Node* node,
                              const std::set<const c10::StorageImpl*>& made) {
  // A node without outputs (prim::RaiseException) is control, not arithmetic.
  if (writes_input(node->kind()) || !node->blocks().empty() || node->outputs().empty() ||
      !node->maybeSchema() || !lowering_table().lowers(node->kind())) {
    return false;
  }
  for (const Value* in : node->inputs()) {
    if (!cx.has_constant(in) || !is_folded_value(cx.constant(in).value, made)) return false;
  }
  return true;
}

}  // namespace

bool Folder::try_fold(LoweringContext& cx, const Node* node) {
  if (!is_foldable(node->kind()) && !folds_as_size_arithmetic(cx, node, made_)) return false;
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
    check(std::find(read_.begin(), read_.end(), written) == read_.end(),
          "this in-place operation writes into a tensor that an NNAPI operation has already "
          "read as a constant; build the tensor completely before the model uses it");
  }
  std::vector<const c10::StorageImpl*> inputs;
  for (const c10::IValue& v : stack) inputs.push_back(storage_of(v));
  run_node(node, stack);
  check(stack.size() == node->outputs().size(), "constant folding gave the wrong output count");
  for (size_t i = 0; i < stack.size(); ++i) {
    const c10::StorageImpl* s = storage_of(stack[i]);
    if (s && std::find(inputs.begin(), inputs.end(), s) == inputs.end()) made_.insert(s);
    cx.add_constant(node->output(i), node->output(i)->type(), stack[i]);
  }
  return true;
}

namespace {

// An uninitialized tensor of the operand's dtype and (fixed) shape, or None
// when a size is flexible or the operand is held in another form (video
// frames).
std::optional<at::Tensor> empty_stand_in(const Operand& o) {
  if (is_frames(o.dim_order)) return std::nullopt;
  for (int64_t d : o.shape) {
    if (d <= 0) return std::nullopt;
  }
  switch (o.type) {
    case nnapi::OperandType::TensorFloat32:
      return at::empty(o.shape, at::kFloat);
    case nnapi::OperandType::TensorInt32:
      return at::empty(o.shape, at::kInt);
    case nnapi::OperandType::TensorQuant8Asymm:
      return at::_empty_affine_quantized(o.shape, at::device(at::kCPU).dtype(at::kQUInt8), o.scale,
                                         o.zero_point);
    default:
      return std::nullopt;
  }
}

bool is_empty_tensor(const c10::IValue& v) { return v.isTensor() && v.toTensor().numel() == 0; }

// Whether `node` may give zero-sized results: it reads a constant zero-sized
// tensor, or it is a slice (x[T - 0:], x[s:s]).
bool may_be_empty(const LoweringContext& cx, const Node* node) {
  if (node->kind() == c10::aten::slice || node->kind() == c10::aten::narrow) return true;
  for (const Value* in : node->inputs()) {
    if (cx.has_constant(in) && is_empty_tensor(cx.constant(in).value)) return true;
  }
  return false;
}

}  // namespace

bool Folder::try_empty(LoweringContext& cx, const Node* node) {
  // cat drops its zero-sized pieces itself (lower/slicing.cpp).
  if (node->kind() == c10::aten::cat || writes_input(node->kind()) || !node->blocks().empty() ||
      !node->maybeSchema() || node->outputs().empty() || !may_be_empty(cx, node)) {
    return false;
  }
  torch::jit::Stack stack;
  for (const Value* in : node->inputs()) {
    if (cx.has_constant(in)) {
      stack.push_back(cx.constant(in).value);
      continue;
    }
    if (!cx.has_operand(in)) return false;
    std::optional<at::Tensor> t = empty_stand_in(cx.get_operand(in).op);
    if (!t) return false;
    stack.emplace_back(*t);
  }
  try {
    run_node(node, stack);
  } catch (const c10::Error&) {
    return false;  // the lowering says what is wrong with the node
  }
  if (stack.size() != node->outputs().size() ||
      !std::all_of(stack.begin(), stack.end(), is_empty_tensor)) {
    return false;
  }
  for (size_t i = 0; i < stack.size(); ++i) {
    cx.add_constant(node->output(i), node->output(i)->type(), stack[i]);
  }
  return true;
}

void Folder::note_lowered(const LoweringContext& cx, const Node* node) {
  for (const Value* in : node->inputs()) {
    if (!cx.has_constant(in)) continue;
    const c10::IValue& v = cx.constant(in).value;
    const auto note = [this](const c10::StorageImpl* s) {
      if (s) read_.push_back(s);
    };
    if (v.isTensor()) note(storage_of(v));
    if (v.isList()) {
      for (const c10::IValue& item : v.toListRef()) note(storage_of(item));
    }
  }
}

namespace {

// What list-ops says of a folded kind, where the generic note says too little.
std::string folded_note(c10::Symbol kind) {
  if (kind == c10::aten::__not__ || kind == c10::aten::__contains__) {
    return "computed during conversion when its inputs are constant (a condition of the "
           "model's checks); `in` over a size of a flexible dim is refused";
  }
  if (kind == c10::aten::format) {
    return "computed during conversion when its inputs are constant (the message of a raise "
           "in the branch taken, which the refusal quotes); in a branch not taken it is "
           "dropped, see prim::If";
  }
  return "";
}

}  // namespace

std::vector<SupportedKind> supported_node_kinds() {
  std::vector<SupportedKind> out;
  std::vector<SupportedKind> folded;
  for (const KindSpec* spec : lowering_table().specs()) {
    // A kind only folded is listed with the folded scalar kinds below.
    if (!spec->lower && foldable_kinds().count(c10::Symbol::fromQualString(spec->kind))) continue;
    (spec->lower ? out : folded)
        .push_back({spec->kind, spec->lower ? spec->family : "folded", spec->note});
  }
  for (c10::Symbol kind : foldable_kinds()) {
    if (lowering_table().lowers(kind)) continue;
    const std::string note = folded_note(kind);
    folded.push_back({kind.toQualString(), "folded",
                      !note.empty() ? note
                                    : "computed during conversion when its inputs are constant "
                                      "(shape arithmetic); on flexible sizes only where the "
                                      "shape-compute script can"});
  }
  for (c10::Symbol kind : prepack_foldable_kinds()) {
    folded.push_back({kind.toQualString(), "folded",
                      "an XNNPACK context object built during conversion from constant weights "
                      "(what a frozen model that was not passed through optimize_for_mobile "
                      "holds); prepacked::*_clamp_run reads it"});
  }
  std::sort(folded.begin(), folded.end(),
            [](const SupportedKind& a, const SupportedKind& b) { return a.kind < b.kind; });
  out.insert(out.end(), folded.begin(), folded.end());
  return out;
}

}  // namespace nnapi_convert

// Views: the identity ops (to, _cast_Float/_cast_Long, detach, dropout at
// inference), unsqueeze, squeeze, reshape/view (also over
// load-time sizes), flatten, and what is known of a tensor during conversion
// (size, dim, numel, dtype, is_floating_point, device).
#include "lower/view.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <string>

#include "lower/emit.h"
#include "lower/forms.h"
#include "lower/logical.h"
#include "lower/node_args.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {
namespace {

using nnapi::Op;

void lower_identity(LoweringContext& cx, const Node* node) {
  cx.alias(node->output(), node->input(0));
}

// x made dtype `wanted` (aten::to's dtype argument, aten::_cast_Float's and
// _cast_Long's own): a bool made float32 or integer is 0/1 (TENSOR_BOOL8 by
// SELECT, an int32 0/1 bool input by CAST or as it is); int64 indices
// (argmax, topk), int32 in NNAPI, made int32 or kept int64 as they are (the
// converted module returning the dtype asked for), made float32 by CAST (an
// index is below 2^24: exact); any other dtype change is refused.
void lower_dtype_change(LoweringContext& cx, const Node* node, c10::ScalarType wanted,
                        const char* what) {
  const OperandHandle x = cx.get_operand(node->input(0));
  if (is_bool_value(cx, node->input(0)) &&
      (wanted == at::kFloat || wanted == at::kInt || wanted == at::kLong)) {
    const auto type =
        wanted == at::kFloat ? nnapi::OperandType::TensorFloat32 : nnapi::OperandType::TensorInt32;
    if (wanted == at::kLong) cx.set_torch_dtype(node->output(), at::kLong);
    if (x.op.type == nnapi::OperandType::TensorBool8) {
      bool_as(cx, x, type, node->output());
    } else if (x.op.type != type) {
      Operand o = x.op;
      o.type = type;
      emit_unary_to(cx, Op::Cast, x, o, node->output());
    } else {
      lower_identity(cx, node);
    }
    return;
  }
  if (cx.torch_dtype_of(node->input(0)) == at::kLong) {
    if (wanted == at::kInt || wanted == at::kLong) {
      lower_identity(cx, node);
      cx.set_torch_dtype(node->output(), wanted);
      return;
    }
    if (wanted == at::kFloat && x.op.type == nnapi::OperandType::TensorInt32) {
      Operand o = x.op;
      o.type = nnapi::OperandType::TensorFloat32;
      emit_unary_to(cx, Op::Cast, x, o, node->output());
      return;
    }
  }
  check_dtype(wanted, x, what);
  lower_identity(cx, node);
}

// aten::to and aten::type_as: a device move is free; to a dtype (to.dtype,
// to.device, to.dtype_layout): lower_dtype_change; to another tensor's dtype
// (to.other, type_as) only when it is the dtype NNAPI computes x in already.
void lower_to(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  if (args.has("dtype") && !cx.constant_is_none(args.value("dtype"))) {
    lower_dtype_change(cx, node, static_cast<c10::ScalarType>(args.integer("dtype")), "aten::to");
    return;
  }
  if (args.has("other")) {
    const c10::ScalarType computed = torch_dtype(cx.get_operand(node->input(0)).op.type);
    const Value* other = args.value("other");
    const c10::ScalarType wanted = cx.has_operand(other)
                                       ? torch_dtype(cx.get_operand(other).op.type)
                                       : cx.constant_tensor(other).scalar_type();
    check(wanted == computed, [&] {
      return std::string("aten::to changes the dtype to ") + c10::toString(wanted) + " from " +
             c10::toString(computed) +
             ", which NNAPI conversion does not support; only device moves are free";
    });
  }
  lower_identity(cx, node);
}

void lower_unsqueeze(LoweringContext& cx, const Node* node) {
  OperandHandle x = cx.get_operand(node->input(0));
  int64_t dim = cx.constant_int(node->input(1));
  if (x.op.shape.empty()) {
    // A 0-dim tensor is NNAPI shape [1] already (fix_shape): the same buffer.
    check(dim == 0 || dim == -1, "unsqueeze dim out of range");
    cx.reinterpret(node->output(), x.id, x.op.with_shape({1}));
    return;
  }
  // A rank-5 result has no channels-last layout: make the data NCHW first.
  if (x.op.dim_order == DimOrder::ChannelsLast) x = emit_relayout(cx, x, DimOrder::Contiguous);
  const auto& [in_id, in] = x;
  check(in.dim_order == DimOrder::Contiguous,
        "unsqueeze of a tensor with this memory layout is not supported");
  int64_t rank = static_cast<int64_t>(in.shape.size());
  int64_t real_dim = dim >= 0 ? dim : dim + rank + 1;
  check(real_dim >= 0 && real_dim <= rank, "unsqueeze dim out of range");
  std::vector<SymInt> dims = sym_shape(x);
  dims.insert(dims.begin() + real_dim, SymInt{1, ""});
  int32_t dim_id = cx.model().add_int_scalar(static_cast<int32_t>(dim));
  const int32_t out_id = cx.add_output(node->output(), in, dims).id;
  add_by_roles(cx.model(), Op::ExpandDims,
               {{nnapi::Role::Input, in_id}, {nnapi::Role::Axis, dim_id}}, {out_id});
}

// squeeze(x, dim) and squeeze(x): SQUEEZE of the given dim (when it is 1,
// else x itself) or of every dim of size 1 (a RESHAPE to [1] when that is
// every dim). A flexible dim may or may not be 1
// when the model runs: squeezing it, or squeezing all dims of a tensor with
// one, is refused.
void lower_squeeze(LoweringContext& cx, const Node* node) {
  OperandHandle x = cx.get_operand(node->input(0));
  const int64_t rank = static_cast<int64_t>(x.op.shape.size());
  std::vector<int64_t> axes;
  if (node->inputs().size() > 1) {
    const int64_t dim = py_index(cx.constant_int(node->input(1)), rank);
    check(x.op.shape[dim] != 0,
          "squeeze of a flexible dimension: its size is known only when the model is loaded; "
          "give it a fixed size in --input");
    if (x.op.shape[dim] == 1) axes.push_back(dim);
  } else {
    for (int64_t d = 0; d < rank; ++d) {
      check(x.op.shape[d] != 0,
            "squeeze() of a tensor with a flexible dimension: give squeeze a dim, or fixed "
            "sizes in --input");
      if (x.op.shape[d] == 1) axes.push_back(d);
    }
  }
  if (axes.empty()) {
    lower_identity(cx, node);
    return;
  }
  // int32 numbers (bools move as float32, lower/moves.h): SQUEEZE takes no
  // TENSOR_INT32 at any feature level, RESHAPE from level 6, TRANSPOSE (a
  // channels-last layout made NCHW) at none (the validator's table).
  const nnapi::OperandType i32 = nnapi::OperandType::TensorInt32;
  const bool int32 = x.op.type == i32;
  const bool relaid = x.op.dim_order != DimOrder::Contiguous;
  check(!int32 || ((!relaid || cx.takes(Op::Transpose, i32)) && cx.takes(Op::Reshape, i32)), [&] {
    if (relaid)
      return int32_refusal("squeeze",
                           "it is held channels-last and NNAPI's TRANSPOSE, which makes it NCHW, "
                           "takes none");
    const int api = cx.android_api_taking(Op::Reshape, i32);
    return int32_refusal(
        "squeeze", api == 0 ? std::string("NNAPI's SQUEEZE and RESHAPE take none")
                            : "NNAPI's SQUEEZE takes none, RESHAPE takes one from feature level " +
                                  std::to_string(nnapi::feature_level_of_android_api(api)) +
                                  " (give --min-android-api " + std::to_string(api) +
                                  " if every device you ship to has it)");
  });
  // A result of lower rank has no channels-last layout: make the data NCHW first.
  if (x.op.dim_order == DimOrder::ChannelsLast) x = emit_relayout(cx, x, DimOrder::Contiguous);
  const auto& [in_id, in] = x;
  check(in.dim_order == DimOrder::Contiguous,
        "squeeze of a tensor with this memory layout is not supported");
  std::vector<SymInt> dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(axes.begin(), axes.end(), d) == axes.end())
      dims.push_back(sym_dim(in_id, in.shape, d));
  }
  if (int32 && !dims.empty()) {
    emit_reshape(cx, x, dims, node->output());
    return;
  }
  const int32_t out_id = cx.add_output(node->output(), in, dims).id;
  if (dims.empty()) {
    // Every dim squeezed: a 0-dim result, which NNAPI holds as shape [1]
    // (fix_shape). SQUEEZE would compute rank 0: a RESHAPE to [1] instead.
    const int32_t shape_id = cx.model().add_int_vector(Shape{1});
    add_reshape(cx.model(), in_id, shape_id, out_id);
    return;
  }
  const int32_t axes_id = cx.model().add_int_vector(axes);
  add_by_roles(cx.model(), Op::Squeeze, {{nnapi::Role::Input, in_id}, {nnapi::Role::Axes, axes_id}},
               {out_id});
}

// Reshape where the input or the target has load-time sizes.
void lower_flexible_reshape(LoweringContext& cx, const Node* node, OperandHandle in,
                            const std::vector<SymInt>& dims) {
  // PyTorch reshapes in NCHW element order: make the data NCHW first.
  in = emit_relayout(cx, in, DimOrder::Contiguous);
  emit_reshape(cx, in, view_dims(cx, in, dims), node->output());
}

// `node`'s first input reshaped to `target` (view, reshape, view_as, reshape_as).
void reshape_to(LoweringContext& cx, const Node* node, std::vector<SymInt> target) {
  OperandHandle x = cx.get_operand(node->input(0));
  const Shape& s = x.op.shape;
  const bool flexible =
      std::find(s.begin(), s.end(), 0) != s.end() ||
      std::any_of(target.begin(), target.end(), [](const SymInt& v) { return !v.is_constant(); });
  if (flexible) {
    lower_flexible_reshape(cx, node, x, std::move(target));
    return;
  }
  std::vector<int64_t> shape;
  for (const SymInt& v : target) shape.push_back(v.value);
  // The reference keeps NHWC data for a [X, -1] target; that is PyTorch's
  // element order only when C = 1 or H = W = 1.
  bool trivial = shape.size() == 2 && shape[1] == -1 && s.size() == 4 &&
                 (s[1] == 1 || (s[2] == 1 && s[3] == 1));
  if (x.op.dim_order == DimOrder::ChannelsLast && !trivial) {
    // PyTorch reshapes in NCHW element order: make the data NCHW first.
    x = emit_relayout(cx, x, DimOrder::Contiguous);
  }
  const auto& [in_id, in] = x;
  Shape out_shape;
  try {
    out_shape = at::scalar_tensor(0).expand(in.shape).reshape(shape).sizes().vec();
  } catch (const c10::Error& e) {
    fail("can't reshape " + shape_str(in.shape) + " to " + shape_str(shape) + ": " +
         e.what_without_backtrace());
  }
  if (in.type == nnapi::OperandType::TensorInt32 && !cx.takes(Op::Reshape, in.type)) {
    // RESHAPE of TENSOR_INT32 needs level 6: emit_reshape moves a bool's 0/1
    // values as float32 (other int32 data is refused there, naming the level).
    std::vector<SymInt> dims;
    for (int64_t d : out_shape) dims.push_back(SymInt{d, ""});
    emit_reshape(cx, x, dims, node->output());
    return;
  }
  Operand out = in.with_shape(out_shape);
  out.dim_order = DimOrder::Contiguous;
  // A 0-dim result is NNAPI shape [1] (fix_shape).
  int32_t shape_id = cx.model().add_int_vector(shape.empty() ? Shape{1} : shape);
  int32_t out_id = cx.add_tensor_operand(node->output(), out);
  add_reshape(cx.model(), in_id, shape_id, out_id);
}

void lower_reshape(LoweringContext& cx, const Node* node) {
  reshape_to(cx, node, cx.sym_int_list(node->input(1)));
}

// aten::view_as(x, other) and aten::reshape_as(x, other): x reshaped to
// other's sizes (a flexible one as the same load-time size).
void lower_reshape_as(LoweringContext& cx, const Node* node) {
  const auto [other_id, other] = cx.get_operand(node->input(1));
  std::vector<SymInt> target;
  for (int64_t d = 0; d < static_cast<int64_t>(other.shape.size()); ++d)
    target.push_back(sym_dim(other_id, other.shape, d));
  reshape_to(cx, node, std::move(target));
}

void lower_flatten(LoweringContext& cx, const Node* node) {
  OperandHandle x = cx.get_operand(node->input(0));
  int64_t start = cx.constant_int(node->input(1));
  int64_t end = cx.constant_int(node->input(2));
  const Shape& s = x.op.shape;
  int64_t rank = static_cast<int64_t>(s.size());
  bool trivial = rank == 4 && (s[1] == 1 || (s[2] == 1 && s[3] == 1));
  if (x.op.dim_order == DimOrder::ChannelsLast && !trivial) {
    // PyTorch flattens in NCHW element order: make the data NCHW first.
    x = emit_relayout(cx, x, DimOrder::Contiguous);
  }
  const auto& [in_id, in] = x;
  check(in.dim_order == DimOrder::Contiguous || trivial,
        "flatten of an NHWC tensor is only supported when C = 1 or H = W = 1");
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  check(start >= 0 && end < rank && start <= end, "flatten dims out of range");
  int64_t product = 1;
  for (int64_t d = start; d <= end; ++d) {
    check(s[d] != 0, "flattening flexible dims is not supported");
    product *= s[d];
  }
  int flexible = 0;
  for (int64_t d = 0; d < rank; ++d) flexible += (d < start || d > end) && s[d] == 0;
  check(flexible <= 1, "only 1 dim can be flexible when flattening");
  // The kept dims (the one flexible dim among them forwarded) around the product.
  std::vector<SymInt> dims;
  for (int64_t d = 0; d < start; ++d) dims.push_back(sym_dim(in_id, s, d));
  dims.push_back({product, ""});
  for (int64_t d = end + 1; d < rank; ++d) dims.push_back(sym_dim(in_id, s, d));
  Operand out = in;
  out.dim_order = DimOrder::Contiguous;
  const auto [out_id, out_op] = cx.add_output(node->output(), out, dims);
  std::vector<int64_t> target;
  for (int64_t size : out_op.shape) target.push_back(size != 0 ? size : -1);
  int32_t target_id = cx.model().add_int_vector(target);
  add_reshape(cx.model(), in_id, target_id, out_id);
}

// aten::dropout and its variants (input, p, train): the identity at
// inference (train false) and for p = 0, as PyTorch's kernels return the
// input then. In training with p > 0 the result is random: refused.
void lower_dropout(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 3,
        [&] { return std::string("malformed ") + node->kind().toQualString(); });
  const double p = cx.constant_number(node->input(1));
  const bool train = cx.constant_bool(node->input(2));
  check(!train || p == 0, [&] {
    return std::string(node->kind().toQualString()) +
           " in training mode is random; export the model in eval mode (model.eval())";
  });
  lower_identity(cx, node);
}

// aten::size(x, dim) and aten::size(x): a constant for fixed dims, a load-time
// int (symbolic.cpp) for flexible ones.
void lower_size(LoweringContext& cx, const Node* node) {
  auto [in_id, in] = cx.get_operand(node->input(0));
  const auto rank = static_cast<int64_t>(in.shape.size());
  auto dim_value = [&, id = in_id](int64_t d) { return sym_dim(id, in.shape, d); };
  if (node->inputs().size() == 1) {
    std::vector<SymInt> dims;
    c10::List<int64_t> values;
    bool flexible = false;
    for (int64_t d = 0; d < rank; ++d) {
      dims.push_back(dim_value(d));
      values.push_back(in.shape[d]);
      flexible = flexible || in.shape[d] == 0;
    }
    if (flexible) {
      cx.add_symbolic(node->output(), std::move(dims));
    } else {
      cx.add_constant(node->output(), node->output()->type(), c10::IValue(values));
    }
    return;
  }
  const int64_t dim = py_index(cx.constant(node->input(1)).value.toInt(), rank);
  SymInt v = dim_value(dim);
  cx.add_int(node->output(), v);
}

// x.dim(): the rank, known at conversion. x.numel(): the product of the
// sizes, a load-time int where a size is flexible.
void lower_dim(LoweringContext& cx, const Node* node) {
  const Operand& in = cx.get_operand(node->input(0)).op;
  cx.add_constant(node->output(), node->output()->type(),
                  c10::IValue(static_cast<int64_t>(in.shape.size())));
}

void lower_numel(LoweringContext& cx, const Node* node) {
  cx.add_int(node->output(), sym_numel(cx.get_operand(node->input(0))));
}

// PyTorch's dtype of `v`: recorded where NNAPI holds it in another type,
// else that of its NNAPI type (float32, quint8); nullopt for int32 data,
// which may be int32 or int64 in PyTorch.
std::optional<c10::ScalarType> known_torch_dtype(const LoweringContext& cx, const Value* v) {
  const Operand& in = cx.get_operand(v).op;
  std::optional<c10::ScalarType> t = cx.torch_dtype_of(v);
  if (!t && in.type == nnapi::OperandType::TensorFloat32) t = at::kFloat;
  if (!t && in.type == nnapi::OperandType::TensorQuant8Asymm) t = at::kQUInt8;
  return t;
}

// x.dtype (prim::dtype), e.g. torch.arange(n, dtype=x.dtype): PyTorch's
// dtype of the tensor, an int constant of the model.
void lower_dtype(LoweringContext& cx, const Node* node) {
  const std::optional<c10::ScalarType> t = known_torch_dtype(cx, node->input(0));
  check(t.has_value(),
        "the dtype of this integer tensor (int32 or int64 in PyTorch) is not "
        "known during conversion; give the dtype explicitly");
  cx.add_constant(node->output(), node->output()->type(), c10::IValue(static_cast<int64_t>(*t)));
}

// x.is_floating_point() (`if x.is_floating_point():` in scripted models): a
// bool constant; int32 data is an integer dtype whether int32 or int64.
void lower_is_floating_point(LoweringContext& cx, const Node* node) {
  const Value* x = node->input(0);
  const std::optional<c10::ScalarType> t =
      cx.has_constant(x) ? cx.constant_tensor(x).scalar_type() : known_torch_dtype(cx, x);
  cx.add_constant(node->output(), node->output()->type(),
                  c10::IValue(t.has_value() && c10::isFloatingType(*t)));
}

// x.device (prim::device), e.g. torch.ones(3, device=x.device): the converted
// model's tensors are CPU tensors to the TorchScript around it, as eager's
// are (and as the model's constants are, loaded on the CPU).
void lower_device(LoweringContext& cx, const Node* node) {
  const Value* x = node->input(0);
  if (!cx.has_constant(x)) cx.get_operand(x);  // a tensor the model computes
  cx.add_constant(node->output(), node->output()->type(), c10::IValue(c10::Device(c10::kCPU)));
}

}  // namespace

std::vector<SymInt> view_dims(const LoweringContext& cx, const OperandHandle& in,
                              std::vector<SymInt> dims) {
  const SymInt numel = sym_numel(in);
  SymInt known{1, ""};
  int64_t inferred = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].is_constant() && dims[i].value == -1) {
      check(inferred < 0, "only one dimension of a view can be -1");
      inferred = static_cast<int64_t>(i);
    } else {
      known = sym_arith(known, '*', dims[i]);
    }
  }
  if (inferred >= 0) dims[inferred] = sym_arith(numel, '/', known);
  if (inferred >= 0 && !dims[inferred].is_constant()) {
    // x.view(x.size(0), -1): the load-time sizes on both sides cancel, so the
    // -1 is a number (the later layers need it fixed).
    int64_t in_fixed = 1, out_fixed = 1;
    std::multiset<std::string> in_flex, out_flex;
    for (const SymInt& d : sym_shape(in)) {
      if (d.is_constant())
        in_fixed *= d.value;
      else
        in_flex.insert(cx.resolve_flex(d.expr));
    }
    for (size_t i = 0; i < dims.size(); ++i) {
      if (static_cast<int64_t>(i) == inferred) continue;
      if (dims[i].is_constant())
        out_fixed *= dims[i].value;
      else
        out_flex.insert(cx.resolve_flex(dims[i].expr));
    }
    if (in_flex == out_flex && out_fixed > 0 && in_fixed % out_fixed == 0)
      dims[inferred] = SymInt{in_fixed / out_fixed, ""};
  }
  return dims;
}

void register_view_ops(LoweringTable& t) {
  t.add("aten::to", lower_to).with_reads_above_rank_4().with_folds();
  t.add("aten::type_as", lower_to);
  t.add("aten::detach", lower_identity)
      .with_reads_above_rank_4()
      .with_frames(frames_per_frame())
      .with_moves(Moves::First);
  t.add("aten::unsqueeze", lower_unsqueeze)
      .with_above_rank_4(lower_high_rank_unsqueeze)
      .with_moves(Moves::First, std::nullopt, true)
      .with_folds();
  t.add("aten::squeeze", lower_squeeze)
      .with_moves(Moves::First, nnapi::Op::Squeeze, true)
      .with_folds();
  t.add("aten::reshape", lower_reshape)
      .with_above_rank_4(lower_high_rank_view)
      .with_moves(Moves::First, std::nullopt, true)
      .with_folds();
  t.add("aten::view", lower_reshape)
      .with_above_rank_4(lower_high_rank_view)
      .with_moves(Moves::First, std::nullopt, true)
      .with_folds();
  t.add("aten::view_as", lower_reshape_as).with_moves(Moves::First, std::nullopt, true);
  t.add("aten::reshape_as", lower_reshape_as).with_moves(Moves::First, std::nullopt, true);
  t.add("aten::flatten", lower_flatten)
      .with_reads_above_rank_4()
      .with_moves(Moves::First, nnapi::Op::Reshape, true)
      .with_folds();
  // Identities: a tensor of rank > 4 passes as it is held.
  t.add("aten::dropout", lower_dropout).with_reads_above_rank_4().with_frames(frames_per_frame());
  for (const char* kind :
       {"aten::feature_dropout", "aten::alpha_dropout", "aten::feature_alpha_dropout"}) {
    t.add(kind, lower_dropout).with_reads_above_rank_4();
  }
  t.add("aten::size", lower_size).with_reads_above_rank_4().with_frames(frames_size());
  t.add("aten::dim", lower_dim);
  t.add("aten::numel", lower_numel);
  t.add("prim::dtype", lower_dtype);
  t.add("aten::is_floating_point", lower_is_floating_point)
      .with_note("folded: a bool constant, from the tensor's dtype during conversion");
  t.add("prim::device", lower_device)
      .with_note("folded: the CPU device, as the converted module's tensors are");
  t.add("aten::_cast_Float",
        [](LoweringContext& cx, const Node* n) {
          lower_dtype_change(cx, n, at::kFloat, "aten::_cast_Float");
        })
      .with_note("lowered as aten::to(dtype=torch.float32)")
      .with_folds();
  t.add("aten::_cast_Long",
        [](LoweringContext& cx, const Node* n) {
          lower_dtype_change(cx, n, at::kLong, "aten::_cast_Long");
        })
      .with_note("lowered as aten::to(dtype=torch.int64)")
      .with_folds();
}

}  // namespace nnapi_convert

// The XNNPACK operations torch.utils.mobile_optimizer.optimize_for_mobile
// leaves in a model: prepacked::conv2d_clamp_run, conv2d_transpose_clamp_run
// and linear_clamp_run. Each takes its weights from a context object
// (__torch__.torch.classes.xnnpack.Conv2dOpContext, TransposeConv2dOpContext,
// LinearOpContext), a constant of the saved (frozen) graph, read through its
// __getstate__ (PyTorch's aten/src/ATen/native/xnnpack/RegisterOpContextClass.cpp
// and OpContext.h). They lower through the convolution and FULLY_CONNECTED
// lowerings of aten::_convolution and aten::linear; the clamp the context
// carries (output_min, output_max: a conv or linear followed by relu or
// hardtanh, folded by optimize_for_mobile) is the fused RELU, RELU1 or RELU6
// where it is one of those, else MAXIMUM and MINIMUM after the operation.
#include <ATen/ATen.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "lower/activation.h"
#include "lower/constant_value.h"
#include "lower/convolution.h"
#include "lower/matmul.h"
#include "lower/packed_params.h"
#include "lower/registry.h"

namespace nnapi_convert {
namespace {

using nnapi::Fuse;

enum class Kind { Conv, TransposedConv, Linear };

// What a context object holds. Its state tuple is, by class:
//   Conv2dOpContext:          (weight, bias?, stride, padding, dilation, groups, min?, max?)
//   TransposeConv2dOpContext: (weight, bias?, stride, padding, output_padding, dilation,
//                              groups, min?, max?)
//   LinearOpContext:          (weight, bias?, min?, max?)
// with the weight as the module had it (OIHW, IOHW for the transposed one,
// (out, in) for linear) and an absent bound as None.
struct XnnpackContext {
  at::Tensor weight, bias;  // bias undefined when None
  std::vector<int64_t> stride, padding, output_padding, dilation;
  int64_t groups = 1;
  std::optional<double> lo, hi;  // the clamp; unbounded sides absent
};

const char* class_of(Kind kind) {
  switch (kind) {
    case Kind::Conv:
      return "Conv2dOpContext";
    case Kind::TransposedConv:
      return "TransposeConv2dOpContext";
    case Kind::Linear:
      return "LinearOpContext";
  }
  return "";
}

// A clamp bound: None, or an infinity on its own side, is no bound.
std::optional<double> bound(const c10::IValue& v, double unbounded) {
  if (v.isNone()) return std::nullopt;
  check(v.isDouble() || v.isInt(), "malformed XNNPACK context: a clamp bound is not a number");
  const double d = v.toScalar().toDouble();
  if (d == unbounded) return std::nullopt;
  return d;
}

XnnpackContext read_context(const c10::IValue& object, Kind kind) {
  const std::string cls = class_of(kind);
  check(object.isObject() && object.toObject()->type()->name() &&
            object.toObject()->type()->name()->name() == cls,
        [&] { return "the operation's weights are not an XNNPACK " + cls + " object"; });
  const c10::IValue state = packed_state(object);
  check(state.isTuple(), [&] { return "malformed XNNPACK " + cls + ": its state is no tuple"; });
  // A copy: indexing the tuple's inline storage trips GCC's -Warray-bounds.
  const auto& elements = state.toTupleRef().elements();
  const std::vector<c10::IValue> e(elements.begin(), elements.end());
  const size_t expected = kind == Kind::Linear ? 4 : kind == Kind::Conv ? 8 : 9;
  check(e.size() == expected, [&] {
    return "malformed XNNPACK " + cls + ": its state has " + std::to_string(e.size()) +
           " fields, PyTorch 1.13 writes " + std::to_string(expected);
  });
  XnnpackContext c;
  check(e[0].isTensor() && (e[1].isNone() || e[1].isTensor()),
        [&] { return "malformed XNNPACK " + cls + ": no weight or bias tensor"; });
  c.weight = e[0].toTensor();
  if (e[1].isTensor()) c.bias = e[1].toTensor();
  check(c.weight.scalar_type() == at::kFloat &&
            (!c.bias.defined() || c.bias.scalar_type() == at::kFloat),
        [&] { return "XNNPACK " + cls + " with non-float32 weights is not supported"; });
  size_t i = 2;
  if (kind != Kind::Linear) {
    auto ints = [&](size_t k) {
      check(e[k].isIntList(), [&] { return "malformed XNNPACK " + cls + ": no int list"; });
      return e[k].toIntVector();
    };
    c.stride = ints(i++);
    c.padding = ints(i++);
    if (kind == Kind::TransposedConv) c.output_padding = ints(i++);
    c.dilation = ints(i++);
    check(e[i].isInt(), [&] { return "malformed XNNPACK " + cls + ": groups is no int"; });
    c.groups = e[i++].toInt();
    check(c.weight.dim() == 4, [&] {
      return "XNNPACK " + cls + " with a " + std::to_string(c.weight.dim()) +
             "-D weight: only 2-D convolutions (4-D weights) are supported";
    });
  } else {
    check(c.weight.dim() == 2, "malformed XNNPACK LinearOpContext: its weight is not 2-D");
  }
  c.lo = bound(e[i], -INFINITY);
  c.hi = bound(e[i + 1], INFINITY);
  return c;
}

XnnpackContext node_context(LoweringContext& cx, const Node* node, Kind kind) {
  check(node->inputs().size() == 2,
        [&] { return std::string("malformed ") + node->kind().toQualString(); });
  check(cx.has_constant(node->input(1)), [&] {
    return "its XNNPACK " + std::string(class_of(kind)) + " (" + value_name(node->input(1)) +
           ") is computed in the model, not a constant: convert the model as "
           "optimize_for_mobile saves it (its prepack operations folded), or the unoptimized "
           "model";
  });
  return read_context(cx.constant(node->input(1)).value, kind);
}

// The clamp as NNAPI's fused activation of the operation where it is one;
// Fuse::None and `fused` false otherwise. No clamp at all fuses a following
// relu/hardtanh as other lowerings do (--fuse-activations).
Fuse fused_clamp(LoweringContext& cx, const Node* node, const XnnpackContext& c, bool* fused) {
  *fused = true;
  if (!c.lo && !c.hi) return cx.fuse_following_activation(node->output());
  if (c.lo == 0.0 && !c.hi) return Fuse::Relu;
  if (c.lo == 0.0 && c.hi == 6.0) return Fuse::Relu6;
  if (c.lo == -1.0 && c.hi == 1.0) return Fuse::Relu1;
  *fused = false;
  return Fuse::None;
}

// The operation `emit` (given its fused activation and result value, null
// for an anonymous one) followed by the clamp where it is not fused.
template <typename Emit>
void with_clamp(LoweringContext& cx, const Node* node, const XnnpackContext& c, Emit&& emit) {
  bool fused = false;
  const Fuse fuse = fused_clamp(cx, node, c, &fused);
  const OperandHandle y = emit(fuse, fused ? node->output() : nullptr);
  if (!fused) emit_clamp(cx, y, c.lo, c.hi, node->output());
}

void lower_conv_run(LoweringContext& cx, const Node* node, Kind kind) {
  const XnnpackContext c = node_context(cx, node, kind);
  const bool transpose = kind == Kind::TransposedConv;
  const OperandHandle x = cx.get_operand(node->input(0));
  const ConvPoolArgs a = conv2d_window(c.weight, c.stride, c.padding, c.dilation, c.groups);
  with_clamp(cx, node, c, [&](Fuse fuse, const Value* out) {
    return emit_conv_any(cx, x, c.weight, c.bias, a, transpose, c.output_padding, fuse, out);
  });
}

// linear_clamp_run: x (..., in) @ weight.t() + bias, FULLY_CONNECTED on x
// flattened to 2-D (aten::linear's lowering without the reference's form).
void lower_linear_run(LoweringContext& cx, const Node* node) {
  const XnnpackContext c = node_context(cx, node, Kind::Linear);
  const OperandHandle x = product_operand(cx, node->input(0), "prepacked::linear_clamp_run", 1);
  const at::Tensor bias =
      c.bias.defined() ? c.bias.reshape({-1}) : at::zeros({c.weight.size(0)}, at::kFloat);
  check(bias.numel() == c.weight.size(0),
        "malformed XNNPACK LinearOpContext: its bias does not match its weight");
  with_clamp(cx, node, c, [&](Fuse fuse, const Value* out) {
    return product_with_constant(cx, x, c.weight.t(), out, &bias, fuse);
  });
}

// What the convolution lowering would refuse, read off the constant context
// before lowering (SupportFn); a malformed one is left to the lowering's message.
std::string conv_run_support(const Node* node, Kind kind) {
  if (node->inputs().size() != 2) return "";
  const auto object = constant_value(node->input(1));
  if (!object) return "";
  try {
    const XnnpackContext c = read_context(*object, kind);
    return conv_support(c.weight, kind == Kind::TransposedConv, c.groups, c.dilation);
  } catch (const LoweringError&) {
    return "";
  }
}

}  // namespace

void register_prepacked_ops(LoweringTable& t) {
  const std::string clamp_note =
      "optimize_for_mobile's XNNPACK operation: weights from its context object (a constant); "
      "its clamp is the fused RELU/RELU1/RELU6 where it is one, else MAXIMUM/MINIMUM after";
  t.add("prepacked::conv2d_clamp_run",
        [](LoweringContext& cx, const Node* node) { lower_conv_run(cx, node, Kind::Conv); })
      .with_support([](const Node* node) { return conv_run_support(node, Kind::Conv); })
      .with_note(clamp_note + "; as aten::conv2d (CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D)");
  t.add("prepacked::conv2d_transpose_clamp_run",
        [](LoweringContext& cx, const Node* node) {
          lower_conv_run(cx, node, Kind::TransposedConv);
        })
      .with_support([](const Node* node) { return conv_run_support(node, Kind::TransposedConv); })
      .with_note(clamp_note + "; as aten::_convolution transposed (TRANSPOSE_CONV_2D)");
  t.add("prepacked::linear_clamp_run", lower_linear_run)
      .with_note(clamp_note + "; FULLY_CONNECTED on the input flattened to 2-D");
}

}  // namespace nnapi_convert

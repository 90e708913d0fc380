// Dynamic quantization (torch.ao.quantization.quantize_dynamic):
// quantized::linear_dynamic and quantized::linear_relu_dynamic, lowered as
// float32 FULLY_CONNECTED on the dequantized weights (aten::quantized_lstm is
// in recurrent.cpp, on the same weights).
//
// PyTorch's dynamic linear quantizes its input at run time (per tensor, from
// the input's own min and max), multiplies in 8-bit integers and dequantizes
// the int32 sums; the NNAPI model multiplies the float input by the
// dequantized weights instead. The two differ by the input's rounding to
// its 8-bit grid (at most half its quantum, (max - min) / 255 / 2, per
// element), so --verify needs a tolerance to match (docs/verify.md).
#include <ATen/ATen.h>

#include "lower/emit.h"
#include "lower/matmul.h"
#include "lower/packed_params.h"
#include "lower/registry.h"

namespace nnapi_convert {

std::pair<at::Tensor, at::Tensor> dequantized_linear_params(const c10::IValue& packed,
                                                            const std::string& what) {
  check(packed.isObject(), [&] { return what + " needs its packed weights as a constant"; });
  auto cls = packed.toObject()->type();
  check(cls->name() && cls->name()->name() == "LinearPackedParamsBase",
        [&] { return what + " weights are " + cls->str() + ", not LinearPackedParamsBase"; });
  auto state = packed_state(packed).toTuple();
  check(state->elements().size() >= 2 && state->elements()[0].isTensor(),
        [&] { return "malformed packed weights of " + what; });
  const at::Tensor raw = state->elements()[0].toTensor();
  check(raw.dim() == 2, [&] { return what + " has a weight that is not 2-D"; });
  check(raw.is_quantized(), [&] {
    return what +
           " has weights that are not 8-bit quantized (quantize_dynamic with "
           "dtype=torch.float16 is not supported)";
  });
  const at::Tensor w = raw.dequantize().contiguous();
  const c10::IValue& b = state->elements()[1];
  at::Tensor bias = b.isNone() ? at::zeros({w.size(0)}, at::kFloat) : b.toTensor().to(at::kFloat);
  check(bias.dim() == 1 && bias.size(0) == w.size(0),
        [&] { return what + " has a bias that does not match its weight"; });
  return {w, bias};
}

namespace {

using nnapi::Op;

// quantized::linear_dynamic(Tensor X, LinearPackedParamsBase W, bool
// reduce_range) -> Tensor Y, and quantized::linear_relu_dynamic (the same,
// then ReLU): X (..., K) float32 times the dequantized weight (N, K), plus
// the bias.
void lower_linear_dynamic(LoweringContext& cx, const Node* node, bool relu) {
  const std::string what = node->kind().toQualString();
  check(node->inputs().size() == 3 || node->inputs().size() == 2,
        [&] { return "malformed " + what; });
  auto [w, bias] = dequantized_linear_params(cx.constant(node->input(1)).value, what);
  const OperandHandle x = product_operand(cx, node->input(0), what.c_str(), 1);
  check(x.op.shape.back() == w.size(1), [&] {
    return what + " has a weight for " + std::to_string(w.size(1)) + " input features, but its " +
           "input " + shape_str(x.op.shape) + " has " + std::to_string(x.op.shape.back()) +
           "; check the --input spec";
  });
  const OperandHandle y =
      product_with_constant(cx, x, w.t(), relu ? nullptr : node->output(), &bias);
  if (relu) emit_unary(cx, Op::Relu, y, node->output());
}

}  // namespace

void register_dynamic_quant_ops(LoweringTable& t) {
  t.add("quantized::linear_dynamic",
        [](LoweringContext& cx, const Node* n) { lower_linear_dynamic(cx, n, false); });
  t.add("quantized::linear_relu_dynamic",
        [](LoweringContext& cx, const Node* n) { lower_linear_dynamic(cx, n, true); });
}

}  // namespace nnapi_convert

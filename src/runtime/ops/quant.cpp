// QUANTIZE (float -> TENSOR_QUANT8_ASYMM: round to nearest, add zero point,
// saturate to [0, 255]), DEQUANTIZE (scale * (q - zeroPoint)) and CAST.
// QUANTIZE rounds as PyTorch's quantize_per_tensor does: x * (1 / scale) in
// float32, half to even (NNAPI does not fix the tie rule or the precision).
#include "../kernel.h"

namespace nnrt {
namespace {

using T = OperandType;

void execute_quantize(ExecContext& ctx) {
  ctx.set_output(0, quantize_like_pytorch(real_values(ctx.in(0), at::kFloat), ctx.out_operand(0)));
}

// DEQUANTIZE: (q - zeroPoint) * scale; a per-channel input scales each index
// along its channel dimension by its own scale.
void execute_dequantize(ExecContext& ctx) {
  const Value& x = ctx.in(0);
  if (x.type == T::TensorQuant8SymmPerChannel) {
    const Operand& op = ctx.in_operand(0);
    at::Tensor real = x.t.to(at::kFloat) * channel_scales(op, x.t.dim(), op.channel_dim);
    ctx.set_output(0, to_operand(real, ctx.out_operand(0)));
    return;
  }
  ctx.set_output(0, to_operand(real_values(x), ctx.out_operand(0)));
}

// NNAPI CAST converts stored values (quantization parameters are ignored),
// truncating toward zero and saturating for integer outputs.
void execute_cast(ExecContext& ctx) {
  const Value& x = ctx.in(0);
  const Operand& out = ctx.out_operand(0);
  at::Tensor t = x.t;
  if (out.type == T::TensorQuant8Asymm) {
    t = at::trunc(t.to(at::kDouble)).clamp(0, 255);
  } else if (out.type == T::TensorInt32 && t.is_floating_point()) {
    t = at::trunc(t.to(at::kDouble)).clamp(INT32_MIN, INT32_MAX);
  }
  ctx.set_output(0, t.to(dtype_for(out.type)));
}

}  // namespace

void add_quant_kernels(std::vector<OpKernel>& table) {
  table.push_back({Op::Quantize, "QUANTIZE", execute_quantize});
  table.push_back({Op::Dequantize, "DEQUANTIZE", execute_dequantize});
  table.push_back({Op::Cast, "CAST", execute_cast});
}

}  // namespace nnrt

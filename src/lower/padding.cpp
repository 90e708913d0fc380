// Constant padding: aten::pad (mode "constant") and aten::constant_pad_nd.
// NNAPI PAD fills with the logical zero (a quantized tensor's zero point);
// any other value goes through PAD_V2, quantized for QUANT8 tensors.
#include <algorithm>
#include <cmath>

#include "lower/emit.h"
#include "lower/registry.h"

namespace nnapi_convert {
namespace {

using nnapi::Op;
using nnapi::OperandType;

// The value to pad with (inputs: aten::pad x, pad, mode, value?;
// aten::constant_pad_nd x, pad, value).
double pad_value(LoweringContext& cx, const Node* node) {
  const bool is_pad = node->kind() == c10::Symbol::fromQualString("aten::pad");
  if (is_pad) {
    const std::string mode = cx.constant(node->input(2)).value.toStringRef();
    check(mode == "constant", [&] {
      return "padding mode '" + mode +
             "' is not supported: NNAPI pads only with a constant value "
             "(mode 'constant')";
    });
  }
  const c10::IValue& v = cx.constant(node->input(is_pad ? 3 : 2)).value;
  return v.isNone() ? 0.0 : v.toScalar().toDouble();
}

void lower_pad(LoweringContext& cx, const Node* node) {
  const double value = pad_value(cx, node);
  const std::vector<int64_t> pad = cx.constant_int_list(node->input(1));
  auto [in_id, in] = cx.get_operand(node->input(0));
  const auto rank = static_cast<int64_t>(in.shape.size());
  check(pad.size() % 2 == 0 && static_cast<int64_t>(pad.size()) <= 2 * rank, [&] {
    return "a padding list of " + std::to_string(pad.size()) + " entries does not fit a rank-" +
           std::to_string(rank) + " tensor (it needs pairs, at most two per dimension)";
  });
  // PyTorch lists (before, after) pairs from the last dimension backwards.
  std::vector<int64_t> before(rank, 0), after(rank, 0);
  Shape out_shape = in.shape;
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const int64_t d = rank - 1 - static_cast<int64_t>(i);
    before[d] = pad[2 * i];
    after[d] = pad[2 * i + 1];
    check(before[d] >= 0 && after[d] >= 0,
          "negative padding (cropping) is not supported; slice the tensor instead");
    if (before[d] + after[d] == 0) continue;
    check(in.shape[d] != 0, [&] {
      return "padding the flexible dimension " + std::to_string(d) +
             " is not supported; give it a fixed size in --input";
    });
    out_shape[d] += before[d] + after[d];
  }
  // Rows [before, after] in the NNAPI operand's dim order.
  std::vector<int64_t> rows;
  for (int64_t nd = 0; nd < rank; ++nd) {
    const int64_t d = rank == 4 ? reverse_map_dim(in.dim_order, static_cast<int>(nd)) : nd;
    rows.push_back(before[d]);
    rows.push_back(after[d]);
  }
  ModelBuilder& m = cx.model();
  std::vector<int32_t> inputs = {in_id, m.add_int_tensor(rows, {rank, 2})};
  Op op = Op::Pad;
  if (value != 0.0) {
    op = Op::PadV2;
    if (in.type == OperandType::TensorQuant8Asymm) {
      const double q = std::nearbyint(value / in.scale) + static_cast<double>(in.zero_point);
      inputs.push_back(m.add_int_scalar(static_cast<int32_t>(std::clamp(q, 0.0, 255.0))));
    } else {
      inputs.push_back(m.add_float_scalar(static_cast<float>(value)));
    }
  }
  Operand2 like{in_id, in};
  const int32_t out_id = make_output(cx, node->output(), in.with_shape(out_shape), &like);
  m.add_operation(op, inputs, {out_id});
}

}  // namespace

void register_padding_ops(LoweringTable& t) {
  t.add("aten::pad", lower_pad);
  t.add("aten::constant_pad_nd", lower_pad);
}

}  // namespace nnapi_convert

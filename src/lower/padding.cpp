// Constant padding: aten::pad (mode "constant") and aten::constant_pad_nd,
// lowered by emit_pad (emit.cpp).
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
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const int64_t d = rank - 1 - static_cast<int64_t>(i);
    before[d] = pad[2 * i];
    after[d] = pad[2 * i + 1];
  }
  emit_pad(cx, {in_id, in}, before, after, value, node->output());
}

}  // namespace

void register_padding_ops(LoweringTable& t) {
  t.add("aten::pad", lower_pad);
  t.add("aten::constant_pad_nd", lower_pad);
}

}  // namespace nnapi_convert

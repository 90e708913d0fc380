// Tensors made from a size and a value: zeros, ones, full, new_zeros,
// new_ones, new_full, ones_like, full_like. A size known at conversion folds
// (core/folding.h; the new_* and *_like factories read only their first
// input's dtype, and shape); a size known only when the model is loaded (a
// flexible input's x.shape) is a (1, ..., 1) constant of the value TILEd to
// it, the multiples set by shape-compute lines (emit_expand). Float32 only.
#include "lower/factory.h"

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <vector>

#include "lower/emit.h"
#include "lower/logical.h"
#include "lower/node_args.h"
#include "lower/registry.h"

namespace nnapi_convert {

OperandHandle emit_filled_like(LoweringContext& cx, const OperandHandle& x, float value,
                               const Value* out) {
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  const OperandHandle k =
      float_weight_like(cx, at::full(std::vector<int64_t>(rank, 1), value, at::kFloat), x.op);
  const OperandHandle filled = emit_expand(cx, k, sym_shape(x));
  if (out != nullptr) cx.reinterpret(out, filled.id, filled.op);
  return filled;
}

namespace {

// The dtype a factory node makes: its dtype argument, else its first
// input's (new_*, *_like), else float32, or int64 for full of an integer
// (PyTorch's inference), checked to be float32.
void check_float_result(LoweringContext& cx, const Node* node, const NodeArgs& args,
                        const Value* like) {
  at::ScalarType dtype = at::kFloat;
  if (!args.is_none("dtype")) {
    dtype = static_cast<at::ScalarType>(args.integer("dtype"));
  } else if (like != nullptr && cx.has_operand(like)) {
    dtype =
        cx.get_operand(like).op.type == nnapi::OperandType::TensorFloat32 ? at::kFloat : at::kInt;
  } else if (like != nullptr && cx.has_constant(like) && cx.constant(like).value.isTensor()) {
    dtype = cx.constant(like).value.toTensor().scalar_type();
  } else if (args.has("fill_value") && !args.constant("fill_value").isDouble()) {
    dtype = at::kLong;
  }
  check(dtype == at::kFloat, [&] {
    return std::string(node->kind().toQualString()) + " of dtype " + c10::toString(dtype) +
           " and a size known only when the model is loaded is not supported (float32 only); "
           "give the input fixed sizes in --input, or make a float32 tensor";
  });
}

// zeros/ones/full(size, [fill_value,] dtype, ...), new_zeros/new_ones/
// new_full(self, size, [fill_value,] dtype, ...): `value` for zeros and
// ones, else the fill_value argument.
void lower_sized_factory(LoweringContext& cx, const Node* node, std::optional<float> value) {
  NodeArgs args(cx, node);
  const Value* like = args.has("self") ? args.value("self") : nullptr;
  const std::vector<SymInt> sizes = cx.sym_int_list(args.value("size"));
  if (!cx.has_symbolic(args.value("size")) && like == nullptr) {
    // Constant sizes in a list the folder did not take (an RNN's zero
    // initial state): a constant tensor of the dtype asked for.
    std::vector<int64_t> shape;
    for (const SymInt& d : sizes) shape.push_back(d.value);
    const at::ScalarType dtype =
        args.is_none("dtype") ? at::kFloat : static_cast<at::ScalarType>(args.integer("dtype"));
    const c10::Scalar fill = value ? c10::Scalar(*value) : args.constant("fill_value").toScalar();
    cx.add_constant(node->output(), node->output()->type(), at::full(shape, fill, dtype));
    return;
  }
  check_float_result(cx, node, args, like);
  const float v = value ? *value : static_cast<float>(args.constant("fill_value").toDouble());
  const int32_t id = cx.add_weight(at::full(std::vector<int64_t>(sizes.size(), 1), v, at::kFloat),
                                   DimOrder::Contiguous);
  const OperandHandle k{id, cx.operand(id)};
  emit_expand(cx, k, sizes, node->output());
}

// ones_like/full_like(self, [fill_value,] dtype, ...) of a computed tensor.
void lower_like_factory(LoweringContext& cx, const Node* node, std::optional<float> value) {
  NodeArgs args(cx, node);
  const Value* like = args.value("self");
  check(cx.has_operand(like), [&] {
    return std::string(node->kind().toQualString()) + " of a constant folds at conversion";
  });
  check_float_result(cx, node, args, like);
  const float v = value ? *value : static_cast<float>(args.constant("fill_value").toDouble());
  emit_filled_like(cx, cx.get_operand(like), v, node->output());
}

}  // namespace

void register_factory_ops(LoweringTable& t) {
  struct Factory {
    const char* kind;
    std::optional<float> value;  // none: the fill_value argument
    bool like;                   // *_like: of its first input's shape
  };
  for (const Factory& f :
       {Factory{"aten::zeros", 0.0f, false}, Factory{"aten::ones", 1.0f, false},
        Factory{"aten::full", std::nullopt, false}, Factory{"aten::new_zeros", 0.0f, false},
        Factory{"aten::new_ones", 1.0f, false}, Factory{"aten::new_full", std::nullopt, false},
        Factory{"aten::ones_like", 1.0f, true}, Factory{"aten::full_like", std::nullopt, true}}) {
    t.add(f.kind,
          [f](LoweringContext& cx, const Node* n) {
            if (f.like) {
              lower_like_factory(cx, n, f.value);
            } else {
              lower_sized_factory(cx, n, f.value);
            }
          })
        .with_folds()
        .with_note(std::string(f.like ? "of a computed float32 tensor, " : "float32, ") +
                   "of a size known only when the model is loaded (a flexible input's x.shape): "
                   "a constant TILEd to the size, in NCHW order (so aten::add of it and NHWC "
                   "data is refused at flexible sizes); constant sizes fold at conversion");
  }
}

}  // namespace nnapi_convert

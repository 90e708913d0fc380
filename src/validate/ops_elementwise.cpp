// Rules of NeuralNetworks.h for the elementwise operations: binary
// arithmetic (ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW), the comparisons
// (EQUAL ... LESS_EQUAL, a TENSOR_BOOL8 result), LOGICAL_AND/OR/NOT, SELECT,
// unary activations and math (RELU ... NEG, SIN), PRELU, the softmaxes and normalizations, and the
// type conversions QUANTIZE, DEQUANTIZE and CAST. Each output has its input's
// shape, or the broadcast of two inputs' shapes.
#include "validate/rule_context.h"

namespace nnapi_validate {
namespace {

constexpr size_t kAny = SIZE_MAX;  // no upper rank limit ("Supported tensor rank: from 1")

// ---- ADD, SUB, MUL, DIV: a, b, fuse code; broadcast, rank up to 4.

void binary_with_fuse(Check& c, std::initializer_list<TypeLevel> types) {
  const nnapi::Form& f = c.form();
  const size_t second = f.at(R::SecondInput), fuse_at = f.at(R::Fuse);
  c.output_count(1);
  typed(c, types);
  c.same_type(second, 0);
  c.input_type(fuse_at, {T::Int32});
  c.output_same_type(0, 0);
  c.max_rank(4);
  if (!c.full()) return;
  c.fuse_code(fuse_at);
  if (c.type(0) == T::TensorInt32) {
    if (auto fuse = c.i32(fuse_at); fuse && *fuse != 0)
      c.fail(Rule::Parameter, "input " + std::to_string(fuse_at) + " (fused activation) is " +
                                  std::to_string(*fuse) + "; NNAPI's " + c.name() +
                                  " of TENSOR_INT32 takes only 0 (none)");
  }
  if (c.shapes()) c.set_output(0, broadcast(c, c.shape(0), c.shape(second)));
}

void add_rule(Check& c) {
  binary_with_fuse(c, {{T::TensorFloat32, 1},
                       {T::TensorQuant8Asymm, 1},
                       {T::TensorFloat16, 3},
                       {T::TensorInt32, 4}});
}
void mul_rule(Check& c) { add_rule(c); }
void sub_rule(Check& c) {
  binary_with_fuse(c, {{T::TensorFloat32, 2},
                       {T::TensorQuant8Asymm, 3},
                       {T::TensorFloat16, 3},
                       {T::TensorInt32, 4}});
}
void div_rule(Check& c) {
  binary_with_fuse(c, {{T::TensorFloat32, 2}, {T::TensorFloat16, 3}, {T::TensorInt32, 4}});
}

// ---- MAXIMUM, MINIMUM, POW: a, b; broadcast, rank from 1.

void binary(Check& c, std::initializer_list<TypeLevel> types) {
  const size_t second = c.form().at(R::SecondInput);
  c.output_count(1);
  typed(c, types);
  c.same_type(second, 0);
  c.output_same_type(0, 0);
  if (c.shapes()) c.set_output(0, broadcast(c, c.shape(0), c.shape(second)));
}

void minmax_rule(Check& c) {
  binary(c, {{T::TensorFloat32, 3},
             {T::TensorFloat16, 3},
             {T::TensorInt32, 3},
             {T::TensorQuant8Asymm, 3}});
}
void pow_rule(Check& c) { binary(c, {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}}); }

// ---- EQUAL ... LESS_EQUAL: a, b of one type (quantized: any parameters
// each); broadcast; a TENSOR_BOOL8 output.

void compare_rule(Check& c) {
  const size_t second = c.form().at(R::SecondInput);
  c.output_count(1);
  typed(c, {{T::TensorBool8, 3},
            {T::TensorFloat16, 3},
            {T::TensorFloat32, 3},
            {T::TensorInt32, 3},
            {T::TensorQuant8Asymm, 3}});
  c.same_type(second, 0);
  c.output_type(0, {T::TensorBool8});
  if (c.shapes()) c.set_output(0, broadcast(c, c.shape(0), c.shape(second)));
}

// ---- LOGICAL_AND, LOGICAL_OR: two TENSOR_BOOL8, broadcast.

void logical_rule(Check& c) { binary(c, {{T::TensorBool8, 3}}); }

// ---- SELECT: mask (TENSOR_BOOL8), x, y: all of one shape (no
// broadcasting); the output has x's type and shape, quantized with any
// parameters (each input's may differ too).

void select_rule(Check& c) {
  const nnapi::Form& f = c.form();
  const size_t mask = f.at(R::Mask), if_true = f.at(R::IfTrue), if_false = f.at(R::IfFalse);
  c.output_count(1);
  c.input_type(mask, {T::TensorBool8});
  c.input_type(if_true, {T::TensorFloat16, T::TensorFloat32, T::TensorInt32, T::TensorQuant8Asymm});
  c.same_type(if_false, if_true);
  c.output_same_type(0, if_true);
  if (!c.shapes()) return;
  Shape out = c.shape(mask);
  for (size_t i : {if_true, if_false}) {
    const Shape& s = c.shape(i);
    if (!s.known) continue;
    if (out.known && out.rank() != s.rank())
      c.fail(Rule::Shape, "input " + std::to_string(i) + " has shape " + shape_text(s) +
                              " and the mask " + shape_text(c.shape(mask)) +
                              "; NNAPI's SELECT needs the mask and both inputs of one shape");
    if (!out.known) {
      out = s;
      continue;
    }
    for (size_t k = 0; k < s.rank(); ++k) {
      c.equal_dims(out.d[k], s.d[k], "dim " + std::to_string(k) + " of SELECT's inputs");
      if (out.d[k] < 0) out.d[k] = s.d[k];
    }
  }
  c.set_output(0, out);
}

// ---- unary: input; output of its type and shape.

void unary(Check& c, std::initializer_list<TypeLevel> types, size_t max_rank) {
  c.form();  // its one input
  c.output_count(1);
  typed(c, types);
  c.output_same_type(0, 0);
  if (max_rank != kAny) c.max_rank(max_rank);
  same_shape_output(c);
}

void relu_rule(Check& c) {
  unary(c, {{T::TensorFloat32, 1}, {T::TensorQuant8Asymm, 1}, {T::TensorFloat16, 3}}, 4);
}
void logistic_rule(Check& c) {
  relu_rule(c);
  c.fixed_quant(0, 1.0f / 256, 0);
}
void tanh_rule(Check& c) {
  unary(c, {{T::TensorFloat32, 1}, {T::TensorQuant8Asymm, 3}, {T::TensorFloat16, 3}}, 4);
  c.fixed_quant(0, 1.0f / 128, 128);
}
void floor_rule(Check& c) { unary(c, {{T::TensorFloat32, 1}, {T::TensorFloat16, 3}}, 4); }
void hard_swish_rule(Check& c) {
  unary(c, {{T::TensorFloat32, 4}, {T::TensorFloat16, 4}, {T::TensorQuant8Asymm, 4}}, kAny);
}
void float_math_rule(Check& c) {  // EXP, LOG, SQRT, RSQRT, SIN
  unary(c, {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}}, kAny);
}
void logical_not_rule(Check& c) { unary(c, {{T::TensorBool8, 3}}, kAny); }
void neg_rule(Check& c) {
  unary(c, {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}, {T::TensorInt32, 3}}, kAny);
}
void abs_rule(Check& c) {
  unary(c, {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}, {T::TensorInt32, 4}}, kAny);
}

// ---- PRELU: input, alpha (broadcast to the input's shape).

void prelu_rule(Check& c) {
  const size_t alpha = c.form().at(R::AlphaTensor);
  c.output_count(1);
  typed(c, {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}, {T::TensorQuant8Asymm, 3}});
  c.same_type(alpha, 0);
  c.output_same_type(0, 0);
  if (!c.shapes()) return;
  const Shape b = broadcast(c, c.shape(0), c.shape(alpha));
  if (b.known && c.shape(0).known && b.rank() != c.shape(0).rank())
    c.fail(Rule::Shape, "alpha of shape " + shape_text(c.shape(alpha)) +
                            " has a higher rank than the input " + shape_text(c.shape(0)));
  c.set_output(0, b);
}

// ---- SOFTMAX: input, beta [, axis]; LOG_SOFTMAX: input, beta, axis.

// The axis at input i (none when i is past the inputs).
void softmax_axis(Check& c, size_t i) {
  if (i >= c.n_in()) return;
  c.input_type(i, {T::Int32});
  if (c.full()) c.axis(i, c.shape(0).known ? static_cast<int64_t>(c.shape(0).rank()) : -1, true);
}

void beta(Check& c, size_t i) {
  float_scalar_for_input(c, i);
  if (auto b = c.f32(i); b && !(*b > 0.0f))
    c.fail(Rule::Parameter, "input " + std::to_string(i) + " (beta) is " + std::to_string(*b) +
                                "; NNAPI needs a positive beta");
}

// SOFTMAX's and LOG_SOFTMAX's beta and axis, where their form has them.
void beta_and_axis(Check& c, const nnapi::Form& f) {
  beta(c, f.at(R::Beta));
  softmax_axis(c, f.at(R::Axis));
}

void softmax_rule(Check& c) {
  const nnapi::Form& f = c.form();
  c.output_count(1);
  typed(c, {{T::TensorFloat32, 1}, {T::TensorQuant8Asymm, 1}, {T::TensorFloat16, 3}});
  c.output_same_type(0, 0);
  c.max_rank(4);
  c.fixed_quant(0, 1.0f / 256, 0);
  if (f.at(R::Axis) < c.n_in()) c.needs_level(3, "SOFTMAX with an axis");
  beta_and_axis(c, f);
  same_shape_output(c);
}

void log_softmax_rule(Check& c) {
  const nnapi::Form& f = c.form();
  c.output_count(1);
  typed(c, {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}});
  c.output_same_type(0, 0);
  beta_and_axis(c, f);
  same_shape_output(c);
}

// ---- L2_NORMALIZATION: input [, axis].

void l2_norm_rule(Check& c) {
  const size_t axis_at = c.form().at(R::Axis);
  c.output_count(1);
  typed(c, {{T::TensorFloat32, 1}, {T::TensorQuant8Asymm, 3}, {T::TensorFloat16, 3}});
  c.output_same_type(0, 0);
  c.max_rank(4);
  c.fixed_quant(0, 1.0f / 128, 128);
  if (axis_at < c.n_in()) c.needs_level(3, "L2_NORMALIZATION with an axis");
  softmax_axis(c, axis_at);
  same_shape_output(c);
}

// ---- INSTANCE_NORMALIZATION: 4-D input, gamma, beta, epsilon, layout (BOOL).

void instance_norm_rule(Check& c) {
  const nnapi::Form& f = c.form();
  c.output_count(1);
  typed(c, {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}});
  c.input_rank(0, 4, 4);
  for (R r : {R::Gamma, R::Beta, R::Epsilon}) float_scalar_for_input(c, f.at(r));
  c.input_type(f.at(R::Layout), {T::Bool});
  c.output_same_type(0, 0);
  const size_t eps_at = f.at(R::Epsilon);
  if (auto eps = c.f32(eps_at); eps && !(*eps > 0.0f))
    c.fail(Rule::Parameter, "input " + std::to_string(eps_at) + " (epsilon) is " +
                                std::to_string(*eps) + "; NNAPI needs a positive epsilon");
  same_shape_output(c);
}

// ---- QUANTIZE, DEQUANTIZE, CAST: one input, one output of its shape.

void conversion(Check& c, std::initializer_list<TypeLevel> in_types,
                std::initializer_list<T> out_types, size_t max_rank) {
  c.form();  // its one input
  c.output_count(1);
  typed(c, in_types);
  c.output_type(0, out_types);
  if (max_rank != kAny) c.max_rank(max_rank);
  same_shape_output(c);
}

void quantize_rule(Check& c) {
  conversion(c, {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}}, {T::TensorQuant8Asymm}, kAny);
}
// NeuralNetworks.h's DEQUANTIZE takes 8-bit types only (QUANT8_ASYMM; QUANT8_SYMM
// and QUANT8_SYMM_PER_CHANNEL since level 3): no TENSOR_QUANT16_*.
void dequantize_rule(Check& c) {
  conversion(
      c, {{T::TensorQuant8Asymm, 1}, {T::TensorQuant8Symm, 3}, {T::TensorQuant8SymmPerChannel, 3}},
      {T::TensorFloat32, T::TensorFloat16}, 4);
  if (c.out(0).type == T::TensorFloat16) c.needs_level(3, "DEQUANTIZE to TENSOR_FLOAT16");
}
void cast_rule(Check& c) {
  conversion(c,
             {{T::TensorFloat32, 3},
              {T::TensorFloat16, 3},
              {T::TensorInt32, 3},
              {T::TensorQuant8Asymm, 3}},
             {T::TensorFloat32, T::TensorFloat16, T::TensorInt32, T::TensorQuant8Asymm}, kAny);
}

}  // namespace

void add_elementwise_rules(std::vector<OpRule>& t) {
  using nnapi::Op;
  t.push_back({Op::Add, add_rule});
  t.push_back({Op::Mul, mul_rule});
  t.push_back({Op::Sub, sub_rule});
  t.push_back({Op::Div, div_rule});
  t.push_back({Op::Maximum, minmax_rule});
  t.push_back({Op::Minimum, minmax_rule});
  t.push_back({Op::Pow, pow_rule});
  for (Op op : {Op::Equal, Op::NotEqual, Op::Greater, Op::GreaterEqual, Op::Less, Op::LessEqual})
    t.push_back({op, compare_rule});
  t.push_back({Op::LogicalAnd, logical_rule});
  t.push_back({Op::LogicalOr, logical_rule});
  t.push_back({Op::LogicalNot, logical_not_rule});
  t.push_back({Op::Select, select_rule});
  t.push_back({Op::Sin, float_math_rule});
  t.push_back({Op::Relu, relu_rule});
  t.push_back({Op::Relu1, relu_rule});
  t.push_back({Op::Relu6, relu_rule});
  t.push_back({Op::Logistic, logistic_rule});
  t.push_back({Op::Tanh, tanh_rule});
  t.push_back({Op::Floor, floor_rule});
  t.push_back({Op::HardSwish, hard_swish_rule});
  t.push_back({Op::Exp, float_math_rule});
  t.push_back({Op::Log, float_math_rule});
  t.push_back({Op::Sqrt, float_math_rule});
  t.push_back({Op::Rsqrt, float_math_rule});
  t.push_back({Op::Neg, neg_rule});
  t.push_back({Op::Abs, abs_rule});
  t.push_back({Op::Prelu, prelu_rule});
  t.push_back({Op::Softmax, softmax_rule});
  t.push_back({Op::LogSoftmax, log_softmax_rule});
  t.push_back({Op::L2Normalization, l2_norm_rule});
  t.push_back({Op::InstanceNormalization, instance_norm_rule});
  t.push_back({Op::Quantize, quantize_rule});
  t.push_back({Op::Dequantize, dequantize_rule});
  t.push_back({Op::Cast, cast_rule});
}

}  // namespace nnapi_validate

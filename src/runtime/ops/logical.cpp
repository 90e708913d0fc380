// Comparisons, logical operations and selection (NNAPI feature level 3):
// EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL (broadcasting,
// a TENSOR_BOOL8 result), LOGICAL_AND, LOGICAL_OR (broadcasting), LOGICAL_NOT
// and SELECT. Quantized comparisons compare real values: each input is
// dequantized with its own scale and zero point in float32, as Android's
// reference implementation does (NeuralNetworks.h lets the two inputs'
// parameters differ). A quantized SELECT takes each chosen element's real
// value into the output's parameters (unchanged when its input has them).
#include "../kernel.h"

namespace nnrt {
namespace {

enum class Cmp { Eq, Ne, Gt, Ge, Lt, Le };

at::Tensor compare(Cmp kind, const at::Tensor& a, const at::Tensor& b) {
  switch (kind) {
    case Cmp::Eq:
      return at::eq(a, b);
    case Cmp::Ne:
      return at::ne(a, b);
    case Cmp::Gt:
      return at::gt(a, b);
    case Cmp::Ge:
      return at::ge(a, b);
    case Cmp::Lt:
      return at::lt(a, b);
    case Cmp::Le:
      return at::le(a, b);
  }
  return a;
}

// The values a comparison reads: real values of a quantized tensor, the
// stored values otherwise.
at::Tensor compared(const Value& v) { return is_quant8(v.type) ? real_values(v, at::kFloat) : v.t; }

template <Cmp kind>
void execute_compare(ExecContext& ctx) {
  const Value& a = ctx.in(0);
  const Value& b = ctx.in(ctx.form().at(R::SecondInput));
  at::infer_size(a.t.sizes(), b.t.sizes());  // throws unless they broadcast
  ctx.set_output(0, compare(kind, compared(a), compared(b)));
}

template <bool is_and>
void execute_logical(ExecContext& ctx) {
  const at::Tensor& a = ctx.in(0).t;
  const at::Tensor& b = ctx.in(ctx.form().at(R::SecondInput)).t;
  at::infer_size(a.sizes(), b.sizes());
  ctx.set_output(0, is_and ? at::logical_and(a, b) : at::logical_or(a, b));
}

void execute_logical_not(ExecContext& ctx) { ctx.set_output(0, at::logical_not(ctx.in(0).t)); }

// ---- SELECT: mask (TENSOR_BOOL8), x, y of the mask's shape: mask ? x : y.

// `v`'s stored values in the parameters of QUANT8 output `out`.
at::Tensor in_output_params(const Value& v, const Operand& out) {
  if (v.scale == out.scale && v.zero_point == out.zero_point) return v.t;
  return to_operand(real_values(v, at::kDouble), out);
}

void execute_select(ExecContext& ctx) {
  const nnapi::Form& f = ctx.form();
  const at::Tensor& mask = ctx.in(f.at(R::Mask)).t;
  const Value& x = ctx.in(f.at(R::IfTrue));
  const Value& y = ctx.in(f.at(R::IfFalse));
  if (mask.sizes() != x.t.sizes() || mask.sizes() != y.t.sizes())
    fail(Result::BadData, "SELECT needs the mask and both inputs of one shape");
  if (is_quant8(x.type)) {
    const Operand& out = ctx.out_operand(0);
    ctx.set_output(0, at::where(mask, in_output_params(x, out), in_output_params(y, out)));
    return;
  }
  ctx.set_output(0, at::where(mask, x.t, y.t));
}

}  // namespace

void add_logical_kernels(std::vector<OpKernel>& table) {
  table.push_back({Op::Equal, "EQUAL", execute_compare<Cmp::Eq>});
  table.push_back({Op::NotEqual, "NOT_EQUAL", execute_compare<Cmp::Ne>});
  table.push_back({Op::Greater, "GREATER", execute_compare<Cmp::Gt>});
  table.push_back({Op::GreaterEqual, "GREATER_EQUAL", execute_compare<Cmp::Ge>});
  table.push_back({Op::Less, "LESS", execute_compare<Cmp::Lt>});
  table.push_back({Op::LessEqual, "LESS_EQUAL", execute_compare<Cmp::Le>});
  table.push_back({Op::LogicalAnd, "LOGICAL_AND", execute_logical<true>});
  table.push_back({Op::LogicalOr, "LOGICAL_OR", execute_logical<false>});
  table.push_back({Op::LogicalNot, "LOGICAL_NOT", execute_logical_not});
  table.push_back({Op::Select, "SELECT", execute_select});
}

}  // namespace nnrt

// Broadcasting binary arithmetic: ADD, SUB, MUL, DIV (with a fused
// activation), MAXIMUM, MINIMUM. Quantized operands are computed on real
// values in double precision and requantized into the output's parameters.
#include "../kernel.h"

namespace nnrt {
namespace {

using T = OperandType;

void validate_arith(const ValidationContext& v) {
  v.input_count({3});
  v.output_count(1);
  v.input_type(0, {T::TensorFloat32, T::TensorFloat16, T::TensorInt32, T::TensorQuant8Asymm});
  v.same_type(1, 0);
  v.input_type(2, {T::Int32});
  v.output_same_type_as_input(0, 0);
}

void validate_div(const ValidationContext& v) {
  validate_arith(v);
  v.input_type(0, {T::TensorFloat32, T::TensorFloat16, T::TensorInt32});
}

void validate_minmax(const ValidationContext& v) {
  v.input_count({2});
  v.output_count(1);
  v.input_type(0, {T::TensorFloat32, T::TensorFloat16, T::TensorInt32, T::TensorQuant8Asymm});
  v.same_type(1, 0);
  v.output_same_type_as_input(0, 0);
}

enum class Binary { Add, Sub, Mul, Div, Max, Min };

at::Tensor apply(Binary kind, const at::Tensor& a, const at::Tensor& b, bool integer) {
  switch (kind) {
    case Binary::Add:
      return at::add(a, b);
    case Binary::Sub:
      return at::sub(a, b);
    case Binary::Mul:
      return at::mul(a, b);
    case Binary::Div:
      if (integer) {
        if (at::any(b == 0).item<bool>()) fail(Result::OpFailed, "integer division by zero");
        return at::div(a, b, "floor");
      }
      return at::div(a, b);
    case Binary::Max:
      return at::maximum(a, b);
    case Binary::Min:
      return at::minimum(a, b);
  }
  return a;
}

template <Binary kind>
void execute(ExecContext& ctx) {
  const Value& a = ctx.in(0);
  const Value& b = ctx.in(1);
  const bool has_fuse = kind != Binary::Max && kind != Binary::Min;
  const int32_t fuse = has_fuse ? ctx.i32(2) : 0;
  check_fuse_code(fuse);
  const Operand& out = ctx.out_operand(0);
  // Shapes broadcast numpy-style from the trailing dimension; throws if not.
  at::infer_size(a.t.sizes(), b.t.sizes());
  if (is_quant8(a.type)) {
    at::Tensor r = apply(kind, real_values(a, at::kDouble), real_values(b, at::kDouble), false);
    ctx.set_output(0, to_operand(r, out, fuse));
  } else if (a.type == T::TensorInt32) {
    ctx.set_output(0, to_operand(apply(kind, a.t, b.t, true), out, fuse));
  } else {
    at::Tensor r = apply(kind, a.t.to(at::kFloat), b.t.to(at::kFloat), false);
    ctx.set_output(0, to_operand(r, out, fuse));
  }
}

}  // namespace

void add_elementwise_kernels(std::vector<OpKernel>& table) {
  table.push_back({Op::Add, "ADD", validate_arith, execute<Binary::Add>});
  table.push_back({Op::Sub, "SUB", validate_arith, execute<Binary::Sub>});
  table.push_back({Op::Mul, "MUL", validate_arith, execute<Binary::Mul>});
  table.push_back({Op::Div, "DIV", validate_div, execute<Binary::Div>});
  table.push_back({Op::Maximum, "MAXIMUM", validate_minmax, execute<Binary::Max>});
  table.push_back({Op::Minimum, "MINIMUM", validate_minmax, execute<Binary::Min>});
}

}  // namespace nnrt

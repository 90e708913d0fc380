#include "lower/operand.h"

#include <sstream>

#include "lower/refusal.h"

namespace nnapi_convert {

bool Operand::use_nchw() const {
  if (dim_order == DimOrder::Contiguous) return true;
  if (dim_order == DimOrder::ChannelsLast) return false;
  fail("an operand with no known memory layout (a constant or scalar) is used as an image");
}

Shape fix_shape(const Shape& shape, DimOrder order) {
  // NNAPI has no rank-0 tensors; its own scalar results (MEAN or SQUEEZE of
  // every dim) have shape [1], which broadcasts as a 0-dim tensor does.
  if (shape.empty()) return {1};
  if (order == DimOrder::ChannelsLast) {
    check(shape.size() == 4,
          [&] { return "a channels-last operand must have 4 dims, got " + shape_str(shape); });
    Shape nnapi_dims;
    nnapi_dims.reserve(4);
    for (int64_t d : kToNhwc) nnapi_dims.push_back(shape[d]);
    return nnapi_dims;
  }
  if (is_frames(order)) {
    check(shape.size() == 5,
          [&] { return "a video operand must have 5 dims, got " + shape_str(shape); });
    const int64_t n = shape[0], c = shape[1], t = shape[2], h = shape[3], w = shape[4];
    return order == DimOrder::FramesNchw ? Shape{t * n, c, h, w} : Shape{t * n, h, w, c};
  }
  return shape;
}

int64_t nnapi_axis(DimOrder order, int64_t torch_dim) {
  check(!is_frames(order), "internal: a video operand's dims have no single NNAPI axis");
  return order == DimOrder::ChannelsLast ? kToNchw.at(torch_dim) : torch_dim;
}

int64_t nnapi_axis(const Operand& o, int64_t d) { return nnapi_axis(o.dim_order, d); }

int64_t torch_dim(DimOrder order, int64_t axis) {
  check(!is_frames(order), "internal: a video operand's dims have no single NNAPI axis");
  return order == DimOrder::ChannelsLast ? kToNhwc.at(axis) : axis;
}

int64_t py_index(int64_t index, int64_t size) {
  int64_t i = index < 0 ? index + size : index;
  check(i >= 0 && i < size, [&] {
    return "index " + std::to_string(index) + " is out of range for " + std::to_string(size) +
           " dims";
  });
  return i;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ")";
  return os.str();
}

SymInt sym_arith(const SymInt& a, char op, const SymInt& b) {
  if (a.is_constant() && b.is_constant()) {
    switch (op) {
      case '+':
        return {a.value + b.value, ""};
      case '-':
        return {a.value - b.value, ""};
      case '*':
        return {a.value * b.value, ""};
      default: {
        if (b.value == 0) throw std::invalid_argument("division by zero in shape arithmetic");
        int64_t q = a.value / b.value;
        if (a.value % b.value != 0 && ((a.value < 0) != (b.value < 0))) --q;
        return {q, ""};
      }
    }
  }
  if (op == '*' && a.is_constant() && a.value == 1) return b;
  if ((op == '*' || op == '/') && b.is_constant() && b.value == 1) return a;
  const std::string text = op == '/' ? " // " : std::string(" ") + op + " ";
  return {0, "(" + a.str() + text + b.str() + ")"};
}

SymInt sym_dim(int32_t id, const Shape& shape, int64_t d) {
  if (shape[d] == 0) return {0, flex_name(id, d)};
  return {shape[d], ""};
}

}  // namespace nnapi_convert

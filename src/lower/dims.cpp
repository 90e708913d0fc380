#include "lower/dims.h"

#include <algorithm>

namespace nnapi_convert {

namespace {

std::string num(int64_t v) { return std::to_string(v); }

}  // namespace

SymInt conv_out_dim(const SymInt& in, int64_t k, int64_t p0, int64_t p1, int64_t s,
                    bool transpose) {
  if (in.is_constant()) {
    return {transpose ? (in.value - 1) * s + k - p0 - p1 : (in.value - k + p0 + p1) / s + 1, ""};
  }
  if (transpose) {
    return {0, "(" + in.expr + " - 1) * " + num(s) + " + " + num(k) + " - " + num(p0) + " - " +
                   num(p1)};
  }
  return {0, "(" + in.expr + " - " + num(k) + " + " + num(p0) + " + " + num(p1) + ") // " + num(s) +
                 " + 1"};
}

SymInt padded_dim(const SymInt& in, int64_t n) {
  if (in.is_constant()) return {in.value + n, ""};
  if (n == 0) return in;
  return {0, "(" + in.expr + " + " + num(n) + ")"};
}

SymInt tiled_dim(const SymInt& in, int64_t m) {
  if (in.is_constant()) return {in.value * m, ""};
  if (m == 1) return in;
  return {0, "(" + in.expr + " * " + num(m) + ")"};
}

SymInt depth_to_space_dim(const SymInt& in, int64_t r) {
  if (in.is_constant()) return {in.value * r, ""};
  return {0, in.expr + " * " + num(r)};
}

SymInt space_to_depth_dim(const SymInt& in, int64_t r) {
  if (in.is_constant()) return {in.value / r, ""};
  return {0, in.expr + " // " + num(r)};
}

SymInt concat_dim(const std::vector<SymInt>& parts) {
  const bool fixed =
      std::all_of(parts.begin(), parts.end(), [](const SymInt& p) { return p.is_constant(); });
  if (fixed) {
    int64_t sum = 0;
    for (const SymInt& p : parts) sum += p.value;
    return {sum, ""};
  }
  std::string text;
  for (size_t k = 0; k < parts.size(); ++k) text += (k ? " + " : "") + parts[k].str();
  return {0, text};
}

std::vector<SymInt> broadcast_dims(const Shape& shape,
                                   std::initializer_list<const OperandHandle*> inputs) {
  const size_t n = shape.size();
  std::vector<SymInt> dims;
  for (size_t i = 0; i < n; ++i) {
    dims.push_back({shape[i], ""});
    if (shape[i] != 0) continue;
    for (const OperandHandle* in : inputs) {
      const size_t rank = in->op.shape.size();
      if (i + rank >= n && in->op.shape[i + rank - n] == 0) {
        dims.back() = sym_dim(in->id, in->op.shape, static_cast<int64_t>(i + rank - n));
        break;
      }
    }
  }
  return dims;
}

std::vector<SymInt> permuted_dims(const OperandHandle& x, const std::vector<int64_t>& perm) {
  std::vector<SymInt> dims;
  for (int64_t p : perm) dims.push_back(sym_dim(x.id, x.op.shape, p));
  return dims;
}

std::vector<SymInt> sym_shape(const OperandHandle& x) {
  std::vector<SymInt> dims;
  for (size_t d = 0; d < x.op.shape.size(); ++d) {
    dims.push_back(sym_dim(x.id, x.op.shape, static_cast<int64_t>(d)));
  }
  return dims;
}

Shape shape_of(const std::vector<SymInt>& dims) {
  Shape s;
  for (const SymInt& d : dims) s.push_back(d.is_constant() ? d.value : 0);
  return s;
}

SymInt sym_numel(const OperandHandle& x) {
  SymInt n{1, ""};
  for (const SymInt& d : sym_shape(x)) n = sym_arith(n, '*', d);
  return n;
}

std::vector<SymInt> dims_like(const Shape& shape, const OperandHandle* like) {
  std::vector<SymInt> dims;
  dims.reserve(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool forwarded =
        like && shape[d] == 0 && d < like->op.shape.size() && like->op.shape[d] == 0;
    dims.push_back(forwarded ? sym_dim(like->id, like->op.shape, static_cast<int64_t>(d))
                             : SymInt{shape[d], ""});
  }
  return dims;
}

}  // namespace nnapi_convert

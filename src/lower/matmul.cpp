// Matrix products of float32 tensors: aten::matmul, aten::bmm, aten::baddbmm,
// aten::cumsum (a product with a triangular matrix of ones),
// aten::t.
//
// A product with a constant 2-D right operand (x @ w, x @ w.t() once frozen)
// is a FULLY_CONNECTED with a zero bias (RESHAPE to 2-D and back around it),
// available on every NNAPI version. A product of two computed tensors is
// BATCH_MATMUL, which needs NNAPI feature level 6: both inputs of the same
// rank (2 to 4) and the same batch dims, so PyTorch's broadcasting becomes a
// RESHAPE that adds leading 1s and a TILE. Below that level
// (--min-android-api under 33) the product is one FULLY_CONNECTED per batch
// entry, whose weights are the right operand's transposed matrix.
#include "lower/matmul.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "lower/emit.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"
#include "nnapi_convert/validate.h"

namespace nnapi_convert {

using nnapi::Fuse;
using nnapi::Op;
using nnapi::OperandType;

// A float32 operand of a product, in PyTorch's element order.
OperandHandle product_operand(LoweringContext& cx, const Value* v, const char* what,
                              size_t min_rank) {
  auto [id, o] = cx.get_operand_or_constant(v, DimOrder::Contiguous);
  check(o.type == OperandType::TensorFloat32, [&] {
    return std::string(what) + " is supported on float32 tensors only, got " +
           nnapi::operand_type_name(o.type);
  });
  check(o.shape.size() >= min_rank, [&] {
    return std::string(what) + " of a " + std::to_string(o.shape.size()) +
           "-D tensor is not supported";
  });
  if (o.dim_order == DimOrder::ChannelsLast)
    return emit_relayout(cx, {id, o}, DimOrder::Contiguous);
  check(o.dim_order == DimOrder::Contiguous, "unknown memory layout");
  return {id, o};
}

// x (..., K) @ w (K, N) with w constant: FULLY_CONNECTED with weight w.t()
// and a zero bias on x flattened to (M, K), reshaped back to (..., N).
OperandHandle product_with_constant(LoweringContext& cx, const OperandHandle& x,
                                    const at::Tensor& w, const Value* out, const at::Tensor* bias,
                                    Fuse fuse) {
  std::vector<SymInt> dims = sym_shape(x);
  check(dims.back().is_constant(), "matmul over a flexible inner dimension is not supported");
  check(w.size(0) == dims.back().value, [&] {
    return "matmul of " + shape_str(x.op.shape) + " and " + shape_str(w.sizes().vec()) +
           ": inner dimensions differ";
  });
  const bool flat_input = dims.size() == 2;
  OperandHandle flat = x;
  if (!flat_input) {
    SymInt rows{1, ""};
    for (size_t i = 0; i + 1 < dims.size(); ++i) rows = sym_arith(rows, '*', dims[i]);
    flat = emit_reshape(cx, x, {rows, dims.back()});
  }
  ModelBuilder& m = cx.model();
  const int32_t weight_id = cx.add_weight(w.t().contiguous(), DimOrder::Contiguous);
  const int32_t bias_id =
      cx.add_weight(bias ? *bias : at::zeros({w.size(1)}, at::kFloat), DimOrder::Contiguous);
  const int32_t fuse_id = m.add_int_scalar(static_cast<int32_t>(fuse));
  Operand fc = x.op.with_shape({flat.op.shape[0], w.size(1)});
  const int32_t fc_id = make_output(cx, flat_input ? out : nullptr, fc, &flat);
  add_fully_connected(m, flat.id, weight_id, bias_id, fuse_id, fc_id);
  if (flat_input) return {fc_id, fc};
  dims.back() = SymInt{w.size(1), ""};
  return emit_reshape(cx, {fc_id, fc}, dims, out);
}

namespace {

bool is_constant_tensor(const LoweringContext& cx, const Value* v) {
  return cx.has_constant(v) && !cx.has_operand(v);
}

// `x` with leading 1s up to `rank` dims.
OperandHandle with_rank(LoweringContext& cx, const OperandHandle& x, size_t rank) {
  if (x.op.shape.size() == rank) return x;
  std::vector<SymInt> dims(rank - x.op.shape.size(), SymInt{1, ""});
  for (const SymInt& d : sym_shape(x)) dims.push_back(d);
  return emit_reshape(cx, x, dims);
}

// BATCH_MATMUL (input, input, adj_x, adj_y) came with NNAPI feature level 6:
// the lowering asks whether the target has it.
constexpr int kBatchMatmulInputs = 4;

// BATCH_MATMUL of `a` and `b` into `out`, with BOOL operands adj_x, adj_y.
void add_batch_matmul(ModelBuilder& m, int32_t a, int32_t b, int32_t adj_x, int32_t adj_y,
                      int32_t out) {
  using R = nnapi::Role;
  add_by_roles(m, Op::BatchMatmul,
               {{R::Input, a}, {R::SecondInput, b}, {R::AdjX, adj_x}, {R::AdjY, adj_y}}, {out});
}

std::vector<SymInt> fixed_dims(std::initializer_list<int64_t> v) {
  std::vector<SymInt> dims;
  for (int64_t d : v) dims.push_back(SymInt{d, ""});
  return dims;
}

// x (fixed shape) reshaped to `dims`; x itself when it has that shape already.
OperandHandle reshaped(LoweringContext& cx, const OperandHandle& x,
                       std::initializer_list<int64_t> dims) {
  if (x.op.shape == Shape(dims)) return x;
  return emit_reshape(cx, x, fixed_dims(dims));
}

// x with its last two dims swapped (TRANSPOSE).
OperandHandle swap_last_two(LoweringContext& cx, const OperandHandle& x) {
  const size_t r = x.op.shape.size();
  std::vector<int64_t> perm(r);
  for (size_t d = 0; d < r; ++d) perm[d] = static_cast<int64_t>(d);
  std::swap(perm[r - 1], perm[r - 2]);
  Shape shape = x.op.shape;
  std::swap(shape[r - 1], shape[r - 2]);
  const int32_t perm_id = cx.model().add_int_vector(perm);
  const Operand o = x.op.with_shape(shape);
  const int32_t id = make_output(cx, nullptr, o, &x);
  add_transpose(cx.model(), x.id, perm_id, id);
  return {id, o};
}

// The parts of x (fixed shape) along dim 0, one per entry, by one SPLIT.
std::vector<OperandHandle> split_batch(LoweringContext& cx, const OperandHandle& x) {
  std::vector<OperandHandle> parts;
  for (int32_t id : emit_split(cx, x, 0, std::vector<int64_t>(x.op.shape[0], 1)))
    parts.push_back({id, cx.operand(id)});
  return parts;
}

// a (B..., R, K) @ b (B..., K, C) of float32 over flexible sizes (windowed
// attention over a flexible batch, attention over a flexible length), below
// feature level 6: with the batch flattened to one dim N, MUL of a as
// (N, R, K, 1) and b as (N, 1, K, C), broadcast to (N, R, K, C), then
// REDUCE_SUM over K. NNAPI has both at level 3; the (N, R, K, C) product is
// R*K*C floats per batch entry.
OperandHandle products_by_broadcast(LoweringContext& cx, const OperandHandle& a,
                                    const OperandHandle& b, const Value* out) {
  const size_t r = a.op.shape.size();
  std::vector<SymInt> dims = sym_shape(a);
  const std::vector<SymInt> b_dims = sym_shape(b);
  const SymInt rows = dims[r - 2], k = dims[r - 1], cols = b_dims[r - 1];
  SymInt batch{1, ""};
  for (size_t d = 0; d + 2 < r; ++d) batch = sym_arith(batch, '*', dims[d]);
  const SymInt one{1, ""};
  const OperandHandle a4 = emit_reshape(cx, a, {batch, rows, k, one});
  const OperandHandle b4 = emit_reshape(cx, b, {batch, one, k, cols});
  const OperandHandle terms = emit_binary(cx, Op::Mul, a4, b4);
  Operand summed = terms.op;
  summed.shape[2] = 1;
  const int32_t sum_id = make_output(cx, nullptr, summed, &terms);
  ModelBuilder& m = cx.model();
  const int32_t axes_id = m.add_int_vector({2});
  add_reduce(m, Op::ReduceSum, terms.id, axes_id, m.add_bool_scalar(true), sum_id);
  dims.back() = cols;
  return emit_reshape(cx, {sum_id, summed}, dims, out);
}

// a (B..., R, K) @ b (B..., K, C) with equal, fixed batch dims, below feature
// level 6: b's matrices transposed by one TRANSPOSE, both split along the
// flattened batch by SPLIT, one FULLY_CONNECTED (weights b_i^T, zero bias)
// per batch entry, the results joined by CONCATENATION.
OperandHandle products_by_fully_connected(LoweringContext& cx, const OperandHandle& a,
                                          const OperandHandle& b, const Value* out) {
  const size_t r = a.op.shape.size();
  auto fixed = [](const Shape& s) { return std::find(s.begin(), s.end(), 0) == s.end(); };
  check(fixed(a.op.shape) && fixed(b.op.shape), [&] {
    const int level = nnapi_validate::level_with_inputs(Op::BatchMatmul, kBatchMatmulInputs);
    const std::string api = std::to_string(nnapi::android_api_of_feature_level(level));
    return "a product of two computed tensors over flexible sizes (" + shape_str(a.op.shape) +
           " and " + shape_str(b.op.shape) +
           ") needs the NNAPI operation BATCH_MATMUL, of NNAPI feature level " +
           std::to_string(level) + " (Android API level " + api + "); give --min-android-api " +
           api + " if every device you ship to has it, or give fixed sizes in --input";
  });
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < r; ++d) batch *= a.op.shape[d];
  const int64_t rows = a.op.shape[r - 2], k = a.op.shape[r - 1], cols = b.op.shape[r - 1];
  std::vector<OperandHandle> as, bs;
  if (batch == 1) {
    as = {reshaped(cx, a, {rows, k})};
    bs = {swap_last_two(cx, reshaped(cx, b, {k, cols}))};
  } else {
    as = split_batch(cx, reshaped(cx, a, {batch, rows, k}));
    bs = split_batch(cx, swap_last_two(cx, reshaped(cx, b, {batch, k, cols})));
  }
  ModelBuilder& m = cx.model();
  const int32_t bias = cx.add_weight(at::zeros({cols}, at::kFloat), DimOrder::Contiguous);
  const int32_t fuse = m.add_int_scalar(static_cast<int32_t>(Fuse::None));
  const Operand fc = a.op.with_shape({rows, cols});
  std::vector<OperandHandle> products;
  for (int64_t i = 0; i < batch; ++i) {
    const OperandHandle ai = reshaped(cx, as[i], {rows, k});
    const OperandHandle bi = reshaped(cx, bs[i], {cols, k});
    products.push_back({cx.add_anonymous_operand(fc), fc});
    add_fully_connected(m, ai.id, bi.id, bias, fuse, products.back().id);
  }
  const OperandHandle joined = batch > 1 ? emit_concat(cx, products, 0) : products[0];
  Shape shape = a.op.shape;
  shape.back() = cols;
  if (!out && joined.op.shape == shape) return joined;
  std::vector<SymInt> dims = sym_shape(a);
  dims.back() = SymInt{cols, ""};
  return emit_reshape(cx, joined, dims, out);
}

// a @ b below feature level 6 (no BATCH_MATMUL): FULLY_CONNECTED per batch
// entry at fixed sizes; a broadcast product over flexible float32 ones
// (FULLY_CONNECTED's weights would be of a size unknown until the model runs).
OperandHandle products_without_batch_matmul(LoweringContext& cx, const OperandHandle& a,
                                            const OperandHandle& b, const Value* out) {
  auto flexible = [](const Shape& s) { return std::find(s.begin(), s.end(), 0) != s.end(); };
  if (a.op.type == OperandType::TensorFloat32 && (flexible(a.op.shape) || flexible(b.op.shape))) {
    return products_by_broadcast(cx, a, b, out);
  }
  return products_by_fully_connected(cx, a, b, out);
}

}  // namespace

// BATCH_MATMUL of a (..., R, K) and b (..., K, C) with equal batch dims.
OperandHandle emit_batch_matmul(LoweringContext& cx, const OperandHandle& a, const OperandHandle& b,
                                const Value* out) {
  if (!cx.has_operation(Op::BatchMatmul, kBatchMatmulInputs)) {
    return products_without_batch_matmul(cx, a, b, out);
  }
  const size_t r = a.op.shape.size();
  // a's dims, but the last: b's.
  std::vector<SymInt> dims = sym_shape(a);
  dims[r - 1] = sym_dim(b.id, b.op.shape, static_cast<int64_t>(r - 1));
  ModelBuilder& m = cx.model();
  const int32_t adj_x = m.add_bool_scalar(false);
  const int32_t adj_y = m.add_bool_scalar(false);
  const OperandHandle y = cx.add_output(out, a.op, dims);
  add_batch_matmul(m, a.id, b.id, adj_x, adj_y, y.id);
  return y;
}

namespace {

bool is_float_matrix_constant(const LoweringContext& cx, const Value* v, int64_t rank) {
  return is_constant_tensor(cx, v) && cx.constant_tensor(v).dim() == rank &&
         cx.constant_tensor(v).scalar_type() == at::kFloat;
}

size_t value_rank(const LoweringContext& cx, const Value* v) {
  return cx.has_operand(v) ? cx.get_operand(v).op.shape.size()
                           : static_cast<size_t>(cx.constant_tensor(v).dim());
}

OperandHandle product_of(LoweringContext& cx, OperandHandle a, OperandHandle b, const char* what,
                         const Value* out);

// av @ bv, bound to `out` when given.
OperandHandle product(LoweringContext& cx, const Value* av, const Value* bv, const char* what,
                      const Value* out) {
  const size_t ra = value_rank(cx, av), rb = value_rank(cx, bv);
  check(ra >= 1 && rb >= 1 && !(ra == 1 && rb == 1), [&] {
    return std::string(what) + " of a " + std::to_string(ra) + "-D and a " + std::to_string(rb) +
           "-D tensor is not supported (NNAPI has no 0-D results of a dot product)";
  });
  if (ra == 1 || rb == 1) {
    // PyTorch reads a 1-D left operand as (1, K) and a 1-D right operand as
    // (K, 1), and drops that dim from the result.
    OperandHandle r{-1, {}};
    if (ra == 1) {
      OperandHandle v = product_operand(cx, av, what, 1);
      OperandHandle a = emit_reshape(cx, v, {SymInt{1, ""}, sym_dim(v.id, v.op.shape, 0)});
      r = is_float_matrix_constant(cx, bv, 2)
              ? product_with_constant(cx, a, cx.constant_tensor(bv), nullptr)
              : product_of(cx, a, product_operand(cx, bv, what), what, nullptr);
    } else if (is_float_matrix_constant(cx, bv, 1)) {
      r = product_with_constant(cx, product_operand(cx, av, what),
                                cx.constant_tensor(bv).reshape({-1, 1}), nullptr);
    } else {
      OperandHandle v = product_operand(cx, bv, what, 1);
      OperandHandle b = emit_reshape(cx, v, {sym_dim(v.id, v.op.shape, 0), SymInt{1, ""}});
      r = product_of(cx, product_operand(cx, av, what), b, what, nullptr);
    }
    std::vector<SymInt> dims = sym_shape(r);
    dims.erase(dims.end() - (rb == 1 ? 1 : 2));
    return emit_reshape(cx, r, dims, out);
  }
  OperandHandle a = product_operand(cx, av, what);
  if (is_float_matrix_constant(cx, bv, 2)) {
    return product_with_constant(cx, a, cx.constant_tensor(bv), out);
  }
  return product_of(cx, a, product_operand(cx, bv, what), what, out);
}

// a @ b for computed a and b of rank 2 or more.
OperandHandle product_of(LoweringContext& cx, OperandHandle a, OperandHandle b, const char* what,
                         const Value* out) {
  const size_t ra = a.op.shape.size(), rb = b.op.shape.size();
  const int64_t k = a.op.shape[ra - 1];
  if (k == 0 && b.op.shape[rb - 2] == 0) {
    // A flexible inner size (attention over a flexible sequence length:
    // softmax(q @ k^T) @ v): equal when the model runs, as PyTorch requires.
    // BATCH_MATMUL multiplies over it; below feature level 6,
    // products_without_batch_matmul's broadcast product.
    cx.add_shape_line("assert " + flex_name(a.id, static_cast<int64_t>(ra) - 1) +
                      " == " + flex_name(b.id, static_cast<int64_t>(rb) - 2));
  } else {
    check(k != 0 && b.op.shape[rb - 2] == k, [&] {
      return std::string(what) + " of " + shape_str(a.op.shape) + " and " + shape_str(b.op.shape) +
             ": inner dimensions differ, or one is flexible and the " + "other fixed";
    });
  }
  if (rb == 2 && ra > 2) {
    // (..., R, K) @ (K, C): one 2-D product of a flattened to (M, K).
    std::vector<SymInt> dims = sym_shape(a);
    SymInt rows{1, ""};
    for (size_t i = 0; i + 1 < ra; ++i) rows = sym_arith(rows, '*', dims[i]);
    OperandHandle flat = emit_reshape(cx, a, {rows, dims.back()});
    if (!cx.has_operation(Op::BatchMatmul, kBatchMatmulInputs)) {
      dims.back() = SymInt{b.op.shape[1], ""};
      return emit_reshape(cx, products_without_batch_matmul(cx, flat, b, nullptr), dims, out);
    }
    const int32_t id =
        cx.add_output(nullptr, a.op,
                      {sym_dim(flat.id, flat.op.shape, 0), sym_dim(b.id, b.op.shape, 1)})
            .id;
    ModelBuilder& m = cx.model();
    const int32_t adj_x = m.add_bool_scalar(false);
    const int32_t adj_y = m.add_bool_scalar(false);
    add_batch_matmul(m, flat.id, b.id, adj_x, adj_y, id);
    dims.back() = sym_dim(b.id, b.op.shape, 1);
    return emit_reshape(cx, {id, cx.operand(id)}, dims, out);
  }
  const size_t r = std::max(ra, rb);
  check(r <= 4, [&] {
    return std::string(what) + " of tensors with more than 4 dims is not supported (NNAPI's " +
           "BATCH_MATMUL takes ranks 2 to 4)";
  });
  a = with_rank(cx, a, r);
  b = with_rank(cx, b, r);
  // Broadcast the batch dims: TILE the side whose dim is 1.
  std::vector<int64_t> tile_a(r, 1), tile_b(r, 1);
  for (size_t d = 0; d + 2 < r; ++d) {
    const int64_t sa = a.op.shape[d], sb = b.op.shape[d];
    if (sa == sb && sa != 0) continue;
    if (sa == 0 && sb == 0) {
      // Equal when the model runs, as PyTorch requires unless one of them is 1.
      cx.add_shape_line("assert " + flex_name(a.id, d) + " == " + flex_name(b.id, d));
      continue;
    }
    check(sa != 0 && sb != 0, [&] {
      return std::string(what) + " broadcasting a flexible batch dim against a fixed one (" +
             shape_str(a.op.shape) + " and " + shape_str(b.op.shape) + ") is not supported";
    });
    check(sa == 1 || sb == 1, [&] {
      return std::string(what) + " of " + shape_str(a.op.shape) + " and " + shape_str(b.op.shape) +
             ": batch dims do not broadcast";
    });
    (sa == 1 ? tile_a[d] : tile_b[d]) = sa == 1 ? sb : sa;
  }
  auto tiles = [](const std::vector<int64_t>& m) {
    return std::any_of(m.begin(), m.end(), [](int64_t k) { return k != 1; });
  };
  if (tiles(tile_a)) a = emit_tile(cx, a, tile_a);
  if (tiles(tile_b)) b = emit_tile(cx, b, tile_b);
  return emit_batch_matmul(cx, a, b, out);
}

// quantized::matmul(qa, qb, scale, zero_point) of two computed quint8
// tensors: PyTorch's kernel multiplies the dequantized values in float and
// quantizes the product; so does this: DEQUANTIZE both, the float product,
// QUANTIZE (NNAPI's quant8 BATCH_MATMUL, from feature level 6, would need
// both inputs at one scale).
void lower_qmatmul(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 4, "malformed quantized::matmul");
  const auto operand = [&](const Value* v) {
    const OperandHandle x = cx.get_operand(v);
    check(x.op.type == OperandType::TensorQuant8Asymm && x.op.shape.size() >= 2,
          "quantized::matmul needs two quantized tensors of rank 2 or more");
    return emit_relayout(cx, emit_dequantize(cx, x), DimOrder::Contiguous);
  };
  const OperandHandle y = product_of(cx, operand(node->input(0)), operand(node->input(1)),
                                     "quantized::matmul", nullptr);
  emit_quantize(cx, y, cx.constant_float(node->input(2)), cx.constant_int(node->input(3)),
                node->output());
}

void lower_product(LoweringContext& cx, const Node* node, const char* what) {
  check(node->inputs().size() == 2, [&] { return std::string("malformed aten::") + what; });
  product(cx, node->input(0), node->input(1), what, node->output());
}

// baddbmm(input, batch1, batch2, beta, alpha) = beta * input + alpha * (batch1
// @ batch2), what nn.MultiheadAttention computes with an attention mask: the
// product, then an ADD of input (broadcast, e.g. a constant mask). An alpha or
// beta other than 1 is a MUL by it (float32) of the product or of input; with
// beta 0 input is not read (as PyTorch ignores it, NaNs included).
void lower_baddbmm(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 5, "malformed aten::baddbmm");
  const double beta = cx.constant_number(node->input(3));
  const double alpha = cx.constant_number(node->input(4));
  OperandHandle prod = product(cx, node->input(1), node->input(2), "baddbmm",
                               beta == 0 && alpha == 1 ? node->output() : nullptr);
  if (alpha != 1) {
    prod = emit_binary(cx, Op::Mul, prod, float_scalar_tensor(cx, static_cast<float>(alpha)),
                       Fuse::None, beta == 0 ? node->output() : nullptr);
  }
  if (beta == 0) return;
  auto [id, o] = cx.get_operand_or_constant(node->input(0), DimOrder::Contiguous);
  check(o.type == OperandType::TensorFloat32 && o.dim_order == DimOrder::Contiguous,
        "baddbmm needs a float32 input in PyTorch's element order");
  OperandHandle input{id, o};
  if (beta != 1) {
    input = emit_binary(cx, Op::Mul, input, float_scalar_tensor(cx, static_cast<float>(beta)));
  }
  emit_binary(cx, Op::Add, prod, input, Fuse::None, node->output());
}

// cumsum(x, dim, dtype) = x @ U along dim, U the upper triangular (n, n)
// matrix of ones: the dim moved last (TRANSPOSE; NHWC data made NCHW first),
// FULLY_CONNECTED (product_with_constant) and moved back. Each output is a sum
// of the same terms as PyTorch's running sum, added in another order (float32
// rounding of that order).
void lower_cumsum(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 3, "malformed aten::cumsum");
  check(cx.constant_is_none(node->input(2)) ||
            static_cast<c10::ScalarType>(cx.constant_int(node->input(2))) == at::kFloat,
        "cumsum with a dtype other than float32 is not supported");
  OperandHandle x = product_operand(cx, node->input(0), "cumsum", 1);
  const auto rank = static_cast<int64_t>(x.op.shape.size());
  const int64_t d = py_index(cx.constant_int(node->input(1)), rank);
  const int64_t n = x.op.shape[d];
  check(n > 0, "cumsum along a flexible dimension is not supported; give it a fixed size");
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != d) perm.push_back(i);
  }
  perm.push_back(d);
  std::vector<int64_t> back(rank);
  for (int64_t i = 0; i < rank; ++i) back[perm[i]] = i;
  const bool moved = d != rank - 1;
  OperandHandle y = emit_permute(cx, x, perm);
  y = product_with_constant(cx, y, at::ones({n, n}, at::kFloat).triu(),
                            moved ? nullptr : node->output());
  if (moved) {
    y = emit_permute(cx, y, back);
    cx.reinterpret(node->output(), y.id, y.op);
  }
}

// t(x): the transpose of a 2-D tensor; 0-D and 1-D tensors are returned as is.
void lower_t(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() == 1, "malformed aten::t");
  const Value* in = node->input(0);
  if (is_constant_tensor(cx, in)) {
    at::Tensor t = cx.constant_tensor(in);
    cx.add_constant(node->output(), node->output()->type(), t.t().contiguous());
    return;
  }
  auto [id, o] = cx.get_operand(in);
  if (o.shape.size() < 2) {
    cx.alias(node->output(), in);
    return;
  }
  check(o.shape.size() == 2, "aten::t needs a tensor of at most 2 dims");
  const auto transpose = [&](const std::vector<OperandHandle>& x, const Value* out) {
    // Moved as float32 (no `out`): emit_permute's TRANSPOSE.
    if (out == nullptr) return emit_permute(cx, x[0], {1, 0});
    ModelBuilder& m = cx.model();
    const int32_t perm = m.add_int_vector({1, 0});
    const OperandHandle y = cx.add_output(out, x[0].op, permuted_dims(x[0], {1, 0}));
    add_transpose(m, x[0].id, perm, y.id);
    return y;
  };
  move_int32(cx, {Op::Transpose}, {{id, o}}, node->output(), transpose);
}

}  // namespace

void register_matmul_ops(LoweringTable& t) {
  t.add("aten::matmul", [](LoweringContext& cx, const Node* n) { lower_product(cx, n, "matmul"); })
      .with_note(
          "float32; with a constant 2-D right side it is FULLY_CONNECTED; a product of two "
          "computed tensors is BATCH_MATMUL (NNAPI feature level 6) with --min-android-api 33 "
          "or more, else one FULLY_CONNECTED per batch entry (fixed sizes only)");
  t.add("aten::bmm", [](LoweringContext& cx, const Node* n) {
     for (const Value* v : n->inputs()) {
       const size_t rank = cx.has_operand(v) ? cx.get_operand(v).op.shape.size()
                                             : static_cast<size_t>(cx.constant_tensor(v).dim());
       check(rank == 3, "bmm needs 3-D tensors");
     }
     lower_product(cx, n, "bmm");
   }).with_note("as aten::matmul of two computed tensors");
  t.add("aten::baddbmm", lower_baddbmm);
  t.add("quantized::matmul", lower_qmatmul);
  t.add("aten::cumsum", lower_cumsum)
      .with_note(
          "float32: FULLY_CONNECTED with a triangular matrix of ones along the dim (fixed size)");
  t.add("aten::t", lower_t).with_moves(Moves::First);
}

}  // namespace nnapi_convert

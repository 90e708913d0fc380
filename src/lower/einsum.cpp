// aten::einsum of two float32 tensors as one matrix product: each operand is
// transposed to (batch, free, contracted) or (batch, contracted, free) order
// and reshaped to 3-D (2-D without batch letters), multiplied (BATCH_MATMUL,
// or FULLY_CONNECTED when the right operand is constant and has no batch
// letters), then reshaped to the letters of the result and transposed to the
// equation's output order. Equations with an ellipsis, a letter repeated in
// one operand, a letter summed within one operand, or other than two operands
// are refused, naming the equation. Fixed sizes only.
#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "lower/matmul.h"
#include "lower/rank_reduce.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {
namespace {

using nnapi::Op;

struct Equation {
  std::string a, b, out;
};

Equation parse_equation(const std::string& text) {
  std::string s;
  for (char c : text) {
    if (c != ' ') s += c;
  }
  auto refuse = [&](const std::string& why) {
    fail("einsum equation \"" + text + "\" is not supported: " + why);
  };
  if (s.find("...") != std::string::npos) refuse("ellipsis");
  const size_t arrow = s.find("->");
  if (arrow == std::string::npos) refuse("it needs an explicit output (->)");
  const std::string lhs = s.substr(0, arrow);
  const size_t comma = lhs.find(',');
  if (comma == std::string::npos || lhs.find(',', comma + 1) != std::string::npos)
    refuse("only two operands are supported");
  Equation e{lhs.substr(0, comma), lhs.substr(comma + 1), s.substr(arrow + 2)};
  for (const std::string* t : {&e.a, &e.b, &e.out}) {
    for (size_t i = 0; i < t->size(); ++i) {
      if (!std::isalpha(static_cast<unsigned char>((*t)[i]))) refuse("letters only");
      if (t->find((*t)[i], i + 1) != std::string::npos) refuse("a letter repeats in one term");
    }
  }
  for (char c : e.out) {
    if (e.a.find(c) == std::string::npos && e.b.find(c) == std::string::npos)
      refuse(std::string("output letter '") + c + "' is in no operand");
  }
  for (const std::string* t : {&e.a, &e.b}) {
    const std::string& other = t == &e.a ? e.b : e.a;
    for (char c : *t) {
      if (other.find(c) == std::string::npos && e.out.find(c) == std::string::npos)
        refuse(std::string("letter '") + c + "' is summed within one operand");
    }
  }
  return e;
}

// `x` (letters `have`) transposed to the letters of `groups` in order and
// reshaped to one dim per non-empty group.
OperandHandle arrange(LoweringContext& cx, const OperandHandle& x, const std::string& have,
                      const std::vector<std::string>& groups) {
  std::vector<int64_t> perm;
  std::vector<SymInt> dims;
  for (const std::string& g : groups) {
    int64_t size = 1;
    for (char c : g) {
      perm.push_back(static_cast<int64_t>(have.find(c)));
      size *= x.op.shape[perm.back()];
    }
    if (!g.empty()) dims.push_back(SymInt{size, ""});
  }
  // (Of rank > 4, the permute is done on merged dims.)
  OperandHandle p = x.op.shape.size() > 4 ? permute_merged(cx, x, perm) : emit_permute(cx, x, perm);
  if (dims.size() == p.op.shape.size() && p.op.shape.size() <= 4) return p;
  return emit_reshape(cx, p, dims);
}

void lower_einsum(LoweringContext& cx, const Node* node) {
  check(node->inputs().size() >= 2, "malformed aten::einsum");
  const std::string text = cx.constant(node->input(0)).value.toStringRef();
  const auto& tensors = cx.sequence(node->input(1));
  const Equation e = parse_equation(text);
  check(tensors.size() == 2, "einsum \"" + text + "\" needs two tensors");
  const Value* bv = tensors[1];
  OperandHandle a = product_operand(cx, tensors[0], "einsum", 1);
  const bool b_constant = cx.has_constant(bv) && !cx.has_operand(bv);
  std::string batch, afree, bfree, contracted;
  for (char c : e.a) {
    const bool in_b = e.b.find(c) != std::string::npos;
    const bool in_out = e.out.find(c) != std::string::npos;
    (in_b ? (in_out ? batch : contracted) : afree) += c;
  }
  for (char c : e.b) {
    if (e.a.find(c) == std::string::npos) bfree += c;
  }
  check(a.op.shape.size() == e.a.size(),
        "einsum \"" + text + "\": the first tensor's rank " + "differs from its letters");
  for (int64_t s : a.op.shape) {
    check(s != 0, "einsum \"" + text + "\" over a flexible dimension is not supported");
  }
  std::vector<SymInt> out_dims;
  std::string out_letters = batch + afree + bfree;
  auto size_of = [&](char c, const Shape& bshape) {
    const size_t i = e.a.find(c);
    return i != std::string::npos ? a.op.shape[i] : bshape[e.b.find(c)];
  };
  OperandHandle r{-1, {}};
  if (b_constant && batch.empty()) {
    at::Tensor w = cx.constant_tensor(bv);
    check(w.dim() == int64_t(e.b.size()) && w.scalar_type() == at::kFloat,
          "einsum \"" + text + "\": the second tensor must be float32 of the letters' rank");
    std::vector<int64_t> perm;
    for (char c : contracted + bfree) perm.push_back(static_cast<int64_t>(e.b.find(c)));
    int64_t k = 1, n = 1;
    for (char c : contracted) k *= w.size(e.b.find(c));
    for (char c : bfree) n *= w.size(e.b.find(c));
    OperandHandle x = arrange(cx, a, e.a, {afree, contracted});
    if (afree.empty()) x = emit_reshape(cx, x, {SymInt{1, ""}, SymInt{k, ""}});
    if (contracted.empty()) x = emit_reshape(cx, x, {sym_shape(x)[0], SymInt{1, ""}});
    r = product_with_constant(cx, x, w.permute(perm).reshape({k, n}), nullptr);
    for (char c : out_letters) out_dims.push_back(SymInt{size_of(c, w.sizes().vec()), ""});
  } else {
    OperandHandle b = product_operand(cx, bv, "einsum", 1);
    check(b.op.shape.size() == e.b.size(),
          "einsum \"" + text + "\": the second tensor's rank " + "differs from its letters");
    for (char c : batch + contracted) {
      check(a.op.shape[e.a.find(c)] == b.op.shape[e.b.find(c)],
            "einsum \"" + text + "\": sizes of '" + std::string(1, c) + "' differ");
    }
    for (int64_t s : b.op.shape) {
      check(s != 0, "einsum \"" + text + "\" over a flexible dimension is not supported");
    }
    // Empty groups become dims of size 1 so both sides are (B, M, K), (B, K, N).
    auto grouped = [&](const OperandHandle& x, const std::string& have,
                       const std::vector<std::string>& groups) {
      OperandHandle y = arrange(cx, x, have, groups);
      std::vector<SymInt> dims;
      for (const std::string& g : groups) {
        int64_t size = 1;
        for (char c : g) size *= x.op.shape[have.find(c)];
        dims.push_back(SymInt{size, ""});
      }
      if (y.op.shape.size() == dims.size()) return y;
      return emit_reshape(cx, y, dims);
    };
    const OperandHandle a3 = grouped(a, e.a, {batch, afree, contracted});
    const OperandHandle b3 = grouped(b, e.b, {batch, contracted, bfree});
    r = emit_batch_matmul(cx, a3, b3, nullptr);
    for (char c : out_letters) out_dims.push_back(SymInt{size_of(c, b.op.shape), ""});
  }
  if (out_dims.empty()) out_dims.push_back(SymInt{1, ""});
  // The result's letters in (batch, afree, bfree) order, then the output's.
  std::vector<int64_t> perm;
  for (char c : e.out) perm.push_back(static_cast<int64_t>(out_letters.find(c)));
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
  Shape out_shape;
  for (const SymInt& d : out_dims) out_shape.push_back(d.value);
  if (identity) {
    bind_reshaped(cx, r, out_shape, node->output());
    return;
  }
  if (out_shape.size() > 4) {
    const OperandHandle p = permute_merged(cx, {r.id, r.op.with_shape(out_shape)}, perm);
    bind_reshaped(cx, {p.id, cx.operand(p.id)}, p.op.shape, node->output());
    return;
  }
  OperandHandle shaped = emit_reshape(cx, r, out_dims);
  Shape shape;
  for (int64_t p : perm) shape.push_back(shaped.op.shape[p]);
  const int32_t id = cx.add_tensor_operand(node->output(), shaped.op.with_shape(shape));
  add_transpose(cx.model(), shaped.id, cx.model().add_int_vector(perm), id);
}

}  // namespace

void register_einsum_ops(LoweringTable& t) {
  t.add("aten::einsum", lower_einsum)
      .with_note(
          "two float32 operands, fixed sizes: TRANSPOSE/RESHAPE to one BATCH_MATMUL (or "
          "FULLY_CONNECTED with a constant right operand and no batch letters); no ellipsis, "
          "no letter summed within one operand")
      .with_reads_above_rank_4();
}

}  // namespace nnapi_convert

// Reductions and selection along axes (NNAPI feature level 3): ARGMAX,
// ARGMIN, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_ALL, REDUCE_ANY and
// TOPK_V2. Quantized inputs are ordered by their stored values (the scale is
// positive, so that is the order of the real values); REDUCE_MAX/MIN and
// TOPK_V2 keep the input's scale and zero point.
#include <algorithm>

#include "../kernel.h"

namespace nnrt {
namespace {

// ---- ARGMAX, ARGMIN: input, axis (INT32, in [-rank, rank)): the index of
// the largest (smallest) element along the axis, which is removed; the first
// such index on ties, as Android's reference implementation (a strict
// comparison scanning upwards) gives.

template <bool is_max>
void execute_arg(ExecContext& ctx) {
  const at::Tensor& x = ctx.in(0).t;
  const int64_t axis = wrap_axis(ctx.i32(ctx.form().at(R::Axis)), x.dim());
  // at::argmax/argmin return the first index of the extreme value.
  at::Tensor wide = x.scalar_type() == at::kHalf ? x.to(at::kFloat) : x;
  at::Tensor r = is_max ? at::argmax(wide, axis) : at::argmin(wide, axis);
  ctx.set_output(0, r.to(at::kInt));
}

// ---- REDUCE_*: input, axes (1-D TENSOR_INT32, each in [-rank, rank),
// repeats allowed), keep_dims (BOOL).

enum class Reduce { Max, Min, Prod, All, Any };

at::Tensor reduce_one(Reduce kind, const at::Tensor& x, int64_t axis, bool keep) {
  switch (kind) {
    case Reduce::Max:
      return at::amax(x, {axis}, keep);
    case Reduce::Min:
      return at::amin(x, {axis}, keep);
    case Reduce::Prod:  // LibTorch has no float16 prod on the CPU: in float32, rounded once
      return x.scalar_type() == at::kHalf ? at::prod(x.to(at::kFloat), axis, keep).to(at::kHalf)
                                          : at::prod(x, axis, keep);
    case Reduce::All:
      return at::all(x, axis, keep);
    case Reduce::Any:
      return at::any(x, axis, keep);
  }
  return x;
}

template <Reduce kind>
void execute_reduce(ExecContext& ctx) {
  at::Tensor x = ctx.in(0).t;
  std::vector<int64_t> axes;
  const nnapi::Form& f = ctx.form();
  for (int64_t a : ctx.int_list(f.at(R::Axes))) axes.push_back(wrap_axis(a, x.dim()));
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  const bool keep = ctx.flag(f.at(R::KeepDims));
  // Highest axis first, so that the lower ones keep their numbers.
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) x = reduce_one(kind, x, *it, keep);
  ctx.set_output(0, x.contiguous());
}

// ---- TOPK_V2: input, k (INT32): along the last dim, the k largest values
// in descending order and their indices; of equal values the one with the
// larger index comes first (NeuralNetworks.h).

void execute_topk(ExecContext& ctx) {
  const at::Tensor& x = ctx.in(0).t;
  const int64_t k = ctx.i32(ctx.form().at(R::K));
  const int64_t n = x.size(-1);
  if (k < 1 || k > n)
    fail(Result::BadData,
         "TOPK_V2's k is " + std::to_string(k) + " for a last dim of " + std::to_string(n));
  // A stable descending sort of the reversed row keeps equal values in
  // reversed order: the larger original index first.
  at::Tensor flipped = x.flip({-1});
  at::Tensor wide = flipped.scalar_type() == at::kHalf ? flipped.to(at::kFloat) : flipped;
  auto sorted = at::sort(wide, /*stable=*/true, /*dim=*/-1, /*descending=*/true);
  at::Tensor order = std::get<1>(sorted).narrow(-1, 0, k);
  ctx.set_output(0, flipped.gather(-1, order).contiguous());
  ctx.set_output(1, ((n - 1) - order).to(at::kInt));
}

}  // namespace

void add_reduce_kernels(std::vector<OpKernel>& table) {
  table.push_back({Op::ArgMax, "ARGMAX", execute_arg<true>});
  table.push_back({Op::ArgMin, "ARGMIN", execute_arg<false>});
  table.push_back({Op::ReduceMax, "REDUCE_MAX", execute_reduce<Reduce::Max>});
  table.push_back({Op::ReduceMin, "REDUCE_MIN", execute_reduce<Reduce::Min>});
  table.push_back({Op::ReduceProd, "REDUCE_PROD", execute_reduce<Reduce::Prod>});
  table.push_back({Op::ReduceAll, "REDUCE_ALL", execute_reduce<Reduce::All>});
  table.push_back({Op::ReduceAny, "REDUCE_ANY", execute_reduce<Reduce::Any>});
  table.push_back({Op::TopKV2, "TOPK_V2", execute_topk});
}

}  // namespace nnrt

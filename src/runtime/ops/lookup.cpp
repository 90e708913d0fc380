// EMBEDDING_LOOKUP and HASHTABLE_LOOKUP, as NeuralNetworks.h defines them:
//   EMBEDDING_LOOKUP: out[i, ...] = values[lookups[i], ...]; a lookup outside
//     [0, rows) fails the operation.
//   HASHTABLE_LOOKUP: keys sorted ascending; for lookup i, the row r with
//     keys[r] == lookups[i] gives out[i, ...] = values[r, ...] and hits[i] =
//     1; a miss gives a slice of zero bytes (as Android's reference kernel
//     writes: 0.0, 0, or the quantized value 0) and hits[i] = 0.
// Any element type: the slices are copied as they are.
#include <algorithm>

#include "../kernel.h"

namespace nnrt {
namespace {

void execute_embedding_lookup(ExecContext& ctx) {
  const std::vector<int64_t> lookups = ctx.int_list(0);
  const at::Tensor& values = ctx.in(1).t;
  const int64_t rows = values.size(0);
  for (int64_t k : lookups)
    if (k < 0 || k >= rows)
      fail(Result::BadData, "lookup " + std::to_string(k) + " is outside the " +
                                std::to_string(rows) + " rows of the values");
  at::Tensor idx = at::tensor(lookups, at::kLong);
  ctx.set_output(0, values.index_select(0, idx).contiguous());
}

void execute_hashtable_lookup(ExecContext& ctx) {
  const std::vector<int64_t> lookups = ctx.int_list(0);
  const std::vector<int64_t> keys = ctx.int_list(1);
  const at::Tensor& values = ctx.in(2).t;
  if (values.size(0) != static_cast<int64_t>(keys.size()))
    fail(Result::BadData, "keys and values differ in their first dimension");
  std::vector<int64_t> sizes = values.sizes().vec();
  sizes[0] = static_cast<int64_t>(lookups.size());
  at::Tensor out = at::zeros(sizes, values.options());
  at::Tensor hits = at::zeros({static_cast<int64_t>(lookups.size())}, at::kByte);
  for (size_t i = 0; i < lookups.size(); ++i) {
    auto it = std::lower_bound(keys.begin(), keys.end(), lookups[i]);
    if (it == keys.end() || *it != lookups[i]) continue;
    out[static_cast<int64_t>(i)].copy_(values[it - keys.begin()]);
    hits[static_cast<int64_t>(i)] = 1;
  }
  ctx.set_output(0, out);
  ctx.set_output(1, hits);
}

}  // namespace

void add_lookup_kernels(std::vector<OpKernel>& table) {
  table.push_back({Op::EmbeddingLookup, "EMBEDDING_LOOKUP", execute_embedding_lookup});
  table.push_back({Op::HashtableLookup, "HASHTABLE_LOOKUP", execute_hashtable_lookup});
}

}  // namespace nnrt

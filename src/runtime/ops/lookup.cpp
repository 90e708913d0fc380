// EMBEDDING_LOOKUP, HASHTABLE_LOOKUP and LSH_PROJECTION, as NeuralNetworks.h defines them:
//   EMBEDDING_LOOKUP: out[i, ...] = values[lookups[i], ...]; a lookup outside
//     [0, rows) fails the operation.
//   HASHTABLE_LOOKUP: keys sorted ascending; for lookup i, the row r with
//     keys[r] == lookups[i] gives out[i, ...] = values[r, ...] and hits[i] =
//     1; a miss gives a slice of zero bytes (as Android's reference kernel
//     writes: 0.0, 0, or the quantized value 0) and hits[i] = 0.
//   LSH_PROJECTION: hash [num_hash, num_bits] seeds, input [n, ...] of any
//     type, optional weight [n]; bit (i, j) is 1 when sum over rows k of
//     weight[k] * Fingerprint64(seed_ij as float32 bytes ++ row k's bytes),
//     the 64-bit fingerprint read as a signed integer, is > 0 (weight 1 when
//     omitted). Dense gives every bit; sparse packs each hash function's bits
//     into an int32 (first bit most significant), plus i * 2^num_bits for
//     type 3 (SPARSE, level 3) and not for type 1 (SPARSE_DEPRECATED). The
//     fingerprint is FarmHash's Fingerprint64, as Android's reference kernel
//     uses (libfarmhash); the header leaves the hash unnamed.
// Any element type: the slices are copied as they are.
#include <farmhash.h>

#include <algorithm>
#include <cstring>

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

// LSH_PROJECTION's bit for one seed: the sign of the weighted sum of the
// signed fingerprints of (seed, row k) over the input's rows.
int lsh_bit(float seed, const char* rows, int64_t n, size_t row_bytes, const float* weight) {
  std::vector<char> key(sizeof(float) + row_bytes);
  std::memcpy(key.data(), &seed, sizeof(float));
  double score = 0.0;
  for (int64_t k = 0; k < n; ++k) {
    std::memcpy(key.data() + sizeof(float), rows + k * static_cast<int64_t>(row_bytes), row_bytes);
    const auto signature = static_cast<int64_t>(util::Fingerprint64(key.data(), key.size()));
    score += (weight ? static_cast<double>(weight[k]) : 1.0) * static_cast<double>(signature);
  }
  return score > 0 ? 1 : 0;
}

void execute_lsh_projection(ExecContext& ctx) {
  constexpr int32_t kSparseDeprecated = 1, kDense = 2, kSparse = 3;
  const at::Tensor seeds = ctx.in(0).t.to(at::kFloat).contiguous();
  const at::Tensor input = ctx.stored_in(1).t.contiguous();  // its bytes, float16 too
  const at::Tensor weight = ctx.has(2) ? ctx.in(2).t.to(at::kFloat).contiguous() : at::Tensor();
  const int32_t type = ctx.i32(3);
  const int64_t num_hash = seeds.size(0), num_bits = seeds.size(1), n = input.size(0);
  const size_t row_bytes = n == 0 ? 0 : input.nbytes() / static_cast<size_t>(n);
  const auto* rows = static_cast<const char*>(input.data_ptr());
  const float* w = weight.defined() ? weight.data_ptr<float>() : nullptr;
  const float* s = seeds.data_ptr<float>();
  if (type == kDense) {
    at::Tensor out = at::empty({num_hash * num_bits}, at::kInt);
    int32_t* o = out.data_ptr<int32_t>();
    for (int64_t b = 0; b < num_hash * num_bits; ++b) o[b] = lsh_bit(s[b], rows, n, row_bytes, w);
    return ctx.set_output(0, out);
  }
  if (type != kSparse && type != kSparseDeprecated)
    fail(Result::BadData, "LSH_PROJECTION type " + std::to_string(type) + " is not 1, 2 or 3");
  at::Tensor out = at::empty({num_hash}, at::kInt);
  int32_t* o = out.data_ptr<int32_t>();
  for (int64_t i = 0; i < num_hash; ++i) {
    uint32_t signature = 0;
    for (int64_t j = 0; j < num_bits; ++j)
      signature = (signature << 1) |
                  static_cast<uint32_t>(lsh_bit(s[i * num_bits + j], rows, n, row_bytes, w));
    if (type == kSparse) signature += static_cast<uint32_t>(static_cast<uint64_t>(i) << num_bits);
    o[i] = static_cast<int32_t>(signature);
  }
  ctx.set_output(0, out);
}

}  // namespace

void add_lookup_kernels(std::vector<OpKernel>& table) {
  table.push_back({Op::EmbeddingLookup, "EMBEDDING_LOOKUP", execute_embedding_lookup});
  table.push_back({Op::HashtableLookup, "HASHTABLE_LOOKUP", execute_hashtable_lookup});
  table.push_back({Op::LshProjection, "LSH_PROJECTION", execute_lsh_projection});
}

}  // namespace nnrt

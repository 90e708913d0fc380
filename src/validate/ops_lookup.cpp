// Rules of NeuralNetworks.h for the lookup operations: EMBEDDING_LOOKUP,
// HASHTABLE_LOOKUP and LSH_PROJECTION (feature level 1). Both select slices along the first
// dimension of a Values tensor (rank >= 2); quantized outputs keep Values'
// scale and zero point.
#include <algorithm>
#include <cstdint>

#include "validate/rule_context.h"

namespace nnapi_validate {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

constexpr size_t kAnyRank = SIZE_MAX;

// Output o: Values (input `values`) with its first dimension replaced by the
// number of lookups (input 0's only dimension).
void selected_slices(Check& c, size_t o, size_t values) {
  const Shape& v = c.shape(values);
  if (!v.known) return c.set_output(o, Shape::unknown());
  Shape out = v;
  out.d[0] = c.dim(0, 0);
  c.set_output(o, out);
}

// ---- EMBEDDING_LOOKUP: lookups (1-D TENSOR_INT32), values (rank >= 2;
// FLOAT32, and INT32, QUANT8_ASYMM since level 3). Every lookup must index
// the first dimension of values.

void embedding_lookup_rule(Check& c) {
  c.input_count({2});
  c.output_count(1);
  c.input_type(0, {T::TensorInt32});
  c.input_rank(0, 1, 1);
  typed(c, {{T::TensorFloat32, 1}, {T::TensorInt32, 3}, {T::TensorQuant8Asymm, 3}}, 1);
  c.input_rank(1, 2, kAnyRank);
  c.output_same_type(0, 1);
  c.same_quant(0, 1);
  if (!c.full()) return;
  const int64_t rows = c.dim(1, 0);
  if (auto lookups = c.ints(0); lookups && rows >= 0) {
    for (int32_t k : *lookups)
      if (k < 0 || k >= rows)
        c.fail(Rule::Parameter, "input 0 (lookups) has " + str(k) + ", outside the " + str(rows) +
                                    " rows of input 1 (values)");
  }
  if (c.shapes()) selected_slices(c, 0, 1);
}

// ---- HASHTABLE_LOOKUP: lookups [k], keys [n] (1-D TENSOR_INT32, sorted
// ascending), values [n, ...] (FLOAT32, INT32, QUANT8_ASYMM). Outputs: the
// selected slices [k, ...] (zeros for a miss) and hits [k]
// (TENSOR_QUANT8_ASYMM, scale 1, zero point 0).

void hashtable_lookup_rule(Check& c) {
  c.input_count({3});
  c.output_count(2);
  for (size_t i : {0, 1}) {
    c.input_type(i, {T::TensorInt32});
    c.input_rank(i, 1, 1);
  }
  typed(c, {{T::TensorFloat32, 1}, {T::TensorInt32, 1}, {T::TensorQuant8Asymm, 1}}, 2);
  c.input_rank(2, 2, kAnyRank);
  c.output_same_type(0, 2);
  c.same_quant(0, 2);
  c.output_type(1, {T::TensorQuant8Asymm});
  c.output_rank(1, 1, 1);
  c.fixed_quant(1, 1.0f, 0);
  if (!c.full()) return;
  if (auto keys = c.ints(1); keys && !std::is_sorted(keys->begin(), keys->end()))
    c.fail(Rule::Parameter, "input 1 (keys) is not sorted in ascending order, as NNAPI needs");
  c.equal_dims(c.dim(1, 0), c.dim(2, 0),
               "input 1 (keys) and input 2 (values) differ in their first dimension");
  if (!c.shapes()) return;
  selected_slices(c, 0, 2);
  c.set_output(1, Shape::of({c.dim(0, 0)}));
}

// ---- LSH_PROJECTION: hash seeds [num_hash, num_bits] (FLOAT32; FLOAT16
// since level 3), input (rank >= 1; FLOAT32, INT32, QUANT8_ASYMM; FLOAT16
// since level 3), weight [input rows] of the seeds' type, type (INT32: 1
// sparse without offsets, 2 dense, 3 sparse with offsets since level 3).
// Output: TENSOR_INT32 [num_hash] (sparse) or [num_hash * num_bits] (dense).
// The header calls the weight optional; Android's reference implementation
// (the behaviour its conformance tests fix) takes it for dense projections
// and refuses it for sparse ones, and so does this rule.

void lsh_projection_rule(Check& c) {
  constexpr int32_t kSparseDeprecated = 1, kDense = 2, kSparse = 3;
  c.input_count({4});
  c.output_count(1);
  typed(c, {{T::TensorFloat32, 1}, {T::TensorFloat16, 3}}, 0);
  c.input_rank(0, 2, 2);
  typed(c,
        {{T::TensorFloat32, 1},
         {T::TensorInt32, 1},
         {T::TensorQuant8Asymm, 1},
         {T::TensorFloat16, 3}},
        1);
  c.input_rank(1, 1, kAnyRank);
  c.input_type(3, {T::Int32});
  c.output_type(0, {T::TensorInt32});
  c.output_rank(0, 1, 1);
  const auto type = c.i32(3);
  if (type && *type != kSparseDeprecated && *type != kDense && *type != kSparse)
    c.fail(Rule::Parameter, "input 3 (type) is " + str(*type) +
                                ": 1 (sparse), 2 (dense) or 3 (sparse with offsets)");
  if (type && *type == kSparse) c.needs_level(3, "LSH_PROJECTION of type 3 (sparse with offsets)");
  const bool dense = type && *type == kDense;
  if (type && !dense && !c.omitted(2))
    c.fail(Rule::Parameter, "input 2 (weight) is given to a sparse projection: omit it");
  if (dense && c.omitted(2))
    c.fail(Rule::Parameter, "input 2 (weight) is omitted: a dense projection needs it");
  if (!c.omitted(2)) {
    c.same_type(2, 0);
    c.input_rank(2, 1, 1);
  }
  if (!c.full()) return;
  const int64_t num_hash = c.dim(0, 0), num_bits = c.dim(0, 1);
  if (num_bits > 32)
    c.fail(Rule::Parameter,
           "input 0 (hash) has " + str(num_bits) + " bits per hash function: at most 32");
  if (type && !dense && num_hash > 0 && num_bits >= 0) {
    int64_t log2_ceil = 0;
    while ((int64_t{1} << log2_ceil) < num_hash) ++log2_ceil;
    if (num_bits + log2_ceil > 32)
      c.fail(Rule::Parameter, "input 0 (hash) is [" + str(num_hash) + ", " + str(num_bits) +
                                  "]: a sparse projection needs bits + ceil(log2(functions)) "
                                  "<= 32");
  }
  if (!c.omitted(2))
    c.equal_dims(c.dim(1, 0), c.dim(2, 0),
                 "input 1 (input) and input 2 (weight) differ in their first dimension");
  if (!c.shapes() || !type) return;
  const int64_t n = dense ? (num_hash < 0 || num_bits < 0 ? -1 : num_hash * num_bits) : num_hash;
  c.set_output(0, Shape::of({n}));
}

}  // namespace

void add_lookup_rules(std::vector<OpRule>& t) {
  t.push_back({nnapi::Op::EmbeddingLookup, embedding_lookup_rule});
  t.push_back({nnapi::Op::HashtableLookup, hashtable_lookup_rule});
  t.push_back({nnapi::Op::LshProjection, lsh_projection_rule});
}

}  // namespace nnapi_validate

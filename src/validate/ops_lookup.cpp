// Rules of NeuralNetworks.h for the lookup operations: EMBEDDING_LOOKUP and
// HASHTABLE_LOOKUP (feature level 1). Both select slices along the first
// dimension of a Values tensor (rank >= 2); quantized outputs keep Values'
// scale and zero point.
#include <algorithm>
#include <cstdint>

#include "validate/check.h"

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

}  // namespace

void add_lookup_rules(std::vector<OpRule>& t) {
  t.push_back({nnapi::Op::EmbeddingLookup, embedding_lookup_rule});
  t.push_back({nnapi::Op::HashtableLookup, hashtable_lookup_rule});
}

}  // namespace nnapi_validate

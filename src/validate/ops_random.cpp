// Rules of NeuralNetworks.h for RANDOM_MULTINOMIAL (feature level 3): logits
// [batches, classes] (TENSOR_FLOAT32 or TENSOR_FLOAT16), the number of
// samples per row (INT32 >= 1), seeds (1-D TENSOR_INT32 of 2 values).
// Output: TENSOR_INT32 [batches, samples], class indices.
#include "validate/rule_context.h"

namespace nnapi_validate {
namespace {

void random_multinomial_rule(Check& c) {
  c.input_count({3});
  c.output_count(1);
  typed(c, {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}});
  c.input_rank(0, 2, 2);
  c.input_type(1, {T::Int32});
  c.input_type(2, {T::TensorInt32});
  c.input_rank(2, 1, 1);
  c.output_type(0, {T::TensorInt32});
  c.output_rank(0, 2, 2);
  if (!c.full()) return;
  c.at_least(1, 1, "samples");
  if (auto seeds = c.ints(2); seeds && seeds->size() != 2)
    c.fail(Rule::Parameter,
           "input 2 (seeds) has " + std::to_string(seeds->size()) + " entries; NNAPI needs 2");
  if (c.shapes()) c.set_output(0, Shape::of({c.dim(0, 0), c.i32(1).value_or(-1)}));
}

}  // namespace

void add_random_rules(std::vector<OpRule>& t) {
  t.push_back({nnapi::Op::RandomMultinomial, random_multinomial_rule});
}

}  // namespace nnapi_validate

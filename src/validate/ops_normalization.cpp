// Rules of NeuralNetworks.h for LOCAL_RESPONSE_NORMALIZATION (feature level
// 1; TENSOR_FLOAT16, ranks below 4 and the axis since level 3): input,
// radius (INT32 >= 0), bias, alpha, beta (FLOAT32, or FLOAT16 for a
// TENSOR_FLOAT16 input; bias not zero) [, axis (INT32 in [-rank, rank))].
// The output has the input's type and shape.
#include "validate/rule_context.h"

namespace nnapi_validate {
namespace {

void local_response_norm_rule(Check& c) {
  c.input_count({5, 6});
  c.output_count(1);
  typed(c, {{T::TensorFloat32, 1}, {T::TensorFloat16, 3}});
  c.output_same_type(0, 0);
  c.max_rank(4);
  c.input_type(1, {T::Int32});
  for (size_t i : {2, 3, 4}) float_scalar_for_input(c, i);
  if (c.n_in() == 6) {
    c.input_type(5, {T::Int32});
    c.needs_level(3, "LOCAL_RESPONSE_NORMALIZATION with an axis");
  }
  if (c.in(0).dims.size() != 4 && !c.in(0).dims.empty())
    c.needs_level(3, "LOCAL_RESPONSE_NORMALIZATION of a tensor of rank other than 4");
  if (!c.full()) return;
  c.at_least(1, 0, "radius");
  if (auto bias = c.f32(2); bias && *bias == 0.0f)
    c.fail(Rule::Parameter, "input 2 (bias) is 0; NNAPI needs a bias other than zero");
  const Shape& x = c.shape(0);
  if (c.n_in() == 6) c.axis(5, x.known ? static_cast<int64_t>(x.rank()) : -1, true);
  same_shape_output(c);
}

}  // namespace

void add_normalization_rules(std::vector<OpRule>& t) {
  t.push_back({nnapi::Op::LocalResponseNormalization, local_response_norm_rule});
}

}  // namespace nnapi_validate

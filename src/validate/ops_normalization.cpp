// Rules of NeuralNetworks.h for LOCAL_RESPONSE_NORMALIZATION (feature level
// 1; TENSOR_FLOAT16, ranks below 4 and the axis since level 3): input,
// radius (INT32 >= 0), bias, alpha, beta (FLOAT32, or FLOAT16 for a
// TENSOR_FLOAT16 input; bias not zero) [, axis (INT32 in [-rank, rank))].
// The output has the input's type and shape.
#include "validate/rule_context.h"

namespace nnapi_validate {
namespace {

void local_response_norm_rule(Check& c) {
  const nnapi::Form& f = c.form();
  const size_t axis_at = f.at(R::Axis);
  c.output_count(1);
  typed(c, {{T::TensorFloat32, 1}, {T::TensorFloat16, 3}});
  c.output_same_type(0, 0);
  c.max_rank(4);
  c.input_type(f.at(R::Radius), {T::Int32});
  for (R r : {R::LrnBias, R::Alpha, R::Beta}) float_scalar_for_input(c, f.at(r));
  if (axis_at < c.n_in()) {
    c.input_type(axis_at, {T::Int32});
    c.needs_level(3, "LOCAL_RESPONSE_NORMALIZATION with an axis");
  }
  if (c.in(0).dims.size() != 4 && !c.in(0).dims.empty())
    c.needs_level(3, "LOCAL_RESPONSE_NORMALIZATION of a tensor of rank other than 4");
  if (!c.full()) return;
  c.at_least(f.at(R::Radius), 0, "radius");
  const size_t bias_at = f.at(R::LrnBias);
  if (auto bias = c.f32(bias_at); bias && *bias == 0.0f)
    c.fail(Rule::Parameter,
           "input " + std::to_string(bias_at) + " (bias) is 0; NNAPI needs a bias other than zero");
  const Shape& x = c.shape(0);
  if (axis_at < c.n_in()) c.axis(axis_at, x.known ? static_cast<int64_t>(x.rank()) : -1, true);
  same_shape_output(c);
}

}  // namespace

void add_normalization_rules(std::vector<OpRule>& t) {
  t.push_back({nnapi::Op::LocalResponseNormalization, local_response_norm_rule});
}

}  // namespace nnapi_validate

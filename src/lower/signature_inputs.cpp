#include "lower/signature_inputs.h"

#include <string>

#include "lower/refusal.h"
#include "serialize/model_builder.h"

namespace nnapi_convert {

std::vector<int32_t> signature_inputs(nnapi::Op op, const RoleIds& given) {
  std::vector<int32_t> inputs = nnapi::arrange_inputs(op, given);
  check(!inputs.empty(), [&] {
    std::string roles;
    for (const auto& g : given)
      roles += std::string(roles.empty() ? "" : ", ") + role_name(g.first);
    return std::string("internal: no form of NNAPI's ") + nnapi::op_name(op) + " has the inputs " +
           roles;
  });
  return inputs;
}

void add_by_roles(ModelBuilder& m, nnapi::Op op, const RoleIds& given,
                  const std::vector<int32_t>& outputs) {
  m.add_operation(op, signature_inputs(op, given), outputs);
}

void add_fully_connected(ModelBuilder& m, int32_t input, int32_t weights, int32_t bias,
                         int32_t fuse, int32_t out) {
  using R = nnapi::Role;
  add_by_roles(m, nnapi::Op::FullyConnected,
               {{R::Input, input}, {R::Weights, weights}, {R::Bias, bias}, {R::Fuse, fuse}}, {out});
}

void add_reduce(ModelBuilder& m, nnapi::Op op, int32_t input, int32_t axes, int32_t keep,
                int32_t out) {
  using R = nnapi::Role;
  add_by_roles(m, op, {{R::Input, input}, {R::Axes, axes}, {R::KeepDims, keep}}, {out});
}

void add_reshape(ModelBuilder& m, int32_t input, int32_t shape, int32_t out) {
  using R = nnapi::Role;
  add_by_roles(m, nnapi::Op::Reshape, {{R::Input, input}, {R::Shape, shape}}, {out});
}

void add_transpose(ModelBuilder& m, int32_t input, int32_t perm, int32_t out) {
  using R = nnapi::Role;
  add_by_roles(m, nnapi::Op::Transpose, {{R::Input, input}, {R::Perm, perm}}, {out});
}

void add_gather(ModelBuilder& m, int32_t input, int32_t axis, int32_t indices, int32_t out) {
  using R = nnapi::Role;
  add_by_roles(m, nnapi::Op::Gather, {{R::Input, input}, {R::Axis, axis}, {R::Indices, indices}},
               {out});
}

void add_slice(ModelBuilder& m, int32_t input, int32_t begin, int32_t size, int32_t out) {
  using R = nnapi::Role;
  add_by_roles(m, nnapi::Op::Slice, {{R::Input, input}, {R::Begin, begin}, {R::Size, size}}, {out});
}

void add_tile(ModelBuilder& m, int32_t input, int32_t multiples, int32_t out) {
  using R = nnapi::Role;
  add_by_roles(m, nnapi::Op::Tile, {{R::Input, input}, {R::Multiples, multiples}}, {out});
}

void add_split(ModelBuilder& m, int32_t input, int32_t axis, int32_t num_splits,
               const std::vector<int32_t>& outputs) {
  using R = nnapi::Role;
  add_by_roles(m, nnapi::Op::Split,
               {{R::Input, input}, {R::Axis, axis}, {R::NumSplits, num_splits}}, outputs);
}

void add_concatenation(ModelBuilder& m, const std::vector<int32_t>& parts, int32_t axis,
                       int32_t out) {
  RoleIds given;
  for (int32_t p : parts) given.push_back({nnapi::Role::Input, p});
  given.push_back({nnapi::Role::Axis, axis});
  add_by_roles(m, nnapi::Op::Concatenation, given, {out});
}

void add_select(ModelBuilder& m, int32_t mask, int32_t if_true, int32_t if_false, int32_t out) {
  using R = nnapi::Role;
  add_by_roles(m, nnapi::Op::Select,
               {{R::Mask, mask}, {R::IfTrue, if_true}, {R::IfFalse, if_false}}, {out});
}

void add_prelu(ModelBuilder& m, int32_t input, int32_t alpha, int32_t out) {
  using R = nnapi::Role;
  add_by_roles(m, nnapi::Op::Prelu, {{R::Input, input}, {R::AlphaTensor, alpha}}, {out});
}

}  // namespace nnapi_convert

// An emitter's operand list in NeuralNetworks.h's order: the emitter names
// the role of each operand it creates, op_signature.h places it.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "nnapi_convert/op_signature.h"

namespace nnapi_convert {

class ModelBuilder;

// (role, operand id) pairs, in any order.
using RoleIds = std::vector<std::pair<nnapi::Role, int32_t>>;

// The inputs of NNAPI operation `op` in the positions its signature gives
// the roles in `given` (each with its operand id); an internal error when no
// form of `op` has exactly those roles.
std::vector<int32_t> signature_inputs(nnapi::Op op, const RoleIds& given);

// Adds operation `op` with the inputs `given` (placed by signature_inputs)
// and `outputs`.
void add_by_roles(ModelBuilder& m, nnapi::Op op, const RoleIds& given,
                  const std::vector<int32_t>& outputs);

// FULLY_CONNECTED of `input` by the (units, input size) `weights` plus
// `bias`, with FuseCode operand `fuse`, into `out`.
void add_fully_connected(ModelBuilder& m, int32_t input, int32_t weights, int32_t bias,
                         int32_t fuse, int32_t out);

// MEAN or a REDUCE_* operation `op` of `input` over the TENSOR_INT32 `axes`
// with keep_dims operand `keep`, into `out`.
void add_reduce(ModelBuilder& m, nnapi::Op op, int32_t input, int32_t axes, int32_t keep,
                int32_t out);

// RESHAPE of `input` to the TENSOR_INT32 `shape`, into `out`.
void add_reshape(ModelBuilder& m, int32_t input, int32_t shape, int32_t out);
// TRANSPOSE of `input` by the TENSOR_INT32 `perm`, into `out`.
void add_transpose(ModelBuilder& m, int32_t input, int32_t perm, int32_t out);
// GATHER of `input` along INT32 `axis` at the TENSOR_INT32 `indices`, into `out`.
void add_gather(ModelBuilder& m, int32_t input, int32_t axis, int32_t indices, int32_t out);
// SLICE of `input` from the TENSOR_INT32 `begin` for `size` (per dim), into `out`.
void add_slice(ModelBuilder& m, int32_t input, int32_t begin, int32_t size, int32_t out);
// TILE of `input` by the TENSOR_INT32 `multiples`, into `out`.
void add_tile(ModelBuilder& m, int32_t input, int32_t multiples, int32_t out);
// SPLIT of `input` along INT32 `axis` into INT32 `num_splits` equal `outputs`.
void add_split(ModelBuilder& m, int32_t input, int32_t axis, int32_t num_splits,
               const std::vector<int32_t>& outputs);
// CONCATENATION of the tensors `parts` along INT32 `axis`, into `out`.
void add_concatenation(ModelBuilder& m, const std::vector<int32_t>& parts, int32_t axis,
                       int32_t out);

// SELECT of `if_true` where the TENSOR_BOOL8 `mask` is true, else `if_false`, into `out`.
void add_select(ModelBuilder& m, int32_t mask, int32_t if_true, int32_t if_false, int32_t out);
// PRELU of `input` with the tensor `alpha`, into `out`.
void add_prelu(ModelBuilder& m, int32_t input, int32_t alpha, int32_t out);

}  // namespace nnapi_convert

// Seeded random tensors for --input specs: what --verify runs the model and
// its conversion on, and what --cpu-fallback runs the model on to learn the
// sizes and types at its segment boundaries.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "nnapi_convert/input_spec.h"

namespace nnapi_convert {

// One input of `shape`: float32 randn; quint8 a randn tensor quantized with
// the spec's scale and zero point; int32 integers in [0, 8); int16 integers in
// [-64, 64). Channels-last when 4-D and NHWC (the spec's, or `nhwc_all`).
// Draws from the global generator.
at::Tensor sample_input(const InputSpec& spec, const std::vector<int64_t>& shape, bool nhwc_all);

// One per spec, of the given shapes, after at::manual_seed(seed).
std::vector<at::Tensor> sample_inputs(const std::vector<InputSpec>& specs,
                                      const std::vector<std::vector<int64_t>>& shapes,
                                      bool nhwc_all, uint64_t seed);

// Sizes joined by x ("1x3x224x224"), "scalar" for none: how messages name
// the sizes of sample inputs.
std::string join_dims(const std::vector<int64_t>& dims);

}  // namespace nnapi_convert

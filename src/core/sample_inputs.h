// Seeded random tensors for --input specs: what --verify runs the model and
// its conversion on, and what --cpu-fallback runs the model on to learn the
// sizes and types at its segment boundaries.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "nnapi_convert/input_spec.h"

namespace nnapi_convert {

// One input of `shape`: float32 randn; quint8 a randn tensor quantized with
// the spec's scale and zero point; int32 integers in [0, 8); int16 integers in
// [-64, 64). Channels-last when 4-D and NHWC (the spec's, or `nhwc_all`).
// Draws from the global generator.
at::Tensor sample_input(const InputSpec& spec, const std::vector<int64_t>& shape, bool nhwc_all);

// The size a flexible (0) dimension gets when --verify-shape is not given:
// 1 for dimension 0 (the batch), 224 for dimensions 2 and 3 of a 4-D input
// (height and width, ImageNet's size), 8 for any other.
int64_t default_verify_size(size_t rank, size_t dim);

// Each spec's dims with every flexible size at its default_verify_size: the
// input shapes of --verify without --verify-shape, of the validator's sample
// run and of --cpu-fallback's first probe.
std::vector<std::vector<int64_t>> default_sample_shapes(const std::vector<InputSpec>& specs);

// One per spec, of the given shapes, after at::manual_seed(seed).
std::vector<at::Tensor> sample_inputs(const std::vector<InputSpec>& specs,
                                      const std::vector<std::vector<int64_t>>& shapes,
                                      bool nhwc_all, uint64_t seed);

// Where a model fails at the sample sizes (a flexible size it needs to be a
// multiple of something: windows of 7, pixel_unshuffle(2)), the sizes tried
// next: each flexible (0) size of `shapes` rounded up to a multiple of m, for
// m = 2, 3, ... kMaxSizeMultiple. The converter's validator checks such a
// model's blob at the first of them the model runs at, and --verify (without
// --verify-shape) runs it there.
inline constexpr int64_t kMaxSizeMultiple = 16;

struct RunnableSizes {
  std::vector<std::vector<int64_t>> shapes;
  int64_t multiple = 0;  // every flexible size is a multiple of it
};

// The first rounding of `shapes` up to a multiple of m = 2, ...
// kMaxSizeMultiple at which `runs` is true; nullopt when it is true at none.
std::optional<RunnableSizes> runnable_sizes(
    const std::vector<InputSpec>& specs, const std::vector<std::vector<int64_t>>& shapes,
    const std::function<bool(const std::vector<std::vector<int64_t>>&)>& runs);

// Sizes joined by x ("1x3x224x224"), "scalar" for none: how messages name
// the sizes of sample inputs.
std::string join_dims(const std::vector<int64_t>& dims);

}  // namespace nnapi_convert

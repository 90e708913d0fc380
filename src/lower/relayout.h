// Weight relayout: a constant weight in the dim order an NNAPI operation
// takes (a convolution's OIHW as OHWI), as one contiguous tensor, by a plain
// loop over its bytes rather than ATen's strided copy.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace nnapi_convert {

// The elements of `src` (sizes `size`, strides `stride`, in elements of
// `elem_size` bytes: 1, 2, 4 or 8) in row-major order, written to the
// contiguous `dst`. `dst` must not overlap `src`.
void gather_strided(const void* src, void* dst, const std::vector<int64_t>& size,
                    const std::vector<int64_t>& stride, size_t elem_size);

// The same values as w.permute(perm).contiguous(). When w.permute(perm) is
// already contiguous, that view. When `w` is a contiguous CPU tensor that is
// the only tensor of its storage (no other tensor, view or slice shares its
// bytes) and perm keeps dim 0 first, its bytes are relaid in place, one dim-0
// slice at a time through a small buffer: no new memory is allocated (no
// page is faulted in), and `w` itself is given the strides of its new
// layout, so it keeps its value (w.equal(before) holds; it is no longer
// contiguous). The result is then a contiguous view of w's storage. Else
// a new tensor, filled by gather_strided.
at::Tensor permuted_contiguous(const at::Tensor& w, const std::vector<int64_t>& perm);

}  // namespace nnapi_convert

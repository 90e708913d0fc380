#include "lower/relayout.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/CPUAllocator.h>

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace nnapi_convert {
namespace {

// dst[a * pitch + b] = src[a * sa + b * sb] for a < na, b < nb. Unless there
// are only a few rows, they are filled four columns at a time: four source
// runs read together, each write a short contiguous run (a transpose's
// pattern; about 2.5x fewer instructions per element than one column at a
// time).
template <typename T>
void gather_2d_scalar(const T* src, T* dst, int64_t na, int64_t nb, int64_t sa, int64_t sb,
                      int64_t pitch) {
  if (sb == 1) {
    for (int64_t a = 0; a < na; ++a) {
      std::memcpy(dst + a * pitch, src + a * sa, static_cast<size_t>(nb) * sizeof(T));
    }
    return;
  }
  if (na < 4) {  // a few long rows: one at a time
    for (int64_t a = 0; a < na; ++a) {
      const T* p = src + a * sa;
      T* q = dst + a * pitch;
      int64_t b = 0;
      for (; b + 4 <= nb; b += 4, p += 4 * sb) {
        q[b] = p[0];
        q[b + 1] = p[sb];
        q[b + 2] = p[2 * sb];
        q[b + 3] = p[3 * sb];
      }
      for (; b < nb; ++b, p += sb) q[b] = *p;
    }
    return;
  }
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    const T* s = src + b * sb;
    T* d = dst + b;
    for (int64_t a = 0; a < na; ++a) {
      const T* p = s + a * sa;
      T* q = d + a * pitch;
      q[0] = p[0];
      q[1] = p[sb];
      q[2] = p[2 * sb];
      q[3] = p[3 * sb];
    }
  }
  for (; b < nb; ++b) {
    for (int64_t a = 0; a < na; ++a) dst[a * pitch + b] = src[a * sa + b * sb];
  }
}

template <typename T>
void gather_2d_scalar(const T* src, T* dst, int64_t na, int64_t nb, int64_t sa, int64_t sb) {
  gather_2d_scalar(src, dst, na, nb, sa, sb, nb);
}

// dst[a][b] = src[a * sa + b * sb]: a transpose where sa == 1.
template <typename T>
void gather_2d(const T* src, T* dst, int64_t na, int64_t nb, int64_t sa, int64_t sb) {
  gather_2d_scalar(src, dst, na, nb, sa, sb);
}

#if defined(__SSE2__)
// 4-byte elements of a transpose (sa == 1): 4x4 blocks, each four loads of
// four source elements, transposed in registers, four stores.
template <>
void gather_2d<uint32_t>(const uint32_t* src, uint32_t* dst, int64_t na, int64_t nb, int64_t sa,
                         int64_t sb) {
  if (sa != 1 || sb == 1 || na < 4 || nb < 4) {
    gather_2d_scalar(src, dst, na, nb, sa, sb);
    return;
  }
  const int64_t nb4 = nb & ~int64_t{3};
  int64_t a = 0;
  for (; a + 4 <= na; a += 4) {
    const uint32_t* p = src + a;
    uint32_t* q = dst + a * nb;
    for (int64_t b = 0; b < nb4; b += 4) {
      const uint32_t* pb = p + b * sb;
      __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(pb));
      __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(pb + sb));
      __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(pb + 2 * sb));
      __m128 r3 = _mm_loadu_ps(reinterpret_cast<const float*>(pb + 3 * sb));
      _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
      _mm_storeu_ps(reinterpret_cast<float*>(q + b), r0);
      _mm_storeu_ps(reinterpret_cast<float*>(q + nb + b), r1);
      _mm_storeu_ps(reinterpret_cast<float*>(q + 2 * nb + b), r2);
      _mm_storeu_ps(reinterpret_cast<float*>(q + 3 * nb + b), r3);
    }
  }
  // The last rows (na % 4) whole, then the last columns (nb % 4) of the others.
  if (a < na) gather_2d_scalar(src + a, dst + a * nb, na - a, nb, sa, sb, nb);
  if (nb4 < nb) gather_2d_scalar(src + nb4 * sb, dst + nb4, a, nb - nb4, sa, sb, nb);
}
#endif

// A strided walk in row-major order, with the dims that are contiguous with
// the next merged and size-1 dims dropped; at least two dims (a leading 1).
struct Walk {
  std::vector<int64_t> size, stride;
  bool empty = false;
};

Walk simplify(const std::vector<int64_t>& size, const std::vector<int64_t>& stride) {
  Walk w;
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] == 0) w.empty = true;
    if (size[d] == 1) continue;
    if (!w.size.empty() && w.stride.back() == stride[d] * size[d]) {
      w.size.back() *= size[d];
      w.stride.back() = stride[d];
    } else {
      w.size.push_back(size[d]);
      w.stride.push_back(stride[d]);
    }
  }
  while (w.size.size() < 2) {
    w.size.insert(w.size.begin(), 1);
    w.stride.insert(w.stride.begin(), 0);
  }
  return w;
}

// The walk's elements of src, in order, to the contiguous dst: the last two
// dims by gather_2d, the outer ones by an odometer that keeps the source
// offset.
template <typename T>
void gather(const T* src, T* dst, const Walk& w) {
  if (w.empty) return;
  const size_t outer_dims = w.size.size() - 2;
  const int64_t na = w.size[outer_dims], nb = w.size[outer_dims + 1];
  const int64_t sa = w.stride[outer_dims], sb = w.stride[outer_dims + 1];
  if (outer_dims == 0) {
    gather_2d(src, dst, na, nb, sa, sb);
    return;
  }
  int64_t blocks = 1;
  for (size_t d = 0; d < outer_dims; ++d) blocks *= w.size[d];
  std::vector<int64_t> index(outer_dims, 0);
  int64_t offset = 0;
  for (int64_t r = 0; r < blocks; ++r) {
    gather_2d(src + offset, dst, na, nb, sa, sb);
    dst += na * nb;
    for (size_t d = outer_dims; d-- > 0;) {
      offset += w.stride[d];
      if (++index[d] < w.size[d]) break;
      offset -= w.stride[d] * w.size[d];
      index[d] = 0;
    }
  }
}

// In place: each of `slices` consecutive runs of `slice_elems` elements from
// `base` copied aside and gathered back by the walk.
template <typename T>
void relayout_slices(void* base, int64_t slices, int64_t slice_elems, const Walk& w) {
  std::vector<T> buffer(static_cast<size_t>(slice_elems));
  T* slice = static_cast<T*>(base);
  for (int64_t i = 0; i < slices; ++i, slice += slice_elems) {
    std::memcpy(buffer.data(), slice, buffer.size() * sizeof(T));
    gather(buffer.data(), slice, w);
  }
}

// f(T()) for the unsigned integer type T of `elem_size` bytes.
template <typename F>
void by_element_size(size_t elem_size, F f) {
  switch (elem_size) {
    case 1:
      return f(uint8_t());
    case 2:
      return f(uint16_t());
    case 4:
      return f(uint32_t());
    case 8:
      return f(uint64_t());
    default:
      TORCH_CHECK(false, "relayout: elements of ", elem_size, " bytes");
  }
}

// Whether w's bytes may be relaid in place: a plain contiguous CPU tensor
// that alone owns its storage (from LibTorch's CPU allocator, so ordinary
// writable memory), and whose strides may be changed.
bool owns_storage_alone(const at::Tensor& w) {
  if (!w.defined() || !w.device().is_cpu() || w.layout() != at::kStrided || !w.is_contiguous() ||
      w.storage_offset() != 0 || w.dim() < 2) {
    return false;
  }
  if (w.is_quantized() && w.qscheme() != at::kPerTensorAffine) return false;
  const c10::Storage& s = w.storage();
  if (s.use_count() != 1 || s.nbytes() != w.nbytes()) return false;
  const c10::Allocator* cpu = c10::GetCPUAllocator();
  if (cpu == nullptr || cpu->raw_deleter() == nullptr ||
      s.data_ptr().get_deleter() != cpu->raw_deleter()) {
    return false;
  }
  return w.unsafeGetTensorImpl()->allow_tensor_metadata_change();
}

// w.permute(perm) for a strided CPU tensor, made without ATen's dispatcher
// (whose first call of an operator costs tens of microseconds, and each
// later one about one): a shallow copy of w's TensorImpl (a quantized one
// keeps its quantizer) given the permuted sizes and strides.
at::Tensor permuted_view(const at::Tensor& w, const std::vector<int64_t>& perm) {
  if (!w.device().is_cpu() || w.layout() != at::kStrided ||
      static_cast<int64_t>(perm.size()) != w.dim()) {
    return w.permute(perm);
  }
  std::vector<int64_t> size(perm.size()), stride(perm.size());
  std::vector<bool> seen(perm.size(), false);
  for (size_t k = 0; k < perm.size(); ++k) {
    const int64_t d = perm[k] < 0 ? perm[k] + w.dim() : perm[k];
    if (d < 0 || d >= w.dim() || seen[d]) return w.permute(perm);  // (ATen's message)
    seen[d] = true;
    size[k] = w.size(d);
    stride[k] = w.stride(d);
  }
  c10::intrusive_ptr<c10::TensorImpl> impl = w.unsafeGetTensorImpl()->shallow_copy_and_detach(
      /*version_counter=*/c10::VariableVersion(0), /*allow_tensor_metadata_change=*/true);
  impl->set_sizes_and_strides(size, stride);
  return at::Tensor(std::move(impl));
}

}  // namespace

void gather_strided(const void* src, void* dst, const std::vector<int64_t>& size,
                    const std::vector<int64_t>& stride, size_t elem_size) {
  const Walk w = simplify(size, stride);
  by_element_size(elem_size, [&](auto t) {
    using T = decltype(t);
    gather(static_cast<const T*>(src), static_cast<T*>(dst), w);
  });
}

at::Tensor permuted_contiguous(const at::Tensor& w, const std::vector<int64_t>& perm) {
  at::Tensor view = permuted_view(w, perm);
  if (view.is_contiguous()) return view;
  const size_t elem = w.element_size();
  const std::vector<int64_t> size = view.sizes().vec();
  const std::vector<int64_t> stride = view.strides().vec();
  view.reset();  // it shares w's storage, which in place needs to be w's alone
  if (!perm.empty() && perm[0] == 0 && owns_storage_alone(w)) {
    // Each dim-0 slice holds the same elements before and after: copy it
    // aside and gather it back in the new order.
    const Walk inner = simplify({size.begin() + 1, size.end()}, {stride.begin() + 1, stride.end()});
    by_element_size(elem, [&](auto t) {
      relayout_slices<decltype(t)>(w.data_ptr(), w.size(0), w.numel() / w.size(0), inner);
    });
    // The bytes are now laid out as the permuted sizes, contiguous: dim
    // perm[k] of w steps by the k-th of those contiguous strides.
    std::vector<int64_t> restride(perm.size());
    int64_t step = 1;
    for (size_t k = perm.size(); k-- > 0;) {
      restride[static_cast<size_t>(perm[k])] = step;
      step *= size[k];
    }
    w.unsafeGetTensorImpl()->set_sizes_and_strides(w.sizes(), restride);
    return permuted_view(w, perm);
  }
  if (!w.device().is_cpu() || w.layout() != at::kStrided ||
      (w.is_quantized() && w.qscheme() != at::kPerTensorAffine)) {
    return w.permute(perm).contiguous();
  }
  // A float one from ATen's CPU factory itself (at::empty's kernel), without
  // the dispatcher's lookups.
  at::Tensor out = w.is_quantized() ? at::_empty_affine_quantized(size, w.options(), w.q_scale(),
                                                                  w.q_zero_point())
                                    : at::Tensor(at::detail::empty_cpu(size, w.options()));
  gather_strided(static_cast<const uint8_t*>(w.data_ptr()), out.data_ptr(), size, stride, elem);
  return out;
}

}  // namespace nnapi_convert

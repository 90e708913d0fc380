// The operand record every lowering reads and writes: NNAPI type, PyTorch
// shape, dim order, quantization. Mirrors the reference converter's Operand.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "nnapi_convert/nnapi_types.h"
#include "serialize/prepare_script.h"  // flex_name

namespace nnapi_convert {

// How the NNAPI operand's dims relate to the PyTorch (NCHW) shape we track.
// The numbers are the memory-format codes the runtime module reads.
enum class DimOrder : int {
  Contiguous = 0,      // NNAPI dims == PyTorch shape
  ChannelsLast = 1,    // PyTorch NCHW, NNAPI NHWC
  ScalarOrVector = 2,  // immediates
  UnknownConstant = 999,
  // Internal, never a memory format of a model input or output: a video
  // tensor, PyTorch's (N, C, T, H, W), held as NNAPI's 2-D frames, time-major
  // ((T*N, C, H, W) or (T*N, H, W, C); video.cpp).
  FramesNchw = 1000,
  FramesNhwc = 1001,
};

inline bool is_frames(DimOrder o) { return o == DimOrder::FramesNchw || o == DimOrder::FramesNhwc; }

using Shape = std::vector<int64_t>;  // 0 = load-time flexible, -1 = run-time flexible

struct Operand {
  nnapi::OperandType type = nnapi::OperandType::TensorFloat32;
  Shape shape;  // always the PyTorch shape
  DimOrder dim_order = DimOrder::Contiguous;
  double scale = 0.0;
  int64_t zero_point = 0;

  bool use_nchw() const;  // throws for dim orders that have no layout
  Operand with_shape(Shape s) const {
    Operand o = *this;
    o.shape = std::move(s);
    return o;
  }
};

// A tensor operand of the model under construction: its NNAPI id and its
// record. What LoweringContext::get_operand returns and every emit_* takes.
struct OperandHandle {
  int32_t id = -1;
  Operand op;  // the record: type, PyTorch shape, dim order, quantization
};

// An int of shape arithmetic: a constant, or a size known only when the model
// is loaded, as an expression of the shape-compute script over flexible dims
// (e.g. "(s_0_0 // 2)").
struct SymInt {
  int64_t value = 0;  // when expr is empty
  std::string expr;
  bool is_constant() const { return expr.empty(); }
  // The value as script text.
  std::string str() const { return expr.empty() ? std::to_string(value) : expr; }
};

// a op b for op in + - * / (Python's floor division), as script text unless
// both are constant.
SymInt sym_arith(const SymInt& a, char op, const SymInt& b);
// Dim `d` of operand `id` with PyTorch shape `shape`: constant or flexible.
SymInt sym_dim(int32_t id, const Shape& shape, int64_t d);

// The NHWC layout, named once. An operand in DimOrder::ChannelsLast holds
// PyTorch's (N, C, H, W) as NNAPI's (N, H, W, C):
// - kToNhwc[a] is the PyTorch dim that NNAPI axis a holds; as a TRANSPOSE
//   (or at::Tensor::permute) it lays NCHW data out NHWC;
// - kToNchw[d] is the NNAPI axis that holds PyTorch dim d; as a TRANSPOSE it
//   lays NHWC data out NCHW.
inline constexpr std::array<int64_t, 4> kToNhwc{0, 2, 3, 1};
inline constexpr std::array<int64_t, 4> kToNchw{0, 3, 1, 2};
// A permutation as the int vector a TRANSPOSE operand takes.
inline std::vector<int64_t> perm_vector(const std::array<int64_t, 4>& p) {
  return {p.begin(), p.end()};
}

// NNAPI-order dims for a PyTorch shape in `order`; [1] for a 0-dim tensor
// (NNAPI has no rank-0 tensor operands).
Shape fix_shape(const Shape& shape, DimOrder order);
// The NNAPI axis that holds PyTorch dim `torch_dim` in `order` (kToNchw for
// ChannelsLast, the identity otherwise).
int64_t nnapi_axis(DimOrder order, int64_t torch_dim);
// The NNAPI axis that holds PyTorch dim `d` of `o`.
int64_t nnapi_axis(const Operand& o, int64_t d);
// The PyTorch dim that NNAPI axis `axis` holds in `order` (kToNhwc for
// ChannelsLast, the identity otherwise).
int64_t torch_dim(DimOrder order, int64_t axis);
// Python-style index: negative counts from the end. Throws when out of range.
int64_t py_index(int64_t index, int64_t size);
std::string shape_str(const Shape& s);

}  // namespace nnapi_convert

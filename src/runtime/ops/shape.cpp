// Data movement: RESHAPE, EXPAND_DIMS, SQUEEZE, STRIDED_SLICE, SLICE,
// CONCATENATION, TRANSPOSE, PAD, PAD_V2, SPLIT, CHANNEL_SHUFFLE,
// DEPTH_TO_SPACE, SPACE_TO_DEPTH, GATHER, TILE. These work on the stored
// elements (quantized values are moved, not requantized), except
// CONCATENATION, which requantizes inputs whose parameters differ from the
// output's (in float32, rounding half to even, as PyTorch's quantized cat).
#include <algorithm>

#include "../kernel.h"

namespace nnrt {
namespace {

using T = OperandType;

// ---- RESHAPE: input, shape (TENSOR_INT32); one entry may be -1.

void execute_reshape(ExecContext& ctx) {
  const at::Tensor& x = ctx.in(0).t;
  std::vector<int64_t> shape = ctx.int_list(ctx.form().at(R::Shape));
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) fail(Result::BadData, "more than one -1 in RESHAPE shape");
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      fail(Result::BadData, "negative RESHAPE dimension");
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known != 0) fail(Result::BadData, "cannot infer -1 dimension");
    shape[static_cast<size_t>(infer)] = x.numel() / known;
  } else if (known != x.numel()) {
    fail(Result::BadData, "RESHAPE changes the number of elements");
  }
  ctx.set_output(0, x.reshape(shape));
}

// ---- EXPAND_DIMS: input, axis (INT32).

void execute_expand_dims(ExecContext& ctx) {
  const at::Tensor& x = ctx.in(0).t;
  ctx.set_output(0, x.unsqueeze(wrap_axis(ctx.i32(ctx.form().at(R::Axis)), x.dim() + 1)));
}

// ---- SQUEEZE: input [, axes (TENSOR_INT32)].

void execute_squeeze(ExecContext& ctx) {
  const at::Tensor& x = ctx.in(0).t;
  std::vector<bool> drop(static_cast<size_t>(x.dim()), false);
  const size_t axes_at = ctx.form().at(R::Axes);
  if (ctx.has(axes_at)) {
    for (int64_t a : ctx.int_list(axes_at)) {
      int64_t d = wrap_axis(a, x.dim());
      if (x.size(d) != 1) fail(Result::BadData, "SQUEEZE of a dimension that is not 1");
      drop[static_cast<size_t>(d)] = true;
    }
  } else {
    for (int64_t d = 0; d < x.dim(); ++d) drop[static_cast<size_t>(d)] = x.size(d) == 1;
  }
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!drop[static_cast<size_t>(d)]) shape.push_back(x.size(d));
  ctx.set_output(0, x.reshape(shape));
}

// ---- STRIDED_SLICE: input, begin, end, strides, begin_mask, end_mask,
// shrink_axis_mask, with TensorFlow's semantics.

at::Tensor take(const at::Tensor& x, int64_t dim, const std::vector<int64_t>& idx) {
  at::Tensor index = at::tensor(idx, at::TensorOptions(at::kLong));
  return x.index_select(dim, index);
}

void execute_strided_slice(ExecContext& ctx) {
  at::Tensor x = ctx.in(0).t;
  const int64_t rank = x.dim();
  const nnapi::Form& f = ctx.form();
  auto begin = ctx.int_list(f.at(R::Begin)), end = ctx.int_list(f.at(R::End)),
       strides = ctx.int_list(f.at(R::Strides));
  if (static_cast<int64_t>(begin.size()) != rank || static_cast<int64_t>(end.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    fail(Result::BadData, "begin/end/strides must have one entry per dimension");
  const int32_t begin_mask = ctx.i32(f.at(R::BeginMask)), end_mask = ctx.i32(f.at(R::EndMask)),
                shrink = ctx.i32(f.at(R::ShrinkAxisMask));
  std::vector<int64_t> out_shape;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t n = x.size(d), s = strides[static_cast<size_t>(d)];
    if (s == 0) fail(Result::BadData, "zero stride");
    auto resolve = [&](int64_t v, bool masked, bool is_begin) {
      if (masked) return is_begin ? (s > 0 ? 0 : n - 1) : (s > 0 ? n : -1);
      if (v < 0) v += n;
      return s > 0 ? std::clamp<int64_t>(v, 0, n) : std::clamp<int64_t>(v, -1, n - 1);
    };
    int64_t b = resolve(begin[static_cast<size_t>(d)], (begin_mask >> d) & 1, true);
    int64_t e = resolve(end[static_cast<size_t>(d)], (end_mask >> d) & 1, false);
    const bool shrink_d = (shrink >> d) & 1;
    if (shrink_d) {
      if (b < 0 || b >= n) fail(Result::BadData, "shrunk axis index out of range");
      e = b + 1;
    }
    std::vector<int64_t> idx;
    for (int64_t i = b; shrink_d ? i < e : (s > 0 ? i < e : i > e); i += shrink_d ? 1 : s)
      idx.push_back(i);
    x = take(x, d, idx);
    if (!shrink_d) out_shape.push_back(static_cast<int64_t>(idx.size()));
  }
  ctx.set_output(0, x.reshape(out_shape));
}

// ---- SLICE: input, begin (TENSOR_INT32), size (TENSOR_INT32, -1 = rest).

void execute_slice(ExecContext& ctx) {
  at::Tensor x = ctx.in(0).t;
  const nnapi::Form& f = ctx.form();
  auto begin = ctx.int_list(f.at(R::Begin)), size = ctx.int_list(f.at(R::Size));
  if (static_cast<int64_t>(begin.size()) != x.dim() || size.size() != begin.size())
    fail(Result::BadData, "begin/size must have one entry per dimension");
  for (int64_t d = 0; d < x.dim(); ++d) {
    const int64_t b = begin[static_cast<size_t>(d)], n = x.size(d);
    int64_t len = size[static_cast<size_t>(d)];
    if (len == -1) len = n - b;
    if (b < 0 || len < 0 || b + len > n) fail(Result::BadData, "SLICE out of range");
    x = x.slice(d, b, b + len);
  }
  ctx.set_output(0, x.contiguous());
}

// ---- CONCATENATION: input 0..n-1, axis (INT32).

void execute_concat(ExecContext& ctx) {
  // The input tensors are inputs 0 to n - 1, the axis input n.
  const size_t n = ctx.form().at(R::Axis, ctx.num_inputs());
  const Operand& out = ctx.out_operand(0);
  const int64_t axis = wrap_axis(ctx.i32(n), ctx.in(0).t.dim());
  bool requant = false;
  if (is_quant8(out.type))
    for (size_t i = 0; i < n; ++i)
      requant |= ctx.in(i).scale != out.scale || ctx.in(i).zero_point != out.zero_point;
  // Requantized as PyTorch's quantized cat does: dequantized in float32,
  // quantized as torch.quantize_per_tensor (half to even).
  std::vector<at::Tensor> parts;
  for (size_t i = 0; i < n; ++i)
    parts.push_back(requant ? real_values(ctx.in(i), at::kFloat) : ctx.in(i).t);
  at::Tensor y = at::cat(parts, axis);
  ctx.set_output(0, requant ? quantize_like_pytorch(y, out) : y);
}

// ---- TRANSPOSE: input [, perm (TENSOR_INT32)]; no perm reverses the dims.

void execute_transpose(ExecContext& ctx) {
  const at::Tensor& x = ctx.in(0).t;
  std::vector<int64_t> perm;
  const size_t perm_at = ctx.form().at(R::Perm);
  if (ctx.has(perm_at)) {
    perm = ctx.int_list(perm_at);
  } else {
    for (int64_t d = x.dim() - 1; d >= 0; --d) perm.push_back(d);
  }
  if (static_cast<int64_t>(perm.size()) != x.dim()) fail(Result::BadData, "bad permutation size");
  std::vector<bool> seen(perm.size(), false);
  for (int64_t& p : perm) {
    p = wrap_axis(p, x.dim());
    if (seen[static_cast<size_t>(p)]) fail(Result::BadData, "repeated axis in permutation");
    seen[static_cast<size_t>(p)] = true;
  }
  ctx.set_output(0, x.permute(perm).contiguous());
}

// ---- PAD: input, paddings [rank, 2]; PAD_V2 adds the pad value.

void execute_pad(ExecContext& ctx) {
  const Value& x = ctx.in(0);
  const nnapi::Form& f = ctx.form();
  auto pads = ctx.int_list(f.at(R::Paddings));
  const int64_t rank = x.t.dim();
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    fail(Result::BadData, "paddings must be [rank, 2]");
  // constant_pad_nd takes pairs from the last dimension backwards.
  std::vector<int64_t> torch_pad;
  for (int64_t d = rank - 1; d >= 0; --d) {
    const int64_t before = pads[static_cast<size_t>(2 * d)];
    const int64_t after = pads[static_cast<size_t>(2 * d + 1)];
    if (before < 0 || after < 0) fail(Result::BadData, "negative padding");
    torch_pad.push_back(before);
    torch_pad.push_back(after);
  }
  double value = 0;
  if (f.has(R::PadValue)) {
    value = is_quant8(x.type) ? ctx.i32(f.at(R::PadValue)) : ctx.f32(f.at(R::PadValue));
  } else if (is_quant8(x.type)) {
    value = x.zero_point;  // real zero
  }
  if (x.t.numel() == 0) {
    // A zero-sized input (NNAPI allows it since feature level 3), which
    // LibTorch 1.13's constant_pad_nd refuses: the output is all padding.
    std::vector<int64_t> shape(x.t.sizes().begin(), x.t.sizes().end());
    for (int64_t d = 0; d < rank; ++d)
      shape[static_cast<size_t>(d)] +=
          pads[static_cast<size_t>(2 * d)] + pads[static_cast<size_t>(2 * d + 1)];
    return ctx.set_output(0, at::full(shape, value, x.t.options()));
  }
  ctx.set_output(0, at::constant_pad_nd(x.t, torch_pad, value));
}

// ---- SPLIT: input, axis (INT32), num_splits (INT32); num_splits outputs.

void execute_split(ExecContext& ctx) {
  const at::Tensor& x = ctx.in(0).t;
  const nnapi::Form& f = ctx.form();
  const int64_t axis = wrap_axis(ctx.i32(f.at(R::Axis)), x.dim());
  const int64_t n = ctx.i32(f.at(R::NumSplits));
  if (n != static_cast<int64_t>(ctx.num_outputs()) || x.size(axis) % n != 0)
    fail(Result::BadData, "SPLIT count does not divide the axis or match the outputs");
  auto parts = x.split(x.size(axis) / n, axis);
  for (size_t o = 0; o < parts.size(); ++o) ctx.set_output(o, parts[o].contiguous());
}

// ---- CHANNEL_SHUFFLE: input, num_groups (INT32), axis (INT32). The axis of
// size C is viewed as [num_groups, C / num_groups], the two are swapped, and
// the result is flattened back.

void execute_channel_shuffle(ExecContext& ctx) {
  const at::Tensor& x = ctx.in(0).t;
  const nnapi::Form& f = ctx.form();
  const int64_t groups = ctx.i32(f.at(R::Groups));
  const int64_t axis = wrap_axis(ctx.i32(f.at(R::Axis)), x.dim());
  const int64_t c = x.size(axis);
  if (groups <= 0 || c % groups != 0) {
    fail(Result::BadData, "CHANNEL_SHUFFLE groups must divide the axis size");
  }
  std::vector<int64_t> split = x.sizes().vec();
  split[static_cast<size_t>(axis)] = c / groups;
  split.insert(split.begin() + axis, groups);
  at::Tensor y = x.reshape(split).transpose(axis, axis + 1).contiguous().reshape(x.sizes());
  ctx.set_output(0, y);
}

// ---- DEPTH_TO_SPACE / SPACE_TO_DEPTH: input, block_size (INT32) [, nchw
// (BOOL)]. TensorFlow's channel order: depth index (i * block + j) * C + c
// holds the value at row offset i, column offset j, channel c of a block.

int64_t block_size(ExecContext& ctx) {
  const int64_t b = ctx.i32(ctx.form().at(R::BlockSize));
  if (b < 1) fail(Result::BadData, "block_size must be at least 1");
  return b;
}

void execute_depth_to_space(ExecContext& ctx) {
  const at::Tensor& x = ctx.in(0).t;
  const int64_t b = block_size(ctx);
  const bool nchw = nchw_flag(ctx);
  const int64_t n = x.size(0), depth = x.size(nchw ? 1 : 3);
  const int64_t h = x.size(nchw ? 2 : 1), w = x.size(nchw ? 3 : 2);
  if (depth % (b * b) != 0) fail(Result::BadData, "depth is not a multiple of block_size^2");
  const int64_t c = depth / (b * b);
  at::Tensor y;
  if (nchw) {  // (N, i, j, C, H, W) -> (N, C, H, i, W, j)
    y = x.reshape({n, b, b, c, h, w}).permute({0, 3, 4, 1, 5, 2}).reshape({n, c, h * b, w * b});
  } else {  // (N, H, W, i, j, C) -> (N, H, i, W, j, C)
    y = x.reshape({n, h, w, b, b, c}).permute({0, 1, 3, 2, 4, 5}).reshape({n, h * b, w * b, c});
  }
  ctx.set_output(0, y.contiguous());
}

void execute_space_to_depth(ExecContext& ctx) {
  const at::Tensor& x = ctx.in(0).t;
  const int64_t b = block_size(ctx);
  const bool nchw = nchw_flag(ctx);
  const int64_t n = x.size(0), c = x.size(nchw ? 1 : 3);
  const int64_t h = x.size(nchw ? 2 : 1), w = x.size(nchw ? 3 : 2);
  if (h % b != 0 || w % b != 0)
    fail(Result::BadData, "height and width must be multiples of block_size");
  at::Tensor y;
  if (nchw) {  // (N, C, H, i, W, j) -> (N, i, j, C, H, W)
    y = x.reshape({n, c, h / b, b, w / b, b})
            .permute({0, 3, 5, 1, 2, 4})
            .reshape({n, b * b * c, h / b, w / b});
  } else {  // (N, H, i, W, j, C) -> (N, H, W, i, j, C)
    y = x.reshape({n, h / b, b, w / b, b, c})
            .permute({0, 1, 3, 2, 4, 5})
            .reshape({n, h / b, w / b, b * b * c});
  }
  ctx.set_output(0, y.contiguous());
}

// ---- GATHER: input, axis (INT32, negative counts from the end), indices
// (TENSOR_INT32). Output: input.shape[:axis] + indices.shape +
// input.shape[axis + 1:].

void execute_gather(ExecContext& ctx) {
  const at::Tensor& x = ctx.in(0).t;
  const nnapi::Form& f = ctx.form();
  const int64_t axis = wrap_axis(ctx.i32(f.at(R::Axis)), x.dim());
  const at::Tensor& indices = ctx.in(f.at(R::Indices)).t;
  at::Tensor flat = indices.reshape({-1}).to(at::kLong);
  if (flat.numel() > 0 &&
      (flat.min().item<int64_t>() < 0 || flat.max().item<int64_t>() >= x.size(axis)))
    fail(Result::BadData, "GATHER index out of range");
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().begin() + axis);
  for (int64_t d : indices.sizes()) shape.push_back(d);
  shape.insert(shape.end(), x.sizes().begin() + axis + 1, x.sizes().end());
  ctx.set_output(0, x.index_select(axis, flat).reshape(shape));
}

// ---- TILE: input, multiples (1-D TENSOR_INT32, one per input dim). Output
// dim i is input dim i * multiples[i]: the input repeated along each dim.

void execute_tile(ExecContext& ctx) {
  const at::Tensor& x = ctx.in(0).t;
  std::vector<int64_t> multiples = ctx.int_list(ctx.form().at(R::Multiples));
  if (static_cast<int64_t>(multiples.size()) != x.dim())
    fail(Result::BadData, "TILE needs one multiple per input dim");
  for (int64_t m : multiples) {
    if (m < 1) fail(Result::BadData, "TILE multiples must be positive");
  }
  ctx.set_output(0, x.dim() == 0 ? x.clone() : x.repeat(multiples).contiguous());
}

}  // namespace

void add_shape_kernels(std::vector<OpKernel>& table) {
  table.push_back({Op::DepthToSpace, "DEPTH_TO_SPACE", execute_depth_to_space});
  table.push_back({Op::SpaceToDepth, "SPACE_TO_DEPTH", execute_space_to_depth});
  table.push_back({Op::Gather, "GATHER", execute_gather});
  table.push_back({Op::ChannelShuffle, "CHANNEL_SHUFFLE", execute_channel_shuffle});
  table.push_back({Op::Reshape, "RESHAPE", execute_reshape});
  table.push_back({Op::ExpandDims, "EXPAND_DIMS", execute_expand_dims});
  table.push_back({Op::Squeeze, "SQUEEZE", execute_squeeze});
  table.push_back({Op::StridedSlice, "STRIDED_SLICE", execute_strided_slice});
  table.push_back({Op::Slice, "SLICE", execute_slice});
  table.push_back({Op::Concatenation, "CONCATENATION", execute_concat});
  table.push_back({Op::Transpose, "TRANSPOSE", execute_transpose});
  table.push_back({Op::Pad, "PAD", execute_pad});
  table.push_back({Op::PadV2, "PAD_V2", execute_pad});
  table.push_back({Op::Split, "SPLIT", execute_split});
  table.push_back({Op::Tile, "TILE", execute_tile});
}

}  // namespace nnrt

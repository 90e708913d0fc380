// Upsampling: upsample_nearest2d (RESIZE_NEAREST_NEIGHBOR, or GATHER with
// PyTorch's index tables) and upsample_bilinear2d (RESIZE_BILINEAR with its
// corner flags, or below NNAPI feature level 4 FULLY_CONNECTED products,
// replicate padding, DEPTHWISE_CONV_2D and pixel_shuffle), and
// upsample_bicubic2d (FULLY_CONNECTED products with PyTorch's weights).
#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>

#include "lower/conv_pool.h"
#include "lower/convolution.h"
#include "lower/emit.h"
#include "lower/node_args.h"
#include "lower/pixel_shuffle.h"
#include "lower/pooling.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"
#include "serialize/pyrepr.h"

namespace nnapi_convert {
namespace {

using nnapi::Fuse;
using nnapi::Op;

// The input row (or column) NNAPI's RESIZE_NEAREST_NEIGHBOR reads for each
// of `out` outputs from `in` (no align_corners or half_pixel_centers):
// min(floor(o * (in / out)), in - 1), in float32, as NeuralNetworks.h's
// reference computes it.
std::vector<int64_t> nnapi_nearest_index(int64_t in, int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<int64_t> index;
  for (int64_t o = 0; o < out; ++o) {
    const auto i = static_cast<int64_t>(std::floor(static_cast<float>(o) * scale));
    index.push_back(std::min(i, in - 1));
  }
  return index;
}

// The input row (d = 2) or column (d = 3) PyTorch's upsample_nearest2d reads
// for each output with these arguments: its own kernel run on a ramp. (With a
// scale factor it maps by 1 / scale, not by in / out: UpSample.h's
// compute_scales_value and nearest_idx.)
std::vector<int64_t> torch_nearest_index(int64_t h, int64_t w, int64_t d,
                                         const std::vector<int64_t>& sizes,
                                         const std::vector<double>& scales) {
  const int64_t n = d == 2 ? h : w;
  at::Tensor ramp = at::arange(n, at::kFloat)
                        .reshape(d == 2 ? at::IntArrayRef{1, 1, n, 1} : at::IntArrayRef{1, 1, 1, n})
                        .expand({1, 1, h, w})
                        .contiguous();
  using Scales = c10::optional<at::ArrayRef<double>>;
  at::Tensor out = sizes.empty()
                       ? at::upsample_nearest2d(ramp, at::OptionalIntArrayRef(), Scales(scales))
                       : at::upsample_nearest2d(ramp, at::OptionalIntArrayRef(sizes), Scales());
  out = d == 2 ? out[0][0].select(1, 0) : out[0][0][0];
  const at::Tensor index = out.to(at::kLong).contiguous();
  return {index.data_ptr<int64_t>(), index.data_ptr<int64_t>() + index.numel()};
}

// upsample_nearest2d(input, output_size, scale_factors) and (input,
// output_size, scales_h, scales_w). RESIZE_NEAREST_NEIGHBOR where its index
// map is PyTorch's: always for an output size (both map by in / out) and for
// whole scale factors; for another scale factor (PyTorch maps by 1 / scale,
// e.g. 1.7 on 4 rows reads rows 0 0 1 1 2 2, NNAPI 0 0 1 2 2 3) when the maps
// still agree at these fixed sizes, else a GATHER along H and one along W
// with PyTorch's index tables (NNAPI feature level 3; fixed height and
// width).
void lower_upsample_nearest2d(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  const c10::IValue& size_iv = args.constant("output_size");
  if (args.has("scales_h")) {
    check(args.is_none("scales_h") && args.is_none("scales_w"),
          "upsample_nearest2d with separate scales_h/scales_w is not supported");
  }
  const OperandHandle x = cx.get_operand(node->input(0));  // `self` or `input`, by overload
  const auto& [image_id, image] = x;
  check(image.shape.size() == 4, "upsample_nearest2d needs a 4-D input");
  bool has_size = !size_iv.isNone();
  bool has_scale = !args.is_none("scale_factors");
  check(!(has_size && has_scale), "size and scale cannot both be given");
  check(has_size || has_scale, "size and scale cannot both be None");
  check(image.shape[1] != 0, "flexible channels are not supported for upsampling");
  int64_t out_h, out_w;
  std::vector<int64_t> sizes;
  std::vector<double> scales;
  if (has_size) {
    sizes = size_iv.toIntVector();
    if (sizes.size() == 1) sizes.push_back(sizes[0]);
    check(sizes.size() == 2, "upsample size must have 2 values");
    out_h = sizes[0];
    out_w = sizes[1];
  } else {
    scales = args.constant("scale_factors").toDoubleVector();
    if (scales.size() == 1) scales.push_back(scales[0]);
    check(scales.size() == 2, "upsample scale must have 2 values");
    out_h = static_cast<int64_t>(scales[0] * image.shape[2]);
    out_w = static_cast<int64_t>(scales[1] * image.shape[3]);
  }
  const bool fixed_hw = image.shape[2] != 0 && image.shape[3] != 0;
  bool same_maps = true;
  std::vector<int64_t> tables[2];
  if (fixed_hw) {
    for (int64_t d : {2, 3}) {
      tables[d - 2] = torch_nearest_index(image.shape[2], image.shape[3], d, sizes, scales);
      same_maps =
          same_maps && tables[d - 2] == nnapi_nearest_index(image.shape[d], d == 2 ? out_h : out_w);
    }
  } else {
    // Over a flexible size, only maps that agree for every size: an output
    // size, or whole scale factors (1 / s and in / (s in) are the same float).
    for (double s : scales) same_maps = same_maps && s == std::floor(s) && s >= 1;
    check(same_maps, [&] {
      return "nearest upsampling by scale factor " + py_float_repr(scales[0]) + ", " +
             py_float_repr(scales[1]) +
             " over a flexible height or width: PyTorch maps output pixels by 1 / scale, "
             "NNAPI's RESIZE_NEAREST_NEIGHBOR by the size ratio, and they differ for some "
             "sizes; give height and width fixed sizes in --input (or use whole scale factors)";
    });
  }
  if (!same_maps) {
    // GATHER of PyTorch's rows, then of its columns (a whole-size identity is skipped).
    OperandHandle y = x;
    for (int64_t d : {2, 3}) {
      const std::vector<int64_t>& table = tables[d - 2];
      std::vector<int64_t> identity(static_cast<size_t>(image.shape[d]));
      std::iota(identity.begin(), identity.end(), 0);
      if (table == identity) continue;
      std::vector<SymInt> dims = sym_shape(y);
      dims[d] = {static_cast<int64_t>(table.size()), ""};
      ModelBuilder& m = cx.model();
      const int32_t index_id = cx.add_weight(at::tensor(table, at::kInt), DimOrder::Contiguous);
      const int32_t axis_id = m.add_int_scalar(static_cast<int32_t>(nnapi_axis(y.op, d)));
      const OperandHandle g = cx.add_output(nullptr, y.op, dims);
      add_gather(m, y.id, axis_id, index_id, g.id);
      y = g;
    }
    cx.reinterpret(node->output(), y.id, y.op);
    return;
  }
  ModelBuilder& m = cx.model();
  int32_t arg_h, arg_w;
  if (has_size) {
    arg_h = m.add_int_scalar(static_cast<int32_t>(out_h));
    arg_w = m.add_int_scalar(static_cast<int32_t>(out_w));
  } else {
    arg_h = m.add_float_scalar(static_cast<float>(scales[0]));
    arg_w = m.add_float_scalar(static_cast<float>(scales[1]));
  }
  Shape out_shape = {image.shape[0], image.shape[1], out_h, out_w};
  int32_t out_id = cx.add_tensor_operand(node->output(), image.with_shape(out_shape));
  if (image.shape[0] == 0) cx.forward_operand_shape(out_id, 0, image_id, 0);
  for (int64_t d : {2, 3}) {
    if (image.shape[d] != 0) continue;
    if (has_size) {
      cx.compute_operand_shape(out_id, d, std::to_string(sizes[d - 2]));
    } else {
      cx.compute_operand_shape(
          out_id, d, "int(" + py_float_repr(scales[d - 2]) + " * " + flex_name(image_id, d) + ")");
    }
  }
  int32_t layout = m.add_bool_scalar(image.use_nchw());
  using R = nnapi::Role;
  add_by_roles(m, Op::ResizeNearestNeighbor,
               {{R::Input, image_id},
                {has_size ? R::OutputW : R::ScaleW, arg_w},
                {has_size ? R::OutputH : R::ScaleH, arg_h},
                {R::Layout, layout}},
               {out_id});
}

// RESIZE_BILINEAR with its align_corners / half_pixel_centers flags: input,
// width, height, layout, align_corners, half_pixel_centers. The flags came
// with a later feature level than the operation (the validator's
// level_with_inputs: 4, API level 30); without them its coordinate mapping is
// not PyTorch's.
constexpr int kResizeInputsWithFlags = 6;

// A resampling of `x` (N, C, H, W) to (N, C, out_h, out_w) that is
// separable and linear (bilinear, bicubic): row j of each axis's matrix holds
// the weights PyTorch interpolates output j with, got by running PyTorch's
// own kernel `resize` (input, (out_h, out_w), scale_h, scale_w) on unit
// vectors along that axis (the other axis of size 1 to 1, weight 1); each
// output is the same weighted sum eager PyTorch computes, in another order.
using ResizeFn = std::function<at::Tensor(const at::Tensor&, at::IntArrayRef, c10::optional<double>,
                                          c10::optional<double>)>;
OperandHandle resize_by_products(LoweringContext& cx, const OperandHandle& x, int64_t out_h,
                                 int64_t out_w, c10::optional<double> scale_h,
                                 c10::optional<double> scale_w, const ResizeFn& resize) {
  const int64_t h = x.op.shape[2], w = x.op.shape[3];
  const at::Tensor a_h =
      resize(at::eye(h, at::kFloat).reshape({1, h, h, 1}), {out_h, 1}, scale_h, c10::nullopt)
          .reshape({h, -1});
  const at::Tensor a_w =
      resize(at::eye(w, at::kFloat).reshape({1, w, 1, w}), {1, out_w}, c10::nullopt, scale_w)
          .reshape({w, -1});
  return separable_by_products(cx, x, a_h, a_w);
}

// Float bilinear upsampling of `x` (N, C, H, W) below feature level 4, by
// resize_by_products.
OperandHandle bilinear_by_products(LoweringContext& cx, const OperandHandle& x, int64_t out_h,
                                   int64_t out_w, bool align_corners) {
  return resize_by_products(
      cx, x, out_h, out_w, c10::nullopt, c10::nullopt,
      [&](const at::Tensor& t, at::IntArrayRef size, c10::optional<double>, c10::optional<double>) {
        return at::upsample_bilinear2d(t, size, align_corners);
      });
}

// `x` with its first and last row (d = 2) or column (d = 3) once more on
// either side (replicate padding by 1) over a fixed or flexible size: a
// STRIDED_SLICE of the first, one of the last (begin -1 to the end) and a
// CONCATENATION.
OperandHandle replicate_edges(LoweringContext& cx, const OperandHandle& x, int64_t d) {
  const int64_t axis = nnapi_axis(x.op, d);
  ModelBuilder& m = cx.model();
  auto edge = [&](int64_t begin) {
    std::vector<int64_t> begins(4, 0), ends(4, 0), strides(4, 1);
    begins[axis] = begin;
    ends[axis] = begin + 1;
    int32_t end_mask = 0;  // every other axis, and the last edge's, to its end
    for (int64_t a = 0; a < 4; ++a) {
      if (a != axis || begin < 0) end_mask |= 1 << a;
    }
    std::vector<SymInt> dims = sym_shape(x);
    dims[d] = {1, ""};
    const OperandHandle y = cx.add_output(nullptr, x.op, dims);
    add_by_roles(m, Op::StridedSlice,
                 strided_slice_roles(cx, x.id, begins, ends, strides, end_mask, 0), {y.id});
    return y;
  };
  const OperandHandle first = edge(0), last = edge(-1);
  std::vector<SymInt> dims = sym_shape(x);
  dims[d] = padded_dim(dims[d], 2);
  const OperandHandle y = cx.add_output(nullptr, x.op, dims);
  const int32_t axis_id = m.add_int_scalar(static_cast<int32_t>(axis));
  add_concatenation(m, {first.id, x.id, last.id}, axis_id, y.id);
  return y;
}

// Float bilinear upsampling (align_corners=False) of `x` by a whole scale s
// over a fixed or flexible height and width, without RESIZE_BILINEAR's
// flags. PyTorch's output row s i + r reads source row i + delta_r, delta_r =
// (2 r + 1 - s) / (2 s) in (-1/2, 1/2): rows i - 1 and i (delta_r < 0) or i
// and i + 1, clamped to the image, with weights that do not depend on i or on
// the size. So: the edges repeated once (the clamp), one DEPTHWISE_CONV_2D
// whose 3x3 kernel for phase (r_h, r_w) is the outer product of the two
// axes' taps (s * s outputs per channel, in pixel_shuffle's order), and
// pixel_shuffle by s (levels 1 and 3 operations).
OperandHandle bilinear_by_phases(LoweringContext& cx, const OperandHandle& x, int64_t s) {
  const int64_t channels = x.op.shape[1], phases = s * s;
  auto taps = [&](int64_t r) {
    const double delta = static_cast<double>(2 * r + 1 - s) / static_cast<double>(2 * s);
    return delta < 0 ? std::array<double, 3>{-delta, 1 + delta, 0}
                     : std::array<double, 3>{0, 1 - delta, delta};
  };
  at::Tensor w = at::zeros({channels * phases, 1, 3, 3}, at::kFloat);
  auto a = w.accessor<float, 4>();
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < s; ++i) {
      for (int64_t j = 0; j < s; ++j) {
        const auto th = taps(i), tw = taps(j);
        for (size_t u = 0; u < 3; ++u) {
          for (size_t v = 0; v < 3; ++v) {
            a[c * phases + i * s + j][0][static_cast<int64_t>(u)][static_cast<int64_t>(v)] =
                static_cast<float>(th[u] * tw[v]);
          }
        }
      }
    }
  }
  const OperandHandle padded = replicate_edges(cx, replicate_edges(cx, x, 2), 3);
  const int32_t bias_id = cx.add_weight(at::zeros({channels * phases}, at::kFloat));
  const ConvPoolArgs args{3, 3, 1, 1, 0, 0, 0, 0, 1, 1, channels};
  const OperandHandle y =
      emit_conv2d(cx, nullptr, 0.0, 0, padded, w, bias_id, args, false, Fuse::None);
  return emit_pixel_shuffle(cx, y, s, nullptr);
}

// QUANTIZE of float `v` to (scale, zero_point) rounding v / scale half to
// even, as PyTorch's quantized kernels round (nearbyint), where NNAPI's
// QUANTIZE rounds half away from zero; on ties (exact halves, which bilinear
// weights like 1/4 and 3/4 make common) the two differ by one quantum. With
// t = v / scale snapped to a 2^-10 grid (so that float error in v does not
// hide a tie; |t| < 2^9 keeps the grid exact), r = t + 0.5 and f = floor(r):
// a tie is r == f, i.e. tie = 1 + floor(f - r) in {0, 1}; f is odd when
// odd = 2 floor((f + 1) / 2) - f is 1; half to even is f - tie * odd. All
// float operations of level 1 (FLOOR, ADD, SUB, MUL), then QUANTIZE of the
// whole number times scale.
OperandHandle quantize_half_to_even(LoweringContext& cx, const OperandHandle& v, double scale,
                                    int64_t zero_point, const Value* out) {
  auto mul = [&](const OperandHandle& a, double k) {
    return emit_binary(cx, Op::Mul, a, float_scalar_tensor(cx, static_cast<float>(k)));
  };
  auto add = [&](const OperandHandle& a, double k) {
    return emit_binary(cx, Op::Add, a, float_scalar_tensor(cx, static_cast<float>(k)));
  };
  auto floor = [&](const OperandHandle& a) { return emit_unary(cx, Op::Floor, a); };
  auto sub = [&](const OperandHandle& a, const OperandHandle& b) {
    return emit_binary(cx, Op::Sub, a, b);
  };
  constexpr double kGrid = 1024.0;
  const OperandHandle t = mul(floor(add(mul(v, kGrid / scale), 0.5)), 1.0 / kGrid);
  const OperandHandle r = add(t, 0.5);
  const OperandHandle f = floor(r);
  const OperandHandle tie = add(floor(sub(f, r)), 1.0);
  const OperandHandle odd = sub(mul(floor(mul(add(f, 1.0), 0.5)), 2.0), f);
  const OperandHandle even = sub(f, emit_binary(cx, Op::Mul, tie, odd));
  return emit_quantize(cx, mul(even, scale), scale, zero_point, out);
}

// upsample_bilinear2d(input, output_size, align_corners, scale_factors) and
// (input, output_size, align_corners, scales_h, scales_w) -> RESIZE_BILINEAR
// with NNAPI's align_corners / half_pixel_centers flags (feature level 4),
// over fixed or flexible height and width (a flexible one by output size or
// by a whole scale factor, NNAPI's FLOAT32 scale form). Below level 4
// (--min-android-api under 30) over fixed sizes by bilinear_by_products, a
// quantized input between DEQUANTIZE and QUANTIZE to its own parameters
// (PyTorch's quantized kernel keeps them).
void lower_upsample_bilinear2d(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  const OperandHandle x = cx.get_operand(node->input(0));  // `self` or `input`, by overload
  const auto& [image_id, image] = x;
  check(image.shape.size() == 4, "upsample_bilinear2d needs a 4-D input");
  check(image.shape[1] != 0,
        "upsample_bilinear2d over flexible channels is not supported; give them a fixed size "
        "in --input");
  const bool fixed_hw = image.shape[2] != 0 && image.shape[3] != 0;
  bool align_corners = args.flag("align_corners");
  const c10::IValue& size_iv = args.constant("output_size");
  std::vector<int64_t> size;
  std::vector<double> scales;
  if (!size_iv.isNone()) {
    size = size_iv.toIntVector();
    check(size.size() == 2, "upsample_bilinear2d size must have 2 values");
  } else {
    if (args.has("scale_factors")) {
      scales = args.constant("scale_factors").toDoubleVector();
    } else {
      scales = {args.constant("scales_h").toDouble(), args.constant("scales_w").toDouble()};
    }
    check(scales.size() == 2, "upsample_bilinear2d scale must have 2 values");
    if (fixed_hw) {
      double h = scales[0] * image.shape[2], w = scales[1] * image.shape[3];
      // PyTorch maps coordinates with the given scale; NNAPI with the size
      // ratio. They agree when the scaled size is whole.
      check(h == std::floor(h) && w == std::floor(w),
            "upsample_bilinear2d with a scale factor that does not give a whole output size");
      size = {static_cast<int64_t>(h), static_cast<int64_t>(w)};
    } else {
      // Over a flexible size only a whole scale gives a whole size (and
      // in / (s in) is 1 / s in float32) at every size.
      for (double sc : scales) {
        check(sc >= 1 && sc == std::floor(sc), [&] {
          return "upsample_bilinear2d by scale factor " + py_float_repr(scales[0]) + ", " +
                 py_float_repr(scales[1]) +
                 " over a flexible height or width: PyTorch maps coordinates by 1 / scale, "
                 "NNAPI by the size ratio, and they differ for some sizes unless the scale is "
                 "whole; give height and width fixed sizes in --input (or use whole scale "
                 "factors, or an output size)";
        });
      }
    }
  }
  if (!cx.has_operation(Op::ResizeBilinear, kResizeInputsWithFlags)) {
    const bool by_phases = !fixed_hw && size.empty() && !align_corners && scales[0] == scales[1];
    check(fixed_hw || by_phases, [&] {
      return "upsample_bilinear2d over a flexible height or width with " +
             std::string(align_corners  ? "align_corners=True"
                         : size.empty() ? "different scale factors for height and width"
                                        : "an output size") +
             " needs Android 11 (NNAPI feature level 4: RESIZE_BILINEAR's align_corners and "
             "half_pixel_centers flags); below it NNAPI maps coordinates otherwise than "
             "PyTorch, and the interpolation weights that stand in for the flags depend on the "
             "input size (only one whole scale factor with align_corners=False converts). Give "
             "height and width fixed sizes in --input, or convert with --min-android-api 30 "
             "if every device you ship to has it";
    });
    const bool quantized = image.type != nnapi::OperandType::TensorFloat32;
    const OperandHandle f = quantized ? emit_dequantize(cx, x) : x;
    const OperandHandle r = by_phases
                                ? bilinear_by_phases(cx, f, static_cast<int64_t>(scales[0]))
                                : bilinear_by_products(cx, f, size[0], size[1], align_corners);
    if (quantized) {
      quantize_half_to_even(cx, r, image.scale, image.zero_point, node->output());
    } else {
      cx.reinterpret(node->output(), r.id, r.op);
    }
    return;
  }
  ModelBuilder& m = cx.model();
  const bool by_scale = size.empty();
  using R = nnapi::Role;
  RoleIds given = {{R::Input, image_id}};
  for (int64_t d : {3, 2}) {  // width, then height
    const R role =
        d == 3 ? (by_scale ? R::ScaleW : R::OutputW) : (by_scale ? R::ScaleH : R::OutputH);
    given.push_back({role, by_scale ? m.add_float_scalar(static_cast<float>(scales[d - 2]))
                                    : m.add_int_scalar(static_cast<int32_t>(size[d - 2]))});
  }
  for (auto [role, flag] :
       {std::pair{R::Layout, image.use_nchw()}, std::pair{R::AlignCorners, align_corners},
        std::pair{R::HalfPixelCenters, !align_corners}}) {
    given.push_back({role, m.add_bool_scalar(flag)});
  }
  std::vector<SymInt> dims = {sym_dim(image_id, image.shape, 0), {image.shape[1], ""}};
  for (int64_t d : {2, 3}) {
    if (!by_scale) {
      dims.push_back({size[d - 2], ""});
    } else {
      dims.push_back(
          {0, "int(" + py_float_repr(scales[d - 2]) + " * " + flex_name(image_id, d) + ")"});
    }
  }
  const OperandHandle y = cx.add_output(node->output(), image, dims);
  add_by_roles(m, Op::ResizeBilinear, given, {y.id});
}

// upsample_bicubic2d(input, output_size, align_corners, scale_factors) and
// (input, output_size, align_corners, scales_h, scales_w), float32 over a
// fixed height and width: resize_by_products with PyTorch's bicubic weights
// (A = -0.75, taps clamped to the image; a given scale maps coordinates by
// 1 / scale, as PyTorch does). NNAPI has no bicubic resize. A constant input
// folds at conversion.
void lower_upsample_bicubic2d(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  const OperandHandle x = cx.get_operand(node->input(0));  // `self` or `input`, by overload
  const Shape& shape = x.op.shape;
  check(shape.size() == 4, "upsample_bicubic2d needs a 4-D input");
  check(x.op.type == nnapi::OperandType::TensorFloat32,
        "upsample_bicubic2d of a non-float32 tensor is not supported");
  check(shape[2] != 0 && shape[3] != 0,
        "upsample_bicubic2d over a flexible height or width is not supported: its weights "
        "depend on the input size; give height and width fixed sizes in --input");
  const bool align_corners = args.flag("align_corners");
  c10::optional<double> scale_h, scale_w;
  int64_t out_h = 0, out_w = 0;
  const c10::IValue& size_iv = args.constant("output_size");
  if (!size_iv.isNone()) {
    const std::vector<int64_t> size = size_iv.toIntVector();
    check(size.size() == 2, "upsample_bicubic2d size must have 2 values");
    out_h = size[0];
    out_w = size[1];
  }
  if (args.has("scale_factors") && !args.is_none("scale_factors")) {
    const std::vector<double> scales = args.constant("scale_factors").toDoubleVector();
    check(scales.size() == 2, "upsample_bicubic2d scale must have 2 values");
    scale_h = scales[0];
    scale_w = scales[1];
  } else if (args.has("scales_h")) {
    if (!args.is_none("scales_h")) scale_h = args.constant("scales_h").toDouble();
    if (!args.is_none("scales_w")) scale_w = args.constant("scales_w").toDouble();
  }
  if (size_iv.isNone()) {
    check(scale_h && scale_w, "upsample_bicubic2d needs an output size or scale factors");
    // PyTorch's output size: floor(input size * scale) (UpSample.cpp).
    out_h = static_cast<int64_t>(std::floor(static_cast<double>(shape[2]) * *scale_h));
    out_w = static_cast<int64_t>(std::floor(static_cast<double>(shape[3]) * *scale_w));
  }
  const OperandHandle r =
      resize_by_products(cx, x, out_h, out_w, scale_h, scale_w,
                         [&](const at::Tensor& t, at::IntArrayRef size, c10::optional<double> sh,
                             c10::optional<double> sw) {
                           return at::upsample_bicubic2d(t, size, align_corners, sh, sw);
                         });
  cx.reinterpret(node->output(), r.id, r.op);
}

}  // namespace

void register_upsample_ops(LoweringTable& t) {
  t.add("aten::upsample_bicubic2d", lower_upsample_bicubic2d)
      .with_folds()
      .with_note(
          "float32, fixed height and width: FULLY_CONNECTED products with PyTorch's bicubic "
          "weights (align_corners both ways; by size or scale factor); a constant input (a "
          "position embedding resized) folds at conversion");
  t.add("aten::upsample_nearest2d", lower_upsample_nearest2d);
  t.add("aten::upsample_bilinear2d", lower_upsample_bilinear2d)
      .with_note(
          "RESIZE_BILINEAR with its corner flags at --min-android-api 30 (fixed or flexible "
          "height and width; by output size or whole scale factor); below: fixed sizes as "
          "FULLY_CONNECTED products with PyTorch's weights, a flexible size by one whole scale "
          "factor with align_corners=False as replicate padding, DEPTHWISE_CONV_2D and "
          "pixel_shuffle; quantized through DEQUANTIZE and a QUANTIZE rounding half to even");
}

}  // namespace nnapi_convert

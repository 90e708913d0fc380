// Pooling: max_pool2d, avg_pool2d (every count_include_pad,
// divisor_override, ceil_mode and padding), adaptive_avg_pool2d (any output
// size, float), adaptive_max_pool2d, their 1-D forms (max_pool1d,
// avg_pool1d, adaptive_avg_pool1d, adaptive_max_pool1d). Mean and sum are
// reduction.cpp's, the upsamplings upsample.cpp's.
#include "lower/pooling.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "lower/conv_pool.h"
#include "lower/convolution.h"
#include "lower/emit.h"
#include "lower/matmul.h"
#include "lower/node_args.h"
#include "lower/pixel_shuffle.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"
#include "serialize/pyrepr.h"

namespace nnapi_convert {
namespace {

using nnapi::Fuse;
using nnapi::Op;

// The inputs of NNAPI's explicit-padding pooling form (with the layout flag).
RoleIds pool_inputs(LoweringContext& cx, int32_t image_id, const Operand& image,
                    const ConvPoolArgs& a) {
  using R = nnapi::Role;
  ModelBuilder& m = cx.model();
  RoleIds in = {{R::Input, image_id}};
  for (auto [role, v] :
       std::initializer_list<std::pair<R, int64_t>>{{R::PadLeft, a.pad_l},
                                                    {R::PadRight, a.pad_r},
                                                    {R::PadTop, a.pad_t},
                                                    {R::PadBottom, a.pad_b},
                                                    {R::StrideW, a.stride_w},
                                                    {R::StrideH, a.stride_h},
                                                    {R::FilterW, a.kernel_w},
                                                    {R::FilterH, a.kernel_h},
                                                    {R::Fuse, static_cast<int32_t>(Fuse::None)}}) {
    in.push_back({role, m.add_int_scalar(static_cast<int32_t>(v))});
  }
  in.push_back({R::Layout, m.add_bool_scalar(image.use_nchw())});
  return in;
}

}  // namespace

OperandHandle emit_max_pool(LoweringContext& cx, const OperandHandle& image, ConvPoolArgs a,
                            bool ceil_mode, const Value* out) {
  check(a.dilation_h == 1 && a.dilation_w == 1, "NNAPI does not support dilated pooling");
  const Shape& s = image.op.shape;
  check(s.size() == 4, "max_pool2d needs a 4-D input");
  if (ceil_mode) apply_ceil_mode(s, &a);
  const std::vector<SymInt> dims = conv_pool_out_dims(image, a, s[1], false);
  const RoleIds inputs = pool_inputs(cx, image.id, image.op, a);
  const OperandHandle y = cx.add_output(out, image.op, dims);
  add_by_roles(cx.model(), Op::MaxPool2d, inputs, {y.id});
  return y;
}

OperandHandle emit_avg_pool(LoweringContext& cx, const OperandHandle& image, ConvPoolArgs a,
                            bool ceil_mode, const Value* out, AvgDivisor div) {
  const Shape& s = image.op.shape;
  check(s.size() == 4, "avg_pool2d needs a 4-D input");
  ConvPoolArgs c = a;
  if (ceil_mode) apply_ceil_mode(s, &c);
  const bool overhang = c.pad_b != a.pad_b || c.pad_r != a.pad_r;
  const bool padded = a.pad_t || a.pad_b || a.pad_l || a.pad_r;
  const bool flexible_hw = s[2] == 0 || s[3] == 0;
  OperandHandle x = image;
  if (padded && ((div.count_include_pad && !div.divisor_override && (!overhang || flexible_hw)) ||
                 (div.divisor_override && flexible_hw))) {
    // count_include_pad: PyTorch divides by the whole window, padded cells
    // included (up to the padding's end, not a ceil_mode window's overhang),
    // where NNAPI's AVERAGE_POOL_2D leaves them out of the count. Pad with
    // zeros (a quantized tensor's zero point) first, then pool, keeping only
    // ceil_mode's extra cells as NNAPI padding. (divisor_override over a
    // flexible size: the same zeros, so that each window is whole.)
    x = emit_pad(cx, x, {0, 0, a.pad_t, a.pad_l}, {0, 0, a.pad_b, a.pad_r}, 0.0);
    c.pad_t = c.pad_l = 0;
    c.pad_b -= a.pad_b;
    c.pad_r -= a.pad_r;
  }
  const bool scaled =
      div.divisor_override || (div.count_include_pad && overhang && padded && !flexible_hw);
  const std::vector<SymInt> dims = conv_pool_out_dims(x, c, x.op.shape[1], false);
  const RoleIds inputs = pool_inputs(cx, x.id, x.op, c);
  const OperandHandle y = cx.add_output(scaled ? nullptr : out, x.op, dims);
  add_by_roles(cx.model(), Op::AveragePool2d, inputs, {y.id});
  if (!scaled) return y;
  check(x.op.type == nnapi::OperandType::TensorFloat32,
        "quantized avg_pool2d with divisor_override, or with count_include_pad, padding and a "
        "ceil_mode window past the padding, is not supported");
  if (flexible_hw) {
    // divisor_override over whole windows of a flexible size: the mean times
    // kernel_h kernel_w / divisor everywhere.
    check(!overhang,
          "avg_pool2d with divisor_override and ceil_mode over a flexible height or width is "
          "not supported: the last windows' cell counts depend on the size; give height and "
          "width fixed sizes in --input");
    const double factor =
        static_cast<double>(a.kernel_h * a.kernel_w) / static_cast<double>(div.divisor_override);
    return emit_binary(cx, Op::Mul, y,
                       float_weight_like(cx, at::full({1, 1, 1, 1}, factor, at::kFloat), y.op),
                       Fuse::None, out);
  }
  const int64_t out_h = dims[2].value, out_w = dims[3].value;
  // Per axis: the cells of window i within the input, and within the padded input.
  auto counts = [](int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t n,
                   bool padded_count) {
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; ++i) {
      int64_t start = i * stride - pad, end = std::min(start + k, in + pad);
      if (!padded_count) {
        start = std::max<int64_t>(start, 0);
        end = std::min(end, in);
      }
      v[i] = static_cast<double>(end - start);
    }
    return v;
  };
  const auto inside_h = counts(s[2], a.kernel_h, a.stride_h, a.pad_t, out_h, false);
  const auto inside_w = counts(s[3], a.kernel_w, a.stride_w, a.pad_l, out_w, false);
  const auto pad_h = counts(s[2], a.kernel_h, a.stride_h, a.pad_t, out_h, true);
  const auto pad_w = counts(s[3], a.kernel_w, a.stride_w, a.pad_l, out_w, true);
  at::Tensor map = at::empty({1, 1, out_h, out_w}, at::kFloat);
  auto m = map.accessor<float, 4>();
  for (int64_t i = 0; i < out_h; ++i) {
    for (int64_t j = 0; j < out_w; ++j) {
      const double divisor = div.divisor_override    ? static_cast<double>(div.divisor_override)
                             : div.count_include_pad ? pad_h[i] * pad_w[j]
                                                     : inside_h[i] * inside_w[j];
      m[0][0][i][j] = static_cast<float>(inside_h[i] * inside_w[j] / divisor);
    }
  }
  return emit_binary(cx, Op::Mul, y, float_weight_like(cx, map, y.op), Fuse::None, out);
}

namespace {

// avg_pool's count_include_pad and divisor_override (null for avg_pool1d).
AvgDivisor avg_divisor(LoweringContext& cx, const Value* count_include_pad,
                       const Value* divisor_override) {
  const c10::IValue& cip = cx.constant(count_include_pad).value;
  AvgDivisor d;
  d.count_include_pad = cip.isBool() ? cip.toBool() : (cip.isInt() && cip.toInt() != 0);
  if (divisor_override) {
    const c10::IValue& div = cx.constant(divisor_override).value;
    if (div.isInt()) d.divisor_override = div.toInt();
    check(d.divisor_override >= 0, "avg_pool2d divisor_override must be positive");
  }
  return d;
}

void lower_max_pool2d(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  std::vector<int64_t> kernel = args.ints("kernel_size");
  std::vector<int64_t> stride = args.ints("stride");
  if (stride.empty()) stride = kernel;  // PyTorch's default stride is the kernel size
  ConvPoolArgs a =
      make_conv_pool_args(kernel, stride, args.ints("padding"), args.ints("dilation"), 0);
  emit_max_pool(cx, args.tensor("self"), a, args.flag("ceil_mode"), node->output());
}

void lower_avg_pool2d(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  const AvgDivisor div =
      avg_divisor(cx, args.value("count_include_pad"), args.value("divisor_override"));
  std::vector<int64_t> kernel = args.ints("kernel_size");
  std::vector<int64_t> stride = args.ints("stride");
  if (stride.empty()) stride = kernel;
  ConvPoolArgs a = make_conv_pool_args(kernel, stride, args.ints("padding"), {1, 1}, 0);
  emit_avg_pool(cx, args.tensor("self"), a, args.flag("ceil_mode"), node->output(), div);
}

}  // namespace

OperandHandle emit_adaptive_pool(LoweringContext& cx, Op op, const OperandHandle& image,
                                 const std::vector<int64_t>& size, const Value* out) {
  const char* what = op == Op::MaxPool2d ? "adaptive_max_pool2d" : "adaptive_avg_pool2d";
  const Shape& s = image.op.shape;
  check(s.size() == 4, [&] { return std::string(what) + " needs a 4-D input"; });
  check(size.size() == 2, [&] { return std::string(what) + " needs two output sizes"; });
  if ((s[2] == 0 || s[3] == 0) && size == std::vector<int64_t>{1, 1}) {
    // To 1x1 over a flexible height or width: MEAN (level 1) or REDUCE_MAX
    // (level 3) over both, keeping dims (no pool window to fix when the model
    // is converted).
    check(
        image.op.dim_order == DimOrder::Contiguous || image.op.dim_order == DimOrder::ChannelsLast,
        "unknown memory layout");
    const std::vector<int64_t> axes =
        image.op.use_nchw() ? std::vector<int64_t>{2, 3} : std::vector<int64_t>{1, 2};
    ModelBuilder& m = cx.model();
    const int32_t axes_id = m.add_int_vector(axes);
    // MEAN's keep_dims is an INT32, REDUCE_MAX's a BOOL.
    const int32_t keep_id = op == Op::MaxPool2d ? m.add_bool_scalar(true) : m.add_int_scalar(1);
    const Operand o = image.op.with_shape({s[0], s[1], 1, 1});
    const int32_t out_id = make_output(cx, out, o, &image);
    add_reduce(m, op == Op::MaxPool2d ? Op::ReduceMax : Op::Mean, image.id, axes_id, keep_id,
               out_id);
    return {out_id, o};
  }
  check(s[2] != 0 && s[3] != 0, [&] {
    return std::string(what) + " to " + shape_str(size) +
           " over a flexible height or width is not supported: its windows depend on the input "
           "size, which NNAPI's pools fix when the model is converted (only output size 1x1 "
           "converts, as a reduction); give height and width fixed sizes in --input";
  });
  ConvPoolArgs a{s[2], s[3], 1, 1, 0, 0, 0, 0, 1, 1, 0};
  if (size != std::vector<int64_t>({1, 1})) {
    // Output sizes that divide the input: a plain pool.
    int64_t h = s[2], w = s[3];
    check(size[0] > 0 && size[1] > 0, "adaptive pooling needs positive output sizes");
    if (op == Op::AveragePool2d && image.op.type == nnapi::OperandType::TensorFloat32 &&
        (h % size[0] != 0 || w % size[1] != 0)) {
      // Other sizes (interpolate(mode='area')): PyTorch's windows
      // [floor(i n / out), ceil((i + 1) n / out)) overlap and differ in size,
      // but the mean over them is separable and linear: column i of each
      // axis's matrix is 1 / (window size) over window i.
      auto windows = [](int64_t n, int64_t o) {
        at::Tensor a = at::zeros({n, o}, at::kFloat);
        for (int64_t i = 0; i < o; ++i) {
          const int64_t start = i * n / o, end = ((i + 1) * n + o - 1) / o;
          a.slice(0, start, end).select(1, i).fill_(1.0 / static_cast<double>(end - start));
        }
        return a;
      };
      const OperandHandle r =
          separable_by_products(cx, image, windows(h, size[0]), windows(w, size[1]));
      if (out) cx.reinterpret(out, r.id, r.op);
      return r;
    }
    check(h % size[0] == 0 && w % size[1] == 0, [&] {
      return std::string(what) + " to " + shape_str(size) + " from " + std::to_string(h) + "x" +
             std::to_string(w) +
             ": NNAPI conversion supports output sizes that divide the "
             "input size";
    });
    if (size[0] == h && size[1] == w) {
      if (out) cx.reinterpret(out, image.id, image.op);
      return image;
    }
    a = ConvPoolArgs{h / size[0], w / size[1], h / size[0], w / size[1], 0, 0, 0, 0, 1, 1, 0};
  }
  const RoleIds inputs = pool_inputs(cx, image.id, image.op, a);
  Shape out_shape = {s[0], s[1], size[0], size[1]};
  Operand o = image.op.with_shape(out_shape);
  int32_t out_id = make_output(cx, out, o, &image);
  add_by_roles(cx.model(), op, inputs, {out_id});
  return {out_id, o};
}

namespace {

void lower_adaptive_avg_pool2d(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  emit_adaptive_pool(cx, Op::AveragePool2d, args.tensor("self"), args.ints("output_size"),
                     node->output());
}

// adaptive_max_pool2d(x, size) -> (values, indices); NNAPI has no indices.
void check_indices_unused(const Node* node) {
  check(node->outputs().size() == 2 && !node->output(1)->hasUses(), [&] {
    return std::string(node->kind().toQualString()) +
           ": the indices output is used, which NNAPI cannot compute";
  });
}

void lower_adaptive_max_pool2d(LoweringContext& cx, const Node* node) {
  check_indices_unused(node);
  NodeArgs args(cx, node);
  emit_adaptive_pool(cx, Op::MaxPool2d, args.tensor("self"), args.ints("output_size"),
                     node->output(0));
}

// --- 1-D pools: the 2-D pool over (N, C, 1, L), reshaped from (N, C, L) and back.

// A one-element list of a 1-D pool argument, as the 2-D pair {first, v}.
std::vector<int64_t> pair_1d(const std::vector<int64_t>& v, int64_t first, const char* what) {
  check(v.size() == 1, [&] { return std::string("1-D pooling needs one ") + what; });
  return {first, v[0]};
}

template <typename Pool2d>
void lower_pool1d(LoweringContext& cx, const Node* node, const char* name, Pool2d pool2d) {
  auto [in_id, in] = cx.get_operand(node->input(0));
  check(in.shape.size() == 3, [&] {
    return std::string(name) + " needs a 3-D (N, C, L) input, got " + shape_str(in.shape);
  });
  check(in.dim_order == DimOrder::Contiguous, "unknown memory layout");
  std::vector<SymInt> dims = sym_shape({in_id, in});
  dims.insert(dims.begin() + 2, SymInt{1, ""});
  OperandHandle image = emit_reshape(cx, {in_id, in}, dims);
  OperandHandle pooled = pool2d(image);
  std::vector<SymInt> out_dims = sym_shape(pooled);
  out_dims.erase(out_dims.begin() + 2);
  emit_reshape(cx, pooled, out_dims, node->output(0));
}

void lower_max_pool1d(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  std::vector<int64_t> kernel = args.ints("kernel_size");
  std::vector<int64_t> stride = args.ints("stride");
  if (stride.empty()) stride = kernel;
  ConvPoolArgs a =
      make_conv_pool_args(pair_1d(kernel, 1, "kernel size"), pair_1d(stride, 1, "stride"),
                          pair_1d(args.ints("padding"), 0, "padding"),
                          pair_1d(args.ints("dilation"), 1, "dilation"), 0);
  const bool ceil_mode = args.flag("ceil_mode");
  lower_pool1d(cx, node, "max_pool1d", [&](const OperandHandle& image) {
    return emit_max_pool(cx, image, a, ceil_mode, nullptr);
  });
}

// avg_pool1d(x, kernel, stride, padding, ceil_mode, count_include_pad).
void lower_avg_pool1d(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  const AvgDivisor div = avg_divisor(cx, args.value("count_include_pad"), nullptr);
  std::vector<int64_t> kernel = args.ints("kernel_size");
  std::vector<int64_t> stride = args.ints("stride");
  if (stride.empty()) stride = kernel;
  ConvPoolArgs a =
      make_conv_pool_args(pair_1d(kernel, 1, "kernel size"), pair_1d(stride, 1, "stride"),
                          pair_1d(args.ints("padding"), 0, "padding"), {1, 1}, 0);
  const bool ceil_mode = args.flag("ceil_mode");
  lower_pool1d(cx, node, "avg_pool1d", [&](const OperandHandle& image) {
    return emit_avg_pool(cx, image, a, ceil_mode, nullptr, div);
  });
}

void lower_adaptive_pool1d(LoweringContext& cx, const Node* node, Op op) {
  const char* name = op == Op::MaxPool2d ? "adaptive_max_pool1d" : "adaptive_avg_pool1d";
  if (op == Op::MaxPool2d) check_indices_unused(node);
  std::vector<int64_t> size = pair_1d(NodeArgs(cx, node).ints("output_size"), 1, "output size");
  lower_pool1d(cx, node, name, [&](const OperandHandle& image) {
    return emit_adaptive_pool(cx, op, image, size, nullptr);
  });
}

}  // namespace

// A separable linear map of float `x` (N, C, H, W) to (N, C, out_h, out_w):
// out = A_h^T x A_w per channel with constant `a_h` (H, out_h) and `a_w` (W,
// out_w). One FULLY_CONNECTED over W, a TRANSPOSE, one over H and a TRANSPOSE
// back (levels 1 and 2; NHWC data is made NCHW first and the result NHWC
// again).
OperandHandle separable_by_products(LoweringContext& cx, const OperandHandle& x,
                                    const at::Tensor& a_h, const at::Tensor& a_w) {
  const int64_t out_h = a_h.size(1), out_w = a_w.size(1);
  OperandHandle y = emit_relayout(cx, x, DimOrder::Contiguous);  // (N, C, H, W)
  y = product_with_constant(cx, y, a_w, nullptr);
  y = emit_permute(cx, y, {0, 1, 3, 2});  // (N, C, W', H)
  y = product_with_constant(cx, y, a_h, nullptr);
  if (x.op.dim_order != DimOrder::ChannelsLast) return emit_permute(cx, y, {0, 1, 3, 2});
  // NHWC in, NHWC out: (N, C, W', H') to (N, H', W', C) data.
  OperandHandle r = emit_permute(cx, y, {0, 3, 2, 1});
  r.op.shape = {y.op.shape[0], y.op.shape[1], out_h, out_w};
  r.op.dim_order = DimOrder::ChannelsLast;
  return r;
}

void register_pooling_ops(LoweringTable& t) {
  t.add("aten::max_pool2d", lower_max_pool2d)
      .with_note(
          "ceil_mode over a flexible height or width: stride - 1 more bottom/right padding "
          "(refused when stride > kernel - padding)");
  t.add("aten::avg_pool2d", lower_avg_pool2d)
      .with_note(
          "count_include_pad=False: AVERAGE_POOL_2D with explicit padding; padding with "
          "count_include_pad: PAD then AVERAGE_POOL_2D (PyTorch's converter passes the padding "
          "to AVERAGE_POOL_2D, which does not count padded cells); divisor_override, or ceil_mode "
          "past the padding with count_include_pad: MUL by a constant map of divisors (float32, "
          "fixed height and width; over a flexible one: PAD, then ceil_mode as max_pool2d's, "
          "divisor_override without ceil_mode as one MUL)");
  t.add("aten::adaptive_avg_pool2d", lower_adaptive_avg_pool2d)
      .with_note(
          "output sizes that divide the input: AVERAGE_POOL_2D; others (interpolate "
          "mode='area'): float32, FULLY_CONNECTED over W and H with PyTorch's window weights; "
          "to 1x1 over a flexible height or width: MEAN (adaptive_max_pool2d: REDUCE_MAX); "
          "other output sizes over a flexible size are refused");
  t.add("aten::adaptive_max_pool2d", lower_adaptive_max_pool2d);
  t.add("aten::max_pool1d", lower_max_pool1d);
  t.add("aten::avg_pool1d", lower_avg_pool1d);
  t.add("aten::adaptive_avg_pool1d", [](LoweringContext& cx, const Node* n) {
    lower_adaptive_pool1d(cx, n, Op::AveragePool2d);
  });
  t.add("aten::adaptive_max_pool1d",
        [](LoweringContext& cx, const Node* n) { lower_adaptive_pool1d(cx, n, Op::MaxPool2d); });
}

}  // namespace nnapi_convert

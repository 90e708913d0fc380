// Pooling, reductions and resizing: max_pool2d, avg_pool2d (every
// count_include_pad, divisor_override, ceil_mode and padding),
// adaptive_avg_pool2d (any output size, float), adaptive_max_pool2d, their 1-D forms (max_pool1d,
// avg_pool1d, adaptive_avg_pool1d, adaptive_max_pool1d), mean,
// upsample_nearest2d, upsample_bilinear2d.
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
#include "serialize/pyrepr.h"

namespace nnapi_convert {
namespace {

using nnapi::Fuse;
using nnapi::Op;

Tensor separable_by_products(LoweringContext& cx, const Tensor& x, const at::Tensor& a_h,
                             const at::Tensor& a_w);

// The inputs of NNAPI's explicit-padding pooling form (with the layout flag).
std::vector<int32_t> pool_inputs(LoweringContext& cx, Op op, int32_t image_id, const Operand& image,
                                 const ConvPoolArgs& a) {
  using R = nnapi::Role;
  ModelBuilder& m = cx.model();
  std::vector<std::pair<R, int32_t>> in = {{R::Input, image_id}};
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
  return signature_inputs(op, in);
}

}  // namespace

Tensor emit_max_pool(LoweringContext& cx, const Tensor& image, ConvPoolArgs a, bool ceil_mode,
                     const Value* out) {
  check(a.dilation_h == 1 && a.dilation_w == 1, "NNAPI does not support dilated pooling");
  const Shape& s = image.op.shape;
  check(s.size() == 4, "max_pool2d needs a 4-D input");
  if (ceil_mode) apply_ceil_mode(s, &a);
  const std::vector<SymInt> dims = conv_pool_out_dims(image, a, s[1], false);
  std::vector<int32_t> inputs = pool_inputs(cx, Op::MaxPool2d, image.id, image.op, a);
  const Tensor y = cx.add_output(out, image.op, dims);
  cx.model().add_operation(Op::MaxPool2d, inputs, {y.id});
  return y;
}

Tensor emit_avg_pool(LoweringContext& cx, const Tensor& image, ConvPoolArgs a, bool ceil_mode,
                     const Value* out, AvgDivisor div) {
  const Shape& s = image.op.shape;
  check(s.size() == 4, "avg_pool2d needs a 4-D input");
  ConvPoolArgs c = a;
  if (ceil_mode) apply_ceil_mode(s, &c);
  const bool overhang = c.pad_b != a.pad_b || c.pad_r != a.pad_r;
  const bool padded = a.pad_t || a.pad_b || a.pad_l || a.pad_r;
  const bool flexible_hw = s[2] == 0 || s[3] == 0;
  Tensor x = image;
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
  std::vector<int32_t> inputs = pool_inputs(cx, Op::AveragePool2d, x.id, x.op, c);
  const Tensor y = cx.add_output(scaled ? nullptr : out, x.op, dims);
  cx.model().add_operation(Op::AveragePool2d, inputs, {y.id});
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

Tensor emit_adaptive_pool(LoweringContext& cx, Op op, const Tensor& image,
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
    m.add_operation(op == Op::MaxPool2d ? Op::ReduceMax : Op::Mean, {image.id, axes_id, keep_id},
                    {out_id});
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
      const Tensor r = separable_by_products(cx, image, windows(h, size[0]), windows(w, size[1]));
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
  std::vector<int32_t> inputs = pool_inputs(cx, op, image.id, image.op, a);
  Shape out_shape = {s[0], s[1], size[0], size[1]};
  Operand o = image.op.with_shape(out_shape);
  int32_t out_id = make_output(cx, out, o, &image);
  cx.model().add_operation(op, inputs, {out_id});
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
  Tensor image = emit_reshape(cx, {in_id, in}, dims);
  Tensor pooled = pool2d(image);
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
  lower_pool1d(cx, node, "max_pool1d", [&](const Tensor& image) {
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
  lower_pool1d(cx, node, "avg_pool1d", [&](const Tensor& image) {
    return emit_avg_pool(cx, image, a, ceil_mode, nullptr, div);
  });
}

void lower_adaptive_pool1d(LoweringContext& cx, const Node* node, Op op) {
  const char* name = op == Op::MaxPool2d ? "adaptive_max_pool1d" : "adaptive_avg_pool1d";
  if (op == Op::MaxPool2d) check_indices_unused(node);
  std::vector<int64_t> size = pair_1d(NodeArgs(cx, node).ints("output_size"), 1, "output size");
  lower_pool1d(cx, node, name, [&](const Tensor& image) {
    return emit_adaptive_pool(cx, op, image, size, nullptr);
  });
}

// How PyTorch (1.13, quint8, the qnnpack engine) computes a quantized mean
// over `dims` of a contiguous tensor of rank `rank` (ReduceOps.cpp's
// mean_out_quantized_cpu), in three ways: dims literally (2, 3) of a 4-D
// tensor, QNNPACK's global average pool (the host MEAN kernel rounds as it
// does); dims that are the innermost ones (-1, (-2, -1), ...), the raw stored
// values averaged in float and rounded half to even (qmean_inner_dim);
// otherwise dequantized, averaged in float32 and quantized to the input's
// scale and zero point. OneMean: one MEAN (also every float mean).
enum class QuantMean { OneMean, Innermost, Float };

QuantMean quant_mean_path(const std::vector<int64_t>& dims, int64_t rank) {
  if (rank == 4 && dims == std::vector<int64_t>{2, 3}) return QuantMean::OneMean;
  std::vector<int64_t> wrapped;
  for (int64_t d : dims) wrapped.push_back(py_index(d, rank));
  std::sort(wrapped.rbegin(), wrapped.rend());
  for (size_t i = 0; i < wrapped.size(); ++i) {
    if (wrapped[i] != rank - 1 - static_cast<int64_t>(i)) return QuantMean::Float;
  }
  return QuantMean::Innermost;
}

// mean(x, dims, keepdim, dtype) as MEAN; sum(x, dims, keepdim, dtype) as
// REDUCE_SUM (float32; its keep_dims is a BOOL where MEAN's is an INT32).
// NeuralNetworks.h says nothing of how a quantized MEAN rounds (its output is
// "of the same OperandCode as input0"; the host runtime rounds as QNNPACK's
// global average pool), so a quantized mean PyTorch does not compute as that
// pool is lowered so that any driver that follows the spec matches eager:
// the float MEAN of the stored values (CAST, exact) QUANTIZEd at scale 1
// (half to even) and CAST to the input's parameters, or of the DEQUANTIZEd
// values QUANTIZEd to the input's parameters, as quant_mean_path says.
void lower_reduce(LoweringContext& cx, const Node* node, Op op) {
  const char* what = op == Op::Mean ? "mean" : "sum";
  check(node->inputs().size() == 4, [&] {
    return std::string("only ") + what + " over given dims converts (aten::" + what +
           ".dim_IntList)";
  });
  auto [in_id, in] = cx.get_operand(node->input(0));
  std::vector<int64_t> dims = cx.constant_int_list(node->input(1));
  bool keep_dim = cx.constant_bool(node->input(2));
  check_dtype_argument(cx, node->input(3), {in_id, in}, node->kind().toQualString());
  check(op == Op::Mean || in.type == nnapi::OperandType::TensorFloat32,
        "sum is supported on float32 tensors only (NNAPI's REDUCE_SUM)");
  int64_t rank = static_cast<int64_t>(in.shape.size());
  std::vector<bool> collapsed(rank, false);
  for (int64_t d : dims) collapsed[py_index(d, rank)] = true;
  const QuantMean path = in.type == nnapi::OperandType::TensorQuant8Asymm
                             ? quant_mean_path(dims, rank)
                             : QuantMean::OneMean;
  if (in.dim_order == DimOrder::ChannelsLast &&
      (path == QuantMean::Float || (!keep_dim && !(collapsed[2] && collapsed[3])))) {
    // Dropping a dim other than H and W leaves no layout to keep the result
    // channels-last in: the reduction runs on the NCHW relayout. So does a
    // float mean of dequantized values, whose rounding depends on the order
    // of the sum: PyTorch's runs on the contiguous (NCHW) tensor.
    const Tensor nchw = emit_relayout(cx, {in_id, in}, DimOrder::Contiguous);
    in_id = nchw.id;
    in = nchw.op;
  }
  std::vector<int64_t> nnapi_dims = dims;
  if (in.dim_order == DimOrder::ChannelsLast) {
    check(rank == 4, [&] { return std::string("channels-last ") + what + " needs 4 dims"; });
    for (int64_t& d : nnapi_dims) d = nnapi_axis(in.dim_order, py_index(d, 4));
  }
  // Without keepdim, a channels-last input reduced over H and W (at least)
  // leaves (N, C) or fewer dims, which are in NCHW order.
  const DimOrder out_order = keep_dim ? in.dim_order : DimOrder::Contiguous;
  // Kept dims as they are, reduced ones 1 (keepdim) or dropped.
  std::vector<SymInt> out_dims;
  for (int64_t i = 0; i < rank; ++i) {
    if (!collapsed[i]) {
      out_dims.push_back(sym_dim(in_id, in.shape, i));
    } else if (keep_dim) {
      out_dims.push_back({1, ""});
    }
  }
  Operand out = in;
  out.dim_order = out_order;
  int32_t dims_id = cx.model().add_int_vector(nnapi_dims);
  int32_t keep_id = op == Op::Mean ? cx.model().add_int_scalar(keep_dim ? 1 : 0)
                                   : cx.model().add_bool_scalar(keep_dim);
  if (path == QuantMean::OneMean) {
    const int32_t out_id = cx.add_output(node->output(), out, out_dims).id;
    cx.model().add_operation(op, {in_id, dims_id, keep_id}, {out_id});
    return;
  }
  const Tensor x{in_id, in};
  Operand real = in;
  real.type = nnapi::OperandType::TensorFloat32;
  real.scale = 0.0;
  real.zero_point = 0;
  const Tensor xf =
      path == QuantMean::Innermost ? emit_unary_to(cx, Op::Cast, x, real) : emit_dequantize(cx, x);
  Operand mean_rec = out;
  mean_rec.type = real.type;
  mean_rec.scale = 0.0;
  mean_rec.zero_point = 0;
  const Tensor mean = cx.add_output(nullptr, mean_rec, out_dims);
  cx.model().add_operation(op, {xf.id, dims_id, keep_id}, {mean.id});
  if (path == QuantMean::Float) {
    emit_quantize(cx, mean, in.scale, in.zero_point, node->output());
    return;
  }
  const Tensor rounded = emit_quantize(cx, mean, 1.0, 0);
  Operand requantized = rounded.op;
  requantized.scale = in.scale;
  requantized.zero_point = in.zero_point;
  emit_unary_to(cx, Op::Cast, rounded, requantized, node->output());
}

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
  const Tensor x = cx.get_operand(node->input(0));  // `self` or `input`, by overload
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
    Tensor y = x;
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
      const Tensor g = cx.add_output(nullptr, y.op, dims);
      m.add_operation(Op::Gather, {y.id, axis_id, index_id}, {g.id});
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
  m.add_operation(
      Op::ResizeNearestNeighbor,
      signature_inputs(Op::ResizeNearestNeighbor, {{R::Input, image_id},
                                                   {has_size ? R::OutputW : R::ScaleW, arg_w},
                                                   {has_size ? R::OutputH : R::ScaleH, arg_h},
                                                   {R::Layout, layout}}),
      {out_id});
}

// RESIZE_BILINEAR's align_corners / half_pixel_centers flags came with NNAPI
// feature level 4 (API level 30); without them its coordinate mapping is not
// PyTorch's.
constexpr int kResizeFlagsLevel = 4;

// A separable linear map of float `x` (N, C, H, W) to (N, C, out_h, out_w):
// out = A_h^T x A_w per channel with constant `a_h` (H, out_h) and `a_w` (W,
// out_w). One FULLY_CONNECTED over W, a TRANSPOSE, one over H and a TRANSPOSE
// back (levels 1 and 2; NHWC data is made NCHW first and the result NHWC
// again).
Tensor separable_by_products(LoweringContext& cx, const Tensor& x, const at::Tensor& a_h,
                             const at::Tensor& a_w) {
  const int64_t out_h = a_h.size(1), out_w = a_w.size(1);
  Tensor y = emit_relayout(cx, x, DimOrder::Contiguous);  // (N, C, H, W)
  y = product_with_constant(cx, y, a_w, nullptr);
  y = emit_permute(cx, y, {0, 1, 3, 2});  // (N, C, W', H)
  y = product_with_constant(cx, y, a_h, nullptr);
  if (x.op.dim_order != DimOrder::ChannelsLast) return emit_permute(cx, y, {0, 1, 3, 2});
  // NHWC in, NHWC out: (N, C, W', H') to (N, H', W', C) data.
  Tensor r = emit_permute(cx, y, {0, 3, 2, 1});
  r.op.shape = {y.op.shape[0], y.op.shape[1], out_h, out_w};
  r.op.dim_order = DimOrder::ChannelsLast;
  return r;
}

// Float bilinear upsampling of `x` (N, C, H, W) below feature level 4. It is
// separable and linear: row j of each axis's matrix holds the weights PyTorch
// interpolates output j with, got by upsampling unit vectors with the same
// arguments; each output is the same two-term weighted sum eager PyTorch
// computes.
Tensor bilinear_by_products(LoweringContext& cx, const Tensor& x, int64_t out_h, int64_t out_w,
                            bool align_corners) {
  const int64_t h = x.op.shape[2], w = x.op.shape[3];
  // (n, out): column j the weights of output j along an axis of n inputs.
  auto weights = [&](int64_t n, const std::vector<int64_t>& basis,
                     const std::vector<int64_t>& size) {
    return at::upsample_bilinear2d(at::eye(n, at::kFloat).reshape(basis), size, align_corners)
        .reshape({n, -1});
  };
  return separable_by_products(cx, x, weights(h, {1, h, h, 1}, {out_h, 1}),
                               weights(w, {1, w, 1, w}, {1, out_w}));
}

// `x` with its first and last row (d = 2) or column (d = 3) once more on
// either side (replicate padding by 1) over a fixed or flexible size: a
// STRIDED_SLICE of the first, one of the last (begin -1 to the end) and a
// CONCATENATION.
Tensor replicate_edges(LoweringContext& cx, const Tensor& x, int64_t d) {
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
    const Tensor y = cx.add_output(nullptr, x.op, dims);
    m.add_operation(Op::StridedSlice,
                    strided_slice_inputs(cx, x.id, begins, ends, strides, end_mask, 0), {y.id});
    return y;
  };
  const Tensor first = edge(0), last = edge(-1);
  std::vector<SymInt> dims = sym_shape(x);
  dims[d] = padded_dim(dims[d], 2);
  const Tensor y = cx.add_output(nullptr, x.op, dims);
  m.add_operation(Op::Concatenation,
                  {first.id, x.id, last.id, m.add_int_scalar(static_cast<int32_t>(axis))}, {y.id});
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
Tensor bilinear_by_phases(LoweringContext& cx, const Tensor& x, int64_t s) {
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
  const Tensor padded = replicate_edges(cx, replicate_edges(cx, x, 2), 3);
  const int32_t bias_id = cx.add_weight(at::zeros({channels * phases}, at::kFloat));
  const ConvPoolArgs args{3, 3, 1, 1, 0, 0, 0, 0, 1, 1, channels};
  const Tensor y = emit_conv2d(cx, nullptr, 0.0, 0, padded, w, bias_id, args, false, Fuse::None);
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
Tensor quantize_half_to_even(LoweringContext& cx, const Tensor& v, double scale, int64_t zero_point,
                             const Value* out) {
  auto mul = [&](const Tensor& a, double k) {
    return emit_binary(cx, Op::Mul, a, float_scalar_tensor(cx, static_cast<float>(k)));
  };
  auto add = [&](const Tensor& a, double k) {
    return emit_binary(cx, Op::Add, a, float_scalar_tensor(cx, static_cast<float>(k)));
  };
  auto floor = [&](const Tensor& a) { return emit_unary(cx, Op::Floor, a); };
  auto sub = [&](const Tensor& a, const Tensor& b) { return emit_binary(cx, Op::Sub, a, b); };
  constexpr double kGrid = 1024.0;
  const Tensor t = mul(floor(add(mul(v, kGrid / scale), 0.5)), 1.0 / kGrid);
  const Tensor r = add(t, 0.5);
  const Tensor f = floor(r);
  const Tensor tie = add(floor(sub(f, r)), 1.0);
  const Tensor odd = sub(mul(floor(mul(add(f, 1.0), 0.5)), 2.0), f);
  const Tensor even = sub(f, emit_binary(cx, Op::Mul, tie, odd));
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
  const Tensor x = cx.get_operand(node->input(0));  // `self` or `input`, by overload
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
  if (!cx.allows_feature_level(kResizeFlagsLevel)) {
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
    const Tensor f = quantized ? emit_dequantize(cx, x) : x;
    const Tensor r = by_phases ? bilinear_by_phases(cx, f, static_cast<int64_t>(scales[0]))
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
  std::vector<std::pair<R, int32_t>> given = {{R::Input, image_id}};
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
  const std::vector<int32_t> inputs = signature_inputs(Op::ResizeBilinear, given);
  std::vector<SymInt> dims = {sym_dim(image_id, image.shape, 0), {image.shape[1], ""}};
  for (int64_t d : {2, 3}) {
    if (!by_scale) {
      dims.push_back({size[d - 2], ""});
    } else {
      dims.push_back(
          {0, "int(" + py_float_repr(scales[d - 2]) + " * " + flex_name(image_id, d) + ")"});
    }
  }
  const Tensor y = cx.add_output(node->output(), image, dims);
  m.add_operation(Op::ResizeBilinear, inputs, {y.id});
}

}  // namespace

void register_pooling_ops(LoweringTable& t) {
  t.add("aten::max_pool2d", lower_max_pool2d);
  t.add("aten::avg_pool2d", lower_avg_pool2d);
  t.add("aten::adaptive_avg_pool2d", lower_adaptive_avg_pool2d);
  t.add("aten::adaptive_max_pool2d", lower_adaptive_max_pool2d);
  t.add("aten::max_pool1d", lower_max_pool1d);
  t.add("aten::avg_pool1d", lower_avg_pool1d);
  t.add("aten::adaptive_avg_pool1d", [](LoweringContext& cx, const Node* n) {
    lower_adaptive_pool1d(cx, n, Op::AveragePool2d);
  });
  t.add("aten::adaptive_max_pool1d",
        [](LoweringContext& cx, const Node* n) { lower_adaptive_pool1d(cx, n, Op::MaxPool2d); });
  t.add("aten::mean", [](LoweringContext& cx, const Node* n) { lower_reduce(cx, n, Op::Mean); });
  t.add("aten::sum",
        [](LoweringContext& cx, const Node* n) { lower_reduce(cx, n, Op::ReduceSum); });
  t.add("aten::upsample_nearest2d", lower_upsample_nearest2d);
  t.add("aten::upsample_bilinear2d", lower_upsample_bilinear2d);
}

}  // namespace nnapi_convert

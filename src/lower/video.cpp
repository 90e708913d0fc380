// Video: 3-D convolutions and pools (aten::conv3d, aten::_convolution and
// aten::_convolution_mode with 5-D weights, max_pool3d, avg_pool3d,
// adaptive_avg_pool3d) in NNAPI's 2-D operations, and the elementwise
// operations and batch_norm around them. NNAPI has no 3-D operations and
// devices take rank 4 at most, so a video tensor, PyTorch's (N, C, T, H, W),
// is held as its frames: one 4-D operand (T*N, C, H, W), or (T*N, H, W, C)
// with --nhwc, time-major, so that the N frames of one time step are one
// block (DimOrder::FramesNchw / FramesNhwc; the record keeps the 5-D shape).
// - A 3-D convolution with a kernel of depth kt is the sum over k < kt of the
//   2-D convolutions (CONV_2D, DEPTHWISE_CONV_2D or GROUPED_CONV_2D) of the
//   time steps t*stride + k*dilation with the weight's slice k, the bias in
//   the first: a STRIDED_SLICE of those frames, the convolution, an ADD. The
//   time padding is a PAD of the frame axis with zeros.
// - A 3-D pool is the 2-D pool of each frame (pooling.cpp), then the same
//   over the time window: MAXIMUM of the taps (PAD_V2 with the lowest float
//   for max_pool3d's padding), or their ADD and a MUL by PyTorch's time
//   divisor (avg_pool3d's divisor is the product of a time and an image
//   part); adaptive_avg_pool3d a MEAN over each of PyTorch's time windows.
// - Elementwise operations, dropout and batch_norm (per-channel, per-frame)
//   are the 2-D lowering of the frames.
// A contiguous 5-D tensor (a model input, which the converted module hands to
// NNAPI as its elements, nnapi_input_dims) enters the frames layout by one
// TRANSPOSE where a video operation first reads it; a video tensor that any
// other node reads, or the model returns, leaves it by the inverse TRANSPOSE
// (unfold_video_value, called by the dispatch before each node whose spec
// takes no frames: KindSpec::frames). Float32 or
// quint8 (quantized::conv3d, the quantized pools: lower_qconv3d, Requantize);
// the batch N may be flexible (a load-time size: the frames' dim 0 is then
// T*N, and what takes time steps reads them as (T, N*C, H, W) blocks), the
// other sizes are fixed.
#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <set>

#include "lower/convolution.h"
#include "lower/dispatch.h"
#include "lower/emit.h"
#include "lower/forms.h"
#include "lower/kind_set.h"
#include "lower/node_args.h"
#include "lower/packed_params.h"
#include "lower/pooling.h"
#include "lower/rank_reduce.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {
namespace {

using nnapi::Fuse;
using nnapi::Op;
using nnapi::OperandType;

// A video tensor's frames: the 4-D operand as an image of PyTorch shape
// (T*N, C, H, W) (Contiguous or ChannelsLast), and N (fixed, or a load-time
// size) and T.
struct Frames {
  OperandHandle image;
  SymInt n;
  int64_t t = 0;
};

// The record of the video tensor (N, C, T, H, W) whose frames `f` are (N 0
// when flexible).
Operand video_record(const Frames& f) {
  const Shape& s = f.image.op.shape;
  Operand o = f.image.op;
  o.shape = {f.n.is_constant() ? f.n.value : 0, s[1], f.t, s[2], s[3]};
  o.dim_order =
      f.image.op.dim_order == DimOrder::ChannelsLast ? DimOrder::FramesNhwc : DimOrder::FramesNchw;
  return o;
}

// The frames of a video tensor held as frames (a flexible N: the operand's
// dim 0 over T).
Frames frames_of(const OperandHandle& v) {
  const Shape& s = v.op.shape;
  Operand o = v.op;
  o.shape = {s[2] * s[0], s[1], s[3], s[4]};
  o.dim_order =
      v.op.dim_order == DimOrder::FramesNhwc ? DimOrder::ChannelsLast : DimOrder::Contiguous;
  const SymInt n =
      s[0] != 0 ? SymInt{s[0], ""} : sym_arith(sym_dim(v.id, o.shape, 0), '/', SymInt{s[2], ""});
  return {{v.id, o}, n, s[2]};
}

// An image's operand with its NNAPI dims as a contiguous record.
OperandHandle raw_of(const OperandHandle& image) {
  Operand o = image.op;
  o.shape = fix_shape(image.op.shape, image.op.dim_order);
  o.dim_order = DimOrder::Contiguous;
  return {image.id, o};
}

// The inverse of raw_of: NNAPI dims read as an image in `order`.
OperandHandle image_of(const OperandHandle& raw, DimOrder order) {
  Operand o = raw.op;
  o.dim_order = order;
  const Shape& s = raw.op.shape;
  if (order == DimOrder::ChannelsLast) o.shape = {s[0], s[3], s[1], s[2]};
  return {raw.id, o};
}

// A contiguous operand as `dims` (RESHAPE, none when it has them: fixed
// sizes only).
OperandHandle reshape_raw(LoweringContext& cx, const OperandHandle& raw,
                          const std::vector<SymInt>& dims) {
  const bool fixed =
      std::all_of(dims.begin(), dims.end(), [](const SymInt& d) { return d.is_constant(); });
  if (fixed && raw.op.shape == shape_of(dims)) return raw;
  return emit_reshape(cx, raw, dims);
}

// The frames' operand `raw` (T*N, a, b, c) as (T, N*a, b, c): time steps as
// blocks along dim 0.
OperandHandle as_blocks(LoweringContext& cx, const OperandHandle& raw, int64_t t, const SymInt& n) {
  const Shape& r = raw.op.shape;
  return reshape_raw(cx, raw, {{t, ""}, sym_arith(n, '*', {r[1], ""}), {r[2], ""}, {r[3], ""}});
}

// The inverse of as_blocks: (steps, N*a, b, c) as frames (steps*N, a, b, c)
// in `order`.
OperandHandle from_blocks(LoweringContext& cx, const OperandHandle& blocks, int64_t steps,
                          const SymInt& n, const Shape& frame, DimOrder order) {
  const std::vector<SymInt> dims = {
      sym_arith({steps, ""}, '*', n), {frame[0], ""}, {frame[1], ""}, {frame[2], ""}};
  return image_of(reshape_raw(cx, blocks, dims), order);
}

bool is_video(const LoweringContext& cx, const Value* v) {
  return cx.has_operand(v) && is_frames(cx.get_operand(v).op.dim_order);
}

bool is_5d_operand(const LoweringContext& cx, const Value* v) {
  return cx.has_operand(v) && cx.get_operand(v).op.shape.size() == 5;
}

// `v` as frames: its own when it is held so; else (a contiguous 5-D tensor)
// one TRANSPOSE to the frames layout, which `v` names from then on.
Frames to_frames(LoweringContext& cx, const Value* v, const std::string& what) {
  const OperandHandle x = cx.get_operand(v);
  const Shape& s = x.op.shape;
  check(s.size() == 5,
        [&] { return what + " needs a 5-D (N, C, T, H, W) input, got " + shape_str(s); });
  if (is_frames(x.op.dim_order)) return frames_of(x);
  check(x.op.dim_order == DimOrder::Contiguous && std::find(s.begin() + 1, s.end(), 0) == s.end(),
        [&] {
          return what + " of a video tensor with flexible sizes " + shape_str(s) +
                 " is not supported (NNAPI holds it as 2-D frames, whose channels, time and "
                 "image sizes must be fixed): give those sizes in --input (the batch may be 0)";
        });
  check(x.op.type == OperandType::TensorFloat32 || x.op.type == OperandType::TensorQuant8Asymm,
        [&] {
          return what + " of a " + nnapi::operand_type_name(x.op.type) +
                 " video tensor is not supported: nnapi-convert holds video tensors of float32 "
                 "or quint8 (TENSOR_QUANT8_ASYMM) only";
        });
  const bool nhwc = cx.nhwc();
  const std::vector<SymInt> dims = sym_shape(x);
  const SymInt n = dims[0], tn = sym_arith({s[2], ""}, '*', n);
  const SymInt c{s[1], ""}, h{s[3], ""}, w{s[4], ""};
  const int64_t t = s[2];
  const OperandHandle p = permute_merged_raw(
      cx, x, dims,
      nhwc ? std::vector<int64_t>{2, 0, 3, 4, 1} : std::vector<int64_t>{2, 0, 1, 3, 4});
  const OperandHandle raw = reshape_raw(
      cx, p, nhwc ? std::vector<SymInt>{tn, h, w, c} : std::vector<SymInt>{tn, c, h, w});
  const Frames f{image_of(raw, nhwc ? DimOrder::ChannelsLast : DimOrder::Contiguous), n, t};
  cx.rebind(v, f.image.id, video_record(f));
  return f;
}

// The contiguous 5-D tensor (N, C, T, H, W) of frames `f`: one TRANSPOSE.
OperandHandle from_frames(LoweringContext& cx, const Frames& f) {
  const OperandHandle raw = raw_of(f.image);
  const Shape& r = raw.op.shape;  // (T*N, a, b, c)
  const std::vector<SymInt> dims = {{f.t, ""}, f.n, {r[1], ""}, {r[2], ""}, {r[3], ""}};
  const bool nhwc = f.image.op.dim_order == DimOrder::ChannelsLast;
  return permute_merged(
      cx, {raw.id, raw.op.with_shape(shape_of(dims))}, dims,
      nhwc ? std::vector<int64_t>{1, 4, 0, 2, 3} : std::vector<int64_t>{1, 2, 0, 3, 4});
}

void bind_video(LoweringContext& cx, const Value* out, const Frames& f) {
  cx.reinterpret(out, f.image.id, video_record(f));
}

// The quantization of a quant8 video value whose operation runs in float
// (DEQUANTIZE, the float operation, QUANTIZE): PyTorch's quantized 3-D
// kernels accumulate exactly and round once to the output's scale and zero
// point, which one QUANTIZE of the float result matches but at rounding ties,
// where sums of 2-D quant8 operations would round at every tap. `units`: the
// float frames hold integer units q - zero point (CAST of the stored values,
// exact, and SUB), not real values, and the result is QUANTIZEd at scale 1
// and CAST to the output's parameters (the pools, whose output has the
// input's): sums and power-of-two divisors are then exact, so ties (a mean
// of an even number of values, which PyTorch's avg_pool3d rounds half to
// even, as QUANTIZE does) are ties here too, where the products by the scale
// of DEQUANTIZE and QUANTIZE would tip them either way.
struct Requantize {
  bool quantized = false;
  double scale = 0.0;
  int64_t zero_point = 0;
  bool units = false;
};

// `v` as float frames: of a quant8 video value, DEQUANTIZE (or its units,
// when `units`); `rq` then keeps its scale and zero point.
Frames float_frames(LoweringContext& cx, const Value* v, const std::string& what, Requantize* rq,
                    bool units = false) {
  const Frames f = to_frames(cx, v, what);
  if (f.image.op.type != OperandType::TensorQuant8Asymm) return f;
  *rq = {true, f.image.op.scale, f.image.op.zero_point, units};
  if (!units) return {emit_dequantize(cx, f.image), f.n, f.t};
  Operand o = f.image.op;
  o.type = OperandType::TensorFloat32;
  o.scale = 0.0;
  o.zero_point = 0;
  OperandHandle u = emit_unary_to(cx, Op::Cast, f.image, o);
  if (rq->zero_point != 0) {
    u = emit_binary(cx, Op::Sub, u, float_scalar_tensor(cx, static_cast<float>(rq->zero_point)));
  }
  return {u, f.n, f.t};
}

// bind_video of float frames `f`, QUANTIZEd as `rq` says.
void bind_requantized(LoweringContext& cx, const Value* out, Frames f, const Requantize& rq) {
  if (rq.quantized && rq.units) {
    const OperandHandle q = emit_quantize(cx, f.image, 1.0, rq.zero_point);
    Operand o = q.op;
    o.scale = rq.scale;
    f.image = emit_unary_to(cx, Op::Cast, q, o);
  } else if (rq.quantized) {
    f.image = emit_quantize(cx, f.image, rq.scale, rq.zero_point);
  }
  bind_video(cx, out, f);
}

// The frames of `count` time steps from `begin` in steps of `step`.
OperandHandle take_steps(LoweringContext& cx, const Frames& f, int64_t begin, int64_t count,
                         int64_t step) {
  if (begin == 0 && count == f.t && (step == 1 || count == 1)) return f.image;
  const bool fixed = f.n.is_constant();
  if (fixed && f.n.value == 1) return emit_take(cx, f.image, 0, begin, count, step);
  if (fixed && (step == 1 || count == 1)) {
    return emit_take(cx, f.image, 0, begin * f.n.value, count * f.n.value, 1);
  }
  // Every step-th block of N frames: the operand read as (T, N*a, b, c).
  const OperandHandle raw = raw_of(f.image);
  const OperandHandle taken = emit_take(cx, as_blocks(cx, raw, f.t, f.n), 0, begin, count, step);
  const Shape& r = raw.op.shape;
  return from_blocks(cx, taken, count, f.n, {r[1], r[2], r[3]}, f.image.op.dim_order);
}

// `f` with `before` and `after` time steps of `value` around it.
Frames pad_steps(LoweringContext& cx, const Frames& f, int64_t before, int64_t after,
                 double value) {
  if (!before && !after) return f;
  const int64_t t = f.t + before + after;
  if (f.n.is_constant()) {
    const int64_t n = f.n.value;
    return {emit_pad(cx, f.image, {before * n, 0, 0, 0}, {after * n, 0, 0, 0}, value), f.n, t};
  }
  // A flexible N: whole blocks of N frames padded, the operand as (T, N*a, b, c).
  const OperandHandle raw = raw_of(f.image);
  const OperandHandle p =
      emit_pad(cx, as_blocks(cx, raw, f.t, f.n), {before, 0, 0, 0}, {after, 0, 0, 0}, value);
  const Shape& r = raw.op.shape;
  return {from_blocks(cx, p, t, f.n, {r[1], r[2], r[3]}, f.image.op.dim_order), f.n, t};
}

// A window over the time axis.
struct TimeWindow {
  int64_t kernel = 1, stride = 1, dilation = 1;
};

// The `out_t` windows over (padded) frames `x`: `tap(frames, k)` of the frames
// at tap k of each window, combined by `op` (ADD or MAXIMUM; ADD takes `fuse`).
OperandHandle combine_taps(LoweringContext& cx, const Frames& x, const TimeWindow& w, int64_t out_t,
                           Op op, Fuse fuse,
                           const std::function<OperandHandle(const OperandHandle&, int64_t)>& tap) {
  OperandHandle acc;
  for (int64_t k = 0; k < w.kernel; ++k) {
    const OperandHandle y = tap(take_steps(cx, x, k * w.dilation, out_t, w.stride), k);
    acc = k == 0 ? y : emit_binary(cx, op, acc, y, k + 1 == w.kernel ? fuse : Fuse::None);
  }
  return acc;
}

// A 3-D argument list (one value stands for all three, as PyTorch allows).
std::array<int64_t, 3> triple(const std::vector<int64_t>& v, const std::string& what) {
  check(v.size() == 1 || v.size() == 3,
        [&] { return what + " needs 1 or 3 values, got " + std::to_string(v.size()); });
  if (v.size() == 1) return {v[0], v[0], v[0]};
  return {v[0], v[1], v[2]};
}

// A 3-D convolution's arguments (padding before and after each dim).
struct Conv3d {
  std::array<int64_t, 3> kernel{}, stride{}, dilation{}, before{}, after{};
  int64_t groups = 1;
};

// The float 3-D convolution of frames `x` with float `weight` and `bias`
// (None: zeros), `fuse` applied to the result.
Frames conv3d_frames(LoweringContext& cx, const Frames& x, const Conv3d& c,
                     const at::Tensor& weight, const at::Tensor& bias, Fuse fuse) {
  const auto& [kernel, stride, dilation, before, after, groups] = c;
  const TimeWindow tw{kernel[0], stride[0], dilation[0]};
  const int64_t out_t =
      (x.t + before[0] + after[0] - dilation[0] * (kernel[0] - 1) - 1) / stride[0] + 1;
  check(x.t + before[0] + after[0] >= dilation[0] * (kernel[0] - 1) + 1, [&] {
    return "the 3-D convolution's window (" + std::to_string(dilation[0] * (kernel[0] - 1) + 1) +
           " time steps) is larger than the padded input's " +
           std::to_string(x.t + before[0] + after[0]);
  });
  ConvPoolArgs a = make_conv_pool_args({kernel[1], kernel[2]}, {stride[1], stride[2]}, {0, 0},
                                       {dilation[1], dilation[2]}, groups);
  a.pad_t = before[1];
  a.pad_b = after[1];
  a.pad_l = before[2];
  a.pad_r = after[2];
  const int64_t out_c = weight.size(0);
  const int32_t bias_id =
      cx.add_weight(bias.defined() ? bias.to(at::kFloat) : at::zeros({out_c}, at::kFloat));
  const int32_t zero_id = kernel[0] > 1 ? cx.add_weight(at::zeros({out_c}, at::kFloat)) : -1;
  const Frames padded = pad_steps(cx, x, before[0], after[0], 0.0);
  const OperandHandle y =
      combine_taps(cx, padded, tw, out_t, Op::Add, fuse, [&](const OperandHandle& taps, int64_t k) {
        return emit_conv2d(cx, nullptr, 0.0, 0, taps, weight.select(2, k).contiguous(),
                           k == 0 ? bias_id : zero_id, a, false,
                           kernel[0] == 1 ? fuse : Fuse::None);
      });
  return {y, x.n, out_t};
}

// conv3d(x, w, b, stride, padding, dilation, groups) (padding ints, or
// 'same'/'valid' for _convolution_mode); _convolution(x, w, b, stride,
// padding, dilation, transposed, output_padding, groups, ...). False for
// another weight rank (the 1-D and 2-D lowerings of convolution.cpp).
bool lower_conv3d(LoweringContext& cx, const Node* node) {
  static const c10::Symbol convolution = c10::aten::_convolution;
  const bool full = node->kind() == convolution;
  check(node->inputs().size() == (full ? 13u : 7u),
        [&] { return std::string("malformed ") + node->kind().toQualString(); });
  const at::Tensor weight = cx.constant_tensor(node->input(1));
  if (weight.dim() != 5) return false;
  check(!full || !cx.constant_bool(node->input(6)),
        "3-D transposed convolution (ConvTranspose3d) is not supported: NNAPI has no 3-D "
        "operations, and nnapi-convert decomposes forward 3-D convolutions only");
  check(weight.scalar_type() == at::kFloat, "a 3-D convolution needs a float32 weight");
  Conv3d c;
  c.stride = triple(cx.constant_int_list(node->input(3)), "conv3d stride");
  c.dilation = triple(cx.constant_int_list(node->input(5)), "conv3d dilation");
  c.groups = cx.constant_int(node->input(full ? 8 : 6));
  c.kernel = {weight.size(2), weight.size(3), weight.size(4)};
  const c10::IValue& pad = cx.constant(node->input(4)).value;
  if (pad.isString()) {
    const std::string& mode = pad.toStringRef();
    check(mode == "same" || mode == "valid",
          [&] { return "unknown convolution padding '" + mode + "'"; });
    for (size_t d = 0; mode == "same" && d < 3; ++d) {
      // As ATen's _convolution_mode: dilation * (kernel - 1) in all, the odd
      // element after; PyTorch allows 'same' with stride 1 only.
      check(c.stride[d] == 1, "padding='same' needs stride 1 (PyTorch refuses strided 'same')");
      const int64_t total = c.dilation[d] * (c.kernel[d] - 1);
      c.before[d] = total / 2;
      c.after[d] = total - c.before[d];
    }
  } else {
    c.before = c.after = triple(cx.constant_int_list(node->input(4)), "conv3d padding");
  }
  const Frames x = to_frames(cx, node->input(0), "a 3-D convolution");
  check(x.image.op.type == OperandType::TensorFloat32,
        "a 3-D convolution (aten::conv3d) of a quantized tensor is not supported: quantized "
        "models call quantized::conv3d");
  const at::Tensor bias =
      cx.constant_is_none(node->input(2)) ? at::Tensor() : cx.constant_tensor(node->input(2));
  const Fuse fuse = cx.fuse_following_activation(node->output());
  bind_video(cx, node->output(), conv3d_frames(cx, x, c, weight, bias, fuse));
  return true;
}

// quantized::conv3d(x, packed, scale, zero_point) (+relu): DEQUANTIZE, the
// float 3-D convolution with the weight dequantized (per tensor or per
// channel) and the float bias, QUANTIZE to the output's scale and zero point
// (Requantize; per-channel quantized 2-D convolutions are lowered so too,
// quantized.cpp).
void lower_qconv3d(LoweringContext& cx, const Node* node, Fuse fuse) {
  check(node->inputs().size() == 4, "malformed quantized::conv3d");
  const PackedConv p =
      packed_conv_params(cx.constant(node->input(1)).value, "Conv3dPackedParamsBase");
  const std::vector<int64_t>& pc = p.config;
  check(pc[0] == 3 && p.weight.dim() == 5, "malformed quantized::conv3d params");
  check(pc[14] == 0,
        "quantized 3-D transposed convolution (ConvTranspose3d) is not supported: NNAPI has no "
        "3-D operations, and nnapi-convert decomposes forward 3-D convolutions only");
  Conv3d c;
  for (size_t d = 0; d < 3; ++d) {
    c.kernel[d] = p.weight.size(2 + d);
    c.stride[d] = pc[1 + d];
    c.before[d] = c.after[d] = pc[4 + d];
    c.dilation[d] = pc[7 + d];
  }
  c.groups = pc[13];
  Requantize rq{true, cx.constant_float(node->input(2)), cx.constant_int(node->input(3))};
  Requantize in;
  const Frames x = float_frames(cx, node->input(0), "quantized::conv3d", &in);
  check(in.quantized, "quantized::conv3d of a float tensor");
  const at::Tensor bias = p.bias.isNone() ? at::Tensor() : p.bias.toTensor();
  bind_requantized(cx, node->output(), conv3d_frames(cx, x, c, p.weight.dequantize(), bias, fuse),
                   rq);
}

// quantized::batch_norm3d(x, weight, bias, mean, var, eps, scale,
// zero_point) (+relu), which FX graph-mode quantization leaves where it
// cannot fold a batch norm into the convolution before it (torchvision's
// r3d_18: its Conv3DNoBias is no nn.Conv3d to its fusion patterns):
// DEQUANTIZE, x * a + b per channel with a = weight / sqrt(var + eps) and b =
// bias - mean * a (eval mode), the ReLU fused into the ADD, QUANTIZE to the
// output's scale and zero point.
void lower_qbatch_norm3d(LoweringContext& cx, const Node* node, Fuse fuse) {
  const std::string what = node->kind().toQualString();
  check(node->inputs().size() == 8, [&] { return "malformed " + what; });
  Requantize in;
  const Frames x = float_frames(cx, node->input(0), what, &in);
  check(in.quantized, [&] { return what + " of a float tensor"; });
  const int64_t c = x.image.op.shape[1];
  const auto param = [&](size_t i, double none) {
    return cx.constant_is_none(node->input(i)) ? at::full({c}, none, at::kDouble)
                                               : cx.constant_tensor(node->input(i)).to(at::kDouble);
  };
  const at::Tensor a = param(1, 1.0) / (param(4, 1.0) + cx.constant_float(node->input(5))).sqrt();
  const at::Tensor b = param(2, 0.0) - param(3, 0.0) * a;
  const auto per_channel = [&](const at::Tensor& t) {
    return float_weight_like(cx, t.to(at::kFloat).reshape({1, c, 1, 1}), x.image.op);
  };
  OperandHandle y = emit_binary(cx, Op::Mul, x.image, per_channel(a));
  y = emit_binary(cx, Op::Add, y, per_channel(b), fuse);
  bind_requantized(
      cx, node->output(), {y, x.n, x.t},
      {true, cx.constant_float(node->input(6)), cx.constant_int(node->input(7)), false});
}

// PyTorch's pooled length (pooling_output_shape, dilation 1): ceil_mode's
// last window must start inside the input or its left padding.
int64_t pooled_steps(int64_t in, int64_t k, int64_t s, int64_t pad, bool ceil_mode) {
  int64_t out = (in + 2 * pad - k + (ceil_mode ? s - 1 : 0)) / s + 1;
  if (ceil_mode && (out - 1) * s >= in + pad) --out;
  return out;
}

// The 3-D pool arguments read by name: the time window and the 2-D ones.
struct Pool3d {
  std::array<int64_t, 3> kernel, stride, padding;
  bool ceil_mode = false;
  ConvPoolArgs image() const {
    return make_conv_pool_args({kernel[1], kernel[2]}, {stride[1], stride[2]},
                               {padding[1], padding[2]}, {1, 1}, 0);
  }
  int64_t out_steps(int64_t t) const {
    return pooled_steps(t, kernel[0], stride[0], padding[0], ceil_mode);
  }
  // The time steps after the input that the last window reaches.
  int64_t pad_after(int64_t t) const {
    return std::max<int64_t>(0, (out_steps(t) - 1) * stride[0] + kernel[0] - padding[0] - t);
  }
};

Pool3d pool_args(const NodeArgs& args, const char* what) {
  Pool3d p;
  const std::string w = what;
  p.kernel = triple(args.ints("kernel_size"), w + " kernel_size");
  const std::vector<int64_t> stride = args.ints("stride");
  p.stride = stride.empty() ? p.kernel : triple(stride, w + " stride");
  p.padding = triple(args.ints("padding"), w + " padding");
  p.ceil_mode = args.flag("ceil_mode");
  for (int64_t s : p.stride) check(s > 0, "pool strides must be positive");
  return p;
}

// max_pool3d(x, kernel_size, stride, padding, dilation, ceil_mode).
void lower_max_pool3d(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  const Pool3d p = pool_args(args, "max_pool3d");
  for (int64_t d : triple(args.ints("dilation"), "max_pool3d dilation")) {
    check(d == 1, "max_pool3d with dilation is not supported (NNAPI's pools have no dilation)");
  }
  Requantize rq;
  const Frames x = float_frames(cx, args.value("self"), "max_pool3d", &rq, true);
  const OperandHandle y = emit_max_pool(cx, x.image, p.image(), p.ceil_mode, nullptr);
  const Frames padded = pad_steps(cx, {y, x.n, x.t}, p.padding[0], p.pad_after(x.t),
                                  std::numeric_limits<float>::lowest());
  const int64_t out_t = p.out_steps(x.t);
  const OperandHandle r =
      combine_taps(cx, padded, {p.kernel[0], p.stride[0], 1}, out_t, Op::Maximum, Fuse::None,
                   [](const OperandHandle& taps, int64_t) { return taps; });
  bind_requantized(cx, node->output(), {r, x.n, out_t}, rq);
}

// avg_pool3d(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
// divisor_override). PyTorch's divisor is divisor_override, or the product
// of the window's time steps and its image cells (each within the padded
// input, ceil_mode's overhang left out, for count_include_pad; else within
// the input): the 2-D pool of each frame divides by the image part (or by
// divisor_override), the taps' sum here by the time part.
void lower_avg_pool3d(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  const Pool3d p = pool_args(args, "avg_pool3d");
  AvgDivisor div;
  div.count_include_pad = args.flag("count_include_pad");
  if (!args.is_none("divisor_override")) {
    div.divisor_override = args.integer("divisor_override");
    check(div.divisor_override > 0, "avg_pool3d divisor_override must be positive");
  }
  Requantize rq;
  const Frames x = float_frames(cx, args.value("self"), "avg_pool3d", &rq, true);
  const OperandHandle y = emit_avg_pool(cx, x.image, p.image(), p.ceil_mode, nullptr, div);
  const int64_t out_t = p.out_steps(x.t);
  const Frames padded = pad_steps(cx, {y, x.n, x.t}, p.padding[0], p.pad_after(x.t), 0.0);
  const OperandHandle sum =
      combine_taps(cx, padded, {p.kernel[0], p.stride[0], 1}, out_t, Op::Add, Fuse::None,
                   [](const OperandHandle& taps, int64_t) { return taps; });
  // 1 / (the time part of the divisor) per output step.
  std::vector<float> factor(out_t, 1.0f);
  for (int64_t i = 0; i < out_t && !div.divisor_override; ++i) {
    int64_t start = i * p.stride[0] - p.padding[0];
    int64_t end = std::min(start + p.kernel[0], x.t + p.padding[0]);
    if (!div.count_include_pad) {
      start = std::max<int64_t>(start, 0);
      end = std::min(end, x.t);
    }
    factor[i] = 1.0f / static_cast<float>(end - start);
  }
  OperandHandle r = sum;
  const bool uniform =
      std::all_of(factor.begin(), factor.end(), [&](float f) { return f == factor[0]; });
  if (uniform && factor[0] != 1.0f) {
    r = emit_binary(cx, Op::Mul, sum, float_scalar_tensor(cx, factor[0]));
  } else if (!uniform && x.n.is_constant()) {
    at::Tensor map = at::empty({out_t, x.n.value, 1, 1, 1}, at::kFloat);
    for (int64_t i = 0; i < out_t; ++i) map[i].fill_(factor[i]);
    r = emit_binary(cx, Op::Mul, sum,
                    float_weight_like(cx, map.reshape({out_t * x.n.value, 1, 1, 1}), sum.op));
  } else if (!uniform) {
    // The factor of each block of N frames: (out_t, 1, 1, 1) over the sum as
    // (out_t, N*a, b, c).
    const at::Tensor map = at::tensor(factor, at::kFloat).reshape({out_t, 1, 1, 1});
    const OperandHandle raw = raw_of(sum);
    const OperandHandle scaled = emit_binary(cx, Op::Mul, as_blocks(cx, raw, out_t, x.n),
                                             float_weight_like(cx, map, raw.op));
    const Shape& s = raw.op.shape;
    r = from_blocks(cx, scaled, out_t, x.n, {s[1], s[2], s[3]}, sum.op.dim_order);
  }
  bind_requantized(cx, node->output(), {r, x.n, out_t}, rq);
}

// The mean of frames `block` over its `steps` time steps: MEAN of the
// operand read as (steps, N*a, b, c).
OperandHandle mean_steps(LoweringContext& cx, const OperandHandle& block, const SymInt& n,
                         int64_t steps) {
  const OperandHandle raw = raw_of(block);
  const Shape& r = raw.op.shape;
  const OperandHandle blocks = as_blocks(cx, raw, steps, n);
  ModelBuilder& m = cx.model();
  const int32_t axes_id = m.add_int_vector({0});
  const int32_t keep_id = m.add_int_scalar(1);
  std::vector<SymInt> dims = sym_shape(blocks);
  dims[0] = {1, ""};
  const OperandHandle mean = cx.add_output(nullptr, blocks.op, dims);
  add_reduce(m, Op::Mean, blocks.id, axes_id, keep_id, mean.id);
  return from_blocks(cx, mean, 1, n, {r[1], r[2], r[3]}, block.op.dim_order);
}

// adaptive_avg_pool3d(x, output_size): the 2-D adaptive pool of each frame,
// then the mean over each of PyTorch's time windows [floor(i T / out),
// ceil((i + 1) T / out)).
void lower_adaptive_avg_pool3d(LoweringContext& cx, const Node* node) {
  NodeArgs args(cx, node);
  const auto size = triple(args.ints("output_size"), "adaptive_avg_pool3d output_size");
  Requantize rq;
  const Frames x = float_frames(cx, args.value("self"), "adaptive_avg_pool3d", &rq, true);
  check(size[0] > 0, "adaptive pooling needs positive output sizes");
  const OperandHandle y =
      emit_adaptive_pool(cx, Op::AveragePool2d, x.image, {size[1], size[2]}, nullptr);
  const Frames pooled{y, x.n, x.t};
  std::vector<OperandHandle> parts;
  for (int64_t i = 0; i < size[0]; ++i) {
    const int64_t start = i * x.t / size[0], end = ((i + 1) * x.t + size[0] - 1) / size[0];
    const OperandHandle block = take_steps(cx, pooled, start, end - start, 1);
    parts.push_back(end - start == 1 ? block : mean_steps(cx, block, x.n, end - start));
  }
  OperandHandle r = parts[0];
  if (parts.size() > 1 && x.n.is_constant()) {
    r = emit_concat(cx, parts, 0);
  } else if (parts.size() > 1) {
    // A flexible N: the parts as (1, N*a, b, c) blocks, concatenated along
    // the (fixed) time steps.
    std::vector<OperandHandle> blocks;
    for (const OperandHandle& p : parts) blocks.push_back(as_blocks(cx, raw_of(p), 1, x.n));
    const Shape& s = raw_of(parts[0]).op.shape;
    r = from_blocks(cx, emit_concat(cx, blocks, 0), size[0], x.n, {s[1], s[2], s[3]},
                    parts[0].op.dim_order);
  }
  bind_requantized(cx, node->output(), {r, x.n, size[0]}, rq);
}

// Whether `node` (of a kind whose spec has frames_per_frame) reads a video
// tensor and its 2-D lowering of the frames is the operation: its tensor
// inputs are all 5-D of one shape, and its other inputs are scalars (a
// constant tensor would broadcast against the frames' dims, not the video's).
bool per_frame(const LoweringContext& cx, const Node* node) {
  static const c10::Symbol batch_norm = c10::aten::batch_norm;
  // A quantize of a contiguous 5-D tensor with fixed sizes but the batch (a
  // quantized video model's input) makes its frames, which keep its quant8
  // operations at rank 4.
  bool video =
      node->kind() == c10::aten::quantize_per_tensor && is_5d_operand(cx, node->input(0)) && [&] {
        const Operand& o = cx.get_operand(node->input(0)).op;
        return o.dim_order == DimOrder::Contiguous &&
               std::find(o.shape.begin() + 1, o.shape.end(), 0) == o.shape.end();
      }();
  const Shape* shape = nullptr;
  for (const Value* v : node->inputs()) {
    if (cx.has_operand(v)) {
      const Shape& s = cx.get_operand(v).op.shape;
      if (s.size() != 5 || (shape && s != *shape)) return false;
      shape = &s;
      video = video || is_video(cx, v);
    } else if (cx.has_constant(v)) {
      const c10::IValue& c = cx.constant(v).value;
      if (c.isTensor() && c.toTensor().numel() != 1 && node->kind() != batch_norm) {
        return false;
      }
    }
  }
  return video;
}

// The 2-D lowering (the spec's, lower_plain) of the frames of the node's
// video inputs.
bool lower_per_frame(LoweringContext& cx, const Node* node, const KindSpec& spec) {
  std::vector<std::pair<const Value*, Frames>> read;
  for (const Value* v : node->inputs()) {
    if (!is_5d_operand(cx, v)) continue;  // a scalar, or read already (x + x)
    const Frames f = to_frames(cx, v, node->kind().toQualString());
    read.emplace_back(v, f);
    cx.rebind(v, f.image.id, f.image.op);
  }
  lower_plain(cx, spec, node);
  for (const auto& [v, f] : read) cx.rebind(v, f.image.id, video_record(f));
  const OperandHandle y = cx.get_operand(node->output());
  const Frames& in = read.front().second;
  check(y.op.shape.size() == 4 && y.op.shape[0] == in.image.op.shape[0],
        "internal: a per-frame lowering changed the frames");
  cx.rebind(node->output(), y.id, video_record({y, in.n, in.t}));
  return true;
}

}  // namespace

void unfold_video_value(LoweringContext& cx, const Value* v) {
  if (!is_video(cx, v)) return;
  const OperandHandle t = from_frames(cx, frames_of(cx.get_operand(v)));
  cx.rebind(v, t.id, t.op);
}

FramesSpec frames_per_frame() { return {per_frame, lower_per_frame}; }

FramesSpec frames_read() {
  return {[](const LoweringContext&, const Node*) { return true; }, nullptr};
}

FramesSpec frames_conv3d() {
  return {[](const LoweringContext&, const Node*) { return true; },
          [](LoweringContext& cx, const Node* node, const KindSpec&) {
            return lower_conv3d(cx, node);
          }};
}

// The size of a video tensor with a flexible N is read from its 5-D record,
// which the inverse TRANSPOSE makes (the frames' dim 0 is T*N).
FramesSpec frames_size() {
  return {[](const LoweringContext& cx, const Node* node) {
            return !is_video(cx, node->input(0)) || cx.get_operand(node->input(0)).op.shape[0] != 0;
          },
          nullptr};
}

void register_video_ops(LoweringTable& t) {
  t.add("aten::conv3d",
        [](LoweringContext& cx, const Node* node) {
          check(lower_conv3d(cx, node), "aten::conv3d needs a 5-D weight");
        })
      .with_frames(frames_read())
      .with_note(
          "float32, fixed sizes but for a flexible batch: the video held as 2-D frames (time in "
          "the batch); per kernel depth a STRIDED_SLICE of time steps, CONV_2D (depthwise, "
          "grouped) and ADD; time padding a PAD of the frames. Also aten::_convolution with a "
          "5-D weight; not transposed");
  t.add("quantized::conv3d",
        [](LoweringContext& cx, const Node* node) { lower_qconv3d(cx, node, Fuse::None); })
      .with_frames(frames_read())
      .with_note(
          "DEQUANTIZE of the quint8 frames, aten::conv3d's float decomposition with the weight "
          "dequantized (per tensor or per channel), one QUANTIZE; also quantized::conv3d_relu");
  t.add("quantized::conv3d_relu", [](LoweringContext& cx, const Node* node) {
     lower_qconv3d(cx, node, Fuse::Relu);
   }).with_frames(frames_read());
  t.add("quantized::batch_norm3d",
        [](LoweringContext& cx, const Node* node) { lower_qbatch_norm3d(cx, node, Fuse::None); })
      .with_frames(frames_read())
      .with_note(
          "DEQUANTIZE of the quint8 frames, per-channel MUL and ADD (RELU fused for "
          "quantized::batch_norm3d_relu), QUANTIZE");
  t.add("quantized::batch_norm3d_relu", [](LoweringContext& cx, const Node* node) {
     lower_qbatch_norm3d(cx, node, Fuse::Relu);
   }).with_frames(frames_read());
  t.add("aten::max_pool3d", lower_max_pool3d)
      .with_frames(frames_read())
      .with_note("MAX_POOL_2D per frame, then MAXIMUM over the time window");
  t.add("aten::avg_pool3d", lower_avg_pool3d)
      .with_frames(frames_read())
      .with_note(
          "AVERAGE_POOL_2D per frame (avg_pool2d's forms), then ADD over the time window and MUL "
          "by PyTorch's time divisor");
  t.add("aten::adaptive_avg_pool3d", lower_adaptive_avg_pool3d)
      .with_frames(frames_read())
      .with_note(
          "adaptive_avg_pool2d per frame, then MEAN over each of PyTorch's time windows; the "
          "3-D pools of quint8 in integer units (CAST, SUB of the zero point; QUANTIZE at scale "
          "1, CAST)");
}

}  // namespace nnapi_convert

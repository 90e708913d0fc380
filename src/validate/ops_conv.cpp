// Rules of NeuralNetworks.h for the windowed image operations (CONV_2D,
// DEPTHWISE_CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D, the 2-D pools and
// the resizes) and the matrix products (FULLY_CONNECTED, BATCH_MATMUL).
// Images are NHWC unless the optional layout flag says NCHW.
#include "validate/check.h"

namespace nnapi_validate {
namespace {

// Where the parameters of one windowed operation are, by input index.
struct Layout {
  bool implicit = false;
  size_t pads = 3;     // explicit: left, right, top, bottom; implicit: the scheme
  size_t strides = 0;  // w, h
  size_t extra = 0;    // multiplier / groups / filter w, h (0 = none)
  size_t fuse = 0;
  size_t nchw = 0;      // the layout flag, when there are more inputs than that
  size_t dilation = 0;  // w, h, when present
};

// NHWC (or NCHW) sizes of input 0.
struct Image {
  int64_t n = -1, h = -1, w = -1, c = -1;
};

Image image_of(const Check& c, bool nchw) {
  Image im;
  im.n = c.dim(0, 0);
  im.h = c.dim(0, nchw ? 2 : 1);
  im.w = c.dim(0, nchw ? 3 : 2);
  im.c = c.dim(0, nchw ? 1 : 3);
  return im;
}

Shape image_shape(int64_t n, int64_t h, int64_t w, int64_t ch, bool nchw) {
  return nchw ? Shape::of({n, ch, h, w}) : Shape::of({n, h, w, ch});
}

// The layout flag's value (false when there is none); nullopt when unknown.
std::optional<bool> layout_nchw(const Check& c, const Layout& l) {
  if (l.nchw == 0 || l.nchw >= c.n_in()) return false;
  return c.flag(l.nchw);
}

// Scalar parameter types of a windowed operation: INT32 everywhere, BOOL at
// the layout flag.
void parameter_types(Check& c, const Layout& l, size_t first) {
  for (size_t i = first; i < c.n_in(); ++i) {
    if (i == l.nchw) {
      c.input_type(i, {T::Bool});
      c.needs_level(3, c.name(), " with a layout flag");
    } else {
      c.input_type(i, {T::Int32});
    }
  }
  if (l.dilation && l.dilation < c.n_in()) c.needs_level(3, c.name(), " with dilation");
}

// Values of the padding, strides and dilation; their rules.
struct Window {
  int32_t scheme = 0;
  int64_t pad[4] = {0, 0, 0, 0};  // left, right, top, bottom
  int64_t stride_w = -1, stride_h = -1, dil_w = 1, dil_h = 1;
  bool known = true;
};

Window read_window(const Check& c, const Layout& l) {
  Window w;
  if (l.implicit) {
    auto s = c.i32(l.pads);
    if (s && *s != kPaddingSame && *s != kPaddingValid)
      c.fail(Rule::Parameter, "input " + std::to_string(l.pads) + " (implicit padding) is " +
                                  std::to_string(*s) +
                                  "; NNAPI's PaddingCode is 1 (SAME) or 2 "
                                  "(VALID)");
    w.scheme = s.value_or(0);
    w.known = s.has_value();
  } else {
    for (size_t k = 0; k < 4; ++k) {
      c.at_least(l.pads + k, 0, "padding");
      auto p = c.i32(l.pads + k);
      w.pad[k] = p.value_or(0);
      w.known = w.known && p.has_value();
    }
  }
  c.at_least(l.strides, 1, "stride");
  c.at_least(l.strides + 1, 1, "stride");
  w.stride_w = c.i32(l.strides).value_or(-1);
  w.stride_h = c.i32(l.strides + 1).value_or(-1);
  if (l.dilation && l.dilation + 1 < c.n_in()) {
    c.at_least(l.dilation, 1, "dilation");
    c.at_least(l.dilation + 1, 1, "dilation");
    w.dil_w = c.i32(l.dilation).value_or(-1);
    w.dil_h = c.i32(l.dilation + 1).value_or(-1);
  }
  if (l.fuse) c.fuse_code(l.fuse);
  return w;
}

// Output height and width of a window of (fh, fw) over the image.
std::pair<int64_t, int64_t> window_hw(const Check& c, const Window& w, const Image& im, int64_t fh,
                                      int64_t fw) {
  if (!w.known) return {-1, -1};
  int64_t oh, ow;
  if (w.scheme) {
    oh = implicit_out(w.scheme, im.h, fh, w.stride_h, w.dil_h);
    ow = implicit_out(w.scheme, im.w, fw, w.stride_w, w.dil_w);
  } else {
    oh = window_out(im.h, fh, w.stride_h, w.dil_h, w.pad[2], w.pad[3]);
    ow = window_out(im.w, fw, w.stride_w, w.dil_w, w.pad[0], w.pad[1]);
  }
  if (oh == 0 || ow == 0)
    c.fail(Rule::Shape, "the " + std::to_string(fh) + "x" + std::to_string(fw) +
                            " window does not fit in the padded " + std::to_string(im.h) + "x" +
                            std::to_string(im.w) + " input");
  return {oh, ow};
}

// The input image for shape inference: false (the output left unknown) when
// shapes are not checked or the layout flag's value is unknown.
bool image_for_shapes(Check& c, const Layout& l, bool* nchw, Image* im) {
  if (!c.shapes()) return false;
  const std::optional<bool> layout = layout_nchw(c, l);
  if (!layout) {
    c.set_output(0, Shape::unknown_of_rank(4));
    return false;
  }
  *nchw = *layout;
  *im = image_of(c, *nchw);
  return true;
}

// ---- the convolutions: input, filter, bias, ...

void conv_operands(Check& c) {
  c.output_count(1);
  c.input_type(0, {T::TensorFloat32, T::TensorQuant8Asymm, T::TensorFloat16});
  if (c.type(0) == T::TensorFloat16) c.needs_level(3, c.name(), " of TENSOR_FLOAT16");
  if (c.type(0) == T::TensorQuant8Asymm) {
    c.input_type(1, {T::TensorQuant8Asymm, T::TensorQuant8SymmPerChannel});
    if (c.type(1) == T::TensorQuant8SymmPerChannel) {
      c.needs_level(3, c.name(), " with a per-channel quantized filter");
      // The scales run along the output channels: the filter's dim 0, dim 3
      // for DEPTHWISE_CONV_2D's [1, h, w, depth_out].
      const uint32_t want = c.code() == static_cast<int32_t>(nnapi::Op::DepthwiseConv2d) ? 3 : 0;
      if (!c.in(1).channel_scales.empty() && c.in(1).channel_dim != want)
        c.fail(Rule::Quantization, "input 1 (filter) has per-channel scales along dimension " +
                                       std::to_string(c.in(1).channel_dim) + "; NNAPI's " +
                                       c.name() + " needs them along dimension " +
                                       std::to_string(want));
    }
    c.input_type(2, {T::TensorInt32});
    c.bias_quant(2, 0, 1);
  } else {
    c.same_type(1, 0);
    c.same_type(2, 0);
  }
  c.input_rank(0, 4, 4);
  c.input_rank(1, 4, 4);
  c.input_rank(2, 1, 1);
  c.output_same_type(0, 0);
}

// Filter dims (depth_out, fh, fw, depth_in) and the bias length checks.
void check_bias(const Check& c) {
  c.equal_dims(c.dim(2, 0), c.dim(1, 0), "the bias length differs from the filter's output depth");
}

Layout conv2d_layout(const Check& c) {
  Layout l;
  const size_t n = c.n_in();
  l.implicit = n == 7 || n == 8 || (n == 10 && c.type(7) == T::Bool);
  l.strides = l.implicit ? 4 : 7;
  l.fuse = l.strides + 2;
  l.nchw = l.fuse + 1;
  l.dilation = l.nchw + 1;
  return l;
}

// Operand and parameter types (parameters from input `first`); then, when
// values are checked, the window's values.
std::optional<Window> conv_prologue(Check& c, const Layout& l, size_t first) {
  conv_operands(c);
  parameter_types(c, l, first);
  if (!c.full()) return std::nullopt;
  return read_window(c, l);
}

void conv2d_rule(Check& c) {
  c.input_count({7, 8, 10, 11, 13});
  const Layout l = conv2d_layout(c);
  const std::optional<Window> w = conv_prologue(c, l, 3);
  bool nchw;
  Image im;
  if (!w || !image_for_shapes(c, l, &nchw, &im)) return;
  check_bias(c);
  c.equal_dims(im.c, c.dim(1, 3), "the input depth differs from the filter's input depth");
  auto [oh, ow] = window_hw(c, *w, im, c.dim(1, 1), c.dim(1, 2));
  c.set_output(0, image_shape(im.n, oh, ow, c.dim(1, 0), nchw));
}

Layout depthwise_layout(const Check& c) {
  Layout l;
  const size_t n = c.n_in();
  l.implicit = n == 8 || n == 9 || (n == 11 && c.type(8) == T::Bool);
  l.strides = l.implicit ? 4 : 7;
  l.extra = l.strides + 2;  // depth multiplier
  l.fuse = l.extra + 1;
  l.nchw = l.fuse + 1;
  l.dilation = l.nchw + 1;
  return l;
}

void depthwise_rule(Check& c) {
  c.input_count({8, 9, 11, 12, 14});
  const Layout l = depthwise_layout(c);
  const std::optional<Window> w = conv_prologue(c, l, 3);
  if (!w) return;
  c.at_least(l.extra, 1, "depth multiplier");
  bool nchw;
  Image im;
  if (!image_for_shapes(c, l, &nchw, &im)) return;
  c.equal_dims(c.dim(1, 0), 1, "the depthwise filter's first dim must be 1");
  const int64_t depth_out = c.dim(1, 3);
  c.equal_dims(c.dim(2, 0), depth_out, "the bias length differs from the filter's output depth");
  if (auto m = c.i32(l.extra); m && im.c >= 0)
    c.equal_dims(depth_out, im.c * *m, "the filter depth differs from input depth x multiplier");
  auto [oh, ow] = window_hw(c, *w, im, c.dim(1, 1), c.dim(1, 2));
  c.set_output(0, image_shape(im.n, oh, ow, depth_out, nchw));
}

void grouped_rule(Check& c) {
  c.input_count({9, 12});
  Layout l;
  l.implicit = c.n_in() == 9;
  l.strides = l.implicit ? 4 : 7;
  l.extra = l.strides + 2;  // groups
  l.fuse = l.extra + 1;
  l.nchw = l.fuse + 1;
  const std::optional<Window> w = conv_prologue(c, l, 3);
  if (!w) return;
  c.at_least(l.extra, 1, "number of groups");
  bool nchw;
  Image im;
  if (!image_for_shapes(c, l, &nchw, &im)) return;
  check_bias(c);
  const int64_t depth_out = c.dim(1, 0);
  if (auto g = c.i32(l.extra); g && *g > 0) {
    if (c.dim(1, 3) >= 0 && im.c >= 0)
      c.equal_dims(im.c, c.dim(1, 3) * *g, "the input depth differs from filter depth x groups");
    if (depth_out >= 0 && depth_out % *g != 0)
      c.fail(Rule::Shape, "the output depth " + std::to_string(depth_out) +
                              " is not a multiple of the " + std::to_string(*g) + " groups");
  }
  auto [oh, ow] = window_hw(c, *w, im, c.dim(1, 1), c.dim(1, 2));
  c.set_output(0, image_shape(im.n, oh, ow, depth_out, nchw));
}

// TRANSPOSE_CONV_2D: explicit (11 inputs) in, filter, bias, 4 paddings,
// strides, fuse, layout; implicit (9) in, filter, bias, output shape
// (TENSOR_INT32), scheme, strides, fuse, layout.
void transpose_conv_rule(Check& c) {
  c.input_count({9, 11});
  Layout l;
  l.implicit = c.n_in() == 9;
  l.pads = l.implicit ? 4 : 3;
  l.strides = l.implicit ? 5 : 7;
  l.fuse = l.strides + 2;
  l.nchw = l.fuse + 1;
  if (l.implicit) {
    c.input_type(3, {T::TensorInt32});
    c.input_rank(3, 1, 1);
  }
  const std::optional<Window> w = conv_prologue(c, l, l.implicit ? 4 : 3);
  bool nchw;
  Image im;
  if (!w || !image_for_shapes(c, l, &nchw, &im)) return;
  check_bias(c);
  c.equal_dims(im.c, c.dim(1, 3), "the input depth differs from the filter's input depth");
  const int64_t depth_out = c.dim(1, 0);
  int64_t pad[4] = {w->pad[0], w->pad[1], w->pad[2], w->pad[3]};  // left, right, top, bottom
  bool known = w->known;
  if (l.implicit) {
    // The requested shape sets the paddings; the output is what they give
    // (the request when the input size fits it), as NNAPI's prepare computes.
    auto shape = c.ints(3);
    if (shape && shape->size() != 4)
      return c.fail(Rule::Parameter, "input 3 (output shape) has " + std::to_string(shape->size()) +
                                         " entries; NNAPI needs 4");
    known = known && shape.has_value();
    if (known) {
      const int64_t rh = (*shape)[nchw ? 2 : 1], rw = (*shape)[nchw ? 3 : 2];
      transpose_conv_implicit_padding(w->scheme, rw, c.dim(1, 2), w->stride_w, &pad[0], &pad[1]);
      transpose_conv_implicit_padding(w->scheme, rh, c.dim(1, 1), w->stride_h, &pad[2], &pad[3]);
    }
  }
  auto out = [&](int64_t in, int64_t f, int64_t stride, int64_t before, int64_t after) -> int64_t {
    if (in < 0 || f < 0 || stride < 1 || !known) return -1;
    const int64_t o = (in - 1) * stride + f - before - after;
    if (o < 1)
      c.fail(Rule::Shape, "the paddings leave no output (" + std::to_string(o) + " along an axis)");
    return o;
  };
  const int64_t oh = out(im.h, c.dim(1, 1), w->stride_h, pad[2], pad[3]);
  const int64_t ow = out(im.w, c.dim(1, 2), w->stride_w, pad[0], pad[1]);
  c.set_output(0, image_shape(im.n, oh, ow, depth_out, nchw));
}

}  // namespace

void transpose_conv_implicit_padding(int32_t scheme, int64_t requested, int64_t kernel,
                                     int64_t stride, int64_t* before, int64_t* after) {
  *before = *after = 0;
  if (scheme != kPaddingSame || requested < 0 || kernel < 0 || stride < 1) return;
  const int64_t total = ((requested + stride - 1) / stride - 1) * stride + kernel - requested;
  *before = std::max<int64_t>(total, 0) / 2;
  *after = total - *before;
}

namespace {

// ---- FULLY_CONNECTED: input (rank 2 to 4), weights [units, input size],
// bias [units], fuse. Output [input elements / input size, units].

void fully_connected_rule(Check& c) {
  c.input_count({4});
  c.output_count(1);
  c.input_type(0, {T::TensorFloat32, T::TensorQuant8Asymm, T::TensorFloat16});
  if (c.type(0) == T::TensorFloat16) c.needs_level(3, "FULLY_CONNECTED of TENSOR_FLOAT16");
  if (c.type(0) == T::TensorQuant8Asymm) {
    c.input_type(1, {T::TensorQuant8Asymm});
    c.input_type(2, {T::TensorInt32});
    c.bias_quant(2, 0, 1);
  } else {
    c.same_type(1, 0);
    c.same_type(2, 0);
  }
  c.input_type(3, {T::Int32});
  c.output_same_type(0, 0);
  c.input_rank(0, 2, 4);
  c.input_rank(1, 2, 2);
  c.input_rank(2, 1, 1);
  if (!c.full()) return;
  c.fuse_code(3);
  if (!c.shapes()) return;
  const int64_t units = c.dim(1, 0), size = c.dim(1, 1);
  c.equal_dims(c.dim(2, 0), units, "the bias length differs from the number of units");
  const Shape& x = c.shape(0);
  int64_t batch = -1;
  if (x.known && size > 0) {
    int64_t n = 1;
    for (int64_t d : x.d) n = (n < 0 || d < 0) ? -1 : n * d;
    if (n >= 0 && n % size != 0)
      c.fail(Rule::Shape, "the input's " + std::to_string(n) +
                              " elements are not a multiple of the weights' input size " +
                              std::to_string(size));
    if (n >= 0) batch = n / size;
  }
  c.set_output(0, Shape::of({batch, units}));
}

// ---- BATCH_MATMUL: x, y of the same rank 2 to 4 [, adj_x, adj_y].

void batch_matmul_rule(Check& c) {
  c.input_count({2, 3, 4});
  c.output_count(1);
  c.input_type(0, {T::TensorFloat32, T::TensorFloat16, T::TensorInt32, T::TensorQuant8Asymm});
  c.same_type(1, 0);
  c.input_rank(0, 2, 4);
  c.input_rank(1, 2, 4);
  for (size_t i = 2; i < c.n_in(); ++i) c.input_type(i, {T::Bool});
  c.output_same_type(0, 0);
  if (!c.shapes()) return;
  const Shape &x = c.shape(0), &y = c.shape(1);
  if (!x.known || !y.known) return c.set_output(0, Shape::unknown());
  if (x.rank() != y.rank())
    c.fail(Rule::Shape, "inputs of ranks " + std::to_string(x.rank()) + " and " +
                            std::to_string(y.rank()) + "; NNAPI needs the same rank");
  const size_t r = x.rank();
  const std::optional<bool> adj_x = c.n_in() > 2 ? c.flag(2) : std::optional<bool>(false);
  const std::optional<bool> adj_y = c.n_in() > 3 ? c.flag(3) : std::optional<bool>(false);
  if (!adj_x || !adj_y) return c.set_output(0, Shape::unknown_of_rank(x.rank()));
  Shape out = Shape::unknown_of_rank(r);
  for (size_t k = 0; k + 2 < r; ++k) {
    c.equal_dims(x[k], y[k], "the batch dims of the inputs differ");
    out.d[k] = x[k] >= 0 ? x[k] : y[k];
  }
  const int64_t xr = *adj_x ? x[r - 1] : x[r - 2], xc = *adj_x ? x[r - 2] : x[r - 1];
  const int64_t yr = *adj_y ? y[r - 1] : y[r - 2], yc = *adj_y ? y[r - 2] : y[r - 1];
  c.equal_dims(xc, yr, "the inner dims of the product differ");
  out.d[r - 2] = xr;
  out.d[r - 1] = yc;
  c.set_output(0, out);
}

// ---- AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D
// explicit (10, 11): in, pads l r t b, strides w h, filter w h, fuse [, layout]
// implicit (7, 8): in, scheme, strides w h, filter w h, fuse [, layout]

void pool(Check& c, bool quantized) {
  c.input_count({7, 8, 10, 11});
  c.output_count(1);
  if (quantized) {
    c.input_type(0, {T::TensorFloat32, T::TensorQuant8Asymm, T::TensorFloat16});
  } else {
    c.input_type(0, {T::TensorFloat32, T::TensorFloat16});
  }
  if (c.type(0) == T::TensorFloat16) c.needs_level(3, c.name(), " of TENSOR_FLOAT16");
  c.input_rank(0, 4, 4);
  c.output_same_type(0, 0);
  c.same_quant(0, 0);
  Layout l;
  l.implicit = c.n_in() <= 8;
  l.pads = 1;
  l.strides = l.implicit ? 2 : 5;
  l.extra = l.strides + 2;  // filter w, h
  l.fuse = l.extra + 2;
  l.nchw = l.fuse + 1;
  parameter_types(c, l, 1);
  if (!c.full()) return;
  const Window w = read_window(c, l);
  c.at_least(l.extra, 1, "filter width");
  c.at_least(l.extra + 1, 1, "filter height");
  bool nchw;
  Image im;
  if (!image_for_shapes(c, l, &nchw, &im)) return;
  const int64_t fw = c.i32(l.extra).value_or(-1), fh = c.i32(l.extra + 1).value_or(-1);
  auto [oh, ow] = window_hw(c, w, im, fh, fw);
  c.set_output(0, image_shape(im.n, oh, ow, im.c, nchw));
}

void pool_rule(Check& c) { pool(c, true); }
void l2_pool_rule(Check& c) { pool(c, false); }

// ---- RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR: input, (INT32 width, INT32
// height | FLOAT32 scale w, scale h) [, layout [, align_corners [,
// half_pixel_centers]]].

void resize_rule(Check& c) {
  c.input_count({3, 4, 5, 6});
  c.output_count(1);
  c.input_type(0, {T::TensorFloat32, T::TensorQuant8Asymm, T::TensorFloat16});
  if (c.code() == static_cast<int32_t>(nnapi::Op::ResizeBilinear) && c.type(0) != T::TensorFloat32)
    c.needs_level(3, "RESIZE_BILINEAR of ", nnapi::operand_type_name(c.type(0)));
  c.input_rank(0, 4, 4);
  c.input_type(1, {T::Int32, T::Float32, T::Float16});
  c.same_type(2, 1);
  if (c.type(1) != T::Int32) c.needs_level(3, c.name(), " by scale");
  for (size_t i = 3; i < c.n_in(); ++i) c.input_type(i, {T::Bool});
  if (c.n_in() > 3) c.needs_level(3, c.name(), " with a layout flag");
  c.output_same_type(0, 0);
  c.same_quant(0, 0);
  if (!c.full()) return;
  if (c.flag(4).value_or(false) && c.flag(5).value_or(false))
    c.fail(Rule::Parameter,
           "align_corners and half_pixel_centers are both true; NNAPI allows "
           "at most one");
  const std::optional<bool> layout = c.n_in() > 3 ? c.flag(3) : std::optional<bool>(false);
  if (!layout) return c.set_output(0, Shape::unknown_of_rank(4));
  const bool nchw = *layout;
  const Image im = image_of(c, nchw);
  int64_t oh = -1, ow = -1;
  if (c.type(1) == T::Int32) {
    c.at_least(1, 1, "output width");
    c.at_least(2, 1, "output height");
    ow = c.i32(1).value_or(-1);
    oh = c.i32(2).value_or(-1);
  } else {
    auto sw = c.f32(1), sh = c.f32(2);
    for (auto [s, i] : {std::pair{sw, 1}, std::pair{sh, 2}}) {
      if (s && !(*s > 0.0f))
        c.fail(Rule::Parameter, "input " + std::to_string(i) + " (scale) is " + std::to_string(*s) +
                                    "; NNAPI needs a positive scale");
    }
    if (sw && im.w >= 0) ow = static_cast<int64_t>(static_cast<float>(im.w) * *sw);
    if (sh && im.h >= 0) oh = static_cast<int64_t>(static_cast<float>(im.h) * *sh);
  }
  if (c.shapes()) c.set_output(0, image_shape(im.n, oh, ow, im.c, nchw));
}

}  // namespace

void add_conv_rules(std::vector<OpRule>& t) {
  using nnapi::Op;
  t.push_back({Op::Conv2d, conv2d_rule});
  t.push_back({Op::DepthwiseConv2d, depthwise_rule});
  t.push_back({Op::GroupedConv2d, grouped_rule});
  t.push_back({Op::TransposeConv2d, transpose_conv_rule});
  t.push_back({Op::FullyConnected, fully_connected_rule});
  t.push_back({Op::BatchMatmul, batch_matmul_rule});
  t.push_back({Op::AveragePool2d, pool_rule});
  t.push_back({Op::MaxPool2d, pool_rule});
  t.push_back({Op::L2Pool2d, l2_pool_rule});
  t.push_back({Op::ResizeBilinear, resize_rule});
  t.push_back({Op::ResizeNearestNeighbor, resize_rule});
}

}  // namespace nnapi_validate

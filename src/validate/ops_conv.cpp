// Rules of NeuralNetworks.h for the windowed image operations (CONV_2D,
// DEPTHWISE_CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D, the 2-D pools and
// the resizes) and the matrix products (FULLY_CONNECTED, BATCH_MATMUL).
// Images are NHWC unless the optional layout flag says NCHW.
#include "validate/rule_context.h"

namespace nnapi_validate {
namespace {

// Where the parameters of one windowed operation are, by input index: the
// arity form op_signature.h gives for its input count and types.
struct Layout {
  const nnapi::Form* form;
  // The role's input index; npos (past every input) when the form has none.
  size_t at(R r) const { return form->at(r); }
  bool implicit() const { return form->has(R::PaddingScheme); }
  // The first scalar parameter: the padding scheme or the left padding.
  size_t first_parameter() const { return at(implicit() ? R::PaddingScheme : R::PadLeft); }
};

// The layout of the operation's inputs, after checking their count against
// the counts its forms allow.
Layout layout_of(const Check& c) { return {&c.form()}; }

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
  if (l.at(R::Layout) >= c.n_in()) return false;
  return c.flag(l.at(R::Layout));
}

// Scalar parameter types of a windowed operation: INT32 everywhere, BOOL at
// the layout flag.
void parameter_types(Check& c, const Layout& l) {
  for (size_t i = l.first_parameter(); i < c.n_in(); ++i) {
    if (i == l.at(R::Layout)) {
      c.input_type(i, {T::Bool});
      c.needs_level(3, c.name(), " with a layout flag");
    } else {
      c.input_type(i, {T::Int32});
    }
  }
  if (l.at(R::DilationW) < c.n_in()) c.needs_level(3, c.name(), " with dilation");
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
  if (l.implicit()) {
    const size_t at = l.at(R::PaddingScheme);
    auto s = c.i32(at);
    if (s && *s != kPaddingSame && *s != kPaddingValid)
      c.fail(Rule::Parameter, "input " + std::to_string(at) + " (implicit padding) is " +
                                  std::to_string(*s) +
                                  "; NNAPI's PaddingCode is 1 (SAME) or 2 "
                                  "(VALID)");
    w.scheme = s.value_or(0);
    w.known = s.has_value();
  } else {
    size_t k = 0;
    for (R r : {R::PadLeft, R::PadRight, R::PadTop, R::PadBottom}) {
      c.at_least(l.at(r), 0, "padding");
      auto p = c.i32(l.at(r));
      w.pad[k++] = p.value_or(0);
      w.known = w.known && p.has_value();
    }
  }
  c.at_least(l.at(R::StrideW), 1, "stride");
  c.at_least(l.at(R::StrideH), 1, "stride");
  w.stride_w = c.i32(l.at(R::StrideW)).value_or(-1);
  w.stride_h = c.i32(l.at(R::StrideH)).value_or(-1);
  if (l.at(R::DilationH) < c.n_in()) {
    c.at_least(l.at(R::DilationW), 1, "dilation");
    c.at_least(l.at(R::DilationH), 1, "dilation");
    w.dil_w = c.i32(l.at(R::DilationW)).value_or(-1);
    w.dil_h = c.i32(l.at(R::DilationH)).value_or(-1);
  }
  c.fuse_code(l.at(R::Fuse));
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

void conv_operands(Check& c, const Layout& l) {
  const size_t in = l.at(R::Input), fa = l.at(R::Filter), ba = l.at(R::Bias);
  c.output_count(1);
  c.input_type(in, {T::TensorFloat32, T::TensorQuant8Asymm, T::TensorFloat16});
  if (c.type(in) == T::TensorFloat16) c.needs_level(3, c.name(), " of TENSOR_FLOAT16");
  if (c.type(in) == T::TensorQuant8Asymm) {
    c.input_type(fa, {T::TensorQuant8Asymm, T::TensorQuant8SymmPerChannel});
    if (c.type(fa) == T::TensorQuant8SymmPerChannel) {
      c.needs_level(3, c.name(), " with a per-channel quantized filter");
      // The scales run along the output channels: the filter's dim 0, dim 3
      // for DEPTHWISE_CONV_2D's [1, h, w, depth_out].
      const uint32_t want = c.code() == static_cast<int32_t>(nnapi::Op::DepthwiseConv2d) ? 3 : 0;
      if (!c.in(fa).channel_scales.empty() && c.in(fa).channel_dim != want)
        c.fail(Rule::Quantization,
               "input " + std::to_string(fa) + " (filter) has per-channel scales along dimension " +
                   std::to_string(c.in(fa).channel_dim) + "; NNAPI's " + c.name() +
                   " needs them along dimension " + std::to_string(want));
    }
    c.input_type(ba, {T::TensorInt32});
    c.bias_quant(ba, in, fa);
  } else {
    c.same_type(fa, in);
    c.same_type(ba, in);
  }
  c.input_rank(in, 4, 4);
  c.input_rank(fa, 4, 4);
  c.input_rank(ba, 1, 1);
  c.output_same_type(0, in);
}

// Filter dims (depth_out, fh, fw, depth_in) and the bias length checks.
void check_bias(const Check& c, const Layout& l) {
  c.equal_dims(c.dim(l.at(R::Bias), 0), c.dim(l.at(R::Filter), 0),
               "the bias length differs from the filter's output depth");
}

// Operand and parameter types; then, when values are checked, the window's
// values.
std::optional<Window> conv_prologue(Check& c, const Layout& l) {
  conv_operands(c, l);
  parameter_types(c, l);
  if (!c.full()) return std::nullopt;
  return read_window(c, l);
}

void conv2d_rule(Check& c) {
  const Layout l = layout_of(c);
  const size_t fa = l.at(R::Filter);
  const std::optional<Window> w = conv_prologue(c, l);
  bool nchw;
  Image im;
  if (!w || !image_for_shapes(c, l, &nchw, &im)) return;
  check_bias(c, l);
  c.equal_dims(im.c, c.dim(fa, 3), "the input depth differs from the filter's input depth");
  auto [oh, ow] = window_hw(c, *w, im, c.dim(fa, 1), c.dim(fa, 2));
  c.set_output(0, image_shape(im.n, oh, ow, c.dim(fa, 0), nchw));
}

void depthwise_rule(Check& c) {
  const Layout l = layout_of(c);
  const size_t fa = l.at(R::Filter), ba = l.at(R::Bias);
  const std::optional<Window> w = conv_prologue(c, l);
  if (!w) return;
  c.at_least(l.at(R::DepthMultiplier), 1, "depth multiplier");
  bool nchw;
  Image im;
  if (!image_for_shapes(c, l, &nchw, &im)) return;
  c.equal_dims(c.dim(fa, 0), 1, "the depthwise filter's first dim must be 1");
  const int64_t depth_out = c.dim(fa, 3);
  c.equal_dims(c.dim(ba, 0), depth_out, "the bias length differs from the filter's output depth");
  if (auto m = c.i32(l.at(R::DepthMultiplier)); m && im.c >= 0)
    c.equal_dims(depth_out, im.c * *m, "the filter depth differs from input depth x multiplier");
  auto [oh, ow] = window_hw(c, *w, im, c.dim(fa, 1), c.dim(fa, 2));
  c.set_output(0, image_shape(im.n, oh, ow, depth_out, nchw));
}

void grouped_rule(Check& c) {
  const Layout l = layout_of(c);
  const size_t fa = l.at(R::Filter);
  const std::optional<Window> w = conv_prologue(c, l);
  if (!w) return;
  c.at_least(l.at(R::Groups), 1, "number of groups");
  bool nchw;
  Image im;
  if (!image_for_shapes(c, l, &nchw, &im)) return;
  check_bias(c, l);
  const int64_t depth_out = c.dim(fa, 0);
  if (auto g = c.i32(l.at(R::Groups)); g && *g > 0) {
    if (c.dim(fa, 3) >= 0 && im.c >= 0)
      c.equal_dims(im.c, c.dim(fa, 3) * *g, "the input depth differs from filter depth x groups");
    if (depth_out >= 0 && depth_out % *g != 0)
      c.fail(Rule::Shape, "the output depth " + std::to_string(depth_out) +
                              " is not a multiple of the " + std::to_string(*g) + " groups");
  }
  auto [oh, ow] = window_hw(c, *w, im, c.dim(fa, 1), c.dim(fa, 2));
  c.set_output(0, image_shape(im.n, oh, ow, depth_out, nchw));
}

// TRANSPOSE_CONV_2D: explicit (11 inputs) in, filter, bias, 4 paddings,
// strides, fuse, layout; implicit (9) in, filter, bias, output shape
// (TENSOR_INT32), scheme, strides, fuse, layout.
void transpose_conv_rule(Check& c) {
  const Layout l = layout_of(c);
  const size_t fa = l.at(R::Filter);
  const size_t shape_at = l.at(R::OutputShape);
  if (l.implicit()) {
    c.input_type(shape_at, {T::TensorInt32});
    c.input_rank(shape_at, 1, 1);
  }
  const std::optional<Window> w = conv_prologue(c, l);
  bool nchw;
  Image im;
  if (!w || !image_for_shapes(c, l, &nchw, &im)) return;
  check_bias(c, l);
  c.equal_dims(im.c, c.dim(fa, 3), "the input depth differs from the filter's input depth");
  const int64_t depth_out = c.dim(fa, 0);
  int64_t pad[4] = {w->pad[0], w->pad[1], w->pad[2], w->pad[3]};  // left, right, top, bottom
  bool known = w->known;
  if (l.implicit()) {
    // The requested shape sets the paddings; the output is what they give
    // (the request when the input size fits it), as NNAPI's prepare computes.
    auto shape = c.ints(shape_at);
    if (shape && shape->size() != 4)
      return c.fail(Rule::Parameter, "input " + std::to_string(shape_at) + " (output shape) has " +
                                         std::to_string(shape->size()) + " entries; NNAPI needs 4");
    known = known && shape.has_value();
    if (known) {
      const int64_t rh = (*shape)[nchw ? 2 : 1], rw = (*shape)[nchw ? 3 : 2];
      transpose_conv_implicit_padding(w->scheme, rw, c.dim(fa, 2), w->stride_w, &pad[0], &pad[1]);
      transpose_conv_implicit_padding(w->scheme, rh, c.dim(fa, 1), w->stride_h, &pad[2], &pad[3]);
    }
  }
  auto out = [&](int64_t in, int64_t f, int64_t stride, int64_t before, int64_t after) -> int64_t {
    if (in < 0 || f < 0 || stride < 1 || !known) return -1;
    const int64_t o = (in - 1) * stride + f - before - after;
    if (o < 1)
      c.fail(Rule::Shape, "the paddings leave no output (" + std::to_string(o) + " along an axis)");
    return o;
  };
  const int64_t oh = out(im.h, c.dim(fa, 1), w->stride_h, pad[2], pad[3]);
  const int64_t ow = out(im.w, c.dim(fa, 2), w->stride_w, pad[0], pad[1]);
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
  const nnapi::Form& f = c.form();
  const size_t in = f.at(R::Input), wa = f.at(R::Weights), ba = f.at(R::Bias);
  c.output_count(1);
  c.input_type(in, {T::TensorFloat32, T::TensorQuant8Asymm, T::TensorFloat16});
  if (c.type(in) == T::TensorFloat16) c.needs_level(3, "FULLY_CONNECTED of TENSOR_FLOAT16");
  if (c.type(in) == T::TensorQuant8Asymm) {
    c.input_type(wa, {T::TensorQuant8Asymm});
    c.input_type(ba, {T::TensorInt32});
    c.bias_quant(ba, in, wa);
  } else {
    c.same_type(wa, in);
    c.same_type(ba, in);
  }
  c.input_type(f.at(R::Fuse), {T::Int32});
  c.output_same_type(0, in);
  c.input_rank(in, 2, 4);
  c.input_rank(wa, 2, 2);
  c.input_rank(ba, 1, 1);
  if (!c.full()) return;
  c.fuse_code(f.at(R::Fuse));
  if (!c.shapes()) return;
  const int64_t units = c.dim(wa, 0), size = c.dim(wa, 1);
  c.equal_dims(c.dim(ba, 0), units, "the bias length differs from the number of units");
  const Shape& x = c.shape(in);
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
  const nnapi::Form& f = c.form();
  const size_t xa = f.at(R::Input), ya = f.at(R::SecondInput);
  const size_t adj_x_at = f.at(R::AdjX), adj_y_at = f.at(R::AdjY);
  c.output_count(1);
  c.input_type(xa, {T::TensorFloat32, T::TensorFloat16, T::TensorInt32, T::TensorQuant8Asymm});
  c.same_type(ya, xa);
  c.input_rank(xa, 2, 4);
  c.input_rank(ya, 2, 4);
  for (size_t i : {adj_x_at, adj_y_at})
    if (i < c.n_in()) c.input_type(i, {T::Bool});
  c.output_same_type(0, xa);
  if (!c.shapes()) return;
  const Shape &x = c.shape(xa), &y = c.shape(ya);
  if (!x.known || !y.known) return c.set_output(0, Shape::unknown());
  if (x.rank() != y.rank())
    c.fail(Rule::Shape, "inputs of ranks " + std::to_string(x.rank()) + " and " +
                            std::to_string(y.rank()) + "; NNAPI needs the same rank");
  const size_t r = x.rank();
  auto adjoint = [&](size_t i) { return i < c.n_in() ? c.flag(i) : std::optional<bool>(false); };
  const std::optional<bool> adj_x = adjoint(adj_x_at), adj_y = adjoint(adj_y_at);
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
  const Layout l = layout_of(c);
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
  parameter_types(c, l);
  if (!c.full()) return;
  const Window w = read_window(c, l);
  c.at_least(l.at(R::FilterW), 1, "filter width");
  c.at_least(l.at(R::FilterH), 1, "filter height");
  bool nchw;
  Image im;
  if (!image_for_shapes(c, l, &nchw, &im)) return;
  const int64_t fw = c.i32(l.at(R::FilterW)).value_or(-1);
  const int64_t fh = c.i32(l.at(R::FilterH)).value_or(-1);
  auto [oh, ow] = window_hw(c, w, im, fh, fw);
  c.set_output(0, image_shape(im.n, oh, ow, im.c, nchw));
}

void pool_rule(Check& c) { pool(c, true); }
void l2_pool_rule(Check& c) { pool(c, false); }

// ---- RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR: input, (INT32 width, INT32
// height | FLOAT32 scale w, scale h) [, layout [, align_corners [,
// half_pixel_centers]]].

void resize_rule(Check& c) {
  const Layout l = layout_of(c);
  // Output width and height, or their scales.
  const bool by_size = l.form->has(R::OutputW);
  const size_t w_at = l.at(by_size ? R::OutputW : R::ScaleW);
  const size_t h_at = l.at(by_size ? R::OutputH : R::ScaleH);
  const size_t layout_at = l.at(R::Layout);
  c.output_count(1);
  c.input_type(0, {T::TensorFloat32, T::TensorQuant8Asymm, T::TensorFloat16});
  if (c.code() == static_cast<int32_t>(nnapi::Op::ResizeBilinear) && c.type(0) != T::TensorFloat32)
    c.needs_level(3, "RESIZE_BILINEAR of ", nnapi::operand_type_name(c.type(0)));
  c.input_rank(0, 4, 4);
  c.input_type(w_at, {T::Int32, T::Float32, T::Float16});
  // Scales: FLOAT16 for a TENSOR_FLOAT16 input, FLOAT32 otherwise
  // (NeuralNetworks.h, RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR).
  if (c.type(w_at) != T::Int32) float_scalar_for_input(c, w_at);
  c.same_type(h_at, w_at);
  if (c.type(w_at) != T::Int32) c.needs_level(3, c.name(), " by scale");
  for (size_t i = layout_at; i < c.n_in(); ++i) c.input_type(i, {T::Bool});
  if (c.n_in() > layout_at) c.needs_level(3, c.name(), " with a layout flag");
  c.output_same_type(0, 0);
  c.same_quant(0, 0);
  if (!c.full()) return;
  if (c.flag(l.at(R::AlignCorners)).value_or(false) &&
      c.flag(l.at(R::HalfPixelCenters)).value_or(false))
    c.fail(Rule::Parameter,
           "align_corners and half_pixel_centers are both true; NNAPI allows "
           "at most one");
  const std::optional<bool> layout = layout_nchw(c, l);
  if (!layout) return c.set_output(0, Shape::unknown_of_rank(4));
  const bool nchw = *layout;
  const Image im = image_of(c, nchw);
  int64_t oh = -1, ow = -1;
  if (c.type(w_at) == T::Int32) {
    c.at_least(w_at, 1, "output width");
    c.at_least(h_at, 1, "output height");
    ow = c.i32(w_at).value_or(-1);
    oh = c.i32(h_at).value_or(-1);
  } else {
    auto sw = c.f32(w_at), sh = c.f32(h_at);
    for (auto [s, i] : {std::pair{sw, w_at}, std::pair{sh, h_at}}) {
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

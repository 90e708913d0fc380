// Rules of NeuralNetworks.h for the operations that move data or reduce it:
// RESHAPE, EXPAND_DIMS, SQUEEZE, STRIDED_SLICE, SLICE, CONCATENATION,
// TRANSPOSE, PAD, PAD_V2, SPLIT, CHANNEL_SHUFFLE, DEPTH_TO_SPACE,
// SPACE_TO_DEPTH, GATHER, TILE, MEAN, REDUCE_SUM, REDUCE_MAX, REDUCE_MIN,
// REDUCE_PROD, REDUCE_ALL, REDUCE_ANY, ARGMAX, ARGMIN and TOPK_V2. Quantized
// outputs keep the input's scale and zero point (CONCATENATION's may differ
// since feature level 3).
#include <algorithm>

#include "validate/rule_context.h"

namespace nnapi_validate {
namespace {

// The tensor types each operation moves and the level each came with, from
// NeuralNetworks.h's "Supported tensor OperandCode" lists (TENSOR_QUANT8_ASYMM_SIGNED,
// which the converter never writes, left out):
// - operations of feature levels 1 and 2 (CONCATENATION, DEPTH_TO_SPACE,
//   SPACE_TO_DEPTH, SQUEEZE, STRIDED_SLICE, TRANSPOSE, PAD, MEAN): FLOAT32
//   and QUANT8_ASYMM, FLOAT16 since level 3, and no TENSOR_INT32 at any level;
// - RESHAPE: those, and TENSOR_INT32 since level 6 (Android 13);
// - operations of level 3 (EXPAND_DIMS, GATHER, SLICE, SPLIT, TILE) take
//   TENSOR_INT32 too; PAD_V2 and CHANNEL_SHUFFLE do not.
constexpr std::initializer_list<TypeLevel> kMovedFloatQuant = {
    {T::TensorFloat32, 1}, {T::TensorQuant8Asymm, 1}, {T::TensorFloat16, 3}};
constexpr std::initializer_list<TypeLevel> kReshaped = {
    {T::TensorFloat32, 1}, {T::TensorQuant8Asymm, 1}, {T::TensorFloat16, 3}, {T::TensorInt32, 6}};
constexpr std::initializer_list<TypeLevel> kMovedWithInt = {
    {T::TensorFloat32, 3}, {T::TensorQuant8Asymm, 3}, {T::TensorFloat16, 3}, {T::TensorInt32, 3}};
// REDUCE_MAX and REDUCE_MIN (level 3): FLOAT32, FLOAT16 and QUANT8_ASYMM.
constexpr std::initializer_list<TypeLevel> kReducedToExtreme = {
    {T::TensorFloat32, 3}, {T::TensorFloat16, 3}, {T::TensorQuant8Asymm, 3}};

std::string str(int64_t v) { return std::to_string(v); }

// Input 0 one of the types the table declares for the operation (with its
// level), each output of its type with its quantization.
void moved(Check& c) {
  typed(c);
  for (size_t o = 0; o < c.n_out(); ++o) {
    c.output_same_type(o, 0);
    c.same_quant(o, 0);
  }
}

// A 1-D TENSOR_INT32 parameter whose length must be the input's rank.
std::optional<std::vector<int32_t>> per_dim(Check& c, size_t i, const char* what) {
  auto v = c.ints(i);
  const Shape& x = c.shape(0);
  if (v && x.known && v->size() != x.rank())
    c.fail(Rule::Parameter, "input " + str(static_cast<int64_t>(i)) + " (" + what + ") has " +
                                str(static_cast<int64_t>(v->size())) +
                                " entries for an input of rank " +
                                str(static_cast<int64_t>(x.rank())) + "; NNAPI needs one per dim");
  return x.known ? v : std::nullopt;
}

// per_dim of the input of role `r` in form `f`, named as op_signature.h
// names the role.
std::optional<std::vector<int32_t>> per_dim(Check& c, const nnapi::Form& f, R r) {
  return per_dim(c, f.at(r), nnapi::role_name(r));
}

// ---- RESHAPE: input, shape (1-D TENSOR_INT32, at most one -1).

void reshape_rule(Check& c) {
  const size_t at = c.form().at(R::Shape);
  const std::string what = "input " + str(at) + " (shape) ";
  c.output_count(1);
  moved(c);
  c.input_type(at, {T::TensorInt32});
  c.input_rank(at, 1, 1);
  c.max_rank(4);
  if (!c.full()) return;
  auto shape = c.ints(at);
  if (!shape) {
    if (c.shapes() && c.in(at).dims.size() == 1 && c.in(at).dims[0] != 0)
      c.set_output(0, Shape::unknown_of_rank(c.in(at).dims[0]));
    return;
  }
  if (shape->size() > 4)
    c.fail(Rule::Rank, what + "asks for rank " + str(static_cast<int64_t>(shape->size())) +
                           "; NNAPI's RESHAPE gives tensors of rank 1 to 4");
  Shape out = Shape::unknown_of_rank(shape->size());
  int64_t known = 1, infer = -1;
  for (size_t k = 0; k < shape->size(); ++k) {
    const int32_t v = (*shape)[k];
    if (v == -1) {
      if (infer >= 0)
        c.fail(Rule::Parameter, what + "has more than one -1; NNAPI allows at most one");
      infer = static_cast<int64_t>(k);
    } else if (v < 0) {
      c.fail(Rule::Parameter, what + "has " + str(v) +
                                  "; NNAPI's RESHAPE takes sizes "
                                  "and at most one -1");
    } else {
      out.d[k] = v;
      known *= v;
    }
  }
  if (!c.shapes()) return;
  const Shape& x = c.shape(0);
  int64_t n = x.known ? 1 : -1;
  for (int64_t d : x.d) n = (n < 0 || d < 0) ? -1 : n * d;
  if (n >= 0) {
    if (infer >= 0) {
      if (known == 0 || n % known != 0)
        c.fail(Rule::Shape, "the input's " + str(n) + " elements do not fill shape " +
                                shape_text(out) + " (with -1)");
      out.d[static_cast<size_t>(infer)] = n / known;
    } else if (known != n) {
      c.fail(Rule::Shape, "the input " + shape_text(x) + " has " + str(n) + " elements but shape " +
                              shape_text(out) + " has " + str(known));
    }
  }
  c.set_output(0, out);
}

// ---- EXPAND_DIMS: input, axis in [-(rank + 1), rank + 1).

void expand_dims_rule(Check& c) {
  const size_t axis_at = c.form().at(R::Axis);
  c.output_count(1);
  moved(c);
  c.input_type(axis_at, {T::Int32});
  if (!c.full()) return;
  const Shape& x = c.shape(0);
  const int64_t axis = c.axis(axis_at, x.known ? static_cast<int64_t>(x.rank()) + 1 : -1, true);
  if (!c.shapes()) return;
  if (!x.known || axis < 0) return c.set_output(0, Shape::unknown());
  Shape out = x;
  out.d.insert(out.d.begin() + axis, 1);
  c.set_output(0, out);
}

// ---- SQUEEZE: input [, axes (1-D TENSOR_INT32)]: drops dims of size 1.

void squeeze_rule(Check& c) {
  const size_t axes_at = c.form().at(R::Axes);
  const bool has_axes = axes_at < c.n_in() && !c.omitted(axes_at);
  c.output_count(1);
  moved(c);
  if (has_axes) c.input_type(axes_at, {T::TensorInt32});
  c.max_rank(4);
  if (!c.shapes()) return;
  const Shape& x = c.shape(0);
  if (!x.known) return c.set_output(0, Shape::unknown());
  std::vector<bool> drop(x.rank(), false);
  if (has_axes) {
    auto axes = c.ints(axes_at);
    if (!axes) return c.set_output(0, Shape::unknown());
    for (int32_t a : *axes) {
      const int64_t r = static_cast<int64_t>(x.rank());
      if (a < -r || a >= r)
        c.fail(Rule::Parameter, "input " + str(axes_at) + " (axes) has " + str(a) +
                                    "; for a tensor of rank " + str(r) + " NNAPI takes " + str(-r) +
                                    " to " + str(r - 1));
      const size_t k = static_cast<size_t>(a < 0 ? a + r : a);
      if (x.d[k] >= 0 && x.d[k] != 1)
        c.fail(Rule::Shape, "dim " + str(static_cast<int64_t>(k)) + " of " + shape_text(x) +
                                " is not 1 and cannot be squeezed");
      drop[k] = true;
    }
  } else {
    for (size_t k = 0; k < x.rank(); ++k) {
      if (x.d[k] < 0) return c.set_output(0, Shape::unknown());
      drop[k] = x.d[k] == 1;
    }
  }
  Shape out = Shape::of({});
  for (size_t k = 0; k < x.rank(); ++k)
    if (!drop[k]) out.d.push_back(x.d[k]);
  c.set_output(0, out);
}

// ---- STRIDED_SLICE: input, begin, end, strides (1-D TENSOR_INT32, one per
// dim), begin_mask, end_mask, shrink_axis_mask (INT32); TensorFlow's rules.

void strided_slice_rule(Check& c) {
  const nnapi::Form& f = c.form();
  c.output_count(1);
  moved(c);
  for (R r : {R::Begin, R::End, R::Strides}) {
    c.input_type(f.at(r), {T::TensorInt32});
    c.input_rank(f.at(r), 1, 1);
  }
  for (R r : {R::BeginMask, R::EndMask, R::ShrinkAxisMask}) c.input_type(f.at(r), {T::Int32});
  c.max_rank(4);
  if (!c.full()) return;
  auto strides = per_dim(c, f, R::Strides);
  if (strides) {
    for (int32_t s : *strides)
      if (s == 0)
        c.fail(Rule::Parameter, "input " + str(f.at(R::Strides)) +
                                    " (strides) has a 0; NNAPI needs nonzero strides");
  }
  auto begin = per_dim(c, f, R::Begin), end = per_dim(c, f, R::End);
  auto begin_mask = c.i32(f.at(R::BeginMask)), end_mask = c.i32(f.at(R::EndMask)),
       shrink = c.i32(f.at(R::ShrinkAxisMask));
  const Shape& x = c.shape(0);
  if (!c.shapes() || !x.known) return;
  if (!shrink) return c.set_output(0, Shape::unknown());
  Shape out = Shape::of({});
  for (size_t k = 0; k < x.rank(); ++k) {
    const bool shrunk = (*shrink >> k) & 1;
    int64_t size = -1;
    if (begin && end && strides && begin_mask && end_mask && x.d[k] >= 0) {
      const int64_t n = x.d[k], s = (*strides)[k];
      auto resolve = [&](int64_t v, bool masked, bool is_begin) {
        if (masked) return is_begin ? (s > 0 ? 0 : n - 1) : (s > 0 ? n : -1);
        if (v < 0) v += n;
        return s > 0 ? std::clamp<int64_t>(v, 0, n) : std::clamp<int64_t>(v, -1, n - 1);
      };
      const int64_t b = resolve((*begin)[k], (*begin_mask >> k) & 1, true);
      const int64_t e = resolve((*end)[k], (*end_mask >> k) & 1, false);
      size = s > 0 ? (e > b ? (e - b + s - 1) / s : 0) : (b > e ? (b - e - s - 1) / -s : 0);
      if (shrunk && size != 1)
        c.fail(Rule::Parameter, "shrink_axis_mask shrinks dim " + str(static_cast<int64_t>(k)) +
                                    ", whose slice has " + str(size) +
                                    " elements; NNAPI needs a slice of size 1 there");
    }
    if (!shrunk) out.d.push_back(size);
  }
  c.set_output(0, out);
}

// ---- SLICE: input, begin, size (1-D TENSOR_INT32; size -1 = to the end).

void slice_rule(Check& c) {
  const nnapi::Form& f = c.form();
  c.output_count(1);
  moved(c);
  for (R r : {R::Begin, R::Size}) {
    c.input_type(f.at(r), {T::TensorInt32});
    c.input_rank(f.at(r), 1, 1);
  }
  if (!c.full()) return;
  auto begin = per_dim(c, f, R::Begin), size = per_dim(c, f, R::Size);
  const Shape& x = c.shape(0);
  if (!c.shapes() || !x.known) return;
  Shape out = Shape::unknown_of_rank(x.rank());
  for (size_t k = 0; k < x.rank() && begin && size; ++k) {
    const int64_t b = (*begin)[k], n = (*size)[k], d = x.d[k];
    if (b < 0 || n < -1)
      c.fail(Rule::Parameter, "dim " + str(static_cast<int64_t>(k)) + ": begin " + str(b) +
                                  ", size " + str(n) + "; NNAPI needs begin >= 0 and size >= -1");
    if (d >= 0 && (b > d || (n >= 0 && b + n > d)))
      c.fail(Rule::Shape, "dim " + str(static_cast<int64_t>(k)) + " of size " + str(d) +
                              " cannot be sliced from " + str(b) + " for " + str(n));
    out.d[k] = n >= 0 ? n : (d >= 0 ? d - b : -1);
  }
  c.set_output(0, out);
}

// ---- CONCATENATION: inputs 0..n-1, axis in [0, rank).

void concat_rule(Check& c) {
  // The input tensors are inputs 0 to n - 1, the axis input n.
  const size_t n = c.form().at(R::Axis, c.n_in());
  c.output_count(1);
  typed(c);
  c.output_same_type(0, 0);
  for (size_t i = 1; i < n; ++i) c.same_type(i, 0);
  c.input_type(n, {T::Int32});
  c.max_rank(4);
  if (c.type(0) == T::TensorQuant8Asymm) {
    for (size_t i = 0; i < n; ++i) {
      if (c.in(i).scale != c.out(0).scale || c.in(i).zero_point != c.out(0).zero_point)
        c.needs_level(3, "CONCATENATION of inputs quantized unlike its output");
    }
  }
  if (!c.full()) return;
  const Shape& x = c.shape(0);
  const int64_t axis = c.axis(n, x.known ? static_cast<int64_t>(x.rank()) : -1, false);
  if (!c.shapes() || !x.known || axis < 0) return;
  Shape out = x;
  int64_t sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const Shape& s = c.shape(i);
    if (!s.known) return c.set_output(0, Shape::unknown_of_rank(x.rank()));
    if (s.rank() != x.rank())
      c.fail(Rule::Shape, "input " + str(static_cast<int64_t>(i)) + " has rank " +
                              str(static_cast<int64_t>(s.rank())) + " but input 0 has rank " +
                              str(static_cast<int64_t>(x.rank())));
    for (size_t k = 0; k < x.rank(); ++k) {
      if (static_cast<int64_t>(k) == axis) continue;
      c.equal_dims(s.d[k], x.d[k],
                   "input " + str(static_cast<int64_t>(i)) + " differs from input 0 in dim " +
                       str(static_cast<int64_t>(k)) + ", which is not the concatenation axis");
      if (out.d[k] < 0) out.d[k] = s.d[k];
    }
    const int64_t a = s.d[static_cast<size_t>(axis)];
    sum = (sum < 0 || a < 0) ? -1 : sum + a;
  }
  out.d[static_cast<size_t>(axis)] = sum;
  c.set_output(0, out);
}

// ---- TRANSPOSE: input [, perm (1-D TENSOR_INT32)]; no perm reverses.

void transpose_rule(Check& c) {
  const size_t at = c.form().at(R::Perm);
  c.output_count(1);
  moved(c);
  const bool has_perm = at < c.n_in() && !c.omitted(at);
  if (has_perm) {
    c.input_type(at, {T::TensorInt32});
    c.input_rank(at, 1, 1);
  }
  c.max_rank(4);
  if (!c.full()) return;
  const Shape& x = c.shape(0);
  if (!x.known) return;
  std::vector<int32_t> perm;
  if (has_perm) {
    auto p = per_dim(c, at, "perm");
    if (!p) return c.set_output(0, Shape::unknown_of_rank(x.rank()));
    perm = *p;
  } else {
    for (size_t k = x.rank(); k-- > 0;) perm.push_back(static_cast<int32_t>(k));
  }
  std::vector<bool> seen(x.rank(), false);
  Shape out = Shape::unknown_of_rank(x.rank());
  for (size_t k = 0; k < perm.size(); ++k) {
    const int32_t p = perm[k];
    if (p < 0 || p >= static_cast<int32_t>(x.rank()) || seen[static_cast<size_t>(p)])
      c.fail(Rule::Parameter, "input " + str(at) + " (perm) is not a permutation of 0 to " +
                                  str(static_cast<int64_t>(x.rank()) - 1));
    seen[static_cast<size_t>(p)] = true;
    out.d[k] = x.d[static_cast<size_t>(p)];
  }
  if (c.shapes()) c.set_output(0, out);
}

// ---- PAD: input, paddings ([rank, 2] TENSOR_INT32); PAD_V2 adds the value.

void pad_common(Check& c) {
  const size_t pads_at = c.form().at(R::Paddings);
  c.output_count(1);
  moved(c);
  c.input_type(pads_at, {T::TensorInt32});
  c.input_rank(pads_at, 2, 2);
  c.max_rank(4);
  if (!c.full()) return;
  const Shape& x = c.shape(0);
  auto pads = c.ints(pads_at);
  if (!pads || !x.known) {
    if (c.shapes()) c.set_output(0, x.known ? Shape::unknown_of_rank(x.rank()) : Shape::unknown());
    return;
  }
  if (pads->size() != 2 * x.rank())
    c.fail(Rule::Parameter, "input " + str(pads_at) + " (paddings) has " +
                                str(static_cast<int64_t>(pads->size())) +
                                " entries for an input of rank " +
                                str(static_cast<int64_t>(x.rank())) + "; NNAPI needs [rank, 2]");
  Shape out = x;
  for (size_t k = 0; k < x.rank(); ++k) {
    const int64_t before = (*pads)[2 * k], after = (*pads)[2 * k + 1];
    if (before < 0 || after < 0)
      c.fail(Rule::Parameter, "input " + str(pads_at) + " (paddings) has a negative padding (" +
                                  str(before) + ", " + str(after) + ") at dim " +
                                  str(static_cast<int64_t>(k)));
    if (x.d[k] >= 0) out.d[k] = x.d[k] + before + after;
  }
  if (c.shapes()) c.set_output(0, out);
}

void pad_rule(Check& c) { pad_common(c); }

void pad_v2_rule(Check& c) {
  const size_t value_at = c.form().at(R::PadValue);
  if (c.type(0) == T::TensorQuant8Asymm) {
    c.input_type(value_at, {T::Int32});
  } else {
    c.input_type(value_at, {c.type(0) == T::TensorFloat16 ? T::Float16 : T::Float32});
  }
  pad_common(c);
}

// ---- SPLIT: input, axis, num_splits; num_splits outputs of equal size.

void split_rule(Check& c) {
  const nnapi::Form& f = c.form();
  const size_t axis_at = f.at(R::Axis), splits_at = f.at(R::NumSplits);
  if (c.n_out() < 1) c.fail(Rule::OutputCount, "has no outputs; NNAPI's SPLIT has num_splits");
  moved(c);
  c.input_type(axis_at, {T::Int32});
  c.input_type(splits_at, {T::Int32});
  if (!c.full()) return;
  const Shape& x = c.shape(0);
  const int64_t axis = c.axis(axis_at, x.known ? static_cast<int64_t>(x.rank()) : -1, true);
  auto n = c.i32(splits_at);
  if (n && *n != static_cast<int32_t>(c.n_out()))
    c.fail(Rule::OutputCount, "input " + str(splits_at) + " (num_splits) is " + str(*n) +
                                  " but the operation has " + str(static_cast<int64_t>(c.n_out())) +
                                  " outputs");
  if (!c.shapes() || !x.known || axis < 0) return;
  Shape part = x;
  const int64_t d = x.d[static_cast<size_t>(axis)];
  if (d >= 0) {
    const int64_t parts = static_cast<int64_t>(c.n_out());
    if (d % parts != 0)
      c.fail(Rule::Shape, "dim " + str(axis) + " of size " + str(d) + " does not split into " +
                              str(parts) + " equal parts");
    part.d[static_cast<size_t>(axis)] = d / parts;
  }
  for (size_t o = 0; o < c.n_out(); ++o) c.set_output(o, part);
}

// ---- CHANNEL_SHUFFLE: input, num_groups, axis.

void channel_shuffle_rule(Check& c) {
  const nnapi::Form& f = c.form();
  const size_t groups_at = f.at(R::Groups), axis_at = f.at(R::Axis);
  c.output_count(1);
  moved(c);
  c.input_type(groups_at, {T::Int32});
  c.input_type(axis_at, {T::Int32});
  c.max_rank(4);
  if (!c.full()) return;
  const Shape& x = c.shape(0);
  c.at_least(groups_at, 1, "number of groups");
  const int64_t axis = c.axis(axis_at, x.known ? static_cast<int64_t>(x.rank()) : -1, true);
  if (auto g = c.i32(groups_at); g && *g > 0 && axis >= 0) {
    const int64_t d = x.d[static_cast<size_t>(axis)];
    if (d >= 0 && d % *g != 0)
      c.fail(Rule::Shape, "dim " + str(axis) + " of size " + str(d) + " is not a multiple of the " +
                              str(*g) + " groups");
  }
  if (c.shapes()) c.set_output(0, x);
}

// ---- DEPTH_TO_SPACE, SPACE_TO_DEPTH: 4-D input, block_size [, layout].

void depth_space(Check& c, bool to_space) {
  const nnapi::Form& f = c.form();
  const size_t block_at = f.at(R::BlockSize), layout_at = f.at(R::Layout);
  c.output_count(1);
  moved(c);
  c.input_rank(0, 4, 4);
  c.input_type(block_at, {T::Int32});
  const bool flagged = layout_at < c.n_in();
  if (flagged) {
    c.input_type(layout_at, {T::Bool});
    c.needs_level(3, c.name(), " with a layout flag");
  }
  if (!c.full()) return;
  c.at_least(block_at, 1, "block size");
  const std::optional<bool> layout = flagged ? c.flag(layout_at) : std::optional<bool>(false);
  if (!layout) {
    if (c.shapes()) c.set_output(0, Shape::unknown_of_rank(4));
    return;
  }
  const bool nchw = *layout;
  const int64_t b = c.i32(block_at).value_or(-1);
  const int64_t n = c.dim(0, 0), h = c.dim(0, nchw ? 2 : 1), w = c.dim(0, nchw ? 3 : 2),
                d = c.dim(0, nchw ? 1 : 3);
  auto mul = [](int64_t a, int64_t f) { return a < 0 || f < 0 ? -1 : a * f; };
  auto div = [&](int64_t a, int64_t f, const char* what) -> int64_t {
    if (a < 0 || f < 1) return -1;
    if (a % f != 0)
      c.fail(Rule::Shape,
             std::string("the input ") + what + " " + str(a) + " is not a multiple of " + str(f));
    return a / f;
  };
  int64_t oh, ow, od;
  if (to_space) {
    oh = mul(h, b);
    ow = mul(w, b);
    od = div(d, b < 0 ? -1 : b * b, "depth");
  } else {
    oh = div(h, b, "height");
    ow = div(w, b, "width");
    od = mul(d, b < 0 ? -1 : b * b);
  }
  if (c.shapes()) c.set_output(0, nchw ? Shape::of({n, od, oh, ow}) : Shape::of({n, oh, ow, od}));
}

void depth_to_space_rule(Check& c) { depth_space(c, true); }
void space_to_depth_rule(Check& c) { depth_space(c, false); }

// ---- GATHER: input, axis, indices (TENSOR_INT32).

void gather_rule(Check& c) {
  const nnapi::Form& f = c.form();
  const size_t axis_at = f.at(R::Axis), indices_at = f.at(R::Indices);
  c.output_count(1);
  moved(c);
  c.input_type(axis_at, {T::Int32});
  c.input_type(indices_at, {T::TensorInt32});
  if (!c.full()) return;
  const Shape& x = c.shape(0);
  const int64_t axis = c.axis(axis_at, x.known ? static_cast<int64_t>(x.rank()) : -1, true);
  if (axis >= 0 && x.d[static_cast<size_t>(axis)] >= 0) {
    if (auto idx = c.ints(indices_at)) {
      for (int32_t v : *idx)
        if (v < 0 || v >= x.d[static_cast<size_t>(axis)])
          c.fail(Rule::Parameter, "input " + str(indices_at) + " (indices) has " + str(v) +
                                      ", outside dim " + str(axis) + " of size " +
                                      str(x.d[static_cast<size_t>(axis)]));
    }
  }
  const Shape& idx = c.shape(indices_at);
  if (!c.shapes() || !x.known || !idx.known || axis < 0) return;
  Shape out = Shape::of(std::vector<int64_t>(x.d.begin(), x.d.begin() + axis));
  out.d.insert(out.d.end(), idx.d.begin(), idx.d.end());
  out.d.insert(out.d.end(), x.d.begin() + axis + 1, x.d.end());
  c.set_output(0, out);
}

// ---- TILE: input, multiples (1-D TENSOR_INT32, one per dim).

void tile_rule(Check& c) {
  const nnapi::Form& f = c.form();
  const size_t at = f.at(R::Multiples);
  c.output_count(1);
  moved(c);
  c.input_type(at, {T::TensorInt32});
  c.input_rank(at, 1, 1);
  if (!c.full()) return;
  auto m = per_dim(c, f, R::Multiples);
  const Shape& x = c.shape(0);
  if (!c.shapes() || !x.known) return;
  Shape out = Shape::unknown_of_rank(x.rank());
  for (size_t k = 0; k < x.rank() && m; ++k) {
    if ((*m)[k] < 1)
      c.fail(Rule::Parameter, "input " + str(at) + " (multiples) has " + str((*m)[k]) + " at dim " +
                                  str(static_cast<int64_t>(k)) +
                                  "; a tensor is repeated at least once");
    out.d[k] = x.d[k] < 0 ? -1 : x.d[k] * (*m)[k];
  }
  c.set_output(0, out);
}

// ---- MEAN (keep_dims INT32), REDUCE_SUM (keep_dims BOOL): input, axes.

void reduce(Check& c, bool keep_is_bool) {
  const nnapi::Form& f = c.form();
  const size_t axes_at = f.at(R::Axes), keep_at = f.at(R::KeepDims);
  c.output_count(1);
  c.input_type(axes_at, {T::TensorInt32});
  c.input_rank(axes_at, 1, 1);
  c.input_type(keep_at, {keep_is_bool ? T::Bool : T::Int32});
  c.max_rank(4);
  if (!c.full()) return;
  const Shape& x = c.shape(0);
  auto axes = c.ints(axes_at);
  // -1: unknown, else 0 or 1.
  int keep = -1;
  if (keep_is_bool) {
    if (auto k = c.flag(keep_at)) keep = *k ? 1 : 0;
  } else if (auto k = c.i32(keep_at)) {
    keep = *k != 0 ? 1 : 0;
  }
  if (!x.known || !axes) {
    if (c.shapes() && x.known && keep == 1) c.set_output(0, Shape::unknown_of_rank(x.rank()));
    return;
  }
  const int64_t r = static_cast<int64_t>(x.rank());
  std::vector<bool> reduced(x.rank(), false);
  for (int32_t a : *axes) {
    if (a < -r || a >= r)
      c.fail(Rule::Parameter, "input " + str(axes_at) + " (axes) has " + str(a) +
                                  "; for a tensor of rank " + str(r) + " NNAPI takes " + str(-r) +
                                  " to " + str(r - 1));
    reduced[static_cast<size_t>(a < 0 ? a + r : a)] = true;
  }
  if (!c.shapes() || keep < 0) return;
  Shape out = Shape::of({});
  for (size_t k = 0; k < x.rank(); ++k) {
    if (!reduced[k]) {
      out.d.push_back(x.d[k]);
    } else if (keep == 1) {
      out.d.push_back(1);
    }
  }
  if (out.d.empty()) out.d.push_back(1);  // every dim reduced: [1]
  c.set_output(0, out);
}

void mean_rule(Check& c) {
  moved(c);
  reduce(c, false);
}

void reduce_sum_rule(Check& c) {
  moved(c);
  reduce(c, true);
}
void reduce_prod_rule(Check& c) { reduce_sum_rule(c); }
void reduce_max_rule(Check& c) {  // REDUCE_MAX, REDUCE_MIN
  moved(c);
  reduce(c, true);
}
void reduce_bool_rule(Check& c) {  // REDUCE_ALL, REDUCE_ANY
  moved(c);
  reduce(c, true);
}

// ---- ARGMAX, ARGMIN: input, axis (INT32 in [-rank, rank)); a TENSOR_INT32
// output without that axis ([1] for a 1-D input).

void arg_rule(Check& c) {
  const size_t axis_at = c.form().at(R::Axis);
  c.output_count(1);
  typed(c);
  c.input_type(axis_at, {T::Int32});
  c.output_type(0, {T::TensorInt32});
  if (!c.full()) return;
  const Shape& x = c.shape(0);
  const int64_t axis = c.axis(axis_at, x.known ? static_cast<int64_t>(x.rank()) : -1, true);
  if (!c.shapes() || !x.known) return;
  if (axis < 0) return c.set_output(0, Shape::unknown_of_rank(std::max<size_t>(x.rank(), 2) - 1));
  Shape out = x;
  out.d.erase(out.d.begin() + axis);
  if (out.d.empty()) out.d.push_back(1);
  c.set_output(0, out);
}

// ---- TOPK_V2: input, k (INT32 in [1, last dim]); values (the input's type
// and quantization) and indices (TENSOR_INT32), both the input's shape with
// k in the last dim.

void topk_rule(Check& c) {
  const size_t k_at = c.form().at(R::K);
  c.output_count(2);
  typed(c);
  c.input_type(k_at, {T::Int32});
  c.output_same_type(0, 0);
  c.same_quant(0, 0);
  c.output_type(1, {T::TensorInt32});
  if (!c.full()) return;
  const Shape& x = c.shape(0);
  const auto k = c.i32(k_at);
  const int64_t last = x.known && x.rank() > 0 ? x.d.back() : -1;
  if (k && (*k < 1 || (last >= 0 && *k > last)))
    c.fail(Rule::Parameter, "input " + str(k_at) + " (k) is " + str(*k) + " for a last dim of " +
                                (last >= 0 ? str(last) : std::string("unknown size")) +
                                "; NNAPI's TOPK_V2 takes 1 to the last dim's size");
  if (!c.shapes() || !x.known) return;
  Shape out = x;
  if (!out.d.empty()) out.d.back() = k ? *k : -1;
  c.set_output(0, out);
  c.set_output(1, out);
}

}  // namespace

void add_shape_rules(std::vector<OpRule>& t) {
  using nnapi::Op;
  // Each operation with the types its input 0 takes (moved() and typed()
  // read them from here, and so does input_type_level()).
  const std::vector<TypeLevel> float16_32 = {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}};
  t.push_back({Op::Reshape, reshape_rule, kReshaped});
  t.push_back({Op::ReduceMax, reduce_max_rule, kReducedToExtreme});
  t.push_back({Op::ReduceMin, reduce_max_rule, kReducedToExtreme});
  t.push_back({Op::ReduceProd, reduce_prod_rule, float16_32});
  t.push_back({Op::ReduceAll, reduce_bool_rule, {{T::TensorBool8, 3}}});
  t.push_back({Op::ReduceAny, reduce_bool_rule, {{T::TensorBool8, 3}}});
  t.push_back({Op::ArgMax, arg_rule, kMovedWithInt});
  t.push_back({Op::ArgMin, arg_rule, kMovedWithInt});
  t.push_back({Op::TopKV2, topk_rule, kMovedWithInt});
  t.push_back({Op::ExpandDims, expand_dims_rule, kMovedWithInt});
  t.push_back({Op::Squeeze, squeeze_rule, kMovedFloatQuant});
  t.push_back({Op::StridedSlice, strided_slice_rule, kMovedFloatQuant});
  t.push_back({Op::Slice, slice_rule, kMovedWithInt});
  t.push_back({Op::Concatenation, concat_rule, kMovedFloatQuant});
  t.push_back({Op::Transpose, transpose_rule, kMovedFloatQuant});
  t.push_back({Op::Pad, pad_rule, kMovedFloatQuant});
  t.push_back({Op::PadV2, pad_v2_rule, kMovedFloatQuant});
  t.push_back({Op::Split, split_rule, kMovedWithInt});
  t.push_back({Op::ChannelShuffle, channel_shuffle_rule, kMovedFloatQuant});
  t.push_back({Op::DepthToSpace, depth_to_space_rule, kMovedFloatQuant});
  t.push_back({Op::SpaceToDepth, space_to_depth_rule, kMovedFloatQuant});
  t.push_back({Op::Gather, gather_rule, kMovedWithInt});
  t.push_back({Op::Tile, tile_rule, kMovedWithInt});
  t.push_back({Op::Mean, mean_rule, kMovedFloatQuant});
  t.push_back({Op::ReduceSum, reduce_sum_rule, float16_32});
}

}  // namespace nnapi_validate

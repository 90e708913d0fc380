// Rules of NeuralNetworks.h for SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND
// (feature level 2; TENSOR_FLOAT16 and the layout flag since level 3): a 4-D
// image, the block sizes [block_h, block_w] (1-D TENSOR_INT32, each >= 1),
// SPACE_TO_BATCH_ND's paddings [[top, bottom], [left, right]] (2-D
// TENSOR_INT32, each >= 0), and an optional BOOL (NCHW). The output keeps the
// input's type, scale and zero point.
#include "validate/rule_context.h"

namespace nnapi_validate {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// Checks the input count against the operation's form, and returns it.
const nnapi::Form& space_batch_types(Check& c) {
  const nnapi::Form& f = c.form();
  const size_t block_at = f.at(R::BlockShape), layout = f.at(R::Layout);
  c.output_count(1);
  typed(c, {{T::TensorFloat32, 2}, {T::TensorQuant8Asymm, 2}, {T::TensorFloat16, 3}});
  c.output_same_type(0, 0);
  c.same_quant(0, 0);
  c.input_rank(0, 4, 4);
  c.input_type(block_at, {T::TensorInt32});
  c.input_rank(block_at, 1, 1);
  if (c.n_in() > layout) {
    c.input_type(layout, {T::Bool});
    c.needs_level(3, c.name(), " with a layout flag");
  }
  return f;
}

// The block sizes (two values, each >= 1); nullopt when not known.
std::optional<std::vector<int32_t>> block_sizes(Check& c, const nnapi::Form& f) {
  const size_t at = f.at(R::BlockShape);
  auto block = c.ints(at);
  if (!block) return std::nullopt;
  if (block->size() != 2)
    c.fail(Rule::Parameter, "input " + str(at) + " (block sizes) has " +
                                str(static_cast<int64_t>(block->size())) +
                                " entries; NNAPI needs 2 (height, width)");
  for (int32_t b : *block)
    if (b < 1)
      c.fail(Rule::Parameter,
             "input " + str(at) + " (block sizes) has " + str(b) + "; NNAPI needs >= 1");
  return block;
}

std::optional<bool> layout_of(Check& c, const nnapi::Form& f) {
  const size_t layout = f.at(R::Layout);
  return c.n_in() > layout ? c.flag(layout) : std::optional<bool>(false);
}

Shape image(int64_t n, int64_t h, int64_t w, int64_t d, bool nchw) {
  return nchw ? Shape::of({n, d, h, w}) : Shape::of({n, h, w, d});
}

// ---- SPACE_TO_BATCH_ND: input, block sizes, paddings [, layout].
// Output [n * bh * bw, (h + top + bottom) / bh, (w + left + right) / bw, d].

void space_to_batch_rule(Check& c) {
  const nnapi::Form& f = space_batch_types(c);
  const size_t pads_at = f.at(R::Paddings);
  c.input_type(pads_at, {T::TensorInt32});
  c.input_rank(pads_at, 2, 2);
  if (!c.full()) return;
  auto block = block_sizes(c, f);
  auto pads = c.ints(pads_at);
  const std::string what = "input " + str(pads_at) + " (paddings) has ";
  if (pads) {
    if (pads->size() != 4)
      c.fail(Rule::Parameter, what + str(static_cast<int64_t>(pads->size())) +
                                  " entries; NNAPI needs [2, 2] (top, bottom, left, right)");
    for (int32_t p : *pads)
      if (p < 0) c.fail(Rule::Parameter, what + str(p) + "; NNAPI needs >= 0");
  }
  const std::optional<bool> nchw = layout_of(c, f);
  if (!c.shapes()) return;
  if (!nchw || !block || !pads) return c.set_output(0, Shape::unknown_of_rank(4));
  const int64_t n = c.dim(0, 0), h = c.dim(0, *nchw ? 2 : 1), w = c.dim(0, *nchw ? 3 : 2),
                d = c.dim(0, *nchw ? 1 : 3);
  auto blocks = [&](int64_t size, int64_t before, int64_t after, int64_t b, const char* what) {
    if (size < 0) return int64_t{-1};
    const int64_t padded = size + before + after;
    if (padded % b != 0)
      c.fail(Rule::Shape, std::string("the padded ") + what + " " + str(padded) +
                              " is not a multiple of the block size " + str(b));
    return padded / b;
  };
  const int64_t bh = (*block)[0], bw = (*block)[1];
  const int64_t oh = blocks(h, (*pads)[0], (*pads)[1], bh, "height");
  const int64_t ow = blocks(w, (*pads)[2], (*pads)[3], bw, "width");
  c.set_output(0, image(n < 0 ? -1 : n * bh * bw, oh, ow, d, *nchw));
}

// ---- BATCH_TO_SPACE_ND: input, block sizes [, layout].
// Output [n / (bh * bw), h * bh, w * bw, d].

void batch_to_space_rule(Check& c) {
  const nnapi::Form& f = space_batch_types(c);
  if (!c.full()) return;
  auto block = block_sizes(c, f);
  const std::optional<bool> nchw = layout_of(c, f);
  if (!c.shapes()) return;
  if (!nchw || !block) return c.set_output(0, Shape::unknown_of_rank(4));
  const int64_t n = c.dim(0, 0), h = c.dim(0, *nchw ? 2 : 1), w = c.dim(0, *nchw ? 3 : 2),
                d = c.dim(0, *nchw ? 1 : 3);
  const int64_t bh = (*block)[0], bw = (*block)[1];
  if (n >= 0 && n % (bh * bw) != 0)
    c.fail(Rule::Shape, "the batch " + str(n) + " is not a multiple of the block sizes' product " +
                            str(bh * bw));
  auto times = [](int64_t a, int64_t b) { return a < 0 ? int64_t{-1} : a * b; };
  c.set_output(0, image(n < 0 ? -1 : n / (bh * bw), times(h, bh), times(w, bw), d, *nchw));
}

}  // namespace

void add_space_batch_rules(std::vector<OpRule>& t) {
  t.push_back({nnapi::Op::SpaceToBatchNd, space_to_batch_rule});
  t.push_back({nnapi::Op::BatchToSpaceNd, batch_to_space_rule});
}

}  // namespace nnapi_validate

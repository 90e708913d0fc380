// pixel_shuffle and pixel_unshuffle: DEPTH_TO_SPACE and SPACE_TO_DEPTH with
// a GATHER that reorders the channels between PyTorch's and NNAPI's order.
//
// With block r and C output (pixel_shuffle) or input (pixel_unshuffle)
// channels, the r * r values of channel c at row offset i and column offset j
// of a block sit in depth channel
//   PyTorch: c * r * r + i * r + j
//   NNAPI (TensorFlow's order, both data layouts): (i * r + j) * C + c.
// A GATHER along the channel axis turns one order into the other; it is left
// out when they agree (C = 1).
#include "lower/pixel_shuffle.h"

#include "lower/emit.h"
#include "lower/registry.h"
#include "lower/signature_inputs.h"

namespace nnapi_convert {
namespace {

using nnapi::Op;

// The NNAPI depth channel that holds PyTorch depth channel k.
int64_t nnapi_channel(int64_t k, int64_t r, int64_t c) {
  const int64_t channel = k / (r * r), offset = k % (r * r);
  return offset * c + channel;
}

// GATHER along x's channel axis: output channel k is input channel index[k].
// Returns x itself for the identity.
OperandHandle gather_channels(LoweringContext& cx, const OperandHandle& x,
                              const std::vector<int64_t>& index, const Value* out) {
  bool identity = true;
  for (size_t k = 0; k < index.size(); ++k)
    identity = identity && index[k] == static_cast<int64_t>(k);
  if (identity && !out) return x;
  ModelBuilder& m = cx.model();
  const int32_t axis = m.add_int_scalar(x.op.dim_order == DimOrder::ChannelsLast ? 3 : 1);
  const int32_t index_id = m.add_int_vector(index);
  const int32_t id = make_output(cx, out, x.op, &x);
  add_gather(m, x.id, axis, index_id, id);
  return {id, x.op};
}

struct Image {
  OperandHandle x;
  int64_t r;
};

Image image_and_block(LoweringContext& cx, const Node* node, const char* what) {
  check(node->inputs().size() == 2, [&] { return std::string("malformed aten::") + what; });
  auto [id, in] = cx.get_operand(node->input(0));
  check(in.shape.size() == 4, [&] {
    return std::string(what) + " of a " + std::to_string(in.shape.size()) +
           "-D tensor is not supported (NNAPI's operation takes 4-D images)";
  });
  check(in.dim_order == DimOrder::Contiguous || in.dim_order == DimOrder::ChannelsLast,
        "unknown memory layout");
  // (Bools move as float32, lower/moves.h.)
  check(in.type != nnapi::OperandType::TensorInt32, [&] {
    return int32_refusal(what, "NNAPI's DEPTH_TO_SPACE, SPACE_TO_DEPTH and TRANSPOSE take none");
  });
  check(in.shape[1] != 0, [&] { return std::string(what) + " needs a fixed channel count"; });
  const int64_t r = cx.constant_int(node->input(1));
  check(r > 0, [&] { return std::string(what) + " needs a positive factor"; });
  return {{id, in}, r};
}

}  // namespace

OperandHandle emit_pixel_shuffle(LoweringContext& cx, const OperandHandle& x, int64_t r,
                                 const Value* out) {
  const Shape& s = x.op.shape;
  const int64_t c = s[1] / (r * r);
  // NNAPI depth channel q takes PyTorch channel k where nnapi_channel(k) = q.
  std::vector<int64_t> index(s[1]);
  for (int64_t k = 0; k < s[1]; ++k) index[nnapi_channel(k, r, c)] = k;
  OperandHandle g = gather_channels(cx, x, index, nullptr);
  const Shape& gs = g.op.shape;
  const std::vector<SymInt> dims = {sym_dim(g.id, gs, 0),
                                    {c, ""},
                                    depth_to_space_dim(sym_dim(g.id, gs, 2), r),
                                    depth_to_space_dim(sym_dim(g.id, gs, 3), r)};
  ModelBuilder& m = cx.model();
  const int32_t block = m.add_int_scalar(static_cast<int32_t>(r));
  const int32_t layout = m.add_bool_scalar(g.op.use_nchw());
  const OperandHandle y = cx.add_output(out, g.op, dims);
  add_by_roles(
      m, Op::DepthToSpace,
      {{nnapi::Role::Input, g.id}, {nnapi::Role::BlockSize, block}, {nnapi::Role::Layout, layout}},
      {y.id});
  return y;
}

namespace {

void lower_pixel_shuffle(LoweringContext& cx, const Node* node) {
  auto [x, r] = image_and_block(cx, node, "pixel_shuffle");
  const Shape& s = x.op.shape;
  check(s[1] % (r * r) == 0, [&] {
    return "pixel_shuffle by " + std::to_string(r) + " needs a channel count divisible by " +
           std::to_string(r * r) + ", got " + std::to_string(s[1]);
  });
  if (r == 1) {
    cx.alias(node->output(), node->input(0));
    return;
  }
  emit_pixel_shuffle(cx, x, r, node->output());
}

void lower_pixel_unshuffle(LoweringContext& cx, const Node* node) {
  auto [x, r] = image_and_block(cx, node, "pixel_unshuffle");
  const Shape& s = x.op.shape;
  for (int64_t d : {2, 3}) {
    check(s[d] == 0 || s[d] % r == 0, [&] {
      return "pixel_unshuffle by " + std::to_string(r) + " needs a height and width divisible by " +
             std::to_string(r) + ", got " + shape_str(s);
    });
  }
  if (r == 1) {
    cx.alias(node->output(), node->input(0));
    return;
  }
  const int64_t c = s[1];
  std::vector<SymInt> dims = {sym_dim(x.id, s, 0), {c * r * r, ""}};
  std::vector<std::string> asserts(4);  // a load-time height or width must divide by r
  for (int64_t d : {2, 3}) {
    dims.push_back(space_to_depth_dim(sym_dim(x.id, s, d), r));
    if (s[d] == 0) asserts[d] = flex_name(x.id, d) + " % " + std::to_string(r) + " == 0";
  }
  ModelBuilder& m = cx.model();
  const int32_t block = m.add_int_scalar(static_cast<int32_t>(r));
  const int32_t layout = m.add_bool_scalar(x.op.use_nchw());
  const bool reorder = c > 1;
  const auto [id, o] = cx.add_output(reorder ? nullptr : node->output(), x.op, dims, asserts);
  add_by_roles(
      m, Op::SpaceToDepth,
      {{nnapi::Role::Input, x.id}, {nnapi::Role::BlockSize, block}, {nnapi::Role::Layout, layout}},
      {id});
  if (!reorder) return;
  // PyTorch channel k is NNAPI depth channel nnapi_channel(k).
  std::vector<int64_t> index(c * r * r);
  for (int64_t k = 0; k < c * r * r; ++k) index[k] = nnapi_channel(k, r, c);
  gather_channels(cx, {id, o}, index, node->output());
}

}  // namespace

void register_pixel_shuffle_ops(LoweringTable& t) {
  t.add("aten::pixel_shuffle", lower_pixel_shuffle)
      .with_moves(Moves::First, nnapi::Op::DepthToSpace, true);
  t.add("aten::pixel_unshuffle", lower_pixel_unshuffle)
      .with_moves(Moves::First, nnapi::Op::SpaceToDepth, true);
}

}  // namespace nnapi_convert

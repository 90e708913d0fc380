// SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND on 4-D images (NHWC, or NCHW with
// the layout flag), any element type (FLOAT32, FLOAT16, QUANT8_ASYMM), as
// NeuralNetworks.h defines them with block sizes [bh, bw]:
//   SPACE_TO_BATCH_ND: padded = the input padded by [[top, bottom], [left,
//     right]] with zeros (the zero point for QUANT8_ASYMM: a logical zero);
//     out[(i * bw + j) * n + b, y, x, c] = padded[b, y * bh + i, x * bw + j, c].
//   BATCH_TO_SPACE_ND: the inverse without padding;
//     out[b, y * bh + i, x * bw + j, c] = in[(i * bw + j) * n + b, y, x, c],
//     n = batches / (bh * bw).
#include "../kernel.h"

namespace nnrt {
namespace {

// The block sizes: [bh, bw], each >= 1.
std::pair<int64_t, int64_t> read_block(const ExecContext& ctx) {
  const std::vector<int64_t> block = ctx.int_list(ctx.form().at(R::BlockShape));
  if (block.size() != 2 || block[0] < 1 || block[1] < 1)
    fail(Result::BadData, "block sizes must be two values >= 1");
  return {block[0], block[1]};
}

at::Tensor nhwc_input(const ExecContext& ctx, bool nchw) {
  const at::Tensor& x = ctx.in(0).t;
  if (x.dim() != 4) fail(Result::BadData, "input must be 4-D");
  return nchw ? nchw_to_nhwc(x) : x;
}

void set_image(ExecContext& ctx, const at::Tensor& nhwc, bool nchw) {
  ctx.set_output(0, (nchw ? nhwc_to_nchw(nhwc) : nhwc).contiguous());
}

void execute_space_to_batch(ExecContext& ctx) {
  const bool nchw = nchw_flag(ctx);
  at::Tensor x = nhwc_input(ctx, nchw);
  const auto [bh, bw] = read_block(ctx);
  // top, bottom, left, right
  const std::vector<int64_t> pads = ctx.int_list(ctx.form().at(R::Paddings));
  if (pads.size() != 4) fail(Result::BadData, "paddings must be [2, 2]");
  for (int64_t p : pads)
    if (p < 0) fail(Result::BadData, "negative padding");
  const Value& in = ctx.in(0);
  const double fill = is_quant8(in.type) ? static_cast<double>(in.zero_point) : 0.0;
  // constant_pad_nd pads from the last dimension: c, then w, then h.
  x = at::constant_pad_nd(x, {0, 0, pads[2], pads[3], pads[0], pads[1]}, fill);
  const int64_t n = x.size(0), h = x.size(1), w = x.size(2), c = x.size(3);
  if (h % bh != 0 || w % bw != 0)
    fail(Result::BadData, "padded height and width must be multiples of the block sizes");
  at::Tensor y = x.reshape({n, h / bh, bh, w / bw, bw, c})
                     .permute({2, 4, 0, 1, 3, 5})
                     .reshape({bh * bw * n, h / bh, w / bw, c});
  set_image(ctx, y, nchw);
}

void execute_batch_to_space(ExecContext& ctx) {
  const bool nchw = nchw_flag(ctx);
  at::Tensor x = nhwc_input(ctx, nchw);
  const auto [bh, bw] = read_block(ctx);
  const int64_t batches = x.size(0), h = x.size(1), w = x.size(2), c = x.size(3);
  if (batches % (bh * bw) != 0)
    fail(Result::BadData, "batch is not a multiple of the block sizes' product");
  const int64_t n = batches / (bh * bw);
  at::Tensor y =
      x.reshape({bh, bw, n, h, w, c}).permute({2, 3, 0, 4, 1, 5}).reshape({n, h * bh, w * bw, c});
  set_image(ctx, y, nchw);
}

}  // namespace

void add_space_batch_kernels(std::vector<OpKernel>& table) {
  table.push_back({Op::SpaceToBatchNd, "SPACE_TO_BATCH_ND", execute_space_to_batch});
  table.push_back({Op::BatchToSpaceNd, "BATCH_TO_SPACE_ND", execute_batch_to_space});
}

}  // namespace nnrt

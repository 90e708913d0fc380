// The detection operations of NNAPI feature level 3 (Android 10):
// AXIS_ALIGNED_BBOX_TRANSFORM, ROI_ALIGN, ROI_POOLING, HEATMAP_MAX_KEYPOINT,
// BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS and DETECTION_POSTPROCESSING.
//
// Every kernel computes on real values in float32, as Android's reference
// CPU implementation computes its float kernels: quantized inputs are
// dequantized (TENSOR_QUANT16_ASYMM boxes are unsigned, see
// quant16_asymm_values), and quantized outputs are quantized again rounding
// half away from zero (TENSOR_QUANT16_ASYMM saturates to 0 to 65535).
// NeuralNetworks.h leaves the rounding of quantized results to the driver
// (Android's tests allow one quantum); Android's reference ROI_ALIGN
// interpolates quant8 inputs with weights rounded to multiples of 1/255, so
// its quant8 results may differ from these by one quantum.
//
// Boxes are [x1, y1, x2, y2] in image coordinates; a box's batch index (a
// TENSOR_INT32 input) names the image it belongs to. A box count of 0 is
// allowed where NeuralNetworks.h says so: the outputs then have 0 rows.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "../kernel.h"

namespace nnrt {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// The real values of input i as a contiguous float32 tensor.
at::Tensor reals(const ExecContext& ctx, size_t i) { return real_values(ctx.in(i)).contiguous(); }

std::vector<int32_t> int_values(const ExecContext& ctx, size_t i) {
  at::Tensor t = ctx.in(i).t.to(at::kInt).contiguous();
  const int32_t* p = t.data_ptr<int32_t>();
  return std::vector<int32_t>(p, p + t.numel());
}

// A size that must equal another one, a failure naming both otherwise.
void expect_size(int64_t actual, int64_t expected, const std::string& what) {
  if (actual != expected)
    fail(Result::OpFailed, what + " is " + str(actual) + "; NNAPI needs " + str(expected));
}

// Input `i`: a [num_boxes, 4] tensor of boxes.
at::Tensor box_input(const ExecContext& ctx, size_t i) {
  at::Tensor boxes = reals(ctx, i);
  if (boxes.dim() != 2) fail(Result::OpFailed, "input " + str(i) + " (boxes) is not 2-D");
  expect_size(boxes.size(1), 4, "dimension 1 of input " + str(i) + " (boxes)");
  return boxes;
}

// The batch indices of `boxes` boxes (input i), each an image of `images`.
std::vector<int32_t> batch_input(const ExecContext& ctx, size_t i, int64_t boxes, int64_t images) {
  std::vector<int32_t> batch = int_values(ctx, i);
  expect_size(static_cast<int64_t>(batch.size()), boxes,
              "the number of batch indices (input " + str(i) + ")");
  for (size_t r = 0; r < batch.size(); ++r)
    if (batch[r] < 0 || batch[r] >= images)
      fail(Result::OpFailed, "box " + str(static_cast<int64_t>(r)) + " has batch index " +
                                 str(batch[r]) + "; the batch has " + str(images) +
                                 " images (indices 0 to " + str(images - 1) + ")");
  return batch;
}

// ---- AXIS_ALIGNED_BBOX_TRANSFORM: boxes [R, 4], deltas [R, C * 4] (dx, dy,
// dw, dh per class), batch indices [R], image sizes [B, 2] (height, width).
// Per box and class: w = x2 - x1, h = y2 - y1, centre (x1 + w / 2, y1 + h /
// 2) moved by (dx * w, dy * h), size (w * exp(dw), h * exp(dh)); the new
// corners clipped to [0, width] and [0, height] of the box's image.

// Moves box `roi` by `delta` (dx, dy, dw, dh) and clips it to the image
// [0, width] x [0, height]; writes the result to `out`.
void transform_box(const float* roi, const float* delta, float height, float width, float* out) {
  const float w = roi[2] - roi[0], h = roi[3] - roi[1];
  const float x = roi[0] + w / 2 + delta[0] * w, y = roi[1] + h / 2 + delta[1] * h;
  const float half_w = w * std::exp(delta[2]) / 2, half_h = h * std::exp(delta[3]) / 2;
  out[0] = std::clamp(x - half_w, 0.0f, width);
  out[1] = std::clamp(y - half_h, 0.0f, height);
  out[2] = std::clamp(x + half_w, 0.0f, width);
  out[3] = std::clamp(y + half_h, 0.0f, height);
}

void axis_aligned_bbox_transform(ExecContext& ctx) {
  const at::Tensor roi = box_input(ctx, 0);
  const at::Tensor deltas = reals(ctx, 1);
  const at::Tensor info = reals(ctx, 3);
  const int64_t rois = roi.size(0);
  expect_size(deltas.size(0), rois, "dimension 0 of input 1 (box deltas)");
  const int64_t coords = deltas.size(1);
  if (coords % 4 != 0)
    fail(Result::OpFailed,
         "dimension 1 of input 1 (box deltas) is " + str(coords) + ", not a multiple of 4");
  expect_size(info.size(1), 2, "dimension 1 of input 3 (image sizes)");
  const std::vector<int32_t> batch = batch_input(ctx, 2, rois, info.size(0));
  at::Tensor out = at::empty({rois, coords}, at::kFloat);
  const float* R = roi.data_ptr<float>();
  const float* D = deltas.data_ptr<float>();
  const float* I = info.data_ptr<float>();
  float* O = out.data_ptr<float>();
  for (int64_t r = 0; r < rois; ++r)
    for (int64_t k = 0; k < coords; k += 4)
      transform_box(R + 4 * r, D + r * coords + k, I[2 * batch[r]], I[2 * batch[r] + 1],
                    O + r * coords + k);
  ctx.set_output(0, to_operand(out, ctx.out_operand(0)));
}

// ---- ROI_ALIGN and ROI_POOLING: feature map, boxes [R, 4], batch indices
// [R], output height, output width, height ratio, width ratio (image size /
// feature map size) [, sampling points (ROI_ALIGN)], layout. The output is
// [R, out_h, out_w, depth] (NCHW: [R, depth, out_h, out_w]).

struct RoiArgs {
  at::Tensor image;  // NHWC float32
  at::Tensor boxes;  // [R, 4] float32, in feature map coordinates
  std::vector<int32_t> batch;
  int64_t out_h = 0, out_w = 0;
  bool nchw = false;
};

RoiArgs roi_args(const ExecContext& ctx, size_t layout) {
  RoiArgs a;
  a.nchw = ctx.flag(layout);
  a.image = real_values(ctx.in(0));
  if (a.image.dim() != 4) fail(Result::OpFailed, "input 0 is not 4-D");
  if (a.nchw) a.image = a.image.permute({0, 2, 3, 1});
  a.image = a.image.contiguous();
  a.out_h = ctx.i32(3);
  a.out_w = ctx.i32(4);
  const float h_ratio = ctx.f32(5), w_ratio = ctx.f32(6);
  if (a.out_h < 1 || a.out_w < 1 || !(h_ratio > 0) || !(w_ratio > 0))
    fail(Result::OpFailed, "the output size and the ratios must be > 0");
  const at::Tensor boxes = box_input(ctx, 1);
  a.batch = batch_input(ctx, 2, boxes.size(0), a.image.size(0));
  // As Android's reference: boxes inside the image (scaled to the feature
  // map), x1 <= x2 and y1 <= y2.
  const float h_scale = 1.0f / h_ratio, w_scale = 1.0f / w_ratio;
  a.boxes = at::empty_like(boxes);
  auto B = boxes.accessor<float, 2>();
  auto S = a.boxes.accessor<float, 2>();
  const float height = static_cast<float>(a.image.size(1)),
              width = static_cast<float>(a.image.size(2));
  for (int64_t r = 0; r < boxes.size(0); ++r) {
    for (int k = 0; k < 4; ++k) S[r][k] = B[r][k] * (k % 2 == 0 ? w_scale : h_scale);
    const bool inside = B[r][0] >= 0 && B[r][1] >= 0 && S[r][2] <= width && S[r][3] <= height &&
                        B[r][0] <= B[r][2] && B[r][1] <= B[r][3];
    if (!inside)
      fail(Result::OpFailed, "box " + str(r) + " [" + num(B[r][0]) + ", " + num(B[r][1]) + ", " +
                                 num(B[r][2]) + ", " + num(B[r][3]) +
                                 "] is not a region of its image (NNAPI needs 0 <= x1 <= x2 <= " +
                                 num(width * w_ratio) +
                                 " and 0 <= y1 <= y2 <= " + num(height * h_ratio) + ")");
  }
  return a;
}

using Map = at::TensorAccessor<float, 3>;  // one image [H, W, C] (or output)
using Box = at::TensorAccessor<float, 1>;  // [x1, y1, x2, y2] in feature map cells

// Runs fill(args, image, box, output) for every box (its image, its box
// scaled to the feature map, its zeroed NHWC output [out_h, out_w, C]) and
// stores the output in the operation's layout.
template <typename Fill>
void roi_kernel(ExecContext& ctx, size_t layout, Fill fill) {
  const RoiArgs a = roi_args(ctx, layout);
  at::Tensor out = at::zeros({a.boxes.size(0), a.out_h, a.out_w, a.image.size(3)}, at::kFloat);
  auto X = a.image.accessor<float, 4>();
  auto S = a.boxes.accessor<float, 2>();
  auto O = out.accessor<float, 4>();
  for (int64_t r = 0; r < a.boxes.size(0); ++r) fill(a, X[a.batch[r]], S[r], O[r]);
  if (a.nchw) out = out.permute({0, 3, 1, 2});
  ctx.set_output(0, to_operand(out.contiguous(), ctx.out_operand(0)));
}

// The two rows (or columns) a bilinear sample at `pos` reads and the weight
// of the second; at or beyond the last one, that one alone (as Android's
// reference).
struct Tap {
  int64_t lo, hi;
  float frac;
};

Tap tap(float pos, int64_t size) {
  const int64_t lo = static_cast<int64_t>(std::floor(pos));
  if (lo >= size - 1) return {size - 1, size - 1, 0.0f};
  return {lo, lo + 1, pos - static_cast<float>(lo)};
}

// ROI_ALIGN: each output cell averages sampling points spread evenly over its
// bin (a grid of sampling_h x sampling_w, at the centres of equal sub-bins),
// each the bilinear interpolation of the feature map. A box is at least one
// feature map cell wide and high; sampling 0 (adaptive) is ceil(bin size).
// As Android's reference, a point at or beyond the last row or column takes
// that row or column.
void roi_align(ExecContext& ctx) {
  const int32_t sampling_h = ctx.i32(7), sampling_w = ctx.i32(8);
  if (sampling_h < 0 || sampling_w < 0)
    fail(Result::OpFailed, "the sampling point counts must be >= 0");
  roi_kernel(ctx, 9, [&](const RoiArgs& a, const Map& image, const Box& box, Map out) {
    const int64_t height = image.size(0), width = image.size(1), depth = image.size(2);
    const float bin_w = std::max(box[2] - box[0], 1.0f) / static_cast<float>(a.out_w);
    const float bin_h = std::max(box[3] - box[1], 1.0f) / static_cast<float>(a.out_h);
    const int64_t n_w = sampling_w > 0 ? sampling_w : static_cast<int64_t>(std::ceil(bin_w));
    const int64_t n_h = sampling_h > 0 ? sampling_h : static_cast<int64_t>(std::ceil(bin_h));
    const float step_w = bin_w / static_cast<float>(n_w), step_h = bin_h / static_cast<float>(n_h);
    for (int64_t i = 0; i < a.out_h; ++i) {
      for (int64_t j = 0; j < a.out_w; ++j) {
        for (int64_t si = 0; si < n_h; ++si) {
          const Tap ty =
              tap(box[1] + bin_h * static_cast<float>(i) + step_h * (static_cast<float>(si) + 0.5f),
                  height);
          for (int64_t sj = 0; sj < n_w; ++sj) {
            const Tap tx = tap(
                box[0] + bin_w * static_cast<float>(j) + step_w * (static_cast<float>(sj) + 0.5f),
                width);
            const int64_t y0 = ty.lo, y1 = ty.hi, x0 = tx.lo, x1 = tx.hi;
            const float dy = ty.frac, dx = tx.frac;
            for (int64_t c = 0; c < depth; ++c)
              out[i][j][c] += (1 - dy) * ((1 - dx) * image[y0][x0][c] + dx * image[y0][x1][c]) +
                              dy * ((1 - dx) * image[y1][x0][c] + dx * image[y1][x1][c]);
          }
        }
        for (int64_t c = 0; c < depth; ++c) out[i][j][c] /= static_cast<float>(n_h * n_w);
      }
    }
  });
}

// ROI_POOLING: the box's corners are rounded (half away from zero) to feature
// map cells; the box spans (x2 - x1 + 1) x (y2 - y1 + 1) cells (at least 1),
// divided into out_h x out_w bins [floor(start), ceil(end)) clipped to the
// map; each output is its bin's maximum (0, the zero point when quantized,
// for an empty bin).
void roi_pooling(ExecContext& ctx) {
  roi_kernel(ctx, 7, [](const RoiArgs& a, const Map& image, const Box& box, Map out) {
    const int64_t height = image.size(0), width = image.size(1), depth = image.size(2);
    const int64_t x1 = std::lround(box[0]), y1 = std::lround(box[1]);
    const int64_t x2 = std::lround(box[2]), y2 = std::lround(box[3]);
    const float bin_w =
        static_cast<float>(std::max<int64_t>(x2 - x1 + 1, 1)) / static_cast<float>(a.out_w);
    const float bin_h =
        static_cast<float>(std::max<int64_t>(y2 - y1 + 1, 1)) / static_cast<float>(a.out_h);
    auto span = [](float bin, int64_t k, int64_t start, int64_t size) {
      const float lo = bin * static_cast<float>(k) + static_cast<float>(start);
      const float hi = bin * static_cast<float>(k + 1) + static_cast<float>(start);
      return std::pair<int64_t, int64_t>(std::min(static_cast<int64_t>(std::floor(lo)), size),
                                         std::min(static_cast<int64_t>(std::ceil(hi)), size));
    };
    for (int64_t i = 0; i < a.out_h; ++i) {
      const auto [h0, h1] = span(bin_h, i, y1, height);
      for (int64_t j = 0; j < a.out_w; ++j) {
        const auto [w0, w1] = span(bin_w, j, x1, width);
        if (h0 >= h1 || w0 >= w1) continue;
        for (int64_t c = 0; c < depth; ++c) {
          float best = image[h0][w0][c];
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w) best = std::max(best, image[h][w][c]);
          out[i][j][c] = best;
        }
      }
    }
  });
}

// ---- HEATMAP_MAX_KEYPOINT: heatmaps [K, size, size, keypoints] (NCHW: [K,
// keypoints, size, size]), boxes [K, 4], layout -> scores [K, keypoints],
// keypoints [K, keypoints, 2] (x, y). Per heatmap: its maximum (the first in
// row-major order, as Android's reference scans), refined by the quadratic
// Taylor expansion D - b'd + d'Ad / 2 of the 3x3 neighbourhood (mirrored at
// the borders: row -1 reads row 1, row size reads row size - 2), where b is
// the negated gradient and A the Hessian by central differences; d = A^-1 b,
// scaled down to |d| <= 1.5 in both axes, and none when A is singular
// (|det A| < tol * (1 + A00 * A11), tol 1e-5, 1e-3 for TENSOR_FLOAT16, as
// Android's reference). The keypoint is ((max + d + 0.5) / size) of the box.

struct Refined {
  float dx = 0, dy = 0, score = 0;
};

Refined refine_maximum(const float g[3][3], float score, float tol) {
  Refined r;
  r.score = score;
  const float b0 = -(g[1][2] - g[1][0]) / 2.0f, b1 = -(g[2][1] - g[0][1]) / 2.0f;
  const float a00 = g[1][0] - 2.0f * g[1][1] + g[1][2];
  const float a01 = (g[2][2] - g[2][0] - g[0][2] + g[0][0]) / 4.0f;
  const float a11 = g[0][1] - 2.0f * g[1][1] + g[2][1];
  const float diagonal = a00 * a11, det = diagonal - a01 * a01;
  if (std::abs(det) < tol + tol * diagonal) return r;
  float dx = (a11 * b0 - a01 * b1) / det, dy = (a00 * b1 - a01 * b0) / det;
  const float largest = std::max(std::abs(dx), std::abs(dy));
  if (largest > 1.5f) {
    dx *= 1.5f / largest;
    dy *= 1.5f / largest;
  }
  r.dx = dx;
  r.dy = dy;
  r.score = g[1][1] - b0 * dx - b1 * dy +
            ((a00 * dx + a01 * dy) * dx + (a01 * dx + a11 * dy) * dy) / 2.0f;
  return r;
}

void heatmap_max_keypoint(ExecContext& ctx) {
  const bool nchw = ctx.flag(2);
  at::Tensor maps = real_values(ctx.in(0));
  if (maps.dim() != 4) fail(Result::OpFailed, "input 0 (heatmaps) is not 4-D");
  if (nchw) maps = maps.permute({0, 2, 3, 1});
  maps = maps.contiguous();
  const at::Tensor boxes = box_input(ctx, 1);
  const int64_t count = maps.size(0), size = maps.size(1), keypoints = maps.size(3);
  expect_size(maps.size(2), size, "the heatmap width (the heatmaps are square)");
  if (size < 2) fail(Result::OpFailed, "the heatmaps are " + str(size) + " wide; NNAPI needs >= 2");
  expect_size(boxes.size(0), count, "dimension 0 of input 1 (one box per heatmap)");
  const float tol = ctx.in_operand(0).type == OperandType::TensorFloat16 ? 1e-3f : 1e-5f;
  at::Tensor scores = at::empty({count, keypoints}, at::kFloat);
  at::Tensor points = at::empty({count, keypoints, 2}, at::kFloat);
  auto M = maps.accessor<float, 4>();
  auto B = boxes.accessor<float, 2>();
  auto S = scores.accessor<float, 2>();
  auto P = points.accessor<float, 3>();
  auto mirror = [size](int64_t k) { return k < 0 ? 1 : (k >= size ? size - 2 : k); };
  for (int64_t n = 0; n < count; ++n) {
    if (!(B[n][0] <= B[n][2] && B[n][1] <= B[n][3]))
      fail(Result::OpFailed, "box " + str(n) + " has x1 > x2 or y1 > y2");
    for (int64_t k = 0; k < keypoints; ++k) {
      int64_t best = 0;
      for (int64_t p = 1; p < size * size; ++p)
        if (M[n][p / size][p % size][k] > M[n][best / size][best % size][k]) best = p;
      const int64_t y = best / size, x = best % size;
      float grid[3][3];
      for (int64_t dy = -1; dy <= 1; ++dy)
        for (int64_t dx = -1; dx <= 1; ++dx)
          grid[dy + 1][dx + 1] = M[n][mirror(y + dy)][mirror(x + dx)][k];
      const Refined r = refine_maximum(grid, M[n][y][x][k], tol);
      const float size_f = static_cast<float>(size);
      S[n][k] = r.score;
      P[n][k][0] = (static_cast<float>(x) + r.dx + 0.5f) / size_f * (B[n][2] - B[n][0]) + B[n][0];
      P[n][k][1] = (static_cast<float>(y) + r.dy + 0.5f) / size_f * (B[n][3] - B[n][1]) + B[n][1];
    }
  }
  ctx.set_output(0, to_operand(scores, ctx.out_operand(0)));
  ctx.set_output(1, to_operand(points, ctx.out_operand(1)));
}

// ---- BOX_WITH_NMS_LIMIT: scores [R, C], boxes [R, C * 4], batch indices [R]
// (boxes of one image consecutive), score threshold, max detections per image
// (< 0: unlimited), kernel (0 hard, 1 linear, 2 gaussian), IoU threshold,
// sigma, NMS score threshold -> scores [N], boxes [N, 4], classes [N], batch
// indices [N].
//
// Per image and per class but the background class 0, the boxes scoring
// above the score threshold are selected greedily: the highest score is kept,
// and every other candidate's score is multiplied by the kernel of its IoU
// with it (hard: 1 if IoU < threshold else 0; linear: 1 if IoU < threshold
// else 1 - IoU; gaussian: exp(-IoU^2 / sigma)); candidates whose score falls
// below the NMS score threshold are dropped. At most max detections are kept
// per class, then per image the highest-scoring ones; the outputs are ordered
// by image, then class, then score (descending), with the updated scores.
// The order of equal scores follows Android's reference: candidates in box
// order, the first maximum kept, a dropped candidate swapped with the last
// one, stable sorts here where Android's are unstable.

// Descending score order for the sorts: NaN (e.g. a linear-kernel score after
// the IoU of two empty boxes, 0 / 0) ranks below every number, so that the
// order stays a strict weak ordering.
bool higher(float a, float b) { return a > b || (std::isnan(b) && !std::isnan(a)); }

float iou(const float* a, const float* b) {
  const float area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
  const float w = std::max(std::min(a[2], b[2]) - std::max(a[0], b[0]), 0.0f);
  const float h = std::max(std::min(a[3], b[3]) - std::max(a[1], b[1]), 0.0f);
  const float inter = w * h;
  return inter / (area_a + area_b - inter);
}

struct NmsArgs {
  float score_threshold = 0, iou_threshold = 0, sigma = 1, nms_score_threshold = 0;
  int32_t max_detections = -1, kernel = 0;
  float weight(float overlap) const {
    if (kernel == 2) return std::exp(-overlap * overlap / sigma);
    if (overlap < iou_threshold) return 1.0f;
    return kernel == 0 ? 0.0f : 1.0f - overlap;
  }
};

// Greedy NMS over the candidates `select` (indices into `scores`; `box(i)`
// gives candidate i's 4 coordinates), at most `limit` kept (< 0: no limit):
// repeatedly the best candidate (the first of equal scores) is kept and
// `drop(i, overlap)` decides, for each other candidate i, given its IoU with
// the kept one, whether it leaves (it may update scores[i]); a candidate that
// leaves is swapped with the last. Returns the kept ones, best first.
template <typename Box, typename Drop>
std::vector<int64_t> greedy_nms(std::vector<int64_t> select, const float* scores, Box box,
                                int64_t limit, Drop drop) {
  size_t start = 0, end = select.size();
  const size_t most = limit < 0 ? end : static_cast<size_t>(limit);
  while (start < end && start < most) {
    size_t best = start;
    for (size_t i = start + 1; i < end; ++i)
      if (scores[select[i]] > scores[select[best]]) best = i;
    std::swap(select[best], select[start]);
    for (size_t i = start + 1; i < end; ++i)
      if (drop(select[i], iou(box(select[i]), box(select[start]))))
        std::swap(select[i--], select[--end]);
    ++start;
  }
  select.resize(start);
  return select;
}

void box_with_nms_limit(ExecContext& ctx) {
  at::Tensor scores = reals(ctx, 0).clone();
  const at::Tensor boxes = reals(ctx, 1);
  if (scores.dim() != 2 || boxes.dim() != 2)
    fail(Result::OpFailed, "inputs 0 (scores) and 1 (boxes) must be 2-D");
  const int64_t rois = scores.size(0), classes = scores.size(1);
  expect_size(boxes.size(0), rois, "dimension 0 of input 1 (boxes)");
  expect_size(boxes.size(1), classes * 4, "dimension 1 of input 1 (boxes, 4 per class)");
  const std::vector<int32_t> batch = int_values(ctx, 2);
  expect_size(static_cast<int64_t>(batch.size()), rois, "the number of batch indices (input 2)");
  NmsArgs a;
  a.score_threshold = ctx.f32(3);
  a.max_detections = ctx.i32(4);
  a.kernel = ctx.i32(5);
  a.iou_threshold = ctx.f32(6);
  a.sigma = ctx.f32(7);
  a.nms_score_threshold = ctx.f32(8);
  if (a.kernel < 0 || a.kernel > 2)
    fail(Result::OpFailed, "input 5 (NMS kernel) is " + str(a.kernel) +
                               "; NNAPI's kernels are 0 (hard), 1 (linear) and 2 (gaussian)");
  float* score = scores.data_ptr<float>();
  const float* box = boxes.data_ptr<float>();
  for (int64_t r = 0; r < rois * classes; ++r)
    if (!(box[4 * r] <= box[4 * r + 2] && box[4 * r + 1] <= box[4 * r + 3]))
      fail(Result::OpFailed,
           "box " + str(r / classes) + " of class " + str(r % classes) + " has x1 > x2 or y1 > y2");
  std::vector<int64_t> kept;  // indices r * classes + c
  std::vector<int32_t> kept_batch;
  for (int64_t first = 0; first < rois;) {
    int64_t last = first;
    while (last < rois && batch[last] == batch[first]) ++last;
    std::vector<int64_t> image;
    for (int64_t c = 1; c < classes; ++c) {
      std::vector<int64_t> select;
      for (int64_t r = first; r < last; ++r)
        if (score[r * classes + c] > a.score_threshold) select.push_back(r * classes + c);
      const std::vector<int64_t> k = greedy_nms(
          std::move(select), score, [&](int64_t i) { return box + 4 * i; }, a.max_detections,
          [&](int64_t i, float o) {
            score[i] *= a.weight(o);
            return score[i] < a.nms_score_threshold;
          });
      image.insert(image.end(), k.begin(), k.end());
    }
    std::stable_sort(image.begin(), image.end(),
                     [&](int64_t x, int64_t y) { return higher(score[x], score[y]); });
    if (a.max_detections >= 0 && image.size() > static_cast<size_t>(a.max_detections))
      image.resize(static_cast<size_t>(a.max_detections));
    std::stable_sort(image.begin(), image.end(), [&](int64_t x, int64_t y) {
      return x % classes != y % classes ? x % classes < y % classes : higher(score[x], score[y]);
    });
    kept.insert(kept.end(), image.begin(), image.end());
    kept_batch.insert(kept_batch.end(), image.size(), batch[first]);
    first = last;
  }
  const int64_t n = static_cast<int64_t>(kept.size());
  at::Tensor out_scores = at::empty({n}, at::kFloat), out_boxes = at::empty({n, 4}, at::kFloat);
  at::Tensor out_classes = at::empty({n}, at::kInt), out_batch = at::empty({n}, at::kInt);
  for (int64_t k = 0; k < n; ++k) {
    out_scores[k] = score[kept[k]];
    for (int64_t j = 0; j < 4; ++j) out_boxes[k][j] = box[4 * kept[k] + j];
    out_classes[k] = static_cast<int32_t>(kept[k] % classes);
    out_batch[k] = kept_batch[k];
  }
  ctx.set_output(0, to_operand(out_scores, ctx.out_operand(0)));
  // The boxes are copied: the stored values of a quantized input as they are.
  const Value& in_boxes = ctx.in(1);
  if (in_boxes.type == OperandType::TensorQuant16Asymm) {
    at::Tensor stored = in_boxes.t.reshape({rois * classes, 4});
    at::Tensor index = at::tensor(std::vector<int64_t>(kept.begin(), kept.end()), at::kLong);
    ctx.set_output(1, stored.index_select(0, index).contiguous());
  } else {
    ctx.set_output(1, to_operand(out_boxes, ctx.out_operand(1)));
  }
  ctx.set_output(2, out_classes);
  ctx.set_output(3, out_batch);
}

// ---- GENERATE_PROPOSALS: scores [B, H, W, A] (NCHW [B, A, H, W]), deltas
// [B, H, W, A * 4] (NCHW [B, A * 4, H, W]), anchors [A, 4], image sizes [B,
// 2] (height, width), height stride, width stride, pre-NMS limit, post-NMS
// limit, IoU threshold, minimum size, layout -> scores [N], boxes [N, 4],
// batch indices [N].
//
// Per image: the anchor a at cell (h, w) is moved to (w * width stride, h *
// height stride) and transformed by its deltas as AXIS_ALIGNED_BBOX_TRANSFORM
// does; the pre-NMS limit (when > 0) keeps the best-scoring ones; boxes not
// wider and higher than the minimum size, or whose centre is not inside the
// image, leave; hard NMS (IoU >= threshold leaves) keeps at most the post-NMS
// limit (< 0: no limit), best first. Candidates are in (h, w, a) order; the
// pre-NMS sort is stable here (Android's is not), which decides only ties.

void generate_proposals(ExecContext& ctx) {
  const bool nchw = ctx.flag(10);
  auto nhwc = [&](size_t i) {
    at::Tensor t = real_values(ctx.in(i));
    if (t.dim() != 4) fail(Result::OpFailed, "input " + str(i) + " is not 4-D");
    return (nchw ? t.permute({0, 2, 3, 1}) : t).contiguous();
  };
  const at::Tensor scores = nhwc(0), deltas = nhwc(1);
  const at::Tensor anchors = box_input(ctx, 2), info = reals(ctx, 3);
  const int64_t images = scores.size(0), cells = scores.size(1) * scores.size(2),
                count = anchors.size(0);
  expect_size(scores.size(3), count, "the number of anchors of input 0");
  for (int64_t d = 0; d < 3; ++d)
    expect_size(deltas.size(d), scores.size(d), "dimension " + str(d) + " of input 1 (deltas)");
  expect_size(deltas.size(3), count * 4, "the deltas per cell of input 1 (4 per anchor)");
  expect_size(info.size(0), images, "dimension 0 of input 3 (image sizes)");
  expect_size(info.size(1), 2, "dimension 1 of input 3 (image sizes)");
  const float stride_h = ctx.f32(4), stride_w = ctx.f32(5);
  const int32_t pre = ctx.i32(6), post = ctx.i32(7);
  const float iou_threshold = ctx.f32(8), min_size = ctx.f32(9);
  const int64_t per_image = cells * count, width = scores.size(2);
  std::vector<float> anchored(static_cast<size_t>(per_image) * 4), moved(anchored.size());
  const float* A = anchors.data_ptr<float>();
  for (int64_t k = 0; k < per_image; ++k) {
    const int64_t cell = k / count, a = k % count;
    const float dx = static_cast<float>(cell % width) * stride_w;
    const float dy = static_cast<float>(cell / width) * stride_h;
    for (int64_t j = 0; j < 4; ++j) anchored[4 * k + j] = A[4 * a + j] + (j % 2 == 0 ? dx : dy);
  }
  std::vector<float> out_scores, out_boxes;
  std::vector<int32_t> out_batch;
  const float* I = info.data_ptr<float>();
  for (int64_t b = 0; b < images; ++b) {
    const float* S = scores.data_ptr<float>() + b * per_image;
    const float* D = deltas.data_ptr<float>() + b * per_image * 4;
    const float height = I[2 * b], image_w = I[2 * b + 1];
    for (int64_t k = 0; k < per_image; ++k)
      transform_box(&anchored[4 * k], D + 4 * k, height, image_w, &moved[4 * k]);
    std::vector<int64_t> select(static_cast<size_t>(per_image));
    for (int64_t k = 0; k < per_image; ++k) select[k] = k;
    if (pre > 0 && pre < per_image) {
      std::stable_sort(select.begin(), select.end(),
                       [&](int64_t x, int64_t y) { return higher(S[x], S[y]); });
      select.resize(static_cast<size_t>(pre));
    }
    std::vector<int64_t> kept;
    for (int64_t k : select) {
      const float* m = &moved[4 * k];
      const float w = m[2] - m[0], h = m[3] - m[1];
      if (w > min_size && h > min_size && m[0] + w / 2 < image_w && m[1] + h / 2 < height)
        kept.push_back(k);
    }
    kept = greedy_nms(
        std::move(kept), S, [&](int64_t i) { return &moved[4 * i]; }, post,
        [&](int64_t, float o) { return o >= iou_threshold; });
    for (int64_t k : kept) {
      out_scores.push_back(S[k]);
      out_boxes.insert(out_boxes.end(), &moved[4 * k], &moved[4 * k] + 4);
      out_batch.push_back(static_cast<int32_t>(b));
    }
  }
  const int64_t n = static_cast<int64_t>(out_scores.size());
  ctx.set_output(0, to_operand(at::tensor(out_scores, at::kFloat), ctx.out_operand(0)));
  ctx.set_output(1,
                 to_operand(at::tensor(out_boxes, at::kFloat).reshape({n, 4}), ctx.out_operand(1)));
  ctx.set_output(2, at::tensor(out_batch, at::kInt));
}

// ---- DETECTION_POSTPROCESSING: scores [B, A, C] (class 0 the background),
// deltas [B, A, L >= 4] (dy, dx, dh, dw first), anchors [A, 4] (centre y,
// centre x, h, w), scales y, x, h, w, regular NMS?, max detections, max
// classes per detection, max detections per class, score threshold, IoU
// threshold, background in label? -> scores [B, D], boxes [B, D, 4] (y1, x1,
// y2, x2), classes [B, D], detections [B]; D = max detections for regular
// NMS, max detections * max classes per detection for the fast one (as
// Android's reference sizes them). Unused rows are zero.
//
// Each anchor's box: centre + anchor size * (dy / scale y, dx / scale x),
// size * exp(dh / scale h, dw / scale w). Regular NMS: per class but 0, the
// anchors scoring above the threshold, hard NMS (IoU >= threshold leaves) of
// at most max detections per class, then the best max detections of all
// classes, best first. Fast: per anchor its best score over the classes but
// 0; the anchors above the threshold, hard NMS of at most max detections;
// each kept anchor gives its best min(C - 1, max classes per detection)
// classes, best first. A class is reported as c - 1, or c when the
// background is in the label map. Equal scores keep index order (stable
// sorts; Android's are not).

void detection_postprocessing(ExecContext& ctx) {
  const at::Tensor scores = reals(ctx, 0), deltas = reals(ctx, 1), anchors = box_input(ctx, 2);
  if (scores.dim() != 3 || deltas.dim() != 3)
    fail(Result::OpFailed, "inputs 0 (scores) and 1 (deltas) must be 3-D");
  const int64_t batches = scores.size(0), count = scores.size(1), classes = scores.size(2);
  expect_size(deltas.size(0), batches, "dimension 0 of input 1 (deltas)");
  expect_size(deltas.size(1), count, "dimension 1 of input 1 (deltas, one row per anchor)");
  expect_size(anchors.size(0), count, "dimension 0 of input 2 (anchors)");
  const int64_t encoding = deltas.size(2);
  const float scale_y = ctx.f32(3), scale_x = ctx.f32(4), scale_h = ctx.f32(5),
              scale_w = ctx.f32(6);
  const bool regular = ctx.flag(7);
  const int32_t max_detections = ctx.i32(8), max_classes = ctx.i32(9), per_class = ctx.i32(10);
  const float score_threshold = ctx.f32(11), iou_threshold = ctx.f32(12);
  const int32_t label_offset = ctx.flag(13) ? 0 : 1;
  if (classes < 2 || encoding < 4 || max_detections < 1 || (regular && per_class < 1) ||
      (!regular && max_classes < 1))
    fail(Result::OpFailed,
         "DETECTION_POSTPROCESSING needs 2 classes or more, 4 deltas or more per anchor, and "
         "detection limits >= 1");
  const int64_t per_anchor = std::min<int64_t>(classes - 1, max_classes);
  const int64_t slots = regular ? max_detections : int64_t{max_detections} * max_classes;
  at::Tensor out_scores = at::zeros({batches, slots}, at::kFloat);
  at::Tensor out_boxes = at::zeros({batches, slots, 4}, at::kFloat);
  at::Tensor out_classes = at::zeros({batches, slots}, at::kInt);
  at::Tensor out_count = at::zeros({batches}, at::kInt);
  auto OS = out_scores.accessor<float, 2>();
  auto OB = out_boxes.accessor<float, 3>();
  auto OC = out_classes.accessor<int32_t, 2>();
  const float* A = anchors.data_ptr<float>();
  std::vector<float> boxes(static_cast<size_t>(count) * 4);
  auto drop = [&](int64_t, float o) { return o >= iou_threshold; };
  for (int64_t b = 0; b < batches; ++b) {
    const float* S = scores.data_ptr<float>() + b * count * classes;
    const float* D = deltas.data_ptr<float>() + b * count * encoding;
    for (int64_t a = 0; a < count; ++a) {
      const float* an = A + 4 * a;
      const float* d = D + a * encoding;
      const float y = an[0] + an[2] * d[0] / scale_y, x = an[1] + an[3] * d[1] / scale_x;
      const float half_h = an[2] * std::exp(d[2] / scale_h) * 0.5f;
      const float half_w = an[3] * std::exp(d[3] / scale_w) * 0.5f;
      const float corners[4] = {y - half_h, x - half_w, y + half_h, x + half_w};
      std::copy(corners, corners + 4, &boxes[4 * a]);
    }
    int64_t n = 0;
    auto emit = [&](float score, int64_t anchor, int64_t cls) {
      OS[b][n] = score;
      for (int64_t j = 0; j < 4; ++j) OB[b][n][j] = boxes[4 * anchor + j];
      OC[b][n] = static_cast<int32_t>(cls - label_offset);
      ++n;
    };
    if (regular) {
      std::vector<int64_t> kept;  // anchor * classes + class
      for (int64_t c = 1; c < classes; ++c) {
        std::vector<int64_t> select;
        for (int64_t a = 0; a < count; ++a)
          if (S[a * classes + c] > score_threshold) select.push_back(a * classes + c);
        const std::vector<int64_t> k = greedy_nms(
            std::move(select), S, [&](int64_t i) { return &boxes[4 * (i / classes)]; }, per_class,
            drop);
        kept.insert(kept.end(), k.begin(), k.end());
      }
      std::stable_sort(kept.begin(), kept.end(),
                       [&](int64_t x, int64_t y) { return higher(S[x], S[y]); });
      if (kept.size() > static_cast<size_t>(max_detections))
        kept.resize(static_cast<size_t>(max_detections));
      for (int64_t k : kept) emit(S[k], k / classes, k % classes);
    } else {
      std::vector<float> best(static_cast<size_t>(count));
      std::vector<int64_t> select;
      for (int64_t a = 0; a < count; ++a) {
        best[a] = *std::max_element(S + a * classes + 1, S + (a + 1) * classes);
        if (best[a] > score_threshold) select.push_back(a);
      }
      const std::vector<int64_t> kept = greedy_nms(
          std::move(select), best.data(), [&](int64_t i) { return &boxes[4 * i]; }, max_detections,
          drop);
      for (int64_t a : kept) {
        std::vector<int64_t> order;
        for (int64_t c = 1; c < classes; ++c) order.push_back(c);
        const float* row = S + a * classes;
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t x, int64_t y) { return higher(row[x], row[y]); });
        for (int64_t c = 0; c < per_anchor; ++c) emit(row[order[c]], a, order[c]);
      }
    }
    out_count[b] = static_cast<int32_t>(n);
  }
  ctx.set_output(0, to_operand(out_scores, ctx.out_operand(0)));
  ctx.set_output(1, to_operand(out_boxes, ctx.out_operand(1)));
  ctx.set_output(2, out_classes);
  ctx.set_output(3, out_count);
}

}  // namespace

void add_detection_kernels(std::vector<OpKernel>& t) {
  t.push_back(
      {Op::AxisAlignedBboxTransform, "AXIS_ALIGNED_BBOX_TRANSFORM", axis_aligned_bbox_transform});
  t.push_back({Op::RoiAlign, "ROI_ALIGN", roi_align});
  t.push_back({Op::RoiPooling, "ROI_POOLING", roi_pooling});
  t.push_back({Op::HeatmapMaxKeypoint, "HEATMAP_MAX_KEYPOINT", heatmap_max_keypoint});
  t.push_back({Op::BoxWithNmsLimit, "BOX_WITH_NMS_LIMIT", box_with_nms_limit});
  t.push_back({Op::GenerateProposals, "GENERATE_PROPOSALS", generate_proposals});
  t.push_back({Op::DetectionPostprocessing, "DETECTION_POSTPROCESSING", detection_postprocessing});
}

}  // namespace nnrt

// Rules of NeuralNetworks.h for the detection operations of feature level 3
// (Android 10): AXIS_ALIGNED_BBOX_TRANSFORM, ROI_ALIGN, ROI_POOLING,
// HEATMAP_MAX_KEYPOINT, BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS and
// DETECTION_POSTPROCESSING.
//
// Boxes are [num_boxes, 4] tensors of the float type of the operation's
// main input, or TENSOR_QUANT16_ASYMM with scale 0.125 and zero point 0 when
// that input is TENSOR_QUANT8_ASYMM; batch indices a 1-D TENSOR_INT32 of
// num_boxes entries. num_boxes may be 0 (a zero-sized tensor) where
// NeuralNetworks.h says so. Scalar ratios are FLOAT16 for a TENSOR_FLOAT16
// operation, as Android's reference validation requires, FLOAT32 otherwise.
#include "validate/rule_context.h"

namespace nnapi_validate {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// The box type that goes with a main input of type `main`.
T box_type(T main) { return main == T::TensorQuant8Asymm ? T::TensorQuant16Asymm : main; }

constexpr float kBoxScale = 0.125f;

// A TENSOR_QUANT16_ASYMM box operand (input i, or output i when `output`)
// has scale 0.125 and zero point 0.
void box_quant(const Check& c, size_t i, bool output) {
  const Operand& o = output ? c.out(i) : c.in(i);
  if (o.type != T::TensorQuant16Asymm) return;
  if (o.scale != kBoxScale || o.zero_point != 0)
    c.fail(Rule::Quantization, std::string(output ? "output " : "input ") + str(i) +
                                   " (boxes) has scale " + std::to_string(o.scale) +
                                   " and zero point " + str(o.zero_point) + "; NNAPI's " +
                                   c.name() + " takes TENSOR_QUANT16_ASYMM boxes with scale " +
                                   "0.125 and zero point 0");
}

// Input i holds boxes for the main input 0: its type, rank 2, quantization.
void box_input(const Check& c, size_t i) {
  c.input_type(i, {box_type(c.type(0))});
  c.input_rank(i, 2, 2);
  box_quant(c, i, false);
}

// Input i holds the batch index of each of the boxes of input `boxes`.
void batch_input(const Check& c, size_t i, size_t boxes) {
  c.input_type(i, {T::TensorInt32});
  c.input_rank(i, 1, 1);
  if (!c.shapes()) return;
  c.equal_dims(c.dim(i, 0), c.dim(boxes, 0),
               "input " + str(static_cast<int64_t>(i)) + " has one batch index per box of input " +
                   str(static_cast<int64_t>(boxes)) + ", but their counts differ");
}

// Dimension 1 of the boxes of input i is 4.
void four_coordinates(const Check& c, size_t i) {
  const int64_t n = c.dim(i, 1);
  if (n >= 0 && n != 4)
    c.fail(Rule::Shape, "input " + str(static_cast<int64_t>(i)) + " (boxes) has " + str(n) +
                            " coordinates per box; NNAPI needs 4 (x1, y1, x2, y2)");
}

// The counts, input 0's type (TENSOR_FLOAT32, TENSOR_FLOAT16 or
// TENSOR_QUANT8_ASYMM) and rank, and input 1 holding boxes for it.
void main_and_boxes(Check& c, size_t inputs, size_t outputs, size_t rank) {
  c.input_count({inputs});
  c.output_count(outputs);
  typed(c, {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}, {T::TensorQuant8Asymm, 3}});
  c.input_rank(0, rank, rank);
  box_input(c, 1);
}

// Outputs 0 and 1 of an NMS: the kept scores (1-D, input 0's type and
// quantization) and their boxes ([N, 4] of the box type).
void selected_boxes_outputs(const Check& c) {
  c.output_same_type(0, 0);
  c.same_quant(0, 0);
  c.output_rank(0, 1, 1);
  c.output_type(1, {box_type(c.type(0))});
  c.output_rank(1, 2, 2);
  box_quant(c, 1, true);
}

// ---- AXIS_ALIGNED_BBOX_TRANSFORM: boxes [R, 4], deltas [R, C * 4], batch
// indices [R], image sizes [B, 2] -> [R, C * 4] of the boxes' type.

void axis_aligned_bbox_transform_rule(Check& c) {
  c.input_count({4});
  c.output_count(1);
  typed(c, {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}, {T::TensorQuant16Asymm, 3}});
  c.input_rank(0, 2, 2);
  box_quant(c, 0, false);
  c.input_type(1, {c.type(0) == T::TensorQuant16Asymm ? T::TensorQuant8Asymm : c.type(0)});
  c.input_rank(1, 2, 2);
  c.input_type(2, {T::TensorInt32});
  c.input_rank(2, 1, 1);
  c.same_type(3, 0);
  c.input_rank(3, 2, 2);
  box_quant(c, 3, false);
  c.output_same_type(0, 0);
  c.output_rank(0, 2, 2);
  box_quant(c, 0, true);
  if (!c.shapes()) return;
  four_coordinates(c, 0);
  const int64_t rois = c.dim(0, 0), coords = c.dim(1, 1);
  c.equal_dims(c.dim(1, 0), rois,
               "input 1 has one row of deltas per box of input 0, but their "
               "counts differ");
  if (coords >= 0 && coords % 4 != 0)
    c.fail(Rule::Shape,
           "input 1 (deltas) has " + str(coords) + " values per box; NNAPI needs 4 per class");
  batch_input(c, 2, 0);
  const int64_t info = c.dim(3, 1);
  if (info >= 0 && info != 2)
    c.fail(Rule::Shape, "input 3 (image sizes) has " + str(info) +
                            " values per image; NNAPI needs 2 (height, width)");
  c.set_output(0, Shape::of({rois, coords}));
}

// ---- ROI_ALIGN (10 inputs) and ROI_POOLING (8 inputs).

void roi_rule(Check& c, size_t layout) {
  main_and_boxes(c, layout + 1, 1, 4);
  batch_input(c, 2, 1);
  for (size_t i : {3, 4}) c.input_type(i, {T::Int32});
  for (size_t i : {5, 6}) float_scalar_for_input(c, i);
  for (size_t i = 7; i < layout; ++i) c.input_type(i, {T::Int32});
  c.input_type(layout, {T::Bool});
  c.output_same_type(0, 0);
  c.output_rank(0, 4, 4);
  if (!c.full()) return;
  c.at_least(3, 1, "output height");
  c.at_least(4, 1, "output width");
  for (size_t i : {5, 6}) {
    if (auto ratio = c.f32(i); ratio && !(*ratio > 0))
      c.fail(Rule::Parameter, "input " + str(static_cast<int64_t>(i)) + " (ratio) is " +
                                  std::to_string(*ratio) + "; NNAPI needs it > 0");
  }
  for (size_t i = 7; i < layout; ++i) c.at_least(i, 0, "sampling points");
  const std::optional<bool> nchw = c.flag(layout);
  if (!c.shapes()) return;
  four_coordinates(c, 1);
  const auto out_h = c.i32(3), out_w = c.i32(4);
  if (!nchw || !out_h || !out_w) return c.set_output(0, Shape::unknown_of_rank(4));
  const int64_t rois = c.dim(1, 0), depth = c.dim(0, *nchw ? 1 : 3);
  c.set_output(0, *nchw ? Shape::of({rois, depth, *out_h, *out_w})
                        : Shape::of({rois, *out_h, *out_w, depth}));
}

void roi_align_rule(Check& c) { roi_rule(c, 9); }

void roi_pooling_rule(Check& c) {
  roi_rule(c, 7);
  c.same_quant(0, 0);
}

// ---- HEATMAP_MAX_KEYPOINT: heatmaps [K, size, size, keypoints] (NCHW [K,
// keypoints, size, size]), boxes [K, 4], layout -> scores [K, keypoints]
// (quant8: its own scale and zero point), keypoints [K, keypoints, 2] of the
// boxes' type.

void heatmap_max_keypoint_rule(Check& c) {
  main_and_boxes(c, 3, 2, 4);
  c.input_type(2, {T::Bool});
  c.output_same_type(0, 0);
  c.output_rank(0, 2, 2);
  c.output_type(1, {box_type(c.type(0))});
  c.output_rank(1, 3, 3);
  box_quant(c, 1, true);
  if (!c.full()) return;
  const std::optional<bool> nchw = c.flag(2);
  if (!c.shapes()) return;
  four_coordinates(c, 1);
  const int64_t boxes = c.dim(0, 0);
  c.equal_dims(c.dim(1, 0), boxes,
               "input 1 has one box per heatmap of input 0, but their counts differ");
  if (!nchw) {
    c.set_output(0, Shape::unknown_of_rank(2));
    return c.set_output(1, Shape::unknown_of_rank(3));
  }
  const int64_t h = c.dim(0, *nchw ? 2 : 1), w = c.dim(0, *nchw ? 3 : 2);
  const int64_t keypoints = c.dim(0, *nchw ? 1 : 3);
  c.equal_dims(h, w, "the heatmaps of input 0 must be square");
  if (h >= 0 && h < 2)
    c.fail(Rule::Shape, "the heatmaps of input 0 are " + str(h) + " wide; NNAPI needs >= 2");
  c.set_output(0, Shape::of({boxes, keypoints}));
  c.set_output(1, Shape::of({boxes, keypoints, 2}));
}

// ---- BOX_WITH_NMS_LIMIT: scores [R, C], boxes [R, C * 4], batch indices
// [R], score threshold, max detections, kernel (0 to 2), IoU threshold,
// sigma, NMS score threshold -> scores [N], boxes [N, 4], classes [N], batch
// indices [N]; N is known only when the operation runs.

void box_with_nms_limit_rule(Check& c) {
  main_and_boxes(c, 9, 4, 2);
  batch_input(c, 2, 0);
  for (size_t i : {3, 6, 7, 8}) float_scalar_for_input(c, i);
  for (size_t i : {4, 5}) c.input_type(i, {T::Int32});
  selected_boxes_outputs(c);
  for (size_t o : {2, 3}) {
    c.output_type(o, {T::TensorInt32});
    c.output_rank(o, 1, 1);
  }
  if (!c.full()) return;
  if (auto kernel = c.i32(5); kernel && (*kernel < 0 || *kernel > 2))
    c.fail(Rule::Parameter, "input 5 (NMS kernel) is " + str(*kernel) +
                                "; NNAPI's kernels are 0 (hard), 1 (linear) and 2 (gaussian)");
  if (auto sigma = c.f32(7); sigma && c.i32(5) == 2 && !(*sigma > 0))
    c.fail(Rule::Parameter,
           "input 7 (sigma) is " + std::to_string(*sigma) + "; the gaussian kernel needs it > 0");
  if (!c.shapes()) return;
  const int64_t rois = c.dim(0, 0), classes = c.dim(0, 1);
  c.equal_dims(c.dim(1, 0), rois,
               "input 1 has one row of boxes per row of scores of input 0, but their counts "
               "differ");
  c.equal_dims(c.dim(1, 1), classes < 0 ? -1 : classes * 4,
               "input 1 needs 4 coordinates per class of input 0, but its size differs from 4 "
               "times the number of classes");
  c.set_output(0, Shape::unknown_of_rank(1));
  c.set_output(1, Shape::of({-1, 4}));
  c.set_output(2, Shape::unknown_of_rank(1));
  c.set_output(3, Shape::unknown_of_rank(1));
}

// ---- GENERATE_PROPOSALS: scores [B, H, W, A] (NCHW [B, A, H, W]), deltas
// [B, H, W, A * 4], anchors [A, 4] (TENSOR_QUANT16_SYMM of scale 0.125 for
// quant8), image sizes [B, 2], strides, pre- and post-NMS limits, IoU
// threshold, minimum size, layout -> scores [N], boxes [N, 4], batch indices
// [N]; N is known only when the operation runs.

void generate_proposals_rule(Check& c) {
  c.input_count({11});
  c.output_count(3);
  typed(c, {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}, {T::TensorQuant8Asymm, 3}});
  const bool quant = c.type(0) == T::TensorQuant8Asymm;
  c.input_rank(0, 4, 4);
  c.input_type(1, {c.type(0)});
  c.input_rank(1, 4, 4);
  c.input_type(2, {quant ? T::TensorQuant16Symm : c.type(0)});
  c.input_rank(2, 2, 2);
  if (quant && c.in(2).scale != kBoxScale)
    c.fail(Rule::Quantization, "input 2 (anchors) has scale " + std::to_string(c.in(2).scale) +
                                   "; NNAPI's GENERATE_PROPOSALS takes TENSOR_QUANT16_SYMM anchors "
                                   "with scale 0.125");
  box_input(c, 3);
  for (size_t i : {4, 5, 8, 9}) float_scalar_for_input(c, i);
  for (size_t i : {6, 7}) c.input_type(i, {T::Int32});
  c.input_type(10, {T::Bool});
  selected_boxes_outputs(c);
  c.output_type(2, {T::TensorInt32});
  c.output_rank(2, 1, 1);
  if (!c.full()) return;
  for (size_t i : {4, 5}) {
    if (auto stride = c.f32(i); stride && !(*stride > 0))
      c.fail(Rule::Parameter, "input " + str(static_cast<int64_t>(i)) + " (stride) is " +
                                  std::to_string(*stride) + "; NNAPI needs it > 0");
  }
  const std::optional<bool> nchw = c.flag(10);
  if (!c.shapes()) return;
  four_coordinates(c, 2);
  if (c.dim(3, 1) >= 0 && c.dim(3, 1) != 2)
    c.fail(Rule::Shape, "input 3 (image sizes) has " + str(c.dim(3, 1)) +
                            " values per image; NNAPI needs 2 (height, width)");
  c.equal_dims(c.dim(3, 0), c.dim(0, 0),
               "input 3 has one image size per image of input 0, but their counts differ");
  if (nchw) {
    const size_t anchors = *nchw ? 1 : 3;
    c.equal_dims(c.dim(0, anchors), c.dim(2, 0),
                 "input 0 has a score per anchor of input 2, but their counts differ");
    const int64_t a = c.dim(2, 0);
    c.equal_dims(c.dim(1, anchors), a < 0 ? -1 : 4 * a,
                 "input 1 needs 4 deltas per anchor of input 2");
    for (size_t d = 0; d < 4; ++d)
      if (d != anchors)
        c.equal_dims(c.dim(1, d), c.dim(0, d), "inputs 0 and 1 differ in batch or cells");
  }
  c.set_output(0, Shape::unknown_of_rank(1));
  c.set_output(1, Shape::of({-1, 4}));
  c.set_output(2, Shape::unknown_of_rank(1));
}

// ---- DETECTION_POSTPROCESSING (float32, float16): scores [B, A, C], deltas
// [B, A, L >= 4], anchors [A, 4], 4 scales (> 0), regular NMS?, max
// detections (> 0), max classes per detection, max detections per class,
// score threshold (>= 0), IoU threshold (>= 0), background in label? ->
// scores [B, D], boxes [B, D, 4], classes [B, D], detections [B]; D = max
// detections (regular NMS) or max detections * max classes per detection.

void detection_postprocessing_rule(Check& c) {
  c.input_count({14});
  c.output_count(4);
  typed(c, {{T::TensorFloat32, 3}, {T::TensorFloat16, 3}});
  c.input_rank(0, 3, 3);
  c.input_type(1, {c.type(0)});
  c.input_rank(1, 3, 3);
  c.input_type(2, {c.type(0)});
  c.input_rank(2, 2, 2);
  for (size_t i : {3, 4, 5, 6, 11, 12}) float_scalar_for_input(c, i);
  for (size_t i : {7, 13}) c.input_type(i, {T::Bool});
  for (size_t i : {8, 9, 10}) c.input_type(i, {T::Int32});
  c.output_same_type(0, 0);
  c.output_rank(0, 2, 2);
  c.output_type(1, {c.type(0)});
  c.output_rank(1, 3, 3);
  c.output_type(2, {T::TensorInt32});
  c.output_rank(2, 2, 2);
  c.output_type(3, {T::TensorInt32});
  c.output_rank(3, 1, 1);
  if (!c.full()) return;
  for (size_t i : {3, 4, 5, 6}) {
    if (auto scale = c.f32(i); scale && !(*scale > 0))
      c.fail(Rule::Parameter, "input " + str(static_cast<int64_t>(i)) + " (scale) is " +
                                  std::to_string(*scale) + "; NNAPI needs it > 0");
  }
  for (size_t i : {11, 12}) {
    if (auto threshold = c.f32(i); threshold && !(*threshold >= 0))
      c.fail(Rule::Parameter, "input " + str(static_cast<int64_t>(i)) + " (threshold) is " +
                                  std::to_string(*threshold) + "; NNAPI needs it >= 0");
  }
  const std::optional<bool> regular = c.flag(7);
  c.at_least(8, 1, "max detections");
  if (regular)
    c.at_least(*regular ? 10 : 9, 1,
               *regular ? "max detections per class" : "max classes per detection");
  if (!c.shapes()) return;
  const int64_t batches = c.dim(0, 0), anchors = c.dim(0, 1), classes = c.dim(0, 2);
  if (classes >= 0 && classes < 2)
    c.fail(Rule::Shape, "input 0 has " + str(classes) +
                            " classes; NNAPI needs 2 or more (class 0 is the background)");
  c.equal_dims(c.dim(1, 0), batches, "inputs 0 and 1 differ in batches");
  c.equal_dims(c.dim(1, 1), anchors,
               "input 1 has deltas per anchor of input 0, but their "
               "counts differ");
  if (c.dim(1, 2) >= 0 && c.dim(1, 2) < 4)
    c.fail(Rule::Shape,
           "input 1 has " + str(c.dim(1, 2)) + " values per box encoding; NNAPI needs 4 or more");
  c.equal_dims(c.dim(2, 0), anchors,
               "input 2 has one anchor per anchor of input 0, but their "
               "counts differ");
  four_coordinates(c, 2);
  const auto max_detections = c.i32(8), max_classes = c.i32(9);
  int64_t slots = -1;
  if (regular && max_detections && (*regular || max_classes))
    slots = *regular ? *max_detections : int64_t{*max_detections} * *max_classes;
  c.set_output(0, Shape::of({batches, slots}));
  c.set_output(1, Shape::of({batches, slots, 4}));
  c.set_output(2, Shape::of({batches, slots}));
  c.set_output(3, Shape::of({batches}));
}

}  // namespace

void add_detection_rules(std::vector<OpRule>& t) {
  t.push_back({nnapi::Op::AxisAlignedBboxTransform, axis_aligned_bbox_transform_rule});
  t.push_back({nnapi::Op::RoiAlign, roi_align_rule});
  t.push_back({nnapi::Op::RoiPooling, roi_pooling_rule});
  t.push_back({nnapi::Op::HeatmapMaxKeypoint, heatmap_max_keypoint_rule});
  t.push_back({nnapi::Op::BoxWithNmsLimit, box_with_nms_limit_rule});
  t.push_back({nnapi::Op::GenerateProposals, generate_proposals_rule});
  t.push_back({nnapi::Op::DetectionPostprocessing, detection_postprocessing_rule});
}

}  // namespace nnapi_validate

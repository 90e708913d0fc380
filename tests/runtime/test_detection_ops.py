#!/usr/bin/env python3
"""NNAPI's detection operations (feature level 3) on the host runtime, through ctypes.

Each case builds NNAPI models by calling libneuralnetworks.so directly (the
Model helper of test_extra_ops.py) and checks the results against

* values computed here by loops over boxes and cells that spell out the
  operation as Android's NeuralNetworks.h describes it (and, for what the
  header leaves open, as Android's reference CPU implementation does it;
  each such fact is named where it is used), and
* the example inputs and expected outputs of Android's own conformance spec
  files (frameworks/ml/nn/runtime/test/specs/V1_2/*.mod.py, Android 10):
  those values are NNAPI's, not this runtime's,

never against values the runtime produced. Quantized results may differ by
one quantum from Android's (its tests allow that much). The validator's
refusals are checked too. The last line is "N passed, M failed"; the exit
status is non-zero on any failure.
"""
import ctypes
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_extra_ops import (BOOL, CODES, F32, I32, T_F32, T_I32, T_Q8, Model,  # noqa: E402
                            _refused, lib, run_cases)

T_F16, F16, T_Q16A, T_Q16S = 8, 10, 12, 7
CODES.update(AXIS_ALIGNED_BBOX_TRANSFORM=41, ROI_ALIGN=81, ROI_POOLING=82, HEATMAP_MAX_KEYPOINT=56,
             BOX_WITH_NMS_LIMIT=44, GENERATE_PROPOSALS=52,
             DETECTION_POSTPROCESSING=47)
DTYPE = {T_F32: torch.float32, T_F16: torch.float16, T_I32: torch.int32, T_Q8: torch.uint8,
         T_Q16A: torch.int16, T_Q16S: torch.int16}
BOX_SCALE = 0.125  # NNAPI's TENSOR_QUANT16_ASYMM boxes: scale 0.125, zero point 0


def f16_scalar(m, value):
    return m.const(F16, torch.tensor(value, dtype=torch.float16), dims=())


def float_scalar(m, code, value):
    """The FLOAT16 scalar for a TENSOR_FLOAT16 operation, FLOAT32 otherwise."""
    return f16_scalar(m, value) if code == T_F16 else m.const(F32, value)


def round_half_away(x):
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def quantize(values, scale, zp, lo, hi):
    return [min(hi, max(lo, round_half_away(v / scale) + zp)) for v in values]


def u16(t):
    """TENSOR_QUANT16_ASYMM storage (int16 bits) as unsigned values."""
    return (t.to(torch.int32) & 0xFFFF).tolist()


def as_storage(code, values, scale=0.0, zp=0):
    """Real values as an input tensor of type `code`."""
    if code == T_Q8:
        return torch.tensor(quantize(values, scale, zp, 0, 255), dtype=torch.uint8)
    if code == T_Q16A:
        q = quantize(values, scale, zp, 0, 65535)
        return torch.tensor([v - 65536 if v > 32767 else v for v in q], dtype=torch.int16)
    return torch.tensor(values, dtype=DTYPE[code])


def reals(code, t, scale=0.0, zp=0):
    flat = t.reshape(-1)
    if code == T_Q16A:
        return [(v - zp) * scale for v in u16(flat)]
    if code == T_Q8:
        return [(v - zp) * scale for v in flat.tolist()]
    return [float(v) for v in flat.tolist()]


def within(got, want, tol, what):
    assert len(got) == len(want), (what, len(got), len(want))
    for k, (g, w) in enumerate(zip(got, want)):
        assert abs(g - w) <= tol(w), (what, k, g, w)


def float_tol(code):
    # Android's tests: float32 1e-5 (we allow 1e-4 absolute for values in the
    # hundreds), float16 and relaxed 5 * 2^-10 (absolute and relative).
    if code == T_F16:
        return lambda w: 5 * 2 ** -10 * (1 + abs(w))
    return lambda w: 1e-4 + 1e-5 * abs(w)


def last_error():
    function, message = ctypes.c_char_p(), ctypes.c_char_p()
    lib.ANeuralNetworksHost_getLastError(ctypes.byref(function), ctypes.byref(message), None)
    return (message.value or b"").decode()


def refusal(build):
    """The message of addOperation's or finish's refusal of the model `build`
    makes; None when the model is accepted."""
    lib.ANeuralNetworksHost_clearLastError()
    return (last_error() or "refused") if _refused(build) else None


def check_refusals(good, bad):
    for build in good:
        assert refusal(build) is None, (build, refusal(build))
    for what, (build, words) in bad.items():
        msg = refusal(build)
        assert msg is not None, f"accepted: {what}"
        for word in words:
            assert word in msg, (what, msg)


# ------------------------------------------------ AXIS_ALIGNED_BBOX_TRANSFORM

def bbox_transform_formula(rois, deltas, batch, info):
    """NeuralNetworks.h: the deltas [dx, dy, dw, dh] of each class move the
    box's centre by (dx * w, dy * h) and scale its size by (exp(dw),
    exp(dh)); the result is clipped to its image [0, width] x [0, height]
    (image sizes are [height, width]). Android's reference takes w = x2 - x1
    and the centre x1 + w / 2 (no + 1)."""
    out = []
    for r, (x1, y1, x2, y2) in enumerate(rois):
        height, width = info[batch[r]]
        w, h = x2 - x1, y2 - y1
        cx, cy = x1 + w / 2, y1 + h / 2
        row = []
        for k in range(0, len(deltas[r]), 4):
            dx, dy, dw, dh = deltas[r][k:k + 4]
            x, y = cx + dx * w, cy + dy * h
            hw, hh = w * math.exp(dw) / 2, h * math.exp(dh) / 2
            row += [min(max(x - hw, 0), width), min(max(y - hh, 0), height),
                    min(max(x + hw, 0), width), min(max(y + hh, 0), height)]
        out.append(row)
    return out


def run_bbox_transform(code, rois, deltas, batch, info, delta_q=(0.0, 0)):
    box_q = (BOX_SCALE, 0) if code == T_Q16A else (0.0, 0)
    dcode = T_Q8 if code == T_Q16A else code
    m = Model()
    flat = [v for row in rois for v in row]
    ins = [m.input(code, (len(rois), 4), *box_q),
           m.input(dcode, (len(rois), len(deltas[0])), *delta_q),
           m.input(T_I32, (len(rois),)),
           m.input(code, (len(info), 2), *box_q)]
    o = m.output(code, (0, 0), *box_q)
    m.op("AXIS_ALIGNED_BBOX_TRANSFORM", ins, [o])
    tensors = [as_storage(code, flat, *box_q).reshape(len(rois), 4),
               as_storage(dcode, [v for row in deltas for v in row], *delta_q).reshape(
                   len(rois), -1),
               torch.tensor(batch, dtype=torch.int32),
               as_storage(code, [v for row in info for v in row], *box_q).reshape(-1, 2)]
    got = m.run(tensors, [DTYPE[code]])[0]
    assert list(got.shape) == [len(rois), len(deltas[0])], got.shape
    return got


# Android's axis_aligned_bbox_transform.mod.py (Android 10), TEST 1.
ABT_ROIS = [[100, 150, 400, 430], [120, 60, 122, 61], [10, 20, 20, 50], [50, 120, 150, 250],
            [400, 100, 1000, 2000]]
ABT_DELTAS = [[0.2, 0.2, 0.1, 0.1, 0.3, -0.1, -0.2, 0.1],
              [-0.5, 0.2, 0.2, -0.5, -0.1, -0.1, 2.5, 3],
              [-0.5, -0.5, 1, 1, 0.5, 0.5, -1.5, -1.2],
              [0.2, 0.2, -3, -4, 1, -0.5, 0.3, 0.5],
              [0.3, -0.2, 1.1, -0.8, 0.1, 0.05, -0.5, -0.5]]
ABT_BATCH = [0, 1, 2, 2, 3]
ABT_INFO = [[512, 512], [128, 256], [256, 256], [1024, 512]]
ABT_OUT = [144.22435, 191.276062, 475.775635, 500.723938, 217.190384, 107.276062, 462.809631,
           416.723938, 118.778594, 60.396736, 121.221406, 61.003266, 108.617508, 50.357232,
           132.982498, 70.442772, 0.0, 0.0, 23.59140714, 60.77422571, 18.88435, 45.48208571,
           21.11565, 54.51791429, 117.51063714, 209.80948286, 122.48935143, 212.19050857,
           132.50705143, 12.83312286, 255.99999571, 227.16685714, 0.0, 243.1374815, 512.0,
           1024.0, 512.0, 568.7958375, 512.0, 1024.0]
# Its quant8 variation: deltas TENSOR_QUANT8_ASYMM (0.05, 128), boxes and
# image sizes TENSOR_QUANT16_ASYMM (0.125, 0); the expected quantized boxes.
ABT_Q_DELTAS = [132, 132, 130, 130, 134, 126, 124, 130, 118, 132, 132, 118, 126, 126, 178, 188,
                118, 118, 148, 148, 138, 138, 98, 104, 132, 132, 68, 48, 148, 118, 134, 138,
                134, 124, 150, 112, 130, 129, 118, 118]
ABT_Q_OUT = [1154, 1530, 3806, 4006, 1738, 858, 3702, 3334, 950, 483, 970, 488, 869, 403, 1064,
             564, 0, 0, 189, 486, 151, 364, 169, 436, 940, 1678, 980, 1698, 1060, 103, 2048,
             1817, 0, 1945, 4096, 8192, 4096, 4550, 4096, 8192]


def case_axis_aligned_bbox_transform_android():
    for code in (T_F32, T_F16):
        got = run_bbox_transform(code, ABT_ROIS, ABT_DELTAS, ABT_BATCH, ABT_INFO)
        within(got.float().reshape(-1).tolist(), ABT_OUT, float_tol(code), code)
    # The quant8 variation (values exact in the quantized types).
    deltas = [[(q - 128) * 0.05 for q in ABT_Q_DELTAS[r * 8:r * 8 + 8]] for r in range(5)]
    got = run_bbox_transform(T_Q16A, ABT_ROIS, deltas, ABT_BATCH, ABT_INFO, (0.05, 128))
    within(u16(got.reshape(-1)), ABT_Q_OUT, lambda w: 1, "quant16")
    # The formula gives Android's values too.
    want = bbox_transform_formula(ABT_ROIS, ABT_DELTAS, ABT_BATCH, ABT_INFO)
    within([v for row in want for v in row], ABT_OUT, float_tol(T_F32), "formula")


def case_axis_aligned_bbox_transform_formula():
    gen = torch.Generator().manual_seed(11)
    info = [[300, 200], [60, 900], [40000, 60000]]
    rois, batch = [], []
    for r in range(9):
        b = r % 3
        h, w = info[b]
        x1, y1 = float(torch.rand(1, generator=gen)) * w * 0.8, float(
            torch.rand(1, generator=gen)) * h * 0.8
        rois.append([x1, y1, x1 + float(torch.rand(1, generator=gen)) * w * 0.5,
                     y1 + float(torch.rand(1, generator=gen)) * h * 0.5])
        batch.append(b)
    deltas = (torch.rand(9, 12, generator=gen) * 2 - 1).tolist()
    for code in (T_F32, T_F16):
        if code == T_F16:  # boxes within float16's range
            ok_rows = [r for r in range(9) if batch[r] != 2]
            r_rois, r_deltas = [rois[r] for r in ok_rows], [deltas[r] for r in ok_rows]
            r_batch, r_info = [batch[r] for r in ok_rows], info[:2]
            r_rois = [[float(torch.tensor(v).half()) for v in row] for row in r_rois]
            r_deltas = [[float(torch.tensor(v).half()) for v in row] for row in r_deltas]
        else:
            r_rois, r_deltas, r_batch, r_info = rois, deltas, batch, info
        got = run_bbox_transform(code, r_rois, r_deltas, r_batch, r_info).float()
        want = bbox_transform_formula(r_rois, r_deltas, r_batch, r_info)
        tol = (lambda w: 2e-3 * (1 + abs(w))) if code == T_F16 else (
            lambda w: 1e-6 * (1 + abs(w)) * 8)
        within(got.reshape(-1).tolist(), [v for row in want for v in row], tol, code)
    # Quantized: boxes beyond 4096 (stored values 32768 to 65535, unsigned).
    q_rois = [[v * 0.125 for v in quantize(row, 0.125, 0, 0, 65535)] for row in rois]
    q_info = [[v * 0.125 for v in quantize(row, 0.125, 0, 0, 65535)] for row in info]
    q_deltas = [[(v - 100) * 0.01 for v in quantize(row, 0.01, 100, 0, 255)] for row in deltas]
    got = u16(run_bbox_transform(T_Q16A, q_rois, q_deltas, batch, q_info, (0.01, 100))
              .reshape(-1))
    want = bbox_transform_formula(q_rois, q_deltas, batch, q_info)
    assert max(got) > 32767, "no box beyond 4096: the unsigned range is not exercised"
    within(got, quantize([v for row in want for v in row], 0.125, 0, 0, 65535),
           lambda w: 1, "quant16")


def case_axis_aligned_bbox_transform_refusals():
    def build(code=T_F32, dcode=None, roi_dims=(2, 4), delta_dims=(2, 8), batch_dims=(2,),
              info_dims=(1, 2), out_dims=(2, 8), box_q=(0.0, 0), out_q=None):
        def b(m):
            d = dcode if dcode is not None else (T_Q8 if code == T_Q16A else code)
            ins = [m.input(code, roi_dims, *box_q), m.input(d, delta_dims, *(
                (0.1, 128) if d == T_Q8 else (0.0, 0))),
                m.input(T_I32, batch_dims), m.input(code, info_dims, *box_q)]
            m.op("AXIS_ALIGNED_BBOX_TRANSFORM", ins,
                 [m.output(code, out_dims, *(out_q or box_q))])
        return b
    q = (0.125, 0)
    good = [build(), build(T_F16), build(T_Q16A, box_q=q)]
    bad = {"quant8 boxes": (build(T_Q8, dcode=T_Q8, box_q=(0.1, 0)), ["input 0", "TENSOR_QUANT8"]),
           "float deltas for quant16 boxes": (build(T_Q16A, dcode=T_F32, box_q=q), ["input 1"]),
           "quant16 boxes of scale 0.25": (build(T_Q16A, box_q=(0.25, 0)), ["0.125"]),
           "quant16 output of zero point 1": (build(T_Q16A, box_q=q, out_q=(0.125, 1)),
                                              ["output 0", "0.125"]),
           "3-D boxes": (build(roi_dims=(2, 4, 1)), ["rank"]),
           "boxes of 5 coordinates": (build(roi_dims=(2, 5)), ["coordinates"]),
           "3 boxes, 2 rows of deltas": (build(roi_dims=(3, 4), batch_dims=(3,), out_dims=(3, 8)),
                                         ["deltas", "counts differ"]),
           "2 boxes, 3 batch indices": (build(batch_dims=(3,)), ["batch index", "counts"]),
           "deltas of 6 values": (build(delta_dims=(2, 6), out_dims=(2, 6)), ["per class"]),
           "image sizes of 3 values": (build(info_dims=(1, 3)), ["height, width"]),
           "wrong output shape": (build(out_dims=(2, 4)), ["output 0", "computes"])}
    check_refusals(good, bad)


def case_axis_aligned_bbox_transform_bad_batch_index():
    # A batch index beyond the image sizes fails at execution (OP_FAILED),
    # naming the box.
    try:
        run_bbox_transform(T_F32, ABT_ROIS[:2], ABT_DELTAS[:2], [0, 4], ABT_INFO)
    except RuntimeError as e:
        assert "compute" in str(e), e
        assert "box 1 has batch index 4" in last_error(), last_error()
        return
    raise AssertionError("a batch index out of range was accepted")


# ------------------------------------------------------------ ROI_ALIGN / ROI_POOLING

def feature_at(x, b, y, z, c):
    return x[b][y][z][c]


def bilinear_tap(pos, size):
    """The rows (columns) a sample at pos interpolates and the second's
    weight; at or beyond the last row, that row alone (Android's reference)."""
    lo = math.floor(pos)
    if lo >= size - 1:
        return size - 1, size - 1, 0.0
    return lo, lo + 1, pos - lo


def roi_align_formula(x, rois, batch, out_h, out_w, h_ratio, w_ratio, s_h, s_w):
    """x: NHWC nested lists. NeuralNetworks.h: each box (scaled by 1 / ratio
    into the feature map) is divided into out_h x out_w bins; each output
    averages sampling points spread evenly in its bin, each a bilinear
    interpolation; sampling 0 = ceil(bin size). Android's reference (for
    what the header leaves open): a box is at least 1 x 1, the points sit
    at the centres of equal sub-bins, and a point at or beyond the last row
    (column) takes that row (column)."""
    height, width, depth = len(x[0]), len(x[0][0]), len(x[0][0][0])
    out = []
    for r, box in enumerate(rois):
        x1, y1, x2, y2 = box[0] / w_ratio, box[1] / h_ratio, box[2] / w_ratio, box[3] / h_ratio
        bw, bh = max(x2 - x1, 1.0) / out_w, max(y2 - y1, 1.0) / out_h
        nw = s_w if s_w > 0 else math.ceil(bw)
        nh = s_h if s_h > 0 else math.ceil(bh)
        cells = []
        for i in range(out_h):
            for j in range(out_w):
                acc = [0.0] * depth
                for si in range(nh):
                    ya, yb, dy = bilinear_tap(y1 + bh * i + bh / nh * (si + 0.5), height)
                    for sj in range(nw):
                        za, zb, dz = bilinear_tap(x1 + bw * j + bw / nw * (sj + 0.5), width)
                        for c in range(depth):
                            acc[c] += ((1 - dy) * ((1 - dz) * x[batch[r]][ya][za][c]
                                                   + dz * x[batch[r]][ya][zb][c])
                                       + dy * ((1 - dz) * x[batch[r]][yb][za][c]
                                               + dz * x[batch[r]][yb][zb][c]))
                cells.append([a / (nh * nw) for a in acc])
        out.append(cells)
    return out  # [R][out_h * out_w][depth]


def roi_pooling_formula(x, rois, batch, out_h, out_w, h_ratio, w_ratio, empty=0.0):
    """NeuralNetworks.h: max-pooling of each box's bins, with rounding to
    integer boundaries. Android's reference: corners rounded half away from
    zero after scaling, the box (x2 - x1 + 1) x (y2 - y1 + 1) cells (at least
    1), bin k spans [floor(start + k * size), ceil(start + (k + 1) * size))
    clipped to the map; an empty bin gives 0 (the zero point)."""
    height, width, depth = len(x[0]), len(x[0][0]), len(x[0][0][0])
    out = []
    for r, box in enumerate(rois):
        x1, x2 = (round_half_away(box[k] / w_ratio) for k in (0, 2))
        y1, y2 = (round_half_away(box[k] / h_ratio) for k in (1, 3))
        bw, bh = max(x2 - x1 + 1, 1) / out_w, max(y2 - y1 + 1, 1) / out_h
        cells = []
        for i in range(out_h):
            h0, h1 = min(math.floor(bh * i + y1), height), min(math.ceil(bh * (i + 1) + y1), height)
            for j in range(out_w):
                w0 = min(math.floor(bw * j + x1), width)
                w1 = min(math.ceil(bw * (j + 1) + x1), width)
                cells.append([max((x[batch[r]][h][w][c] for h in range(h0, h1)
                                   for w in range(w0, w1)), default=empty)
                              for c in range(depth)])
        out.append(cells)
    return out


def run_roi(name, code, x_nhwc, rois, batch, out_hw, ratios, sampling=None, nchw=False,
            xq=(0.0, 0), oq=(0.0, 0), batch_as_input=True):
    """x_nhwc: a tensor in `code`'s storage. Returns the output as NHWC."""
    box_code = T_Q16A if code == T_Q8 else code
    box_q = (BOX_SCALE, 0) if code == T_Q8 else (0.0, 0)
    x = x_nhwc.permute(0, 3, 1, 2).contiguous() if nchw else x_nhwc
    m = Model()
    ins = [m.input(code, tuple(x.shape), *xq), m.input(box_code, (len(rois), 4), *box_q)]
    tensors = [x, as_storage(box_code, [v for row in rois for v in row], *box_q).reshape(-1, 4)]
    if batch_as_input:
        ins.append(m.input(T_I32, (len(rois),)))
        tensors.append(torch.tensor(batch, dtype=torch.int32))
    else:
        ins.append(m.const(T_I32, torch.tensor(batch, dtype=torch.int32)))
    ins += [m.const(I32, out_hw[0]), m.const(I32, out_hw[1]),
            float_scalar(m, code, ratios[0]), float_scalar(m, code, ratios[1])]
    if sampling is not None:
        ins += [m.const(I32, sampling[0]), m.const(I32, sampling[1])]
    ins.append(m.const(BOOL, nchw))
    o = m.output(code, (0, 0, 0, 0), *oq)
    m.op(name, ins, [o])
    got = m.run(tensors, [DTYPE[code]])[0]
    return got.permute(0, 2, 3, 1).contiguous() if nchw else got


def nested(t):
    return t.tolist()


# Android's roi_align.mod.py (Android 10): TEST 1 (a 1x4x4x1 map, 4 boxes of
# batch 0, 2x2 outputs, ratios 2, 4 sampling points each way) and its quant8
# variation (input 0.25/128, output 0.0625/128, boxes 0.125/0).
RA1_X = [-10, -1, 4, -5, -8, -2, 9, 1, 7, -2, 3, -7, -2, 10, -3, 5]
RA1_ROIS = [[2, 2, 4, 4], [0, 0, 8, 8], [2, 0, 4, 8], [0, 2, 8, 4]]
RA1_OUT = [0.375, 5.125, -0.375, 2.875, -0.5, -0.3125, 3.1875, 1.125, 0.25, 4.25, 4.875, 0.625,
           -0.1875, 1.125, 0.9375, -2.625]
RA1_Q_X = [88, 124, 144, 108, 96, 120, 164, 132, 156, 120, 140, 100, 120, 168, 116, 148]
RA1_Q_OUT = [134, 210, 122, 174, 120, 123, 179, 146, 132, 196, 206, 138, 125, 146, 143, 86]
# TEST 2 and 3: a 2x4x8x2 map, boxes of images 0, 0, 1, 1 (the third tests
# rounding, the fourth is smaller than the output), 2x3 outputs, ratios 4,
# sampling 4 (TEST 2) and 0 = adaptive (TEST 3).
RA2_X = [8.84, 8.88, 7.41, 5.60, 9.95, 4.37, 0.10, 7.64, 6.50, 9.47, 7.55, 3.00, 0.89, 3.01,
         6.30, 4.40, 1.64, 6.74, 6.16, 8.60, 5.85, 3.17, 7.12, 6.79, 5.77, 6.62, 5.13, 8.44,
         5.08, 7.12, 2.84, 1.19, 8.37, 0.90, 7.86, 9.69, 1.97, 1.31, 4.42, 9.89, 0.18, 9.00,
         9.30, 0.44, 5.05, 6.47, 1.09, 9.50, 1.30, 2.18, 2.05, 7.74, 7.66, 0.65, 4.18, 7.14,
         5.35, 7.90, 1.04, 1.47, 9.01, 0.95, 4.07, 0.65,
         5.47, 2.64, 0.86, 4.86, 2.38, 2.45, 8.77, 0.06, 3.60, 9.28, 5.84, 8.97, 6.89, 1.43,
         3.90, 5.91, 7.40, 9.25, 3.12, 4.92, 1.87, 3.22, 9.50, 6.73, 2.07, 7.30, 3.07, 4.97,
         0.24, 8.91, 1.09, 0.27, 7.29, 6.94, 2.31, 6.88, 4.33, 1.37, 0.86, 0.46, 6.07, 3.81,
         0.86, 6.99, 4.36, 1.92, 8.19, 3.57, 7.90, 6.78, 4.64, 6.82, 6.18, 9.63, 2.63, 2.33,
         1.36, 2.70, 9.99, 9.85, 8.06, 4.80, 7.80, 5.43]
RA2_ROIS = [[4, 4, 28, 12], [4, 4, 32, 16], [7, 1, 29, 15], [1, 7, 9, 11]]
RA2_BATCH = [0, 0, 1, 1]
RA2_OUT = [5.150000, 5.491250, 4.733750, 7.100000, 4.827500, 5.843750, 4.721250, 4.797500,
           3.750000, 6.592500, 5.452500, 3.362500, 4.899396, 5.861696, 4.941504, 5.979741,
           3.182904, 6.111551, 5.141833, 4.631891, 3.903325, 4.627793, 5.537240, 1.356019,
           4.845915, 3.618338, 3.301958, 6.250566, 2.930461, 4.269676, 3.642174, 4.201423,
           5.008657, 5.735293, 7.426004, 4.819665, 4.518229, 6.887344, 2.952656, 5.565781,
           3.952786, 2.552812, 5.191667, 6.854167, 3.920000, 6.512500, 4.886250, 5.497708]
RA3_OUT = [5.150000, 5.491250, 4.733750, 7.100000, 4.827500, 5.843750, 4.721250, 4.797500,
           3.750000, 6.592500, 5.452500, 3.362500, 4.869884, 5.908148, 4.941701, 5.955718,
           3.113403, 6.341898, 5.156389, 4.604016, 3.881782, 4.616123, 5.690694, 1.237153,
           5.028047, 3.560944, 3.157656, 6.395469, 2.896243, 4.336576, 3.563021, 4.057767,
           5.053437, 6.028906, 7.396966, 4.668906, 4.385000, 6.905000, 2.815000, 5.502500,
           4.161667, 1.829167, 5.191667, 6.854167, 3.920000, 6.512500, 5.106667, 5.612500]


def flat(cells):
    return [v for box in cells for cell in box for v in cell]


def case_roi_align_android():
    x1 = torch.tensor(RA1_X, dtype=torch.float32).reshape(1, 4, 4, 1)
    x2 = torch.tensor(RA2_X, dtype=torch.float32).reshape(2, 4, 8, 2)
    for code in (T_F32, T_F16):
        for nchw in (False, True):
            got = run_roi("ROI_ALIGN", code, x1.to(DTYPE[code]), RA1_ROIS, [0] * 4, (2, 2),
                          (2.0, 2.0), (4, 4), nchw, batch_as_input=False)
            within(got.float().reshape(-1).tolist(), RA1_OUT, float_tol(code), (code, nchw))
            for sampling, want in (((4, 4), RA2_OUT), ((0, 0), RA3_OUT)):
                got = run_roi("ROI_ALIGN", code, x2.to(DTYPE[code]), RA2_ROIS, RA2_BATCH,
                              (2, 3), (4.0, 4.0), sampling, nchw)
                within(got.float().reshape(-1).tolist(), want, float_tol(code),
                       (code, nchw, sampling))
    # The formula gives Android's values.
    within(flat(roi_align_formula(nested(x1), RA1_ROIS, [0] * 4, 2, 2, 2.0, 2.0, 4, 4)),
           RA1_OUT, float_tol(T_F32), "formula 1")
    within(flat(roi_align_formula(nested(x2), RA2_ROIS, RA2_BATCH, 2, 3, 4.0, 4.0, 0, 0)),
           RA3_OUT, float_tol(T_F32), "formula 3")
    for nchw in (False, True):
        got = run_roi("ROI_ALIGN", T_Q8, torch.tensor(RA1_Q_X, dtype=torch.uint8).reshape(
            1, 4, 4, 1), RA1_ROIS, [0] * 4, (2, 2), (2.0, 2.0), (4, 4), nchw, (0.25, 128),
            (0.0625, 128))
        within(got.reshape(-1).tolist(), RA1_Q_OUT, lambda w: 1, ("quant8", nchw))


def case_roi_align_formula():
    gen = torch.Generator().manual_seed(12)
    x = torch.randn(2, 7, 9, 3, generator=gen)
    rois = [[0, 0, 18, 14], [3.3, 1.7, 11.1, 13.9], [10.5, 2.25, 12.0, 3.0], [17, 13, 18, 14],
            [0.4, 0.6, 0.4, 0.6], [5, 5, 17.9, 13.9]]
    batch = [0, 1, 1, 0, 1, 0]
    for sampling in ((0, 0), (2, 3), (1, 1)):
        want = roi_align_formula(nested(x), rois, batch, 3, 2, 2.0, 2.0, *sampling)
        for code in (T_F32, T_F16):
            for nchw in (False, True):
                got = run_roi("ROI_ALIGN", code, x.to(DTYPE[code]), rois, batch, (3, 2),
                              (2.0, 2.0), sampling, nchw)
                w = want if code == T_F32 else roi_align_formula(
                    nested(x.half().float()), [[float(torch.tensor(v).half()) for v in r]
                                               for r in rois], batch, 3, 2, 2.0, 2.0, *sampling)
                tol = float_tol(code) if code == T_F16 else (lambda v: 1e-5 + 1e-5 * abs(v))
                within(got.float().reshape(-1).tolist(), flat(w), tol, (sampling, code, nchw))
    # Quant8: real values quantized again (one quantum allowed).
    xq = torch.randint(0, 256, (2, 7, 9, 3), generator=gen, dtype=torch.uint8)
    real = [[[[(v - 100) * 0.05 for v in px] for px in row] for row in img]
            for img in nested(xq)]
    q_rois = [[v * BOX_SCALE for v in quantize(r, BOX_SCALE, 0, 0, 65535)] for r in rois]
    want = roi_align_formula(real, q_rois, batch, 3, 2, 2.0, 2.0, 0, 0)
    got = run_roi("ROI_ALIGN", T_Q8, xq, q_rois, batch, (3, 2), (2.0, 2.0), (0, 0), True,
                  (0.05, 100), (0.04, 120))
    within(got.reshape(-1).tolist(), quantize(flat(want), 0.04, 120, 0, 255), lambda w: 1,
           "quant8")


# Android's roi_pooling.mod.py (Android 10), TEST 1: a 1x4x4x1 map, boxes of
# batch 0 (the last one outside the map: empty bins), 2x2 outputs, ratios 2,
# and its quant8 variation (input and output 0.25/128, boxes 0.125/0).
RP1_X = [-10, -1, 4, -5, -8, -2, 9, 1, 7, -2, 3, -7, -2, 10, -3, 5]
RP1_ROIS = [[2, 2, 4, 4], [0, 0, 6, 6], [2, 0, 4, 6], [0, 2, 6, 4], [8, 8, 8, 8]]
RP1_OUT = [-2, 9, -2, 3, -1, 9, 10, 5, -1, 9, 10, 3, -2, 9, 7, 3, 0, 0, 0, 0]
RP1_Q_X = [88, 124, 144, 108, 96, 120, 164, 132, 156, 120, 140, 100, 120, 168, 116, 148]
RP1_Q_OUT = [120, 164, 120, 140, 124, 164, 168, 148, 124, 164, 168, 140, 120, 164, 156, 140, 128,
             128, 128, 128]


def case_roi_pooling_android():
    x = torch.tensor(RP1_X, dtype=torch.float32).reshape(1, 4, 4, 1)
    for code in (T_F32, T_F16):
        for nchw in (False, True):
            got = run_roi("ROI_POOLING", code, x.to(DTYPE[code]), RP1_ROIS, [0] * 5, (2, 2),
                          (2.0, 2.0), None, nchw, batch_as_input=False)
            within(got.float().reshape(-1).tolist(), RP1_OUT, float_tol(code), (code, nchw))
    within(flat(roi_pooling_formula(nested(x), RP1_ROIS, [0] * 5, 2, 2, 2.0, 2.0)), RP1_OUT,
           float_tol(T_F32), "formula")
    xq = torch.tensor(RP1_Q_X, dtype=torch.uint8).reshape(1, 4, 4, 1)
    for nchw in (False, True):
        got = run_roi("ROI_POOLING", T_Q8, xq, RP1_ROIS, [0] * 5, (2, 2), (2.0, 2.0), None, nchw,
                      (0.25, 128), (0.25, 128))
        assert got.reshape(-1).tolist() == RP1_Q_OUT, got


def case_roi_pooling_formula():
    gen = torch.Generator().manual_seed(13)
    x = torch.randn(2, 6, 10, 2, generator=gen)
    rois = [[0, 0, 39, 23], [5, 3, 21, 19], [1.9, 2.1, 2.0, 2.2], [30, 10, 39.9, 23.9],
            [6, 2, 34, 22], [4.5, 4.5, 13.5, 9.5]]
    batch = [0, 1, 0, 1, 1, 0]
    want = roi_pooling_formula(nested(x), rois, batch, 3, 4, 4.0, 4.0)
    for code in (T_F32, T_F16):
        for nchw in (False, True):
            xs = x.to(DTYPE[code])
            got = run_roi("ROI_POOLING", code, xs, rois, batch, (3, 4), (4.0, 4.0), None, nchw)
            w = want if code == T_F32 else roi_pooling_formula(nested(xs.float()), rois, batch,
                                                               3, 4, 4.0, 4.0)
            within(got.float().reshape(-1).tolist(), flat(w), lambda v: 0, (code, nchw))
    xq = torch.randint(0, 256, (2, 6, 10, 2), generator=gen, dtype=torch.uint8)
    got = run_roi("ROI_POOLING", T_Q8, xq, rois, batch, (3, 4), (4.0, 4.0), None, True,
                  (0.5, 7), (0.5, 7))
    want = roi_pooling_formula(nested(xq), rois, batch, 3, 4, 4.0, 4.0, empty=7)
    assert got.reshape(-1).tolist() == flat(want)


def case_roi_refusals():
    def build(name="ROI_ALIGN", code=T_F32, x_dims=(1, 4, 4, 1), roi_code=None,
              roi_dims=(2, 4), batch_dims=(2,), out_hw=(2, 2), ratio=2.0, ratio_code=None,
              sampling=(0, 0), out_dims=(2, 2, 2, 1), xq=(0.0, 0), oq=None, roi_q=None):
            def b(m):
                rc = roi_code if roi_code is not None else (T_Q16A if code == T_Q8 else code)
                rq = roi_q or ((0.125, 0) if rc == T_Q16A else (0.0, 0))
                ins = [m.input(code, x_dims, *xq), m.input(rc, roi_dims, *rq),
                       m.input(T_I32, batch_dims), m.const(I32, out_hw[0]),
                       m.const(I32, out_hw[1])]
                rcode = ratio_code if ratio_code is not None else (F16 if code == T_F16 else F32)
                ins += [f16_scalar(m, ratio) if rcode == F16 else m.const(F32, ratio)] * 2
                if name == "ROI_ALIGN":
                    ins += [m.const(I32, s) for s in sampling]
                ins.append(m.const(BOOL, False))
                m.op(name, ins, [m.output(code, out_dims, *(oq or xq))])
            return b
    q8 = (0.5, 10)
    good = [build(), build(code=T_F16), build(code=T_Q8, xq=q8, oq=(0.25, 3)),
            build("ROI_POOLING"), build("ROI_POOLING", T_Q8, xq=q8)]
    bad = {"int32 feature map": (build(code=T_I32), ["input 0"]),
           "float32 boxes for quant8": (build(code=T_Q8, xq=q8, roi_code=T_F32), ["input 1"]),
           "quant16 boxes of scale 1": (build(code=T_Q8, xq=q8, roi_q=(1.0, 0)), ["0.125"]),
           "float32 ratio for float16": (build(code=T_F16, ratio_code=F32), ["input 5"]),
           "3-D feature map": (build(x_dims=(4, 4, 1)), ["rank"]),
           "boxes of 3 coordinates": (build(roi_dims=(2, 3)), ["coordinates"]),
           "2 boxes, 3 batch indices": (build(batch_dims=(3,)), ["counts differ"]),
           "output height 0": (build(out_hw=(0, 2)), ["output height"]),
           "ratio 0": (build(ratio=0.0), ["ratio"]),
           "sampling -1": (build(sampling=(-1, 0)), ["sampling"]),
           "wrong output shape": (build(out_dims=(2, 3, 2, 1)), ["computes"]),
           "ROI_POOLING requantizing": (build("ROI_POOLING", T_Q8, xq=q8, oq=(0.25, 3)),
                                        ["scale"])}
    check_refusals(good, bad)


def case_roi_box_outside_image():
    # A box beyond its image fails at execution, naming the box.
    x = torch.zeros(1, 4, 4, 1)
    for name, sampling in (("ROI_ALIGN", (0, 0)), ("ROI_POOLING", None)):
        try:
            run_roi(name, T_F32, x, [[0, 0, 2, 2], [1, 1, 9, 4]], [0, 0], (2, 2), (2.0, 2.0),
                    sampling)
        except RuntimeError:
            assert "box 1 [1, 1, 9, 4]" in last_error(), last_error()
            continue
        raise AssertionError(f"{name}: a box beyond the image was accepted")


# ------------------------------------------------------------ HEATMAP_MAX_KEYPOINT

def heatmap_formula(maps, boxes, tol=1e-5):
    """maps: [K][size][size][keypoints]. NeuralNetworks.h: the maximum of each
    heatmap refined by the quadratic Taylor expansion (approximating bicubic
    upscaling), mapped into its box. Android's reference, for the details:
    the first maximum in row-major order; the 3x3 neighbourhood mirrored at
    the borders (index -1 reads 1, size reads size - 2); b = -gradient and A
    = Hessian by central differences; delta = A^-1 b unless |det A| < tol *
    (1 + A00 * A11), scaled to at most 1.5 in both axes; score D - b.d +
    d.A.d / 2; keypoint ((max + d + 0.5) / size) * box size + box start."""
    scores, points = [], []
    size = len(maps[0])
    for n, hm in enumerate(maps):
        srow, prow = [], []
        for k in range(len(hm[0][0])):
            best = 0
            for p in range(1, size * size):
                if hm[p // size][p % size][k] > hm[best // size][best % size][k]:
                    best = p
            y, x = divmod(best, size)

            def mir(i):
                return 1 if i < 0 else (size - 2 if i >= size else i)
            g = [[hm[mir(y + dy)][mir(x + dx)][k] for dx in (-1, 0, 1)] for dy in (-1, 0, 1)]
            b0, b1 = -(g[1][2] - g[1][0]) / 2, -(g[2][1] - g[0][1]) / 2
            a00 = g[1][0] - 2 * g[1][1] + g[1][2]
            a01 = (g[2][2] - g[2][0] - g[0][2] + g[0][0]) / 4
            a11 = g[0][1] - 2 * g[1][1] + g[2][1]
            det = a00 * a11 - a01 * a01
            dx = dy = 0.0
            score = g[1][1]
            if not abs(det) < tol + tol * a00 * a11:
                dx, dy = (a11 * b0 - a01 * b1) / det, (a00 * b1 - a01 * b0) / det
                big = max(abs(dx), abs(dy))
                if big > 1.5:
                    dx, dy = dx * 1.5 / big, dy * 1.5 / big
                score = (g[1][1] - b0 * dx - b1 * dy
                         + ((a00 * dx + a01 * dy) * dx + (a01 * dx + a11 * dy) * dy) / 2)
            x1, y1, x2, y2 = boxes[n]
            srow.append(score)
            prow.append([(x + dx + 0.5) / size * (x2 - x1) + x1,
                         (y + dy + 0.5) / size * (y2 - y1) + y1])
        scores.append(srow)
        points.append(prow)
    return scores, points


def run_heatmap(code, maps_nhwc, boxes, nchw=False, q=(0.0, 0), sq=(0.0, 0)):
    box_code = T_Q16A if code == T_Q8 else code
    box_q = (BOX_SCALE, 0) if code == T_Q8 else (0.0, 0)
    x = maps_nhwc.permute(0, 3, 1, 2).contiguous() if nchw else maps_nhwc
    m = Model()
    ins = [m.input(code, tuple(x.shape), *q), m.input(box_code, (len(boxes), 4), *box_q),
           m.const(BOOL, nchw)]
    outs = [m.output(code, (0, 0), *sq), m.output(box_code, (0, 0, 0), *box_q)]
    m.op("HEATMAP_MAX_KEYPOINT", ins, outs)
    return m.run([x, as_storage(box_code, [v for r in boxes for v in r], *box_q).reshape(-1, 4)],
                 [DTYPE[code], DTYPE[box_code]])


# Android's heatmap_max_keypoint.mod.py (Android 10), TEST 1: six 4x4 heatmaps
# of one keypoint (maxima inside, at the border, tied, and a singular
# Hessian) and their boxes.
HM_X = [-10, -1, 4, -5, -8, -2, 9, 1, 7, -2, 3, -7, -2, 2, -3, 5,
        -10, -1, 4, -5, -8, -2, 9, 1, 7, -2, 3, -7, -2, 10, -3, 5,
        -10, -1, 4, -5, -8, -2, 4, 1, 7, -2, 3, -7, -2, 2, -3, 5,
        -10, -1, 4, 10, -8, -2, 4, 1, 7, -2, 3, -7, -2, 2, -3, 5,
        -10, -56, 4, -5, -8, -2, 9, 1, 7, -2, 3, -7, -2, 2, -3, 5,
        -10, -57.827329175, 4, -5, -8, -2, 9, 1, 7, -2, 3, -7, -2, 2, -3, 5]
HM_BOXES = [[5, 2, 10, 20], [1, 7, 30, 10], [8, 3, 15, 13], [6, 5, 19, 12], [5, 2, 10, 20],
            [5, 2, 10, 20]]
HM_SCORES = [9.071493, 10.005, 7.1875, 10.0, 10.689667, 9.0]
HM_POINTS = [8.224462, 8.537316, 11.73, 9.625, 8.875, 9.5625, 17.375, 5.875, 9.569672, 2.0,
             8.125, 8.75]


def case_heatmap_max_keypoint_android():
    x = torch.tensor(HM_X, dtype=torch.float64).float().reshape(6, 4, 4, 1)
    for code in (T_F32, T_F16):
        for nchw in (False, True):
            scores, points = run_heatmap(code, x.to(DTYPE[code]), HM_BOXES, nchw)
            assert list(scores.shape) == [6, 1] and list(points.shape) == [6, 1, 2]
            within(scores.float().reshape(-1).tolist(), HM_SCORES, float_tol(code), (code, nchw))
            within(points.float().reshape(-1).tolist(), HM_POINTS, float_tol(code), (code, nchw))
    s, p = heatmap_formula(x.tolist(), HM_BOXES)
    within([v for r in s for v in r], HM_SCORES, float_tol(T_F32), "formula scores")
    within([v for r in p for k in r for v in k], HM_POINTS, float_tol(T_F32), "formula points")


def case_heatmap_max_keypoint_formula():
    gen = torch.Generator().manual_seed(14)
    x = torch.randn(3, 5, 5, 4, generator=gen)
    x[1, 0, 0, 2] = 9.0  # a corner maximum (mirrored neighbourhood)
    x[2, 2, 3, 1] = x[2, 4, 4, 1] = 8.0  # tied maxima: the first counts
    boxes = [[1.5, 2.0, 9.0, 12.25], [0, 0, 31.5, 7.75], [4, 4, 4, 4]]
    s, p = heatmap_formula(x.tolist(), boxes)
    for code in (T_F32, T_F16):
        for nchw in (False, True):
            xs = x.to(DTYPE[code])
            if code == T_F16:
                s, p = heatmap_formula(xs.float().tolist(), boxes, 1e-3)
            scores, points = run_heatmap(code, xs, boxes, nchw)
            tol = float_tol(code) if code == T_F16 else (lambda v: 1e-5 * (1 + abs(v)))
            within(scores.float().reshape(-1).tolist(), [v for r in s for v in r], tol, code)
            within(points.float().reshape(-1).tolist(), [v for r in p for k in r for v in k], tol,
                   code)
    xq = torch.randint(0, 256, (3, 5, 5, 4), generator=gen, dtype=torch.uint8)
    real = [[[[(v - 128) * 0.1 for v in px] for px in row] for row in hm] for hm in xq.tolist()]
    s, p = heatmap_formula(real, boxes)
    scores, points = run_heatmap(T_Q8, xq, boxes, True, (0.1, 128), (0.2, 64))
    within(scores.reshape(-1).tolist(), quantize([v for r in s for v in r], 0.2, 64, 0, 255),
           lambda v: 1, "quant8 scores")
    within(u16(points.reshape(-1)), quantize([v for r in p for k in r for v in k], BOX_SCALE, 0, 0,
                                             65535), lambda v: 1, "quant16 keypoints")


def case_heatmap_max_keypoint_refusals():
    def build(code=T_F32, x_dims=(2, 4, 4, 3), box_code=None, box_dims=(2, 4),
              s_dims=(2, 3), p_dims=(2, 3, 2), p_code=None, p_q=None, nchw=False):
        def b(m):
            bc = box_code if box_code is not None else (T_Q16A if code == T_Q8 else code)
            bq = (0.125, 0) if bc == T_Q16A else (0.0, 0)
            pc = p_code if p_code is not None else bc
            pq = p_q or ((0.125, 0) if pc == T_Q16A else (0.0, 0))
            q = (0.5, 3) if code == T_Q8 else (0.0, 0)
            m.op("HEATMAP_MAX_KEYPOINT", [m.input(code, x_dims, *q), m.input(bc, box_dims, *bq),
                                          m.const(BOOL, nchw)],
                 [m.output(code, s_dims, *q), m.output(pc, p_dims, *pq)])
        return b
    good = [build(), build(T_F16), build(T_Q8), build(x_dims=(2, 3, 4, 4), nchw=True)]
    bad = {"int32 heatmaps": (build(T_I32), ["input 0"]),
           "float32 boxes for quant8": (build(T_Q8, box_code=T_F32), ["input 1"]),
           "quant16 keypoints of zero point 2": (build(T_Q8, p_q=(0.125, 2)), ["output 1"]),
           "float16 keypoints for float32": (build(p_code=T_F16), ["output 1"]),
           "non-square heatmaps": (build(x_dims=(2, 4, 5, 3)), ["square"]),
           "1x1 heatmaps": (build(x_dims=(2, 1, 1, 3)), [">= 2"]),
           "3 boxes for 2 heatmaps": (build(box_dims=(3, 4)), ["counts differ"]),
           "wrong score shape": (build(s_dims=(2, 4)), ["output 0", "computes"])}
    check_refusals(good, bad)


# ------------------------------------------------------------ BOX_WITH_NMS_LIMIT

def iou(a, b):
    """Intersection over union of [x1, y1, x2, y2] boxes (no + 1: Android's
    reference)."""
    w = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
    h = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
    inter = w * h
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def nms_formula(scores, boxes, batch, score_thr, max_det, kernel, iou_thr, sigma, nms_thr):
    """NeuralNetworks.h: per image and class (class 0, the background,
    skipped), candidates scoring above score_thr; repeatedly the best is kept
    and the others' scores multiplied by the kernel of their IoU with it
    (hard 1 or 0, linear 1 or 1 - IoU at IoU >= iou_thr, gaussian
    exp(-IoU^2 / sigma)); those below nms_thr are dropped. At most max_det
    per class and per image (the best), ordered by class, then score.
    Android's reference for ties: candidates in box order, the first best
    kept, a dropped candidate swapped with the last."""
    def weight(o):
        if kernel == 2:
            return math.exp(-o * o / sigma)
        return 1.0 if o < iou_thr else (0.0 if kernel == 0 else 1.0 - o)
    s = [list(row) for row in scores]
    classes = len(s[0])
    out = []
    first = 0
    while first < len(batch):
        last = first
        while last < len(batch) and batch[last] == batch[first]:
            last += 1
        image = []
        for c in range(1, classes):
            sel = [(r, c) for r in range(first, last) if s[r][c] > score_thr]
            start, end = 0, len(sel)
            limit = end if max_det < 0 else max_det
            while start < end and start < limit:
                best = start
                for i in range(start + 1, end):
                    if s[sel[i][0]][c] > s[sel[best][0]][c]:
                        best = i
                sel[best], sel[start] = sel[start], sel[best]
                kept = boxes[sel[start][0]][4 * c:4 * c + 4]
                i = start + 1
                while i < end:
                    r = sel[i][0]
                    s[r][c] *= weight(iou(boxes[r][4 * c:4 * c + 4], kept))
                    if s[r][c] < nms_thr:
                        end -= 1
                        sel[i], sel[end] = sel[end], sel[i]
                    else:
                        i += 1
                start += 1
            image += sel[:start]
        image.sort(key=lambda rc: -s[rc[0]][rc[1]])
        if max_det >= 0:
            image = image[:max_det]
        image.sort(key=lambda rc: (rc[1], -s[rc[0]][rc[1]]))
        out += [(s[r][c], boxes[r][4 * c:4 * c + 4], c, batch[first]) for r, c in image]
        first = last
    return out


def nms_model(m, code, n_rois, classes, params, q=(0.0, 0), box_q=None, out_q=None):
    """Adds BOX_WITH_NMS_LIMIT on model inputs; returns its output operands."""
    box_code = T_Q16A if code == T_Q8 else code
    box_q = box_q or ((BOX_SCALE, 0) if code == T_Q8 else (0.0, 0))
    score_thr, max_det, kernel, iou_thr, sigma, nms_thr = params
    ins = [m.input(code, (n_rois, classes), *q), m.input(box_code, (n_rois, classes * 4), *box_q),
           m.input(T_I32, (n_rois,)), float_scalar(m, code, score_thr), m.const(I32, max_det),
           m.const(I32, kernel), float_scalar(m, code, iou_thr), float_scalar(m, code, sigma),
           float_scalar(m, code, nms_thr)]
    outs = [m.output(code, (0,), *(out_q or q)), m.output(box_code, (0, 4), *box_q),
            m.output(T_I32, (0,)), m.output(T_I32, (0,))]
    m.op("BOX_WITH_NMS_LIMIT", ins, outs)
    return outs


def run_nms(code, scores, boxes, batch, params, q=(0.0, 0)):
    box_code = T_Q16A if code == T_Q8 else code
    box_q = (BOX_SCALE, 0) if code == T_Q8 else (0.0, 0)
    m = Model()
    nms_model(m, code, len(scores), len(scores[0]), params, q)
    return m.run([as_storage(code, [v for r in scores for v in r], *q).reshape(len(scores), -1),
                  as_storage(box_code, [v for r in boxes for v in r], *box_q).reshape(
                      len(boxes), -1),
                  torch.tensor(batch, dtype=torch.int32)],
                 [DTYPE[code], DTYPE[box_code], torch.int32, torch.int32])


# Android's box_with_nms_limit_hard.mod.py (Android 10): 19 boxes of 3
# classes in two images, score threshold 0.3, no limit, hard NMS at IoU 0.4,
# NMS score threshold 0.3 (quant8: scores 0.01/0, boxes 0.125/0).
NMS_SCORES = [[0.9, 0.95, 0.75], [0.8, 0.7, 0.85], [0.6, 0.9, 0.95], [0.9, 0.65, 0.9],
              [0.8, 0.85, 0.8], [0.6, 0.6, 0.2], [0.6, 0.8, 0.4], [0.9, 0.55, 0.6],
              [0.9, 0.75, 0.7], [0.8, 0.7, 0.85], [0.9, 0.95, 0.75], [0.8, 0.85, 0.8],
              [0.6, 0.9, 0.95], [0.6, 0.6, 0.2], [0.5, 0.9, 0.8], [0.9, 0.75, 0.7],
              [0.9, 0.65, 0.9], [0.9, 0.55, 0.6], [0.6, 0.8, 0.4]]
NMS_BOX_CORNERS = [(1, 0, 0), (2, 1, 1), (3, 2, 2), (4, 3, 3), (5, 4, 4), (6, 5, 5), (7, 6, 6),
                   (8, 7, 7), (9, 8, 8), (2, 2, 2), (1, 1, 1), (5, 5, 5), (3, 3, 3), (6, 6, 6),
                   (0, 0, 0), (9, 9, 9), (4, 4, 4), (8, 8, 8), (7, 7, 7)]
# Box of class c: [a, a, a + 9, a + 9] (class 0), [a, a, a + 10, a + 10]
# (others) for the corner a listed (the second box of row 15 is [0, 0, 2, 2]).
NMS_BOXES = []
for _r, (_a0, _a1, _a2) in enumerate(NMS_BOX_CORNERS):
    _size = (1, 2, 2) if _r == 14 else (9, 10, 10)
    NMS_BOXES.append([v for a, z in zip((_a0, _a1, _a2), _size) for v in (a, a, a + z, a + z)])
NMS_BATCH = [0] * 9 + [1] * 10
NMS_OUT_SCORES = [0.95, 0.85, 0.75, 0.95, 0.7, 0.95, 0.9, 0.85, 0.75, 0.95, 0.8, 0.7]
NMS_OUT_BOXES = [0, 0, 10, 10, 4, 4, 14, 14, 8, 8, 18, 18, 2, 2, 12, 12, 8, 8, 18, 18, 1, 1, 11,
                 11, 0, 0, 2, 2, 5, 5, 15, 15, 9, 9, 19, 19, 3, 3, 13, 13, 0, 0, 2, 2, 9, 9, 19,
                 19]
NMS_OUT_CLASSES = [1, 1, 1, 2, 2, 1, 1, 1, 1, 2, 2, 2]
NMS_OUT_BATCH = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1]
NMS_HARD = (0.3, -1, 0, 0.4, 1.0, 0.3)


# box_with_nms_limit_linear.mod.py and box_with_nms_limit_gaussian.mod.py: the
# same inputs, linear NMS (kernel 1) and gaussian NMS (kernel 2, sigma 0.5):
# (parameters, scores, boxes, classes, batch indices, quant8 scores).
NMS_SOFT = {
    "linear": ((0.3, -1, 1, 0.4, 1.0, 0.3),
               [0.95, 0.85, 0.75, 0.95, 0.7, 0.42352945, 0.39705884, 0.95, 0.9, 0.85, 0.75, 0.95,
                0.8, 0.7, 0.42352945, 0.39705884],
               [0, 0, 10, 10, 4, 4, 14, 14, 8, 8, 18, 18, 2, 2, 12, 12, 8, 8, 18, 18, 4, 4, 14, 14,
                0, 0, 10, 10, 1, 1, 11, 11, 0, 0, 2, 2, 5, 5, 15, 15, 9, 9, 19, 19, 3, 3, 13, 13,
                0, 0, 2, 2, 9, 9, 19, 19, 5, 5, 15, 15, 1, 1, 11, 11],
               [1, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1, 2, 2, 2, 2, 2], [0] * 7 + [1] * 9,
               [95, 85, 75, 95, 70, 42, 40, 95, 90, 85, 75, 95, 80, 70, 42, 40]),
    "gaussian": ((0.3, -1, 2, 0.4, 0.5, 0.3),
                 [0.95, 0.7879927, 0.52485234, 0.47400165, 0.95, 0.6894936, 0.4812244, 0.42367333,
                  0.95, 0.89983034, 0.7879927, 0.52485234, 0.47400165, 0.95, 0.8, 0.6894936,
                  0.4811337, 0.42367333],
                 [0, 0, 10, 10, 6, 6, 16, 16, 2, 2, 12, 12, 8, 8, 18, 18, 2, 2, 12, 12, 8, 8, 18,
                  18, 0, 0, 10, 10, 4, 4, 14, 14, 1, 1, 11, 11, 0, 0, 2, 2, 7, 7, 17, 17, 3, 3, 13,
                  13, 9, 9, 19, 19, 3, 3, 13, 13, 0, 0, 2, 2, 9, 9, 19, 19, 1, 1, 11, 11, 5, 5, 15,
                  15],
                 [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2], [0] * 8 + [1] * 10,
                 [95, 79, 52, 47, 95, 69, 48, 42, 95, 90, 79, 52, 47, 95, 80, 69, 48, 42]),
}


def case_box_with_nms_limit_soft_android():
    for kind, (params, w_scores, w_boxes, w_classes, w_batch, w_q) in NMS_SOFT.items():
        for code in (T_F32, T_F16, T_Q8):
            q = (0.01, 0) if code == T_Q8 else (0.0, 0)
            scores, boxes, classes, batch = run_nms(code, NMS_SCORES, NMS_BOXES, NMS_BATCH,
                                                    params, q)
            assert classes.tolist() == w_classes, (kind, code, classes)
            assert batch.tolist() == w_batch, (kind, code, batch)
            if code == T_Q8:
                within(scores.tolist(), w_q, lambda v: 1, (kind, "quant8"))
                assert u16(boxes.reshape(-1)) == [v * 8 for v in w_boxes], (kind, boxes)
            else:
                within(scores.float().tolist(), w_scores, float_tol(code), (kind, code))
                assert boxes.float().reshape(-1).tolist() == w_boxes, (kind, code, boxes)
        got = nms_formula(NMS_SCORES, NMS_BOXES, NMS_BATCH, *params)
        within([s for s, _, _, _ in got], w_scores, float_tol(T_F32), (kind, "formula"))


def case_box_with_nms_limit_android():
    assert NMS_BOXES[0][:4] == [1, 1, 10, 10] and NMS_BOXES[14][4:8] == [0, 0, 2, 2]
    for code in (T_F32, T_F16, T_Q8):
        q = (0.01, 0) if code == T_Q8 else (0.0, 0)
        scores, boxes, classes, batch = run_nms(code, NMS_SCORES, NMS_BOXES, NMS_BATCH, NMS_HARD, q)
        assert classes.tolist() == NMS_OUT_CLASSES, (code, classes)
        assert batch.tolist() == NMS_OUT_BATCH, (code, batch)
        if code == T_Q8:
            assert scores.tolist() == [round(v * 100) for v in NMS_OUT_SCORES], scores
            assert u16(boxes.reshape(-1)) == [v * 8 for v in NMS_OUT_BOXES], boxes
        else:
            within(scores.float().tolist(), NMS_OUT_SCORES, float_tol(code), code)
            assert boxes.float().reshape(-1).tolist() == NMS_OUT_BOXES, (code, boxes)
    got = nms_formula(NMS_SCORES, NMS_BOXES, NMS_BATCH, *NMS_HARD)
    assert [c for _, _, c, _ in got] == NMS_OUT_CLASSES
    assert [v for _, b, _, _ in got for v in b] == NMS_OUT_BOXES


def case_box_with_nms_limit_formula():
    gen = torch.Generator().manual_seed(15)
    n, classes = 24, 4
    corners = (torch.rand(n, classes, 2, generator=gen) * 40).tolist()
    sizes = (torch.rand(n, classes, 2, generator=gen) * 20 + 1).tolist()
    boxes = [[v for c in range(classes) for v in (corners[r][c][0], corners[r][c][1],
                                                  corners[r][c][0] + sizes[r][c][0],
                                                  corners[r][c][1] + sizes[r][c][1])]
             for r in range(n)]
    boxes = torch.tensor(boxes, dtype=torch.float32).tolist()  # values exact in float32
    scores = (torch.randint(0, 100, (n, classes), generator=gen).float() / 100).tolist()
    batch = [0] * 7 + [2] * 9 + [3] * 8
    for params in ((0.2, -1, 1, 0.3, 1.0, 0.25),   # linear
                   (0.1, 5, 2, 0.0, 0.5, 0.3),     # gaussian, at most 5 per image
                   (0.35, 3, 0, 0.5, 1.0, 0.0)):   # hard, suppressed boxes kept at score 0
        want = nms_formula(scores, boxes, batch, *params)
        for code in (T_F32, T_F16):
            sc = scores if code == T_F32 else [[float(torch.tensor(v).half()) for v in r]
                                                for r in scores]
            bx = boxes if code == T_F32 else [[float(torch.tensor(v).half()) for v in r]
                                               for r in boxes]
            w = want if code == T_F32 else nms_formula(sc, bx, batch, *params)
            got = run_nms(code, sc, bx, batch, params)
            assert got[2].tolist() == [c for _, _, c, _ in w], (params, code, got[2], w)
            assert got[3].tolist() == [b for _, _, _, b in w], (params, code)
            within(got[0].float().tolist(), [s for s, _, _, _ in w], float_tol(code),
                   (params, code))
            within(got[1].float().reshape(-1).tolist(), [v for _, b, _, _ in w for v in b],
                   lambda v: 0, (params, code))
    # Quant8 scores (0.01, 0) and quant16 boxes: the kept boxes' stored values.
    qs = [[round(v * 100) / 100 for v in r] for r in scores]
    qb = [[round(v * 8) / 8 for v in r] for r in boxes]
    params = (0.2, -1, 1, 0.3, 1.0, 0.25)
    want = nms_formula(qs, qb, batch, *params)
    got = run_nms(T_Q8, qs, qb, batch, params, (0.01, 0))
    assert got[2].tolist() == [c for _, _, c, _ in want]
    within(got[0].tolist(), quantize([s for s, _, _, _ in want], 0.01, 0, 0, 255), lambda v: 1,
           "quant8 scores")
    assert u16(got[1].reshape(-1)) == [round(v * 8) for _, b, _, _ in want for v in b]


def case_box_with_nms_limit_zero_sized_chain():
    # No box scores above the threshold: zero-sized outputs, which ROI_ALIGN
    # and ROI_POOLING take ("Zero num_rois is supported") and give [0, 2, 2, 1].
    x = torch.randn(1, 4, 4, 1)
    for name in ("ROI_ALIGN", "ROI_POOLING"):
        for code in (T_F32, T_Q8):
            q = (0.01, 0) if code == T_Q8 else (0.0, 0)
            xq = (0.1, 128) if code == T_Q8 else (0.0, 0)
            m = Model()
            _, boxes, _, batch = nms_model(m, code, 2, 2, (0.95, -1, 0, 0.5, 1.0, 0.1), q)
            image = m.input(code, (1, 4, 4, 1), *xq)
            ins = [image, boxes, batch, m.const(I32, 2), m.const(I32, 2),
                   m.const(F32, 1.0), m.const(F32, 1.0)]
            if name == "ROI_ALIGN":
                ins += [m.const(I32, 0), m.const(I32, 0)]
            ins.append(m.const(BOOL, False))
            out = m.output(code, (0, 2, 2, 1), *xq)
            m.op(name, ins, [out])
            m.outputs = [out]
            scores = [[0.5, 0.9], [0.3, 0.2]]
            boxes_v = [[0, 0, 1, 1, 0, 0, 2, 2], [1, 1, 3, 3, 1, 1, 4, 4]]
            box_code = T_Q16A if code == T_Q8 else code
            bq = (BOX_SCALE, 0) if code == T_Q8 else (0.0, 0)
            xs = as_storage(code, x.reshape(-1).tolist(), *xq).reshape(1, 4, 4, 1)
            got = m.run([as_storage(code, [v for r in scores for v in r], *q).reshape(2, 2),
                         as_storage(box_code, [v for r in boxes_v for v in r], *bq).reshape(2, 8),
                         torch.tensor([0, 0], dtype=torch.int32), xs], [DTYPE[code]])[0]
            assert list(got.shape) == [0, 2, 2, 1], (name, code, got.shape)


ZERO_CODES = dict(CONV_2D=3, AVERAGE_POOL_2D=1, MAX_POOL_2D=17, ADD=0, RELU=19, SOFTMAX=25,
                  RESHAPE=22, CONCATENATION=2, PAD=32, RESIZE_BILINEAR=23, TRANSPOSE=37,
                  L2_NORMALIZATION=11)


def case_zero_sized_batch_through_other_operations():
    # NeuralNetworks.h (feature level 3): operations whose input "may be
    # zero-sized" / that support "zero batches" take the empty result of
    # BOX_WITH_NMS_LIMIT -> ROI_ALIGN ([0, 2, 2, 2]) and give an empty result
    # of the shape the operation's rule gives (batch 0). PAD of a zero-sized
    # tensor is all padding.
    CODES.update(ZERO_CODES)

    def const(m, values, dt=torch.float32):
        return m.const(T_F32 if dt == torch.float32 else T_I32, torch.tensor(values, dtype=dt))

    def i32(m, *values):
        return [m.const(I32, v) for v in values]
    w = torch.randn(3, 1, 1, 2)
    ops = {  # name: (extra inputs, output rank, expected shape)
        "CONV_2D": (lambda m: [const(m, w.tolist()), const(m, [0.0] * 3)] + i32(m, 0, 0, 0, 0, 1,
                                                                               1, 0), [0, 2, 2, 3]),
        "AVERAGE_POOL_2D": (lambda m: i32(m, 0, 0, 0, 0, 1, 1, 2, 2, 0), [0, 1, 1, 2]),
        "MAX_POOL_2D": (lambda m: i32(m, 1, 1, 1, 1, 2, 2, 2, 2, 0), [0, 2, 2, 2]),
        "ADD": (lambda m: [const(m, [1.0, 2.0])] + i32(m, 0), [0, 2, 2, 2]),
        "RELU": (lambda m: [], [0, 2, 2, 2]),
        "SOFTMAX": (lambda m: [m.const(F32, 1.0)], [0, 2, 2, 2]),
        "RESHAPE": (lambda m: [const(m, [-1, 8], torch.int32)], [0, 8]),
        "PAD": (lambda m: [const(m, [[0, 0], [1, 1], [1, 2], [0, 0]], torch.int32)], [0, 4, 5, 2]),
        "RESIZE_BILINEAR": (lambda m: i32(m, 3, 5), [0, 5, 3, 2]),
        "TRANSPOSE": (lambda m: [const(m, [0, 3, 1, 2], torch.int32)], [0, 2, 2, 2]),
        "L2_NORMALIZATION": (lambda m: [], [0, 2, 2, 2]),
    }
    for name, (extra, want) in ops.items():
        m = Model()
        _, boxes, _, batch = nms_model(m, T_F32, 2, 2, (0.95, -1, 0, 0.5, 1.0, 0.1))
        image = m.input(T_F32, (1, 4, 4, 2))
        z = m.operand(T_F32, (0, 2, 2, 2))
        m.op("ROI_ALIGN", [image, boxes, batch] + i32(m, 2, 2) +
             [m.const(F32, 1.0), m.const(F32, 1.0)] + i32(m, 0, 0) + [m.const(BOOL, False)], [z])
        ins = [z, z] + i32(m, 0) if name == "CONCATENATION" else [z] + extra(m)
        out = m.output(T_F32, (0,) * len(want))
        m.op(name, ins, [out])
        m.outputs = [out]
        got = m.run([torch.tensor([[0.5, 0.9], [0.3, 0.2]]),
                     torch.tensor([[0, 0, 1, 1, 0, 0, 2, 2], [1, 1, 3, 3, 1, 1, 4, 4]]).float(),
                     torch.tensor([0, 0], dtype=torch.int32), torch.randn(1, 4, 4, 2)],
                    [torch.float32])[0]
        assert list(got.shape) == want, (name, got.shape, want)
    # The detection operations that take zero boxes: AXIS_ALIGNED_BBOX_TRANSFORM
    # (deltas [0, 8] from the empty ROI_ALIGN result) and HEATMAP_MAX_KEYPOINT.
    m = Model()
    _, boxes, _, batch = nms_model(m, T_F32, 2, 2, (0.95, -1, 0, 0.5, 1.0, 0.1))
    image = m.input(T_F32, (1, 4, 4, 2))
    z, deltas = m.operand(T_F32, (0, 2, 2, 2)), m.operand(T_F32, (0, 8))
    m.op("ROI_ALIGN", [image, boxes, batch] + i32(m, 2, 2) +
         [m.const(F32, 1.0), m.const(F32, 1.0)] + i32(m, 0, 0) + [m.const(BOOL, False)], [z])
    m.op("RESHAPE", [z, const(m, [-1, 8], torch.int32)], [deltas])
    moved = m.output(T_F32, (0, 0))
    m.op("AXIS_ALIGNED_BBOX_TRANSFORM", [boxes, deltas, batch, const(m, [[4.0, 4.0]])], [moved])
    keypoint_scores, keypoints = m.output(T_F32, (0, 0)), m.output(T_F32, (0, 0, 0))
    m.op("HEATMAP_MAX_KEYPOINT", [z, boxes, m.const(BOOL, False)], [keypoint_scores, keypoints])
    m.outputs = [moved, keypoint_scores, keypoints]
    got = m.run([torch.tensor([[0.5, 0.9], [0.3, 0.2]]),
                 torch.tensor([[0, 0, 1, 1, 0, 0, 2, 2], [1, 1, 3, 3, 1, 1, 4, 4]]).float(),
                 torch.tensor([0, 0], dtype=torch.int32), torch.randn(1, 4, 4, 2)],
                [torch.float32] * 3)
    assert [list(t.shape) for t in got] == [[0, 8], [0, 2], [0, 2, 2]], [t.shape for t in got]


def case_box_with_nms_limit_empty_boxes():
    # Two empty boxes of one class: their IoU is 0 / 0 (NaN), so the linear
    # kernel makes the second score NaN (1 - IoU), which no threshold drops:
    # the best box first with its score, then the NaN one, and no crash.
    scores, boxes, classes, batch = run_nms(T_F32, [[0.0, 0.9], [0.0, 0.8]],
                                            [[0, 0, 0, 0, 1, 1, 1, 1]] * 2, [0, 0],
                                            (0.1, -1, 1, 0.5, 1.0, 0.1))
    assert scores[0].item() == torch.tensor(0.9).item() and math.isnan(scores[1].item()), scores
    assert classes.tolist() == [1, 1] and batch.tolist() == [0, 0]


def case_box_with_nms_limit_refusals():
    def build(code=T_F32, scores_dims=(3, 2), boxes_dims=(3, 8), batch_dims=(3,), kernel=0,
              sigma=1.0, box_code=None, out_q=None, scalar_code=None):
        def b(m):
            q = (0.01, 0) if code == T_Q8 else (0.0, 0)
            bc = box_code if box_code is not None else (T_Q16A if code == T_Q8 else code)
            bq = (0.125, 0) if bc == T_Q16A else (0.0, 0)
            sc = scalar_code if scalar_code is not None else (F16 if code == T_F16 else F32)

            def scalar(v):
                return f16_scalar(m, v) if sc == F16 else m.const(F32, v)
            ins = [m.input(code, scores_dims, *q), m.input(bc, boxes_dims, *bq),
                   m.input(T_I32, batch_dims), scalar(0.1), m.const(I32, -1),
                   m.const(I32, kernel), scalar(0.5), scalar(sigma), scalar(0.1)]
            m.op("BOX_WITH_NMS_LIMIT", ins,
                 [m.output(code, (0,), *(out_q or q)), m.output(bc, (0, 4), *bq),
                  m.output(T_I32, (0,)), m.output(T_I32, (0,))])
        return b
    good = [build(), build(T_F16), build(T_Q8), build(kernel=2)]
    bad = {"int32 scores": (build(T_I32), ["input 0"]),
           "float32 boxes for quant8 scores": (build(T_Q8, box_code=T_F32), ["input 1"]),
           "requantized quant8 scores": (build(T_Q8, out_q=(0.02, 0)), ["output 0", "scale"]),
           "float32 thresholds for float16": (build(T_F16, scalar_code=F32), ["input 3"]),
           "kernel 3": (build(kernel=3), ["kernel"]),
           "gaussian with sigma 0": (build(kernel=2, sigma=0.0), ["sigma"]),
           "4 rows of boxes for 3 of scores": (build(boxes_dims=(4, 8)), ["counts differ"]),
           "boxes for 3 classes, scores for 2": (build(boxes_dims=(3, 12)), ["4 coordinates"]),
           "2 batch indices for 3 boxes": (build(batch_dims=(2,)), ["batch index"])}
    check_refusals(good, bad)


# ------------------------------------------------------------ GENERATE_PROPOSALS

def proposals_formula(scores, deltas, anchors, info, stride_h, stride_w, pre, post, iou_thr,
                      min_size):
    """scores [B][H][W][A], deltas [B][H][W][A * 4]. NeuralNetworks.h: each
    anchor, moved to its cell (w * stride_w, h * stride_h), is transformed by
    its deltas (as AXIS_ALIGNED_BBOX_TRANSFORM) and clipped to its image;
    the best pre (when > 0) proceed; boxes of width or height <= min_size
    leave (Android's reference: and those whose centre lies outside the
    image); hard NMS (IoU >= iou_thr leaves) keeps at most post (< 0: all),
    best first. Candidates in (h, w, anchor) order, the first best kept."""
    out = []
    for b, image in enumerate(scores):
        cands = []
        for h, row in enumerate(image):
            for w, cell in enumerate(row):
                for a, score in enumerate(cell):
                    box = [anchors[a][0] + w * stride_w, anchors[a][1] + h * stride_h,
                           anchors[a][2] + w * stride_w, anchors[a][3] + h * stride_h]
                    moved = bbox_transform_formula([box], [deltas[b][h][w][4 * a:4 * a + 4]],
                                                   [0], [info[b]])[0]
                    cands.append((score, moved))
        order = list(range(len(cands)))
        if 0 < pre < len(order):
            order = sorted(order, key=lambda k: -cands[k][0])[:pre]
        height, width = info[b]
        order = [k for k in order
                 if cands[k][1][2] - cands[k][1][0] > min_size
                 and cands[k][1][3] - cands[k][1][1] > min_size
                 and (cands[k][1][0] + cands[k][1][2]) / 2 < width
                 and (cands[k][1][1] + cands[k][1][3]) / 2 < height]
        start, end = 0, len(order)
        limit = end if post < 0 else post
        while start < end and start < limit:
            best = max(range(start, end), key=lambda i: (cands[order[i]][0], -i))
            order[best], order[start] = order[start], order[best]
            i = start + 1
            while i < end:
                if iou(cands[order[i]][1], cands[order[start]][1]) >= iou_thr:
                    end -= 1
                    order[i], order[end] = order[end], order[i]
                else:
                    i += 1
            start += 1
        out += [(cands[k][0], cands[k][1], b) for k in order[:start]]
    return out


def run_proposals(code, scores, deltas, anchors, info, params, nchw=False, qs=(0.0, 0),
                  qd=(0.0, 0)):
    """scores, deltas: NHWC tensors in `code`'s storage; anchors, info: reals."""
    anchor_code = T_Q16S if code == T_Q8 else code
    info_code = T_Q16A if code == T_Q8 else code
    bq = (BOX_SCALE, 0) if code == T_Q8 else (0.0, 0)
    if nchw:
        scores, deltas = (t.permute(0, 3, 1, 2).contiguous() for t in (scores, deltas))
    stride_h, stride_w, pre, post, iou_thr, min_size = params
    m = Model()
    ins = [m.input(code, tuple(scores.shape), *qs), m.input(code, tuple(deltas.shape), *qd),
           m.input(anchor_code, (len(anchors), 4), *bq), m.input(info_code, (len(info), 2), *bq),
           float_scalar(m, code, stride_h), float_scalar(m, code, stride_w), m.const(I32, pre),
           m.const(I32, post), float_scalar(m, code, iou_thr), float_scalar(m, code, min_size),
           m.const(BOOL, nchw)]
    outs = [m.output(code, (0,), *qs), m.output(info_code, (0, 4), *bq), m.output(T_I32, (0,))]
    m.op("GENERATE_PROPOSALS", ins, outs)
    if code == T_Q8:
        a = torch.tensor([round(v * 8) for r in anchors for v in r], dtype=torch.int16)
    else:
        a = torch.tensor([v for r in anchors for v in r], dtype=DTYPE[code])
    return m.run([scores, deltas, a.reshape(-1, 4),
                  as_storage(info_code, [v for r in info for v in r], *bq).reshape(-1, 2)],
                 [DTYPE[code], DTYPE[info_code], torch.int32])


# Android's generate_proposals.mod.py (Android 10), TEST 1: one 2x2 image of
# 2 anchors, strides 4, no limits, IoU 0.3, minimum size 1 (quant8: scores
# 0.01/100, deltas 0.05/128, anchors TENSOR_QUANT16_SYMM 0.125, image sizes
# and boxes TENSOR_QUANT16_ASYMM 0.125/0).
GP_SCORES = [0.8, 0.9, 0.85, 0.85, 0.75, 0.8, 0.9, 0.95]
GP_DELTAS = [0.5, 0.1, 0.1, 0.1, 0.5, 0.1, 0.5, 0.1, -0.25, 0.1, -0.1, -0.1, -0.25, 0.1, 0.2, 0.1,
             0.4, -0.1, -0.2, 0.2, 0.4, -0.1, -0.2, 0.2, -0.2, -0.2, 0.2, 0.2, -0.2, -0.2, 0.2,
             0.2]
GP_ANCHORS = [[0, 1, 4, 3], [1, 0, 3, 4]]
GP_INFO = [[32, 32]]
GP_PARAMS = (4.0, 4.0, -1, -1, 0.3, 1.0)
GP_OUT_SCORES = [0.95, 0.9, 0.85, 0.8]
GP_OUT_BOXES = [4.3785973, 2.7571943, 6.8214025, 7.642805, 1.3512788, 0.18965816, 4.648721,
                4.610342, 3.1903253, 1.2951627, 6.8096747, 3.1048374, 1.9812691, 3.1571944,
                3.6187308, 8.042806]
GP_Q_SCORES = [180, 190, 185, 185, 175, 180, 190, 195]
GP_Q_DELTAS = [138, 130, 130, 130, 138, 130, 138, 130, 123, 130, 126, 126, 123, 130, 132, 130,
               136, 126, 124, 132, 136, 126, 124, 132, 124, 124, 132, 132, 124, 124, 132, 132]
GP_Q_OUT_SCORES = [195, 190, 185, 180]
GP_Q_OUT_BOXES = [35, 22, 55, 61, 11, 2, 37, 37, 26, 10, 54, 25, 16, 25, 29, 64]


def case_generate_proposals_android():
    for nchw in (False, True):
        for code in (T_F32, T_F16):
            sc = torch.tensor(GP_SCORES, dtype=DTYPE[code]).reshape(1, 2, 2, 2)
            de = torch.tensor(GP_DELTAS, dtype=DTYPE[code]).reshape(1, 2, 2, 8)
            scores, boxes, batch = run_proposals(code, sc, de, GP_ANCHORS, GP_INFO, GP_PARAMS,
                                                 nchw)
            within(scores.float().tolist(), GP_OUT_SCORES, float_tol(code), (code, nchw))
            within(boxes.float().reshape(-1).tolist(), GP_OUT_BOXES, float_tol(code),
                   (code, nchw))
            assert batch.tolist() == [0] * 4
        scores, boxes, batch = run_proposals(
            T_Q8, torch.tensor(GP_Q_SCORES, dtype=torch.uint8).reshape(1, 2, 2, 2),
            torch.tensor(GP_Q_DELTAS, dtype=torch.uint8).reshape(1, 2, 2, 8), GP_ANCHORS,
            GP_INFO, GP_PARAMS, nchw, (0.01, 100), (0.05, 128))
        assert scores.tolist() == GP_Q_OUT_SCORES, scores
        within(u16(boxes.reshape(-1)), GP_Q_OUT_BOXES, lambda v: 1, ("quant8", nchw))
    got = proposals_formula(torch.tensor(GP_SCORES).reshape(1, 2, 2, 2).tolist(),
                            torch.tensor(GP_DELTAS).reshape(1, 2, 2, 8).tolist(), GP_ANCHORS,
                            GP_INFO, *GP_PARAMS)
    within([v for _, b, _ in got for v in b], GP_OUT_BOXES, float_tol(T_F32), "formula")


def case_generate_proposals_formula():
    gen = torch.Generator().manual_seed(16)
    sc = torch.rand(2, 3, 4, 3, generator=gen)
    de = (torch.rand(2, 3, 4, 12, generator=gen) - 0.5) * 0.6
    anchors = [[0, 0, 8, 8], [2, 0, 6, 12], [-3, -3, 3, 3]]
    info = [[20.0, 30.0], [9.0, 11.0]]
    for params in ((4.0, 5.0, -1, -1, 0.5, 2.0), (3.0, 3.0, 10, 6, 0.4, 0.5),
                   (4.0, 4.0, 0, -1, 0.7, 0.0)):
        want = proposals_formula(sc.tolist(), de.tolist(), anchors, info, *params)
        assert len(want) > 2, params
        for nchw in (False, True):
            got = run_proposals(T_F32, sc, de, anchors, info, params, nchw)
            within(got[0].tolist(), [s for s, _, _ in want], lambda v: 0, (params, nchw))
            within(got[1].reshape(-1).tolist(), [v for _, b, _ in want for v in b],
                   lambda v: 1e-4 * (1 + abs(v)), (params, nchw))
            assert got[2].tolist() == [b for _, _, b in want], (params, nchw)
    # A post-NMS limit of 0 keeps nothing: zero-sized outputs.
    got = run_proposals(T_F32, sc, de, anchors, info, (4.0, 4.0, -1, 0, 0.5, 0.0))
    assert [list(t.shape) for t in got] == [[0], [0, 4], [0]], [t.shape for t in got]


def case_generate_proposals_refusals():
    def build(code=T_F32, s_dims=(1, 2, 2, 2), d_dims=(1, 2, 2, 8), a_dims=(2, 4),
              i_dims=(1, 2), anchor_code=None, a_scale=0.125, stride=4.0):
        def b(m):
            q = (0.01, 100) if code == T_Q8 else (0.0, 0)
            ac = anchor_code if anchor_code is not None else (T_Q16S if code == T_Q8 else code)
            ic = T_Q16A if code == T_Q8 else code
            aq = (a_scale, 0) if ac == T_Q16S else ((0.125, 0) if ac == T_Q16A else (0.0, 0))
            iq = (0.125, 0) if ic == T_Q16A else (0.0, 0)
            ins = [m.input(code, s_dims, *q), m.input(code, d_dims, *q),
                   m.input(ac, a_dims, *aq), m.input(ic, i_dims, *iq),
                   float_scalar(m, code, stride), float_scalar(m, code, 4.0),
                   m.const(I32, -1), m.const(I32, -1), float_scalar(m, code, 0.3),
                   float_scalar(m, code, 1.0), m.const(BOOL, False)]
            m.op("GENERATE_PROPOSALS", ins, [m.output(code, (0,), *q),
                                             m.output(ic, (0, 4), *iq), m.output(T_I32, (0,))])
        return b
    good = [build(), build(T_F16), build(T_Q8)]
    bad = {"int32 scores": (build(T_I32), ["input 0"]),
           "quant16 asymm anchors for quant8": (build(T_Q8, anchor_code=T_Q16A), ["input 2"]),
           "anchors of scale 0.25": (build(T_Q8, a_scale=0.25), ["anchors", "0.125"]),
           "3 anchors, scores for 2": (build(a_dims=(3, 4)), ["anchor"]),
           "deltas for 3 anchors": (build(d_dims=(1, 2, 2, 12)), ["4 deltas"]),
           "image sizes for 2 images": (build(i_dims=(2, 2)), ["image size"]),
           "stride 0": (build(stride=0.0), ["stride"])}
    check_refusals(good, bad)


# ------------------------------------------------------------ DETECTION_POSTPROCESSING

def postprocess_formula(scores, deltas, anchors, scales, regular, max_det, max_cls, per_class,
                        score_thr, iou_thr, bg_in_label):
    """scores [B][A][C], deltas [B][A][L], anchors [A] of [cy, cx, h, w].
    NeuralNetworks.h: each anchor's box is the anchor moved by (dy, dx)
    (relative to its size, divided by the scales) and resized by exp(dh,
    dw / scales), output as [y1, x1, y2, x2]. Regular NMS: per class but 0,
    hard NMS of the anchors above score_thr, at most per_class, then the
    best max_det of all. Fast: hard NMS of anchors by their best class score,
    at most max_det, each giving its best min(C - 1, max_cls) classes. Classes
    are reported minus 1 unless the background is in the label map; rows
    past the detections are 0 (Android's reference: max_det rows for regular
    NMS, max_det * max_cls for fast)."""
    sy, sx, sh, sw = scales
    classes = len(scores[0][0])
    slots = max_det if regular else max_det * max_cls
    out = []
    for b, image in enumerate(scores):
        boxes = []
        for a, (cy, cx, h, w) in enumerate(anchors):
            dy, dx, dh, dw = deltas[b][a][:4]
            y, x = cy + h * dy / sy, cx + w * dx / sx
            hh, hw = h * math.exp(dh / sh) / 2, w * math.exp(dw / sw) / 2
            boxes.append([y - hh, x - hw, y + hh, x + hw])

        def hard_nms(cands, score_of, limit):
            cands, start, end = list(cands), 0, len(cands)
            while start < end and start < limit:
                best = max(range(start, end), key=lambda i: (score_of(cands[i]), -i))
                cands[best], cands[start] = cands[start], cands[best]
                i = start + 1
                while i < end:
                    if iou(boxes[cands[i][0]], boxes[cands[start][0]]) >= iou_thr:
                        end -= 1
                        cands[i], cands[end] = cands[end], cands[i]
                    else:
                        i += 1
                start += 1
            return cands[:start]
        rows = []
        if regular:
            kept = []
            for c in range(1, classes):
                cands = [(a, c) for a in range(len(anchors)) if image[a][c] > score_thr]
                kept += hard_nms(cands, lambda ac: image[ac[0]][ac[1]], per_class)
            kept.sort(key=lambda ac: -image[ac[0]][ac[1]])
            rows = [(image[a][c], boxes[a], c) for a, c in kept[:max_det]]
        else:
            best = [max(image[a][1:]) for a in range(len(anchors))]
            cands = [(a, 0) for a in range(len(anchors)) if best[a] > score_thr]
            for a, _ in hard_nms(cands, lambda ac: best[ac[0]], max_det):
                order = sorted(range(1, classes), key=lambda c: -image[a][c])
                rows += [(image[a][c], boxes[a], c) for c in order[:min(classes - 1, max_cls)]]
        shift = 0 if bg_in_label else 1
        padded = rows + [(0.0, [0.0] * 4, shift)] * (slots - len(rows))
        out.append(([r[0] for r in padded], [r[1] for r in padded],
                    [r[2] - shift for r in padded], len(rows)))
    return out


def run_postprocess(code, scores, deltas, anchors, params):
    scales, regular, max_det, max_cls, per_class, score_thr, iou_thr, bg = params
    m = Model()
    ins = [m.input(code, tuple(scores.shape)), m.input(code, tuple(deltas.shape)),
           m.input(code, tuple(anchors.shape))]
    ins += [float_scalar(m, code, v) for v in scales]
    ins += [m.const(BOOL, regular), m.const(I32, max_det), m.const(I32, max_cls),
            m.const(I32, per_class), float_scalar(m, code, score_thr),
            float_scalar(m, code, iou_thr), m.const(BOOL, bg)]
    outs = [m.output(code, (0, 0)), m.output(code, (0, 0, 0)), m.output(T_I32, (0, 0)),
            m.output(T_I32, (0,))]
    m.op("DETECTION_POSTPROCESSING", ins, outs)
    return m.run([scores, deltas, anchors], [DTYPE[code], DTYPE[code], torch.int32, torch.int32])


# Android's detection_postprocess.mod.py (Android 10): 6 anchors of 3 classes,
# scales 10, 10, 5, 5, at most 3 detections, 1 class per detection and 1
# detection per class, score threshold 0, IoU 0.5, no background label; the
# regular and the fast NMS.
DP_SCORES = [0.0, 0.9, 0.8, 0.0, 0.75, 0.72, 0.0, 0.6, 0.5, 0.0, 0.93, 0.95, 0.0, 0.5, 0.4, 0.0,
             0.3, 0.2]
DP_DELTAS = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
             0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
DP_ANCHORS = [0.5, 0.5, 1.0, 1.0, 0.5, 0.5, 1.0, 1.0, 0.5, 0.5, 1.0, 1.0, 0.5, 10.5, 1.0, 1.0,
              0.5, 10.5, 1.0, 1.0, 0.5, 100.5, 1.0, 1.0]
DP_OUT = {True: ([0.95, 0.93, 0.0], [0, 10, 1, 11, 0, 10, 1, 11, 0, 0, 0, 0], [1, 0, 0], 2),
          False: ([0.95, 0.9, 0.3], [0, 10, 1, 11, 0, 0, 1, 1, 0, 100, 1, 101], [1, 0, 0], 3)}


def case_detection_postprocessing_android():
    for regular, (w_scores, w_boxes, w_classes, w_count) in DP_OUT.items():
        params = ((10.0, 10.0, 5.0, 5.0), regular, 3, 1, 1, 0.0, 0.5, False)
        for code in (T_F32, T_F16):
            sc = torch.tensor(DP_SCORES, dtype=DTYPE[code]).reshape(1, 6, 3)
            de = torch.tensor(DP_DELTAS, dtype=DTYPE[code]).reshape(1, 6, 4)
            an = torch.tensor(DP_ANCHORS, dtype=DTYPE[code]).reshape(6, 4)
            scores, boxes, classes, count = run_postprocess(code, sc, de, an, params)
            assert list(scores.shape) == [1, 3] and list(boxes.shape) == [1, 3, 4]
            within(scores.float().reshape(-1).tolist(), w_scores, float_tol(code), (regular, code))
            within(boxes.float().reshape(-1).tolist(), w_boxes, float_tol(code), (regular, code))
            assert classes.reshape(-1).tolist() == w_classes, (regular, code, classes)
            assert count.tolist() == [w_count], (regular, code, count)
        got = postprocess_formula(torch.tensor(DP_SCORES).reshape(1, 6, 3).tolist(),
                                  torch.tensor(DP_DELTAS).reshape(1, 6, 4).tolist(),
                                  torch.tensor(DP_ANCHORS).reshape(6, 4).tolist(), *params)
        within(got[0][0], w_scores, float_tol(T_F32), ("formula", regular))
        assert got[0][2] == w_classes and got[0][3] == w_count, ("formula", regular, got)


def case_detection_postprocessing_formula():
    gen = torch.Generator().manual_seed(17)
    sc = torch.rand(2, 12, 4, generator=gen)
    de = (torch.rand(2, 12, 6, generator=gen) - 0.5)
    an = torch.cat([torch.rand(12, 2, generator=gen) * 6, torch.rand(12, 2, generator=gen) * 3 +
                    0.5], dim=1)
    for params in (((10.0, 10.0, 5.0, 5.0), True, 5, 1, 2, 0.3, 0.4, False),
                   ((8.0, 6.0, 4.0, 2.0), False, 3, 2, 1, 0.2, 0.3, True),
                   ((1.0, 1.0, 1.0, 1.0), False, 4, 5, 1, 0.5, 0.6, False)):
        want = postprocess_formula(sc.tolist(), de.tolist(), an.tolist(), *params)
        got = run_postprocess(T_F32, sc, de, an, params)
        for b in range(2):
            w_scores, w_boxes, w_classes, w_count = want[b]
            within(got[0][b].tolist(), w_scores, lambda v: 0, (params, b))
            within(got[1][b].reshape(-1).tolist(), [v for r in w_boxes for v in r],
                   lambda v: 1e-5 * (1 + abs(v)), (params, b))
            assert got[2][b].tolist() == w_classes, (params, b, got[2][b], w_classes)
            assert got[3][b].item() == w_count, (params, b)


def case_detection_postprocessing_refusals():
    def build(code=T_F32, s_dims=(1, 6, 3), d_dims=(1, 6, 4), a_dims=(6, 4), regular=True,
              max_det=3, per_class=1, scale=10.0, out_rows=3, scalar_code=None):
        def b(m):
            sc = scalar_code if scalar_code is not None else (F16 if code == T_F16 else F32)

            def scalar(v):
                return f16_scalar(m, v) if sc == F16 else m.const(F32, v)
            ins = [m.input(code, s_dims), m.input(code, d_dims), m.input(code, a_dims),
                   scalar(scale), scalar(10.0), scalar(5.0), scalar(5.0), m.const(BOOL, regular),
                   m.const(I32, max_det), m.const(I32, 2), m.const(I32, per_class), scalar(0.0),
                   scalar(0.5), m.const(BOOL, False)]
            m.op("DETECTION_POSTPROCESSING", ins,
                 [m.output(code, (1, out_rows)), m.output(code, (1, out_rows, 4)),
                  m.output(T_I32, (1, out_rows)), m.output(T_I32, (1,))])
        return b
    good = [build(), build(T_F16), build(regular=False, out_rows=6)]
    bad = {"int32 scores": (build(T_I32), ["input 0"]),
           "float32 scales for float16": (build(T_F16, scalar_code=F32), ["input 3"]),
           "scale 0": (build(scale=0.0), ["scale"]),
           "max detections 0": (build(max_det=0, out_rows=0), ["max detections"]),
           "max detections per class 0": (build(per_class=0), ["per class"]),
           "one class": (build(s_dims=(1, 6, 1)), ["classes"]),
           "3 deltas per anchor": (build(d_dims=(1, 6, 3)), ["4 or more"]),
           "5 anchors for 6": (build(a_dims=(5, 4)), ["anchor"]),
           "fast NMS declared with max detections rows": (build(regular=False), ["computes"])}
    check_refusals(good, bad)


CASES = [v for k, v in list(globals().items()) if k.startswith("case_")]

if __name__ == "__main__":
    sys.exit(run_cases(CASES))

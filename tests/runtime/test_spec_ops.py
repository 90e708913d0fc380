#!/usr/bin/env python3
"""NNAPI operations checked against NeuralNetworks.h's formulas, through ctypes.

Each case builds a small NNAPI model by calling libneuralnetworks.so directly
(the Model helper of test_extra_ops.py), runs it, and compares the result with
values computed here by index loops that spell out the operation as Android's
NeuralNetworks.h (feature level <= 3) and its reference implementation define
it: never with values the runtime produced. The last line is
"N passed, M failed"; the exit status is non-zero on any failure.
"""
import ctypes
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_extra_ops import (BOOL, CODES, F32, I32, T_F32, T_I32, T_Q8, Model,  # noqa: E402
                            _refused, close, lib, ok, run_cases)

T_F16, F16 = 8, 10
CODES.update(TRANSPOSE_CONV_2D=91, SPACE_TO_BATCH_ND=33, BATCH_TO_SPACE_ND=29,
             LOCAL_RESPONSE_NORMALIZATION=13, EMBEDDING_LOOKUP=7, HASHTABLE_LOOKUP=10,
             RANDOM_MULTINOMIAL=74, CONV_2D=3, DEPTHWISE_CONV_2D=4, GROUPED_CONV_2D=55,
             DEQUANTIZE=6, ADD=0, SOFTMAX=25, MAX_POOL_2D=17, RELU=19, RELU1=20, RELU6=21,
             LOGISTIC=14, TANH=28, EXP=49, ABS=38, NEG=67, SQRT=88, RSQRT=83, LOG=60, FLOOR=8,
             FULLY_CONNECTED=9, L2_NORMALIZATION=11, MEAN=31, SUB=36, MUL=18, DIV=30,
             LSH_PROJECTION=15)
T_Q8_SYMM, T_Q8_PER_CHANNEL = 13, 11
DTYPE = {T_F32: torch.float32, T_F16: torch.float16, T_I32: torch.int32, T_Q8: torch.uint8}


def run_one(name, inputs, consts, outputs):
    """One operation. inputs: [(code, tensor, scale, zp)] model inputs;
    consts: the remaining operation inputs after them, each an operand index
    maker m -> index; outputs: [(code, declared dims, scale, zp)]. Returns the
    outputs, or raises RuntimeError naming the failing call."""
    m = Model()
    ins = [m.input(code, tuple(t.shape), scale, zp) for code, t, scale, zp in inputs]
    ins += [make(m) for make in consts]
    outs = [m.output(code, dims, scale, zp) for code, dims, scale, zp in outputs]
    m.op(name, ins, outs)
    return m.run([t for _, t, _, _ in inputs], [DTYPE[code] for code, _, _, _ in outputs])


def const_ints(values, dims=None):
    return lambda m: m.const(T_I32, torch.tensor(values, dtype=torch.int32), dims=dims)


def scalar(code, value):
    if code == F16:
        return lambda m: m.const(F16, torch.tensor(value, dtype=torch.float16), dims=())
    return lambda m: m.const(code, value)


def expect_failure(fn, what):
    try:
        fn()
    except RuntimeError as e:
        assert "returned" in str(e), e
        return str(e)
    raise AssertionError(f"{what}: the runtime accepted it")


# ------------------------------------------------------------ TRANSPOSE_CONV_2D

def transpose_pad(scheme, requested, kernel, stride):
    """NNAPI's implicit padding of TRANSPOSE_CONV_2D along one axis, from the
    requested output size: SAME pads ((ceil(out / stride) - 1) * stride +
    kernel - out) in all, half (rounded down, at least 0) before and the rest
    after (negative when the request is larger than the natural size); VALID
    pads nothing."""
    if scheme != 1:
        return 0, 0
    total = ((requested + stride - 1) // stride - 1) * stride + kernel - requested
    before = max(total, 0) // 2
    return before, total - before


def transpose_conv_loops(x, w, b, pads, strides):
    """NHWC x [n, h, w, c_in], filter [c_out, kh, kw, c_in], bias [c_out];
    pads (left, right, top, bottom), strides (w, h). Each input pixel (i, j)
    adds x * filter at output (i * stride_h + ki - top, j * stride_w + kj -
    left) when that lies inside the output of size (in - 1) * stride +
    kernel - before - after; then the bias is added to every output."""
    n, ih, iw, cin = x.shape
    cout, kh, kw, _ = w.shape
    left, right, top, bottom = pads
    sw, sh = strides
    oh = (ih - 1) * sh + kh - top - bottom
    ow = (iw - 1) * sw + kw - left - right
    out = [[[[0.0] * cout for _ in range(ow)] for _ in range(oh)] for _ in range(n)]
    xl, wl, bl = x.tolist(), w.tolist(), b.tolist()
    for bi in range(n):
        for i in range(ih):
            for j in range(iw):
                for ki in range(kh):
                    for kj in range(kw):
                        y, z = i * sh + ki - top, j * sw + kj - left
                        if not (0 <= y < oh and 0 <= z < ow):
                            continue
                        for co in range(cout):
                            out[bi][y][z][co] += sum(xl[bi][i][j][ci] * wl[co][ki][kj][ci]
                                                     for ci in range(cin))
    for bi in range(n):
        for y in range(oh):
            for z in range(ow):
                for co in range(cout):
                    out[bi][y][z][co] += bl[co]
    return torch.tensor(out, dtype=torch.float32)


def transpose_conv_implicit(x, w, b, requested, scheme, strides, nchw, declared):
    m = Model()
    i = m.input(T_F32, tuple(x.shape))
    ins = [i, m.const(T_F32, w), m.const(T_F32, b),
           m.const(T_I32, torch.tensor(requested, dtype=torch.int32)),
           m.const(I32, scheme), m.const(I32, strides[0]), m.const(I32, strides[1]),
           m.const(I32, 0), m.const(BOOL, nchw)]
    o = m.output(T_F32, declared)
    m.op("TRANSPOSE_CONV_2D", ins, [o])
    return m.run([x], [torch.float32])[0]


def case_transpose_conv_same_larger_than_natural():
    # Input 2x3, 1x1 filter, stride 2: the natural output is 3x5; SAME with
    # the requested [1, 4, 6, 2] pads (2-1)*2+1-4 = -1 (0 before, -1 after)
    # along h and (3-1)*2+1-6 = -1 along w, so the output is 4x6 and its last
    # row and column hold the bias alone.
    torch.manual_seed(1)
    x = torch.randn(1, 2, 3, 3)
    w = torch.randn(2, 1, 1, 3)
    b = torch.randn(2)
    requested = [1, 4, 6, 2]
    pads = transpose_pad(1, 6, 1, 2) + transpose_pad(1, 4, 1, 2)
    assert pads == (0, -1, 0, -1), pads
    want = transpose_conv_loops(x, w, b, pads, (2, 2))
    assert list(want.shape) == requested
    for declared in ((0, 0, 0, 0), tuple(requested)):  # unknown, then fixed dims
        got = transpose_conv_implicit(x, w, b, requested, 1, (2, 2), False, declared)
        close(got, want, atol=1e-5, rtol=1e-5)
        close(got[0, 3, :, :], b.expand(6, 2))


def case_transpose_conv_same_and_valid_shapes():
    # 3x3 filter, strides (w 2, h 3), input 3x4: SAME with requests that round
    # differently, and VALID (no padding whatever the request: (in - 1) *
    # stride + kernel), in NHWC and NCHW.
    torch.manual_seed(2)
    x = torch.randn(2, 3, 4, 2)
    w = torch.randn(3, 3, 3, 2)
    b = torch.randn(3)
    for scheme, (rh, rw) in ((1, (9, 8)), (1, (7, 7)), (1, (8, 9)), (2, (5, 5))):
        pads = transpose_pad(scheme, rw, 3, 2) + transpose_pad(scheme, rh, 3, 3)
        want = transpose_conv_loops(x, w, b, pads, (2, 3))
        got = transpose_conv_implicit(x, w, b, [2, rh, rw, 3], scheme, (2, 3), False,
                                      (0, 0, 0, 0))
        close(got, want, atol=1e-4, rtol=1e-4)
        got = transpose_conv_implicit(x.permute(0, 3, 1, 2), w, b, [2, 3, rh, rw], scheme,
                                      (2, 3), True, (0, 0, 0, 0))
        close(got, want.permute(0, 3, 1, 2), atol=1e-4, rtol=1e-4)


# ------------------------------------------- SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND

def space_to_batch_loops(x, block, pads, fill):
    """NHWC x; out[(i * bw + j) * n + b, y, xx, c] = padded[b, y * bh + i,
    xx * bw + j, c] with padded = x padded by pads (top, bottom, left, right)
    with `fill`."""
    n, h, w, c = x.shape
    bh, bw = block
    top, bottom, left, right = pads
    oh, ow = (h + top + bottom) // bh, (w + left + right) // bw
    xl = x.tolist()
    out = []
    for ob in range(n * bh * bw):
        b, i, j = ob % n, (ob // n) // bw, (ob // n) % bw
        out.append([[[xl[b][y * bh + i - top][xx * bw + j - left][ch]
                      if 0 <= y * bh + i - top < h and 0 <= xx * bw + j - left < w else fill
                      for ch in range(c)] for xx in range(ow)] for y in range(oh)])
    return torch.tensor(out, dtype=x.dtype)


def batch_to_space_loops(x, block):
    """NHWC x; out[b, y * bh + i, xx * bw + j, c] = x[(i * bw + j) * n + b, y, xx, c]."""
    batches, h, w, c = x.shape
    bh, bw = block
    n = batches // (bh * bw)
    xl = x.tolist()
    return torch.tensor([[[[xl[((yy % bh) * bw + xx % bw) * n + b][yy // bh][xx // bw][ch]
                            for ch in range(c)] for xx in range(w * bw)]
                          for yy in range(h * bh)] for b in range(n)], dtype=x.dtype)


def to_nchw(t):
    return t.permute(0, 3, 1, 2).contiguous()


def case_space_to_batch_nd_types_and_layouts():
    # Block [2, 3], paddings top 1, bottom 0, left 2, right 1 on a 2x3x6x2
    # image: padded 4x9, output [2 * 2 * 3, 2, 3, 2].
    x = torch.randn(2, 3, 6, 2)
    block, pads = [2, 3], [1, 0, 2, 1]
    for code, t, scale, zp, fill in (
            (T_F32, x, 0.0, 0, 0.0),
            (T_F16, x.half(), 0.0, 0, 0.0),
            (T_Q8, torch.randint(0, 256, x.shape, dtype=torch.uint8), 0.5, 37, 37)):
        want = space_to_batch_loops(t, block, pads, fill)
        assert list(want.shape) == [12, 2, 3, 2]
        for nchw in (False, True):
            got = run_one("SPACE_TO_BATCH_ND", [(code, to_nchw(t) if nchw else t, scale, zp)],
                          [const_ints(block), const_ints(pads, dims=(2, 2))]
                          + ([scalar(BOOL, True)] if nchw else []),
                          [(code, (0, 0, 0, 0), scale, zp)])[0]
            assert torch.equal(got, to_nchw(want) if nchw else want), (code, nchw)


def case_batch_to_space_nd_types_and_layouts():
    block = [3, 2]
    x = torch.randn(12, 2, 3, 2)
    for code, t, scale, zp in ((T_F32, x, 0.0, 0), (T_F16, x.half(), 0.0, 0),
                               (T_Q8, torch.randint(0, 256, x.shape, dtype=torch.uint8), 0.25, 3)):
        want = batch_to_space_loops(t, block)
        assert list(want.shape) == [2, 6, 6, 2]
        for nchw in (False, True):
            got = run_one("BATCH_TO_SPACE_ND", [(code, to_nchw(t) if nchw else t, scale, zp)],
                          [const_ints(block)] + ([scalar(BOOL, True)] if nchw else []),
                          [(code, (0, 0, 0, 0), scale, zp)])[0]
            assert torch.equal(got, to_nchw(want) if nchw else want), (code, nchw)
    # The batch must be a multiple of bh * bw: refused at finish (BAD_DATA).
    expect_failure(lambda: run_one("BATCH_TO_SPACE_ND", [(T_F32, torch.randn(5, 2, 2, 1), 0, 0)],
                                   [const_ints(block)], [(T_F32, (0, 0, 0, 0), 0, 0)]),
                   "batch 5 with blocks 3x2")


# ------------------------------------------------- LOCAL_RESPONSE_NORMALIZATION

def lrn_loops(x, radius, bias, alpha, beta, axis):
    """sqr_sum[..., d] = sum(x[..., d - radius : d + radius + 1]^2) along
    `axis` (clipped); out = x / (bias + alpha * sqr_sum)^beta."""
    xd = x.double().movedim(axis, -1).contiguous()
    flat = xd.reshape(-1, xd.shape[-1]).tolist()
    depth = xd.shape[-1]
    out = []
    for row in flat:
        out.append([row[d] / (bias + alpha * sum(row[k] ** 2 for k in
                                                  range(max(0, d - radius),
                                                        min(depth, d + radius + 1)))) ** beta
                    for d in range(depth)])
    return torch.tensor(out, dtype=torch.float64).reshape(xd.shape).movedim(-1, axis)


def case_local_response_normalization():
    torch.manual_seed(3)
    for shape, axis in (((2, 3, 4, 7), None), ((2, 3, 4, 7), 1), ((5, 6), 0), ((9,), -1)):
        x = torch.randn(shape)
        radius, bias, alpha, beta = 2, 1.5, 0.7, 0.6
        want = lrn_loops(x, radius, bias, alpha, beta, -1 if axis is None else axis)
        for code, scode, tol in ((T_F32, F32, 1e-5), (T_F16, F16, 2e-3)):
            t = x if code == T_F32 else x.half()
            extra = [] if axis is None else [scalar(I32, axis)]
            got = run_one("LOCAL_RESPONSE_NORMALIZATION", [(code, t, 0, 0)],
                          [scalar(I32, radius), scalar(scode, bias), scalar(scode, alpha),
                           scalar(scode, beta)] + extra,
                          [(code, (0,) * len(shape), 0, 0)])[0]
            if code == T_F16:
                want_t = lrn_loops(t.float(), radius, bias, alpha, beta,
                                   -1 if axis is None else axis)
            else:
                want_t = want
            close(got.double(), want_t, atol=tol, rtol=tol)


# ------------------------------------------------ EMBEDDING_LOOKUP, HASHTABLE_LOOKUP

def case_embedding_lookup():
    lookups = [2, 0, 2, 4]
    for code, values, scale, zp in (
            (T_F32, torch.randn(5, 3, 2), 0, 0),
            (T_I32, torch.randint(-100, 100, (5, 4), dtype=torch.int32), 0, 0),
            (T_Q8, torch.randint(0, 256, (5, 2, 2), dtype=torch.uint8), 0.1, 9)):
        want = torch.stack([values[k] for k in lookups])
        got = run_one("EMBEDDING_LOOKUP",
                      [(T_I32, torch.tensor(lookups, dtype=torch.int32), 0, 0),
                       (code, values, scale, zp)], [],
                      [(code, (0,) * values.dim(), scale, zp)])[0]
        assert torch.equal(got, want), code
    # A lookup outside the rows fails the operation (OP_FAILED, 5).
    err = expect_failure(lambda: run_one(
        "EMBEDDING_LOOKUP", [(T_I32, torch.tensor([1, 5], dtype=torch.int32), 0, 0),
                             (T_F32, torch.randn(5, 2), 0, 0)], [],
        [(T_F32, (0, 0), 0, 0)]), "lookup 5 of 5 rows")
    assert "compute returned 5" in err, err


def case_hashtable_lookup():
    keys = [-3, 4, 10, 12]
    lookups = [10, 5, -3, 12, 0]
    for code, values, scale, zp in (
            (T_F32, torch.randn(4, 3), 0, 0),
            (T_I32, torch.randint(-100, 100, (4, 2, 2), dtype=torch.int32), 0, 0),
            (T_Q8, torch.randint(1, 256, (4, 3), dtype=torch.uint8), 0.5, 128)):
        want = torch.stack([values[keys.index(k)] if k in keys else torch.zeros_like(values[0])
                            for k in lookups])
        want_hits = torch.tensor([1 if k in keys else 0 for k in lookups], dtype=torch.uint8)
        got, hits = run_one("HASHTABLE_LOOKUP",
                            [(T_I32, torch.tensor(lookups, dtype=torch.int32), 0, 0)],
                            [const_ints(keys), lambda m, v=values, c=code, s=scale, z=zp:
                             m.const(c, v, scale=s, zp=z)],
                            [(code, (0,) * values.dim(), scale, zp), (T_Q8, (0,), 1.0, 0)])
        assert torch.equal(got, want), code
        assert torch.equal(hits, want_hits), code


# ------------------------------------------------------------ RANDOM_MULTINOMIAL
# NNAPI fixes no random generator, so no draw can be predicted: the cases
# check what NeuralNetworks.h does fix. Each row's class frequencies over many
# draws are softmax(row) (within 5 standard deviations of n * p, a miss has
# probability below 1e-5 per class), a class of probability 0 (logit -inf) is
# never drawn, indices lie in [0, classes), the shape is [batches, samples],
# equal non-zero seeds give equal draws, other seeds (or seeds 0, 0: "randomly
# generated") other draws.

def multinomial(logits, samples, seeds, code=T_F32):
    t = logits if code == T_F32 else logits.half()
    return run_one("RANDOM_MULTINOMIAL", [(code, t, 0, 0)],
                   [scalar(I32, samples), const_ints(seeds)],
                   [(T_I32, (0, 0), 0, 0)])[0]


def case_random_multinomial_distribution():
    p = torch.tensor([[0.1, 0.2, 0.7, 0.0], [0.25, 0.25, 0.25, 0.25]], dtype=torch.float64)
    logits = p.log().float()  # log 0 = -inf: never drawn
    n = 20000
    for code in (T_F32, T_F16):
        got = multinomial(logits, n, [7, 11], code)
        assert list(got.shape) == [2, n] and got.dtype == torch.int32, got.shape
        assert int(got.min()) >= 0 and int(got.max()) < 4
        for row in range(2):
            counts = torch.bincount(got[row].long(), minlength=4).double()
            for k in range(4):
                mean = n * float(p[row, k])
                sd = (n * float(p[row, k]) * (1 - float(p[row, k]))) ** 0.5
                assert abs(float(counts[k]) - mean) <= 5 * sd, (code, row, k, counts)
        assert int((got[0] == 3).sum()) == 0


def case_random_multinomial_seeds():
    logits = torch.zeros(3, 10)
    a = multinomial(logits, 64, [7, 11])
    assert torch.equal(a, multinomial(logits, 64, [7, 11])), "equal seeds, other draws"
    assert not torch.equal(a, multinomial(logits, 64, [7, 12])), "other seeds, equal draws"
    assert not torch.equal(a, multinomial(logits, 64, [8, 11])), "other seeds, equal draws"
    # Both seeds 0: a fresh seed each execution (64 * 3 uniform draws over 10
    # classes agree by chance with probability 10^-192).
    assert not torch.equal(multinomial(logits, 64, [0, 0]), multinomial(logits, 64, [0, 0]))


# ------------------------------------------ TENSOR_QUANT8_SYMM_PER_CHANNEL, QUANT8_SYMM

class SymmPerChannelQuantParams(ctypes.Structure):
    _fields_ = [("channelDim", ctypes.c_uint32), ("scaleCount", ctypes.c_uint32),
                ("scales", ctypes.POINTER(ctypes.c_float))]


def set_channel_quant(m, index, channel_dim, scales):
    arr = (ctypes.c_float * len(scales))(*scales)
    params = SymmPerChannelQuantParams(channel_dim, len(scales), arr)
    return lib.ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(
        m.handle, index, ctypes.byref(params))


def per_channel_const(m, values, channel_dim, scales):
    idx = m.const(T_Q8_PER_CHANNEL, values)
    ret = set_channel_quant(m, idx, channel_dim, scales)
    assert ret == 0, f"setOperandSymmPerChannelQuantParams returned {ret}"
    return idx


def conv_loops(x, w, b, pads, strides, groups=1):
    """NHWC x [n, h, w, cin]; filter [cout, kh, kw, cin / groups]; bias
    [cout]; pads (left, right, top, bottom), strides (w, h). out[b, y, z, co]
    = bias[co] + sum x[b, y * sh + i - top, z * sw + j - left, g * cin_g + ci]
    * w[co, i, j, ci] over the window inside the image, g = co // (cout /
    groups)."""
    n, h, wd, cin = x.shape
    cout, kh, kw, cin_g = w.shape
    left, right, top, bottom = pads
    sw, sh = strides
    oh = (h + top + bottom - kh) // sh + 1
    ow = (wd + left + right - kw) // sw + 1
    xl, wl, bl = x.tolist(), w.tolist(), b.tolist()
    per_group = cout // groups
    out = []
    for bi in range(n):
        rows = []
        for y in range(oh):
            cols = []
            for z in range(ow):
                chans = []
                for co in range(cout):
                    g = co // per_group
                    acc = bl[co]
                    for i in range(kh):
                        for j in range(kw):
                            yy, zz = y * sh + i - top, z * sw + j - left
                            if 0 <= yy < h and 0 <= zz < wd:
                                acc += sum(xl[bi][yy][zz][g * cin_g + ci] * wl[co][i][j][ci]
                                           for ci in range(cin_g))
                    chans.append(acc)
                cols.append(chans)
            rows.append(cols)
        out.append(rows)
    return torch.tensor(out, dtype=torch.float64)


def requantize(acc, multipliers, zp, lo=0, hi=255):
    """NNAPI's quantized result: round(acc[..., c] * multiplier[c]) + zero
    point, saturated. NNAPI leaves the rounding of ties and the multiplier's
    precision to the implementation, so results are compared within one
    quantum."""
    return torch.clamp(torch.round(acc * torch.tensor(multipliers, dtype=torch.float64)) + zp,
                       lo, hi)


def case_per_channel_convolutions():
    torch.manual_seed(4)
    in_scale, in_zp, out_scale, out_zp = 0.05, 120, 0.2, 100
    x = torch.randint(0, 256, (1, 5, 6, 4), dtype=torch.uint8)
    for name, w_shape, channel_dim, groups in (("CONV_2D", (3, 3, 3, 4), 0, 1),
                                               ("GROUPED_CONV_2D", (4, 2, 2, 2), 0, 2),
                                               ("DEPTHWISE_CONV_2D", (1, 3, 3, 8), 3, 4)):
        w = torch.randint(-127, 128, w_shape, dtype=torch.int8)
        cout = w_shape[channel_dim]
        scales = [0.01 * (k + 1) for k in range(cout)]
        bias = torch.randint(-500, 500, (cout,), dtype=torch.int32)
        # pads l r t b = 1 0 1 1, strides w 1 h 2, no activation
        scalars = [1, 0, 1, 1, 1, 2]
        if name == "DEPTHWISE_CONV_2D":
            scalars.append(2)  # depth multiplier
            w_loop = w.permute(3, 1, 2, 0)  # [cout, kh, kw, 1]
            grp = 4
        else:
            if name == "GROUPED_CONV_2D":
                scalars.append(groups)
            w_loop, grp = w, groups
        acc = conv_loops(x.double() - in_zp, w_loop.double(), bias.double(), (1, 0, 1, 1),
                         (1, 2), grp)
        want = requantize(acc, [in_scale * s / out_scale for s in scales], out_zp)
        for nchw in (False, True):
            m = Model()
            xin = to_nchw(x) if nchw else x
            i = m.input(T_Q8, tuple(xin.shape), in_scale, in_zp)
            iw = per_channel_const(m, w, channel_dim, scales)
            ib = m.const(T_I32, bias)  # scale 0: each value's is in_scale * scale[c]
            ins = [i, iw, ib] + [m.const(I32, v) for v in scalars] + [m.const(I32, 0),
                                                                      m.const(BOOL, nchw)]
            o = m.output(T_Q8, (0, 0, 0, 0), out_scale, out_zp)
            m.op(name, ins, [o])
            got = m.run([xin], [torch.uint8])[0]
            got = got.permute(0, 2, 3, 1) if nchw else got
            diff = (got.double() - want).abs()
            assert diff.max() <= 1, (name, nchw, float(diff.max()))
            assert (diff > 0).double().mean() < 0.05, (name, nchw)


def case_per_channel_transpose_conv_and_dequantize():
    torch.manual_seed(5)
    in_scale, in_zp, out_scale, out_zp = 0.1, 3, 0.5, 128
    x = torch.randint(0, 256, (1, 3, 3, 2), dtype=torch.uint8)
    w = torch.randint(-127, 128, (3, 2, 2, 2), dtype=torch.int8)  # [cout, kh, kw, cin]
    scales = [0.02, 0.005, 0.04]
    bias = torch.randint(-100, 100, (3,), dtype=torch.int32)
    acc = transpose_conv_loops(x.double() - in_zp, w.double(), bias.double(), (0, 0, 0, 0),
                               (2, 2)).double()
    want = requantize(acc, [in_scale * s / out_scale for s in scales], out_zp)
    m = Model()
    i = m.input(T_Q8, tuple(x.shape), in_scale, in_zp)
    ins = [i, per_channel_const(m, w, 0, scales), m.const(T_I32, bias)]
    ins += [m.const(I32, v) for v in (0, 0, 0, 0, 2, 2, 0)] + [m.const(BOOL, False)]
    o = m.output(T_Q8, (0, 0, 0, 0), out_scale, out_zp)
    m.op("TRANSPOSE_CONV_2D", ins, [o])
    got = m.run([x], [torch.uint8])[0]
    assert (got.double() - want).abs().max() <= 1
    # DEQUANTIZE of a per-channel tensor: real = scale[c] * q along channelDim;
    # of TENSOR_QUANT8_SYMM: scale * q.
    q = torch.randint(-128, 128, (2, 3, 4), dtype=torch.int8)
    for dim in (0, 1, 2):
        sc = [0.5 + k for k in range(q.shape[dim])]
        shape = [1, 1, 1]
        shape[dim] = q.shape[dim]
        m = Model()
        iq = per_channel_const(m, q, dim, sc)
        o = m.output(T_F32, (0, 0, 0))
        m.op("DEQUANTIZE", [iq], [o])
        got = m.run([], [torch.float32])[0]
        assert torch.equal(got, q.float() * torch.tensor(sc).reshape(shape)), dim
    got = run_one("DEQUANTIZE", [(T_Q8_SYMM, q, 0.25, 0)], [], [(T_F32, (0, 0, 0), 0, 0)])[0]
    assert torch.equal(got, q.float() * 0.25)


def case_per_channel_api_errors():
    m = Model()
    f = m.operand(T_F32, (2, 2))
    pc = m.operand(T_Q8_PER_CHANNEL, (3, 2))
    assert set_channel_quant(m, f, 0, [1.0, 1.0]) == 4, "accepted on TENSOR_FLOAT32"
    assert set_channel_quant(m, pc, 0, [1.0, 1.0]) == 4, "accepted 2 scales for a dim of 3"
    assert set_channel_quant(m, pc, 2, [1.0, 1.0]) == 4, "accepted channelDim 2 of rank 2"
    assert set_channel_quant(m, pc, 1, [1.0, 0.0]) == 4, "accepted a zero scale"
    assert set_channel_quant(m, pc, 1, [1.0, 2.0]) == 0
    # A per-channel operand whose scales were never set is refused at finish.
    m = Model()
    q = torch.zeros(3, 2, dtype=torch.int8)
    iq = m.const(T_Q8_PER_CHANNEL, q)
    o = m.output(T_F32, (3, 2))
    m.op("DEQUANTIZE", [iq], [o])
    err = expect_failure(lambda: m.run([], [torch.float32]), "no per-channel scales")
    assert "finish returned 4" in err, err
    # CONV_2D's filter scales run along dim 0 (output channels): dim 3 is
    # refused when the operation is added (the scales are known by then).
    m = Model()
    i = m.input(T_Q8, (1, 3, 3, 2), 0.5, 0)
    iw = per_channel_const(m, torch.ones(2, 1, 1, 2, dtype=torch.int8), 3, [0.1, 0.2])
    ins = [i, iw, m.const(T_I32, torch.zeros(2, dtype=torch.int32))]
    ins += [m.const(I32, v) for v in (0, 0, 0, 0, 1, 1, 0)]
    o = m.output(T_Q8, (1, 3, 3, 2), 1.0, 0)
    err = expect_failure(lambda: m.op("CONV_2D", ins, [o]), "channelDim 3 for CONV_2D")
    assert "addOperation CONV_2D returned 4" in err, err


# ------------------------------------------------------------- TENSOR_FLOAT16
# Operations of TENSOR_FLOAT16 compute as NeuralNetworks.h's formulas say on
# the float16 inputs; the expected values are those formulas evaluated in
# float64 on the same (float16) inputs, and the results must be within
# float16's precision of them.

def case_float16_operations():
    torch.manual_seed(6)
    tol = dict(atol=4e-3, rtol=2e-3)
    x = torch.randn(1, 5, 5, 3).half()
    w = torch.randn(2, 3, 3, 3).half()
    b = torch.randn(2).half()
    m = Model()
    i = m.input(T_F16, tuple(x.shape))
    ins = [i, m.const(T_F16, w), m.const(T_F16, b)] + [m.const(I32, v) for v in
                                                      (1, 1, 1, 1, 2, 2, 1)]
    o = m.output(T_F16, (0, 0, 0, 0))
    m.op("CONV_2D", ins, [o])
    got = m.run([x], [torch.float16])[0]
    want = conv_loops(x.double(), w.double(), b.double(), (1, 1, 1, 1), (2, 2)).clamp(min=0)
    close(got.double(), want, **tol)
    a, c = torch.randn(2, 3).half(), torch.randn(3).half()
    got = run_one("ADD", [(T_F16, a, 0, 0), (T_F16, c, 0, 0)], [scalar(I32, 0)],
                  [(T_F16, (0, 0), 0, 0)])[0]
    close(got.double(), a.double() + c.double(), **tol)
    got = run_one("SOFTMAX", [(T_F16, a, 0, 0)], [scalar(F16, 1.5)], [(T_F16, (0, 0), 0, 0)])[0]
    e = (a.double() * 1.5).exp()
    close(got.double(), e / e.sum(1, keepdim=True), **tol)
    # MAX_POOL_2D 2x2 stride 2 (explicit padding 0): the maximum of each window.
    got = run_one("MAX_POOL_2D", [(T_F16, x, 0, 0)],
                  [scalar(I32, v) for v in (0, 0, 0, 0, 2, 2, 2, 2, 0)],
                  [(T_F16, (0, 0, 0, 0), 0, 0)])[0]
    want = torch.tensor([[[[max(float(x[0, 2 * y + i, 2 * z + j, ch]) for i in range(2)
                                for j in range(2)) for ch in range(3)] for z in range(2)]
                          for y in range(2)]], dtype=torch.float64)
    close(got.double(), want, atol=0, rtol=0)


def case_float16_unary_binary_and_matrix_operations():
    # Each operation of TENSOR_FLOAT16 against its NeuralNetworks.h formula.
    torch.manual_seed(7)
    tol = dict(atol=4e-3, rtol=2e-3)
    x = (torch.randn(2, 3, 4) * 2).half()
    p = (x.float().abs() + 0.25).half()
    formulas = {
        "RELU": (x, lambda v: v.clamp(min=0)),
        "RELU1": (x, lambda v: v.clamp(-1, 1)),
        "RELU6": (x * 4, lambda v: v.clamp(0, 6)),
        "LOGISTIC": (x, lambda v: 1 / (1 + (-v).exp())),
        "TANH": (x, lambda v: v.tanh()),
        "EXP": (x, lambda v: v.exp()),
        "ABS": (x, lambda v: v.abs()),
        "NEG": (x, lambda v: -v),
        "FLOOR": (x, lambda v: v.floor()),
        "SQRT": (p, lambda v: v.sqrt()),
        "RSQRT": (p, lambda v: 1 / v.sqrt()),
        "LOG": (p, lambda v: v.log()),
    }
    for name, (t, f) in formulas.items():
        got = run_one(name, [(T_F16, t, 0, 0)], [], [(T_F16, (0, 0, 0), 0, 0)])[0]
        assert got.dtype == torch.float16, name
        close(got.double(), f(t.double()), **tol)
    y = torch.randn(3, 4).half()
    for name, f in (("SUB", lambda a, b: a - b), ("MUL", lambda a, b: a * b),
                    ("DIV", lambda a, b: a / b)):
        b = p[0] if name == "DIV" else y
        got = run_one(name, [(T_F16, x, 0, 0), (T_F16, b, 0, 0)], [scalar(I32, 0)],
                      [(T_F16, (0, 0, 0), 0, 0)])[0]
        close(got.double(), f(x.double(), b.double()), **tol)
    # FULLY_CONNECTED: out[b, u] = bias[u] + sum_i in[b, i] * w[u, i].
    inp, w, bias = torch.randn(3, 5).half(), torch.randn(4, 5).half(), torch.randn(4).half()
    m = Model()
    i = m.input(T_F16, (3, 5))
    ins = [i, m.const(T_F16, w), m.const(T_F16, bias), m.const(I32, 0)]
    o = m.output(T_F16, (0, 0))
    m.op("FULLY_CONNECTED", ins, [o])
    got = m.run([inp], [torch.float16])[0]
    want = torch.tensor([[float(bias[u]) + sum(float(inp[b_, k]) * float(w[u, k]) for k in range(5))
                          for u in range(4)] for b_ in range(3)], dtype=torch.float64)
    close(got.double(), want, **tol)
    # L2_NORMALIZATION along the last axis: v / sqrt(sum v^2).
    got = run_one("L2_NORMALIZATION", [(T_F16, x, 0, 0)], [], [(T_F16, (0, 0, 0), 0, 0)])[0]
    xd = x.double()
    close(got.double(), xd / xd.pow(2).sum(-1, keepdim=True).sqrt(), **tol)
    # MEAN over axis 1, keep_dims 0.
    got = run_one("MEAN", [(T_F16, x, 0, 0)], [const_ints([1]), scalar(I32, 0)],
                  [(T_F16, (0, 0), 0, 0)])[0]
    close(got.double(), xd.mean(1), **tol)
    # TRANSPOSE_CONV_2D of TENSOR_FLOAT16 (explicit padding 1 each side, stride 2).
    xi = torch.randn(1, 3, 3, 2).half()
    wt = torch.randn(2, 3, 3, 2).half()
    bt = torch.randn(2).half()
    m = Model()
    i = m.input(T_F16, tuple(xi.shape))
    ins = [i, m.const(T_F16, wt), m.const(T_F16, bt)]
    ins += [m.const(I32, v) for v in (1, 1, 1, 1, 2, 2, 0)] + [m.const(BOOL, False)]
    o = m.output(T_F16, (0, 0, 0, 0))
    m.op("TRANSPOSE_CONV_2D", ins, [o])
    got = m.run([xi], [torch.float16])[0]
    want = transpose_conv_loops(xi.double(), wt.double(), bt.double(), (1, 1, 1, 1), (2, 2))
    close(got.double(), want.double(), **tol)


# ------------------------------------------------------------ LSH_PROJECTION
# NeuralNetworks.h: bit (i, j) is the sign of the weighted sum, over the input's
# rows k, of a hash of (seed hash[i][j], row k); dense returns every bit,
# sparse packs hash function i's bits into one int32 (first bit highest) and,
# for type 3, adds i * 2^num_bits. The hash the header leaves unnamed is
# FarmHash's Fingerprint64 of the seed's float32 bytes followed by the row's
# bytes, read as a signed 64-bit integer (Android's reference kernel); here it
# comes from Debian's libfarmhash through ctypes, and the rest of the formula
# is written out below.

farmhash = ctypes.CDLL("libfarmhash.so.0")
fingerprint64 = farmhash._ZN4util13Fingerprint64EPKcm
fingerprint64.restype = ctypes.c_uint64
fingerprint64.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def lsh_loops(hash_seeds, rows, weight, kind):
    num_hash, num_bits = hash_seeds.shape
    row_bytes = [r.contiguous().numpy().tobytes() for r in rows]

    def bit(seed):
        key = struct.pack("<f", float(seed))
        score = 0.0
        for k, rb in enumerate(row_bytes):
            v = fingerprint64(key + rb, len(key) + len(rb))
            v = v - (1 << 64) if v >= 1 << 63 else v
            score += (float(weight[k]) if weight is not None else 1.0) * float(v)
        return 1 if score > 0 else 0

    bits = [[bit(hash_seeds[i, j]) for j in range(num_bits)] for i in range(num_hash)]
    if kind == 2:
        return torch.tensor([b for row in bits for b in row], dtype=torch.int32)
    out = []
    for i, row in enumerate(bits):
        sig = 0
        for b in row:
            sig = (sig << 1) | b
        sig = (sig + (i << num_bits if kind == 3 else 0)) & 0xFFFFFFFF
        out.append(sig - (1 << 32) if sig >= 1 << 31 else sig)  # an int32, as NNAPI returns it
    return torch.tensor(out, dtype=torch.int32)


def lsh_run(hash_code, seeds, in_code, rows, weight, kind, scale=0.0, zp=0):
    m = Model()
    h = m.const(hash_code, seeds)
    x = m.input(in_code, tuple(rows.shape), scale, zp)
    if weight is None:
        w = m.operand(hash_code, (rows.shape[0],))
        ok(lib.ANeuralNetworksModel_setOperandValue(m.handle, w, None, 0), "omit")
        inputs = [rows]
    else:
        w = m.input(hash_code, (rows.shape[0],))
        inputs = [rows, weight]
    t = m.const(I32, kind)
    out = m.output(T_I32, (0,))
    m.op("LSH_PROJECTION", [h, x, w, t], [out])
    return m.run(inputs, [torch.int32])[0]


# Android's conformance vectors (frameworks/ml/nn/runtime/test/specs,
# lsh_projection*.mod.py): NNAPI's own expected values, for the two found:
# dense with float16 seeds and weights, sparse (type 1) with float32 seeds.
LSH_SEEDS = [[0.123, 0.456], [-0.321, -0.654], [1.234, 5.678], [-4.321, -8.765]]
LSH_LOOKUP = [[12345, 54321], [67890, 9876], [-12345678, -87654321]]


def case_lsh_projection_android_vectors():
    lookup = torch.tensor(LSH_LOOKUP, dtype=torch.int32)
    dense = lsh_run(T_F16, torch.tensor(LSH_SEEDS, dtype=torch.float16), T_I32, lookup,
                    torch.tensor([0.12, 0.34, 0.56], dtype=torch.float16), 2)
    assert dense.tolist() == [1, 1, 1, 1, 1, 0, 0, 0], dense
    sparse = lsh_run(T_F32, torch.tensor(LSH_SEEDS), T_I32, lookup, None, 1)
    assert sparse.tolist() == [1, 2, 2, 0], sparse


def case_lsh_projection_formula():
    gen = torch.Generator().manual_seed(7)
    seeds = torch.randn(5, 6, generator=gen)
    for in_code, rows, scale, zp in (
            (T_F32, torch.randn(4, 3, generator=gen), 0.0, 0),
            (T_I32, torch.randint(-1000, 1000, (6, 2), generator=gen, dtype=torch.int32), 0.0, 0),
            (T_Q8, torch.randint(0, 256, (3, 2, 2), generator=gen, dtype=torch.uint8), 0.5, 3),
            (T_F16, torch.randn(5, generator=gen).half(), 0.0, 0)):
        weight = torch.randn(rows.shape[0], generator=gen)
        got = lsh_run(T_F32, seeds, in_code, rows, weight, 2, scale, zp)
        assert torch.equal(got, lsh_loops(seeds, rows, weight, 2)), in_code
        for kind in (1, 3):
            got = lsh_run(T_F32, seeds, in_code, rows, None, kind, scale, zp)
            assert torch.equal(got, lsh_loops(seeds, rows, None, kind)), (in_code, kind)
    # 32 bits of one hash function: ceil(log2(1)) + 32 <= 32.
    seeds32 = torch.randn(1, 32, generator=gen)
    rows = torch.randn(3, 2, generator=gen)
    for kind in (1, 3):
        got = lsh_run(T_F32, seeds32, T_F32, rows, None, kind)
        assert torch.equal(got, lsh_loops(seeds32, rows, None, kind)), kind


def case_lsh_projection_refusals():
    def build(kind, weight=True, seeds=(4, 2), hash_code=T_F32, weight_code=T_F32, in_code=T_I32):
        def b(m):
            h = m.const(hash_code, torch.zeros(seeds, dtype=DTYPE[hash_code]))
            x = m.input(in_code, (3, 2))
            if weight:
                w = m.input(weight_code, (3,))
            else:
                w = m.operand(hash_code, (3,))
                ok(lib.ANeuralNetworksModel_setOperandValue(m.handle, w, None, 0), "omit")
            m.op("LSH_PROJECTION", [h, x, w, m.const(I32, kind)], [m.output(T_I32, (0,))])
        return b
    assert not _refused(build(2)) and not _refused(build(1, weight=False))
    assert _refused(build(4)), "type 4"
    assert _refused(build(2, weight=False)), "dense without weight"
    assert _refused(build(1)), "sparse with weight"
    assert _refused(build(2, weight_code=T_F16)), "weight of another type than the seeds"
    assert _refused(build(2, seeds=(2, 33))), "33 bits"
    assert _refused(build(3, weight=False, seeds=(3, 31))), "31 bits + ceil(log2(3))"
    assert not _refused(build(3, weight=False, seeds=(2, 31)))
    assert _refused(build(2, hash_code=T_I32, weight_code=T_I32)), "int32 seeds"


def case_dequantize_takes_no_16_bit_type():
    # NeuralNetworks.h's DEQUANTIZE takes TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_SYMM
    # and TENSOR_QUANT8_SYMM_PER_CHANNEL (and QUANT8_ASYMM_SIGNED at level 4):
    # no TENSOR_QUANT16_SYMM (7) or TENSOR_QUANT16_ASYMM (12).
    def build(code, scale, zp):
        def b(m):
            x = m.input(code, (2, 2), scale, zp)
            m.op("DEQUANTIZE", [x], [m.output(T_F32, (2, 2))])
        return b
    assert not _refused(build(T_Q8, 0.5, 3))
    assert _refused(build(7, 0.5, 0)), "TENSOR_QUANT16_SYMM"
    assert _refused(build(12, 0.5, 3)), "TENSOR_QUANT16_ASYMM"


CASES = [v for k, v in list(globals().items()) if k.startswith("case_")]

if __name__ == "__main__":
    sys.exit(run_cases(CASES))

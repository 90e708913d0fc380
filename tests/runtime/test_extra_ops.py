#!/usr/bin/env python3
"""Operations PyTorch's converter does not emit yet, checked through ctypes.

Each case builds a one-operation NNAPI model by calling libneuralnetworks.so
directly, runs it, and compares with an eager PyTorch computation of the
operation as NNAPI documents it. Exits non-zero on any failure; the last
line is "N passed, M failed".
"""
import ctypes
import math
import os
import re
import sys
import traceback

import torch
import torch.nn.functional as F

F32, I32, BOOL = 0, 1, 6
T_F32, T_I32, T_Q8 = 3, 4, 5
CODES = dict(ADD=0, CONV_2D=3, DEPTHWISE_CONV_2D=4, L2_NORMALIZATION=11, LOGISTIC=14,
             RESIZE_BILINEAR=23, TANH=28, MEAN=31, PAD=32, STRIDED_SLICE=35, EXP=49,
             GROUPED_CONV_2D=55, MAXIMUM=65, MINIMUM=66, PAD_V2=69, RSQRT=83, SPLIT=87,
             SQRT=88, TRANSPOSE_CONV_2D=91, RESIZE_NEAREST_NEIGHBOR=94, HARD_SWISH=99,
             AVERAGE_POOL_2D=1, MAX_POOL_2D=17, CONCATENATION=2, SOFTMAX=25, FULLY_CONNECTED=9, QUANTIZE=72,
             DEPTH_TO_SPACE=5, SPACE_TO_DEPTH=26, GATHER=51, POW=70, TILE=89, INSTANCE_NORMALIZATION=57,
             BATCH_MATMUL=102, REDUCE_SUM=80, MUL=18, RELU=19, RELU6=21, DEQUANTIZE=6,
             ABS=38, NEG=67, LOG=60, CAST=45, SLICE=86, SQUEEZE=34, CHANNEL_SHUFFLE=46,
             EQUAL=48, NOT_EQUAL=68, GREATER=53, GREATER_EQUAL=54, LESS=58, LESS_EQUAL=59,
             LOGICAL_AND=61, LOGICAL_NOT=62, LOGICAL_OR=63, SELECT=84, SIN=85, ARGMAX=39,
             ARGMIN=40, REDUCE_ALL=75, REDUCE_ANY=76, REDUCE_MAX=77, REDUCE_MIN=78,
             REDUCE_PROD=79, TOPK_V2=90)
T_F16, T_BOOL8 = 8, 9


class OperandType(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int32), ("dimensionCount", ctypes.c_uint32),
                ("dimensions", ctypes.POINTER(ctypes.c_uint32)), ("scale", ctypes.c_float),
                ("zeroPoint", ctypes.c_int32)]


lib = ctypes.CDLL("libneuralnetworks.so")


def ok(ret, what):
    if ret != 0:
        raise RuntimeError(f"{what} returned {ret}")


def u32_array(values):
    return (ctypes.c_uint32 * max(len(values), 1))(*values)


class Model:
    """A model with tensor inputs, constant operands and one operation."""

    def __init__(self):
        self.handle = ctypes.c_void_p()
        ok(lib.ANeuralNetworksModel_create(ctypes.byref(self.handle)), "create")
        self.count = 0
        self.inputs, self.input_types = [], []
        self.outputs = []
        self.keep = []

    def operand(self, code, dims=(), scale=0.0, zp=0):
        d = u32_array(list(dims))
        self.keep.append(d)
        t = OperandType(code, len(dims), d if dims else None, scale, zp)
        ok(lib.ANeuralNetworksModel_addOperand(self.handle, ctypes.byref(t)), "addOperand")
        self.count += 1
        return self.count - 1

    def const(self, code, value, dims=None, scale=0.0, zp=0):
        if code in (F32, I32, BOOL):
            ctype = {F32: ctypes.c_float, I32: ctypes.c_int32, BOOL: ctypes.c_bool}[code]
            buf = ctype(value)
            idx = self.operand(code)
            ok(lib.ANeuralNetworksModel_setOperandValue(self.handle, idx, ctypes.byref(buf),
                                                        ctypes.sizeof(buf)), "setValue")
            return idx
        t = value.contiguous()
        self.keep.append(t)
        idx = self.operand(code, tuple(t.shape) if dims is None else dims, scale, zp)
        ok(lib.ANeuralNetworksModel_setOperandValue(self.handle, idx,
                                                    ctypes.c_void_p(t.data_ptr()),
                                                    t.numel() * t.element_size()), "setValue")
        return idx

    def input(self, code, dims, scale=0.0, zp=0):
        idx = self.operand(code, dims, scale, zp)
        self.inputs.append(idx)
        return idx

    def output(self, code, dims, scale=0.0, zp=0):
        idx = self.operand(code, dims, scale, zp)
        self.outputs.append(idx)
        return idx

    def op(self, name, ins, outs):
        a, b = u32_array(ins), u32_array(outs)
        ok(lib.ANeuralNetworksModel_addOperation(self.handle, CODES[name], len(ins), a,
                                                 len(outs), b), f"addOperation {name}")

    def run(self, inputs, out_dtypes):
        a, b = u32_array(self.inputs), u32_array(self.outputs)
        ok(lib.ANeuralNetworksModel_identifyInputsAndOutputs(
            self.handle, len(self.inputs), a, len(self.outputs), b), "identify")
        ok(lib.ANeuralNetworksModel_finish(self.handle), "finish")
        comp, ex = ctypes.c_void_p(), ctypes.c_void_p()
        ok(lib.ANeuralNetworksCompilation_create(self.handle, ctypes.byref(comp)), "comp")
        ok(lib.ANeuralNetworksCompilation_finish(comp), "comp finish")
        ok(lib.ANeuralNetworksExecution_create(comp, ctypes.byref(ex)), "exec")
        inputs = [t.contiguous() for t in inputs]
        for i, t in enumerate(inputs):
            ok(lib.ANeuralNetworksExecution_setInput(ex, i, None, ctypes.c_void_p(t.data_ptr()),
                                                     t.numel() * t.element_size()), "setInput")
        outs = [torch.empty(1 << 18, dtype=dt) for dt in out_dtypes]
        for i, t in enumerate(outs):
            ok(lib.ANeuralNetworksExecution_setOutput(ex, i, None, ctypes.c_void_p(t.data_ptr()),
                                                      t.numel() * t.element_size()), "setOutput")
        ok(lib.ANeuralNetworksExecution_compute(ex), "compute")
        results = []
        for i, t in enumerate(outs):
            rank = ctypes.c_uint32()
            ok(lib.ANeuralNetworksExecution_getOutputOperandRank(ex, i, ctypes.byref(rank)), "rank")
            dims = (ctypes.c_uint32 * rank.value)()
            ok(lib.ANeuralNetworksExecution_getOutputOperandDimensions(ex, i, dims), "dims")
            shape = list(dims)
            results.append(t[:math.prod(shape)].reshape(shape).clone())
        lib.ANeuralNetworksExecution_free(ex)
        lib.ANeuralNetworksCompilation_free(comp)
        lib.ANeuralNetworksModel_free(self.handle)
        return results


def unary(name, x, out_scale=0.0, out_zp=0):
    m = Model()
    i = m.input(T_F32, tuple(x.shape))
    o = m.output(T_F32, (0,) * x.dim())
    m.op(name, [i], [o])
    return m.run([x], [torch.float32])[0]


def nhwc(t):
    return t.permute(0, 2, 3, 1).contiguous()


def nchw(t):
    return t.permute(0, 3, 1, 2).contiguous()


def close(actual, expected, atol=1e-5, rtol=1.3e-6):
    torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol)


# ------------------------------------------------------------------ cases

def case_unary_float():
    x = torch.randn(2, 3, 4)
    close(unary("TANH", x), torch.tanh(x))
    close(unary("HARD_SWISH", x), F.hardswish(x))
    close(unary("EXP", x), torch.exp(x))
    close(unary("LOGISTIC", x), torch.sigmoid(x))
    p = x.abs() + 0.1
    close(unary("SQRT", p), torch.sqrt(p))
    close(unary("RSQRT", p), torch.rsqrt(p))


def case_quant_tanh():
    # TANH on TENSOR_QUANT8_ASYMM: output scale 1/128, zero point 128.
    q = torch.quantize_per_tensor(torch.randn(64) * 2, 0.05, 120, torch.quint8)
    m = Model()
    i = m.input(T_Q8, (64,), 0.05, 120)
    o = m.output(T_Q8, (64,), 1 / 128, 128)
    m.op("TANH", [i], [o])
    out = m.run([q.int_repr()], [torch.uint8])[0].int()
    ref = torch.clamp(torch.round(torch.tanh(q.dequantize().double()) * 128) + 128, 0, 255).int()
    assert (out - ref).abs().max() <= 1, (out, ref)


def binary(name, a, b, fuse=None):
    m = Model()
    ia = m.input(T_F32, tuple(a.shape))
    ib = m.input(T_F32, tuple(b.shape))
    shape = torch.broadcast_shapes(a.shape, b.shape)
    o = m.output(T_F32, tuple(shape))
    ins = [ia, ib] + ([m.const(I32, fuse)] if fuse is not None else [])
    m.op(name, ins, [o])
    return m.run([a, b], [torch.float32])[0]


def case_maximum_minimum_broadcast():
    a, b = torch.randn(2, 3, 4), torch.randn(3, 1)
    close(binary("MAXIMUM", a, b), torch.maximum(a, b))
    close(binary("MINIMUM", a, b), torch.minimum(a, b))
    close(binary("ADD", a, b, fuse=3), torch.clamp(a + b, 0, 6))  # FUSED_RELU6


def conv_model(name, x_nhwc, w, b, scalars, out_c, nchw_flag=None, extra=()):
    m = Model()
    i = m.input(T_F32, tuple(x_nhwc.shape))
    iw = m.const(T_F32, w)
    ib = m.const(T_F32, b)
    ins = [i, iw, ib] + [m.const(I32, s) for s in scalars]
    if nchw_flag is not None:
        ins.append(m.const(BOOL, nchw_flag))
    ins += [m.const(I32, s) for s in extra]
    o = m.output(T_F32, (0, 0, 0, 0))
    m.op(name, ins, [o])
    return m.run([x_nhwc], [torch.float32])[0]


def case_conv2d_dilation_asymmetric_padding():
    x = torch.randn(1, 3, 9, 10)
    w = torch.randn(5, 3, 3, 3)
    b = torch.randn(5)
    # pad l=1 r=2 t=0 b=1, stride w=1 h=2, no activation, NHWC, dilation w=2 h=1.
    out = conv_model("CONV_2D", nhwc(x), w.permute(0, 2, 3, 1), b, [1, 2, 0, 1, 1, 2, 0], 5,
                     False, extra=[2, 1])
    ref = F.conv2d(F.pad(x, (1, 2, 0, 1)), w, b, stride=(2, 1), dilation=(1, 2))
    close(nchw(out), ref, atol=1e-4, rtol=1e-4)


def case_conv2d_implicit_same():
    x = torch.randn(1, 2, 7, 7)
    w = torch.randn(4, 2, 3, 3)
    b = torch.randn(4)
    # padding SAME (1), stride 2: out = ceil(7/2) = 4, total pad 2 -> 1 before, 1 after.
    out = conv_model("CONV_2D", x, w.permute(0, 2, 3, 1), b, [1, 2, 2, 0], 4, True)
    ref = F.conv2d(x, w, b, stride=2, padding=1)
    close(out, ref, atol=1e-4, rtol=1e-4)


def case_depthwise_multiplier():
    x = torch.randn(2, 3, 8, 8)
    w = torch.randn(6, 1, 3, 3)  # multiplier 2
    b = torch.randn(6)
    # explicit pad 1 each side, stride 1, multiplier 2, RELU, NCHW, dilation 2x2.
    out = conv_model("DEPTHWISE_CONV_2D", x, w.permute(1, 2, 3, 0), b,
                     [1, 1, 1, 1, 1, 1, 2, 1], 6, True, extra=[2, 2])
    ref = F.relu(F.conv2d(x, w, b, padding=1, dilation=2, groups=3))
    close(out, ref, atol=1e-4, rtol=1e-4)


def case_grouped_conv():
    x = torch.randn(1, 4, 6, 6)
    w = torch.randn(6, 2, 3, 3)
    b = torch.randn(6)
    out = conv_model("GROUPED_CONV_2D", nhwc(x), w.permute(0, 2, 3, 1), b,
                     [0, 0, 0, 0, 1, 1, 2, 0], 6, False)
    close(nchw(out), F.conv2d(x, w, b, groups=2), atol=1e-4, rtol=1e-4)


def case_transpose_conv_padding():
    x = torch.randn(1, 3, 4, 5)
    w = torch.randn(3, 2, 3, 3)  # torch: [in, out, kh, kw]
    b = torch.randn(2)
    out = conv_model("TRANSPOSE_CONV_2D", x, w.permute(1, 2, 3, 0), b,
                     [1, 1, 1, 1, 2, 2, 0], 2, True)
    ref = F.conv_transpose2d(x, w, b, stride=2, padding=1)
    close(out, ref, atol=1e-4, rtol=1e-4)


def resize(name, x, size_args, flags):
    m = Model()
    i = m.input(T_F32, tuple(x.shape))
    ins = [i] + [m.const(I32 if isinstance(s, int) else F32, s) for s in size_args]
    ins += [m.const(BOOL, f) for f in flags]
    o = m.output(T_F32, (0, 0, 0, 0))
    m.op(name, ins, [o])
    return m.run([x], [torch.float32])[0]


def case_resize_bilinear():
    x = torch.randn(1, 2, 5, 7)
    # half_pixel_centers matches torch's align_corners=False.
    out = resize("RESIZE_BILINEAR", x, [11, 8], [True, False, True])
    close(out, F.interpolate(x, size=(8, 11), mode="bilinear", align_corners=False))
    out = resize("RESIZE_BILINEAR", nhwc(x), [11, 8], [False, True])
    close(nchw(out), F.interpolate(x, size=(8, 11), mode="bilinear", align_corners=True))
    # Legacy NNAPI mapping: src = dst * in / out, upper tap clamped.
    out = resize("RESIZE_BILINEAR", x, [2.0, 2.0], [True])
    ys = torch.arange(10) * 0.5
    xs = torch.arange(14) * 0.5
    y0, x0 = ys.floor().long(), xs.floor().long()
    y1, x1 = (y0 + 1).clamp(max=4), (x0 + 1).clamp(max=6)
    fy, fx = (ys - y0).view(-1, 1), (xs - x0).view(1, -1)
    top = x[..., y0, :] + (x[..., y1, :] - x[..., y0, :]) * fy
    ref = top[..., x0] + (top[..., x1] - top[..., x0]) * fx
    close(out, ref)


def case_pad_and_pad_v2():
    x = torch.randn(1, 3, 4, 2)
    pads = torch.tensor([[0, 0], [1, 2], [0, 1], [3, 0]], dtype=torch.int32)
    m = Model()
    i = m.input(T_F32, tuple(x.shape))
    o = m.output(T_F32, (0, 0, 0, 0))
    m.op("PAD", [i, m.const(T_I32, pads)], [o])
    out = m.run([x], [torch.float32])[0]
    close(out, F.pad(x, (3, 0, 0, 1, 1, 2)))
    # Quantized PAD pads with the zero point (real 0).
    q = torch.randint(0, 255, (2, 3), dtype=torch.uint8)
    m = Model()
    i = m.input(T_Q8, (2, 3), 0.1, 77)
    o = m.output(T_Q8, (0, 0), 0.1, 77)
    m.op("PAD", [i, m.const(T_I32, torch.tensor([[1, 0], [0, 2]], dtype=torch.int32))], [o])
    out = m.run([q], [torch.uint8])[0]
    assert torch.equal(out, F.pad(q.int(), (0, 2, 1, 0), value=77).to(torch.uint8)), out
    m = Model()
    i = m.input(T_F32, tuple(x.shape))
    o = m.output(T_F32, (0, 0, 0, 0))
    m.op("PAD_V2", [i, m.const(T_I32, pads), m.const(F32, -2.5)], [o])
    close(m.run([x], [torch.float32])[0], F.pad(x, (3, 0, 0, 1, 1, 2), value=-2.5))


def case_split():
    x = torch.randn(2, 6, 3)
    m = Model()
    i = m.input(T_F32, tuple(x.shape))
    outs = [m.output(T_F32, (2, 2, 3)) for _ in range(3)]
    m.op("SPLIT", [i, m.const(I32, -2), m.const(I32, 3)], outs)
    res = m.run([x], [torch.float32] * 3)
    for r, ref in zip(res, x.split(2, 1)):
        close(r, ref)


def case_l2_normalization():
    x = torch.randn(3, 5)
    m = Model()
    i = m.input(T_F32, (3, 5))
    o = m.output(T_F32, (3, 5))
    m.op("L2_NORMALIZATION", [i, m.const(I32, 0)], [o])
    close(m.run([x], [torch.float32])[0], F.normalize(x, dim=0))


def case_strided_slice_masks():
    x = torch.randn(5, 6, 4)
    m = Model()
    i = m.input(T_F32, tuple(x.shape))
    begin = m.const(T_I32, torch.tensor([4, 1, 2], dtype=torch.int32))
    end = m.const(T_I32, torch.tensor([0, -1, 3], dtype=torch.int32))
    strides = m.const(T_I32, torch.tensor([-2, 2, 1], dtype=torch.int32))
    o = m.output(T_F32, (0, 0))
    # end_mask bit 0: dim 0 runs to the start; shrink bit 2: dim 2 index 2 only.
    m.op("STRIDED_SLICE", [i, begin, end, strides, m.const(I32, 0), m.const(I32, 1),
                           m.const(I32, 4)], [o])
    out = m.run([x], [torch.float32])[0]
    ref = x[[4, 2, 0]][:, 1:5:2, 2]
    close(out, ref)


def case_pool_padding_excluded():
    x = torch.randn(1, 2, 5, 5)
    m = Model()
    i = m.input(T_F32, tuple(x.shape))
    o = m.output(T_F32, (0, 0, 0, 0))
    # pad l=1 r=0 t=1 b=0, stride 2, 3x3 window, NCHW; padding is not counted.
    scal = [m.const(I32, v) for v in (1, 0, 1, 0, 2, 2, 3, 3, 0)]
    m.op("AVERAGE_POOL_2D", [i] + scal + [m.const(BOOL, True)], [o])
    out = m.run([x], [torch.float32])[0]
    padded = F.pad(x, (1, 0, 1, 0))
    ones = F.pad(torch.ones(1, 1, 5, 5), (1, 0, 1, 0))
    ref = F.avg_pool2d(padded, 3, 2) / F.avg_pool2d(ones, 3, 2)
    close(out, ref)


def case_quant_concat_requantizes_like_pytorch():
    # CONCATENATION of inputs whose parameters differ from the output's
    # requantizes as PyTorch's quantized cat does (dequantize in float32, then
    # quantize_per_tensor, ties to even); eager (qnnpack engine) is the oracle.
    # Scales 0.1 and 0.3 into 0.2 put half the values on ties (q - zp) / 2.
    torch.backends.quantized.engine = "qnnpack"
    g = torch.Generator().manual_seed(7)
    differ = 0
    for (sa, za), (sb, zb), (so, zo) in (((0.02, 100), (0.05, 130), (0.04, 128)),
                                         ((0.1, 128), (0.3, 128), (0.2, 128)),
                                         ((0.1, 3), (0.3, 251), (0.2, 7)),
                                         ((0.0173, 3), (0.0411, 250), (0.0529, 99))):
        qa = torch._make_per_tensor_quantized_tensor(
            torch.randint(0, 256, (1, 3, 7, 7), generator=g).to(torch.uint8), sa, za)
        qb = torch._make_per_tensor_quantized_tensor(
            torch.randint(0, 256, (1, 5, 7, 7), generator=g).to(torch.uint8), sb, zb)
        ref = torch.ops.quantized.cat([qa, qb], 1, so, zo).int_repr()
        m = Model()
        ia = m.input(T_Q8, (1, 7, 7, 3), sa, za)
        ib = m.input(T_Q8, (1, 7, 7, 5), sb, zb)
        o = m.output(T_Q8, (0, 0, 0, 0), so, zo)
        m.op("CONCATENATION", [ia, ib, m.const(I32, 3)], [o])
        out = nchw(m.run([nhwc(qa.int_repr()), nhwc(qb.int_repr())], [torch.uint8])[0])
        assert torch.equal(out, ref), f"cat {sa} {sb} -> {so}: {(out != ref).sum().item()} differ"
        real = torch.cat([qa.dequantize(), qb.dequantize()], 1).double() / so
        away = (torch.sign(real) * torch.floor(real.abs() + 0.5) + zo).clamp(0, 255)
        differ += (away.to(torch.uint8) != ref).sum().item()
    print(f"     {differ} differ from exact rounding half away from zero")
    assert differ > 0, "the case does not separate the roundings"


def qnnpack_reference(kind, qx, qw, b_int, out_scale, out_zp, groups=1):
    """Eager quantized conv2d / linear on the qnnpack engine, plus the exact
    real-valued result rounded half away from zero, for comparison."""
    torch.backends.quantized.engine = "qnnpack"
    acc_scale = qx.q_scale() * qw.q_scale()
    bias = b_int.double() * acc_scale
    qf = torch.ao.nn.quantized.functional
    if kind == "conv":
        y = qf.conv2d(qx, qw, bias.float(), groups=groups, scale=out_scale, zero_point=out_zp)
        acc = F.conv2d(qx.int_repr().double() - qx.q_zero_point(), qw.int_repr().double(),
                       b_int.double(), groups=groups)
    else:
        y = qf.linear(qx, qw, bias.float(), scale=out_scale, zero_point=out_zp)
        acc = F.linear(qx.int_repr().double() - qx.q_zero_point(), qw.int_repr().double(),
                       b_int.double())
    r = acc * acc_scale / out_scale
    exact = (torch.sign(r) * torch.floor(r.abs() + 0.5) + out_zp).clamp(0, 255).to(torch.uint8)
    return y.int_repr(), exact


def quant_conv_case(kind, x_real, w_real, b_int, scales, groups=1):
    """Runs one quantized DEPTHWISE_CONV_2D (kind "conv") or FULLY_CONNECTED
    on the runtime; returns (runtime, qnnpack, exact) output values."""
    (xs, xz), ws, (os_, oz) = scales
    qx = torch.quantize_per_tensor(x_real, xs, xz, torch.quint8)
    qw = torch.quantize_per_tensor(w_real, ws, 0, torch.qint8)
    ref, exact = qnnpack_reference(kind, qx, qw, b_int, os_, oz, groups)
    m = Model()
    # NNAPI's QUANT8 filter is unsigned: qint8 values + 128 with zero point 128.
    w_u8 = (qw.int_repr().int() + 128).to(torch.uint8)
    if kind == "conv":
        i = m.input(T_Q8, tuple(nhwc(qx.int_repr()).shape), xs, xz)
        iw = m.const(T_Q8, w_u8.permute(1, 2, 3, 0), scale=ws, zp=128)
        ins = [i, iw, m.const(T_I32, b_int.int(), scale=xs * ws)]
        ins += [m.const(I32, s) for s in (0, 0, 0, 0, 1, 1, 1, 0)]
        o = m.output(T_Q8, (0, 0, 0, 0), os_, oz)
        m.op("DEPTHWISE_CONV_2D", ins, [o])
        out = nchw(m.run([nhwc(qx.int_repr())], [torch.uint8])[0])
    else:
        i = m.input(T_Q8, tuple(qx.shape), xs, xz)
        ins = [i, m.const(T_Q8, w_u8, scale=ws, zp=128),
               m.const(T_I32, b_int.int(), scale=xs * ws), m.const(I32, 0)]
        o = m.output(T_Q8, (0, 0), os_, oz)
        m.op("FULLY_CONNECTED", ins, [o])
        out = m.run([qx.int_repr()], [torch.uint8])[0]
    return out, ref, exact


def case_quant_conv_requantizes_like_qnnpack():
    # Quantized convolutions requantize their accumulator as PyTorch's QNNPACK
    # does (float32 multiplier, ties to even), so eager PyTorch is matched
    # exactly. Each input set is chosen so that the exact real result rounded
    # half away from zero differs from QNNPACK somewhere: the case tells them apart.
    g = torch.Generator().manual_seed(3)
    # Ties: scales are powers of two with in * w / out = 1/2, small values.
    x = torch.randint(-6, 7, (1, 8, 12, 12), generator=g).float() / 16
    w = torch.randint(-3, 4, (8, 1, 3, 3), generator=g).float() / 32
    b = torch.randint(-20, 21, (8,), generator=g)
    ties = quant_conv_case("conv", x, w, b, ((1 / 16, 128), 1 / 32, (1 / 256, 128)), groups=8)
    # Realistic scales: float32 multiplier against exact arithmetic.
    x = torch.randn(1, 32, 56, 56, generator=g) * 2
    w = torch.randn(32, 1, 3, 3, generator=g) * 0.4
    b = torch.randint(-3000, 3000, (32,), generator=g)
    real = quant_conv_case("conv", x, w, b, ((0.0431, 131), 0.00713, (0.0817, 119)), groups=32)
    x = torch.randn(64, 200, generator=g) * 2
    w = torch.randn(100, 200, generator=g) * 0.1
    b = torch.randint(-3000, 3000, (100,), generator=g)
    fc = quant_conv_case("fc", x, w, b, ((0.0431, 131), 0.00311, (0.0517, 119)))
    for name, (out, ref, exact) in (("ties", ties), ("conv", real), ("fc", fc)):
        print(f"     {name}: {(exact != ref).sum().item()} of {ref.numel()} differ "
              "from exact rounding")
        assert torch.equal(out, ref), f"{name}: {(out != ref).sum().item()} differ from QNNPACK"
    assert not torch.equal(ties[2], ties[1]), "the ties case does not separate the roundings"


def case_quant_conv2d_and_transpose_conv_like_qnnpack():
    # Full CONV_2D and TRANSPOSE_CONV_2D (stride 2) requantize as the
    # depthwise case above: eager quantized conv2d / conv_transpose2d (qnnpack
    # engine) is the oracle; scales with in * w / out = 1/2 make ties.
    torch.backends.quantized.engine = "qnnpack"
    g = torch.Generator().manual_seed(12)
    xs, xz, ws, os_, oz = 1 / 16, 128, 1 / 32, 1 / 256, 128
    qx = torch.quantize_per_tensor(torch.randint(-6, 7, (1, 8, 9, 9), generator=g).float() / 16,
                                   xs, xz, torch.quint8)
    b = torch.randint(-200, 200, (6,), generator=g)
    bias = (b.double() * xs * ws).float()
    qf = torch.ao.nn.quantized.functional
    for name, w_shape in (("CONV_2D", (6, 8, 3, 3)), ("TRANSPOSE_CONV_2D", (8, 6, 3, 3))):
        qw = torch.quantize_per_tensor(torch.randint(-3, 4, w_shape, generator=g).float() / 32,
                                       ws, 0, torch.qint8)
        acc_x, acc_w = qx.int_repr().double() - xz, qw.int_repr().double()
        w_u8 = (qw.int_repr().int() + 128).to(torch.uint8)
        if name == "CONV_2D":
            ref = qf.conv2d(qx, qw, bias, padding=1, scale=os_, zero_point=oz).int_repr()
            acc = F.conv2d(acc_x, acc_w, b.double(), padding=1)
            w_nnapi, scalars = nhwc(w_u8), (1, 1, 1, 1, 1, 1, 0)
        else:
            packed = torch.ops.quantized.conv_transpose2d_prepack(qw, bias, [2, 2], [0, 0], [0, 0],
                                                                  [1, 1], 1)
            ref = torch.ops.quantized.conv_transpose2d(qx, packed, os_, oz).int_repr()
            acc = F.conv_transpose2d(acc_x, acc_w, b.double(), stride=2)
            w_nnapi, scalars = w_u8.permute(1, 2, 3, 0), (0, 0, 0, 0, 2, 2, 0)
        m = Model()
        i = m.input(T_Q8, (1, 9, 9, 8), xs, xz)
        ins = [i, m.const(T_Q8, w_nnapi, scale=ws, zp=128), m.const(T_I32, b.int(), scale=xs * ws)]
        ins += [m.const(I32, s) for s in scalars] + [m.const(BOOL, False)]
        o = m.output(T_Q8, (0, 0, 0, 0), os_, oz)
        m.op(name, ins, [o])
        out = nchw(m.run([nhwc(qx.int_repr())], [torch.uint8])[0])
        r = acc * xs * ws / os_
        exact = (torch.sign(r) * torch.floor(r.abs() + 0.5) + oz).clamp(0, 255).to(torch.uint8)
        print(f"     {name}: {(exact != ref).sum().item()} of {ref.numel()} differ "
              "from exact rounding")
        assert not torch.equal(exact, ref), f"{name}: the case does not separate the roundings"
        assert torch.equal(out, ref), f"{name}: {(out != ref).sum().item()} differ from QNNPACK"


def case_quant_add_and_average_pool_like_qnnpack():
    # Quantized ADD of equal shapes and quantized AVERAGE_POOL_2D round as
    # PyTorch's QNNPACK kernels do; eager (qnnpack engine) is the oracle,
    # element for element. Each input set is chosen so that exact arithmetic
    # with NNAPI's reference rounding differs from QNNPACK somewhere.
    torch.backends.quantized.engine = "qnnpack"
    g = torch.Generator().manual_seed(5)
    qa = torch.quantize_per_tensor(torch.randn(1, 64, 56, 56, generator=g) * 3, 0.1, 121,
                                   torch.quint8)
    qb = torch.quantize_per_tensor(torch.randn(1, 64, 56, 56, generator=g) * 2, 0.07, 133,
                                   torch.quint8)
    for relu, fuse in ((False, 0), (True, 1)):
        op = torch.ops.quantized.add_relu if relu else torch.ops.quantized.add
        ref = op(qa, qb, 0.3, 97).int_repr()
        real = (qa.dequantize().double() + qb.dequantize().double()) / 0.3
        exact = (torch.sign(real) * torch.floor(real.abs() + 0.5) + 97).clamp(97 if relu else 0, 255)
        m = Model()
        ia = m.input(T_Q8, tuple(nhwc(qa.int_repr()).shape), 0.1, 121)
        ib = m.input(T_Q8, tuple(nhwc(qb.int_repr()).shape), 0.07, 133)
        o = m.output(T_Q8, (0, 0, 0, 0), 0.3, 97)
        m.op("ADD", [ia, ib, m.const(I32, fuse)], [o])
        out = nchw(m.run([nhwc(qa.int_repr()), nhwc(qb.int_repr())], [torch.uint8])[0])
        differ = (exact.to(torch.uint8) != ref).sum().item()
        print(f"     add relu={relu}: {differ} of {ref.numel()} differ from exact rounding")
        assert differ > 0, "the add case does not separate the roundings"
        assert torch.equal(out, ref), f"add: {(out != ref).sum().item()} differ from QNNPACK"
    # Average pool 2x2: sums of (q - zeroPoint) of 2 mod 4 are ties, which
    # QNNPACK rounds to even and NNAPI's (sum + 2) / 4 rounds up.
    q = torch.randint(126, 131, (1, 8, 10, 10), generator=g).to(torch.uint8)
    qx = torch._make_per_tensor_quantized_tensor(q, 0.05, 128)
    ref = torch.nn.functional.avg_pool2d(qx, 2).int_repr()
    nnapi_rounding = (q.double().reshape(1, 8, 5, 2, 5, 2).sum((3, 5)) + 2).div(4).floor()
    m = Model()
    i = m.input(T_Q8, (1, 10, 10, 8), 0.05, 128)
    o = m.output(T_Q8, (0, 0, 0, 0), 0.05, 128)
    m.op("AVERAGE_POOL_2D", [i] + [m.const(I32, v) for v in (0, 0, 0, 0, 2, 2, 2, 2, 0)], [o])
    out = nchw(m.run([nhwc(q)], [torch.uint8])[0])
    differ = (nnapi_rounding.to(torch.uint8) != ref).sum().item()
    print(f"     average pool: {differ} of {ref.numel()} differ from NNAPI's reference rounding")
    assert differ > 0, "the pool case does not separate the roundings"
    assert torch.equal(out, ref), f"pool: {(out != ref).sum().item()} differ from QNNPACK"



def case_quant_average_pool_multiplier_like_qnnpack():
    # QNNPACK's average pool multiplies the sum of (q - zeroPoint) by the
    # float32 in_scale / (out_scale * count), not by float32(1 / count): with
    # count 196 (the 14x14 global pool of mobilenet_v3_large's squeeze-
    # excitation blocks) and this scale (one seen there) the two differ by an
    # ulp, which decides ties. Sums of 98 mod 196 are ties; eager (qnnpack
    # engine) is the oracle.
    torch.backends.quantized.engine = "qnnpack"
    g = torch.Generator().manual_seed(6)
    scale, zp = 3.9164912700653076, 3
    q = torch.randint(zp, zp + 4, (1, 16, 14, 14), generator=g)
    # Pixel (0, 0) of each channel makes its centred sum 98 + 196 * k.
    rest = (q - zp).sum((2, 3)) - (q[:, :, 0, 0] - zp)
    q[:, :, 0, 0] = zp + (98 - rest) % 196
    q = q.to(torch.uint8)
    qx = torch._make_per_tensor_quantized_tensor(q, scale, zp)
    ref = torch.nn.functional.avg_pool2d(qx, 14).int_repr()
    sums = (q.to(torch.int64) - zp).sum((2, 3), keepdim=True)
    assert ((sums % 196) == 98).all()
    reciprocal_rule = torch.round(sums.float() * torch.tensor(1 / 196, dtype=torch.float32)) + zp
    m = Model()
    i = m.input(T_Q8, (1, 14, 14, 16), scale, zp)
    o = m.output(T_Q8, (0, 0, 0, 0), scale, zp)
    m.op("AVERAGE_POOL_2D", [i] + [m.const(I32, v) for v in (0, 0, 0, 0, 1, 1, 14, 14, 0)], [o])
    out = nchw(m.run([nhwc(q)], [torch.uint8])[0])
    differ = (reciprocal_rule.to(torch.uint8) != ref).sum().item()
    print(f"     global average pool: {differ} of {ref.numel()} differ from the 1 / count rule")
    assert differ > 0, "the case does not separate the multipliers"
    assert torch.equal(out, ref), f"pool: {(out != ref).sum().item()} differ from QNNPACK"

def case_quant_mean_like_qnnpack():
    # Quantized MEAN over H and W (what the converter emits for
    # adaptive_avg_pool2d to 1x1 and mean over (2, 3) when H or W is flexible)
    # rounds as QNNPACK's global average pool, which eager mean(2, 3) and
    # adaptive_avg_pool2d(1) run on the qnnpack engine: the sum of
    # q - zeroPoint times float32 scale / (scale * count), ties to even. Odd
    # and even counts, scales swept; half of the channels are made ties.
    torch.backends.quantized.engine = "qnnpack"
    g = torch.Generator().manual_seed(8)
    differ = total = 0
    for h, w in ((1, 3), (7, 1), (7, 7), (2, 2), (14, 14), (4, 6), (1, 196)):
        count = h * w
        for _ in range(6):
            scale = float(torch.empty(1).uniform_(0.002, 4.0, generator=g))
            zp = int(torch.randint(4, 252, (1,), generator=g))
            q = torch.randint(zp - 3, zp + 4, (2, 16, h, w), generator=g)
            if count % 2 == 0:
                # Pixel (0, 0) of channels 0-7 makes the centred sum
                # count / 2 + count * k: a tie.
                rest = (q - zp).sum((2, 3)) - (q[:, :, 0, 0] - zp)
                c0 = (count // 2 - rest) % count
                c0 = torch.where(zp + c0 <= 255, c0, c0 - count)
                q[:, :8, 0, 0] = (zp + c0)[:, :8]
            q = q.to(torch.uint8)
            qx = torch._make_per_tensor_quantized_tensor(q, scale, zp)
            ref = torch.mean(qx, (2, 3), keepdim=True).int_repr()
            ada = torch.nn.functional.adaptive_avg_pool2d(qx, 1).int_repr()
            assert torch.equal(ref, ada), "eager mean and adaptive_avg_pool2d disagree"
            m = Model()
            i = m.input(T_Q8, (2, h, w, 16), scale, zp)
            o = m.output(T_Q8, (0, 0, 0, 0), scale, zp)
            m.op("MEAN", [i, m.const(T_I32, torch.tensor([1, 2], dtype=torch.int32)),
                          m.const(I32, 1)], [o])
            out = nchw(m.run([nhwc(q)], [torch.uint8])[0])
            assert torch.equal(out, ref), \
                f"{h}x{w} scale {scale}: {(out != ref).sum().item()} differ from QNNPACK"
            real = (q.double() - zp).mean((2, 3), keepdim=True)
            away = torch.sign(real) * torch.floor(real.abs() + 0.5) + zp
            differ += (away.to(torch.uint8) != ref).sum().item()
            total += ref.numel()
    print(f"     {differ} of {total} differ from exact rounding half away from zero")
    assert differ > 0, "the case does not separate the roundings"


def case_quant_mul_like_pytorch():
    # Quantized MUL rounds as PyTorch's quantized mul: the product of the
    # (q - zeroPoint)s times the float32 (a_scale * b_scale) * (1 / out_scale),
    # ties to even. Eager (qnnpack engine) is the oracle. Scales whose
    # multiplier is 1/2 make odd products ties; others are arbitrary.
    torch.backends.quantized.engine = "qnnpack"
    g = torch.Generator().manual_seed(9)
    differ = 0
    for (sa, za), (sb, zb), (so, zo), b_shape in (
            ((0.1, 121), (0.07, 133), (0.3, 97), (1, 16, 10, 10)),
            ((0.25, 128), (0.125, 128), (0.0625, 128), (1, 16, 10, 10)),
            ((0.0431, 131), (0.0173, 7), (0.0113, 119), (1, 1, 1, 10)),
            ((0.5, 3), (0.03125, 250), (0.03125, 40), (1, 16, 1, 1))):
        qa = torch._make_per_tensor_quantized_tensor(
            torch.randint(0, 256, (1, 16, 10, 10), generator=g).to(torch.uint8), sa, za)
        qb = torch._make_per_tensor_quantized_tensor(
            torch.randint(0, 256, b_shape, generator=g).to(torch.uint8), sb, zb)
        ref = torch.ops.quantized.mul(qa, qb, so, zo).int_repr()
        m = Model()
        ia = m.input(T_Q8, tuple(nhwc(qa.int_repr()).shape), sa, za)
        ib = m.input(T_Q8, tuple(nhwc(qb.int_repr()).shape), sb, zb)
        o = m.output(T_Q8, (0, 0, 0, 0), so, zo)
        m.op("MUL", [ia, ib, m.const(I32, 0)], [o])
        out = nchw(m.run([nhwc(qa.int_repr()), nhwc(qb.int_repr())], [torch.uint8])[0])
        assert torch.equal(out, ref), f"mul {sa} {sb} -> {so}: {(out != ref).sum().item()} differ"
        real = qa.dequantize().double() * qb.dequantize().double() / so
        away = (torch.sign(real) * torch.floor(real.abs() + 0.5) + zo).clamp(0, 255)
        differ += (away.to(torch.uint8) != ref).sum().item()
    print(f"     {differ} differ from exact rounding half away from zero")
    assert differ > 0, "the case does not separate the roundings"


def case_quant_activations_like_pytorch():
    # Quantized RELU, RELU6, HARD_SWISH, LOGISTIC, TANH and DEQUANTIZE on
    # every 8-bit value, for a sweep of scales and zero points, against eager
    # PyTorch's quantized ops on the qnnpack engine (sigmoid outputs scale
    # 1/256, zero point 0; tanh 1/128, 128; hardswish takes any).
    torch.backends.quantized.engine = "qnnpack"
    q = torch.arange(256, dtype=torch.uint8)
    qf = torch.ao.nn.quantized.functional
    for scale, zp in ((0.05, 120), (0.1, 128), (0.0313, 77), (0.25, 3), (0.02, 200),
                      (1 / 32, 128), (0.0078125, 0)):
        qx = torch._make_per_tensor_quantized_tensor(q, scale, zp)
        for name, os_, oz, ref in (
                ("RELU", scale, zp, torch.relu(qx)),
                ("RELU6", scale, zp, torch.ops.quantized.relu6(qx, False)),
                ("HARD_SWISH", 0.043, 17, qf.hardswish(qx, 0.043, 17)),
                ("HARD_SWISH", scale, zp, qf.hardswish(qx, scale, zp)),
                ("LOGISTIC", 1 / 256, 0, torch.sigmoid(qx)),
                ("TANH", 1 / 128, 128, torch.tanh(qx))):
            m = Model()
            i = m.input(T_Q8, (256,), scale, zp)
            o = m.output(T_Q8, (256,), os_, oz)
            m.op(name, [i], [o])
            out = m.run([q], [torch.uint8])[0]
            ref = ref.int_repr()
            assert torch.equal(out, ref), \
                f"{name} scale {scale} zp {zp}: {(out != ref).sum().item()} differ"
        m = Model()
        i = m.input(T_Q8, (256,), scale, zp)
        o = m.output(T_F32, (256,))
        m.op("DEQUANTIZE", [i], [o])
        assert torch.equal(m.run([q], [torch.float32])[0], qx.dequantize()), "DEQUANTIZE"


def case_quant_resize_bilinear_like_pytorch():
    # Quantized RESIZE_BILINEAR interpolates as PyTorch's quantized
    # upsample_bilinear2d on a contiguous (NCHW) tensor: stored values and
    # weights in float32, rounded half to even; eager is the oracle, for
    # several sizes, with and without align_corners (NNAPI's
    # half_pixel_centers otherwise). Eager's channels-last kernel (vectorized)
    # rounds a few ties otherwise: its differences are only reported.
    torch.backends.quantized.engine = "qnnpack"
    g = torch.Generator().manual_seed(13)
    differ = differ_cl = total = 0
    for (h, w), size, ac in (((9, 9), (18, 18), False), ((9, 9), (13, 17), False),
                             ((9, 9), (13, 17), True), ((5, 7), (20, 21), True),
                             ((6, 4), (15, 10), False), ((8, 8), (4, 6), False)):
        q = torch.randint(0, 256, (2, 19, h, w), generator=g).to(torch.uint8)
        qx = torch._make_per_tensor_quantized_tensor(q, 0.1, 100)
        ref = F.interpolate(qx, size=size, mode="bilinear", align_corners=ac).int_repr()
        ref_cl = F.interpolate(qx.contiguous(memory_format=torch.channels_last), size=size,
                               mode="bilinear", align_corners=ac).int_repr()
        differ_cl += (ref != ref_cl).sum().item()
        total += ref.numel()
        m = Model()
        i = m.input(T_Q8, (2, h, w, 19), 0.1, 100)
        o = m.output(T_Q8, (0, 0, 0, 0), 0.1, 100)
        m.op("RESIZE_BILINEAR", [i, m.const(I32, size[1]), m.const(I32, size[0]),
                                 m.const(BOOL, False), m.const(BOOL, ac), m.const(BOOL, not ac)],
             [o])
        out = nchw(m.run([nhwc(q)], [torch.uint8])[0])
        assert torch.equal(out, ref), f"{h}x{w} -> {size} align_corners={ac}: " \
            f"{(out != ref).sum().item()} differ from eager"
        real = F.interpolate(q.double(), size=size, mode="bilinear", align_corners=ac)
        differ += (torch.floor(real + 0.5).to(torch.uint8) != ref).sum().item()
    print(f"     {differ} of {total} differ from exact interpolation rounded half up, "
          f"{differ_cl} from eager's channels-last kernel")
    assert differ > 0, "the case does not separate the roundings"


def case_quantize_like_pytorch():
    # QUANTIZE rounds x * (1 / scale) half to even in float32, as
    # torch.quantize_per_tensor does. Halves of a quantum are ties, which
    # rounding half away from zero would send the other way.
    x = torch.arange(-16, 17, dtype=torch.float32) * 0.125
    ref = torch.quantize_per_tensor(x, 0.25, 128, torch.quint8).int_repr()
    away = (torch.sign(x / 0.25) * torch.floor((x / 0.25).abs() + 0.5) + 128).to(torch.uint8)
    assert not torch.equal(away, ref), "the case does not separate the roundings"
    m = Model()
    i = m.input(T_F32, (33,))
    o = m.output(T_Q8, (33,), 0.25, 128)
    m.op("QUANTIZE", [i], [o])
    out = m.run([x], [torch.uint8])[0]
    assert torch.equal(out, ref), (out, ref)


def depth_space(name, x, block, nchw_flag):
    m = Model()
    i = m.input(T_F32, tuple(x.shape))
    o = m.output(T_F32, (0, 0, 0, 0))
    m.op(name, [i, m.const(I32, block), m.const(BOOL, nchw_flag)], [o])
    return m.run([x], [torch.float32])[0]


def case_depth_to_space_space_to_depth():
    # NeuralNetworks.h (TensorFlow's order), element by element on NHWC data:
    # DEPTH_TO_SPACE out[n, h*b + i, w*b + j, c] = in[n, h, w, (i*b + j)*C + c];
    # SPACE_TO_DEPTH is its inverse. NCHW data (the flag) is the same on the
    # transposed tensor.
    b, n, h, w, c = 2, 2, 3, 2, 3
    x = torch.randn(n, h, w, b * b * c)
    ref = torch.empty(n, h * b, w * b, c)
    for hh in range(h):
        for ww in range(w):
            for i in range(b):
                for j in range(b):
                    for cc in range(c):
                        ref[:, hh * b + i, ww * b + j, cc] = x[:, hh, ww, (i * b + j) * c + cc]
    close(depth_space("DEPTH_TO_SPACE", x, b, False), ref)
    close(depth_space("DEPTH_TO_SPACE", nchw(x), b, True), nchw(ref))
    close(depth_space("SPACE_TO_DEPTH", ref, b, False), x)
    close(depth_space("SPACE_TO_DEPTH", nchw(ref), b, True), nchw(x))


def case_gather():
    # out = in.shape[:axis] + indices.shape + in.shape[axis+1:], axis may be negative.
    x = torch.randn(2, 5, 3)
    idx = torch.tensor([[4, 0], [2, 2]], dtype=torch.int32)
    m = Model()
    i = m.input(T_F32, (2, 5, 3))
    o = m.output(T_F32, (0, 0, 0, 0))
    m.op("GATHER", [i, m.const(I32, -2), m.const(T_I32, idx)], [o])
    out = m.run([x], [torch.float32])[0]
    ref = torch.stack([torch.stack([x[:, k] for k in row], 1) for row in idx.tolist()], 1)
    close(out, ref)


def case_pow():
    a = torch.rand(2, 3, 4) + 0.1
    e = torch.tensor([0.5, -1.5, 3.0, 2.2])
    close(binary("POW", a, e), torch.pow(a, e))


def batch_matmul(x, y, flags):
    m = Model()
    i = m.input(T_F32, tuple(x.shape))
    j = m.input(T_F32, tuple(y.shape))
    o = m.output(T_F32, (0,) * x.dim())
    m.op("BATCH_MATMUL", [i, j] + [m.const(BOOL, f) for f in flags], [o])
    return m.run([x, y], [torch.float32])[0]


def case_batch_matmul():
    # out[..., r, c] = sum_k x'[..., r, k] * y'[..., k, c], where x' (y') is
    # each slice of x (y) transposed when adj_x (adj_y) is true (default false).
    def formula(x, y, adj_x, adj_y):
        if adj_x:
            x = x.transpose(-1, -2)
        if adj_y:
            y = y.transpose(-1, -2)
        return (x.unsqueeze(-1) * y.unsqueeze(-3)).sum(-2)

    x, y = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 5, 6)
    close(batch_matmul(x, y, []), formula(x, y, False, False))
    close(batch_matmul(x, y, [False, False]), formula(x, y, False, False))
    a, b = torch.randn(3, 5, 4), torch.randn(3, 6, 5)
    close(batch_matmul(a, b, [True, True]), formula(a, b, True, True))
    p, q = torch.randn(4, 5), torch.randn(6, 5)
    close(batch_matmul(p, q, [False, True]), formula(p, q, False, True))


def case_tile():
    # out[i_0, ..., i_n] = in[i_0 % d_0, ..., i_n % d_n]; out dim k = d_k * multiples[k].
    x = torch.randn(2, 1, 3)
    mult = torch.tensor([2, 3, 1], dtype=torch.int32)
    m = Model()
    i = m.input(T_F32, (2, 1, 3))
    o = m.output(T_F32, (0, 0, 0))
    m.op("TILE", [i, m.const(T_I32, mult)], [o])
    out = m.run([x], [torch.float32])[0]
    ref = x
    for k, n in enumerate(mult.tolist()):
        idx = torch.arange(x.shape[k] * n) % x.shape[k]
        ref = ref.index_select(k, idx)
    close(out, ref)


def case_instance_normalization():
    # Per batch and channel over H and W:
    # out = (x - mean) * gamma / sqrt(var + epsilon) + beta, var = mean((x - mean)^2).
    x = torch.randn(2, 3, 4, 5) * 3 + 1
    gamma, beta, eps = 1.5, -0.25, 1e-3
    n = x[0, 0].numel()
    mean = x.sum((2, 3), keepdim=True) / n
    var = ((x - mean) ** 2).sum((2, 3), keepdim=True) / n
    ref = (x - mean) * gamma / torch.sqrt(var + eps) + beta
    for nchw_flag in (True, False):
        data = x if nchw_flag else nhwc(x)
        m = Model()
        i = m.input(T_F32, tuple(data.shape))
        o = m.output(T_F32, (0, 0, 0, 0))
        m.op("INSTANCE_NORMALIZATION", [i, m.const(F32, gamma), m.const(F32, beta),
                                        m.const(F32, eps), m.const(BOOL, nchw_flag)], [o])
        out = m.run([data], [torch.float32])[0]
        close(out if nchw_flag else nchw(out), ref)


def case_reduce_sum():
    # The sum over the given axes (negative ones count from the end), which
    # are kept as size 1 when keep_dims is true.
    x = torch.randn(2, 3, 4)
    for axes, keep in (([1], False), ([-1, 0], True)):
        m = Model()
        i = m.input(T_F32, (2, 3, 4))
        o = m.output(T_F32, (0,) * (3 if keep else 3 - len(axes)))
        m.op("REDUCE_SUM", [i, m.const(T_I32, torch.tensor(axes, dtype=torch.int32)),
                            m.const(BOOL, keep)], [o])
        out = m.run([x], [torch.float32])[0]
        ref = x
        for a in sorted((a % 3 for a in axes), reverse=True):
            parts = [ref.select(a, j) for j in range(ref.shape[a])]
            total = parts[0]
            for p in parts[1:]:
                total = total + p
            ref = total.unsqueeze(a) if keep else total
        close(out, ref)


# ----------------------------------------------- issue 25: the runtime as the only oracle
# Operations nnapi-convert emits and PyTorch's converter does not (so
# runtime.reference_models never runs them), each against NeuralNetworks.h's
# definition evaluated element by element in plain Python (no torch kernel
# that the runtime could share a misreading with).

def _values(t):
    return t.reshape(-1).tolist()


def case_abs_neg_log():
    # ABS (38): |x|; NEG (67): -x; both also on TENSOR_INT32. LOG (60): ln(x).
    x = torch.randn(3, 5) * 4
    for name, fn in (("ABS", lambda v: v if v >= 0 else -v), ("NEG", lambda v: -v)):
        got = _values(unary(name, x))
        assert got == [fn(v) for v in _values(x)], (name, got)
        xi = torch.randint(-50, 50, (7,), dtype=torch.int32)
        m = Model()
        i = m.input(T_I32, (7,))
        o = m.output(T_I32, (7,))
        m.op(name, [i], [o])
        got = _values(m.run([xi], [torch.int32])[0])
        assert got == [fn(v) for v in _values(xi)], (name, "int32", got)
    p = x.abs() + 0.01
    got = unary("LOG", p)
    want = torch.tensor([math.log(v) for v in _values(p)]).reshape(p.shape)
    close(got, want)


def case_cast():
    # CAST (45): the same values in the output's type; a TENSOR_QUANT8_ASYMM
    # input is read as its uint8 values (scale and zero point ignored).
    def cast(x, in_code, out_code, out_dtype, scale=0.0, zp=0):
        m = Model()
        i = m.input(in_code, tuple(x.shape), scale, zp)
        o = m.output(out_code, tuple(x.shape))
        m.op("CAST", [i], [o])
        return m.run([x], [out_dtype])[0]

    xi = torch.tensor([[0, 1, -7], [1, 0, 123456]], dtype=torch.int32)
    got = cast(xi, T_I32, T_F32, torch.float32)
    assert _values(got) == [float(v) for v in _values(xi)], got
    xf = torch.tensor([0.0, 1.0, -3.0, 250.0, -65536.0])  # exact integers: no rounding involved
    got = cast(xf, T_F32, T_I32, torch.int32)
    assert _values(got) == [0, 1, -3, 250, -65536], got
    xq = torch.tensor([0, 3, 128, 255], dtype=torch.uint8)
    got = cast(xq, T_Q8, T_F32, torch.float32, scale=0.5, zp=128)
    assert _values(got) == [0.0, 3.0, 128.0, 255.0], got


def case_slice():
    # SLICE (86): output[i...] = input[begin + i...] over size[d] elements of
    # each dimension d, where size -1 means to the end of that dimension.
    x = torch.randn(3, 4, 5)
    for begin, size in (([1, 0, 2], [2, 4, 3]), ([0, 3, 1], [-1, 1, -1]), ([2, 2, 4], [1, 2, 1])):
        m = Model()
        i = m.input(T_F32, (3, 4, 5))
        ext = [x.shape[d] - begin[d] if size[d] == -1 else size[d] for d in range(3)]
        o = m.output(T_F32, (0, 0, 0))
        m.op("SLICE", [i, m.const(T_I32, torch.tensor(begin, dtype=torch.int32)),
                       m.const(T_I32, torch.tensor(size, dtype=torch.int32))], [o])
        got = m.run([x], [torch.float32])[0]
        assert list(got.shape) == ext, (begin, size, got.shape)
        want = [[[x[begin[0] + a][begin[1] + b][begin[2] + c].item() for c in range(ext[2])]
                 for b in range(ext[1])] for a in range(ext[0])]
        assert got.tolist() == want, (begin, size)


def case_squeeze():
    # SQUEEZE (34): the same data with the listed size-1 dimensions removed,
    # or every size-1 dimension when input 1 is omitted (no operand value).
    # Rank up to 4.
    x = torch.randn(1, 3, 1, 4)
    for axes, shape in (([0, 2], [3, 4]), ([2], [1, 3, 4]), (None, [3, 4])):
        m = Model()
        i = m.input(T_F32, (1, 3, 1, 4))
        o = m.output(T_F32, (0,) * len(shape))
        if axes is None:
            ax = m.operand(T_I32, (0,))  # an omitted optional input
            ok(lib.ANeuralNetworksModel_setOperandValue(m.handle, ax, None, 0), "omit")
        else:
            ax = m.const(T_I32, torch.tensor(axes, dtype=torch.int32))
        m.op("SQUEEZE", [i, ax], [o])
        got = m.run([x], [torch.float32])[0]
        assert list(got.shape) == shape, (axes, got.shape)
        assert _values(got) == _values(x), axes


def case_channel_shuffle():
    # CHANNEL_SHUFFLE (46): along `axis`, with group_size = C / num_groups,
    # output_channel[k * num_groups + g] = input_channel[g * group_size + k].
    for shape, groups, axis in (((2, 3, 2, 6), 3, 3), ((2, 3, 2, 6), 2, -1), ((2, 8, 3), 4, 1),
                                ((12,), 3, 0)):
        x = torch.arange(math.prod(shape), dtype=torch.float32).reshape(shape)
        m = Model()
        i = m.input(T_F32, shape)
        o = m.output(T_F32, (0,) * len(shape))
        m.op("CHANNEL_SHUFFLE", [i, m.const(I32, groups), m.const(I32, axis)], [o])
        got = m.run([x], [torch.float32])[0]
        ax = axis % len(shape)
        channels = shape[ax]
        group_size = channels // groups
        xs, gs = x.movedim(ax, 0), got.movedim(ax, 0)
        for k in range(group_size):
            for g in range(groups):
                assert torch.equal(gs[k * groups + g], xs[g * group_size + k]), (shape, groups, k, g)


def case_fused_relu1():
    # FuseCode ANEURALNETWORKS_FUSED_RELU1 (2): the result clamped to [-1, 1],
    # on ADD (input 2), FULLY_CONNECTED (input 3) and CONV_2D (input 9).
    def clamp1(v):
        return min(max(v, -1.0), 1.0)

    a, b = torch.randn(2, 3, 4) * 2, torch.randn(2, 3, 4) * 2
    got = binary("ADD", a, b, fuse=2)
    want = [clamp1(u + v) for u, v in zip(_values(a), _values(b))]
    close(got, torch.tensor(want).reshape(got.shape))

    x, w, bias = torch.randn(3, 5) * 2, torch.randn(4, 5), torch.randn(4)
    m = Model()
    i = m.input(T_F32, (3, 5))
    o = m.output(T_F32, (3, 4))
    m.op("FULLY_CONNECTED", [i, m.const(T_F32, w), m.const(T_F32, bias), m.const(I32, 2)], [o])
    got = m.run([x], [torch.float32])[0]
    want = [[clamp1(sum(x[r][k].item() * w[u][k].item() for k in range(5)) + bias[u].item())
             for u in range(4)] for r in range(3)]
    close(got, torch.tensor(want))
    assert got.min() >= -1 and got.max() <= 1 and (got.abs() == 1).any(), got

    # A 1x1 CONV_2D (NHWC): output[b, i, j, c] = sum_k input[b, i, j, k] * filter[c, 0, 0, k] + bias[c].
    xc, wc, bc = torch.randn(1, 3, 3, 4) * 2, torch.randn(2, 1, 1, 4), torch.randn(2)
    m = Model()
    i = m.input(T_F32, (1, 3, 3, 4))
    ins = [i, m.const(T_F32, wc), m.const(T_F32, bc)] + [m.const(I32, s) for s in (0, 0, 0, 0, 1, 1, 2)]
    o = m.output(T_F32, (0, 0, 0, 0))
    m.op("CONV_2D", ins, [o])
    got = m.run([xc], [torch.float32])[0]
    want = [[[[clamp1(sum(xc[0][r][s][k].item() * wc[c][0][0][k].item() for k in range(4)) + bc[c].item())
               for c in range(2)] for s in range(3)] for r in range(3)]]
    close(got, torch.tensor(want))


# ------------------------------------- issue 20/21: comparisons, selection, reductions
# Each against NeuralNetworks.h's definition evaluated element by element in
# plain Python (index loops), over every operand type the operation takes at
# feature level 3.

import itertools  # noqa: E402

DTYPE = {T_F32: torch.float32, T_F16: torch.float16, T_I32: torch.int32, T_Q8: torch.uint8,
         T_BOOL8: torch.bool}


def _index(t, idx):
    """t[idx] for idx aligned from the end with t's dims (size-1 dims broadcast)."""
    idx = idx[len(idx) - t.dim():]
    return t[tuple(i if n > 1 else 0 for i, n in zip(idx, t.shape))].item()


def _model_io(m, code, t, scale=0.0, zp=0):
    return m.input(code, tuple(t.shape), scale, zp)


def _run_one(name, operands, out_specs, scalars=()):
    """operands: (code, tensor, scale, zp) model inputs; scalars: (code, value)
    constants after them; out_specs: (code, rank, scale, zp)."""
    m = Model()
    ins = [_model_io(m, c, t, sc, zp) for c, t, sc, zp in operands]
    ins += [m.const(c, v) if c in (F32, I32, BOOL) else m.const(c, v) for c, v in scalars]
    outs = [m.output(c, (0,) * r, sc, zp) for c, r, sc, zp in out_specs]
    m.op(name, ins, outs)
    return m.run([t for _, t, _, _ in operands], [DTYPE[c] for c, _, _, _ in out_specs])


def _real(v, scale, zp):
    return (v - zp) * scale if scale else v


def _sample(code, shape, gen):
    if code == T_BOOL8:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if code == T_Q8:
        return torch.randint(0, 256, shape, generator=gen).to(torch.uint8)
    if code == T_I32:
        return torch.randint(-4, 5, shape, generator=gen).to(torch.int32)
    # few distinct values, so that equal elements occur
    return (torch.randint(-4, 5, shape, generator=gen).float() / 2).to(DTYPE[code])


CMP = {"EQUAL": lambda a, b: a == b, "NOT_EQUAL": lambda a, b: a != b,
       "GREATER": lambda a, b: a > b, "GREATER_EQUAL": lambda a, b: a >= b,
       "LESS": lambda a, b: a < b, "LESS_EQUAL": lambda a, b: a <= b}


def case_comparisons():
    # EQUAL ... LESS_EQUAL (48, 68, 53, 54, 58, 59): output[i] = x[i] op y[i]
    # with broadcasting, TENSOR_BOOL8; quantized inputs compare real values
    # (q - zeroPoint) * scale, each input with its own parameters.
    gen = torch.Generator().manual_seed(1)
    for code in (T_F32, T_F16, T_I32, T_BOOL8, T_Q8):
        a, b = _sample(code, (2, 3, 4), gen), _sample(code, (3, 1), gen)
        qa, qb = ((0.5, 128), (0.25, 100)) if code == T_Q8 else ((0.0, 0), (0.0, 0))
        shape = (2, 3, 4)
        for name, fn in CMP.items():
            got = _run_one(name, [(code, a, *qa), (code, b, *qb)], [(T_BOOL8, 3, 0.0, 0)])[0]
            assert got.dtype == torch.bool and list(got.shape) == list(shape), (name, got.shape)
            for idx in itertools.product(*map(range, shape)):
                x, y = _real(_index(a, idx), *qa), _real(_index(b, idx), *qb)
                assert got[idx].item() == fn(x, y), (name, code, idx, x, y)


def case_logical():
    # LOGICAL_AND (61), LOGICAL_OR (63): x[i] and/or y[i], broadcasting;
    # LOGICAL_NOT (62): not x[i]. TENSOR_BOOL8 only.
    gen = torch.Generator().manual_seed(2)
    a, b = _sample(T_BOOL8, (2, 1, 4), gen), _sample(T_BOOL8, (3, 1), gen)
    for name, fn in (("LOGICAL_AND", lambda x, y: x and y), ("LOGICAL_OR", lambda x, y: x or y)):
        got = _run_one(name, [(T_BOOL8, a, 0.0, 0), (T_BOOL8, b, 0.0, 0)],
                       [(T_BOOL8, 3, 0.0, 0)])[0]
        assert list(got.shape) == [2, 3, 4], got.shape
        for idx in itertools.product(range(2), range(3), range(4)):
            assert got[idx].item() == fn(_index(a, idx), _index(b, idx)), (name, idx)
    got = _run_one("LOGICAL_NOT", [(T_BOOL8, a, 0.0, 0)], [(T_BOOL8, 3, 0.0, 0)])[0]
    assert _values(got) == [not v for v in _values(a)]


def case_select():
    # SELECT (84): output[i] = mask[i] ? x[i] : y[i], all of one shape. A
    # quantized output takes each chosen real value into its own parameters
    # (round to nearest; here every value is exact in them).
    gen = torch.Generator().manual_seed(3)
    mask = _sample(T_BOOL8, (2, 3, 4), gen)
    for code in (T_F32, T_F16, T_I32, T_Q8):
        x, y = _sample(code, (2, 3, 4), gen), _sample(code, (2, 3, 4), gen)
        qx, qy, qo = ((0.25, 128), (0.5, 128), (0.25, 128)) if code == T_Q8 else ((0.0, 0),) * 3
        if code == T_Q8:  # keep y's real values inside the output's range
            y = torch.randint(64, 192, (2, 3, 4), generator=gen).to(torch.uint8)
        got = _run_one("SELECT", [(T_BOOL8, mask, 0.0, 0), (code, x, *qx), (code, y, *qy)],
                       [(code, 3, *qo)])[0]
        for idx in itertools.product(range(2), range(3), range(4)):
            m = mask[idx].item()
            want = x[idx].item() if m else y[idx].item()
            if code == T_Q8 and not m:
                want = round(_real(want, *qy) / qo[0]) + qo[1]
            assert got[idx].item() == want, (code, idx, got[idx].item(), want)


def case_argmax_argmin():
    # ARGMAX (39) / ARGMIN (40): the index of the largest (smallest) element
    # along `axis` (negative counts from the end), the axis removed; a 1-D
    # input gives shape [1]. Ties: the first index (Android's reference
    # implementation scans with a strict comparison).
    gen = torch.Generator().manual_seed(4)
    for code in (T_F32, T_F16, T_I32, T_Q8):
        x = _sample(code, (2, 3, 5), gen)
        sc = (0.5, 3) if code == T_Q8 else (0.0, 0)
        for name, better in (("ARGMAX", lambda v, w: v > w), ("ARGMIN", lambda v, w: v < w)):
            for axis in (1, -1, 0):
                got = _run_one(name, [(code, x, *sc)], [(T_I32, 2, 0.0, 0)], [(I32, axis)])[0]
                ax = axis % 3
                rest = [n for d, n in enumerate(x.shape) if d != ax]
                assert list(got.shape) == rest, (name, axis, got.shape)
                for idx in itertools.product(*map(range, rest)):
                    best = 0
                    for j in range(x.shape[ax]):
                        full = list(idx)
                        full.insert(ax, j)
                        ref = list(idx)
                        ref.insert(ax, best)
                        if better(x[tuple(full)].item(), x[tuple(ref)].item()):
                            best = j
                    assert got[idx].item() == best, (name, code, axis, idx)
    v = torch.tensor([1.0, 3.0, 3.0, -2.0])
    got = _run_one("ARGMAX", [(T_F32, v, 0.0, 0)], [(T_I32, 1, 0.0, 0)], [(I32, 0)])[0]
    assert got.tolist() == [1], got


REDUCERS = {"REDUCE_MAX": max, "REDUCE_MIN": min, "REDUCE_PROD": math.prod,
            "REDUCE_ALL": all, "REDUCE_ANY": any}


def case_reductions():
    # REDUCE_MAX/MIN (77, 78; float16/32, quant8 keeping its parameters),
    # REDUCE_PROD (79; float16/32), REDUCE_ALL/ANY (75, 76; bool8): the
    # reduction over `axes` (each in [-rank, rank)), kept as size 1 with
    # keep_dims; every dim reduced without keep_dims gives shape [1].
    gen = torch.Generator().manual_seed(5)
    types = {"REDUCE_MAX": (T_F32, T_F16, T_Q8), "REDUCE_MIN": (T_F32, T_F16, T_Q8),
             "REDUCE_PROD": (T_F32, T_F16), "REDUCE_ALL": (T_BOOL8,), "REDUCE_ANY": (T_BOOL8,)}
    shape = (2, 3, 4)
    for name, codes in types.items():
        for code in codes:
            x = _sample(code, shape, gen)
            if name == "REDUCE_PROD":  # |x| <= 1: no float16 overflow
                x = x / 2
            sc = (0.5, 7) if code == T_Q8 else (0.0, 0)
            for axes, keep in (([1], False), ([-1, 0], True), ([0, 1, 2], False), ([2, -1], False)):
                red = sorted({a % 3 for a in axes})
                out_shape = [1 if d in red else n for d, n in enumerate(shape)] if keep else \
                    [n for d, n in enumerate(shape) if d not in red] or [1]
                got = _run_one(name, [(code, x, *sc)], [(code, len(out_shape), *sc)],
                               [(T_I32, torch.tensor(axes, dtype=torch.int32)), (BOOL, keep)])[0]
                assert list(got.shape) == out_shape, (name, axes, keep, got.shape)
                kept = [d for d in range(3) if d not in red]
                for idx in itertools.product(*[range(shape[d]) for d in kept]):
                    vals = []
                    for r in itertools.product(*[range(shape[d]) for d in red]):
                        full = [0] * 3
                        for d, i in zip(kept, idx):
                            full[d] = i
                        for d, i in zip(red, r):
                            full[d] = i
                        vals.append(x[tuple(full)].item())
                    want = REDUCERS[name](vals)
                    out_idx = [0] * len(out_shape)
                    if keep:
                        for d, i in zip(kept, idx):
                            out_idx[d] = i
                    else:
                        out_idx[:len(idx)] = idx
                    g = got[tuple(out_idx)].item()
                    if name == "REDUCE_PROD":  # rounded products
                        tol = 1e-3 if code == T_F16 else 1e-6
                        assert abs(g - want) <= tol * max(1.0, abs(want)), (name, idx, g, want)
                    else:
                        assert g == want, (name, code, axes, keep, idx, g, want)


def case_topk():
    # TOPK_V2 (90): along the last dim the k largest values in descending
    # order and their indices; of equal values the one with the larger index
    # first. Quant8 keeps its parameters.
    gen = torch.Generator().manual_seed(6)
    for code in (T_F32, T_F16, T_I32, T_Q8):
        x = _sample(code, (2, 3, 6), gen)
        sc = (0.5, 10) if code == T_Q8 else (0.0, 0)
        for k in (1, 3, 6):
            vals, idxs = _run_one("TOPK_V2", [(code, x, *sc)], [(code, 3, *sc), (T_I32, 3, 0.0, 0)],
                                  [(I32, k)])
            assert list(vals.shape) == [2, 3, k] and list(idxs.shape) == [2, 3, k]
            for i, j in itertools.product(range(2), range(3)):
                row = [x[i, j, c].item() for c in range(6)]
                order = sorted(range(6), key=lambda c: (-row[c], -c))[:k]
                assert idxs[i, j].tolist() == order, (code, k, row, idxs[i, j].tolist())
                assert vals[i, j].tolist() == [row[c] for c in order], (code, k)


def case_sin():
    # SIN (85): sin(x) elementwise, float32 and float16.
    x = torch.linspace(-20, 20, 101)
    got = unary("SIN", x)
    close(got, torch.tensor([math.sin(v) for v in _values(x)]))
    h = x.half()
    got = _run_one("SIN", [(T_F16, h, 0.0, 0)], [(T_F16, 1, 0.0, 0)])[0]
    want = torch.tensor([math.sin(v) for v in _values(h)])
    assert (got.float() - want).abs().max() <= 2e-3, (got.float() - want).abs().max()


def _refused(build):
    """True when addOperation or finish refuses the model `build` makes."""
    m = Model()
    try:
        build(m)
        a, b = u32_array(m.inputs), u32_array(m.outputs)
        ok(lib.ANeuralNetworksModel_identifyInputsAndOutputs(
            m.handle, len(m.inputs), a, len(m.outputs), b), "identify")
        ok(lib.ANeuralNetworksModel_finish(m.handle), "finish")
    except RuntimeError:
        return True
    finally:
        lib.ANeuralNetworksModel_free(m.handle)
    return False


def case_validator_refusals():
    # The validator's findings for models NeuralNetworks.h does not allow.
    def cmp_out(out_code):
        def build(m):
            a, b = m.input(T_F32, (2, 3)), m.input(T_F32, (2, 3))
            m.op("GREATER", [a, b], [m.output(out_code, (2, 3))])
        return build

    def cmp_types(m):
        a, b = m.input(T_F32, (2, 3)), m.input(T_I32, (2, 3))
        m.op("EQUAL", [a, b], [m.output(T_BOOL8, (2, 3))])

    def logical_float(m):
        a, b = m.input(T_F32, (2, 3)), m.input(T_F32, (2, 3))
        m.op("LOGICAL_AND", [a, b], [m.output(T_F32, (2, 3))])

    def select_shapes(m):
        c, x, y = m.input(T_BOOL8, (2, 3)), m.input(T_F32, (2, 3)), m.input(T_F32, (1, 3))
        m.op("SELECT", [c, x, y], [m.output(T_F32, (2, 3))])

    def argmax_axis(axis):
        def build(m):
            x = m.input(T_F32, (2, 3))
            m.op("ARGMAX", [x, m.const(I32, axis)], [m.output(T_I32, (0,))])
        return build

    def reduce(name, code, axes, out_dims):
        def build(m):
            x = m.input(code, (2, 3), 0.5 if code == T_Q8 else 0.0, 0)
            m.op(name, [x, m.const(T_I32, torch.tensor(axes, dtype=torch.int32)),
                        m.const(BOOL, False)],
                 [m.output(code, out_dims, 0.5 if code == T_Q8 else 0.0, 0)])
        return build

    def reduce_max_requant(m):
        x = m.input(T_Q8, (2, 3), 0.5, 0)
        m.op("REDUCE_MAX", [x, m.const(T_I32, torch.tensor([1], dtype=torch.int32)),
                            m.const(BOOL, False)], [m.output(T_Q8, (2,), 0.25, 0)])

    def topk(k):
        def build(m):
            x = m.input(T_F32, (2, 5))
            m.op("TOPK_V2", [x, m.const(I32, k)], [m.output(T_F32, (2, 0)), m.output(T_I32, (2, 0))])
        return build

    def sin_int(m):
        x = m.input(T_I32, (4,))
        m.op("SIN", [x], [m.output(T_I32, (4,))])

    good = [cmp_out(T_BOOL8), argmax_axis(-2), reduce("REDUCE_PROD", T_F32, [-1], (2,)),
            topk(5)]
    bad = {"comparison with a float32 output": cmp_out(T_F32),
           "comparison of float32 and int32": cmp_types,
           "LOGICAL_AND of float32": logical_float,
           "SELECT of different shapes": select_shapes,
           "ARGMAX axis 2 of a 2-D input": argmax_axis(2),
           "ARGMAX axis -3 of a 2-D input": argmax_axis(-3),
           "REDUCE_PROD of int32": reduce("REDUCE_PROD", T_I32, [1], (2,)),
           "REDUCE_ALL of float32": reduce("REDUCE_ALL", T_F32, [1], (2,)),
           "REDUCE_MAX axis 2 of a 2-D input": reduce("REDUCE_MAX", T_F32, [2], (2,)),
           "REDUCE_MIN declaring the wrong output shape": reduce("REDUCE_MIN", T_F32, [1], (3,)),
           "quantized REDUCE_MAX with another output scale": reduce_max_requant,
           "TOPK_V2 k = 6 of 5": topk(6), "TOPK_V2 k = 0": topk(0),
           "SIN of int32": sin_int}
    for build in good:
        assert not _refused(build), build
    wrongly_accepted = [what for what, build in bad.items() if not _refused(build)]
    assert not wrongly_accepted, wrongly_accepted


def _cast(x, in_code, out_code, out_dtype, in_q=(0.0, 0), out_q=(0.0, 0)):
    m = Model()
    i = m.input(in_code, tuple(x.shape), *in_q)
    o = m.output(out_code, tuple(x.shape), *out_q)
    m.op("CAST", [i], [o])
    return m.run([x], [out_dtype])[0]


def case_cast_truncates_and_saturates():
    # CAST (45), NeuralNetworks.h: "Casts a tensor to a type. This operation
    # ignores the quantization parameters" (stored values are converted).
    # Android's reference (Cast.cpp, copyCast): static_cast<ToT>(a), which
    # truncates a float toward zero; to TENSOR_QUANT8_ASYMM (uint8) values are
    # first saturated to [0, 255]. Every pair of types the converter emits:
    # float32 <-> int32 (.int(), .float(), bools held as int32 0/1 moved
    # through float32), quant8 -> int32 (table lookups), quant8 -> float32
    # and float32 -> quant8 (the quantized mean, video), quant8 -> quant8
    # (the quantized mean's and the video paths' re-labelling of scale).
    def trunc_sat(values, lo, hi):
        out = []
        for v in values:
            v = min(max(v, lo), hi) if lo is not None else v
            out.append(int(v))  # Python's int() truncates toward zero
        return out

    xf = torch.tensor([-2.75, -0.5, -0.0, 0.5, 0.999, 2.5, 3.75, -65536.25, 123456.5])
    assert _values(_cast(xf, T_F32, T_I32, torch.int32)) == trunc_sat(_values(xf), None, None)
    xs = torch.tensor([-3.5, -0.25, 0.7, 17.5, 127.99, 254.9, 255.0, 300.0, 1e6])
    want = trunc_sat(_values(xs), 0, 255)  # [0, 0, 0, 17, 127, 254, 255, 255, 255]
    got = _cast(xs, T_F32, T_Q8, torch.uint8, out_q=(0.25, 3))
    assert _values(got) == want, (got, want)
    xi = torch.tensor([-7, -1, 0, 1, 200, 255, 256, 100000], dtype=torch.int32)
    got = _cast(xi, T_I32, T_Q8, torch.uint8, out_q=(1.0, 0))
    assert _values(got) == trunc_sat(_values(xi), 0, 255), got
    # int32 -> float32 and back: bools as int32 0/1 keep their values.
    bools = torch.tensor([[0, 1, 1], [1, 0, 0]], dtype=torch.int32)
    as_float = _cast(bools, T_I32, T_F32, torch.float32)
    assert _values(as_float) == [0.0, 1.0, 1.0, 1.0, 0.0, 0.0], as_float
    assert _values(_cast(as_float, T_F32, T_I32, torch.int32)) == _values(bools)
    # Stored values, whatever the scale and zero point on either side.
    q = torch.tensor([0, 3, 127, 128, 254, 255], dtype=torch.uint8)
    assert _values(_cast(q, T_Q8, T_I32, torch.int32, in_q=(0.5, 128))) == _values(q)
    assert _values(_cast(q, T_Q8, T_F32, torch.float32, in_q=(0.5, 128))) == \
        [float(v) for v in _values(q)]
    got = _cast(q, T_Q8, T_Q8, torch.uint8, in_q=(1.0, 3), out_q=(0.0625, 128))
    assert _values(got) == _values(q), got


# The quantized data moves: NeuralNetworks.h's index formulas on the stored
# uint8 values, which move unchanged; the output's scale and zero point must
# be the input's (an output declared otherwise is refused).
QS, QZ = 0.125, 100


def _q8(*shape):
    return torch.randint(0, 256, shape, dtype=torch.uint8)


def _refused_requant(build):
    """build(m, out_scale) refused with another output scale, accepted with the input's."""
    assert not _refused(lambda m: build(m, QS)), "refused with the input's scale"
    assert _refused(lambda m: build(m, QS * 2)), "accepted another output scale"


def case_quant8_gather():
    # GATHER (51): out[i, j..., k] = in[i, indices[j...], k] along axis.
    x = _q8(2, 5, 3)
    idx = torch.tensor([[4, 0], [2, 2]], dtype=torch.int32)

    def build(m, scale):
        i = m.input(T_Q8, (2, 5, 3), QS, QZ)
        o = m.output(T_Q8, (2, 2, 2, 3), scale, QZ)
        m.op("GATHER", [i, m.const(I32, 1), m.const(T_I32, idx)], [o])
    m = Model()
    build(m, QS)
    got = m.run([x], [torch.uint8])[0]
    want = torch.empty(2, 2, 2, 3, dtype=torch.uint8)
    for a in range(2):
        for j in range(2):
            for k in range(2):
                for c in range(3):
                    want[a, j, k, c] = x[a, int(idx[j, k]), c]
    assert torch.equal(got, want), (got, want)
    _refused_requant(build)


def case_quant8_split():
    # SPLIT (87): num_splits equal parts along axis, part p = in[..., p*s:(p+1)*s, ...].
    x = _q8(2, 6, 3)

    def build(m, scale):
        i = m.input(T_Q8, (2, 6, 3), QS, QZ)
        outs = [m.output(T_Q8, (2, 2, 3), scale, QZ) for _ in range(3)]
        m.op("SPLIT", [i, m.const(I32, 1), m.const(I32, 3)], outs)
    m = Model()
    build(m, QS)
    got = m.run([x], [torch.uint8] * 3)
    for p in range(3):
        want = torch.empty(2, 2, 3, dtype=torch.uint8)
        for a in range(2):
            for j in range(2):
                for c in range(3):
                    want[a, j, c] = x[a, p * 2 + j, c]
        assert torch.equal(got[p], want), (p, got[p], want)
    _refused_requant(build)


def case_quant8_transpose():
    # TRANSPOSE (37): out[i0, i1, i2] = in at the index with in-dim perm[d] = i_d.
    CODES["TRANSPOSE"] = 37
    x = _q8(2, 3, 4)
    perm = [2, 0, 1]

    def build(m, scale):
        i = m.input(T_Q8, (2, 3, 4), QS, QZ)
        o = m.output(T_Q8, (4, 2, 3), scale, QZ)
        m.op("TRANSPOSE", [i, m.const(T_I32, torch.tensor(perm, dtype=torch.int32))], [o])
    m = Model()
    build(m, QS)
    got = m.run([x], [torch.uint8])[0]
    want = torch.empty(4, 2, 3, dtype=torch.uint8)
    for a in range(4):
        for b in range(2):
            for c in range(3):
                src = [0, 0, 0]
                for d, i in enumerate((a, b, c)):
                    src[perm[d]] = i
                want[a, b, c] = x[src[0], src[1], src[2]]
    assert torch.equal(got, want), (got, want)
    _refused_requant(build)


def case_quant8_slice():
    # SLICE (86): out[i...] = in[begin + i...], size -1 to the end.
    x = _q8(3, 4, 5)
    begin, size = [1, 0, 2], [2, -1, 3]

    def build(m, scale):
        i = m.input(T_Q8, (3, 4, 5), QS, QZ)
        o = m.output(T_Q8, (2, 4, 3), scale, QZ)
        m.op("SLICE", [i, m.const(T_I32, torch.tensor(begin, dtype=torch.int32)),
                       m.const(T_I32, torch.tensor(size, dtype=torch.int32))], [o])
    m = Model()
    build(m, QS)
    got = m.run([x], [torch.uint8])[0]
    want = torch.empty(2, 4, 3, dtype=torch.uint8)
    for a in range(2):
        for b in range(4):
            for c in range(3):
                want[a, b, c] = x[begin[0] + a, begin[1] + b, begin[2] + c]
    assert torch.equal(got, want), (got, want)
    _refused_requant(build)


def case_quant8_depth_to_space():
    # DEPTH_TO_SPACE (5), NHWC: out[n, h*b + i, w*b + j, c] = in[n, h, w, (i*b + j)*C + c].
    bs, n, h, w, c = 2, 1, 2, 3, 2
    x = _q8(n, h, w, bs * bs * c)

    def build(m, scale):
        i = m.input(T_Q8, tuple(x.shape), QS, QZ)
        o = m.output(T_Q8, (n, h * bs, w * bs, c), scale, QZ)
        m.op("DEPTH_TO_SPACE", [i, m.const(I32, bs)], [o])
    m = Model()
    build(m, QS)
    got = m.run([x], [torch.uint8])[0]
    want = torch.empty(n, h * bs, w * bs, c, dtype=torch.uint8)
    for hh in range(h):
        for ww in range(w):
            for i in range(bs):
                for j in range(bs):
                    for cc in range(c):
                        want[:, hh * bs + i, ww * bs + j, cc] = x[:, hh, ww, (i * bs + j) * c + cc]
    assert torch.equal(got, want), (got, want)
    _refused_requant(build)

CASES = [v for k, v in list(globals().items()) if k.startswith("case_")]


def run_cases(cases):
    """Runs each case, prints one line per case and "N passed, M failed".
    NNAPI_TEST_CASES (a regex on the case names, as tools/mutation_check.py
    sets it) runs only the matching ones."""
    torch.manual_seed(0)
    only = os.environ.get("NNAPI_TEST_CASES")
    passed = failed = 0
    for case in cases:
        if only and not re.search(only, case.__name__):
            continue
        try:
            case()
        except Exception as e:  # noqa: BLE001
            failed += 1
            print(f"FAIL {case.__name__}: {type(e).__name__}: {str(e)[:400]}")
            traceback.print_exc(limit=2)
            continue
        passed += 1
        print(f"ok   {case.__name__}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


def main():
    return run_cases(CASES)


if __name__ == "__main__":
    sys.exit(main())

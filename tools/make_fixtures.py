#!/usr/bin/python3
"""Generate reference fixtures for nnapi-convert from PyTorch's own converter.

Usage (Debian's interpreter, which has python3-torch 1.13):
    /usr/bin/python3 tools/make_fixtures.py OUT_DIR [--only REGEX] [--torchvision] [--list]

One directory per case, OUT_DIR/<case_name>/ (overwritten on every run); the
layout is documented in tests/reference/README.md.

Cases:
  * every self.check(...) and assertRaisesRegex case of PyTorch's
    test/test_nnapi.py, built the way that test builds them (quantized
    conv2d_transpose is skipped, as the test skips it);
  * with --torchvision, randomly initialised torchvision models (float and
    quantized).

The reference for every case is: trace (saved as model.pt), torch.jit.freeze,
torch._C._jit_pass_remove_mutation, then the stock converter with its internal
torch.jit.freeze replaced by the identity.
"""

import argparse
import os
import re
import shutil
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from typing import Optional, Tuple  # noqa: E402

from fixtures_common import (  # noqa: E402
    as_list, nhwc, qpt, regex_matches, run_reference, write_case)


class Case:
    """What one self.check(...) call receives."""

    def __init__(self, module, args, *, trace_args=None, convert_args=None,
                 error_regex=None, must_convert=False, must_refuse=False, options=(),
                 reference_kwargs=None, fold=None, not_runnable=None, engine=None):
        self.module = module
        # The quantized engine eager runs with (None: qnnpack, as on Android).
        self.engine = engine
        self.args = list(args) if isinstance(args, (list, tuple)) else [args]
        self.trace_args = trace_args
        self.convert_args = convert_args
        self.error_regex = error_regex
        self.must_convert = must_convert
        # nnapi-convert must refuse it (exit 1, naming the node, matching
        # error_regex), whatever the reference does
        self.must_refuse = must_refuse
        # nnapi-convert options for the case (CLI syntax; the tests map each
        # onto ConvertOptions, tests/common/fixtures.h apply_case_options), and
        # the same request in the words of the reference's
        # convert_model_to_nnapi (compilation_preference, relax_f32_to_f16,
        # use_int16_for_qint16, return_shapes), written by hand for each case.
        self.options = list(options)
        self.reference_kwargs = dict(reference_kwargs or {})
        # What --fuse-activations must fold (None: not stated): one
        # (NNAPI operation, fused activation) pair per activation folded, e.g.
        # ("CONV_2D", "RELU6"); [] when nothing may fold.
        self.fold = fold
        # Why the converted model cannot run on NNAPI (then it is only
        # compared byte for byte), or None.
        self.not_runnable = not_runnable


# Registry: (name, source, builder).  Builders run lazily, after
# torch.manual_seed(0), so --only/--list never build what they skip and every
# case is identical whether generated alone or with the others.
REGISTRY = []


def case(name, builder, source="test_nnapi"):
    assert all(n != name for n, _, _ in REGISTRY), name
    REGISTRY.append((name, source, builder))


# The four input kinds of float_and_quant_and_nhwc() (scale/zero_point
# arguments are ignored there too: it always uses 0.03 / 128).
KINDS = ["float", "float-nhwc", "quant", "quant-nhwc"]


def float_and_quant_and_nhwc(inp_float):
    torch.manual_seed(29)
    inp_quant = qpt(inp_float, 0.03, 128)
    return {
        "float": inp_float,
        "float-nhwc": nhwc(inp_float),
        "quant": inp_quant,
        "quant-nhwc": nhwc(inp_quant),
    }


# ---------------------------------------------------------------- test_prelu
def _prelu_arg():
    return torch.tensor([[1.0, -1.0, 2.0, -2.0]]).unsqueeze(-1).unsqueeze(-1)


def _prelu_multi():
    m = torch.nn.PReLU(4)
    with torch.no_grad():
        m.weight.copy_(torch.tensor([.1, .2, .3, .4]))
    return m


case("prelu-single", lambda: Case(torch.nn.PReLU(), _prelu_arg()))
case("prelu-multi-nhwc", lambda: Case(_prelu_multi(), nhwc(_prelu_arg())))
case("prelu-multi-nhwc-flex", lambda: Case(
    _prelu_multi(), _prelu_arg(),
    trace_args=[torch.zeros(1, 4, 3, 3)],
    convert_args=[nhwc(torch.zeros(1, 4, 0, 0))]))

# ------------------------------------------------------ test_(de)quantize
case("quantize-nhwc", lambda: Case(
    torch.nn.quantized.Quantize(0.25, 2, torch.quint8),
    nhwc(torch.tensor([[[[1.0]], [[2.0]]]]))))
case("dequantize-nhwc", lambda: Case(
    torch.nn.quantized.DeQuantize(),
    nhwc(qpt([[[[1.0]], [[2.0]]]], 0.25, 2))))


# ------------------------------------------------------------ test_unsqueeze
class UnsqueezeModule(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, arg):
        return arg.unsqueeze(self.dim)


for _d, _n in [(-2, "m2"), (-1, "m1"), (0, "0"), (1, "1"), (2, "2")]:
    case(f"unsqueeze-dim{_n}",
         lambda d=_d: Case(UnsqueezeModule(d), torch.randn(4, 2, 2)))


# -------------------------------------------------------------- test_reshape
class ReshapeModule(torch.nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.shape = shape

    def forward(self, arg):
        return arg.reshape(self.shape)


case("reshape-2x4", lambda: Case(ReshapeModule((2, 4)), torch.randn(4, 2, 1, 1)))
case("reshape-nhwc-8xm1", lambda: Case(
    ReshapeModule((8, -1)), nhwc(torch.randn(4, 2, 1, 1))))
case("reshape-nhwc-2x4-refused", lambda: Case(
    ReshapeModule((2, 4)), nhwc(torch.randn(4, 2, 1, 1)),
    error_regex="target size"))

# -------------------------------------------------------------- test_flatten
for _n, _kw in [("default", {}),
                ("s2-e3", dict(start_dim=2, end_dim=3)),
                ("s2-e4", dict(start_dim=2, end_dim=4)),
                ("s0-em2", dict(start_dim=0, end_dim=-2)),
                ("s0-e4", dict(start_dim=0, end_dim=4))]:
    case(f"flatten-{_n}", lambda kw=_kw: Case(
        torch.nn.Flatten(**kw), torch.randn(4, 2, 1, 3, 7)))


# ---------------------------------------------------------------- test_slice
class SliceModule(torch.nn.Module):
    def __init__(self, start, stop, step):
        super().__init__()
        self.start = start
        self.stop = stop
        self.step = step

    def forward(self, t):
        return t[1:, self.start:self.stop:self.step, :]


class SliceModule2(torch.nn.Module):
    def forward(self, t):
        return t[3:]


case("slice-1to5s2", lambda: Case(SliceModule(1, 5, 2), torch.randn(4, 6, 2)))
case("slice-from3", lambda: Case(SliceModule2(), torch.randn(5)))
case("slice-1to5s2-flex", lambda: Case(
    SliceModule(1, 5, 2), torch.randn(4, 6, 2),
    convert_args=[torch.zeros(4, 6, 0)]))
case("slice-1to5s2-flexall-refused", lambda: Case(
    SliceModule(1, 5, 2), torch.randn(4, 6, 2),
    convert_args=[torch.zeros(0, 0, 0)],
    error_regex="slice with flexible shape"))


# ------------------------------------------------------------------ test_cat
class CatModule(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, t1, t2):
        return torch.cat([t1, t2], self.dim)


case("cat-dim0", lambda: Case(
    CatModule(0), [torch.randn(1, 2, 3, 3), torch.randn(2, 2, 3, 3)]))
case("cat-dim1", lambda: Case(
    CatModule(1), [torch.randn(1, 2, 3, 3), torch.randn(1, 4, 3, 3)]))
case("cat-dim1-nhwc", lambda: Case(
    CatModule(1), [nhwc(torch.randn(1, 2, 3, 3)), nhwc(torch.randn(1, 4, 3, 3))]))


# ------------------------------------------------------- test_pointwise_unary
class UnaryModule(torch.nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, arg):
        if self.op == "relu":
            return torch.nn.functional.relu(arg)
        if self.op == "sigmoid":
            return torch.sigmoid(arg)
        raise Exception("Bad op")


for _op in ["relu", "sigmoid"]:
    case(f"pointwise_unary-{_op}",
         lambda op=_op: Case(UnaryModule(op), torch.tensor([-1.0, 1.0])))


# ------------------------------------------------------ test_pointwise_binary
class BinaryModule(torch.nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, lhs, rhs):
        if self.op == "add":
            return lhs + rhs
        if self.op == "sub":
            return lhs - rhs
        if self.op == "mul":
            return lhs * rhs
        if self.op == "div":
            return lhs / rhs
        raise Exception("Bad op")


for _op in ["add", "sub", "mul", "div"]:
    case(f"pointwise_binary-{_op}", lambda op=_op: Case(
        BinaryModule(op), [torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])]))
    case(f"pointwise_binary-{_op}-broadcast", lambda op=_op: Case(
        BinaryModule(op),
        [torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0, 4.0], [5.0, 6.0]])]))
    case(f"pointwise_binary-{_op}-rank-mismatch-refused", lambda op=_op: Case(
        BinaryModule(op),
        [torch.tensor([1.0, 2.0]), torch.tensor([[3.0, 4.0], [5.0, 6.0]])],
        error_regex="Non-equal-rank broadcast"))


# ------------------------------------------------ test_pointwise_binary_const
class ArgPlusConst(torch.nn.Module):
    def forward(self, arg):
        return arg + torch.ones(1, 1, 1, 1)


class ConstPlusArg(torch.nn.Module):
    def forward(self, arg):
        return torch.ones(1, 1, 1, 1) + arg


for _cls, _n in [(ArgPlusConst, "arg_plus_const"), (ConstPlusArg, "const_plus_arg")]:
    case(f"pointwise_binary_const-{_n}",
         lambda cls=_cls: Case(cls(), torch.randn(2, 4, 6, 6)))
    case(f"pointwise_binary_const-{_n}-nhwc",
         lambda cls=_cls: Case(cls(), nhwc(torch.randn(2, 4, 6, 6))))


# ------------------------------------------------------------- test_hardtanh
def _hardtanh_inp():
    return torch.tensor([-2.0, -0.5, 0.5, 2.0, 7.0])


case("hardtanh-default", lambda: Case(torch.nn.Hardtanh(), _hardtanh_inp()))
case("hardtanh-0to6", lambda: Case(torch.nn.Hardtanh(0.0, 6.0), _hardtanh_inp()))
case("hardtanh-0to5-refused", lambda: Case(
    torch.nn.Hardtanh(0.0, 5.0), _hardtanh_inp(), error_regex="hardtanh with args"))


# -------------------------------------------------------------- test_softmax
def _softmax_inp():
    return torch.tensor([[-2.0, -0.5], [0.5, 2.0]])


case("softmax-default", lambda: Case(torch.nn.Softmax(), _softmax_inp()))
case("softmax-dim0", lambda: Case(torch.nn.Softmax(dim=0), _softmax_inp()))
case("softmax-default-flex", lambda: Case(
    torch.nn.Softmax(), _softmax_inp(), convert_args=[torch.zeros(0, 0)]))


# ------------------------------------------------------------------- test_to
class ToCPU(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.prelu = torch.nn.PReLU()

    def forward(self, x):
        y = x.to("cpu")
        # add prelu since input operand can't be output
        return self.prelu(y)


case("to-cpu", lambda: Case(ToCPU(), torch.randn(1, 2, 3, 3)))
case("to-cpu-flex", lambda: Case(
    ToCPU(), torch.randn(1, 2, 3, 3), convert_args=[torch.zeros(1, 2, 0, 0)]))


# --------------------------------------------------------------- test_detach
class DetachModule(torch.nn.Module):
    def forward(self, x):
        y = x.detach()
        return torch.nn.functional.relu(y)


case("detach", lambda: Case(DetachModule(), torch.randn(1, 2, 3, 3)))
case("detach-flex", lambda: Case(
    DetachModule(), torch.randn(1, 2, 3, 3), convert_args=[torch.zeros(1, 2, 0, 0)]))

# ---------------------------------------------------------- test_log_softmax
case("log_softmax-default", lambda: Case(torch.nn.LogSoftmax(), torch.randn(3, 10)))
case("log_softmax-dim0", lambda: Case(torch.nn.LogSoftmax(0), torch.randn(3, 10)))


# ----------------------------------------------------------------- test_mean
class MeanModule(torch.nn.Module):
    def __init__(self, dim, keep=False):
        super().__init__()
        self.dim = dim
        self.keep = keep

    def forward(self, t):
        return torch.mean(t, dim=self.dim, keepdim=self.keep)


case("mean-dim0", lambda: Case(MeanModule(0), torch.randn(2, 3)))
case("mean-dim1", lambda: Case(MeanModule(1), torch.randn(2, 3)))
case("mean-dim2_3", lambda: Case(MeanModule([2, 3]), torch.randn(2, 3, 6, 6)))
case("mean-nhwc-dim2_3", lambda: Case(MeanModule([2, 3]), nhwc(torch.randn(2, 3, 6, 6))))
case("mean-nhwc-dimm1_m2", lambda: Case(
    MeanModule([-1, -2]), nhwc(torch.randn(2, 3, 6, 6))))
case("mean-nhwc-dimm1_m2-keep", lambda: Case(
    MeanModule([-1, -2], keep=True), nhwc(torch.randn(2, 3, 6, 6))))


# ------------------------------------------------------------ pooling tests
def _pool_inp(kind):
    return float_and_quant_and_nhwc(torch.randn(2, 3, 12, 16))[kind]


_POOL_MODELS = [("k2", 2, None), ("k3x4", (3, 4), None), ("k3x4s1x2", (3, 4), (1, 2))]

for _kind in KINDS:
    for _n, _k, _s in _POOL_MODELS:
        case(f"max_pool2d-{_kind}-{_n}", lambda kind=_kind, k=_k, s=_s: Case(
            torch.nn.MaxPool2d(k, s), _pool_inp(kind)))


def _avg_pool_flex_arg(kind):
    convert_arg = torch.zeros(2, 3, 0, 0)
    if "quant" in kind:
        convert_arg = qpt(torch.zeros(2, 3, 0, 0), 1.0 / 16, 128)
    if "nhwc" in kind:
        convert_arg = nhwc(convert_arg)
    return convert_arg


for _kind in KINDS:
    for _n, _k, _s in _POOL_MODELS:
        case(f"avg_pool2d-{_kind}-{_n}", lambda kind=_kind, k=_k, s=_s: Case(
            torch.nn.AvgPool2d(k, s), _pool_inp(kind)))
        case(f"avg_pool2d-{_kind}-{_n}-flex", lambda kind=_kind, k=_k, s=_s: Case(
            torch.nn.AvgPool2d(k, s), _pool_inp(kind),
            convert_args=[_avg_pool_flex_arg(kind)]))

for _kind in KINDS:
    case(f"adaptive_avg_pool2d-{_kind}-1x1", lambda kind=_kind: Case(
        torch.nn.AdaptiveAvgPool2d((1, 1)), _pool_inp(kind)))
    case(f"adaptive_avg_pool2d-{_kind}-2x2-refused", lambda kind=_kind: Case(
        torch.nn.AdaptiveAvgPool2d((2, 2)), _pool_inp(kind),
        error_regex="with output size"))

# ------------------------------------------------------- test_upsample_nearest2d
_UPSAMPLE = [("size16x20", dict(size=(16, 20))),
             ("size24x32", dict(size=(24, 32))),
             ("size36x48", dict(size=(36, 48))),
             ("scale1.5", dict(scale_factor=(1.5, 1.5))),
             ("scale2", dict(scale_factor=(2.0, 2.0))),
             ("scale3", dict(scale_factor=(3.0, 3.0)))]
_UPSAMPLE_FLEX = ["size24x32", "scale2"]


def _upsample_flex_arg(kind):
    return float_and_quant_and_nhwc(torch.randn(2, 3, 0, 0))[kind]


for _kind in KINDS:
    for _n, _kw in _UPSAMPLE:
        case(f"upsample_nearest2d-{_kind}-{_n}", lambda kind=_kind, kw=_kw: Case(
            torch.nn.UpsamplingNearest2d(**kw), _pool_inp(kind)))
    for _n, _kw in _UPSAMPLE:
        if _n in _UPSAMPLE_FLEX:
            case(f"upsample_nearest2d-{_kind}-{_n}-flex",
                 lambda kind=_kind, kw=_kw: Case(
                     torch.nn.UpsamplingNearest2d(**kw), _pool_inp(kind),
                     convert_args=[_upsample_flex_arg(kind)]))


# ---------------------------------------------------------------- test_linear
def _linear(flex):
    torch.manual_seed(29)
    mod = torch.nn.Linear(16, 32)
    return Case(mod, torch.randn(2, 16),
                convert_args=[torch.zeros(0, 16)] if flex else None)


case("linear", lambda: _linear(False))
case("linear-flex", lambda: _linear(True))

# ---------------------------------------------------------------- test_conv2d
_CONV_CASES = [
    # in_ch, out_ch, kernel, stride, padding, groups, bias, input_dim, name
    (4, 8, (3, 3), 1, 0, 1, 1, (2, 4, 16, 16), "3x3"),
    (4, 8, (3, 3), 1, 0, 1, 0, (2, 4, 16, 16), "3x3nobias"),
    (4, 16, (3, 3), 1, 1, 1, 1, (2, 4, 16, 16), "3x3p1"),
    (8, 8, (3, 3), 2, 0, 1, 1, (2, 8, 16, 16), "3x3s2"),
    (4, 8, (5, 5), 1, 0, 1, 1, (2, 4, 16, 16), "5x5"),
    (4, 4, (3, 3), 1, 0, 4, 1, (2, 4, 16, 16), "3x3dw"),
    (8, 4, (1, 1), 1, 0, 1, 1, (2, 8, 16, 16), "1x1"),
]


def _quantize_model(model, calib):
    model = torch.nn.Sequential(model)
    model.eval()
    model.qconfig = torch.quantization.get_default_qconfig('qnnpack')
    model = torch.quantization.prepare(model)
    model(calib)
    return torch.quantization.convert(model)


def _conv2d(kind, spec, flex):
    in_ch, out_ch, kernel, stride, padding, groups, bias, input_dim, _ = spec
    inp = torch.randn(input_dim)
    model = torch.nn.Conv2d(in_ch, out_ch, kernel, stride, padding,
                            groups=groups, bias=bool(bias))
    convert_arg = torch.zeros(0, in_ch, 0, 0)
    if "quant" in kind:
        model = _quantize_model(model, inp)
        inp = qpt(inp, 1.0 / 16, 128)
        convert_arg = qpt(torch.zeros(0, in_ch, 0, 0), 1.0 / 16, 128)
    if "nhwc" in kind:
        inp = nhwc(inp)
        convert_arg = nhwc(convert_arg)
    return Case(model, inp, convert_args=[convert_arg] if flex else None)


for _kind in KINDS:
    for _spec in _CONV_CASES:
        for _flex in (False, True):
            case(f"conv2d-{_kind}-{_spec[-1]}{'-flex' if _flex else ''}",
                 lambda kind=_kind, spec=_spec, flex=_flex: _conv2d(kind, spec, flex))


# ------------------------------------------------------ test_conv2d_transpose
def _conv2d_transpose(kind, flex):
    in_ch, out_ch, kernel = (5, 7, (2, 2))
    input_dim = (4, 5, 3, 3)
    inp = torch.randn(input_dim)
    model = torch.nn.ConvTranspose2d(in_ch, out_ch, kernel)
    convert_arg = torch.zeros(*(input_dim[:2] + (0, 0)))
    if "nhwc" in kind:
        inp = nhwc(inp)
        convert_arg = nhwc(convert_arg)
    return Case(model, inp, convert_args=[convert_arg] if flex else None)


# The quantized kinds are skipped by test_nnapi.py itself (FIXME
# 'aten::slow_conv_transpose2d' with arguments from the 'QuantizedCPU' backend).
for _kind in ["float", "float-nhwc"]:
    for _flex in (False, True):
        case(f"conv2d_transpose-{_kind}{'-flex' if _flex else ''}",
             lambda kind=_kind, flex=_flex: _conv2d_transpose(kind, flex))


# ------------------------------------------------------------------ test_qadd
def _qadd_module(kind):
    # As in test_qadd: the QFunctional is a free variable of forward(), not
    # a submodule.
    func = torch.nn.quantized.QFunctional()
    func.scale = 0.5
    func.zero_point = 120

    class AddMod(torch.nn.Module):
        def forward(self, lhs, rhs):
            return func.add(lhs, rhs)

    class AddReluMod(torch.nn.Module):
        def forward(self, lhs, rhs):
            return func.add_relu(lhs, rhs)

    return {"add": AddMod, "add_relu": AddReluMod}[kind]()


def _qadd(kind, variant):
    if variant == "1d":
        return Case(_qadd_module(kind), [qpt([1.0, 2.0], 0.25, 128), qpt([3.0, 4.0], 0.25, 128)])
    args = [qpt([[1.0, 2.0]], 0.25, 128), qpt([[3.0, 4.0]], 0.25, 128)]
    lhs = qpt([[1.0, 2.0]], 0.25, 128)
    rhs = qpt([[3.0, 4.0]], 0.25, 128)
    zeros = lambda: qpt(torch.zeros((1, 2)), 0.25, 128)  # noqa: E731
    convert_args = {
        "zeros_rhs": lambda: [lhs, zeros()],
        "zeros_lhs": lambda: [zeros(), rhs],
        "zeros_both": lambda: [zeros(), zeros()],
    }[variant]()
    return Case(_qadd_module(kind), args, convert_args=convert_args)


for _n in ["add", "add_relu"]:
    for _v in ["1d", "zeros_rhs", "zeros_lhs", "zeros_both"]:
        case(f"qadd-{_n}-{_v}", lambda n=_n, v=_v: _qadd(n, v))


# --------------------------------------------------------------- test_qlinear
def _qlinear():
    torch.manual_seed(29)
    weight = qpt(torch.randn(16, 32), 0.125, 0, torch.qint8)
    bias = torch.randn(16)
    mod = torch.nn.quantized.Linear(32, 16)
    mod.set_weight_bias(weight, bias)
    inp = qpt(torch.randn(2, 32), 0.05, 130, torch.quint8)
    return Case(mod, inp)


case("qlinear", _qlinear)


# ----------------------------------------------------------- test_seblock_mul
class MulModel(torch.nn.Module):
    def forward(self, lhs, rhs):
        return lhs * rhs


case("seblock_mul", lambda: Case(
    MulModel(), [nhwc(torch.randn(2, 3, 4, 4)), torch.randn(1, 3, 1, 1)]))


# ---------------------------------------------------------- test_multi_output
class MultiModel(torch.nn.Module):
    def forward(self, lhs, rhs) -> Tuple[torch.Tensor, torch.Tensor]:
        the_sum = lhs + rhs
        the_diff = lhs - rhs
        return the_sum, the_diff


case("multi_output", lambda: Case(
    MultiModel(), [torch.tensor([1.0, 2.0]), torch.tensor([1.0, 3.0])]))



# ------------------------------------------------------------------ beyond
# Not in test_nnapi.py, and refused by the reference (no lowering for these
# nodes): nnapi-convert must convert them (must_convert), and the test runs
# the result on the host runtime against eager PyTorch.
class PadModule(torch.nn.Module):
    def __init__(self, pad, value=None, nd=False):
        super().__init__()
        self.pad, self.value, self.nd = pad, value, nd

    def forward(self, x):
        if self.nd:
            return torch.constant_pad_nd(x, self.pad, 0.0 if self.value is None else self.value)
        if self.value is None:
            return torch.nn.functional.pad(x, self.pad)
        return torch.nn.functional.pad(x, self.pad, value=self.value)


# Android 13's NNAPI (feature level 6: BATCH_MATMUL) as the target.
API_33 = ["--min-android-api", "33"]
# Android 11's (feature level 4: RESIZE_BILINEAR's corner flags).
API_30 = ["--min-android-api", "30"]


def beyond(name, builder):
    def build():
        c = builder()
        c.must_convert = True
        return c
    case("beyond-" + name, build, source="beyond")


def refuse(name, builder, regex):
    """A model nnapi-convert must refuse (exit 1, the node named, the message
    matching `regex`), whatever the reference does with it."""
    def build():
        c = builder()
        c.error_regex = regex
        c.must_refuse = True
        return c
    case("beyond-" + name, build, source="beyond")


for _kind in KINDS:
    beyond(f"pad-hw-{_kind}", lambda k=_kind: Case(
        PadModule((1, 2, 3, 0)), float_and_quant_and_nhwc(torch.randn(1, 3, 5, 4))[k]))
    beyond(f"pad-chw-value-{_kind}", lambda k=_kind: Case(
        PadModule((0, 1, 2, 1, 1, 0), value=0.5),
        float_and_quant_and_nhwc(torch.randn(2, 3, 4, 4))[k]))
beyond("pad-constant_pad_nd-1d", lambda: Case(PadModule([2, 1], -1.5, nd=True), torch.randn(3, 5)))
# avg_pool2d with padding (count_include_pad, PyTorch's default): NNAPI's
# AVERAGE_POOL_2D leaves padded cells out of the count, so the input is padded first.
for _kind in KINDS:
    beyond(f"pad-avg_pool2d-{_kind}", lambda k=_kind: Case(
        torch.nn.AvgPool2d(3, stride=1, padding=1),
        float_and_quant_and_nhwc(torch.randn(1, 4, 6, 5))[k]))
# Quantized avg_pool2d with count_include_pad=False over padding: AVERAGE_POOL_2D
# alone (NeuralNetworks.h: the average over the cells within the input). Eager
# PyTorch's QNNPACK kernel (qnnpack_avg_pool2d, taken without ceil_mode)
# ignores count_include_pad and divides by the whole window; its generic
# kernel (any other engine, or ceil_mode) honours it: eager runs with that one.
for _kind in ("quant", "quant-nhwc"):
    beyond(f"qavg_pool2d-exclude-pad-{_kind}", lambda k=_kind: Case(
        torch.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
        float_and_quant_and_nhwc(torch.randn(2, 4, 7, 6) * 2)[k], engine="none"))
beyond("qavg_pool2d-exclude-pad-ceil", lambda: Case(
    torch.nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    float_and_quant_and_nhwc(torch.randn(2, 4, 8, 7) * 2)["quant-nhwc"]))
# Quantized mean over dims other than (2, 3) of a 4-D tensor (that is
# PyTorch's QNNPACK global average pool, one MEAN): eager (qnnpack engine)
# averages the stored values over the innermost dims (-1) and rounds half to
# even, and otherwise ((0, -1), (1, 3)) dequantizes, averages in float32 and
# quantizes (found by the op space's OpInfo mean samples 11, 14 and 15, one
# quantum off on 12.5-100 % of the elements). Every mean here is a tie (the
# stored values of each reduced group sum to count / 2 modulo the even count),
# which PyTorch rounds half to even or as float32 rounding tips it, and
# QNNPACK's rounding (the host MEAN's, as NeuralNetworks.h leaves it to the
# driver) otherwise on 17-50 % of them.
def _qmean_ties(shape, dims, scale, zero_point):
    q = torch.randint(100, 156, shape)
    count = 1
    for d in dims:
        count *= shape[d]
    first = tuple(slice(0, 1) if i in [d % len(shape) for d in dims] else slice(None)
                  for i in range(len(shape)))
    q[first] += (count // 2 - q.sum(list(dims), keepdim=True)) % count
    return torch._make_per_tensor_quantized_tensor(q.to(torch.uint8), scale, zero_point)


def _qmean(dims, keep, shape, scale, layout, flex):
    lay = nhwc if layout == "nhwc" else (lambda t: t)
    return Case(MeanModule(list(dims), keep=keep), lay(_qmean_ties(shape, dims, scale, 128)),
                convert_args=[lay(qpt(torch.zeros(0, *shape[1:]), scale, 128))] if flex else None)


for _name, _args in {"dimm1": ((-1,), False, (3, 4, 2, 12), 0.05),
                     "dim0_m1-keep": ((0, -1), True, (2, 4, 3, 2), 0.03),
                     "dim1_3": ((1, 3), False, (3, 2, 4, 2), 0.03)}.items():
    for _layout in ("nchw", "nhwc"):
        for _flex in (False, True):
            beyond(f"qmean-{_name}-{_layout}{'-flex-batch' if _flex else ''}",
                   lambda a=_args, lay=_layout, f=_flex: _qmean(*a, lay, f))
beyond("pad-avg_pool2d-flex", lambda: Case(
    torch.nn.AvgPool2d(3, stride=2, padding=1), torch.randn(2, 3, 7, 6),
    convert_args=[torch.zeros(0, 3, 0, 0)]))
beyond("pad-flex-batch", lambda: Case(
    PadModule((1, 1, 1, 1)), torch.randn(3, 2, 4, 4), convert_args=[torch.zeros(0, 2, 4, 4)]))


class SplitModule(torch.nn.Module):
    def __init__(self, how, dim, kind="split"):
        super().__init__()
        self.how, self.dim, self.kind = how, dim, kind

    def forward(self, x):
        if self.kind == "chunk":
            parts = torch.chunk(x, self.how, self.dim)
        else:
            parts = torch.split(x, self.how, self.dim)
        return tuple(torch.relu(p) for p in parts)


beyond("split-equal", lambda: Case(SplitModule(2, 1), torch.randn(2, 6, 3)))
beyond("split-size-uneven", lambda: Case(SplitModule(4, 1), torch.randn(2, 10, 3)))
beyond("split-sizes", lambda: Case(SplitModule([1, 4, 2], 2), torch.randn(2, 3, 7)))
beyond("split-sizes-nhwc", lambda: Case(
    SplitModule([3, 5], 1), nhwc(torch.randn(1, 8, 4, 4))))
beyond("split-chunk-uneven", lambda: Case(SplitModule(3, -1, "chunk"), torch.randn(2, 3, 7)))
beyond("split-flex-batch", lambda: Case(
    SplitModule([2, 1], 1), torch.randn(3, 3, 4), convert_args=[torch.zeros(0, 3, 4)]))


# cat along a flexible dim with fixed parts before and after it: eager's size
# there is the fixed parts' sizes plus the flexible one. The reference sums the
# parts' numbers, a load-time size counting 0, and declares that fixed size
# (it converts "inputs", whose parts are all model inputs, so; it has no
# operand for the others' constant parts). Each at two sizes.
class CatFlexModule(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.cls = torch.nn.Parameter(torch.randn(1, 1, 8))
        self.pad = torch.nn.Parameter(torch.randn(1, 2, 8))

    def forward(self, x, *rest):
        if self.kind == "seq":  # a class token and padding around (B, L, 8)
            b = x.shape[0]
            return torch.relu(
                torch.cat([self.cls.expand(b, 1, 8), x, self.pad.expand(b, 2, 8)], 1))
        if self.kind == "batch":  # fixed rows around a flexible batch (B, 8)
            return torch.cat([self.cls[0], x, self.pad[0]], 0) * 2.0
        return torch.relu(torch.cat([x, rest[0], rest[1]], 1))  # (1, 1, 4), (1, L, 4), (1, 2, 4)


for _s, _n in (("a", 5), ("b", 9)):
    beyond(f"cat-flex-seq-{_s}", lambda n=_n: Case(
        CatFlexModule("seq"), torch.randn(2, n, 8), convert_args=[torch.zeros(2, 0, 8)]))
    beyond(f"cat-flex-batch-{_s}", lambda n=_n: Case(
        CatFlexModule("batch"), torch.randn(n - 4, 8), convert_args=[torch.zeros(0, 8)]))
    beyond(f"cat-flex-inputs-{_s}", lambda n=_n: Case(
        CatFlexModule("inputs"), [torch.randn(1, 1, 4), torch.randn(1, n, 4), torch.randn(1, 2, 4)],
        convert_args=[torch.zeros(1, 1, 4), torch.zeros(1, 0, 4), torch.zeros(1, 2, 4)]))


# A flexible size the model needs to be a multiple of something: the
# validator's sample size (--verify's default: 1 for the batch, 8 for a
# sequence) is one the model itself fails at, so the validator checks the blob
# at the next sizes the model runs at instead. Each at two valid sizes.
class MultipleOfModule(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def forward(self, x):
        if self.kind == "windows7":  # (B, L, 4): windows of 7 along L
            b, n, c = x.shape
            return torch.relu(x.reshape(b, n // 7, 7, c)).sum(2)
        b = x.shape[0]  # "pairs": (B, 4), rows taken two by two
        return x.reshape(b // 2, 8) + 1.0


for _s, (_b, _n) in (("a", (2, 14)), ("b", (6, 35))):
    beyond(f"flex-multiple-windows7-{_s}", lambda n=_n: Case(
        MultipleOfModule("windows7"), torch.randn(2, n, 4), convert_args=[torch.zeros(2, 0, 4)]))
    beyond(f"flex-multiple-pairs-{_s}", lambda b=_b: Case(
        MultipleOfModule("pairs"), torch.randn(b, 4), convert_args=[torch.zeros(0, 4)]))


# Shape arithmetic on flexible sizes (shape-compute lines, patched RESHAPE shapes).
class ViewSizeModule(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def forward(self, x):
        if self.kind == "batch":
            return x.reshape(x.size(0), -1)
        if self.kind == "arith":
            return torch.relu(x.reshape(x.size(0), x.size(1) // 2, -1))
        # two flexible sizes: RESHAPE's shape gets an element set at load time
        return x.reshape(x.size(0), x.size(2), -1)


beyond("flex-view-batch", lambda: Case(
    ViewSizeModule("batch"), torch.randn(3, 4, 2, 5), convert_args=[torch.zeros(0, 4, 2, 5)]))
beyond("flex-view-batch-nhwc", lambda: Case(
    ViewSizeModule("batch"), nhwc(torch.randn(3, 4, 2, 5)),
    convert_args=[nhwc(torch.zeros(0, 4, 2, 5))]))
beyond("flex-view-arith", lambda: Case(
    ViewSizeModule("arith"), torch.randn(2, 6, 3), convert_args=[torch.zeros(0, 6, 3)]))
beyond("flex-view-two-sizes", lambda: Case(
    ViewSizeModule("two"), torch.randn(2, 3, 5, 4), convert_args=[torch.zeros(0, 3, 0, 4)]))


class ShuffleModule(torch.nn.Module):
    def forward(self, x):
        n, c, h, w = x.size()
        x = x.view(n, 2, c // 2, h, w).transpose(1, 2).contiguous()
        return x.view(n, -1, h, w)


beyond("flex-channel-shuffle", lambda: Case(
    ShuffleModule(), torch.randn(2, 6, 3, 3), convert_args=[torch.zeros(0, 6, 3, 3)]))
beyond("flex-channel-shuffle-nhwc", lambda: Case(
    ShuffleModule(), nhwc(torch.randn(2, 6, 3, 3)), convert_args=[nhwc(torch.zeros(0, 6, 3, 3))]))


class PermuteLinearModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 5)

    def forward(self, x):
        y = self.fc(x.permute(0, 2, 3, 1))  # linear over (N, H, W, C)
        return y.permute(0, 3, 1, 2).unsqueeze(1)


beyond("flex-permute-linear", lambda: Case(
    PermuteLinearModule(), torch.randn(3, 4, 2, 3), convert_args=[torch.zeros(0, 4, 2, 3)]))
beyond("flex-permute-linear-nhwc", lambda: Case(
    PermuteLinearModule(), nhwc(torch.randn(3, 4, 2, 3)),
    convert_args=[nhwc(torch.zeros(0, 4, 2, 3))]))


# Python ints where PyTorch takes a Number. Traced, `x * 2` multiplies by
# an int64 0-dim tensor and `1 - x` is rsub; scripted, the ints stay ints
# (aten::mul.Scalar). PyTorch computes all of these in float32. (The ReLU's
# input is y + 3, about x / 2: with y alone it was below zero for every
# input, and the second output a constant -0.5 any conversion matched.)
class ScalarArithModule(torch.nn.Module):
    def forward(self, x):
        y = (x * 2 + 1) / 4 - 3
        return 1 - y, 2.5 * torch.relu(y + 3) - 0.5


class HardtanhIntModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.relu6 = torch.nn.Hardtanh(0, 6)

    def forward(self, x):
        return self.relu6(x * 4), torch.nn.functional.hardtanh(x, -1, 2), torch.clamp(x, 0, 1)


def _scripted_scalar_arith():
    return torch.jit.script(ScalarArithModule())


for _kind in ["float", "float-nhwc"]:
    beyond(f"scalar-int-arith-{_kind}", lambda k=_kind: Case(
        ScalarArithModule(), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5))[k]))
    beyond(f"scalar-int-hardtanh-{_kind}", lambda k=_kind: Case(
        HardtanhIntModule(), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5))[k]))
# Quantized NCHW only: eager PyTorch 1.13's quantized hardtanh (and relu6) of a
# channels-last tensor returns wrong values (max error 3.8 against
# clamp(dequantize(x), 0, 6) on this input), so it can't be the oracle there.
beyond("scalar-int-hardtanh-quant", lambda: Case(
    torch.nn.Hardtanh(0, 6), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5) * 4)["quant"]))
beyond("scalar-int-arith-flex", lambda: Case(
    ScalarArithModule(), torch.randn(3, 4, 2), convert_args=[torch.zeros(0, 4, 0)]))
beyond("scalar-int-arith-scripted", lambda: Case(_scripted_scalar_arith(), torch.randn(2, 3, 4)))
beyond("scalar-int-arith-scripted-nhwc", lambda: Case(
    _scripted_scalar_arith(), nhwc(torch.randn(1, 3, 4, 4))))


# Sizes read in a scripted forward, as hand-written models do: `B, C, H, W =
# x.shape` (aten::size, then prim::ListUnpack, which LibTorch's interpreter
# runs itself: no operator), `x.shape[0]` (aten::__getitem__, no in-place
# write despite its trailing underscore) and `h, w = x.shape[-2:]` (a slice of
# the size list). With fixed sizes they are folded during conversion; with a
# flexible batch they become shape-compute lines.
class ShapeReadsModule(torch.nn.Module):
    def forward(self, x):
        B, C, H, W = x.shape
        n = x.shape[0]
        h, w = x.shape[-2:]
        tokens = x.reshape(B, C, H * W).transpose(1, 2)
        return tokens.reshape(n, h * w * C) * 2, x.flatten(2).mean(-1) + float(h * w)


def _shape_reads():
    return torch.jit.script(ShapeReadsModule().eval())


beyond("shape-reads-scripted", lambda: Case(_shape_reads(), torch.randn(2, 3, 4, 5)))
beyond("shape-reads-scripted-nhwc", lambda: Case(_shape_reads(), nhwc(torch.randn(1, 3, 4, 5))))
beyond("shape-reads-scripted-flex", lambda: Case(
    _shape_reads(), torch.randn(2, 3, 4, 5), convert_args=[torch.zeros(0, 3, 4, 5)]))


# Self-attention written by hand, as small transformers are (scripted: the
# sizes come from `B, L, C = x.shape`): softmax(q k^T / sqrt(d)) v over two
# heads. A flexible sequence length L makes both products multiply over a
# flexible size: BATCH_MATMUL at API 33; at the default target a broadcast
# MUL and a REDUCE_SUM over the inner size.
class UnfusedAttention(torch.nn.Module):
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, x):
        B, L, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        d = C // self.heads
        q = q.view(B, L, self.heads, d).transpose(1, 2)
        k = k.view(B, L, self.heads, d).transpose(1, 2)
        v = v.view(B, L, self.heads, d).transpose(1, 2)
        a = (q @ k.transpose(-2, -1) / d ** 0.5).softmax(-1)
        return self.proj((a @ v).transpose(1, 2).reshape(B, L, C))


def _unfused_attention():
    return torch.jit.script(UnfusedAttention().eval())


beyond("unfused-attention-scripted", lambda: Case(_unfused_attention(), torch.randn(2, 10, 16)))
beyond("unfused-attention-flex-len-api33", lambda: Case(
    _unfused_attention(), torch.randn(1, 7, 16), convert_args=[torch.zeros(1, 0, 16)],
    options=API_33))
beyond("unfused-attention-flex-batch-len-api33", lambda: Case(
    _unfused_attention(), torch.randn(3, 5, 16), convert_args=[torch.zeros(0, 0, 16)],
    options=API_33))
# A flexible batch, length or both at the default target: the products are a
# broadcast MUL and a REDUCE_SUM (no BATCH_MATMUL below API 33).
beyond("unfused-attention-flex-batch", lambda: Case(
    _unfused_attention(), torch.randn(3, 5, 16), convert_args=[torch.zeros(0, 5, 16)]))
beyond("unfused-attention-flex-len", lambda: Case(
    _unfused_attention(), torch.randn(1, 7, 16), convert_args=[torch.zeros(1, 0, 16)]))
beyond("unfused-attention-flex-batch-len", lambda: Case(
    _unfused_attention(), torch.randn(3, 5, 16), convert_args=[torch.zeros(0, 0, 16)]))


# Checks and branches that scripted models decide by sizes: `assert x.dim() ==
# 4` (aten::dim, a prim::If that raises), `if x.size(1) == 3:`, the argument
# handling inside F.adaptive_avg_pool2d (a prim::If), x.dtype in a factory
# (prim::dtype) and x.view(x.size(0), -1) ahead of a Linear, which needs the
# -1 as a number with a flexible batch too. The branch taken is lowered; the
# other is dropped (NNAPI's IF is feature level 4).
class SizeChecksModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.fc = torch.nn.Linear(8 * 6 * 6, 4)

    def forward(self, x):
        assert x.dim() == 4, "expects NCHW images"
        if x.size(1) == 3:
            x = x * 2
        else:
            x = x + 1
        y = torch.relu(self.conv(x))
        pooled = torch.nn.functional.adaptive_avg_pool2d(y, 1).view(y.size(0), -1)
        return self.fc(y.view(y.size(0), -1)), pooled + torch.arange(8, dtype=y.dtype)


class NumelModule(torch.nn.Module):
    def forward(self, x):
        n = x.numel() // x.size(0)
        return x.reshape(-1, n) * float(x.dim())


def _size_checks():
    return torch.jit.script(SizeChecksModule().eval())


beyond("size-checks-scripted", lambda: Case(_size_checks(), torch.randn(2, 3, 8, 8)))
beyond("size-checks-scripted-flex", lambda: Case(
    _size_checks(), torch.randn(3, 3, 8, 8), convert_args=[torch.zeros(0, 3, 8, 8)]))
beyond("numel-scripted", lambda: Case(
    torch.jit.script(NumelModule().eval()), torch.randn(2, 3, 4, 5)))
# The assert fails for a 3-D input: the model's own message is the refusal.
refuse("size-checks-assert-fails", lambda: Case(
    torch.jit.script(torch.nn.Sequential(SizeChecksModule()).eval()), torch.randn(2, 3, 8, 8),
    convert_args=[torch.randn(3, 8, 8)]), r"raises an exception for these input sizes")
# A condition on a size known only when the model runs (a flexible batch)
# cannot be decided during conversion: refused naming the node.
class BatchBranchModule(torch.nn.Module):
    def forward(self, x):
        if x.size(0) > 1:
            return x * 2
        return x


refuse("batch-branch-scripted-flex", lambda: Case(
    torch.jit.script(BatchBranchModule().eval()), torch.randn(2, 3),
    convert_args=[torch.zeros(0, 3)]), r"known only when the model runs|only during conversion")


# Dropout that survives freezing (freezing drops aten::dropout with train=False
# only): the identity, as PyTorch returns the input for p = 0 or train=False.
class DropoutModule(torch.nn.Module):
    def forward(self, x):
        f = torch.nn.functional
        y = f.dropout(x, 0.0, True) + f.dropout2d(x, 0.0, True)
        y = f.alpha_dropout(y, 0.0, True) + f.feature_alpha_dropout(x, 0.3, False)
        return torch.relu(y)


beyond("dropout-identity", lambda: Case(DropoutModule(), torch.randn(2, 3, 4, 4)))
beyond("dropout-identity-nhwc", lambda: Case(DropoutModule(), nhwc(torch.randn(2, 3, 4, 4))))


# select: x[:, 0] (class token), out[:, -1], h[-1], and every dim of a 4-D
# tensor, NCHW and NHWC (where only C keeps NHWC data in PyTorch's order).
class SelectModule(torch.nn.Module):
    def __init__(self, picks):
        super().__init__()
        self.picks = picks

    def forward(self, x):
        return tuple(torch.relu(x.select(d, i)) for d, i in self.picks)


_SELECT_4D = [(0, 1), (1, 2), (1, -1), (2, -2), (3, 0), (-1, -1)]
for _kind in KINDS:
    beyond(f"select-4d-{_kind}", lambda k=_kind: Case(
        SelectModule(_SELECT_4D), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5))[k]))
beyond("select-tokens", lambda: Case(
    SelectModule([(1, 0), (1, -1), (0, -1), (2, 3)]), torch.randn(2, 5, 6)))
beyond("select-tokens-flex", lambda: Case(
    SelectModule([(1, 0), (1, -1), (1, -2), (0, -1)]), torch.randn(3, 5, 6),
    convert_args=[torch.zeros(0, 0, 6)]))
beyond("select-4d-flex-nhwc", lambda: Case(
    SelectModule([(1, 0), (2, -1), (3, -2), (3, 1)]), nhwc(torch.randn(2, 3, 4, 5)),
    convert_args=[nhwc(torch.zeros(0, 3, 0, 0))]))


# pixel_shuffle / pixel_unshuffle: DEPTH_TO_SPACE / SPACE_TO_DEPTH, whose
# channel order differs from PyTorch's unless there is one channel.
for _kind in KINDS:
    beyond(f"pixel_shuffle-{_kind}", lambda k=_kind: Case(
        torch.nn.PixelShuffle(2), float_and_quant_and_nhwc(torch.randn(2, 12, 3, 4))[k]))
    beyond(f"pixel_unshuffle-{_kind}", lambda k=_kind: Case(
        torch.nn.PixelUnshuffle(2), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 6))[k]))
beyond("pixel_shuffle-r3", lambda: Case(torch.nn.PixelShuffle(3), torch.randn(1, 18, 2, 3)))
beyond("pixel_shuffle-c1-nhwc", lambda: Case(
    torch.nn.PixelShuffle(3), nhwc(torch.randn(1, 9, 2, 3))))
beyond("pixel_unshuffle-r3-nhwc", lambda: Case(
    torch.nn.PixelUnshuffle(3), nhwc(torch.randn(1, 2, 6, 3))))
beyond("pixel_shuffle-flex", lambda: Case(
    torch.nn.PixelShuffle(2), torch.randn(2, 8, 3, 5), convert_args=[torch.zeros(0, 8, 0, 0)]))
beyond("pixel_unshuffle-flex-nhwc", lambda: Case(
    torch.nn.PixelUnshuffle(2), nhwc(torch.randn(2, 3, 4, 6)),
    convert_args=[nhwc(torch.zeros(0, 3, 0, 0))]))


# 1-D pools: the 2-D pool over (N, C, 1, L).
_POOL1D = [
    ("max", lambda: torch.nn.MaxPool1d(3, 2, padding=1)),
    ("max-ceil", lambda: torch.nn.MaxPool1d(2, 2, ceil_mode=True)),
    ("max-dflt-stride", lambda: torch.nn.MaxPool1d(3)),
    ("avg", lambda: torch.nn.AvgPool1d(3, 2, padding=1)),
    ("avg-nopad", lambda: torch.nn.AvgPool1d(4, 3)),
    ("adaptive_avg-1", lambda: torch.nn.AdaptiveAvgPool1d(1)),
    ("adaptive_avg-4", lambda: torch.nn.AdaptiveAvgPool1d(4)),
    ("adaptive_max-1", lambda: torch.nn.AdaptiveMaxPool1d(1)),
    ("adaptive_max-3", lambda: torch.nn.AdaptiveMaxPool1d(3)),
]
for _n, _m in _POOL1D:
    beyond(f"pool1d-{_n}", lambda m=_m: Case(m(), torch.randn(2, 4, 12)))
    if not _n.startswith("adaptive_max"):  # PyTorch has no quantized adaptive max pool
        beyond(f"pool1d-{_n}-quant", lambda m=_m: Case(
            m(), qpt(torch.randn(2, 4, 12), 0.03, 128)))
beyond("pool1d-max-flex", lambda: Case(
    torch.nn.MaxPool1d(3, 2, padding=1), torch.randn(3, 4, 11),
    convert_args=[torch.zeros(0, 4, 0)]))
beyond("pool1d-avg-flex", lambda: Case(
    torch.nn.AvgPool1d(3, 2, padding=1), torch.randn(3, 4, 11),
    convert_args=[torch.zeros(0, 4, 0)]))
beyond("pool1d-adaptive_avg-1-flex-batch", lambda: Case(
    torch.nn.AdaptiveAvgPool1d(1), torch.randn(3, 4, 12), convert_args=[torch.zeros(0, 4, 12)]))


# 1-D convolutions (nn.Conv1d, ConvTranspose1d: aten::_convolution with a 3-D
# weight): the 2-D convolution over (N, C, 1, L), reshaped back.
class Conv1dReLU(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(3, 6, 5, stride=2, padding=2)

    def forward(self, x):
        return torch.relu(self.conv(x))


_CONV1D = [  # name, module, input channels
    ("stride4-k8", lambda: torch.nn.Conv1d(2, 5, 8, stride=4), 2),
    ("pad-dilation-nobias", lambda: torch.nn.Conv1d(3, 4, 3, padding=2, dilation=2, bias=False), 3),
    ("grouped", lambda: torch.nn.Conv1d(4, 6, 3, padding=1, groups=2), 4),
    ("depthwise", lambda: torch.nn.Conv1d(4, 8, 3, padding=1, groups=4), 4),
    ("relu", Conv1dReLU, 3),  # the ReLU folds into the convolution with --fuse-activations
    ("transpose-stride2", lambda: torch.nn.ConvTranspose1d(3, 4, 4, stride=2, padding=1), 3),
]
for _n, _m, _c in _CONV1D:
    beyond(f"conv1d-{_n}", lambda m=_m, c=_c: Case(m(), torch.randn(2, c, 21)))
beyond("conv1d-flex", lambda: Case(
    Conv1dReLU(), torch.randn(3, 3, 17), convert_args=[torch.zeros(0, 3, 0)]))
# A transposed convolution's output_padding shrinks its bottom/right padding.
beyond("conv_transpose1d-output_padding", lambda: Case(
    torch.nn.ConvTranspose1d(4, 3, 3, stride=2, padding=1, output_padding=1),
    torch.randn(2, 4, 7)))
for _kind in ["float", "float-nhwc"]:
    beyond(f"conv_transpose2d-output_padding-{_kind}", lambda k=_kind: Case(
        torch.nn.ConvTranspose2d(3, 4, 3, stride=2, padding=(1, 2), output_padding=(1, 0)),
        float_and_quant_and_nhwc(torch.randn(1, 3, 5, 6))[k]))


class SqueezeModule(torch.nn.Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        # * 2: a model output may not be its input unchanged (squeeze-not-one)
        return (x.squeeze() if self.dim is None else x.squeeze(self.dim)) * 2


# squeeze: SQUEEZE of the dims of size 1 (a dim of another size: unchanged).
for _kind in ["float", "float-nhwc"]:
    beyond(f"squeeze-dim-{_kind}", lambda k=_kind: Case(
        SqueezeModule(2), float_and_quant_and_nhwc(torch.randn(2, 3, 1, 4))[k]))
beyond("squeeze-all", lambda: Case(SqueezeModule(), torch.randn(2, 1, 3, 1)))
beyond("squeeze-not-one", lambda: Case(SqueezeModule(1), torch.randn(2, 3, 4)))
beyond("squeeze-flex-batch", lambda: Case(
    SqueezeModule(-1), torch.randn(3, 5, 1), convert_args=[torch.zeros(0, 5, 1)]))
# upsample_nearest2d with a flexible batch (the reference refuses it).
for _kind in ["float", "float-nhwc"]:
    beyond(f"upsample_nearest2d-flex-batch-{_kind}", lambda k=_kind: Case(
        torch.nn.Upsample(scale_factor=2, mode="nearest"),
        float_and_quant_and_nhwc(torch.randn(3, 2, 4, 5))[k],
        convert_args=[float_and_quant_and_nhwc(torch.zeros(0, 2, 4, 5))[k]]))
# Bilinear upsampling at the default target (Android 10, no RESIZE_BILINEAR
# corner flags): FULLY_CONNECTED products with PyTorch's interpolation weights;
# at API 30 RESIZE_BILINEAR with the flags.
class BilinearModule(torch.nn.Module):
    def __init__(self, align_corners, **kw):
        super().__init__()
        self.align_corners, self.kw = align_corners, kw

    def forward(self, x):
        return torch.nn.functional.interpolate(x, mode="bilinear", align_corners=self.align_corners,
                                               **self.kw)


for _kind in ["float", "float-nhwc"]:
    for _ac in [False, True]:
        for _name, _kw in [("size", {"size": (7, 9)}), ("scale", {"scale_factor": 2.0})]:
            beyond(f"upsample_bilinear2d-{_name}-ac{int(_ac)}-{_kind}",
                   lambda k=_kind, ac=_ac, kw=_kw: Case(
                       BilinearModule(ac, **kw), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5))[k]))
    beyond(f"upsample_bilinear2d-api30-{_kind}", lambda k=_kind: Case(
        BilinearModule(False, size=(7, 9)), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5))[k],
        options=["--min-android-api", "30"]))
    beyond(f"upsample_bilinear2d-flex-batch-{_kind}", lambda k=_kind: Case(
        BilinearModule(False, scale_factor=2.0), float_and_quant_and_nhwc(torch.randn(3, 2, 4, 5))[k],
        convert_args=[float_and_quant_and_nhwc(torch.zeros(0, 2, 4, 5))[k]]))
# Pools and upsampling over a flexible height and width (0x0 in --input),
# each run at two sizes (suffixes -a and -b), the batch fixed (1x) or flexible
# (0x, "-flex-batch"). ceil_mode: NNAPI has none; stride - 1 more cells of
# bottom/right padding give PyTorch's ceil size at every size when no last
# window can start in the padding (stride <= kernel - padding).
_FLEXHW_SIZES = {"a": (9, 7), "b": (16, 12)}


def flexhw(name, module, kinds, options=(), batch=1, channels=3):
    for _k in kinds:
        for _s, (_h, _w) in _FLEXHW_SIZES.items():
            beyond(f"flexhw-{name}-{_k}-{_s}", lambda k=_k, h=_h, w=_w: Case(
                module(), float_and_quant_and_nhwc(torch.randn(batch or 2, channels, h, w))[k],
                convert_args=[float_and_quant_and_nhwc(torch.zeros(batch, channels, 0, 0))[k]],
                options=list(options)))


def flexhw_refused(name, module, regex, options=(), kind="float"):
    refuse(f"flexhw-{name}", lambda: Case(
        module(), float_and_quant_and_nhwc(torch.randn(1, 3, 9, 7))[kind],
        convert_args=[float_and_quant_and_nhwc(torch.zeros(1, 3, 0, 0))[kind]],
        options=list(options)), regex)


flexhw("max_pool2d-ceil", lambda: torch.nn.MaxPool2d(3, 2, ceil_mode=True), KINDS)
flexhw("max_pool2d-ceil-pad-flex-batch",
       lambda: torch.nn.MaxPool2d(3, 2, padding=1, ceil_mode=True), ["float-nhwc", "quant"],
       batch=0)
# count_include_pad over padding and a ceil_mode overhang: PyTorch counts the
# padding but not the overhang; padded with zeros first, NNAPI's count is that.
flexhw("avg_pool2d-ceil-pad", lambda: torch.nn.AvgPool2d(3, 2, padding=1, ceil_mode=True), KINDS)
flexhw("avg_pool2d-ceil-exclude-pad-flex-batch",
       lambda: torch.nn.AvgPool2d(3, 2, padding=1, ceil_mode=True, count_include_pad=False),
       ["float", "float-nhwc"], batch=0)
flexhw("avg_pool2d-divisor_override-pad",
       lambda: torch.nn.AvgPool2d(3, 2, padding=1, divisor_override=5), ["float", "float-nhwc"])
# adaptive pools to 1x1: MEAN and REDUCE_MAX over H and W (PyTorch has no
# quantized adaptive_max_pool2d).
flexhw("adaptive_max_pool2d-1", lambda: torch.nn.AdaptiveMaxPool2d(1), ["float", "float-nhwc"])
flexhw("adaptive_max_pool2d-1-flex-batch", lambda: torch.nn.AdaptiveMaxPool2d((1, 1)),
       ["float-nhwc"], batch=0)
flexhw("adaptive_avg_pool2d-1-flex-batch", lambda: torch.nn.AdaptiveAvgPool2d(1),
       ["float", "quant-nhwc"], batch=0)
# Bilinear at API 30 (RESIZE_BILINEAR's corner flags), by whole scale (the
# FLOAT32 scale form) and by output size.
for _ac in (False, True):
    flexhw(f"upsample_bilinear2d-scale2-ac{int(_ac)}-api30",
           lambda ac=_ac: BilinearModule(ac, scale_factor=2.0), KINDS, options=API_30)
    flexhw(f"upsample_bilinear2d-size-ac{int(_ac)}-api30",
           lambda ac=_ac: BilinearModule(ac, size=(12, 10)), ["float", "quant-nhwc"],
           options=API_30)
flexhw("upsample_bilinear2d-scale3-api30-flex-batch",
       lambda: BilinearModule(False, scale_factor=(3.0, 2.0)), ["float-nhwc", "quant"],
       options=API_30, batch=0)
flexhw("upsample_nearest2d-scale2-flex-batch", lambda: torch.nn.Upsample(scale_factor=2),
       ["float-nhwc", "quant"], batch=0)


class ReduceNoKeepdim(torch.nn.Module):
    """mean or sum over `dims` without keepdim, after a ReLU (a computed,
    channels-last tensor under --nhwc)."""

    def __init__(self, op, dims):
        super().__init__()
        self.op, self.dims = op, dims

    def forward(self, x):
        return getattr(torch, self.op)(x.relu(), self.dims)


# Without keepdim, dropping C (or one of H, W) of a channels-last tensor: the
# reduction runs on its NCHW relayout (PyTorch's converter refuses these).
for _op, _dims in [("mean", [1]), ("sum", [1, 2]), ("mean", [1, 3]), ("sum", [3])]:
    _tag = f"{_op}-{''.join(map(str, _dims))}"
    beyond(f"nhwc-reduce-{_tag}", lambda op=_op, dims=_dims: Case(
        ReduceNoKeepdim(op, dims), float_and_quant_and_nhwc(torch.randn(2, 3, 5, 6))["float-nhwc"]))
    flexhw(f"reduce-{_tag}", lambda op=_op, dims=_dims: ReduceNoKeepdim(op, dims),
           ["float", "float-nhwc"], batch=0)
flexhw_refused("max_pool2d-ceil-stride-past-window",
               lambda: torch.nn.MaxPool2d(2, 3, ceil_mode=True),
               "stride 3 greater than the kernel size 2 minus the padding 0")
flexhw_refused("avg_pool2d-divisor_override-ceil",
               lambda: torch.nn.AvgPool2d(3, 2, ceil_mode=True, divisor_override=4),
               "divisor_override and ceil_mode over a flexible height or width")
flexhw_refused("adaptive_avg_pool2d-2", lambda: torch.nn.AdaptiveAvgPool2d(2),
               r"adaptive_avg_pool2d to \(2, 2\) over a flexible height or width")
# Below API 30 over a flexible size: one whole scale, align_corners=False, as
# replicate padding, a DEPTHWISE_CONV_2D of the s * s phases' weights and
# pixel_shuffle; the rest is refused.
for _s in (2.0, 3.0):
    flexhw(f"upsample_bilinear2d-scale{int(_s)}-api29",
           lambda sc=_s: BilinearModule(False, scale_factor=sc), KINDS)
flexhw("upsample_bilinear2d-scale2-api29-flex-batch",
       lambda: BilinearModule(False, scale_factor=2.0), ["float-nhwc", "quant"], batch=0)
flexhw_refused("upsample_bilinear2d-ac1-api29", lambda: BilinearModule(True, scale_factor=2.0),
               "with align_corners=True needs Android 11")
flexhw_refused("upsample_bilinear2d-size-api29", lambda: BilinearModule(False, size=(12, 10)),
               "with an output size needs Android 11")
flexhw_refused("upsample_bilinear2d-scale1.5-api30",
               lambda: BilinearModule(False, scale_factor=1.5), "by scale factor 1.5, 1.5",
               options=API_30)
# Quantized bilinear at the default target (Android 10: no corner flags):
# DEQUANTIZE, PyTorch's interpolation weights as FULLY_CONNECTED products, and
# QUANTIZE to the input's parameters, as PyTorch's quantized kernel keeps them.
for _kind in ["quant", "quant-nhwc"]:
    for _ac in (False, True):
        for _name, _kw in [("size", {"size": (7, 9)}), ("scale", {"scale_factor": 2.0})]:
            beyond(f"upsample_bilinear2d-{_name}-ac{int(_ac)}-{_kind}",
                   lambda k=_kind, ac=_ac, kw=_kw: Case(
                       BilinearModule(ac, **kw),
                       float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5))[k]))
# An in-place operation opening forward on its input (x.sigmoid_()), made
# functional (the converted module never writes into its inputs), with a
# fixed and a flexible size.
class InplaceInputModule(torch.nn.Module):
    def forward(self, x):
        x.sigmoid_()
        return x * 2 + x


beyond("inplace-input-sigmoid_", lambda: Case(InplaceInputModule(), torch.randn(2, 3, 4, 5)))
beyond("inplace-input-sigmoid_-scripted-flex", lambda: Case(
    torch.jit.script(InplaceInputModule().eval()), torch.randn(2, 3, 6, 5),
    convert_args=[torch.zeros(0, 3, 0, 0)]))


# zeros_like of a float input with flexible sizes: a zero constant TILEd to
# its shape at load time (plus a per-channel constant, so that the output has
# zeros_like's shape and is not all zeros).
class ZerosLikeModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("b", torch.randn(3, 1, 1))

    def forward(self, x):
        return torch.zeros_like(x) + self.b


for _kind in ["float", "float-nhwc"]:
    for _s, (_h, _w) in _FLEXHW_SIZES.items():
        beyond(f"zeros_like-flex-{_kind}-{_s}", lambda k=_kind, h=_h, w=_w: Case(
            ZerosLikeModule(), float_and_quant_and_nhwc(torch.randn(2, 3, h, w))[k],
            convert_args=[float_and_quant_and_nhwc(torch.zeros(0, 3, 0, 0))[k]]))


# An Optional second input left at its default (one --input): the None is
# specialized into the graph and the branch on it folds.
class OptionalMaskModule(torch.nn.Module):
    def forward(self, x, mask: Optional[torch.Tensor] = None):
        if mask is not None:
            x = x.masked_fill(mask, 0.0)
        return torch.relu(x) + 1


beyond("optional-input-none-scripted", lambda: Case(
    torch.jit.script(OptionalMaskModule().eval()), torch.randn(2, 3, 4)))


for _kind in ["float", "float-nhwc"]:
    beyond(f"adaptive_max_pool2d-{_kind}", lambda k=_kind: Case(
        torch.nn.AdaptiveMaxPool2d((2, 3)), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 6))[k]))
    beyond(f"adaptive_max_pool2d-1x1-{_kind}", lambda k=_kind: Case(
        torch.nn.AdaptiveMaxPool2d(1), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 6))[k]))


# pow with a number: x ** 2 is x * x, ** 0.5 sqrt, ** -0.5 rsqrt as in
# PyTorch's kernel; other exponents and 2 ** x are NNAPI's POW.
class PowModule(torch.nn.Module):
    def forward(self, x):
        a = x.abs() + 0.5
        return x ** 2, a ** 0.5, a ** -0.5, a ** 3, a ** 1.7, a ** 1, 2 ** x, torch.pow(a, -2.0)


beyond("pow-scalar", lambda: Case(PowModule(), torch.randn(2, 3, 4, 5)))
beyond("pow-scalar-nhwc", lambda: Case(PowModule(), nhwc(torch.randn(2, 3, 4, 5))))
beyond("pow-scalar-flex", lambda: Case(
    PowModule(), torch.randn(2, 3, 4), convert_args=[torch.zeros(0, 3, 0)]))


# reflect / replicate / circular padding: slices of the input concatenated
# around it (NNAPI pads only with a constant).
class EdgePadModule(torch.nn.Module):
    def __init__(self, pad, mode):
        super().__init__()
        self.pad, self.mode = pad, mode

    def forward(self, x):
        return torch.nn.functional.pad(x, self.pad, mode=self.mode)


for _kind in KINDS:
    beyond(f"pad-reflect2d-{_kind}", lambda k=_kind: Case(
        torch.nn.ReflectionPad2d((1, 3, 2, 0)), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5))[k]))
# PyTorch has no quantized replication padding.
for _kind in ["float", "float-nhwc"]:
    beyond(f"pad-replicate2d-{_kind}", lambda k=_kind: Case(
        torch.nn.ReplicationPad2d((2, 0, 1, 3)), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5))[k]))
beyond("pad-reflect2d-full-width", lambda: Case(
    torch.nn.ReflectionPad2d((4, 4, 1, 1)), torch.randn(1, 2, 3, 5)))
beyond("pad-reflect1d", lambda: Case(torch.nn.ReflectionPad1d((3, 2)), torch.randn(2, 3, 6)))
beyond("pad-replicate1d", lambda: Case(torch.nn.ReplicationPad1d((1, 4)), torch.randn(2, 3, 6)))
beyond("pad-circular2d", lambda: Case(
    EdgePadModule((2, 1, 1, 3), "circular"), torch.randn(2, 3, 4, 5)))
beyond("pad-circular2d-nhwc", lambda: Case(
    EdgePadModule((2, 1, 1, 3), "circular"), nhwc(torch.randn(2, 3, 4, 5))))
beyond("pad-reflect2d-flex-batch", lambda: Case(
    torch.nn.ReflectionPad2d(2), torch.randn(3, 2, 4, 5), convert_args=[torch.zeros(0, 2, 4, 5)]))


# The aten::reflection_pad2d / replication_pad1d nodes themselves (models
# traced by older PyTorch versions, which had no aten::pad).
class EdgePadNodesModule(torch.nn.Module):
    def forward(self, x):
        y = torch._C._nn.reflection_pad2d(x, (1, 2, 2, 1))
        return y, torch._C._nn.replication_pad1d(x[0], (2, 1))


beyond("pad-edge-nodes", lambda: Case(EdgePadNodesModule(), torch.randn(2, 3, 4, 5)))
beyond("pad-replicate3d", lambda: Case(
    torch.nn.ReplicationPad3d((1, 0, 0, 2, 1, 1)), torch.randn(1, 2, 3, 4, 3)))


# embedding: GATHER of the table's rows by int32 indices (NNAPI has no int64).
class EmbeddingModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4, padding_idx=0)

    def forward(self, tokens):
        return torch.relu(self.emb(tokens))


def _tokens(*shape):
    return torch.randint(0, 10, shape, dtype=torch.int32)


beyond("embedding", lambda: Case(EmbeddingModule(), _tokens(2, 7)))
beyond("embedding-flex", lambda: Case(
    EmbeddingModule(), _tokens(3, 5), convert_args=[torch.zeros(0, 0, dtype=torch.int32)]))


# leaky_relu (a Number slope, int or float): PRELU with a (1) alpha.
class LeakyReluModule(torch.nn.Module):
    def __init__(self, slope):
        super().__init__()
        self.slope = slope

    def forward(self, x):
        return torch.nn.functional.leaky_relu(x, self.slope)


for _kind in KINDS:
    beyond(f"leaky_relu-{_kind}", lambda k=_kind: Case(
        LeakyReluModule(0.1), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5))[k]))
beyond("leaky_relu-negative-quant", lambda: Case(
    LeakyReluModule(-0.5), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5))["quant"]))
beyond("leaky_relu-int-slope-flex", lambda: Case(
    LeakyReluModule(2), torch.randn(2, 3, 4), convert_args=[torch.zeros(0, 3, 0)]))


# matmul / bmm: FULLY_CONNECTED with a zero bias when the right side is a
# constant matrix; otherwise BATCH_MATMUL (NNAPI feature level 6), after a
# RESHAPE and TILE that broadcast the batch dims.
class MatmulModule(torch.nn.Module):
    def __init__(self, kind="matmul"):
        super().__init__()
        self.kind = kind

    def forward(self, a, b):
        return torch.bmm(a, b) if self.kind == "bmm" else torch.matmul(a, b)


class MatmulWeightModule(torch.nn.Module):
    def __init__(self, transposed):
        super().__init__()
        self.transposed = transposed
        self.w = torch.nn.Parameter(torch.randn(6, 5) if transposed else torch.randn(5, 6))

    def forward(self, x):
        return x @ (self.w.t() if self.transposed else self.w)


beyond("matmul-3d", lambda: Case(MatmulModule(), [torch.randn(2, 4, 5), torch.randn(2, 5, 3)]))
beyond("matmul-bmm", lambda: Case(
    MatmulModule("bmm"), [torch.randn(3, 4, 5), torch.randn(3, 5, 2)]))
beyond("matmul-2d", lambda: Case(MatmulModule(), [torch.randn(4, 5), torch.randn(5, 3)]))
beyond("matmul-rhs-2d", lambda: Case(MatmulModule(), [torch.randn(2, 4, 5), torch.randn(5, 3)]))
beyond("matmul-broadcast", lambda: Case(
    MatmulModule(), [torch.randn(2, 3, 4, 5), torch.randn(3, 5, 2)]))


# A ViT's class token (torchvision's VisionTransformer: class_token.expand(n,
# -1, -1), then cat along dim 1) at a flexible batch: the expand's size is the
# input's batch, known when the model loads. "computed": the token comes from
# the input (not a parameter). Each at two batches, against eager.
class ClsTokenModule(torch.nn.Module):
    def __init__(self, computed=False):
        super().__init__()
        self.computed = computed
        self.class_token = torch.nn.Parameter(torch.randn(1, 1, 16))
        self.patch = torch.nn.Conv2d(3, 16, 8, stride=8)
        self.head = torch.nn.Linear(16, 5)

    def forward(self, x):
        n = x.shape[0]
        x = self.patch(x).flatten(2).transpose(1, 2)
        token = x.mean(dim=(0, 1), keepdim=True) if self.computed else self.class_token
        return self.head(torch.cat([token.expand(n, -1, -1), x], dim=1))


for _s, _n in (("a", 1), ("b", 3)):
    for _k, _computed, _layout in (("", False, lambda t: t), ("-nhwc", False, nhwc),
                                   ("-computed", True, lambda t: t)):
        beyond(f"cls-token-flex-batch{_k}-{_s}", lambda n=_n, c=_computed, f=_layout: Case(
            ClsTokenModule(c), f(torch.randn(n, 3, 32, 32)),
            convert_args=[f(torch.zeros(0, 3, 32, 32))]))
# A constant whose dim is not 1 expanded to the batch: traced at batch 2, it
# works only at that batch (PyTorch's expand fails at any other), so a
# flexible batch is refused naming the node.
class ExpandToBatchModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rows = torch.nn.Parameter(torch.randn(2, 1, 5))

    def forward(self, x):
        return x + self.rows.expand(x.shape[0], 3, 5)


refuse("expand-constant-to-flex-batch", lambda: Case(
    ExpandToBatchModule(), torch.randn(2, 3, 5), convert_args=[torch.zeros(0, 3, 5)]),
    r"expand of a constant of shape \(2, 1, 5\) to size s_\d+_0 \(known when the model is "
    r"loaded\) in dim 0: only a dim of size 1 repeats")
beyond("matmul-broadcast-lhs", lambda: Case(
    MatmulModule(), [torch.randn(1, 4, 5), torch.randn(2, 3, 5, 2)]))
beyond("matmul-nhwc", lambda: Case(
    MatmulModule(), [nhwc(torch.randn(2, 3, 4, 5)), torch.randn(2, 3, 5, 2)]))
beyond("matmul-flex-batch", lambda: Case(
    MatmulModule(), [torch.randn(3, 4, 5), torch.randn(3, 5, 2)],
    convert_args=[torch.zeros(0, 4, 5), torch.zeros(0, 5, 2)], options=API_33))
# The same products with BATCH_MATMUL (feature level 6); the cases above take
# the default target, Android API 29, where they are FULLY_CONNECTED per batch.
beyond("matmul-bmm-api33", lambda: Case(
    MatmulModule("bmm"), [torch.randn(3, 4, 5), torch.randn(3, 5, 2)], options=API_33))
beyond("matmul-broadcast-api33", lambda: Case(
    MatmulModule(), [torch.randn(2, 3, 4, 5), torch.randn(3, 5, 2)], options=API_33))
beyond("matmul-rhs-2d-api33", lambda: Case(
    MatmulModule(), [torch.randn(2, 4, 5), torch.randn(5, 3)], options=API_33))
beyond("matmul-weight", lambda: Case(MatmulWeightModule(False), torch.randn(2, 4, 5)))
beyond("matmul-weight-t", lambda: Case(MatmulWeightModule(True), torch.randn(2, 4, 5)))
beyond("matmul-weight-t-flex", lambda: Case(
    MatmulWeightModule(True), torch.randn(3, 4, 5), convert_args=[torch.zeros(0, 0, 5)]))


# 1-D operands: read as (1, K) on the left and (K, 1) on the right, that dim
# dropped from the result.
class MatmulVectorWeightModule(torch.nn.Module):
    def __init__(self, left):
        super().__init__()
        self.left = left
        self.w = torch.nn.Parameter(torch.randn(5, 6) if left else torch.randn(5))

    def forward(self, x):
        return torch.matmul(x, self.w)


beyond("matmul-vector-lhs", lambda: Case(MatmulModule(), [torch.randn(5), torch.randn(2, 5, 3)]))
beyond("matmul-vector-rhs", lambda: Case(MatmulModule(), [torch.randn(2, 4, 5), torch.randn(5)]))
beyond("matmul-vector-weight", lambda: Case(MatmulVectorWeightModule(False), torch.randn(3, 4, 5)))
beyond("matmul-vector-weight-lhs", lambda: Case(MatmulVectorWeightModule(True), torch.randn(5)))


# expand and repeat: TILE (after a RESHAPE for new leading dims).
class ExpandModule(torch.nn.Module):
    def __init__(self, sizes, kind="expand"):
        super().__init__()
        self.sizes, self.kind = sizes, kind

    def forward(self, x):
        return x.repeat(self.sizes) if self.kind == "repeat" else x.expand(self.sizes).contiguous()


beyond("expand-3d", lambda: Case(ExpandModule([3, 2, 5, 4]), torch.randn(2, 1, 4)))
beyond("expand-nhwc", lambda: Case(ExpandModule([2, 3, 4, 5]), nhwc(torch.randn(2, 3, 1, 1))))
beyond("expand-flex", lambda: Case(
    ExpandModule([-1, 3, 4]), torch.randn(2, 1, 4), convert_args=[torch.zeros(0, 1, 4)]))
beyond("repeat-3d", lambda: Case(ExpandModule([2, 1, 3], "repeat"), torch.randn(2, 3)))
for _kind in KINDS:
    beyond(f"repeat-{_kind}", lambda k=_kind: Case(
        ExpandModule([1, 2, 1, 3], "repeat"), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5))[k]))
beyond("repeat-flex", lambda: Case(
    ExpandModule([2, 1, 2], "repeat"), torch.randn(3, 2, 4), convert_args=[torch.zeros(0, 2, 0)]))


# softmax of NHWC data: the reference passes PyTorch's dim as the NNAPI axis
# (known reference bug in tests/reference); the NNAPI axis must be the one that
# holds that dim.
class SoftmaxModule(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.softmax(x, self.dim)


beyond("softmax-4d-nhwc", lambda: Case(SoftmaxModule(-1), nhwc(torch.randn(2, 3, 4, 5))))
beyond("softmax-4d-nhwc-channels", lambda: Case(SoftmaxModule(1), nhwc(torch.randn(2, 3, 4, 5))))


# A self-attention block: q/k/v projections, scaled dot products, softmax over
# the keys, the weighted sum of values, an output projection and a residual.
class SelfAttention(torch.nn.Module):
    def __init__(self, embed=8, heads=2):
        super().__init__()
        self.qkv = torch.nn.Linear(embed, 3 * embed)
        self.out = torch.nn.Linear(embed, embed)
        self.heads, self.head_dim = heads, embed // heads

    def forward(self, x):  # (B, T, E)
        b, t, e = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.reshape(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = k.reshape(b, t, self.heads, self.head_dim).transpose(1, 2)
        v = v.reshape(b, t, self.heads, self.head_dim).transpose(1, 2)
        att = torch.softmax(q @ k.transpose(-2, -1) * self.head_dim ** -0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, e)
        return x + self.out(y)


# nn.MultiheadAttention (eval, sequence-first), traced: linear, chunk, view,
# transpose, bmm, softmax.
class MHAModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(8, 2)

    def forward(self, x):  # (T, B, E)
        return self.mha(x, x, x, need_weights=False)[0]


class MHAWeightsModule(torch.nn.Module):
    """Also the attention weights averaged over heads (aten::sum, then a division)."""

    def __init__(self):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(8, 2)

    def forward(self, x):
        return self.mha(x, x, x)


class MHACausalModule(torch.nn.Module):
    """With a float causal mask (-inf above the diagonal): aten::baddbmm."""

    def __init__(self, length):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(8, 2)
        self.register_buffer("mask", torch.triu(torch.full((length, length), float("-inf")), 1))

    def forward(self, x):
        return self.mha(x, x, x, attn_mask=self.mask, need_weights=False)[0]


beyond("attention-mha", lambda: Case(MHAModule(), torch.randn(5, 2, 8)))
beyond("attention-mha-causal", lambda: Case(MHACausalModule(5), torch.randn(5, 2, 8)))
beyond("attention-mha-weights", lambda: Case(MHAWeightsModule(), torch.randn(5, 2, 8)))


# A whole nn.TransformerEncoderLayer (eval, sequence-first): attention,
# layer_norm, a ReLU feed-forward block and residuals.
def _encoder_layer():
    return torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)


beyond("attention-encoder-layer", lambda: Case(_encoder_layer(), torch.randn(5, 2, 8)))
beyond("attention-encoder-layer-flex-batch", lambda: Case(
    _encoder_layer(), torch.randn(5, 3, 8), convert_args=[torch.zeros(5, 0, 8)],
    options=API_33))


# nn.TransformerEncoder(batch_first=True) traced without gradients (under
# torch.no_grad() or after requires_grad_(False), as models are exported) takes
# the fused eval path: one aten::_transformer_encoder_layer_fwd per layer.
def _fast_encoder(activation, norm_first):
    layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True,
                                             activation=activation, norm_first=norm_first)
    enc = torch.nn.TransformerEncoder(layer, 2).eval().requires_grad_(False)
    for p in enc.parameters():  # distinct norm weights, non-zero biases (zeros and ones by default)
        p.add_(torch.randn_like(p) * 0.2)
    return enc


beyond("transformer-encoder-fast", lambda: Case(
    _fast_encoder("relu", False), torch.randn(2, 5, 8)))
beyond("transformer-encoder-fast-gelu-norm_first", lambda: Case(
    _fast_encoder("gelu", True), torch.randn(2, 5, 8)))
beyond("transformer-encoder-fast-api33", lambda: Case(
    _fast_encoder("relu", False), torch.randn(2, 5, 8), options=API_33))
beyond("transformer-encoder-fast-flex-batch", lambda: Case(
    _fast_encoder("gelu", False), torch.randn(3, 5, 8), convert_args=[torch.zeros(0, 5, 8)],
    options=API_33))


# nn.MultiheadAttention(batch_first=True) traced without gradients: the fused
# aten::_native_multi_head_attention, here with a flexible batch.
class FastMHA(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


beyond("attention-native-mha-flex-batch", lambda: Case(
    FastMHA().eval().requires_grad_(False), torch.randn(3, 5, 8),
    convert_args=[torch.zeros(0, 5, 8)], options=API_33))


# Masks (issue 11, text models). PyTorch 1.13's modules hand the fused ops a
# key padding mask only (mask_type 1); ATen makes a float mask bool (non-zero =
# masked out). Padding masks here are left-aligned (padding at the end) and no
# row is all padding (PyTorch's fast path gives NaN there).
def _padding_mask(lengths, length):
    return torch.arange(length) >= torch.tensor(lengths).unsqueeze(1)


class FastMHAPadding(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x, mask):
        return self.mha(x, x, x, key_padding_mask=mask, need_weights=False)[0]


def _float_padding_mask():  # -inf, and a finite non-zero the fast path also masks
    m = torch.zeros(3, 5)
    m[0, 3:] = float("-inf")
    m[1, 4] = -1.0
    return m


beyond("attention-native-mha-padding-bool", lambda: Case(
    FastMHAPadding().eval().requires_grad_(False),
    [torch.randn(3, 5, 8), _padding_mask([5, 2, 4], 5)]))
beyond("attention-native-mha-padding-float", lambda: Case(
    FastMHAPadding().eval().requires_grad_(False), [torch.randn(3, 5, 8), _float_padding_mask()]))
# A flexible batch and sequence length (BATCH_MATMUL), run at 3x7.
beyond("attention-native-mha-padding-flex-len", lambda: Case(
    FastMHAPadding().eval().requires_grad_(False),
    [torch.randn(3, 7, 8), _padding_mask([7, 3, 5], 7)],
    convert_args=[torch.zeros(0, 0, 8), torch.zeros(0, 0, dtype=torch.bool)], options=API_33))


class EncoderPadding(torch.nn.Module):
    """nn.TransformerEncoder with src_key_padding_mask. With nested tensors
    (the default) the graph is _nested_tensor_from_mask, the layers without a
    mask and to_padded_tensor (not taken for norm_first); without, each
    _transformer_encoder_layer_fwd gets the mask."""

    def __init__(self, nested, norm_first=False, activation="relu"):
        super().__init__()
        self.enc = _fast_encoder(activation, norm_first)
        self.enc.enable_nested_tensor = nested

    def forward(self, x, mask):
        return self.enc(x, src_key_padding_mask=mask)


beyond("transformer-encoder-fast-padding-bool", lambda: Case(
    EncoderPadding(False), [torch.randn(3, 5, 8), _padding_mask([5, 2, 4], 5)]))
beyond("transformer-encoder-fast-padding-float-norm_first", lambda: Case(
    EncoderPadding(False, True, "gelu"), [torch.randn(3, 5, 8), _float_padding_mask()]))
# The first sequence is unpadded, so PyTorch pads the output to the full length.
beyond("transformer-encoder-nested-padding", lambda: Case(
    EncoderPadding(True), [torch.randn(3, 5, 8), _padding_mask([5, 2, 4], 5)]))
beyond("transformer-encoder-nested-padding-flex-len", lambda: Case(
    EncoderPadding(True, False, "gelu"), [torch.randn(2, 6, 8), _padding_mask([6, 3], 6)],
    convert_args=[torch.zeros(0, 0, 8), torch.zeros(0, 0, dtype=torch.bool)], options=API_33))


class MHAMasks(torch.nn.Module):
    """nn.MultiheadAttention's unfused path: a constant attn_mask (bool or
    float) and/or a key padding mask input (zeros_like, masked_fill,
    logical_or, baddbmm)."""

    def __init__(self, batch_first, attn_mask=None):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
        self.register_buffer("attn_mask", attn_mask)

    def forward(self, x, mask=None):
        return self.mha(x, x, x, key_padding_mask=mask, attn_mask=self.attn_mask,
                        need_weights=False)[0]


def _causal_bool(n):
    return torch.triu(torch.ones(n, n, dtype=torch.bool), 1)


beyond("attention-mha-causal-bool", lambda: Case(
    MHAMasks(True, _causal_bool(5)).eval().requires_grad_(False), torch.randn(2, 5, 8)))
beyond("attention-mha-key-padding-bool", lambda: Case(
    MHAMasks(False).eval(), [torch.randn(5, 3, 8), _padding_mask([5, 2, 4], 5)]))
beyond("attention-mha-causal-key-padding", lambda: Case(
    MHAMasks(True, _causal_bool(5)).eval().requires_grad_(False),
    [torch.randn(3, 5, 8), _padding_mask([5, 2, 4], 5)]))
beyond("attention-mha-causal-float-key-padding", lambda: Case(
    MHAMasks(False, torch.triu(torch.full((5, 5), float("-inf")), 1)).eval(),
    [torch.randn(5, 3, 8), _padding_mask([5, 2, 4], 5)]))


# A flexible batch: the mask made float (zeros_like, masked_fill) has load-time sizes.
beyond("attention-mha-causal-key-padding-flex-batch", lambda: Case(
    MHAMasks(True, _causal_bool(5)).eval().requires_grad_(False),
    [torch.randn(3, 5, 8), _padding_mask([5, 2, 4], 5)],
    convert_args=[torch.zeros(0, 5, 8), torch.zeros(0, 5, dtype=torch.bool)], options=API_33))


class MHAAttnMaskInput(torch.nn.Module):
    """attn_mask as a model input: bool (L, L) or float (B * heads, L, L)."""

    def __init__(self):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x, attn_mask):
        return self.mha(x, x, x, attn_mask=attn_mask, need_weights=False)[0]


beyond("attention-mha-attn-mask-input-bool", lambda: Case(
    MHAAttnMaskInput().eval().requires_grad_(False), [torch.randn(3, 5, 8), _causal_bool(5)]))
beyond("attention-mha-attn-mask-input-float-3d", lambda: Case(
    MHAAttnMaskInput().eval().requires_grad_(False), [torch.randn(3, 5, 8), torch.randn(6, 5, 5)]))


class EncoderLayerSrcMask(torch.nn.Module):
    """nn.TransformerEncoderLayer with a constant causal src_mask: the unfused path."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
        self.register_buffer("mask", _causal_bool(5))

    def forward(self, x):
        return self.layer(x, src_mask=self.mask)


beyond("attention-encoder-layer-src-mask-causal", lambda: Case(
    EncoderLayerSrcMask().eval().requires_grad_(False), torch.randn(2, 5, 8)))


class TinyTextEncoder(torch.nn.Module):
    """A BERT-like classifier: token and learned position embeddings (cut to the
    sequence length), layer norm, a 2-layer nn.TransformerEncoder with a key
    padding mask (nested fast path), the first token's state, tanh pooler, linear."""

    def __init__(self, vocab=50, d=16, heads=2, max_len=12, classes=3):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.randn(1, max_len, d) * 0.5)
        self.norm = torch.nn.LayerNorm(d)
        layer = torch.nn.TransformerEncoderLayer(d, heads, dim_feedforward=32, batch_first=True,
                                                 activation="gelu")
        self.encoder = torch.nn.TransformerEncoder(layer, 2)
        self.pool = torch.nn.Linear(d, d)
        self.fc = torch.nn.Linear(d, classes)

    def forward(self, tokens, mask):
        x = self.norm(self.emb(tokens) + self.pos[:, :tokens.size(1)])
        h = self.encoder(x, src_key_padding_mask=mask)
        return self.fc(torch.tanh(self.pool(h[:, 0])))


def _text_args(lengths, length):
    return [torch.randint(0, 50, (len(lengths), length), dtype=torch.int32),
            _padding_mask(lengths, length)]


beyond("text-encoder-padding", lambda: Case(
    TinyTextEncoder().eval().requires_grad_(False), _text_args([8, 3], 8)))
beyond("text-encoder-padding-flex-len", lambda: Case(
    TinyTextEncoder().eval().requires_grad_(False), _text_args([10, 6, 2], 10),
    convert_args=[torch.zeros(0, 0, dtype=torch.int32), torch.zeros(0, 0, dtype=torch.bool)],
    options=API_33))


# Data movement of int32 (issue 19): NeuralNetworks.h lists TENSOR_INT32 for
# RESHAPE since feature level 6 (Android 13) only. A bool's 0/1 values move as
# float32 at any level (the attention-mha-*key-padding* cases above); other
# int32 data is refused below API 33, naming the level.
class ViewInt(torch.nn.Module):
    def forward(self, x):
        return x.view(3, 4)


refuse("int32-view-api29", lambda: Case(
    ViewInt(), torch.randint(-2**30, 2**30, (2, 6), dtype=torch.int32)),
    r"node aten::view .*RESHAPE of TENSOR_INT32, of NNAPI feature level 6 .*--min-android-api 33")
beyond("int32-view-api33", lambda: Case(
    ViewInt(), torch.randint(-2**30, 2**30, (2, 6), dtype=torch.int32), options=API_33))


# Slicing int32 data (and bool inputs, which move as int32): NeuralNetworks.h's
# STRIDED_SLICE takes no TENSOR_INT32 at any level; SLICE (every step 1) and
# GATHER (a step along one dim, or a flip) do from level 3.
class SliceInt(torch.nn.Module):
    def forward(self, m):
        return m[:, 1:3], m[:, ::2], m[:, -3:], m[:, 1::3], m.flip(1)[:, 1:3], m[:, :, 2:, :-1]


class SliceIntBatch(torch.nn.Module):
    def forward(self, m):
        return m[1:, -3:], m[::2, 1:3]


beyond("int32-slice", lambda: Case(
    SliceInt(), torch.randint(-2**30, 2**30, (3, 5, 4, 6), dtype=torch.int32)))
beyond("int32-slice-batch", lambda: Case(
    SliceIntBatch(), torch.randint(-2**30, 2**30, (3, 5), dtype=torch.int32)))
beyond("int32-slice-flex", lambda: Case(
    SliceInt(), torch.randint(-2**30, 2**30, (2, 5, 4, 6), dtype=torch.int32),
    convert_args=[torch.zeros(0, 5, 4, 6, dtype=torch.int32)]))


# A slice from a negative start over a flexible dim: PyTorch's converter
# refuses it (start - 3 + size 0 is no whole-dim slice); clamped to 0, it was
# converted as the identity (the output the input's shape). Refused, naming
# the node.
class SliceLastThree(torch.nn.Module):
    def forward(self, x):
        return x[..., -3:] * 2


refuse("flexhw-slice-negative-start", lambda: Case(
    SliceLastThree(), torch.randn(1, 3, 9, 7), convert_args=[torch.zeros(1, 3, 0, 0)]),
    r"node aten::slice .*unable to slice with flexible shape \(dim 3 of \(1, 3, 0, 0\)\)")


# A bool input moved (sliced by SLICE and GATHER, flipped, split): int32 0/1
# in NNAPI, bool again in the converted module's outputs, as eager returns
# them (they came back int32).
class MoveBool(torch.nn.Module):
    def forward(self, m):
        return m[:, 1:3], m[:, ::2], m.flip(1), m.chunk(2, 1)[1], m.narrow(0, 1, 2)


beyond("bool-moved-outputs", lambda: Case(MoveBool(), torch.randn(3, 5) > 0))


class SelectInt(torch.nn.Module):
    def forward(self, m):
        return m[:, 1]


refuse("int32-select", lambda: Case(
    SelectInt(), torch.randint(-100, 100, (3, 5), dtype=torch.int32)),
    r"node aten::select .*selecting one index of an int32 or bool tensor is not supported")


# int32 tensors and integers (PyTorch keeps int32): ADD, SUB and MUL of
# TENSOR_INT32 from feature level 4 (Android 11); a float number makes a float
# result, refused.
class ArithInt(torch.nn.Module):
    def forward(self, m):
        return m * 3, 2 + m, m - 7, m * m


class ArithIntFloat(torch.nn.Module):
    def forward(self, m):
        return m * 1.5


API_30 = ["--min-android-api", "30"]
beyond("int32-arith-number-api30", lambda: Case(
    ArithInt(), torch.randint(-1000, 1000, (3, 5), dtype=torch.int32), options=API_30))
refuse("int32-arith-number-api29", lambda: Case(
    ArithInt(), torch.randint(-1000, 1000, (3, 5), dtype=torch.int32)),
    r"node aten::mul .*needs the NNAPI operation MUL of TENSOR_INT32, of NNAPI feature level 4 "
    r".*--min-android-api 30")
refuse("int32-arith-float-number", lambda: Case(
    ArithIntFloat(), torch.randint(-1000, 1000, (3, 5), dtype=torch.int32), options=API_30),
    r"node aten::mul .*MUL of an int32 or bool tensor and a float number is not supported")


class ViewBoolMask(torch.nn.Module):
    """A bool input (and its logical_not) viewed, then used as masks."""

    def forward(self, x, m):
        x = x.masked_fill(m.view(3, 4), -1.0)
        return x.masked_fill(torch.logical_not(m).view(3, 4), 2.0)


beyond("bool-view-api29", lambda: Case(
    ViewBoolMask(), [torch.randn(3, 4), torch.randn(2, 6) > 0]))


class BoolOutputs(torch.nn.Module):
    """Bool outputs: views, a slice and an expand of a bool input (NNAPI holds
    them as int32 0/1, and the converted module must return bool as eager
    does), a logical_and with a comparison; and comparisons of a float input."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def forward(self, x, *m):
        if self.kind == "float-input":
            return x > 0, torch.logical_not(x < 0.5)
        b = m[0]
        return b.view(5, 2), b[:, 1:], b.unsqueeze(1).expand(2, 3, 5), torch.logical_and(b, x > 0)


beyond("bool-outputs-bool-input", lambda: Case(
    BoolOutputs("bool-input"), [torch.randn(2, 5), torch.randn(2, 5) > 0]))
beyond("bool-outputs-float-input", lambda: Case(
    BoolOutputs("float-input"), torch.randn(2, 5)))


class JoinBool(torch.nn.Module):
    """Bools joined and reordered: NNAPI's CONCATENATION and TRANSPOSE take no
    TENSOR_INT32 (bool tensors move as int32), so they go as float32."""

    def __init__(self, how):
        super().__init__()
        self.how = how

    def forward(self, m):
        if self.how == "cat":
            return torch.cat([m, m[:, :1]], 1)
        if self.how == "stack":
            return torch.stack([m, m.flip(0)], 0)
        if self.how == "permute":
            return m.permute(1, 0)
        return torch.cat([m.transpose(0, 1), m.t()], 0).logical_not()


for _how in ["cat", "stack", "permute", "transpose-cat-not"]:
    beyond(f"bool-join-{_how}", lambda h=_how: Case(JoinBool(h), torch.randn(3, 4) > 0))
refuse("int32-cat-numbers", lambda: Case(
    CatModule(1), [torch.randint(-100, 100, (3, 5), dtype=torch.int32)] * 2),
    r"node aten::cat .*CONCATENATION of an int32 tensor.*2\^24")

class MoveComparison(torch.nn.Module):
    """A comparison's result moved: NNAPI's comparisons give TENSOR_BOOL8,
    which no NNAPI operation that moves data takes (RESHAPE, SQUEEZE,
    EXPAND_DIMS, SLICE, STRIDED_SLICE, GATHER, TILE, TRANSPOSE, CONCATENATION,
    SPLIT); a view of one was refused as "a bug in nnapi-convert"."""

    def forward(self, x):
        m = x > 0
        return (m.view(-1), m.reshape(2, -1), m.flatten(1), m.unsqueeze(1), m[:, :1].squeeze(1),
                m[:, 1:], m[:, 1], m.narrow(1, 1, 2), m.flip(1), m[:, :1].expand(-1, 3),
                m.repeat(2, 1), torch.cat([m, x < 0], 1), m.t(), m.unbind(1)[2])


class ReshapeBool(torch.nn.Module):
    """A bool input reshaped: RESHAPE takes TENSOR_INT32 from feature level 6
    (Android 13) only, SQUEEZE and STRIDED_SLICE at none, so below it they move
    as float32, as view did; flatten was refused below API 33."""

    def forward(self, m):
        return (m.flatten(), m.flatten(1), m.reshape(-1), m.unsqueeze(0), m[:1].squeeze(0),
                m[:1, :1].squeeze(), m[:, 2], m.unbind(0)[1])


for _api, _opts in (("api29", []), ("api30", API_30), ("api33", API_33)):
    beyond(f"bool-comparison-moved-{_api}", lambda o=_opts: Case(
        MoveComparison(), torch.randn(4, 5), options=o))
    beyond(f"bool-reshaped-{_api}", lambda o=_opts: Case(
        ReshapeBool(), torch.randn(3, 4, 5) > 0, options=o))


class ReshapeBoolNhwc(torch.nn.Module):
    """Channels-last bools (an input's, a comparison's) reshaped: made
    contiguous first by a TRANSPOSE, which takes no TENSOR_INT32 either."""

    def forward(self, x, m):
        return (m.flatten(1), m.reshape(2, -1), m.flatten(2).unsqueeze(1), (x > 0).flatten(1),
                (x > 0).unbind(1)[0])


beyond("bool-reshaped-nhwc", lambda: Case(
    ReshapeBoolNhwc(), [nhwc(torch.randn(2, 3, 4, 5)), nhwc(torch.randn(2, 3, 4, 5) > 0)]))



class SumModule(torch.nn.Module):
    def __init__(self, dims, keepdim):
        super().__init__()
        self.dims, self.keepdim = dims, keepdim

    def forward(self, x):
        return torch.sum(x, self.dims, keepdim=self.keepdim)


beyond("sum-dims", lambda: Case(SumModule([1, -1], False), torch.randn(2, 3, 4, 5)))
beyond("sum-keepdim-nhwc", lambda: Case(SumModule([1], True), nhwc(torch.randn(2, 3, 4, 5))))
beyond("sum-flex", lambda: Case(
    SumModule([2], False), torch.randn(3, 4, 5), convert_args=[torch.zeros(0, 4, 0)]))
beyond("attention", lambda: Case(SelfAttention(), torch.randn(2, 5, 8)))
beyond("attention-flex-batch", lambda: Case(
    SelfAttention(), torch.randn(3, 5, 8), convert_args=[torch.zeros(0, 5, 8)],
    options=API_33))
beyond("attention-api33", lambda: Case(SelfAttention(), torch.randn(2, 5, 8), options=API_33))


# hardswish: HARD_SWISH from Android 11 (API 30); at the default target,
# Android 10, x * relu6(x + 3) / 6 (quantized: a lookup table, GATHER).
for _kind in KINDS:
    beyond(f"hardswish-{_kind}", lambda k=_kind: Case(
        torch.nn.Hardswish() if k.startswith("float") else torch.nn.quantized.Hardswish(0.05, 128),
        float_and_quant_and_nhwc(torch.randn(1, 3, 5, 4) * 4)[k]))
    beyond(f"hardswish-api30-{_kind}", lambda k=_kind: Case(
        torch.nn.Hardswish() if k.startswith("float") else torch.nn.quantized.Hardswish(0.05, 128),
        float_and_quant_and_nhwc(torch.randn(1, 3, 5, 4) * 4)[k],
        options=["--min-android-api", "30"]))


# roll (two slices and a CONCATENATION per dim: Swin's shifted windows) and
# einsum (TRANSPOSE/RESHAPE around one BATCH_MATMUL or FULLY_CONNECTED).
class RollModule(torch.nn.Module):
    def __init__(self, shifts, dims):
        super().__init__()
        self.shifts, self.dims = shifts, dims

    def forward(self, x):
        return torch.roll(x + 1, self.shifts, self.dims)


beyond("roll-1d", lambda: Case(RollModule(2, 1), torch.randn(2, 5, 3)))
beyond("roll-2d-negative", lambda: Case(RollModule((-3, 2), (1, 2)), torch.randn(1, 7, 6, 4)))
beyond("roll-2d-nhwc", lambda: Case(
    RollModule((1, -2), (2, 3)), nhwc(torch.randn(1, 3, 5, 6))))
beyond("roll-channels-nhwc", lambda: Case(RollModule(-1, 1), nhwc(torch.randn(1, 4, 3, 3))))


class EinsumModule(torch.nn.Module):
    def __init__(self, equation, weight=None):
        super().__init__()
        self.equation = equation
        self.weight = weight

    def forward(self, a, b=None):
        return torch.einsum(self.equation, a, self.weight if b is None else b)


for _i, (_eq, _sa, _sb) in enumerate([
        ("bhid,bhjd->bhij", (2, 3, 4, 5), (2, 3, 6, 5)),
        ("bhij,bhjd->bhid", (2, 3, 4, 6), (2, 3, 6, 5)),
        ("bij,bjk->bik", (2, 4, 5), (2, 5, 3)),
        ("ij,jk->ik", (4, 5), (5, 3)),
        ("bgHid,bgHjd->bgHij", (1, 2, 3, 4, 5), (1, 2, 3, 6, 5)),
        ("bnd,md->bnm", (2, 4, 5), (3, 5)),
        ("bi,bj->bij", (2, 4), (2, 3))]):
    beyond(f"einsum-{_i}-{_eq.replace(',', '_').replace('->', '_to_')}",
           lambda eq=_eq, sa=_sa, sb=_sb: Case(EinsumModule(eq), [torch.randn(sa), torch.randn(sb)]))
beyond("einsum-constant-bhwc_hkc", lambda: Case(
    EinsumModule("bhwc,hkc->bhwk", torch.randn(4, 3, 5)), torch.randn(2, 4, 6, 5)))
beyond("einsum-constant-nd_de", lambda: Case(
    EinsumModule("nd,de->ne", torch.randn(5, 3)), torch.randn(4, 5)))


# A tiny torchvision VisionTransformer (the fast subset of vit_b_16):
# _native_multi_head_attention, cat with the constant class token. Its head
# is zero-initialised by torchvision, so it gets random weights.
def _tiny_vit():
    import torchvision
    m = torchvision.models.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
        num_classes=10).eval()
    torch.nn.init.normal_(m.heads.head.weight)
    return m


beyond("tiny-vit", lambda: Case(_tiny_vit(), torch.randn(1, 3, 32, 32)))


# Swin (issue 11). Its shifted-window attention mask is built in place from
# the input's sizes: new_zeros, slice assignments (slice + fill_ of the view),
# masked_fill; nnapi-convert runs these while converting (a constant mask).
class WindowMaskModule(torch.nn.Module):
    def __init__(self, window=4, shift=2):
        super().__init__()
        self.window, self.shift = window, shift

    def forward(self, x):  # x: (rows, cols, w * w, w * w) scores of rows x cols windows
        w, s = self.window, self.shift
        H, W = x.size(0) * w, x.size(1) * w
        mask = x.new_zeros((H, W))
        count = 0
        for h in (slice(0, -w), slice(-w, -s), slice(-s, None)):
            for v in (slice(0, -w), slice(-w, -s), slice(-s, None)):
                mask[h, v] = count
                count += 1
        mask = mask.view(H // w, w, W // w, w).permute(0, 2, 1, 3).reshape(-1, w * w)
        mask = mask.unsqueeze(1) - mask.unsqueeze(2)
        mask = mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)
        return torch.softmax(x.reshape(-1, w * w, w * w) + mask, -1)


# Slice assignment of a tensor (copy_) into torch.zeros, and an in-place
# masked_fill_, both folded.
class CopyMaskModule(torch.nn.Module):
    def forward(self, x):  # x: (N, 4, 6)
        mask = torch.zeros(4, 6)
        mask[1:3, 2:] = torch.arange(4.0)
        mask.masked_fill_(mask > 2, -1.0)
        return x * mask


# x[:, 0::2] / x[:, 1::2] over the whole dim (Swin's patch merging); the
# reference takes a whole-range slice with a step for the identity.
class StepSliceModule(torch.nn.Module):
    def forward(self, x):
        return torch.cat([x[:, 0::2], x[:, 1::2]], -1)


beyond("slice-whole-step", lambda: Case(StepSliceModule(), torch.randn(2, 6, 3)))
beyond("fold-window-mask", lambda: Case(WindowMaskModule(), torch.randn(2, 3, 16, 16)))
beyond("fold-copy-mask", lambda: Case(CopyMaskModule(), torch.randn(2, 4, 6)))


# A causal mask cut from a tril buffer to the input's length and inverted
# (~mask: bitwise_not), and one made by triu of ones: both folded.
class CausalMaskModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("causal", torch.tril(torch.ones(8, 8)).bool())

    def forward(self, x):  # x: (N, T, T) scores, T <= 8
        t = x.size(-1)
        x = x.masked_fill(~self.causal[:t, :t], -1e4)
        upper = torch.triu(torch.ones(t, t), 1)
        return torch.softmax(x - 100.0 * upper, -1)


beyond("fold-causal-mask", lambda: Case(CausalMaskModule(), torch.randn(2, 5, 5)))


# Window partition through 6-D views and permutes (NNAPI's RESHAPE and
# TRANSPOSE take rank <= 4): Swin's (0, 1, 3, 2, 4, 5) merges to a 4-D
# TRANSPOSE; MaxViT's grid (0, 2, 4, 3, 5, 1) needs several.
class WindowPartitionModule(torch.nn.Module):
    def __init__(self, window, grid=False):
        super().__init__()
        self.window, self.grid = window, grid

    def forward(self, x):
        w = self.window
        if self.grid:  # x: (B, C, H, W)
            B, C, H, W = x.shape
            x = x.view(B, C, H // w, w, W // w, w).permute(0, 2, 4, 3, 5, 1)
            return x.reshape(B * (H // w) * (W // w), w * w, C) * 2
        B, H, W, C = x.shape  # Swin: windows out and back
        x = x.view(B, H // w, w, W // w, w, C).permute(0, 1, 3, 2, 4, 5).reshape(-1, w * w, C)
        x = (x * 2).view(B, H // w, W // w, w, w, C).permute(0, 1, 3, 2, 4, 5)
        return x.reshape(B, H, W, C) + 1


beyond("window-partition-6d", lambda: Case(WindowPartitionModule(4), torch.randn(1, 8, 12, 3)))
beyond("window-partition-6d-batch2", lambda: Case(
    WindowPartitionModule(2), torch.randn(2, 4, 6, 5)))
beyond("window-partition-6d-grid", lambda: Case(
    WindowPartitionModule(4, grid=True), torch.randn(2, 3, 8, 12)))
beyond("window-partition-6d-grid-nhwc", lambda: Case(
    WindowPartitionModule(2, grid=True), nhwc(torch.randn(1, 3, 4, 6))))
# The same with a flexible batch (issue 20): B rides along, merged with its
# neighbours in each RESHAPE (a -1) and held as dim 0 of the operand behind a
# rank > 4 view (src/lower/rank_reduce.cpp); at two batch sizes each.
for _b in (2, 3):
    beyond(f"window-partition-6d-flex-batch-{_b}", lambda b=_b: Case(
        WindowPartitionModule(4), torch.randn(b, 8, 12, 3),
        convert_args=[torch.zeros(0, 8, 12, 3)]))
    beyond(f"window-partition-6d-grid-flex-batch-{_b}", lambda b=_b: Case(
        WindowPartitionModule(4, grid=True), torch.randn(b, 3, 8, 12),
        convert_args=[torch.zeros(0, 3, 8, 12)]))
beyond("window-partition-6d-grid-flex-batch-nhwc", lambda: Case(
    WindowPartitionModule(2, grid=True), nhwc(torch.randn(2, 3, 4, 6)),
    convert_args=[nhwc(torch.zeros(0, 3, 4, 6))]))


# select, slice, an elementwise op, pow, cat and unsqueeze of rank 5 with a
# flexible batch, each read through the operand's data as rank <= 4.
class HighRankFlexModule(torch.nn.Module):
    def forward(self, x):  # (B, 6, 4, 5)
        B = x.shape[0]
        y = x.view(B, 2, 3, 4, 5)
        a = y.select(1, 0)  # (B, 3, 4, 5)
        s = y[:, :, 1:3]  # (B, 2, 2, 4, 5)
        p = torch.sigmoid(s) ** 2
        c = torch.cat([p, s], 2)  # (B, 2, 4, 4, 5)
        u = a.unsqueeze(2) * 3.0  # (B, 3, 1, 4, 5)
        return c.reshape(B, 8, 4, 5), u.reshape(B, 3, 4, 5) + a


for _b in (2, 3):
    beyond(f"high-rank-ops-flex-batch-{_b}", lambda b=_b: Case(
        HighRankFlexModule(), torch.randn(b, 6, 4, 5), convert_args=[torch.zeros(0, 6, 4, 5)]))


# A flexible size that a rank > 4 view puts at dim 3: NNAPI's operand would
# need rank 5 (the flexible size is held at dim 0, 1 or 2 only): refused.
class FlexDim3ViewModule(torch.nn.Module):
    def forward(self, x):  # (B, 2, 3, 4)
        y = x.permute(1, 2, 3, 0).reshape(2, 3, 4, -1, 1)
        return (y * 2).reshape(2, 3, 4, -1)


refuse("high-rank-flex-dim3", lambda: Case(
    FlexDim3ViewModule(), torch.randn(2, 2, 3, 4), convert_args=[torch.zeros(0, 2, 3, 4)]),
    r"node aten::reshape.*rank 5")


# Arithmetic of rank > 4 (NNAPI's ADD, SUB, MUL and DIV take rank <= 4): Swin's
# attention mask, attn.view(B, nW, heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
# (dims 1 in both dropped), and a 6-D product whose dims merge to 3 groups
# that broadcast alike, then a number subtracted and divided by.
class MaskedAttentionModule(torch.nn.Module):
    def __init__(self, windows, heads, n):
        super().__init__()
        self.windows, self.heads, self.n = windows, heads, n
        self.register_buffer("mask", torch.randn(windows, n, n))

    def forward(self, attn):  # (B * windows, heads, n, n)
        nw, h, n = self.windows, self.heads, self.n
        attn = attn.view(attn.shape[0] // nw, nw, h, n, n) + self.mask.unsqueeze(1).unsqueeze(0)
        return attn.view(-1, h, n, n).softmax(-1)


class Arith6dModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.randn(3, 4, 1, 1, 1))

    def forward(self, x):  # (2, 12, 5, 6)
        y = x.view(2, 3, 4, 5, 2, 3) * self.w
        return ((y - 0.5) / 2).reshape(2, 12, 5, 6)


beyond("attn-mask-5d", lambda: Case(MaskedAttentionModule(4, 3, 5), torch.randn(8, 3, 5, 5)))
beyond("arith-6d-merge", lambda: Case(Arith6dModule(), torch.randn(2, 12, 5, 6)))


# exp, log, sqrt and rsqrt: NNAPI's EXP, LOG, SQRT and RSQRT (a detector's box
# decoding, exp(dw) * anchor_w, is the common use).
class UnaryMathModule(torch.nn.Module):
    def forward(self, x):
        a = x.abs() + 0.5
        return torch.exp(x * 0.5) + torch.log(a) + torch.sqrt(a) * torch.rsqrt(a + 1.0)


beyond("unary-math", lambda: Case(UnaryMathModule(), torch.randn(2, 3, 4, 5)))
beyond("unary-math-nhwc", lambda: Case(UnaryMathModule(), nhwc(torch.randn(2, 3, 4, 5))))

# A reduced torchvision SwinTransformer: two stages (the second after patch
# merging: x[..., 0::2, 0::2, :] slices), shifted windows with the folded
# mask, relative position bias. The head gets weights of order 1 (torchvision
# draws them with std 0.02).
def _tiny_swin():
    import torchvision
    m = torchvision.models.swin_transformer.SwinTransformer(
        patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4],
        num_classes=10).eval()
    torch.nn.init.normal_(m.head.weight)
    return m


beyond("tiny-swin", lambda: Case(_tiny_swin(), torch.randn(1, 3, 32, 32)))
beyond("tiny-swin-nhwc", lambda: Case(_tiny_swin(), nhwc(torch.randn(1, 3, 32, 32))))
# A flexible batch (issue 20): the window partition's views and permutes of
# rank 6 carry the load-time B as one merged dim (src/lower/rank_reduce.cpp),
# so no operand has rank > 4 (the converter checks every operand); checked at
# batch 2 and 3, NCHW and NHWC. The attention products of computed tensors
# over a flexible batch are BATCH_MATMUL at API 33.
for _b in (2, 3):
    beyond(f"tiny-swin-flex-batch-{_b}", lambda b=_b: Case(
        _tiny_swin(), torch.randn(b, 3, 32, 32), convert_args=[torch.zeros(0, 3, 32, 32)],
        options=API_33))
# At the default target (Android 10), with no BATCH_MATMUL, those products of
# fixed-size matrices over a flexible batch are a broadcast MUL and a
# REDUCE_SUM over the inner size (NNAPI level 3).
for _b in (2, 3):
    beyond(f"tiny-swin-flex-batch-api29-{_b}", lambda b=_b: Case(
        _tiny_swin(), torch.randn(b, 3, 32, 32), convert_args=[torch.zeros(0, 3, 32, 32)]))
beyond("tiny-swin-flex-batch-api29-nhwc", lambda: Case(
    _tiny_swin(), nhwc(torch.randn(2, 3, 32, 32)), convert_args=[nhwc(torch.zeros(0, 3, 32, 32))]))
beyond("tiny-swin-flex-batch-nhwc", lambda: Case(
    _tiny_swin(), nhwc(torch.randn(2, 3, 32, 32)), convert_args=[nhwc(torch.zeros(0, 3, 32, 32))],
    options=API_33))


# group_norm (MEAN/SUB/MUL/RSQRT over (N, G, C/G * spatial)) and
# instance_norm (INSTANCE_NORMALIZATION for 4-D inputs).
def _group_norm(groups, channels, affine=True):
    m = torch.nn.GroupNorm(groups, channels, affine=affine)
    if affine:
        with torch.no_grad():
            m.weight.copy_(torch.randn(channels))
            m.bias.copy_(torch.randn(channels))
    return m


def _instance_norm(cls, channels, affine):
    m = cls(channels, affine=affine)
    if affine:
        with torch.no_grad():
            m.weight.copy_(torch.randn(channels))
            m.bias.copy_(torch.randn(channels))
    return m


for _layout in ("float", "float-nhwc"):
    beyond(f"group_norm-{_layout}", lambda k=_layout: Case(
        _group_norm(2, 6), float_and_quant_and_nhwc(torch.randn(2, 6, 4, 5))[k]))
    beyond(f"instance_norm-{_layout}", lambda k=_layout: Case(
        _instance_norm(torch.nn.InstanceNorm2d, 3, True),
        float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5) * 2 + 1)[k]))
beyond("group_norm-no-affine-3d", lambda: Case(_group_norm(3, 6, False), torch.randn(2, 6, 7)))
beyond("group_norm-flex", lambda: Case(
    _group_norm(2, 4), torch.randn(3, 4, 5, 6), convert_args=[torch.zeros(0, 4, 0, 0)]))
beyond("group_norm-flex-nhwc", lambda: Case(
    _group_norm(4, 4), nhwc(torch.randn(3, 4, 5, 6)), convert_args=[nhwc(torch.zeros(0, 4, 0, 0))]))
beyond("instance_norm-no-affine-flex", lambda: Case(
    _instance_norm(torch.nn.InstanceNorm2d, 3, False), torch.randn(2, 3, 4, 5),
    convert_args=[torch.zeros(0, 3, 0, 0)]))
def _instance_norm_running():
    m = torch.nn.InstanceNorm2d(3, affine=True, track_running_stats=True)
    with torch.no_grad():
        m.running_mean.copy_(torch.randn(3))
        m.running_var.copy_(torch.rand(3) + 0.5)
        m.weight.copy_(torch.randn(3))
        m.bias.copy_(torch.randn(3))
    return m


# In eval mode with running statistics, instance_norm is batch_norm's affine.
beyond("instance_norm-running-stats", lambda: Case(
    _instance_norm_running(), torch.randn(2, 3, 4, 5)))
beyond("instance_norm-1d", lambda: Case(
    _instance_norm(torch.nn.InstanceNorm1d, 3, True), torch.randn(2, 3, 6)))


# adaptive_avg_pool2d to 1x1 over a flexible height and width: MEAN.
for _layout in ("float", "float-nhwc", "quant-nhwc"):
    beyond(f"adaptive_avg_pool2d-1x1-flex-{_layout}", lambda k=_layout: Case(
        torch.nn.AdaptiveAvgPool2d(1), float_and_quant_and_nhwc(torch.randn(2, 3, 5, 7))[k],
        convert_args=[float_and_quant_and_nhwc(torch.zeros(0, 3, 0, 0))[k]]))


# quantized::relu6 (nn.quantized.ReLU6): RELU6 on the quantized tensor.
# PyTorch 1.13's QNNPACK relu6 reads channels-last input as if contiguous
# (its output is NHWC-ordered data with NCHW strides), so the NHWC case makes
# the input contiguous first for eager to be right.
class QuantRelu6Contiguous(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.relu6 = torch.nn.quantized.ReLU6()

    def forward(self, x):
        return self.relu6(x.contiguous())


beyond("relu6-quant", lambda: Case(
    torch.nn.quantized.ReLU6(), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5) * 4)["quant"]))
beyond("relu6-quant-nhwc", lambda: Case(
    QuantRelu6Contiguous(), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5) * 4)["quant-nhwc"]))


# Recurrent layers (traced, eval, zero initial state): aten::lstm and
# aten::gru unrolled per time step; the weights are nn.LSTM / nn.GRU's
# default init, the inputs of magnitude ~2.
class RNNModule(torch.nn.Module):
    """out, or (out, h_n[, c_n]) with states=True; out[:, -1] with last=True."""

    def __init__(self, rnn, states=False, last=False):
        super().__init__()
        self.rnn, self.states, self.last = rnn, states, last

    def forward(self, x):
        out, hidden = self.rnn(x)
        if self.last:
            return out[:, -1]
        if self.states:
            return (out,) + (hidden if isinstance(hidden, tuple) else (hidden,))
        return out


class TextClassifier(torch.nn.Module):
    """embedding -> LSTM -> the last step's output -> Linear."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 6)
        self.lstm = torch.nn.LSTM(6, 8, batch_first=True)
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, tokens):
        out, _ = self.lstm(self.emb(tokens))
        return self.fc(out[:, -1])


class RNNStateModule(torch.nn.Module):
    """An initial state given as model inputs: hx for GRU, (h_0, c_0) for LSTM."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, h0, c0=None):
        out, _ = self.rnn(x, h0 if c0 is None else (h0, c0))
        return out


def _seq(*shape):
    return torch.randn(*shape) * 2


beyond("lstm-1layer-batch_first", lambda: Case(
    RNNModule(torch.nn.LSTM(4, 8, batch_first=True)), _seq(2, 5, 4)))
beyond("lstm-2layer-seq_first", lambda: Case(
    RNNModule(torch.nn.LSTM(4, 8, num_layers=2)), _seq(5, 3, 4)))
beyond("lstm-states", lambda: Case(
    RNNModule(torch.nn.LSTM(4, 8, num_layers=2, batch_first=True), states=True), _seq(2, 4, 4)))
beyond("lstm-no_bias", lambda: Case(
    RNNModule(torch.nn.LSTM(4, 6, bias=False), states=True), _seq(4, 2, 4)))
beyond("lstm-bidirectional", lambda: Case(
    RNNModule(torch.nn.LSTM(4, 8, num_layers=2, batch_first=True, bidirectional=True),
              states=True), _seq(2, 5, 4)))
beyond("lstm-text_classifier", lambda: Case(TextClassifier(), _tokens(2, 7)))
beyond("lstm-last-step", lambda: Case(
    RNNModule(torch.nn.LSTM(4, 8, batch_first=True), last=True), _seq(3, 6, 4)))
beyond("lstm-state-input", lambda: Case(
    RNNStateModule(torch.nn.LSTM(4, 6, num_layers=2, bidirectional=True)),
    [_seq(3, 2, 4), torch.randn(4, 2, 6), torch.randn(4, 2, 6)]))
beyond("gru-1layer-batch_first", lambda: Case(
    RNNModule(torch.nn.GRU(4, 8, batch_first=True)), _seq(2, 5, 4)))
beyond("gru-2layer-seq_first", lambda: Case(
    RNNModule(torch.nn.GRU(4, 8, num_layers=2), states=True), _seq(5, 3, 4)))
beyond("gru-no_bias", lambda: Case(
    RNNModule(torch.nn.GRU(4, 6, bias=False), states=True), _seq(4, 2, 4)))
beyond("gru-bidirectional", lambda: Case(
    RNNModule(torch.nn.GRU(4, 8, num_layers=2, bidirectional=True), states=True), _seq(5, 2, 4)))
beyond("gru-state-input", lambda: Case(
    RNNStateModule(torch.nn.GRU(4, 6, num_layers=2, batch_first=True)),
    [_seq(2, 3, 4), torch.randn(2, 2, 6)]))


# Dynamic quantization (quantize_dynamic, qnnpack): quantized::linear_dynamic,
# linear_relu_dynamic and aten::quantized_lstm, converted as float operations
# on the dequantized weights. Eager quantizes each input at run time, so the
# outputs differ from eager by the inputs' 8-bit rounding: verified with
# tests/common/fixtures.h's dynamic-quantization tolerance (measured in
# tests/verify/test_dynamic_quant.py).
def _dynamic(module, fuse=None):
    torch.backends.quantized.engine = "qnnpack"
    module.eval()
    if fuse:
        module = torch.ao.quantization.fuse_modules(module, fuse)
    return torch.ao.quantization.quantize_dynamic(
        module, {torch.nn.Linear, torch.nn.LSTM, torch.ao.nn.intrinsic.LinearReLU},
        dtype=torch.qint8)


def _mlp():
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


beyond("dynamic_quant-mlp", lambda: Case(_dynamic(_mlp()), _seq(3, 8)))
beyond("dynamic_quant-mlp-linear_relu-flex", lambda: Case(
    _dynamic(_mlp(), [["0", "1"]]), _seq(5, 8), convert_args=[torch.zeros(0, 8)]))
beyond("dynamic_quant-lstm-text_classifier", lambda: Case(
    _dynamic(TextClassifier()), _tokens(2, 7)))
beyond("dynamic_quant-lstm-bidirectional", lambda: Case(
    _dynamic(RNNModule(torch.nn.LSTM(4, 8, num_layers=2, batch_first=True, bidirectional=True),
                       last=True)), _seq(2, 5, 4)))


# Quantized models with a float NCHW input (the reference refuses its
# QUANTIZE: "prefer NHWC quantized tensors"), and FX graph-mode quantized
# models (quantize_per_tensor's scale and zero point are tensor attributes,
# which the reference refuses too), in NCHW and NHWC. The outputs are float
# (dequantized), so the runtime must match eager exactly (1e-5).
class QuantNet(torch.nn.Module):
    """conv+relu, depthwise, add, max pool, cat, average pool, linear."""

    def __init__(self, fx=False):
        super().__init__()
        self.fx = fx
        self.quant = torch.quantization.QuantStub()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.relu = torch.nn.ReLU()
        self.dw = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8)
        self.pw = torch.nn.Conv2d(8, 8, 1)
        self.add = torch.nn.quantized.FloatFunctional()
        self.cat = torch.nn.quantized.FloatFunctional()
        self.pool = torch.nn.MaxPool2d(2)
        self.avg = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(16, 5)
        self.dequant = torch.quantization.DeQuantStub()

    def forward(self, x):
        if not self.fx:
            x = self.quant(x)
        y = self.dw(self.relu(self.conv(x)))
        y = self.add.add(y, self.pw(y))
        y = self.cat.cat([y, self.pool(self.relu(self.conv(x)))], 1)
        y = self.fc(torch.flatten(self.avg(y), 1))
        return y if self.fx else self.dequant(y)


class FxBlocks(torch.nn.Module):
    """What FX-quantized torchvision models emit: conv-bn-relu6 (hardtanh),
    hardswish, a squeeze-excitation block (hardsigmoid, mul), add, linear.
    The ReLU6 input is made contiguous: PyTorch 1.13's QNNPACK quantized
    hardtanh of a channels-last tensor (a quantized conv's output) returns
    misordered values, so eager would be no oracle without it (not in place:
    remove_mutation cannot rewrite an in-place op on contiguous's alias)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.relu6 = torch.nn.ReLU6()
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.hs = torch.nn.Hardswish()
        self.fc1 = torch.nn.Conv2d(8, 4, 1)
        self.fc2 = torch.nn.Conv2d(4, 8, 1)
        self.hsig = torch.nn.Hardsigmoid()
        self.avg = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        y = self.relu6(self.bn(self.conv(x)).contiguous())
        z = self.hs(self.conv2(y))
        s = self.hsig(self.fc2(torch.relu(self.fc1(self.avg(z)))))
        y = y + z * s
        return self.fc(torch.flatten(self.avg(y), 1))


def _calibration(shape):
    return [torch.randn(shape) * 2 for _ in range(4)]


def _eager_quantized(model, shape, qconfig="qnnpack", fuse=(["conv", "relu"],)):
    model.eval()
    if fuse:
        torch.quantization.fuse_modules(model, list(fuse), inplace=True)
    model.qconfig = torch.quantization.get_default_qconfig(qconfig)
    model = torch.quantization.prepare(model)
    for x in _calibration(shape):
        model(x)
    return torch.quantization.convert(model)


def _fx_quantized(model, shape):
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx
    qmap = torch.ao.quantization.get_default_qconfig_mapping("qnnpack")
    model = prepare_fx(model.eval(), qmap, (torch.randn(shape),))
    for x in _calibration(shape):
        model(x)
    return convert_fx(model)


beyond("quant-input-nchw", lambda: Case(
    _eager_quantized(QuantNet(), (2, 3, 8, 8)), torch.randn(2, 3, 8, 8) * 2))
beyond("quant-input-nchw-flex", lambda: Case(
    _eager_quantized(QuantNet(), (2, 3, 8, 8)), torch.randn(2, 3, 8, 8) * 2,
    convert_args=[torch.zeros(0, 3, 8, 8)]))
for _layout in ("nchw", "nhwc"):
    beyond(f"quant-fx-{_layout}", lambda lay=_layout: Case(
        _fx_quantized(QuantNet(fx=True), (2, 3, 8, 8)),
        (nhwc if lay == "nhwc" else lambda t: t)(torch.randn(2, 3, 8, 8) * 2)))
    beyond(f"quant-fx-blocks-{_layout}", lambda lay=_layout: Case(
        _fx_quantized(FxBlocks(), (2, 3, 8, 8)),
        (nhwc if lay == "nhwc" else lambda t: t)(torch.randn(2, 3, 8, 8) * 2)))
# Per-channel quantized weights (fbgemm's default qconfig: qint8 weights with
# one scale per output channel, activations in 0..127): conv+relu, depthwise,
# pointwise conv and linear, each DEQUANTIZE, the float operation, QUANTIZE
# (docs/quantization.md). The reference refuses them.
for _layout in ("nchw", "nhwc", "flex"):
    beyond(f"quant-perchannel-{_layout}", lambda lay=_layout: Case(
        _eager_quantized(QuantNet(), (2, 3, 8, 8), "fbgemm"),
        (nhwc if lay == "nhwc" else lambda t: t)(torch.randn(2, 3, 8, 8) * 2),
        convert_args=[torch.zeros(0, 3, 8, 8)] if lay == "flex" else None))



class QuantLinear4d(torch.nn.Module):
    """A quantized Linear over the last dim of a 4-D tensor: quantized::linear
    of rank 4 (RESHAPE, FULLY_CONNECTED, RESHAPE), which the reference refuses."""

    def __init__(self):
        super().__init__()
        self.quant = torch.quantization.QuantStub()
        self.fc = torch.nn.Linear(8, 5)
        self.dequant = torch.quantization.DeQuantStub()

    def forward(self, x):
        return self.dequant(self.fc(self.quant(x)))


for _qconfig, _label in (("qnnpack", "per-tensor"), ("fbgemm", "perchannel")):
    beyond(f"qlinear-rank4-{_label}-nhwc", lambda q=_qconfig: Case(
        _eager_quantized(QuantLinear4d(), (2, 3, 5, 8), q, fuse=()), nhwc(torch.randn(2, 3, 5, 8) * 2)))

class QuantConv1dNet(torch.nn.Module):
    """Quantized Conv1d + ReLU (quantized::conv1d_relu) and a depthwise Conv1d
    (quantized::conv1d), as in quantized audio and speech encoders."""

    def __init__(self):
        super().__init__()
        self.quant = torch.quantization.QuantStub()
        self.conv = torch.nn.Conv1d(4, 8, 3, padding=1)
        self.relu = torch.nn.ReLU()
        self.dw = torch.nn.Conv1d(8, 8, 5, stride=2, padding=2, groups=8)
        self.dequant = torch.quantization.DeQuantStub()

    def forward(self, x):
        return self.dequant(self.dw(self.relu(self.conv(self.quant(x)))))


for _qconfig, _label in (("qnnpack", "per-tensor"), ("fbgemm", "perchannel")):
    beyond(f"qconv1d-{_label}", lambda q=_qconfig: Case(
        _eager_quantized(QuantConv1dNet(), (2, 4, 12), q), torch.randn(2, 4, 12) * 2))
    beyond(f"qconv1d-{_label}-flex", lambda q=_qconfig: Case(
        _eager_quantized(QuantConv1dNet(), (2, 4, 12), q), torch.randn(2, 4, 12) * 2,
        convert_args=[torch.zeros(0, 4, 12)]))


def _per_channel_weight(shape, axis=0):
    torch.manual_seed(31)
    w = torch.randn(shape) * torch.linspace(0.05, 2.0, shape[axis]).view(
        [-1 if d == axis else 1 for d in range(len(shape))])
    scales = w.abs().amax(dim=[d for d in range(len(shape)) if d != axis]) / 127
    return torch.quantize_per_channel(w, scales.double(), torch.zeros(shape[axis], dtype=torch.long),
                                      axis, torch.qint8)


def _qconv_per_channel(groups, kind):
    conv = torch.nn.quantized.Conv2d(8, 8, 3, padding=1, groups=groups)
    conv.set_weight_bias(_per_channel_weight((8, 8 // groups, 3, 3)), torch.randn(8))
    conv.scale, conv.zero_point = 0.2, 120
    inp = qpt(torch.randn(2, 8, 6, 5), 1.0 / 16, 128)
    return Case(conv, nhwc(inp) if kind == "nhwc" else inp)


def _qlinear_per_channel():
    mod = torch.nn.quantized.Linear(32, 16)
    mod.set_weight_bias(_per_channel_weight((16, 32)), torch.randn(16))
    mod.scale, mod.zero_point = 0.3, 125
    return Case(mod, qpt(torch.randn(2, 32), 0.05, 130, torch.quint8))


for _kind in ("nchw", "nhwc"):
    beyond(f"qconv-perchannel-{_kind}", lambda k=_kind: _qconv_per_channel(1, k))
    beyond(f"qconv-perchannel-depthwise-{_kind}", lambda k=_kind: _qconv_per_channel(8, k))
beyond("qlinear-perchannel", _qlinear_per_channel)


# ------------------------------------------- lowering bugs (issue 19, part 3)
# YOLOv5's Detect head for one level, in inference (the cat form of
# models/yolo.py): a 1x1 conv to na * (nc + 5) channels, view (bs, na, no, ny,
# nx), permute to (bs, na, ny, nx, no), sigmoid, xy = (y[..., 0:2] * 2 - 0.5 +
# grid) * stride, wh = (y[..., 2:4] * 2) ** 2 * anchor_grid, cat with the
# rest, view (bs, -1, no). Every tensor between the view and the last view
# has rank 5, which no NNAPI operation takes: the dims are merged.
class YoloDetectModule(torch.nn.Module):
    def __init__(self, ch=8, nc=80, ny=16, nx=16, stride=8.0):
        super().__init__()
        self.na, self.no, self.ny, self.nx, self.stride = 3, nc + 5, ny, nx, stride
        self.m = torch.nn.Conv2d(ch, self.na * self.no, 1)
        yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
        self.register_buffer(
            "grid", torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2).float())
        # YOLOv5s's P3/8 anchors in pixels
        anchors = torch.tensor([[10.0, 13.0], [16.0, 30.0], [33.0, 23.0]])
        self.register_buffer("anchor_grid", anchors.view(1, self.na, 1, 1, 2))

    def forward(self, x):
        bs = x.shape[0]
        x = self.m(x).view(bs, self.na, self.no, self.ny, self.nx)
        y = x.permute(0, 1, 3, 4, 2).contiguous().sigmoid()
        xy = (y[..., 0:2] * 2 - 0.5 + self.grid) * self.stride
        wh = (y[..., 2:4] * 2) ** 2 * self.anchor_grid
        return torch.cat((xy, wh, y[..., 4:]), -1).view(bs, -1, self.no)


beyond("yolo-detect", lambda: Case(YoloDetectModule(), torch.randn(1, 8, 16, 16)))
beyond("yolo-detect-nhwc", lambda: Case(YoloDetectModule(), nhwc(torch.randn(1, 8, 16, 16))))
# With a flexible batch (issue 20) the rank-5 views, slices, pow and cat
# carry the load-time batch as dim 0 of rank <= 4 operands
# (src/lower/rank_reduce.cpp); at batch 2 and 3.
for _b in (2, 3):
    beyond(f"yolo-detect-flex-batch-{_b}", lambda b=_b: Case(
        YoloDetectModule(), torch.randn(b, 8, 16, 16), convert_args=[torch.zeros(0, 8, 16, 16)]))


# Slicing NHWC data (STRIDED_SLICE's vectors are per NNAPI axis): GhostNet's
# GhostModule cuts the cat of its primary and cheap features to oup channels,
# NAFNet crops its padded image back to H x W.
class GhostSliceModule(torch.nn.Module):
    def __init__(self, inp=16, oup=15):
        super().__init__()
        init = (oup + 1) // 2
        self.oup = oup
        self.primary = torch.nn.Sequential(torch.nn.Conv2d(inp, init, 1), torch.nn.ReLU())
        self.cheap = torch.nn.Sequential(
            torch.nn.Conv2d(init, init, 3, padding=1, groups=init), torch.nn.ReLU())

    def forward(self, x):
        x1 = self.primary(x)
        out = torch.cat([x1, self.cheap(x1)], dim=1)
        return out[:, :self.oup, :, :]


class CropModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x):
        h, w = x.shape[2], x.shape[3]
        y = self.conv(torch.nn.functional.pad(x, (0, 3, 0, 2)))
        return y[:, :, :h, :w]


for _kind in ["float", "float-nhwc"]:
    beyond(f"ghost-slice-{_kind}", lambda k=_kind: Case(
        GhostSliceModule(), float_and_quant_and_nhwc(torch.randn(1, 16, 12, 12))[k]))
    beyond(f"crop-{_kind}", lambda k=_kind: Case(
        CropModule(), float_and_quant_and_nhwc(torch.randn(2, 4, 9, 7))[k]))
beyond("ghost-slice-flex-batch-nhwc", lambda: Case(
    GhostSliceModule(), nhwc(torch.randn(2, 16, 12, 12)),
    convert_args=[nhwc(torch.zeros(0, 16, 12, 12))]))
beyond("crop-flex-batch-nhwc", lambda: Case(
    CropModule(), nhwc(torch.randn(2, 4, 9, 7)), convert_args=[nhwc(torch.zeros(0, 4, 9, 7))]))


# Every lowering that takes a dim argument, on NHWC data (NNAPI axis a holds
# PyTorch dim (0, 2, 3, 1)[a]), with dims given positive and negative. Each
# result is returned as it comes (an NHWC one is permuted back by the module).
def _dims_slice(x):
    s = torch.ops.aten.slice
    return x[:, 1:3], x[:, :, 1:], s(x, -1, 1, 4, 2), s(x, -3, 0, 2, 1), s(x, -2, -3, None, 1)


def _dims_narrow(x):
    return x.narrow(1, 1, 2), x.narrow(-1, 2, 3), x.narrow(-2, 0, 1), x.narrow(-3, 1, 1)


def _dims_select(x):
    return x.select(1, 1), x.select(-1, 0), x.select(-2, -1), x.select(2, 1)


def _dims_cat(x):
    return torch.cat([x, x], 1), torch.cat([x, x], -1), torch.cat([x, x], -2), \
        torch.cat([x, x], -3), torch.cat([x, x], 3)


def _dims_chunk(x):
    return x.chunk(2, 1) + x.chunk(2, -1) + x.chunk(2, -2) + x.chunk(3, -3)


def _dims_split(x):
    return x.split(2, 1) + x.split(2, -1) + x.split([1, 3], -2) + x.split([1, 2], -3)


def _dims_softmax(x):
    f = torch.nn.functional
    return f.softmax(x, 1), f.softmax(x, -1), f.log_softmax(x, -2), f.log_softmax(x, 2)


def _dims_reduce(x):
    return x.mean(-1, keepdim=True), x.sum(1, keepdim=True), x.mean([-2, -1]), \
        x.sum([2, -1], keepdim=True), x.mean([-3], keepdim=True)


def _dims_unsqueeze(x):
    return x.select(1, 0).unsqueeze(1), x.select(-1, 1).unsqueeze(-1), \
        x.select(2, 0).unsqueeze(-3)


def _dims_squeeze(x):
    return x[:, :1].squeeze(1), x[..., :1].squeeze(-1), x[:, :, 1:2].squeeze(-2)


def _dims_flatten(x):
    return x.flatten(1), x.flatten(-2), x.flatten(1, -2), x.flatten(-3, 2)


def _dims_transpose(x):
    return x.transpose(1, -1), x.transpose(-2, -1), x.transpose(2, 1), x.permute(0, -1, 1, -2)


def _dims_roll(x):
    return x.roll(1, 1), x.roll(-2, -1), x.roll((1, 2), (-2, 3))


_DIM_KINDS = {"slice": _dims_slice, "narrow": _dims_narrow, "select": _dims_select,
              "cat": _dims_cat, "chunk": _dims_chunk, "split": _dims_split,
              "softmax": _dims_softmax, "reduce": _dims_reduce, "unsqueeze": _dims_unsqueeze,
              "squeeze": _dims_squeeze, "flatten": _dims_flatten,
              "transpose": _dims_transpose, "roll": _dims_roll}
# The layout kinds take quantized tensors too.
_DIM_QUANT = ["slice", "narrow", "select", "cat", "chunk", "split", "transpose"]


class DimsModule(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def forward(self, x):
        return _DIM_KINDS[self.kind](x)


for _name in _DIM_KINDS:
    beyond(f"dims-{_name}-float-nhwc", lambda n=_name: Case(
        DimsModule(n), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5))["float-nhwc"]))
for _name in _DIM_QUANT:
    beyond(f"dims-{_name}-quant-nhwc", lambda n=_name: Case(
        DimsModule(n), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5))["quant-nhwc"]))
beyond("dims-slice-flex-batch-nhwc", lambda: Case(
    DimsModule("slice"), nhwc(torch.randn(2, 3, 4, 5)),
    convert_args=[nhwc(torch.zeros(0, 3, 4, 5))]))


# 0-dim results: NNAPI has no rank-0 tensors (its MEAN, REDUCE_SUM and SQUEEZE
# of every dim give shape [1]); the converted module returns them 0-dim.
class Rank0Module(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def forward(self, x):
        if self.kind == "mean-1d":
            return x.mean(-1)
        if self.kind == "sum-1d":
            return x.sum(-1)
        if self.kind == "select-1d":
            return torch.relu(x).select(0, -2)
        if self.kind == "mean-4d":
            return x.mean([0, 1, 2, 3])
        if self.kind == "sum-4d":
            return (x * 2).sum([-4, -3, -2, -1]), x.mean([0, 1, 2, 3], keepdim=True)
        if self.kind == "squeeze":
            return (x * 2).squeeze()
        # a 0-dim intermediate feeding an ADD and a MUL; then unsqueeze of one
        m = x.mean([0, 1])
        return x - m, (m * 3).unsqueeze(0), m * 2


for _k, _shape in [("mean-1d", (7,)), ("sum-1d", (7,)), ("select-1d", (5,)),
                   ("mean-4d", (2, 3, 4, 5)), ("sum-4d", (2, 3, 4, 5)),
                   ("squeeze", (1, 1, 1, 1)), ("feed", (3, 4))]:
    beyond(f"rank0-{_k}", lambda k=_k, sh=_shape: Case(Rank0Module(k), torch.randn(*sh)))
beyond("rank0-mean-4d-nhwc", lambda: Case(Rank0Module("mean-4d"), nhwc(torch.randn(2, 3, 4, 5))))
beyond("rank0-sum-4d-flex-batch", lambda: Case(
    Rank0Module("sum-4d"), torch.randn(2, 3, 4, 5), convert_args=[torch.zeros(0, 3, 4, 5)]))
beyond("rank0-mean-4d-quant", lambda: Case(
    Rank0Module("mean-4d"), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5))["quant"]))


# 0-dim constants: baddbmm's bias and masked_fill's mask (NNAPI has no rank-0
# tensor operands; a 0-dim constant is an operand of shape [1]).
class Baddbmm0dModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("bias", torch.tensor(0.5))

    def forward(self, a, b):
        return torch.baddbmm(self.bias, a, b)


class MaskedFill0dModule(torch.nn.Module):
    def __init__(self, fill):
        super().__init__()
        self.fill = fill
        self.register_buffer("mask", torch.tensor(True))

    def forward(self, x):
        # The mask (True) fills every element, so the fill alone would be a
        # constant output, and -inf one no numeric rule compares: exp(fill) + x
        # shows the fill (exp(-1.5) = 0.22, exp(-inf) = 0; NaN, +inf or another
        # fill would show) in an output that varies with x.
        return torch.exp(torch.relu(x).masked_fill(self.mask, self.fill)) + x


beyond("baddbmm-0d-bias", lambda: Case(
    Baddbmm0dModule(), [torch.randn(2, 3, 4), torch.randn(2, 4, 5)]))
beyond("masked_fill-0d-mask", lambda: Case(MaskedFill0dModule(-1.5), torch.randn(2, 3)))
beyond("masked_fill-0d-mask-inf", lambda: Case(
    MaskedFill0dModule(float("-inf")), torch.randn(2, 3)))


class MaskedFillTwice(torch.nn.Module):
    """-inf where m1, then 0.5 where m2 (overlapping): PyTorch fills 0.5 over
    the -inf; x * (1 - m2) + 0.5 * m2 would give NaN there (-inf * 0).
    exp() keeps the output finite."""

    def forward(self, x, m1, m2):
        y = x.masked_fill(m1, float("-inf")).masked_fill(m2.unsqueeze(1), 0.5)
        return torch.exp(y)


class MaskedFillInt(torch.nn.Module):
    def forward(self, x, m):
        return x.masked_fill(m, -7)


beyond("masked_fill-select-over-inf", lambda: Case(
    MaskedFillTwice(), [torch.randn(2, 3, 4), torch.randn(2, 3, 4) > 0, torch.randn(2, 4) > 0]))
beyond("masked_fill-select-int32", lambda: Case(
    MaskedFillInt(), [torch.randint(-100, 100, (3, 5), dtype=torch.int32), torch.randn(3, 5) > 0]))
# masked_fill of a quint8 tensor (eager's quantized kernel fills the value
# quantized with x's scale and zero point): refused naming masked_fill, the
# node the user wrote (it is lowered through where's SELECT), and what to do.
refuse("masked_fill-quint8", lambda: Case(
    MaskedFillInt(), [qpt(torch.randn(2, 3, 5, 7), 0.03, 128), torch.randn(2, 3, 5, 7) > 0]),
    r"node aten::masked_fill .*: masked_fill of a TENSOR_QUANT8_ASYMM tensor is not supported "
    r"\(float32 and integer tensors are\): dequantize it before the masked_fill")


# dtype arguments: NNAPI computes in the input's dtype, so a float64 one would
# silently come back float32; float32 is what NNAPI computes and converts.
class DtypeModule(torch.nn.Module):
    def __init__(self, kind, dtype):
        super().__init__()
        self.kind, self.dtype = kind, dtype
        self.register_buffer("like", torch.zeros(1, dtype=dtype))

    def forward(self, x):
        f = torch.nn.functional
        if self.kind == "softmax":
            return f.softmax(x, 1, dtype=self.dtype)
        if self.kind == "log_softmax":
            return f.log_softmax(x, -1, dtype=self.dtype)
        if self.kind == "sum":
            return x.sum(1, dtype=self.dtype)
        if self.kind == "mean":
            return x.mean([1], dtype=self.dtype)
        if self.kind == "to":
            return torch.relu(x).to(self.dtype)
        return torch.relu(x).type_as(self.like)


_DTYPE_KINDS = ["softmax", "log_softmax", "sum", "mean", "to", "type_as"]
for _k in _DTYPE_KINDS:
    refuse(f"dtype-{_k}-float64", lambda k=_k: Case(
        DtypeModule(k, torch.float64), torch.randn(2, 5)),
        r"(dtype=Double|changes the dtype to Double|is Double in the model)")
    beyond(f"dtype-{_k}-float32", lambda k=_k: Case(
        DtypeModule(k, torch.float32), torch.randn(2, 5)))


# Nearest upsampling by a scale factor: PyTorch reads input row floor(i / s)
# (UpSample.h: nearest_idx with compute_scales_value = 1 / s), NNAPI's
# RESIZE_NEAREST_NEIGHBOR floor(i * in / out); for 1.7 and 0.6 they differ,
# and the rows and columns are gathered instead. An output size maps alike.
class NearestModule(torch.nn.Module):
    def __init__(self, scale=None, size=None):
        super().__init__()
        self.scale, self.size = scale, size

    def forward(self, x):
        return torch.nn.functional.interpolate(
            x, size=self.size, scale_factor=self.scale, mode="nearest")


for _s in (1.7, 0.6, (1.5, 2.3)):
    _n = "x".join(str(v) for v in _s) if isinstance(_s, tuple) else str(_s)
    for _kind in KINDS:
        beyond(f"upsample_nearest-{_n}-{_kind}", lambda s=_s, k=_kind: Case(
            NearestModule(s), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 4))[k]))
beyond("upsample_nearest-1.7-flex-batch", lambda: Case(
    NearestModule(1.7), torch.randn(2, 3, 4, 4), convert_args=[torch.zeros(0, 3, 4, 4)]))
beyond("upsample_nearest-size-7x3", lambda: Case(
    NearestModule(size=(7, 3)), torch.randn(2, 3, 4, 4)))
refuse("upsample_nearest-1.7-flex-hw", lambda: Case(
    NearestModule(1.7), torch.randn(1, 3, 4, 4), convert_args=[torch.zeros(1, 3, 0, 0)]),
    "over a flexible height or width")


# Bilinear by a scale factor that gives whole sizes (1.5 on 4 is 6): PyTorch
# maps by 1 / 1.5, NNAPI by 4 / 6, the same.
class BilinearScaleModule(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.interpolate(
            x, scale_factor=1.5, mode="bilinear", align_corners=False)


beyond("upsample_bilinear-1.5", lambda: Case(BilinearScaleModule(), torch.randn(2, 3, 4, 6)))
beyond("upsample_bilinear-1.5-api30", lambda: Case(
    BilinearScaleModule(), torch.randn(2, 3, 4, 6), options=["--min-android-api", "30"]))

# --------------------------------------- issue 20: everyday node kinds
class ConformerConv(torch.nn.Module):
    """A Conformer block's convolution module on (B, T, C): LayerNorm,
    pointwise Conv1d, GLU over channels, depthwise Conv1d with padding='same'
    (an even kernel: ATen pads the odd element on the right), BatchNorm, SiLU,
    pointwise Conv1d, residual; then a feed-forward half with mish and a
    softplus gate."""

    def __init__(self, c=8, k=4):
        super().__init__()
        self.norm = torch.nn.LayerNorm(c)
        self.pw1 = torch.nn.Conv1d(c, 2 * c, 1)
        self.dw = torch.nn.Conv1d(c, c, k, padding="same", groups=c)
        self.bn = torch.nn.BatchNorm1d(c)
        self.pw2 = torch.nn.Conv1d(c, c, 1)
        self.ff = torch.nn.Linear(c, c)

    def forward(self, x):
        y = self.norm(x).transpose(1, 2)
        y = torch.nn.functional.glu(self.pw1(y), dim=1)
        y = torch.nn.functional.silu(self.bn(self.dw(y)))
        x = x + self.pw2(y).transpose(1, 2)
        return x + torch.nn.functional.mish(self.ff(x)) * torch.nn.functional.softplus(x, beta=2.0)


class RestorationCrop(torch.nn.Module):
    """A restoration net's decoder step: a transposed convolution with
    output_padding upsamples, the encoder's skip is cropped by negative
    padding to its size, both are concatenated; ELU and a clamp to [0, 1]."""

    def __init__(self):
        super().__init__()
        self.enc = torch.nn.Conv2d(3, 6, 3, stride=2)
        self.up = torch.nn.ConvTranspose2d(6, 4, 3, stride=2, output_padding=1)
        self.skip = torch.nn.Conv2d(3, 4, 3, padding=2)
        self.out = torch.nn.Conv2d(8, 3, 3, padding="same")

    def forward(self, x):
        s = self.skip(x)
        u = torch.nn.functional.elu(self.up(self.enc(x)))
        s = torch.nn.functional.pad(s, (-1, 0, 0, -1))
        return torch.clamp(self.out(torch.cat([u, s], 1)), 0.0, 1.0)


class PositionalTable(torch.nn.Module):
    """A small transformer input: token features plus a learned positional
    embedding read at arange(sequence length) (folded to a constant), and a
    feed-forward with erf-based gelu parts and a cumulative sum over time."""

    def __init__(self, t=12, c=8):
        super().__init__()
        self.pos = torch.nn.Embedding(t, c)
        self.fc = torch.nn.Linear(c, c)

    def forward(self, x):
        x = x + self.pos(torch.arange(x.size(1)))
        y = self.fc(x)
        return torch.cumsum(y * 0.5 * (1.0 + torch.erf(y / 1.4142135)), dim=1) + x.flip(1)


beyond("everyday-conformer-conv", lambda: Case(ConformerConv().eval(), torch.randn(2, 10, 8)))
beyond("everyday-conformer-conv-flex", lambda: Case(
    ConformerConv().eval(), torch.randn(3, 10, 8), convert_args=[torch.zeros(0, 10, 8)]))
beyond("everyday-restoration-crop", lambda: Case(RestorationCrop().eval(), torch.randn(1, 3, 13, 13)))
beyond("everyday-restoration-crop-nhwc", lambda: Case(
    RestorationCrop().eval(), nhwc(torch.randn(1, 3, 13, 13))))
beyond("everyday-positional-table", lambda: Case(PositionalTable().eval(), torch.randn(2, 7, 8)))
beyond("everyday-positional-table-flex", lambda: Case(
    PositionalTable().eval(), torch.randn(3, 7, 8), convert_args=[torch.zeros(0, 7, 8)]))

# ------------------------------------------------------------------ video
# Issue 20: 3-D convolutions and pools as NNAPI 2-D operations over the
# video's frames (src/lower/video.cpp), each without and with --nhwc (the
# frames NCHW or NHWC in NNAPI; the 5-D input itself is contiguous either
# way).
class _Video(torch.nn.Module):
    def __init__(self, *layers):
        super().__init__()
        self.body = torch.nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


class _R21dBlock(torch.nn.Module):
    """R(2+1)D's residual block: a (1, 3, 3) then a (3, 1, 1) convolution
    with batch norm (folded when frozen) and ReLU, plus the input."""

    def __init__(self, c):
        super().__init__()
        self.spatial = torch.nn.Sequential(torch.nn.Conv3d(c, c, (1, 3, 3), padding=(0, 1, 1), bias=False),
                                           torch.nn.BatchNorm3d(c), torch.nn.ReLU(inplace=True))
        self.temporal = torch.nn.Sequential(torch.nn.Conv3d(c, c, (3, 1, 1), padding=(1, 0, 0), bias=False),
                                            torch.nn.BatchNorm3d(c))

    def forward(self, x):
        return torch.relu(self.temporal(self.spatial(x)) + x)


def _video_bn(c):
    bn = torch.nn.BatchNorm3d(c)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
    return bn.eval()


_VIDEO_CASES = {
    "conv3d-k3p1": (lambda: _Video(torch.nn.Conv3d(3, 8, 3, padding=1), torch.nn.ReLU()), (1, 3, 5, 8, 8)),
    "conv3d-s2-batch2": (lambda: _Video(torch.nn.Conv3d(3, 6, 3, stride=2, padding=1)), (2, 3, 6, 9, 9)),
    "conv3d-dilated": (lambda: _Video(torch.nn.Conv3d(4, 5, (2, 3, 3), dilation=(2, 1, 2), padding=(1, 0, 2))),
                       (1, 4, 7, 9, 9)),
    "conv3d-grouped": (lambda: _Video(torch.nn.Conv3d(4, 6, (2, 3, 3), groups=2, stride=(1, 2, 1))),
                       (1, 4, 5, 7, 6)),
    "conv3d-depthwise": (lambda: _Video(torch.nn.Conv3d(4, 8, (3, 1, 1), groups=4, bias=False)),
                         (2, 4, 5, 6, 6)),
    "conv3d-same": (lambda: _Video(torch.nn.Conv3d(3, 5, (4, 3, 2), padding="same")), (1, 3, 6, 7, 7)),
    "conv3d-valid": (lambda: _Video(torch.nn.Conv3d(3, 4, (2, 2, 3), padding="valid")), (1, 3, 4, 6, 7)),
    "r21d-block": (lambda: _Video(torch.nn.Conv3d(3, 8, (1, 3, 3), padding=(0, 1, 1)), _R21dBlock(8)),
                   (1, 3, 4, 8, 8)),
    "max_pool3d-k3s2p1": (lambda: _Video(torch.nn.MaxPool3d(3, stride=2, padding=1)), (2, 3, 7, 9, 9)),
    # Single-pixel windows over time: the time padding must never win the max.
    "max_pool3d-time-pad": (lambda: _Video(torch.nn.MaxPool3d((3, 1, 1), stride=(2, 1, 1), padding=(1, 0, 0))),
                            (1, 3, 7, 4, 5)),
    "max_pool3d-ceil": (lambda: _Video(torch.nn.MaxPool3d((2, 3, 2), stride=2, ceil_mode=True)), (1, 3, 7, 9, 8)),
    "avg_pool3d-k3s2p1": (lambda: _Video(torch.nn.AvgPool3d(3, stride=2, padding=1)), (2, 3, 7, 9, 9)),
    "avg_pool3d-exclude-pad": (lambda: _Video(torch.nn.AvgPool3d(3, stride=2, padding=1, count_include_pad=False)),
                               (1, 3, 7, 9, 9)),
    "avg_pool3d-ceil": (lambda: _Video(torch.nn.AvgPool3d(2, stride=2, padding=1, ceil_mode=True)),
                        (1, 3, 7, 9, 8)),
    "avg_pool3d-divisor": (lambda: _Video(torch.nn.AvgPool3d(3, stride=2, padding=1, divisor_override=5)),
                           (1, 3, 7, 9, 9)),
    "adaptive_avg_pool3d-1": (lambda: _Video(torch.nn.AdaptiveAvgPool3d(1)), (2, 3, 7, 9, 9)),
    "adaptive_avg_pool3d-3x2x4": (lambda: _Video(torch.nn.AdaptiveAvgPool3d((3, 2, 4))), (2, 3, 7, 9, 8)),
    "pool3d-batch_norm3d": (lambda: _Video(torch.nn.MaxPool3d(2), _video_bn(3), torch.nn.ReLU()), (1, 3, 4, 6, 6)),
    "conv3d-head": (lambda: _Video(torch.nn.Conv3d(3, 4, 3), torch.nn.AdaptiveAvgPool3d(1), torch.nn.Flatten(),
                                   torch.nn.Linear(4, 5)), (1, 3, 4, 6, 6)),
}
for _name, (_make, _shape) in _VIDEO_CASES.items():
    for _suffix, _opts in (("", []), ("-nhwc", ["--nhwc"])):
        beyond(f"video-{_name}{_suffix}", lambda m=_make, s=_shape, o=_opts: Case(
            m().eval(), torch.randn(*s), options=o))
# A flexible batch (issue 20): the 5-D input reaches NNAPI as (N, C*T, H, W),
# the frames are (T*N, C, H, W) with T*N a load-time size, and what takes
# time steps reads them as (T, N*C, H, W) blocks. Each case at batch 3 (NCHW
# frames) and batch 2 (NHWC frames).
for _name, (_make, _shape) in _VIDEO_CASES.items():
    for _suffix, _opts, _b in (("", [], 3), ("-nhwc", ["--nhwc"], 2)):
        beyond(f"video-{_name}-flex-batch{_suffix}", lambda m=_make, s=_shape, o=_opts, b=_b: Case(
            m().eval(), torch.randn(b, *s[1:]), convert_args=[torch.zeros(0, *s[1:])], options=o))
refuse("video-conv_transpose3d", lambda: Case(
    _Video(torch.nn.ConvTranspose3d(3, 2, 3)), torch.randn(1, 3, 3, 4, 4)), r"3-D transposed convolution")


# Quantized video (issue 20): eager-mode quantized models (QuantStub, fused
# Conv3d+ReLU, FloatFunctional adds, DeQuantStub) of quantized::conv3d(_relu),
# quantized::add(_relu), relu, avg_pool3d and adaptive_avg_pool3d on quint8
# 5-D values, the weights per channel (fbgemm's qconfig) or per tensor
# (qnnpack's). QNNPACK has no quantized Conv3d unpacking (its packed params
# cannot be saved), so these are quantized and run in eager with the onednn
# engine (Debian's PyTorch has no fbgemm; onednn is its other x86 engine).
class _QVideo(torch.nn.Module):
    """quant, conv (+ relu), then `tail`: "pool" an AvgPool3d, "adaptive" an
    AdaptiveAvgPool3d((2, 1, 1)), "add" a second conv added to the first's
    output (FloatFunctional.add) and a ReLU, "add_relu" the same add by
    add_relu, "head" AdaptiveAvgPool3d(1), flatten and a quantized Linear,
    "bn" a BatchNorm3d (quantized::batch_norm3d) and "bn_relu" one with a
    ReLU (quantized::batch_norm3d_relu), each after a convolution without
    ReLU, which eager-mode fusion does not fold them into."""

    def __init__(self, conv, relu=True, tail=None):
        super().__init__()
        self.quant = torch.quantization.QuantStub()
        self.conv = conv
        self.relu = torch.nn.ReLU() if relu else torch.nn.Identity()
        self.tail = tail
        c = conv.out_channels
        if tail in ("add", "add_relu"):
            self.conv2 = torch.nn.Conv3d(c, c, (3, 1, 1), padding=(1, 0, 0))
            self.ff = torch.nn.quantized.FloatFunctional()
            self.relu2 = torch.nn.ReLU()
        elif tail == "pool":
            self.pool = torch.nn.AvgPool3d(3, stride=2, padding=1)
        elif tail == "adaptive":
            self.pool = torch.nn.AdaptiveAvgPool3d((2, 1, 1))
        elif tail == "head":
            self.pool = torch.nn.AdaptiveAvgPool3d(1)
            self.fc = torch.nn.Linear(c, 5)
        elif tail in ("bn", "bn_relu"):
            self.bn = _video_bn(c)
            self.relu2 = torch.nn.ReLU() if tail == "bn_relu" else torch.nn.Identity()
        self.dequant = torch.quantization.DeQuantStub()

    def forward(self, x):
        y = self.relu(self.conv(self.quant(x)))
        if self.tail == "add":
            y = self.relu2(self.ff.add(self.conv2(y), y))
        elif self.tail == "add_relu":
            y = self.ff.add_relu(self.conv2(y), y)
        elif self.tail in ("pool", "adaptive"):
            y = self.pool(y)
        elif self.tail == "head":
            y = self.fc(torch.flatten(self.pool(y), 1))
        elif self.tail in ("bn", "bn_relu"):
            y = self.relu2(self.bn(y))
        return self.dequant(y)


def _quantized_video(model, shape, qconfig):
    torch.backends.quantized.engine = "onednn"
    fuse = [["conv", "relu"]] if isinstance(model.relu, torch.nn.ReLU) else []
    if model.tail == "bn_relu":
        fuse.append(["bn", "relu2"])
    return _eager_quantized(model, shape, qconfig, fuse)


_QVIDEO_CASES = {
    "conv3d-k3p1": (lambda: _QVideo(torch.nn.Conv3d(3, 8, 3, padding=1), relu=False), (1, 3, 5, 8, 8)),
    "conv3d_relu-k3p1": (lambda: _QVideo(torch.nn.Conv3d(3, 8, 3, padding=1)), (1, 3, 5, 8, 8)),
    "conv3d_relu-s2": (lambda: _QVideo(torch.nn.Conv3d(3, 6, 3, stride=2, padding=1)), (2, 3, 6, 9, 9)),
    "add": (lambda: _QVideo(torch.nn.Conv3d(3, 6, (1, 3, 3), padding=(0, 1, 1)), tail="add"), (1, 3, 4, 6, 6)),
    "add_relu": (lambda: _QVideo(torch.nn.Conv3d(3, 6, (1, 3, 3), padding=(0, 1, 1)), tail="add_relu"),
                 (1, 3, 4, 6, 6)),
    # (no ReLU before the pools: their input's zero point is not 0)
    "avg_pool3d": (lambda: _QVideo(torch.nn.Conv3d(3, 4, 3, padding=1), relu=False, tail="pool"), (1, 3, 5, 7, 7)),
    "adaptive_avg_pool3d": (lambda: _QVideo(torch.nn.Conv3d(3, 4, 3, padding=1), relu=False, tail="adaptive"),
                            (2, 3, 5, 6, 6)),
    "bn": (lambda: _QVideo(torch.nn.Conv3d(3, 6, 3, padding=1), relu=False, tail="bn"), (1, 3, 4, 6, 6)),
    "bn_relu": (lambda: _QVideo(torch.nn.Conv3d(3, 6, 3, padding=1), relu=False, tail="bn_relu"),
                (1, 3, 4, 6, 6)),
    "head": (lambda: _QVideo(torch.nn.Conv3d(3, 8, 3, stride=(1, 2, 2), padding=1), tail="head"),
             (1, 3, 4, 8, 8)),
}
# "head" at a fixed batch only: eager's quantized adaptive_avg_pool3d of a
# channels-last tensor (what a quantized convolution returns) rounds a mean
# half way between two integers to even in its scalar lanes and upward in its
# vector lanes (30.5 gives 30 with 1 channel, 31 with 8 or 16), so no
# lowering matches every tie; the batch-3 input here has one (one quantum at
# the pool), which the quantized Linear after it makes 2 quanta of its output.
for _name, (_make, _shape) in _QVIDEO_CASES.items():
    for _qconfig, _label in (("fbgemm", "perchannel"), ("qnnpack", "pertensor")):
        for _suffix, _opts, _b in (("", [], None), ("-nhwc", ["--nhwc"], None),
                                   ("-flex-batch", [], 3), ("-flex-batch-nhwc", ["--nhwc"], 2)):
            if _name == "head" and _b:
                continue
            beyond(f"video-quant-{_name}-{_label}{_suffix}",
                   lambda m=_make, s=_shape, q=_qconfig, o=_opts, b=_b: Case(
                       _quantized_video(m(), s, q), torch.randn(b or s[0], *s[1:]) * 2,
                       convert_args=[torch.zeros(0, *s[1:])] if b else None, options=o,
                       engine="onednn"))



# ------------------------------------------------------------------ fuse
# --fuse-activations (issue 25): one case per fold nnapi-convert claims
# (README: a ReLU, ReLU6 or hardtanh(0, 6)/(-1, 1) that is the only use of a
# convolution, linear or add/sub/mul/div), float and quantized. The cases are
# ordinary models: where the reference converts them they are compared byte
# for byte unfused, and verify.test_nnapi_fused runs each with
# --fuse-activations on the host runtime against eager and checks `fold`:
# the fused conversion has one operation fewer per pair, and that many more
# operations of the pair's type carry the pair's NeuralNetworks.h fuse code.
# Weights are He-normal (model_zoo.realistic_init) and inputs are randn * 4,
# so every activation's bounds are crossed: values above 6 and below -1 occur
# before each activation, and a wrong fuse code changes the output.
def _fuse_case(module, args, fold, **kw):
    from model_zoo import realistic_init
    return Case(realistic_init(module), args, fold=fold, must_convert=True, **kw)


def _big(*shape):
    return torch.randn(*shape) * 4


class ActAfter(torch.nn.Module):
    """act(layer(x)): `act` is applied as the given callable."""

    def __init__(self, layer, act):
        super().__init__()
        self.layer, self.act = layer, act

    def forward(self, x):
        return self.act(self.layer(x))


class BinaryAct(torch.nn.Module):
    def __init__(self, op, act):
        super().__init__()
        self.op, self.act = op, act

    def forward(self, a, b):
        return self.act(self.op(a, b))


class TwoUses(torch.nn.Module):
    """The convolution's result is read twice: its ReLU must not fold."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 6, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        return torch.relu(y) + y


class RsubRelu6(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.relu6(2 - x)


class ConvChain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.b = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.c = torch.nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = torch.nn.functional.hardtanh(self.a(x), 0.0, 6.0)
        y = torch.nn.functional.hardtanh(self.b(y), -1.0, 1.0)
        return torch.relu(self.c(y) + x.mean(1, keepdim=True))


_RELU = torch.relu
_RELU6 = torch.nn.ReLU6()                                     # aten::hardtanh(x, 0, 6)
_RELU6_FN = torch.nn.functional.relu6                         # aten::relu6
_RELU1 = torch.nn.Hardtanh(-1.0, 1.0)                         # aten::hardtanh(x, -1, 1)
_FUSE_CASES = [  # name, module, args, fold; float, NCHW unless said
    ("conv-relu", lambda: ActAfter(torch.nn.Conv2d(4, 8, 3, padding=1), _RELU),
     lambda: _big(2, 4, 7, 7), [("CONV_2D", "RELU")]),
    ("conv-relu6-nhwc", lambda: ActAfter(torch.nn.Conv2d(4, 8, 3, stride=2), _RELU6),
     lambda: nhwc(_big(2, 4, 9, 9)), [("CONV_2D", "RELU6")]),
    ("conv-relu6-fn", lambda: ActAfter(torch.nn.Conv2d(4, 8, 3), _RELU6_FN),
     lambda: _big(2, 4, 7, 7), [("CONV_2D", "RELU6")]),
    ("conv-relu1", lambda: ActAfter(torch.nn.Conv2d(4, 8, 1), _RELU1),
     lambda: _big(2, 4, 5, 5), [("CONV_2D", "RELU1")]),
    ("conv-relu1-nhwc", lambda: ActAfter(torch.nn.Conv2d(4, 8, 3, padding=1), _RELU1),
     lambda: nhwc(_big(2, 4, 5, 5)), [("CONV_2D", "RELU1")]),
    ("depthwise-relu6", lambda: ActAfter(torch.nn.Conv2d(6, 6, 3, padding=1, groups=6), _RELU6),
     lambda: _big(2, 6, 7, 7), [("DEPTHWISE_CONV_2D", "RELU6")]),
    ("depthwise-relu1-nhwc", lambda: ActAfter(torch.nn.Conv2d(6, 12, 3, groups=6), _RELU1),
     lambda: nhwc(_big(2, 6, 7, 7)), [("DEPTHWISE_CONV_2D", "RELU1")]),
    ("conv_transpose-relu", lambda: ActAfter(torch.nn.ConvTranspose2d(4, 3, 3, stride=2), _RELU),
     lambda: _big(1, 4, 5, 5), [("TRANSPOSE_CONV_2D", "RELU")]),
    ("conv_transpose-relu6-nhwc",
     lambda: ActAfter(torch.nn.ConvTranspose2d(4, 3, 2, stride=2), _RELU6),
     lambda: nhwc(_big(1, 4, 5, 5)), [("TRANSPOSE_CONV_2D", "RELU6")]),
    ("conv1d-relu6", lambda: ActAfter(torch.nn.Conv1d(3, 6, 5, padding=2), _RELU6),
     lambda: _big(2, 3, 21), [("CONV_2D", "RELU6")]),
    ("linear-relu", lambda: ActAfter(torch.nn.Linear(16, 12), _RELU),
     lambda: _big(3, 16), [("FULLY_CONNECTED", "RELU")]),
    ("linear-relu6", lambda: ActAfter(torch.nn.Linear(16, 12), _RELU6),
     lambda: _big(3, 16), [("FULLY_CONNECTED", "RELU6")]),
    ("linear-relu1", lambda: ActAfter(torch.nn.Linear(16, 12), _RELU1),
     lambda: _big(3, 16), [("FULLY_CONNECTED", "RELU1")]),
    ("add-relu", lambda: BinaryAct(torch.add, _RELU),
     lambda: [_big(2, 3, 4, 5), _big(2, 3, 4, 5)], [("ADD", "RELU")]),
    ("add-relu6-nhwc", lambda: BinaryAct(torch.add, _RELU6),
     lambda: [nhwc(_big(2, 3, 4, 5)), nhwc(_big(2, 3, 4, 5))], [("ADD", "RELU6")]),
    ("sub-relu", lambda: BinaryAct(torch.sub, _RELU),
     lambda: [_big(2, 3, 4, 5), _big(2, 3, 4, 5)], [("SUB", "RELU")]),
    ("sub-relu1", lambda: BinaryAct(torch.sub, _RELU1),
     lambda: [_big(2, 3, 4, 5), _big(2, 3, 4, 5)], [("SUB", "RELU1")]),
    ("mul-relu", lambda: BinaryAct(torch.mul, _RELU),
     lambda: [_big(2, 3, 4, 5), _big(2, 3, 4, 5)], [("MUL", "RELU")]),
    ("mul-relu6", lambda: BinaryAct(torch.mul, _RELU6),
     lambda: [_big(2, 3, 4, 5), _big(2, 3, 4, 5)], [("MUL", "RELU6")]),
    ("div-relu", lambda: BinaryAct(torch.div, _RELU),
     lambda: [_big(2, 3, 4, 5), torch.rand(2, 3, 4, 5) + 0.25], [("DIV", "RELU")]),
    ("div-relu1", lambda: BinaryAct(torch.div, _RELU1),
     lambda: [_big(2, 3, 4, 5), torch.rand(2, 3, 4, 5) + 0.25], [("DIV", "RELU1")]),
    # 2 - x: aten::rsub, a SUB from a constant
    ("rsub-relu6", RsubRelu6, lambda: _big(2, 3, 4, 5), [("SUB", "RELU6")]),
    # Not folded: the producer's result has another use.
    ("conv-two-uses", TwoUses, lambda: _big(2, 4, 6, 6), []),
    # Three in a row: ReLU6 into a CONV_2D, RELU1 into a depthwise one and a
    # ReLU into the ADD after the last CONV_2D (whose own result feeds the ADD).
    ("chain-nhwc", ConvChain, lambda: nhwc(_big(2, 3, 6, 6)),
     [("CONV_2D", "RELU6"), ("DEPTHWISE_CONV_2D", "RELU1"), ("ADD", "RELU")]),
]
for _n, _m, _a, _f in _FUSE_CASES:
    case(f"fuse-{_n}", lambda m=_m, a=_a, f=_f: _fuse_case(m(), a(), f), source="fuse")


# Quantized: nnapi-convert folds nothing into quantized operations (the
# README's rule is about float ones; quantized::conv2d_relu and add_relu
# carry RELU themselves, pinned byte for byte by the reference), so
# --fuse-activations must leave these conversions as they are (fold []) and
# the activations computed.
class QuantActAfter(torch.nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.layer = layer
        self.relu = torch.nn.ReLU()
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x):
        return self.dequant(self.relu(self.layer(self.quant(x))))


class QuantAddRelu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.func = torch.nn.quantized.QFunctional()

    def forward(self, a, b):
        return torch.relu(self.func.add(a, b))


def _quant_fuse_case(module, shape, fuse_relu=False):
    from model_zoo import realistic_init
    model = realistic_init(module).eval()
    if fuse_relu:
        torch.quantization.fuse_modules(model, [["layer", "relu"]], inplace=True)
    model.qconfig = torch.quantization.get_default_qconfig("qnnpack")
    model = torch.quantization.prepare(model)
    for _ in range(3):
        model(_big(*shape))
    model = torch.quantization.convert(model)
    x = _big(*shape)
    return Case(model, nhwc(x) if len(shape) == 4 else x, fold=[], must_convert=True)


for _n, _m, _s, _fr in [
        ("conv-relu-nhwc", lambda: torch.nn.Conv2d(4, 8, 3, padding=1), (2, 4, 6, 6), False),
        ("conv_relu-nhwc", lambda: torch.nn.Conv2d(4, 8, 3, padding=1), (2, 4, 6, 6), True),
        ("linear-relu", lambda: torch.nn.Linear(16, 12), (3, 16), False)]:
    case(f"fuse-quant-{_n}", lambda m=_m, s=_s, fr=_fr: _quant_fuse_case(QuantActAfter(m()), s, fr),
         source="fuse")


def _quant_add_relu():
    x = [qpt(_big(2, 3, 4, 5), 0.0625, 128), qpt(_big(2, 3, 4, 5), 0.0625, 128)]
    m = QuantAddRelu()
    m.func.scale, m.func.zero_point = 0.125, 128
    return Case(m, [nhwc(t) for t in x], fold=[], must_convert=True)


case("fuse-quant-add-relu-nhwc", _quant_add_relu, source="fuse")


# ------------------------------------------------------------------ options
# The Python converter's options (issue 25): each case passes nnapi-convert's
# option (`options`, CLI syntax) and the reference the same request in its own
# words (`reference_kwargs`, by hand: NeuralNetworks.h's PREFER_LOW_POWER 0,
# PREFER_FAST_SINGLE_ANSWER 1). tests/reference compares the blob, the
# shape-compute lines, the output templates and the module's
# compilation_preference and relax_f32_to_f16 values with the reference's.
def _options_conv():
    return torch.nn.Conv2d(4, 8, 3)


def _int16_input(code, zero_point):
    """An int16 tensor carrying NNAPI QUANT16 values, as the reference wants
    it with use_int16_for_qint16 (TENSOR_QUANT16_ASYMM 12 or _SYMM 7)."""
    x = torch.randint(-300, 300, (2, 3, 4), dtype=torch.int16)
    x.nnapi_dtype, x.nnapi_scale, x.nnapi_zero_point = code, 0.5, zero_point
    return x


class BesideInt16(torch.nn.Module):
    """A float computation beside an int16 input it does not read: no NNAPI
    operation takes a TENSOR_QUANT16 operand the converters could feed it
    (NeuralNetworks.h: RESHAPE, CONCATENATION, ... take none; nnapi-convert's
    validator refuses such a model), so the input is only declared."""

    def forward(self, x, q):
        return torch.relu(x)


def _int16_case(code, zero_point, not_runnable=None):
    return Case(BesideInt16(), [torch.randn(2, 3), _int16_input(code, zero_point)],
                options=["--int16-for-qint16"], reference_kwargs=dict(use_int16_for_qint16=True),
                not_runnable=not_runnable)


# --preference and --relax-f32-to-f16 against the reference's
# compilation_preference and relax_f32_to_f16 arguments: the module's
# attributes compared (tests/reference: test_reference.cpp) and its blob byte
# for byte (deleted by 4ae164a, restored for issue 35).
case("opt-preference-low-power", lambda: Case(
    _options_conv(), torch.randn(2, 4, 6, 6), options=["--preference", "low-power"],
    reference_kwargs=dict(compilation_preference=0)), source="options")
case("opt-preference-fast-single-answer", lambda: Case(
    _options_conv(), nhwc(torch.randn(2, 4, 6, 6)),
    options=["--preference", "fast-single-answer"],
    reference_kwargs=dict(compilation_preference=1)), source="options")
case("opt-relax-f32-to-f16", lambda: Case(
    _options_conv(), torch.randn(2, 4, 6, 6), options=["--relax-f32-to-f16"],
    reference_kwargs=dict(relax_f32_to_f16=True)), source="options")
case("opt-int16-for-qint16-asymm", lambda: _int16_case(12, 3), source="options")
# PyTorch's NNAPI binding sets every int16 input as TENSOR_QUANT16_ASYMM
# (nnapi_bind.cpp's get_operand_type), which a QUANT16_SYMM operand refuses.
case("opt-int16-for-qint16-symm", lambda: _int16_case(
    7, 0, not_runnable="PyTorch's NNAPI binding sets an int16 input as TENSOR_QUANT16_ASYMM"),
    source="options")
# A flexible input: the output template takes the given shape, not the one
# computed from the run-time input.
case("opt-return-shape", lambda: Case(
    _options_conv(), torch.randn(2, 4, 6, 6), convert_args=[torch.zeros(0, 4, 0, 0)],
    options=["--return-shape", "2x8x4x4"], reference_kwargs=dict(return_shapes=[[2, 8, 4, 4]])),
    source="options")
case("opt-return-shape-nhwc", lambda: Case(
    _options_conv(), nhwc(torch.randn(2, 4, 6, 6)), convert_args=[nhwc(torch.zeros(0, 4, 0, 0))],
    options=["--return-shape", "2x8x4x4"], reference_kwargs=dict(return_shapes=[[2, 8, 4, 4]])),
    source="options")


# ------------------------------------------------------------- torchvision
TV_INPUT = (1, 3, 224, 224)


# The weights: tools/model_zoo.py's realistic_init (He-normal, random
# batch-norm statistics). With torchvision's own initialisation the
# activations of mobilenet_v2 and mnasnet0_5 fade to 1e-9 and googlenet's
# output is its fc bias, so a numeric check of them would pass an all-zero
# output. Byte-exactness does not depend on the weights.
def _tv_float(ctor_name, nhwc_input, fold, **kwargs):
    import torchvision
    from model_zoo import realistic_init
    torch.manual_seed(0)
    model = realistic_init(getattr(torchvision.models, ctor_name)(weights=None, **kwargs))
    model.eval()
    torch.manual_seed(1)
    x = torch.randn(TV_INPUT)
    return Case(model, nhwc(x) if nhwc_input else x, must_convert=True, fold=fold)


def _tv_quant(ctor_name):
    import torchvision.models.quantization as tvq
    torch.manual_seed(0)
    from model_zoo import realistic_init
    model = realistic_init(getattr(tvq, ctor_name)(weights=None, quantize=False))
    model.eval()
    model.fuse_model()
    model.qconfig = torch.quantization.get_default_qconfig('qnnpack')
    model = torch.quantization.prepare(model)
    for _ in range(2):
        model(torch.randn(TV_INPUT))
    model = torch.quantization.convert(model)
    model.eval()
    torch.manual_seed(1)
    x = torch.randn(TV_INPUT)
    # Quantized operations take no fused activation from --fuse-activations
    # (quantized::conv2d_relu and add_relu carry theirs already).
    return Case(model, nhwc(x), must_convert=True, fold=[])


# What --fuse-activations folds in each, counted from torchvision's model
# definitions (every ReLU/ReLU6 there follows a convolution, whose batch norm
# freezing folds, or a residual ADD, and is its only use):
#   mobilenet_v2: ReLU6 after the stem conv, the 17 depthwise convs, the 16
#     expand 1x1 convs (every block but the first) and the last 1x1 conv:
#     18 CONV_2D + 17 DEPTHWISE_CONV_2D (README: 100 operations -> 65);
#   resnet18: ReLU after the stem conv and each block's first conv (9
#     CONV_2D) and after each block's residual ADD (8);
#   squeezenet1_1: ReLU after the stem conv, the squeeze, expand1x1 and
#     expand3x3 convs of its 8 Fire modules and the classifier conv: 26 CONV_2D;
#   mnasnet0_5: ReLU after the stem conv, its depthwise conv, the expand 1x1
#     and depthwise convs of its 16 inverted residuals and the last 1x1 conv:
#     18 CONV_2D + 17 DEPTHWISE_CONV_2D;
#   googlenet: one ReLU per BasicConv2d, 3 in the stem and 6 in each of the
#     9 Inception blocks: 57 CONV_2D.
def _folds(**counts):
    return [(op, act) for key, n in counts.items() for op, act in [key.split("__")]
            for _ in range(n)]


TV_FOLDS = {
    "mobilenet_v2": _folds(CONV_2D__RELU6=18, DEPTHWISE_CONV_2D__RELU6=17),
    "resnet18": _folds(CONV_2D__RELU=9, ADD__RELU=8),
    "squeezenet1_1": _folds(CONV_2D__RELU=26),
    "mnasnet0_5": _folds(CONV_2D__RELU=18, DEPTHWISE_CONV_2D__RELU=17),
    "googlenet": _folds(CONV_2D__RELU=57),
}
for _m, _kw in [("mobilenet_v2", {}), ("resnet18", {}), ("squeezenet1_1", {}),
                ("mnasnet0_5", {}),
                ("googlenet", dict(aux_logits=False, init_weights=True))]:
    for _layout in ("nchw", "nhwc"):
        case(f"tv-{_m}-{_layout}",
             lambda m=_m, kw=_kw, lay=_layout: _tv_float(m, lay == "nhwc", TV_FOLDS[m], **kw),
             source="torchvision")
for _m in ("mobilenet_v2", "resnet18"):
    case(f"tv-quant-{_m}-nhwc", lambda m=_m: _tv_quant(m), source="torchvision")


# ------------------------------------------------------------------- driver
# Cases whose reference model (PyTorch's converter's) breaks a rule of
# Android's NeuralNetworks.h, so that nnapi-convert's validator refuses that
# model (tests/validate) and the host runtime's ANeuralNetworksModel_finish
# returns BAD_DATA for it (runtime.reference_models): case.json's
# "validator_refuses" says why. nnapi-convert writes a valid model instead
# (tests/reference lists these as known reference bugs).
_RANK5_RESHAPE = ("PyTorch's converter flattens a rank-5 input with RESHAPE; NeuralNetworks.h, "
                  "RESHAPE: \"Supported tensor rank: up to 4\"")
_NHWC_SLICE = ("PyTorch's converter slices NHWC data along the NCHW axis; NeuralNetworks.h, "
               "STRIDED_SLICE: its output dims follow from begin, end and strides, and they "
               "differ from the declared ones")
_RANK0_OUTPUT = ("PyTorch's converter declares a model output of rank 0; NNAPI has no rank-0 "
                 "model outputs (PyTorch's NNAPI binding fails on them)")
VALIDATOR_REFUSES = {
    **{f"flatten-{n}": _RANK5_RESHAPE
       for n in ("default", "s0-e4", "s0-em2", "s2-e3", "s2-e4")},
    **{f"beyond-dims-slice-{k}-nhwc": _NHWC_SLICE for k in ("float", "quant", "flex-batch")},
    **{f"beyond-ghost-slice-{k}-nhwc": _NHWC_SLICE for k in ("float", "flex-batch")},
    **{f"beyond-rank0-{k}": _RANK0_OUTPUT for k in ("mean-1d", "mean-4d", "mean-4d-nhwc")},
    "beyond-int32-cat-numbers": ("PyTorch's converter joins int32 data with CONCATENATION; "
                                 "NeuralNetworks.h, CONCATENATION: TENSOR_FLOAT16, "
                                 "TENSOR_FLOAT32 and TENSOR_QUANT8_ASYMM only"),
    "beyond-int32-slice-batch": ("PyTorch's converter slices int32 data with STRIDED_SLICE; "
                                 "NeuralNetworks.h, STRIDED_SLICE: TENSOR_FLOAT16, "
                                 "TENSOR_FLOAT32 and TENSOR_QUANT8_ASYMM only"),
    **{f"beyond-int32-{k}": (
        f"PyTorch's converter emits {op} of int32 data; NeuralNetworks.h, {op}: "
        "TENSOR_FLOAT16, TENSOR_FLOAT32 and TENSOR_QUANT8_ASYMM only")
       for k, op in (("relu", "RELU"), ("sigmoid", "LOGISTIC"), ("hardtanh", "RELU1"),
                     ("add-relu-fused", "RELU"))},
    **{f"beyond-cat-flex-inputs-{s}": (
        "PyTorch's converter declares a cat's size along a flexible dim as its fixed parts' "
        "sum; NeuralNetworks.h, CONCATENATION: the output's size along the axis is the sum of "
        "the inputs' sizes") for s in ("a", "b")},
}


def _copies(tensors):
    """Tracing and eager run on copies (strides kept), so that a forward that
    writes into its input (x.sigmoid_()) leaves the saved args as given."""
    return tuple(t.clone() if isinstance(t, torch.Tensor) else t for t in tensors)


def generate(out_dir, name, source, builder):
    """Build, trace, run eager and the reference, write the directory.
    Returns (case_json, problems)."""
    torch.manual_seed(0)
    c = builder()
    module = c.module
    module.eval()
    args = c.args
    trace_args = c.trace_args or args
    convert_args = c.convert_args or args
    # check_trace only re-runs and compares (the traced module is the same);
    # skip it for the large torchvision models to save time.
    if isinstance(module, torch.jit.ScriptModule):
        traced = module  # scripted by the builder (Scalar overloads, control flow)
    else:
        traced = torch.jit.trace(module, _copies(trace_args),
                                 check_trace=(source == "test_nnapi"))
    traced.eval()
    if c.engine:
        torch.backends.quantized.engine = c.engine
    eager = as_list(module(*_copies(args)))
    torch.backends.quantized.engine = 'qnnpack'
    # The torchvision references' modules are big: kept only where a test runs
    # them (googlenet's, whose ceil_mode the reference gets wrong).
    ref = run_reference(traced, convert_args, args,
                        want_converted=(source != "torchvision" or "googlenet" in name),
                        **c.reference_kwargs)
    info = write_case(out_dir, name=name, source=source, traced=traced,
                      convert_args=convert_args, run_args=args,
                      eager_outputs=eager, ref=ref, error_regex=c.error_regex,
                      must_convert=c.must_convert, must_refuse=c.must_refuse,
                      options=c.options, fold=c.fold, not_runnable=c.not_runnable,
                      validator_refuses=VALIDATOR_REFUSES.get(name))
    problems = []
    if source == "test_nnapi":
        if c.error_regex is None and not ref.ok:
            problems.append("reference refused a case test_nnapi.py expects to convert")
        if c.error_regex is not None and ref.ok:
            problems.append("reference converted a case test_nnapi.py expects to fail")
        if c.error_regex is not None and not ref.ok and \
                not regex_matches(c.error_regex, ref.error):
            problems.append(f"error does not match /{c.error_regex}/")
        if info["reference_shape_mismatch"]:
            problems.append("output template shapes differ from eager outputs")
    return info, problems, ref


# ---------------- issue 20: comparisons, where, reductions and selection
# (NNAPI feature level 3 operations PyTorch's converter has no lowering for).
class MaskWhereModule(torch.nn.Module):
    """A mask built with comparisons and logical operations of computed
    tensors, applied with where; the mask is returned too (a bool output)."""

    def forward(self, x, y):
        keep = (x > y.mean(1, keepdim=True)) & ~(y.abs() >= 1.5)
        return torch.where(keep, x * 2, y - 1), keep


for _name, _args, _conv in (
        ("", [torch.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 5)], None),
        ("-nhwc", [nhwc(torch.randn(2, 3, 4, 5)), nhwc(torch.randn(2, 3, 4, 5))], None),
        ("-flex", [torch.randn(3, 3, 4, 5), torch.randn(3, 3, 4, 5)],
         [torch.zeros(0, 3, 4, 5), torch.zeros(0, 3, 4, 5)])):
    beyond("mask-where" + _name, lambda a=_args, c=_conv: Case(MaskWhereModule(), a, convert_args=c))


class ClassifierTopkModule(torch.nn.Module):
    """A classifier head: the top 3 classes (scores, indices) and the best one."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.fc = torch.nn.Linear(8, 10)

    def forward(self, x):
        h = torch.relu(self.conv(x)).mean([2, 3])
        scores = torch.softmax(self.fc(h), -1)
        top, idx = torch.topk(scores, 3)
        return top, idx, scores.argmax(-1)


beyond("classifier-topk", lambda: Case(ClassifierTopkModule(), torch.randn(2, 3, 6, 6)))
beyond("classifier-topk-flex", lambda: Case(
    ClassifierTopkModule(), torch.randn(3, 3, 6, 6), convert_args=[torch.zeros(0, 3, 6, 6)]))


class GreedyStepModule(torch.nn.Module):
    """One greedy decoder step: the next token and its log-probability, and
    which sequences are more certain than the batch's mean, or all of them
    when every sequence has ended (token 0)."""

    def __init__(self):
        super().__init__()
        self.cell = torch.nn.Linear(12, 12)
        self.out = torch.nn.Linear(12, 7)

    def forward(self, h):
        logp = torch.log_softmax(self.out(torch.tanh(self.cell(h))), -1)
        best, token = logp.max(-1)
        return token, best, (best > best.mean(0, keepdim=True)) | (token == 0).all(-1, keepdim=True)


beyond("greedy-step-argmax", lambda: Case(GreedyStepModule(), torch.randn(4, 12)))


class IndexDtypesModule(torch.nn.Module):
    """Indices (int64 in PyTorch, int32 in NNAPI) made int32 by .int() and
    .to(torch.int32), kept int64 by .long(): eager returns int32, int64 and
    int32 (OpInfo's masked.argmax ends in .to(int32); the converted module
    returned int64 there, and refused .long())."""

    def forward(self, x):
        return x.argmax(1).int(), x.argmax(-1).long(), torch.topk(x, 2)[1].to(torch.int32)


class IndexToInt32Module(torch.nn.Module):
    def forward(self, x):
        return x.argmax(1).int(), torch.topk(x, 2)[1].to(torch.int32)


beyond("index-to-int32", lambda: Case(IndexToInt32Module(), torch.randn(3, 7)))
beyond("index-dtypes", lambda: Case(IndexDtypesModule(), torch.randn(3, 7)))
beyond("index-dtypes-flex", lambda: Case(
    IndexDtypesModule(), torch.randn(3, 7), convert_args=[torch.zeros(0, 7)]))


class IntTrueDivModule(torch.nn.Module):
    """`/` of int32 tensors (OpInfo's div and true_divide int32 samples,
    softsign of an int32 tensor): PyTorch divides truly, a float32 result;
    NNAPI's DIV of TENSOR_INT32 (feature level 4) gives integers, so the
    converted module returned int32 quotients."""

    def forward(self, a, b):
        return a / b


class IntActivationModule(torch.nn.Module):
    """An activation of an int32 tensor (OpInfo's int32 samples of relu,
    sigmoid, tanh, relu6, hardtanh): NeuralNetworks.h's RELU, RELU1, RELU6,
    LOGISTIC and TANH take no TENSOR_INT32, and the lowerings emitted them,
    leaving the refusal to the validator's backstop ("a bug in nnapi-convert")."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


for _name, _fn, _regex in (
        ("relu", torch.relu, r"node aten::relu .*RELU of an int32 .*\.float\(\) first"),
        ("sigmoid", torch.sigmoid, r"node aten::sigmoid .*LOGISTIC of an int32 .*\.float\(\) first"),
        ("hardtanh", torch.nn.functional.hardtanh,
         r"node aten::hardtanh .*hardtanh of an int32 tensor .*torch\.clamp")):
    refuse(f"int32-{_name}", lambda f=_fn: Case(
        IntActivationModule(f), torch.randint(-9, 9, (2, 5), dtype=torch.int32)), _regex)


class IntAddReluModule(torch.nn.Module):
    def forward(self, a, b):
        return torch.relu(a + b)


# --fuse-activations folded the ReLU into the int32 ADD (fuse code 1, which
# NeuralNetworks.h forbids for TENSOR_INT32: the validator's backstop refused
# it as a bug); unfused, the int32 RELU is refused as above.
refuse("int32-add-relu-fused", lambda: Case(
    IntAddReluModule(), [torch.randint(-9, 9, (2, 5), dtype=torch.int32),
                         torch.randint(-9, 9, (2, 5), dtype=torch.int32)],
    options=["--fuse-activations"] + API_30),
    r"node aten::relu .*RELU of an int32 .*\.float\(\) first")


refuse("int32-true-div-api30", lambda: Case(
    IntTrueDivModule(), [torch.randint(-9, 9, (2, 5), dtype=torch.int32),
                         torch.randint(1, 5, (2, 5), dtype=torch.int32)], options=API_30),
    r"node aten::div .*true division .*int32 .*\.float\(\) first")


# Refusals left to the validator's backstop ("a bug in nnapi-convert") by
# OpInfo samples: each converts where NeuralNetworks.h has an exact route at
# the target feature level, else its lowering refuses it naming the node.
class TopkDimModule(torch.nn.Module):
    """topk along a dim that is not the last: the indices came back through a
    TRANSPOSE of TENSOR_INT32, which NNAPI allows at no feature level."""

    def forward(self, x):
        v0, i0 = torch.topk(x, 2, dim=0)
        v1, i1 = torch.topk(x, 3, dim=1, largest=False)
        return v0, i0, v1, i1


beyond("topk-dim-not-last", lambda: Case(TopkDimModule(), torch.randn(4, 5, 6)))
refuse("int32-topk-dim-not-last", lambda: Case(
    TopkDimModule(), torch.randint(-999, 999, (4, 5, 6), dtype=torch.int32)),
    r"node aten::topk .*topk along another dim than the last of an int32 .*\.float\(\) first")


class IndexToFloatModule(torch.nn.Module):
    """Indices (int64 in PyTorch, int32 in NNAPI) made float32: a CAST."""

    def forward(self, x):
        return x.argmax(1).to(torch.float), torch.topk(x, 2)[1].float()


beyond("index-to-float", lambda: Case(IndexToFloatModule(), torch.randn(3, 7)))


class IntClampModule(torch.nn.Module):
    """clamp of int32 with RELU's and RELU6's bounds: NNAPI's RELU and RELU6
    take no TENSOR_INT32, MAXIMUM and MINIMUM do (feature level 3)."""

    def forward(self, x):
        return torch.clamp(x, min=0), torch.clamp(x, 0, 6), torch.clamp(x, min=-1, max=1)


beyond("int32-clamp-relu-bounds", lambda: Case(
    IntClampModule(), torch.randint(-9, 9, (2, 5), dtype=torch.int32)))


class IntSqueezeModule(torch.nn.Module):
    def forward(self, x):
        return x.squeeze(1) * 3, x.squeeze() + 1


# NNAPI's SQUEEZE takes no TENSOR_INT32; RESHAPE takes it from feature level 6.
beyond("int32-squeeze-api33", lambda: Case(
    IntSqueezeModule(), torch.randint(-99999999, 99999999, (2, 1, 5), dtype=torch.int32),
    options=API_33))
refuse("int32-squeeze", lambda: Case(
    IntSqueezeModule(), torch.randint(-9, 9, (2, 1, 5), dtype=torch.int32)),
    r"node aten::squeeze .*squeeze of an int32 .*--min-android-api 33.*\.float\(\) first")


class IntPadModule(torch.nn.Module):
    def __init__(self, mode):
        super().__init__()
        self.mode = mode

    def forward(self, x):
        return torch.nn.functional.pad(x, (1, 2), mode=self.mode)


# PAD, PAD_V2 and CONCATENATION take no TENSOR_INT32 at any feature level.
for _mode in ("constant", "circular"):
    refuse(f"int32-pad-{_mode}", lambda m=_mode: Case(
        IntPadModule(m), torch.randint(-9, 9, (1, 2, 5), dtype=torch.int32)),
        r"node aten::(pad|constant_pad_nd) .*padding of an int32 .*"
        r"\.float\(\) first")


class BoolPadModule(torch.nn.Module):
    """Padding of a bool tensor: PAD of TENSOR_BOOL8 (no feature level has it)
    was left to the validator's backstop; its 0/1 pad as float32."""

    def forward(self, x):
        b = x > 0
        return (torch.nn.functional.pad(b, (1, 2)), torch.nn.functional.pad(b, (2, 1), value=True),
                torch.nn.functional.pad(b, (1, 2), mode="circular"))


beyond("bool-pad", lambda: Case(BoolPadModule(), torch.randn(1, 2, 5)))


class CloneComputedModule(torch.nn.Module):
    """clone of a tensor the model computes (a copy before in-place edits, a
    channels-last copy): the same values, once refused as folding-only."""

    def forward(self, x):
        y = torch.relu(x).clone()
        z = torch.sigmoid(x).clone(memory_format=torch.channels_last) * 2
        return y + 1, z - x


beyond("clone-computed", lambda: Case(CloneComputedModule(), torch.randn(1, 3, 4, 5)))
class ReshapeAsMovedimModule(torch.nn.Module):
    """view_as / reshape_as another input's sizes and movedim (an int, lists
    with negative dims): RESHAPE and TRANSPOSE as view and permute are."""

    def forward(self, x, y):
        return (torch.relu(x).contiguous().view_as(y) + y, torch.movedim(x, 1, -1) * 2,
                torch.movedim(x, (0, -3), (2, 3)) - 1, torch.sigmoid(x).reshape_as(y))


beyond("reshape-as-movedim", lambda: Case(ReshapeAsMovedimModule(), (torch.randn(1, 3, 4, 5), torch.randn(1, 60))))
beyond("reshape-as-movedim-nhwc", lambda: Case(ReshapeAsMovedimModule(),
                                               (nhwc(torch.randn(1, 3, 4, 5)), torch.randn(1, 60))))
for _s, _n in (("a", 1), ("b", 3)):
    beyond(f"reshape-as-movedim-flex-{_s}", lambda n=_n: Case(
        ReshapeAsMovedimModule(), (torch.randn(n, 3, 4, 5), torch.randn(n, 60)),
        convert_args=[torch.zeros(0, 3, 4, 5), torch.zeros(0, 60)]))
beyond("clone-computed-nhwc", lambda: Case(CloneComputedModule(), nhwc(torch.randn(1, 3, 4, 5))))
for _s, _n in (("a", 1), ("b", 3)):
    beyond(f"clone-computed-flex-{_s}", lambda n=_n: Case(
        CloneComputedModule(), torch.randn(n, 3, 4, 5), convert_args=[torch.zeros(0, 3, 4, 5)]))


class IntPixelShuffleModule(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.pixel_shuffle(x, 2)


# DEPTH_TO_SPACE and SPACE_TO_DEPTH take no TENSOR_INT32 at any feature level.
refuse("int32-pixel-shuffle", lambda: Case(
    IntPixelShuffleModule(), torch.randint(-9, 9, (1, 8, 2, 3), dtype=torch.int32), options=API_33),
    r"node aten::pixel_shuffle .*pixel_shuffle of an int32 .*\.float\(\) first")


class ReduceModule(torch.nn.Module):
    """Reductions over dims and over every element (all(), combined with a
    tensor: a 0-dim output would be a constant the check cannot tell)."""

    def forward(self, x):
        return (x.amax((1, 2)), x.amin(-1, keepdim=True), x.prod(1), (x > 1).any(3),
                (x > 0) & (x > -4).all(), x - x.max(1, keepdim=True)[0], x.min(1)[1])


beyond("reduce-max-prod-any", lambda: Case(ReduceModule(), torch.randn(2, 3, 4, 5)))
beyond("reduce-max-prod-any-nhwc", lambda: Case(ReduceModule(), nhwc(torch.randn(2, 3, 4, 5))))


class QuantCompareModule(torch.nn.Module):
    def forward(self, x):
        return x > 0.25, torch.max(x, 1)[0], torch.topk(x, 2)[0]


beyond("compare-max-topk-quant", lambda: Case(
    QuantCompareModule(), float_and_quant_and_nhwc(torch.randn(2, 3, 4, 5))["quant"]))


class SinCosModule(torch.nn.Module):
    def forward(self, x):
        return torch.sin(x * 3), torch.cos(x * 3)


beyond("sin-cos", lambda: Case(SinCosModule(), torch.randn(2, 3, 8)))


# ---------------- issue 33: optimize_for_mobile's output. Its XNNPACK
# operations (prepacked::conv2d_clamp_run, conv2d_transpose_clamp_run,
# linear_clamp_run) hold their weights in context objects; batch norm is
# folded into the convolutions and a relu/hardtanh after one into its clamp.
# Eager is the optimized module itself (XNNPACK's kernels), as a user has it.
from mobile_models import MobileBlocks, PrepackClampModule, TinyDetector, mobile  # noqa: E402

beyond("prepacked-blocks", lambda: Case(mobile(MobileBlocks()), torch.randn(2, 3, 9, 8)))
beyond("prepacked-blocks-nhwc", lambda: Case(mobile(MobileBlocks()), nhwc(torch.randn(2, 3, 9, 8))))
for _s, _n in (("a", 1), ("b", 3)):
    beyond(f"prepacked-blocks-flex-{_s}", lambda n=_n: Case(
        mobile(MobileBlocks()), torch.randn(n, 3, 9, 8), convert_args=[torch.zeros(0, 3, 9, 8)]))
# Every clamp form of the contexts (optimize_for_mobile makes only some: it
# folds no activation into a linear or transposed convolution), built with
# prepacked::*_clamp_prepack: scripted, those stay in the graph torch.jit.freeze
# makes and are folded at conversion; through optimize_for_mobile they are
# context constants.
for _form, _make in (("prepack", lambda: torch.jit.script(PrepackClampModule().eval())),
                     ("mobile", lambda: mobile(PrepackClampModule()))):
    beyond(f"prepacked-clamps-{_form}", lambda mk=_make: Case(
        mk(), (torch.randn(2, 3, 7, 8), torch.randn(2, 5, 4) * 2)))
    beyond(f"prepacked-clamps-{_form}-nhwc", lambda mk=_make: Case(
        mk(), (nhwc(torch.randn(2, 3, 7, 8)), torch.randn(2, 5, 4) * 2)))
    for _s, _n in (("a", 1), ("b", 3)):
        beyond(f"prepacked-clamps-{_form}-flex-{_s}", lambda mk=_make, n=_n: Case(
            mk(), (torch.randn(n, 3, 7, 8), torch.randn(n, 5, 4) * 2),
            convert_args=[torch.zeros(0, 3, 7, 8), torch.zeros(0, 5, 4)]))
# A small detector: a conv backbone with batch norm, in-place hardswish and
# ReLU, a transposed-convolution upsampling head, two prediction heads.
beyond("prepacked-detector", lambda: Case(mobile(TinyDetector()), torch.randn(1, 3, 32, 40)))
beyond("prepacked-detector-nhwc", lambda: Case(mobile(TinyDetector()),
                                               nhwc(torch.randn(1, 3, 32, 40))))
for _s, _n in (("a", 1), ("b", 3)):
    beyond(f"prepacked-detector-flex-{_s}", lambda n=_n: Case(
        mobile(TinyDetector()), torch.randn(n, 3, 32, 40), convert_args=[torch.zeros(0, 3, 32, 40)]))



# ------------------------------- issue 33 item 6: node kinds of published files
# torch.stft as Silero's v2 models and keyword spotters take it: scripted,
# center=True (torch.stft pads in TorchScript: aten::dim, a list joined to
# list(x.size()), aten::pad in reflect mode, then aten::stft), a window with
# win_length < n_fft, return_complex=False and the magnitude from the real
# pairs, then log1p (a log spectrogram). Lowered as a DFT by one strided
# CONV_2D (src/lower/spectral.cpp); the reference has no stft.
class StftMagnitudeModule(torch.nn.Module):
    def __init__(self, n_fft=64, hop=16, win_length=48):
        super().__init__()
        self.n_fft, self.hop, self.win_length = n_fft, hop, win_length
        self.register_buffer("window", torch.hann_window(win_length))

    def forward(self, x):
        s = torch.stft(x, n_fft=self.n_fft, hop_length=self.hop, win_length=self.win_length,
                       window=self.window, center=True, pad_mode="reflect", normalized=False,
                       onesided=True, return_complex=False)
        real = s[:, :, :, 0]
        imag = s[:, :, :, 1]
        return torch.log1p(torch.sqrt(real ** 2 + imag ** 2))


def _stft_magnitude():
    return torch.jit.script(StftMagnitudeModule().eval())


beyond("stft-magnitude-scripted", lambda: Case(_stft_magnitude(), torch.randn(2, 400)))
for _s, _n in (("a", 1), ("b", 3)):
    beyond(f"stft-magnitude-scripted-flex-{_s}", lambda n=_n: Case(
        _stft_magnitude(), torch.randn(n, 400), convert_args=[torch.zeros(0, 400)]))


# Tensor.stft in TorchScript is aten::stft.center (it pads itself: here with
# zeros), return_complex=True read through abs(); a rectangular window
# (window=None) over an odd n_fft, normalized, both sides of the spectrum.
class StftComplexAbsModule(torch.nn.Module):
    def forward(self, x):
        s = x.stft(15, 4, center=True, pad_mode="constant", normalized=True, onesided=False,
                   return_complex=True)
        return s.abs() * 2


beyond("stft-center-complex-abs-scripted", lambda: Case(
    torch.jit.script(StftComplexAbsModule().eval()), torch.randn(2, 100)))
beyond("stft-center-complex-abs-scripted-1d", lambda: Case(
    torch.jit.script(StftComplexAbsModule().eval()), torch.randn(100)))


# torch.view_as_real of a complex result, the window made in forward
# (hann_window, folded during conversion), center=False; traced (aten::stft
# with its arguments as constants) and the real pairs returned.
class StftViewAsRealModule(torch.nn.Module):
    def forward(self, x):
        s = torch.stft(x, 32, 8, window=torch.hann_window(32), center=False, return_complex=True)
        pairs = torch.view_as_real(s)
        return pairs, pairs.pow(2).sum(-1).sqrt()


beyond("stft-view-as-real-scripted", lambda: Case(
    torch.jit.script(StftViewAsRealModule().eval()), torch.randn(3, 200)))
beyond("stft-view-as-real-traced-flex", lambda: Case(
    StftViewAsRealModule(), torch.randn(3, 200), convert_args=[torch.zeros(0, 200)]))


# (A complex result read otherwise is refused before lowering, naming
# aten::stft and its reader: tests/cli/ux_test.sh, stft_angle.pt.)


# log1p, exact for small x too (Goldberg's formula; LOG(1 + x) keeps none of
# x's bits below 2^-24), x as small as 1e-9 and up to 1e4. The last output
# is about x: LOG(1 + x) would be up to 0.06 off there, past the tolerance.
class Log1pModule(torch.nn.Module):
    def forward(self, x):
        return (torch.log1p(x * 1e-3), torch.log1p(torch.exp(x * 6) * 1e-6),
                torch.log1p(x * 1e-6) * 1e6)


beyond("log1p", lambda: Case(Log1pModule(), torch.randn(2, 3, 4, 5)))
beyond("log1p-nhwc", lambda: Case(Log1pModule(), nhwc(torch.randn(2, 3, 4, 5))))
for _s, _n in (("a", 1), ("b", 3)):
    beyond(f"log1p-flex-{_s}", lambda n=_n: Case(
        Log1pModule(), torch.randn(n, 3, 4, 5), convert_args=[torch.zeros(0, 3, 4, 5)]))


# torch._cast_Float / _cast_Long (as aten::to(dtype)): a mask made 0/1
# float32 and int64, and x.data in a scripted forward (prim::data).
class CastDataModule(torch.nn.Module):
    def forward(self, x):
        m = x.data > 0
        return torch._cast_Float(m) * x, torch._cast_Long(m), torch._cast_Float(x) + 1


def _cast_data():
    return torch.jit.script(CastDataModule().eval())


beyond("cast-data-scripted", lambda: Case(_cast_data(), torch.randn(2, 3, 4, 5)))
beyond("cast-data-scripted-nhwc", lambda: Case(_cast_data(), nhwc(torch.randn(2, 3, 4, 5))))
for _s, _n in (("a", 1), ("b", 3)):
    beyond(f"cast-data-scripted-flex-{_s}", lambda n=_n: Case(
        _cast_data(), torch.randn(n, 3, 4, 5), convert_args=[torch.zeros(0, 3, 4, 5)]))


# A tuple of computed tensors out of an `if` decided during conversion (as
# nn.LSTM's `hx`, batched or not), unpacked and indexed (prim::TupleUnpack,
# prim::TupleIndex of a computed tuple).
class TupleOutOfIfModule(torch.nn.Module):
    def forward(self, x):
        if x.dim() > 2:
            t = (x * 2.0, x + 1.0)
        else:
            t = (x + 1.0, x * 2.0)
        a, b = t
        return a - b * t[1] + t[-2]


def _tuple_out_of_if():
    return torch.jit.script(TupleOutOfIfModule().eval())


beyond("tuple-out-of-if", lambda: Case(_tuple_out_of_if(), torch.randn(2, 3, 4, 5)))
beyond("tuple-out-of-if-nhwc", lambda: Case(_tuple_out_of_if(), nhwc(torch.randn(2, 3, 4, 5))))
for _s, _n in (("a", 1), ("b", 3)):
    beyond(f"tuple-out-of-if-flex-{_s}", lambda n=_n: Case(
        _tuple_out_of_if(), torch.randn(n, 3, 4, 5), convert_args=[torch.zeros(0, 3, 4, 5)]))


# Sizes written into a list of them (aten::_set_item): list(x.shape) with
# an item set to -1 and one computed from others, x.size() with its last
# item set; fixed sizes change the constant list, a flexible batch the
# shape-compute expressions.
class SetSizeItemModule(torch.nn.Module):
    def forward(self, x):
        shape = list(x.shape)
        shape[1] = -1
        shape[-2] = shape[-2] * shape[-1]
        shape[-1] = 1
        s = x.size()
        s[-1] = 1
        return x.reshape(shape) * 2.0, x[..., :1].reshape(s) + 1.0


def _set_size_item():
    return torch.jit.script(SetSizeItemModule().eval())


beyond("set-size-item", lambda: Case(_set_size_item(), torch.randn(2, 3, 4, 5)))
beyond("set-size-item-nhwc", lambda: Case(_set_size_item(), nhwc(torch.randn(2, 3, 4, 5))))
for _s, _n in (("a", 1), ("b", 3)):
    beyond(f"set-size-item-flex-{_s}", lambda n=_n: Case(
        _set_size_item(), torch.randn(n, 3, 4, 5), convert_args=[torch.zeros(0, 3, 4, 5)]))


# The checks of scripted published models, decided during conversion:
# is_floating_point, x.device, `in` and `not` on sizes and attributes, an
# Optional made in a branch and refined (`is not None`, unchecked_cast),
# list(x.shape), and raises with f-strings (aten::format) in branches not
# taken (torch._assert formats its message before the branch).
def _add_optional(x: torch.Tensor, b: Optional[torch.Tensor]) -> torch.Tensor:
    if b is not None:
        return x + b
    return x


class ScriptedChecksModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.sample_rates = [8000, 16000]

    def forward(self, x):
        if not x.is_floating_point():
            raise ValueError(f"expected a float tensor, got {x.dtype}")
        if x.dim() != 4:
            raise ValueError(f"expected NCHW, got {x.dim()} dims")
        torch._assert(x.size(1) in [3, 4], f"expected 3 or 4 channels, got shape {x.shape}")
        b: Optional[torch.Tensor] = None
        if x.size(1) == 3:
            b = torch.ones(3, 1, 1, device=x.device, dtype=x.dtype)
        y = _add_optional(x, b)
        c: Optional[torch.Tensor] = None
        if 16000 in self.sample_rates:
            c = torch.sigmoid(x)
        if c is not None:
            y = y * c
        shape = list(y.shape)
        return y.reshape(shape[0], shape[1], -1)


def _scripted_checks():
    return torch.jit.script(ScriptedChecksModule().eval())


beyond("scripted-checks-folded", lambda: Case(_scripted_checks(), torch.randn(2, 3, 4, 5)))
beyond("scripted-checks-folded-nhwc", lambda: Case(_scripted_checks(), nhwc(torch.randn(2, 3, 4, 5))))
for _s, _n in (("a", 1), ("b", 3)):
    beyond(f"scripted-checks-folded-flex-{_s}", lambda n=_n: Case(
        _scripted_checks(), torch.randn(n, 3, 4, 5), convert_args=[torch.zeros(0, 3, 4, 5)]))
# A raise whose branch is taken: the model's own message, formatted, is the
# refusal (a flexible size shown as "?").
refuse("scripted-checks-raise-taken", lambda: Case(
    _scripted_checks(), torch.randn(2, 3, 4, 5), convert_args=[torch.randn(2, 5, 4, 5)]),
    r"raises an exception for these input sizes .*expected 3 or 4 channels, got shape \[2, 5, 4, 5\]")
refuse("scripted-checks-raise-taken-flex", lambda: Case(
    _scripted_checks(), torch.randn(2, 3, 4, 5), convert_args=[torch.zeros(0, 5, 4, 5)]),
    r"raises an exception for these input sizes .*expected 3 or 4 channels, got shape \[\?, 5, 4, 5\]")

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("out_dir", nargs="?")
    p.add_argument("--only", help="regex (re.search) on case names")
    p.add_argument("--torchvision", action="store_true",
                   help="also the torchvision model cases (slow)")
    p.add_argument("--list", action="store_true", help="only list case names")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print the reference traceback of refused cases")
    opts = p.parse_args(argv)
    if not opts.list and not opts.out_dir:
        p.error("OUT_DIR is required")

    only = re.compile(opts.only) if opts.only else None
    selected = [(n, s, b) for (n, s, b) in REGISTRY
                if (s != "torchvision" or opts.torchvision)
                and (only is None or only.search(n))]
    if opts.list:
        for n, s, _ in selected:
            print(f"{n}\t{s}")
        return 0

    warnings.filterwarnings("ignore")
    torch.backends.quantized.engine = 'qnnpack'
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    os.makedirs(opts.out_dir, exist_ok=True)
    # A case renamed or removed since OUT_DIR was written leaves its directory
    # behind, which the tests would still read: such directories (a case.json,
    # a name no case has, matching --only) go.
    registered = {n for n, _, _ in REGISTRY}
    for entry in sorted(os.listdir(opts.out_dir)):
        stale = os.path.join(opts.out_dir, entry)
        if (entry not in registered and (only is None or only.search(entry))
                and os.path.isfile(os.path.join(stale, "case.json"))):
            shutil.rmtree(stale)
            print(f"removed {entry}: no such case now")

    if any(s == "torchvision" for _, s, _ in selected):
        t0 = time.perf_counter()
        import torchvision  # noqa: F401  (not counted in the first case)
        print(f"import torchvision: {time.perf_counter() - t0:.1f}s")

    n_ok = n_refused = 0
    unexpected = []
    phase_time = {}
    t_start = time.perf_counter()
    with torch.no_grad():
        for name, source, builder in selected:
            t0 = time.perf_counter()
            info, problems, ref = generate(opts.out_dir, name, source, builder)
            dt = time.perf_counter() - t0
            phase_time[source] = phase_time.get(source, 0.0) + dt
            if info["expect"] == "ok":
                n_ok += 1
            else:
                n_refused += 1
            line = f"{name}: {info['expect']} ({dt:.2f}s)"
            if info["remove_mutation_changed"]:
                line += " [remove_mutation changed graph]"
            if info["reference_shape_mismatch"]:
                line += " [reference_shape_mismatch]"
            if info["reference_error"] is not None:
                first = (info["reference_error"].strip().splitlines() or ["(no message)"])[0]
                line += " -- " + first[:200]
            print(line, flush=True)
            if opts.verbose and ref.error_trace:
                print(ref.error_trace, flush=True)
            for prob in problems:
                unexpected.append(f"{name}: {prob}")
    total = time.perf_counter() - t_start
    for src, t in sorted(phase_time.items()):
        print(f"time {src}: {t:.1f}s")
    print(f"time total: {total:.1f}s")
    for u in unexpected:
        print(f"UNEXPECTED {u}")
    print(f"wrote {n_ok + n_refused} cases ({n_ok} ok, {n_refused} refused)")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())

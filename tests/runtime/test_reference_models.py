#!/usr/bin/env python3
"""Runs models converted by PyTorch's own NNAPI converter on the host runtime.

Reproduces the cases of PyTorch's test/test_nnapi.py: each module is traced,
converted with torch.backends._nnapi.prepare.convert_model_to_nnapi, and the
converted module (which dlopens libneuralnetworks.so through
torch.classes._nnapi.Compilation) is RUN and compared with eager PyTorch.

Tolerances follow test_nnapi.py: float outputs use torch.testing's float32
defaults unless a case gives (atol, rtol). Quantized outputs must have the
same scale and zero point, differ by at most one quantum everywhere, and
differ at all in at most `limit` elements (the case's limit, otherwise the
project rule of 3% of the elements).

Exits non-zero if any case fails; the last line is "N passed, M failed".
"""
import re
import sys
import traceback
from typing import Tuple

import torch
from torch.backends._nnapi.prepare import convert_model_to_nnapi


def qpt(t, scale, zero_point, dtype=torch.quint8):
    t = torch.tensor(t)
    return torch.quantize_per_tensor(t, scale, zero_point, dtype)


def nhwc(t):
    t = t.clone().contiguous(memory_format=torch.channels_last)
    t.nnapi_nhwc = True
    return t


class CaseFailure(AssertionError):
    pass


def qparams(tensors):
    return [(t.q_scale(), t.q_zero_point()) if t.is_quantized else None for t in tensors]


def compare(eager, nnapi, atol_rtol, limit, qparams_must_match=True):
    """qparams_must_match is False when the converter was given template
    inputs quantized with other parameters than the real inputs: the NNAPI
    model then declares the template's (scale, zero_point), and NNAPI
    interprets the real input's integers with them, so only the integer
    representations are comparable."""
    if isinstance(eager, (tuple, list)):
        if not isinstance(nnapi, (tuple, list)) or len(eager) != len(nnapi):
            raise CaseFailure(f"output structure differs: {type(eager)} vs {type(nnapi)}")
        notes = [compare(e, n, atol_rtol, limit, qparams_must_match) for e, n in zip(eager, nnapi)]
        return "; ".join(n for n in notes if n) or None
    if eager.shape != nnapi.shape:
        raise CaseFailure(f"shape {tuple(nnapi.shape)} != eager {tuple(eager.shape)}")
    if eager.dtype != nnapi.dtype:
        raise CaseFailure(f"dtype {nnapi.dtype} != eager {eager.dtype}")
    if eager.is_quantized:
        if qparams_must_match and qparams([eager]) != qparams([nnapi]):
            raise CaseFailure("quantization parameters differ")
        diff = (eager.int_repr().to(torch.int32) - nnapi.int_repr().to(torch.int32)).abs()
        max_diff = int(diff.max()) if diff.numel() else 0
        mismatches = int(diff.count_nonzero())
        allowed = limit if limit is not None else int(0.03 * diff.numel())
        stats = f"{mismatches}/{diff.numel()} off by one quantum"
        if max_diff > 1 or mismatches > allowed:
            raise CaseFailure(
                f"quantized mismatch: max {max_diff} quanta, {stats} (allowed {allowed})")
        return stats if mismatches else None
    kwargs = {}
    if atol_rtol is not None:
        kwargs = {"atol": atol_rtol[0], "rtol": atol_rtol[1]}
    try:
        torch.testing.assert_close(nnapi, eager, **kwargs)
    except AssertionError as e:
        raise CaseFailure(str(e)) from None


class Runner:
    def __init__(self, name_filter=None):
        self.passed = 0
        self.failed = 0
        self.failures = []
        self.name_filter = name_filter
        self.prefix = ""
        self.counter = 0

    def run(self, name, fn):
        if self.name_filter and not re.search(self.name_filter, name):
            return None
        try:
            result = fn()
        except Exception as e:  # noqa: BLE001 - a case fails on anything
            self.failed += 1
            self.failures.append(name)
            msg = str(e).strip().splitlines()
            print(f"FAIL {name}: {type(e).__name__}: {' | '.join(msg[:6])}")
            if not isinstance(e, CaseFailure):
                traceback.print_exc(limit=3)
            return None
        self.passed += 1
        print(f"ok   {name}" + (f"  ({result})" if isinstance(result, str) else ""))
        return result

    def label(self, sub=None):
        self.counter += 1
        return f"{self.prefix}[{self.counter}]" + (f" {sub}" if sub else "")

    def check(self, module, arg_or_args, *, trace_args=None, convert_args=None,
              atol_rtol=None, limit=None, sub=None):
        def body():
            with torch.no_grad():
                args = [arg_or_args] if isinstance(arg_or_args, torch.Tensor) else arg_or_args
                module.eval()
                traced = torch.jit.trace(module, trace_args or args)
                nnapi_module = convert_model_to_nnapi(traced, convert_args or args)
                eager_output = module(*args)
                nnapi_output = nnapi_module(*args)
                same_q = convert_args is None or qparams(convert_args) == qparams(args)
                return compare(eager_output, nnapi_output, atol_rtol, limit, same_q)
        return self.run(self.label(sub), body)

    def check_raises(self, pattern, module, arg_or_args, *, convert_args=None, sub=None):
        """test_nnapi.py's assertRaisesRegex cases: conversion/run must fail."""
        def body():
            try:
                with torch.no_grad():
                    args = [arg_or_args] if isinstance(arg_or_args, torch.Tensor) else arg_or_args
                    module.eval()
                    traced = torch.jit.trace(module, args)
                    nnapi_module = convert_model_to_nnapi(traced, convert_args or args)
                    nnapi_module(*args)
            except Exception as e:  # noqa: BLE001
                if re.search(pattern, str(e)):
                    return
                raise CaseFailure(f"raised, but not matching {pattern!r}: {e}") from None
            raise CaseFailure(f"expected an exception matching {pattern!r}")
        return self.run(self.label(sub), body)


def float_and_quant_and_nhwc(inp_float):
    torch.manual_seed(29)
    inp_quant = qpt(inp_float, 0.03, 128)
    return [
        ("float", inp_float),
        ("float-nhwc", nhwc(inp_float)),
        ("quant", inp_quant),
        ("quant-nhwc", nhwc(inp_quant)),
    ]


# ----------------------------------------------------------------- the cases

def test_prelu(r):
    arg = torch.tensor([[1.0, -1.0, 2.0, -2.0]]).unsqueeze(-1).unsqueeze(-1)
    r.check(torch.nn.PReLU(), arg)
    multi_a = torch.nn.PReLU(4)
    with torch.no_grad():
        multi_a.weight.copy_(torch.tensor([.1, .2, .3, .4]))
    r.check(multi_a, nhwc(arg))
    r.check(multi_a, arg, trace_args=[torch.zeros(1, 4, 3, 3)],
            convert_args=[nhwc(torch.zeros(1, 4, 0, 0))], sub="flexible")


def test_quantize(r):
    r.check(torch.nn.quantized.Quantize(0.25, 2, torch.quint8),
            nhwc(torch.tensor([[[[1.0]], [[2.0]]]])))


def test_dequantize(r):
    r.check(torch.nn.quantized.DeQuantize(), nhwc(qpt([[[[1.0]], [[2.0]]]], 0.25, 2)))


def test_unsqueeze(r):
    class UnsqueezeModule(torch.nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.dim = dim

        def forward(self, arg):
            return arg.unsqueeze(self.dim)

    for dim in (-2, -1, 0, 1, 2):
        r.check(UnsqueezeModule(dim), torch.randn(4, 2, 2), sub=f"dim={dim}")


def test_reshape(r):
    class ReshapeModule(torch.nn.Module):
        def __init__(self, shape):
            super().__init__()
            self.shape = shape

        def forward(self, arg):
            return arg.reshape(self.shape)

    r.check(ReshapeModule((2, 4)), torch.randn(4, 2, 1, 1))
    r.check(ReshapeModule((8, -1)), nhwc(torch.randn(4, 2, 1, 1)))
    r.check_raises("target size", ReshapeModule((2, 4)), nhwc(torch.randn(4, 2, 1, 1)))


def test_flatten(r):
    for mod in [
        torch.nn.Flatten(),
        torch.nn.Flatten(start_dim=2, end_dim=3),
        torch.nn.Flatten(start_dim=2, end_dim=4),
        torch.nn.Flatten(start_dim=0, end_dim=-2),
        torch.nn.Flatten(start_dim=0, end_dim=4),
    ]:
        r.check(mod, torch.randn(4, 2, 1, 3, 7), sub=f"{mod.start_dim}..{mod.end_dim}")


def test_slice(r):
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

    r.check(SliceModule(1, 5, 2), torch.randn(4, 6, 2))
    r.check(SliceModule2(), torch.randn(5))
    r.check(SliceModule(1, 5, 2), torch.randn(4, 6, 2), convert_args=[torch.zeros(4, 6, 0)],
            sub="flexible")
    r.check_raises("slice with flexible shape", SliceModule(1, 5, 2), torch.randn(4, 6, 2),
                   convert_args=[torch.zeros(0, 0, 0)])


def test_cat(r):
    class CatModule(torch.nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.dim = dim

        def forward(self, t1, t2):
            return torch.cat([t1, t2], self.dim)

    r.check(CatModule(0), [torch.randn(1, 2, 3, 3), torch.randn(2, 2, 3, 3)])
    r.check(CatModule(1), [torch.randn(1, 2, 3, 3), torch.randn(1, 4, 3, 3)])
    r.check(CatModule(1), [nhwc(torch.randn(1, 2, 3, 3)), nhwc(torch.randn(1, 4, 3, 3))])


def test_pointwise_unary(r):
    for op in ["relu", "sigmoid"]:
        class UnaryModule(torch.nn.Module):
            def forward(self, arg):
                if op == "relu":
                    return torch.nn.functional.relu(arg)
                return torch.sigmoid(arg)
        r.check(UnaryModule(), torch.tensor([-1.0, 1.0]), sub=op)


def test_pointwise_binary(r):
    for op in ["add", "sub", "mul", "div"]:
        class BinaryModule(torch.nn.Module):
            def forward(self, lhs, rhs):
                if op == "add":
                    return lhs + rhs
                if op == "sub":
                    return lhs - rhs
                if op == "mul":
                    return lhs * rhs
                return lhs / rhs

        r.check(BinaryModule(), [torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])], sub=op)
        r.check(BinaryModule(), [torch.tensor([[1.0, 2.0]]),
                                 torch.tensor([[3.0, 4.0], [5.0, 6.0]])], sub=op + " broadcast")
        r.check_raises("Non-equal-rank broadcast", BinaryModule(),
                       [torch.tensor([1.0, 2.0]), torch.tensor([[3.0, 4.0], [5.0, 6.0]])], sub=op)


def test_pointwise_binary_const(r):
    class ArgPlusConst(torch.nn.Module):
        def forward(self, arg):
            return arg + torch.ones(1, 1, 1, 1)

    class ConstPlusArg(torch.nn.Module):
        def forward(self, arg):
            return torch.ones(1, 1, 1, 1) + arg

    arg_cont = torch.randn(2, 4, 6, 6)
    arg_nhwc = nhwc(arg_cont)
    for mod_class in [ArgPlusConst, ConstPlusArg]:
        for use_nhwc in [False, True]:
            arg = arg_nhwc if use_nhwc else arg_cont
            fmt = torch.channels_last if use_nhwc else torch.contiguous_format

            def body(mod_class=mod_class, arg=arg, fmt=fmt):
                out = r_check_inline(mod_class(), arg)
                if not out[1].is_contiguous(memory_format=fmt):
                    raise CaseFailure("output has the wrong memory format")
            r.run(r.label(f"{mod_class.__name__} nhwc={use_nhwc}"), body)


def r_check_inline(module, arg):
    """check() without its own bookkeeping, for cases with extra assertions."""
    with torch.no_grad():
        module.eval()
        traced = torch.jit.trace(module, [arg])
        nnapi_module = convert_model_to_nnapi(traced, [arg])
        eager = module(arg)
        out = nnapi_module(arg)
        compare(eager, out, None, None)
        return eager, out


def test_hardtanh(r):
    inp = torch.tensor([-2.0, -0.5, 0.5, 2.0, 7.0])
    r.check(torch.nn.Hardtanh(), inp)
    r.check(torch.nn.Hardtanh(0.0, 6.0), inp)
    r.check_raises("hardtanh with args", torch.nn.Hardtanh(0.0, 5.0), inp)


def test_softmax(r):
    inp = torch.tensor([[-2.0, -0.5], [0.5, 2.0]])
    r.check(torch.nn.Softmax(), inp)
    r.check(torch.nn.Softmax(dim=0), inp)
    r.check(torch.nn.Softmax(), inp, convert_args=[torch.zeros(0, 0)], sub="flexible")


def test_to(r):
    class ToCPU(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.prelu = torch.nn.PReLU()

        def forward(self, x):
            y = x.to("cpu")
            return self.prelu(y)

    arg = torch.randn(1, 2, 3, 3)
    r.check(ToCPU(), arg)
    r.check(ToCPU(), arg, convert_args=[torch.zeros(1, 2, 0, 0)], sub="flexible")


def test_detach(r):
    class DetachModule(torch.nn.Module):
        def forward(self, x):
            y = x.detach()
            return torch.nn.functional.relu(y)

    r.check(DetachModule(), torch.randn(1, 2, 3, 3))
    r.check(DetachModule(), torch.randn(1, 2, 3, 3), convert_args=[torch.zeros(1, 2, 0, 0)],
            sub="flexible")


def test_log_softmax(r):
    inp = torch.randn(3, 10)
    r.check(torch.nn.LogSoftmax(), inp)
    r.check(torch.nn.LogSoftmax(0), inp)


def test_mean(r):
    class MeanModule(torch.nn.Module):
        def __init__(self, dim, keep=False):
            super().__init__()
            self.dim = dim
            self.keep = keep

        def forward(self, t):
            return torch.mean(t, dim=self.dim, keepdim=self.keep)

    r.check(MeanModule(0), torch.randn(2, 3))
    r.check(MeanModule(1), torch.randn(2, 3))
    r.check(MeanModule([2, 3]), torch.randn(2, 3, 6, 6))
    r.check(MeanModule([2, 3]), nhwc(torch.randn(2, 3, 6, 6)))
    r.check(MeanModule([-1, -2]), nhwc(torch.randn(2, 3, 6, 6)))
    r.check(MeanModule([-1, -2], keep=True), nhwc(torch.randn(2, 3, 6, 6)))


def test_max_pool2d(r):
    for (name, inp) in float_and_quant_and_nhwc(torch.randn(2, 3, 12, 16)):
        r.check(torch.nn.MaxPool2d(2), inp, sub=name)
        r.check(torch.nn.MaxPool2d((3, 4)), inp, sub=name)
        r.check(torch.nn.MaxPool2d((3, 4), (1, 2)), inp, sub=name)


def test_avg_pool2d(r):
    for (name, inp) in float_and_quant_and_nhwc(torch.randn(2, 3, 12, 16)):
        atol_rtol = None
        limit = None
        convert_dims = (2, 3, 0, 0)
        convert_arg = torch.zeros(*convert_dims)
        for model in (torch.nn.AvgPool2d(2), torch.nn.AvgPool2d((3, 4)),
                      torch.nn.AvgPool2d((3, 4), (1, 2))):
            if "quant" in name:
                atol_rtol = (1, 0)
                limit = model(inp).numel()
                convert_arg = qpt(torch.zeros(*convert_dims), 1.0 / 16, 128)
            if "nhwc" in name:
                convert_arg = nhwc(convert_arg)
            r.check(model, inp, atol_rtol=atol_rtol, limit=limit, sub=name)
            r.check(model, inp, convert_args=[convert_arg], atol_rtol=atol_rtol, limit=limit,
                    sub=name + " flexible")


def test_adaptive_avg_pool2d(r):
    for (name, inp) in float_and_quant_and_nhwc(torch.randn(2, 3, 12, 16)):
        r.check(torch.nn.AdaptiveAvgPool2d((1, 1)), inp, sub=name)
        r.check_raises("with output size", torch.nn.AdaptiveAvgPool2d((2, 2)), inp, sub=name)


def test_upsample_nearest2d(r):
    convert_args = dict(float_and_quant_and_nhwc(torch.randn(2, 3, 0, 0)))
    for (name, inp) in float_and_quant_and_nhwc(torch.randn(2, 3, 12, 16)):
        r.check(torch.nn.UpsamplingNearest2d(size=(16, 20)), inp, sub=name)
        r.check(torch.nn.UpsamplingNearest2d(size=(24, 32)), inp, sub=name)
        r.check(torch.nn.UpsamplingNearest2d(size=(36, 48)), inp, sub=name)
        r.check(torch.nn.UpsamplingNearest2d(scale_factor=(1.5, 1.5)), inp, sub=name)
        r.check(torch.nn.UpsamplingNearest2d(scale_factor=(2.0, 2.0)), inp, sub=name)
        r.check(torch.nn.UpsamplingNearest2d(scale_factor=(3.0, 3.0)), inp, sub=name)
        r.check(torch.nn.UpsamplingNearest2d(size=(24, 32)), inp,
                convert_args=[convert_args[name]], sub=name + " flexible")
        r.check(torch.nn.UpsamplingNearest2d(scale_factor=(2.0, 2.0)), inp,
                convert_args=[convert_args[name]], sub=name + " flexible")


def test_linear(r):
    torch.manual_seed(29)
    r.check(torch.nn.Linear(16, 32), torch.randn(2, 16))
    r.check(torch.nn.Linear(16, 32), torch.randn(2, 16), convert_args=[torch.zeros(0, 16)],
            sub="flexible")


def test_conv2d(r):
    cases = [
        # in_ch, out_ch, kernel, stride, padding, groups, bias, input_dim, name
        (4, 8, (3, 3), 1, 0, 1, 1, (2, 4, 16, 16), "3x3"),
        (4, 8, (3, 3), 1, 0, 1, 0, (2, 4, 16, 16), "3x3nobias"),
        (4, 16, (3, 3), 1, 1, 1, 1, (2, 4, 16, 16), "3x3p1"),
        (8, 8, (3, 3), 2, 0, 1, 1, (2, 8, 16, 16), "3x3s2"),
        (4, 8, (5, 5), 1, 0, 1, 1, (2, 4, 16, 16), "5x5"),
        (4, 4, (3, 3), 1, 0, 4, 1, (2, 4, 16, 16), "3x3dw"),
        (8, 4, (1, 1), 1, 0, 1, 1, (2, 8, 16, 16), "1x1"),
    ]
    for kind in ["float", "float-nhwc", "quant", "quant-nhwc"]:
        for case in cases:
            in_ch, out_ch, kernel, stride, padding, groups, bias, input_dim, name = case
            inp = torch.randn(input_dim)
            model = torch.nn.Conv2d(in_ch, out_ch, kernel, stride, padding, groups=groups,
                                    bias=bool(bias))
            output_size = model(inp).numel()
            atol_rtol = None
            limit = None
            convert_dims = (0, in_ch, 0, 0)
            convert_arg = torch.zeros(*convert_dims)
            if "quant" in kind:
                model = torch.nn.Sequential(model)
                model.eval()
                model.qconfig = torch.quantization.get_default_qconfig('qnnpack')
                model = torch.quantization.prepare(model)
                model(inp)
                model = torch.quantization.convert(model)
                inp = qpt(inp, 1.0 / 16, 128)
                atol_rtol = (1, 0)
                limit = output_size * 0.03
                convert_arg = qpt(torch.zeros(*convert_dims), 1.0 / 16, 128)
            if "nhwc" in kind:
                inp = nhwc(inp)
                convert_arg = nhwc(convert_arg)
            r.check(model, inp, atol_rtol=atol_rtol, limit=limit, sub=f"{kind}-{name}")
            r.check(model, inp, convert_args=[convert_arg], atol_rtol=atol_rtol, limit=limit,
                    sub=f"{kind}-{name} flexible")


def test_conv2d_transpose(r):
    in_ch, out_ch, kernel = (5, 7, (2, 2))
    input_dim = (4, 5, 3, 3)
    inp = torch.randn(input_dim)
    convert_dims = input_dim[:2] + (0, 0)
    # As in test_nnapi.py, only the float kinds: eager PyTorch has no
    # quantized ConvTranspose2d kernel to compare against.
    for kind in ["float", "float-nhwc"]:
        model = torch.nn.ConvTranspose2d(in_ch, out_ch, kernel)
        atol_rtol = (0.0002, 0)
        convert_arg = torch.zeros(*convert_dims)
        x = inp
        if "nhwc" in kind:
            x = nhwc(inp)
            convert_arg = nhwc(convert_arg)
        r.check(model, x, atol_rtol=atol_rtol, sub=kind)
        r.check(model, x, convert_args=[convert_arg], atol_rtol=atol_rtol, sub=kind + " flexible")


def test_qadd(r):
    func = torch.nn.quantized.QFunctional()
    func.scale = 0.5
    func.zero_point = 120

    class AddMod(torch.nn.Module):
        def forward(self, lhs, rhs):
            return func.add(lhs, rhs)

    class AddReluMod(torch.nn.Module):
        def forward(self, lhs, rhs):
            return func.add_relu(lhs, rhs)

    for (name, mod) in [("add", AddMod), ("add_relu", AddReluMod)]:
        r.check(mod(), [qpt([1.0, 2.0], 0.25, 128), qpt([3.0, 4.0], 0.25, 128)], sub=name)
        args = [qpt([[1.0, 2.0]], 0.25, 128), qpt([[3.0, 4.0]], 0.25, 128)]
        r.check(mod(), args, convert_args=[qpt([[1.0, 2.0]], 0.25, 128),
                                           qpt(torch.zeros((1, 2)), 0.25, 128)],
                sub=name + " flexible rhs")
        r.check(mod(), args, convert_args=[qpt(torch.zeros((1, 2)), 0.25, 128),
                                           qpt([[3.0, 4.0]], 0.25, 128)],
                sub=name + " flexible lhs")
        r.check(mod(), args, convert_args=[qpt(torch.zeros((1, 2)), 0.25, 128),
                                           qpt(torch.zeros((1, 2)), 0.25, 128)],
                sub=name + " flexible both")


def test_qlinear(r):
    torch.manual_seed(29)
    weight = qpt(torch.randn(16, 32), 0.125, 0, torch.qint8)
    bias = torch.randn(16)
    mod = torch.nn.quantized.Linear(32, 16)
    mod.set_weight_bias(weight, bias)
    inp = qpt(torch.randn(2, 32), 0.05, 130, torch.quint8)
    r.check(mod, inp)


def test_seblock_mul(r):
    class MulModel(torch.nn.Module):
        def forward(self, lhs, rhs):
            return lhs * rhs

    r.check(MulModel(), [nhwc(torch.randn(2, 3, 4, 4)), torch.randn(1, 3, 1, 1)])


def test_multi_output(r):
    class MultiModel(torch.nn.Module):
        def forward(self, lhs, rhs) -> Tuple[torch.Tensor, torch.Tensor]:
            the_sum = lhs + rhs
            the_diff = lhs - rhs
            return the_sum, the_diff

    r.check(MultiModel(), [torch.tensor([1.0, 2.0]), torch.tensor([1.0, 3.0])])


def test_quant_extras(r):
    """Not in test_nnapi.py: more quantized paths the converter emits, with
    the same quantized tolerance (one quantum, at most 3% of elements)."""
    torch.manual_seed(3)
    x = nhwc(qpt(torch.randn(1, 4, 6, 6), 1.0 / 16, 128))

    class Unary(torch.nn.Module):
        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def forward(self, t):
            return self.fn(t)

    r.check(Unary(torch.relu), x, sub="relu")
    r.check(Unary(torch.sigmoid), x, sub="sigmoid")
    # Contiguous input here: eager quantized hardtanh in PyTorch 1.13 reads a
    # channels_last input as if it were contiguous, so eager is the wrong
    # oracle for NHWC (checked by hand: NNAPI's result is the clamped input).
    xc = qpt(torch.randn(1, 4, 6, 6), 1.0 / 16, 128)
    r.check(torch.nn.Hardtanh(0.0, 6.0), xc, sub="relu6")
    r.check(torch.nn.Hardtanh(), xc, sub="relu1")

    class Cat(torch.nn.Module):
        def forward(self, a, b):
            return torch.cat([a, b], 1)

    y = nhwc(qpt(torch.randn(1, 2, 6, 6), 1.0 / 16, 128))
    r.check(Cat(), [x, y], sub="cat")

    func = torch.nn.quantized.QFunctional()
    func.scale = 0.1
    func.zero_point = 100

    class QMul(torch.nn.Module):
        def forward(self, a, b):
            return func.mul(a, b)

    r.check(QMul(), [qpt([[0.5, -1.0, 2.0]], 0.05, 128), qpt([[1.5, 2.0, -0.5]], 0.05, 128)],
            sub="qmul")

    class ConvRelu(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(4, 8, 3, padding=1)
            self.relu = torch.nn.ReLU()

        def forward(self, t):
            return self.relu(self.conv(t))

    inp = torch.randn(2, 4, 8, 8)
    model = ConvRelu().eval()
    model = torch.quantization.fuse_modules(model, [["conv", "relu"]])
    model.qconfig = torch.quantization.get_default_qconfig("qnnpack")
    model = torch.quantization.prepare(model)
    model(inp)
    model = torch.quantization.convert(model)
    qinp = nhwc(qpt(inp, 1.0 / 16, 128))
    r.check(model, qinp, sub="conv2d_relu")


def test_compilation_options(r):
    """Not in test_nnapi.py: the relax-to-fp16 flag (accepted and ignored by
    this runtime, which computes in float32) and each compilation preference."""
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)

        def forward(self, x):
            return torch.relu(self.conv(x))

    x = torch.randn(1, 3, 8, 8)
    for pref in (0, 1, 2):
        for relax in (False, True):
            def body(pref=pref, relax=relax):
                with torch.no_grad():
                    module = Model().eval()
                    traced = torch.jit.trace(module, [x])
                    nnapi_module = convert_model_to_nnapi(
                        traced, [x], compilation_preference=pref, relax_f32_to_f16=relax)
                    return compare(module(x), nnapi_module(x), (1e-4, 1e-4), None)
            r.run(r.label(f"preference={pref} relax={relax}"), body)


TESTS = [v for k, v in list(globals().items()) if k.startswith("test_")]


def main():
    name_filter = sys.argv[1] if len(sys.argv) > 1 else None
    torch.backends.quantized.engine = "qnnpack"
    r = Runner(name_filter)
    for test in TESTS:
        torch.manual_seed(0)
        r.prefix = test.__name__[len("test_"):]
        r.counter = 0
        test(r)
    if r.failures:
        print("failed cases:\n  " + "\n  ".join(r.failures))
    print(f"{r.passed} passed, {r.failed} failed")
    return 0 if r.failed == 0 and r.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())

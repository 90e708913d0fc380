#!/usr/bin/env python3
"""Runs models converted by PyTorch's own NNAPI converter on the host runtime.

The cases of PyTorch's test/test_nnapi.py come from the fixtures that
tools/make_fixtures.py writes (tests/reference/README.md): for every case the
reference converts, ref/converted.pt is what
torch.backends._nnapi.prepare.convert_model_to_nnapi returned. It is loaded,
RUN on args.pt (its Compilation dlopens libneuralnetworks.so) and compared with
eager.pt, eager PyTorch's outputs. Cases the reference refuses (test_nnapi.py's
assertRaisesRegex blocks) have nothing to run and are left to
tests/reference. Then cases that are not in test_nnapi.py: more quantized
paths, each compilation preference and the relax-to-fp16 flag, built and
converted here.

Tolerances follow test_nnapi.py: float outputs use torch.testing's float32
defaults unless the test gives (atol, rtol) (conv2d_transpose, and the
quantized conv2d and avg_pool2d cases). Quantized outputs must have the same
scale and zero point, differ by at most one quantum everywhere, and differ at
all in at most `limit` elements (the test's limit, otherwise the project rule
of 3% of the elements).

Usage: test_reference_models.py [--fixtures DIR] [NAME_REGEX]
(DIR defaults to $NNAPI_FIXTURES_DIR, the fixtures' test_nnapi directory).
Exits non-zero if any case fails or none ran; the last line is
"N passed, M failed".
"""
import argparse
import ctypes
import json
import os
import re
import sys
import traceback

import torch
from torch.backends._nnapi.prepare import convert_model_to_nnapi

# The fixture generator's helpers (PyTorch test_nnapi.py's qpt and nhwc).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from fixtures_common import nhwc, qpt  # noqa: E402
import numeric_rules  # noqa: E402



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
        problem, stats, off = numeric_rules.compare_quantized(
            eager, nnapi, limit=limit, qparams_must_match=qparams_must_match)
        if problem:
            raise CaseFailure("quantized mismatch: " + problem)
        return stats if off else None
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


# ------------------------------------------------------ the test_nnapi cases

def tolerance(name, numel):
    """(atol_rtol, limit) as test_nnapi.py's check() call for this case gives them."""
    if name.startswith("conv2d_transpose-"):
        return (0.0002, 0), None          # test_conv2d_transpose
    if name.startswith("conv2d-quant"):
        return (1, 0), numel * 0.03       # test_conv2d: limit = output_size * 0.03
    if name.startswith("avg_pool2d-quant"):
        return (1, 0), numel              # test_avg_pool2d: limit = model(inp).numel()
    return None, None


def spec_qparams(spec):
    """(scale, zero_point) of a quint8 --input spec (case.json), else None."""
    fields = dict(f.split("=", 1) for f in spec.split(",")[1:] if "=" in f)
    if fields.get("dtype") != "quint8":
        return None
    return (float(fields["scale"]), int(fields["zero_point"]))


def expect_refused_at_finish(case_dir, case):
    """PyTorch's converter wrote a model that breaks NeuralNetworks.h (case.json's
    "validator_refuses"): loading it must fail when the model is built, at
    ANeuralNetworksModel_addOperation (rules that need no values) or _finish,
    with the validator's finding as the runtime's last error."""
    args = list(torch.load(os.path.join(case_dir, "args.pt")))
    nnapi_module = torch.jit.load(os.path.join(case_dir, "ref", "converted.pt"))
    try:
        nnapi_module(*args)
    except RuntimeError:
        pass
    else:
        raise CaseFailure("ran, but the runtime must refuse it: " + case["validator_refuses"])
    lib = ctypes.CDLL("libneuralnetworks.so")
    function, message = ctypes.c_char_p(), ctypes.c_char_p()
    lib.ANeuralNetworksHost_getLastError(ctypes.byref(function), ctypes.byref(message), None)
    last = (function.value or b"").decode() + ": " + (message.value or b"").decode()
    if not re.match(r"ANeuralNetworksModel_(addOperation|finish): operation \d+ ", last):
        raise CaseFailure("refused, but not by the validator: " + last)
    return last


def run_fixture(r, case_dir):
    with open(os.path.join(case_dir, "case.json")) as f:
        case = json.load(f)
    name = case["name"]
    # PyTorch's own test cases; the "beyond" fixtures are not test_nnapi.py's.
    if case["expect"] != "ok" or case["source"] != "test_nnapi":
        return
    if case.get("validator_refuses"):
        r.run(name + " (refused)", lambda: expect_refused_at_finish(case_dir, case))
        return

    def body():
        with torch.no_grad():
            args = list(torch.load(os.path.join(case_dir, "args.pt")))
            eager = list(torch.load(os.path.join(case_dir, "eager.pt")))
            nnapi_module = torch.jit.load(os.path.join(case_dir, "ref", "converted.pt"))
            out = nnapi_module(*args)
            nnapi = list(out) if isinstance(out, (list, tuple)) else [out]
            # The converter saw the case's convert args: where their
            # quantization differs from the run-time args', compare integers.
            same_q = [spec_qparams(s) for s in case["inputs"]] == qparams(args)
            notes = []
            if len(nnapi) != len(eager):
                raise CaseFailure(f"{len(nnapi)} outputs, eager has {len(eager)}")
            for e, n in zip(eager, nnapi):
                atol_rtol, limit = tolerance(name, e.numel())
                note = compare(e, n, atol_rtol, limit, same_q)
                if note:
                    notes.append(note)
            # test_pointwise_binary_const also checks the output's memory format.
            if name.startswith("pointwise_binary_const-"):
                fmt = torch.channels_last if name.endswith("-nhwc") else torch.contiguous_format
                if not nnapi[0].is_contiguous(memory_format=fmt):
                    raise CaseFailure("output has the wrong memory format")
            return "; ".join(notes) or None
    r.run(name, body)


def run_fixtures(r, fixtures_dir):
    names = sorted(d for d in os.listdir(fixtures_dir)
                   if os.path.isfile(os.path.join(fixtures_dir, d, "case.json")))
    for d in names:
        run_fixture(r, os.path.join(fixtures_dir, d))
    return len(names)


# --------------------------------------------------- cases not in test_nnapi.py

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
    """Not in test_nnapi.py: the relax-to-fp16 flag and each compilation
    preference. Relaxed, this runtime rounds every float32 result to float16
    (src/runtime/README.md), so those runs are compared with tolerances that
    fit float16 (5 * 2^-10, as Android's tests allow relaxed results), and
    their outputs must be float16 values."""
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
                    want, got = module(x), nnapi_module(x)
                    if relax:
                        # Every value of a relaxed model's output is a float16.
                        assert torch.equal(got, got.half().float()), "relaxed: not float16 values"
                        assert not torch.equal(want, want.half().float())
                        return compare(want, got, (5 / 1024, 5 / 1024), None)
                    return compare(want, got, (1e-4, 1e-4), None)
            r.run(r.label(f"preference={pref} relax={relax}"), body)


TESTS = [test_quant_extras, test_compilation_options]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("name_filter", nargs="?", help="regex (re.search) on case names")
    p.add_argument("--fixtures", default=os.environ.get("NNAPI_FIXTURES_DIR"),
                   help="tools/make_fixtures.py's test_nnapi output (default: "
                        "$NNAPI_FIXTURES_DIR)")
    opts = p.parse_args()
    if not opts.fixtures or not os.path.isdir(opts.fixtures):
        p.error("--fixtures or $NNAPI_FIXTURES_DIR must name a directory made by "
                "tools/make_fixtures.py")
    torch.backends.quantized.engine = "qnnpack"
    r = Runner(opts.name_filter)
    if run_fixtures(r, opts.fixtures) == 0:
        print(f"no fixtures in {opts.fixtures}")
        return 1
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

#!/usr/bin/env python3
"""--cpu-fallback with flexible (0) --input sizes, as docs/cpu-fallback.md states it.

Usage: fallback_flex_test.py BIN WORK (with libneuralnetworks.so, the host
runtime, on LD_LIBRARY_PATH). Converts small models with an operator
nnapi-convert does not lower (logcumsumexp, sort, rot90 between quantized
convolutions, torchvision's NMS) with a flexible batch (NCHW and NHWC), a
flexible height and width and a flexible sequence length, and checks:
- each NNAPI model's input is flexible where the model's boundary tensor
  follows the input's flexible size (`inspect --json`: dims null), fixed
  elsewhere;
- the converted module, loaded afresh for each size (an NNAPI model's
  flexible sizes are set when it first runs, as in PyTorch's NnapiModule),
  gives eager PyTorch's outputs at two or more sizes (torch.testing's float32
  tolerances; a comparison a constant output would pass fails);
- a node that cannot take a flexible size in NNAPI (cumsum along it, NNAPI's
  lowering refuses) and a node reading a tensor whose rank follows the input
  size (squeeze(0) of a batch) stay TorchScript;
- `--verify` checks a split module at its default batch (1), and with
  `--verify-shape` at another;
- `check --cpu-fallback` prints the split of a flexible model;
- a model that fails at one of the sizes the converter tries is refused
  (exit 1) naming the size and the node, and writes nothing.
Prints "fallback-flex: all passed" when every check passed.
"""
import glob
import json
import os
import sys

import torch
import torch.nn as nn

sys.dont_write_bytecode = True  # importing cli_checks writes no __pycache__ into the sources
from cli_checks import check, finish, path, run  # noqa: E402
from fallback_checks import (CumsumBetween, Detector, QuantFlip, TopK, compare,  # noqa: E402
                             quantized, save)


class Sequence(nn.Module):
    """A sequence model: cumsum along the (flexible) sequence, logcumsumexp over features."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 8)

    def forward(self, x):
        y = torch.cumsum(torch.relu(self.a(x)), 1)
        return self.b(torch.logcumsumexp(y, 2)) * 0.5


class SqueezeBatch(nn.Module):
    """squeeze(0) drops a batch of 1 only: the rank after it follows the batch."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)

    def forward(self, x):
        return torch.logcumsumexp(self.a(x), 1).squeeze(0) * 2.0 + 1.0


class BatchOfOne(nn.Module):
    """Takes a batch of 1 only: the view fails for any other batch."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)

    def forward(self, x):
        return torch.logcumsumexp(self.a(x), 1).view(1, 8) * 2.0


torch.manual_seed(0)
models = {
    "cumsum": save("cumsum", CumsumBetween(), torch.randn(1, 3, 8, 8)),
    "topk": save("topk", TopK(), torch.randn(1, 3, 8, 8)),
    "detector": save("detector", Detector(), torch.randn(1, 3, 32, 32)),
    "sequence": save("sequence", Sequence(), torch.randn(1, 8, 16)),
    "squeeze": save("squeeze", SqueezeBatch(), torch.randn(1, 8)),
    "one": save("one", BatchOfOne(), torch.randn(1, 8)),
}
torch.manual_seed(0)
models["qflip"] = save("qflip", quantized(QuantFlip().eval(), torch.randn(1, 3, 8, 8)),
                       torch.randn(1, 3, 8, 8))
torchvision_ops = glob.glob("/usr/lib/python3/dist-packages/torchvision/_C*.so")[0]


def model_inputs(module_path):
    """The dims of each NNAPI model's inputs (None: flexible), by `inspect --json`."""
    rc, text = run("inspect", module_path, "--json", "--ops-library", torchvision_ops,
                   stdout_only=True)
    reports = json.loads(text) if rc == 0 else []
    reports = [reports] if isinstance(reports, dict) else reports  # one NNAPI model: no list
    return [[op["dims"] for op in r["operands"] if op["source"]["kind"] == "model_input"]
            for r in reports]


# name, --input, extra flags, each NNAPI model's input dims, code TorchScript
# keeps, code it must not keep, sizes checked against eager
cases = [
    ("cumsum", "0x3x8x8", [], [[[None, 3, 8, 8]], [[None, 8, 8, 8]]], ["torch.logcumsumexp"],
     ["_convolution"], [(1, 3, 8, 8), (2, 3, 8, 8), (5, 3, 8, 8)]),
    # NHWC: NNAPI's inputs are channels-last ([N, H, W, C]).
    ("cumsum", "0x3x8x8", ["--nhwc"], [[[None, 8, 8, 3]], [[None, 8, 8, 8]]],
     ["torch.logcumsumexp"], ["_convolution"], [(1, 3, 8, 8), (3, 3, 8, 8)]),
    ("cumsum", "1x3x0x0", [], [[[1, 3, None, None]], [[1, 8, None, None]]],
     ["torch.logcumsumexp"], ["_convolution"], [(1, 3, 8, 8), (1, 3, 12, 10), (1, 3, 5, 17)]),
    # Quantized: the rot90 between two quantized convolutions stays TorchScript.
    ("qflip", "0x3x8x8", [], [[[None, 3, 8, 8]], [[None, 8, 8, 8]]], ["torch.rot90"],
     ["conv2d"], [(1, 3, 8, 8), (2, 3, 8, 8), (3, 3, 8, 8)]),
    # The second NNAPI model reads the sort's result: flexible batch, 10 classes.
    ("topk", "0x3x8x8", [], [[[None, 3, 8, 8]], [[None, 10]]], ["torch.sort"],
     ["_convolution", "linear"], [(1, 3, 8, 8), (3, 3, 8, 8)]),
    # The detector's box decoding (a reshape(-1, 4) of the box map) runs in
    # NNAPI over a flexible height and width, its NMS in TorchScript.
    ("detector", "1x3x0x0", ["--ops-library", torchvision_ops], [[[1, 3, None, None]]],
     ["torchvision.nms", "torch.index"], ["_convolution"], [(1, 3, 32, 32), (1, 3, 64, 48)]),
    # cumsum along the flexible sequence stays TorchScript (NNAPI's lowering
    # refuses a flexible cumsum; with a fixed length it runs in NNAPI).
    ("sequence", "1x0x16", [], [[[1, None, 16]], [[1, None, 16]]],
     ["torch.cumsum", "torch.logcumsumexp"], ["linear"], [(1, 8, 16), (1, 5, 16), (1, 13, 16)]),
    # squeeze(0) of a flexible batch stays TorchScript, and so does the
    # arithmetic after it: its input is 1-D at batch 1, 2-D otherwise.
    ("squeeze", "0x8", [], [[[None, 8]]], ["torch.logcumsumexp", "torch.squeeze", "torch.mul"],
     ["linear"], [(1, 8), (2, 8), (4, 8)]),
]
for name, spec, flags, inputs, kept, gone, sizes in cases:
    label = f"{name} {spec}" + (" --nhwc" if "--nhwc" in flags else "")
    out = path(f"{name}-{spec}{'-nhwc' if '--nhwc' in flags else ''}.nnapi.pt")
    rc, text = run(path(name + ".pt"), "--input", spec, "--cpu-fallback", *flags, "-o", out)
    check(f"{label}: converts with --cpu-fallback", rc == 0, text)
    if rc != 0:
        continue
    got = model_inputs(out)
    check(f"{label}: the NNAPI models' inputs are {inputs}", got == inputs, got)
    code = torch.jit.load(out).code
    check(f"{label}: TorchScript keeps {kept}, not {gone}",
          all(k in code for k in kept) and not any(g in code for g in gone), code)
    torch.manual_seed(100)  # not the seeds the converter ran the model with
    for shape in sizes:
        compare(f"{label}: matches eager at {'x'.join(map(str, shape))}", torch.jit.load(out),
                models[name], [torch.randn(*shape)])

# With a fixed sequence length the cumsum runs in NNAPI: what keeps it in
# TorchScript above is the flexible size.
rc, text = run(path("sequence.pt"), "--input", "1x8x16", "--cpu-fallback", "-o",
               path("sequence-fixed.nnapi.pt"))
check("sequence 1x8x16: the cumsum runs in NNAPI",
      rc == 0 and "torch.cumsum" not in torch.jit.load(path("sequence-fixed.nnapi.pt")).code,
      text)

# --verify checks a split module with a flexible batch at its default batch
# (1) and at the batch --verify-shape asks for, NCHW and NHWC.
for flags in ([], ["--nhwc"]):
    for batch in (1, 3):
        shape = ["--verify-shape", f"{batch}x3x8x8"] if batch != 1 else []
        rc, text = run(path("cumsum.pt"), "--input", "0x3x8x8", "--cpu-fallback", *flags,
                       "--verify", "--verify-strict", *shape, "-o",
                       path("cumsum-verified.nnapi.pt"))
        check(f"--verify {' '.join(flags + shape)}: checks the split module at batch {batch}",
              rc == 0 and f"verify on inputs {batch}x3x8x8" in text
              and f"output 0: {batch}x4x8x8 Float" in text and ", ok" in text, text)

rc, text = run("check", path("sequence.pt"), "--input", "1x0x16", "--cpu-fallback")
check("check --cpu-fallback with a flexible length prints the split",
      rc == 0 and "--cpu-fallback: 2 NNAPI model(s); 2 node(s) stay TorchScript" in text, text)

# A model that takes a batch of 1 only, converted with a flexible batch: the
# converter runs it at batch 2, where its view fails.
rc, text = run(path("one.pt"), "--input", "0x8", "--cpu-fallback", "-o", path("x.pt"))
check("a model failing at a size the converter tries: exit 1 naming the size and the node",
      rc == 1 and "on inputs of size 2x8 at node aten::view at " in text
      and "fallback_flex_test.py:" in text and "shape '[1, 8]' is invalid" in text
      and "give that size fixed" in text and "Traceback" not in text
      and text.strip().count("\n") == 0, text)
check("no output is left by the refusal", not os.path.exists(path("x.pt")))

finish("fallback-flex")

#!/usr/bin/env python3
"""Models as they are published (issue 33, items 2, 3 and 5): scripted entry
points with arguments that are no tensors, wrappers left in training mode,
and one entry point among several.

Usage: args_test.py BIN WORK (with libneuralnetworks.so, the host runtime, on
LD_LIBRARY_PATH). The models are scripted here with Debian's PyTorch. Each
conversion runs with --verify (the converted module against eager PyTorch
given the same argument values), and the converted module is then loaded by
PyTorch and called as the app calls the original - with the same arguments,
on inputs other than --verify's - and compared with eager PyTorch:
- a VAD-like model `forward(self, x, sr: int)` whose branches on sr pick
  other weights, converted at sr=16000 and at sr=8000 (each matches eager at
  its sr, and the two differ), the value in --report and `inspect`, the
  module's forward still taking sr and raising for another value;
- List[Tensor] (a D2Go-like loop over the list) and Tuple[Tensor, Tensor]
  arguments given as list=/tuple= specs, with float=, bool= and none values;
- the usage errors (exit 2, naming the spec);
- training mode: a wrapper in training mode over eval submodules converts
  (with a note); a BatchNorm in training mode, or a wrapper whose forward
  reads self.training, is refused naming --eval; --eval converts it, as eval;
- --submodule (dotted) and --method, and the refusals listing what exists;
- a manifest entry with a value spec and the options eval/submodule/method;
- --quantize with list=, int= and float= specs (calibration, proof, --verify).
Prints "args: all passed" when every check passed.
"""
import json
import os
import sys
from typing import List, Optional, Tuple

import torch
import torch.nn as nn
from torch import Tensor

sys.dont_write_bytecode = True  # importing cli_checks writes no __pycache__ into the sources
from cli_checks import check, finish, path, run  # noqa: E402

torch.manual_seed(0)


def close(a, b):
    return a.shape == b.shape and torch.allclose(a, b, rtol=1e-4, atol=1e-5)


def varies(t):
    """A comparison a constant output would pass proves nothing."""
    return float(t.max() - t.min()) > 1e-3


def converts(name, *args):
    """Converts path(name + '.pt') with --verify; returns (ok, text, module)."""
    out = path(name + ".nnapi.pt")
    if os.path.exists(out):
        os.remove(out)
    rc, text = run(path(name + ".pt"), "-o", out, "--verify", *args)
    ok = rc == 0 and os.path.exists(out)
    return ok, text, (torch.jit.load(out) if ok else None)


# --- item 2: values -----------------------------------------------------------


class Vad(nn.Module):
    """Silero-like: the sampling rate picks the weights and scales the input."""

    def __init__(self):
        super().__init__()
        self.l16 = nn.Linear(64, 8)
        self.l8 = nn.Linear(64, 8)
        self.out = nn.Linear(8, 1)

    def forward(self, x: Tensor, sr: int):
        if sr == 16000:
            y = torch.relu(self.l16(x))
        elif sr == 8000:
            y = torch.tanh(self.l8(x * (sr / 16000.0)))
        else:
            raise ValueError("unsupported sampling rate")
        return torch.sigmoid(self.out(y))


vad = torch.jit.script(Vad().eval())
vad.save(path("vad.pt"))
x = torch.randn(3, 64)
check("premise: the VAD gives other outputs at 16000 and 8000",
      not torch.allclose(vad(x, 16000), vad(x, 8000)) and varies(vad(x, 16000)))

rc, text = run(path("vad.pt"), "--input", "3x64", "-o", path("vad_bad.nnapi.pt"))
check("a tensor spec too few: exit 2 naming sr and int=N",
      rc == 2 and "'sr' (int)" in text and "int=N" in text, text)
rc, text = run(path("vad.pt"), "--input", "3x64", "--input", "16000", "-o", path("vad_bad.nnapi.pt"))
check("a tensor spec for sr: exit 2 naming the spec and int=N",
      rc == 2 and "input spec '16000'" in text and "int=N" in text, text)
rc, text = run(path("vad.pt"), "--input", "int=16000", "--input", "3x64", "-o",
               path("vad_bad.nnapi.pt"))
check("int= for the tensor argument: exit 2 naming the spec",
      rc == 2 and "input spec 'int=16000'" in text and "'x' (Tensor)" in text, text)
for bad in ["int=16k", "float=x", "bool=yes", "list=", "list=3x64+3xq", "nones"]:
    rc, text = run(path("vad.pt"), "--input", "3x64", "--input", bad, "-o",
                   path("vad_bad.nnapi.pt"))
    check(f"malformed spec {bad!r}: exit 2 naming it", rc == 2 and f"input spec '{bad}'" in text,
          text)
rc, text = run(path("vad.pt"), "--input", "3x64", "--input", "int=44100", "-o",
               path("vad_bad.nnapi.pt"))
check("a value the model raises for: exit 1", rc == 1 and "unsupported sampling rate" in text,
      text)

for sr in (16000, 8000):
    ok, text, conv = converts("vad", "--input", "3x64", "--input", f"int={sr}", "--report",
                              path(f"vad{sr}.json"))
    check(f"VAD at sr={sr} converts and verifies",
          ok and "output 0" in text and f"specialized on sr = int={sr}" in text, text)
    if not ok:
        continue
    x2 = torch.randn(3, 64)
    got, want = conv(x2, sr), vad(x2, sr)
    check(f"VAD at sr={sr}: the converted module called with sr matches eager", close(got, want),
          (got, want))
    other = 8000 if sr == 16000 else 16000
    check(f"VAD at sr={sr}: it differs from eager at sr={other}",
          not torch.allclose(got, vad(x2, other), atol=1e-3))
    try:
        conv(x2, other)
        raised = ""
    except Exception as e:  # noqa: BLE001 - TorchScript raises its own error type
        raised = str(e)
    check(f"VAD at sr={sr}: called with sr={other} it raises", f"sr = int={sr}" in raised, raised)
    report = json.load(open(path(f"vad{sr}.json")))["models"][0]
    check(f"VAD at sr={sr}: --report records the arguments",
          report.get("arguments") == [{"name": "x", "type": "Tensor", "spec": "3x64"},
                                      {"name": "sr", "type": "int", "spec": f"int={sr}"}], report)
    rc, text = run("inspect", path("vad.nnapi.pt"))
    check(f"VAD at sr={sr}: inspect shows the value", rc == 0 and f"sr (int): int={sr}" in text,
          text)
    rc, text = run("inspect", path("vad.nnapi.pt"), "--json", stdout_only=True)
    check(f"VAD at sr={sr}: inspect --json shows the value",
          rc == 0 and json.loads(text).get("arguments") == ["x (Tensor): 3x64",
                                                            f"sr (int): int={sr}"], text)

# The same model with an unlowered node after the branch: --cpu-fallback's
# module takes sr too.


class VadSorted(nn.Module):
    def __init__(self):
        super().__init__()
        self.vad = Vad()

    def forward(self, x: Tensor, sr: int):
        y = self.vad(x, sr)
        return torch.sort(y * 3.0, 0)[0]


vad_sorted = torch.jit.script(VadSorted().eval())
vad_sorted.save(path("vad_sorted.pt"))
ok, text, conv = converts("vad_sorted", "--input", "3x64", "--input", "int=8000",
                          "--cpu-fallback")
check("--cpu-fallback with int=8000 converts and verifies", ok, text)
if ok:
    x2 = torch.randn(3, 64)
    check("--cpu-fallback: the module called with sr matches eager",
          close(conv(x2, 8000), vad_sorted(x2, 8000)) and "nnapi_0" in dict(conv.named_children()))


class Multi(nn.Module):
    """D2Go-like: a loop over a List[Tensor], plus float, bool and Optional."""

    def __init__(self):
        super().__init__()
        self.body = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, inputs: List[Tensor], scale: float, flag: bool,
                mask: Optional[Tensor] = None):
        outs: List[Tensor] = []
        for image in inputs:
            outs.append(self.body(image).mean([2, 3]))
        y = torch.cat(outs, 0) * scale
        if flag:
            y = torch.relu(y)
        if mask is not None:
            y = y * mask
        return y


multi = torch.jit.script(Multi().eval())
multi.save(path("multi.pt"))
images = [torch.randn(1, 3, 16, 16), torch.randn(1, 3, 24, 24)]
check("premise: flag and scale change Multi's output",
      not torch.allclose(multi(images, 0.5, True), multi(images, 2.0, False)))
for scale, flag in ((0.5, "true"), (2.0, "false")):
    ok, text, conv = converts("multi", "--input", "list=1x3x16x16+1x3x24x24", "--input",
                              f"float={scale}", "--input", f"bool={flag}", "--input", "none")
    check(f"List[Tensor] with float={scale} bool={flag} none converts and verifies", ok, text)
    if ok:
        imgs = [torch.randn(1, 3, 16, 16), torch.randn(1, 3, 24, 24)]
        got, want = conv(imgs, scale, flag == "true", None), multi(imgs, scale, flag == "true")
        check(f"List[Tensor] float={scale} bool={flag}: the module called with the list matches",
              close(got, want) and varies(want), (got, want))
        try:
            conv(imgs[:1], scale, flag == "true", None)
            raised = ""
        except Exception as e:  # noqa: BLE001
            raised = str(e)
        check("a list of another length raises", "list=" in raised, raised)
        rc, text = run("inspect", path("multi.nnapi.pt"))
        check("inspect shows the list and the values",
              "inputs (List[Tensor]): list=1x3x16x16+1x3x24x24" in text
              and f"flag (bool): bool={flag}" in text and "mask (Optional[Tensor]): none" in text,
              text)


class Pair(nn.Module):
    def forward(self, pair: Tuple[Tensor, Tensor], gain: float):
        a, b = pair
        return torch.tanh(a * gain + pair[1] * b)


pair = torch.jit.script(Pair())
pair.eval()
pair.save(path("pair.pt"))
ok, text, conv = converts("pair", "--input", "tuple=2x5+2x5", "--input", "float=1.5")
check("Tuple[Tensor, Tensor] converts and verifies", ok, text)
if ok:
    a, b = torch.randn(2, 5), torch.randn(2, 5)
    check("Tuple: the module called with the tuple matches", close(conv((a, b), 1.5),
                                                                    pair((a, b), 1.5)))
rc, text = run(path("pair.pt"), "--input", "tuple=2x5+2x5+2x5", "--input", "float=1.5")
check("a tuple of another size: exit 2 naming the spec",
      rc == 2 and "input spec 'tuple=2x5+2x5+2x5'" in text and "tuple of 2 tensors" in text, text)
rc, text = run(path("pair.pt"), "--input", "list=2x5+2x5", "--input", "float=1.5")
check("list= for a Tuple argument: exit 2 suggesting tuple=",
      rc == 2 and "input spec 'list=2x5+2x5'" in text and "tuple=" in text, text)

# --- item 3: training mode ----------------------------------------------------


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        with torch.no_grad():  # running statistics far from a batch's own
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = Block()

    def forward(self, x):
        return self.net(x) * 2.0


class ReadsFlag(Wrapper):
    def forward(self, x):
        y = self.net(x)
        if self.training:
            y = y * 3.0
        return y


top_only = Wrapper()
top_only.net.eval()
top_only.training = True  # the wrapper alone, as published files have it
top_only = torch.jit.script(top_only)
top_only.save(path("top_training.pt"))
check("premise: the wrapper is in training mode, its submodules are not",
      top_only.training and not top_only.net.training and not top_only.net.bn.training)
ok, text, conv = converts("top_training", "--input", "1x3x8x8")
check("a wrapper in training mode over eval submodules converts, with a note",
      ok and "the top-level module (Wrapper)" in text and "converted as is" in text, text)
if ok:
    xi = torch.randn(1, 3, 8, 8)
    check("... and matches eager", close(conv(xi), torch.jit.load(path("top_training.pt"))(xi)))

all_training = torch.jit.script(Wrapper().train())
all_training.save(path("bn_training.pt"))
rc, text = run(path("bn_training.pt"), "--input", "1x3x8x8", "-o", path("bn_bad.nnapi.pt"))
check("a BatchNorm in training mode: refused, exit 1, naming it and --eval",
      rc == 1 and "'net.bn' (BatchNorm2d)" in text and "--eval" in text, text)
ok, text, conv = converts("bn_training", "--input", "1x3x8x8", "--eval")
check("--eval converts it and verifies, with a note", ok and "--eval:" in text, text)
if ok:
    xi = torch.randn(1, 3, 8, 8)
    eager = torch.jit.load(path("bn_training.pt"))
    eager.eval()
    check("... and matches eager in eval mode", close(conv(xi), eager(xi)) and varies(eager(xi)))

reads = torch.jit.script(ReadsFlag())
reads.net.eval()
reads.save(path("reads_flag.pt"))
check("premise: only the top reads self.training", reads.training and not reads.net.training)
rc, text = run(path("reads_flag.pt"), "--input", "1x3x8x8", "-o", path("reads_bad.nnapi.pt"))
check("a wrapper whose forward reads self.training: refused naming it and --eval",
      rc == 1 and "the top-level module (ReadsFlag)" in text and "--eval" in text, text)
ok, text, conv = converts("reads_flag", "--input", "1x3x8x8", "--eval")
check("--eval converts the wrapper that reads self.training", ok, text)
if ok:
    xi = torch.randn(1, 3, 8, 8)
    eager = torch.jit.load(path("reads_flag.pt"))
    eager.eval()
    check("... as in eval mode", close(conv(xi), eager(xi)))

# --- item 5: one entry point among several -------------------------------------


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x)).mean([2, 3])

    @torch.jit.export
    def detect(self, x, gain: float):
        return torch.sigmoid(self.forward(x) * gain)


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = Net()

    def forward(self, x):
        return self.body(x)


class App(nn.Module):
    """Python-side logic NNAPI cannot hold around the networks."""

    def __init__(self):
        super().__init__()
        self._model = Net()
        self.backbone = Backbone()

    def forward(self, x, threshold: float):
        return torch.nonzero(self._model(x) > threshold)

    @torch.jit.export
    def preprocess(self, x):
        return (x - 0.5) * 2.0


app = torch.jit.script(App().eval())
app.save(path("app.pt"))
xi = torch.randn(1, 3, 8, 8)
entries = [
    ("--submodule _model", ["--submodule", "_model", "--input", "1x3x8x8"], lambda c: c(xi),
     lambda: app._model(xi)),
    ("--submodule backbone.body", ["--submodule", "backbone.body", "--input", "1x3x8x8"],
     lambda c: c(xi), lambda: app.backbone.body(xi)),
    ("--method preprocess", ["--method", "preprocess", "--input", "1x3x8x8"], lambda c: c(xi),
     lambda: app.preprocess(xi)),
    ("--submodule _model --method detect with float=",
     ["--submodule", "_model", "--method", "detect", "--input", "1x3x8x8", "--input",
      "float=3.0"], lambda c: c(xi, 3.0), lambda: app._model.detect(xi, 3.0)),
]
for label, args, call, eager in entries:
    ok, text, conv = converts("app", *args)
    check(f"{label} converts and verifies, with a note", ok and "in place of the model's forward"
          in text, text)
    if ok:
        got, want = call(conv), eager()
        check(f"{label}: the module's forward runs that entry", close(got, want) and varies(want),
              (got, want))
rc, text = run(path("app.pt"), "--input", "1x3x8x8", "--input", "float=0.5")
check("the whole app (nonzero in its forward): exit 1 pointing at --submodule and its submodules",
      rc == 1 and "aten::nonzero" in text and "--submodule PATH" in text
      and "_model, backbone" in text, text)
rc, text = run(path("app.pt"), "--submodule", "model", "--input", "1x3x8x8")
check("--submodule that does not exist: exit 2 listing the submodules",
      rc == 2 and "--submodule 'model'" in text and "_model, backbone" in text, text)
rc, text = run(path("app.pt"), "--submodule", "backbone.head", "--input", "1x3x8x8")
check("--submodule backbone.head: exit 2 naming backbone and listing body",
      rc == 2 and "'backbone' in" in text and "no submodule 'head'" in text and "body" in text,
      text)
rc, text = run(path("app.pt"), "--submodule", "_model", "--method", "track", "--input", "1x3x8x8")
check("--method that does not exist: exit 2 listing the methods",
      rc == 2 and "--method 'track'" in text and "forward" in text and "detect" in text, text)

# --- a manifest --------------------------------------------------------------
manifest = [
    {"model": "vad.pt", "inputs": ["3x64", "int=8000"], "output": "m_vad.nnapi.pt"},
    {"model": "bn_training.pt", "inputs": ["1x3x8x8"], "output": "m_bn.nnapi.pt",
     "options": {"eval": True}},
    {"model": "app.pt", "inputs": ["1x3x8x8", "float=3.0"], "output": "m_app.nnapi.pt",
     "options": {"submodule": "_model", "method": "detect"}},
]
with open(path("manifest.json"), "w") as f:
    json.dump(manifest, f)
rc, text = run("--manifest", path("manifest.json"), "--verify", "--report", path("m.json"), "-q")
check("a manifest with int=, eval, submodule and method converts and verifies", rc == 0, text)
if rc == 0:
    models = json.load(open(path("m.json")))["models"]
    check("the manifest's report records the value and the notes",
          models[0]["arguments"][1]["spec"] == "int=8000"
          and any("--eval" in n for n in models[1]["notes"]), models)
    got = torch.jit.load(path("m_vad.nnapi.pt"))(x, 8000)
    check("the manifest's VAD matches eager at 8000", close(got, vad(x, 8000)))
with open(path("bad_manifest.json"), "w") as f:
    json.dump([{"model": "vad.pt", "inputs": ["3x64", "int=eight"]}], f)
rc, text = run("--manifest", path("bad_manifest.json"))
check("a manifest with a malformed value spec: exit 2 naming it",
      rc == 2 and "input spec 'int=eight'" in text, text)

# --- --quantize with value and list specs --------------------------------------
# The quantized module is calibrated, proven and verified with the values
# given; it takes the same arguments as the model.
class QuantArgs(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3)
        self.b = nn.Conv2d(3, 8, 3)

    def forward(self, xs: List[Tensor], mode: int, scale: float):
        if mode == 1:
            y = torch.relu(self.a(xs[0])) + 0.5 * torch.relu(self.b(xs[1]))
        else:
            y = torch.relu(self.b(xs[0]))
        return y * scale


torch.jit.script(QuantArgs().eval()).save(path("quant_args.pt"))
calibration = [(torch.randn(1, 3, 8, 8), torch.randn(1, 3, 8, 8)) for _ in range(8)]
torch.save(calibration, path("quant_args_cal.pt"))
ok, text, m = converts("quant_args", "--input", "list=1x3x8x8+1x3x8x8", "--input", "int=1",
                       "--input", "float=0.5", "--quantize", "uint8", "--calibration",
                       path("quant_args_cal.pt"))
check("--quantize with list=, int= and float= specs converts, its proof and --verify pass",
      ok and "quantized uint8" in text and "NNAPI vs the quantized graph" in text, text)
if ok:
    eager = torch.jit.load(path("quant_args.pt"))
    xs = list(calibration[0])  # within the calibrated ranges (outside them uint8 clips)
    got, want = m(xs, 1, 0.5), eager(xs, 1, 0.5)
    # uint8 activations: within a few quanta of the float model (output range ~2, 256 steps).
    check("the quantized module, called with the list and values, is near eager (max abs < 0.05)",
          got.shape == want.shape and float((got - want).abs().max()) < 0.05 and varies(want),
          float((got - want).abs().max()))

finish("args")

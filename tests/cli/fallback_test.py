#!/usr/bin/env python3
"""--cpu-fallback as README's "Nodes NNAPI cannot run" section states it.

Usage: fallback_test.py BIN WORK (with libneuralnetworks.so, the host runtime,
on LD_LIBRARY_PATH). Builds small models that each use an operator
nnapi-convert does not lower, converts them with --cpu-fallback and checks:
- the split the README's rules give: the unlowered node and what must follow
  it stay TorchScript, every run of nodes between them is one NNAPI model
  (submodules nnapi_0, nnapi_1, ...);
- the converted module, run by PyTorch on the host NNAPI runtime, gives
  eager PyTorch's outputs on inputs other than the ones the converter ran
  (float: torch.testing's float32 tolerances; quantized: the project's rule,
  tools/numeric_rules.py; a comparison a constant output would pass fails);
- `check --cpu-fallback` and `inspect` of a split module show the split;
- a model that converts whole is written exactly as without the flag;
- the refusals: --parts (exit 2), nothing left for NNAPI
  (exit 1), a bad --ops-library (exit 2), an operator library not loaded
  (exit 1 naming --ops-library).
Prints "fallback: all passed" when every check passed.
"""
import glob
import json
import os
import sys

import torch
import torch.nn as nn
import torchvision

sys.dont_write_bytecode = True  # importing cli_checks writes no __pycache__ into the sources
from cli_checks import check, finish, path, run  # noqa: E402
from fallback_checks import (CumsumBetween, Detector, QuantFlip, TopK, compare,  # noqa: E402
                             outputs, quantized, save)


# --- models -------------------------------------------------------------


class MaskedSelect(nn.Module):
    """A size that depends on the data (a boolean mask) before arithmetic."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        y = self.fc(x)
        return y[y > 0.3] * 3.0 + 1.0, y


class SortOnly(nn.Module):
    def forward(self, x):
        return torch.sort(x, 1)[0]


class MaskFill(nn.Module):
    def forward(self, x, mask):
        return x.masked_fill(mask, 0.0)


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return torch.relu(self.conv(x))


torch.manual_seed(0)
models = {
    "topk": save("topk", TopK(), torch.randn(1, 3, 8, 8)),
    "cumsum": save("cumsum", CumsumBetween(), torch.randn(1, 3, 8, 8)),
    "masked": save("masked", MaskedSelect(), torch.randn(2, 16)),
    "detector": save("detector", Detector(), torch.randn(1, 3, 32, 32)),
    "sort": save("sort", SortOnly(), torch.randn(2, 5)),
    "plain": save("plain", Plain(), torch.randn(1, 3, 8, 8)),
    "maskfill": save("maskfill", MaskFill(), (torch.randn(2, 3), torch.zeros(2, 3, dtype=torch.bool))),
}
torch.manual_seed(0)
models["qflip"] = save("qflip", quantized(QuantFlip().eval(), torch.randn(1, 3, 8, 8)),
                       torch.randn(1, 3, 8, 8))
torchvision_ops = glob.glob("/usr/lib/python3/dist-packages/torchvision/_C*.so")[0]

# --- splits and numbers ---------------------------------------------------

# name, inputs, extra flags, NNAPI models the rules give, code TorchScript keeps
cases = [
    ("topk", [1, 3, 8, 8], [], 2, ["torch.sort"]),
    ("cumsum", [1, 3, 8, 8], [], 2, ["torch.logcumsumexp"]),
    ("cumsum", [1, 3, 8, 8], ["--nhwc"], 2, ["torch.logcumsumexp"]),
    ("masked", [2, 16], [], 1, ["torch.index", "torch.mul", "torch.add"]),
    ("detector", [1, 3, 32, 32], ["--ops-library", torchvision_ops], 1,
     ["torchvision.nms", "torch.index"]),
    ("qflip", [1, 3, 8, 8], [], 2, ["torch.rot90"]),
]
for name, shape, flags, n_models, kept in cases:
    label = name + (" --nhwc" if "--nhwc" in flags else "")
    out = path(f"{name}{'-nhwc' if '--nhwc' in flags else ''}.nnapi.pt")
    spec = "x".join(map(str, shape))
    rc, text = run(path(name + ".pt"), "--input", spec, "--cpu-fallback", *flags, "-o", out)
    check(f"{label}: converts with --cpu-fallback", rc == 0, text)
    if rc != 0:
        continue
    check(f"{label}: the split states what stays TorchScript",
          "--cpu-fallback:" in text and f"{n_models} NNAPI model(s)" in text, text)
    converted = torch.jit.load(out)
    subs = [n for n, _ in converted.named_children()]
    check(f"{label}: {n_models} NNAPI model(s)",
          subs == [f"nnapi_{k}" for k in range(n_models)], subs)
    code = converted.code
    check(f"{label}: TorchScript keeps {kept} and nothing NNAPI runs",
          all(k in code for k in kept) and "_convolution" not in code and "linear" not in code,
          code)
    torch.manual_seed(100)  # not the seeds the converter ran the model with
    for i in range(3):
        compare(f"{label}: matches eager on input {i}", converted, models[name],
                [torch.randn(*shape)])

# check and inspect show the split: sort stays TorchScript between two NNAPI
# models (the convolution and linear head; the `values * 2.0` after sort).
rc, text = run("check", path("topk.pt"), "--input", "1x3x8x8", "--cpu-fallback", "--json",
               stdout_only=True)
try:
    split = json.loads(text)["models"][0]
except ValueError:
    split = {}
# (The tuple forward returns stays TorchScript too.)
check("check --cpu-fallback --json: 2 NNAPI models, aten::sort stays TorchScript",
      rc == 0 and split.get("converts") is True
      and split.get("cpu_fallback", {}).get("nnapi_models") == 2
      and {k["kind"]: (k["count"], k["supported"])
           for k in split["cpu_fallback"]["torchscript_nodes"]}
      == {"aten::sort": (1, False), "prim::TupleConstruct": (1, True)}, text)
rc, text = run("check", path("topk.pt"), "--input", "1x3x8x8", "--cpu-fallback")
check("check --cpu-fallback prints the split",
      rc == 0 and "--cpu-fallback: 2 NNAPI model(s); 2 node(s) stay TorchScript" in text, text)
rc, text = run("check", path("topk.pt"), "--input", "1x3x8x8")
check("check without --cpu-fallback: does not convert, aten::sort unsupported",
      rc == 1 and "aten::sort" in text and "NOT SUPPORTED" in text, text)
rc, text = run("inspect", path("topk.nnapi.pt"), "--json", stdout_only=True)
try:
    models_json = json.loads(text)
except ValueError:
    models_json = None
check("inspect --json of a split module: one report per NNAPI model, in order",
      rc == 0 and isinstance(models_json, list) and len(models_json) == 2
      and "CONV_2D" in json.dumps(models_json[0]) and "CONV_2D" not in json.dumps(models_json[1])
      and "MUL" in json.dumps(models_json[1]), text[:1500])
rc, text = run("inspect", path("topk.nnapi.pt"))
check("inspect of a split module prints each NNAPI model",
      rc == 0 and "NNAPI model 1 of 2" in text and "NNAPI model 2 of 2" in text, text[:1500])

# The detector's NMS keeps a different number of boxes for different images:
# the NNAPI part has fixed sizes, the data-dependent part stays TorchScript.
det = torch.jit.load(path("detector.nnapi.pt"))
torch.manual_seed(7)
kept = {outputs(det(torch.randn(1, 3, 32, 32) * s))[0].shape[0] for s in (0.1, 1, 10)}
check("detector: NMS keeps different box counts through one converted module", len(kept) > 1,
      kept)

rc, text = run(path("topk.pt"), "--input", "1x3x8x8", "--cpu-fallback", "--verify",
               "--verify-strict", "-o",
               path("topk-verified.nnapi.pt"))
check("--verify checks a split module", rc == 0 and "output 1: 1x10 Long" in text, text)

# A dynamic-quantized model (quantize_dynamic on Linear and LSTM): those
# nodes are float operations on the dequantized weights in NNAPI
# (dynamic_quant.cpp), while eager PyTorch rounds their inputs to 8 bits at
# run time, with QNNPACK, the mobile engine (on x86 the default is another):
# --verify says so and checks at its dynamic-quantization tolerance (5%).


class DynamicQuant(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, 16)
        self.lstm = nn.LSTM(16, 16)

    def forward(self, x):
        y = self.fc(torch.relu(self.conv(x)).mean([2, 3]))
        return self.lstm(y.unsqueeze(0))[0]


torch.manual_seed(0)
save("dynq", torch.quantization.quantize_dynamic(DynamicQuant().eval(), {nn.Linear, nn.LSTM},
                                                  dtype=torch.qint8), torch.randn(1, 3, 8, 8))
rc, text = run(path("dynq.pt"), "--input", "1x3x8x8", "--cpu-fallback", "--verify",
               "--verify-strict", "-o",
               path("dynq.nnapi.pt"))
check("--verify of a dynamic-quantized module runs the model with QNNPACK, at the "
      "dynamic-quantization tolerance",
      rc == 0 and "dynamic quantization" in text and "atol 0.05" in text
      and "output 0: 1x1x16 Float" in text and ", ok" in text, text)

rc, text = run(path("topk.pt"), "--input", "1x3x8x8", "--cpu-fallback", "--lite", "-o",
               path("topk-lite.nnapi.pt"))
try:
    from torch.jit.mobile import _load_for_lite_interpreter
    lite = _load_for_lite_interpreter(path("topk-lite.nnapi.ptl"))
    compare("--lite: the split module runs in the lite interpreter", lambda x: lite(x),
            models["topk"], [torch.randn(1, 3, 8, 8)])
except Exception as e:  # noqa: BLE001
    check("--lite: the split module runs in the lite interpreter", False, f"{rc} {text} {e}")

# torchvision's SSDlite (control flow, lists, anchors, NMS in its
# post-processing), scripted as torchvision documents and traced, with heads
# of weights of order 1 so that scores and boxes vary. Nodes with blocks stay
# TorchScript whole (the scripted heads loop over the feature maps): every
# convolution outside them must run in NNAPI.


class SSDFirstImage(nn.Module):  # any torchvision detector: its detections of one image
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        detections = self.m([x[0]])
        detections = detections[1][0] if isinstance(detections, tuple) else detections[0]
        return detections["boxes"], detections["scores"], detections["labels"]


torch.manual_seed(0)
ssd = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
    weights=None, weights_backbone=None, num_classes=5).eval()
with torch.no_grad():
    for name, p in ssd.head.named_parameters():
        if name.endswith("weight"):
            p.normal_(0, 0.5)
    ssd_forms = {"scripted": torch.jit.script(SSDFirstImage(ssd).eval()),
                 "traced": torch.jit.trace(SSDFirstImage(ssd).eval(), torch.rand(1, 3, 320, 320),
                                           check_trace=False)}
for form, eager in ssd_forms.items():
    eager.save(path(f"ssdlite-{form}.pt"))
    out = path(f"ssdlite-{form}.nnapi.pt")
    rc, text = run(path(f"ssdlite-{form}.pt"), "--input", "1x3x320x320", "--cpu-fallback",
                   "--ops-library", torchvision_ops, "-o", out)
    check(f"ssdlite ({form}): converts with --cpu-fallback", rc == 0, text)
    if rc != 0:
        continue
    converted = torch.jit.load(out)
    top_level = [line for line in converted.code.split("\n")
                 if line.startswith("  ") and not line.startswith("   ")]
    check(f"ssdlite ({form}): every convolution outside loops and branches runs in NNAPI",
          not any("conv2d" in line or "_convolution" in line for line in top_level)
          and "nnapi_0" in converted.code, top_level[:40])
    # What these cases check is the split and that the module runs: with
    # torchvision's initialisation the backbone's features fade to 1e-13, so
    # every score (output 1) is 1/5 and the boxes are the anchors' whatever
    # the image. Realistic weights (model_zoo.realistic_init) make the
    # features grow to 1e2 .. 1e3 and NMS's order depend on float32 rounding
    # (boxes 180 px apart). The backbone's numbers are checked by models.zoo
    # (mobilenet_v3_large, lraspp_mobilenet_v3_large).
    torch.manual_seed(101)
    for i in range(2):
        compare(f"ssdlite ({form}): matches eager on input {i}", converted, eager,
                [torch.rand(1, 3, 320, 320)], weak=(1,))

# torchvision's Faster R-CNN (fasterrcnn_mobilenet_v3_large_320_fpn), scripted,
# with 3 classes and RPN and box-predictor weights of order 1 so that boxes
# come out. Its box decoding reads, inside the branches of a prim::If, a
# tensor an NNAPI part computes: the part's call must come before the If
# (writing the module once failed with "Graph::copy() encountered a use of a
# value ... not in scope"). One 320x320 image against eager.
torch.manual_seed(0)
frcnn = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
    weights=None, weights_backbone=None, num_classes=3).eval()
with torch.no_grad():
    for name, p in (list(frcnn.rpn.head.named_parameters())
                    + list(frcnn.roi_heads.box_predictor.named_parameters())):
        if name.endswith("weight"):
            p.normal_(0, 0.5)
frcnn_eager = torch.jit.script(SSDFirstImage(frcnn).eval())
frcnn_eager.save(path("frcnn-scripted.pt"))
rc, text = run(path("frcnn-scripted.pt"), "--input", "1x3x320x320", "--cpu-fallback",
               "--ops-library", torchvision_ops, "-o", path("frcnn-scripted.nnapi.pt"))
check("faster r-cnn (scripted): converts with --cpu-fallback", rc == 0, text)
if rc == 0:
    torch.manual_seed(102)
    image = torch.rand(1, 3, 320, 320)
    n_boxes = outputs(frcnn_eager(image))[0].shape[0]
    check("faster r-cnn (scripted): the image gives boxes", n_boxes > 0, n_boxes)
    compare("faster r-cnn (scripted): matches eager", torch.jit.load(path("frcnn-scripted.nnapi.pt")),
            frcnn_eager, [image])

# --- a model that converts whole: the usual module, byte for byte -----------

run(path("plain.pt"), "--input", "1x3x8x8", "-o", path("plain-a.nnapi.pt"))
run(path("plain.pt"), "--input", "1x3x8x8", "--cpu-fallback", "-o", path("plain-b.nnapi.pt"))
a, b = torch.jit.load(path("plain-a.nnapi.pt")), torch.jit.load(path("plain-b.nnapi.pt"))
check("a model that converts whole is the usual module",
      torch.equal(a.mod.ser_model, b.mod.ser_model) and len(a.mod.weights) == len(b.mod.weights)
      and all(torch.equal(x, y) for x, y in zip(a.mod.weights, b.mod.weights)))

# --- refusals ---------------------------------------------------------------

rc, text = run(path("maskfill.pt"), "--input", "2x3", "--input", "2x3,dtype=bool", "--cpu-fallback",
               "-o", path("x.pt"))
check("a bool input is exit 2 naming the spec",
      rc == 2 and "input spec '2x3,dtype=bool'" in text and "--cpu-fallback" in text, text)
rc, text = run(path("topk.pt"), "--input", "1x3x8x8", "--cpu-fallback", "--parts", path("parts"),
               "-o", path("x.pt"))
check("--parts of a split model is exit 2", rc == 2 and "--parts" in text, text)
rc, text = run(path("sort.pt"), "--input", "2x5", "--cpu-fallback", "-o", path("x.pt"))
check("nothing left for NNAPI is exit 1", rc == 1 and "no part of the model" in text, text)
rc, text = run(path("topk.pt"), "--input", "1x3x8x8", "--ops-library", path("nope.so"))
check("a bad --ops-library is exit 2 naming it", rc == 2 and "nope.so" in text, text)
rc, text = run(path("detector.pt"), "--input", "1x3x32x32", "--cpu-fallback", "-o", path("x.pt"))
check("an operator library not loaded is exit 1 naming --ops-library",
      rc == 1 and "torchvision::nms" in text and "--ops-library" in text, text)
# A model that fails when --cpu-fallback's probe runs it (the 5 largest of 3
# elements: "selected index k out of range"): the error itself, one line,
# naming the input sizes and the node that failed, not the TorchScript
# interpreter's traceback; the same from `check`.


class TopFive(nn.Module):
    def forward(self, x):
        return torch.topk(torch.relu(x) * 2.0, 5)[0]


save("top5", TopFive(), torch.randn(2, 8))
failed = "the model failed on inputs of size 2x3 at node aten::topk at "
rc, text = run(path("top5.pt"), "--input", "2x3", "--cpu-fallback", "-o", path("x.pt"))
check("a model that fails in --cpu-fallback's probe is one line",
      rc == 1 and failed in text and "RuntimeError: selected index k out of range" in text
      and "Traceback" not in text and text.strip().count("\n") == 0,
      text)
rc, text = run("check", path("top5.pt"), "--input", "2x3", "--cpu-fallback")
check("...and check says so on its 'does not convert' line",
      rc == 1 and any(line.startswith("does not convert: ") and failed in line
                      for line in text.splitlines()) and "Traceback" not in text, text)

rc, text = run(path("topk.pt"), "--input", "1x3x8x8", "-o", path("x.pt"))
check("without --cpu-fallback the unlowered node is refused", rc == 1 and "aten::sort" in text,
      text)
check("no output is left by the refusals", not os.path.exists(path("x.pt")))

finish("fallback")

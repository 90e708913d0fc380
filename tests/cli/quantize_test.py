#!/usr/bin/env python3
"""--quantize uint8 (post-training quantization) as --help states it.

Usage: quantize_test.py BIN WORK (with libneuralnetworks.so, the host
runtime, on LD_LIBRARY_PATH). A small CNN (conv-bn-relu, depthwise conv +
ReLU6, 1x1 conv, residual add, pooling, linear) is traced here; seeded
samples are saved with torch.save. Checks:
- the converted module, run by PyTorch on the host NNAPI runtime, on the
  holdout samples: the SQNR and top-1 agreement against the float model
  that eager PyTorch computes here are the ones the report states, and the
  SQNR is within 0.5 dB of PyTorch's own FX post-training quantization
  (qnnpack qconfig) given the same calibration samples, or better;
- its model inputs and outputs are float32 and its convolutions
  TENSOR_QUANT8_ASYMM with int32 biases at input scale x filter scale
  (NeuralNetworks.h's rule for CONV_2D), read back with `inspect --json`;
- --calibration-method minmax: a layer's scale and zero point are those of
  PyTorch's MinMaxObserver (quint8, per-tensor affine) over the float
  model's value on the calibration samples;
- --calibration-dir of .pt files and a list of input tuples are read;
- --quantize-skip aten::add keeps the add float;
- --verify with --min-sqnr above what the model reaches: exit 1, nothing
  written;
- sigmoid, tanh, softmax (and hardswish, hardsigmoid) after quantized
  ops are quant8 in the NNAPI model, LOGISTIC, TANH and SOFTMAX at the
  output scale and zero point NeuralNetworks.h prescribes, and the
  one-quantum proof passes;
- --quantized-io: the module takes and returns quint8 at the printed (and
  reported) parameters, its NNAPI model has no QUANTIZE/DEQUANTIZE, its
  dequantized outputs are the float-io module's exactly and the float
  model's at the reported SQNR; float-read inputs and float outputs too;
  without --quantize it is a usage error (exit 2);
- bad calibration data: exit 1 with the file named and nothing written
  (wrong shape, NaN, float64, not a torch.save file, empty folder, no
  samples, holdout too large); usage errors exit 2.
Prints "quantize: all passed" when every check passed.
"""
import copy
import json
import math
import os
import sys

import torch
import torch.nn as nn

sys.dont_write_bytecode = True  # importing cli_checks writes no __pycache__ into the sources
from cli_checks import check, finish, path, run  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.b1 = nn.BatchNorm2d(16)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.pw = nn.Conv2d(16, 16, 1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))  # LINE_C1
        z = nn.functional.relu6(self.dw(y))
        y = y + self.pw(z)  # LINE_ADD
        y = nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)
        return self.fc(y)


def line_of(tag):
    with open(__file__) as f:
        for i, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + tag):
                return i


torch.manual_seed(0)
net = Net().eval()
with torch.no_grad():
    net.b1.running_mean.uniform_(-0.3, 0.3)
    net.b1.running_var.uniform_(0.5, 1.5)
torch.jit.trace(net, torch.randn(1, 3, 16, 16)).save(path("net.pt"))
N_CAL, N_HOLD = 24, 8
data = torch.randn(N_CAL + N_HOLD, 3, 16, 16)
torch.save(data, path("samples.pt"))
SPEC = ["--input", "1x3x16x16"]


def quantize(*extra, out="net.q.pt", report="report.json"):
    for f in (out, report):
        if os.path.exists(path(f)):
            os.remove(path(f))
    return run(path("net.pt"), *SPEC, "--quantize", "uint8", "-o", path(out),
               "--report", path(report), *extra)


def sqnr(ref, test):
    return 10 * math.log10(ref.double().pow(2).sum() / (ref.double() - test.double()).pow(2).sum())


# --- the conversion and its figures ------------------------------------

status, text = quantize("--calibration", path("samples.pt"), "--calibration-holdout", str(N_HOLD))
check("--quantize converts (exit 0)", status == 0, text)
q = json.load(open(path("report.json")))["models"][0]["quantization"]
check("the report's proof passes", q["ok"] and q["fake_quant"]["ok"], q["fake_quant"])
check("the proof ran on the holdout", q["proof_on"] == "holdout" and q["proof_samples"] == N_HOLD
      and q["calibration_samples"] == N_CAL, q)
module = torch.jit.load(path("net.q.pt"))
hold = data[N_CAL:]
with torch.no_grad():
    ref = torch.cat([net(hold[i:i + 1]) for i in range(N_HOLD)])
    got = torch.cat([module(hold[i:i + 1]) for i in range(N_HOLD)])
ours = sqnr(ref, got)
stated = q["quality"]["outputs"][0]["sqnr_db"]
check("the SQNR eager PyTorch measures is the report's", abs(ours - stated) < 0.01, (ours, stated))
agree = (ref.argmax(1) == got.argmax(1)).float().mean().item()
check("the top-1 agreement is the report's",
      abs(agree - q["quality"]["outputs"][0]["top1_agreement"]) < 1e-9, agree)
check("the module is quantized, not float (SQNR well below float32's)", ours < 60, ours)
check("--quantize prints the proof", "fake-quant check" in text and "SQNR" in text, text)

# PyTorch's FX post-training quantization on the same calibration samples.
from torch.ao.quantization import get_default_qconfig_mapping  # noqa: E402
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx  # noqa: E402
torch.backends.quantized.engine = "qnnpack"
prepared = prepare_fx(copy.deepcopy(net), get_default_qconfig_mapping("qnnpack"), (data[:1],))
with torch.no_grad():
    for i in range(N_CAL):
        prepared(data[i:i + 1])
    fx = convert_fx(prepared)
    fx_out = torch.cat([fx(hold[i:i + 1]) for i in range(N_HOLD)])
fx_db = sqnr(ref, fx_out)
check("SQNR within 0.5 dB of FX PTQ's or better", ours >= fx_db - 0.5, (ours, fx_db))

# The NNAPI model's operands, as NeuralNetworks.h requires them.
status, text = run("inspect", path("net.q.pt"), "--json", stdout_only=True)
info = json.loads(text)
model = info
operands = model["operands"]
ins = [operands[i] for i in model["inputs"]]
outs = [operands[i] for i in model["outputs"]]
check("model inputs and outputs stay float32",
      all(o["type"] == "TENSOR_FLOAT32" for o in ins + outs), (ins, outs))
convs = [op for op in model["operations"] if op["name"] in ("CONV_2D", "DEPTHWISE_CONV_2D")]
check("three convolutions", len(convs) == 3, [op["name"] for op in model["operations"]])
names = [op["name"] for op in model["operations"]]
check("every op has a quantized form here: one QUANTIZE (the input), one DEQUANTIZE (the output)",
      names.count("QUANTIZE") == 1 and names.count("DEQUANTIZE") == 1, names)
for op in convs:
    x, w, b = (operands[i] for i in op["inputs"][:3])
    check("%s is quant8 with an int32 bias at input x filter scale" % op["name"],
          x["type"] == "TENSOR_QUANT8_ASYMM" and w["type"] == "TENSOR_QUANT8_ASYMM"
          and b["type"] == "TENSOR_INT32"
          and abs(b["scale"] - x["scale"] * w["scale"]) <= 1e-5 * b["scale"], (x, w, b))

# --- minmax against PyTorch's MinMaxObserver ----------------------------

status, text = quantize("--calibration", path("samples.pt"), "--calibration-holdout", str(N_HOLD),
                        "--calibration-method", "minmax")
check("--calibration-method minmax converts", status == 0, text)
layers = json.load(open(path("report.json")))["models"][0]["quantization"]["layers"]
c1 = [r for r in layers if r["location"].endswith(":%d" % line_of("LINE_C1"))]
obs = torch.ao.quantization.MinMaxObserver(dtype=torch.quint8, qscheme=torch.per_tensor_affine)
with torch.no_grad():
    for i in range(N_CAL):
        obs(torch.relu(net.b1(net.c1(data[i:i + 1]))))
scale, zp = obs.calculate_qparams()
check("the first conv+relu's scale and zero point are MinMaxObserver's",
      len(c1) == 1 and abs(c1[0]["scale"] - scale.item()) <= 1e-6 * scale.item()
      and c1[0]["zero_point"] == zp.item(), (c1, scale, zp))

# --- other sources of samples, --quantize-skip ---------------------------

os.makedirs(path("dir"), exist_ok=True)
for i in range(6):
    torch.save((data[i:i + 1],), path("dir/s%02d.pt" % i))
status, text = quantize("--calibration-dir", path("dir"))
check("--calibration-dir of .pt files", status == 0 and json.load(open(path("report.json")))[
    "models"][0]["quantization"]["calibration_samples"] == 6, text)
torch.save([(data[i:i + 1],) for i in range(5)], path("tuples.pt"))
status, text = quantize("--calibration", path("tuples.pt"))
check("a list of input tuples", status == 0 and json.load(open(path("report.json")))[
    "models"][0]["quantization"]["calibration_samples"] == 5, text)
status, text = quantize("--calibration", path("samples.pt"), "--quantize-skip", "aten::add")
skipped = json.load(open(path("report.json")))["models"][0]["quantization"]
check("--quantize-skip aten::add keeps the add float",
      status == 0 and not any(r["node"] == "aten::add" for r in skipped["layers"])
      and skipped["quantized_nodes"] == q["quantized_nodes"] - 1, skipped)
status, text = quantize("--calibration", path("samples.pt"), "--verify", "--min-sqnr", "150")
check("--verify below --min-sqnr: exit 1, nothing written",
      status == 1 and "below --min-sqnr" in text and not os.path.exists(path("net.q.pt")), text)
status, text = quantize("--calibration", path("samples.pt"), "--verify", "--verify-strict")
check("--verify --verify-strict passes at the default --min-sqnr", status == 0, text)

# --- activations with a quantized NNAPI form; --quantized-io -------------


class Acts(nn.Module):
    """Hardswish, a squeeze-excitation gate (hardsigmoid, mul), tanh,
    sigmoid, softmax: each after a quantized op."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 16, 3, padding=1)
        self.se, self.c3 = nn.Conv2d(16, 16, 1), nn.Conv2d(16, 16, 1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        y = torch.relu(self.c2(nn.functional.hardswish(self.c1(x))))
        y = y * nn.functional.hardsigmoid(self.se(nn.functional.adaptive_avg_pool2d(y, 1)))
        y = torch.tanh(self.c3(y)) + torch.sigmoid(self.c3(y))
        return torch.softmax(self.fc(nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)), 1)


acts = Acts().eval()
torch.jit.trace(acts, torch.randn(1, 3, 16, 16)).save(path("acts.pt"))


def quantize_acts(*extra, out="acts.q.pt"):
    for f in (out, "acts.json"):
        if os.path.exists(path(f)):
            os.remove(path(f))
    return run(path("acts.pt"), *SPEC, "--quantize", "uint8", "--calibration", path("samples.pt"),
               "--calibration-holdout", str(N_HOLD), "-o", path(out), "--report",
               path("acts.json"), *extra)


status, text = quantize_acts()
check("activations: --quantize converts (exit 0)", status == 0, text)
if status != 0:
    finish("quantize")  # what follows reads its report
aq = json.load(open(path("acts.json")))["models"][0]["quantization"]
check("activations: the one-quantum proof passes",
      aq["fake_quant"]["ok"] and aq["fake_quant"]["max_quanta"] <= 1.0 + 1e-3, aq["fake_quant"])
info = json.loads(run("inspect", path("acts.q.pt"), "--json", stdout_only=True)[1])
operands = info["operands"]
names = [op["name"] for op in info["operations"]]
check("activations: every op is quantized (one QUANTIZE, the input; one DEQUANTIZE, the output)",
      names.count("QUANTIZE") == 1 and names.count("DEQUANTIZE") == 1, names)
# NeuralNetworks.h: LOGISTIC and SOFTMAX of TENSOR_QUANT8_ASYMM "the scale must be 1.f / 256
# and the zeroPoint must be 0"; TANH "the scale must be 1.f / 128 and the zeroPoint must be 128".
PRESCRIBED = {"LOGISTIC": (1 / 256, 0), "SOFTMAX": (1 / 256, 0), "TANH": (1 / 128, 128)}
for name, (scale, zp) in PRESCRIBED.items():
    found = [op for op in info["operations"] if op["name"] == name]
    check("activations: %s is quant8 with NeuralNetworks.h's output scale %g, zero point %d"
          % (name, scale, zp),
          found and all(operands[op["inputs"][0]]["type"] == "TENSOR_QUANT8_ASYMM"
                        and operands[op["outputs"][0]]["type"] == "TENSOR_QUANT8_ASYMM"
                        and operands[op["outputs"][0]]["scale"] == scale
                        and operands[op["outputs"][0]]["zero_point"] == zp for op in found),
          [(operands[op["outputs"][0]]) for op in found])
check("activations: hardswish and hardsigmoid are quant8 lookups (GATHER)",
      names.count("GATHER") == 2 and names.count("LOGISTIC") == 1 and names.count("MUL") == 1,
      names)
with torch.no_grad():
    a_ref = torch.cat([acts(hold[i:i + 1]) for i in range(N_HOLD)])
    a_got = torch.cat([torch.jit.load(path("acts.q.pt"))(hold[i:i + 1]) for i in range(N_HOLD)])
check("activations: the SQNR eager PyTorch measures is the report's",
      abs(sqnr(a_ref, a_got) - aq["quality"]["outputs"][0]["sqnr_db"]) < 0.01,
      (sqnr(a_ref, a_got), aq["quality"]["outputs"][0]))

status, text = quantize_acts("--quantized-io", out="acts.io.pt")
check("--quantized-io converts (exit 0)", status == 0, text)
io = json.load(open(path("acts.json")))["models"][0]["quantization"]
check("--quantized-io: the proof passes", io["ok"] and io["fake_quant"]["ok"], io["fake_quant"])
qin, qout = io["quantized_io"]["inputs"][0], io["quantized_io"]["outputs"][0]
check("--quantized-io prints each input's and output's scale and zero point",
      "input 0: quint8 scale %.9g zero_point %d" % (qin["scale"], qin["zero_point"]) in text
      and "output 0: quint8 scale %.9g zero_point %d" % (qout["scale"], qout["zero_point"]) in text,
      text)
check("--quantized-io: the softmax output keeps NNAPI's 1/256, 0",
      qout["scale"] == 1 / 256 and qout["zero_point"] == 0, qout)
info = json.loads(run("inspect", path("acts.io.pt"), "--json", stdout_only=True)[1])
operands = info["operands"]
names = [op["name"] for op in info["operations"]]
mi, mo = operands[info["inputs"][0]], operands[info["outputs"][0]]
check("--quantized-io: the NNAPI model's input and output are quant8 at the printed parameters",
      mi["type"] == mo["type"] == "TENSOR_QUANT8_ASYMM"
      and abs(mi["scale"] - qin["scale"]) <= 1e-7 * qin["scale"] and mi["zero_point"] == qin["zero_point"]
      and abs(mo["scale"] - qout["scale"]) <= 1e-7 * qout["scale"] and mo["zero_point"] == qout["zero_point"],
      (mi, mo, qin, qout))
check("--quantized-io: no QUANTIZE or DEQUANTIZE left",
      "QUANTIZE" not in names and "DEQUANTIZE" not in names, names)
io_module = torch.jit.load(path("acts.io.pt"))
float_io = torch.jit.load(path("acts.q.pt"))
outs, same = [], True
with torch.no_grad():
    for i in range(N_HOLD):
        x = torch.quantize_per_tensor(hold[i:i + 1], qin["scale"], qin["zero_point"], torch.quint8)
        y = io_module(x)
        same = same and y.dtype == torch.quint8 and y.q_scale() == qout["scale"] \
            and y.q_zero_point() == qout["zero_point"]
        outs.append(y.dequantize())
        # The float-io module quantizes its input at the same parameters.
        same = same and torch.equal(y.dequantize(), float_io(hold[i:i + 1]))
io_out = torch.cat(outs)
check("--quantized-io: quint8 in, quint8 out at the printed parameters, the float-io module's "
      "values exactly", same)
check("--quantized-io: the float model's output within the report's SQNR (>= --min-sqnr's 20 dB)",
      abs(sqnr(a_ref, io_out) - io["quality"]["outputs"][0]["sqnr_db"]) < 0.01
      and sqnr(a_ref, io_out) >= 20, (sqnr(a_ref, io_out), io["quality"]))


class FloatEnds(nn.Module):
    """The input read by a float op first, two outputs, one float (layer_norm)."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        y = self.c(nn.functional.layer_norm(x, [16, 16]))
        return torch.relu(y), nn.functional.layer_norm(y, [16, 16])


fe = FloatEnds().eval()
torch.jit.trace(fe, torch.randn(1, 3, 16, 16)).save(path("ends.pt"))
status, text = run(path("ends.pt"), *SPEC, "--quantize", "uint8", "--calibration", path("samples.pt"),
                   "--calibration-holdout", str(N_HOLD), "--quantized-io", "-o", path("ends.q.pt"),
                   "--report", path("ends.json"))
check("--quantized-io of float-read inputs and float outputs converts", status == 0, text)
eq = json.load(open(path("ends.json")))["models"][0]["quantization"]
check("--quantized-io of float ends: the proof passes", eq["fake_quant"]["ok"], eq["fake_quant"])
ends = torch.jit.load(path("ends.q.pt"))
qin = eq["quantized_io"]["inputs"][0]
with torch.no_grad():
    got = ends(torch.quantize_per_tensor(hold[:1], qin["scale"], qin["zero_point"], torch.quint8))
    ref = fe(hold[:1])
check("--quantized-io of float ends: two quint8 outputs at the report's parameters",
      all(g.dtype == torch.quint8 and g.q_scale() == o["scale"] and g.q_zero_point() == o["zero_point"]
          for g, o in zip(got, eq["quantized_io"]["outputs"])), got)
check("--quantized-io of float ends: each output within 20 dB of the float model's",
      all(sqnr(r, g.dequantize()) >= 20 for r, g in zip(ref, got)),
      [sqnr(r, g.dequantize()) for r, g in zip(ref, got)])

# --- bad calibration data: exit 1, the file named, nothing written -------

torch.save(torch.randn(4, 3, 8, 8), path("bad_shape.pt"))
nan = data[:4].clone()
nan[2, 0, 0, 0] = float("nan")
torch.save(nan, path("nan.pt"))
torch.save(data[:4].double(), path("f64.pt"))
with open(path("text.pt"), "w") as f:
    f.write("not a tensor\n")
torch.save(torch.randn(0, 3, 16, 16), path("empty.pt"))
os.makedirs(path("empty_dir"), exist_ok=True)
for name, args, words in [
        ("wrong shape", ["--calibration", path("bad_shape.pt")], ["bad_shape.pt", "shape 4x3x8x8"]),
        ("NaN", ["--calibration", path("nan.pt")], ["nan.pt", "NaN"]),
        ("float64", ["--calibration", path("f64.pt")], ["f64.pt", "not float32"]),
        ("not torch.save", ["--calibration", path("text.pt")], ["text.pt", "torch.save"]),
        ("no samples", ["--calibration", path("empty.pt")], ["empty.pt", "no samples"]),
        ("empty folder", ["--calibration-dir", path("empty_dir")], ["empty_dir", "no .pt files"]),
        ("holdout too large", ["--calibration", path("samples.pt"), "--calibration-holdout", "40"],
         ["samples.pt", "holdout"])]:
    status, text = quantize(*args)
    check("%s: exit 1, named, nothing written" % name,
          status == 1 and all(w in text for w in words) and not os.path.exists(path("net.q.pt"))
          and "Traceback" not in text and "what():" not in text, (status, text))

for name, args in [
        ("no calibration", []),
        ("both sources", ["--calibration", path("samples.pt"), "--calibration-dir", path("dir")]),
        ("int8", ["--calibration", path("samples.pt"), "--quantize", "int8"]),
        ("bad method", ["--calibration", path("samples.pt"), "--calibration-method", "mse"]),
        ("skip names nothing", ["--calibration", path("samples.pt"), "--quantize-skip", "aten::lstm"])]:
    status, text = quantize(*args)
    check("%s: exit 2" % name, status == 2 and not os.path.exists(path("net.q.pt")), (status, text))
status, text = run(path("net.pt"), *SPEC, "--calibration", path("samples.pt"), "-o", path("x.pt"))
check("--calibration without --quantize: exit 2", status == 2, text)
status, text = run(path("net.pt"), *SPEC, "--quantized-io", "-o", path("x.pt"))
check("--quantized-io without --quantize: exit 2, named, nothing written",
      status == 2 and "--quantized-io" in text and not os.path.exists(path("x.pt")), text)

finish("quantize")

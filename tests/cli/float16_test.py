#!/usr/bin/env python3
"""--float16 and --float16-io (issue 37 item 4) by their effects.

Usage: float16_test.py BIN WORK (with libneuralnetworks.so, the host runtime,
on LD_LIBRARY_PATH). A small convolutional net (conv, batch norm, ReLU,
leaky ReLU, nearest upsampling by a scale, pooling, linear, softmax) is
converted with and without --float16 and checked against what
NeuralNetworks.h and eager PyTorch say:
- `inspect --json`: the model's input and output operands are TENSOR_FLOAT32,
  every other float tensor TENSOR_FLOAT16 (no TENSOR_FLOAT32 left), the
  weights float16, the first operation a CAST of the input and the last a
  CAST to the output, and no FLOAT32 scalar read beside float16 tensors
  (SOFTMAX's beta, RESIZE_NEAREST_NEIGHBOR's scales and the others are
  FLOAT16 there);
- the weight bytes half those of the float32 conversion;
- the converted module, run here on the host runtime, against eager float32
  within float16's tolerance (5/1024 absolute and relative);
- --verify passes and says it used float16 tolerances;
- --float16-io: the module returns torch.half, takes torch.half, and its
  NNAPI output operand is TENSOR_FLOAT16;
- --float16-io with --cpu-fallback, and --float16 with --quantize, are usage
  errors (exit 2);
- a constant or a FLOAT16 scalar beyond float16's range (65504) is refused
  (exit 1) naming the node, not written as infinity.
Prints "float16: all passed" when every check passed.
"""
import json
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.dont_write_bytecode = True  # importing cli_checks writes no __pycache__ into the sources
from cli_checks import check, finish, path, run  # noqa: E402

TOL = 5.0 / 1024


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = F.relu(self.bn(self.conv(x)))
        y = F.leaky_relu(y, 0.1)
        y = F.interpolate(y, scale_factor=2.0, mode="nearest")
        y = F.adaptive_avg_pool2d(y, 1).flatten(1)
        return F.softmax(self.fc(y), dim=1)


torch.manual_seed(0)
net = Net().eval()
with torch.no_grad():
    net.bn.running_mean.uniform_(-0.5, 0.5)
    net.bn.running_var.uniform_(0.5, 2.0)
torch.jit.trace(net, torch.randn(1, 3, 16, 16)).save(path("net.pt"))
SPEC = ["--input", "1x3x16x16"]


def inspect(module):
    status, out = run("inspect", "--json", module, stdout_only=True)
    check("inspect --json " + module, status == 0, out[-500:])
    doc = json.loads(out)
    models = doc.get("models", [doc]) if isinstance(doc, dict) else doc
    return models[0]


status, out = run(path("net.pt"), *SPEC, "-o", path("f32.pt"))
check("float32 conversion", status == 0, out)
status, out = run(path("net.pt"), *SPEC, "-o", path("f16.pt"), "--float16")
check("--float16 converts", status == 0, out)

m32, m16 = inspect(path("f32.pt")), inspect(path("f16.pt"))
ops16, rands16 = m16["operations"], m16["operands"]
ins = [o["index"] for o in rands16 if o["source"]["kind"] == "model_input"]
outs = [o["index"] for o in rands16 if "model_output" in o]
check("one input, one output", len(ins) == 1 and len(outs) == 1, (ins, outs))
check("the model's input and output stay TENSOR_FLOAT32",
      all(rands16[i]["type"] == "TENSOR_FLOAT32" for i in ins + outs))
others = [o for o in rands16 if o["index"] not in ins + outs]
check("no other TENSOR_FLOAT32 operand",
      not [o["index"] for o in others if o["type"] == "TENSOR_FLOAT32"])
check("float16 tensors computed", sum(o["type"] == "TENSOR_FLOAT16" for o in others) > 5)
check("first operation: CAST of the input",
      ops16[0]["name"] == "CAST" and ops16[0]["inputs"] == ins, ops16[0])
check("last operation: CAST to the output",
      ops16[-1]["name"] == "CAST" and ops16[-1]["outputs"] == outs, ops16[-1])
float_scalar_reads = [(op["name"], i) for op in ops16 for i in op["inputs"]
                      if rands16[i]["type"] == "FLOAT32"]
check("no FLOAT32 scalar read beside float16 tensors", not float_scalar_reads,
      float_scalar_reads)
for name in ("SOFTMAX", "RESIZE_NEAREST_NEIGHBOR"):
    op = next((o for o in ops16 if o["name"] == name), None)
    check(name + " is there, with FLOAT16 scalars",
          op is not None and any(rands16[i]["type"] == "FLOAT16" for i in op["inputs"]), op)
w32 = sum(w["bytes"] for w in m32["weights"])
w16 = sum(w["bytes"] for w in m16["weights"])
check("weights float16, half the bytes",
      all(w["dtype"] in ("float16", "torch.float16", "Half") for w in m16["weights"])
      and 2 * w16 == w32, (w32, w16, m16["weights"][:2]))

x = torch.randn(1, 3, 16, 16)
eager = net(x)
got = torch.jit.load(path("f16.pt"))(x)
check("the module takes and returns float32", got.dtype == torch.float32, got.dtype)
err = (got - eager).abs().max().item()
check("within float16's tolerance of eager float32",
      torch.allclose(got, eager, atol=TOL, rtol=TOL), err)
check("and not float32's own (it computes in float16)", err > 1e-6, err)

status, out = run(path("net.pt"), *SPEC, "-o", path("f16v.pt"), "--float16", "--verify")
check("--float16 --verify passes", status == 0, out)
check("--verify says it used float16 tolerances",
      "float16 computation (--float16): float tolerances atol 0.00488281, rtol 0.00488281"
      in out, out)

status, out = run(path("net.pt"), *SPEC, "-o", path("io.pt"), "--float16-io", "--verify")
check("--float16-io --verify passes", status == 0, out)
mio = inspect(path("io.pt"))
oio = [o for o in mio["operands"] if "model_output" in o]
check("--float16-io: the NNAPI output is TENSOR_FLOAT16",
      [o["type"] for o in oio] == ["TENSOR_FLOAT16"], oio)
got = torch.jit.load(path("io.pt"))(x.half())
check("--float16-io: the module returns torch.half", got.dtype == torch.half, got.dtype)
check("--float16-io: within float16's tolerance of eager",
      torch.allclose(got.float(), net(x.half().float()), atol=TOL, rtol=TOL))

status, out = run(path("net.pt"), *SPEC, "-o", path("no.pt"), "--float16-io", "--cpu-fallback")
check("--float16-io --cpu-fallback: exit 2", status == 2 and "--float16-io" in out, out)
status, out = run(path("net.pt"), *SPEC, "-o", path("no.pt"), "--float16", "--quantize", "uint8",
                  "--calibration", path("net.pt"))
check("--float16 --quantize: exit 2", status == 2 and "--float16" in out, out)

# A representative set of lowerings (activations with FLOAT32 parameters,
# normalizations with epsilons, resize by scale, pads with a value, pools,
# reductions, matmul, concatenation), each converted with --float16 and run
# here against eager float32 at float16's tolerance; an output must move
# (not be constant) for the check to count.
LOWERINGS = {
    "gelu_tanh": (lambda x: F.gelu(x) * torch.tanh(x), "2x3x8x8"),
    "elu_hardswish": (lambda x: F.elu(x, 0.5) + F.hardswish(x), "2x3x8x8"),
    "layer_norm": (lambda x: F.layer_norm(x, (8,), eps=1e-3), "2x3x8x8"),
    "instance_norm": (lambda x: F.instance_norm(x, eps=1e-3), "2x3x8x8"),
    "group_norm": (lambda x: F.group_norm(x, 3), "2x3x8x8"),
    "bilinear": (lambda x: F.interpolate(x, scale_factor=2.0, mode="bilinear",
                                         align_corners=False), "1x3x8x8"),
    "pad_value": (lambda x: F.pad(x, (1, 2, 0, 1), value=0.5), "1x3x8x8"),
    "pools": (lambda x: F.max_pool2d(x, 2) + F.avg_pool2d(x, 2), "1x3x8x8"),
    "mean_sum": (lambda x: x.mean(dim=(2, 3)) + x.sum(dim=3).amax(dim=2), "2x3x8x8"),
    "matmul_cat": (lambda x: torch.cat([x @ x.transpose(2, 3), x], 1), "1x3x8x8"),
    "log_softmax": (lambda x: F.log_softmax(x, dim=1) + torch.sqrt(x.abs() + 1), "2x3x8x8"),
    # float32's largest magnitude as a sentinel (max pooling's padding, a
    # mask of finfo.min) is float16's infinity, not a value out of range
    "max_pool3d_padded": (lambda x: F.max_pool3d(x, 3, 2, 1), "1x2x4x6x6"),
    "finfo_min_mask": (lambda x: torch.softmax(
        x.masked_fill(x > 1.0, torch.finfo(torch.float32).min), -1), "2x3x8x8"),
}


class Lambda(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        return self.f(x)


for name, (f, spec) in LOWERINGS.items():
    x = torch.randn(*[int(d) for d in spec.split("x")])
    model = torch.jit.trace(Lambda(f).eval(), x)
    model.save(path(name + ".pt"))
    status, out = run(path(name + ".pt"), "--input", spec, "-o", path(name + ".f16.pt"),
                      "--float16")
    check(f"{name}: --float16 converts", status == 0, out)
    if status != 0:
        continue
    y = torch.randn(*[int(d) for d in spec.split("x")])
    got, eager = torch.jit.load(path(name + ".f16.pt"))(y), f(y)
    check(f"{name}: within float16's tolerance of eager",
          torch.allclose(got, eager, atol=TOL, rtol=TOL)
          and (eager - eager.flatten()[0]).abs().max() > 10 * TOL,
          (got - eager).abs().max().item())

# Values float16 cannot hold (beyond 65504, IEEE 754 binary16's largest
# finite value, where torch.half gives infinity): a constant tensor and a
# scalar parameter NeuralNetworks.h wants as FLOAT16 are refused (exit 1)
# naming the node, never written as infinity; the same models convert
# without --float16.
check("65504 is float16's largest finite value, 1e6 becomes infinity",
      torch.tensor(65504.0).half().item() == 65504.0 and torch.tensor(1e6).half().isinf().item())
TOO_BIG = {
    "big_constant": (lambda x: torch.log1p(x * 1e-6) * 1e6, "2x3", "aten::mul", "1e+06"),
    "big_pad_value": (lambda x: F.pad(x, (1, 1), value=1e9), "1x2x3x3", "aten::pad", "1e+09"),
}
for name, (f, spec, node, value) in TOO_BIG.items():
    torch.jit.trace(Lambda(f).eval(), torch.rand(*[int(d) for d in spec.split("x")])).save(
        path(name + ".pt"))
    status, out = run(path(name + ".pt"), "--input", spec, "-o", path(name + ".f16.pt"),
                      "--float16")
    check(f"{name}: --float16 refuses it (exit 1) naming {node} and the value",
          status == 1 and f"node {node}" in out and value in out and "65504" in out, out)
    status, out = run(path(name + ".pt"), "--input", spec, "-o", path(name + ".f32.pt"))
    check(f"{name}: converts without --float16", status == 0, out)

finish("float16")

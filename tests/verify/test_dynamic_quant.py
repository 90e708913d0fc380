#!/usr/bin/env python3
"""Dynamic quantization (quantize_dynamic) converted as float operations on
the dequantized weights, checked on the host runtime.

For each model (nn.Linear / nn.LSTM made dynamic-quantized by
torch.ao.quantization.quantize_dynamic, qnnpack, traced):
  1. nnapi-convert converts it (no --cpu-fallback, the default target);
  2. the converted module runs on 20 seeded random inputs (PyTorch's NNAPI
     binding on libneuralnetworks.so, the host runtime);
  3. its outputs must equal, within float32 rounding (atol 1e-5, rtol 1e-5),
     those of the *float twin*: the same float model with the quantized
     model's weights dequantized (what the lowering claims to compute);
  4. the difference to eager dynamic quantization (which quantizes each
     input at run time to 8 bits, from its own min and max) is measured,
     printed, and must stay within DYNAMIC_TOLERANCE, the tolerance the
     fixtures beyond-dynamic_quant-* are verified with
     (tests/common/fixtures.h tolerance_for).

Usage: test_dynamic_quant.py NNAPI_CONVERT_BINARY WORK_DIR
(LD_LIBRARY_PATH must hold the runtime). Exit status non-zero on failure;
the last line is "N passed, M failed".
"""
import copy
import os
import subprocess
import sys

import torch
import torch.nn as nn

from case_runner import run_cases

# Eager dynamic quantization vs float on the dequantized weights, per output
# element: |diff| <= atol + rtol * |eager| with atol in units of the output's
# RMS (max(1, RMS)). Measured (this script prints it) at most about 2% of the
# RMS on these models; the tolerance leaves a margin of about 2x.
DYNAMIC_TOLERANCE = dict(atol_rms=0.05, rtol=0.05)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(16, 32), nn.Linear(32, 32), nn.Linear(32, 4)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class LinearReLU3d(nn.Module):
    """A fused Linear+ReLU (quantized::linear_relu_dynamic) on a 3-D input."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(12, 24), nn.ReLU())
        self.out = nn.Linear(24, 5, bias=False)

    def forward(self, x):
        return self.out(self.fc(x))


class LSTMClassifier(nn.Module):
    """embedding -> LSTM -> the last step's output -> Linear."""

    def __init__(self, layers=1, bidirectional=False):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.lstm = nn.LSTM(16, 24, num_layers=layers, batch_first=True,
                            bidirectional=bidirectional)
        self.fc = nn.Linear(24 * (2 if bidirectional else 1), 3)

    def forward(self, tokens):
        out, _ = self.lstm(self.emb(tokens))
        return self.fc(out[:, -1])


def dynamic(model, fuse=None):
    torch.backends.quantized.engine = "qnnpack"
    m = copy.deepcopy(model)
    if fuse:
        m = torch.ao.quantization.fuse_modules(m, fuse)
    return torch.ao.quantization.quantize_dynamic(
        m, {nn.Linear, nn.LSTM, torch.ao.nn.intrinsic.LinearReLU}, dtype=torch.qint8)


def float_twin(model, quantized):
    """`model` with every Linear / LSTM weight replaced by the quantized
    model's weight, dequantized."""
    twin = copy.deepcopy(model)
    qmods = dict(quantized.named_modules())
    for name, mod in twin.named_modules():
        q = qmods.get(name)
        if isinstance(mod, nn.Linear) and not callable(getattr(q, "weight", None)):
            q = qmods[name.rsplit(".", 1)[0]]  # fused Linear+ReLU: the parent holds it
        if isinstance(mod, nn.Linear):
            with torch.no_grad():
                mod.weight.copy_(q.weight().dequantize())
                if mod.bias is not None:
                    mod.bias.copy_(q.bias())
        elif isinstance(mod, nn.LSTM):
            wb = q._weight_bias()
            with torch.no_grad():
                for k, v in wb["weight"].items():
                    getattr(mod, k).copy_(v.dequantize())
                for k, v in wb["bias"].items():
                    getattr(mod, k).copy_(v)
    return twin.eval()


def make_input(kind, gen):
    if kind[0] == "tokens":
        return torch.randint(0, 50, kind[1], generator=gen, dtype=torch.int64)
    return torch.randn(*kind[1], generator=gen) * 2


def spec(kind):
    dims = "x".join(str(d) for d in kind[1])
    return dims + (",dtype=int32" if kind[0] == "tokens" else "")


def check_model(name, model, kind, binary, work, fuse=None):
    torch.manual_seed(0)
    model = model.eval()
    q = dynamic(model, fuse).eval()
    twin = float_twin(model if not fuse else torch.ao.quantization.fuse_modules(
        copy.deepcopy(model), fuse), q)
    gen = torch.Generator().manual_seed(1)
    example = make_input(kind, gen)
    traced = torch.jit.trace(q, (example,))
    src = os.path.join(work, name + ".pt")
    out = os.path.join(work, name + ".nnapi.pt")
    traced.save(src)
    r = subprocess.run([binary, src, "--input", spec(kind), "-o", out],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    converted = torch.jit.load(out)
    worst_twin, worst_eager = 0.0, 0.0
    for _ in range(20):
        x = make_input(kind, gen)
        xn = x.int() if kind[0] == "tokens" else x
        with torch.no_grad():
            got = converted(xn)
            want = twin(x)
            eager = q(x)
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
        rms = max(1.0, eager.pow(2).mean().sqrt().item())
        diff = (got - eager).abs()
        worst_twin = max(worst_twin, (got - want).abs().max().item())
        worst_eager = max(worst_eager, (diff / rms).max().item())
        tol = DYNAMIC_TOLERANCE["atol_rms"] * rms + DYNAMIC_TOLERANCE["rtol"] * eager.abs()
        assert bool((diff <= tol).all()), (name, diff.max().item(), rms)
    print(f"     {name}: max |nnapi - float twin| {worst_twin:.2e}; "
          f"max |nnapi - eager dynamic quant| / max(1, RMS) {worst_eager:.4f}")


def main():
    binary, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    cases = [
        ("mlp", MLP(), ("float", (4, 16)), None),
        ("linear_relu_3d", LinearReLU3d(), ("float", (2, 3, 12)), [["fc.0", "fc.1"]]),
        ("lstm_classifier", LSTMClassifier(), ("tokens", (2, 7)), None),
        ("lstm_2layer_bidirectional", LSTMClassifier(2, True), ("tokens", (3, 5)), None),
    ]
    return run_cases(cases, lambda name, model, kind, fuse:
                     check_model(name, model, kind, binary, work, fuse))


if __name__ == "__main__":
    sys.exit(main())

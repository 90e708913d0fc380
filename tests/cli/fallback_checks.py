"""What fallback_test.py and fallback_flex_test.py share: saving a traced
model, four models with an unlowered operator (sort, logcumsumexp, rot90
between quantized convolutions, torchvision's NMS), and comparing a --cpu-fallback module's
outputs with eager PyTorch's. Import it after cli_checks (it reports through
cli_checks.check)."""
import os
import sys

import torch
import torch.nn as nn
import torchvision

from cli_checks import check, path
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import numeric_rules  # noqa: E402


class TopK(nn.Module):
    """A classifier whose post-processing (sort) has no NNAPI lowering."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        p = torch.softmax(self.fc(torch.relu(self.conv(x)).mean([2, 3])), 1)
        values, indices = torch.sort(p, 1, descending=True)
        return values * 2.0, indices


class CumsumBetween(nn.Module):
    """An unlowered operator (logcumsumexp) between two convolutions."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        return torch.sigmoid(self.b(torch.logcumsumexp(torch.relu(self.a(x)), 1)))


class QuantFlip(nn.Module):
    """Quantized convolutions around an unlowered quantized op (rot90)."""

    def __init__(self):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 8, 1)
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x):
        y = torch.relu(self.a(self.quant(x)))
        return self.dequant(self.b(torch.rot90(y, 1, [2, 3])))


class Detector(nn.Module):
    """A tiny detector: convolutional head, box decoding, torchvision's NMS."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 16, 3, 2, 1),
                                  nn.ReLU())
        self.box = nn.Conv2d(16, 4, 1)
        self.cls = nn.Conv2d(16, 1, 1)

    def forward(self, x):
        f = self.body(x)
        b = self.box(f).permute(0, 2, 3, 1).reshape(-1, 4)
        xy, wh = torch.sigmoid(b[:, :2]) * 32, torch.exp(b[:, 2:]) * 4
        boxes = torch.cat([xy - wh / 2, xy + wh / 2], 1)
        scores = torch.sigmoid(self.cls(f)).reshape(-1)
        keep = torchvision.ops.nms(boxes, scores, 0.5)
        return boxes[keep], scores[keep]


def quantized(model, example):
    torch.backends.quantized.engine = "qnnpack"
    model.qconfig = torch.ao.quantization.get_default_qconfig("qnnpack")
    torch.ao.quantization.prepare(model, inplace=True)
    for _ in range(4):
        model(torch.randn_like(example))
    return torch.ao.quantization.convert(model)


def save(name, model, example):
    torch.manual_seed(0)
    model.eval()
    with torch.no_grad():
        traced = torch.jit.trace(model, example, check_trace=False)
    traced.save(path(name + ".pt"))
    return traced


def outputs(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def compare(name, converted, eager, inputs, weak=()):
    """`weak`: indices of outputs a constant would match here (said why where
    compare is called); every other output must vary beyond the tolerance."""
    try:
        got, want = outputs(converted(*inputs)), outputs(eager(*inputs))
        assert len(got) == len(want), f"{len(got)} outputs, eager {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert g.shape == w.shape, f"shape {tuple(g.shape)}, eager {tuple(w.shape)}"
            if w.is_quantized:
                problem, _, _ = numeric_rules.compare_quantized(w, g)
                assert problem is None, problem
            elif w.dtype.is_floating_point:
                torch.testing.assert_close(g, w)
            else:
                assert torch.equal(g, w), "integer outputs differ"
            # torch.testing's float32 tolerances (atol 1e-5, rtol 1.3e-6)
            why = numeric_rules.constant_would_pass(
                w, *((1e-5, 1.3e-6) if w.dtype.is_floating_point else (0, 0)))
            assert (why is None) != (i in weak), \
                f"output {i}: " + (f"the comparison proves little: {why}" if why else
                                   "listed as weak, but it varies: remove it from `weak`")
        check(name, True)
    except Exception as e:  # noqa: BLE001 - report and go on
        check(name, False, e)

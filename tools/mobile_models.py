"""Small models passed through torch.utils.mobile_optimizer.optimize_for_mobile,
shared by tools/fixtures/prepacked.py (the beyond-prepacked-* fixtures) and
tests/verify/test_mobile_optimized.py (issue 33: files as they are published).

Each module's batch norms get random statistics, so folding them into the
convolutions is not the identity."""
import torch
import torch.nn as nn


def bn(c):
    b = nn.BatchNorm2d(c)
    with torch.no_grad():
        b.running_mean.uniform_(-0.5, 0.5)
        b.running_var.uniform_(0.5, 2.0)
        b.weight.uniform_(0.5, 1.5)
        b.bias.uniform_(-0.5, 0.5)
    return b


def he_init(module):
    """He-normal convolution and linear weights, biases of order 0.1: the
    activations stay of order 1 (PyTorch's default initialisation lets them
    fade over a few layers)."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d, nn.Linear)):
                m.weight.normal_(0, (2.0 / m.weight[0].numel()) ** 0.5)
                if m.bias is not None:
                    m.bias.normal_(0, 0.1)
    return module


def mobile(module):
    """`module` in eval mode, scripted and passed through optimize_for_mobile."""
    from torch.utils.mobile_optimizer import optimize_for_mobile
    return optimize_for_mobile(torch.jit.script(module.eval()))


class MobileBlocks(nn.Module):
    """What optimize_for_mobile makes of common layers: convolutions with
    batch norm and ReLU (clamp min 0), ReLU6 (0, 6), Hardtanh(-1, 1) and
    Hardtanh(-0.5, 0.7) (no NNAPI activation: MAXIMUM/MINIMUM) folded;
    strided, asymmetric, depthwise without bias, dilated, grouped, 1x3; a
    residual add and ReLU (aten::_add_relu);
    transposed convolutions with output_padding within and beyond the
    padding; linear layers on 2-D and 3-D inputs, with and without bias."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Sequential(nn.Conv2d(3, 8, 3, stride=(2, 1), padding=(1, 0)), bn(8), nn.ReLU())
        self.c2 = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False), nn.ReLU6())
        self.c3 = nn.Sequential(nn.Conv2d(8, 8, 3, padding=2, dilation=2), nn.Hardtanh(-1.0, 1.0))
        self.c4 = nn.Sequential(nn.Conv2d(8, 12, 1, groups=4), nn.Hardtanh(-0.5, 0.7))
        self.c5 = nn.Conv2d(12, 12, (1, 3), padding=(0, 1))
        self.c6 = nn.Conv2d(12, 12, 3, padding=1)
        self.t1 = nn.ConvTranspose2d(12, 6, 3, stride=2, padding=1, output_padding=1)
        self.t2 = nn.ConvTranspose2d(6, 4, 2, stride=2, output_padding=1)
        self.l1 = nn.Linear(4, 10)
        self.l2 = nn.Linear(10, 3, bias=False)
        he_init(self)

    def forward(self, x):
        y = self.c5(self.c4(self.c3(self.c2(self.c1(x)))))
        y = torch.relu(y + self.c6(y))  # aten::_add_relu
        y = self.t2(torch.relu(self.t1(y)))
        z = torch.relu(self.l1(y.mean((2, 3))))
        w = nn.functional.hardtanh(self.l1(y.flatten(2).transpose(1, 2)), 0.0, 6.0)
        return self.l2(z), self.l2(w), y


class PrepackClampModule(nn.Module):
    """XNNPACK contexts made with prepacked::*_clamp_prepack, one per clamp
    form: (-0.5, 0.7), (0, 6), (-1, 1), (0, None), (None, 0.25), none; a
    convolution with min only and a transposed one without bias."""

    def __init__(self):
        super().__init__()
        # Buffers: XNNPACK refuses to prepack tensors that require grad.
        g = torch.Generator().manual_seed(3)
        self.register_buffer("w", torch.randn(6, 4, generator=g) * 0.5)
        self.register_buffer("b", torch.randn(6, generator=g) * 0.3)
        self.register_buffer("cw", torch.randn(5, 3, 3, 3, generator=g) * 0.3)
        self.register_buffer("cb", torch.randn(5, generator=g) * 0.3)
        self.register_buffer("tw", torch.randn(5, 4, 2, 2, generator=g) * 0.6)

    def forward(self, x, v):
        p = torch.ops.prepacked
        w, b = self.w, self.b
        f = p.conv2d_clamp_run(x, p.conv2d_clamp_prepack(
            self.cw, self.cb, [1, 2], [1, 0], [1, 1], 1, -0.3, None))
        return (p.linear_clamp_run(v, p.linear_clamp_prepack(w, b, -0.5, 0.7)),
                p.linear_clamp_run(v, p.linear_clamp_prepack(w, b, 0.0, 6.0)),
                p.linear_clamp_run(v, p.linear_clamp_prepack(w, b, -1.0, 1.0)),
                p.linear_clamp_run(v, p.linear_clamp_prepack(w, b, 0.0, None)),
                p.linear_clamp_run(v, p.linear_clamp_prepack(w, b, None, 0.25)),
                p.linear_clamp_run(v, p.linear_clamp_prepack(w, b, None, None)),
                p.linear_clamp_run(v[:, 0], p.linear_clamp_prepack(w, None, 0.0, 6.0)),
                f,
                p.conv2d_transpose_clamp_run(f, p.conv2d_transpose_clamp_prepack(
                    self.tw, None, [2, 2], [0, 0], [1, 1], [1, 1], 1, 0.0, 6.0)))


class TinyDetector(nn.Module):
    """A conv backbone (batch norm, ReLU, in-place hardswish, a depthwise
    block, an in-place residual add), a transposed-convolution upsampling
    neck and two heads (class
    scores through sigmoid, box offsets)."""

    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1), bn(16), nn.ReLU(inplace=True),
            nn.Conv2d(16, 16, 3, 1, 1, groups=16), bn(16), nn.Hardswish(inplace=True),
            nn.Conv2d(16, 32, 1), bn(32), nn.ReLU6(inplace=True),
            nn.Conv2d(32, 32, 3, 2, 1), bn(32), nn.ReLU(inplace=True))
        self.res = nn.Sequential(nn.Conv2d(32, 32, 3, 1, 1), bn(32))
        self.up = nn.ConvTranspose2d(32, 16, 4, 2, 1)
        self.cls = nn.Conv2d(16, 3, 1)
        self.box = nn.Conv2d(16, 4, 1)
        he_init(self)

    def forward(self, x):
        b = self.backbone(x)
        r = self.res(b)
        r += b  # with the relu after it: aten::_add_relu_, made functional at load
        f = torch.relu(self.up(torch.relu(r)))
        return torch.sigmoid(self.cls(f)), self.box(f)

#!/usr/bin/env python3
"""Writes the models the bad-input CLI tests feed to nnapi-convert:
train.pt (saved in training mode, with a BatchNorm that reads the flag),
listarg.pt (forward takes a list),
twounsupported.pt (two node kinds NNAPI conversion has no lowering for),
flexsize.pt (an upsampling size computed from the input's height and width),
neverfits.pt (a reshape that fails at every flexible length),
truncated.pt (the first half of a good archive), empty.pt."""
import os
import sys
from typing import List

import torch

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return torch.relu(self.conv(x))


class ConvBn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


x = torch.randn(1, 3, 8, 8)
torch.jit.script(ConvBn().train()).save(os.path.join(out, "train.pt"))


class ListArg(torch.nn.Module):
    def forward(self, xs: List[torch.Tensor]):
        return torch.relu(xs[0])


torch.jit.script(ListArg().eval()).save(os.path.join(out, "listarg.pt"))


class TwoUnsupported(torch.nn.Module):
    def forward(self, x):
        return torch.logcumsumexp(torch.sort(x, dim=1)[0], dim=1) + torch.relu(x)


torch.jit.trace(TwoUnsupported().eval(), x).save(os.path.join(out, "twounsupported.pt"))



class FlexSize(torch.nn.Module):
    def forward(self, x):
        size = (x.size(2) * 2, x.size(3) * 2)
        return torch.nn.functional.interpolate(x, size=size, mode="nearest")


torch.jit.trace(FlexSize().eval(), x).save(os.path.join(out, "flexsize.pt"))


class NeverFits(torch.nn.Module):
    """(B, L, 4) into windows of 7 with 5 channels: no L fits."""

    def forward(self, x):
        b, n, c = x.shape
        return x.reshape(b, n // 7, 7, c + 1)


torch.jit.script(NeverFits().eval()).save(os.path.join(out, "neverfits.pt"))

good = os.path.join(out, "good.pt")
torch.jit.trace(Conv().eval(), x).save(good)
data = open(good, "rb").read()
open(os.path.join(out, "truncated.pt"), "wb").write(data[: len(data) // 2])
open(os.path.join(out, "empty.pt"), "wb").close()
print("wrote bad models")

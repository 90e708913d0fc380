#!/usr/bin/env python3
"""make_float16_deep.py DIR: a deep float model for --float16's --verify rule
(tests/verify/CMakeLists.txt, verify.float16_deep*), and four wrong forms of it.

DIR/deep.pt: torchvision's MobileNetV2 (52 convolutions), randomly
initialised as tools/model_zoo.py does (realistic_init, seeded), traced at
1x3x64x64: deep enough that float16 rounding accumulates past the
element-by-element tolerance (5/1024), small enough for the suite.

DIR/wrong-<kind>.pt: the same model with one mistake a converter can make
(tools/float16_zoo.py's wrong_forms: a transposed kernel, a wrong padding,
the input's channels reversed, a missing ReLU6), converted to stand for a
wrong conversion of deep.pt.
"""
import os
import sys

import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from float16_zoo import wrong_forms  # noqa: E402
from model_zoo import realistic_init  # noqa: E402


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    model = realistic_init(torchvision.models.mobilenet_v2()).eval()
    x = torch.randn(1, 3, 64, 64)
    torch.jit.trace(model, x).save(f"{out}/deep.pt")
    with torch.no_grad():
        for kind, wrong in wrong_forms(model).items():
            torch.jit.trace(wrong, x).save(f"{out}/wrong-{kind}.pt")


if __name__ == "__main__":
    main()

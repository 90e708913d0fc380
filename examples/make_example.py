#!/usr/bin/env python3
"""Makes examples/tiny_cnn.pt: a small CNN traced in eval mode.

Run with Debian's interpreter, which has python3-torch:
    /usr/bin/python3 examples/make_example.py examples/tiny_cnn.pt
"""
import sys

import torch


class TinyCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, stride=2, padding=1),
            torch.nn.ReLU(inplace=True),
            torch.nn.Conv2d(16, 16, 3, padding=1, groups=16),
            torch.nn.ReLU6(inplace=True),
            torch.nn.Conv2d(16, 32, 1),
            torch.nn.ReLU(inplace=True),
            torch.nn.MaxPool2d(2),
        )
        self.classifier = torch.nn.Linear(32, 10)

    def forward(self, x):
        x = self.features(x)
        x = torch.nn.functional.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        return torch.softmax(self.classifier(x), dim=1)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tiny_cnn.pt"
    torch.manual_seed(0)
    model = TinyCnn().eval()
    traced = torch.jit.trace(model, torch.randn(1, 3, 32, 32))
    traced.save(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

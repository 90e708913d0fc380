#!/usr/bin/env python3
"""Makes the model of the diverge tests (diverge_test.sh): a small scripted
conv -> relu -> pool -> linear network. The tests find the lines of its
forward by their `# <NAME>` markers, so keep one statement per marker.

    /usr/bin/python3 tests/verify/diverge_model.py OUT.pt
"""
import sys

import torch
import torch.nn.functional as F


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.fc = torch.nn.Linear(8 * 3 * 3, 4)

    def forward(self, x):
        y = self.conv(x)  # CONV
        y = torch.relu(y)  # RELU
        y = F.avg_pool2d(y, 2)  # POOL
        y = torch.flatten(y, 1)  # FLATTEN
        return self.fc(y)  # LINEAR


def main():
    torch.manual_seed(0)
    model = torch.jit.script(Net().eval())
    model.save(sys.argv[1])
    print(f"wrote {sys.argv[1]}")


if __name__ == "__main__":
    main()

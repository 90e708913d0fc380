#!/usr/bin/env python3
"""--verify-input as --help and the README promise it: "a file written by
torch.save: a tensor, or a tuple or list of tensors, one per input".

Usage: verify_input_test.py BIN WORK. For each container Python's torch.save
writes (a tensor; a tuple and a list of one tensor; a tuple and a list of two)
the file is saved here by torch.save itself and given to `nnapi-convert
--verify --verify-input`; a dict is refused with a message that says what to
save instead (exit 2), as is a file with too few tensors.

The models make the file's data show: each output is relu(x - 10) (times
relu(y - 10) for two inputs), which is 0 everywhere on --verify's seeded
randn inputs (|x| < 10; --verify then warns that the output is constant) and
not on the file's tensors (values 10.5 to 20). So a run that ignored the file
and fell back to random inputs prints the warning and fails here, even though
it would exit 0; the line naming "the --verify-input tensors" is checked
too, and the output's shape.
Prints "verify-input: all passed" when every check passed.
"""
import os
import sys

import torch
import torch.nn as nn

sys.dont_write_bytecode = True  # importing cli_checks writes no __pycache__ into the sources
from cli_checks import check, finish, path, run  # noqa: E402


class One(nn.Module):
    def forward(self, x):
        return torch.relu(x - 10.0)


class Two(nn.Module):
    def forward(self, x, y):
        return torch.relu(x - 10.0) * torch.relu(y - 10.0)


torch.jit.trace(One().eval(), torch.randn(2, 5)).save(path("one.pt"))
torch.jit.trace(Two().eval(), (torch.randn(2, 5), torch.randn(2, 5))).save(path("two.pt"))

torch.manual_seed(3)
x = 10.5 + 9.5 * torch.rand(2, 5)  # every element past 10: the output is not constant
y = 10.5 + 9.5 * torch.rand(2, 5)
# The premise: on --verify's own inputs (randn) these models give 0 everywhere.
check("the models are 0 on randn inputs and not on the file's",
      torch.all(One()(torch.randn(2, 5)) == 0) and torch.all(One()(x) > 0)
      and torch.all(Two()(x, y) > 0))

CONSTANT = "every element of the model's output is 0"


def verify(model, n_inputs, data_file, out):
    args = [path(model), "-o", path(out), "--verify"] + ["--input", "2x5"] * n_inputs
    if data_file:
        args += ["--verify-input", path(data_file)]
    return run(*args)


# The control: without a file, random inputs, and the constant warning shows.
rc, text = verify("one.pt", 1, None, "random.nnapi.pt")
check("control: random inputs give the constant-output warning",
      rc == 0 and CONSTANT in text and "verify on inputs 2x5" in text, text)

containers = [
    ("tensor", "one.pt", 1, x),
    ("tuple of 1", "one.pt", 1, (x,)),
    ("list of 1", "one.pt", 1, [x]),
    ("tuple of 2", "two.pt", 2, (x, y)),
    ("list of 2", "two.pt", 2, [x, y]),
]
for label, model, n, data in containers:
    name = label.replace(" ", "_")
    torch.save(data, path(name + ".in.pt"))
    rc, text = verify(model, n, name + ".in.pt", name + ".nnapi.pt")
    check(f"{label}: runs the file's tensors",
          rc == 0 and "on the --verify-input tensors" in text and CONSTANT not in text
          and "output 0: 2x5 Float" in text and os.path.exists(path(name + ".nnapi.pt")), text)

# A dict (what torch.save({"x": x}) writes): refused, saying what to save.
torch.save({"x": x}, path("dict.in.pt"))
rc, text = verify("one.pt", 1, "dict.in.pt", "dict.nnapi.pt")
check("a dict is exit 2 naming the file and what to save instead",
      rc == 2 and "dict.in.pt" in text and "a dict" in text and "tuple or list" in text
      and "Traceback" not in text and not os.path.exists(path("dict.nnapi.pt")), text)

# One tensor for a model of two inputs: refused, counting both.
rc, text = verify("two.pt", 2, "tensor.in.pt", "short.nnapi.pt")
check("one tensor for two inputs is exit 2",
      rc == 2 and "holds 1 tensor(s), but the model has 2" in text, text)

finish("verify-input")

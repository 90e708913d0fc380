#!/usr/bin/env python3
"""Models that keep state between calls (docs/families.md, "Stateful files").

Usage: state_test.py BIN WORK (with libneuralnetworks.so, the host runtime,
on LD_LIBRARY_PATH). Scripts small models whose forward reads tensor
attributes and writes them back (`self._state = new_state`), as a streaming
voice activity detector does, converts them and checks:
- the converted module, run by PyTorch on the host NNAPI runtime, called 5
  times in sequence on fresh inputs gives what the eager model gives call by
  call: each call's outputs and, after each call, every state attribute
  (torch.testing's float32 tolerances; a comparison a constant would pass
  fails), and reset_state() brings back the file's state;
- in each form that applies: a VAD-like model (LSTM-cell state kept as an
  attribute, an audio context concatenated with the chunk), NCHW; a 4-D
  state with --nhwc; a per-feature running mean with a flexible batch, run
  at batch sizes 1, 3 and 2 in turn;
- --verify runs a sequence of 3 calls, comparing outputs and state; the
  report, `check` and `inspect` name the state attributes;
- the refusals (exit 1, naming the attribute and the node's source line): a
  write inside a branch, a state whose shape changes between calls (a
  growing context, a state that follows a flexible batch), a List[int]
  attribute written, state with --cpu-fallback;
- the --lite copy, run by the lite interpreter, matches eager call by call.
Prints "state: all passed" when every check passed.
"""
import json
import os
import sys
from typing import List

import torch
import torch.nn as nn

sys.dont_write_bytecode = True  # importing cli_checks writes no __pycache__ into the sources
from cli_checks import check, finish, path, run  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import numeric_rules  # noqa: E402

CALLS = 5


class Vad(nn.Module):
    """A streaming VAD's shape: context + chunk -> features -> LSTM cell -> prob."""

    def __init__(self):
        super().__init__()
        self.feat = nn.Linear(24, 16)
        self.cell_x = nn.Linear(16, 32)
        self.cell_h = nn.Linear(8, 32)
        self.head = nn.Linear(8, 1)
        self._state = torch.zeros(2, 1, 8)
        self._context = torch.zeros(1, 8)

    def forward(self, x):
        h, c = self._state[0], self._state[1]
        xc = torch.cat([self._context, x], dim=1)
        self._context = x[:, -8:]
        f = torch.relu(self.feat(xc))
        g = self.cell_x(f) + self.cell_h(h)
        i, fg, gg, o = g.chunk(4, 1)
        c2 = torch.sigmoid(fg) * c + torch.sigmoid(i) * torch.tanh(gg)
        h2 = torch.sigmoid(o) * torch.tanh(c2)
        self._state = torch.stack([h2, c2])
        return torch.sigmoid(self.head(h2))

    @torch.jit.export
    def reset_states(self):
        self._state = torch.zeros(2, 1, 8)
        self._context = torch.zeros(1, 8)


class Frames(nn.Module):
    """A 4-D state: the previous frame's features added to this one's."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self._prev = torch.randn(1, 4, 6, 6)

    def forward(self, x):
        y = torch.relu(self.conv(x)) + 0.5 * self._prev
        self._prev = y
        return y * 2.0


class RunningMean(nn.Module):
    """A per-feature running mean over calls, whatever the batch size."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self._mean = torch.randn(8)

    def forward(self, x):
        y = self.fc(x)
        out = y - self._mean
        self._mean = 0.75 * self._mean + 0.25 * y.mean(0)
        return out, torch.tanh(out)


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self._state = torch.zeros(1, 4)

    def forward(self, x):
        y = x + self._state
        if bool(x.sum() > 0):
            self._state = y
        return y * 2.0


class Growing(nn.Module):
    def __init__(self):
        super().__init__()
        self._context = torch.zeros(1, 4)

    def forward(self, x):
        self._context = torch.cat([self._context, x], 1)
        return x * 2.0


class FollowsBatch(nn.Module):
    """A state written with the input's (flexible) batch size."""

    def __init__(self):
        super().__init__()
        self._last = torch.zeros(1, 4)

    def forward(self, x):
        y = x * 2.0 + self._last.mean(1, keepdim=True)
        self._last = y
        return y + 1.0


class SizesSeen(nn.Module):
    """A List[int] attribute written (int, float and bool ones are kept:
    streaming_vad_test.py)."""

    seen: List[int]

    def __init__(self):
        super().__init__()
        self.seen = [0]

    def forward(self, x):
        self.seen = x.size()
        return x * 2.0


def save(name, model):
    torch.manual_seed(0)
    scripted = torch.jit.script(model.eval())
    scripted.save(path(name + ".pt"))


def close(got, want, what):
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)}, eager {tuple(want.shape)}"
    torch.testing.assert_close(got, want, msg=lambda m: f"{what}: {m}")
    why = numeric_rules.constant_would_pass(want, 1e-5, 1.3e-6)
    assert why is None, f"{what}: the comparison proves little: {why}"


def outputs(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def sequence(name, converted, eager, shapes, state, nhwc=False):
    """Calls both CALLS times on fresh inputs (shapes[k % len(shapes)]) and
    compares outputs and state after each call."""
    try:
        gen = torch.Generator().manual_seed(7)
        for k in range(CALLS):
            x = torch.randn(*shapes[k % len(shapes)], generator=gen)
            if nhwc:
                x = x.contiguous(memory_format=torch.channels_last)
            got, want = outputs(converted(x)), outputs(eager(x.clone()))
            assert len(got) == len(want), f"call {k + 1}: {len(got)} outputs, eager {len(want)}"
            for i, (g, w) in enumerate(zip(got, want)):
                close(g, w, f"call {k + 1} output {i}")
            for a in state:
                close(getattr(converted, a), getattr(eager, a), f"call {k + 1} state {a}")
        check(f"{name}: {CALLS} calls in sequence match eager call by call (outputs and state)",
              True)
    except Exception as e:  # noqa: BLE001 - report and go on
        check(f"{name}: {CALLS} calls in sequence match eager call by call", False, e)


cases = [
    # name, model, spec, extra flags, run shapes, state attributes, nhwc
    # state in the order forward first writes it
    ("vad", Vad(), "1x16", [], [(1, 16)], ["_context", "_state"], False),
    ("frames-nhwc", Frames(), "1x3x6x6", ["--nhwc"], [(1, 3, 6, 6)], ["_prev"], True),
    ("running-mean-flex", RunningMean(), "0x8", [], [(1, 8), (3, 8), (2, 8)], ["_mean"], False),
]
for name, model, spec, flags, shapes, state, nhwc in cases:
    save(name, model)
    out, report = path(name + ".nnapi.pt"), path(name + ".json")
    rc, text = run(path(name + ".pt"), "--input", spec, *flags, "--verify", "-o", out,
                   "--report", report)
    check(f"{name}: converts and --verify passes", rc == 0, text)
    if rc != 0:
        continue
    check(f"{name}: --verify runs 3 calls in sequence, comparing the state after each",
          "3 calls in sequence" in text and
          all(f"call 3 state {a}: " in text and f"call 1 state {a}: " in text for a in state),
          text)
    check(f"{name}: the conversion notes the state", "keeps state between calls" in text, text)
    with open(report) as f:
        entry = json.load(f)["models"][0]
    check(f"{name}: the report lists the state",
          [s["attribute"] for s in entry.get("state", [])] == state and
          entry["verify"].get("calls") == 3 and entry["verify"].get("state") == state, entry)
    eager = torch.jit.load(path(name + ".pt"))
    converted = torch.jit.load(out)
    sequence(name, converted, eager, shapes, state, nhwc)
    # reset_state() restores the file's state: the next call is a fresh model's first.
    converted.reset_state()
    fresh = torch.jit.load(path(name + ".pt"))
    sequence(name + " after reset_state()", converted, fresh, shapes, state, nhwc)
    rc, text = run("inspect", out)
    check(f"{name}: inspect names the state",
          rc == 0 and all(f"state kept between calls: attribute {a}," in text for a in state),
          text)
    rc, text = run("inspect", out, "--json", stdout_only=True)
    check(f"{name}: inspect --json lists the state",
          rc == 0 and [s["attribute"] for s in json.loads(text)["state"]] == state, text)
    rc, text = run("check", path(name + ".pt"), "--input", spec, *flags)
    check(f"{name}: check converts and names the state",
          rc == 0 and "converts:" in text and
          all(f"state kept between calls: attribute {a} " in text for a in state), text)

# Refusals: one paragraph, exit 1, naming the attribute and the node's place.
refusals = [
    ("branchy", Branchy(), "1x4", "_state", "inside the branch or loop"),
    ("growing", Growing(), "1x4", "_context", "shape would change between calls"),
    ("follows-batch", FollowsBatch(), "0x4", "_last", "with a shape 0x4 (0 or -1: a size that "
     "follows a flexible input size), but it holds Float 1x4"),
    ("sizes-seen", SizesSeen(), "1x4", "seen", "a value of type List[int] kept between calls; "
     "nnapi-convert keeps tensors (passed to NNAPI) and int, float and bool attributes"),
]
for name, model, spec, attr, why in refusals:
    save(name, model)
    rc, text = run(path(name + ".pt"), "--input", spec, "-o", path(name + ".nnapi.pt"))
    check(f"{name}: refused with exit 1, naming the attribute, the node and why",
          rc == 1 and f"'{attr}'" in text and "prim::SetAttr" in text and
          f"{name}.pt" in text and "state_test.py:" in text and why in text and
          "Traceback" not in text and not os.path.exists(path(name + ".nnapi.pt")), text)

# --cpu-fallback and --quantize are not combined with state: refused, naming it.
rc, text = run(path("vad.pt"), "--input", "1x16", "--cpu-fallback", "-o", path("fb.nnapi.pt"))
check("vad --cpu-fallback: refused with exit 1, naming the attribute and the option",
      rc == 1 and "'_context'" in text and "leave --cpu-fallback out" in text and
      "state_test.py:" in text and not os.path.exists(path("fb.nnapi.pt")), text)

# The lite-interpreter copy keeps the state too.
rc, text = run(path("vad.pt"), "--input", "1x16", "--lite", "-o", path("vad-lite.nnapi.pt"))
check("vad --lite: converts", rc == 0, text)
if rc == 0:
    from torch.jit.mobile import _load_for_lite_interpreter
    lite, eager = _load_for_lite_interpreter(path("vad-lite.nnapi.ptl")), torch.jit.load(path("vad.pt"))
    try:
        gen = torch.Generator().manual_seed(3)
        for k in range(CALLS):
            x = torch.randn(1, 16, generator=gen)
            close(lite(x), eager(x.clone()), f"call {k + 1} output 0")
        check(f"vad --lite: {CALLS} calls of the .ptl match eager call by call", True)
    except Exception as e:  # noqa: BLE001 - report and go on
        check(f"vad --lite: {CALLS} calls of the .ptl match eager call by call", False, e)

finish("state")

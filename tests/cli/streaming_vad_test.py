#!/usr/bin/env python3
"""A streaming voice activity detector as such models are published (issue 33:
docs/families.md, "Stateful files").

Usage: streaming_vad_test.py BIN WORK (with libneuralnetworks.so, the host
runtime, on LD_LIBRARY_PATH). Scripts, from Debian's PyTorch, a Silero-style
VAD: forward(x, sr: int) with torch.stft features, an nn.LSTM whose (h, c)
state is kept as a tensor attribute, an audio context kept as an attribute
that a reset empties (shape 0) and the first call fills, the int attributes
_last_sr and _last_batch_size, branches on them that call reset_states()
(so the first call of a stream differs from the next), and reset_states()
exported with @torch.jit.export. Converts it at the default target for
sr = 16000 and 8000 and checks:
- --verify passes over its sequence of 3 calls, comparing the tensor and
  int state after each; `inspect` names the int state, the prologue and the
  carried reset_states();
- the converted module, on the host runtime, called 6 times from fresh
  gives what a fresh eager model gives call by call (outputs with
  torch.testing's float32 tolerances, a comparison a constant would pass
  fails; tensor state; int state equal); after the model's own
  reset_states() on both, 4 more calls; after reset_state() against a
  freshly loaded model, 3 more; the --lite copy on the lite interpreter too;
- an int attribute counting the calls is kept and counted in TorchScript;
- refusals (exit 1, one paragraph naming the attribute and node): NNAPI's
  part computing with an int attribute forward changes; a branch that writes
  the state on the data of a tensor.
Prints "streaming-vad: all passed" when every check passed.
"""
import json
import os
import sys

import torch
import torch.nn as nn

sys.dont_write_bytecode = True  # importing cli_checks writes no __pycache__ into the sources
from cli_checks import check, finish, path, run  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import numeric_rules  # noqa: E402


class Features(nn.Module):
    def __init__(self, n_fft):
        super().__init__()
        self.n_fft = n_fft
        self.register_buffer("window", torch.hann_window(n_fft))

    def forward(self, x):
        s = torch.stft(x, self.n_fft, hop_length=self.n_fft // 2, window=self.window,
                       center=False, return_complex=True)
        return torch.log1p(s.abs())


class Net(nn.Module):
    def __init__(self, n_fft):
        super().__init__()
        self.features = Features(n_fft)
        self.lstm = nn.LSTM(n_fft // 2 + 1, 16, batch_first=True)
        self.head = nn.Linear(16, 1)

    def forward(self, x, h, c):
        f = self.features(x).transpose(1, 2)  # (batch, frames, bins)
        y, (h2, c2) = self.lstm(f, (h, c))
        return torch.sigmoid(self.head(y)).squeeze(-1), h2, c2


class Vad(nn.Module):
    """Silero VAD's forward, as its TorchScript files have it, on a small net."""

    def __init__(self):
        super().__init__()
        self._model = Net(64)
        self._model_8k = Net(32)
        self.reset_states()

    @torch.jit.export
    def reset_states(self, batch_size: int = 1):
        self._state = torch.zeros(2, batch_size, 16)
        self._context = torch.zeros(0)
        self._last_sr = 0
        self._last_batch_size = 0

    def forward(self, x, sr: int):
        num_samples = 512 if sr == 16000 else 256
        if x.dim() == 1:
            x = x.unsqueeze(0)
        if x.shape[-1] != num_samples:
            raise ValueError("Provided number of samples is " + str(x.shape[-1]))
        batch_size = x.shape[0]
        context_size = 64 if sr == 16000 else 32
        if not self._last_batch_size:
            self.reset_states(batch_size)
        if self._last_sr and self._last_sr != sr:
            self.reset_states(batch_size)
        if self._last_batch_size and self._last_batch_size != batch_size:
            self.reset_states(batch_size)
        if not len(self._context):
            self._context = torch.zeros(batch_size, context_size)
        x = torch.cat([self._context, x], dim=1)
        if sr == 16000:
            out, h, c = self._model(x, self._state[:1], self._state[1:])
        else:
            out, h, c = self._model_8k(x, self._state[:1], self._state[1:])
        self._state = torch.cat([h, c])
        self._context = x[..., -context_size:]
        self._last_sr = sr
        self._last_batch_size = batch_size
        return out


class Counter(nn.Module):
    """An int attribute counting calls, beside a tensor state."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.calls = 0
        self._mean = torch.randn(8)

    def forward(self, x):
        self.calls = self.calls + 1
        y = self.fc(x) - self._mean
        self._mean = 0.5 * self._mean + 0.5 * y.mean(0)
        return y


class ScaledByCalls(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls = self.calls + 1
        return x * float(self.calls)


class ResetsOnData(nn.Module):
    def __init__(self):
        super().__init__()
        self._state = torch.zeros(1, 4)

    def forward(self, x):
        if bool(x.sum() > 0):
            self._state = torch.zeros(1, 4)
        y = x + self._state
        self._state = y
        return y * 2.0


def save(name, model):
    torch.manual_seed(0)
    torch.jit.script(model.eval()).save(path(name + ".pt"))


def close(got, want, what):
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)}, eager {tuple(want.shape)}"
    torch.testing.assert_close(got, want, msg=lambda m: f"{what}: {m}")


def close_output(got, want, what):
    close(got, want, what)
    why = numeric_rules.constant_would_pass(want, 1e-5, 1.3e-6)
    assert why is None, f"{what}: the comparison proves little: {why}"


TENSORS = ["_context", "_state"]
INTS = ["_last_sr", "_last_batch_size"]


def sequence(what, converted, eager, calls, gen, samples, sr):
    """Calls both `calls` times on the same fresh chunks, comparing outputs,
    tensor state and int state after each call."""
    try:
        for k in range(calls):
            x = torch.randn(1, samples, generator=gen)
            close_output(converted(x, sr), eager(x.clone(), sr), f"call {k + 1} output")
            for a in TENSORS:
                close(getattr(converted, a), getattr(eager, a), f"call {k + 1} state {a}")
            for a in INTS:
                got, want = getattr(converted, a), getattr(eager, a)
                assert got == want, f"call {k + 1} state {a}: {got}, eager {want}"
        check(f"{what}: {calls} calls match eager call by call (outputs, tensor and int state)",
              True)
    except Exception as e:  # noqa: BLE001 - report and go on
        check(f"{what}: {calls} calls match eager call by call", False, e)


save("vad", Vad())
for sr, samples in [(16000, 512), (8000, 256)]:
    name = f"vad-{sr}"
    out, report = path(name + ".nnapi.pt"), path(name + ".json")
    rc, text = run(path("vad.pt"), "--input", f"1x{samples}", "--input", f"int={sr}", "--verify",
                   "--lite", "-o", out, "--report", report)
    check(f"{name}: converts at the default target and --verify passes", rc == 0, text)
    if rc != 0:
        continue
    check(f"{name}: --verify compares tensor and int state after each of 3 calls",
          all(f"call {k} state {a}: " in text and f"call {k} state {a}: " in text
              for k in (1, 3) for a in TENSORS + INTS), text)
    check(f"{name}: the notes say what runs in TorchScript and that reset_states() is carried over",
          "run in the converted module's TorchScript before NNAPI" in text and
          "reset_states() writes the state only: carried over" in text, text)
    with open(report) as f:
        entry = json.load(f)["models"][0]
    check(f"{name}: the report lists the tensor state with the shape NNAPI takes",
          [(s["attribute"], s["shape"]) for s in entry.get("state", [])] ==
          [("_state", [2, 1, 16]), ("_context", [1, samples // 8])], entry)
    rc, text = run("inspect", out)
    check(f"{name}: inspect names the int state, the prologue and reset_states()",
          rc == 0 and "in TorchScript: attribute _last_sr (Int, 0 in the file)" in text and
          "in TorchScript: attribute _last_batch_size (Int, 0 in the file)" in text and
          "state_prologue:" in text and "method reset_states() carried over" in text, text)
    converted, eager = torch.jit.load(out), torch.jit.load(path("vad.pt"))
    gen = torch.Generator().manual_seed(sr)
    sequence(f"{name} from fresh", converted, eager, 6, gen, samples, sr)
    converted.reset_states()
    eager.reset_states()
    check(f"{name}: the model's reset_states() empties the context in the converted module",
          converted._context.shape == (0,) and converted._last_batch_size == 0,
          converted._context.shape)
    sequence(f"{name} after reset_states()", converted, eager, 4, gen, samples, sr)
    converted.reset_state()
    sequence(f"{name} after reset_state()", converted, torch.jit.load(path("vad.pt")), 3, gen,
             samples, sr)
    from torch.jit.mobile import _load_for_lite_interpreter
    lite, eager = _load_for_lite_interpreter(path(name + ".nnapi.ptl")), torch.jit.load(path("vad.pt"))
    try:
        for k in range(5):
            if k == 3:
                lite.run_method("reset_states", 1)
                eager.reset_states(1)
            x = torch.randn(1, samples, generator=gen)
            close_output(lite(x, sr), eager(x.clone(), sr), f"call {k + 1} output")
        check(f"{name} --lite: 5 calls of the .ptl, reset_states() after the third, match eager",
              True)
    except Exception as e:  # noqa: BLE001 - report and go on
        check(f"{name} --lite: 5 calls of the .ptl match eager", False, e)

save("counter", Counter())
rc, text = run(path("counter.pt"), "--input", "2x8", "--verify", "-o", path("counter.nnapi.pt"))
check("counter: converts and --verify compares the int state", rc == 0 and
      "call 3 state calls: scalar Int" in text, text)
if rc == 0:
    converted, eager = torch.jit.load(path("counter.nnapi.pt")), torch.jit.load(path("counter.pt"))
    for k in range(4):
        x = torch.randn(2, 8)
        close_output(converted(x), eager(x.clone()), f"counter call {k + 1}")
    check("counter: the converted module counts its calls as eager does",
          converted.calls == eager.calls == 4, (converted.calls, eager.calls))
    converted.reset_state()
    check("counter: reset_state() restores the file's count", converted.calls == 0,
          converted.calls)

refusals = [
    ("scaled-by-calls", ScaledByCalls(), "calls",
     "forward computes with the attribute 'calls'"),
    ("resets-on-data", ResetsOnData(), "_state", "reads the data of a tensor"),
]
for name, model, attr, why in refusals:
    save(name, model)
    rc, text = run(path(name + ".pt"), "--input", "1x4", "-o", path(name + ".nnapi.pt"))
    check(f"{name}: refused with exit 1, naming the attribute, the node and why",
          rc == 1 and f"'{attr}'" in text and "streaming_vad_test.py:" in text and why in text and
          "Traceback" not in text and not os.path.exists(path(name + ".nnapi.pt")), text)

finish("streaming-vad")

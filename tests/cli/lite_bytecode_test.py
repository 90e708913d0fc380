#!/usr/bin/env python3
"""--lite-bytecode-version N (issue 37 item 3): the .ptl written at the bytecode
version an older PyTorch Android reads.

Usage: lite_bytecode_test.py BIN WORK (with libneuralnetworks.so, the host
runtime, on LD_LIBRARY_PATH). The reference is Debian's PyTorch 1.13:
- the versions it can write: its own (_save_for_lite_interpreter's) and every
  one torch.jit.mobile._backport_for_mobile backports a file to;
- for each of them, a small model converted with --lite-bytecode-version N
  (and without --lite: the option implies it) has a .ptl whose
  torch.jit.mobile._get_model_bytecode_version is N, which
  torch.jit.mobile._load_for_lite_interpreter loads and runs on the host
  NNAPI runtime, giving the full converted module's output (torch.jit.load,
  same NNAPI model, same runtime: equal) and eager PyTorch's within float32
  tolerances;
- the versions just outside that range are exit 2, naming the oldest and the
  newest, and write nothing.
Prints "lite_bytecode: all passed" when every check passed.
"""
import os
import re
import sys

import torch
from torch.jit.mobile import (_backport_for_mobile, _get_model_bytecode_version,
                              _load_for_lite_interpreter)

sys.dont_write_bytecode = True  # importing cli_checks writes no __pycache__ into the sources
from cli_checks import check, finish, path, run  # noqa: E402


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return torch.relu(self.conv(x))


torch.manual_seed(0)
eager = Small().eval()
model = path("small.pt")
torch.jit.trace(eager, torch.randn(1, 3, 8, 8)).save(model)

# What PyTorch 1.13 writes: its own version, and those its backport reaches.
probe = path("probe.ptl")
torch.jit.script(eager)._save_for_lite_interpreter(probe)
own = _get_model_bytecode_version(probe)
writable = [own]
for v in range(1, own):
    if _backport_for_mobile(probe, path("probe_v%d.ptl" % v), v):
        writable.append(v)
writable.sort()
check("PyTorch 1.13 writes a contiguous range of bytecode versions (%s)" % writable,
      writable == list(range(writable[0], own + 1)), writable)
oldest, newest = writable[0], writable[-1]

x = torch.randn(1, 3, 8, 8)  # not the tracing input
with torch.no_grad():
    expected = eager(x)
for n in writable:
    out = path("small_v%d.nnapi.pt" % n)
    ptl = path("small_v%d.nnapi.ptl" % n)
    for f in (out, ptl):
        if os.path.exists(f):
            os.unlink(f)
    rc, text = run(model, "--input", "1x3x8x8", "--lite-bytecode-version", str(n), "-o", out)
    check("--lite-bytecode-version %d converts (exit 0)" % n, rc == 0, text)
    if rc != 0:
        continue
    check("--lite-bytecode-version %d writes the .ptl without --lite" % n, os.path.exists(ptl))
    if not os.path.exists(ptl):
        continue
    got = _get_model_bytecode_version(ptl)
    check("_get_model_bytecode_version of the .ptl is %d" % n, got == n, got)
    try:
        lite_out = _load_for_lite_interpreter(ptl)(x)
        full_out = torch.jit.load(out)(x)
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        check("version %d: the .ptl loads and runs in the lite interpreter" % n, False, e)
        continue
    check("version %d: the lite interpreter's output equals the full module's" % n,
          torch.equal(lite_out, full_out), (lite_out - full_out).abs().max())
    try:
        torch.testing.assert_close(lite_out, expected)
        close = ""
    except AssertionError as e:
        close = str(e)
    check("version %d: the lite interpreter's output is eager PyTorch's" % n, not close, close)

for n in (oldest - 1, newest + 1):
    out = path("refused_v%d.nnapi.pt" % n)
    rc, text = run(model, "--input", "1x3x8x8", "--lite-bytecode-version", str(n), "-o", out)
    check("--lite-bytecode-version %d is exit 2" % n, rc == 2, (rc, text))
    names = re.search(r"bytecode versions %d\b.* to %d\b" % (oldest, newest), text)
    check("--lite-bytecode-version %d: the message names %d and %d" % (n, oldest, newest),
          bool(names), text)
    check("--lite-bytecode-version %d writes nothing" % n,
          not os.path.exists(out) and not os.path.exists(out + "l"))

finish("lite_bytecode")

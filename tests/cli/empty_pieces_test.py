#!/usr/bin/env python3
"""--cpu-fallback and zero-sized pieces (issue 34, item 4).

Usage: empty_pieces_test.py BIN WORK (with libneuralnetworks.so, the host
runtime, on LD_LIBRARY_PATH). The Emformer-like module of the fixtures
(tools/fixtures/slicing.py), scripted: its loop over segments stays
TorchScript, and what it builds, the right context, is zero-sized with
right_context_length=0. NNAPI takes a zero-sized input as an omitted one
(NeuralNetworks.h: a null buffer of length 0), so a part fed it fails when it
runs ("missing value for input 0"). Checks that the conversion with
--cpu-fallback, without --verify, writes a module that runs on the host
runtime and gives eager PyTorch's outputs on two random inputs (the float32
tolerances of torch.testing; an output a constant would match fails), and
that --verify says ok. On main at ccc94f8 the module was written with exit 0
and failed when it ran.
Prints "empty-pieces: all passed" when every check passed.
"""
import os
import sys

import torch

sys.dont_write_bytecode = True  # importing writes no __pycache__ into the sources
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
sys.path.insert(0, HERE)
from cli_checks import check, finish, path, run  # noqa: E402
from fallback_checks import compare  # noqa: E402
from fixtures.slicing import EmformerLike  # noqa: E402

torch.manual_seed(0)
eager = EmformerLike().eval()
model = path("emformer_like.pt")
torch.jit.script(eager).save(model)
out = path("emformer_like.nnapi.pt")
if os.path.exists(out):
    os.remove(out)

rc, text = run(model, "--input", "2x8x16", "--cpu-fallback", "-o", out)
check("converts with --cpu-fallback (exit 0)", rc == 0, text)
if rc == 0:
    converted = torch.jit.load(out)
    subs = [name for name, _ in converted.named_children() if name.startswith("nnapi_")]
    check("split into NNAPI parts and TorchScript", len(subs) >= 1, subs)
    for k in range(2):
        x = torch.randn(2, 8, 16)
        compare(f"the written module runs and matches eager (inputs {k})", converted, eager, [x])

rc, text = run(model, "--input", "2x8x16", "--cpu-fallback", "--verify", "-o", out)
check("--verify: exit 0, output ok", rc == 0 and "output 0: 2x8x16 Float" in text and
      text.rstrip().endswith("ok"), text)
finish("empty-pieces")

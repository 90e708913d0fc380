#!/usr/bin/env python3
"""Models as they are published for apps (issue 33): passed through
torch.utils.mobile_optimizer.optimize_for_mobile and saved with
torch.jit.save, converted at the default target and checked against eager.

For each model (torchvision's mobilenet_v2 with realistic weights, the
small detector of tools/mobile_models.py), built here at test time:
  1. eval mode, scripted, optimize_for_mobile (its convolutions and linear
     layers become prepacked::*_clamp_run with XNNPACK context constants,
     batch norm and ReLU/ReLU6 folded into them), saved both ways users
     publish it: torch.jit.save (.pt) and _save_for_lite_interpreter (.ptl,
     whose bytecode.pkl shares its tensors with constants.pkl);
  2. the file must hold prepacked::conv2d_clamp_run (else the test would
     not test them);
  3. `nnapi-convert FILE --input SPEC --verify -o OUT` (the default target,
     no --cpu-fallback): exit 0 and every output line of --verify "ok";
  4. the converted module runs on the host runtime (PyTorch's NNAPI binding
     on libneuralnetworks.so) on 3 seeded inputs, and each output must match
     both the optimized file run by eager PyTorch (XNNPACK) and the original
     eager model (no folding), within --verify's float rule
     (|nnapi - eager| <= atol + rtol * |eager|, atol = rtol = 1e-4) with atol
     scaled by max(1, the output's RMS) for the original model, whose folded
     batch norms round differently; a check a constant output would pass
     fails (tools/numeric_rules.py).

Usage: test_mobile_optimized.py NNAPI_CONVERT_BINARY WORK_DIR
(LD_LIBRARY_PATH must hold the runtime). The last line is
"N passed, M failed"; exit status non-zero on failure.
"""
import os
import subprocess
import sys

import torch

from case_runner import run_cases

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")
sys.path.insert(0, TOOLS)

import mobile_models  # noqa: E402
import numeric_rules  # noqa: E402
from model_zoo import realistic_init  # noqa: E402

ATOL = RTOL = 1e-4


def flat(outputs):
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    return [t for o in outputs for t in flat(o)]


def close(got, want, atol, what):
    why = numeric_rules.constant_would_pass(want, atol=atol, rtol=RTOL)
    assert why is None, f"{what}: the check proves little: {why}"
    diff = (got - want).abs()
    bad = diff > atol + RTOL * want.abs()
    assert not bool(bad.any()), (
        f"{what}: {int(bad.sum())} of {want.numel()} elements differ, "
        f"max abs err {diff.max().item():.3g}")
    return diff.max().item()


def check_model(name, model, shape, binary, work, lite):
    model = model.eval()
    optimized = mobile_models.mobile(model)
    src = os.path.join(work, name + (".ptl" if lite else ".pt"))
    out = os.path.join(work, name + (".lite" if lite else "") + ".nnapi.pt")
    if lite:
        optimized._save_for_lite_interpreter(src)
    else:
        torch.jit.save(optimized, src)
    kinds = {n.kind() for n in torch.jit.load(src).graph.nodes()}
    assert "prepacked::conv2d_clamp_run" in kinds, f"no XNNPACK convolution in {sorted(kinds)}"
    spec = "x".join(str(d) for d in shape)
    r = subprocess.run([binary, src, "--input", spec, "--verify", "-o", out],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}"
    lines = [ln for ln in r.stdout.splitlines() if ln.strip().startswith("output ")]
    assert lines and all(ln.rstrip().endswith(", ok") for ln in lines), r.stdout[-2000:]
    converted = torch.jit.load(out)
    gen = torch.Generator().manual_seed(7)
    worst_file = worst_model = 0.0
    for _ in range(3):
        x = torch.randn(*shape, generator=gen)
        with torch.no_grad():
            got = flat(converted(x))
            from_file = flat(optimized(x))
            from_model = flat(model(x))
        assert len(got) == len(from_file) == len(from_model), (len(got), len(from_file))
        for i, (g, f, m) in enumerate(zip(got, from_file, from_model)):
            assert g.shape == f.shape, (i, g.shape, f.shape)
            worst_file = max(worst_file, close(g, f, ATOL, f"output {i} vs the optimized file"))
            rms = max(1.0, m.pow(2).mean().sqrt().item())
            worst_model = max(worst_model,
                              close(g, m, ATOL * rms, f"output {i} vs the original model"))
    print(f"     {name}: {len(lines)} output(s) verified by --verify; max |nnapi - optimized "
          f"file| {worst_file:.2e}, max |nnapi - original model| {worst_model:.2e}")


def main():
    binary, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    import torchvision
    models = [
        ("mobilenet_v2", realistic_init(torchvision.models.mobilenet_v2()), (1, 3, 224, 224)),
        ("detector", mobile_models.TinyDetector(), (1, 3, 64, 80)),
    ]
    cases = [(name + ("-lite" if lite else ""), model, shape, lite)
             for name, model, shape in models for lite in (False, True)]
    return run_cases(cases, lambda name, model, shape, lite:
                     check_model(name, model, shape, binary, work, lite), message_chars=1500)


if __name__ == "__main__":
    sys.exit(main())

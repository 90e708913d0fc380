#!/usr/bin/python3
"""Generate reference fixtures for nnapi-convert from PyTorch's own converter.

Usage (Debian's interpreter, which has python3-torch 1.13):
    /usr/bin/python3 tools/make_fixtures.py OUT_DIR [--only REGEX] [--torchvision] [--list]

One directory per case, OUT_DIR/<case_name>/ (overwritten on every run); the
layout is documented in tests/reference/README.md.

Cases:
  * every self.check(...) and assertRaisesRegex case of PyTorch's
    test/test_nnapi.py, built the way that test builds them (quantized
    conv2d_transpose is skipped, as the test skips it);
  * with --torchvision, randomly initialised torchvision models (float and
    quantized).

The reference for every case is: trace (saved as model.pt), torch.jit.freeze,
torch._C._jit_pass_remove_mutation, then the stock converter with its internal
torch.jit.freeze replaced by the identity.

The cases live in tools/fixtures/, one module per family of node kinds (its
__init__.py says which and in what order); this file builds and writes them.
"""

import argparse
import os
import re
import shutil
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import fixtures  # noqa: E402
from fixtures_common import as_list, regex_matches, run_reference, write_case  # noqa: E402

# ------------------------------------------------------------------- driver
# Cases whose reference model (PyTorch's converter's) breaks a rule of
# Android's NeuralNetworks.h, so that nnapi-convert's validator refuses that
# model (tests/validate) and the host runtime's ANeuralNetworksModel_finish
# returns BAD_DATA for it (runtime.reference_models): case.json's
# "validator_refuses" says why. nnapi-convert writes a valid model instead
# (tests/reference lists these as known reference bugs).
_RANK5_RESHAPE = ("PyTorch's converter flattens a rank-5 input with RESHAPE; NeuralNetworks.h, "
                  "RESHAPE: \"Supported tensor rank: up to 4\"")
_NHWC_SLICE = ("PyTorch's converter slices NHWC data along the NCHW axis; NeuralNetworks.h, "
               "STRIDED_SLICE: its output dims follow from begin, end and strides, and they "
               "differ from the declared ones")
_RANK0_OUTPUT = ("PyTorch's converter declares a model output of rank 0; NNAPI has no rank-0 "
                 "model outputs (PyTorch's NNAPI binding fails on them)")
VALIDATOR_REFUSES = {
    **{f"flatten-{n}": _RANK5_RESHAPE
       for n in ("default", "s0-e4", "s0-em2", "s2-e3", "s2-e4")},
    **{f"beyond-dims-slice-{k}-nhwc": _NHWC_SLICE for k in ("float", "quant", "flex-batch")},
    **{f"beyond-ghost-slice-{k}-nhwc": _NHWC_SLICE for k in ("float", "flex-batch")},
    **{f"beyond-rank0-{k}": _RANK0_OUTPUT for k in ("mean-1d", "mean-4d", "mean-4d-nhwc")},
    "beyond-int32-cat-numbers": ("PyTorch's converter joins int32 data with CONCATENATION; "
                                 "NeuralNetworks.h, CONCATENATION: TENSOR_FLOAT16, "
                                 "TENSOR_FLOAT32 and TENSOR_QUANT8_ASYMM only"),
    "beyond-int32-slice-batch": ("PyTorch's converter slices int32 data with STRIDED_SLICE; "
                                 "NeuralNetworks.h, STRIDED_SLICE: TENSOR_FLOAT16, "
                                 "TENSOR_FLOAT32 and TENSOR_QUANT8_ASYMM only"),
    **{f"beyond-int32-{k}": (
        f"PyTorch's converter emits {op} of int32 data; NeuralNetworks.h, {op}: "
        "TENSOR_FLOAT16, TENSOR_FLOAT32 and TENSOR_QUANT8_ASYMM only")
       for k, op in (("relu", "RELU"), ("sigmoid", "LOGISTIC"), ("hardtanh", "RELU1"),
                     ("add-relu-fused", "RELU"))},
    **{f"beyond-cat-flex-inputs-{s}": (
        "PyTorch's converter declares a cat's size along a flexible dim as its fixed parts' "
        "sum; NeuralNetworks.h, CONCATENATION: the output's size along the axis is the sum of "
        "the inputs' sizes") for s in ("a", "b")},
}


def _copies(tensors):
    """Tracing and eager run on copies (strides kept), so that a forward that
    writes into its input (x.sigmoid_()) leaves the saved args as given."""
    return tuple(t.clone() if isinstance(t, torch.Tensor) else t for t in tensors)


def generate(out_dir, name, source, builder):
    """Build, trace, run eager and the reference, write the directory.
    Returns (case_json, problems)."""
    torch.manual_seed(0)
    c = builder()
    module = c.module
    module.eval()
    args = c.args
    trace_args = c.trace_args or args
    convert_args = c.convert_args or args
    # check_trace only re-runs and compares (the traced module is the same);
    # skip it for the large torchvision models to save time.
    if isinstance(module, torch.jit.ScriptModule):
        traced = module  # scripted by the builder (Scalar overloads, control flow)
    else:
        traced = torch.jit.trace(module, _copies(trace_args),
                                 check_trace=(source == "test_nnapi"))
    traced.eval()
    if c.engine:
        torch.backends.quantized.engine = c.engine
    eager = as_list(module(*_copies(args)))
    torch.backends.quantized.engine = 'qnnpack'
    # The torchvision references' modules are big: kept only where a test runs
    # them (googlenet's, whose ceil_mode the reference gets wrong).
    ref = run_reference(traced, convert_args, args,
                        want_converted=(source != "torchvision" or "googlenet" in name),
                        **c.reference_kwargs)
    info = write_case(out_dir, name=name, source=source, traced=traced,
                      convert_args=convert_args, run_args=args,
                      eager_outputs=eager, ref=ref, error_regex=c.error_regex,
                      must_convert=c.must_convert, must_refuse=c.must_refuse,
                      options=c.options, fold=c.fold, not_runnable=c.not_runnable,
                      validator_refuses=VALIDATOR_REFUSES.get(name))
    problems = []
    if source == "test_nnapi":
        if c.error_regex is None and not ref.ok:
            problems.append("reference refused a case test_nnapi.py expects to convert")
        if c.error_regex is not None and ref.ok:
            problems.append("reference converted a case test_nnapi.py expects to fail")
        if c.error_regex is not None and not ref.ok and \
                not regex_matches(c.error_regex, ref.error):
            problems.append(f"error does not match /{c.error_regex}/")
        if info["reference_shape_mismatch"]:
            problems.append("output template shapes differ from eager outputs")
    return info, problems, ref

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("out_dir", nargs="?")
    p.add_argument("--only", help="regex (re.search) on case names")
    p.add_argument("--torchvision", action="store_true",
                   help="also the torchvision model cases (slow)")
    p.add_argument("--list", action="store_true", help="only list case names")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print the reference traceback of refused cases")
    opts = p.parse_args(argv)
    if not opts.list and not opts.out_dir:
        p.error("OUT_DIR is required")

    only = re.compile(opts.only) if opts.only else None
    registry = fixtures.registry()
    selected = [(n, s, b) for (n, s, b) in registry
                if (s != "torchvision" or opts.torchvision)
                and (only is None or only.search(n))]
    if opts.list:
        for n, s, _ in selected:
            print(f"{n}\t{s}")
        return 0

    warnings.filterwarnings("ignore")
    torch.backends.quantized.engine = 'qnnpack'
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    os.makedirs(opts.out_dir, exist_ok=True)
    # A case renamed or removed since OUT_DIR was written leaves its directory
    # behind, which the tests would still read: such directories (a case.json,
    # a name no case has, matching --only) go.
    registered = {n for n, _, _ in registry}
    for entry in sorted(os.listdir(opts.out_dir)):
        stale = os.path.join(opts.out_dir, entry)
        if (entry not in registered and (only is None or only.search(entry))
                and os.path.isfile(os.path.join(stale, "case.json"))):
            shutil.rmtree(stale)
            print(f"removed {entry}: no such case now")

    if any(s == "torchvision" for _, s, _ in selected):
        t0 = time.perf_counter()
        import torchvision  # noqa: F401  (not counted in the first case)
        print(f"import torchvision: {time.perf_counter() - t0:.1f}s")

    n_ok = n_refused = 0
    unexpected = []
    phase_time = {}
    t_start = time.perf_counter()
    with torch.no_grad():
        for name, source, builder in selected:
            t0 = time.perf_counter()
            info, problems, ref = generate(opts.out_dir, name, source, builder)
            dt = time.perf_counter() - t0
            phase_time[source] = phase_time.get(source, 0.0) + dt
            if info["expect"] == "ok":
                n_ok += 1
            else:
                n_refused += 1
            line = f"{name}: {info['expect']} ({dt:.2f}s)"
            if info["remove_mutation_changed"]:
                line += " [remove_mutation changed graph]"
            if info["reference_shape_mismatch"]:
                line += " [reference_shape_mismatch]"
            if info["reference_error"] is not None:
                first = (info["reference_error"].strip().splitlines() or ["(no message)"])[0]
                line += " -- " + first[:200]
            print(line, flush=True)
            if opts.verbose and ref.error_trace:
                print(ref.error_trace, flush=True)
            for prob in problems:
                unexpected.append(f"{name}: {prob}")
    total = time.perf_counter() - t_start
    for src, t in sorted(phase_time.items()):
        print(f"time {src}: {t:.1f}s")
    print(f"time total: {total:.1f}s")
    for u in unexpected:
        print(f"UNEXPECTED {u}")
    print(f"wrote {n_ok + n_refused} cases ({n_ok} ok, {n_refused} refused)")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())

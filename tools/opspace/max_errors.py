#!/usr/bin/env python3
"""The max abs error of each verified float output of an op-space run, per
kind and form: `LD_LIBRARY_PATH=build/runtime python3 tools/opspace/max_errors.py
work/summary.json [kind regex]` (the --json of opspace.py)."""
import collections
import json
import re
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from opspace import flat_outputs  # noqa: E402


def main():
    d = json.load(open(sys.argv[1]))
    pattern = re.compile(sys.argv[2] if len(sys.argv) > 2 else ".")
    worst = collections.defaultdict(float)
    torch.backends.quantized.engine = "qnnpack"
    for c in d["cases"]:
        if c["outcome"] != "verified" or not pattern.search(c["kind"]):
            continue
        for xs, refs in torch.load(c["runs"]):
            m = torch.jit.load(c["output"])
            with torch.no_grad():
                outs = flat_outputs(m(*xs))
            for o, r in zip(outs, refs):
                if r.is_floating_point() and not r.is_quantized:
                    key = (c["kind"], c["form"])
                    worst[key] = max(worst[key], (o - r).abs().max().item() if r.numel() else 0.0)
                else:
                    worst.setdefault((c["kind"], c["form"]), 0.0)
    for (kind, form), err in sorted(worst.items()):
        print(f"{kind:20s} {form:11s} {err:.3g}")


if __name__ == "__main__":
    main()

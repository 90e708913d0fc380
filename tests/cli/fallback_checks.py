"""What fallback_test.py and fallback_flex_test.py share: comparing a
--cpu-fallback module's outputs with eager PyTorch's. Import it after
cli_checks (it reports through cli_checks.check)."""
import os
import sys

import torch

from cli_checks import check
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import numeric_rules  # noqa: E402


def outputs(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def compare(name, converted, eager, inputs, weak=()):
    """`weak`: indices of outputs a constant would match here (said why where
    compare is called); every other output must vary beyond the tolerance."""
    try:
        got, want = outputs(converted(*inputs)), outputs(eager(*inputs))
        assert len(got) == len(want), f"{len(got)} outputs, eager {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert g.shape == w.shape, f"shape {tuple(g.shape)}, eager {tuple(w.shape)}"
            if w.is_quantized:
                problem, _, _ = numeric_rules.compare_quantized(w, g)
                assert problem is None, problem
            elif w.dtype.is_floating_point:
                torch.testing.assert_close(g, w)
            else:
                assert torch.equal(g, w), "integer outputs differ"
            # torch.testing's float32 tolerances (atol 1e-5, rtol 1.3e-6)
            why = numeric_rules.constant_would_pass(
                w, *((1e-5, 1.3e-6) if w.dtype.is_floating_point else (0, 0)))
            assert (why is None) != (i in weak), \
                f"output {i}: " + (f"the comparison proves little: {why}" if why else
                                   "listed as weak, but it varies: remove it from `weak`")
        check(name, True)
    except Exception as e:  # noqa: BLE001 - report and go on
        check(name, False, e)

"""The project's numeric rules for the Python checkers (tools/model_zoo.py,
tests/runtime/test_reference_models.py, tests/cli/fallback_test.py): the
rules `nnapi-convert --verify` applies (compare_output and
constant_output_would_pass in src/verify/verify.cpp), so that every check
of the project passes and fails alike.

Quantized outputs (compared as integers): the same scale and zero point, no
element off by more than one quantum, and at most 3% of the elements off by
one (the limit PyTorch's test_nnapi.py uses for quantized convolutions). A
float output the NNAPI model computes with DEQUANTIZE is measured in quanta
of the dequantized operand: |difference| / quantum, rounded.

Float outputs of float16 computation (--float16, --relax-f32-to-f16): the
tolerances are raised to at least FLOAT16_TOLERANCE, and an output that fails
element by element passes when its RMS error is at most L * 2^-11 of the
output's RMS, L the NNAPI model's operation count (float16_verdict;
relaxed_tolerances and compare_output in src/verify/verify.cpp,
docs/verify.md).

A check proves little when some constant output would pass it: every
element of the reference output is within the tolerance of one value (a
constant output, or one smaller than the tolerance, which an all-zero output
passes). constant_would_pass says why; the checkers fail such a check.
"""
import torch

QUANT_SHARE = 0.03
# Float outputs: |nnapi - model| <= FLOAT_ATOL + FLOAT_RTOL * |model| (--verify's
# defaults; the zoo takes FLOAT_ATOL in units of max(1, the output's RMS)).
FLOAT_ATOL = 1e-4
FLOAT_RTOL = 1e-4

# float16 computation: --verify's atol and rtol at least 5/1024
# (kFloat16Tolerance), and float16's unit roundoff 2^-11 (kFloat16UnitRoundoff).
FLOAT16_TOLERANCE = 5.0 / 1024.0
FLOAT16_UNIT_ROUNDOFF = 2.0 ** -11


def quanta_verdict(quanta, share=QUANT_SHARE, limit=None):
    """quanta: a tensor of |differences| in quanta (integers). Returns (problem,
    summary, off): problem is None when within the rule (none above 1, at most
    `share` of the elements, or `limit` elements when given, at 1), else what
    breaks it; off is how many elements are off."""
    n = quanta.numel()
    worst = int(quanta.max()) if n else 0
    off = int((quanta >= 1).sum()) if n else 0
    allowed = limit if limit is not None else share * n
    summary = f"{off}/{n} off by one quantum, max {worst}"
    if worst > 1:
        return f"an element is off by {worst} quanta (at most 1 allowed); {summary}", summary, off
    if off > allowed:
        return (f"{off} of {n} elements off by one quantum ({100.0 * off / max(n, 1):.3g}%, "
                f"at most {allowed:.4g} allowed)"), summary, off
    return None, summary, off


def compare_quantized(eager, nnapi, share=QUANT_SHARE, limit=None, qparams_must_match=True):
    """Two quantized tensors. Returns quanta_verdict's (problem, summary, off)."""
    if qparams_must_match and (eager.q_scale(), eager.q_zero_point()) != (
            nnapi.q_scale(), nnapi.q_zero_point()):
        return (f"quantized with scale {nnapi.q_scale()}, zero point {nnapi.q_zero_point()}, "
                f"but the model's output has {eager.q_scale()}, {eager.q_zero_point()}"), "", 0
    diff = (eager.int_repr().to(torch.int64) - nnapi.int_repr().to(torch.int64)).abs()
    return quanta_verdict(diff, share, limit)


def dequantized_quanta(eager, nnapi, quantum):
    """|nnapi - eager| of float outputs in quanta, rounded."""
    return ((nnapi.double() - eager.double()).abs() / quantum).round().to(torch.int64)


def constant_would_pass(eager, atol=0.0, rtol=0.0, quantum=0.0):
    """Why a check of `eager` (a tensor) with these tolerances proves little, or
    None. Float elements pass within atol + rtol * |eager| (and within
    `quantum` when > 0); quantized ones within one quantum; integers exactly."""
    if eager.numel() == 0:
        return None
    if eager.is_quantized:
        q = eager.int_repr().to(torch.int64)
        lo, hi = int(q.min()), int(q.max())
        if eager.numel() > 1 and hi - lo <= 2:
            return f"the output's integers only span {lo} to {hi}: a constant passes"
        return None
    b = eager.double().reshape(-1)
    if not bool(torch.isfinite(b).all()):
        return None
    lo, hi = float(b.min()), float(b.max())
    if eager.numel() > 1 and hi - lo <= 1e-7 * max(1.0, abs(hi)):
        return f"every element is {hi:.4g}: a constant output passes"
    if eager.is_floating_point():
        tol = b.abs() * rtol + atol
        if quantum > 0:
            tol = tol.clamp(min=quantum)
    else:
        tol = torch.zeros_like(b)
    if bool((b.abs() <= tol).all()):
        return (f"every element is within the tolerance of 0 (largest {float(b.abs().max()):.3g}): "
                "an all-zero output passes")
    if eager.numel() > 1 and float((b - tol).max()) <= float((b + tol).min()):
        return (f"the output only spans {lo:.4g} to {hi:.4g}, within the "
                "tolerance of one value: a constant output passes")
    return None


def float16_verdict(eager, nnapi, operations, atol=FLOAT_ATOL, rtol=FLOAT_RTOL):
    """None when the float output `nnapi` of an NNAPI model of `operations`
    operations computing in float16 passes --verify's rule against `eager`,
    else why: every element within max(atol, 5/1024) + max(rtol, 5/1024) *
    |eager|, or else rms(nnapi - eager) <= operations * 2^-11 * rms(eager)
    (operations 0: element by element only)."""
    atol, rtol = max(atol, FLOAT16_TOLERANCE), max(rtol, FLOAT16_TOLERANCE)
    a, b = nnapi.double().reshape(-1), eager.double().reshape(-1)
    if a.numel() == 0:
        return None
    if not (bool(torch.isfinite(a).all()) and bool(torch.isfinite(b).all())):
        return "NaN or infinity in the output, so nothing can be compared"
    diff = (a - b).abs()
    over = diff > atol + rtol * b.abs()
    if not bool(over.any()):
        return None
    rms_b = float(b.pow(2).mean().sqrt())
    rel = float((a - b).pow(2).mean().sqrt()) / rms_b if rms_b > 0 else float("inf")
    bound = operations * FLOAT16_UNIT_ROUNDOFF
    if operations > 0 and rms_b > 0 and rel <= bound:
        return None
    worst = int((diff - (atol + rtol * b.abs())).argmax())
    return (f"{int(over.sum())} of {a.numel()} elements differ by more than atol + rtol * |model| "
            f"(atol {atol:.3g}, rtol {rtol:.3g}); the worst, flat index {worst}: "
            f"{float(a[worst]):.6g} vs {float(b[worst]):.6g}; and its RMS error is {rel:.3g} of "
            f"the model output's RMS, over float16 computation's bound {bound:.3g} ({operations} "
            "operations x float16's unit roundoff 2^-11)")

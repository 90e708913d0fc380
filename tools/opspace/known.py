"""Known failures and kinds that cannot have a verified row.

KNOWN: lowering bugs other developers are fixing on branch `lowerbugs`
(issue 19, part 3). A failing case matching one of these (by its kind, form
and the failure's detail, so that another failure of the same case is not
hidden) is reported as KNOWN and does not fail the run. Once the fix is
merged the case verifies and the entry is stale: the run says so; remove it.

FLOAT16: what float16 computation cannot get right, whatever the lowering
(the f16 forms, --float16; docs/quantization.md lists them). A failing f16 case
matching one (case id and detail) is reported as EXPECTED and does not fail
the run; a full run says when one matched no case.

NO_ROW: kinds of the lowering table that cannot have a verified case in a
one-op module, with the reason. The subset fails on any other kind with no
verified case, so every new lowering needs its row in own_cases.py.
"""
import re

LOWERBUGS = "issue 19 part 3, branch lowerbugs"
REJECTED = r"the runtime rejects the module"

# (bug, case id pattern, detail pattern)
KNOWN = [
    # (the entries for the rank-5 YOLO head, NHWC slices, rank-0 outputs,
    # softmax's dtype, nearest upsampling by 1.7 and 0.6, 0-dim constants and
    # the 3-D convolution listing were fixed on branch lowerbugs)
]

# (reason, case id pattern, detail pattern); the detail patterns take the
# failure as float16_verdict and compare word it, and no other.
_AT = r"^output \d+( at input shape \([\d, ]+\))?: "
FLOAT16 = [
    ("float16: floor, trunc and remainder jump where the quotient is an integer, and float16's "
     "quotient (11 bits) lands on the other side of one for a few elements",
     r"^(floor_divide|remainder)-own-[^:]*:f16|^div-own-[^:]*-(floor|trunc):f16",
     _AT + r"[12] of \d+ elements differ"),
    ("float16: values that differ in float32 can round to one float16 value, and topk orders "
     "such ties by index (its values match)",
     r"^topk-own-[^:]*:f16", r"^output 1( at input shape \([\d, ]+\))?: integer values differ$"),
    ("float16: sin and cos of arguments of 100 and more radians: the argument itself rounds by "
     "up to |x| 2^-11 (0.05 radians at 100), more than float16's tolerance",
     r"^(sin|cos)-own-[^:]*-x10+:f16", _AT + r"\d+ of \d+ elements differ"),
]

NO_ROW = {
    "prim::GetAttr": "torch.jit.freeze inlines every attribute a forward reads; a GetAttr survives only "
                     "for attributes the model mutates, which an inference module does not",
    "aten::dropout": "freezing an eval-mode module removes it (training=False); OpInfo's training-mode "
                     "samples are random",
    "aten::feature_dropout": "freezing an eval-mode module removes it (training=False)",
    "aten::detach": "freezing removes it",
    "prim::RaiseException": "a raise the conversion reaches refuses it (the model's own message: "
                            "beyond-scripted-checks-raise-taken, beyond-size-checks-assert-fails); "
                            "one in a branch not taken is dropped unlowered",
    "prim::unchecked_cast": "TorchScript puts it only inside a branch (an Optional refined by `if x is "
                            "not None:` or an assert), where the matrix credits no kind; the "
                            "_ScriptedChecks rows (is_floating_point, __isnot__, ...) convert and verify "
                            "it, and beyond-scripted-checks-folded",
}


def known_bug(case):
    for bug, case_pattern, detail_pattern in KNOWN:
        if re.search(case_pattern, case["id"]) and re.search(detail_pattern, case["detail"] or ""):
            return f"{bug}; {LOWERBUGS}"
    for reason, case_pattern, detail_pattern in FLOAT16:
        if re.search(case_pattern, case["id"]) and re.search(detail_pattern, case["detail"] or ""):
            return reason
    return None

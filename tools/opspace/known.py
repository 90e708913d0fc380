"""Known failures and kinds that cannot have a verified row.

KNOWN: lowering bugs other developers are fixing on branch `lowerbugs`
(issue 19, part 3). A failing case matching one of these (by its kind, form
and the failure's detail, so that another failure of the same case is not
hidden) is reported as KNOWN and does not fail the run. Once the fix is
merged the case verifies and the entry is stale: the run says so; remove it.

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
    return None

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
    ("rank-5 elementwise operations (YOLO head) reach NNAPI with rank > 4",
     r"-(own|opinfo|moduleinfo)-.*(rank5|rank6|BatchNorm3d)", REJECTED + r".*(error: 4|returned error)"),
    ("STRIDED_SLICE over the wrong axes of NHWC data",
     r"^slice-.*:(nhwc|flex_nhwc|quant_nhwc)$", REJECTED),
    ("rank-0 outputs of reductions and squeeze",
     r"^(mean|sum|squeeze)-.*(all|opinfo)", REJECTED + r".*(getOutputOperandDimensions|Invalid mem_fmt)"),
    ("softmax/log_softmax `dtype` ignored (float32 returned for float64)",
     r"^(softmax|log_softmax|neg)-.*(dtype|with_dtype)", r"dtype torch.float32 != eager torch.float64"),
    ("nearest upsampling with a non-integer scale factor",
     r"^upsample_nearest2d-.*(x1\.7|x0\.6|nearest-\d|upsample_nearest-\d)", r"max abs err"),
    ("0-dim constants in baddbmm/masked_fill",
     r"^(baddbmm|masked_fill)-own-0-dim", REJECTED + r".*error: 4"),
    ("a refusal does not list 3-D convolutions (a kind the table lowers, failing on its arguments)",
     r"^convolution-own-conv3d-pool3d:", r"^does not name the unsupported aten::_convolution:"),
]

NO_ROW = {
    "prim::GetAttr": "torch.jit.freeze inlines every attribute a forward reads; a GetAttr survives only "
                     "for attributes the model mutates, which an inference module does not",
    "aten::dropout": "freezing an eval-mode module removes it (training=False); OpInfo's training-mode "
                     "samples are random",
    "aten::feature_dropout": "freezing an eval-mode module removes it (training=False)",
    "aten::detach": "freezing removes it",
}


def known_bug(case):
    for bug, case_pattern, detail_pattern in KNOWN:
        if re.search(case_pattern, case["id"]) and re.search(detail_pattern, case["detail"] or ""):
            return f"{bug}; {LOWERBUGS}"
    return None

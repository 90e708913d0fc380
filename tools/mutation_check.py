#!/usr/bin/env python3
"""Mutation check of the test suite (issue 25): plants deliberate bugs in the
converter, the host runtime and --verify, one at a time, in a scratch copy of
the tree, rebuilds what changed, runs the part of the suite that covers the
planted code, and prints which tests caught each bug. Not run by ctest.

    /usr/bin/python3 tools/mutation_check.py [--build build] [--only REGEX]
        [--jobs 2] [--table FILE] [--keep-going] [--rev REV]

--build names the project's build tree after a ctest run: its generated
fixtures (BUILD/fixtures: test_nnapi, torchvision) are reused, not made again.
The scratch copy is BUILD-mutation/tree (the tracked files of the working
tree, copied where they differ, so only what a bug touches is rebuilt; it
sits beside the build tree with the same layout, so ccache with
CCACHE_BASEDIR=/work shares the objects), built in BUILD-mutation/tree/build.
First the unmutated copy must pass every selected test, else the check stops.
--rev REV checks the suite of git revision REV instead of the working tree's
(with a build tree of that revision for --build: its fixtures are the ones
its tests expect), e.g. to see which planted bugs an older suite missed.

The tests (TESTS below) are the suites that check what the converter, the
runtime, the validator and --verify compute: the byte-exact reference suites
with their numeric checks of the cases the reference refuses, the converted
fixtures on the host runtime (with and without --fuse-activations), the
runtime's spec tests, the validator's rules, --verify's rules and its
command-line tests, the Python checkers' rule. The model zoos (models.*) and
the CLI/hostile suites are left out (they take minutes per run and test no
code path these do not). By default each planted bug runs only the suites
that reach its code (its entry's tests, with the targets they need: 2 to 5
minutes a bug on 2 cores instead of 5 to 8); --all-tests runs every suite of
TESTS for every bug. The unmutated tree first runs the union of what the bugs
will run. A gtest case known to fail on the unmutated tree is left out with
GTEST_FILTER=-Suite.case:... in the environment (ctest passes it on).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The ctest names run against every planted bug (regex, anchored).
TESTS = [
    "reference.test_nnapi", "reference.torchvision",
    "verify.test_nnapi", "verify.test_nnapi_fused", "verify.torchvision", "verify.torchvision_fused",
    "verify.rules", r"verify.cli_.*", "runtime.extra_ops",
    "validate.rules", "validate.reference_torchvision", "unit.numeric_rules",
]
# The targets those tests need.
TARGETS = ["nnapi-convert", "neuralnetworks", "test_reference", "test_verify",
           "test_verify_rules", "test_validate"]
# The targets each test needs (regex on the test's name -> targets).
TEST_TARGETS = [
    (r"reference\.", ["test_reference", "neuralnetworks"]),
    (r"verify\.(test_nnapi|torchvision)", ["test_verify", "neuralnetworks"]),
    (r"verify\.rules", ["test_verify_rules", "neuralnetworks"]),
    (r"verify\.cli_", ["nnapi-convert", "neuralnetworks"]),
    (r"runtime\.", ["neuralnetworks"]),
    (r"validate\.", ["test_validate"]),
    (r"unit\.numeric_rules", []),
]
# The suites a planted bug's code is reached by (each MUTATIONS entry names
# one of these; --all-tests runs TESTS instead).
CONVERTER = ["reference.test_nnapi", "reference.torchvision", "verify.test_nnapi",
             "verify.torchvision"]
FUSED = ["verify.test_nnapi_fused", "verify.torchvision_fused", r"verify.cli_fuse.*"]
VERIFY = ["verify.rules", r"verify.cli_.*"]
RUNTIME = ["runtime.extra_ops", "verify.test_nnapi", "verify.test_nnapi_fused"]
DETECTION = ["runtime.detection_ops"]

# Each planted bug: (name, what it does, [(file, text, replacement), ...],
# the suites that reach its code).
# The text must occur exactly once in the file; where revisions differ, text
# and replacement may be lists of alternatives (the first that occurs is
# planted).
MUTATIONS = [
    ("fuse-relu6-as-relu",
     "--fuse-activations folds hardtanh(0, 6) (nn.ReLU6) as RELU: the clamp at 6 is lost",
     [("src/lower/context.cpp", "if (l == 0 && h == 6) fuse = Fuse::Relu6;",
       "if (l == 0 && h == 6) fuse = Fuse::Relu;")],
     FUSED),
    ("fuse-relu1-as-relu6",
     "--fuse-activations folds hardtanh(-1, 1) with RELU6's code instead of RELU1's",
     [("src/lower/context.cpp", "if (l == -1 && h == 1) fuse = Fuse::Relu1;",
       "if (l == -1 && h == 1) fuse = Fuse::Relu6;")],
     FUSED),
    ("fuse-not-only-use",
     "--fuse-activations folds an activation whose input has other uses too",
     [("src/lower/context.cpp", "v->uses().size() != 1) return Fuse::None;",
       "v->uses().empty()) return Fuse::None;")],
     FUSED),
    ("dropped-transpose",
     "a permute that needs a TRANSPOSE reads the data in place with the permuted shape",
     [("src/lower/layout.cpp",
       "  int32_t perm_id = cx.model().add_int_vector(perm);\n"
       "  const int32_t out_id = cx.add_output(out_value, o, permuted_dims({in_id, in}, dims)).id;\n"
       "  cx.model().add_operation(Op::Transpose, {in_id, perm_id}, {out_id});",
       "  (void)perm;\n"
       "  cx.reinterpret(out_value, in_id, o.with_shape(out_shape));")],
     CONVERTER),
    ("padding-off-by-one",
     "convolutions and pools pad one column more on the right than PyTorch does",
     [("src/lower/conv_pool.cpp", "  a.pad_l = a.pad_r = paddings[1];",
       "  a.pad_l = paddings[1];\n  a.pad_r = paddings[1] + (paddings[1] > 0 ? 1 : 0);")],
     CONVERTER),
    ("ceil-mode-ignored",
     "max_pool2d's ceil_mode is ignored (the reference's googlenet bug: 55x55 instead of 56x56)",
     [("src/lower/conv_pool.cpp",
       "  a->pad_b += extra(image[2], a->kernel_h, a->stride_h, a->pad_t);\n"
       "  a->pad_r += extra(image[3], a->kernel_w, a->stride_w, a->pad_l);",
       "  (void)image;\n  (void)extra;")],
     CONVERTER),
    ("quant-hardswish-scale",
     "quantized::hardswish (API 30) declares an output scale 0.4% off the model's",
     [("src/lower/activation.cpp",
       ["emit_unary(cx, Op::HardSwish, x, node->output(), out_quant);",
        "QuantParams{cx.constant_float(node->input(1)), cx.constant_int(node->input(2))}"],
       ["emit_unary(cx, Op::HardSwish, x, node->output(),\n"
        "             QuantParams{out_quant.scale * 1.004, out_quant.zero_point});",
        "QuantParams{cx.constant_float(node->input(1)) * 1.004, cx.constant_int(node->input(2))}"])],
     CONVERTER),
    ("channel-shuffle-shared-misreading",
     "converter and runtime both read CHANNEL_SHUFFLE's num_groups as the group size "
     "(their results agree with eager; NeuralNetworks.h disagrees)",
     [("src/lower/layout.cpp",
       "m.add_int_scalar(static_cast<int32_t>(split[1].value));",
       "m.add_int_scalar(static_cast<int32_t>(split[2].value));"),
      ("src/runtime/ops/shape.cpp",
       "  split[static_cast<size_t>(axis)] = c / groups;\n"
       "  split.insert(split.begin() + axis, groups);",
       "  split[static_cast<size_t>(axis)] = groups;\n"
       "  split.insert(split.begin() + axis, c / groups);")],
     CONVERTER + ["runtime.extra_ops"]),
    ("verify-ignores-two-quanta",
     "--verify's quantized rule forgets the bound on the worst element (only the 3% share)",
     [("src/verify/verify.cpp", "    return c.max_quanta <= 1 && static_cast<double>(c.off_by_one) <=",
       "    return static_cast<double>(c.off_by_one) <=")],
     VERIFY),
    ("verify-ignores-share",
     "--verify's quantized rule forgets the 3% share (any number of elements off by one passes)",
     [("src/verify/verify.cpp", "options.max_off_by_one_share * static_cast<double>(c.numel);",
       "static_cast<double>(c.numel);")],
     VERIFY),
    ("verify-ignores-scale",
     "--verify's quantized rule compares the output's zero point but not its scale",
     [("src/verify/verify.cpp",
       "if (nnapi.q_scale() != eager.q_scale() || nnapi.q_zero_point() != eager.q_zero_point()) {",
       "if (nnapi.q_zero_point() != eager.q_zero_point()) {")],
     VERIFY),
    ("verify-ignores-zero-point",
     "--verify's quantized rule compares the output's scale but not its zero point",
     [("src/verify/verify.cpp",
       "if (nnapi.q_scale() != eager.q_scale() || nnapi.q_zero_point() != eager.q_zero_point()) {",
       "if (nnapi.q_scale() != eager.q_scale()) {")],
     VERIFY),
    ("python-rule-ignores-worst",
     "tools/numeric_rules.py (the zoo's rule) forgets the bound on the worst element",
     [("tools/numeric_rules.py", "    if worst > 1:\n", "    if False:\n")],
     ["unit.numeric_rules"]),
    ("python-rule-ignores-share",
     "tools/numeric_rules.py (the zoo's rule) forgets the 3% share",
     [("tools/numeric_rules.py", "    if off > allowed:\n", "    if False:\n")],
     ["unit.numeric_rules"]),
    ("python-rule-ignores-qparams",
     "tools/numeric_rules.py compares the integers only, not the scale and zero point",
     [("tools/numeric_rules.py", "    if qparams_must_match and (", "    if False and (")],
     ["unit.numeric_rules"]),
    ("quant-conv-output-scale",
     "quantized convolutions declare an output scale 0.4% off the model's",
     [("src/lower/quantized.cpp",
       "  add_conv2d_common(cx, node->output(), out_scale, out_zero_point,",
       "  add_conv2d_common(cx, node->output(), out_scale * 1.004, out_zero_point,")],
     CONVERTER),
    ("validator-elementwise-rank5",
     "the shared validator (src/validate) lets ADD/SUB/MUL/DIV operands of rank 5 through "
     "(NeuralNetworks.h: rank up to 4)",
     [("src/validate/ops_elementwise.cpp",
       "  c.max_rank(4);\n  if (!c.full()) return;\n  c.fuse_code(2);",
       "  c.max_rank(5);\n  if (!c.full()) return;\n  c.fuse_code(2);")],
     ["validate.rules", "validate.reference_torchvision", "reference.test_nnapi"]),
    ("runtime-relu1-as-0-1",
     "the host runtime clamps a float FUSED_RELU1 result to [0, 1] instead of [-1, 1]",
     [("src/runtime/kernel.cpp", "r = at::clamp(r, -1, 1);", "r = at::clamp(r, 0, 1);")],
     RUNTIME),
    ("quant16-asymm-signed",
     "the host runtime reads TENSOR_QUANT16_ASYMM as signed: boxes beyond 4096 turn negative",
     [("src/runtime/kernel.cpp", "return stored.to(at::kInt).bitwise_and(0xFFFF);",
       "return stored.to(at::kInt);")],
     DETECTION),
    ("roi-align-sample-offset",
     "ROI_ALIGN samples each bin's rows a quarter step in instead of at the sub-bin centres",
     [("src/runtime/ops/detection.cpp", "step_h * (static_cast<float>(si) + 0.5f)",
       "step_h * (static_cast<float>(si) + 0.25f)")],
     DETECTION),
    ("nms-linear-kernel-halved",
     "BOX_WITH_NMS_LIMIT's linear kernel multiplies by 1 - IoU / 2 instead of 1 - IoU",
     [("src/runtime/ops/detection.cpp", "return kernel == 0 ? 0.0f : 1.0f - overlap;",
       "return kernel == 0 ? 0.0f : 1.0f - overlap * 0.5f;")],
     DETECTION),
    ("heatmap-clamped-border",
     "HEATMAP_MAX_KEYPOINT clamps its 3x3 neighbourhood at the border instead of mirroring it",
     [("src/runtime/ops/detection.cpp", "return k < 0 ? 1 : (k >= size ? size - 2 : k);",
       "return k < 0 ? 0 : (k >= size ? size - 1 : k);")],
     DETECTION),
    ("validator-box-quant-ignored",
     "the shared validator accepts TENSOR_QUANT16_ASYMM boxes of any scale and zero point",
     [("src/validate/ops_detection.cpp", "if (o.scale != kBoxScale || o.zero_point != 0)",
       "if (false)")],
     DETECTION),
]


def log(msg):
    print(msg, flush=True)


def sh(cmd, cwd=None, env=None, quiet=True):
    """Runs `cmd`; returns (status, combined output)."""
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if not quiet:
        sys.stdout.write(p.stdout)
    return p.returncode, p.stdout


def git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, check=True, stdout=subprocess.PIPE).stdout


def sync_tree(tree, rev=None):
    """Copies the working tree's tracked files (or revision `rev`'s) into
    `tree` where they differ, and removes tracked files `rev` lacks."""
    executable = set()
    if rev:
        files = []
        for entry in filter(None, git("ls-tree", "-r", "-z", rev).decode().split("\0")):
            meta, f = entry.split("\t", 1)
            files.append(f)
            if meta.startswith("100755"):
                executable.add(f)
        for f in git("ls-files", "-z").decode().split("\0"):
            if f and f not in files and os.path.exists(os.path.join(tree, f)):
                os.remove(os.path.join(tree, f))
    else:
        files = git("ls-files", "-z").decode().split("\0")
    copied = 0
    for f in filter(None, files):
        src, dst = os.path.join(ROOT, f), os.path.join(tree, f)
        if rev:
            data = git("show", f"{rev}:{f}")
        elif not os.path.isfile(src):
            continue
        else:
            with open(src, "rb") as a:
                data = a.read()
        if os.path.exists(dst):
            with open(dst, "rb") as b:
                if b.read() == data:
                    continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as b:
            b.write(data)
        if not rev:
            shutil.copymode(src, dst)
        else:
            os.chmod(dst, 0o755 if f in executable else 0o644)
        copied += 1
    return copied


def targets_for(tests):
    """The targets `tests` (regexes on ctest names) need."""
    want = []
    for t in tests:
        for pattern, targets in TEST_TARGETS:
            if re.match(pattern, t):
                want += [x for x in targets if x not in want]
    return want


def build(bdir, jobs, targets=TARGETS):
    _, listing = sh(["cmake", "--build", bdir, "--target", "help"])
    known = set(re.findall(r"^\.\.\. (\S+)", listing, re.M))
    targets = [t for t in targets if t in known]  # an older revision lacks some
    if not targets:
        return True, ""
    status, out = sh(["cmake", "--build", bdir, "-j", str(jobs), "--target"] + targets)
    if status != 0:
        tail = "\n".join(out.splitlines()[-30:])
        return False, tail
    return True, ""


def run_tests(bdir, jobs, tests=TESTS):
    """The selected tests; returns (names run, names failed)."""
    regex = "^(" + "|".join(tests) + ")$"
    status, out = sh(["ctest", "-R", regex, "-j", str(jobs), "--fixture-exclude-setup", ".*",
                      "--timeout", "3600"], cwd=bdir)
    ran = re.findall(r"Test\s+#\d+: (\S+) \.+", out)
    failed = re.findall(r"^\s*\d+ - (\S+) \(", out, re.M)
    if not ran:
        raise SystemExit("ctest ran nothing:\n" + out[-3000:])
    return ran, failed


def apply(tree, edits):
    """Plants `edits`; returns the original contents to restore."""
    saved = {}
    for f, olds, news in edits:
        p = os.path.join(tree, f)
        text = saved.get(p) or open(p).read()
        saved.setdefault(p, text)
        current = open(p).read()
        pairs = list(zip(olds, news)) if isinstance(olds, list) else [(olds, news)]
        for old, new in pairs:
            if current.count(old) == 1:
                break
        else:
            restore(saved)
            raise SystemExit(f"{f}: no text to mutate occurs exactly once: {olds}")
        with open(p, "w") as fh:
            fh.write(current.replace(old, new))
    return saved


def restore(saved):
    for p, text in saved.items():
        with open(p, "w") as fh:
            fh.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--only", help="regex on the planted bugs' names")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--table", help="also write the Markdown table here")
    ap.add_argument("--keep-going", action="store_true",
                    help="go on when the unmutated tree fails a test")
    ap.add_argument("--rev", help="check this git revision's suite instead of the working tree's")
    ap.add_argument("--all-tests", action="store_true",
                    help="run every suite of TESTS for every bug (default: the suites that "
                         "reach its code)")
    a = ap.parse_args()
    build_dir = os.path.abspath(a.build)
    fixtures = os.path.join(build_dir, "fixtures")
    for sub in ("test_nnapi", "torchvision"):
        if not os.path.isdir(os.path.join(fixtures, sub)):
            raise SystemExit(f"{fixtures}/{sub} is missing: run ctest in {build_dir} first")
    tree = build_dir.rstrip("/") + "-mutation/tree"
    bdir = os.path.join(tree, "build")
    os.makedirs(tree, exist_ok=True)
    env = dict(os.environ, CCACHE_BASEDIR=os.environ.get("CCACHE_BASEDIR", "/work"))
    os.environ.update(env)
    log(f"scratch tree {tree}: {sync_tree(tree, a.rev)} file(s) copied"
        + (f" from {a.rev}" if a.rev else ""))
    if not os.path.exists(os.path.join(bdir, "CMakeCache.txt")):
        status, out = sh(["cmake", "-S", tree, "-B", bdir, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                          "-DNNAPI_CONVERT_BUILD_TESTS=ON"])
        if status:
            raise SystemExit(out)
    link = os.path.join(bdir, "fixtures")
    if os.path.islink(link) and os.readlink(link) != fixtures:
        os.remove(link)
    if not os.path.islink(link):
        if os.path.exists(link):
            shutil.rmtree(link)
        os.symlink(fixtures, link)

    selected = [m for m in MUTATIONS if not a.only or re.search(a.only, m[0])]

    def tests_of(m):
        return TESTS if a.all_tests else m[3]

    union = []
    for m in selected:
        union += [t for t in tests_of(m) if t not in union]
    if os.environ.get("GTEST_FILTER"):
        log("GTEST_FILTER=" + os.environ["GTEST_FILTER"])
    t0 = time.monotonic()
    ok, why = build(bdir, a.jobs)
    if not ok:
        raise SystemExit("the unmutated tree does not build:\n" + why)
    ran, failed = run_tests(bdir, a.jobs, union)
    log(f"unmutated: {len(ran)} tests, {len(failed)} failed ({time.monotonic() - t0:.0f} s)")
    if failed and not a.keep_going:
        raise SystemExit("the unmutated tree fails " + ", ".join(failed) + ": nothing to compare")
    baseline_failed = set(failed)

    rows = []
    for m in selected:
        name, what, edits = m[:3]
        tests = tests_of(m)
        t0 = time.monotonic()
        saved = apply(tree, edits)
        try:
            ok, why = build(bdir, a.jobs, targets_for(tests))
            if ok:
                ran, failed = run_tests(bdir, a.jobs, tests)
                caught = [t for t in failed if t not in baseline_failed]
            else:
                caught = ["(does not build)"]
        finally:
            restore(saved)
        files = ", ".join(sorted({f for f, _, _ in edits}))
        rows.append((name, what, files, caught, len(ran)))
        log(f"{name}: {'CAUGHT by ' + ', '.join(caught) if caught else 'NOT CAUGHT'} "
            f"({len(ran)} tests run, {time.monotonic() - t0:.0f} s)")
    ok, why = build(bdir, a.jobs)  # leave the scratch build unmutated
    table = ["| planted bug | file | tests run | caught by |", "|---|---|---|---|"]
    for name, what, files, caught, n in rows:
        table.append(f"| {name}: {what} | {files} | {n} | "
                     f"{', '.join(caught) if caught else '**not caught**'} |")
    text = "\n".join(table)
    log(text)
    if a.table:
        with open(a.table, "w") as f:
            f.write(text + "\n")
    missed = [r[0] for r in rows if not r[3]]
    log(f"{len(rows) - len(missed)} of {len(rows)} planted bugs caught")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

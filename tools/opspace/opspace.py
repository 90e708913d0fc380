#!/usr/bin/python3
"""The op-space test matrix (issue 19, part 2).

For every node kind of nnapi-convert's lowering table, small modules (the
matrix's own samples, own_cases.py, and PyTorch's OpInfo/ModuleInfo samples,
torch_samples.py) are traced or scripted, converted in each applicable form
(NCHW, NHWC, flexible batch, flexible height and width, quantized, fused
activations, target APIs; see samples.py), run on the host NNAPI runtime
against eager PyTorch, and each case is classified:

    verified  exit 0 and every output matches eager: float within --verify's
              tolerances (|nnapi - eager| <= 1e-4 + 1e-4 |eager|); quantized
              with equal scale and zero point, no element off by more than
              one quantum and at most 3% off by one; a --float16 form's (f16,
              f16_nhwc, f16_flex) by --verify's float16 rule (numeric_rules.
              float16_verdict: atol and rtol 5/1024, else an RMS error of at
              most L 2^-11 of the output's RMS, L the NNAPI operation count);
              same dtype and shape;
              and every output checked at least once in a way a constant
              output would fail (tools/numeric_rules.py's constant_would_pass)
    weak      matches eager, but some output only ever in a way a constant
              output would pass too (every element equal, or within the
              tolerance of one value): it proves little, and is not verified
    refused   exit 1 or 2 with a clean message: one paragraph (no blank
              line), no traceback or C++ frames, naming the node (its kind,
              or the graph node in the error's "node" field)
    unclean   refused, but the message is not clean (named in the detail)
    wrong     exit 0, but the runtime rejects the module or its outputs
              differ from eager (values, dtype or shape)
    crash     the converter or the runtime crashed (a signal), hung, or
              printed a C++ backtrace

Run with Debian's interpreter (it imports python3-torch):

    /usr/bin/python3 tools/opspace/opspace.py --bin build/nnapi-convert \\
        --runtime build/runtime --work /tmp/opspace [--subset] \\
        [--kinds REGEX] [--forms nchw,nhwc,...] [--sources own,opinfo,moduleinfo] \\
        [--json summary.json] [--jobs 2]

Prints the table kinds x forms (samples with int32 or bool inputs in columns
int_FORM), writes it as JSON (--json), lists every
failing case with its reproduction (model.pt and the command line) and exits 1
when a case is wrong, crashed or refused uncleanly (known bugs and what
float16 cannot compute excepted, see known.py), or (--subset) when a kind of the lowering table has no verified
case and no allow-list entry.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))  # tools/: numeric_rules

OUTCOMES = ["verified", "weak", "refused", "unclean", "wrong", "crash"]
LETTERS = {"verified": "v", "weak": "k", "refused": "r", "unclean": "u", "wrong": "w", "crash": "c"}
FAILING = ("unclean", "wrong", "crash")
ATOL = RTOL = 1e-4
RUN_TIMEOUT_S = float(os.environ.get("OPSPACE_RUN_TIMEOUT", 120))  # one module's runs, seconds
CONVERT_TIMEOUT_S = 120


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ generate
def sanitize(text):
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text).strip("_")


def form_options(form):
    """(nhwc, flex, flexhw, quant, manifest options) of a form."""
    opts = {}
    parts = form.split("_")
    nhwc = "nhwc" in parts
    if nhwc:
        opts["nhwc"] = True
    if form.startswith("fuse"):
        opts["fuse_activations"] = True
    if "api" in form:
        opts["min_android_api"] = int(form.split("api")[1])
    if "f16" in parts:
        opts["float16"] = True
    return nhwc, "flex" in parts, "flexhw" in parts, form.startswith("quant"), opts


def cli_line(bin_path, model, specs, opts, out):
    cmd = [bin_path, model]
    for s in specs:
        cmd += ["--input", s]
    if opts.get("nhwc"):
        cmd.append("--nhwc")
    if opts.get("fuse_activations"):
        cmd.append("--fuse-activations")
    if "min_android_api" in opts:
        cmd += ["--min-android-api", str(opts["min_android_api"])]
    if opts.get("float16"):
        cmd.append("--float16")
    cmd += ["-o", out]
    return " ".join(cmd)


def to_script(sample, module, example):
    import torch
    module = module.eval()
    if sample.script:
        return torch.jit.script(module)
    with torch.no_grad():
        return torch.jit.trace(module, tuple(example), check_trace=False)


def flat_outputs(out):
    import torch
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in flat_outputs(o)]
    raise TypeError(f"output of type {type(out).__name__}")


def generate_sample(sample, sid, work, forms, bin_path):
    """Writes the sample's model(s) and run inputs; returns its conversions
    (dicts for the manifest and the runner) and the forms that do not apply."""
    import torch
    if sample.engine:
        torch.backends.quantized.engine = sample.engine
    try:
        return generate_sample_forms(sample, sid, work, forms, bin_path)
    finally:
        torch.backends.quantized.engine = "qnnpack"


def generate_sample_forms(sample, sid, work, forms, bin_path):
    import torch
    from samples import FLEX_BATCHES, frozen_kinds
    d = os.path.join(work, "cases", sid)
    os.makedirs(d, exist_ok=True)
    conversions, skipped = [], []
    built = {}
    for form in forms:
        nhwc, flex, flexhw, quant, opts = form_options(form)
        if flex and not sample.flex:
            continue
        if flexhw and not sample.flexhw:
            continue
        if nhwc and not sample.has_4d():
            continue
        inputs = sample.quant_inputs() if quant else sample.inputs
        key = "q" if quant else "f"
        try:
            if key not in built:
                torch.manual_seed(0)
                make = sample.make if not quant else (sample.make if sample.qmake is True else sample.qmake)
                module = make()
                gen = torch.Generator().manual_seed(1)
                example = [i.make(gen) for i in inputs]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    script = to_script(sample, module, example)
                    path = os.path.join(d, f"model-{key}.pt")
                    script.save(path)
                    loaded = torch.jit.load(path)
                    with torch.no_grad():
                        flat_outputs(loaded(*example))
                built[key] = (path, loaded, frozen_kinds(loaded))
            path, loaded, kinds = built[key]
            runs = []
            gen = torch.Generator().manual_seed(2)
            # A flexible batch runs at FLEX_BATCHES, a flexible height and
            # width at two sizes; each (batch, hw) is one run.
            sizes = ([(b, None) for b in FLEX_BATCHES] if flex else
                     [(None, hw) for hw in sample.flexhw_sizes()] if flexhw else [(None, None)])
            for batch, hw in sizes:
                xs = [i.make(gen, batch if i.batched else None, hw if i.spatial else None) for i in inputs]
                # Eager runs on contiguous inputs: PyTorch 1.13's quantized
                # relu6 computes wrong values on channels-last quint8 tensors
                # (up to 42 quanta off). The converted module gets the
                # channels-last tensors an app passes with --nhwc.
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    outs = flat_outputs(loaded(*xs))
                if nhwc:
                    xs = [x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 else x for x in xs]
                if any(o.is_floating_point() and not torch.isfinite(o).all() for o in outs):
                    raise ValueError("eager output is not finite")
                runs.append((xs, [o.clone() for o in outs]))
        except Exception as e:  # the form does not apply (eager cannot run it)
            skipped.append((form, f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"))
            continue
        cid = f"{sid}:{form}"
        runs_path = os.path.join(d, f"runs-{form}.pt")
        torch.save(runs, runs_path)
        specs = [i.spec(flex, flexhw) for i in inputs]
        out = os.path.join(work, "converted", sanitize(cid) + ".nnapi.pt")
        conversions.append({
            "id": cid, "sample": sid, "kind": sample.kind, "label": sample.label, "form": form,
            "column": column(form, inputs),
            "source": sample.source, "model": path, "specs": specs,
            "options": opts, "output": out, "runs": runs_path, "graph_kinds": kinds,
            "quantum": sample.quantum, "must_name": sample.must_name,
            "command": cli_line(bin_path, path, specs, opts, out),
        })
    return conversions, skipped


def column(form, inputs):
    """The table column of a case: its form, "int_" + form for a sample with
    int32 or bool inputs (bool tensors move as TENSOR_INT32 in NNAPI)."""
    return ("int_" if any(i.dtype in ("int32", "bool") for i in inputs) else "") + form


# ------------------------------------------------------------------ convert
def convert_all(args, conversions, work):
    manifest = [{"model": c["model"], "inputs": c["specs"], "output": c["output"],
                 "options": c["options"]} for c in conversions]
    mpath = os.path.join(work, "manifest.json")
    rpath = os.path.join(work, "report.json")
    with open(mpath, "w") as f:
        json.dump(manifest, f)
    os.makedirs(os.path.join(work, "converted"), exist_ok=True)
    cmd = [args.bin, "--manifest", mpath, "--jobs", str(args.jobs), "--report", rpath, "-q",
           "--timeout", str(CONVERT_TIMEOUT_S)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 1) or not os.path.exists(rpath):
        sys.exit(f"opspace: the batch conversion failed (exit {p.returncode}): {p.stderr[-2000:]}")
    report = json.load(open(rpath))["models"]
    if len(report) != len(conversions):
        sys.exit("opspace: the report does not list every model of the manifest")
    return report


TRACEBACK_MARKS = ("Traceback (most recent call last)", "Exception raised from", "frame #",
                   "C++ CapturedTraceback", "terminate called", "Aborted", "core dumped")


def refusal_outcome(conv, entry, all_kinds):
    """refused / unclean / crash for a failed conversion. `all_kinds`: every
    kind list-ops names (lowered or folded); a refusal of a model with other
    kinds must name each of them (the census lists every unsupported kind)."""
    err = entry.get("error") or {}
    msg = err.get("message") or ""
    code = entry.get("exit_code")
    if re.search(r"crashed with SIG|did not finish within the time limit|ended with exit status", msg):
        return "crash", msg
    if any(m in msg for m in TRACEBACK_MARKS):
        return "crash", "C++ backtrace in the message: " + msg
    if code not in (1, 2):
        return "crash", f"exit status {code}: {msg}"
    problems = []
    if not msg.strip():
        problems.append("empty message")
    if "\n\n" in msg.strip():
        problems.append("more than one paragraph")
    named = err.get("node") or entry.get("unsupported") or re.search(
        r"\b(aten|prim|quantized)::\w+|`%|input \d|--input|output \d", msg)
    if not named:
        problems.append("names no node")
    # (An in-place kind whose functional twin is lowered is not checked: the
    # converter's freeze may make it functional where Python's did not.)
    unlisted = [k for k in conv["graph_kinds"]
                if k not in all_kinds and k not in msg and k.rstrip("_") not in all_kinds]
    unlisted += [k for k in conv.get("must_name", ()) if k not in msg]
    if unlisted:
        problems.append("does not name the unsupported " + ", ".join(unlisted))
    if re.search(r"(?i)this is a bug in nnapi-convert", msg):
        # The validator's backstop (src/core/validation.cpp): a lowering
        # emitted what NeuralNetworks.h forbids instead of converting the
        # model or refusing it with what to do.
        problems.append("refused only by the validator's backstop")
    if problems:
        return "unclean", "; ".join(problems) + ": " + msg
    return "refused", msg


# ------------------------------------------------------------------ run
def compare(out, ref, quantum, float16_operations=None):
    """None if `out` (the converted module's) matches eager's `ref`, else why.
    float16_operations: the NNAPI operation count of a --float16 conversion,
    whose float outputs are judged by --verify's float16 rule."""
    import torch
    import numeric_rules
    if out.dtype != ref.dtype:
        return f"dtype {out.dtype} != eager {ref.dtype}"
    if tuple(out.shape) != tuple(ref.shape):
        return f"shape {tuple(out.shape)} != eager {tuple(ref.shape)}"
    if ref.is_quantized:
        if out.q_scale() != ref.q_scale() or out.q_zero_point() != ref.q_zero_point():
            return (f"quantization scale/zero point {out.q_scale()}/{out.q_zero_point()} != eager "
                    f"{ref.q_scale()}/{ref.q_zero_point()}")
        diff = (out.int_repr().int() - ref.int_repr().int()).abs()
        return quanta_rule(diff)
    if ref.is_floating_point():
        if quantum:
            return quanta_rule((out - ref).abs() / quantum)
        if float16_operations is not None:
            return numeric_rules.float16_verdict(ref, out, float16_operations, ATOL, RTOL)
        bad = (out - ref).abs() > ATOL + RTOL * ref.abs()
        if bad.any():
            i = int(bad.flatten().nonzero()[0])
            return (f"max abs err {(out - ref).abs().max().item():.3g} (element {i}: "
                    f"{out.flatten()[i].item():.6g} vs eager {ref.flatten()[i].item():.6g})")
        return None
    if not torch.equal(out, ref):
        return "integer values differ"
    return None


def topk_tie_order(x, outs, refs):
    """Whether topk's indices `outs[1]` differ from eager's only in the order
    of tied values: NNAPI's TOPK_V2 returns the larger index of equal values
    first, PyTorch's order among ties is unspecified (list-ops, aten::topk).
    True when the values match eager's and, along the dim the indices index,
    each row's indices are distinct and pick eager's values from `x`."""
    import torch
    if len(outs) != 2 or compare(outs[0], refs[0], None) is not None:
        return False
    idx, values = outs[1].long(), refs[0]
    x = x.int_repr() if x.is_quantized else x
    values = values.int_repr() if values.is_quantized else values
    for d in range(x.dim()):
        if idx.shape[:d] + idx.shape[d + 1:] != x.shape[:d] + x.shape[d + 1:] or \
                idx.shape[d] > x.shape[d] or (idx < 0).any() or (idx >= x.shape[d]).any():
            continue
        distinct = idx.sort(dim=d).values.diff(dim=d).ne(0).all() if idx.shape[d] > 1 else True
        if distinct and torch.equal(torch.gather(x, d, idx), values):
            return True
    return False


def quanta_rule(diff):
    worst = diff.max().item() if diff.numel() else 0
    if worst > 1.0 + 1e-3:
        return f"an element is off by {worst:.2f} quanta"
    share = (diff > 1e-3).float().mean().item() if diff.numel() else 0
    if share > 0.03:
        return f"{100 * share:.1f}% of the elements are off by one quantum (at most 3%)"
    return None


def run_child(list_path, results_path):
    """In a process with the host runtime on LD_LIBRARY_PATH: loads each
    converted module, runs it on the case's inputs, compares with eager."""
    import torch
    import numeric_rules
    torch.backends.quantized.engine = "qnnpack"
    todo = json.load(open(list_path))
    with open(results_path, "a") as res:
        for c in todo:
            res.write(json.dumps({"id": c["id"], "start": True}) + "\n")
            res.flush()
            try:
                detail = None
                runs = torch.load(c["runs"])
                # Per output: why a constant would pass its check, while no
                # run has checked it in a way a constant output would fail.
                weak = {}
                meaningful = set()
                f16_ops = c.get("float16_operations")
                tol = ATOL if f16_ops is None else max(ATOL, numeric_rules.FLOAT16_TOLERANCE)
                for xs, refs in runs:
                    # Flexible sizes are fixed when the module first runs (its
                    # shape-compute prepares the model): a fresh one per size.
                    m = torch.jit.load(c["output"])
                    with torch.no_grad():
                        outs = flat_outputs(m(*xs))
                    if len(outs) != len(refs):
                        detail = f"{len(outs)} outputs, eager has {len(refs)}"
                    for k, (o, r) in enumerate(zip(outs, refs)):
                        little = numeric_rules.constant_would_pass(
                            r, atol=tol, rtol=tol, quantum=c.get("quantum") or 0.0)
                        if little:
                            weak.setdefault(k, little)
                        else:
                            meaningful.add(k)
                        why = detail or compare(o, r, c.get("quantum"), f16_ops)
                        if why and c["kind"] == "aten::topk" and k == 1 and \
                                topk_tie_order(xs[0], outs, refs):
                            why = None
                        if why:
                            at = f" at input shape {tuple(xs[0].shape)}" if len(runs) > 1 else ""
                            detail = f"output {k}{at}: {why}"
                            break
                    if detail:
                        break
                status = "wrong" if detail else "verified"
                unproven = sorted(k for k in weak if k not in meaningful)
                if status == "verified" and unproven:
                    status = "weak"
                    detail = "; ".join(f"output {k}: {weak[k]}" for k in unproven)
            except Exception as e:
                status = "wrong"
                text = str(e).strip().splitlines()
                detail = "the runtime rejects the module: " + (
                    next((l for l in reversed(text) if l.strip()), type(e).__name__)[:300])
            res.write(json.dumps({"id": c["id"], "status": status, "detail": detail}) + "\n")
            res.flush()


def run_all(args, converted, work):
    """Runs every converted case in as few child processes as possible: a
    crash or a hang ends the child; its case is a crash and a new child
    takes the rest."""
    results = {}
    pending = list(converted)
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.abspath(args.runtime))
    rpath = os.path.join(work, "run-results.jsonl")
    while pending:
        lpath = os.path.join(work, "run-list.json")
        json.dump(pending, open(lpath, "w"))
        open(rpath, "w").close()
        child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "_run", lpath, rpath],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        err_lines = []
        t = threading.Thread(target=lambda: err_lines.extend(child.stderr), daemon=True)
        t.start()
        last_size, last_change = 0, time.time()
        hung = False
        while child.poll() is None:
            time.sleep(0.2)
            size = os.path.getsize(rpath)
            if size != last_size:
                last_size, last_change = size, time.time()
            elif time.time() - last_change > RUN_TIMEOUT_S:
                child.kill()
                hung = True
        child.wait()
        t.join(timeout=5)
        started = None
        for line in open(rpath):
            r = json.loads(line)
            if r.get("start"):
                started = r["id"]
            else:
                results[r["id"]] = r
                started = None
        if started is None and child.returncode != 0:
            sys.exit("opspace: the runner failed before any case: " + "".join(err_lines[-20:]))
        if started is not None:
            tail = "".join(err_lines[-6:]).strip()
            how = ("hung (no result in %d s)" % RUN_TIMEOUT_S if hung
                   else f"the runtime process died (exit {child.returncode})")
            results[started] = {"id": started, "status": "crash", "detail": f"{how}: {tail[-400:]}"}
        pending = [c for c in pending if c["id"] not in results]
    return results


def subset(samples):
    """Per kind, the fewest own samples (in order) that together have every
    column (form, int_form) any of the kind's own samples has, and the
    samples marked subset."""
    from collections import defaultdict
    by_kind = defaultdict(list)
    for s in samples:
        if s.source == "own":
            by_kind[s.kind].append(s)
    chosen = {id(s) for s in samples if s.subset}

    def columns(s):
        return {column(f, s.quant_inputs() if form_options(f)[3] else s.inputs) for f in s.forms}

    for group in by_kind.values():
        todo = set(c for s in group for c in columns(s))
        while todo:
            best = max(group, key=lambda s: len(todo & columns(s)))
            chosen.add(id(best))
            todo -= columns(best)
    return [s for s in samples if id(s) in chosen]


# ------------------------------------------------------------------ summary
def lowered_kinds(bin_path):
    out = subprocess.run([bin_path, "list-ops", "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def summarize(cases, table_kinds, only_kinds):
    from collections import defaultdict
    table = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    for c in cases:
        table[c["kind"]][c["column"]][c["outcome"]] += 1
    kinds = sorted(set(table) | set(only_kinds))
    return {k: {f: dict(v) for f, v in table[k].items()} for k in kinds}


def cell(counts):
    if not counts:
        return "-"
    parts = [f"{counts.get(o, 0)}{LETTERS[o]}" for o in OUTCOMES if counts.get(o)]
    return " ".join(parts)


def print_table(summary, forms, out):
    width = max([len(k) for k in summary] + [4])
    cols = [f for f in forms + ["int_" + f for f in forms] if any(f in v for v in summary.values())]
    out.write("kind".ljust(width) + " | " + " | ".join(f.ljust(9) for f in cols) + "\n")
    out.write("-" * width + "-|-" + "-|-".join("-" * 9 for _ in cols) + "\n")
    for k, v in summary.items():
        out.write(k.ljust(width) + " | " + " | ".join(cell(v.get(f, {})).ljust(9) for f in cols) + "\n")
    out.write("(v verified, k weak: a constant output would pass, r refused, u unclean refusal, "
              "w wrong, c crash)\n")


def print_float16(conversions):
    """The f16 forms (--float16) in one line, and each case the float16 pass
    refused (its message starts "--float16:"): an operation NNAPI has no
    float16 form of, or a value float16 cannot hold; the other refusals are
    the float forms' too."""
    from samples import FLOAT16_OF
    f16 = [c for c in conversions if c["form"] in FLOAT16_OF.values()]
    if not f16:
        return
    only = [c for c in f16 if c["outcome"] == "refused" and "--float16:" in (c["detail"] or "")]
    counts = {o: sum(1 for c in f16 if c["outcome"] == o) for o in OUTCOMES}
    expected = sum(1 for c in f16 if c["outcome"] in FAILING and c["known"])
    kinds = {c["kind"] for c in f16 if c["outcome"] == "verified"}
    print(f"\nfloat16 (--float16; forms {', '.join(FLOAT16_OF.values())}): {len(f16)} cases of "
          f"{len({c['kind'] for c in f16})} kinds, " +
          ", ".join(f"{counts[o]} {o}" for o in OUTCOMES) +
          f" ({expected} of the failing expected: known.FLOAT16); {len(kinds)} kinds verified; "
          f"{len(only)} refused by the float16 pass itself")
    for c in only:
        print(f"  FLOAT16 ONLY {c['id']}: {c['detail']}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "_run":
        run_child(sys.argv[2], sys.argv[3])
        return 0
    from samples import FORMS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="nnapi-convert")
    ap.add_argument("--runtime", required=True, help="directory of the host libneuralnetworks.so")
    ap.add_argument("--work", required=True, help="working directory (emptied first)")
    ap.add_argument("--subset", action="store_true",
                    help="the fast subset (ctest opspace.subset): each kind's first samples in every form")
    ap.add_argument("--kinds", help="only samples whose kind matches this regular expression")
    ap.add_argument("--forms", help="only these forms (comma-separated): " + ",".join(FORMS))
    ap.add_argument("--sources", default="own,opinfo,moduleinfo",
                    help="sample sources (comma-separated): own, opinfo, moduleinfo")
    ap.add_argument("--max-samples", type=int, default=6,
                    help="OpInfo/ModuleInfo samples per operator (default 6)")
    ap.add_argument("--json", help="write the summary and every case here")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    forms = args.forms.split(",") if args.forms else FORMS
    for f in forms:
        if f not in FORMS:
            ap.error(f"unknown form {f!r}; forms: {', '.join(FORMS)}")
    sources = args.sources.split(",")
    t0 = time.time()
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    import known
    table = lowered_kinds(args.bin)
    table_kinds = [e["kind"] for e in table if e["family"] != "folded"]

    samples = []
    if "own" in sources:
        from own_cases import SAMPLES
        samples += SAMPLES
    if "opinfo" in sources or "moduleinfo" in sources:
        import torch_samples
        samples += torch_samples.samples(work, "opinfo" in sources, "moduleinfo" in sources,
                                         args.max_samples if not args.subset else 1,
                                         set(table_kinds))
    if args.kinds:
        samples = [s for s in samples if re.search(args.kinds, s.kind)]
    if args.subset:
        samples = subset(samples)
    t_collect = time.time()

    conversions, skipped, seen = [], [], {}
    for s in samples:
        ns, name = s.kind.split("::")
        base = sanitize(f"{name if ns == 'aten' else ns + '.' + name}-{s.source}-{s.label}")
        seen[base] = seen.get(base, 0) + 1
        sid = base if seen[base] == 1 else f"{base}-{seen[base]}"
        try:
            convs, skip = generate_sample(s, sid, work, [f for f in s.forms if f in forms], args.bin)
        except Exception:
            skipped.append({"sample": sid, "form": "*", "why": traceback.format_exc(limit=2)[-300:]})
            continue
        for c in convs:
            if s.kind not in c["graph_kinds"] and c["form"].startswith("quant"):
                # A float module quantized: the row of its quantized kind.
                qkinds = [k for k in c["graph_kinds"] if k.startswith("quantized::")]
                c["kind"] = qkinds[0] if len(qkinds) == 1 else c["kind"]
            if c["kind"] in c["graph_kinds"]:
                conversions.append(c)
            else:
                skipped.append({"sample": sid, "form": c["form"],
                                "why": f"{c['kind']} is not in the frozen graph: {c['graph_kinds']}"})
        skipped += [{"sample": sid, "form": f, "why": why} for f, why in skip]
    t_gen = time.time()
    log(f"opspace: {len(samples)} samples, {len(conversions)} conversions "
        f"({len(skipped)} forms not applicable) in {t_gen - t_collect:.0f} s")

    report = convert_all(args, conversions, work)
    t_conv = time.time()
    log(f"opspace: converted in {t_conv - t_gen:.0f} s")
    ok = []
    for c, entry in zip(conversions, report):
        if entry["status"] == "ok":
            if c["options"].get("float16"):
                c["float16_operations"] = entry["operation_count"]
            ok.append(c)
        else:
            c["outcome"], c["detail"] = refusal_outcome(c, entry, {e["kind"] for e in table})
    results = run_all(args, ok, work)
    for c in ok:
        r = results[c["id"]]
        c["outcome"], c["detail"] = r["status"], r.get("detail")
    t_run = time.time()
    log(f"opspace: ran {len(ok)} converted modules in {t_run - t_conv:.0f} s")

    for c in conversions:
        c["known"] = known.known_bug(c) if c["outcome"] in FAILING else None
    summary = summarize(conversions, table_kinds, [])
    print_table(summary, forms, sys.stdout)

    counts = {o: sum(1 for c in conversions if c["outcome"] == o) for o in OUTCOMES}
    failing = [c for c in conversions if c["outcome"] in FAILING]
    new_failing = [c for c in failing if not c["known"]]
    verified_kinds = {c["kind"] for c in conversions if c["outcome"] == "verified"}
    missing = []
    if not args.kinds and not args.forms and "own" in sources:  # (some forms credit some kinds)
        missing = [k for k in table_kinds if k not in verified_kinds and k not in known.NO_ROW]
    print()
    print(f"{len(conversions)} cases: " + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES) +
          f" ({len(failing) - len(new_failing)} of the failing are known bugs); "
          f"{len(skipped)} forms not applicable; {time.time() - t0:.0f} s "
          f"(generate {t_gen - t_collect:.0f}, convert {t_conv - t_gen:.0f}, run {t_run - t_conv:.0f})")
    print_float16(conversions)
    for c in failing:
        mark = ("NEW" if not c["known"] else f"EXPECTED ({c['known']})"
                if c["known"].startswith("float16:") else f"KNOWN ({c['known']})")
        print(f"\n{c['outcome'].upper()} {mark}: {c['id']}\n  {c['detail']}\n  repro: {c['command']}")
    weak = [c for c in conversions if c["outcome"] == "weak"]
    if weak:
        from collections import Counter
        per_kind = Counter(c["kind"] for c in weak)
        print(f"\n{len(weak)} weak cases (match eager, but a constant output would pass them; "
              "not counted as verified): " + ", ".join(f"{k} {n}" for k, n in sorted(per_kind.items())))
        for c in weak:
            print(f"  WEAK {c['id']}: {c['detail']}")
    if missing:
        print(f"\nkinds of the lowering table with no verified case (weak ones do not count): "
              f"{', '.join(missing)}")
    if not args.kinds and not args.forms and not args.subset and "own" in sources:
        seen_bugs = {c["known"] for c in failing if c["known"]}
        for bug, _, _ in known.KNOWN:
            if not any(b.startswith(bug) for b in seen_bugs):
                print(f"\nnote: the known bug '{bug}' matched no failing case: fixed? remove it "
                      "from known.KNOWN")
        for reason, _, _ in known.FLOAT16:
            if reason not in seen_bugs:
                print(f"\nnote: the float16 expectation '{reason}' matched no failing case: "
                      "remove it from known.FLOAT16")
    stale = [k for k in known.NO_ROW if k in verified_kinds]
    if stale:
        print(f"\nnote: allow-listed kinds now verified (remove them from known.NO_ROW): {', '.join(stale)}")
    if args.json:
        json.dump({"counts": counts, "seconds": round(time.time() - t0, 1), "summary": summary,
                   "missing_kinds": missing, "cases": conversions, "not_applicable": skipped},
                  open(args.json, "w"), indent=1, default=str)
    return 1 if new_failing or missing else 0


if __name__ == "__main__":
    sys.exit(main())

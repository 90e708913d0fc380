#!/usr/bin/env python3
"""test_archive_forms.py BIN WORK_DIR [--only REGEX]: every form of TorchScript
archive PyTorch writes (archive_forms.py, made here with Debian's
/usr/bin/python3) goes through nnapi-convert as issue 32 asks.

The reference is PyTorch itself: each file is first loaded with torch.jit.load
(torch 1.13, the LibTorch nnapi-convert links), and the lite-interpreter files
also with torch.jit.mobile._load_for_lite_interpreter; a form LibTorch loads must
pass the archive check. Then, by the form's `expect`:
  converts       nnapi-convert FILE --input SPEC --verify: exit 0, output written
                 (--verify checks it against LibTorch on the host runtime);
  loads          nnapi-convert check FILE --input SPEC: neither the archive
                 check's refusal nor a loading failure in its output (the
                 prepacked:: operators of optimize_for_mobile files are
                 another issue's, so exit 1 is allowed);
  old-quantized  torch.jit.load fails with LibTorch's "Expected a value of type
                 '...Conv2dPackedParamsBase...' ... found type 'Tensor'", and
                 nnapi-convert exits 1 saying the file was saved by an old
                 PyTorch whose quantized layers LibTorch 1.13 cannot read and
                 that re-saving it with PyTorch 1.5 or later fixes this, and
                 without "PyTorch never writes such a file".
Prints PASS/FAIL per form; exit 1 if any failed.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

import archive_forms  # noqa: E402

REFUSED = "is not a valid TorchScript archive"
NOT_LOADED = "could not be loaded"


def torch_loads(form):
    """(loads, message) from torch.jit.load (and the lite loader for .ptl)."""
    import torch
    import torch.jit.mobile

    try:
        torch.jit.load(form.path)
        if form.path.endswith(".ptl"):
            torch.jit.mobile._load_for_lite_interpreter(form.path)
        return True, ""
    except Exception as e:  # noqa: BLE001 - any failure is the reference's verdict
        return False, str(e)


# tools/asan-check.sh bans the sanitizers' reports ("A|B", plain substrings):
# any run of the binary that prints one fails its form.
BANNED = [b for b in os.environ.get("NNAPI_HOSTILE_BANNED", "").split("|") if b]
REPORTS = []


def run(args, timeout=600):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    out = p.stdout.decode(errors="replace")
    REPORTS.extend("%s in: %s\n%s" % (b, " ".join(args), out[-3000:]) for b in BANNED if b in out)
    return p.returncode, out


# Files from an old PyTorch that LibTorch 1.13 does not load: how the reference
# (torch.jit.load) fails on them, and what nnapi-convert's message must say.
OLD = {
    "old-quantized": (r"PackedParamsBase.*found type 'Tensor'",
                      ("old PyTorch", "quantized layers", "LibTorch 1.13 cannot read",
                       "PyTorch 1.5 or later")),
    "old-layout": (r"Legacy model format is not supported",
                   ("layout of PyTorch 1.0, 1.1 or 1.2", "model.json",
                    "LibTorch 1.13 cannot load", "PyTorch 1.5 or later")),
}


def check_form(binary, form, work):
    loads, why = torch_loads(form)
    if form.expect in OLD:
        reference, wants = OLD[form.expect]
        if loads or not re.search(reference, why, re.S):
            return "torch.jit.load did not fail with /%s/: %s" % (reference, why[:200])
        rc, out = run([binary, form.path, "--input", form.input, "-o",
                       os.path.join(work, form.name + ".nnapi.pt")])
        if rc != 1:
            return "expected exit 1, got %d: %s" % (rc, out[-400:])
        for want in (os.path.basename(form.path),) + wants:
            if want not in out:
                return "message lacks '%s': %s" % (want, out[-400:])
        for lie in ("never writes", "damaged", "crafted"):
            if lie in out:
                return "message says '%s': %s" % (lie, out[-400:])
        return None
    if not loads:
        return "the reference, torch.jit.load, does not load it: " + why[:300]
    if form.expect == "converts":
        out_path = os.path.join(work, form.name + ".nnapi.pt")
        rc, out = run([binary, form.path, "--input", form.input, "-o", out_path, "--verify"])
        if rc != 0 or not os.path.exists(out_path):
            return "expected to convert (exit 0), got %d: %s" % (rc, out[-600:])
        return None
    rc, out = run([binary, "check", form.path, "--input", form.input])
    for bad in (REFUSED, NOT_LOADED, "never writes"):
        if bad in out:
            return "check reports '%s' (exit %d): %s" % (bad, rc, out[-600:])
    if rc not in (0, 1):
        return "check exited %d: %s" % (rc, out[-600:])
    return None


def main():
    binary = os.path.abspath(sys.argv[1])
    work = os.path.abspath(sys.argv[2])
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else ""
    forms_dir = os.path.join(work, "forms")
    os.makedirs(forms_dir, exist_ok=True)
    forms = archive_forms.make_all(forms_dir, small=False)
    failed = 0
    for form in forms:
        if only and not re.search(only, form.name):
            continue
        del REPORTS[:]
        why = check_form(binary, form, work) or (REPORTS and "sanitizer report: " + REPORTS[0])
        if why:
            failed += 1
            print("FAIL %s (%s): %s" % (form.name, form.what, why))
        else:
            print("PASS %s (%s)" % (form.name, form.what))
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

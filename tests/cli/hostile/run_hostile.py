#!/usr/bin/env python3
"""run_hostile.py BIN WORK_DIR [--only REGEX] [--group NAME] [--python PY] [--jobs N] [-v]

The hostile-input suite of nnapi-convert: every case of the reliability review
(hostile archives, batch isolation, output-path safety, full disks, signals,
manifests, inspect, awkward models), run against the real binary.

Fixtures come from make_hostile.py (WORK_DIR/fixtures; made here if missing).
Each case runs in its own scratch directory under WORK_DIR/run/ and prints
`PASS name`, `FAIL name: why` or `SKIP name: why`; the last line is
`N passed, N failed, N skipped`. Exit status 1 if any case failed. A SKIP
must say why (one without a reason is a FAIL), and a group none of whose
cases ran (every one skipped) fails: a suite of skips has tested nothing.

Every case also asserts that stderr carries no C++ backtrace (`frame #`,
`terminate called`, `Exception raised from`) and no `INTERNAL ASSERT`, and that
nothing is left behind in the output directory. Every subprocess has a
timeout: a hang is a FAIL.

Python: the standard library, plus (for "loads in torch" checks only) a helper
process running PY (default /usr/bin/python3, which imports torch).
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import traceback
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # importing make_hostile must not write __pycache__ here
sys.path.insert(0, HERE)
BIN = None
WORK = None
FIX = None  # fixtures: FIX/models, FIX/hostile
PY = "/usr/bin/python3"
VERBOSE = False

BAD_STDERR = ["frame #", "terminate called", "INTERNAL ASSERT", "Exception raised from"]
# tools/asan-check.sh adds the sanitizers' reports: "A|B" (plain substrings).
BAD_STDERR += [b for b in os.environ.get("NNAPI_HOSTILE_BANNED", "").split("|") if b]
# Cases a run leaves out (regex on names): under the sanitizers, those whose
# resource limits the sanitizer runtime itself cannot live with.
SKIP = os.environ.get("NNAPI_HOSTILE_SKIP", "")


class Fail(Exception):
    pass


class Skip(Exception):
    pass


# ---------------------------------------------------------------------------
# Running the binary
# ---------------------------------------------------------------------------
class Result:
    def __init__(self, args, rc, out, err, elapsed):
        self.args, self.rc, self.out, self.err, self.elapsed = args, rc, out, err, elapsed
        self.text = err.decode("utf-8", "replace")

    def describe(self):
        if self.rc is not None and self.rc < 0:
            try:
                name = signal.Signals(-self.rc).name
            except ValueError:
                name = str(-self.rc)
            s = "killed by %s" % name
        else:
            s = "exit %s" % self.rc
        tail = self.text.strip().splitlines()
        if tail:
            s += " (stderr: %s)" % " | ".join(tail[:3])[:400]
        return s


def run(args, cwd=None, timeout=120, preexec=None, stdin=subprocess.DEVNULL, env=None):
    """Runs a command in its own session; kills its whole group on timeout."""
    t0 = time.monotonic()

    def pre():
        if preexec:
            preexec()

    p = subprocess.Popen(args, cwd=cwd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True, preexec_fn=pre if preexec else None, env=env)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        p.communicate()
        raise Fail("timed out after %ds: %s" % (timeout, " ".join(map(str, args))[:300]))
    return Result(args, p.returncode, out, err, time.monotonic() - t0)


def conv(args, **kw):
    return run([BIN] + [a if isinstance(a, bytes) else str(a) for a in args], **kw)


def check_stderr(r):
    for bad in BAD_STDERR:
        if bad in r.text:
            raise Fail("stderr has '%s': %s" % (bad, r.text.strip()[:300]))


def expect(r, statuses, names=None, pattern=None):
    """Exit status in `statuses`, clean stderr, and for a failure a message
    naming `names` (a path: its base name must appear) and matching `pattern`."""
    if isinstance(statuses, int):
        statuses = (statuses,)
    if r.rc not in statuses:
        raise Fail("expected exit %s, got %s" % ("/".join(map(str, statuses)), r.describe()))
    check_stderr(r)
    if r.rc != 0 and names is not None:
        base = os.path.basename(str(names).rstrip("/"))
        if base not in r.text:
            raise Fail("message does not name '%s': %s" % (base, r.text.strip()[:300]))
    if pattern is not None and not re.search(pattern, r.text, re.S | re.I):
        raise Fail("message lacks /%s/: %s" % (pattern, r.text.strip()[:300]))


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------
def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def snap(d):
    """name -> (kind, size, sha256 for regular files, link target) of d's entries."""
    out = {}
    if not os.path.isdir(d):
        raise Fail("directory '%s' does not exist" % d)
    for n in os.listdir(d):
        p = os.path.join(d, n)
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            out[n] = ("link", os.readlink(p))
        elif stat.S_ISREG(st.st_mode):
            out[n] = ("file", st.st_size, digest(p))
        elif stat.S_ISDIR(st.st_mode):
            out[n] = ("dir",)
        else:
            out[n] = ("other", stat.S_IFMT(st.st_mode), st.st_rdev)
    return out


def same_dir(before, d, new=(), what=""):
    """d must hold exactly `before`'s entries, unchanged, plus `new`."""
    after = snap(d)
    added = sorted(set(after) - set(before) - set(new))
    gone = sorted(set(before) - set(after))
    changed = sorted(n for n in before if n in after and before[n] != after[n])
    missing = sorted(set(new) - set(after))
    msg = []
    if added:
        msg.append("left behind: %s" % ", ".join(added[:5]))
    if gone:
        msg.append("removed: %s" % ", ".join(gone[:5]))
    if changed:
        msg.append("changed: %s" % ", ".join(changed[:5]))
    if missing:
        msg.append("not written: %s" % ", ".join(missing[:5]))
    if msg:
        raise Fail("%s%s" % (what + ": " if what else "", "; ".join(msg)))
    return after


def write(path, data):
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def model(name):
    return os.path.join(FIX, "models", name)


def hostile(name):
    return os.path.join(FIX, "hostile", name + ".pt")


def copy_model(name, dst):
    shutil.copyfile(model(name), dst)
    return dst


def is_module_bytes(data):
    if not data.startswith(b"PK"):
        return False
    import io
    try:
        zipfile.ZipFile(io.BytesIO(data)).testzip()
    except Exception:
        return False
    return True


def storage_records(path):
    """Sorted (size, bytes) of the data/N records of a converted module."""
    z = zipfile.ZipFile(path)
    recs = [z.read(i.filename) for i in z.infolist() if re.search(r"/data/\d+$", i.filename)]
    return sorted(recs)


# ---------------------------------------------------------------------------
# torch, in a helper process (one per run, started on first use)
# ---------------------------------------------------------------------------
LOADER_SRC = r"""
import sys, torch
for line in sys.stdin:
    path = line.rstrip("\n")
    try:
        m = torch.jit.load(path)
        names = [n for n, _ in m.named_modules()]
        print("ok " + " ".join(names), flush=True)
    except Exception as e:
        print("err " + str(e).replace("\n", " ")[:300], flush=True)
"""


class TorchLoader:
    lock = threading.Lock()
    proc = None

    @classmethod
    def load(cls, path):
        with cls.lock:
            if cls.proc is None or cls.proc.poll() is not None:
                cls.proc = subprocess.Popen([PY, "-c", LOADER_SRC], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                            text=True)
            cls.proc.stdin.write(os.path.abspath(path) + "\n")
            cls.proc.stdin.flush()
            line = cls.proc.stdout.readline().strip()
        if not line.startswith("ok"):
            raise Fail("'%s' does not load in torch: %s" % (os.path.basename(path), line or "helper died"))
        if "mod" not in line.split()[1:]:
            raise Fail("'%s' loads but is not an NNAPI wrapper (modules: %s)" % (path, line[3:]))

    @classmethod
    def stop(cls):
        if cls.proc is not None:
            cls.proc.stdin.close()
            cls.proc.wait(timeout=30)


# The small model converted normally: its storage records are the "true weights".
_ref_lock = threading.Lock()
_ref = {}


def reference_model(name):
    """The storage records of models/`name` (input 1x4x8x8) converted normally."""
    with _ref_lock:
        if name not in _ref:
            d = os.path.join(WORK, "run", "_reference")
            os.makedirs(d, exist_ok=True)
            out = os.path.join(d, name + ".nnapi.pt")
            r = conv([model(name), "--input", "1x4x8x8", "-o", out])
            if r.rc != 0:
                raise Fail("the unmodified model %s does not convert: %s" % (name, r.describe()))
            _ref[name] = storage_records(out)
        return _ref[name]


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------
CASES = []  # (group, name, fn, serial)


def case(group, name=None, serial=False):
    def deco(fn):
        CASES.append((group, name or fn.__name__, fn, serial))
        return fn
    return deco


def scratch(name):
    d = os.path.join(WORK, "run", name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


# ----- archives --------------------------------------------------------------
def archive_cases():
    index_path = os.path.join(FIX, "hostile", "index.json")
    with open(index_path) as f:
        index = json.load(f)
    for name in sorted(index):
        spec = index[name]

        def convert_case(d, name=name, spec=spec):
            src = hostile(name)
            before_src = digest(src)
            out = os.path.join(d, "out")
            os.makedirs(out)
            r = conv([src, "--input", "1x4x8x8", "-o", os.path.join(out, "m.nnapi.pt")],
                     cwd=d, timeout=90)
            expect(r, spec["expect"], names=src, pattern=spec.get("pattern"))
            if r.rc == 0:
                if r.elapsed > 30:
                    raise Fail("converted, but took %.0f s" % r.elapsed)
                same_dir({}, out, new=["m.nnapi.pt"])
                if storage_records(os.path.join(out, "m.nnapi.pt")) != reference_model(
                        spec.get("model", "small.pt")):
                    raise Fail("exit 0 but the weights differ from the model's (%s)" % spec["what"])
            else:
                same_dir({}, out, what="output directory")
            if digest(src) != before_src:
                raise Fail("the model file was changed")
            canary = os.path.join(FIX, "hostile", "CANARY")
            if os.path.exists(canary):
                os.unlink(canary)
                raise Fail("code in the pickle ran (CANARY created)")
            for esc in ("escape_a.txt", "escape_b.txt", "escape_c.txt"):
                for base in (d, os.path.dirname(d), os.path.dirname(os.path.dirname(d)),
                             os.path.join(FIX, "hostile"), os.path.join(d, "out")):
                    if os.path.exists(os.path.join(base, esc)):
                        raise Fail("an archive entry was extracted: " + os.path.join(base, esc))

        def inspect_case(d, name=name):
            src = hostile(name)
            r = conv(["inspect", src], cwd=d, timeout=90)
            expect(r, 1, names=src)
            if os.listdir(d):
                raise Fail("inspect wrote files: %s" % os.listdir(d))

        CASES.append(("archives", "archive." + name, convert_case, False))
        if spec.get("inspect", True):
            CASES.append(("archives", "archive." + name + ".inspect", inspect_case, False))


# ----- batch -----------------------------------------------------------------
def batch_with(d, crasher, jobs="1", extra=()):
    a = copy_model("small.pt", os.path.join(d, "a.pt"))
    z = copy_model("small.pt", os.path.join(d, "z.pt"))
    bad = os.path.join(d, "crasher.pt")
    shutil.copyfile(hostile(crasher), bad)
    out = os.path.join(d, "o")
    rep = os.path.join(d, "R.json")
    r = conv([a, bad, z, "--input", "1x4x8x8", "--out-dir", out, "--jobs", jobs, "--report", rep]
             + list(extra), timeout=120)
    expect(r, 1, names=bad)
    same_dir({}, out, new=["a.nnapi.pt", "z.nnapi.pt"], what="--out-dir")
    for p in ("a.nnapi.pt", "z.nnapi.pt"):
        TorchLoader.load(os.path.join(out, p))
    try:
        with open(rep, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        raise Fail("--report: %s" % e)
    status = {os.path.basename(m["model"]): m["status"] for m in report["models"]}
    if status != {"a.pt": "ok", "crasher.pt": "failed", "z.pt": "ok"}:
        raise Fail("report statuses %s" % status)


for _crasher in ["pkl_reduce_empty_stack", "pkl_reduce_one_item", "pkl_tuple3_two_items",
                 "storage_record_empty", "code_paren_nesting_1e5", "pkl_nested_lists_1e6"]:
    case("batch", "batch.isolation." + _crasher)(lambda d, c=_crasher: batch_with(d, c))

case("batch", "batch.isolation_jobs2.pkl_build_one_item")(
    lambda d: batch_with(d, "pkl_build_one_item", jobs="2"))


@case("batch", "batch.setstate_loop_timeout")
def _(d):
    for n in ("a.pt", "z.pt"):
        copy_model("small.pt", os.path.join(d, n))
    copy_model("setstate_loop.pt", os.path.join(d, "loop.pt"))
    man = os.path.join(d, "m.json")
    write(man, json.dumps([
        {"model": "a.pt", "inputs": ["1x4x8x8"], "output": "o/a.nnapi.pt"},
        {"model": "loop.pt", "inputs": ["1x4"], "output": "o/loop.nnapi.pt"},
        {"model": "z.pt", "inputs": ["1x4x8x8"], "output": "o/z.nnapi.pt"}]))
    os.makedirs(os.path.join(d, "o"))
    rep = os.path.join(d, "R.json")
    r = conv(["--manifest", man, "--timeout", "5", "--jobs", "2", "--report", rep], timeout=60)
    expect(r, 1, names="loop.pt", pattern=r"time[sd]? ?out")
    if r.elapsed > 30:
        raise Fail("took %.0f s with --timeout 5" % r.elapsed)
    same_dir({}, os.path.join(d, "o"), new=["a.nnapi.pt", "z.nnapi.pt"])
    with open(rep, encoding="utf-8") as f:
        report = json.load(f)
    status = {os.path.basename(m["model"]): m["status"] for m in report["models"]}
    if status != {"a.pt": "ok", "loop.pt": "failed", "z.pt": "ok"}:
        raise Fail("report statuses %s" % status)


@case("batch", "batch.emfile_message")
def _(d):
    # Soft: whether anything fails under RLIMIT_NOFILE depends on how many
    # descriptors the binary needs per model or worker. When something fails,
    # every message must give the real cause (no "(permissions?)"), each failed
    # model must be accounted for in the report, and nothing may be left behind.
    models = [copy_model("small.pt", os.path.join(d, "m%02d.pt" % i)) for i in range(12)]
    out = os.path.join(d, "o")
    rep = os.path.join(d, "R.json")
    tried = []
    for jobs, limit in ((8, 8), (4, 6), (8, 12)):
        shutil.rmtree(out, ignore_errors=True)
        if os.path.exists(rep):
            os.unlink(rep)

        def lim(limit=limit):
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        r = conv(models + ["--input", "1x4x8x8", "--out-dir", out, "--jobs", str(jobs),
                           "--report", rep], preexec=lim, timeout=120)
        tried.append("jobs %d nofile %d: %s" % (jobs, limit, r.describe()[:100]))
        if r.rc == 0:
            continue
        where = "--jobs %d, RLIMIT_NOFILE %d" % (jobs, limit)
        if r.rc != 1:
            raise Fail("%s: %s" % (where, r.describe()))
        check_stderr(r)
        if "permissions?" in r.text:
            raise Fail("%s: a message blames permissions: %s" % (where, r.text.strip()[:300]))
        errs = [l for l in r.text.splitlines() if "error" in l]
        if not errs or not all(re.search(r"too many open files", l, re.I) for l in errs):
            raise Fail("%s: failures without 'Too many open files': %s" % (where, r.text.strip()[:400]))
        if os.path.isdir(out):
            names = os.listdir(out)
            if any(not n.endswith(".nnapi.pt") for n in names):
                raise Fail("%s: left behind in --out-dir: %s" % (where, names))
        try:
            with open(rep, encoding="utf-8") as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            raise Fail("%s: exit 1 (%s) and no --report: %s" % (where, errs[0][:200], e))
        st = {os.path.basename(m["model"]): m["status"] for m in report["models"]}
        if sorted(st) != sorted(os.path.basename(m) for m in models):
            raise Fail("%s: the report lists %s" % (where, sorted(st)))
        done = set(os.listdir(out)) if os.path.isdir(out) else set()
        for n, s_ in st.items():
            if (s_ == "ok") != (n[:-3] + ".nnapi.pt" in done):
                raise Fail("%s: report says %s is %s, output %s" % (
                    where, n, s_, "present" if n[:-3] + ".nnapi.pt" in done else "absent"))
        return
    raise Skip("nothing failed under the descriptor limits tried (soft case): " + "; ".join(tried))


# ----- outputs ---------------------------------------------------------------
@case("outputs", "outputs.o_equals_model")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", m])
    expect(r, 2, names=m)
    same_dir(before, d)


@case("outputs", "outputs.o_equals_model_other_spelling")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    os.makedirs(os.path.join(d, "sub"))
    before = snap(d)
    r = conv(["m.pt", "--input", "1x4x8x8", "-o", "./sub/../m.pt"], cwd=d)
    expect(r, 2, names=m)
    same_dir(before, d)


@case("outputs", "outputs.o_hardlink_to_model")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    os.link(m, os.path.join(d, "h.pt"))
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", os.path.join(d, "h.pt")])
    expect(r, 2, names="h.pt")
    same_dir(before, d)


@case("outputs", "outputs.o_symlink_to_model")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    os.symlink("m.pt", os.path.join(d, "l.pt"))
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", os.path.join(d, "l.pt")])
    expect(r, 2, names="l.pt")
    same_dir(before, d)


@case("outputs", "outputs.report_equals_model")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", os.path.join(d, "out.pt"), "--report", m])
    expect(r, 2, names=m)
    same_dir(before, d)


@case("outputs", "outputs.report_equals_output")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    out = os.path.join(d, "out.pt")
    write(out, "keep\n")
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", out, "--report", out])
    expect(r, 2, names=out)
    same_dir(before, d)


@case("outputs", "outputs.lite_ptl_equals_model")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.ptl"))
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", os.path.join(d, "m.pt"), "--lite"])
    expect(r, 2, names=m)
    same_dir(before, d)


@case("outputs", "outputs.parts_file_equals_model")
def _(d):
    os.makedirs(os.path.join(d, "p"))
    m = copy_model("small.pt", os.path.join(d, "p", "weights.pt"))
    before = snap(os.path.join(d, "p"))
    r = conv([m, "--input", "1x4x8x8", "-o", os.path.join(d, "out.pt"), "--parts",
              os.path.join(d, "p")])
    expect(r, 2, names="weights.pt")
    same_dir(before, os.path.join(d, "p"))
    same_dir({"p": ("dir",)}, d)


@case("outputs", "outputs.o_empty_string")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", ""], cwd=d)
    expect(r, 2)
    same_dir(before, d)


# Character devices, FIFOs, /dev/stdout and descriptors are written through
# (as `sort -o /dev/stdout` writes): opened for writing when the outputs are
# committed, never created, truncated, renamed over or replaced, and no
# temporary beside them. Regular files keep the temporary and the rename.
def fifo_reader(fifo, got):
    """Reads the FIFO to its end in a thread (the writer's open blocks until
    a reader opens it); `got` receives the bytes."""
    def read():
        with open(fifo, "rb") as f:
            got.append(f.read())
    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t


@case("outputs", "outputs.o_fifo_written_through")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    before = snap(d)
    got = []
    t = fifo_reader(fifo, got)
    r = conv([m, "--input", "1x4x8x8", "-o", fifo], timeout=60)
    expect(r, 0)
    t.join(timeout=30)
    if not got or not is_module_bytes(got[0]):
        raise Fail("the FIFO's reader did not get a module (%r)" % (got[0][:16] if got else None))
    if not stat.S_ISFIFO(os.lstat(fifo).st_mode):
        raise Fail("the FIFO was replaced")
    same_dir(before, d)
    p = os.path.join(d, "from_fifo.pt")
    write(p, got[0])
    TorchLoader.load(p)
    os.unlink(p)


def device_node(path, kind, major, minor):
    """mknod (root only: the case is skipped otherwise)."""
    try:
        os.mknod(path, 0o600 | kind, os.makedev(major, minor))
    except OSError as e:
        raise Skip("mknod: %s" % e)
    return path


@case("outputs", "outputs.o_char_device_written_through")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    node = device_node(os.path.join(d, "null"), stat.S_IFCHR, 1, 3)  # as /dev/null
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", node], timeout=60)
    expect(r, 0)
    st = os.lstat(node)
    if not stat.S_ISCHR(st.st_mode) or st.st_rdev != os.makedev(1, 3):
        raise Fail("the character device was replaced")
    same_dir(before, d)


@case("outputs", "outputs.o_symlink_to_dev_null")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    link = os.path.join(d, "null")
    os.symlink("/dev/null", link)
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", link, "--lite"], timeout=60)
    # The module goes through the link to /dev/null; the --lite file beside
    # it (null.ptl) is a regular file of its own.
    expect(r, 0)
    if not os.path.islink(link) or os.readlink(link) != "/dev/null":
        raise Fail("the symlink was replaced")
    if not stat.S_ISCHR(os.stat("/dev/null").st_mode):
        raise Fail("/dev/null is no longer a character device")
    same_dir(before, d, new=["null.ptl"])


@case("outputs", "outputs.report_symlink_to_stdout")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    link = os.path.join(d, "stdout")
    os.symlink("/proc/self/fd/1", link)
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", os.path.join(d, "out.pt"), "--report", link],
             timeout=60)
    expect(r, 0)
    if not os.path.islink(link) or os.readlink(link) != "/proc/self/fd/1":
        raise Fail("the symlink was replaced")
    same_dir(before, d, new=["out.pt"])
    if [x["status"] for x in json.loads(r.out.decode("utf-8"))["models"]] != ["ok"]:
        raise Fail("stdout is not the report: %r" % r.out[:80])


@case("outputs", "outputs.report_dev_stdout")
def _(d):
    # The report on standard output (a pipe here), --verify's lines on
    # standard error, as with --report -.
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", "out.pt", "--report", "/dev/stdout", "--verify"],
             cwd=d, timeout=90)
    expect(r, 0)
    same_dir(before, d, new=["out.pt"])
    try:
        rep = json.loads(r.out.decode("utf-8"))
    except ValueError as e:
        raise Fail("stdout is not just the JSON report: %s (%r)" % (e, r.out[:80]))
    if [x["status"] for x in rep["models"]] != ["ok"] or "verify on inputs" not in r.text:
        raise Fail("report %s; stderr %s" % (rep, r.text[:200]))


@case("outputs", "outputs.o_dev_stdout_and_report_dash_clash")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", "/dev/stdout", "--report", "-"], cwd=d)
    expect(r, 2, pattern=r"would both be written to one file")
    same_dir(before, d)


@case("outputs", "outputs.every_output_kind_written_through")
def _(d):
    # --out-dir's module onto a FIFO, --lite's .ptl and a --parts file onto
    # symlinks to /dev/null, --junit onto /dev/stdout; the other --parts
    # files are regular files, made by rename.
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    out, parts = os.path.join(d, "o"), os.path.join(d, "p")
    os.makedirs(out)
    os.makedirs(parts)
    fifo = os.path.join(out, "m.nnapi.pt")
    os.mkfifo(fifo)
    os.symlink("/dev/null", os.path.join(out, "m.nnapi.ptl"))
    os.symlink("/dev/null", os.path.join(parts, "manifest.json"))
    obefore = snap(out)
    pbefore = snap(parts)
    got = []
    t = fifo_reader(fifo, got)
    r = conv([m, "--input", "1x4x8x8", "--out-dir", out, "--lite", "--parts", parts, "--junit",
              "/dev/stdout"], timeout=60)
    expect(r, 0)
    t.join(timeout=30)
    if not got or not is_module_bytes(got[0]):
        raise Fail("the FIFO's reader did not get a module")
    if not r.out.startswith(b"<?xml") or b"<testsuite" not in r.out:
        raise Fail("stdout is not the JUnit report: %r" % r.out[:60])
    same_dir(obefore, out, what="--out-dir")
    same_dir(pbefore, parts, new=["ser_model.bin", "weights.pt", "shape_compute.py"],
             what="--parts")


@case("outputs", "outputs.regular_file_replaced_by_rename")
def _(d):
    # A regular file is replaced by renaming a complete temporary over it,
    # never written in place: another name of the old file (a hard link)
    # still reads the old bytes, and the new file is another inode.
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    out = os.path.join(d, "out.pt")
    write(out, "precious\n")
    os.link(out, os.path.join(d, "old.pt"))
    ino = os.stat(out).st_ino
    r = conv([m, "--input", "1x4x8x8", "-o", out], timeout=60)
    expect(r, 0)
    with open(os.path.join(d, "old.pt"), "rb") as f:
        if f.read() != b"precious\n":
            raise Fail("the old file was written in place")
    if os.stat(out).st_ino == ino:
        raise Fail("the output is the old inode rewritten, not a new file renamed over it")
    with open(out, "rb") as f:
        if not is_module_bytes(f.read()):
            raise Fail("the output is not a complete module")


@case("outputs", "outputs.o_block_device_refused")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    node = device_node(os.path.join(d, "blk"), stat.S_IFBLK, 7, 0)  # as /dev/loop0
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", node], timeout=60)
    expect(r, 2, names=node, pattern=r"block device")
    if not stat.S_ISBLK(os.lstat(node).st_mode):
        raise Fail("the block device was replaced")
    same_dir(before, d)


@case("outputs", "outputs.o_dash_writes_stdout")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", "-"], cwd=d)
    expect(r, 0)
    same_dir(before, d)
    if not is_module_bytes(r.out):
        raise Fail("stdout is not a zip archive (starts %r)" % r.out[:16])
    p = os.path.join(d, "stdout_module.pt")
    write(p, r.out)
    TorchLoader.load(p)
    os.unlink(p)


@case("outputs", "outputs.report_dash_writes_stdout")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", "out.pt", "--report", "-"], cwd=d)
    expect(r, 0)
    same_dir(before, d, new=["out.pt"])
    try:
        rep = json.loads(r.out.decode("utf-8"))
    except ValueError as e:
        raise Fail("stdout is not the JSON report: %s (%r)" % (e, r.out[:80]))
    if [x["status"] for x in rep["models"]] != ["ok"]:
        raise Fail("report: %s" % rep)


@case("outputs", "outputs.o_symlink_to_regular_file")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    target = os.path.join(d, "target.pt")
    write(target, "old\n")
    link = os.path.join(d, "link.pt")
    os.symlink("target.pt", link)
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", link])
    expect(r, 0)
    if not os.path.islink(link) or os.readlink(link) != "target.pt":
        raise Fail("-o LINK: the symlink was replaced by a regular file")
    with open(target, "rb") as f:
        if not f.read(2) == b"PK":
            raise Fail("-o LINK: the link's target does not hold the module")
    del before["target.pt"]
    same_dir(before, d, new=["target.pt"])
    TorchLoader.load(target)


@case("outputs", "outputs.planted_tmp_symlinks", serial=True)
def _(d):
    copy_model("small.pt", os.path.join(d, "m.pt"))
    victim = os.path.join(d, "victim.txt")
    write(victim, "VICTIM\n")
    with open("/proc/sys/kernel/ns_last_pid") as f:
        last = int(f.read())
    for pid in range(last + 1, last + 301):
        for k in range(2):
            os.symlink("victim.txt", os.path.join(d, "out.pt.tmp-%d-%d" % (pid, k)))
            os.symlink("victim.txt", os.path.join(d, "out.ptl.tmp-%d-%d" % (pid, k)))
    before = snap(d)
    r = conv(["m.pt", "--input", "1x4x8x8", "-o", "out.pt", "--lite"], cwd=d)
    expect(r, 0)
    with open(victim) as f:
        if f.read() != "VICTIM\n":
            raise Fail("the module was written through a planted symlink into victim.txt")
    for n in ("out.pt", "out.ptl"):
        st = os.lstat(os.path.join(d, n)) if os.path.lexists(os.path.join(d, n)) else None
        if st is None or not stat.S_ISREG(st.st_mode):
            raise Fail("%s is not a regular file" % n)
    same_dir(before, d, new=["out.pt", "out.ptl"])


@case("outputs", "outputs.invalid_utf8_file_name")
def _(d):
    db = os.fsencode(d)
    m = os.path.join(db, b"bad\xff\xfe name.pt")
    shutil.copyfile(model("small.pt"), m)
    rep = os.path.join(d, "R.json")
    r = conv([m, "--input", "1x4x8x8", "--report", rep], timeout=60)
    expect(r, 0)
    if not os.path.exists(os.path.join(db, b"bad\xff\xfe name.nnapi.pt")):
        raise Fail("no output beside the model: %s" % os.listdir(db))
    try:
        with open(rep, encoding="utf-8", errors="strict") as f:
            json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise Fail("--report is not valid UTF-8 JSON: %s" % e)


@case("outputs", "outputs.unicode_and_spaces")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "mödel ünï.pt"))
    out = os.path.join(d, "out dír")
    parts = os.path.join(d, "pärts dir")
    rep = os.path.join(d, "rëport 1.json")
    r = conv([m, "--input", "1x4x8x8", "--out-dir", out, "--parts", parts, "--report", rep])
    expect(r, 0)
    same_dir({}, out, new=["mödel ünï.nnapi.pt"])
    same_dir({}, parts, new=["ser_model.bin", "weights.pt", "shape_compute.py", "manifest.json"])
    with open(rep, encoding="utf-8") as f:
        rp = json.load(f)
    if rp["models"][0]["model"] != m:
        raise Fail("report names %r" % rp["models"][0]["model"])


@case("outputs", "outputs.o_parent_is_file")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    write(os.path.join(d, "file"), "keep\n")
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", os.path.join(d, "file", "x.pt")])
    expect(r, (1, 2), names="file")
    same_dir(before, d)


@case("outputs", "outputs.o_existing_directory")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    os.makedirs(os.path.join(d, "dir"))
    write(os.path.join(d, "dir", "inside"), "keep\n")
    before, inside = snap(d), snap(os.path.join(d, "dir"))
    r = conv([m, "--input", "1x4x8x8", "-o", os.path.join(d, "dir")])
    expect(r, (1, 2), names="dir")
    same_dir(before, d)
    same_dir(inside, os.path.join(d, "dir"))


@case("outputs", "outputs.parts_is_file")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    write(os.path.join(d, "parts"), "keep\n")
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", os.path.join(d, "out.pt"), "--parts",
              os.path.join(d, "parts")])
    expect(r, (1, 2), names="parts")
    same_dir(before, d)


@case("outputs", "outputs.report_under_file")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    write(os.path.join(d, "file"), "keep\n")
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", os.path.join(d, "out.pt"), "--report",
              os.path.join(d, "file", "r.json")])
    expect(r, 1, names="r.json", pattern="--report")
    same_dir(before, d, new=["out.pt"])


@case("outputs", "outputs.parts_symlink_to_file")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    write(os.path.join(d, "file"), "keep\n")
    os.symlink("file", os.path.join(d, "parts"))
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", os.path.join(d, "out.pt"), "--parts",
              os.path.join(d, "parts")])
    expect(r, (1, 2), names="parts")
    same_dir(before, d)


@case("outputs", "outputs.two_processes_one_output")
def _(d):
    # Two conversions of different models race to one -o: the result is always
    # one complete module, never a mix, and no temporary is left.
    out = os.path.join(d, "out.pt")
    for rnd in range(2):
        ps = [subprocess.Popen([BIN, model(m), "--input", spec, "-o", out], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
              for m, spec in (("lin1000.pt", "1x1000"), ("small.pt", "1x4x8x8"))]
        for p in ps:
            try:
                _, err = p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                raise Fail("round %d: timed out" % rnd)
            r = Result([], p.returncode, b"", err, 0)
            expect(r, 0)
        same_dir({}, d, new=["out.pt"])
        with open(out, "rb") as f:
            if not is_module_bytes(f.read()):
                raise Fail("round %d: out.pt is not a complete module" % rnd)


def verify_failure(d, with_report):
    m = copy_model("view22.pt", os.path.join(d, "v.pt"))
    out = os.path.join(d, "v.nnapi.pt")
    write(out, "keep\n")
    before = snap(d)
    args = [m, "--input", "0x4", "-o", out, "--verify", "--verify-shape", "3x4"]
    if with_report:
        args += ["--report", os.path.join(d, "R.json")]
    r = conv(args, timeout=90)
    expect(r, 1, names=m)
    same_dir(before, d, new=["R.json"] if with_report else [])
    if with_report:
        with open(os.path.join(d, "R.json"), encoding="utf-8") as f:
            rep = json.load(f)
        entry = rep["models"][0]
        if entry["status"] != "failed" or entry.get("output", "missing") is not None:
            raise Fail("report: status %r, output %r (want failed, null)" % (
                entry["status"], entry.get("output", "missing")))


case("outputs", "outputs.verify_failure_keeps_output")(lambda d: verify_failure(d, False))
case("outputs", "outputs.verify_failure_report_output_null")(lambda d: verify_failure(d, True))


# ----- diskfull --------------------------------------------------------------
def limited(fsize, xfsz_ignored):
    def pre():
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN if xfsz_ignored else signal.SIG_DFL)
    return pre


_sizes = {}
_sizes_lock = threading.Lock()


def lin1000_sizes():
    """Sizes of lin1000's .pt and .ptl, converted without limits."""
    with _sizes_lock:
        if not _sizes:
            d = scratch("_lin1000_sizes")
            r = conv([model("lin1000.pt"), "--input", "1x1000", "-o", os.path.join(d, "x.pt"),
                      "--lite"])
            if r.rc != 0:
                raise Fail("lin1000 does not convert without a limit: " + r.describe())
            _sizes["pt"] = os.path.getsize(os.path.join(d, "x.pt"))
            _sizes["ptl"] = os.path.getsize(os.path.join(d, "x.ptl"))
            shutil.rmtree(d, ignore_errors=True)
        return _sizes["pt"], _sizes["ptl"]


def diskfull_plain(d, ignored):
    out = os.path.join(d, "out.pt")
    write(out, "precious\n")
    before = snap(d)
    r = conv([model("lin1000.pt"), "--input", "1x1000", "-o", out],
             preexec=limited(1 << 20, ignored))
    expect(r, 1, names=out)
    same_dir(before, d)


def diskfull_lite(d, ignored):
    pt, ptl = lin1000_sizes()
    # One of the two files fits and the other does not: the existing pair must
    # survive whichever is written first.
    limit = (pt + ptl) // 2 if abs(pt - ptl) > 64 else min(pt, ptl) - 4096
    out = os.path.join(d, "out.pt")
    write(out, "precious pt\n")
    write(os.path.join(d, "out.ptl"), "precious ptl\n")
    before = snap(d)
    r = conv([model("lin1000.pt"), "--input", "1x1000", "-o", out, "--lite"],
             preexec=limited(limit, ignored))
    expect(r, 1, names="out.pt")
    same_dir(before, d)


def diskfull_parts(d, ignored):
    parts = os.path.join(d, "parts")
    r = conv([model("small.pt"), "--input", "1x4x8x8", "-o", os.path.join(d, "first.pt"),
              "--parts", parts])
    expect(r, 0)
    os.unlink(os.path.join(d, "first.pt"))
    pbefore = snap(parts)
    if len(pbefore) != 4:
        raise Fail("--parts wrote %s" % sorted(pbefore))
    before = snap(d)
    r = conv([model("lin1000.pt"), "--input", "1x1000", "-o", os.path.join(d, "n.pt"), "--parts",
              parts], preexec=limited(200 * 1024, ignored))
    expect(r, 1)
    if not re.search(r"weights\.pt|parts|n\.pt", r.text):
        raise Fail("message names neither the parts file nor the output: %s" % r.text.strip()[:300])
    same_dir(pbefore, parts, what="--parts directory")
    same_dir(before, d)


for _ign, _tag in ((True, "xfsz_ignored"), (False, "xfsz_default")):
    case("diskfull", "diskfull.output." + _tag, serial=True)(lambda d, i=_ign: diskfull_plain(d, i))
    case("diskfull", "diskfull.lite." + _tag, serial=True)(lambda d, i=_ign: diskfull_lite(d, i))
    case("diskfull", "diskfull.parts." + _tag, serial=True)(lambda d, i=_ign: diskfull_parts(d, i))


@case("diskfull", "diskfull.report", serial=True)
def _(d):
    # The module goes to stdout (a pipe: no file-size limit); the report does
    # not fit in 64 bytes.
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    rep = os.path.join(d, "R.json")
    write(rep, "precious\n")
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", "-", "--report", rep], preexec=limited(64, True))
    expect(r, 1, names="R.json")
    same_dir(before, d)


@case("diskfull", "diskfull.rlimit_as_1g", serial=True)
def _(d):
    # An address-space limit: a clean exit 0 or 1, never an abort.
    def pre():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    out = os.path.join(d, "r.nnapi.pt")
    write(out, "precious\n")
    before = snap(d)
    r = conv([model("resnet18.pt"), "--input", "1x3x224x224", "-o", out], preexec=pre, timeout=120)
    expect(r, (0, 1), names="resnet18.pt")
    if r.rc == 1:
        same_dir(before, d)
        if re.search(r"truncated|torch\.save", r.text) and not re.search(r"memory", r.text, re.I):
            raise Fail("out of memory blamed on the file: %s" % r.text.strip()[:300])


# ----- signals ---------------------------------------------------------------
_calib = {}


def live_in_group(pgid):
    """Pids of the processes of group `pgid` that are not zombies."""
    live = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            live.append(int(pid))
    return live


def signal_run(d, sig, delay):
    """Converts resnet18 over an existing output and sends `sig` `delay`
    seconds after a new file appears in the output directory. Returns
    'interrupted' or 'late' (the conversion had finished)."""
    out_dir = os.path.join(d, "o")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, "r.nnapi.pt")
    write(out, "precious\n")
    before = snap(out_dir)
    p = subprocess.Popen([BIN, model("resnet18.pt"), "--input", "1x3x224x224", "-o", out],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    err_chunks = []
    t = threading.Thread(target=lambda: err_chunks.append(p.stderr.read()))
    t.start()
    deadline = time.monotonic() + 120
    sent = False
    try:
        while p.poll() is None and time.monotonic() < deadline:
            if set(os.listdir(out_dir)) - set(before):
                if delay:
                    time.sleep(delay)
                p.send_signal(sig)
                sent = True
                break
            time.sleep(0.0005)
        if not sent and p.poll() is None:
            raise Fail("no file appeared in the output directory in 120 s")
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        raise Fail("%s: the process did not end within 60 s of the signal" % sig.name)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    # Worker processes must not outlive the converter (they would go on
    # writing): a second after it ended, nothing in its process group may
    # still run (zombies waiting for init to reap them do not count).
    t_end = time.monotonic() + 1.0
    while live_in_group(p.pid) and time.monotonic() < t_end:
        time.sleep(0.05)
    live = live_in_group(p.pid)
    if live:
        os.killpg(p.pid, signal.SIGKILL)
        t.join()
        raise Fail("%s after %.3f s: process(es) %s of the converter outlived it by 1 s" % (
            sig.name, delay, live))
    t.join()
    err = (err_chunks[0] if err_chunks else b"").decode("utf-8", "replace")
    r = Result([], p.returncode, b"", err.encode(), 0)
    check_stderr(r)
    if p.returncode == 0:
        # The signal came after the conversion was complete.
        after = snap(out_dir)
        if set(after) != {"r.nnapi.pt"}:
            raise Fail("%s after exit 0: directory holds %s" % (sig.name, sorted(after)))
        return "late" if sent else "no-signal"
    if p.returncode not in (-sig, 128 + sig, 1):
        raise Fail("%s after %.3f s: %s" % (sig.name, delay, r.describe()))
    after = snap(out_dir)
    if set(after) == {"r.nnapi.pt"} and after != before:
        # The signal came between the rename and the exit: acceptable only if
        # the output is the complete new module (the rename is the commit).
        with open(out, "rb") as f:
            if not is_module_bytes(f.read()):
                raise Fail("%s after %.3f s: %s, and the output is neither the old file nor a "
                           "complete module" % (sig.name, delay, r.describe()))
        return "after-commit"
    same_dir(before, out_dir, what="%s after %.3f s (%s)" % (sig.name, delay, r.describe()))
    return "interrupted"


def signal_case(d, sig):
    # Calibrate once: how long after the first new file does the process end?
    if "window" not in _calib:
        d0 = scratch("_signal_calibration")
        out_dir = os.path.join(d0, "o")
        os.makedirs(out_dir)
        p = subprocess.Popen([BIN, model("resnet18.pt"), "--input", "1x3x224x224", "-o",
                              os.path.join(out_dir, "r.nnapi.pt")], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t_new = None
        t0 = time.monotonic()
        while p.poll() is None and time.monotonic() - t0 < 120:
            if t_new is None and os.listdir(out_dir):
                t_new = time.monotonic()
            time.sleep(0.0005)
        if p.poll() is None:
            p.kill()
            p.wait()
            raise Fail("resnet18 conversion took over 120 s")
        end = time.monotonic()
        if p.returncode != 0:
            raise Fail("resnet18 does not convert (exit %s)" % p.returncode)
        _calib["window"] = (end - t_new) if t_new else 0.0
        _calib["total"] = end - t0
        shutil.rmtree(d0, ignore_errors=True)
    w = _calib["window"]
    outcomes = []
    for frac in (0.0, 0.3, 0.6):
        outcomes.append(signal_run(d, sig, w * frac))
    # On a loaded machine the write window moves: a few more tries in it
    # before giving up (each outcome is checked all the same).
    for frac in (0.15, 0.45, 0.8):
        if "interrupted" in outcomes:
            break
        outcomes.append(signal_run(d, sig, w * frac))
    if "interrupted" not in outcomes:
        raise Skip("%s never landed mid-write (write window %.3f s; outcomes %s)" % (
            sig.name, w, outcomes))
    if VERBOSE:
        print("  %s: window %.3f s, outcomes %s" % (sig.name, w, outcomes))


for _sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    case("signals", "signals." + _sig.name, serial=True)(lambda d, s=_sig: signal_case(d, s))


# Deterministic: the test hook NNAPI_CONVERT_TEST_SIGNAL_AFTER_TEMP=N[:TEXT]
# makes the process that creates a temporary (whose name holds TEXT) raise
# signal N right after creating it, before it writes a byte. The signal
# handler must remove it: nothing is left, the existing output is intact.
def hook_env(sig, text=None):
    return dict(os.environ, NNAPI_CONVERT_TEST_SIGNAL_AFTER_TEMP="%d%s" % (
        sig, ":" + text if text else ""))


def expect_stopped(r, sig):
    """The process ended by `sig` (as the shell shows it, or as Popen does)."""
    if r.rc not in (-sig, 128 + sig):
        raise Fail("expected to be stopped by %s, got %s" % (sig.name, r.describe()))
    check_stderr(r)


def after_temp(d, sig, in_process):
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    out = os.path.join(d, "out.pt")
    write(out, "precious\n")
    before = snap(d)
    env = hook_env(sig)
    if in_process:
        env["NNAPI_CONVERT_IN_PROCESS"] = "1"
    r = conv([m, "--input", "1x4x8x8", "-o", out], env=env, timeout=60)
    if in_process:
        expect_stopped(r, sig)  # the converter itself
    else:
        # The worker that writes is stopped; the converter reports it.
        expect(r, 1, names=m, pattern=r"crashed with SIG%s" % sig.name[3:])
    same_dir(before, d, what="%s right after the temporary was made" % sig.name)


for _sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    case("signals", "signals.after_temp." + _sig.name)(
        lambda d, s=_sig: after_temp(d, s, False))
    case("signals", "signals.after_temp_in_process." + _sig.name)(
        lambda d, s=_sig: after_temp(d, s, True))


@case("signals", "signals.after_temp.report")
def _(d):
    # The converter's own temporary (--report is written by it, not a worker).
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    rep = os.path.join(d, "R.json")
    write(rep, "precious\n")
    before = snap(d)
    r = conv([m, "--input", "1x4x8x8", "-o", os.path.join(d, "out.pt"), "--report", rep],
             env=hook_env(signal.SIGINT, "R.json"), timeout=60)
    expect_stopped(r, signal.SIGINT)
    same_dir(before, d, new=["out.pt"], what="SIGINT right after the report's temporary")


@case("signals", "signals.after_temp.stdout_staging")
def _(d):
    # -o - is staged in $TMPDIR: that temporary too.
    m = copy_model("small.pt", os.path.join(d, "m.pt"))
    tmp = os.path.join(d, "tmp")
    os.makedirs(tmp)
    env = hook_env(signal.SIGTERM)
    env["TMPDIR"] = tmp
    r = conv([m, "--input", "1x4x8x8", "-o", "-"], env=env, cwd=d, timeout=60)
    expect(r, 1, names=m, pattern=r"crashed with SIGTERM")
    if r.out:
        raise Fail("something reached standard output: %r" % r.out[:40])
    same_dir({}, tmp, what="$TMPDIR")


@case("signals", "signals.after_temp.batch")
def _(d):
    # Two worker processes at once, each stopped after making its temporary.
    for name in ("a", "b"):
        copy_model("small.pt", os.path.join(d, name + ".pt"))
    out = os.path.join(d, "o")
    r = conv([os.path.join(d, "a.pt"), os.path.join(d, "b.pt"), "--input", "1x4x8x8", "--out-dir",
              out, "-j", "2"], env=hook_env(signal.SIGINT), timeout=90)
    expect(r, 1, pattern=r"crashed with SIGINT")
    same_dir({}, out, what="--out-dir")


# ----- manifest --------------------------------------------------------------
def manifest_case(d, doc, pattern=None, statuses=(2,), raw=False, names=None, args=()):
    copy_model("small.pt", os.path.join(d, "a.pt"))
    copy_model("small.pt", os.path.join(d, "b.pt"))
    man = os.path.join(d, "m.json")
    write(man, doc if raw else json.dumps(doc))
    before = snap(d)
    r = conv(["--manifest", man, "--report", os.path.join(d, "R.json")] + list(args), cwd=d,
             timeout=60)
    expect(r, statuses, names=names or man, pattern=pattern)
    if r.rc == 2:
        same_dir(before, d, what="exit 2 but")
    return r


@case("manifest", "manifest.output_is_other_entrys_model")
def _(d):
    manifest_case(d, [{"model": "a.pt", "inputs": ["1x4x8x8"], "output": "out_a.pt"},
                      {"model": "b.pt", "inputs": ["1x4x8x8"], "output": "a.pt"}], names="a.pt")


@case("manifest", "manifest.output_is_own_model")
def _(d):
    manifest_case(d, [{"model": "a.pt", "inputs": ["1x4x8x8"], "output": "a.pt"}], names="a.pt")


@case("manifest", "manifest.report_is_a_model")
def _(d):
    copy_model("small.pt", os.path.join(d, "a.pt"))
    man = os.path.join(d, "m.json")
    write(man, json.dumps([{"model": "a.pt", "inputs": ["1x4x8x8"], "output": "out.pt"}]))
    before = snap(d)
    r = conv(["--manifest", man, "--report", os.path.join(d, "a.pt")], timeout=60)
    expect(r, 2, names="a.pt")
    same_dir(before, d)


for _val, _tag in ((5, "number"), (None, "null"), ("", "empty"), ([], "list"), (True, "bool")):
    case("manifest", "manifest.output_" + _tag)(
        lambda d, v=_val: manifest_case(
            d, [{"model": "a.pt", "inputs": ["1x4x8x8"], "output": "x.pt"},
                {"model": "b.pt", "inputs": ["1x4x8x8"], "output": v}],
            pattern=r"entry 1"))

for _tag, _doc in [
    ("deep_array_30000", "[" * 30000 + "]" * 30000),
    ("deep_array_1e6", "[" * 1000000 + "]" * 1000000),
    ("deep_object_100000", '{"a":' * 100000 + "1" + "}" * 100000),
    ("deep_array_10000", "[" * 10000 + "]" * 10000),
    ("deep_in_options", '[{"model": "a.pt", "inputs": ["1x4x8x8"], "options": {"parts": '
                        + "[" * 50000 + "]" * 50000 + "}}]"),
    ("truncated", '[{"model": "a.pt", "inputs": ["1x4x8'),
    ("huge_number", '[{"model": "a.pt", "inputs": ["1x4x8x8"], "x": 1e999999}]'),
    ("trailing_comma", '[{"model": "a.pt", "inputs": ["1x4x8x8"]},]'),
    ("empty_file", ""),
    ("bad_unicode_escape", '[{"model": "a\\uZZZZ.pt", "inputs": ["1x4x8x8"]}]'),
    ("lone_surrogate_escape", '[{"model": "a\\ud800.pt", "inputs": ["1x4x8x8"]}]'),
    ("nul_in_path", '[{"model": "a.pt\\u0000x", "inputs": ["1x4x8x8"]}]'),
    ("unknown_option", '[{"model": "a.pt", "inputs": ["1x4x8x8"], "options": {"frobnicate": true}}]'),
    ("unknown_key_entry", '[{"model": "a.pt", "inputs": ["1x4x8x8"], "frobnicate": 1}]'),
    ("unknown_key_top", '{"models": [{"model": "a.pt", "inputs": ["1x4x8x8"]}], "frobnicate": 1}'),
    ("misspelled_output_key", '[{"model": "a.pt", "inputs": ["1x4x8x8"], "ouput": "x.pt"}]'),
    ("inputs_not_strings", '[{"model": "a.pt", "inputs": [1, 4, 8, 8]}]'),
    ("model_not_string", '[{"model": 5, "inputs": ["1x4x8x8"]}]'),
    ("option_wrong_type", '[{"model": "a.pt", "inputs": ["1x4x8x8"], "options": {"nhwc": "yes"}}]'),
    ("return_shapes_wrong_type", '[{"model": "a.pt", "inputs": ["1x4x8x8"], "options": {"return_shapes": 3}}]'),
    ("parts_wrong_type", '[{"model": "a.pt", "inputs": ["1x4x8x8"], "options": {"parts": 3}}]'),
]:
    case("manifest", "manifest." + _tag)(lambda d, doc=_doc: manifest_case(d, doc, raw=True))


# The float16 and lite-bytecode options of an entry, as the command line
# checks --float16, --float16-io and --lite-bytecode-version: a bad value or a
# contradiction is exit 2 naming the entry and the option (issue 37).
_ENTRY = r"m\.json' entry 1: "
for _tag, _opts, _args, _pattern in [
    ("float16_not_bool", {"float16": "yes"}, (), _ENTRY + r'option "float16" must be true or false'),
    ("float16_io_not_bool", {"float16_io": 1}, (),
     _ENTRY + r'option "float16_io" must be true or false'),
    ("float16_off_with_float16_io", {"float16": False, "float16_io": True}, (),
     _ENTRY + r'option "float16": false contradicts option "float16_io"'),
    ("float16_off_with_cli_float16_io", {"float16": False}, ("--float16-io",),
     _ENTRY + r'option "float16": false contradicts --float16-io'),
    ("float16_io_with_cpu_fallback", {"float16_io": True, "cpu_fallback": True}, (),
     _ENTRY + r'option "float16_io" cannot be combined with option "cpu_fallback"'),
    ("cli_float16_io_with_cpu_fallback", {"cpu_fallback": True}, ("--float16-io",),
     _ENTRY + r'--float16-io cannot be combined with option "cpu_fallback"'),
    ("lite_bytecode_version_3", {"lite_bytecode_version": 3}, (),
     _ENTRY + r'option "lite_bytecode_version" 3: .*versions 4 .* to 8'),
    ("lite_bytecode_version_9", {"lite_bytecode_version": 9}, (),
     _ENTRY + r'option "lite_bytecode_version" 9: .*versions 4 .* to 8'),
    ("lite_bytecode_version_string", {"lite_bytecode_version": "5"}, (),
     _ENTRY + r'option "lite_bytecode_version" must be .* whole number from 4 to 8'),
    ("lite_bytecode_version_fraction", {"lite_bytecode_version": 5.5}, (),
     _ENTRY + r'option "lite_bytecode_version" must be .* whole number from 4 to 8'),
    ("lite_bytecode_version_huge", {"lite_bytecode_version": 10 ** 20}, (),
     _ENTRY + r'option "lite_bytecode_version" must be .* whole number from 4 to 8'),
    ("lite_off_with_bytecode_version", {"lite": False, "lite_bytecode_version": 6}, (),
     _ENTRY + r'option "lite": false contradicts option "lite_bytecode_version"'),
]:
    case("manifest", "manifest." + _tag)(
        lambda d, o=_opts, a=_args, p=_pattern: manifest_case(
            d, [{"model": "a.pt", "inputs": ["1x4x8x8"], "output": "x.pt"},
                {"model": "b.pt", "inputs": ["1x4x8x8"], "output": "y.pt", "options": o}],
            pattern=p, args=a))


@case("manifest", "manifest.duplicate_keys")
def _(d):
    manifest_case(d, '[{"model": "a.pt", "model": "b.pt", "inputs": ["1x4x8x8"], '
                     '"output": "o.pt"}]', raw=True, statuses=(0, 2))


@case("manifest", "manifest.invalid_utf8")
def _(d):
    db = os.fsencode(d)
    shutil.copyfile(model("small.pt"), os.path.join(db, b"m\xff.pt"))
    man = os.path.join(d, "m.json")
    write(man, b'[{"model": "m\xff.pt", "inputs": ["1x4x8x8"], "output": "o\xfe.pt"}]')
    rep = os.path.join(d, "R.json")
    r = conv(["--manifest", man, "--report", rep], timeout=60)
    expect(r, (0, 2), names=man)
    if r.rc == 0:
        try:
            with open(rep, encoding="utf-8", errors="strict") as f:
                json.load(f)
        except (ValueError, UnicodeDecodeError) as e:
            raise Fail("exit 0 but --report is not valid UTF-8 JSON: %s" % e)


@case("manifest", "manifest.control_converts")
def _(d):
    manifest_case(d, [{"model": "a.pt", "inputs": ["1x4x8x8"], "output": "o/a.nnapi.pt"},
                      {"model": "b.pt", "inputs": ["1x4x8x8"], "output": "o/b.nnapi.pt",
                       "options": {"nhwc": False, "lite": True}}],
                  statuses=(0,))
    same_dir({}, os.path.join(d, "o"), new=["a.nnapi.pt", "b.nnapi.pt", "b.nnapi.ptl"])


# ----- inspect ---------------------------------------------------------------
_ser = {}
_ser_lock = threading.Lock()


def converted_small():
    """small.pt converted; returns (path, entries, name of ser_model's record)."""
    with _ser_lock:
        if not _ser:
            d = scratch("_inspect_base")
            g = os.path.join(d, "g.nnapi.pt")
            r = conv([model("small.pt"), "--input", "1x4x8x8", "-o", g])
            if r.rc != 0:
                raise Fail("small.pt does not convert: " + r.describe())
            z = zipfile.ZipFile(g)
            items = [(i.filename, z.read(i.filename)) for i in z.infolist()]
            # ser_model is the int32 blob: its first word is the blob format
            # version (0), then operand and operation counts; find the record
            # the pickle names for the attribute "ser_model".
            pkl = dict(items)[items[0][0].split("/")[0] + "/data.pkl"]
            m = re.search(rb"ser_model.{0,80}?X\x01\x00\x00\x00(\d)|ser_model.{0,80}?X\x02\x00\x00\x00(\d\d)",
                          pkl, re.S)
            if not m:
                raise Fail("cannot find ser_model's storage record in data.pkl")
            key = (m.group(1) or m.group(2)).decode()
            rec = [n for n, _ in items if n.endswith("/data/" + key)]
            if len(rec) != 1:
                raise Fail("no record data/%s" % key)
            _ser.update(path=g, items=items, rec=rec[0])
        return _ser["path"], _ser["items"], _ser["rec"]


def mutant(d, cut):
    g, items, rec = converted_small()
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    import make_hostile
    entries = [make_hostile.Entry(n, (data[:cut] if n == rec else data)) for n, data in items]
    p = os.path.join(d, "mut.nnapi.pt")
    make_hostile.write_zip(p, entries)
    return p


def inspect_deterministic(d, cut):
    p = mutant(d, cut)
    texts = set()
    for _ in range(3):
        r = conv(["inspect", p], timeout=60)
        expect(r, 1, names=p)
        texts.add(r.text)
    if len(texts) != 1:
        raise Fail("3 runs gave %d different messages: %s" % (len(texts), sorted(texts)))


case("inspect", "inspect.ser_model_record_8_bytes")(lambda d: inspect_deterministic(d, 8))
case("inspect", "inspect.ser_model_record_empty")(lambda d: inspect_deterministic(d, 0))


@case("inspect", "inspect.control_rewritten_module")
def _(d):
    p = mutant(d, None)
    r = conv(["inspect", p, "--json"], timeout=60)
    expect(r, 0)
    json.loads(r.out.decode("utf-8"))


@case("inspect", "inspect.control_converted_module")
def _(d):
    g, _, _ = converted_small()
    r = conv(["inspect", g], timeout=60)
    expect(r, 0)


SETSTATE_METHODS = (
    "  def __getstate__(self: __torch__.torch.backends._nnapi.prepare.ShapeComputeModule)"
    " -> Tuple[bool]:\n"
    "    return (self.training,)\n"
    "  def __setstate__(self: __torch__.torch.backends._nnapi.prepare.ShapeComputeModule,\n"
    "    state: Tuple[bool]) -> NoneType:\n"
    "    print(\"SETSTATE-RAN-AT-LOAD\")\n"
    "    self.training = (state)[0]\n"
    "    return None\n")


@case("inspect", "inspect.nnapi_module_setstate_print_json_stdout_clean")
def _(d):
    # A converted module whose ShapeComputeModule gained a __setstate__ that
    # prints (its pickled state becomes a tuple): inspect --json loads it, so
    # the print runs; stdout must still be exactly one JSON document.
    g, items, rec = converted_small()
    import make_hostile
    entries = []
    for n, data in items:
        if n.endswith("/data.pkl"):
            i = data.index(b"ShapeComputeModule\n")
            j = data.index(b")\x81}(", i)
            k = data.index(b"ub", j)
            data = data[:j] + b")\x81\x88\x85b" + data[k + 2:]
        elif n.endswith("/prepare.py"):
            text = data.decode()
            anchor = "class ShapeComputeModule(Module):\n"
            head = text.index(anchor)
            decl = text.index("  _is_full_backward_hook : NoneType\n", head)
            decl = text.index("\n", decl) + 1
            data = (text[:decl] + SETSTATE_METHODS + text[decl:]).encode()
        elif n.endswith("/prepare.py.debug_pkl"):
            continue
        entries.append(make_hostile.Entry(n, data))
    p = os.path.join(d, "setstate.nnapi.pt")
    make_hostile.write_zip(p, entries)
    r = conv(["inspect", p, "--json"], cwd=d, timeout=60)
    expect(r, (0, 1), names=p)
    if b"SETSTATE-RAN-AT-LOAD" in r.out:
        raise Fail("the module's print reached stdout: %r" % r.out[:120])
    if r.rc == 0:
        try:
            doc = json.loads(r.out.decode("utf-8"))
        except ValueError as e:
            raise Fail("stdout is not one JSON document: %s (%r)" % (e, r.out[:80]))
        if doc.get("blob_bytes") != 436:
            raise Fail("inspect --json: %r" % r.out[:200])


@case("inspect", "inspect.setstate_print_json_stdout_clean")
def _(d):
    r = conv(["inspect", model("setstate_print.pt"), "--json"], cwd=d, timeout=60)
    expect(r, (0, 1), names="setstate_print.pt")
    if b"SETSTATE-RAN-AT-LOAD" in r.out:
        raise Fail("the model's print reached stdout: %r" % r.out[:120])
    if r.out.strip():
        try:
            json.loads(r.out.decode("utf-8"))
        except ValueError as e:
            raise Fail("stdout is not JSON: %s" % e)


@case("inspect", "inspect.setstate_loop_timeout")
def _(d):
    r = conv(["inspect", model("setstate_loop.pt"), "--timeout", "3"], cwd=d, timeout=40)
    expect(r, 1, names="setstate_loop.pt", pattern=r"time[sd]? ?out")
    if r.elapsed > 15:
        raise Fail("inspect --timeout 3 ended after %.1f s" % r.elapsed)


# ----- model -----------------------------------------------------------------
@case("model", "model.returns_input")
def _(d):
    m = copy_model("ret_input.pt", os.path.join(d, "ret_input.pt"))
    before = snap(d)
    r = conv([m, "--input", "1x4", "-o", os.path.join(d, "r.pt")])
    expect(r, 1, names=m, pattern=r"returns? (its|the|an?) input|input \d* ?unchanged")
    same_dir(before, d)


@case("model", "model.returns_same_tensor_twice")
def _(d):
    m = copy_model("ret_twice.pt", os.path.join(d, "ret_twice.pt"))
    before = snap(d)
    r = conv([m, "--input", "1x4", "-o", os.path.join(d, "r.pt")])
    expect(r, 1, names=m)
    same_dir(before, d)


@case("model", "model.linear_1000_input_400")
def _(d):
    m = copy_model("lin1000.pt", os.path.join(d, "lin1000.pt"))
    before = snap(d)
    r = conv([m, "--input", "1x400", "-o", os.path.join(d, "r.pt")])
    expect(r, 1, names=m, pattern=r"1000.*400|400.*1000")
    same_dir(before, d)


@case("model", "model.setstate_loop_timeout")
def _(d):
    m = copy_model("setstate_loop.pt", os.path.join(d, "setstate_loop.pt"))
    before = snap(d)
    r = conv([m, "--input", "1x4", "-o", os.path.join(d, "r.pt"), "--timeout", "5"], timeout=40)
    expect(r, 1, names=m, pattern=r"time[sd]? ?out")
    if r.elapsed > 15:
        raise Fail("--timeout 5 ended after %.1f s" % r.elapsed)
    same_dir(before, d)


@case("model", "model.setstate_print_stdout_clean")
def _(d):
    m = copy_model("setstate_print.pt", os.path.join(d, "sp.pt"))
    r = conv([m, "--input", "1x4", "-o", "-"], cwd=d, timeout=60)
    expect(r, 0)
    if not r.out.startswith(b"PK") or not is_module_bytes(r.out):
        raise Fail("stdout is not just the module (starts %r)" % r.out[:24])


@case("model", "model.verify_runtime_error")
def _(d):
    m = copy_model("view22.pt", os.path.join(d, "v.pt"))
    r = conv([m, "--input", "0x4", "-o", os.path.join(d, "v.nnapi.pt"), "--verify",
              "--verify-shape", "3x4"], timeout=90)
    expect(r, 1, names=m)


@case("model", "model.verify_shape_huge_fails_fast")
def _(d):
    m = copy_model("small.pt", os.path.join(d, "s.pt"))
    r = conv([m, "--input", "1x4x0x0", "-o", os.path.join(d, "s.nnapi.pt"), "--verify",
              "--verify-shape", "1x4x100000x100000"], timeout=60)
    expect(r, (1, 2), names="s.pt" if r.rc == 1 else None)
    if r.elapsed > 20:
        raise Fail("took %.0f s" % r.elapsed)


for _spec in ("65536x65536x65536x65536",
              "4294967296x4x8x8"):
    @case("model", "model.input_spec_too_big." + _spec[:20])
    def _(d, spec=_spec):
        r = conv([model("small.pt"), "--input", spec, "-o", os.path.join(d, "x.pt")], timeout=60)
        expect(r, 2, pattern=re.escape(spec[:10]))
        same_dir({}, d)


for _jobs in ("0", "abc"):
    @case("model", "model.jobs_out_of_range." + _jobs)
    def _(d, jobs=_jobs):
        r = conv([model("small.pt"), "--input", "1x4x8x8", "-o", os.path.join(d, "x.pt"),
                  "--jobs", jobs], timeout=60)
        expect(r, 2, pattern="jobs")
        same_dir({}, d)


@case("model", "model.control_small_converts")
def _(d):
    # A control for the M6 cases: the same models with a real op convert.
    m = copy_model("small.pt", os.path.join(d, "s.pt"))
    r = conv([m, "--input", "1x4x8x8", "-o", os.path.join(d, "s.nnapi.pt")])
    expect(r, 0)


# ---------------------------------------------------------------------------
def main():
    global BIN, WORK, FIX, PY, VERBOSE
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("work")
    ap.add_argument("--only", help="regex on case names")
    ap.add_argument("--group", action="append", help="archives, batch, outputs, diskfull, "
                    "signals, manifest, inspect, model (repeatable)")
    ap.add_argument("--fixtures", help="make_hostile.py's OUT_DIR (default WORK/fixtures)")
    ap.add_argument("--python", default=PY, help="interpreter that imports torch")
    ap.add_argument("--jobs", type=int, default=2, help="cases run at a time (default 2)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    BIN = os.path.abspath(a.bin)
    WORK = os.path.abspath(a.work)
    FIX = os.path.abspath(a.fixtures or os.path.join(WORK, "fixtures"))
    PY = a.python
    VERBOSE = a.verbose
    if not os.access(BIN, os.X_OK):
        print("FAIL setup: %s is not an executable" % BIN)
        print("0 passed, 1 failed")
        return 1
    if not os.path.exists(os.path.join(FIX, "hostile", "index.json")):
        r = run([PY, os.path.join(HERE, "make_hostile.py"), FIX], timeout=300)
        if r.rc != 0:
            print("FAIL setup: make_hostile.py: %s" % r.describe())
            print("0 passed, 1 failed")
            return 1
    archive_cases()
    selected = [c for c in CASES
                if (not a.group or c[0] in a.group) and (not a.only or re.search(a.only, c[1]))
                and not (SKIP and re.search(SKIP, c[1]))]
    os.makedirs(os.path.join(WORK, "run"), exist_ok=True)
    passed = failed = 0
    lock = threading.Lock()

    def one(c):
        group, name, fn, _ = c
        t0 = time.monotonic()
        try:
            d = scratch(name)
            fn(d)
            line = "PASS %s" % name
            ok = True
            shutil.rmtree(d, ignore_errors=True)  # failed cases keep theirs
        except Skip as e:
            if str(e).strip():
                line, ok = "SKIP %s: %s" % (name, e), None
            else:
                line, ok = "FAIL %s: skipped without saying why" % name, False
        except Fail as e:
            line, ok = "FAIL %s: %s" % (name, e), False
        except Exception:  # a bug in the case itself
            line, ok = "FAIL %s: test error: %s" % (name, traceback.format_exc().strip().splitlines()[-1]), False
            if VERBOSE:
                traceback.print_exc()
        if VERBOSE:
            line += "  [%.1f s]" % (time.monotonic() - t0)
        with lock:
            print(line, flush=True)
        return ok

    t_start = time.monotonic()
    parallel = [c for c in selected if not c[3]]
    serial = [c for c in selected if c[3]]
    results = []
    with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as ex:
        results += list(ex.map(one, parallel))
    results += [one(c) for c in serial]
    TorchLoader.stop()
    passed = sum(1 for r in results if r is True)
    failed = sum(1 for r in results if r is False)
    skipped = sum(1 for r in results if r is None)
    # A group whose every case was skipped tested nothing: it fails.
    by_group = {}
    for c, r in zip(parallel + serial, results):
        by_group.setdefault(c[0], []).append(r)
    for group, rs in sorted(by_group.items()):
        if all(r is None for r in rs):
            print("FAIL group %s: all %d of its cases were skipped, none ran" % (group, len(rs)))
            failed += 1
    if VERBOSE:
        print("(%d selected, %.1f s)" % (len(selected), time.monotonic() - t_start))
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

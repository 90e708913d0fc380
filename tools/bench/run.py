#!/usr/bin/python3
"""Benchmark of issue 6: nnapi-convert against the LibTorch floor program and
PyTorch's Python converter. Run from anywhere with Debian's python3:

    /usr/bin/python3 tools/bench/run.py [--rounds 11] [--batch-rounds 3]

It builds nnapi-convert (in build-bench/, -j2) and the floor program
(tools/bench/floor.cpp: load, freeze, save with LibTorch, nothing else),
writes the torchvision models once (tools/make_fixtures.py, into
build-bench/bench-models/), then measures by paired runs of its own: every
round runs each contender once, in a shuffled order, so load from other
processes on the machine hits all of them alike. Figures are medians over the
rounds; ratios are ratios of medians. Peak memory is the child's maximum RSS as
the kernel reports it to wait4() (what GNU time's %M prints).

  (a) one MobileNetV2 (NHWC) conversion, whole process: nnapi-convert vs the
      floor vs tools/bench/py_convert.py (one model in a fresh interpreter)
  (b) lower + serialize ms from nnapi-convert --timings (the same runs)
  (c) a batch of 8 models: nnapi-convert (--jobs 2 when it has that option)
      vs py_convert.py converting all 8 in one interpreter
  (d) peak RSS of (a)'s conversion vs floor peak + 1.2 x model file size

Needs only the Python standard library (the harness never imports torch).
Not a test: nothing here runs under ctest.
"""
import argparse
import datetime
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY = "/usr/bin/python3"  # Debian's, with python3-torch and python3-torchvision

BATCH = [  # (fixture directory, what it is)
    "tv-mobilenet_v2-nhwc",
    "tv-resnet18-nhwc",
    "tv-squeezenet1_1-nhwc",
    "tv-mnasnet0_5-nhwc",
    "tv-googlenet-nhwc",
    "tv-quant-mobilenet_v2-nhwc",
    "tv-quant-resnet18-nhwc",
    "tv-resnet18-nchw",  # "one more": resnet18 traced from an NCHW input
]
SINGLE = "tv-mobilenet_v2-nhwc"
INPUT = ["--input", "1x3x224x224", "--nhwc"]

GOALS = {
    "single_vs_floor": 1.10,
    "single_vs_python": 0.60,
    "lower_serialize_ms": 1.0,
    "batch_vs_python": 0.40,
    "rss_model_factor": 1.2,
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def sh(cmd, **kw):
    log("+ " + " ".join(cmd))
    subprocess.run(cmd, check=True, **kw)


# ----------------------------------------------------------------- building
def build(build_dir, jobs):
    if not shutil.which("cmake") or not shutil.which("g++"):
        sh([os.path.join(ROOT, "tools", "install-deps.sh")])
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        sh(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
            "-DNNAPI_CONVERT_BUILD_TESTS=OFF"], stdout=subprocess.DEVNULL)
    sh(["cmake", "--build", build_dir, f"-j{jobs}", "--target", "nnapi-convert"],
       stdout=subprocess.DEVNULL)
    converter = os.path.join(build_dir, "nnapi-convert")

    floor = os.path.join(build_dir, "bench", "floor")
    src = os.path.join(HERE, "floor.cpp")
    if not os.path.exists(floor) or os.path.getmtime(floor) < os.path.getmtime(src):
        os.makedirs(os.path.dirname(floor), exist_ok=True)
        # Linked like a CMake find_package(Torch) program (and nnapi-convert):
        # libtorch, libtorch_cpu and libc10 all loaded.
        sh(["g++", "-std=c++17", "-O2", "-o", floor, src,
            "-I/usr/include/torch/csrc/api/include",
            "-Wl,--no-as-needed", "-ltorch", "-ltorch_cpu", "-lc10", "-Wl,--as-needed"])
    return converter, floor


def make_models(models_dir):
    missing = [n for n in BATCH if not os.path.exists(os.path.join(models_dir, n, "model.pt"))]
    if missing:
        regex = "^(" + "|".join(re.escape(n) for n in missing) + ")$"
        sh([PY, os.path.join(ROOT, "tools", "make_fixtures.py"), models_dir, "--torchvision",
            "--only", regex], stdout=subprocess.DEVNULL)
    return {n: os.path.join(models_dir, n, "model.pt") for n in BATCH}


def has_jobs_option(converter):
    out = subprocess.run([converter, "--help"], capture_output=True, text=True)
    return re.search(r"--jobs\b", out.stdout + out.stderr) is not None


# ---------------------------------------------------------------- measuring
class Run:
    def __init__(self, wall, cpu, rss_kb, stderr):
        self.wall, self.cpu, self.rss_kb, self.stderr = wall, cpu, rss_kb, stderr


def run_once(cmd):
    """Wall seconds, user+sys seconds, peak RSS (KiB) of one process."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode(errors="replace")
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{text}")
    return Run(wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, text)


def paired(commands, rounds, seed, warmup=1):
    """commands: {name: argv}. Returns {name: [Run]} over `rounds` rounds,
    each round running every command once in a shuffled order."""
    rng = random.Random(seed)
    names = list(commands)
    for _ in range(warmup):  # page cache, first-touch of the binaries
        for n in names:
            run_once(commands[n])
    runs = {n: [] for n in names}
    for r in range(rounds):
        rng.shuffle(names)
        for n in names:
            runs[n].append(run_once(commands[n]))
        log(f"  round {r + 1}/{rounds}: " +
            ", ".join(f"{n} {runs[n][-1].wall:.2f}s" for n in sorted(names)))
    return runs


def med(xs):
    return statistics.median(xs)


def timings(stderr):
    """All `timings (ms): k v, ...` lines of nnapi-convert's --timings."""
    out = []
    for line in stderr.splitlines():
        m = re.search(r"timings \(ms\): (.*)", line)
        if m:
            out.append({k: float(v) for k, v in
                        (kv.strip().split(" ", 1) for kv in m.group(1).split(","))})
    return out


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_head():
    """HEAD, plus "+changes" when src/, include/ or CMakeLists.txt differ from it."""
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "src",
                                "include", "CMakeLists.txt"],
                               capture_output=True, text=True).stdout.strip()
        return head + (" + uncommitted changes" if dirty else "")
    except OSError:
        return "?"


# -------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=11, help="paired rounds for (a), (b), (d)")
    ap.add_argument("--batch-rounds", type=int, default=3, help="paired rounds for (c)")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build-bench"))
    ap.add_argument("--build-jobs", type=int, default=2)
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument("--json", help="also write all figures here")
    a = ap.parse_args()

    if a.skip_build:
        converter = os.path.join(a.build_dir, "nnapi-convert")
        floor = os.path.join(a.build_dir, "bench", "floor")
    else:
        converter, floor = build(a.build_dir, a.build_jobs)
    models = make_models(os.path.join(a.build_dir, "bench-models"))
    jobs = has_jobs_option(converter)
    out = tempfile.mkdtemp(prefix="nnapi-bench-")
    py_convert = os.path.join(HERE, "py_convert.py")
    load_before = os.getloadavg()
    t_start = time.perf_counter()

    # (a), (b), (d): one MobileNetV2 NHWC conversion
    model = models[SINGLE]
    log(f"(a) one conversion of {SINGLE}, {a.rounds} paired rounds")
    single = paired({
        "nnapi-convert": [converter, model, *INPUT, "-o", os.path.join(out, "a.nnapi.pt"),
                          "--timings"],
        "floor": [floor, model, os.path.join(out, "a.frozen.pt")],
        "python": [PY, py_convert, model, "--nhwc", "--timings", "--out-dir",
                   os.path.join(out, "py-a")],
    }, a.rounds, a.seed)

    # (c): the batch of 8
    batch_models = [models[n] for n in BATCH]
    # The models are all called model.pt: a manifest gives each its own output.
    manifest = os.path.join(out, "batch-manifest.json")
    with open(manifest, "w") as f:
        json.dump([{"model": models[n], "output": os.path.join(out, "batch", n + ".nnapi.pt")}
                   for n in BATCH], f)
    nn_batch = [converter, "--manifest", manifest, *INPUT]
    if jobs:
        nn_batch += ["--jobs", "2"]
    log(f"(c) batch of {len(batch_models)} models, {a.batch_rounds} paired rounds, "
        f"nnapi-convert {'--jobs 2' if jobs else 'sequential (no --jobs option)'}")
    batch = paired({
        "nnapi-convert": nn_batch,
        "python": [PY, py_convert, *batch_models, "--nhwc", "--out-dir",
                   os.path.join(out, "py-batch")],
    }, a.batch_rounds, a.seed + 1)
    # (d) also for every model of the batch: one run each, peak RSS only
    log("(d) peak RSS of every batch model, nnapi-convert vs floor")
    mem = {}
    for n in BATCH:
        nn = run_once([converter, models[n], *INPUT, "-o", os.path.join(out, "m.nnapi.pt"), "-q"])
        fl = run_once([floor, models[n], os.path.join(out, "m.frozen.pt")])
        mem[n] = (os.path.getsize(models[n]) / 2**20, nn.rss_kb / 1024, fl.rss_kb / 1024)
    elapsed = time.perf_counter() - t_start
    load_after = os.getloadavg()

    # ---------------------------------------------------------------- figures
    w = {n: med([r.wall for r in rs]) for n, rs in single.items()}
    c = {n: med([r.cpu for r in rs]) for n, rs in single.items()}
    m = {n: med([r.rss_kb for r in rs]) / 1024 for n, rs in single.items()}
    nt = [timings(r.stderr)[0] for r in single["nnapi-convert"]]
    phase = {k: med([t[k] for t in nt]) for k in nt[0]}
    lower_ser = med([t["lower"] + t["serialize"] for t in nt])
    pyt = []
    for r in single["python"]:
        mm = re.search(r"serialize_model ([0-9.]+)", r.stderr)
        if mm:
            pyt.append(float(mm.group(1)))
    py_ser = med(pyt) if pyt else float("nan")
    bw = {n: med([r.wall for r in rs]) for n, rs in batch.items()}
    bc = {n: med([r.cpu for r in rs]) for n, rs in batch.items()}
    size_mb = os.path.getsize(model) / 2**20
    rss_limit = m["floor"] + GOALS["rss_model_factor"] * size_mb

    r_floor = w["nnapi-convert"] / w["floor"]
    r_py = w["nnapi-convert"] / w["python"]
    r_batch = bw["nnapi-convert"] / bw["python"]
    r_floor_cpu = c["nnapi-convert"] / c["floor"]
    r_py_cpu = c["nnapi-convert"] / c["python"]
    r_batch_cpu = bc["nnapi-convert"] / bc["python"]
    ok = lambda b: "PASS" if b else "MISS"  # noqa: E731
    goals = [
        ("one MobileNetV2 NHWC conversion / floor program (wall)",
         f"{r_floor:.2f}x", f"<= {GOALS['single_vs_floor']:.2f}x",
         ok(r_floor <= GOALS["single_vs_floor"])),
        ("one MobileNetV2 NHWC conversion / Python converter (wall)",
         f"{r_py:.2f}x", f"<= {GOALS['single_vs_python']:.2f}x",
         ok(r_py <= GOALS["single_vs_python"])),
        ("lower + serialize (--timings, median)",
         f"{lower_ser:.3f} ms", f"< {GOALS['lower_serialize_ms']:.0f} ms",
         ok(lower_ser < GOALS["lower_serialize_ms"])),
        (f"batch of {len(BATCH)} ({'--jobs 2' if jobs else 'sequential: no --jobs'})"
         " / Python, one interpreter (wall)",
         f"{r_batch:.2f}x", f"<= {GOALS['batch_vs_python']:.2f}x",
         ok(r_batch <= GOALS["batch_vs_python"])),
        ("peak RSS of one MobileNetV2 conversion",
         f"{m['nnapi-convert']:.1f} MiB", f"<= {rss_limit:.1f} MiB",
         ok(m["nnapi-convert"] <= rss_limit)),
        ("peak RSS, every model of the batch (one run each)",
         f"{sum(nn <= fl + GOALS['rss_model_factor'] * sz for sz, nn, fl in mem.values())}"
         f"/{len(mem)} within", "all", ok(all(nn <= fl + GOALS["rss_model_factor"] * sz
                                             for sz, nn, fl in mem.values()))),
    ]

    now = datetime.datetime.now().astimezone()
    lines = []
    lines.append(f"date {now:%Y-%m-%d %H:%M %Z}, {os.cpu_count()} CPUs ({cpu_model()}), "
                 f"{platform.system()} {platform.release()}, nnapi-convert at {git_head()}")
    lines.append(f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; "
                 f"{a.rounds} rounds (a), {a.batch_rounds} rounds (c); "
                 f"measuring took {elapsed:.0f} s")
    lines.append("")
    lines.append(f"(a) one {SINGLE} conversion, whole process (medians)")
    lines.append(f"  {'':16} {'wall s':>8} {'user+sys s':>11} {'peak RSS MiB':>13}")
    for n in ("nnapi-convert", "floor", "python"):
        lines.append(f"  {n:16} {w[n]:8.3f} {c[n]:11.3f} {m[n]:13.1f}")
    lines.append(f"  ratios: wall {r_floor:.2f}x floor, {r_py:.2f}x python; "
                 f"user+sys {r_floor_cpu:.2f}x floor, {r_py_cpu:.2f}x python")
    lines.append(f"  nnapi-convert --timings (ms): " +
                 ", ".join(f"{k} {v:.3f}" for k, v in phase.items()))
    lines.append(f"(b) lower + serialize: {lower_ser:.3f} ms "
                 f"(Python's _NnapiSerializer.serialize_model: {py_ser:.1f} ms)")
    lines.append(f"(c) batch of {len(BATCH)}: " + " ".join(BATCH))
    lines.append(f"  {'':16} {'wall s':>8} {'user+sys s':>11}")
    for n in ("nnapi-convert", "python"):
        lines.append(f"  {n:16} {bw[n]:8.3f} {bc[n]:11.3f}")
    lines.append(f"  ratio: wall {r_batch:.2f}x, user+sys {r_batch_cpu:.2f}x")
    if not jobs:
        lines.append("  nnapi-convert has no --jobs option: the batch ran sequentially")
    lines.append(f"(d) model file {size_mb:.1f} MiB; limit = floor peak {m['floor']:.1f} + "
                 f"1.2 x {size_mb:.1f} = {rss_limit:.1f} MiB")
    lines.append(f"  {'every model':28} {'file MiB':>8} {'nnapi-convert':>13} {'floor':>7} "
                 f"{'limit':>7}  (peak RSS MiB)")
    for n, (sz, nn, fl) in mem.items():
        lim = fl + GOALS["rss_model_factor"] * sz
        lines.append(f"  {n:28} {sz:8.1f} {nn:13.1f} {fl:7.1f} {lim:7.1f}  "
                     f"{'PASS' if nn <= lim else 'MISS'} ({(nn - fl) / sz:+.2f} x file size)")
    lines.append("")
    lines.append(f"| goal | measured | target | |")
    lines.append(f"|---|---|---|---|")
    for g in goals:
        lines.append(f"| {g[0]} | {g[1]} | {g[2]} | {g[3]} |")
    print("\n".join(lines))

    if a.json:
        with open(a.json, "w") as f:
            json.dump({
                "date": now.isoformat(), "cpus": os.cpu_count(), "cpu_model": cpu_model(),
                "commit": git_head(), "load_before": load_before, "load_after": load_after,
                "jobs_option": jobs,
                "single": {n: [vars(r) | {"stderr": None} for r in rs]
                           for n, rs in single.items()},
                "batch": {n: [vars(r) | {"stderr": None} for r in rs]
                          for n, rs in batch.items()},
                "nnapi_phase_ms": phase, "lower_serialize_ms": lower_ser,
                "python_serialize_model_ms": py_ser, "model_mib": size_mb,
                "goals": goals, "memory": mem,
            }, f, indent=1)
    shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

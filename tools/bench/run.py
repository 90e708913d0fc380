#!/usr/bin/python3
"""Benchmark of issues 6 and 24: nnapi-convert against LibTorch floor programs
and PyTorch's Python converter. Run from anywhere with Debian's python3:

    /usr/bin/python3 tools/bench/run.py [--rounds 11] [--batch-rounds 5]
                                        [--vit-rounds 5] [--no-vit]

It builds nnapi-convert (in build-bench/, -j2) and the floor programs
(tools/bench/floor.cpp: load, freeze, save with LibTorch, nothing else, and
with --save-only Module::save alone; tools/bench/floor_batch.cpp: load,
freeze, save of many models on J threads of one process), writes the
torchvision models once (tools/make_fixtures.py, into
build-bench/bench-models/; ViT-B/16 with tools/model_zoo.py, into
build-bench/zoo-models/), then measures by paired runs of its own: every
round runs each contender once, in a shuffled order, so load from other
processes on the machine hits all of them alike. Figures are medians over the
rounds; ratios are ratios of medians. Peak memory is the child's maximum RSS as
the kernel reports it to wait4() (what GNU time's %M prints).

  (a) one MobileNetV2 (NHWC) conversion, whole process: nnapi-convert vs the
      floor vs tools/bench/py_convert.py (one model in a fresh interpreter)
  (b) lower + serialize + validate ms from nnapi-convert --timings (the
      converter's own phases between load and write): MobileNetV2 (the runs
      of (a)) and ResNet18 NHWC (runs of its own)
  (c) the write phase: nnapi-convert --timings' write ms of ViT-B/16 (346 MB
      of weights: the module built, written, fsynced, renamed into place, its
      directory fsynced) vs floor --save-only --durable: Module::save of the
      module it wrote (the same bytes) followed by the same fsyncs (the goal:
      the same durability), paired; also vs the save without fsyncs; and the
      whole ViT conversion vs the floor
  (d) a batch of 8 models: nnapi-convert --jobs 2 vs floor_batch on 2 threads
      (the parallel floor; given the models largest file first, the order
      nnapi-convert hands them out in; the goal) and floor_batch --durable
      (each save fsynced with its directory, as nnapi-convert's outputs are)
      vs py_convert.py converting all 8 in one interpreter; the spread is
      that of the rounds' paired ratios
  (e) peak RSS of (a)'s conversion vs floor peak + 1.2 x model file size

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
RESNET = "tv-resnet18-nhwc"
VIT = "vit_b_16-nhwc"  # tools/model_zoo.py's case name
INPUT = ["--input", "1x3x224x224", "--nhwc"]

GOALS = {
    "single_vs_floor": 1.05,  # issue 24: nothing else got slower
    "single_vs_python": 0.60,
    "lower_serialize_ms": 1.0,  # MobileNetV2
    "lower_serialize_resnet_ms": 5.0,
    "write_vs_save": 1.10,
    "batch_vs_floor": 1.05,
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

    floors = []
    for name in ("floor", "floor_batch"):
        exe = os.path.join(build_dir, "bench", name)
        src = os.path.join(HERE, name + ".cpp")
        newest = max(os.path.getmtime(p) for p in (src, os.path.join(HERE, "durable.h")))
        if not os.path.exists(exe) or os.path.getmtime(exe) < newest:
            os.makedirs(os.path.dirname(exe), exist_ok=True)
            # Linked like a CMake find_package(Torch) program (and
            # nnapi-convert): libtorch, libtorch_cpu and libc10 all loaded.
            sh(["g++", "-std=c++17", "-O2", "-o", exe, src,
                "-I/usr/include/torch/csrc/api/include", "-pthread",
                "-Wl,--no-as-needed", "-ltorch", "-ltorch_cpu", "-lc10", "-Wl,--as-needed"])
        floors.append(exe)
    return converter, floors[0], floors[1]


def make_models(models_dir):
    missing = [n for n in BATCH if not os.path.exists(os.path.join(models_dir, n, "model.pt"))]
    if missing:
        regex = "^(" + "|".join(re.escape(n) for n in missing) + ")$"
        sh([PY, os.path.join(ROOT, "tools", "make_fixtures.py"), models_dir, "--torchvision",
            "--only", regex], stdout=subprocess.DEVNULL)
    return {n: os.path.join(models_dir, n, "model.pt") for n in BATCH}


def make_vit(zoo_dir):
    """ViT-B/16 (torchvision's own initialisation), traced once (minutes)."""
    path = os.path.join(zoo_dir, VIT, "model.pt")
    if not os.path.exists(path):
        sh([PY, os.path.join(ROOT, "tools", "model_zoo.py"), "make", zoo_dir, "--transformers",
            "--only", f"^{re.escape(VIT)}$"], stdout=subprocess.DEVNULL)
    return path


def has_jobs_option(converter):
    out = subprocess.run([converter, "--help"], capture_output=True, text=True)
    return re.search(r"--jobs\b", out.stdout + out.stderr) is not None


# ---------------------------------------------------------------- measuring
class Run:
    def __init__(self, wall, cpu, rss_kb, stderr, stdout):
        self.wall, self.cpu, self.rss_kb = wall, cpu, rss_kb
        self.stderr, self.stdout = stderr, stdout


def run_once(cmd):
    """Wall seconds, user+sys seconds, peak RSS (KiB) of one process."""
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        out.seek(0)
        text = err.read().decode(errors="replace")
        stdout = out.read().decode(errors="replace")
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{text}")
    return Run(wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, text, stdout)


def synced_run(cmd):
    """run_once after sync(): the dirty pages an earlier run left (a floor's
    save never waits for the disk) are written first, so that nnapi-convert's
    fsync waits for its own file only, and no run's writes land on another."""
    os.sync()
    return run_once(cmd)


def paired(commands, rounds, seed, warmup=1):
    """commands: {name: argv}. Returns {name: [Run]} over `rounds` rounds,
    each round running every command once in a shuffled order."""
    rng = random.Random(seed)
    names = list(commands)
    for _ in range(warmup):  # page cache, first-touch of the binaries
        for n in names:
            synced_run(commands[n])
    runs = {n: [] for n in names}
    for r in range(rounds):
        rng.shuffle(names)
        for n in names:
            runs[n].append(synced_run(commands[n]))
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


def own_phases(t):
    """lower + serialize (+ validate, where --timings has the validator's
    phase): nnapi-convert's own work between loading and writing, ms."""
    return t["lower"] + t["serialize"] + t.get("validate", 0.0)


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
    ap.add_argument("--rounds", type=int, default=11, help="paired rounds for (a), (b), (e)")
    ap.add_argument("--batch-rounds", type=int, default=5, help="paired rounds for (d)")
    ap.add_argument("--vit-rounds", type=int, default=5, help="paired rounds for (c)")
    ap.add_argument("--no-vit", action="store_true", help="skip (c): no ViT-B/16")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build-bench"))
    ap.add_argument("--build-jobs", type=int, default=2)
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument("--json", help="also write all figures here")
    a = ap.parse_args()

    if a.skip_build:
        converter = os.path.join(a.build_dir, "nnapi-convert")
        floor = os.path.join(a.build_dir, "bench", "floor")
        floor_batch = os.path.join(a.build_dir, "bench", "floor_batch")
    else:
        converter, floor, floor_batch = build(a.build_dir, a.build_jobs)
    models = make_models(os.path.join(a.build_dir, "bench-models"))
    vit = None if a.no_vit else make_vit(os.path.join(a.build_dir, "zoo-models"))
    jobs = has_jobs_option(converter)
    out = tempfile.mkdtemp(prefix="nnapi-bench-", dir=a.build_dir)  # the disk of the build
    py_convert = os.path.join(HERE, "py_convert.py")
    load_before = os.getloadavg()
    t_start = time.perf_counter()

    # (a), (b), (e): one MobileNetV2 NHWC conversion
    model = models[SINGLE]
    log(f"(a) one conversion of {SINGLE}, {a.rounds} paired rounds")
    single = paired({
        "nnapi-convert": [converter, model, *INPUT, "-o", os.path.join(out, "a.nnapi.pt"),
                          "--timings"],
        "floor": [floor, model, os.path.join(out, "a.frozen.pt")],
        "python": [PY, py_convert, model, "--nhwc", "--timings", "--out-dir",
                   os.path.join(out, "py-a")],
    }, a.rounds, a.seed)
    log(f"(b) lower + serialize of {RESNET}, {a.rounds} rounds")
    resnet = paired({"nnapi-convert": [converter, models[RESNET], *INPUT, "-o",
                                       os.path.join(out, "b.nnapi.pt"), "--timings"]},
                    a.rounds, a.seed + 2)["nnapi-convert"]

    # (c): the write phase of ViT-B/16 against Module::save of the same bytes
    vit_runs = None
    if vit:
        log(f"(c) ViT-B/16: write vs Module::save, {a.vit_rounds} paired rounds")
        vit_out = os.path.join(out, "vit.nnapi.pt")
        vit_runs = paired({
            "nnapi-convert": [converter, vit, *INPUT, "-o", vit_out, "--timings"],
            # Saves what nnapi-convert wrote in the round before (the warm-up
            # round writes it first).
            "save": [floor, "--save-only", vit_out, os.path.join(out, "vit.saved.pt")],
            # The same with nnapi-convert's durability: fsync of file and directory.
            "durable save": [floor, "--save-only", "--durable", vit_out,
                             os.path.join(out, "vit.durable.pt")],
            "floor": [floor, vit, os.path.join(out, "vit.frozen.pt")],
        }, a.vit_rounds, a.seed + 3)

    # (d): the batch of 8
    batch_models = [models[n] for n in BATCH]
    # The models are all called model.pt: a manifest gives each its own output.
    manifest = os.path.join(out, "batch-manifest.json")
    with open(manifest, "w") as f:
        json.dump([{"model": models[n], "output": os.path.join(out, "batch", n + ".nnapi.pt")}
                   for n in BATCH], f)
    nn_batch = [converter, "--manifest", manifest, *INPUT]
    if jobs:
        nn_batch += ["--jobs", "2"]
    # The parallel floor takes the models in nnapi-convert's order for 2
    # workers: largest file first (schedule_order in batch.h).
    by_size = sorted(BATCH, key=lambda n: -os.path.getsize(models[n]))
    fl_batch = [floor_batch, "2"]
    fl_durable = [floor_batch, "--durable", "2"]
    for n in by_size:
        fl_batch += [models[n], os.path.join(out, "floor-batch-" + n + ".pt")]
        fl_durable += [models[n], os.path.join(out, "floor-durable-" + n + ".pt")]
    log(f"(d) batch of {len(batch_models)} models, {a.batch_rounds} paired rounds, "
        f"nnapi-convert {'--jobs 2' if jobs else 'sequential (no --jobs option)'}")
    batch = paired({
        "nnapi-convert": nn_batch,
        "floor": fl_batch,
        "durable floor": fl_durable,
        "python": [PY, py_convert, *batch_models, "--nhwc", "--out-dir",
                   os.path.join(out, "py-batch")],
    }, a.batch_rounds, a.seed + 1)
    # (e) also for every model of the batch: one run each, peak RSS only
    log("(e) peak RSS of every batch model, nnapi-convert vs floor")
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
    lower_ser = med([own_phases(t) for t in nt])
    rt = [timings(r.stderr)[0] for r in resnet]
    lower_ser_resnet = med([own_phases(t) for t in rt])
    phase_resnet = {k: med([t[k] for t in rt]) for k in rt[0]}
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
    r_batch = bw["nnapi-convert"] / bw["floor"]
    r_batch_durable = bw["nnapi-convert"] / bw["durable floor"]
    # Each round's nnapi-convert / floor: the spread of the batch ratio.
    batch_pairs = sorted(a.wall / b.wall for a, b in zip(batch["nnapi-convert"], batch["floor"]))
    r_batch_py = bw["nnapi-convert"] / bw["python"]
    r_floor_cpu = c["nnapi-convert"] / c["floor"]
    r_py_cpu = c["nnapi-convert"] / c["python"]
    r_batch_cpu = bc["nnapi-convert"] / bc["floor"]
    ok = lambda b: "PASS" if b else "MISS"  # noqa: E731
    goals = [
        ("one MobileNetV2 NHWC conversion / floor program (wall)",
         f"{r_floor:.2f}x", f"<= {GOALS['single_vs_floor']:.2f}x",
         ok(r_floor <= GOALS["single_vs_floor"])),
        ("one MobileNetV2 NHWC conversion / Python converter (wall)",
         f"{r_py:.2f}x", f"<= {GOALS['single_vs_python']:.2f}x",
         ok(r_py <= GOALS["single_vs_python"])),
        ("lower + serialize + validate, MobileNetV2 NHWC (--timings, median)",
         f"{lower_ser:.3f} ms", f"< {GOALS['lower_serialize_ms']:.0f} ms",
         ok(lower_ser < GOALS["lower_serialize_ms"])),
        ("lower + serialize + validate, ResNet18 NHWC (--timings, median)",
         f"{lower_ser_resnet:.3f} ms", f"< {GOALS['lower_serialize_resnet_ms']:.0f} ms",
         ok(lower_ser_resnet < GOALS["lower_serialize_resnet_ms"])),
    ]
    vit_lines = []
    if vit_runs:
        vt = [timings(r.stderr)[0] for r in vit_runs["nnapi-convert"]]
        vphase = {k: med([t[k] for t in vt]) for k in vt[0]}
        writes = [t["write"] for t in vt]
        def save_times(runs):
            return [float(re.search(r"save ([0-9.]+) ms", r.stdout).group(1)) for r in runs]
        saves = save_times(vit_runs["save"])
        save_ms = med(saves)
        durables = save_times(vit_runs["durable save"])
        durable_ms = med(durables)
        # Ratio of medians; every save is of the bytes the converter wrote,
        # with the same fsyncs (of the file and of its directory).
        r_write = vphase["write"] / durable_ms
        vw = {n: med([r.wall for r in rs]) for n, rs in vit_runs.items()}
        goals.append(("write phase / Module::save + fsyncs of the same bytes, ViT-B/16 (346 MB)",
                      f"{r_write:.2f}x ({vphase['write']:.0f} / {durable_ms:.0f} ms)",
                      f"<= {GOALS['write_vs_save']:.2f}x", ok(r_write <= GOALS["write_vs_save"])))
        vit_lines = [
            f"(c) ViT-B/16 ({os.path.getsize(vit) / 2**20:.0f} MiB): nnapi-convert --timings "
            "(ms): " + ", ".join(f"{k} {v:.1f}" for k, v in vphase.items()),
            f"  Module::save + fsync of file and directory (floor --save-only --durable): "
            f"{durable_ms:.1f} ms (rounds: {', '.join(f'{x:.0f}' for x in durables)}; write: "
            f"{', '.join(f'{x:.0f}' for x in writes)})",
            f"  Module::save alone, no fsync (floor --save-only): {save_ms:.1f} ms (rounds: "
            f"{', '.join(f'{x:.0f}' for x in saves)}); write / save without fsync "
            f"{vphase['write'] / save_ms:.2f}x",
            f"  whole conversion {vw['nnapi-convert']:.3f} s wall vs floor (load + freeze + "
            f"save) {vw['floor']:.3f} s: {vw['nnapi-convert'] / vw['floor']:.2f}x",
        ]
    goals += [
        (f"batch of {len(BATCH)} ({'--jobs 2' if jobs else 'sequential: no --jobs'})"
         " / parallel floor, 2 threads (wall)",
         f"{r_batch:.2f}x (rounds {batch_pairs[0]:.2f}-{batch_pairs[-1]:.2f}x)", f"<= {GOALS['batch_vs_floor']:.2f}x",
         ok(r_batch <= GOALS["batch_vs_floor"])),
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
                 f"{a.rounds} rounds (a, b), {a.vit_rounds if vit else 0} rounds (c), "
                 f"{a.batch_rounds} rounds (d); measuring took {elapsed:.0f} s")
    lines.append("")
    lines.append(f"(a) one {SINGLE} conversion, whole process (medians)")
    lines.append(f"  {'':16} {'wall s':>8} {'user+sys s':>11} {'peak RSS MiB':>13}")
    for n in ("nnapi-convert", "floor", "python"):
        lines.append(f"  {n:16} {w[n]:8.3f} {c[n]:11.3f} {m[n]:13.1f}")
    lines.append(f"  ratios: wall {r_floor:.2f}x floor, {r_py:.2f}x python; "
                 f"user+sys {r_floor_cpu:.2f}x floor, {r_py_cpu:.2f}x python")
    lines.append("  nnapi-convert --timings (ms): " +
                 ", ".join(f"{k} {v:.3f}" for k, v in phase.items()))
    lines.append(f"(b) lower + serialize + validate: {SINGLE} {lower_ser:.3f} ms "
                 f"(Python's _NnapiSerializer.serialize_model: {py_ser:.1f} ms); "
                 f"{RESNET} {lower_ser_resnet:.3f} ms")
    lines.append(f"  {RESNET} --timings (ms): " +
                 ", ".join(f"{k} {v:.3f}" for k, v in phase_resnet.items()))
    lines += vit_lines or ["(c) skipped (--no-vit)"]
    lines.append(f"(d) batch of {len(BATCH)}: " + " ".join(BATCH))
    lines.append(f"  {'':16} {'wall s':>8} {'user+sys s':>11}")
    for n in ("nnapi-convert", "floor", "durable floor", "python"):
        lines.append(f"  {n:16} {bw[n]:8.3f} {bc[n]:11.3f}")
    lines.append(f"  ratios: wall {r_batch:.2f}x the parallel floor (user+sys {r_batch_cpu:.2f}x; "
                 f"rounds' paired ratios {batch_pairs[0]:.2f}-{batch_pairs[-1]:.2f}x), "
                 f"{r_batch_durable:.2f}x the durable parallel floor, {r_batch_py:.2f}x python")
    if not jobs:
        lines.append("  nnapi-convert has no --jobs option: the batch ran sequentially")
    lines.append(f"(e) model file {size_mb:.1f} MiB; limit = floor peak {m['floor']:.1f} + "
                 f"1.2 x {size_mb:.1f} = {rss_limit:.1f} MiB")
    lines.append(f"  {'every model':28} {'file MiB':>8} {'nnapi-convert':>13} {'floor':>7} "
                 f"{'limit':>7}  (peak RSS MiB)")
    for n, (sz, nn, fl) in mem.items():
        lim = fl + GOALS["rss_model_factor"] * sz
        lines.append(f"  {n:28} {sz:8.1f} {nn:13.1f} {fl:7.1f} {lim:7.1f}  "
                     f"{'PASS' if nn <= lim else 'MISS'} ({(nn - fl) / sz:+.2f} x file size)")
    lines.append("")
    lines.append("| goal | measured | target | |")
    lines.append("|---|---|---|---|")
    for g in goals:
        lines.append(f"| {g[0]} | {g[1]} | {g[2]} | {g[3]} |")
    print("\n".join(lines))

    if a.json:
        runs = lambda d: {n: [vars(r) | {"stderr": None, "stdout": None}  # noqa: E731
                              for r in rs] for n, rs in d.items()}
        with open(a.json, "w") as f:
            json.dump({
                "date": now.isoformat(), "cpus": os.cpu_count(), "cpu_model": cpu_model(),
                "commit": git_head(), "load_before": load_before, "load_after": load_after,
                "jobs_option": jobs, "single": runs(single), "batch": runs(batch),
                "vit": runs(vit_runs) if vit_runs else None,
                "nnapi_phase_ms": phase, "lower_serialize_ms": lower_ser,
                "lower_serialize_resnet_ms": lower_ser_resnet,
                "python_serialize_model_ms": py_ser, "model_mib": size_mb,
                "goals": goals, "memory": mem,
            }, f, indent=1)
    shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

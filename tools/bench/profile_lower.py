#!/usr/bin/python3
"""Where nnapi-convert's lowering spends its time (issue 24), per step and per
node kind: runs one conversion RUNS times with NNAPI_CONVERT_PROFILE_LOWER set
(the converter then prints its own table to stderr, src/core/lower_profile.cpp)
and prints the median of each row over the runs.

    /usr/bin/python3 tools/bench/profile_lower.py [--runs 11] [--binary B] \\
        MODEL.pt -- --input 1x3x224x224 --nhwc

Everything after `--` goes to nnapi-convert (the output goes to a temporary
directory). Step rows give wall and thread CPU time (CPU time leaves out the
time other processes had the core: the figure to compare on a busy machine)
and minor page faults; kind rows give wall time, node count and time per
node. Needs only the Python standard library. Not a test.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

STEP = re.compile(r"^\s+step (.+?)\s+([\d.]+) ms \(CPU ([\d.]+) ms\)\s+(\d+) page faults$")
KIND = re.compile(r"^\s+kind (\S+)\s+([\d.]+) ms\s+(\d+) nodes")
TOTAL = re.compile(r"lower ([\d.]+) ms \(CPU ([\d.]+) ms\)$")
TIMINGS = re.compile(r"lower ([\d.]+), serialize ([\d.]+), validate ([\d.]+)")


def main():
    argv = sys.argv[1:]
    rest = []
    if "--" in argv:
        rest = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "nnapi-convert"))
    args = ap.parse_args(argv)
    steps, kinds, totals, phases = {}, {}, [], []
    env = dict(os.environ, NNAPI_CONVERT_PROFILE_LOWER="1")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.nnapi.pt")
        for _ in range(args.runs):
            p = subprocess.run([args.binary, args.model, *rest, "--timings", "-o", out],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
            if p.returncode != 0:
                sys.exit("nnapi-convert failed:\n" + p.stderr)
            for line in p.stderr.splitlines():
                if m := STEP.match(line):
                    steps.setdefault(m[1], []).append((float(m[2]), float(m[3]), int(m[4])))
                elif m := KIND.match(line):
                    kinds.setdefault(m[1], []).append((float(m[2]), int(m[3])))
                elif "profile:" in line and (m := TOTAL.search(line)):
                    totals.append((float(m[1]), float(m[2])))
                elif m := TIMINGS.search(line):
                    phases.append(tuple(float(x) for x in m.groups()))
    med = statistics.median
    print(f"{args.model}: medians of {args.runs} runs")
    print(f"  lower {med(t[0] for t in totals):.3f} ms (CPU {med(t[1] for t in totals):.3f} ms); "
          f"--timings lower {med(p[0] for p in phases):.3f}, serialize "
          f"{med(p[1] for p in phases):.3f}, validate {med(p[2] for p in phases):.3f}, sum "
          f"{med(sum(p) for p in phases):.3f} ms")
    for name, rows in steps.items():
        print(f"  step {name:28s} {med(r[0] for r in rows):8.3f} ms (CPU "
              f"{med(r[1] for r in rows):.3f} ms) {med(r[2] for r in rows):5.0f} page faults")
    for name, rows in sorted(kinds.items(), key=lambda kv: -med(r[0] for r in kv[1])):
        ms, n = med(r[0] for r in rows), rows[0][1]
        print(f"  kind {name:28s} {ms:8.3f} ms {n:5d} nodes {1000 * ms / n:8.2f} us/node")


if __name__ == "__main__":
    main()

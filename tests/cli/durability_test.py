"""Outputs reach the disk in order (src/util/output_file.cpp), seen in the
system calls of real conversions under strace (-f, every process and thread;
-y, each descriptor shown with its file):

- each output's temporary is fsynced once, before it is renamed over the
  output;
- after the rename, the output's directory is opened and fsynced;
- in a batch (--jobs 2, where a worker hands its finished outputs to the
  parent, which makes them durable while the worker loads its next model),
  the same holds for every output, and a model is reported done (its
  --timings line) only after its output was renamed and its directory
  fsynced.

    durability_test.py BIN WORKDIR    (Debian's python3: it makes the models)
"""
import json
import os
import re
import shutil
import subprocess
import sys

import torch

CALL = re.compile(r"(\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+)")
UNFINISHED = re.compile(r"(\d+)\s+(\w+)\((.*)\s+<unfinished \.\.\.>$")
RESUMED = re.compile(r"(\d+)\s+<\.\.\. (\w+) resumed>(.*)\)\s+=\s+(-?\d+)")


def calls_of(trace):
    """[(start, end, name, args, ret)]: line numbers where each call started
    and returned (a call another thread interrupted is joined again)."""
    calls, pending = [], {}
    for i, line in enumerate(open(trace, errors="replace")):
        line = line.rstrip("\n")
        m = CALL.match(line)
        if m:
            calls.append((i, i, m.group(2), m.group(3), int(m.group(4))))
            continue
        m = UNFINISHED.match(line)
        if m:
            pending[(m.group(1), m.group(2))] = (i, m.group(3))
            continue
        m = RESUMED.match(line)
        if m and (m.group(1), m.group(2)) in pending:
            start, args = pending.pop((m.group(1), m.group(2)))
            calls.append((start, i, m.group(2), args + m.group(3), int(m.group(4))))
    return sorted(calls)


def fd_path(args):
    """The file of a call's first descriptor, as -y shows it: 3</a/b>."""
    m = re.match(r"\d+<(.*)>$", args.strip())
    return m.group(1) if m else None


def check_output(calls, out, problems, single):
    """Checks one output's steps; returns the line its directory's fsync ended."""
    d = os.path.dirname(out)
    renames = [c for c in calls if c[2].startswith("rename") and c[4] == 0
               and re.search(r'"%s\.tmp-\w+", .*"%s"' % (re.escape(out), re.escape(out)), c[3])]
    if len(renames) != 1:
        problems.append("%s: %d renames into place" % (out, len(renames)))
        return None
    rename = renames[0]
    temp = re.match(r'(?:AT_FDCWD, )?"([^"]+)"', rename[3]).group(1)
    syncs = [c for c in calls if c[2] == "fsync" and fd_path(c[3]) == temp and c[4] == 0]
    if len(syncs) != 1:
        problems.append("%s: its temporary was fsynced %d times, not once" % (out, len(syncs)))
    elif syncs[0][1] >= rename[0]:
        problems.append("%s: its temporary was fsynced after the rename" % out)
    dir_syncs = [c for c in calls if c[2] == "fsync" and fd_path(c[3]) == d and c[4] == 0
                 and c[0] > rename[1]]
    if not dir_syncs:
        problems.append("%s: its directory was not fsynced after the rename" % out)
        return None
    if single and len(dir_syncs) != 1:
        problems.append("%s: its directory was fsynced %d times" % (out, len(dir_syncs)))
    return dir_syncs[0][1]


def strace(binary, trace, args):
    subprocess.run(["strace", "-f", "-qq", "-y", "-s", "400", "-o", trace, "-e",
                    "trace=openat,fsync,rename,renameat,renameat2,write", binary, *args],
                   check=True)


def main():
    binary, work = sys.argv[1], sys.argv[2]
    if shutil.which("strace") is None:
        sys.exit("strace is missing: tools/install-deps.sh installs it")
    out_dir = os.path.join(work, "durable-out")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    problems = []

    # One model.
    model = os.path.join(work, "durable_linear.pt")
    lin = torch.nn.Linear(512, 512).eval()  # 1 MiB of weights
    torch.jit.trace(lin, torch.zeros(1, 512)).save(model)
    out = os.path.join(out_dir, "durable.nnapi.pt")
    trace = os.path.join(work, "durable.strace")
    strace(binary, trace, [model, "--input", "1x512", "-o", out, "-q"])
    calls = calls_of(trace)
    check_output(calls, out, problems, single=True)
    if not os.path.getsize(out) > 1 << 20:
        problems.append("the output is smaller than its weights")

    # A batch: more models than workers.
    models = []
    for k in range(4):
        m = os.path.join(work, "durable_batch%d.pt" % k)
        torch.jit.trace(torch.nn.Linear(256 + 64 * k, 256).eval(), torch.zeros(1, 256 + 64 * k)) \
            .save(m)
        models.append((m, "1x%d" % (256 + 64 * k)))
    batch_dir = os.path.join(out_dir, "batch")
    manifest = os.path.join(work, "durable_batch.json")
    with open(manifest, "w") as f:
        json.dump([{"model": m, "inputs": [spec],
                    "output": os.path.join(batch_dir, os.path.basename(m)[:-3] + ".nnapi.pt")}
                   for m, spec in models], f)
    os.makedirs(batch_dir)
    btrace = os.path.join(work, "durable_batch.strace")
    strace(binary, btrace, ["--manifest", manifest, "--jobs", "2", "--timings"])
    bcalls = calls_of(btrace)
    for m, _ in models:
        o = os.path.join(batch_dir, os.path.basename(m)[:-3] + ".nnapi.pt")
        synced = check_output(bcalls, o, problems, single=False)
        told = [c for c in bcalls if c[2] == "write" and fd_path(c[3].split(",")[0]) is not None
                and "%s: timings" % m in c[3]]
        if len(told) != 1:
            problems.append("%s: %d --timings lines" % (m, len(told)))
        elif synced is not None and told[0][0] < synced:
            problems.append("%s was reported done before its output was durable" % m)

    if problems:
        for t in (trace, btrace):
            print("\n".join(line.rstrip() for line in open(t, errors="replace")
                            if re.search(r"sync|rename|tmp-|O_DIRECTORY|timings", line)))
        sys.exit("durability: " + "; ".join(problems))
    print("durability: all passed")


if __name__ == "__main__":
    main()

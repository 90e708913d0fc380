"""Outputs reach the disk in order (src/util/output_file.cpp), seen in the
system calls of a real conversion under strace:

- the temporary is fsynced once, before it is renamed over the output;
- after the rename, the output's directory is opened and fsynced once.

    durability_test.py BIN WORKDIR    (Debian's python3: it makes the model)
"""
import os
import re
import shutil
import subprocess
import sys

import torch


def main():
    binary, work = sys.argv[1], sys.argv[2]
    if shutil.which("strace") is None:
        sys.exit("strace is missing: tools/install-deps.sh installs it")
    out_dir = os.path.join(work, "durable-out")
    os.makedirs(out_dir, exist_ok=True)
    model = os.path.join(work, "durable_linear.pt")
    lin = torch.nn.Linear(512, 512).eval()  # 1 MiB of weights
    torch.jit.trace(lin, torch.zeros(1, 512)).save(model)
    out = os.path.join(out_dir, "durable.nnapi.pt")
    trace = os.path.join(work, "durable.strace")
    subprocess.run(["strace", "-f", "-qq", "-o", trace, "-e",
                    "trace=openat,fsync,rename,renameat,renameat2",
                    binary, model, "--input", "1x512", "-o", out, "-q"], check=True)
    calls = []
    for line in open(trace):
        m = re.match(r"\d+\s+(\w+)\((.*)\)\s+=\s+(-?\d+)", line)
        if m:
            calls.append((m.group(1), m.group(2), int(m.group(3))))

    problems = []
    temp_fd = dir_fd = None
    step = {}
    for i, (name, args, ret) in enumerate(calls):
        if name == "openat" and ".tmp-" in args and "durable.nnapi.pt" in args and ret >= 0:
            temp_fd, step["open temp"] = ret, i
        elif name == "fsync" and temp_fd is not None and args == str(temp_fd) \
                and "rename" not in step:
            if "fsync temp" in step:
                problems.append("the temporary was fsynced twice")
            step["fsync temp"] = i
        elif name.startswith("rename") and "durable.nnapi.pt.tmp-" in args:
            step["rename"] = i
        elif name == "openat" and "rename" in step and "O_DIRECTORY" in args \
                and os.path.basename(out_dir) in args and ret >= 0:
            dir_fd, step["open dir"] = ret, i
        elif name == "fsync" and dir_fd is not None and args == str(dir_fd):
            if "fsync dir" in step:
                problems.append("the directory was fsynced twice")
            step["fsync dir"] = i
    order = ["open temp", "fsync temp", "rename", "open dir", "fsync dir"]
    for s in order:
        if s not in step:
            problems.append(f"no '{s}' step")
    seen = [step[s] for s in order if s in step]
    if seen != sorted(seen):
        problems.append("steps out of order: " + ", ".join(f"{s} at {step[s]}" for s in order
                                                           if s in step))
    if not os.path.getsize(out) > 1 << 20:
        problems.append("the output is smaller than its weights")
    if problems:
        print("\n".join(calls_line for calls_line in open(trace).read().splitlines()
                        if re.search(r"sync|rename|tmp-|O_DIRECTORY", calls_line)))
        sys.exit("durability: " + "; ".join(problems))
    print("durability: all passed")


if __name__ == "__main__":
    main()

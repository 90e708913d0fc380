"""Self-describing outputs (issue 37 item 2): every .nnapi.pt and .ptl carries
extra/nnapi_convert.json, which PyTorch's loaders leave alone; two runs write the same bytes;
--report records the outputs' SHA-256 (checked against hashlib); `inspect` prints the record;
with --quantize --quantized-io it holds the input and output scales and zero points (checked
against the NNAPI blob's input and output operands, as `inspect --json` reads them), and
--mean/--std when calibrated on images.

Usage: metadata_test.py BIN WORK
"""
import json
import os
import re
import subprocess
import sys
import zipfile

import torch
import torch.jit.mobile
import torchvision

sys.dont_write_bytecode = True  # no __pycache__ in the sources
from checks import check, finish, sha  # noqa: E402

bin_path, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
NAME = "nnapi_convert.json"




def run(*args):
    return subprocess.run([bin_path, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)


def extra(path):
    with zipfile.ZipFile(path) as z:
        names = [n for n in z.namelist() if n.endswith("/extra/" + NAME)]
        return json.loads(z.read(names[0])) if names else None


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.conv(x)).mean((2, 3))
        return self.fc(y)


torch.manual_seed(0)
src = os.path.join(work, "net.pt")
torch.jit.save(torch.jit.trace(Net().eval(), torch.randn(1, 3, 16, 16)), src)

# Two runs, same options: the same bytes (.pt and .ptl), each carrying the record.
outs = []
for k in (1, 2):
    o = os.path.join(work, f"run{k}.nnapi.pt")
    rep = os.path.join(work, f"run{k}.json")
    p = run(src, "--input", "1x3x16x16", "--nhwc", "--lite", "--fuse-activations", "-o", o,
            "--report", rep, "-q")
    check(p.returncode == 0, f"run {k} converts ({p.stderr.strip()})")
    outs.append((o, rep))
(a, rep_a), (b, _) = outs
check(sha(a) == sha(b), "two runs write byte-identical .nnapi.pt files")
check(sha(a[:-3] + ".ptl") == sha(b[:-3] + ".ptl"), "two runs write byte-identical .ptl files")

meta = extra(a)
version = run("--version").stdout.split()[1]
check(meta is not None, f"{NAME} is an extra file of the .nnapi.pt")
check(extra(a[:-3] + ".ptl") == meta, f"the .ptl carries the same {NAME}")
check(meta["converter"]["version"] == version, f"converter version {version} as --version says")
check(meta["converter"]["libtorch"] == torch.__version__.split("+")[0].split("a")[0],
      f"libtorch version {meta['converter']['libtorch']} (python3-torch {torch.__version__})")
check(meta["source"]["sha256"] == sha(src), "source SHA-256 is hashlib's of net.pt")
check(meta["inputs"] == [{"spec": "1x3x16x16", "dtype": "float32"}] and meta["options"]["nhwc"],
      f"inputs {meta['inputs']}")
check(meta["options"]["nhwc"] and meta["options"]["fuse_activations"]
      and meta["options"]["preference"] == "sustained-speed", f"options {meta['options']}")
check(meta["quantize"] is None, "no quantize record without --quantize")
with open(a, "rb") as f:
    raw = f.read()
check(b"\"time" not in raw and str(os.getpid()).encode() not in raw.split(NAME.encode())[-1],
      "no timestamp in the record")

# --report: the SHA-256 of what was written.
report = json.load(open(rep_a))["models"][0]
check(report.get("output_sha256") == sha(a), "--report's output_sha256 is hashlib's of the output")
check(report.get("lite_sha256") == sha(a[:-3] + ".ptl"), "--report's lite_sha256 likewise")

# PyTorch's loaders: torch.jit.load ignores it (and returns it when asked by name); the lite
# interpreter loads and runs the .ptl; the bytecode version is read as usual.
files = {NAME: ""}
m = torch.jit.load(a, _extra_files=files)
check(json.loads(files[NAME]) == meta, "torch.jit.load(_extra_files=...) returns the record")
x = torch.randn(1, 3, 16, 16)
plain = torch.jit.load(a)
lite = torch.jit.mobile._load_for_lite_interpreter(a[:-3] + ".ptl")
want = torch.jit.load(src)(x)
got_full, got_lite = plain(x), lite(x)
check(torch.allclose(got_full, want, atol=1e-5) and torch.equal(got_full, got_lite),
      "the .nnapi.pt and the .ptl load and run as before (host runtime) and match eager")
check(torch.jit.mobile._get_model_bytecode_version(a[:-3] + ".ptl") > 0,
      "_get_model_bytecode_version reads the .ptl")

# "nodes": the TorchScript node each NNAPI operation came from, as runs that cover the
# operations; Net's forward makes them from a convolution, relu, mean and linear only.
runs = meta.get("nodes", [[]])[0]
check(sum(r["operations"] for r in runs) == meta["nnapi"]["operation_count"]
      and {r["node"] for r in runs} <= {"aten::_convolution", "aten::conv2d", "aten::relu",
                                         "aten::mean", "aten::linear"}
      and all(re.search(r"\.py:\d+$", r["at"]) for r in runs),
      f"nodes: runs of Net's node kinds covering the operations, each with its place ({runs})")

# inspect prints it (text) and gives it (--json).
p = run("inspect", a)
check(p.returncode == 0 and "made by (nnapi_convert.json):" in p.stdout
      and meta["source"]["sha256"] in p.stdout, "inspect prints the record")
p = run("inspect", a, "--json")
check(p.returncode == 0 and json.loads(p.stdout).get("metadata") == meta,
      "inspect --json's metadata is the record")

# --quantize --quantized-io: the scales and zero points the app feeds, as the blob has them.
torch.save(torch.randn(16, 3, 16, 16), os.path.join(work, "calib.pt"))
q = os.path.join(work, "q.nnapi.pt")
p = run(src, "--input", "1x3x16x16", "--quantize", "uint8", "--calibration",
        os.path.join(work, "calib.pt"), "--quantized-io", "-o", q, "-q")
check(p.returncode == 0, f"--quantize --quantized-io converts ({p.stderr.strip()[-300:]})")
qm = extra(q) or {}
blob = json.loads(run("inspect", q, "--json").stdout)
ops = {o["index"]: o for o in blob["operands"]}
blob_in = [ops[i] for i in blob["inputs"]]
blob_out = [ops[i] for i in blob["outputs"]]


def same_quant(record, operands, dtype):
    """The record's scale (a double) is the blob's (a float32, as inspect prints it)."""
    return len(record) == len(operands) > 0 and all(
        r.get("zero_point") == o["zero_point"] and "scale" in r
        and abs(r["scale"] - o["scale"]) <= 1e-6 * o["scale"]
        and (dtype is None or r.get("dtype") == dtype) for r, o in zip(record, operands))


check(same_quant(qm.get("inputs", []), blob_in, "quint8"),
      f"input scale/zero point {qm.get('inputs')} == the blob's {blob_in}")
check(same_quant(qm.get("outputs", []), blob_out, None),
      f"output scale/zero point {qm.get('outputs')} == the blob's {blob_out}")
check((qm.get("quantize") or {}).get("quantized_io") is True, "quantize record")

# --mean/--std, calibrated on images.
imgs = os.path.join(work, "images")
os.makedirs(imgs, exist_ok=True)
g = torch.Generator().manual_seed(3)
for i in range(4):
    img = torch.randint(0, 256, (3, 16, 16), dtype=torch.uint8, generator=g)
    torchvision.io.write_png(img, os.path.join(imgs, f"{i}.png"))
qi = os.path.join(work, "qi.nnapi.pt")
p = run(src, "--input", "1x3x16x16", "--quantize", "uint8", "--calibration-dir", imgs,
        "--mean", "0.485,0.456,0.406", "--std", "0.229,0.224,0.225", "-o", qi, "-q")
check(p.returncode == 0, f"image calibration converts ({p.stderr.strip()[-300:]})")
qq = (extra(qi) or {}).get("quantize") or {}
check(qq.get("mean") == [0.485, 0.456, 0.406] and qq.get("std") == [0.229, 0.224, 0.225],
      f"--mean/--std recorded: {qq}")

# --float16 --float16-io --lite-bytecode-version: the options that change what the app feeds and
# which runtime reads the .ptl are in the record; without them, their defaults.
check(meta["options"].get("float16") is False and meta["options"].get("float16_io") is False
      and meta["options"].get("lite_bytecode_version") is None,
      f"float16/float16_io/lite_bytecode_version defaults in {meta['options']}")
h = os.path.join(work, "h.nnapi.pt")
p = run(src, "--input", "1x3x16x16", "--float16", "--float16-io", "--lite-bytecode-version", "6",
        "-o", h, "-q")
check(p.returncode == 0, f"--float16 --float16-io --lite-bytecode-version 6 converts "
      f"({p.stderr.strip()[-300:]})")
hm = (extra(h) or {}).get("options", {})
check(hm.get("float16") is True and hm.get("float16_io") is True
      and hm.get("lite_bytecode_version") == 6
      and torch.jit.mobile._get_model_bytecode_version(h[:-3] + ".ptl") == 6,
      f"the record says float16, float16_io and bytecode 6 as the .ptl is: {hm}")

finish("metadata")

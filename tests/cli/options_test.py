#!/usr/bin/env python3
"""Each option and report field of the README, checked by its effect (issue 25).

Usage: options_test.py BIN WORK (with libneuralnetworks.so, the host runtime,
on LD_LIBRARY_PATH). Every check looks at what the option changes in the
written module, the report or the process, never at the exit status alone:
- --preference and --relax-f32-to-f16: the module's compilation_preference
  (NeuralNetworks.h: PREFER_LOW_POWER 0, FAST_SINGLE_ANSWER 1,
  SUSTAINED_SPEED 2, the default) and relax_f32_to_f16;
- --return-shape: the output template `prepare` returns, whatever the
  run-time input's size;
- --int16-for-qint16: an int16 input becomes a QUANT16 operand (without it:
  exit 2 naming the option);
- --timings: one line of phase times;
- `convert` as an explicit command: the same module as without it;
- NNAPI_CONVERT_IN_PROCESS=1: the model is loaded in the main process (no
  worker process, while without it there is one);
- --manifest options: each entry's option takes effect in its output;
- --report: `output`, `verify.ok` and `verify.outputs[]` of a verified model,
  `unsupported[].first_node` of a refused one, `cpu_fallback` of a split one;
Prints "options: all passed" when every check passed.
"""
import json
import os
import shutil
import subprocess
import sys
import time

import torch
import torch.nn as nn
from torch.jit.mobile import _get_model_bytecode_version

sys.dont_write_bytecode = True  # importing cli_checks writes no __pycache__ into the sources
from cli_checks import BIN, WORK, check, finish, path, run  # noqa: E402

# Nothing a previous run wrote may pass a check.
for entry in os.listdir(WORK):
    if os.path.isdir(path(entry)):
        shutil.rmtree(path(entry))
    else:
        os.remove(path(entry))


def save(name, model, example):
    model.eval()
    with torch.no_grad():
        traced = torch.jit.trace(model, example, check_trace=False)
    traced.save(path(name))
    return path(name)


class ConvRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3)
        self.conv2 = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        return torch.relu(self.conv2(torch.relu(self.conv(x))))


class BesideInt16(nn.Module):
    """No NNAPI operation takes a TENSOR_QUANT16 operand the converter could
    feed it (the validator refuses such models), so the int16 input is only
    declared."""

    def forward(self, x, q):
        return torch.relu(x)


class TopK(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        values, indices = torch.sort(self.fc(x), 1, descending=True)  # no NNAPI lowering
        return values, indices


class Upsample(nn.Module):
    def forward(self, x):
        return nn.functional.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)


class Sorts(nn.Module):
    def forward(self, x):
        return torch.sort(x, 1)[0]


torch.manual_seed(0)
conv = save("conv.pt", ConvRelu(), torch.randn(1, 4, 9, 9))
int16 = path("int16.pt")
torch.jit.trace(BesideInt16().eval(),
                (torch.randn(2, 3), torch.zeros(2, 3, 4, dtype=torch.int16))).save(int16)
topk = save("topk.pt", TopK(), torch.randn(2, 8))
upsample = save("upsample.pt", Upsample(), torch.randn(1, 3, 4, 4))
sorts = save("sorts.pt", Sorts(), torch.randn(1, 5))


def module(p):
    return torch.jit.load(p)


# --- --preference, --relax-f32-to-f16 ------------------------------------------
for flags, pref, relax in (([], 2, False), (["--preference", "low-power"], 0, False),
                           (["--preference", "fast-single-answer"], 1, False),
                           (["--preference", "sustained-speed", "--relax-f32-to-f16"], 2, True)):
    out = path("pref-%d-%d.nnapi.pt" % (pref, relax))
    rc, text = run(conv, "--input", "1x4x9x9", "-o", out, *flags)
    m = module(out) if rc == 0 else None
    check(f"{' '.join(flags) or 'defaults'}: compilation_preference {pref}, relax {relax}",
          m is not None and m.mod.compilation_preference == pref
          and m.mod.relax_f32_to_f16 == relax, text)

# --- --return-shape ---------------------------------------------------------


def template_shape(p, x):
    m = module(p)
    return [tuple(t.shape) for t in m.mod.shape_compute_module.prepare(m.mod.ser_model.clone(), [x])]


rc, text = run(conv, "--input", "1x4x0x0", "-o", path("flex.nnapi.pt"))
rc2, text2 = run(conv, "--input", "1x4x0x0", "--return-shape", "1x8x5x5", "-o", path("ret.nnapi.pt"))
x9 = torch.zeros(1, 4, 9, 9)
check("without --return-shape the template follows the input (1x8x7x7 for 9x9)",
      rc == 0 and template_shape(path("flex.nnapi.pt"), x9) == [(1, 8, 7, 7)], text)
check("--return-shape 1x8x5x5 gives the template that shape for any input",
      rc2 == 0 and template_shape(path("ret.nnapi.pt"), x9) == [(1, 8, 5, 5)]
      and template_shape(path("ret.nnapi.pt"), torch.zeros(1, 4, 30, 20)) == [(1, 8, 5, 5)],
      text2)

# --- --int16-for-qint16 -----------------------------------------------------------
rc, text = run(int16, "--input", "2x3", "--input", "2x3x4,dtype=int16,scale=0.5,zero_point=3",
               "-o", path("i16.pt"))
check("an int16 input without --int16-for-qint16 is exit 2 naming the option",
      rc == 2 and "--int16-for-qint16" in text, text)
for spec, want in (("2x3x4,dtype=int16,scale=0.5,zero_point=3", ("TENSOR_QUANT16_ASYMM", 3)),
                   ("2x3x4,dtype=int16,scale=0.5", ("TENSOR_QUANT16_SYMM", 0))):
    out = path("i16-%s.nnapi.pt" % want[0])
    rc, text = run(int16, "--input", "2x3", "--input", spec, "--int16-for-qint16", "-o", out)
    rc2, js = run("inspect", out, "--json", stdout_only=True) if rc == 0 else (rc, text)
    try:
        doc = json.loads(js)
        model = doc[0] if isinstance(doc, list) else doc
        q = model["operands"][model["inputs"][1]]
        got = (q["type"], q.get("zero_point", 0), q.get("scale"))
    except Exception as e:  # noqa: BLE001
        got = str(e)
    check(f"--int16-for-qint16 {spec}: input 1 is {want[0]}, scale 0.5, zero point {want[1]}",
          rc == 0 and got == (want[0], want[1], 0.5), f"{got} {text} {js[:600]}")

# --- --timings -------------------------------------------------------------------
rc, text = run(conv, "--input", "1x4x9x9", "-o", path("t.nnapi.pt"), "--timings")
lines = [line for line in text.splitlines() if "timings (ms):" in line]
try:
    phases = dict(p.strip().split(" ") for p in lines[0].split("timings (ms):")[1].split(","))
    phases = {k: float(v) for k, v in phases.items()}
except Exception:  # noqa: BLE001
    phases = {}
check("--timings prints one line with the time of each phase",
      rc == 0 and len(lines) == 1
      and set(phases) == {"load", "freeze", "lower", "serialize", "validate", "write"}
      and phases["load"] > 0 and all(v >= 0 for v in phases.values()), text)
rc, text = run(conv, "--input", "1x4x9x9", "-o", path("t2.nnapi.pt"))
check("without --timings there is no such line", rc == 0 and "timings (ms)" not in text, text)

# --- `convert` as an explicit command --------------------------------------------
rc, text = run("convert", conv, "--input", "1x4x9x9", "--nhwc", "-o", path("explicit.nnapi.pt"))
rc2, text2 = run(conv, "--input", "1x4x9x9", "--nhwc", "-o", path("implicit.nnapi.pt"))
a = module(path("explicit.nnapi.pt")) if rc == 0 else None
b = module(path("implicit.nnapi.pt")) if rc2 == 0 else None
check("`nnapi-convert convert m.pt ...` writes the module `nnapi-convert m.pt ...` does",
      a is not None and b is not None and torch.equal(a.mod.ser_model, b.mod.ser_model)
      and len(a.mod.weights) == len(b.mod.weights)
      and all(torch.equal(x, y) for x, y in zip(a.mod.weights, b.mod.weights))
      and list(a.mod.inp_mem_fmts) == [1] == list(b.mod.inp_mem_fmts), text + text2)

# --- `check` takes no option of a conversion ---------------------------------------
# It converts in memory only: -o, --verify, --quantize and the rest would be
# ignored, so each is a usage error naming it, and nothing is written.
for flags, named in ((["-o", path("checked.nnapi.pt")], "-o"), (["--verify"], "--verify"),
                     (["--quantize", "uint8", "--calibration", path("none.pt")], "--quantize"),
                     (["--report", path("checked.json")], "--report")):
    rc, text = run("check", conv, "--input", "1x4x9x9", *flags)
    check(f"check {named}: exit 2 naming it, nothing written",
          rc == 2 and f"does not take {named}" in text
          and not os.path.exists(path("checked.nnapi.pt"))
          and not os.path.exists(path("checked.json")), text)
rc, text = run("check", conv, "--input", "1x4x9x9")
check("check without them: exit 0", rc == 0 and "converts" in text, text)

# --- NNAPI_CONVERT_IN_PROCESS ------------------------------------------------------
# A model whose __setstate__ (run while LibTorch loads it) never returns. By
# default a worker process loads it and --timeout 2 ends it (exit 1); with
# NNAPI_CONVERT_IN_PROCESS=1 the process loads it itself: no worker process,
# no time limit, so it is still loading, childless, well after the default
# run had ended.


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "hostile"))
import make_hostile  # noqa: E402

make_hostile.save_setstate_models(WORK)  # setstate_loop.pt: its __setstate__ never returns


def children(pid):
    kids = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += f.read().split()
    except OSError:  # it ended meanwhile
        pass
    return kids


def kill_group(p):
    try:
        os.killpg(p.pid, 9)
    except ProcessLookupError:  # it ended already
        pass


def start_loops(in_process):
    env = dict(os.environ)
    env.pop("NNAPI_CONVERT_IN_PROCESS", None)
    if in_process:
        env["NNAPI_CONVERT_IN_PROCESS"] = "1"
    return subprocess.Popen([BIN, path("setstate_loop.pt"), "--input", "1x4", "--timeout", "2",
                             "-o", path("loop.nnapi.pt")], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)


t0 = time.monotonic()
p = start_loops(False)
most_children = 0
while p.poll() is None and time.monotonic() - t0 < 120:
    most_children = max(most_children, len(children(p.pid)))
    time.sleep(0.02)
default_seconds = time.monotonic() - t0
if p.poll() is None:
    kill_group(p)
out = p.communicate()[0]
check("by default a worker process loads the model, and --timeout 2 ends it (exit 1)",
      p.returncode == 1 and most_children == 1 and "time limit" in out,
      (p.returncode, most_children, out))
p = start_loops(True)
try:
    time.sleep(max(2 * default_seconds, default_seconds + 3))
    status, kids = p.poll(), children(p.pid)
finally:
    kill_group(p)
    p.wait()
check("NNAPI_CONVERT_IN_PROCESS=1: the process loads the model itself, with no time limit "
      f"(still running, childless, after {max(2 * default_seconds, default_seconds + 3):.1f} s)",
      status is None and kids == [], (status, kids))

# --- --manifest options take effect ------------------------------------------------
os.makedirs(path("man"), exist_ok=True)
entries = [
    ("nhwc", conv, ["1x4x9x9"], {"nhwc": True}),
    ("preference", conv, ["1x4x9x9"], {"preference": "fast-single-answer"}),
    ("relax", conv, ["1x4x9x9"], {"relax_f32_to_f16": True}),
    ("int16", int16, ["2x3", "2x3x4,dtype=int16,scale=0.5"], {"int16_for_qint16": True}),
    ("fuse", conv, ["1x4x9x9"], {"fuse_activations": True}),
    ("plain", conv, ["1x4x9x9"], {}),
    ("fallback", topk, ["2x8"], {"cpu_fallback": True}),
    ("api29", upsample, ["1x3x4x4"], {}),
    ("api30", upsample, ["1x3x4x4"], {"min_android_api": 30}),
    ("parts", conv, ["1x4x9x9"], {"parts": "parts.d"}),
    ("ret", conv, ["1x4x0x0"], {"return_shapes": ["1x8x5x5"]}),
    ("lite", conv, ["1x4x9x9"], {"lite": True}),
    ("f16", conv, ["1x4x9x9"], {"float16": True}),
    ("f16io", conv, ["1x4x9x9"], {"float16_io": True}),
    ("bc5", conv, ["1x4x9x9"], {"lite_bytecode_version": 5}),
]
manifest = [{"model": os.path.relpath(m, path("man")), "inputs": inputs,
             "output": f"{name}.nnapi.pt", "options": opts} for name, m, inputs, opts in entries]
with open(path("man/manifest.json"), "w") as f:
    json.dump(manifest, f)
rc, text = run("--manifest", path("man/manifest.json"), "--report", path("man/report.json"), "-q")
check("the manifest converts", rc == 0, text)
report = {}
try:
    for m in json.load(open(path("man/report.json")))["models"]:
        if m.get("output"):
            report[os.path.basename(m["output"])] = m
except Exception as e:  # noqa: BLE001
    check("the manifest's report reads", False, e)


def entry(name):
    p = path(f"man/{name}.nnapi.pt")
    return module(p) if os.path.exists(p) else None


def attr(name, what):
    m = entry(name)
    return getattr(m.mod, what) if m is not None else None


def ops(name):
    return report.get(f"{name}.nnapi.pt", {}).get("operations", {})


def op_count(name):
    return report.get(f"{name}.nnapi.pt", {}).get("operation_count")


# Each entry's option, against the entry without options ("plain").
check("manifest nhwc: the input is NHWC (memory format 1)",
      attr("nhwc", "inp_mem_fmts") == [1] and attr("plain", "inp_mem_fmts") == [0])
check("manifest preference: compilation_preference 1",
      attr("preference", "compilation_preference") == 1
      and attr("plain", "compilation_preference") == 2)
check("manifest relax_f32_to_f16: True", attr("relax", "relax_f32_to_f16") is True
      and attr("plain", "relax_f32_to_f16") is False)
check("manifest int16_for_qint16: an int16 input converts", entry("int16") is not None)
check("manifest fuse_activations: both ReLUs folded (4 operations -> 2, no RELU)",
      op_count("plain") == 4 and op_count("fuse") == 2 and "RELU" not in ops("fuse"),
      (ops("plain"), ops("fuse")))
fallback = entry("fallback")
check("manifest cpu_fallback: sort stays TorchScript around an NNAPI model",
      fallback is not None and [n for n, _ in fallback.named_children()] == ["nnapi_0"]
      and "sort" in fallback.code)
check("manifest min_android_api 30: RESIZE_BILINEAR instead of FULLY_CONNECTED",
      "RESIZE_BILINEAR" in ops("api30") and "RESIZE_BILINEAR" not in ops("api29")
      and report.get("api30.nnapi.pt", {}).get("android_api") == 30
      and report.get("api29.nnapi.pt", {}).get("android_api") == 29, (ops("api29"), ops("api30")))
check("manifest parts: the four files, relative to the manifest",
      os.path.isdir(path("man/parts.d")) and sorted(os.listdir(path("man/parts.d"))) ==
      ["manifest.json", "ser_model.bin", "shape_compute.py", "weights.pt"])
check("manifest return_shapes: the template has the given shape",
      entry("ret") is not None and template_shape(path("man/ret.nnapi.pt"), x9) == [(1, 8, 5, 5)])
check("manifest lite: the .ptl is written", os.path.exists(path("man/lite.nnapi.ptl"))
      and not os.path.exists(path("man/plain.nnapi.ptl")))

# float16 (--float16): the weights as TENSOR_FLOAT16, half the bytes, CAST at the
# float32 input and output; float16_io (--float16-io): the module takes and
# returns torch.half; lite_bytecode_version (--lite-bytecode-version): the .ptl
# at that version, as torch.jit.mobile reads it.
def weight_bytes(name):
    return report.get(f"{name}.nnapi.pt", {}).get("weight_bytes")


def run_entry(name, x):
    m = entry(name)
    return m(x) if m is not None else None


x16 = torch.randn(1, 4, 9, 9)
check("manifest float16: half the weight bytes, a CAST at the input and the output",
      weight_bytes("plain") and weight_bytes("f16") == weight_bytes("plain") // 2
      and ops("f16").get("CAST") == 2 and "CAST" not in ops("plain"),
      (weight_bytes("plain"), weight_bytes("f16"), ops("f16")))
out = run_entry("f16", x16)
check("manifest float16: the module still takes and returns float32",
      out is not None and out.dtype == torch.float32, out if out is None else out.dtype)
out = run_entry("f16io", x16.half())
check("manifest float16_io: the module takes and returns torch.half",
      out is not None and out.dtype == torch.half and ops("f16io").get("CAST") == 1,
      (out if out is None else out.dtype, ops("f16io")))
bc5 = path("man/bc5.nnapi.ptl")
check("manifest lite_bytecode_version 5: the .ptl is written at bytecode version 5",
      os.path.exists(bc5) and _get_model_bytecode_version(bc5) == 5)

# --- report fields -----------------------------------------------------------------
rc, text = run(conv, sorts, topk, "--input", "1x4x9x9", "--out-dir", path("rep"), "--report",
               path("rep.json"), "-q")  # sorts and topk fail (wrong --input and refused kinds)
rc2, text2 = run(conv, "--input", "1x4x9x9", "-o", path("rep/v.nnapi.pt"), "--verify",
                 "--verify-strict", "--report", path("rep-verify.json"), "-q")
rc3, text3 = run(sorts, "--input", "1x5", "--report", path("rep-sort.json"), "-q",
                 "-o", path("rep/s.nnapi.pt"))
rc4, text4 = run(topk, "--input", "2x8", "--cpu-fallback", "--report", path("rep-fb.json"), "-q",
                 "-o", path("rep/fb.nnapi.pt"))
try:
    ok_model = json.load(open(path("rep.json")))["models"][0]
    verified = json.load(open(path("rep-verify.json")))["models"][0]
    refused = json.load(open(path("rep-sort.json")))["models"][0]
    split = json.load(open(path("rep-fb.json")))["models"][0]
except Exception as e:  # noqa: BLE001
    ok_model = verified = refused = split = {}
    check("the reports read", False, f"{e} {text} {text2} {text3} {text4}")
check("report `output` of a converted model is where it was written",
      ok_model.get("status") == "ok" and ok_model.get("output") == path("rep/conv.nnapi.pt")
      and os.path.exists(ok_model.get("output", "")), ok_model)
outs = verified.get("verify", {}).get("outputs", [])
check("report verify.ok and verify.outputs[] of a verified model",
      rc2 == 0 and verified.get("verify", {}).get("ok") is True and len(outs) == 1
      and outs[0]["ok"] is True and outs[0]["shape"] == [1, 8, 7, 7] and outs[0]["dtype"] == "Float"
      and 0 <= outs[0]["max_abs_err"] < 1e-4 and outs[0]["numel"] == 392, verified)
unsupported = refused.get("unsupported", [])
check("report unsupported[].first_node names the node as TorchScript prints it",
      rc3 == 1 and len(unsupported) == 1 and unsupported[0]["kind"] == "aten::sort"
      and "aten::sort(" in unsupported[0]["first_node"], refused)
fb = split.get("cpu_fallback", {})
# sort stays TorchScript, and so does the tuple forward returns (the NNAPI
# model computes the linear layer only).
check("report cpu_fallback: the NNAPI models and the nodes that stay TorchScript",
      rc4 == 0 and fb.get("nnapi_models") == 1
      and {k["kind"]: (k["count"], k["supported"]) for k in fb.get("torchscript_nodes", [])}
      == {"aten::sort": (1, False), "prim::TupleConstruct": (1, True)}, split)

finish("options")

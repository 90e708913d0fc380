"""inspect --dot rendered by Graphviz (`dot -Tsvg`): the SVG's nodes and edges are the blob's,
as `inspect --json` reads it: a node per model input, operation and model output, and an
edge per operand an operation takes from a model input or another operation, and per model
output. Also a --cpu-fallback module: one cluster per NNAPI model.

Usage: dot_test.py BIN WORK   (exit 77, skipped, without Graphviz's `dot`)
"""
import collections
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import torch

bin_path, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
if not shutil.which("dot"):
    print("dot: Graphviz's dot is not installed (apt-get install graphviz), skipped")
    sys.exit(77)
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


class Residual(torch.nn.Module):
    """An operand used twice (the residual), two inputs, two outputs."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.b = torch.nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x, y):
        h = torch.relu(self.a(x))
        return h + self.b(h) * y, h.mean((2, 3))


class Sorted(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.b(torch.sort(self.a(x), 1)[0])


def expected(j):
    """(node titles, edge titles) from inspect --json of one NNAPI model, prefix p."""
    p = "m%d_" % j["_k"]
    nodes = [p + "in%d" % i for i in range(len(j["inputs"]))]
    nodes += [p + "op%d" % o["index"] for o in j["operations"]]
    nodes += [p + "out%d" % i for i in range(len(j["outputs"]))]
    src = {}
    for o in j["operands"]:
        s = o["source"]
        if s["kind"] == "operation":
            src[o["index"]] = p + "op%d" % s["operation"]
        elif s["kind"] == "model_input":
            src[o["index"]] = p + "in%d" % s["input"]
    edges = [src[i] + "->" + p + "op%d" % o["index"] for o in j["operations"] for i in o["inputs"]
             if i in src]
    edges += [src[i] + "->" + p + "out%d" % k for k, i in enumerate(j["outputs"]) if i in src]
    return nodes, edges


def svg_titles(svg_path):
    ns = {"s": "http://www.w3.org/2000/svg"}
    root = ET.parse(svg_path).getroot()
    got = collections.defaultdict(list)
    for g in root.iter("{http://www.w3.org/2000/svg}g"):
        cls = g.get("class")
        if cls in ("node", "edge", "cluster"):
            got[cls].append(g.find("s:title", ns).text.replace("&#45;", "-"))
    return got


def case(name, model, args, specs, extra, clusters):
    src = os.path.join(work, name + ".pt")
    torch.jit.save(torch.jit.trace(model.eval(), args), src)
    out = os.path.join(work, name + ".nnapi.pt")
    p = subprocess.run([bin_path, src, *sum((["--input", s] for s in specs), []), *extra, "-o",
                        out, "-q"], capture_output=True, text=True)
    check(p.returncode == 0, f"{name}: converts ({p.stderr.strip()[-200:]})")
    js = json.loads(subprocess.run([bin_path, "inspect", out, "--json"], capture_output=True,
                                   text=True, check=True).stdout)
    js = js if isinstance(js, list) else [js]
    dot = subprocess.run([bin_path, "inspect", out, "--dot"], capture_output=True, text=True)
    check(dot.returncode == 0, f"{name}: inspect --dot exits 0 ({dot.stderr.strip()})")
    dot_path, svg_path = os.path.join(work, name + ".dot"), os.path.join(work, name + ".svg")
    with open(dot_path, "w") as f:
        f.write(dot.stdout)
    r = subprocess.run(["dot", "-Tsvg", dot_path, "-o", svg_path], capture_output=True, text=True)
    check(r.returncode == 0 and not r.stderr.strip(), f"{name}: dot -Tsvg renders it ({r.stderr})")
    got = svg_titles(svg_path)
    want_nodes, want_edges = [], []
    for k, j in enumerate(js):
        j["_k"] = k
        n, e = expected(j)
        want_nodes += n
        want_edges += e
    check(sorted(got["node"]) == sorted(want_nodes),
          f"{name}: the SVG's {len(got['node'])} nodes are the blob's {len(want_nodes)} "
          "(inputs, operations, outputs)")
    check(collections.Counter(got["edge"]) == collections.Counter(want_edges),
          f"{name}: the SVG's {len(got['edge'])} edges are the blob's {len(want_edges)} operand "
          "edges")
    check(len(got["cluster"]) == clusters, f"{name}: {len(got['cluster'])} clusters, {clusters} "
          "expected (one per NNAPI model of a --cpu-fallback module)")
    return js


torch.manual_seed(0)
js = case("residual", Residual(), (torch.randn(1, 4, 8, 8), torch.randn(1, 4, 8, 8)),
          ["1x4x8x8", "1x4x8x8"], [], 0)
check(len(js[0]["operations"]) >= 5 and len(js[0]["inputs"]) == 2,
      f"residual: {len(js[0]['operations'])} operations, 2 inputs drawn")
js = case("sorted", Sorted(), (torch.randn(2, 8),), ["2x8"], ["--cpu-fallback"], 2)
check(len(js) == 2, "sorted: --cpu-fallback made two NNAPI models")

print("dot: all passed" if not failures else f"dot: {len(failures)} failed")
sys.exit(1 if failures else 0)

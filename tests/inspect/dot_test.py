"""inspect --dot rendered by Graphviz (`dot -Tsvg`): the SVG's nodes and edges are the blob's,
as `inspect --json` reads it: a node per model input, operation and model output, and an
edge per operand an operation takes from a model input or another operation, and per model
output. Each operation names the TorchScript node it came from: its kind and the line of the
model's source that made it, which this test knows because it writes that source (models.py
below: one operation per line). A --cpu-fallback module: one cluster per NNAPI model, and the
TorchScript between them (torch.sort) drawn as its own node, in another colour, with the data
going forward's argument -> NNAPI model 1 -> sort -> NNAPI model 2 -> forward's return.

Usage: dot_test.py BIN WORK   (exit 77, skipped, without Graphviz's `dot`)
"""
import collections
import importlib.util
import json
import os
import re
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


# The models, written to a file so that their source lines are known here: each line marked
# "# K:" makes the TorchScript node kinds K (a traced convolution is aten::_convolution,
# a scripted one aten::conv2d).
MODELS = '''import torch


class Residual(torch.nn.Module):
    """An operand used twice (the residual), two inputs, two outputs."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.b = torch.nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x, y):
        c = self.a(x)  # K: aten::_convolution aten::conv2d
        h = torch.relu(c)  # K: aten::relu
        d = self.b(h)  # K: aten::_convolution aten::conv2d
        e = d * y  # K: aten::mul
        s = h + e  # K: aten::add
        m = h.mean((2, 3))  # K: aten::mean
        return s, m


class Sorted(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)

    def forward(self, x):
        u = self.a(x)  # K: aten::linear
        v = torch.sort(u, 1)[0]  # K: aten::sort
        return self.b(v)  # K: aten::linear
'''
models_py = os.path.join(work, "models.py")
with open(models_py, "w") as f:
    f.write(MODELS)
# (line, kinds) of the marked lines, and the NNAPI operation each kind lowers to where it is one
# operation (the others, TRANSPOSE and the like, may come from any node).
MARKED = [(n, line.split("# K:")[1].split()) for n, line in enumerate(MODELS.splitlines(), 1)
          if "# K:" in line]
LOWERS_TO = {"aten::_convolution": "CONV_2D", "aten::conv2d": "CONV_2D", "aten::relu": "RELU",
             "aten::mul": "MUL", "aten::add": "ADD", "aten::mean": "MEAN",
             "aten::linear": "FULLY_CONNECTED"}
spec = importlib.util.spec_from_file_location("models", models_py)
models = importlib.util.module_from_spec(spec)
spec.loader.exec_module(models)


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


def svg_parts(svg_path):
    """Per class (node, edge, cluster): {title: (fill colour, [text lines])}, and the titles
    in order."""
    ns = {"s": "http://www.w3.org/2000/svg"}
    root = ET.parse(svg_path).getroot()
    got = collections.defaultdict(list)
    info = {}
    for g in root.iter("{http://www.w3.org/2000/svg}g"):
        cls = g.get("class")
        if cls in ("node", "edge", "cluster"):
            title = g.find("s:title", ns).text.replace("&#45;", "-")
            got[cls].append(title)
            # The shape (inside an <a> when the node has a tooltip).
            shape = next((e for e in g.iter() if e.tag.split("}")[1] in ("polygon", "ellipse")),
                         None)
            fill = shape.get("fill") if shape is not None else None
            info[title] = (fill, [t.text or "" for t in g.iter("{http://www.w3.org/2000/svg}text")])
    return got, info


def node_line(node):
    """The line of models.py a --json operation's "node" names, or None."""
    if not node:
        return None
    m = re.fullmatch(re.escape(models_py) + r":(\d+)", node["location"])
    return int(m.group(1)) if m else None


def check_origins(name, js, info, want_lines):
    """Every operation names its node: a kind its source line makes; the operations the
    marked kinds lower to come from exactly those; the DOT label shows kind and line."""
    marked = dict(MARKED)
    seen_lines = set()
    for j in js:
        for o in j["operations"]:
            node, what = o.get("node"), f"{name}: operation {j['_k']}.{o['index']} {o['name']}"
            line = node_line(node)
            check(line in marked and node["kind"] in marked[line],
                  f"{what} came from {node}: a node its models.py line {line} makes")
            if line not in marked:
                continue
            seen_lines.add(line)
            lowers = {LOWERS_TO.get(k) for k in marked[line]}
            if o["name"] in LOWERS_TO.values():
                check(o["name"] in lowers, f"{what} is what {marked[line]} lowers to")
            _, texts = info.get("m%d_op%d" % (j["_k"], o["index"]), (None, []))
            check(node["kind"] in texts and f"models.py:{line}" in texts,
                  f"{what}: its DOT label names {node['kind']} and models.py:{line} ({texts})")
    check(seen_lines == set(want_lines),
          f"{name}: the operations came from models.py lines {sorted(seen_lines)}, "
          f"want {sorted(want_lines)}")


EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "draw-graph.sh")


def case(name, model, args, specs, extra, clusters, script=False, example=False):
    """Converts `model`, draws it (with examples/draw-graph.sh when `example`) and checks the
    SVG's NNAPI nodes, edges and clusters against inspect --json."""
    src = os.path.join(work, name + ".pt")
    m = model.eval()
    torch.jit.save(torch.jit.script(m) if script else torch.jit.trace(m, args), src)
    out = os.path.join(work, name + ".nnapi.pt")
    p = subprocess.run([bin_path, src, *sum((["--input", s] for s in specs), []), *extra, "-o",
                        out, "-q"], capture_output=True, text=True)
    check(p.returncode == 0, f"{name}: converts ({p.stderr.strip()[-200:]})")
    js = json.loads(subprocess.run([bin_path, "inspect", out, "--json"], capture_output=True,
                                   text=True, check=True).stdout)
    js = js if isinstance(js, list) else [js]
    dot_path, svg_path = os.path.join(work, name + ".dot"), os.path.join(work, name + ".svg")
    if example:
        r = subprocess.run([EXAMPLE, out, svg_path], capture_output=True, text=True,
                           env=dict(os.environ, NNAPI_CONVERT=bin_path))
        check(r.returncode == 0 and os.path.exists(svg_path),
              f"{name}: examples/draw-graph.sh draws it ({r.stderr.strip()})")
    else:
        dot = subprocess.run([bin_path, "inspect", out, "--dot"], capture_output=True, text=True)
        check(dot.returncode == 0, f"{name}: inspect --dot exits 0 ({dot.stderr.strip()})")
        with open(dot_path, "w") as f:
            f.write(dot.stdout)
        r = subprocess.run(["dot", "-Tsvg", dot_path, "-o", svg_path], capture_output=True,
                           text=True)
        check(r.returncode == 0 and not r.stderr.strip(),
              f"{name}: dot -Tsvg renders it ({r.stderr})")
    got, info = svg_parts(svg_path)
    want_nodes, want_edges = [], []
    for k, j in enumerate(js):
        j["_k"] = k
        n, e = expected(j)
        want_nodes += n
        want_edges += e
    nnapi_nodes = [t for t in got["node"] if t.startswith("m")]
    check(sorted(nnapi_nodes) == sorted(want_nodes),
          f"{name}: the SVG's {len(nnapi_nodes)} NNAPI nodes are the blob's {len(want_nodes)} "
          "(inputs, operations, outputs)")
    nnapi_edges = [t for t in got["edge"] if not t.startswith("ts") and "->ts" not in t]
    check(collections.Counter(nnapi_edges) == collections.Counter(want_edges),
          f"{name}: the SVG's {len(nnapi_edges)} edges inside NNAPI models are the blob's "
          f"{len(want_edges)} operand edges")
    check(len(got["cluster"]) == clusters, f"{name}: {len(got['cluster'])} clusters, {clusters} "
          "expected (one per NNAPI model of a --cpu-fallback module)")
    # The text report names the same node under each operation.
    text = subprocess.run([bin_path, "inspect", out], capture_output=True, text=True).stdout
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("node: ")]
    want = [f"node: {o['node']['kind']} at {o['node']['location']}" for j in js
            for o in j["operations"] if o.get("node")]
    check(lines == want and len(want) == sum(len(j["operations"]) for j in js),
          f"{name}: inspect's text names each operation's node as --json does ({lines[:3]})")
    return js, got, info


torch.manual_seed(0)
js, got, info = case("residual", models.Residual(),
                     (torch.randn(1, 4, 8, 8), torch.randn(1, 4, 8, 8)),
                     ["1x4x8x8", "1x4x8x8"], [], 0)
check(len(js[0]["operations"]) >= 5 and len(js[0]["inputs"]) == 2,
      f"residual: {len(js[0]['operations'])} operations, 2 inputs drawn")
check(not [t for t in got["node"] if t.startswith("ts")],
      "residual: no TorchScript node drawn for a module that is NNAPI whole")
check_origins("residual", js, info, [n for n, _ in MARKED[:6]])

js, got, info = case("sorted", models.Sorted(), (torch.randn(2, 8),), ["2x8"],
                     ["--cpu-fallback"], 2, script=True, example=True)
check(len(js) == 2, "sorted: --cpu-fallback made two NNAPI models")
check_origins("sorted", js, info, [MARKED[6][0], MARKED[8][0]])
# The TorchScript between the NNAPI models: torch.sort, at its line, in its own colour.
sort_line = MARKED[7][0]
script_nodes = [t for t in got["node"] if re.fullmatch(r"ts\d+", t)]
sorts = [t for t in script_nodes if "aten::sort" in info[t][1]]
check(len(sorts) == 1 and f"models.py:{sort_line}" in info[sorts[0]][1],
      f"sorted: one TorchScript node aten::sort at models.py:{sort_line} "
      f"({[info[t][1] for t in script_nodes]})")
nnapi_fills = {info[t][0] for t in got["node"] if re.fullmatch(r"m\d+_op\d+", t)}
cluster_fills = {info[t][0] for t in got["cluster"]}
check(bool(sorts) and info[sorts[0]][0] not in nnapi_fills | cluster_fills | {None},
      f"sorted: the TorchScript node is filled {info[sorts[0]][0] if sorts else None}, the NNAPI "
      f"operations {nnapi_fills} and models {cluster_fills}")
# Its edges: the blob's outputs and inputs of the two NNAPI models, joined through sort.
if sorts:
    ts = sorts[0]
    check(collections.Counter(got["edge"])[f"m0_out0->{ts}"] == 1,
          f"sorted: NNAPI model 1's output -> {ts} (sort)")
    check(collections.Counter(got["edge"])[f"{ts}->m1_in0"] == 1,
          f"sorted: {ts} (sort) -> NNAPI model 2's input")
check("ts_arg0->m0_in0" in got["edge"], "sorted: forward's argument -> NNAPI model 1's input")
check("m1_out0->ts_return" in got["edge"], "sorted: NNAPI model 2's output -> forward's return")
check(len(js[0]["outputs"]) == 1 and len(js[1]["inputs"]) == 1,
      "sorted: the NNAPI models take and give one tensor each (the edges above are all of them)")

# A file that records no nodes (PyTorch's own converter's): inspect shows none, and draws it.
import torch.backends._nnapi.prepare  # noqa: E402

ref = os.path.join(work, "reference.nnapi.pt")
x = torch.randn(1, 4, 8, 8).contiguous(memory_format=torch.channels_last)
x.nnapi_nhwc = True
traced = torch.jit.trace(models.Residual().eval(), (x, x))
torch.jit.save(torch.backends._nnapi.prepare.convert_model_to_nnapi(traced, [x, x]), ref)
runs = {f: subprocess.run([bin_path, "inspect", ref, *f], capture_output=True, text=True)
        for f in ((), ("--json",), ("--dot",))}
check(all(r.returncode == 0 for r in runs.values()),
      f"PyTorch's converter's file inspects (text, --json, --dot) with exit 0 "
      f"({[r.stderr.strip() for r in runs.values()]})")
ops = json.loads(runs[("--json",)].stdout)["operations"] if runs[("--json",)].stdout else []
check(ops and not [o for o in ops if "node" in o] and "node: " not in runs[()].stdout,
      "PyTorch's converter's file: no operation names a node (it records none)")

print("dot: all passed" if not failures else f"dot: {len(failures)} failed")
sys.exit(1 if failures else 0)

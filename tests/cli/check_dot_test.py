"""check --dot rendered by Graphviz (`dot -Tsvg`), checked against the model's own graph (as
Debian's torch lists it after torch.jit.freeze) and against what `check --json` says:
- a node per graph node but prim::Constant, in graph order (n0, n1, ...), its label the
  node's kind and its source line; a node per model input and output; the legend;
- an edge per node input from a model input or a drawn node, and per output;
- colours: red exactly where check --json says a kind is not supported, or at the node the
  lowering failed at (with its message in the tooltip); for a model that converts, green
  nodes carry NNAPI operations that add up to check --json's operation_count, grey nodes none;
- the exit status is check's without --dot; --dot with --json, with --cpu-fallback or with
  two models is a usage error (exit 2, nothing on standard output).

Usage: check_dot_test.py BIN WORK   (exit 77, skipped, without Graphviz's `dot`)
"""
import collections
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import torch

sys.dont_write_bytecode = True  # importing cli_checks writes no __pycache__ into the sources
from cli_checks import BIN, check, finish, path, run  # noqa: E402

if not shutil.which("dot"):
    print("dot: Graphviz's dot is not installed (apt-get install graphviz), skipped")
    sys.exit(77)

RED, GREEN, GREY, ORANGE = "#ea9999", "#b6d7a8", "#d9d9d9", "#f9cb9c"
HERE = os.path.realpath(__file__)


def line_of(marker):
    """The line of this file (1-based) that holds `marker` after a '#'."""
    with open(HERE) as f:
        for i, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + marker):
                return i
    raise KeyError(marker)


class Unsupported(torch.nn.Module):
    """aten::sort has no NNAPI lowering; conv2d, relu, add, view, linear, mul do."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4 * 8 * 8, 5)

    def forward(self, x, y):
        h = torch.relu(self.conv(x))
        s = torch.sort(h, 1)[0]  # sort
        z = (s + h).view(x.size(0), -1)
        return self.fc(z) * y


class Converts(Unsupported):
    """Converts; x.size(0) and its list are computed during conversion."""

    def forward(self, x, y):
        h = torch.relu(self.conv(x))
        z = (h + h).view(x.size(0), -1)
        return self.fc(z) * y


class Float64(torch.nn.Module):
    """Every kind is supported, but the lowering refuses the float64 cast."""

    def forward(self, x):
        h = torch.relu(x)
        return h.double()  # double


def at_line(location, marker):
    """Whether "file.py:N" is this file's line holding `marker` (torch keeps the path as
    Python was given it)."""
    file, _, line = location.rpartition(":")
    return os.path.realpath(file) == HERE and line == str(line_of(marker))


def in_order(nodes, kinds):
    """(n0, its kind), (n1, its kind), ...: the drawn nodes with the graph's kinds."""
    return zip(sorted(nodes, key=lambda n: int(n[1:])), kinds)


def graph_of(model_path):
    """(kinds, edges) of the frozen graph: drawn nodes in order, edges by the DOT's names."""
    graph = torch.jit.freeze(torch.jit.load(model_path).eval()).graph
    ids = {}
    for i, v in enumerate(list(graph.inputs())[1:]):
        ids[v.debugName()] = "in%d" % i
    kinds, edges = [], []
    for node in graph.nodes():
        if node.kind() == "prim::Constant":
            continue
        name = "n%d" % len(kinds)
        kinds.append(node.kind())
        edges += [ids[v.debugName()] + "->" + name for v in node.inputs() if v.debugName() in ids]
        for v in node.outputs():
            ids[v.debugName()] = name
    edges += [ids[v.debugName()] + "->out%d" % i for i, v in enumerate(graph.outputs())
              if v.debugName() in ids]
    return kinds, edges


def svg_of(dot_text, name):
    """{node title: (fill, [text lines], tooltip)}, [edge titles], [cluster titles]."""
    dot_path, svg_path = path(name + ".dot"), path(name + ".svg")
    with open(dot_path, "w") as f:
        f.write(dot_text)
    r = subprocess.run(["dot", "-Tsvg", dot_path, "-o", svg_path], capture_output=True, text=True)
    rendered = r.returncode == 0 and os.path.exists(svg_path) and os.path.getsize(svg_path) > 0
    check(f"{name}: dot -Tsvg renders it", rendered and not r.stderr.strip(), r.stderr)
    if not rendered:
        return {}, [], []
    s = "{http://www.w3.org/2000/svg}"
    xlink = "{http://www.w3.org/1999/xlink}title"
    nodes, edges, clusters = {}, [], {}
    for g in ET.parse(svg_path).getroot().iter(s + "g"):
        title = g.find(s + "title")
        if g.get("class") == "node":
            fills = [p.get("fill") for p in g.iter(s + "polygon") if p.get("fill") != "none"]
            texts = [t.text or "" for t in g.iter(s + "text")]
            a = next(g.iter(s + "a"), None)
            nodes[title.text] = (fills[0] if len(fills) == 1 else fills, texts,
                                 a.get(xlink) if a is not None else "", box(g, s))
        elif g.get("class") == "edge":
            edges.append(title.text)
        elif g.get("class") == "cluster":
            clusters[title.text] = box(g, s)
    return nodes, edges, clusters


def box(g, s):
    """(x0, y0, x1, y1) of the first polygon of an SVG group."""
    poly = next(g.iter(s + "polygon"), None)
    if poly is None:
        return (0, 0, 0, 0)
    xy = [tuple(map(float, p.split(","))) for p in poly.get("points").split()]
    return (min(x for x, _ in xy), min(y for _, y in xy), max(x for x, _ in xy),
            max(y for _, y in xy))


def inside(inner, outer):
    return (outer[0] <= inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2] and
            inner[3] <= outer[3])


def case(name, model, example_specs, extra=(), legend=(GREEN, GREY, RED)):
    """Saves `model` scripted, runs check and check --dot; returns (json, svg nodes, kinds,
    clusters)."""
    src = path(name + ".pt")
    torch.jit.save(torch.jit.script(model.eval()), src)
    inputs = sum((["--input", s] for s in example_specs), []) + list(extra)
    rc_plain, _ = run("check", src, *inputs)
    rc_json, out = run("check", src, *inputs, "--json", stdout_only=True)
    report = json.loads(out)["models"][0]
    p = subprocess.run([BIN, "check", src, *inputs, "--dot"], capture_output=True, text=True)
    check(f"{name}: check --dot exits as check does ({rc_plain})", p.returncode == rc_plain,
          (p.returncode, p.stderr))
    check(f"{name}: check --json exits as check does", rc_json == rc_plain, rc_json)
    again = subprocess.run([BIN, "check", src, *inputs, "--dot"], capture_output=True, text=True)
    check(f"{name}: a second run writes the same DOT", again.stdout == p.stdout)
    nodes, edges, clusters = svg_of(p.stdout, name)
    kinds, want_edges = graph_of(src)
    drawn = ["n%d" % k for k in range(len(kinds))]
    nodes = collections.defaultdict(lambda: ("", ["", ""], "", (0, 0, 0, 0)), nodes)
    want_nodes = ["in%d" % i for i in range(len(example_specs))] + drawn + ["out0", "legend"]
    check(f"{name}: the SVG's nodes are the graph's {len(kinds)} nodes but constants, its "
          "inputs and output, and a legend", sorted(nodes) == sorted(want_nodes),
          sorted(nodes))
    check(f"{name}: each node is labelled with its kind, in graph order",
          [nodes[n][1][0] for n in drawn] == kinds, [nodes[n][1][0] for n in drawn])
    check(f"{name}: the SVG's edges are the graph's values between them",
          collections.Counter(edges) == collections.Counter(want_edges),
          (sorted(edges), sorted(want_edges)))
    check(f"{name}: the legend is a table of the {len(legend)} colours",
          nodes["legend"][0] == list(legend), nodes["legend"][0])
    parts = report.get("cpu_fallback", {}).get("nnapi_models", 0)
    check(f"{name}: a box (cluster) per NNAPI model check --json counts ({parts})",
          sorted(clusters) == ["cluster_part%d" % k for k in range(parts)], sorted(clusters))
    # The node counts per kind are check --json's (which counts constants too).
    counted = collections.Counter()
    for k in report["kinds"]:
        if not k["kind"].startswith("prim::Constant"):
            counted[k["kind"].split(" ")[0]] += k["count"]
    check(f"{name}: the kinds drawn are counted as check --json counts them",
          collections.Counter(kinds) == counted, (kinds, counted))
    # Each node's source line is among the places check --json names for its kind.
    places = {k["kind"].split(" ")[0]: k["locations"] for k in report["kinds"]}
    for n, kind in zip(drawn, kinds):
        texts = nodes[n][1]
        located = [t for t in texts[1:] if ".py:" in t]
        check(f"{name}: {n} ({kind}) names the source line check --json names",
              located == places[kind][:1] if places[kind] else not located, (texts, places[kind]))
    return report, {n: nodes[n] for n in drawn}, kinds, clusters


torch.manual_seed(0)
report, nodes, kinds, _ = case("unsupported", Unsupported(), ["1x3x8x8", "1x5"])
unsupported = {k["kind"].split(" ")[0] for k in report["kinds"] if not k["supported"]}
check("unsupported: check --json says aten::sort alone does not convert",
      unsupported == {"aten::sort"} and not report["converts"], unsupported)
for n, kind in in_order(nodes, kinds):
    fill, texts, tooltip, _ = nodes[n]
    check(f"unsupported: {n} ({kind}) is red exactly when check --json says its kind is not "
          "supported", (fill == RED) == (kind in unsupported), fill)
    if kind == "aten::sort":
        check("unsupported: the sort node names its line and why in the tooltip",
              at_line(texts[1], "sort") and "aten::sort" in tooltip and
              "no lowering" in tooltip, (texts, tooltip))

report, nodes, kinds, _ = case("converts", Converts(), ["1x3x8x8", "1x5"])
check("converts: check --json says it converts", report["converts"], report.get("error"))
total = 0
for n, kind in in_order(nodes, kinds):
    fill, texts, _, _ = nodes[n]
    ops = [int(t.split(" ")[0]) for t in texts if t.endswith(("NNAPI operation",
                                                              "NNAPI operations"))]
    total += sum(ops)
    check(f"converts: {n} ({kind}) is green with its operations or grey with none",
          (fill == GREEN and ops and ops[0] > 0) or (fill == GREY and not ops), (fill, texts))
check(f"converts: the nodes' NNAPI operations add up to check --json's operation_count "
      f"({report.get('operation_count')})", total == report.get("operation_count"), total)
check("converts: x.size(0) and its list are computed during conversion (grey)",
      [nodes[n][0] for n, k in in_order(nodes, kinds)
       if k in ("aten::size", "prim::ListConstruct")] == [GREY, GREY])

report, nodes, kinds, _ = case("float64", Float64(), ["1x3x8x8"])
err = report.get("error", {})
red = [n for n in nodes if nodes[n][0] == RED]
check("float64: check --json's failing node (aten::to at the double line) is the one red node",
      not report["converts"] and err.get("node") == "aten::to" and red == ["n1"] and
      kinds[1] == "aten::to" and nodes["n1"][1][1] == err.get("source") and
      at_line(err.get("source", ""), "double"), (red, err))
check("float64: its tooltip holds the lowering's reason",
      "Double" in nodes["n1"][2] and nodes["n1"][2].split("\n")[-1] in err.get("message", ""),
      nodes["n1"][2])

# --cpu-fallback: the sort (and what TorchScript then reads) stays TorchScript between NNAPI
# models, each a box.
report, nodes, kinds, clusters = case("split", Unsupported(), ["1x3x8x8", "1x5"],
                                      ["--cpu-fallback"], (GREEN, GREY, ORANGE, RED))
fallback = report.get("cpu_fallback", {})
left = collections.Counter()
for k in fallback.get("torchscript_nodes", []):
    left[k["kind"].split(" ")[0]] += k["count"]
orange = collections.Counter(k for n, k in in_order(nodes, kinds)
                             if nodes[n][0] == ORANGE)
check("split: check --json splits it into NNAPI models, aten::sort in TorchScript",
      fallback.get("nnapi_models", 0) >= 2 and left["aten::sort"] == 1, fallback)
check("split: the orange nodes are the nodes check --json leaves to TorchScript",
      orange == left, (orange, left))
for n, kind in in_order(nodes, kinds):
    fill, texts, tooltip, where = nodes[n]
    boxes = [c for c in clusters if inside(where, clusters[c])]
    if fill == GREEN:
        k = int(texts[-1].split(" ")[-1]) - 1 if texts[-1].startswith("NNAPI model ") else -1
        check(f"split: {n} ({kind}) is green inside the box of the NNAPI model its label names",
              boxes == ["cluster_part%d" % k], (texts, boxes))
    else:
        check(f"split: {n} ({kind}) is grey or orange, outside the boxes",
              fill in (GREY, ORANGE) and not boxes, (fill, boxes))
    if fill == ORANGE:
        check(f"split: {n} ({kind}) says why it stays TorchScript in its tooltip",
              "stays TorchScript" in texts[-1] and len(tooltip.split("\n")) >= 2, tooltip)

# A file name with a quote and a backslash: the graph's label names it as it is.
odd = path('q"uo\\te.pt')
shutil.copyfile(path("converts.pt"), odd)
p = subprocess.run([BIN, "check", odd, "--input", "1x3x8x8", "--input", "1x5", "--dot"],
                   capture_output=True, text=True)
svg_nodes, _, _ = svg_of(p.stdout, "odd_name")
rendered = path("odd_name.svg")
title = ""
if os.path.exists(rendered):
    root = ET.parse(rendered).getroot()
    graph_g = next(g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") ==
                   "graph")
    title = " ".join(t.text or "" for t in graph_g.findall("{http://www.w3.org/2000/svg}text"))
check("a model named q\"uo\\te.pt: the graph's label names it, escaped in the DOT",
      p.returncode == 0 and title.startswith(odd + ": converts"), (title, p.stderr))

# --- examples/check-dot.sh: the SVG beside the model, check's exit status ------------------
script = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "examples",
                      "check-dot.sh")
svg = path("unsupported.check.svg")
if os.path.exists(svg):
    os.remove(svg)
p = subprocess.run([script, path("unsupported.pt"), "--input", "1x3x8x8", "--input", "1x5"],
                   capture_output=True, text=True, env={**os.environ, "NNAPI_CONVERT": BIN})
check("examples/check-dot.sh: exit 1 as check, the SVG written with the red sort node",
      p.returncode == 1 and os.path.exists(svg) and RED in open(svg).read() and
      "aten::sort" in open(svg).read(), (p.returncode, p.stderr))

# --- usage errors ------------------------------------------------------------------------
src = path("converts.pt")
for extra, what in ((["--json"], "--json"), ([path("unsupported.pt")], "two models")):
    p = subprocess.run([BIN, "check", src, "--input", "1x3x8x8", "--input", "1x5", "--dot",
                        *extra], capture_output=True, text=True)
    named = what if what.startswith("--") else "models were given"
    check(f"check --dot with {what}: exit 2, a one-paragraph message naming it, no output",
          p.returncode == 2 and not p.stdout and named in p.stderr and
          p.stderr.strip().count("\n") == 0, (p.returncode, p.stderr, p.stdout[:80]))
p = subprocess.run([BIN, "check", path("missing.pt"), "--input", "1x3", "--dot"],
                   capture_output=True, text=True)
check("check --dot of a missing file: exit 1, the error on standard error, no output",
      p.returncode == 1 and not p.stdout and "missing.pt" in p.stderr, (p.returncode, p.stderr))

finish("check-dot")

#!/usr/bin/env python3
"""Every include points down (issue 36): the layer order of docs/architecture.md, checked.

docs/architecture.md declares the layers of the source tree, ground floor first, between
the markers `<!-- layers -->` and `<!-- /layers -->`: one list item per layer naming its
directories (`src/core`) and the public headers that belong to it (`converter.h`, for
include/nnapi_convert/converter.h). A file of src/<dir> may include the headers of its own
layer and of the layers below it, never one above: this script reads every `#include "..."`
of src/ and include/nnapi_convert/ and names each one that points up.

Usage: check_layers.py [--root TREE] [--docs FILE]
  --root: the source tree to check (default: this script's tree)
  --docs: the document that declares the layers (default: TREE/docs/architecture.md)
Prints "layers: ok, N includes checked" and exits 0, or names each include that points up
(file:line, the header, both layers) and exits 1; exits 2 when the declaration is missing
or a directory of src/ is in no layer.
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_layers(docs):
    """[(number, name, {dirs}, {headers})] from the layers block of `docs`, bottom first."""
    with open(docs, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"<!-- layers -->(.*?)<!-- /layers -->", text, re.S)
    if not m:
        raise SystemExit(f"layers: {docs} declares no layers (no <!-- layers --> block)")
    layers = []
    for line in m.group(1).splitlines():
        item = re.match(r"\s*(\d+)\.\s+(.*)", line)
        if not item:
            continue
        body = item.group(2).split(":", 1)
        dirs = set(re.findall(r"`src/([a-z_]+)`", body[0]))
        headers = set(re.findall(r"`([a-z_]+\.h)`", body[1] if len(body) > 1 else ""))
        layers.append((int(item.group(1)), ", ".join(sorted(dirs)), dirs, headers))
    return layers


def layer_of_include(inc, by_dir, by_header):
    """The layer of an include text ("core/loader.h", "nnapi_convert/batch.h"), or None."""
    parts = inc.split("/")
    if len(parts) < 2:
        return None  # beside the including file: its own directory
    if parts[0] == "nnapi_convert":
        return by_header.get(parts[-1])
    return by_dir.get(parts[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=HERE)
    ap.add_argument("--docs")
    a = ap.parse_args()
    docs = a.docs or os.path.join(a.root, "docs", "architecture.md")
    layers = read_layers(docs)
    by_dir, by_header = {}, {}
    for number, _, dirs, headers in layers:
        for d in dirs:
            by_dir[d] = number
        for h in headers:
            by_header[h] = number
    names = {number: name for number, name, _, _ in layers}
    src = os.path.join(a.root, "src")
    problems = []
    for d in sorted(os.listdir(src)):
        if os.path.isdir(os.path.join(src, d)) and d not in by_dir:
            problems.append(f"src/{d} is in no layer of {docs}: add it to the layers")
    public = os.path.join(a.root, "include", "nnapi_convert")
    for h in sorted(os.listdir(public)):
        if h.endswith(".h") and h not in by_header:
            problems.append(f"include/nnapi_convert/{h} is in no layer of {docs}: add it")
    if problems:
        print("\n".join(problems))
        return 2
    files = []
    for top, _, names_ in os.walk(src):
        for n in names_:
            if n.endswith((".cpp", ".h", ".inc")):
                path = os.path.join(top, n)
                files.append((path, by_dir[os.path.relpath(path, src).split(os.sep)[0]]))
    for n in os.listdir(public):
        if n.endswith(".h"):
            files.append((os.path.join(public, n), by_header[n]))
    checked = 0
    up = []
    for path, own in sorted(files):
        with open(path, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                layer = layer_of_include(m.group(1), by_dir, by_header)
                if layer is None:
                    continue
                checked += 1
                if layer > own:
                    rel = os.path.relpath(path, a.root)
                    up.append(f"{rel}:{lineno}: includes {m.group(1)} (layer {layer}, "
                              f"{names[layer] or 'public headers'}) from layer {own} "
                              f"({names[own] or 'public headers'}): an include points up; move "
                              f"the code that needs it to a layer above, or what it needs down")
    if up:
        print("\n".join(up))
        print(f"layers: {len(up)} of {checked} includes point up")
        return 1
    print(f"layers: ok, {checked} includes checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Draws a converted model as SVG with Graphviz: each NNAPI operation with the
# TorchScript node and source line it came from, and, for a --cpu-fallback
# module, the TorchScript between its NNAPI models in another colour.
#
#   examples/draw-graph.sh MODEL.nnapi.pt [OUT.svg]     (OUT: MODEL.svg beside it)
#
# nnapi-convert is taken from $NNAPI_CONVERT, else from PATH; `dot` is
# Graphviz's (Debian: apt-get install graphviz). The exit status is inspect's:
# 1 when the model breaks NeuralNetworks.h's rules (it is drawn all the same).
set -euo pipefail

usage() { sed -n '2,10s/^# \{0,1\}//p' "$0" >&2; exit 2; }
(($# == 1 || $# == 2)) || usage
model=$1
svg=${2:-${model%.pt}}
[ -n "${2:-}" ] || svg=${svg%.nnapi}.svg
convert=${NNAPI_CONVERT:-nnapi-convert}
command -v "$convert" >/dev/null || { echo "draw-graph: $convert not found" >&2; exit 2; }
command -v dot >/dev/null || { echo "draw-graph: Graphviz's dot not found (apt-get install graphviz)" >&2; exit 2; }

graph=$(mktemp --suffix=.dot)
trap 'rm -f "$graph"' EXIT
status=0
"$convert" inspect "$model" --dot > "$graph" || status=$?
[ -s "$graph" ] || exit "$status"  # not drawable: inspect said why
dot -Tsvg "$graph" -o "$svg"
echo "draw-graph: $svg"
exit "$status"

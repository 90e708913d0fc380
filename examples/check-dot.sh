#!/usr/bin/env bash
# Draws what of a model converts to NNAPI and what does not: `nnapi-convert
# check --dot` rendered by Graphviz as MODEL.check.svg beside the model (open
# it in a browser; hover over a red node for why it does not convert).
#
#   examples/check-dot.sh MODEL.pt --input 1x3x224x224 [other check options]
#
# The exit status is nnapi-convert check's: 0 the model converts, 1 it does
# not (the SVG is written either way), 2 a usage error. nnapi-convert is taken
# from $NNAPI_CONVERT, else from PATH; dot from Debian's graphviz.
set -euo pipefail

(($# >= 1)) || { sed -n '2,10s/^# \{0,1\}//p' "$0" >&2; exit 2; }
model=$1
shift
nnapi_convert=${NNAPI_CONVERT:-nnapi-convert}
svg="${model%.pt}.check.svg"
dot_file=$(mktemp)
trap 'rm -f "$dot_file"' EXIT
status=0
"$nnapi_convert" check "$model" "$@" --dot >"$dot_file" || status=$?
if ((status == 2)) || [[ ! -s $dot_file ]]; then exit "$status"; fi
dot -Tsvg "$dot_file" -o "$svg.tmp" && mv "$svg.tmp" "$svg"
echo "wrote $svg" >&2
exit "$status"

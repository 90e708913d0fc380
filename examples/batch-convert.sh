#!/usr/bin/env bash
# Converts a folder of TorchScript models (every *.pt but *.nnapi.pt) or a
# manifest, writes a report and summarises it. The exit status is
# nnapi-convert's: 0 all converted, 1 some failed, 2 a usage error.
#
#   examples/batch-convert.sh [--jobs N] [--out-dir DIR] [--report FILE] (DIR | MANIFEST.json) \
#       [-- nnapi-convert options, e.g. --input 1x3x224x224 --nhwc --verify]
#
# nnapi-convert is taken from $NNAPI_CONVERT, else from PATH. The summary uses
# jq ($JQ, else from PATH) when it is installed, else Debian's /usr/bin/python3.
set -euo pipefail

usage() { sed -n '2,10s/^# \{0,1\}//p' "$0" >&2; exit 2; }

jobs=$(nproc)
out_dir=""
report=""
while (($#)); do
  case $1 in
    --jobs|-j) jobs=${2:?}; shift 2 ;;
    --out-dir) out_dir=${2:?}; shift 2 ;;
    --report) report=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    --) usage ;;
    -*) echo "batch-convert: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
(($#)) || usage
source=$1
shift
if (($#)); then
  [ "$1" = "--" ] || usage
  shift
fi
extra=("$@")

convert=${NNAPI_CONVERT:-nnapi-convert}
command -v "$convert" >/dev/null || { echo "batch-convert: $convert not found" >&2; exit 2; }

args=(--jobs "$jobs")
if [ -d "$source" ]; then
  models=()
  while IFS= read -r -d '' f; do models+=("$f"); done \
    < <(find "$source" -maxdepth 1 -type f -name '*.pt' ! -name '*.nnapi.pt' -print0 | sort -z)
  if ((${#models[@]} == 0)); then echo "batch-convert: no .pt files in $source" >&2; exit 2; fi
  args+=("${models[@]}")
else
  args+=(--manifest "$source")
fi
[ -n "$out_dir" ] && mkdir -p "$out_dir" && args+=(--out-dir "$out_dir")
# Keep the report even if the caller did not ask for one: the summary reads it.
if [ -z "$report" ]; then
  report=$(mktemp --suffix=.json)
  trap 'rm -f "$report"' EXIT
fi
args+=(--report "$report")

status=0
"$convert" "${args[@]}" "${extra[@]}" || status=$?
if [ "$status" -eq 2 ] || ! [ -s "$report" ]; then
  echo "batch-convert: nnapi-convert exited with $status before converting (usage error)" >&2
  exit "$status"
fi

jq=${JQ:-jq}
if command -v "$jq" >/dev/null; then
  "$jq" -r '"converted \(.converted), failed \(.failed)",
         (.models[] | select(.status != "ok")
          | "  FAILED \(.model): \(.error.message // "unknown error")")' "$report"
else
  /usr/bin/python3 -c '
import json, sys
report = json.load(open(sys.argv[1]))
print("converted %d, failed %d" % (report["converted"], report["failed"]))
for m in report["models"]:
    if m["status"] != "ok":
        error = m.get("error") or {}
        print("  FAILED %s: %s" % (m["model"], error.get("message", "unknown error")))
' "$report"
fi
echo "batch-convert: nnapi-convert exited with $status"
exit "$status"

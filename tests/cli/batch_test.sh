#!/bin/sh
# batch_test.sh BIN PYTHON WORK: batch conversion, --manifest and --report on
# the real binary. Expected behaviour is the issue's: one model's failure
# does not stop the others, exit status 1 if any failed, usage errors exit 2
# before any work, the report names the failing node and its source.
set -u
BIN=$1; PY=$2; W=$3
rm -rf "$W" && mkdir -p "$W/in" "$W/out" || exit 1
"$PY" "$(dirname "$0")/../../examples/make_example.py" "$W/in/good.pt" >/dev/null || exit 1
cp "$W/in/good.pt" "$W/in/good2.pt"
printf 'not a model' > "$W/in/bad.pt"
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAILED: $1"; fail=1; fi; }

"$BIN" "$W/in/good.pt" "$W/in/bad.pt" "$W/in/good2.pt" --input 1x3x32x32 --nhwc \
  --out-dir "$W/out" --jobs 2 --report "$W/report.json" 2>"$W/err"; rc=$?
check "one failure -> exit 1" "[ $rc = 1 ]"
check "the other models are converted" "[ -s $W/out/good.nnapi.pt ] && [ -s $W/out/good2.nnapi.pt ]"
check "no output for the failed model" "[ ! -e $W/out/bad.nnapi.pt ]"
check "the error names the file" "grep -q \"bad.pt' is not a TorchScript archive\" $W/err"
check "quiet when stderr is not a terminal" "! grep -q 'good.pt ->' $W/err"
"$PY" - "$W/report.json" <<'PYEOF' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
m = {x["model"].rsplit("/", 1)[1]: x for x in r["models"]}
assert r["converted"] == 2 and r["failed"] == 1, r
assert m["good.pt"]["status"] == "ok" and m["good.pt"]["operation_count"] == 11, m["good.pt"]
assert m["good.pt"]["operations"]["CONV_2D"] == 2 and m["good.pt"]["weight_bytes"] == 5928
assert set(m["good.pt"]["times_ms"]) == {"load", "freeze", "lower", "serialize", "validate", "write", "total"}
assert m["bad.pt"]["status"] == "failed" and m["bad.pt"]["exit_code"] == 1
assert "not a TorchScript archive" in m["bad.pt"]["error"]["message"]
print("ok: report contents")
PYEOF

# A node failure: the report carries the node kind and its source location.
"$BIN" "$W/in/good.pt" --input 1x3x32 -o "$W/out/x.nnapi.pt" --report "$W/node.json" 2>/dev/null
"$PY" -c "
import json,sys; e=json.load(open('$W/node.json'))['models'][0]['error']
assert e['node'] == 'aten::_convolution' and '.py:' in e['source'], e
print('ok: report names the node and its source')" || fail=1

cat > "$W/manifest.json" <<JSON
[{"model": "in/good.pt", "inputs": ["1x3x32x32"], "output": "out/m1.nnapi.pt", "options": {"nhwc": true}},
 {"model": "in/good2.pt", "inputs": ["1x3x32x32"], "output": "out/m2.nnapi.pt", "options": {"preference": "low-power"}}]
JSON
"$BIN" --manifest "$W/manifest.json" -q; rc=$?
check "manifest converts every entry" "[ $rc = 0 ] && [ -s $W/out/m1.nnapi.pt ] && [ -s $W/out/m2.nnapi.pt ]"

echo '[{"model": "in/good.pt", "inputs": ["1x3x,bogus"]}]' > "$W/badspec.json"
"$BIN" --manifest "$W/badspec.json" 2>"$W/err"; rc=$?
check "bad spec in a manifest -> exit 2 naming the entry" "[ $rc = 2 ] && grep -q 'entry 0' $W/err"
echo '{"models": 3}' > "$W/badjson.json"
"$BIN" --manifest "$W/badjson.json" 2>/dev/null; rc=$?
check "malformed manifest -> exit 2" "[ $rc = 2 ]"
"$BIN" "$W/in/good.pt" "$W/in/../in/good.pt" --input 1x3x32x32 --out-dir "$W/out" 2>"$W/err"; rc=$?
check "two models to one output -> exit 2" "[ $rc = 2 ] && grep -q 'would both be written' $W/err"

[ $fail = 0 ] && echo "batch: all passed"
exit $fail

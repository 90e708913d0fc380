#!/bin/sh
# ux_test.sh BIN PYTHON WORK: the command line as a new user meets it (issue
# 12): argument order, --help/--version, a mistyped command, check, list-ops,
# grouped errors, a converted file fed back in, a float spec for a model that
# takes quantized input, --verify's warnings and failures, --verify-input,
# --junit and --report. What is expected is what the README promises.
set -u
BIN=$1; PY=$2; W=$3
HERE=$(dirname "$0")
rm -rf "$W" && mkdir -p "$W" || exit 1
"$PY" "$HERE/../../examples/make_example.py" "$W/tiny.pt" >/dev/null || exit 1
"$PY" "$HERE/make_ux_models.py" "$W" >/dev/null || exit 1
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAILED: $1"; fail=1; fi; }

# Options before the model: --input takes one value, not the model path.
"$BIN" --nhwc --input 1x3x32x32 "$W/tiny.pt" -o "$W/order.pt" -q; rc=$?
check "options before the model path" "[ $rc = 0 ] && [ -s $W/order.pt ]"

"$BIN" --help >"$W/help" 2>&1; rc=$?
check "--help lists the commands, examples and exit statuses" \
  "[ $rc = 0 ] && grep -q inspect $W/help && grep -q list-ops $W/help && grep -q check $W/help && grep -q 'Examples:' $W/help && grep -q 'Exit status' $W/help"
"$BIN" --version >"$W/version" 2>&1
check "--version names LibTorch" "grep -Eq '^nnapi-convert [0-9.]+ \\(LibTorch [0-9.]+' $W/version"

"$BIN" inpsect "$W/order.pt" 2>"$W/err"; rc=$?
check "a mistyped command is exit 2 with a suggestion" "[ $rc = 2 ] && grep -q \"did you mean 'inspect'\" $W/err"

# check: what converts, without writing anything.
before=$(ls "$W" | wc -l)
"$BIN" check "$W/tiny.pt" --input 1x3x32x32 >"$W/check.txt"; rc=$?
check "check on a convertible model: exit 0, counts, operations" \
  "[ $rc = 0 ] && grep -Eq 'aten::_convolution +3  ok' $W/check.txt && grep -q '^converts: 11 NNAPI operations' $W/check.txt"
check "check writes nothing" "[ $(ls "$W" | wc -l) = $((before + 1)) ]"
"$BIN" check "$W/threesorts.pt" --input 1x3x8x8 >"$W/check2.txt"; rc=$?
check "check on an unsupported model: exit 1, the kind, its count and the user's lines" \
  "[ $rc = 1 ] && grep -Eq 'aten::sort +3  NOT SUPPORTED at .*make_ux_models.py:20, .*make_ux_models.py:21' $W/check2.txt"
# A kind the table lowers, but not with a node's arguments, is listed with
# what makes it unsupported, beside the kinds nothing lowers, before any work.
"$BIN" check "$W/video.pt" --input 1x3x4x8x8 --input 1x3x8x8 >"$W/check3.txt"; rc=$?
check "check lists every unsupported node, a dilated grouped convolution too" \
  "[ $rc = 1 ] && grep -Eq 'aten::_convolution \\(dilated grouped\\) +1  NOT SUPPORTED at .*make_ux_models.py' $W/check3.txt && grep -Eq 'aten::logcumsumexp +1  NOT SUPPORTED' $W/check3.txt && grep -Eq 'aten::_convolution +2  ok' $W/check3.txt && grep -q '2 node(s) of 2 kind(s)' $W/check3.txt"
"$BIN" "$W/video.pt" --input 1x3x4x8x8 --input 1x3x8x8 -o "$W/video.nnapi.pt" 2>"$W/err3"; rc=$?
check "the conversion's refusal names both" \
  "[ $rc = 1 ] && grep -q -- '- aten::logcumsumexp at' $W/err3 && grep -q -- '- aten::_convolution (dilated grouped) at' $W/err3 && [ ! -e $W/video.nnapi.pt ]"
"$BIN" check "$W/threesorts.pt" --input 1x3x8x8 --json >"$W/check.json"
"$PY" - "$W/check.json" <<'PYEOF' || fail=1
import json, sys
m = json.load(open(sys.argv[1]))["models"][0]
sort = [k for k in m["kinds"] if k["kind"] == "aten::sort"][0]
assert not m["converts"] and sort["count"] == 3 and not sort["supported"], m
assert len(sort["locations"]) == 3 and all("make_ux_models.py" in l for l in sort["locations"])
print("ok: check --json")
PYEOF

# In-place writes folded only into tensors folding made, before NNAPI reads them.
for m in write_weight write_computed write_read; do
  "$BIN" "$W/$m.pt" --input 2x4x4 -o "$W/$m.nnapi.pt" 2>"$W/$m.err"; echo $? >"$W/$m.rc"
done
check "an in-place write into a weight is refused naming the node" \
  "[ \$(cat $W/write_weight.rc) = 1 ] && grep -q 'node aten::fill_ at .*make_ux_models.py:.*writes into a constant of the model' $W/write_weight.err"
check "an in-place write into a computed tensor is refused naming the node" \
  "[ \$(cat $W/write_computed.rc) = 1 ] && grep -q 'node aten::fill_ at .*make_ux_models.py:.*an input is a tensor the model computes' $W/write_computed.err"
check "an in-place write after NNAPI read the tensor is refused" \
  "[ \$(cat $W/write_read.rc) = 1 ] && grep -q 'node aten::fill_ at .*already read as a constant' $W/write_read.err"

"$BIN" list-ops >"$W/ops.txt"; rc=$?
check "list-ops lists node kinds by family" \
  "[ $rc = 0 ] && grep -q '^convolution:' $W/ops.txt && grep -q '  aten::_convolution' $W/ops.txt"
"$BIN" list-ops --json | "$PY" -c "
import json, sys; ops = json.load(sys.stdin)
assert any(o['kind'] == 'aten::avg_pool2d' and 'count_include_pad' in o['note'] for o in ops)
assert all(set(o) == {'kind', 'family', 'note'} for o in ops)
# Issue 33: which kinds of scripted models' checks are folded, which lowered.
kinds = {o['kind']: o for o in ops}
for k in ('aten::__not__', 'aten::__contains__', 'aten::format'):
    assert kinds[k]['family'] == 'folded', k
for k in ('aten::is_floating_point', 'prim::device', 'aten::__is__', 'aten::__isnot__',
          'prim::unchecked_cast', 'aten::list'):
    assert kinds[k]['note'].startswith('folded'), k
for k in ('aten::_cast_Float', 'aten::_cast_Long'):
    assert kinds[k]['note'].startswith('lowered as aten::to'), k
assert kinds['aten::log1p']['family'] == 'pointwise'
assert kinds['aten::stft']['family'] == 'spectral' and 'CONV_2D' in kinds['aten::stft']['note']
assert 'dropped unlowered' in kinds['prim::If']['note']
print('ok: list-ops --json')" || fail=1

# A complex stft result read otherwise than by abs() or view_as_real(): refused
# before lowering, aten::stft named with its reader and what to do.
"$BIN" "$W/stft_angle.pt" --input 2x64 -o "$W/stft_angle.nnapi.pt" 2>"$W/err"; rc=$?
check "a complex stft result read by angle() is refused naming both" \
  "[ $rc = 1 ] && grep -q '^  - aten::stft (its complex result is read by aten::angle; NNAPI has no complex tensors: take .abs() or torch.view_as_real() of it' $W/err && grep -q '^  - aten::angle' $W/err"

# Errors: repeated kinds grouped, a converted module, a float spec for quantized input.
"$BIN" "$W/threesorts.pt" --input 1x3x8x8 2>"$W/err"; rc=$?
check "one unsupported kind used 3 times is one line" \
  "[ $rc = 1 ] && grep -q 'uses 3 node(s) of 1 kind(s)' $W/err && [ \$(grep -c '^  - aten::sort' $W/err) = 1 ] && grep -q '(3 nodes; the first' $W/err"
"$BIN" "$W/order.pt" --input 1x3x32x32 -o "$W/again.pt" 2>"$W/err"; rc=$?
check "a converted module fed back in is named as such" \
  "[ $rc = 1 ] && grep -q 'is already a converted NNAPI module' $W/err"
"$BIN" "$W/qinput.pt" --input 1x3x8x8 -o "$W/q.pt" 2>"$W/err"; rc=$?
check "a float spec for a model that takes quantized input says what to give" \
  "[ $rc = 1 ] && grep -q 'gets a float32 tensor (model input 0)' $W/err && grep -q 'dtype=quint8,scale=S,zero_point=Z' $W/err"
"$BIN" "$W/qinput.pt" --input 1x3x8x8,dtype=quint8,scale=0.0625,zero_point=128,nhwc -o "$W/q.pt" -q
check "...and with the quantized spec it converts" "[ -s $W/q.pt ]"

# --verify: a constant output warns, infinities fail, real inputs from a file.
"$BIN" "$W/constant.pt" --input 1x3x8x8 -o "$W/c.pt" --verify >"$W/out" 2>&1; rc=$?
check "--verify warns when the output is constant" "[ $rc = 0 ] && grep -q 'warning: every element of the model.s output is 0' $W/out"
"$BIN" "$W/constant.pt" --input 1x3x8x8 -o "$W/c_strict.pt" --verify --verify-strict >"$W/out" 2>&1; rc=$?
check "--verify-strict fails it: exit 1, the warning named, nothing written" \
  "[ $rc = 1 ] && grep -q 'with --verify-strict .*c_strict.pt. was not written' $W/out \
   && grep -q 'proves little: every element of the model.s output is 0' $W/out && [ ! -e $W/c_strict.pt ]"
"$BIN" "$W/inf.pt" --input 1x3x8x8 -o "$W/inf.nnapi.pt" --verify >"$W/out" 2>&1; rc=$?
check "--verify fails on infinities and writes nothing" \
  "[ $rc = 1 ] && grep -q 'NaN or infinity in the output' $W/out && [ ! -e $W/inf.nnapi.pt ]"
"$BIN" "$W/tiny.pt" --input 1x3x32x32 -o "$W/v.pt" --verify --verify-strict --verify-input "$W/inputs.pt" >"$W/out" 2>&1; rc=$?
# The line random inputs print ("verify on inputs 1x3x32x32") must not do:
# tests/cli/verify_input_test.py checks that the file's values are the ones run.
check "--verify-input runs the given tensors" \
  "[ $rc = 0 ] && grep -qF \"tiny.pt: verify on the --verify-input tensors '$W/inputs.pt' (1x3x32x32)\" $W/out"
"$BIN" "$W/tiny.pt" --input 1x3x32x32 -o "$W/v2.pt" --verify --verify-input "$W/wrong_inputs.pt" 2>"$W/err"; rc=$?
check "--verify-input of the wrong shape is exit 2 before any work" \
  "[ $rc = 2 ] && grep -q 'has shape 1x3x16x16' $W/err && [ ! -e $W/v2.pt ]"

# --min-android-api: the target decides which NNAPI operations may be used.
"$BIN" "$W/upsample_corners.pt" --input 1x3x0x0 -o "$W/up29.pt" 2>"$W/err"; rc=$?
check "what needs a newer target is exit 1 naming the level it needs" \
  "[ $rc = 1 ] && grep -q 'needs Android 11 (NNAPI feature level 4' $W/err \
   && grep -q 'min-android-api 30' $W/err && [ ! -e $W/up29.pt ]"
"$BIN" "$W/qupsample.pt" --input 1x3x4x4 -o "$W/qup29.pt" --verify --verify-strict -q; rc=$?
"$BIN" inspect "$W/qup29.pt" >"$W/out"
check "quantized bilinear upsampling at the default target: no RESIZE_BILINEAR" \
  "[ $rc = 0 ] && ! grep -q RESIZE_BILINEAR $W/out && grep -q ' QUANTIZE ' $W/out"
"$BIN" "$W/upsample.pt" --input 1x3x4x4 -o "$W/fup29.pt" --verify --verify-strict -q; rc=$?
"$BIN" inspect "$W/fup29.pt" >"$W/out"
check "float bilinear upsampling at the default target is two FULLY_CONNECTED, no RESIZE_BILINEAR" \
  "[ $rc = 0 ] && [ \$(grep -c ' FULLY_CONNECTED ' $W/out) = 2 ] && ! grep -q RESIZE_BILINEAR $W/out \
   && grep -q 'Android API level 29 or later' $W/out"
"$BIN" "$W/upsample.pt" --input 1x3x4x4 -o "$W/up30.pt" --min-android-api 30 --verify --verify-strict -q; rc=$?
"$BIN" inspect "$W/up30.pt" >"$W/out"
check "--min-android-api 30 allows it, and inspect shows the level the model needs" \
  "[ $rc = 0 ] && grep -q 'needs: NNAPI feature level 4, Android API level 30 or later' $W/out"
"$BIN" "$W/upsample.pt" --input 1x3x4x4 --min-android-api 28 2>"$W/err"; rc=$?
check "--min-android-api below 29 is exit 2" "[ $rc = 2 ] && grep -q 'min-android-api' $W/err"
"$BIN" "$W/bmm.pt" --input 3x4x5 --input 3x5x2 -o "$W/bmm29.pt" --verify --verify-strict -q; rc=$?
"$BIN" inspect "$W/bmm29.pt" >"$W/out"
check "bmm at the default target is FULLY_CONNECTED per batch entry, no BATCH_MATMUL" \
  "[ $rc = 0 ] && [ \$(grep -c ' FULLY_CONNECTED ' $W/out) = 3 ] && ! grep -q BATCH_MATMUL $W/out \
   && grep -q 'Android API level 29 or later' $W/out"
"$BIN" "$W/bmm.pt" --input 3x4x5 --input 3x5x2 -o "$W/bmm33.pt" --verify --verify-strict -q --min-android-api 33 \
  --report "$W/bmm.json"; rc=$?
"$BIN" inspect "$W/bmm33.pt" >"$W/out"
check "bmm at --min-android-api 33 is BATCH_MATMUL; the report names level 6 and API 33" \
  "[ $rc = 0 ] && grep -q ' BATCH_MATMUL .*(feature level 6)' $W/out \
   && grep -q '\"nnapi_feature_level\": 6' $W/bmm.json && grep -q '\"android_api\": 33' $W/bmm.json"
"$BIN" "$W/padded_encoder.pt" --input 1x0x8 --input 1x0,dtype=bool -o "$W/pe29.pt" \
  --verify --verify-strict --verify-shape 1x7x8 --verify-shape 1x7 >"$W/out" 2>&1; rc=$?
"$BIN" inspect "$W/pe29.pt" >"$W/insp" 2>&1
check "a flexible sequence length at the default target converts without BATCH_MATMUL and verifies" \
  "[ $rc = 0 ] && grep -q 'verify on inputs 1x7x8, 1x7' $W/out && ! grep -q BATCH_MATMUL $W/insp \
   && grep -q 'Android API level 29 or later' $W/insp && grep -q ' REDUCE_SUM ' $W/insp"
"$BIN" "$W/padded_encoder.pt" --input 0x0x8 --input 0x0,dtype=bool -o "$W/pe33.pt" \
  --min-android-api 33 --verify --verify-strict --verify-shape 2x7x8 --verify-shape 2x7 >"$W/out" 2>&1; rc=$?
check "a bool padding mask with a flexible length at API 33 converts and verifies" \
  "[ $rc = 0 ] && grep -q 'verify on inputs 2x7x8, 2x7' $W/out && [ -s $W/pe33.pt ]"

# CI reports: --junit and --report for a batch with one failure; a summary.
"$BIN" "$W/tiny.pt" "$W/threesorts.pt" --input 1x3x32x32 --out-dir "$W/out.d" \
  --junit "$W/junit.xml" --report "$W/report.json" 2>"$W/err"; rc=$?
check "a batch ends with a summary" "[ $rc = 1 ] && grep -q '1 of 2 model(s) converted, 1 failed' $W/err"
"$PY" - "$W/junit.xml" "$W/report.json" <<'PYEOF' || fail=1
import json, sys, xml.etree.ElementTree as ET
suite = ET.parse(sys.argv[1]).getroot()
assert suite.tag == "testsuite" and suite.get("tests") == "2" and suite.get("failures") == "1", (
    "junit testsuite: tests=%s failures=%s, want tests=2 failures=1"
    % (suite.get("tests"), suite.get("failures")))
cases = {c.get("name").rsplit("/", 1)[1]: c for c in suite.findall("testcase")}
assert cases["tiny.pt"].find("failure") is None
assert "aten::sort" in cases["threesorts.pt"].find("failure").text
r = json.load(open(sys.argv[2]))
assert r["schema_version"] == 3
bad = [m for m in r["models"] if m["model"].endswith("threesorts.pt")][0]
assert bad["unsupported"][0]["kind"] == "aten::sort" and bad["unsupported"][0]["count"] == 3
print("ok: --junit and --report")
PYEOF

[ $fail = 0 ] && echo "ux: all passed"
exit $fail

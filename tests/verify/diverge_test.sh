#!/bin/sh
# diverge_test.sh BIN PYTHON WORKDIR: --verify names the first diverging
# operation. The host runtime's test hook NNAPI_HOST_FAULT_OPERATION=K makes
# operation K's result wrong; the message and the --report must name
# operation K, the aten node it was lowered from and the line of
# diverge_model.py that made it (found here by its marker comment).
# And a run that fails on the runtime (NNAPI_HOST_FAIL_OPERATION=K: operation
# K fails, ANEURALNETWORKS_OP_FAILED) is one paragraph naming operation K,
# its node and line, and what the runtime said, not the TorchScript
# interpreter's traceback; nothing is written.
bin=$1; python=$2; work=$3
here=$(cd "$(dirname "$0")" && pwd)
src=$here/diverge_model.py
mkdir -p "$work" && "$python" "$src" "$work/net.pt" >/dev/null || exit 1
failed=0
bad() { echo "FAIL: $*"; failed=1; }

# line_of MARKER: "<line number>|<code>" of the model line with `# MARKER`.
line_of() { grep -n "# $1\$" "$src" | sed 's/^\([0-9]*\):[ ]*/\1|/'; }

# expect K OP NODE MARKER [SPEC_EXTRA] [UNCOMPARED]: fault K diverges at
# operation OP (of NNAPI type TYPE) lowered from NODE at the MARKER line.
expect() {
  k=$1; op=$2; type=$3; node=$4; marker=$5; nhwc=$6
  lc=$(line_of "$marker"); line=${lc%%|*}; code=${lc#*|}
  out=$work/k$k$nhwc
  err=$(NNAPI_HOST_FAULT_OPERATION=$k "$bin" "$work/net.pt" --input 1x3x8x8$nhwc --verify \
        -o "$out.nnapi.pt" --report "$out.json" 2>&1 >/dev/null); status=$?
  [ $status = 1 ] || bad "fault $k$nhwc: exit status $status, expected 1"
  want="first diverging operation: #$op $type, lowered from $node at $src:$line (\`$code\`)"
  printf '%s' "$err" | grep -qF -- "$want" || bad "fault $k$nhwc: message lacks '$want': $err"
  printf '%s' "$err" | grep -qF -- "does not match the model" ||
    bad "fault $k$nhwc: the verify failure text is gone: $err"
  "$python" - "$out.json" "$op" "$type" "$node" "$src:$line" <<'PY' || bad "fault $k$nhwc: report"
import json, sys
path, op, typ, node, source = sys.argv[1:]
d = json.load(open(path))["models"][0]["verify"]["divergence"]
want = {"located": True, "operation": int(op), "type": typ, "node": node, "source": source}
got = {k: d[k] for k in want}
if got != want or d["check"]["ok"] or d["check"]["max_abs_err"] <= 0:
    sys.exit(f"report divergence {d}, want {want}")
PY
}

# NCHW: CONV_2D, RELU, AVERAGE_POOL_2D, RESHAPE, FULLY_CONNECTED.
expect 0 0 CONV_2D aten::conv2d CONV ""
expect 1 1 RELU aten::relu RELU ""
expect 2 2 AVERAGE_POOL_2D aten::avg_pool2d POOL ""
expect 4 4 FULLY_CONNECTED aten::linear LINEAR ""
# NHWC: flatten first lays the data out as NCHW with a TRANSPOSE (operation
# 3), whose result holds no TorchScript value: the RESHAPE after it is named.
expect 3 4 RESHAPE aten::flatten FLATTEN ",nhwc"

# fails K TYPE NODE MARKER [SPEC_EXTRA]: operation K fails while the model runs.
fails() {
  k=$1; type=$2; node=$3; marker=$4; nhwc=$5
  lc=$(line_of "$marker"); line=${lc%%|*}; code=${lc#*|}
  out=$work/fail$k$nhwc.nnapi.pt
  err=$(NNAPI_HOST_FAIL_OPERATION=$k "$bin" "$work/net.pt" --input 1x3x8x8$nhwc --verify \
        -o "$out" 2>&1 >/dev/null); status=$?
  [ $status = 1 ] || bad "failure $k$nhwc: exit status $status, expected 1"
  want="its converted module failed on the NNAPI runtime with inputs of shape 1x3x8x8: NNAPI operation #$k $type, lowered from $node at $src:$line (\`$code\`) failed when the NNAPI model ran: ANeuralNetworksExecution_compute returned ANEURALNETWORKS_OP_FAILED: $type (operation $k): failed on purpose"
  printf '%s' "$err" | grep -qF -- "$want" || bad "failure $k$nhwc: message lacks '$want': $err"
  [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || bad "failure $k$nhwc: not one line: $err"
  printf '%s' "$err" | grep -q "Traceback\|TorchScript interpreter\|^nnrt:" &&
    bad "failure $k$nhwc: a traceback or the runtime's own line: $err"
  [ -e "$out" ] && bad "failure $k$nhwc: $out was written"
}
fails 0 CONV_2D aten::conv2d CONV ""
fails 4 FULLY_CONNECTED aten::linear LINEAR ""
# The layout TRANSPOSE has no node of its own: the node of the value it computes.
fails 3 TRANSPOSE aten::flatten FLATTEN ",nhwc"

# No fault (an index past the last operation): verify passes, and no
# diagnosis runs.
out=$(NNAPI_HOST_FAULT_OPERATION=99 "$bin" "$work/net.pt" --input 1x3x8x8 --verify \
      -o "$work/ok.nnapi.pt" 2>&1); status=$?
[ $status = 0 ] || bad "fault 99: exit status $status: $out"
printf '%s' "$out" | grep -q "diverging" && bad "fault 99: diagnosis ran: $out"

[ $failed = 0 ] && echo "diverge: all passed"
exit $failed

#!/usr/bin/env bash
# The CLI and the host runtime built with AddressSanitizer and
# UndefinedBehaviorSanitizer (in ${ASAN_BUILD_DIR:-build-asan}), run on the
# example model (convert, --verify, --lite, --parts, inspect), on every
# hostile-input case of tests/cli/hostile (hostile archives, debug records,
# batch isolation, outputs, full disks, signals, manifests, inspect) and on
# every archive form PyTorch writes (tests/cli/test_archive_forms.py: each
# converted with --verify, loaded, or refused as from an old PyTorch). Any
# sanitizer report, or any case's own failure, fails it.
# Usage: tools/asan-check.sh            (after tools/install-deps.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${ASAN_BUILD_DIR:-build-asan}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNNAPI_CONVERT_BUILD_TESTS=OFF \
  -DNNAPI_CONVERT_SANITIZE=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target nnapi-convert neuralnetworks
bin=$root/$build/nnapi-convert
# LibTorch is not instrumented: leaks at exit and its shadow-gap use are not ours.
# allocator_may_return_null: a huge allocation throws std::bad_alloc, as without ASan.
export ASAN_OPTIONS=detect_leaks=0:protect_shadow_gap=0:exitcode=86:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=87

status=0
log=$work/sanitizer.log
run() {  # run CMD...: any sanitizer report fails the check
  if ! "$@" >"$work/out" 2>"$work/err"; then :; fi
  if grep -qE "AddressSanitizer|runtime error:|UndefinedBehaviorSanitizer" "$work/err"; then
    echo "sanitizer report: $*"; cat "$work/err" >>"$log"; status=1
  fi
}
/usr/bin/python3 examples/make_example.py "$work/tiny.pt" >/dev/null
run "$bin" "$work/tiny.pt" --input 1x3x32x32 --nhwc -o "$work/tiny.nnapi.pt" --lite --parts "$work/parts" --verify
run "$bin" "$work/tiny.pt" --input 0x3x32x32 -o "$work/flex.nnapi.pt" --verify --verify-shape 2x3x32x32
run "$bin" inspect "$work/tiny.nnapi.pt" --json
run "$bin" inspect "$work/parts/ser_model.bin"
# The hostile cases: their own verdicts, and no sanitizer report in any of them.
/usr/bin/python3 tests/cli/hostile/make_hostile.py "$work/hostile" >/dev/null
banned="AddressSanitizer|runtime error:|LeakSanitizer"
# Two cases cannot run under the sanitizers: ASan cannot map its shadow memory
# under `ulimit -v`, and UBSan's type checks need file descriptors that the
# descriptor-limit case takes away. They run here against the plain build
# (${PLAIN_BUILD_DIR:-build}), so that no case of the suite is left out.
unsanitizable="^diskfull\.rlimit_as|^batch\.emfile"
if ! NNAPI_HOSTILE_BANNED="$banned" NNAPI_HOSTILE_SKIP="$unsanitizable" \
    /usr/bin/python3 tests/cli/hostile/run_hostile.py "$bin" "$work/hostile" 2>&1 | tee "$work/hostile.log"; then
  status=1
fi
plain=${PLAIN_BUILD_DIR:-build}
cmake -S . -B "$plain" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$plain" -j"$(nproc)" --target nnapi-convert
if ! /usr/bin/python3 tests/cli/hostile/run_hostile.py "$root/$plain/nnapi-convert" "$work/hostile" \
    --only "$unsanitizable" 2>&1 | tee "$work/hostile_plain.log"; then
  status=1
fi
# Every archive form PyTorch writes (issue 32), through the sanitized binary.
if ! NNAPI_HOSTILE_BANNED="$banned" /usr/bin/python3 tests/cli/test_archive_forms.py "$bin" \
    "$work/forms" 2>&1 | tee "$work/forms.log"; then
  status=1
fi
[ -s "$log" ] && cat "$log"
if [ $status -eq 0 ]; then echo "asan-check: clean"; else echo "asan-check: FAILED"; fi
exit $status

#!/bin/sh
# expect_exit.sh STATUS REGEX CMD...: runs CMD, requires exit status STATUS
# and REGEX (grep -E, matched across lines) in its stderr, and no C++ backtrace.
want=$1; pattern=$2; shift 2
err=$("$@" 2>&1 >/dev/null); got=$?
status=0
if [ "$got" != "$want" ]; then echo "exit status $got, expected $want"; status=1; fi
if ! printf "%s" "$err" | grep -Ezq -- "$pattern"; then echo "message lacks /$pattern/"; status=1; fi
if printf '%s' "$err" | grep -q "frame #"; then echo "message has a C++ backtrace"; status=1; fi
printf '%s\n' "$err"
exit $status

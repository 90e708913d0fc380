"""What the Python tests of the command line share (fallback_test.py,
verify_input_test.py, options_test.py): BIN and WORK from the command line, one "ok: ..." or
"FAILED: ..." line per check, running the binary, and the closing line.
Import it from a test script run as `python3 tests/cli/<test>.py BIN WORK`."""
import os
import subprocess
import sys

BIN, WORK = sys.argv[1], sys.argv[2]
os.makedirs(WORK, exist_ok=True)
failures = []


def check(name, ok, detail=""):
    print(("ok: " if ok else "FAILED: ") + name + ("" if ok else " " + str(detail)))
    if not ok:
        failures.append(name)


def run(*args, stdout_only=False):
    """Runs BIN with args; returns its exit status and standard error + output
    (with stdout_only, the output alone: a JSON document)."""
    p = subprocess.run([BIN, *args], capture_output=True, text=True)
    return p.returncode, p.stdout if stdout_only else p.stderr + p.stdout


def path(name):
    return os.path.join(WORK, name)


def finish(suite):
    """Prints "SUITE: all passed" (what ctest looks for) or the count failed; exits."""
    print(f"{suite}: all passed" if not failures else f"{suite}: {len(failures)} FAILED")
    sys.exit(1 if failures else 0)

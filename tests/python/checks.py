"""What the tests of tests/python share: a named check, the end line, a file's SHA-256."""
import hashlib
import sys

failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def finish(name):
    print(f"{name}: all passed" if not failures else f"{name}: {len(failures)} failed")
    sys.exit(1 if failures else 0)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()

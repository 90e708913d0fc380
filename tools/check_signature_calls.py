#!/usr/bin/env python3
"""No positional operand list for an NNAPI operation that has a signature (issue 36).

src/nnapi/op_signature.cpp holds one operand signature per NNAPI operation it knows: each
input's role and the arity forms. The lowering adds such an operation through
add_by_roles or a helper of src/lower/signature_inputs.h, which place each operand where
the signature puts its role; it never lists the operands itself. This script reads the
operations of the signature table and every `add_operation(Op::X, ...)` of src/, and names
each call of an operation with a signature whose inputs are not placed by
`signature_inputs(...)`.

It reads the source text, so it sees the operation only where the call names it: a call
whose operation is a variable (`add_operation(op, {...}, ...)`) is named in the summary,
for review, not checked. src/runtime is left out (its Model::add_operation is the host
runtime's, fed by the app).

Usage: check_signature_calls.py [--root TREE]
Prints "signature calls: ok, N calls checked; not checked, the operation in a variable:
FILE:LINE ..." and exits 0, or names each positional call (file:line, the operation) and
exits 1; exits 2 when it finds no signature table.
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# An operation added with its operation named: add_operation(Op::Reshape, <inputs>...
LITERAL = re.compile(r"\badd_operation\s*\(\s*(?:nnapi::)?Op::(\w+)\s*,\s*")
ANY = re.compile(r"\badd_operation\s*\(\s*([\w:]+)\s*,\s*")


def signature_ops(root):
    """The Op enumerators of op_signature.cpp's table (the body of table())."""
    path = os.path.join(root, "src", "nnapi", "op_signature.cpp")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"const std::vector<Signature>& table\(\) \{(.*?)\n\}\n", text, re.S)
    ops = set(re.findall(r"\bOp::(\w+)", m.group(1))) if m else set()
    if not ops:
        raise SystemExit(f"signature calls: found no signature table in {path}")
    return ops


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def positional_calls(text, ops):
    """[(offset, op)] of each add_operation of an op in `ops` not given signature_inputs(...)."""
    found = []
    for m in LITERAL.finditer(text):
        if m.group(1) in ops and not text.startswith("signature_inputs(", m.end()):
            found.append((m.start(), m.group(1)))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=HERE)
    a = ap.parse_args()
    ops = signature_ops(a.root)
    checked = 0
    bad, variable = [], []
    runtime = os.path.join(a.root, "src", "runtime")
    for top, dirs, names in os.walk(os.path.join(a.root, "src")):
        dirs[:] = sorted(d for d in dirs if os.path.join(top, d) != runtime)
        for n in sorted(names):
            if not n.endswith((".cpp", ".h", ".inc")):
                continue
            path = os.path.join(top, n)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            rel = os.path.relpath(path, a.root)
            for m in ANY.finditer(text):
                if "Op::" in m.group(1):
                    checked += 1
                elif not text.startswith("signature_inputs(", m.end()):
                    variable.append(f"{rel}:{line_of(text, m.start())}")
            for offset, op in positional_calls(text, ops):
                bad.append(f"{rel}:{line_of(text, offset)}: add_operation(Op::{op}, ...) "
                           f"lists the operands of an operation that has a signature "
                           f"(src/nnapi/op_signature.cpp): add it with add_by_roles or a helper "
                           f"of src/lower/signature_inputs.h")
    if bad:
        print("\n".join(sorted(bad)))
        print(f"signature calls: {len(bad)} of {checked} calls list their operands")
        return 1
    print(f"signature calls: ok, {checked} calls checked; not checked, the operation in a "
          f"variable: {' '.join(variable) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

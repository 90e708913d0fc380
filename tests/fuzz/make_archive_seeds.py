#!/usr/bin/env python3
"""make_archive_seeds.py OUT_DIR: the seed corpus of fuzz_archive, generated
with Debian's /usr/bin/python3 (torch 1.13) at test time, never committed.

One small archive of each form PyTorch writes (the forms of
tests/cli/archive_forms.py, with small modules so the fuzzer's inputs stay
short): torch.jit.save of traced, scripted (class types, containers),
frozen and quantized modules, with _extra_files; _save_for_lite_interpreter
with and without optimize_for_mobile, and backported to every bytecode
version _backport_for_mobile writes; the PyTorch 1.3 layout; and the two
hostile lies of issue 32 (a tensor larger than its storage, a storage offset
of 2^28), so the fuzzer starts next to the check's edges.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.dont_write_bytecode = True

import archive_forms  # noqa: E402


def lie(src, dst, old, new):
    """`src` with its data.pkl's first match of `old` replaced by `new`."""
    def edit(name, data):
        if name.endswith("/data.pkl"):
            data, n = re.subn(old, new, data, count=1, flags=re.S)
            assert n == 1, (src, old)
        return data

    archive_forms._rewrite(src, dst, edit)


def main():
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    made = archive_forms.make_all(out, small=True)
    traced = os.path.join(out, "traced.pt")
    # The conv weight (4x3x3x3) declared 200x3x3x3; its storage offset 2^28.
    lie(traced, os.path.join(out, "lie_sizes.pt"), rb"\(K\x04K\x03K\x03K\x03t",
        b"(K\xc8K\x03K\x03K\x03t")
    lie(traced, os.path.join(out, "lie_offset.pt"), rb"(tQq.)K\x00\(",
        lambda m: m.group(1) + b"J\x00\x00\x00\x10(")
    print("make_archive_seeds: %d seeds in %s" % (len(made) + 2, out))


if __name__ == "__main__":
    main()

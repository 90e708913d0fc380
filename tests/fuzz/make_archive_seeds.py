#!/usr/bin/env python3
"""make_archive_seeds.py OUT_DIR: the seed corpus of fuzz_archive, generated
with Debian's /usr/bin/python3 (torch 1.13) at test time, never committed.

One small archive of each form PyTorch writes (the forms of
tests/cli/archive_forms.py, with small modules so the fuzzer's inputs stay
short): torch.jit.save of traced, scripted (class types, containers),
frozen and quantized modules, with _extra_files; _save_for_lite_interpreter
with and without optimize_for_mobile, and backported to every bytecode
version _backport_for_mobile writes; the PyTorch 1.3 layout; and the
hostile lies of issue 32 (a tensor larger than its storage, a storage offset
of 2^28, a quantized convolution's stride of 0 in a module's state and in
frozen packed parameters), so the fuzzer starts next to the check's edges.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.dont_write_bytecode = True

import archive_forms  # noqa: E402


def lie(src, dst, old, new, record="/data.pkl"):
    """`src` with its `record`'s first match of `old` replaced by `new`."""
    def edit(name, data):
        if name.endswith(record):
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
    # A quantized Conv2d(3, 4, 3)'s stride (1, 1) made (0, 1): in the module's
    # state, and in the int16 configuration torch.jit.freeze keeps
    # ([2, stride x2, ...]): fuzz run 7's SIGFPE.
    lie(os.path.join(out, "quantized.pt"), os.path.join(out, "lie_qconv_stride0.pt"),
        rb"(K\x03K\x04K\x03K\x03\x86q.)K\x01", lambda m: m.group(1) + b"K\x00")
    lie(os.path.join(out, "quantized_frozen.pt"),
        os.path.join(out, "lie_qconv_frozen_stride0.pt"), rb"^\x02\x00\x01\x00\x01\x00",
        b"\x02\x00\x00\x00\x01\x00", record="/constants/0")
    print("make_archive_seeds: %d seeds in %s" % (len(made) + 4, out))


if __name__ == "__main__":
    main()

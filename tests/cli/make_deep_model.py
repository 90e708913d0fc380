#!/usr/bin/env python3
"""Makes a TorchScript model whose code LibTorch's compiler recurses deeply
into when it loads it (tests/cli CMakeLists: cli.batch_large_stack): a
method `deep` of DEPTH nested `if` blocks, which forward does not call.
Python's own parser refuses such nesting (100 levels), so the model is
saved with a plain `deep` and its code file rewritten; without a debug_pkl
(the source ranges of the code as saved). Brackets stay shallow: the
archive check allows 256 levels of them, and no limit on indentation.

    /usr/bin/python3 tests/cli/make_deep_model.py OUT.pt DEPTH
"""
import os
import sys
import zipfile

import torch


class Deep(torch.nn.Module):
    def forward(self, x):
        return x + 1.0

    @torch.jit.export
    def deep(self, x):
        return x


def main():
    out, depth = sys.argv[1], int(sys.argv[2])
    plain = out + ".plain"
    torch.jit.script(Deep().eval()).save(plain)
    nested = "".join(" " * (4 + k) + "if bool(torch.gt(torch.numel(x), 0)):\n"
                     for k in range(depth))
    nested += " " * (4 + depth) + "x = torch.add(x, 1.)\n"
    rewritten = False
    with zipfile.ZipFile(plain) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith(".debug_pkl"):
                continue
            if info.filename.endswith("code/__torch__.py"):
                src = data.decode()
                head, sep, tail = src.partition("  def deep(")
                body = "    return x\n"
                assert sep and tail.endswith(body), src
                data = (head + sep + tail[:-len(body)] + nested + body).encode()
                rewritten = True
            zout.writestr(info, data)
    os.remove(plain)
    assert rewritten
    print(f"wrote {out}: {depth} nested if blocks")


if __name__ == "__main__":
    main()

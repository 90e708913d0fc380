#!/usr/bin/env python3
"""--float16 on the zoo's float models: file sizes and the error against
eager float32, beside the float32 conversion's (docs/quantization.md,
float16 models).

    LD_LIBRARY_PATH=build/runtime /usr/bin/python3 tools/float16_zoo.py \
        --bin build/nnapi-convert --dir /tmp/f16zoo [--models resnet18,mobilenet_v2]

Each model is torchvision's, randomly initialised as tools/model_zoo.py does
(realistic_init: He-normal weights, random batch-norm statistics), traced at
1x3x224x224 and converted with --nhwc, once plainly and once with --float16.
Both converted modules run on the host NNAPI runtime on the same N seeded
inputs (randn); against eager float32 the table gives the file's bytes, the
max abs error, the max abs error relative to the output's RMS, the worst
cosine similarity of an output row and top-1 agreement.

With --rule, a second table: --verify's float16 rule (docs/verify.md): the
RMS error relative to the output's RMS, rms(nnapi - model) / rms(model), of
the --float16 conversion against the bound L * 2^-11 (L: its NNAPI operation
count), and of the same conversion against the model made wrong in each of
the ways wrong_forms lists (what a wrong conversion would compute).
"""
import copy
import argparse
import os
import subprocess
import sys

import json

import torch
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_zoo import realistic_init  # noqa: E402


class Shifted(torch.nn.Module):
    """A convolution padded (0, 2) on the right and bottom instead of (1, 1)."""

    def __init__(self, conv):
        super().__init__()
        self.conv = conv

    def forward(self, x):
        c = self.conv
        return F.conv2d(F.pad(x, (0, 2, 0, 2)), c.weight, c.bias, c.stride, 0, c.dilation,
                        c.groups)


class Reversed(torch.nn.Module):
    """The model on its input's channels in reverse order (BGR for RGB)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x.flip(1))


def replace(model, name, module):
    parent, _, leaf = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, leaf, module)


def wrong_forms(model):
    """`model` (eval mode) with one mistake a converter can make, by kind:
    transposed: the middle 3x3 convolution's kernel transposed (kh <-> kw);
    padding: that convolution padded (0, 2) instead of (1, 1); channels: the
    input's channels reversed; activation: the third-last ReLU/ReLU6 module
    left out (a module used twice, as in resnet's blocks, both times)."""
    convs = [n for n, m in model.named_modules()
             if isinstance(m, torch.nn.Conv2d) and m.kernel_size == (3, 3)]
    middle = convs[len(convs) // 2]
    relus = [n for n, m in model.named_modules()
             if isinstance(m, (torch.nn.ReLU, torch.nn.ReLU6))]
    forms = {}
    for kind in ("transposed", "padding", "channels", "activation"):
        wrong = copy.deepcopy(model)
        if kind == "transposed":
            w = wrong.get_submodule(middle).weight
            w.data = w.data.transpose(2, 3).contiguous()
        elif kind == "padding":
            replace(wrong, middle, Shifted(wrong.get_submodule(middle)))
        elif kind == "channels":
            wrong = Reversed(wrong)
        else:
            replace(wrong, relus[-3], torch.nn.Identity())
        forms[kind] = wrong.eval()
    return forms


def rms_rel(a, b):
    return ((a - b).pow(2).mean().sqrt() / b.pow(2).mean().sqrt()).item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--models", default="resnet18,mobilenet_v2")
    p.add_argument("--inputs", type=int, default=4)
    p.add_argument("--rule", action="store_true")
    a = p.parse_args()
    rules = []
    os.makedirs(a.dir, exist_ok=True)
    print("| model | float32 file (bytes) | float16 file (bytes) | ratio | float32 conversion: "
          "max abs err | float16: max abs err | float16: max err / RMS | float16: min cosine "
          "| float16: top-1 agreement |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in a.models.split(","):
        model = realistic_init(getattr(torchvision.models, name)()).eval()
        src = os.path.join(a.dir, name + ".pt")
        torch.jit.trace(model, torch.randn(1, 3, 224, 224)).save(src)
        files = {}
        for form, extra in (("f32", []), ("f16", ["--float16"])):
            out = os.path.join(a.dir, f"{name}.{form}.nnapi.pt")
            subprocess.run([a.bin, src, "--input", "1x3x224x224", "--nhwc", "-o", out, "-q",
                            *extra], check=True)
            files[form] = out
        g = torch.Generator().manual_seed(1)
        xs = [torch.randn(1, 3, 224, 224, generator=g) for _ in range(a.inputs)]
        with torch.no_grad():
            eager = torch.cat([model(x) for x in xs])
            got = {f: torch.cat([torch.jit.load(files[f])(x) for x in xs]) for f in files}
        rms = eager.pow(2).mean().sqrt().item()
        err = {f: (got[f] - eager).abs().max().item() for f in got}
        cos = torch.nn.functional.cosine_similarity(got["f16"].double(), eager.double(), dim=1)
        top1 = (got["f16"].argmax(1) == eager.argmax(1)).float().mean().item()
        size = {f: os.path.getsize(files[f]) for f in files}
        print(f"| {name} | {size['f32']} | {size['f16']} | {size['f16'] / size['f32']:.3f} | "
              f"{err['f32']:.2e} | {err['f16']:.2e} | {err['f16'] / rms:.2e} | "
              f"{cos.min().item():.6f} | {100 * top1:.0f}% |", flush=True)
        if a.rule:
            info = subprocess.run([a.bin, "inspect", "--json", files["f16"]], check=True,
                                  capture_output=True, text=True).stdout
            ops = len(json.loads(info)["operations"])
            with torch.no_grad():
                wrong = {k: torch.cat([m(x) for x in xs]) for k, m in wrong_forms(model).items()}
            rules.append(f"| {name} | {ops} | {ops / 2048:.4f} | "
                         f"{rms_rel(got['f16'], eager):.2g} | " +
                         " | ".join(f"{rms_rel(got['f16'], w):.2g}" for w in wrong.values()) +
                         " |")
    if rules:
        print()
        print("| model | operations L | bound L u | `--float16` RMS err / output RMS | "
              "transposed 3x3 kernel (middle conv) | padding (0,2) for (1,1) (middle 3x3 "
              "conv) | input channels reversed | third-last ReLU left out |")
        print("|---|---|---|---|---|---|---|---|")
        print("\n".join(rules))


if __name__ == "__main__":
    main()

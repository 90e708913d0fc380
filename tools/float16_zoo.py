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
"""
import argparse
import os
import subprocess
import sys

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_zoo import realistic_init  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--models", default="resnet18,mobilenet_v2")
    p.add_argument("--inputs", type=int, default=4)
    a = p.parse_args()
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


if __name__ == "__main__":
    main()

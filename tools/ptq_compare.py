#!/usr/bin/python3
"""nnapi-convert --quantize against PyTorch's FX post-training quantization.

Usage: tools/ptq_compare.py --bin build/nnapi-convert [--only a,b] [--work DIR]
    [--calibration N] [--holdout M] [--method histogram|minmax] [--size S] [--images]

For each model (torchvision's with tools/model_zoo.py's realistic random
weights, traced): N + M samples (seeded; smooth random images: a normal
field blurred, normalized as ImageNet's), saved with torch.save; nnapi-convert
--quantize uint8 --calibration on them, --calibration-holdout M, --report;
and FX graph-mode PTQ (prepare_fx with get_default_qconfig_mapping("qnnpack"),
the same N calibration samples, convert_fx), run eagerly with the QNNPACK
engine on the M holdout samples. Prints per model the SQNR (dB) against the
float model and top-1 agreement of both, whether nnapi-convert's
fake-quant check passed, and how many QUANTIZE and DEQUANTIZE operations
(float islands) its NNAPI model has. A model FX cannot trace is reported as such.

--images: the samples are PNG files instead (the same smooth random images,
8-bit, 8/7 of the model's size on one side and 10/7 on the other), given to
nnapi-convert as --calibration-dir with ImageNet's --mean and --std; FX and
the float model get them through torchvision (PIL decoding, ToTensor,
Resize(size, antialias=True) on the tensor, CenterCrop(size), Normalize:
what nnapi-convert computes from them).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_zoo  # noqa: E402

MODELS = ["mobilenet_v2", "resnet18", "efficientnet_b0", "mobilenet_v3_large", "vit", "unet"]


def build(name):
    if name == "vit":
        import torchvision
        m = torchvision.models.VisionTransformer(image_size=64, patch_size=16, num_layers=2,
                                                 num_heads=4, hidden_dim=64, mlp_dim=128,
                                                 num_classes=10)
        return model_zoo.realistic_init(m).eval(), 64
    if name == "unet":
        return model_zoo.realistic_init(unet()).eval(), 64
    return model_zoo.build_model("float", name)[0], 224


def unet():
    import torch.nn as nn

    def block(i, o):
        return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(),
                             nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.d1, self.d2, self.mid = block(3, 16), block(16, 32), block(32, 64)
            self.up2, self.u2 = nn.ConvTranspose2d(64, 32, 2, stride=2), block(64, 32)
            self.up1, self.u1 = nn.ConvTranspose2d(32, 16, 2, stride=2), block(32, 16)
            self.out = nn.Conv2d(16, 2, 1)
            self.pool = nn.MaxPool2d(2)

        def forward(self, x):
            a = self.d1(x)
            b = self.d2(self.pool(a))
            c = self.mid(self.pool(b))
            b = self.u2(torch.cat([self.up2(c), b], 1))
            a = self.u1(torch.cat([self.up1(b), a], 1))
            return self.out(a)
    return UNet()


def samples(n, size, seed):
    """Smooth random images normalized like ImageNet's: closer to real
    inputs' statistics than white noise."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 3, size // 8, size // 8, generator=g)
    x = torch.nn.functional.interpolate(x, size=(size, size), mode="bilinear",
                                        align_corners=False)
    x = x + 0.05 * torch.randn(n, 3, size, size, generator=g)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    return ((x.clamp(0, 1) - mean) / std).float()


def image_samples(n, size, seed, folder):
    """`n` PNG images (8-bit RGB, larger than size x size, one 8/7 and the
    other 10/7 of it) in `folder`, named in order, and what torchvision
    makes of them for a size x size model."""
    from PIL import Image
    import torchvision.transforms as T
    g = torch.Generator().manual_seed(seed)
    h, w = size * 8 // 7, size * 10 // 7
    x = torch.rand(n, 3, h // 8, w // 8, generator=g)
    x = torch.nn.functional.interpolate(x, size=(h, w), mode="bilinear", align_corners=False)
    x = (x + 0.05 * torch.randn(n, 3, h, w, generator=g)).clamp(0, 1)
    pixels = (x * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    os.makedirs(folder, exist_ok=True)
    for f in os.listdir(folder):
        os.remove(os.path.join(folder, f))
    prep = T.Compose([T.ToTensor(), T.Resize(size, antialias=True), T.CenterCrop(size),
                      T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    out = []
    for i in range(n):
        f = os.path.join(folder, "img%04d.png" % i)
        Image.fromarray(pixels[i], "RGB").save(f)
        out.append(prep(Image.open(f).convert("RGB")))
    return torch.stack(out)


def sqnr(ref, test):
    noise = (ref.double() - test.double()).pow(2).sum().item()
    signal = ref.double().pow(2).sum().item()
    return 200.0 if noise == 0 else min(200.0, 10 * math.log10(signal / noise))


def top1(ref, test):
    if ref.dim() != 2 or ref.size(1) < 2:
        return None
    return (ref.argmax(1) == test.argmax(1)).float().mean().item()


def fx_ptq(model, cal, hold):
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx
    import copy
    torch.backends.quantized.engine = "qnnpack"
    # PyTorch 1.13's QNNPACK quantized ReLU6 of a channels-last tensor is
    # wrong in eager mode (docs/quantization.md): FX's model gets contiguous
    # inputs to its ReLU6s, or its figures would be those of that bug.
    model = model_zoo.contiguous_relu6(copy.deepcopy(model))
    try:
        prepared = prepare_fx(model, get_default_qconfig_mapping("qnnpack"), (cal[:1],))
    except Exception as e:  # noqa: BLE001 (FX's tracer raises many kinds)
        return None, "FX cannot trace it: %s" % str(e).splitlines()[0][:100]
    with torch.no_grad():
        for i in range(cal.size(0)):
            prepared(cal[i:i + 1])
        q = convert_fx(prepared)
        out = torch.cat([q(hold[i:i + 1]) for i in range(hold.size(0))])
    return out, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--only")
    ap.add_argument("--work", default="/tmp/ptq_compare")
    ap.add_argument("--calibration", type=int, default=16)
    ap.add_argument("--holdout", type=int, default=8)
    ap.add_argument("--method", default="histogram")
    ap.add_argument("--size", type=int, default=0, help="image size (default: the model's)")
    ap.add_argument("--images", action="store_true",
                    help="calibrate on PNG files (--calibration-dir, --mean, --std)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    names = args.only.split(",") if args.only else MODELS
    print("| model | nnapi-convert SQNR dB | top-1 | fake-quant check | QUANTIZE/DEQUANTIZE ops |"
          " FX SQNR dB | FX top-1 | time s |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        torch.manual_seed(0)
        model, size = build(name)
        size = args.size or size
        n, m = args.calibration, args.holdout
        if args.images:
            folder = os.path.join(args.work, name + "-images")
            data = image_samples(n + m, size, 1, folder)
            source = ["--calibration-dir", folder, "--mean", "0.485,0.456,0.406", "--std",
                      "0.229,0.224,0.225"]
        else:
            data = samples(n + m, size, 1)
            torch.save(data, os.path.join(args.work, name + "-samples.pt"))
            source = ["--calibration", os.path.join(args.work, name + "-samples.pt")]
        cal, hold = data[:n], data[n:]
        path = os.path.join(args.work, name + ".pt")
        torch.jit.trace(model, cal[:1], check_trace=False).save(path)
        report = os.path.join(args.work, name + ".json")
        t0 = time.time()
        r = subprocess.run([args.bin, path, "--input", "1x3x%dx%d" % (size, size), "--nhwc",
                            "--quantize", "uint8", *source,
                            "--calibration-holdout", str(m), "--calibration-method", args.method,
                            "-o", os.path.join(args.work, name + ".nnapi.pt"), "--report", report,
                            "-q"], capture_output=True, text=True)
        secs = time.time() - t0
        if r.returncode != 0:
            ours = ("fails: " + r.stderr.strip().splitlines()[-1][:150], "", "", "")
        else:
            rep = json.load(open(report))["models"][0]
            q = rep["quantization"]
            o = q["quality"]["outputs"][0]
            f = q["fake_quant"]
            lo = f["outputs"][0]
            ours = ("%.1f" % o["sqnr_db"],
                    "" if o["top1_agreement"] is None else "%.0f%%" % (100 * o["top1_agreement"]),
                    "%s (ops: max %.2f quantum, %.4f%% off by one; NNAPI vs quantized graph: "
                    "max %d)" % ("ok" if f["ok"] else "FAILS", f["max_quanta"],
                                 100 * f["off_by_one_share"], lo["max_quanta"]),
                    "%d/%d" % (rep["operations"].get("QUANTIZE", 0),
                               rep["operations"].get("DEQUANTIZE", 0)))
        with torch.no_grad():
            ref = torch.cat([model(hold[i:i + 1]) for i in range(m)])
        fx_out, why = fx_ptq(model, cal, hold)
        fx = (why, "") if fx_out is None else (
            "%.1f" % sqnr(ref, fx_out),
            "" if top1(ref, fx_out) is None else "%.0f%%" % (100 * top1(ref, fx_out)))
        print("| %s | %s | %s | %s | %s | %s | %s | %.0f |" % ((name,) + ours + fx + (secs,)),
              flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""--quantize uint8 --calibration-dir of PNG/JPEG images, as --help states it.

Usage: quantize_images_test.py BIN WORK (with libneuralnetworks.so, the host
runtime, on LD_LIBRARY_PATH). Images of several sizes and modes are written
here with PIL. Checks:
- the calibration tensors nnapi-convert computes from the images (dumped by
  the test hook NNAPI_CONVERT_TEST_DUMP_CALIBRATION) are what PIL and
  torchvision compute: Image.open(...).convert("RGB" or "L"), to_tensor,
  resize to cover H x W with the aspect ratio kept (the constraining side
  exactly H or W, the other floor(side x scale)) with antialiased bilinear
  resize, center_crop to H x W, normalize(mean, std); within 1e-5 for PNG,
  and for JPEG (decoded by stb_image here, by libjpeg in PIL) a mean
  difference below 0.1/255 and a largest below 2/255 of the 0..1 scale
  (measured: 0 for PNG; at most 0.025/255 and 0.65/255 for JPEG);
- a gray (1-channel) model: color images become PIL's convert("L");
- --input with a batch of 2: two images a sample;
- a progress line while images are read, on a terminal only;
- the conversion on images converts and passes --verify with the proof;
- errors: an empty folder, a folder of other files, a file that is not an
  image (named, with stb_image's reason), .pt files and images mixed, a
  model input images cannot feed (2 channels, flexible H/W, a two-input
  model), an odd image count for a batch of 2: exit 1, nothing written;
  --mean/--std of the wrong arity, a zero --std, --mean without
  --calibration-dir, --mean with a folder of .pt files, and two --input
  specs for a one-input model (the converter's own message, before any
  sample is read): exit 2, nothing written.
Prints "quantize_images: all passed" when every check passed.
"""
import json
import os
import shlex
import shutil
import subprocess
import sys

import torch
import torch.nn as nn
import torchvision.transforms.functional as TF
from PIL import Image
from torchvision.transforms import InterpolationMode

sys.dont_write_bytecode = True  # importing cli_checks writes no __pycache__ into the sources
from cli_checks import BIN, check, finish, path, run  # noqa: E402

DUMP = "NNAPI_CONVERT_TEST_DUMP_CALIBRATION"
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


class Net(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1 = nn.Conv2d(c, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        y = torch.relu(self.c2(y)) + y
        return self.fc(nn.functional.adaptive_avg_pool2d(y, 1).flatten(1))


class TwoInputs(nn.Module):
    def forward(self, x, y):
        return x + y


torch.manual_seed(0)
H, W = 24, 32
for c in (3, 1):
    torch.jit.trace(Net(c).eval(), torch.randn(1, c, H, W)).save(path("net%d.pt" % c))
torch.jit.trace(TwoInputs().eval(), (torch.randn(1, 3, H, W),) * 2).save(path("two.pt"))


def smooth_image(h, w, mode, seed):
    """A smooth random picture (low-frequency noise upsampled), as PIL `mode`."""
    g = torch.Generator().manual_seed(seed)
    low = torch.rand(1, 4, 5, 5, generator=g)
    x = nn.functional.interpolate(low, size=(h, w), mode="bicubic", align_corners=False)
    x = (x.clamp(0, 1) * 255).round().to(torch.uint8)[0].permute(1, 2, 0).numpy()
    rgba = Image.fromarray(x, "RGBA")
    return rgba if mode == "RGBA" else rgba.convert(mode)


def fresh(name):
    d = path(name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


# Sizes: larger and smaller than 24x32, wider and taller, the exact size, an
# odd crop (the center offset rounds half to even).
imgs = fresh("imgs")
PNGS = [("a_rgb.png", 60, 50, "RGB"), ("b_gray.png", 30, 70, "L"), ("c_rgba.png", 24, 32, "RGBA"),
        ("d_la.PNG", 13, 9, "LA"), ("e_rgb.png", 25, 45, "RGB"), ("f_rgb.png", 100, 31, "RGB")]
for k, (name, h, w, mode) in enumerate(PNGS):
    smooth_image(h, w, mode, k).save(os.path.join(imgs, name))
with open(os.path.join(imgs, "notes.txt"), "w") as f:
    f.write("not an image: ignored\n")


def reference(file, c, mean, std):
    """What PIL and torchvision make of the image: the documented pipeline."""
    x = TF.to_tensor(Image.open(file).convert("RGB" if c == 3 else "L"))
    h, w = x.shape[1:]
    nh, nw = (H, w * H // h) if H * w >= W * h else (h * W // w, W)
    if (nh, nw) != (h, w):
        x = TF.resize(x, [nh, nw], interpolation=InterpolationMode.BILINEAR, antialias=True)
    return TF.normalize(TF.center_crop(x, [H, W]), mean, std)


def quantize(model, spec, *extra, env=None):
    for f in ("net.q.pt", "report.json", "dump.pt"):
        if os.path.exists(path(f)):
            os.remove(path(f))
    os.environ.pop(DUMP, None)
    if env:
        os.environ[DUMP] = env
    try:
        return run(path(model), "--input", spec, "--quantize", "uint8", "-o", path("net.q.pt"),
                   "--report", path("report.json"), *extra)
    finally:
        os.environ.pop(DUMP, None)


def dumped():
    return [s[0] for s in torch.load(path("dump.pt"))]


def max_diff(a, b):
    return (a - b).abs().max().item()


# --- (a) the calibration tensors are PIL's and torchvision's --------------

status, text = quantize("net3.pt", "1x3x%dx%d" % (H, W), "--calibration-dir", imgs, "--mean",
                        ",".join(map(str, MEAN)), "--std", ",".join(map(str, STD)),
                        env=path("dump.pt"))
check("images calibrate a 3-channel model (exit 0)", status == 0, text)
got = dumped()
want = [reference(os.path.join(imgs, n), 3, MEAN, STD) for n, *_ in PNGS]
check("one sample per image, in name order, 1x3x24x32 float32",
      len(got) == len(want) and all(g.shape == (1, 3, H, W) and g.dtype == torch.float32
                                    for g in got), [g.shape for g in got])
for (name, *_), g, w in zip(PNGS, got, want):
    check("%s is torchvision's to_tensor/resize/center_crop/normalize within 1e-5" % name,
          max_diff(g[0], w) <= 1e-5, max_diff(g[0], w))

status, text = quantize("net1.pt", "1x1x%dx%d" % (H, W), "--calibration-dir", imgs,
                        env=path("dump.pt"))
check("images calibrate a 1-channel model (exit 0)", status == 0, text)
got = dumped()
want = [reference(os.path.join(imgs, n), 1, [0.0], [1.0]) for n, *_ in PNGS]
check("gray: color made PIL's convert('L'), default mean 0 std 1 (pixel/255), within 1e-5",
      len(got) == len(want) and all(max_diff(g[0], w) <= 1e-5 for g, w in zip(got, want)),
      [max_diff(g[0], w) for g, w in zip(got, want)])

jpgs = fresh("jpgs")
for k in range(3):
    smooth_image(40 + 7 * k, 50, "RGB", 10 + k).save(os.path.join(jpgs, "p%d.jpg" % k),
                                                   quality=95, subsampling=0)
smooth_image(40, 40, "L", 20).save(os.path.join(jpgs, "q.JPEG"), quality=95)
status, text = quantize("net3.pt", "1x3x%dx%d" % (H, W), "--calibration-dir", jpgs,
                        env=path("dump.pt"))
check("JPEG images calibrate (exit 0)", status == 0, text)
got = dumped()
names = sorted(os.listdir(jpgs))
want = [reference(os.path.join(jpgs, n), 3, [0.0] * 3, [1.0] * 3) for n in names]
diffs = [((g[0] - w).abs().mean().item(), max_diff(g[0], w)) for g, w in zip(got, want)]
check("JPEG: stb_image's decoding is libjpeg's (PIL) within a mean 0.1/255, largest 2/255",
      len(got) == 4 and all(m < 0.1 / 255 and x < 2 / 255 for m, x in diffs), diffs)

status, text = quantize("net3.pt", "2x3x%dx%d" % (H, W), "--calibration-dir", imgs,
                        env=path("dump.pt"))
got = torch.load(path("dump.pt")) if status == 0 else []
want = [reference(os.path.join(imgs, n), 3, [0.0] * 3, [1.0] * 3) for n, *_ in PNGS]
check("--input 2x3x24x32: two images a sample, in name order",
      status == 0 and len(got) == 3 and all(
          max_diff(got[i][0], torch.stack(want[2 * i:2 * i + 2])) <= 1e-5 for i in range(3)),
      (status, text))

# Progress on a terminal only: under script(1) (util-linux, Essential in
# Debian) standard error is a terminal; through run() it is a pipe.
cmd = [BIN, path("net3.pt"), "--input", "1x3x%dx%d" % (H, W), "--quantize", "uint8",
       "--calibration-dir", imgs, "-o", path("tty.q.pt")]
tty = subprocess.run(["script", "-qec", " ".join(shlex.quote(a) for a in cmd), "/dev/null"],
                     capture_output=True, text=True)
check("on a terminal, image reading shows progress ('reading calibration images 5/6')",
      tty.returncode == 0 and "reading calibration images 5/6" in tty.stdout, tty.stdout[-400:])
check("on a pipe, no progress line", "reading calibration images" not in text, text)
quiet = subprocess.run(["script", "-qec", " ".join(shlex.quote(a) for a in cmd + ["-q"]),
                        "/dev/null"], capture_output=True, text=True)
check("on a terminal with -q (errors only), no progress line",
      quiet.returncode == 0 and os.path.exists(path("tty.q.pt")) and
      "reading calibration images" not in quiet.stdout and "on samples" not in quiet.stdout,
      quiet.stdout[-400:])

# --- (b) a conversion on images converts and verifies ----------------------

status, text = quantize("net3.pt", "1x3x%dx%d" % (H, W), "--nhwc", "--calibration-dir", imgs,
                        "--mean", ",".join(map(str, MEAN)), "--std", ",".join(map(str, STD)),
                        "--calibration-holdout", "2", "--verify", "--verify-strict")
report = json.load(open(path("report.json")))["models"][0] if os.path.exists(
    path("report.json")) else {}
q = report.get("quantization", {})
check("--nhwc --calibration-dir images --verify: converts, verifies, proof passes",
      status == 0 and os.path.exists(path("net.q.pt")) and q.get("ok") and
      q["calibration_samples"] == 4 and q["proof_samples"] == 2, (status, text, q))

# --- (c) errors -----------------------------------------------------------

empty = fresh("empty")
others = fresh("others")
with open(os.path.join(others, "README.txt"), "w") as f:
    f.write("no images here\n")
bad = fresh("bad")
shutil.copy(os.path.join(imgs, "a_rgb.png"), bad)
with open(os.path.join(bad, "broken.png"), "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
mixed = fresh("mixed")
shutil.copy(os.path.join(imgs, "a_rgb.png"), mixed)
torch.save(torch.randn(1, 3, H, W), os.path.join(mixed, "s.pt"))
pts = fresh("pts")
torch.save(torch.randn(2, 3, H, W), os.path.join(pts, "s.pt"))
five = fresh("five")
for n, *_ in PNGS[:5]:
    shutil.copy(os.path.join(imgs, n), five)
SPEC = "1x3x%dx%d" % (H, W)
for name, model, spec, args, words in [
        ("empty folder", "net3.pt", SPEC, ["--calibration-dir", empty], ["empty", "no .pt files"]),
        ("only other files", "net3.pt", SPEC, ["--calibration-dir", others],
         ["others", "no PNG or JPEG"]),
        ("an undecodable image", "net3.pt", SPEC, ["--calibration-dir", bad],
         ["broken.png", "cannot be decoded", "stb_image:"]),
        ("images and .pt files", "net3.pt", SPEC, ["--calibration-dir", mixed],
         ["mixed", "both .pt files", "images"]),
        ("a 2-channel input", "net3.pt", "1x2x%dx%d" % (H, W), ["--calibration-dir", imgs],
         ["1x2x24x32", "1 (gray) or 3 (RGB) channels"]),
        ("flexible H and W", "net3.pt", "1x3x0x0", ["--calibration-dir", imgs],
         ["1x3x0x0", "fixed height and width"]),
        ("a two-input model", "two.pt", SPEC, ["--input", SPEC, "--calibration-dir", imgs],
         ["one-input model", "2 --input"]),
        ("5 images for a batch of 2", "net3.pt", "2x3x%dx%d" % (H, W),
         ["--calibration-dir", five], ["5 images", "whole batches"])]:
    status, text = quantize(model, spec, *args)
    check("%s: exit 1, named, nothing written" % name,
          status == 1 and all(w in text for w in words) and not os.path.exists(path("net.q.pt"))
          and "Traceback" not in text and "what():" not in text, (status, text))

for name, args, words in [
        ("--mean of 2 values", ["--calibration-dir", imgs, "--mean", "0.5,0.5"],
         ["--mean", "2 value(s)", "3 channel(s)"]),
        ("--std of 4 values", ["--calibration-dir", imgs, "--std", "1,1,1,1"],
         ["--std", "4 value(s)"]),
        ("a zero --std", ["--calibration-dir", imgs, "--std", "1,0,1"], ["--std", "above 0"]),
        ("--mean with --calibration", ["--calibration", os.path.join(pts, "s.pt"), "--mean",
                                       "0,0,0"], ["--mean", "--calibration-dir"]),
        ("--mean with .pt files", ["--calibration-dir", pts, "--mean", "0,0,0"],
         ["--mean", ".pt files"]),
        ("two --input for a one-input model", ["--input", SPEC, "--calibration-dir", imgs],
         ["takes 1 input(s), but 2 --input spec(s)"])]:
    status, text = quantize("net3.pt", SPEC, *args)
    check("%s: exit 2, nothing written" % name,
          status == 2 and all(w in text for w in words) and not os.path.exists(path("net.q.pt")),
          (status, text))

finish("quantize_images")

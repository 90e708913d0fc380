#!/usr/bin/env python3
"""Measures the two ways of running per-channel quantized weights on NNAPI as
PyTorch's on-device loader can carry them (one scale and zero point per
operand), on a per-channel quantized ResNet18 (eager post-training
quantization with fbgemm's default qconfig, calibrated on 4 random batches)
and a small net (conv+relu, depthwise, pointwise, linear):

  (a) what nnapi-convert does: DEQUANTIZE the input, the float convolution or
      FULLY_CONNECTED with the weight dequantized per channel, QUANTIZE to the
      layer's output scale and zero point; converted by nnapi-convert and run
      on the host runtime;
  (b) the filter requantized to one per-tensor scale (the largest channel
      scale, zero point 0) and a quant8 convolution: the eager model with its
      weights so requantized, run by QNNPACK (the host runtime rounds quant8
      convolutions as QNNPACK does, so this is what the runtime would give).

Both against the eager per-channel model run by QNNPACK (the engine PyTorch
uses on Android; Debian's PyTorch has no fbgemm engine): max abs error in quanta of the output's
quantized tensor, share of outputs off by one or more, top-1 agreement on N
random inputs.

    /usr/bin/python3 tools/per_channel_error.py --bin build/nnapi-convert \\
        --runtime build/runtime [--n 32]
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_zoo import float_path  # noqa: E402


class SmallNet:
    @staticmethod
    def make():
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.quant = torch.quantization.QuantStub()
                self.conv = nn.Conv2d(3, 16, 3, padding=1)
                self.relu = nn.ReLU()
                self.dw = nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16)
                self.relu2 = nn.ReLU()
                self.pw = nn.Conv2d(16, 32, 1)
                self.avg = nn.AdaptiveAvgPool2d(1)
                self.fc = nn.Linear(32, 10)
                self.dequant = torch.quantization.DeQuantStub()

            def forward(self, x):
                x = self.relu(self.conv(self.quant(x)))
                x = self.pw(self.relu2(self.dw(x)))
                return self.dequant(self.fc(torch.flatten(self.avg(x), 1)))

            def fuse_model(self):
                torch.quantization.fuse_modules(
                    self, [["conv", "relu"], ["dw", "relu2"]], inplace=True)
        return Net()


def build(name):
    """The float model (realistic weights) quantized per channel, and the
    scale of its output's quantized tensor."""
    import torch
    import torchvision
    from model_zoo import realistic_init
    torch.manual_seed(0)
    if name == "resnet18":
        m, size = torchvision.models.quantization.resnet18(quantize=False), 224
    else:
        m, size = SmallNet.make(), 32
    m = realistic_init(m).eval()
    m.fuse_model()
    m.qconfig = torch.quantization.get_default_qconfig("fbgemm")
    torch.quantization.prepare(m, inplace=True)
    with torch.no_grad():
        for i in range(4):
            torch.manual_seed(100 + i)
            m(torch.randn(2, 3, size, size))
    torch.quantization.convert(m, inplace=True)
    scale = {}

    def remember_scale(mod, inp, out):
        scale.setdefault("q", inp[0].q_scale())
    m.dequant.register_forward_hook(remember_scale)
    return m, size, scale


def per_tensor_copy(m):
    """`m` with every per-channel weight requantized to one scale (the
    largest channel scale, zero point 0): option (b)."""
    import copy
    import torch
    m = copy.deepcopy(m)
    for mod in m.modules():
        if not hasattr(mod, "weight") or not callable(mod.weight):
            continue
        w = mod.weight()
        if w.qscheme() not in (torch.per_channel_affine, torch.per_channel_symmetric):
            continue
        s = w.q_per_channel_scales().max().item()
        mod.set_weight_bias(torch.quantize_per_tensor(w.dequantize(), s, 0, torch.qint8),
                            mod.bias())
    return m


def compare(name, out, ref, quantum):
    import torch
    q = ((out - ref).abs() / quantum).round()
    agree = (out.argmax(1) == ref.argmax(1)).float().mean().item()
    return (f"{name}: max {int(q.max().item())} quanta, {100 * (q >= 1).float().mean().item():.1f}% "
            f"off by >= 1, {100 * (q >= 2).float().mean().item():.2f}% by >= 2; top-1 agreement "
            f"{100 * agree:.1f}%")


def measure(args, name, tmp):
    import torch
    m, size, scale = build(name)
    torch.manual_seed(7)
    xs = torch.randn(args.n, 3, size, size)
    results = {}
    with torch.no_grad():
        torch.backends.quantized.engine = "qnnpack"
        results["qnnpack"] = m(xs)
        results["b"] = per_tensor_copy(m)(xs)
        results["float_path"] = float_path(m)(xs)
        traced = torch.jit.trace(m, xs[:1], check_trace=False)
    path = os.path.join(tmp, f"{name}.pt")
    traced.save(path)
    conv = os.path.join(tmp, f"{name}.nnapi.pt")
    subprocess.run([args.bin, path, "-o", conv, "-q", "--input", f"0x3x{size}x{size}",
                    "--nhwc"], check=True)
    torch.save(xs, os.path.join(tmp, f"{name}.x.pt"))
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.abspath(args.runtime))
    subprocess.run([sys.executable, __file__, "_run", conv, os.path.join(tmp, f"{name}.x.pt"),
                    os.path.join(tmp, f"{name}.a.pt")], check=True, env=env)
    results["a"] = torch.load(os.path.join(tmp, f"{name}.a.pt"))
    quantum = scale["q"]
    print(f"{name} ({args.n} random inputs, output quantum {quantum:.4g}):")
    for what, label in (("a", "(a) float convolution"), ("b", "(b) per-tensor filter")):
        print("  " + compare(f"{label} vs eager", results[what], results["qnnpack"], quantum),
              flush=True)
    print("  " + compare("(a) vs eager's float path (model_zoo.float_path)", results["a"],
                         results["float_path"], quantum), flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "_run":
        import torch
        m = torch.jit.load(sys.argv[2])
        with torch.no_grad():
            out = torch.cat([m(x.contiguous(memory_format=torch.channels_last))
                             for x in torch.load(sys.argv[3]).split(8)])
        torch.save(out, sys.argv[4])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--runtime", required=True)
    p.add_argument("--n", type=int, default=32)
    p.add_argument("--models", default="small,resnet18")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            measure(args, name, tmp)


if __name__ == "__main__":
    main()

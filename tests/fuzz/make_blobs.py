#!/usr/bin/python3
"""Regenerates the reference NNAPI blobs used by the blob-reader tests.

Run by hand (not by the build), with Debian's interpreter that imports
python3-torch:

    /usr/bin/python3 tests/fuzz/make_blobs.py

It serializes a few tiny TorchScript models with PyTorch's own converter
(torch.backends._nnapi.serializer) and writes, for each model NAME:

  tests/fuzz/data/NAME.bin          the raw ser_model bytes
  tests/fuzz/corpus/blob/NAME.bin   the same bytes, as a libFuzzer seed (plus
                                    seeds from CORPUS_MODELS: more operations)
  tests/fuzz/data/NAME.nnapi.pt     for a few models, the module written by
                                    convert_model_to_nnapi (for inspect tests)
  tests/fuzz/data/manifest.txt      one line per model:
      NAME operands values operations inputs outputs weight_bytes...
    The counts are the lengths of the serializer's own lists (what it wrote
    into the blob header), and weight_bytes are numel * element_size of each
    weight tensor it returned (what nnapi_bind.cpp passes as buffer sizes).

Every blob stays under 4 KiB. bad_weights.nnapi.pt is conv_relu.nnapi.pt with
its second weight tensor dropped, so its blob refers to a missing buffer.
"""

import os
import sys

import torch
from torch.backends._nnapi.prepare import convert_model_to_nnapi
from torch.backends._nnapi.serializer import _NnapiSerializer

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
CORPUS = os.path.join(HERE, "corpus", "blob")


class AddMul(torch.nn.Module):
    def forward(self, x, y):
        return (x + y) * x - y


class TwoOutputs(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x), torch.sigmoid(x)


class Quant(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.relu(x).dequantize()


def conv_relu():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 1), torch.nn.ReLU()).eval()
    return m, [torch.zeros(1, 2, 4, 4)]


def conv_nhwc():
    torch.manual_seed(1)
    m = torch.nn.Sequential(torch.nn.Conv2d(2, 2, 3, padding=1), torch.nn.MaxPool2d(2)).eval()
    x = torch.zeros(1, 2, 4, 4).contiguous(memory_format=torch.channels_last)
    x.nnapi_nhwc = True
    return m, [x]


def linear_flex():
    torch.manual_seed(2)
    m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Softmax(dim=1)).eval()
    # A 0-sized dimension makes the batch flexible (0 in the blob's dims).
    return m, [torch.zeros(0, 4)]


def add_mul():
    return AddMul(), [torch.zeros(2, 3), torch.zeros(2, 3)]


def two_outputs():
    return TwoOutputs(), [torch.zeros(1, 5)]


def quant():
    x = torch.quantize_per_tensor(torch.zeros(1, 4), 0.5, 10, torch.quint8)
    return Quant(), [x]


class Lambda(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def quint8(shape, scale=0.1, zero_point=128):
    torch.manual_seed(3)
    return torch.quantize_per_tensor(torch.randn(*shape), scale, zero_point, torch.quint8)


def qconv_nhwc():
    torch.backends.quantized.engine = "qnnpack"
    torch.manual_seed(4)
    m = torch.ao.nn.quantized.Conv2d(4, 4, 3)
    w = torch.quantize_per_tensor(torch.randn(4, 4, 3, 3), 0.02, 0, torch.qint8)
    m.set_weight_bias(w, torch.randn(4))
    m.scale, m.zero_point = 0.2, 120
    x = quint8((1, 4, 4, 4))
    x.nnapi_nhwc = True
    return m, [x]


def qlinear():
    torch.backends.quantized.engine = "qnnpack"
    m = torch.ao.nn.quantized.Linear(5, 3)
    m.scale, m.zero_point = 0.3, 100
    return m, [quint8((2, 5))]


X4 = (1, 4, 8, 8)

# Extra seeds for the fuzz corpus only (no fixture, no manifest line).
CORPUS_MODELS = {
    "cat": lambda: (Lambda(lambda a, b: torch.cat([a, b], 1)), [torch.zeros(X4)] * 2),
    "cat3": lambda: (Lambda(lambda a, b, c: torch.cat([a, b, c], 1)), [torch.zeros(X4)] * 3),
    "mean": lambda: (Lambda(lambda a: a.mean([2, 3])), [torch.zeros(X4)]),
    "upsample": lambda: (Lambda(lambda a: torch.nn.functional.interpolate(
        a, scale_factor=2.0, mode="nearest")), [torch.zeros(X4)]),
    "avgpool": lambda: (torch.nn.AvgPool2d(2), [torch.zeros(X4)]),
    "slice": lambda: (Lambda(lambda a: a[:, 1:3]), [torch.zeros(X4)]),
    "dwconv": lambda: (torch.nn.Conv2d(4, 4, 3, groups=4), [torch.zeros(X4)]),
    "conv_transpose": lambda: (torch.nn.ConvTranspose2d(4, 2, 2), [torch.zeros(X4)]),
    "qconv_nhwc": qconv_nhwc,
    "qlinear": qlinear,
}

# Models also written as .nnapi.pt modules.
MODULES = ["conv_relu", "conv_nhwc", "two_outputs"]

MODELS = {
    "conv_relu": conv_relu,
    "conv_nhwc": conv_nhwc,
    "linear_flex": linear_flex,
    "add_mul": add_mul,
    "two_outputs": two_outputs,
    "quant": quant,
}


def main():
    os.makedirs(DATA, exist_ok=True)
    os.makedirs(CORPUS, exist_ok=True)
    lines = []
    for name, make in MODELS.items():
        module, inputs = make()
        with torch.no_grad():
            traced = torch.jit.trace(module, tuple(inputs))
        # Same steps as prepare.process_for_nnapi.
        frozen = torch.jit.freeze(traced.eval())
        ser = _NnapiSerializer(config=None)
        ser_model, used_weights, *_ = ser.serialize_model(frozen, inputs)
        blob = ser_model.tobytes()
        assert len(blob) < 4096, (name, len(blob))
        for d in (DATA, CORPUS):
            with open(os.path.join(d, name + ".bin"), "wb") as f:
                f.write(blob)
        weight_bytes = [w.numel() * w.element_size() for w in used_weights]
        counts = [len(ser.operands), len(ser.values), len(ser.operations),
                  len(ser.inputs), len(ser.outputs)]
        lines.append(" ".join([name] + [str(c) for c in counts + weight_bytes]))
        print(f"{name}: {len(blob)} bytes, counts {counts}, weights {weight_bytes}",
              file=sys.stderr)
    for name, make in CORPUS_MODELS.items():
        module, inputs = make()
        with torch.no_grad():
            traced = torch.jit.trace(module.eval(), tuple(inputs))
        ser_model, *_ = _NnapiSerializer(config=None).serialize_model(
            torch.jit.freeze(traced), inputs)
        blob = ser_model.tobytes()
        assert len(blob) < 4096, (name, len(blob))
        with open(os.path.join(CORPUS, name + ".bin"), "wb") as f:
            f.write(blob)
    for name in MODULES:
        module, inputs = MODELS[name]()
        with torch.no_grad():
            traced = torch.jit.trace(module.eval(), tuple(inputs))
        wrapper = convert_model_to_nnapi(traced, inputs)
        wrapper.save(os.path.join(DATA, name + ".nnapi.pt"))
        if name == "conv_relu":
            wrapper.mod.weights = wrapper.mod.weights[:1]
            wrapper.save(os.path.join(DATA, "bad_weights.nnapi.pt"))
    with open(os.path.join(DATA, "manifest.txt"), "w") as f:
        f.write("# name operands values operations inputs outputs weight_bytes...\n")
        f.write("# written by make_blobs.py from PyTorch's _NnapiSerializer\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""The reference side of tools/bench/run.sh: PyTorch's own Python converter.

    /usr/bin/python3 tools/bench/py_convert.py [--nhwc] [--timings] --out-dir DIR MODEL.pt...

Converts every model in one interpreter, the way a user of
torch.backends._nnapi.prepare.convert_model_to_nnapi would, with the same
pre-processing as the reference in tools/fixtures_common.py: freeze, remove
mutation (in-place ops), then convert_model_to_nnapi with torch.jit.freeze
made an identity (the module is already frozen; freezing twice fails), and
torch.jit.save the result. Input: one float32 1x3x224x224 tensor per model,
channels-last and flagged nnapi_nhwc with --nhwc.
"""
import argparse
import os
import sys
import time

T_START = time.perf_counter()
import torch  # noqa: E402
import torch.backends._nnapi.prepare as nnapi_prepare  # noqa: E402
from torch.backends._nnapi.serializer import _NnapiSerializer  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fixtures_common import identity_freeze  # noqa: E402
T_IMPORT = time.perf_counter() - T_START


class TimedSerializer(_NnapiSerializer):
    """The stock serializer; only times serialize_model (the Python twin of
    nnapi-convert's lower + serialize)."""

    def __init__(self):
        super().__init__(config=None)
        self.ms = 0.0

    def serialize_model(self, model, inputs, return_shapes=None):
        t0 = time.perf_counter()
        result = super().serialize_model(model, inputs, return_shapes)
        self.ms = (time.perf_counter() - t0) * 1e3
        return result




def main():
    p = argparse.ArgumentParser()
    p.add_argument("models", nargs="+")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--nhwc", action="store_true")
    p.add_argument("--input", default="1x3x224x224")
    p.add_argument("--timings", action="store_true")
    a = p.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    dims = [int(d) for d in a.input.split("x")]
    for path in a.models:
        t0 = time.perf_counter()
        traced = torch.jit.load(path)
        t1 = time.perf_counter()
        frozen = torch.jit.freeze(traced)
        torch._C._jit_pass_remove_mutation(frozen.graph)
        t2 = time.perf_counter()
        x = torch.zeros(dims)
        if a.nhwc:
            x = x.contiguous(memory_format=torch.channels_last)
            x.nnapi_nhwc = True
        with identity_freeze():
            ser = TimedSerializer()
            converted = nnapi_prepare.convert_model_to_nnapi(frozen, [x], serializer=ser)
        t3 = time.perf_counter()
        name = os.path.basename(os.path.dirname(os.path.abspath(path))) or "model"
        torch.jit.save(converted, os.path.join(a.out_dir, name + ".nnapi.pt"))
        t4 = time.perf_counter()
        if a.timings:
            print(f"{path}: timings (ms): import {T_IMPORT * 1e3:.1f}, load {(t1 - t0) * 1e3:.1f}, "
                  f"freeze {(t2 - t1) * 1e3:.1f}, convert {(t3 - t2) * 1e3:.1f} "
                  f"(serialize_model {ser.ms:.2f}), "
                  f"save {(t4 - t3) * 1e3:.1f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

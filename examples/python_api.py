#!/usr/bin/python3
"""PyTorch's NNAPI tutorial flow (MobileNetV2) with nnapi-convert: one import changed.

    /usr/bin/python3 examples/python_api.py OUT_DIR

(run from the source tree: PYTHONPATH=python NNAPI_CONVERT=build/nnapi-convert). Writes
OUT_DIR/mobilenetv2-quant_none-cpu.pt and OUT_DIR/mobilenetv2-quant_none-nnapi.pt, as the
tutorial does, and prints the record the converted file carries. The tutorial loads
torchvision's pretrained weights; this example leaves them out (no download).
"""
import json
import pathlib
import sys

import torch
import torchvision

import nnapi_convert
from nnapi_convert import convert_model_to_nnapi  # was: torch.backends._nnapi.prepare

out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
out.mkdir(parents=True, exist_ok=True)
model = torchvision.models.quantization.mobilenet_v2(quantize=False)  # quantize_mode "none"
model.eval()
model.fuse_model()
model.classifier[0] = torch.nn.Identity()  # the Dropout
input_tensor = torch.zeros(1, 3, 224, 224).contiguous(memory_format=torch.channels_last)
input_tensor.nnapi_nhwc = True
with torch.no_grad():
    traced = torch.jit.trace(model, input_tensor)
try:
    nnapi_model = convert_model_to_nnapi(traced, input_tensor)
except nnapi_convert.ConversionError as e:
    for u in e.unsupported:  # the node kinds that do not convert, with your lines
        print(u["kind"], u["count"], u["locations"], file=sys.stderr)
    sys.exit(e.exit_code)
traced._save_for_lite_interpreter(str(out / "mobilenetv2-quant_none-cpu.pt"))
nnapi_model._save_for_lite_interpreter(str(out / "mobilenetv2-quant_none-nnapi.pt"))
print(json.dumps(nnapi_convert.metadata(out / "mobilenetv2-quant_none-nnapi.pt"), indent=2))

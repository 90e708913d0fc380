"""PyTorch's NNAPI tutorial flow (trace MobileNetV2, convert, save) with one change, the import:
`from nnapi_convert import convert_model_to_nnapi`. Checks against the references:

- the files it saves are byte for byte what the CLI writes for the same TorchScript file;
- the NNAPI model in them (blob, weights, memory formats) is what PyTorch's own
  convert_model_to_nnapi makes of the same traced model (input.nnapi_nhwc = True honoured);
- the loaded module runs on the host NNAPI runtime and matches eager PyTorch;
- the metadata names the SHA-256 of the file the module was saved to (hashlib's).

Usage: tutorial_test.py BIN WORK (NNAPI_CONVERT is set to BIN here; PYTHONPATH holds python/).
"""
import json
import os
import subprocess
import sys
import zipfile

import torch
import torchvision
from torch.backends._nnapi.prepare import convert_model_to_nnapi as torch_convert

sys.dont_write_bytecode = True  # no __pycache__ in the sources
from checks import check, finish, sha  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import model_zoo  # noqa: E402

bin_path, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
os.environ["NNAPI_CONVERT"] = bin_path

# --- the tutorial (prototype_source/nnapi_mobilenetv2), import changed --------------------
from nnapi_convert import convert_model_to_nnapi  # noqa: E402  was torch.backends._nnapi.prepare

torch.manual_seed(0)
# quantize_mode "none"; the tutorial's pretrained=True weights need the network.
model = torchvision.models.quantization.mobilenet_v2(quantize=False)
model_zoo.realistic_init(model)  # in place of the pretrained weights: outputs that do not fade
model.eval()
model.fuse_model()
assert type(model.classifier[0]) == torch.nn.Dropout
model.classifier[0] = torch.nn.Identity()
input_float = torch.zeros(1, 3, 224, 224)
input_tensor = input_float.contiguous(memory_format=torch.channels_last)
input_tensor.nnapi_nhwc = True
with torch.no_grad():
    traced = torch.jit.trace(model, input_tensor)
nnapi_model = convert_model_to_nnapi(traced, input_tensor)
traced._save_for_lite_interpreter(os.path.join(work, "mobilenetv2-quant_none-cpu.pt"))
nnapi_model._save_for_lite_interpreter(os.path.join(work, "mobilenetv2-quant_none-nnapi.pt"))
# -------------------------------------------------------------------------------------------
torch.jit.save(nnapi_model, os.path.join(work, "api.nnapi.pt"))





# The CLI on the same TorchScript file. The API saves the traced module with
# torch.jit.save to a file named model.pt (the archive's root is named after it).
src = os.path.join(work, "model.pt")
torch.jit.save(traced, src)
cli = os.path.join(work, "cli.nnapi.pt")
subprocess.run([bin_path, src, "--input", "1x3x224x224,nhwc", "--lite", "-o", cli, "-q"],
               check=True)
check(sha(cli) == sha(os.path.join(work, "api.nnapi.pt")),
      "torch.jit.save of the returned module == the CLI's .nnapi.pt")
check(sha(cli[:-3] + ".ptl") == sha(os.path.join(work, "mobilenetv2-quant_none-nnapi.pt")),
      "the tutorial's _save_for_lite_interpreter file == the CLI's --lite .ptl")

with zipfile.ZipFile(cli) as z:
    meta = json.loads(z.read([n for n in z.namelist() if n.endswith("extra/nnapi_convert.json")][0]))
check(meta["source"]["sha256"] == sha(src), "the metadata's source SHA-256 is hashlib's of model.pt")
check(meta["inputs"][0]["spec"] == "1x3x224x224,nhwc", "nnapi_nhwc = True became ,nhwc")

# PyTorch's converter on the same traced model: the same NNAPI model.
ref = torch_convert(traced, input_tensor)
ours = nnapi_model.mod
check(torch.equal(ours.ser_model, ref.mod.ser_model), "ser_model == PyTorch's converter's")
check(len(ours.weights) == len(ref.mod.weights)
      and all(torch.equal(a, b) for a, b in zip(ours.weights, ref.mod.weights)),
      "weights == PyTorch's converter's")
check(list(ours.inp_mem_fmts) == list(ref.mod.inp_mem_fmts) == [1],
      "input memory format channels-last (1), as PyTorch's")

# Run it on the host NNAPI runtime (LD_LIBRARY_PATH) against eager PyTorch.
torch.manual_seed(1)
x = torch.randn(1, 3, 224, 224).contiguous(memory_format=torch.channels_last)
with torch.no_grad():
    want = model(x)
    got = nnapi_model(x)
err = (got - want).abs().max().item()
check(err < 1e-3 * max(1.0, want.abs().max().item()) and want.std().item() > 1e-3,
      f"forward on the host runtime matches eager (max abs err {err:.3g})")

finish("tutorial")

"""nnapi_convert.convert(): the report as a dict, failures as ConversionError with the
unsupported kinds and their source lines, usage errors, and the binary's lookup.

Usage: api_test.py BIN WORK (PYTHONPATH holds python/; NNAPI_CONVERT is set to BIN here).
"""
import os
import subprocess
import sys

import torch

sys.dont_write_bytecode = True  # no __pycache__ in the sources
from checks import check, finish, sha  # noqa: E402

bin_path, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
os.environ["NNAPI_CONVERT"] = bin_path
import nnapi_convert  # noqa: E402





class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)

    def forward(self, x):
        return torch.relu(self.conv(x))


class Sorts(torch.nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        return torch.sort(y, 1)[0]  # the line the error must name


torch.manual_seed(0)
net = torch.jit.trace(Net().eval(), torch.randn(1, 3, 16, 16))
src = os.path.join(work, "net.pt")
torch.jit.save(net, src)

# A path: the report entry, as --report writes it.
out = os.path.join(work, "net.nnapi.pt")
r = nnapi_convert.convert(src, inputs=["1x3x16x16"], nhwc=True, output=out, min_android_api=30)
check(r["status"] == "ok" and r["output"] == out, "convert() returns the report entry")
check(r["output_sha256"] == sha(out), "report's output_sha256 is hashlib's of the output")
check(r["operations"] == {"CONV_2D": 1, "RELU": 1}, f"operations {r['operations']}")
check(nnapi_convert.metadata(out)["options"]["min_android_api"] == 30
      and nnapi_convert.metadata(out)["options"]["nhwc"] is True,
      "keyword options reach the binary (min_android_api=30, nhwc=True)")
# The same conversion by the CLI: the same bytes.
cli = os.path.join(work, "cli.nnapi.pt")
subprocess.run([bin_path, src, "--input", "1x3x16x16", "--nhwc", "--min-android-api", "30",
                "-o", cli, "-q"], check=True)
check(sha(cli) == sha(out), "convert() writes the CLI's bytes")

# A module and an example tensor with nnapi_nhwc, as PyTorch's converter reads it.
x = torch.randn(1, 3, 16, 16)
x.nnapi_nhwc = True
check(nnapi_convert.input_spec(x) == "1x3x16x16,nhwc", "input_spec reads nnapi_nhwc")
q = torch.quantize_per_tensor(torch.randn(1, 4), 0.25, 3, torch.quint8)
check(nnapi_convert.input_spec(q) == "1x4,dtype=quint8,scale=0.25,zero_point=3",
      "input_spec reads q_scale and q_zero_point")
r = nnapi_convert.convert(net, [x], output=os.path.join(work, "mod.nnapi.pt"))
check(nnapi_convert.metadata(r["output"])["inputs"][0]["spec"] == "1x3x16x16,nhwc",
      "a module converts with the tensor's spec")

# A model that does not convert: the unsupported kinds with their source lines.
sorts = torch.jit.script(Sorts())
line = [i for i, t in enumerate(open(__file__).read().splitlines(), 1) if "torch.sort(y" in t][0]
try:
    nnapi_convert.convert(sorts, ["2x5"], output=os.path.join(work, "sorts.nnapi.pt"))
    check(False, "a model with aten::sort raises ConversionError")
except nnapi_convert.ConversionError as e:
    kinds = {u["kind"]: u for u in e.unsupported}
    check(e.exit_code == 1, f"exit code 1 ({e.exit_code})")
    check("aten::sort" in kinds, f"unsupported kinds {sorted(kinds)} hold aten::sort")
    locs = kinds.get("aten::sort", {}).get("locations", [])
    check(any(loc.endswith(f"api_test.py:{line}") for loc in locs),
          f"aten::sort's locations {locs} name api_test.py:{line}")
    check("aten::sort" in str(e), "the message names the kind")
check(not os.path.exists(os.path.join(work, "sorts.nnapi.pt")), "nothing written")

# A usage error: exit 2, with the binary's message.
try:
    nnapi_convert.convert(src, ["1x3x,nhwc"], output=os.path.join(work, "bad.nnapi.pt"))
    check(False, "a malformed spec raises ConversionError")
except nnapi_convert.ConversionError as e:
    check(e.exit_code == 2 and "1x3x,nhwc" in str(e), f"usage error: exit 2 naming the spec: {e}")

# PyTorch's signature: a custom serializer is refused, return_shapes and the rest reach it.
try:
    nnapi_convert.convert_model_to_nnapi(net, x, serializer=object())
    check(False, "serializer= is refused")
except ValueError as e:
    check("serializer" in str(e), "serializer= is refused, saying why")
m = nnapi_convert.convert_model_to_nnapi(net, [x], compilation_preference=0,
                                         relax_f32_to_f16=True)
check(int(m.mod.compilation_preference) == 0 and bool(m.mod.relax_f32_to_f16),
      "compilation_preference and relax_f32_to_f16 reach the module")

# The binary's lookup: NNAPI_CONVERT first; a wrong one is said.
os.environ["NNAPI_CONVERT"] = os.path.join(work, "no-such-binary")
try:
    nnapi_convert.find_binary()
    check(False, "a wrong NNAPI_CONVERT is refused")
except FileNotFoundError as e:
    check("NNAPI_CONVERT" in str(e), "a wrong NNAPI_CONVERT is named")

finish("api")

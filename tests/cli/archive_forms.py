#!/usr/bin/env python3
"""The forms of TorchScript archive that PyTorch writes, made at test time with
Debian's /usr/bin/python3 (torch 1.13): the cases of test_archive_forms.py and
the seeds of tests/fuzz/fuzz_archive (make_archive_seeds.py).

make_all(out_dir, small) -> [Form]; each Form names its file, the --input spec
and what nnapi-convert must do with it:
  "converts"  convert it with --verify (every form LibTorch 1.13 loads whose
              operators nnapi-convert lowers);
  "loads"     the archive check passes and LibTorch loads it (`check` reports
              no archive or loading failure); for optimize_for_mobile files,
              whose prepacked:: operators are another issue's;
  "old-quantized"  exit 1 saying the file is from an old PyTorch whose
              quantized layers LibTorch 1.13 cannot read.
  "old-layout"  exit 1 saying the file is in PyTorch 1.0-1.2's model.json
              layout, which this LibTorch 1.13 cannot load.

What each PyTorch version wrote, from its sources (pytorch/pytorch):
- torch.jit.save (1.13, serialization/export_module.cpp, pickler.cpp):
  <name>/data.pkl, data/<n>, constants.pkl, constants/<n> (frozen modules),
  code/*.py (+ .debug_pkl), version, extra/<file> (_extra_files); storages
  are persistent ids ('storage', torch.<T>Storage, key, device, numel).
- _save_for_lite_interpreter adds bytecode.pkl. Bytecode version 4 keeps its
  own tensors in bytecode/<n>; from version 5 on the tensors it shares with
  the TorchScript part are written once, in constants/, under keys
  '<pointer>.storage', and bytecode.pkl names them by those keys. The mobile
  loader (mobile/import.cpp) reads bytecode.pkl's storages from bytecode/ if
  any record name contains "bytecode/", else from constants/.
- PyTorch 1.3 to 1.5 (pickler.cpp pushStorageOfTensor) wrote a sixth item in
  each storage's persistent id: view_metadata, always None. Format version 1
  code files began with "op_version_set = 1" (removed in version 2).
- PyTorch 1.0 to 1.2 (serialization/export.cpp then, read by import_legacy.cpp
  and caffe2/proto/torch.proto): <name>/model.json, a torch.ModelDef protobuf
  as JSON (protoVersion; mainModule with its submodules, parameters
  {isBuffer, tensorId, name}, attributes {type, name, id} and torchscriptArena
  {key}; tensors {dims, offset, strides, requiresGrad, dataType, data {key},
  device}), tensors/<n> (raw storages), attributes.pkl (from proto version 3 a
  tuple of the attribute values), code/<module>.py and libs/ for classes.
  LibTorch 1.13 reads such a file only through its legacy importer, which
  Debian's build leaves out ("Legacy model format is not supported on mobile").
- PyTorch 1.3 and 1.4 quantized layers kept their packed weights in a plain
  Tensor attribute, `_packed_params`, and called ops.quantized.conv2d /
  ops.quantized.linear on it; LibTorch 1.13's operators take
  Conv2dPackedParamsBase / LinearPackedParamsBase there, so such files do not
  load.
"""
import io
import os
import pickle
import re
import struct
import zipfile


class Form:
    def __init__(self, name, path, input_spec, expect, what):
        self.name, self.path, self.input, self.expect, self.what = (
            name, path, input_spec, expect, what)


def _rewrite(src, dst, edit):
    """Copy zip `src` to `dst`, every record stored, `edit(name, bytes)` applied."""
    zin = zipfile.ZipFile(src)
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, edit(info.filename, zin.read(info.filename)))


class IntList(list):
    """A List[int] of a debug record (torch.jit._pickle.build_intlist)."""


def debug_pickle(value):
    """`value` (str, int, None, tuple, IntList) pickled with the instructions
    TorchScript's pickler writes for it (pickler.cpp): PROTO 2, BINUNICODE,
    BININT, NONE, MARK ... TUPLE, and build_intlist REDUCE of a list filled
    by APPENDS."""
    out = [b"\x80\x02"]

    def put(v):
        if isinstance(v, IntList):
            out.append(b"ctorch.jit._pickle\nbuild_intlist\n(](")
            for x in v:
                put(x)
            out.append(b"etR")
        elif isinstance(v, tuple):
            out.append(b"(")
            for x in v:
                put(x)
            out.append(b"t")
        elif isinstance(v, str):
            b = v.encode()
            out.append(b"X" + struct.pack("<I", len(b)) + b)
        elif v is None:
            out.append(b"N")
        else:
            out.append(b"J" + struct.pack("<i", v))

    put(value)
    out.append(b".")
    return b"".join(out)


def text_debug_records(data):
    """A debug record (code/*.debug_pkl) of PyTorch 1.11 or later, ('FORMAT_WITH_
    STRING_TABLE', text table, ((offset, (source, start, end), tag), ...)) with
    sources (text-table indices, file index, line), as PyTorch 1.3 wrote it
    (source_range_serialization.cpp then): ((offset, ((text, file, line),
    start, end)), ...), the file None where the table has none ('' at 0)."""
    class Reader(pickle.Unpickler):
        def find_class(self, module, name):
            assert (module, name) == ("torch.jit._pickle", "build_intlist"), (module, name)
            return IntList

    fmt, table, records = Reader(io.BytesIO(data)).load()
    assert fmt == "FORMAT_WITH_STRING_TABLE", fmt

    def source(s):
        lines, file_index, line = s
        return ("".join(table[i] for i in lines), table[file_index] or None, line)

    return debug_pickle(tuple((offset, (source(r[0]), r[1], r[2]))
                              for offset, r, _tag in records))



def with_records(src, dst, records):
    """Copy zip `src` to `dst` with `records` ({name under the archive folder:
    bytes}) replaced, or added after the others."""
    zin = zipfile.ZipFile(src)
    prefix = zin.namelist()[0].split("/")[0] + "/"
    left = dict(records)
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            base = info.filename[len(prefix):]
            zout.writestr(info.filename, left.pop(base) if base in left else zin.read(info))
        for base, data in left.items():
            zout.writestr(prefix + base, data)


def to_pytorch13_layout(src, dst):
    """`src` as PyTorch 1.3 wrote it: format version 1, op_version_set lines,
    storage persistent ids of six items (view_metadata None), debug records
    with source text (no text table)."""
    def edit(name, data):
        base = name.split("/", 1)[1]
        if base in ("data.pkl", "constants.pkl"):
            # ('storage', T, key, device, numel) TUPLE BINPERSID: a NONE before
            # the TUPLE that closes the persistent id (numel is BININT1/2/4).
            data, n = re.subn(rb"(K.|M..|J....)tQ", lambda m: m.group(1) + b"NtQ", data,
                              flags=re.S)
        elif base == "version":
            data = b"1\n"
        elif base.startswith("code/") and base.endswith(".py"):
            data = b"op_version_set = 1\n" + data
        elif base.endswith(".debug_pkl"):
            data = text_debug_records(data)
        return data

    _rewrite(src, dst, edit)


def to_model_json_layout(module, dst):
    """`module` (a traced Conv2d) saved as PyTorch 1.1 wrote it (proto version
    3): model.json, tensors/<n>, attributes.pkl, code/<name>.py, version."""
    import json

    name = os.path.splitext(os.path.basename(dst))[0]
    tensors, params, storages = [], [], []
    for i, (pname, t) in enumerate(module.named_parameters()):
        t = t.detach().contiguous()
        storages.append(t.numpy().tobytes())
        tensors.append({"dims": [str(d) for d in t.shape], "offset": "0",
                        "strides": [str(d) for d in t.stride()], "requiresGrad": True,
                        "dataType": "FLOAT", "data": {"key": "tensors/%d" % i}, "device": "cpu"})
        params.append({"isBuffer": False, "tensorId": str(i), "name": pname})
    model = {"protoVersion": "3", "producerName": "pytorch", "producerVersion": "1.1",
             "mainModule": {"name": name, "parameters": params, "optimize": True,
                            "attributes": [{"type": "bool", "name": "training", "id": "0"}],
                            "torchscriptArena": {"key": "code/%s.py" % name}},
             "tensors": tensors}
    code = ("op_version_set = 0\n"
            "def forward(self,\n    input: Tensor) -> Tensor:\n"
            "  return torch._convolution(input, self.weight, self.bias, [1, 1], [0, 0], "
            "[1, 1], False, [0, 0], 1, False, False, True)\n")
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as z:
        z.writestr(name + "/version", "1\n")
        z.writestr(name + "/model.json", json.dumps(model, indent=2))
        for i, data in enumerate(storages):
            z.writestr(name + "/tensors/%d" % i, data)
        z.writestr(name + "/attributes.pkl", b"\x80\x02\x88\x85q\x00.")  # (True,)
        z.writestr(name + "/code/%s.py" % name, code)


def make_all(out, small=False):
    import torch
    import torch.jit.mobile as jm
    from torch.utils.mobile_optimizer import optimize_for_mobile

    torch.manual_seed(0)
    forms = []

    def form(name, input_spec, expect, what):
        path = os.path.join(out, name + (".ptl" if "lite" in name else ".pt"))
        forms.append(Form(name, path, input_spec, expect, what))
        return path

    class Conv(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            base = torch.arange(12.0).view(3, 4)
            # Views sharing one storage: an offset, a stride over a row.
            self.register_buffer("row", base[1].view(4, 1, 1))
            self.register_buffer("col", base[:, 2])

        def forward(self, x):
            return torch.relu(self.conv(x)) * self.row + self.col[1]

    x = torch.randn(1, 3, 8, 8)
    conv = Conv().eval()
    traced = torch.jit.trace(conv, x)
    scripted = torch.jit.script(conv)
    spec = "1x3x8x8"

    traced.save(form("traced", spec, "converts", "torch.jit.trace, views sharing a storage"))
    # The file format versions the releases between 1.3 (1) and 1.13 (3 for this
    # model; 10 with aten::gelu, format_v10 below) wrote: the same records with
    # the version record set. None of this model's operators has an upgrader
    # (div 4, full 5, linspace 8, logspace 9, gelu 10), so the code is the same.
    for v in (2, 4, 5, 6, 7, 8, 9):
        with_records(forms[0].path, form("format_v%d" % v, spec, "converts",
                                         "file format version %d" % v),
                     {"version": b"%d\n" % v})
    # PyTorch 2.1 and later also write byteorder and .data/serialization_id.
    with_records(forms[0].path, form("byteorder_serialization_id", spec, "converts",
                                     "byteorder and .data/serialization_id records"),
                 {"byteorder": b"little", ".data/serialization_id": b"0651297358717040643"})
    scripted.save(form("scripted", spec, "converts", "torch.jit.script"))
    torch.jit.freeze(scripted).save(
        form("frozen", spec, "converts", "torch.jit.freeze: tensors in constants/"))
    traced.save(form("extra_files", spec, "converts", "_extra_files, one named like a pickle"),
                _extra_files={"model_info.pkl": b"\x80\x02 not a pickle", "notes.txt": b"hi"})

    @torch.jit.script
    class Scale(object):
        def __init__(self, factor: torch.Tensor):
            self.factor = factor

    class WithClass(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.scale = Scale(torch.full((4, 1, 1), 0.5))
            self.names: dict = {"a": 1}

        def forward(self, x):
            return torch.relu(self.conv(x)) * self.scale.factor

    torch.jit.script(WithClass().eval()).save(
        form("class_type", spec, "converts", "scripted, a TorchScript class attribute"))

    # Enum and NamedTuple classes: the code files' other class forms (an
    # enum's body is `NAME = value` lines).
    from enum import Enum
    from typing import NamedTuple

    class Mode(Enum):
        SCALE = 1
        SHIFT = 2

    class Pair(NamedTuple):
        a: torch.Tensor
        b: torch.Tensor

    class WithEnum(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.mode = Mode.SCALE

        def pair(self, x: torch.Tensor) -> Pair:
            return Pair(self.conv(x), x)

        def forward(self, x):
            p = self.pair(x)
            if self.mode == Mode.SCALE:
                return torch.relu(p.a)
            return p.a

    torch.jit.script(WithEnum().eval()).save(
        form("enum_namedtuple", spec, "loads", "scripted, Enum and NamedTuple classes"))

    class Ops(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)

        def forward(self, x):
            return torch.nn.functional.gelu(torch.div(self.conv(x), 2.0))

    torch.jit.script(Ops().eval()).save(
        form("format_v10", spec, "converts", "aten::gelu: torch.jit.save writes format 10"))

    # Quantized (eager static quantization, per-channel weights, traced).
    class QConv(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = torch.quantization.QuantStub()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.relu = torch.nn.ReLU()
            self.dequant = torch.quantization.DeQuantStub()

        def forward(self, x):
            return self.dequant(self.relu(self.conv(self.quant(x))))

    torch.backends.quantized.engine = "qnnpack"
    q = QConv().eval()
    q.qconfig = torch.quantization.get_default_qconfig("qnnpack")
    torch.quantization.prepare(q, inplace=True)
    q(x)
    torch.quantization.convert(q, inplace=True)
    torch.jit.trace(q, x).save(form("quantized", spec, "converts", "quantized (qnnpack), traced"))
    # Per-channel weights: _rebuild_qtensor with scale and zero-point tensors.
    q = QConv().eval()
    q.qconfig = torch.quantization.QConfig(
        activation=torch.quantization.default_observer,
        weight=torch.quantization.default_per_channel_weight_observer)
    torch.quantization.prepare(q, inplace=True)
    q(x)
    torch.quantization.convert(q, inplace=True)
    torch.jit.trace(q, x).save(form("quantized_per_channel", spec, "converts",
                                    "quantized (per-channel weights), traced"))
    # Frozen: the convolution's packed parameters a Conv2dPackedParamsBase in
    # constants.pkl, its configuration (version 2) an int16 tensor.
    torch.jit.freeze(torch.jit.script(q)).save(
        form("quantized_frozen", spec, "converts",
             "quantized (per-channel weights), scripted and frozen"))

    # Lite interpreter: the default bytecode version (8) and every one that
    # _backport_for_mobile writes, without and with optimize_for_mobile.
    lite = form("lite", spec, "converts", "_save_for_lite_interpreter")
    scripted._save_for_lite_interpreter(lite)
    opt = form("mobile_lite", spec, "loads", "optimize_for_mobile + _save_for_lite_interpreter")
    optimize_for_mobile(scripted)._save_for_lite_interpreter(opt)
    for v in range(4, 8):
        for src, name, expect in ((lite, "lite_v%d" % v, "converts"),
                                  (opt, "mobile_lite_v%d" % v, "loads")):
            dst = form(name, spec, expect, "%s backported to bytecode version %d" % (name, v))
            if not jm._backport_for_mobile(src, dst, v):
                raise RuntimeError("_backport_for_mobile(%s, %d) failed" % (src, v))

    # PyTorch 1.1's model.json layout of a Conv2d.
    to_model_json_layout(torch.nn.Conv2d(3, 4, 3), form(
        "pytorch11_model_json", spec, "old-layout", "PyTorch 1.1 layout (model.json)"))

    # PyTorch 1.3's layout of a traced conv, and of a scripted byte-level LSTM.
    to_pytorch13_layout(os.path.join(out, "traced.pt"), form(
        "pytorch13", spec, "converts", "PyTorch 1.3 layout (format 1, six-item storage ids)"))

    width = 2 if small else 16  # small: a seed within the fuzzer's 16 KiB

    class ByteLSTM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(256, width)
            self.lstm = torch.nn.LSTM(width, width, batch_first=True)
            self.out = torch.nn.Linear(width, 256)

        def forward(self, x):
            y, _ = self.lstm(self.embed(x))
            return self.out(y)

    lstm_src = os.path.join(out, "lstm_src.pt")
    torch.jit.script(ByteLSTM().eval()).save(lstm_src)
    to_pytorch13_layout(lstm_src, form("pytorch13_lstm", "1x12,dtype=int32", "loads",
                                       "scripted byte-level LSTM, PyTorch 1.3 layout"))
    os.unlink(lstm_src)

    # A 2019 quantized conv: its packed weight a plain Tensor attribute.
    class OldQ(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self._packed_params = torch.zeros(4)

        def forward(self, x):
            return x

    old_src = os.path.join(out, "oldq_src.pt")
    torch.jit.script(OldQ().eval()).save(old_src)

    def old_quantized(name, data):
        if name.endswith(".py") and b"_packed_params : Tensor" in data:
            data = data.replace(
                b"return x", b"return ops.quantized.conv2d(x, self._packed_params, [1, 1], "
                b"[0, 0], [1, 1], 1, 1., 0)")
        return data

    old_code = os.path.join(out, "oldq_code.pt")
    _rewrite(old_src, old_code, old_quantized)
    to_pytorch13_layout(old_code, form("pytorch13_quantized", spec, "old-quantized",
                                       "a PyTorch 1.3 quantized conv: _packed_params a Tensor"))
    os.unlink(old_src)
    os.unlink(old_code)

    if not small:
        import torchvision

        mb = torchvision.models.mobilenet_v2().eval()
        with torch.no_grad():
            t = torch.jit.trace(mb, torch.randn(1, 3, 224, 224))
        optimize_for_mobile(t)._save_for_lite_interpreter(
            form("mobilenet_v2_mobile_lite", "1x3x224x224", "loads",
                 "torchvision mobilenet_v2, optimize_for_mobile, lite interpreter"))
    return forms

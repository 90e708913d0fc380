#!/usr/bin/env python3
"""make_hostile.py OUT_DIR: the fixtures of the hostile-input suite
(run_hostile.py), made at test time.

OUT_DIR/models/   base models made with torch (Debian's /usr/bin/python3):
  small.pt          Conv2d(4, 4, 3) + ReLU, traced, input 1x4x8x8
  lin1000.pt        Linear(1000, 1000), input 1x1000 (about 4 MB of weights)
  ret_input.pt      forward returns its input (input 1x4)
  ret_twice.pt      forward returns the same tensor twice (input 1x4)
  view22.pt         x.view(2, 2): converts with --input 0x4, raises at run time for batch 3
  setstate_print.pt a __setstate__ that prints SETSTATE-RAN-AT-LOAD (input 1x4)
  setstate_loop.pt  a __setstate__ that loops forever (input 1x4)
  qconv.pt          quantized Conv2d(4, 4, 3) + ReLU (eager static quantization),
                    traced, input 1x4x8x8: the state of a quantized convolution module
  qconv_frozen.pt   the same scripted and frozen: its packed parameters a
                    Conv2dPackedParamsBase in constants.pkl (configuration version 2)
  resnet18.pt       torchvision resnet18, random weights (input 1x3x224x224): the
                    signal cases need a write that takes a while
OUT_DIR/hostile/  archives derived from small.pt with the standard library only
                  (zipfile to read, a hand-written zip writer to write), and
                  index.json: name -> {"expect": [exit statuses], "what": ...,
                  "inspect": whether `inspect` is also run on it}. Where 0 is
                  allowed, the output must carry the model's true weights.

The torch models are kept between runs unless --force is given (after OUT_DIR);
the archives are always rewritten.

Every archive here is rewritten with every entry stored (uncompressed) unless the
case says otherwise; storage records are 64-byte aligned as PyTorch writes them.
"""
import json
import os
import re
import struct
import sys
import zipfile
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from archive_forms import IntList, debug_pickle  # noqa: E402

OUT = os.path.abspath(sys.argv[1])
MODELS = os.path.join(OUT, "models")
HOSTILE = os.path.join(OUT, "hostile")


# ---------------------------------------------------------------------------
# Base models (torch)
# ---------------------------------------------------------------------------
def save_setstate_models(directory):
    """setstate_print.pt and setstate_loop.pt (input 1x4) in `directory`: a
    __setstate__, run while LibTorch loads the model, that prints, and one
    that never returns (also tests/cli/options_test.py's)."""
    from typing import Tuple

    import torch

    class SetstatePrint(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.ones(4)

        def forward(self, x):
            return torch.relu(x) + self.w

        @torch.jit.export
        def __getstate__(self) -> Tuple[torch.Tensor, bool]:
            return (self.w, self.training)

        @torch.jit.export
        def __setstate__(self, state: Tuple[torch.Tensor, bool]) -> None:
            print("SETSTATE-RAN-AT-LOAD")
            self.w = state[0]
            self.training = state[1]

    class SetstateLoop(SetstatePrint):
        @torch.jit.export
        def __setstate__(self, state: Tuple[torch.Tensor, bool]) -> None:
            i = 0
            while True:
                i = i + 1
            self.w = state[0]
            self.training = state[1]

    torch.jit.script(SetstatePrint().eval()).save(os.path.join(directory, "setstate_print.pt"))
    torch.jit.script(SetstateLoop().eval()).save(os.path.join(directory, "setstate_loop.pt"))


def make_models():
    import torch

    os.makedirs(MODELS, exist_ok=True)
    torch.manual_seed(0)

    class Small(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(4, 4, 3)

        def forward(self, x):
            return torch.relu(self.conv(x))

    torch.jit.trace(Small().eval(), torch.randn(1, 4, 8, 8)).save(os.path.join(MODELS, "small.pt"))

    lin = torch.nn.Linear(1000, 1000).eval()
    torch.jit.trace(lin, torch.randn(1, 1000)).save(os.path.join(MODELS, "lin1000.pt"))

    class RetInput(torch.nn.Module):
        def forward(self, x):
            return x

    torch.jit.script(RetInput().eval()).save(os.path.join(MODELS, "ret_input.pt"))

    class RetTwice(torch.nn.Module):
        def forward(self, x):
            y = torch.relu(x)
            return y, y

    torch.jit.script(RetTwice().eval()).save(os.path.join(MODELS, "ret_twice.pt"))

    class View22(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x.view(2, 2))

    torch.jit.trace(View22().eval(), torch.randn(1, 4)).save(os.path.join(MODELS, "view22.pt"))

    save_setstate_models(MODELS)
    save_quantized_conv_models(MODELS)

    import torchvision

    r18 = torchvision.models.resnet18().eval()
    with torch.no_grad():
        torch.jit.trace(r18, torch.randn(1, 3, 224, 224)).save(os.path.join(MODELS, "resnet18.pt"))


def save_quantized_conv_models(directory):
    """qconv.pt and qconv_frozen.pt (input 1x4x8x8) in `directory`."""
    import torch

    class QConv(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = torch.quantization.QuantStub()
            self.conv = torch.nn.Conv2d(4, 4, 3)
            self.relu = torch.nn.ReLU()
            self.dequant = torch.quantization.DeQuantStub()

        def forward(self, x):
            return self.dequant(self.relu(self.conv(self.quant(x))))

    torch.backends.quantized.engine = "qnnpack"
    x = torch.randn(1, 4, 8, 8)
    q = QConv().eval()
    q.qconfig = torch.quantization.get_default_qconfig("qnnpack")
    torch.quantization.prepare(q, inplace=True)
    q(x)
    torch.quantization.convert(q, inplace=True)
    torch.jit.trace(q, x).save(os.path.join(directory, "qconv.pt"))
    torch.jit.freeze(torch.jit.script(q)).save(os.path.join(directory, "qconv_frozen.pt"))


# ---------------------------------------------------------------------------
# A zip writer that writes exactly what it is told (standard library only)
# ---------------------------------------------------------------------------
class Entry:
    """One zip entry. `data` is what is stored in the file (already compressed
    when method is 8); `usize`/`crc` describe the uncompressed content.
    cd_* / lh_* override single fields of the central directory or local header."""

    def __init__(self, name, content, method=0, **over):
        self.name = name.encode() if isinstance(name, str) else name
        self.crc = zlib.crc32(content) & 0xFFFFFFFF
        self.usize = len(content)
        if method == 8:
            c = zlib.compressobj(9, zlib.DEFLATED, -15)
            self.data = c.compress(content) + c.flush()
        else:
            self.data = content
        self.method = method
        self.over = over


def deflated_entry(name, chunk, repeat):
    """A deflate record whose content is `chunk` * `repeat`, compressed
    without ever holding the whole content in memory."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    crc = 0
    parts = []
    for _ in range(repeat):
        crc = zlib.crc32(chunk, crc)
        parts.append(c.compress(chunk))
    parts.append(c.flush())
    e = Entry(name, b"", method=8)
    e.data = b"".join(parts)
    e.crc = crc & 0xFFFFFFFF
    e.usize = len(chunk) * repeat
    return e


def write_zip(path, entries, align=64):
    out = bytearray()
    central = bytearray()
    for e in entries:
        o = e.over
        offset = len(out)
        # PyTorch pads the local header's extra field ("FB") so that data starts
        # at a multiple of 64; do the same so the archives look like its own.
        base = offset + 30 + len(e.name)
        extra = b""
        if align and e.method == 0:
            pad = (-(base + 4)) % align
            extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
        lh = struct.pack(
            "<IHHHHHIIIHH", 0x04034B50, 20, 0, e.method, 0, 0x21,
            o.get("lh_crc", e.crc), o.get("lh_csize", len(e.data)), o.get("lh_usize", e.usize),
            len(e.name), len(extra))
        out += lh + e.name + extra + e.data
        ch = struct.pack(
            "<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, e.method, 0, 0x21,
            o.get("cd_crc", e.crc), o.get("cd_csize", len(e.data)), o.get("cd_usize", e.usize),
            len(e.name), 0, 0, 0, 0, 0, o.get("cd_offset", offset))
        central += ch + e.name
    cd_offset = len(out)
    out += central
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central),
                       cd_offset, 0)
    with open(path, "wb") as f:
        f.write(out)


# ---------------------------------------------------------------------------
# Hostile archives
# ---------------------------------------------------------------------------
def read_entries(path):
    z = zipfile.ZipFile(path)
    return [(i.filename, z.read(i.filename)) for i in z.infolist()]


INDEX = {}


def add(name, entries, expect=(1,), what="", pattern=None, model=None, **kw):
    """`pattern`: a regex the failure message must match (the check's own
    verdict, where a later crash or LibTorch error must not stand in for it).
    `model`: the model the archive is derived from, when not small.pt (an
    exit 0 must then carry that model's weights)."""
    write_zip(os.path.join(HOSTILE, name + ".pt"), entries, **kw)
    INDEX[name] = {"expect": list(expect), "what": what}
    if pattern:
        INDEX[name]["pattern"] = pattern
    if model:
        INDEX[name]["model"] = model


def add_raw(name, data, expect=(1,), what=""):
    with open(os.path.join(HOSTILE, name + ".pt"), "wb") as f:
        f.write(data)
    INDEX[name] = {"expect": list(expect), "what": what}


def make_hostile():
    os.makedirs(HOSTILE, exist_ok=True)
    small = os.path.join(MODELS, "small.pt")
    items = read_entries(small)
    prefix = items[0][0].split("/")[0]
    pkl_name = prefix + "/data.pkl"
    d0_name = prefix + "/data/0"
    code_name = prefix + "/code/__torch__.py"
    names = [n for n, _ in items]
    for n in (pkl_name, d0_name, code_name, prefix + "/version"):
        assert n in names, (n, names)
    pkl = dict(items)[pkl_name]
    d0 = dict(items)[d0_name]
    assert len(d0) == 576, len(d0)

    def entries(replace=None, drop=(), extra=(), methods=None, over=None):
        """The small model's entries, stored, with some replaced or dropped."""
        replace = replace or {}
        methods = methods or {}
        over = over or {}
        out = []
        for n, d in items:
            if n in drop:
                continue
            out.append(Entry(n, replace.get(n, d), methods.get(n, 0), **over.get(n, {})))
        out.extend(extra)
        return out

    def with_pickle(p):
        return entries({pkl_name: p})

    def pkl_long_binput():
        # The same pickle with different bytes: the first memo store (BINPUT 0)
        # as LONG_BINPUT 0.
        i = pkl.index(b"\nq\x00") + 1
        return pkl[:i] + b"r\x00\x00\x00\x00" + pkl[i + 2:]

    def patch_pickle(old, new):
        assert pkl.count(old) == 1, old
        return pkl.replace(old, new)

    # Controls: the same rewriting, nothing hostile. These must convert (exit 0);
    # they prove the writer and the code/pickle rewrites themselves are sound.
    add("control_rewritten", entries(), expect=(0,), what="small.pt rewritten, all stored")
    add("control_code_edit", entries({code_name: code_with_return("torch.relu(" + "(" * 20 +
                                                                  "(conv).forward(x, )" + ")" * 20 + ")")},
                                     drop=(code_name + ".debug_pkl",)),
        expect=(0,), what="code file rewritten, 20 nested parentheses")
    add("control_pickle_noop", with_pickle(pkl_long_binput()), expect=(0,),
        what="data.pkl with its first BINPUT written as LONG_BINPUT")

    # H3: pickles with too few items on the unpickler's stack.
    for name, p in [
        ("pkl_reduce_empty_stack", b"\x80\x02R."),
        ("pkl_reduce_one_item", b"\x80\x02NR."),
        ("pkl_build_one_item", b"\x80\x02Nb."),
        ("pkl_newobj_empty_stack", b"\x80\x02\x81."),
        ("pkl_tuple3_two_items", b"\x80\x02NN\x87."),
        ("pkl_binpersid_empty_stack", b"\x80\x02Q."),
    ]:
        add(name, with_pickle(p), what="data.pkl = %r" % p)

    # H3: 10^6 nested lists / tuples (MARK ... LIST / TUPLE).
    n = 10 ** 6
    add("pkl_nested_lists_1e6", with_pickle(b"\x80\x02" + b"(" * n + b"l" * n + b"."),
        what="10^6 nested lists")
    add("pkl_nested_tuples_1e6", with_pickle(b"\x80\x02" + b"(" * n + b"t" * n + b"."),
        what="10^6 nested tuples")
    add("pkl_nested_lists_append_1e6",
        with_pickle(b"\x80\x02" + b"]" * n + b"a" * (n - 1) + b"."),
        what="10^6 nested lists built with EMPTY_LIST / APPEND")

    # Malformed pickles the review found handled (some with INTERNAL ASSERT texts, L7).
    for name, p in [
        ("pkl_tuple_without_mark", b"\x80\x02NNt."),
        ("pkl_stop_on_empty_stack", b"\x80\x02."),
        ("pkl_unknown_binget", b"\x80\x02h\x07."),
        ("pkl_long_binget_4g", b"\x80\x02j\xff\xff\xff\xff."),
        ("pkl_long_binput_4g", b"\x80\x02Nr\xff\xff\xff\xff."),
        ("pkl_setitems_odd", b"\x80\x02}(K\x01u."),
        ("pkl_appends_to_int", b"\x80\x02K\x01(K\x02e."),
        ("pkl_truncated", pkl[: len(pkl) // 2]),
        ("pkl_no_stop", pkl[:-1]),
        ("pkl_binunicode_2g", b"\x80\x02X\x00\x00\x00\x80abc."),
        ("pkl_not_a_module", b"\x80\x02N."),
        ("pkl_unknown_class", b"\x80\x02c__torch__\nNoSuchClass\n)\x81}b."),
        ("pkl_unknown_opcode", b"\x80\x02\xfe."),
        ("pkl_empty", b""),
    ]:
        add(name, with_pickle(p), what="data.pkl = %r" % p[:40])
    add("pkl_binpersid_odd", with_pickle(patch_pickle(b"K\x90tQ", b"tQ")),
        what="persistent id tuple without numel")
    add("pkl_persid_missing_record", with_pickle(patch_pickle(b"X\x01\x00\x00\x000q", b"X\x01\x00\x00\x007q")),
        what="weight storage key 7: no data/7 record")

    # Pickle globals never run code. The canary must not appear.
    canary = os.path.join(HOSTILE, "CANARY")
    cmd = ("touch " + canary).encode()
    add("pkl_global_os_system",
        with_pickle(b"\x80\x02cos\nsystem\nX" + struct.pack("<I", len(cmd)) + cmd + b"\x85R."),
        what="GLOBAL os.system, touch CANARY")
    src = ("__import__('os').system('touch %s')" % canary).encode()
    add("pkl_global_builtins_eval",
        with_pickle(b"\x80\x02cbuiltins\neval\nX" + struct.pack("<I", len(src)) + src + b"\x85R."),
        what="GLOBAL builtins.eval")
    add("pkl_global_torch_load",
        with_pickle(b"\x80\x02ctorch\nload\nX\x04\x00\x00\x00/etcR."), what="GLOBAL torch.load")

    # Storage views beyond their storage; negative stride. The archive check
    # refuses each before torch::jit::load (issue 32): its message names the
    # pickle and the tensor, and says how far the tensor reaches.
    lie = r"not a valid TorchScript archive: tensor 'weight' of its pickle 'data\.pkl'.*storage record 'data/0' of 576 bytes\) "
    add("tensor_sizes_beyond_storage",
        with_pickle(patch_pickle(b"(K\x04K\x04K\x03K\x03t", b"(K\xc8K\x04K\x03K\x03t")),
        what="weight declared 200x4x3x3 over 144 floats",
        pattern=lie + r"reaches 28800 bytes into its storage")
    add("tensor_offset_2e28",
        with_pickle(patch_pickle(b"K\x90tQq\x0bK\x00(", b"K\x90tQq\x0bJ\x00\x00\x00\x10(")),
        what="weight storage offset 2^28",
        pattern=lie + r"reaches 1073742400 bytes into its storage")
    add("tensor_rows_2e31",
        with_pickle(patch_pickle(b"(K\x04K\x04K\x03K\x03t", b"(J\xff\xff\xff\x7fK\x04K\x03K\x03t")),
        what="weight declared (2^31-1)x4x3x3", pattern=lie + r"reaches \d+ bytes")
    add("tensor_negative_stride",
        with_pickle(patch_pickle(b"(K$K\tK\x03K\x01t", b"(J\x00\x00\x00\xf0K\tK\x03K\x01t")),
        what="weight stride -2^28", pattern=lie + r"has a negative size or stride")
    # A tensor past its storage by one element, through a storage shared with
    # another tensor via the memo (BINGET of the BINPERSID): bias, 4 floats,
    # declared over weight's storage at offset 141 (141 + 4 > 144).
    add("tensor_shared_storage_one_past",
        with_pickle(patch_pickle(b"((h\x07h\x08X\x01\x00\x00\x001q\x0fh\nK\x04tQq\x10K\x00",
                                 b"(h\x0bq\x0fq\x10K\x8d")),
        what="bias: weight's storage (BINGET), offset 141, 4 floats over 144",
        pattern=r"tensor 'bias' of its pickle 'data\.pkl' \(sizes \[4\], strides \[1\], "
                r"storage offset 141, over storage record 'data/0' of 576 bytes\) reaches 580 bytes")

    # bytecode.pkl (the lite interpreter's pickle): LibTorch's mobile loader
    # reads its storages from bytecode/ when a record name holds "bytecode/",
    # else from constants/ (bytecode version 5 on, shared with constants.pkl).
    # torch::jit::load never reads it, so the control converts with the true
    # weights; the two lies are refused all the same.
    def bytecode_pkl(key, size):
        return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storage"
                b"ctorch\nFloatStorage\nX" + struct.pack("<I", len(key)) + key +
                b"X\x03\x00\x00\x00cpuM\x90\x00tQK\x00M" + struct.pack("<H", size) +
                b"\x85K\x01\x85\x89NtR\x85.")
    shared = [Entry(prefix + "/constants/0", d0)]
    add("control_bytecode_shared_storage",
        entries(extra=[Entry(prefix + "/bytecode.pkl", bytecode_pkl(b"0", 144))] + shared),
        expect=(0,), what="bytecode.pkl: a 144-float tensor over constants/0, as v5+ share it")
    add("bytecode_storage_nowhere",
        entries(extra=[Entry(prefix + "/bytecode.pkl", bytecode_pkl(b"99", 144))] + shared),
        what="bytecode.pkl names storage 99: no bytecode/ records, no constants/99",
        pattern=r"its pickle 'bytecode\.pkl' refers to storage record 'constants/99', "
                r"which is missing")
    add("bytecode_tensor_beyond_storage",
        entries(extra=[Entry(prefix + "/bytecode.pkl", bytecode_pkl(b"0", 200))] + shared),
        what="bytecode.pkl: 200 floats over constants/0 of 144",
        pattern=r"tensor #1 of its pickle 'bytecode\.pkl' \(sizes \[200\], strides \[1\], "
                r"storage offset 0, over storage record 'constants/0' of 576 bytes\) "
                r"reaches 800 bytes")

    # H3/H4: storage records.
    add("storage_record_empty", entries({d0_name: b""}), what="data/0 empty (576 expected)")
    add("storage_record_short", entries({d0_name: d0[:16]}), what="data/0 16 of 576 bytes")
    add("storage_record_long", entries({d0_name: d0 + b"\0" * 64}), expect=(0, 1),
        what="data/0 64 bytes longer than the pickle needs")
    add("storage_record_deflate", entries(methods={d0_name: 8}),
        what="data/0 deflate-compressed (PyTorch stores records)")
    bomb = deflated_entry(d0_name, b"\0" * (1 << 20), 64)
    add("storage_record_deflate_bomb_64m",
        [bomb if e.name == d0_name.encode() else e for e in entries()],
        what="data/0 deflate record inflating to 64 MiB")

    # Zip structure.
    add("zip_cd_size_too_small", entries(over={d0_name: {"cd_csize": 8, "cd_usize": 8}}),
        what="central directory says data/0 is 8 bytes (really 576)")
    add("zip_cd_pkl_size_2g", entries(over={pkl_name: {"cd_csize": 1 << 31, "cd_usize": 1 << 31}}),
        what="central directory says data.pkl is 2 GiB")
    size = os.path.getsize(small) + 100000
    add("zip_cd_offset_past_end", entries(over={pkl_name: {"cd_offset": size}}),
        what="central directory offset of data.pkl past the end")
    add("zip_local_header_disagrees", entries(over={d0_name: {"lh_csize": 8, "lh_usize": 8}}),
        expect=(0, 1), what="local header says data/0 is 8 bytes, central directory 576")
    add("zip_declared_4g_deflate",
        entries(methods={d0_name: 8}, over={d0_name: {"cd_usize": 0xFFFFFFFE, "lh_usize": 0xFFFFFFFE}}),
        what="deflate data/0 declared 4 GiB uncompressed")
    dup_pkl = pkl_long_binput()  # the same module, different bytes
    nan = struct.pack("<I", 0x7FC00000) * 144
    add("zip_duplicate_entries",
        entries(extra=[Entry(pkl_name, dup_pkl), Entry(d0_name, nan)]),
        what="data.pkl and data/0 twice, with different content (ambiguous)")
    add("zip_entry_names_escape",
        entries(extra=[Entry("../escape_a.txt", b"x"), Entry(prefix + "/../../escape_b.txt", b"x"),
                       Entry(os.path.join(HOSTILE, "escape_c.txt"), b"x")]),
        expect=(0, 1), what="entries named ../, pre/../../ and absolute (nothing may be written)")
    add("zip_no_version", entries(drop=(prefix + "/version",)), what="no version record")
    add("zip_version_99", entries({prefix + "/version": b"99\n"}), what="version 99")
    add("zip_empty_archive", [], what="a zip with no entries")
    raw = open(small, "rb").read()
    add_raw("zip_truncated", raw[: len(raw) // 2], what="first half of small.pt")
    add_raw("zip_truncated_tail", raw[:-10], what="small.pt without its last 10 bytes")
    rewritten = open(os.path.join(HOSTILE, "control_rewritten.pt"), "rb").read()
    add_raw("zip_stored_truncated", rewritten[: len(rewritten) * 3 // 4],
            what="stored archive cut at 3/4 (no central directory)")

    # Code files.
    def code_case(name, ret, expect=(1,), what=""):
        add(name, entries({code_name: code_with_return(ret)}, drop=(code_name + ".debug_pkl",)),
            expect=expect, what=what)

    code_case("code_paren_nesting_1e5",
              "torch.relu(" + "(" * 100000 + "(conv).forward(x, )" + ")" * 100000 + ")",
              what="10^5 nested parentheses")
    code_case("code_paren_nesting_1e4",
              "torch.relu(" + "(" * 10000 + "(conv).forward(x, )" + ")" * 10000 + ")",
              what="10^4 nested parentheses")
    add("code_long_expression_5e4",
        entries({code_name: code_with_body("    a = (conv).forward(x, )\n    return torch.relu(" +
                                           " + ".join(["a"] * 50000) + ")\n")},
                drop=(code_name + ".debug_pkl",)),
        what="a + a + ... with 50,000 terms")
    add("code_long_expression_1e4",
        entries({code_name: code_with_body("    a = (conv).forward(x, )\n    return torch.relu(" +
                                           " + ".join(["a"] * 10000) + ")\n")},
                drop=(code_name + ".debug_pkl",)),
        what="a + a + ... with 10,000 terms")
    code_case("code_relu_nesting_1e4",
              "torch.relu(" * 10000 + "(conv).forward(x, )" + ")" * 10000,
              what="10,000 nested torch.relu( calls")
    code_case("code_relu_nesting_5e3",
              "torch.relu(" * 5000 + "(conv).forward(x, )" + ")" * 5000,
              what="5,000 nested torch.relu( calls")
    code_case("code_syntax_error", "torch.relu((conv).forward(x, ", what="syntax error")
    code_case("code_unknown_op", "torch.no_such_op((conv).forward(x, ))", what="unknown op")
    code_case("code_wrong_return_type", "3", what="returns an int where Tensor is declared")
    add("code_empty", entries({code_name: b""}, drop=(code_name + ".debug_pkl",)), what="empty code file")
    add("code_binary_garbage", entries({code_name: bytes(range(256)) * 8},
                                       drop=(code_name + ".debug_pkl",)), what="binary code file")
    add("code_missing_file", entries(drop=(code_name, code_name + ".debug_pkl")), what="no code file")
    add("code_while_true",
        entries({code_name: code_with_body("    y = (conv).forward(x, )\n    while True:\n"
                                           "      y = torch.relu(y)\n    return y\n")},
                drop=(code_name + ".debug_pkl",)),
        what="while True in forward (must not run)")

    # Found by fuzz_archive (docs/reliability.md): a class attribute given a
    # value without a type makes LibTorch 1.13's importer read the missing type
    # from memory it does not own (SIGSEGV under ASan; "is an Atom" without);
    # the archive check refuses it first. Its control:
    # a class constant as TorchScript writes it (`name : Final[type] = value`).
    code = dict(items)[code_name]
    assert code.count(b"  __parameters__ = []") == 1, code
    # The second form: a byte outside ASCII in the name (with a damaged
    # .debug_pkl, LibTorch 1.13 died with SIGSEGV on it).
    for name, target in (("code_class_attribute_without_type", b"_pa_rameters__"),
                         ("code_class_attribute_nonascii", b"__parameter\xff__")):
        add(name, entries({code_name: code.replace(b"  __parameters__ = []",
                                                   b"  " + target + b" = []")},
                          drop=(code_name + ".debug_pkl",)),
            what="class body: %r = [] (no type)" % target,
            pattern=r"its code 'code/__torch__\.py' gives class attribute '" +
                    re.escape(target.decode(errors="replace")) +
                    r"' \(line 2\) a value without a type")
    add("control_code_class_constant",
        entries({code_name: code.replace(b"  __buffers__ = []",
                                         b"  __buffers__ = []\n  scale : Final[int] = 3")},
                drop=(code_name + ".debug_pkl",)),
        expect=(0,), what="class body: scale : Final[int] = 3")

    # code/*.debug_pkl (issue 32; fuzz_archive's run 4 found 11 crashes there):
    # the source ranges LibTorch 1.13 reads when an error message highlights
    # the code (ConcreteSourceRangeUnpickler, source_range_serialization.cpp).
    # It reads the first item of the value, the items of each record and its
    # text table's entries without a bounds check, and takes a build_intlist
    # list as List[int] without looking at its elements. Each case pairs a
    # debug record with code that does not parse (a parenthesis left open), so
    # LibTorch reads it while it loads; the check must refuse it first. Indices
    # of 2^28 make the out-of-bounds reads land in unmapped memory: SIGSEGV.
    def debug_case(name, value, why, expect=(1,), what="", error_code=True):
        code = (code_with_return("torch.relu((conv).forward(x, )") if error_code
                else dict(items)[code_name])
        pattern = None
        if why:
            pattern = (r"its debug record 'code/__torch__\.py\.debug_pkl' \(the source ranges "
                       r"LibTorch reads when it reports an error in the code\) " + why)
        elif expect == (1,):  # LibTorch's own verdict on the code, the record read cleanly
            pattern = r"could not be loaded as TorchScript: expected \) but found"
        add(name, entries({code_name: code, code_name + ".debug_pkl": debug_pickle(value)}),
            expect=expect, what=what, pattern=pattern)

    line = "    return torch.relu((conv).forward(x, )\n"
    table = ("", line, "model.py")

    def ranges(source):
        return ((0, ((IntList([]), 0, 0), 0, 0), 0), (200, (source, 4, 40), 1))

    good = ("FORMAT_WITH_STRING_TABLE", table, ranges((IntList([1, 0]), 2, 7)))
    debug_case("control_debug_table", good, None, what="debug record as PyTorch 1.13 writes it")
    debug_case("control_debug_text", ((0, ((line, "model.py", 7), 4, 40)),
                                      (200, ((line, None, 0), 4, 40), 3)), None,
               what="debug record as PyTorch before 1.11 wrote it (text, no table)")
    debug_case("control_debug_tag_first", ((200, 1, ((line, "model.py", 7), 4, 40)),), None,
               expect=(0,), error_code=False,
               what="(offset, tag, range) records, code without an error")
    debug_case("debug_text_index_out_of_range",
               ("FORMAT_WITH_STRING_TABLE", table, ranges((IntList([1, 1 << 28]), 2, 7))),
               "has source text at index 268435456 outside its text table of 3 strings",
               what="text-table index 2^28 of 3")
    debug_case("debug_text_index_negative",
               ("FORMAT_WITH_STRING_TABLE", table, ranges((IntList([-(1 << 28), 1]), 2, 7))),
               "has source text at index -268435456 outside its text table of 3 strings",
               what="text-table index -2^28")
    debug_case("debug_text_index_not_int",
               ("FORMAT_WITH_STRING_TABLE", table, ranges((IntList([1, "x"]), 2, 7))),
               "has a list of text-table indices that are not all integers",
               what="a string among the text-table indices")
    debug_case("debug_file_index_out_of_range",
               ("FORMAT_WITH_STRING_TABLE", table, ranges((IntList([1, 0]), 1 << 28, 7))),
               "names a file by index 268435456 outside its text table of 3 strings",
               what="file index 2^28 of 3")
    debug_case("debug_empty_tuple", (), "is not a non-empty tuple", what="debug record ()")
    debug_case("debug_format_without_table", ("FORMAT_WITH_STRING_TABLE",),
               r"is not \('FORMAT_WITH_STRING_TABLE', a tuple of strings, source ranges\)",
               what="('FORMAT_WITH_STRING_TABLE',) alone")
    debug_case("debug_record_of_one_item", ("FORMAT_WITH_STRING_TABLE", table, ((200,),)),
               r"holds something other than \(byte offset, \(source, start, end\), tag\) records",
               what="a record (200,)")

    # LibTorch's zip reader finds records ignoring case (miniz, without
    # MZ_ZIP_FLAG_CASE_SENSITIVE), and takes the archive's folder from the
    # first record: with a first record 'SMALL/data/0', 'small/data.pkl' is
    # its data.pkl. The check skipped every pickle of such a file (run 4's
    # crash-6f197fc2 hid a stack underflow that way). The control converts.
    def first_case(replace):
        out = entries(replace)
        out[0].name = out[0].name.upper().replace(b"/DATA/", b"/data/")
        return out

    assert items[0][0] == d0_name, items[0][0]
    add("control_first_record_case", first_case({}), expect=(0,),
        what="first record 'SMALL/data/0', the others 'small/...'")
    add("zip_first_record_case_hides_pickle", first_case({pkl_name: b"\x80\x02NN\x87."}),
        what="first record 'SMALL/data/0'; data.pkl = TUPLE3 of 2 items",
        pattern=r"its pickle 'data\.pkl' is malformed \(an instruction needs 3 stack item")
    add("zip_names_differ_in_case", entries(extra=[Entry(prefix + "/DATA.pkl", pkl)]),
        what="records 'small/data.pkl' and 'small/DATA.pkl'",
        pattern=r"whose names differ only in case")

    quantized_conv_cases()

    # `inspect` also runs on the archives of the review's defects (H3, H4, L5)
    # and a few zip-level ones; the review's already-handled variants are only
    # converted (each run of the binary costs about a second).
    inspected = re.compile(r"^(pkl_(reduce|build|newobj|tuple3|binpersid_empty|nested_(lists|tuples)_1e6"
                           r"|global_os|not_a_module)|storage_record_(empty|short|deflate)"
                           r"|zip_(cd_size|duplicate|truncated$|empty)"
                           r"|code_(paren_nesting_1e5|long_expression_5e4|relu_nesting_1e4))")
    for name, spec in INDEX.items():
        spec["inspect"] = bool(inspected.match(name))
    with open(os.path.join(HOSTILE, "index.json"), "w") as f:
        json.dump(INDEX, f, indent=1, sort_keys=True)


def quantized_conv_cases():
    """A quantized convolution's parameters, which LibTorch 1.13 packs while it
    loads (conv_prepack, ConvPackedParamsBase.__setstate__) and divides by:
    fuzz_archive's run 7 found a stride of 0 that kills it with SIGFPE. The
    check refuses each value PyTorch never writes, in the module's state
    (qconv.pt's data.pkl) and in the packed parameters torch.jit.freeze keeps
    (qconv_frozen.pt's constants.pkl, an int16 configuration tensor)."""
    items = read_entries(os.path.join(MODELS, "qconv.pt"))
    pkl_name = next(n for n, _ in items if n.endswith("/data.pkl"))
    pkl = dict(items)[pkl_name]
    # (in_channels 4, out_channels 4, kernel (3, 3), stride, padding, dilation,
    # transposed, output_padding, groups, 'zeros', ...), as torch.jit.save writes it.
    state = re.compile(rb"K\x04K\x04K\x03K\x03\x86q.(K\x01K\x01)\x86q.(K\x00K\x00)\x86q."
                       rb"(K\x01K\x01)\x86q.\x89(K\x00K\x00)\x86q.(K\x01)X", re.S)
    assert len(state.findall(pkl)) == 1, pkl

    def module_case(name, field, new, what, pattern):
        m = state.search(pkl)
        p = pkl[:m.start(field)] + new + pkl[m.end(field):]
        add(name, [Entry(n, p if n == pkl_name else d) for n, d in items], what=what,
            pattern=r"its pickle 'data\.pkl' holds a quantized convolution 'conv' \(class "
                    r"__torch__\.torch\.ao\.nn\.quantized\.modules\.conv\.Conv2d\), whose " + pattern)

    add("control_qconv_rewritten", [Entry(n, d) for n, d in items], expect=(0,), model="qconv.pt",
        what="qconv.pt rewritten, all stored")
    minus1 = b"J\xff\xff\xff\xff"
    module_case("qconv_stride_0", 1, b"K\x00K\x01", "quantized Conv2d state: stride (0, 1)",
                r"stride is \[0, 1\]: a stride is 1 or more; LibTorch 1.13 divides by it")
    module_case("qconv_stride_negative", 1, minus1 + b"K\x01", "stride (-1, 1)",
                r"stride is \[-1, 1\]")
    module_case("qconv_padding_negative", 2, b"K\x00" + minus1, "padding (0, -1)",
                r"padding is \[0, -1\]: a padding is 0 or more")
    module_case("qconv_dilation_0", 3, b"K\x01K\x00", "dilation (1, 0)",
                r"dilation is \[1, 0\]: a dilation is 1 or more")
    module_case("qconv_output_padding_negative", 4, minus1 + b"K\x00", "output_padding (-1, 0)",
                r"output padding is \[-1, 0\]")
    module_case("qconv_groups_0", 5, b"K\x00", "groups 0", r"groups is 0: a convolution has 1 group")
    module_case("qconv_groups_not_dividing", 5, b"K\x03", "groups 3 over 4 channels",
                r"groups is 3 over a weight of 4 channels")
    # A stride PyTorch itself writes (the module's state is Python ints), which
    # its packed parameters keep as int16: 2**30 reads back as 0 there.
    m = state.search(pkl)
    wraps = pkl[:m.start(1)] + b"J\x00\x00\x00\x40K\x01" + pkl[m.end(1):]
    add("qconv_stride_wraps_int16", [Entry(n, wraps if n == pkl_name else d) for n, d in items],
        what="quantized Conv2d state: stride (2**30, 1), beyond the packed parameters' int16",
        pattern=r"packed parameters hold stride \[0, 1\].*16-bit integers.*below 32768")

    # Frozen: ('2', [int16 configuration, weight], [bias]); the configuration
    # is [2, stride x2, padding x2, dilation x2, output_padding x2, groups, transpose].
    items = read_entries(os.path.join(MODELS, "qconv_frozen.pt"))
    config_name = next(n for n, _ in items if n.endswith("/constants/0"))
    config = dict(items)[config_name]
    assert struct.unpack("<11h", config[:22]) == (2, 1, 1, 0, 0, 1, 1, 0, 0, 1, 0), config

    def frozen_case(name, index, value, what, pattern):
        v = list(struct.unpack("<11h", config[:22]))
        v[index] = value
        c = struct.pack("<11h", *v) + config[22:]
        add(name, [Entry(n, c if n == config_name else d) for n, d in items], what=what,
            pattern=r"its pickle 'constants\.pkl' holds the packed parameters of a quantized "
                    r"convolution \(class __torch__\.torch\.classes\.quantized\."
                    r"Conv2dPackedParamsBase\), whose " + pattern)

    add("control_qconv_frozen_rewritten", [Entry(n, d) for n, d in items], expect=(0,),
        model="qconv_frozen.pt", what="qconv_frozen.pt rewritten, all stored")
    frozen_case("qconv_frozen_stride_0", 1, 0, "frozen: configuration stride (0, 1)",
                r"stride is \[0, 1\]: a stride is 1 or more")
    frozen_case("qconv_frozen_dilation_0", 6, 0, "frozen: dilation (1, 0)",
                r"dilation is \[1, 0\]")
    frozen_case("qconv_frozen_padding_negative", 3, -1, "frozen: padding (-1, 0)",
                r"padding is \[-1, 0\]")
    frozen_case("qconv_frozen_groups_0", 9, 0, "frozen: groups 0", r"groups is 0")
    frozen_case("qconv_frozen_groups_not_dividing", 9, 3, "frozen: groups 3 over 4 channels",
                r"groups is 3 over a weight of 4 channels")

    # Version 3 (3, List[int] configuration, [None, weight, bias]), which
    # LibTorch 1.13 reads but PyTorch 1.13 does not write: constants.pkl
    # written by hand over qconv_frozen.pt's weight (constants/1, channels-last
    # strides) and bias (constants/2).
    consts_name = next(n for n, _ in items if n.endswith("/constants.pkl"))
    consts = dict(items)[consts_name]
    weight_layout = b"(K\x04K\x04K\x03K\x03t(K$K\x01K\x0cK\x04t"
    m = re.search(rb"per_tensor_affine\nq.(G.{8})K\x00t", consts, re.S)
    assert m and weight_layout in consts, consts

    def string(x):
        return b"X" + struct.pack("<I", len(x)) + x

    def ints(v):
        return b"".join(b"K" + bytes([x]) if 0 <= x < 256 else b"J" + struct.pack("<i", x) for x in v)

    def tensor(fn, storage, key, numel, layout, qparams=b""):
        return (b"ctorch._utils\n" + fn + b"\n((" + string(b"storage") + b"ctorch\n" + storage +
                b"\n" + string(key) + string(b"cpu") + ints([numel]) + b"tQK\x00" + layout +
                qparams + b"\x89ccollections\nOrderedDict\n)RtR")

    def v3_case(name, config, **kw):
        weight = tensor(b"_rebuild_qtensor", b"QInt8Storage", b"1", 144, weight_layout,
                        b"(ctorch\nper_tensor_affine\n" + m.group(1) + b"K\x00t")
        bias = tensor(b"_rebuild_tensor_v2", b"FloatStorage", b"2", 4, b"(K\x04t(K\x01t")
        p = (b"\x80\x02c__torch__.torch.classes.quantized\nConv2dPackedParamsBase\n)\x81K\x03"
             b"ctorch.jit._pickle\nbuild_intlist\n(](" + ints(config) + b"e\x85R"
             b"ctorch.jit._pickle\nrestore_type_tag\n(](N" + weight + bias + b"e" +
             string(b"List[Optional[Tensor]]") + b"tR\x87b\x85.")
        add(name, [Entry(n, p if n == consts_name else d) for n, d in items], **kw)

    v3_case("control_qconv_v3", [2, 1, 1, 0, 0, 1, 1, 0, 0, 1, 0], expect=(0,),
            model="qconv_frozen.pt", what="frozen, its packed parameters in version 3")
    v3_case("qconv_v3_stride_0", [2, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0],
            what="frozen, version 3: configuration stride (0, 1)",
            pattern=r"its pickle 'constants\.pkl' holds the packed parameters of a quantized "
                    r"convolution \(class [^)]*Conv2dPackedParamsBase\), whose stride is \[0, 1\]")
    v3_case("qconv_v3_groups_not_dividing", [2, 1, 1, 0, 0, 1, 1, 0, 0, 3, 0],
            what="frozen, version 3: groups 3 over 4 channels",
            pattern=r"Conv2dPackedParamsBase\), whose groups is 3 over a weight of 4 channels")


CODE_HEAD = None


def code_with_body(body):
    """small.pt's code file with forward's body replaced."""
    head = CODE_HEAD
    return (head + body).encode()


def code_with_return(expr):
    return code_with_body("    conv = self.conv\n    return %s\n" % expr)


def load_code_head():
    global CODE_HEAD
    items = dict(read_entries(os.path.join(MODELS, "small.pt")))
    prefix = next(iter(items)).split("/")[0]
    code = items[prefix + "/code/__torch__.py"].decode()
    marker = "    x: Tensor) -> Tensor:\n"
    assert marker in code, code
    CODE_HEAD = code[: code.index(marker) + len(marker)]


if __name__ == "__main__":
    if (not os.path.exists(os.path.join(MODELS, "resnet18.pt")) or
            not os.path.exists(os.path.join(MODELS, "qconv.pt")) or "--force" in sys.argv):
        make_models()
    load_code_head()
    make_hostile()
    print("make_hostile: %d models, %d archives in %s" % (
        len(os.listdir(MODELS)), len(INDEX), OUT))

"""Shared helpers for tools/make_fixtures.py (the oracle's fixture generator)
and its families of cases (tools/fixtures/).

Everything here runs under Debian's /usr/bin/python3 with python3-torch 1.13.
The reference is always PyTorch's own converter
(torch.backends._nnapi.prepare); nothing of it is re-implemented here, we only
capture what it returns.  See tests/reference/README.md for the on-disk layout.
"""

import contextlib
import json
import os
import re
import shutil
import traceback

import torch
import torch.backends._nnapi.prepare as nnapi_prepare
from torch.backends._nnapi.serializer import _NnapiSerializer


# --------------------------------------------------------------------------
# Input helpers with the semantics of test_nnapi.py's qpt() / nhwc().


def save_tensors(tensors, path):
    """torch.save a list of tensors as a tuple.

    LibTorch's unpickler (torch::jit::pickle_load, used by the C++ tests)
    lacks the APPEND opcode that Python's pickler emits for one-element
    lists; tuples load in both. torch.load in Python gives back a tuple.
    """
    torch.save(tuple(tensors), path)

def qpt(values, scale, zero_point, dtype=torch.quint8):
    """Quantize per tensor; `values` may be a nested list or a tensor."""
    if isinstance(values, torch.Tensor):
        t = values.detach().clone()
    else:
        t = torch.tensor(values)
    return torch.quantize_per_tensor(t, scale, zero_point, dtype)


def nhwc(t):
    """A channels_last copy flagged for the converter as an NHWC input."""
    out = t.clone().contiguous(memory_format=torch.channels_last)
    out.nnapi_nhwc = True
    return out


def is_nhwc(t):
    return bool(getattr(t, "nnapi_nhwc", False))


# --------------------------------------------------------------------------
# CLI input spec: DIMS[,dtype=...][,scale=S][,zero_point=Z][,nhwc]

_SPEC_DTYPES = {
    torch.float32: None,
    torch.int32: "int32",
    torch.bool: "bool",
    torch.quint8: "quint8",
    torch.int16: "int16",  # NNAPI QUANT16 values (use_int16_for_qint16): nnapi_* attributes
}
# The reference's operand codes for int16 inputs (NeuralNetworks.h).
TENSOR_QUANT16_SYMM, TENSOR_QUANT16_ASYMM = 7, 12


def input_spec(t):
    if t.dim() == 0:
        dims = "scalar"
    else:
        dims = "x".join(str(int(d)) for d in t.shape)
    parts = [dims]
    if t.dtype not in _SPEC_DTYPES:
        raise ValueError(f"no CLI spec for input dtype {t.dtype}")
    dtype = _SPEC_DTYPES[t.dtype]
    if dtype is not None:
        parts.append(f"dtype={dtype}")
    if t.is_quantized:
        parts.append(f"scale={float(t.q_scale())!r}")
        parts.append(f"zero_point={int(t.q_zero_point())}")
    if t.dtype == torch.int16:
        # nnapi-convert: QUANT16_SYMM when no zero_point is given, else ASYMM.
        parts.append(f"scale={float(t.nnapi_scale)!r}")
        if t.nnapi_dtype == TENSOR_QUANT16_ASYMM:
            parts.append(f"zero_point={int(t.nnapi_zero_point)}")
        elif t.nnapi_dtype != TENSOR_QUANT16_SYMM or t.nnapi_zero_point != 0:
            raise ValueError("an int16 input needs nnapi_dtype 7 (zero point 0) or 12")
    if is_nhwc(t):
        parts.append("nhwc")
    return ",".join(parts)


def plain(t):
    """Same data and strides, but a fresh Python object without the
    `nnapi_nhwc` attribute, so torch.save emits a plain tensor record
    (readable by the C++ unpickler)."""
    return t.detach()


def as_list(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        out = []
        for v in x:
            out.extend(as_list(v))
        return out
    raise TypeError(f"unexpected output type {type(x)}")


# --------------------------------------------------------------------------
# Running the reference.

@contextlib.contextmanager
def identity_freeze():
    """process_for_nnapi() calls torch.jit.freeze itself; our module is
    already frozen (and freezing a frozen module fails), so make it a no-op."""
    saved = torch.jit.freeze
    torch.jit.freeze = lambda mod, *a, **k: mod
    try:
        yield
    finally:
        torch.jit.freeze = saved


class CapturingSerializer(_NnapiSerializer):
    """The stock serializer; only remembers what serialize_model returned
    (process_for_nnapi does not hand back the shape-compute lines)."""

    def __init__(self, use_int16_for_qint16=False):
        super().__init__(config=None, use_int16_for_qint16=use_int16_for_qint16)
        self.result = None

    def serialize_model(self, model, inputs, return_shapes=None):
        self.result = super().serialize_model(model, inputs, return_shapes)
        return self.result


def freeze_and_remove_mutation(traced):
    """The one pipeline used for every reference: freeze, then remove
    mutation (in-place ops).  Returns (frozen_module, graph_changed)."""
    frozen = torch.jit.freeze(traced)
    before = str(frozen.graph)
    torch._C._jit_pass_remove_mutation(frozen.graph)
    return frozen, str(frozen.graph) != before


class Reference:
    """Outcome of the reference converter on one case."""

    def __init__(self):
        self.ok = False
        self.error = None
        self.error_trace = None
        self.remove_mutation_changed = False
        self.ser_model = None        # torch.int32 tensor
        self.weights = None
        self.inp_mem_fmts = None
        self.out_mem_fmts = None
        self.shape_compute_lines = None
        self.retval_count = None
        self.prepared_ser_model = None
        self.out_templates = None
        self.converted = None


def run_reference(traced, convert_args, run_args, want_converted, **kwargs):
    """kwargs: convert_model_to_nnapi's return_shapes, use_int16_for_qint16,
    compilation_preference, relax_f32_to_f16 (the last two need want_converted)."""
    ref = Reference()
    try:
        frozen, ref.remove_mutation_changed = freeze_and_remove_mutation(traced)
        # process_for_nnapi hands use_int16_for_qint16 only to a serializer it makes.
        ser = CapturingSerializer(kwargs.get("use_int16_for_qint16", False))
        with identity_freeze():
            if want_converted:
                converted = nnapi_prepare.convert_model_to_nnapi(
                    frozen, list(convert_args), serializer=ser, **kwargs)
                shape_compute_module = converted.mod.shape_compute_module
                ref.converted = converted
            else:
                assert not {"compilation_preference", "relax_f32_to_f16"} & set(kwargs)
                shape_compute_module = nnapi_prepare.process_for_nnapi(
                    frozen, list(convert_args), serializer=ser, **kwargs)[0]
        (ser_model, used_weights, inp_fmts, out_fmts, lines,
         retval_count) = ser.result
        ref.ser_model = torch.tensor(ser_model, dtype=torch.int32)
        ref.weights = used_weights
        ref.inp_mem_fmts = list(inp_fmts)
        ref.out_mem_fmts = list(out_fmts)
        ref.shape_compute_lines = list(lines)
        ref.retval_count = int(retval_count)
        prepared = ref.ser_model.clone()
        ref.out_templates = list(
            shape_compute_module.prepare(prepared, list(run_args)))
        ref.prepared_ser_model = prepared
        ref.ok = True
    except Exception as e:  # the reference refusing is a legitimate outcome
        ref.ok = False
        ref.error = str(e)
        ref.error_trace = traceback.format_exc()
        ref.converted = None
    return ref


def int32_bytes(t):
    assert t.dtype == torch.int32
    return t.numpy().astype("<i4").tobytes()


def shapes_mismatch(templates, eager_outputs):
    if len(templates) != len(eager_outputs):
        return True
    return any(list(t.shape) != list(e.shape)
               for t, e in zip(templates, eager_outputs))


# --------------------------------------------------------------------------
# Writing one case directory.

def write_case(out_dir, *, name, source, traced, convert_args, run_args,
               eager_outputs, ref, error_regex, options=(), must_convert=False, fold=None,
               not_runnable=None, validator_refuses=None, must_refuse=False):
    case_dir = os.path.join(out_dir, name)
    if os.path.isdir(case_dir):
        shutil.rmtree(case_dir)
    os.makedirs(case_dir)

    torch.jit.save(traced, os.path.join(case_dir, "model.pt"))
    save_tensors([plain(a) for a in run_args], os.path.join(case_dir, "args.pt"))
    save_tensors([plain(o) for o in eager_outputs],
               os.path.join(case_dir, "eager.pt"))

    mismatch = False
    if ref.ok:
        mismatch = shapes_mismatch(ref.out_templates, eager_outputs)
        rdir = os.path.join(case_dir, "ref")
        os.makedirs(rdir)
        with open(os.path.join(rdir, "ser_model.bin"), "wb") as f:
            f.write(int32_bytes(ref.ser_model))
        with open(os.path.join(rdir, "prepared_ser_model.bin"), "wb") as f:
            f.write(int32_bytes(ref.prepared_ser_model))
        save_tensors(ref.weights, os.path.join(rdir, "weights.pt"))
        save_tensors(ref.out_templates, os.path.join(rdir, "out_templates.pt"))
        header = ref.ser_model[:6].tolist()
        manifest = {
            "inp_mem_fmts": ref.inp_mem_fmts,
            "out_mem_fmts": ref.out_mem_fmts,
            "retval_count": ref.retval_count,
            "shape_compute_lines": ref.shape_compute_lines,
            "operand_count": int(header[1]),
            "operation_count": int(header[3]),
        }
        with open(os.path.join(rdir, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
        if ref.converted is not None:
            torch.jit.save(ref.converted, os.path.join(rdir, "converted.pt"))

    case = {
        "name": name,
        "source": source,
        "inputs": [input_spec(a) for a in convert_args],
        "options": list(options),
        "expect": "ok" if ref.ok else "refused",
        "reference_error": None if ref.ok else ref.error,
        "error_regex": error_regex,
        "must_convert": must_convert,
        "fold": None if fold is None else [list(p) for p in fold],
        "not_runnable": not_runnable,
        # Why PyTorch's converter's model breaks NeuralNetworks.h, so that
        # nnapi-convert's validator refuses it (VALIDATOR_REFUSES in
        # make_fixtures.py), or null.
        "validator_refuses": validator_refuses,
        "must_refuse": must_refuse,
        "remove_mutation_changed": bool(ref.remove_mutation_changed),
        "reference_shape_mismatch": bool(mismatch),
    }
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(case, f, indent=1)
        f.write("\n")
    return case


def regex_matches(regex, message):
    return regex is not None and message is not None and \
        re.search(regex, message) is not None


# --------------------------------------------------------------------------
# The cases' registry, and what several families of cases use.

class Case:
    """What one self.check(...) call receives."""

    def __init__(self, module, args, *, trace_args=None, convert_args=None,
                 error_regex=None, must_convert=False, must_refuse=False, options=(),
                 reference_kwargs=None, fold=None, not_runnable=None, engine=None):
        self.module = module
        # The quantized engine eager runs with (None: qnnpack, as on Android).
        self.engine = engine
        self.args = list(args) if isinstance(args, (list, tuple)) else [args]
        self.trace_args = trace_args
        self.convert_args = convert_args
        self.error_regex = error_regex
        self.must_convert = must_convert
        # nnapi-convert must refuse it (exit 1, naming the node, matching
        # error_regex), whatever the reference does
        self.must_refuse = must_refuse
        # nnapi-convert options for the case (CLI syntax; the tests map each
        # onto ConvertOptions, tests/common/fixtures.h apply_case_options), and
        # the same request in the words of the reference's
        # convert_model_to_nnapi (compilation_preference, relax_f32_to_f16,
        # use_int16_for_qint16, return_shapes), written by hand for each case.
        self.options = list(options)
        self.reference_kwargs = dict(reference_kwargs or {})
        # What --fuse-activations must fold (None: not stated): one
        # (NNAPI operation, fused activation) pair per activation folded, e.g.
        # ("CONV_2D", "RELU6"); [] when nothing may fold.
        self.fold = fold
        # Why the converted model cannot run on NNAPI (then it is only
        # compared byte for byte), or None.
        self.not_runnable = not_runnable


# Registry: (name, source, builder).  Builders run lazily, after
# torch.manual_seed(0), so --only/--list never build what they skip and every
# case is identical whether generated alone or with the others.
# tools/fixtures/__init__.py's registry() puts them in ORDER.
REGISTRY = []
# The section each case was registered in (section() below).
SECTION_OF = {}
_current_section = [None]


def section(name):
    """The cases registered from here on belong to section `name`, which
    tools/fixtures/__init__.py's ORDER places among the others."""
    _current_section[0] = name


def case(name, builder, source="test_nnapi"):
    assert all(n != name for n, _, _ in REGISTRY), name
    assert _current_section[0] is not None, f"{name}: no section() before it"
    REGISTRY.append((name, source, builder))
    SECTION_OF[name] = _current_section[0]



# The four input kinds of float_and_quant_and_nhwc() (scale/zero_point
# arguments are ignored there too: it always uses 0.03 / 128).
KINDS = ["float", "float-nhwc", "quant", "quant-nhwc"]


def float_and_quant_and_nhwc(inp_float):
    torch.manual_seed(29)
    inp_quant = qpt(inp_float, 0.03, 128)
    return {
        "float": inp_float,
        "float-nhwc": nhwc(inp_float),
        "quant": inp_quant,
        "quant-nhwc": nhwc(inp_quant),
    }


# Android 13's NNAPI (feature level 6: BATCH_MATMUL) as the target.
API_33 = ["--min-android-api", "33"]
# Android 11's (feature level 4: RESIZE_BILINEAR's corner flags).
API_30 = ["--min-android-api", "30"]


def beyond(name, builder):
    def build():
        c = builder()
        c.must_convert = True
        return c
    case("beyond-" + name, build, source="beyond")


def refuse(name, builder, regex):
    """A model nnapi-convert must refuse (exit 1, the node named, the message
    matching `regex`), whatever the reference does with it."""
    def build():
        c = builder()
        c.error_regex = regex
        c.must_refuse = True
        return c
    case("beyond-" + name, build, source="beyond")


# The two runs of a flexible-batch case (suffixes -a and -b): their batch sizes.
FLEX_BATCHES = (("a", 1), ("b", 3))
FORMS = ("plain", "nhwc", "flex")


def beyond_forms(name, make, *shapes, scales=None, forms=FORMS):
    """A model (a fresh make() for each case) on torch.randn inputs of
    `shapes` (each times its entry of `scales`, where given), registered in
    the layout and batch forms of `forms`, in this order:
      "plain": beyond-NAME, the inputs as they are;
      "nhwc":  beyond-NAME-nhwc, the first input NHWC;
      "flex":  beyond-NAME-flex-a and -b, every input's first dim flexible
               (0 in --input), run at the batch sizes of FLEX_BATCHES."""
    def inputs(batch=None, first=lambda t: t):
        ts = [torch.randn(s if batch is None else (batch,) + tuple(s[1:])) for s in shapes]
        if scales is not None:
            ts = [t if k is None else t * k for t, k in zip(ts, scales)]
        return [first(ts[0])] + ts[1:]

    assert set(forms) <= set(FORMS), forms
    if "plain" in forms:
        beyond(name, lambda: Case(make(), inputs()))
    if "nhwc" in forms:
        beyond(f"{name}-nhwc", lambda: Case(make(), inputs(first=nhwc)))
    if "flex" in forms:
        for suffix, batch in FLEX_BATCHES:
            beyond(f"{name}-flex-{suffix}", lambda b=batch: Case(
                make(), inputs(b), convert_args=[torch.zeros(0, *s[1:]) for s in shapes]))


# Pools and upsampling over a flexible height and width (0x0 in --input),
# each run at two sizes (suffixes -a and -b), the batch fixed (1x) or flexible
# (0x, "-flex-batch"). ceil_mode: NNAPI has none; stride - 1 more cells of
# bottom/right padding give PyTorch's ceil size at every size when no last
# window can start in the padding (stride <= kernel - padding).
FLEXHW_SIZES = {"a": (9, 7), "b": (16, 12)}


def flexhw(name, module, kinds, options=(), batch=1, channels=3):
    for _k in kinds:
        for _s, (_h, _w) in FLEXHW_SIZES.items():
            beyond(f"flexhw-{name}-{_k}-{_s}", lambda k=_k, h=_h, w=_w: Case(
                module(), float_and_quant_and_nhwc(torch.randn(batch or 2, channels, h, w))[k],
                convert_args=[float_and_quant_and_nhwc(torch.zeros(batch, channels, 0, 0))[k]],
                options=list(options)))


def flexhw_refused(name, module, regex, options=(), kind="float"):
    refuse(f"flexhw-{name}", lambda: Case(
        module(), float_and_quant_and_nhwc(torch.randn(1, 3, 9, 7))[kind],
        convert_args=[float_and_quant_and_nhwc(torch.zeros(1, 3, 0, 0))[kind]],
        options=list(options)), regex)

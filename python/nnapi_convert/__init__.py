"""nnapi-convert from Python: runs the nnapi-convert binary (it is not a second converter).

    import nnapi_convert
    report = nnapi_convert.convert("model.pt", inputs=["1x3x224x224"], nhwc=True, verify=True)

    from nnapi_convert import convert_model_to_nnapi   # was: torch.backends._nnapi.prepare
    nnapi_model = convert_model_to_nnapi(traced, input_tensor)

The binary is found in this order: the environment variable NNAPI_CONVERT (a path), the
binary installed with this package (<prefix>/bin/nnapi-convert), `nnapi-convert` on PATH.
"""

import json
import os
import shutil
import subprocess
import tempfile

__all__ = [
    "ConversionError",
    "convert",
    "convert_model_to_nnapi",
    "find_binary",
    "input_spec",
    "metadata",
]

# NeuralNetworks.h's PreferenceCode, as torch.backends._nnapi.prepare names them.
ANEURALNETWORKS_PREFER_LOW_POWER = 0
ANEURALNETWORKS_PREFER_FAST_SINGLE_ANSWER = 1
ANEURALNETWORKS_PREFER_SUSTAINED_SPEED = 2
_PREFERENCES = {0: "low-power", 1: "fast-single-answer", 2: "sustained-speed"}

# NNAPI operand codes an int16 input's nnapi_dtype names (use_int16_for_qint16).
_TENSOR_QUANT16_SYMM = 7
_TENSOR_QUANT16_ASYMM = 12

METADATA_NAME = "nnapi_convert.json"


class ConversionError(Exception):
    """The binary could not convert the model.

    exit_code: 1 the model cannot be converted, 2 a usage error (bad spec, option).
    unsupported: the report's list of node kinds the model uses that nnapi-convert does not
    lower, each a dict with "kind", "count", "locations" (the source lines that use it) and
    "first_node". node, source: the graph node the error names and its source range, if any.
    report: the binary's JSON report entry for the model (None when it wrote none).
    """

    def __init__(self, message, exit_code, unsupported=(), node=None, source=None, report=None):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.unsupported = list(unsupported)
        self.node = node
        self.source = source
        self.report = report


def _installed_binary():
    try:
        from . import _installed
    except ImportError:  # the source tree: not installed
        return None
    path = os.path.normpath(os.path.join(os.path.dirname(__file__), _installed.BINARY))
    return path if os.access(path, os.X_OK) else None


def find_binary():
    """The nnapi-convert binary this package runs (see the module's docstring)."""
    env = os.environ.get("NNAPI_CONVERT")
    if env:
        if not os.access(env, os.X_OK):
            raise FileNotFoundError(
                f"NNAPI_CONVERT names '{env}', which is not an executable file; point it at the "
                "nnapi-convert binary or unset it")
        return env
    found = _installed_binary() or shutil.which("nnapi-convert")
    if not found:
        raise FileNotFoundError(
            "no nnapi-convert binary: none installed beside this package and none on PATH; "
            "install nnapi-convert or set NNAPI_CONVERT to the binary's path")
    return found


def input_spec(tensor, nhwc=None):
    """The --input spec for an example tensor, read as PyTorch's NNAPI converter reads it.

    Its shape (0 marks a flexible size), its dtype (float32, int32, quint8 with q_scale and
    q_zero_point, int16 with nnapi_dtype/nnapi_scale/nnapi_zero_point), and `nhwc` from the
    tensor's `nnapi_nhwc` attribute (PyTorch's serializer: getattr(t, "nnapi_nhwc", False))
    unless given.
    """
    import torch

    if isinstance(tensor, str):
        return tensor
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"an input must be a tensor or an --input spec string, not {type(tensor)}")
    parts = ["x".join(str(int(d)) for d in tensor.shape) if tensor.dim() else "scalar"]
    if tensor.dtype == torch.float32:
        pass
    elif tensor.dtype == torch.int32:
        parts.append("dtype=int32")
    elif tensor.dtype == torch.quint8:
        parts += ["dtype=quint8", f"scale={float(tensor.q_scale())!r}",
                  f"zero_point={int(tensor.q_zero_point())}"]
    elif tensor.dtype == torch.int16:
        code = getattr(tensor, "nnapi_dtype", None)
        if code not in (_TENSOR_QUANT16_SYMM, _TENSOR_QUANT16_ASYMM):
            raise ValueError("an int16 input needs nnapi_dtype 7 (TENSOR_QUANT16_SYMM) or 12 "
                             "(TENSOR_QUANT16_ASYMM), nnapi_scale and nnapi_zero_point, as "
                             "PyTorch's converter does")
        parts += ["dtype=int16", f"scale={float(tensor.nnapi_scale)!r}"]
        if code == _TENSOR_QUANT16_ASYMM:
            parts.append(f"zero_point={int(tensor.nnapi_zero_point)}")
    elif tensor.dtype == torch.bool:
        parts.append("dtype=bool")
    else:
        raise ValueError(f"nnapi-convert takes no input of dtype {tensor.dtype}")
    if nhwc if nhwc is not None else getattr(tensor, "nnapi_nhwc", False):
        parts.append("nhwc")
    return ",".join(parts)


def _option_args(options):
    """Keyword options as command-line options: min_android_api=30 -> --min-android-api 30,
    True -> the flag alone, False/None -> left out, a list -> the option once per item."""
    args = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                args += [flag, str(v)]
        else:
            args += [flag, str(value)]
    return args


def _run(binary, args, report_path):
    proc = subprocess.run([binary] + args + ["--report", report_path],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    entry = None
    if os.path.exists(report_path):
        with open(report_path) as f:
            models = json.load(f)["models"]
        entry = models[0] if models else None
    if proc.returncode != 0:
        message = proc.stderr.strip() or proc.stdout.strip()
        if entry is not None and entry.get("status") == "failed":
            error = entry.get("error") or {}
            raise ConversionError(error.get("message") or message, proc.returncode,
                                  entry.get("unsupported", []), error.get("node"),
                                  error.get("source"), entry)
        raise ConversionError(message or f"nnapi-convert exited with {proc.returncode}",
                              proc.returncode, report=entry)
    return entry


def convert(model_or_path, inputs, output=None, nhwc=False, verify=False, lite=False,
            binary=None, **options):
    """Convert a TorchScript model (a path, or a torch.jit.ScriptModule) with nnapi-convert.

    inputs: one per input, each an --input spec string ("1x3x224x224,nhwc", "int=16000") or an
    example tensor (input_spec() gives its spec). nhwc, verify, lite: --nhwc, --verify,
    --lite. Any other keyword is the command-line option of that name (min_android_api=30,
    cpu_fallback=True, preference="low-power", return_shape=["1x1000"]).
    output: the file to write (a path model's default: <model>.nnapi.pt beside it; a module
    needs one).

    Returns the binary's --report entry for the model as a dict ("output", "operations",
    "output_sha256", "verify", ...). Raises ConversionError (with .unsupported, the node kinds
    that do not convert with their source lines) if it fails.
    """
    import torch

    binary = binary or find_binary()
    if isinstance(inputs, (torch.Tensor, str)):
        inputs = [inputs]
    with tempfile.TemporaryDirectory(prefix="nnapi_convert-") as tmp:
        if isinstance(model_or_path, (str, os.PathLike)):
            path = os.fspath(model_or_path)
        elif isinstance(model_or_path, torch.jit.ScriptModule):
            if output is None:
                raise ValueError("convert() of a module needs output=PATH (a path's default is "
                                 "<model>.nnapi.pt beside it; a module has none)")
            path = os.path.join(tmp, "model.pt")
            torch.jit.save(model_or_path, path)
        else:
            raise TypeError("convert() takes a model path or a torch.jit.ScriptModule "
                            "(torch.jit.trace or torch.jit.script it first), not "
                            f"{type(model_or_path).__name__}")
        args = [path]
        for i in inputs:
            args += ["--input", input_spec(i)]
        if output is not None:
            args += ["-o", os.fspath(output)]
        args += _option_args(dict(options, nhwc=nhwc, verify=verify, lite=lite))
        return _run(binary, args + ["-q"], os.path.join(tmp, "report.json"))


def metadata(path):
    """The nnapi_convert.json a converted file (.nnapi.pt or .ptl) carries, as a dict."""
    text = _extra_text(path)
    if text is not None:
        return json.loads(text)
    raise ValueError(f"'{path}' carries no {METADATA_NAME}: not written by this nnapi-convert")


def _keep_file_bytes(module, pt_path, ptl_path):
    """The loaded module's save methods write the converter's files as they are (byte for
    byte the CLI's output, with its metadata) while the module serializes as it did when it
    was loaded; a module changed since, or a save with _extra_files, is serialized by PyTorch
    (the metadata added to the extra files)."""
    with open(pt_path, "rb") as f:
        pt_bytes = f.read()
    with open(ptl_path, "rb") as f:
        ptl_bytes = f.read()
    text = _extra_text(pt_path)
    meta = {METADATA_NAME: text} if text is not None else {}
    c = module._c
    fingerprint = c.save_to_buffer()

    def unchanged(kwargs):
        return not kwargs.get("_extra_files") and c.save_to_buffer() == fingerprint

    def extra(kwargs):
        return dict(kwargs, _extra_files=dict(meta, **(kwargs.get("_extra_files") or {})))

    def write(f, data):
        with open(os.fspath(f), "wb") as out:
            out.write(data)

    def save(f, **kwargs):
        return write(f, pt_bytes) if unchanged(kwargs) else c.save(os.fspath(f), **extra(kwargs))

    def save_to_buffer(*args, **kwargs):
        if not args and unchanged(kwargs):
            return pt_bytes
        return c.save_to_buffer(*args, **extra(kwargs))

    def save_for_lite(f, **kwargs):
        if unchanged(kwargs):
            return write(f, ptl_bytes)
        return c._save_for_mobile(os.fspath(f), **extra(kwargs))

    def save_to_buffer_for_lite(**kwargs):
        if unchanged(kwargs):
            return ptl_bytes
        return c._save_to_buffer_for_mobile(**extra(kwargs))

    for name, fn in (("save", save), ("save_to_buffer", save_to_buffer),
                     ("_save_for_lite_interpreter", save_for_lite),
                     ("_save_to_buffer_for_lite_interpreter", save_to_buffer_for_lite)):
        object.__setattr__(module, name, fn)
    return module


def _extra_text(path):
    import zipfile

    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            if name.endswith("/extra/" + METADATA_NAME):
                return z.read(name).decode()
    return None


def convert_model_to_nnapi(model, inputs, serializer=None, return_shapes=None,
                           use_int16_for_qint16=False,
                           compilation_preference=ANEURALNETWORKS_PREFER_SUSTAINED_SPEED,
                           relax_f32_to_f16=False):
    """torch.backends._nnapi.prepare.convert_model_to_nnapi, done by nnapi-convert.

    The same arguments (inputs: a tensor or a list of them, read as PyTorch reads them:
    `nnapi_nhwc = True` on a tensor makes it channels-last), and the converted module,
    loaded, as the result. Its save methods (torch.jit.save, _save_for_lite_interpreter)
    write nnapi-convert's files byte for byte. Raises ConversionError where nnapi-convert
    cannot convert the model.
    """
    import torch

    if serializer is not None:
        raise ValueError("serializer= takes PyTorch's _NnapiSerializer, which nnapi-convert "
                         "does not use; leave it out (nnapi-convert lowers the model itself)")
    if not isinstance(model, torch.jit.ScriptModule):
        raise TypeError("convert_model_to_nnapi takes a TorchScript module (torch.jit.trace or "
                        f"torch.jit.script), not {type(model).__name__}")
    if compilation_preference not in _PREFERENCES:
        raise ValueError(f"compilation_preference {compilation_preference!r} is none of "
                         "NeuralNetworks.h's preferences 0, 1, 2")
    if isinstance(inputs, torch.Tensor):
        inputs = [inputs]
    with tempfile.TemporaryDirectory(prefix="nnapi_convert-") as tmp:
        out = os.path.join(tmp, "model.nnapi.pt")
        convert(model, inputs, output=out, lite=True,
                return_shape=["x".join(str(int(d)) for d in s) for s in return_shapes or []],
                int16_for_qint16=use_int16_for_qint16,
                preference=_PREFERENCES[compilation_preference],
                relax_f32_to_f16=relax_f32_to_f16)
        module = torch.jit.load(out)
        return _keep_file_bytes(module, out, os.path.join(tmp, "model.nnapi.ptl"))

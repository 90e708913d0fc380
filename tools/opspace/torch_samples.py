"""PyTorch's own per-operator samples as matrix rows: OpInfo
(torch.testing._internal.common_methods_invocations.op_db,
op.sample_inputs(device, dtype)) and ModuleInfo
(torch.testing._internal.common_modules.module_db).

Debian's python3-torch imports them once a module named `expecttest` exists
(it is not packaged): a stand-in with ACCEPT = False and a TestCase subclass
of unittest.TestCase is written to a temporary directory at run time.

Each usable sample (float32 tensors, and int32 ones of the operator's int32
samples, with no empty dimension, rank 1 or more)
becomes a one-op module whose forward calls the operator with the sample's
tensors as inputs and its other arguments as constants (the forms: see
EXTRA_FORMS). It is traced once
here: the row's kind is the first kind of the lowering table in its frozen
graph (samples whose graph has none are not rows). The sample's own values are
the inputs (OpInfo samples respect each operator's domain).
"""
import os
import sys
import warnings

import torch

from samples import In, Sample, frozen_kinds

STAND_IN = "import unittest\nACCEPT = False\n\n\nclass TestCase(unittest.TestCase):\n    pass\n"

# Besides NCHW, NHWC and a flexible batch, each sample is converted as an
# app would also convert it: with a flexible height and width (4-D inputs, run
# at a larger size, the sample's values tiled), with quint8 inputs (where eager
# takes them: the module applied to quantized tensors as it is; elsewhere the
# form does not apply) and for Android 11 and 13.
EXTRA_FORMS = ("api30", "api33")

# Kinds that say nothing about an operator: graph plumbing and shape arithmetic.
PLUMBING = {"prim::Constant", "prim::ListConstruct", "prim::TupleConstruct", "prim::ListUnpack",
            "prim::GetAttr", "aten::size", "aten::contiguous", "aten::detach", "aten::to"}


def import_dbs(work):
    d = os.path.join(work, "_expecttest")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "expecttest.py"), "w") as f:
        f.write(STAND_IN)
    sys.path.insert(0, d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db
        from torch.testing._internal.common_modules import module_db
    return op_db, module_db


class Call(torch.nn.Module):
    """forward(*tensors) = fn(*args, **kwargs) with the tensors put back at
    their places (positions in a flat list of the arguments)."""

    def __init__(self, fn, args, kwargs, slots):
        super().__init__()
        self.fn, self.args, self.kwargs, self.slots = fn, args, kwargs, slots

    def forward(self, *xs):
        args = list(self.args)
        for slot, x in zip(self.slots, xs):
            if isinstance(slot, tuple):  # inside the first argument's list
                args[slot[0]] = list(args[slot[0]])
                args[slot[0]][slot[1]] = x
            else:
                args[slot] = x
        return self.fn(*args, **self.kwargs)


def usable(t):
    return (isinstance(t, torch.Tensor) and t.dtype in (torch.float32, torch.int32) and t.dim() >= 1
            and all(s > 0 for s in t.shape) and t.layout == torch.strided)


def tensor_slots(args):
    """(slots, tensors) of the float32 and int32 tensor arguments, or None if a tensor
    argument cannot be an --input (another dtype, empty, 0-dim)."""
    slots, tensors = [], []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            if not usable(a):
                return None
            slots.append(i)
            tensors.append(a)
        elif isinstance(a, (list, tuple)) and a and all(isinstance(t, torch.Tensor) for t in a):
            if not all(usable(t) for t in a):
                return None
            for j, t in enumerate(a):
                slots.append((i, j))
                tensors.append(t)
    return slots, tensors


def graph_kinds(module, xs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            traced = torch.jit.trace(module, tuple(xs), check_trace=False)
        return frozen_kinds(traced.eval())


def row(source, name, k, module, tensors, table_kinds):
    """A Sample for this module, or None if its graph has no lowered kind."""
    try:
        kinds = graph_kinds(module, tensors)
    except Exception:
        return None
    lowered = [kd for kd in kinds if kd in table_kinds and kd not in PLUMBING]
    if not lowered:
        return None
    inputs = [In(tuple(t.shape), "int32" if t.dtype == torch.int32 else "float32",
                 values=t.detach().clone()) for t in tensors]
    first = tensors[0].shape[0]
    flex = all(t.dim() >= 2 and t.shape[0] == first for t in tensors)
    return Sample(lowered[0], lambda m=module: m, inputs, f"{name}-{k}", flex=flex, source=source,
                  flexhw=True, qmake=True if any(t.is_floating_point() for t in tensors) else None,
                  extra_forms=EXTRA_FORMS)


def opinfo_samples(op_db, per_op, table_kinds):
    out = []
    for op, dtype in ((op, dtype) for op in op_db for dtype in (torch.float32, torch.int32)):
        try:
            if dtype not in op.supported_dtypes("cpu"):
                continue
            gen = op.sample_inputs("cpu", dtype, requires_grad=False)
        except Exception:
            continue
        suffix = "" if dtype == torch.float32 else "-int32"
        k = 0
        try:
            for si in gen:
                if k >= per_op:
                    break
                args = [si.input] + list(si.args)
                found = tensor_slots(args)
                if not found or not found[1]:
                    continue
                if any(isinstance(v, torch.Tensor) for v in si.kwargs.values()):
                    continue
                slots, tensors = found
                module = Call(op.op, args, dict(si.kwargs), slots).eval()
                s = row("opinfo", op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
                        + suffix, k, module, tensors, table_kinds)
                if s is not None:
                    out.append(s)
                    k += 1
        except Exception:
            continue
    return out


def moduleinfo_samples(module_db, per_module, table_kinds):
    out = []
    for info in module_db:
        try:
            inputs = info.module_inputs_func(info, device="cpu", dtype=torch.float32,
                                             requires_grad=False, training=False)
        except Exception:
            continue
        k = 0
        for mi in inputs:
            if k >= per_module:
                break
            try:
                fwd = mi.forward_input
                if fwd is None or fwd.kwargs:
                    continue
                found = tensor_slots(list(fwd.args))
                if not found or not found[1] or len(found[1]) != len(fwd.args):
                    continue
                ctor = mi.constructor_input
                torch.manual_seed(0)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    module = info.module_cls(*ctor.args, **ctor.kwargs).eval().requires_grad_(False)
                    with torch.no_grad():
                        module(*fwd.args)  # materializes lazy modules
                s = row("moduleinfo", info.module_cls.__name__, k, module, found[1], table_kinds)
            except Exception:
                continue
            if s is not None:
                out.append(s)
                k += 1
    return out


def samples(work, opinfo, moduleinfo, per_op, table_kinds):
    op_db, module_db = import_dbs(work)
    out = []
    if opinfo:
        out += opinfo_samples(op_db, per_op, table_kinds)
    if moduleinfo:
        out += moduleinfo_samples(module_db, per_op, table_kinds)
    return out

"""The matrix's own samples: for each node kind of the lowering table, small
modules at the shape forms the issue names (odd sizes, size-1 dims,
broadcasting, negative dims and indices, ranks 1 to 6), with the layout,
flexible-batch, quantized, fused-activation and target-API forms where they
apply. PyTorch's OpInfo/ModuleInfo samples (torch_samples.py) come on top.
"""
from typing import Optional

import torch
import torch.nn.functional as F

from samples import IN_SCALE, In, Sample

# Modules defined once, for their beyond-* fixtures (tools/ is on sys.path).
from fixtures.control import TupleOutOfIfModule
from fixtures.symbolic import SetSizeItemModule, timm_pad_same

torch.backends.quantized.engine = "qnnpack"

RANKS = {
    "rank4": (2, 3, 5, 7),
    "rank1": (7,),
    "rank2": (3, 5),
    "rank3": (2, 3, 5),
    "size1": (1, 3, 1, 7),
    "rank5": (2, 3, 4, 5, 3),
    "rank6": (1, 2, 3, 2, 3, 2),
}
QUANT_LABELS = ("rank4", "rank2", "size1")


class Fn(torch.nn.Module):
    """A module whose forward is `fn` (traced; its source is the lambda)."""

    def __init__(self, fn, **buffers):
        super().__init__()
        self.fn = fn
        for name, value in buffers.items():
            self.register_buffer(name, value)

    def forward(self, *xs):
        return self.fn(self, *xs) if self._buffers else self.fn(*xs)


def fn(f, **buffers):
    return lambda: Fn(f, **buffers)


def quantize_module(module, inputs, qconfig="qnnpack"):
    """Eager-mode quantization on the qnnpack engine: the module wrapped so it
    takes and returns quint8 tensors (no QuantStub: the input is quantized).
    qconfig "fbgemm": per-channel quantized weights."""
    model = torch.nn.Sequential(module).eval()
    model.qconfig = torch.ao.quantization.get_default_qconfig(qconfig)
    model = torch.ao.quantization.prepare(model)
    with torch.no_grad():
        for _ in range(4):
            model(*[torch.randn(i.shape) for i in inputs])
    return torch.ao.quantization.convert(model)


def qmodule(make_float, inputs, qconfig="qnnpack"):
    return lambda: quantize_module(make_float(), inputs, qconfig)


def seeded(module, seed=0, scale=None):
    """Deterministic parameters (and batch-norm statistics) for a module."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * (scale or (1.0 / max(1, p[0].numel()) ** 0.5)))
        for name, b in module.named_buffers():
            if "running_mean" in name:
                b.copy_(torch.randn(b.shape, generator=g) * 0.1)
            elif "running_var" in name:
                b.copy_(torch.rand(b.shape, generator=g) + 0.5)
    return module.eval()


SAMPLES = []


def add(*samples):
    SAMPLES.extend(samples)


# ------------------------------------------------------------- unary pointwise
def unary(kind, f, quant=False, positive=False, labels=tuple(RANKS), extra_forms=(), tag=""):
    """tag: appended to the label (the case names) of a second function of
    the kind at the same ranks."""
    for label in labels:
        add(Sample(kind, fn(f), [In(RANKS[label], positive=positive)], label + tag,
                   qmake=True if quant and label in QUANT_LABELS else None,
                   extra_forms=extra_forms, flexhw=label == "rank4"))


unary("aten::relu", torch.relu, quant=True)
unary("aten::relu6", F.relu6, quant=True)
unary("aten::sigmoid", torch.sigmoid, quant=True)
unary("aten::tanh", torch.tanh, quant=True)
unary("aten::hardsigmoid", F.hardsigmoid, quant=True)
unary("aten::hardswish", F.hardswish, quant=True, extra_forms=("api30",))
unary("aten::silu", F.silu)
unary("aten::gelu", F.gelu, quant=True)
unary("aten::gelu", lambda x: F.gelu(x, approximate="tanh"), labels=("rank4", "rank2"))
unary("aten::leaky_relu", F.leaky_relu, quant=True)
unary("aten::leaky_relu", lambda x: F.leaky_relu(x, 0.2), labels=("rank4",))
unary("aten::hardtanh", F.hardtanh, quant=True)
unary("aten::hardtanh", lambda x: F.hardtanh(x, 0.0, 6.0), quant=True, labels=("rank4", "rank1"))
unary("aten::hardtanh", lambda x: F.hardtanh(x, -2.0, 3.0), labels=("rank4",))
unary("aten::clamp", lambda x: torch.clamp(x, -0.5, 0.75), quant=True)
unary("aten::clamp", lambda x: torch.clamp(x, min=0.25), quant=True, labels=("rank4", "rank3"))
unary("aten::clamp", lambda x: torch.clamp(x, max=0.25), labels=("rank4", "rank2"))
unary("aten::abs", torch.abs)
unary("aten::neg", torch.neg)
unary("aten::exp", torch.exp)
unary("aten::log", torch.log, positive=True)
unary("aten::sqrt", torch.sqrt, positive=True)
unary("aten::rsqrt", torch.rsqrt, positive=True)
unary("aten::pow", lambda x: x ** 2, labels=("rank4", "rank1", "rank5"))
unary("aten::pow", lambda x: x ** 0.5, positive=True, labels=("rank4", "rank2"))
unary("aten::pow", lambda x: torch.pow(x, 3), labels=("rank3",))
unary("aten::rsub", lambda x: 1.5 - x, labels=("rank4", "rank2", "rank5"))
unary("aten::rsub", lambda x: torch.rsub(x, 2.0, alpha=3), labels=("rank3",))

# ----------------------------------------------------------- binary pointwise
BINARY_SHAPES = {
    "same4": [(2, 3, 5, 7), (2, 3, 5, 7)],
    "bcast4": [(2, 3, 5, 7), (1, 3, 1, 1)],
    "bcast4r": [(1, 3, 1, 7), (2, 3, 5, 7)],
    "bcast_last": [(2, 3, 5, 7), (7,)],
    "bcast2": [(3, 1), (1, 4)],
    "rank1": [(7,), (7,)],
    "rank3": [(2, 3, 5), (2, 1, 5)],
    "rank5": [(2, 3, 4, 5, 3), (2, 3, 4, 5, 3)],
    "rank5_bcast": [(1, 3, 4, 5, 2), (1, 3, 1, 1, 2)],
    "rank6": [(1, 2, 3, 2, 3, 2), (1, 2, 3, 2, 3, 2)],
}


def binary(kind, f, positive_rhs=False, labels=tuple(BINARY_SHAPES), tag=""):
    """tag: appended to the labels (the case names), as unary's."""
    for label in labels:
        a, b = BINARY_SHAPES[label]
        add(Sample(kind, fn(f), [In(a), In(b, positive=positive_rhs)], label + tag,
                   flexhw=label in ("same4", "bcast4")))
    # A scalar operand and a constant tensor operand.
    add(Sample(kind, fn(lambda x: f(x, torch.tensor(2.5) if positive_rhs else 0.75)),
               [In((2, 3, 5, 7))], "scalar" + tag, flexhw=True))
    add(Sample(kind, fn(lambda m, x: f(x, m.c), c=torch.rand(3, 1, 1) + 0.5),
               [In((2, 3, 5, 7))], "const" + tag, flexhw=True))


def qfunctional(op, scale=0.1, zero_point=120):
    def make():
        class QF(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.f = torch.ao.nn.quantized.QFunctional()
                self.f.scale, self.f.zero_point = scale, zero_point

            def forward(self, a, b):
                return getattr(self.f, op)(a, b)

        return QF().eval()

    return make


binary("aten::add", torch.add)
binary("aten::add", lambda x, y: torch.add(x, y, alpha=2), labels=("same4", "bcast2"))
binary("aten::sub", torch.sub)
binary("aten::sub", lambda x, y: torch.sub(x, y, alpha=0.5), labels=("bcast4",))
binary("aten::mul", torch.mul)
binary("aten::div", torch.div, positive_rhs=True)
binary("aten::pow", torch.pow, labels=("same4", "bcast4"), positive_rhs=True)
binary("aten::rsub", torch.rsub, labels=("same4", "bcast4", "rank1"))
for _label in ("same4", "bcast4", "rank1", "rank3"):
    _a, _b = BINARY_SHAPES[_label]
    add(Sample("quantized::add", None, [In(_a), In(_b)], _label, qmake=qfunctional("add"),
               flexhw=_label == "same4"))
    add(Sample("quantized::add_relu", None, [In(_a), In(_b)], _label,
               qmake=qfunctional("add_relu")))
    add(Sample("quantized::mul", None, [In(_a), In(_b)], _label, qmake=qfunctional("mul", 0.2, 100)))

# Fused activations: the fold applies to conv, linear and add/sub/mul/div. The
# inputs are scaled by 4 (FUSE_GAIN, as the fuse-* fixtures' randn x 4), so
# the values before the activation cross 6 and -1: RELU6 and RELU1 differ
# from RELU there (linear's 8 inputs by 8).
ACTS = {"relu": torch.relu, "relu6": F.relu6, "hardtanh01": lambda x: F.hardtanh(x, 0.0, 6.0),
        "relu1": lambda x: F.hardtanh(x, -1.0, 1.0)}
FUSE_GAIN = 4.0
for _op, _f in (("aten::add", torch.add), ("aten::sub", torch.sub), ("aten::mul", torch.mul),
                ("aten::div", lambda x, y: x / (y.abs() + 0.5))):
    for _act, _g in ACTS.items():
        add(Sample(_op, fn(lambda x, y, f=_f, g=_g: g(f(FUSE_GAIN * x, FUSE_GAIN * y))),
                   [In((2, 3, 5, 7)), In((1, 3, 1, 1))],
                   f"fuse-{_act}", forms=["nchw", "fuse", "fuse_nhwc", "flex"]))

add(Sample("aten::prelu", lambda: seeded(torch.nn.PReLU(3), scale=0.5), [In((2, 3, 5, 7))], "rank4"))
add(Sample("aten::prelu", lambda: seeded(torch.nn.PReLU(), scale=0.5), [In((2, 3, 5, 7))], "single"))
add(Sample("aten::prelu", lambda: seeded(torch.nn.PReLU(5), scale=0.5), [In((4, 5))], "rank2"))


# ------------------------------------------------------------------ softmax
def dims(rank):
    return list(range(-rank, rank))


for _r, _shape in ((4, (2, 3, 5, 7)), (2, (3, 5)), (3, (2, 3, 5))):
    for _d in dims(_r):
        for _kind, _f in (("aten::softmax", torch.softmax), ("aten::log_softmax", torch.log_softmax)):
            add(Sample(_kind, fn(lambda x, d=_d, f=_f: f(x, d)), [In(_shape)], f"rank{_r}-dim{_d}",
                       qmake=(True if _kind == "aten::softmax" and _r == 4 else None), flexhw=_r == 4))
add(Sample("aten::softmax", fn(lambda x: torch.softmax(x, -1)), [In(RANKS["rank5"])], "rank5"))
add(Sample("aten::softmax", fn(lambda x: torch.softmax(x, 1, dtype=torch.float64)), [In((2, 3, 5))],
           "dtype64"))
add(Sample("aten::log_softmax", fn(lambda x: torch.log_softmax(x, 1, dtype=torch.float64)),
           [In((2, 3, 5))], "dtype64"))
add(Sample("aten::softmax", fn(lambda x: torch.softmax(x, 1, dtype=torch.float32)), [In((2, 3, 5))],
           "dtype32"))

# ------------------------------------------------------------- reductions
for _kind, _f in (("aten::mean", torch.mean), ("aten::sum", torch.sum)):
    for _label, _shape, _dim, _keep in (
            ("rank4-hw", (2, 3, 5, 7), (2, 3), False), ("rank4-hw-keep", (2, 3, 5, 7), (2, 3), True),
            ("rank4-neg", (2, 3, 5, 7), (-1,), False), ("rank4-c-keep", (2, 3, 5, 7), (1,), True),
            ("rank3-d1", (2, 3, 5), (1,), False), ("rank2-neg", (3, 5), (-1,), True),
            ("rank4-neg2", (2, 3, 5, 7), (-2, -1), True), ("rank5", (2, 3, 4, 5, 3), (2,), False),
            ("rank1-all", (7,), (-1,), False), ("rank4-all", (2, 3, 5, 7), (0, 1, 2, 3), False)):
        add(Sample(_kind, fn(lambda x, f=_f, d=_dim, k=_keep: f(x, d, keepdim=k)), [In(_shape)],
                   _label, qmake=True if _kind == "aten::mean" and _label.startswith("rank4") else None,
                   flexhw=_label.startswith("rank4")))
# Quantized means over few values (many ties) and dims other than (2, 3): the
# patterns of OpInfo's mean samples 11, 14 and 15.
for _label, _shape, _dim, _keep in (("q-neg", (3, 2, 4, 12), (-1,), False),
                                    ("q-n-neg-keep", (3, 2, 1, 2), (0, -1), True),
                                    ("q-c-w", (3, 2, 1, 2), (1, 3), False)):
    add(Sample("aten::mean", fn(lambda x, d=_dim, k=_keep: torch.mean(x, d, keepdim=k)), [In(_shape)],
               _label, qmake=True, flexhw=True))
add(Sample("aten::mean", fn(lambda x: x.mean()), [In((2, 3, 5, 7))], "all-nodim"))
add(Sample("aten::sum", fn(lambda x: x.sum()), [In((2, 3, 5, 7))], "all-nodim"))
add(Sample("aten::sum", fn(lambda x: x.sum(1, dtype=torch.float64)), [In((2, 3, 5))], "dtype64"))

# ---------------------------------------------------------------- slicing
for _r, _shape in ((4, (2, 4, 6, 5)), (3, (3, 4, 5)), (2, (3, 6)), (1, (7,))):
    for _d in dims(_r):
        n = _shape[_d]
        add(Sample("aten::slice", fn(lambda x, d=_d: x[(slice(None),) * (d % x.dim()) + (slice(1, None),)]),
                   [In(_shape)], f"rank{_r}-dim{_d}-start", qmake=True if _r == 4 else None,
                   flex=(_d % _r) != 0))
        add(Sample("aten::slice", fn(lambda x, d=_d: x[(slice(None),) * (d % x.dim()) + (slice(None, -1, 2),)]),
                   [In(_shape)], f"rank{_r}-dim{_d}-negstop-step2", flex=(_d % _r) != 0))
        add(Sample("aten::select", fn(lambda x, d=_d: x.select(d, -1)), [In(_shape)],
                   f"rank{_r}-dim{_d}-idx-1", qmake=True if _r == 4 else None, flex=(_d % _r) != 0))
        add(Sample("aten::chunk", fn(lambda x, d=_d: x.chunk(2, d)[1] * 2), [In(_shape)],
                   f"rank{_r}-dim{_d}", flex=(_d % _r) != 0))
        add(Sample("aten::split", fn(lambda x, d=_d: tuple(t + 1 for t in x.split(2, d))), [In(_shape)],
                   f"rank{_r}-dim{_d}", flex=(_d % _r) != 0))
        add(Sample("aten::split_with_sizes", fn(lambda x, d=_d, n=n: x.split([1, n - 1], d)[1] - 1),
                   [In(_shape)], f"rank{_r}-dim{_d}", flex=(_d % _r) != 0))
        _s2 = list(_shape)
        _s2[_d] = 2
        add(Sample("aten::cat", fn(lambda x, y, d=_d: torch.cat([x, y, x], d)), [In(_shape), In(_s2)],
                   f"rank{_r}-dim{_d}", qmake=True if _r == 4 else None, flex=(_d % _r) != 0,
                   flexhw=_r == 4 and _d % _r == 1))
        add(Sample("aten::narrow", fn(lambda x, d=_d, n=n: x.narrow(d, 1, n - 1) * 2), [In(_shape)],
                   f"rank{_r}-dim{_d}", qmake=None, flex=(_d % _r) != 0))
add(Sample("aten::slice", fn(lambda x: x[:, :, 1:-1, 2:]), [In((1, 3, 6, 7))], "crop-hw"))
add(Sample("aten::slice", fn(lambda x: x[:, :2]), [In((1, 5, 4, 4))], "channels"))
add(Sample("aten::slice", fn(lambda x, y: torch.cat([x, y], 1)[:, :4]), [In((1, 3, 4, 4)), In((1, 3, 4, 4))],
           "cat-then-channels"))
add(Sample("aten::slice", fn(lambda x: x[..., -3:]), [In((2, 3, 5, 7, 2))], "rank5"))
add(Sample("prim::ListUnpack", fn(lambda x: x.chunk(3, 1)[0] + x.chunk(3, 1)[2]), [In((2, 6, 5))], "chunk"))
add(Sample("quantized::cat", None, [In((2, 3, 5, 7)), In((2, 2, 5, 7))], "dim1",
           qmake=lambda: _QCat(1)))
add(Sample("quantized::cat", None, [In((2, 3, 5, 7)), In((2, 3, 2, 7))], "dim-2",
           qmake=lambda: _QCat(-2)))


class _QCat(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.f = torch.ao.nn.quantized.QFunctional()
        self.f.scale, self.f.zero_point = 0.06, 127
        self.dim = dim

    def forward(self, a, b):
        return self.f.cat([a, b], self.dim)


# ---------------------------------------------------------- view and layout
add(Sample("aten::view", fn(lambda x: x.view(x.size(0), -1)), [In((2, 3, 5, 7))], "batch-1",
           qmake=True))
add(Sample("aten::view", fn(lambda x: x.view(-1, 5)), [In((2, 3, 5))], "const", flex=False))
add(Sample("aten::view", fn(lambda x: x.view(x.size(0), 3, 4, 5, 2)), [In((2, 3, 40))], "to-rank5"))
add(Sample("aten::reshape", fn(lambda x: x.reshape(x.shape[0], 7, -1)), [In((2, 3, 5, 7))], "rank3",
           qmake=True))
add(Sample("aten::reshape", fn(lambda x: x.reshape(-1)), [In((3, 5))], "rank1", flex=False))
add(Sample("aten::size", fn(lambda x: x.view(x.size(0), x.size(1) * x.size(2), -1)), [In((2, 3, 5, 7))],
           "sizes"))
add(Sample("aten::size", fn(lambda x: x.view(x.size(-4), x.size(-1), -1)), [In((2, 3, 5, 7))], "negdims"))
for _a, _b in ((1, -1), (0, 0), (2, 3), (-4, -1), (1, 2)):
    add(Sample("aten::flatten", fn(lambda x, a=_a, b=_b: x.flatten(a, b)), [In((2, 3, 5, 7))],
               f"{_a}:{_b}", qmake=True if (_a, _b) == (1, -1) else None))
add(Sample("aten::flatten", fn(lambda x: x.flatten()), [In((3, 5))], "rank2-all"))
for _d in (0, 1, -1, -2, 3):
    add(Sample("aten::squeeze", fn(lambda x, d=_d: x.squeeze(d) + 1), [In((1, 3, 1, 5) if _d != 3 else (2, 3, 4, 1))],
               f"dim{_d}", qmake=fn(lambda x, d=_d: x.squeeze(d)) if _d == -2 else None, flex=_d != 0))
add(Sample("aten::squeeze", fn(lambda x: x.squeeze() + 1), [In((1, 3, 1, 5))], "all", flex=False))
add(Sample("aten::squeeze", fn(lambda x: x.squeeze() + 1), [In((1, 1, 1, 1))], "all-to-rank0", flex=False))
for _d in (0, 1, 2, -1, -3, 4):
    add(Sample("aten::unsqueeze", fn(lambda x, d=_d: x.unsqueeze(d) + 1), [In((2, 3, 5, 7) if _d == 4 else (2, 3, 5))],
               f"dim{_d}", qmake=fn(lambda x, d=_d: x.unsqueeze(d)) if _d == 1 else None))
add(Sample("aten::unsqueeze", fn(lambda x: x.unsqueeze(0) + 1), [In((7,))], "rank1"))
for _p in ((0, 2, 3, 1), (0, 3, 1, 2), (3, 2, 1, 0), (1, 0, 2, 3)):
    add(Sample("aten::permute", fn(lambda x, p=_p: x.permute(p)), [In((2, 3, 5, 7))], "p" + "".join(map(str, _p)),
               qmake=True))
add(Sample("aten::permute", fn(lambda x: x.permute(2, 0, 1)), [In((2, 3, 5))], "rank3"))
add(Sample("aten::permute", fn(lambda x: x.permute(0, 1, 3, 4, 2)), [In((1, 3, 4, 4, 6))], "rank5"))
for _a, _b in ((1, 2), (-1, -2), (0, 3), (1, -1)):
    add(Sample("aten::transpose", fn(lambda x, a=_a, b=_b: x.transpose(a, b)), [In((2, 3, 5, 7))], f"{_a},{_b}",
               qmake=True if (_a, _b) == (1, 2) else None))
add(Sample("aten::transpose", fn(lambda x: x.transpose(0, 1)), [In((3, 5))], "rank2"))
add(Sample("aten::contiguous", fn(lambda x: x.permute(0, 2, 3, 1).contiguous() + 1), [In((2, 3, 5, 7))], "permuted"))
add(Sample("aten::clone", fn(lambda x: torch.relu(x).clone()), [In((2, 3, 5, 7))], "computed", qmake=True))
add(Sample("aten::clone", fn(lambda x: torch.relu(x).clone(memory_format=torch.channels_last) * 2), [In((2, 3, 5, 7))],
           "channels-last"))
add(Sample("aten::movedim", fn(lambda x: torch.movedim(x, 1, -1)), [In((2, 3, 5, 7))], "int", qmake=True))
add(Sample("aten::movedim", fn(lambda x: torch.movedim(x, (0, -3), (2, 3)) * 2), [In((2, 3, 5, 7))], "lists"))
add(Sample("aten::view_as", fn(lambda x, y: torch.relu(x).view_as(y) + y), [In((2, 3, 5, 7)), In((2, 105))],
           "rank4-to-2"))
add(Sample("aten::reshape_as", fn(lambda x, y: torch.relu(x).reshape_as(y) * y), [In((2, 3, 5, 7)), In((2, 3, 35))],
           "rank4-to-3"))
add(Sample("aten::t", fn(lambda x: x.t() + 1), [In((3, 5))], "rank2"))
add(Sample("aten::t", fn(lambda x: x.t() + 1), [In((5,))], "rank1"))
add(Sample("aten::to", fn(lambda x: x.to(torch.float32) * 0.5), [In((2, 5), "int32")], "int-to-float"))
add(Sample("aten::to", fn(lambda x: (x * 3).to(torch.int32)), [In((2, 5))], "float-to-int"))
add(Sample("aten::to", fn(lambda x: x.to(torch.float64)), [In((2, 5))], "float-to-double"))
add(Sample("aten::type_as", fn(lambda m, x: torch.relu(x).type_as(m.like), like=torch.zeros(1)),
           [In((2, 5))], "float"))
add(Sample("aten::type_as", fn(lambda m, x: x.type_as(m.like), like=torch.zeros(1, dtype=torch.float64)),
           [In((2, 5))], "float-to-double"))
add(Sample("aten::alpha_dropout", fn(lambda x: F.alpha_dropout(x, 0.3, False) + 1), [In((2, 3))], "eval"))
add(Sample("aten::feature_alpha_dropout", fn(lambda x: F.feature_alpha_dropout(x, 0.3, False) + 1),
           [In((2, 3, 4, 4))], "eval"))
add(Sample("prim::TupleConstruct", fn(lambda x: (x + 1, x * 2)), [In((2, 3, 5, 7))], "tuple-out"))
add(Sample("prim::ListConstruct", fn(lambda x, y: torch.cat([x, y], 1)), [In((2, 3)), In((2, 4))], "cat-list"))

# ------------------------------------------------------------------ tile
add(Sample("aten::expand", fn(lambda x: x.expand(2, 3, 4, 5)), [In((1, 3, 1, 1))], "rank4", flex=False))
add(Sample("aten::expand", fn(lambda x: x.expand(-1, 4, -1) + 0), [In((2, 1, 5))], "neg1"))
add(Sample("aten::expand", fn(lambda x: x.expand(3, 2, 5)), [In((2, 5))], "new-dim", flex=False))
# Expanded to another tensor's batch (a ViT's class token; a size known when
# the model loads in the flex-batch forms): a constant, and a computed tensor.
add(Sample("aten::expand", fn(lambda m, x: torch.cat([m.tok.expand(x.shape[0], -1, -1), x], 1),
                              tok=torch.randn(1, 1, 5)), [In((2, 3, 5))], "to-batch"))
add(Sample("aten::expand", fn(lambda x: torch.cat(
    [x.mean((0, 1), keepdim=True).expand(x.shape[0], -1, -1), x], 1)), [In((2, 3, 5))],
    "to-batch-computed"))
add(Sample("aten::expand", fn(lambda m, x: torch.where(m.mask.expand(x.shape[0], -1, -1), x, -x),
                              mask=torch.rand(1, 3, 5) > 0.5), [In((2, 3, 5))], "to-batch-bool"))
add(Sample("aten::expand", fn(lambda m, x: torch.relu(x) * m.c.expand(x.shape[0], -1, 4, 5),
                              c=torch.randn(1, 3, 1, 1)), [In((2, 3, 4, 5))], "to-batch-rank4"))
add(Sample("aten::repeat", fn(lambda x: x.repeat(1, 2, 1, 3)), [In((2, 3, 5, 7))], "rank4", qmake=True))
add(Sample("aten::repeat", fn(lambda x: x.repeat(2, 1, 1)), [In((3, 5))], "new-dim", flex=False))
add(Sample("aten::repeat", fn(lambda x: x.repeat(3)), [In((5,))], "rank1", flex=False))

# ------------------------------------------------------------------ roll
for _s, _d in ((2, 1), ((-3, 2), (1, 2)), (1, -1), (-1, 0), (3, None)):
    add(Sample("aten::roll", fn(lambda x, s=_s, d=_d: torch.roll(x, s, d) if d is not None else torch.roll(x, s)),
               [In((2, 7, 6, 4))], f"s{_s}-d{_d}", flex=_d not in (0, None)))

# ----------------------------------------------------------- pixel shuffle
add(Sample("aten::pixel_shuffle", fn(lambda x: F.pixel_shuffle(x, 2)), [In((1, 8, 3, 5))], "r2", qmake=True,
           flexhw=True))
add(Sample("aten::pixel_shuffle", fn(lambda x: F.pixel_shuffle(x, 3)), [In((2, 9, 2, 3))], "r3"))
add(Sample("aten::pixel_unshuffle", fn(lambda x: F.pixel_unshuffle(x, 2)), [In((1, 2, 6, 4))], "r2",
           qmake=True))
add(Sample("aten::pixel_shuffle", fn(lambda x: F.pixel_shuffle(x, 2)), [In((4, 3, 5))], "rank3", flex=False))

# ------------------------------------------------------------------ padding
for _pad, _label in (((1, 2), "last"), ((1, 1, 2, 0), "hw"), ((0, 0, 0, 0, 1, 1), "channels"),
                     ((2, 1, 0, 3), "asym")):
    add(Sample("aten::constant_pad_nd", fn(lambda x, p=_pad: torch.constant_pad_nd(x, p, 0.5)),
               [In((2, 3, 5, 7))], _label, qmake=True if _label == "hw" else None, flexhw=True))
    add(Sample("aten::pad", fn(lambda x, p=_pad: F.pad(x, p)), [In((2, 3, 5, 7))], _label))
add(Sample("aten::constant_pad_nd", fn(lambda x: torch.constant_pad_nd(x, (1, 2))), [In((3, 5))], "rank2"))
add(Sample("aten::pad", fn(lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect")), [In((2, 3, 5, 7))], "reflect"))
add(Sample("aten::pad", fn(lambda x: F.pad(x, (1, 2, 2, 1), mode="replicate")), [In((2, 3, 5, 7))], "replicate"))
# TF-style "same" padding computed from the size (timm's pad_same, traced):
# with a flexible height and width the amounts are set when the model loads.
add(Sample("aten::pad", fn(lambda x: timm_pad_same(x, [3, 5], [2, 2], [1, 2])), [In((2, 3, 5, 7))],
           "same", flexhw=True))
for _kind, _f, _shape, _pad in (
        ("aten::reflection_pad1d", torch.ops.aten.reflection_pad1d, (2, 3, 7), (2, 1)),
        ("aten::reflection_pad2d", torch.ops.aten.reflection_pad2d, (2, 3, 5, 7), (1, 2, 2, 1)),
        ("aten::reflection_pad3d", torch.ops.aten.reflection_pad3d, (1, 2, 3, 4, 5), (1, 0, 1, 2, 2, 1)),
        ("aten::replication_pad1d", torch.ops.aten.replication_pad1d, (2, 3, 7), (2, 1)),
        ("aten::replication_pad2d", torch.ops.aten.replication_pad2d, (2, 3, 5, 7), (1, 2, 0, 3)),
        ("aten::replication_pad3d", torch.ops.aten.replication_pad3d, (1, 2, 3, 4, 5), (1, 0, 1, 2, 2, 1))):
    add(Sample(_kind, fn(lambda x, f=_f, p=_pad: f(x, p)), [In(_shape)], f"rank{len(_shape)}"))
add(Sample("aten::reflection_pad2d", fn(lambda x: torch.ops.aten.reflection_pad2d(x, (1, 1, 1, 1))),
           [In((3, 5, 7))], "rank3"))

# ------------------------------------------------------------------ pooling
for _args, _label in ((dict(kernel_size=2), "k2"), (dict(kernel_size=3, stride=2, padding=1), "k3s2p1"),
                      (dict(kernel_size=3, stride=2, ceil_mode=True), "ceil"),
                      (dict(kernel_size=(2, 3), stride=(1, 2)), "rect"),
                      (dict(kernel_size=2, dilation=2), "dilation")):
    add(Sample("aten::max_pool2d", fn(lambda x, a=_args: F.max_pool2d(x, **a)), [In((2, 3, 7, 9))], _label,
               qmake=True if _label in ("k2", "ceil") else None, flexhw=True))
    if "dilation" not in _args:
        add(Sample("aten::avg_pool2d", fn(lambda x, a=_args: F.avg_pool2d(x, **a)), [In((2, 3, 7, 9))], _label,
                   qmake=True if _label in ("k2", "ceil") else None, flexhw=True))
add(Sample("aten::avg_pool2d", fn(lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False)), [In((2, 3, 7, 9))],
           "exclude-pad"))
add(Sample("aten::avg_pool2d", fn(lambda x: F.avg_pool2d(x, 2, divisor_override=3)), [In((2, 3, 6, 8))],
           "divisor"))
add(Sample("aten::max_pool2d", fn(lambda x: F.max_pool2d(x, 2)), [In((3, 6, 8))], "rank3"))
for _os, _label in (((1, 1), "global"), ((2, 3), "2x3"), (1, "int1"), ((None, 2), "none")):
    add(Sample("aten::adaptive_avg_pool2d", fn(lambda x, o=_os: F.adaptive_avg_pool2d(x, o)), [In((2, 3, 6, 9))],
               _label, qmake=True if _label in ("global", "2x3") else None, flexhw=True))
    add(Sample("aten::adaptive_max_pool2d", fn(lambda x, o=_os: F.adaptive_max_pool2d(x, o)), [In((2, 3, 6, 9))],
               _label, flexhw=True))
add(Sample("aten::adaptive_avg_pool2d", fn(lambda x: F.adaptive_avg_pool2d(x, (4, 4))), [In((2, 3, 6, 9))],
           "non-dividing"))
add(Sample("aten::max_pool1d", fn(lambda x: F.max_pool1d(x, 3, 2)), [In((2, 3, 9))], "k3s2"))
add(Sample("aten::max_pool1d", fn(lambda x: F.max_pool1d(x, 2, ceil_mode=True)), [In((2, 3, 7))], "ceil"))
add(Sample("aten::avg_pool1d", fn(lambda x: F.avg_pool1d(x, 3, 2, 1)), [In((2, 3, 9))], "k3s2p1"))
add(Sample("aten::avg_pool1d", fn(lambda x: F.avg_pool1d(x, 2)), [In((2, 3, 8))], "k2"))
add(Sample("aten::adaptive_avg_pool1d", fn(lambda x: F.adaptive_avg_pool1d(x, 1)), [In((2, 3, 8))], "global"))
add(Sample("aten::adaptive_avg_pool1d", fn(lambda x: F.adaptive_avg_pool1d(x, 4)), [In((2, 3, 8))], "4"))
add(Sample("aten::adaptive_max_pool1d", fn(lambda x: F.adaptive_max_pool1d(x, 1)), [In((2, 3, 8))], "global"))
add(Sample("aten::adaptive_max_pool1d", fn(lambda x: F.adaptive_max_pool1d(x, 2)), [In((2, 3, 8))], "2"))

# ---------------------------------------------------------------- resizing
for _args, _label in ((dict(scale_factor=2), "x2"), (dict(size=(7, 10)), "size"),
                      (dict(scale_factor=(2, 3)), "x2x3"), (dict(scale_factor=1.7), "x1.7"),
                      (dict(scale_factor=0.6), "x0.6"), (dict(size=(3, 4)), "down")):
    add(Sample("aten::upsample_nearest2d", fn(lambda x, a=_args: F.interpolate(x, **a)), [In((2, 3, 5, 6))],
               _label, qmake=True if _label in ("x2", "size") else None, flexhw=True))
    for _ac in (False, True):
        add(Sample("aten::upsample_bilinear2d",
                   fn(lambda x, a=_args, ac=_ac: F.interpolate(x, mode="bilinear", align_corners=ac, **a)),
                   [In((2, 3, 5, 6))], f"{_label}-ac{int(_ac)}", extra_forms=("api30",),
                   qmake=True if _label == "x2" else None, flexhw=True))

# ------------------------------------------------------------ normalization
add(Sample("aten::batch_norm", lambda: seeded(torch.nn.BatchNorm2d(3)), [In((2, 3, 5, 7))], "rank4",
           flexhw=True))
add(Sample("aten::batch_norm", lambda: seeded(torch.nn.BatchNorm1d(5)), [In((3, 5))], "rank2"))
add(Sample("aten::batch_norm", lambda: seeded(torch.nn.BatchNorm1d(3)), [In((2, 3, 7))], "rank3"))
add(Sample("aten::batch_norm", lambda: seeded(torch.nn.BatchNorm2d(3, affine=False)), [In((2, 3, 5, 7))],
           "no-affine"))
add(Sample("aten::layer_norm", lambda: seeded(torch.nn.LayerNorm(7)), [In((2, 3, 5, 7))], "last"))
add(Sample("aten::layer_norm", lambda: seeded(torch.nn.LayerNorm((5, 7))), [In((2, 3, 5, 7))], "last2"))
add(Sample("aten::layer_norm", lambda: seeded(torch.nn.LayerNorm(8, elementwise_affine=False)), [In((3, 8))],
           "no-affine"))
add(Sample("aten::layer_norm", lambda: seeded(torch.nn.LayerNorm(6)), [In((2, 3, 4, 5, 6))], "rank5"))
add(Sample("aten::group_norm", lambda: seeded(torch.nn.GroupNorm(2, 4)), [In((2, 4, 5, 7))], "g2"))
add(Sample("aten::group_norm", lambda: seeded(torch.nn.GroupNorm(1, 3, affine=False)), [In((2, 3, 5))], "g1-rank3"))
add(Sample("aten::group_norm", lambda: seeded(torch.nn.GroupNorm(6, 6)), [In((1, 6, 3, 3))], "per-channel"))
add(Sample("aten::instance_norm", lambda: seeded(torch.nn.InstanceNorm2d(3, affine=True)), [In((2, 3, 5, 7))],
           "affine"))
add(Sample("aten::instance_norm", lambda: seeded(torch.nn.InstanceNorm2d(3)), [In((2, 3, 5, 7))], "plain"))
add(Sample("aten::instance_norm", lambda: seeded(torch.nn.InstanceNorm1d(3)), [In((2, 3, 7))], "rank3"))
add(Sample("aten::instance_norm",
           lambda: seeded(torch.nn.InstanceNorm2d(3, track_running_stats=True)), [In((2, 3, 5, 7))],
           "running-stats"))


# ------------------------------------------------------------- convolution
def conv(kind, make, shape, label, quant=True, fuse=False, script=False, **kw):
    inputs = [In(shape)]
    qm = qmodule(make, inputs) if quant else None
    add(Sample(kind, make, inputs, label, qmake=qm, script=script,
               extra_forms=("fuse", "fuse_nhwc") if fuse else (), **kw))


for _kind, _script in (("aten::_convolution", False), ("aten::conv2d", True)):
    for _args, _shape, _label in (
            (dict(in_channels=3, out_channels=4, kernel_size=3), (2, 3, 7, 9), "k3"),
            (dict(in_channels=3, out_channels=5, kernel_size=3, stride=2, padding=1), (2, 3, 7, 9), "k3s2p1"),
            (dict(in_channels=4, out_channels=4, kernel_size=3, padding=1, groups=4), (1, 4, 5, 6), "depthwise"),
            (dict(in_channels=4, out_channels=8, kernel_size=3, padding=1, groups=4), (1, 4, 5, 6), "dw-mult2"),
            (dict(in_channels=4, out_channels=6, kernel_size=(1, 3), groups=2), (1, 4, 5, 6), "grouped"),
            (dict(in_channels=3, out_channels=4, kernel_size=3, dilation=2, padding=2), (1, 3, 9, 9), "dilated"),
            (dict(in_channels=3, out_channels=4, kernel_size=1, bias=False), (2, 3, 5, 7), "1x1-nobias"),
            (dict(in_channels=3, out_channels=4, kernel_size=3, padding="same"), (1, 3, 6, 7), "same"),
            (dict(in_channels=3, out_channels=2, kernel_size=(2, 3), stride=(2, 1), padding=(0, 1)), (1, 3, 7, 8),
             "rect")):
        conv(_kind, lambda a=_args: seeded(torch.nn.Conv2d(**a)), _shape, _label,
             fuse=_label == "k3", script=_script, flexhw=True)
for _act, _g in ACTS.items():
    add(Sample("aten::_convolution",
               lambda g=_g: seeded(torch.nn.Sequential(Fn(lambda x: FUSE_GAIN * x),
                                                       torch.nn.Conv2d(3, 4, 3), Fn(g))),
               [In((1, 3, 6, 7))], f"fuse-{_act}", forms=["nchw", "nhwc", "fuse", "fuse_nhwc"]))
conv("aten::_convolution", lambda: seeded(torch.nn.Conv1d(3, 4, 3, padding=1)), (2, 3, 9), "conv1d")
conv("aten::_convolution", lambda: seeded(torch.nn.Conv1d(4, 4, 3, groups=4, stride=2)), (2, 4, 9),
     "conv1d-dw")
conv("aten::_convolution", lambda: seeded(torch.nn.ConvTranspose2d(3, 4, 2, stride=2)), (2, 3, 4, 5),
     "transpose-s2", quant=False, flexhw=True)
conv("aten::_convolution", lambda: seeded(torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1,
                                                                     output_padding=1)), (1, 3, 4, 5),
     "transpose-outpad", quant=False)
conv("aten::_convolution", lambda: seeded(torch.nn.ConvTranspose2d(4, 4, 3, groups=2)), (1, 4, 4, 5),
     "transpose-groups", quant=False)
conv("aten::_convolution", lambda: seeded(torch.nn.ConvTranspose1d(3, 2, 3, stride=2)), (1, 3, 5),
     "transpose1d", quant=False)
conv("aten::_convolution", lambda: seeded(torch.nn.Conv3d(2, 3, 3)), (1, 2, 4, 5, 5), "conv3d", quant=False,
     video=True)
# A video model's head (video.cpp).
add(Sample("aten::_convolution", lambda: seeded(torch.nn.Sequential(torch.nn.Conv3d(2, 3, 3),
                                                                    torch.nn.AdaptiveAvgPool3d(1))),
           [In((1, 2, 4, 5, 5))], "conv3d-pool3d", video=True))

# ---------------------------------------- optimize_for_mobile's XNNPACK operations
def _mobile(make):
    """make() scripted and passed through optimize_for_mobile: its convolutions
    and linear layers become prepacked::*_clamp_run (lower/prepacked.cpp), a
    ReLU/ReLU6/Hardtanh after a convolution folded into its clamp."""
    def build():
        from torch.utils.mobile_optimizer import optimize_for_mobile
        return optimize_for_mobile(torch.jit.script(make().eval()))
    return build


for _label, _make, _shape in (
        ("k3-relu", lambda: torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()), (2, 3, 7, 9)),
        ("s2p1-bn-relu6", lambda: torch.nn.Sequential(torch.nn.Conv2d(3, 5, 3, stride=2, padding=1),
                                                      torch.nn.BatchNorm2d(5), torch.nn.ReLU6()), (2, 3, 7, 9)),
        ("depthwise-relu1", lambda: torch.nn.Sequential(torch.nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False),
                                                        torch.nn.Hardtanh(-1.0, 1.0)), (1, 4, 5, 6)),
        ("grouped-clamp", lambda: torch.nn.Sequential(torch.nn.Conv2d(4, 6, (1, 3), groups=2),
                                                      torch.nn.Hardtanh(-0.2, 0.3)), (1, 4, 5, 6)),
        ("dilated", lambda: torch.nn.Conv2d(3, 4, 3, dilation=2, padding=2), (1, 3, 9, 9)),
        ("rect", lambda: torch.nn.Conv2d(3, 2, (2, 3), stride=(2, 1), padding=(0, 1)), (1, 3, 7, 8))):
    add(Sample("prepacked::conv2d_clamp_run", _mobile(lambda m=_make: seeded(m())), [In(_shape)],
               _label, script=True, flexhw=True))
for _label, _make, _shape in (
        ("s2", lambda: torch.nn.ConvTranspose2d(3, 4, 2, stride=2), (2, 3, 4, 5)),
        ("outpad", lambda: torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1), (1, 3, 4, 5)),
        ("outpad-extra", lambda: torch.nn.ConvTranspose2d(3, 2, 2, stride=2, output_padding=1), (1, 3, 4, 5)),
        ("groups", lambda: torch.nn.ConvTranspose2d(4, 4, 3, groups=2), (1, 4, 4, 5))):
    # In a Sequential: a top-level ConvTranspose2d takes an output_size
    # argument, on which its prepack then depends (not folded into a context).
    add(Sample("prepacked::conv2d_transpose_clamp_run",
               _mobile(lambda m=_make: torch.nn.Sequential(seeded(m()))), [In(_shape)],
               _label, script=True, flexhw=_label == "s2"))
for _label, _make, _shape in (
        ("rank2", lambda: torch.nn.Linear(8, 5), (3, 8)),
        ("rank3", lambda: torch.nn.Linear(5, 4), (2, 3, 5)),
        ("rank4", lambda: torch.nn.Linear(7, 4), (2, 3, 5, 7)),
        ("nobias", lambda: torch.nn.Linear(8, 5, bias=False), (3, 8))):
    add(Sample("prepacked::linear_clamp_run", _mobile(lambda m=_make: seeded(m())), [In(_shape)], _label,
               script=True))

class _AddRelu(torch.nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)


# optimize_for_mobile's add followed by relu (as in resnets).
for _label, _shapes in (("rank4", [(2, 3, 5, 7), (2, 3, 5, 7)]), ("bcast", [(2, 3, 5, 7), (1, 3, 1, 1)]),
                        ("rank2", [(4, 6), (4, 6)])):
    add(Sample("aten::_add_relu", _mobile(_AddRelu),
               [In(sh) for sh in _shapes], _label, script=True))

# ------------------------------------------------------------------- video
# 3-D convolutions and pools as NNAPI 2-D operations over the frames
# (video.cpp): NCHW and (video=True: --nhwc on the 5-D input) NHWC frames, a
# flexible batch (the frames' T*N a load-time size).
for _args, _shape, _label in (
        (dict(in_channels=3, out_channels=4, kernel_size=3, stride=(2, 1, 2), padding=1), (2, 3, 5, 6, 7),
         "conv3d-s2p1"),
        (dict(in_channels=2, out_channels=3, kernel_size=(2, 3, 3), dilation=(2, 1, 2), padding=(1, 0, 2)),
         (1, 2, 6, 7, 7), "conv3d-dilated"),
        (dict(in_channels=4, out_channels=8, kernel_size=(3, 1, 1), groups=4), (2, 4, 5, 3, 4), "conv3d-dw-mult2"),
        (dict(in_channels=4, out_channels=6, kernel_size=(1, 3, 3), groups=2, bias=False), (1, 4, 3, 6, 5),
         "conv3d-grouped")):
    conv("aten::_convolution", lambda a=_args: seeded(torch.nn.Conv3d(**a)), _shape, _label, quant=False,
         video=True, fuse=_label == "conv3d-s2p1")
conv("aten::conv3d", lambda: seeded(torch.nn.Conv3d(2, 3, 3, padding=1)), (1, 2, 4, 5, 6), "k3", quant=False,
     video=True, script=True)
conv("aten::conv3d", lambda: seeded(torch.nn.Conv3d(4, 8, (2, 3, 3), stride=(1, 2, 2), groups=4)), (2, 4, 3, 7, 6),
     "dw-mult2-s2", quant=False, video=True, script=True)
conv("aten::_convolution_mode", lambda: seeded(torch.nn.Conv3d(3, 4, (4, 3, 2), padding="same")), (1, 3, 6, 5, 5),
     "conv3d-same", quant=False, video=True)
for _args, _label in ((dict(kernel_size=3, stride=2, padding=1), "k3s2p1"),
                      (dict(kernel_size=2, stride=2, ceil_mode=True), "ceil"),
                      (dict(kernel_size=(2, 3, 1), stride=(1, 2, 1)), "rect")):
    add(Sample("aten::max_pool3d", fn(lambda x, a=_args: F.max_pool3d(x, **a)), [In((2, 3, 7, 9, 6))], _label,
               video=True))
    add(Sample("aten::avg_pool3d", fn(lambda x, a=_args: F.avg_pool3d(x, **a)), [In((2, 3, 7, 9, 6))], _label,
               video=True))
add(Sample("aten::avg_pool3d", fn(lambda x: F.avg_pool3d(x, 3, 2, 1, count_include_pad=False)),
           [In((1, 3, 7, 9, 6))], "exclude-pad", video=True))
add(Sample("aten::avg_pool3d", fn(lambda x: F.avg_pool3d(x, 2, 2, 1, ceil_mode=True)),
           [In((1, 3, 7, 9, 6))], "ceil-pad", video=True))
add(Sample("aten::avg_pool3d", fn(lambda x: F.avg_pool3d(x, 3, 2, 1, divisor_override=5)),
           [In((1, 3, 7, 9, 6))], "divisor", video=True))
for _os, _label in (((1, 1, 1), "global"), ((3, 2, 4), "non-dividing"), ((2, 3, 3), "dividing")):
    add(Sample("aten::adaptive_avg_pool3d", fn(lambda x, o=_os: F.adaptive_avg_pool3d(x, o)),
               [In((2, 3, 6, 9, 6))], _label, video=True))

# --------------------------------------------------------------- quantized
add(Sample("quantized::conv2d", None, [In((1, 3, 7, 9))], "k3",
           qmake=qmodule(lambda: seeded(torch.nn.Conv2d(3, 4, 3, padding=1)), [In((1, 3, 7, 9))]), flexhw=True))
add(Sample("quantized::conv2d", None, [In((2, 4, 6, 6))], "depthwise-s2",
           qmake=qmodule(lambda: seeded(torch.nn.Conv2d(4, 4, 3, stride=2, groups=4)), [In((2, 4, 6, 6))])))
add(Sample("quantized::conv2d_relu", None, [In((1, 3, 7, 9))], "k3",
           qmake=lambda: _conv_relu((1, 3, 7, 9))))
# Per-channel quantized weights (fbgemm's qconfig): DEQUANTIZE, the float
# operation, QUANTIZE. 1-D convolutions: the 2-D ones over (N, C, 1, L).
add(Sample("quantized::conv2d", None, [In((2, 4, 6, 6))], "depthwise-perchannel",
           qmake=qmodule(lambda: seeded(torch.nn.Conv2d(4, 4, 3, stride=2, groups=4)), [In((2, 4, 6, 6))],
                         "fbgemm")))
add(Sample("quantized::conv2d_relu", None, [In((1, 3, 7, 9))], "k3-perchannel",
           qmake=lambda: _conv_relu((1, 3, 7, 9), qconfig="fbgemm")))
add(Sample("quantized::linear", None, [In((3, 8))], "rank2-perchannel",
           qmake=qmodule(lambda: seeded(torch.nn.Linear(8, 5)), [In((3, 8))], "fbgemm")))
add(Sample("quantized::conv1d", None, [In((2, 3, 9))], "k3",
           qmake=qmodule(lambda: seeded(torch.nn.Conv1d(3, 4, 3, padding=1)), [In((2, 3, 9))])))
add(Sample("quantized::conv1d", None, [In((2, 4, 9))], "depthwise-s2-perchannel",
           qmake=qmodule(lambda: seeded(torch.nn.Conv1d(4, 4, 3, stride=2, groups=4)), [In((2, 4, 9))],
                         "fbgemm")))
add(Sample("quantized::conv1d_relu", None, [In((2, 3, 9))], "k3",
           qmake=lambda: _conv_relu((2, 3, 9), torch.nn.Conv1d)))
add(Sample("quantized::conv1d_relu", None, [In((2, 3, 9))], "k3-perchannel",
           qmake=lambda: _conv_relu((2, 3, 9), torch.nn.Conv1d, "fbgemm")))
add(Sample("quantized::conv_transpose2d", None, [In((1, 3, 4, 5))], "s2",
           qmake=qmodule(lambda: seeded(torch.nn.ConvTranspose2d(3, 2, 2, stride=2)), [In((1, 3, 4, 5))])))
add(Sample("quantized::linear", None, [In((3, 8))], "rank2",
           qmake=qmodule(lambda: seeded(torch.nn.Linear(8, 5)), [In((3, 8))])))
add(Sample("quantized::linear", None, [In((2, 3, 8))], "rank3",
           qmake=qmodule(lambda: seeded(torch.nn.Linear(8, 5)), [In((2, 3, 8))])))
# A 4-D input (its quant_nhwc form: an NHWC quint8 input, the Linear over
# PyTorch's last dim, W).
add(Sample("quantized::linear", None, [In((2, 3, 5, 8))], "rank4",
           qmake=qmodule(lambda: seeded(torch.nn.Linear(8, 5)), [In((2, 3, 5, 8))])))
add(Sample("quantized::hardswish", None, [In((2, 3, 5, 7))], "rank4",
           qmake=lambda: torch.ao.nn.quantized.Hardswish(0.03, 64).eval(), extra_forms=("quant_api30",)))
add(Sample("quantized::hardswish", None, [In((2, 3, 5, 7))], "scale-0.05",
           qmake=lambda: torch.ao.nn.quantized.Hardswish(0.05, 128).eval(), extra_forms=("quant_api30",)))
# quantized::softmax (what --quantize emits): NNAPI's quant8 SOFTMAX at its
# prescribed output scale 1/256, zero point 0; other output parameters take
# the float SOFTMAX between DEQUANTIZE and QUANTIZE.
for _shape, _d, _q, _label in (((2, 3, 5, 7), 1, (1 / 256, 0), "rank4-dim1"),
                               ((3, 5), -1, (1 / 256, 0), "rank2"),
                               ((2, 3, 5, 7), -1, (0.01, 10), "rank4-scale-0.01")):
    add(Sample("quantized::softmax", None, [In(_shape)], _label,
               qmake=fn(lambda x, d=_d, q=_q: torch.ops.quantized.softmax(x, d, q[0], q[1]))))
add(Sample("quantized::relu6", None, [In((2, 3, 5, 7))], "rank4",
           qmake=lambda: torch.ao.nn.quantized.ReLU6().eval()))
add(Sample("aten::dequantize", None, [In((2, 3, 5, 7))], "rank4", qmake=fn(lambda x: x.dequantize() * 1.0),
           quantum=IN_SCALE))
add(Sample("aten::dequantize", None, [In((3, 5))], "rank2", qmake=fn(lambda x: torch.dequantize(x)),
           quantum=IN_SCALE))
add(Sample("aten::quantize_per_tensor",
           fn(lambda x: torch.quantize_per_tensor(x, 0.04, 120, torch.quint8)), [In((2, 3, 5, 7))], "rank4"))
add(Sample("aten::quantize_per_tensor",
           fn(lambda x: torch.quantize_per_tensor(x, 0.1, 0, torch.quint8)), [In((3, 5))], "rank2"))


def _conv_relu(shape, conv=torch.nn.Conv2d, qconfig="qnnpack"):
    m = torch.nn.Sequential(seeded(conv(3, 4, 3)), torch.nn.ReLU()).eval()
    m = torch.ao.quantization.fuse_modules(m, [["0", "1"]])
    m.qconfig = torch.ao.quantization.get_default_qconfig(qconfig)
    m = torch.ao.quantization.prepare(m)
    with torch.no_grad():
        for _ in range(4):
            m(torch.randn(shape))
    return torch.ao.quantization.convert(m)


# Quantized video (video.cpp): quantized::conv3d(_relu) (per-tensor and
# per-channel weights) and the pools and adds of its quint8 frames, each
# DEQUANTIZE, the float operation, QUANTIZE. On the onednn engine: QNNPACK
# cannot unpack 3-D packed params, so cannot save (or freeze) them.
class _QVideoAdd(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = seeded(torch.nn.Conv3d(3, 4, (1, 3, 3), padding=(0, 1, 1)))
        self.conv2 = seeded(torch.nn.Conv3d(4, 4, (3, 1, 1), padding=(1, 0, 0)), seed=1)
        self.ff = torch.nn.quantized.FloatFunctional()

    def forward(self, x):
        y = self.conv(x)
        return self.ff.add(self.conv2(y), y)


def _bn_relu3d(shape):
    m = torch.nn.Sequential(seeded(torch.nn.BatchNorm3d(3)), torch.nn.ReLU()).eval()
    m = torch.ao.quantization.fuse_modules(m, [["0", "1"]])
    m.qconfig = torch.ao.quantization.get_default_qconfig("qnnpack")
    m = torch.ao.quantization.prepare(m)
    with torch.no_grad():
        for _ in range(4):
            m(torch.randn(shape))
    return torch.ao.quantization.convert(m)


def _qvideo(*args, **kw):
    return Sample(*args, engine="onednn", **kw)


_QV = (1, 3, 4, 5, 6)
_QV_S2 = (2, 3, 5, 6, 6)


def _qconv3d_then(layer, shape):
    return qmodule(lambda: torch.nn.Sequential(seeded(torch.nn.Conv3d(3, 4, 3, padding=1)), layer), [In(shape)])


add(_qvideo("quantized::conv3d", None, [In(_QV)], "k3p1",
            qmake=qmodule(lambda: seeded(torch.nn.Conv3d(3, 4, 3, padding=1)), [In(_QV)])))
add(_qvideo("quantized::conv3d", None, [In(_QV_S2)], "s2-perchannel",
            qmake=qmodule(lambda: seeded(torch.nn.Conv3d(3, 4, 3, stride=2, padding=1)), [In(_QV_S2)],
                          "fbgemm")))
add(_qvideo("quantized::conv3d_relu", None, [In(_QV)], "k3",
            qmake=lambda: _conv_relu(_QV, conv=torch.nn.Conv3d)))
add(_qvideo("quantized::conv3d_relu", None, [In(_QV)], "k3-perchannel",
            qmake=lambda: _conv_relu(_QV, conv=torch.nn.Conv3d, qconfig="fbgemm")))
add(_qvideo("quantized::add", None, [In(_QV)], "video", qmake=qmodule(_QVideoAdd, [In(_QV)])))
add(_qvideo("quantized::batch_norm3d", None, [In(_QV)], "rank5",
            qmake=qmodule(lambda: seeded(torch.nn.BatchNorm3d(3)), [In(_QV)])))
add(_qvideo("quantized::batch_norm3d_relu", None, [In(_QV)], "rank5", qmake=lambda: _bn_relu3d(_QV)))
add(_qvideo("aten::avg_pool3d", None, [In((1, 3, 5, 7, 7))], "quant-video",
            qmake=_qconv3d_then(torch.nn.AvgPool3d(3, stride=2, padding=1), (1, 3, 5, 7, 7))))
add(_qvideo("aten::adaptive_avg_pool3d", None, [In((1, 3, 5, 6, 6))], "quant-video",
            qmake=_qconv3d_then(torch.nn.AdaptiveAvgPool3d((2, 1, 3)), (1, 3, 5, 6, 6))))

# ---------------------------------------------------------------- linear
class Addmm(torch.nn.Module):
    def __init__(self, k, n):
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.w = torch.nn.Parameter(torch.randn(k, n, generator=g) / k ** 0.5)
        self.b = torch.nn.Parameter(torch.randn(n, generator=g))

    def forward(self, x):
        return torch.addmm(self.b, x, self.w)


add(Sample("aten::linear", lambda: seeded(torch.nn.Linear(8, 5)), [In((3, 8))], "rank2",
           extra_forms=("fuse",)))
add(Sample("aten::linear", lambda: seeded(torch.nn.Linear(7, 4)), [In((2, 3, 5, 7))], "rank4"))
add(Sample("aten::linear", lambda: seeded(torch.nn.Linear(5, 4)), [In((2, 3, 5))], "rank3"))
add(Sample("aten::linear", lambda: seeded(torch.nn.Linear(5, 4)), [In((5,))], "rank1"))
add(Sample("aten::linear", lambda: seeded(torch.nn.Linear(8, 5, bias=False)), [In((3, 8))], "nobias"))
for _act, _g in ACTS.items():
    add(Sample("aten::linear", lambda g=_g: seeded(torch.nn.Sequential(Fn(lambda x: 2 * FUSE_GAIN * x),
                                                                       torch.nn.Linear(8, 5), Fn(g))),
               [In((3, 8))], f"fuse-{_act}", forms=["nchw", "fuse", "flex"]))
add(Sample("aten::addmm", lambda: Addmm(8, 5).eval(), [In((3, 8))], "rank2"))
add(Sample("aten::addmm", fn(lambda x, y, z: torch.addmm(x, y, z, beta=0.5, alpha=2)), [In((3, 5)), In((3, 4)), In((4, 5))],
           "inputs-beta-alpha"))

# ---------------------------------------------------------------- matmul
_W = torch.randn(7, 4, generator=torch.Generator().manual_seed(5))
for _label, _shapes in (("2dx2d", [(3, 5), (5, 4)]), ("3dx3d", [(2, 3, 5), (2, 5, 4)]),
                        ("4dx4d", [(2, 2, 3, 5), (2, 2, 5, 4)]), ("bcast", [(2, 3, 5), (5, 4)]),
                        ("1dx2d", [(5,), (5, 4)])):
    add(Sample("aten::matmul", fn(lambda x, y: torch.matmul(x, y)), [In(s, batched=None) for s in _shapes],
               _label, extra_forms=("api33",), flex=_label not in ("2dx2d", "1dx2d")))
add(Sample("aten::matmul", fn(lambda m, x: torch.matmul(x, m.w), w=_W), [In((2, 3, 7))], "const-rhs"))
add(Sample("aten::bmm", fn(torch.bmm), [In((2, 3, 5)), In((2, 5, 4))], "rank3", extra_forms=("api33",)))
add(Sample("aten::baddbmm", fn(lambda b, x, y: torch.baddbmm(b, x, y, beta=0.5, alpha=2)),
           [In((2, 3, 4)), In((2, 3, 5)), In((2, 5, 4))], "inputs", extra_forms=("api33",)))
add(Sample("aten::baddbmm", fn(lambda m, x, y: torch.baddbmm(m.b, x, y), b=torch.tensor(0.5)),
           [In((2, 3, 5)), In((2, 5, 4))], "0-dim-bias"))
add(Sample("aten::baddbmm", fn(lambda m, x, y: torch.baddbmm(m.b, x, y), b=torch.randn(1, 3, 4)),
           [In((2, 3, 5)), In((2, 5, 4))], "bcast-bias"))
add(Sample("aten::einsum", fn(lambda x, y: torch.einsum("bij,bjk->bik", x, y)), [In((2, 3, 5)), In((2, 5, 4))],
           "bmm", extra_forms=("api33",)))
add(Sample("aten::einsum", fn(lambda x, y: torch.einsum("bhqd,bhkd->bhqk", x, y)),
           [In((2, 2, 3, 4)), In((2, 2, 5, 4))], "attention", extra_forms=("api33",)))
add(Sample("aten::einsum", fn(lambda m, x: torch.einsum("ij,jk->ik", x, m.w), w=_W), [In((3, 7))], "const"))

# --------------------------------------------------------------- embedding
add(Sample("aten::embedding", lambda: seeded(torch.nn.Embedding(10, 4), scale=1.0),
           [In((3, 5), "int32", 0, 10)], "rank2"))
add(Sample("aten::embedding", lambda: seeded(torch.nn.Embedding(10, 4), scale=1.0),
           [In((6,), "int32", 0, 10)], "rank1"))

# --------------------------------------------------------------- recurrent
for _cls, _kind in ((torch.nn.LSTM, "aten::lstm"), (torch.nn.GRU, "aten::gru")):
    add(Sample(_kind, lambda c=_cls: _RNN(c(4, 6, batch_first=True)), [In((2, 5, 4))], "batch-first"))
    add(Sample(_kind, lambda c=_cls: _RNN(c(4, 6, num_layers=2)), [In((5, 2, 4))], "2-layers"))
    add(Sample(_kind, lambda c=_cls: _RNN(c(4, 3, bidirectional=True, batch_first=True)), [In((2, 5, 4))],
               "bidirectional"))
add(Sample("aten::zeros", lambda: _LSTMZeros(), [In((2, 5, 4))], "lstm-zeros-state", flex=False))
add(Sample("aten::zeros", lambda: _GRUZeros(), [In((2, 5, 4))], "gru-zeros-state", flex=False))


# Dynamic quantization (quantize_dynamic, qnnpack), lowered as float on the
# dequantized weights. Eager quantizes every matrix product's input to 8 bits
# at run time; on inputs (x > 0) in {0, 1} that rounding is exact (scale
# 1/255, 1 -> 255), so eager equals the float model within the matrix's
# 1e-4. The LSTM rows take one step from the zero state (the recurrent
# product's input is 0, also exact). Other inputs: verify.dynamic_quant.
def _dynamic(module, fuse=None):
    torch.backends.quantized.engine = "qnnpack"
    module = seeded(module, scale=0.4).eval()
    if fuse:
        module = torch.ao.quantization.fuse_modules(module, fuse)
    return torch.ao.quantization.quantize_dynamic(
        module, {torch.nn.Linear, torch.nn.LSTM, torch.ao.nn.intrinsic.LinearReLU},
        dtype=torch.qint8)


class _OnGrid(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        out = self.inner((x > 0).to(torch.float32))
        return out[0] if isinstance(out, tuple) else out


add(Sample("quantized::linear_dynamic",
           lambda: _OnGrid(_dynamic(torch.nn.Sequential(torch.nn.Linear(6, 5)))),
           [In((3, 6))], "on-grid"))
add(Sample("quantized::linear_dynamic",
           lambda: _OnGrid(_dynamic(torch.nn.Sequential(torch.nn.Linear(6, 5)))),
           [In((2, 3, 6))], "on-grid-rank3"))
add(Sample("quantized::linear_relu_dynamic",
           lambda: _OnGrid(_dynamic(torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU()),
                                    [["0", "1"]])), [In((3, 6))], "on-grid"))
add(Sample("aten::quantized_lstm",
           lambda: _OnGrid(_dynamic(torch.nn.Sequential(torch.nn.LSTM(4, 6, batch_first=True)))),
           [In((2, 1, 4))],
           "one-step", flex=False))
add(Sample("aten::quantized_lstm",
           lambda: _OnGrid(_dynamic(torch.nn.Sequential(torch.nn.LSTM(4, 3, bidirectional=True)))),
           [In((1, 2, 4))],
           "one-step-bidirectional", flex=False))


class _RNN(torch.nn.Module):
    def __init__(self, rnn):
        super().__init__()
        self.rnn = seeded(rnn, scale=0.4)

    def forward(self, x):
        return self.rnn(x)[0]


class _LSTMZeros(torch.nn.Module):
    """The initial state made inside the model, sized by the input."""

    def __init__(self):
        super().__init__()
        self.rnn = seeded(torch.nn.LSTM(4, 6, batch_first=True), scale=0.4)

    def forward(self, x):
        h = torch.zeros(1, x.size(0), 6)
        return self.rnn(x, (h, torch.zeros(1, x.size(0), 6)))[0]


class _GRUZeros(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = seeded(torch.nn.GRU(4, 6, batch_first=True), scale=0.4)

    def forward(self, x):
        return self.rnn(x, torch.zeros(1, x.size(0), 6))[0]


# --------------------------------------------------------------- attention
def _padding_mask(lengths, length):
    return torch.arange(length) >= torch.tensor(lengths).unsqueeze(1)


def _fast_encoder(activation="relu", norm_first=False, nested=False):
    layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True,
                                             activation=activation, norm_first=norm_first)
    enc = seeded(torch.nn.TransformerEncoder(layer, 1, enable_nested_tensor=nested), scale=0.3)
    return enc.requires_grad_(False)


class _EncoderMask(torch.nn.Module):
    def __init__(self, nested):
        super().__init__()
        self.enc = _fast_encoder(nested=nested)

    def forward(self, x, mask):
        return self.enc(x, src_key_padding_mask=mask)


class _MHA(torch.nn.Module):
    def __init__(self, batch_first=True, attn_mask=None):
        super().__init__()
        self.mha = seeded(torch.nn.MultiheadAttention(8, 2, batch_first=batch_first), scale=0.3)
        self.mha.requires_grad_(False)
        self.register_buffer("attn_mask", attn_mask)

    def forward(self, x, mask=None):
        return self.mha(x, x, x, key_padding_mask=mask, attn_mask=self.attn_mask, need_weights=False)[0]


_MASK = In((3, 5), "bool", values=_padding_mask([5, 2, 4], 5))
add(Sample("aten::_native_multi_head_attention", lambda: _MHA(), [In((3, 5, 8))], "self",
           extra_forms=("api33",)))
add(Sample("aten::_transformer_encoder_layer_fwd", lambda: _fast_encoder(), [In((3, 5, 8))], "relu",
           extra_forms=("api33",)))
add(Sample("aten::_transformer_encoder_layer_fwd", lambda: _fast_encoder("gelu", True), [In((3, 5, 8))],
           "gelu-norm-first"))
add(Sample("aten::_nested_tensor_from_mask", lambda: _EncoderMask(True), [In((3, 5, 8)), _MASK], "padding"))
add(Sample("aten::to_padded_tensor", lambda: _EncoderMask(True), [In((3, 5, 8)), _MASK], "padding"))
add(Sample("aten::masked_fill", lambda: _MHA(False), [In((5, 3, 8), batched=False), _MASK], "key-padding",
           flex=False))
add(Sample("aten::logical_or", lambda: _MHA(True, torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)),
           [In((3, 5, 8)), _MASK], "causal-key-padding"))
add(Sample("aten::zeros_like", lambda: _MHA(True, torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)),
           [In((3, 5, 8)), _MASK], "causal-key-padding"))
# zeros_like of a computed 4-D float tensor (NCHW, NHWC, flexible batch and
# height/width: its shape follows the input's).
add(Sample("aten::zeros_like", fn(lambda x: torch.zeros_like(torch.relu(x)) + x * 2), [In((2, 3, 5, 7))], "rank4",
           flexhw=True))
add(Sample("aten::logical_not", fn(lambda x, m: x.masked_fill(torch.logical_not(m).unsqueeze(-1), 0.0)),
           [In((3, 5, 8)), _MASK], "masked-fill"))
add(Sample("aten::masked_fill", fn(lambda x, m: x.masked_fill(m.unsqueeze(-1), -1.5)), [In((3, 5, 8)), _MASK],
           "input-mask"))
add(Sample("aten::masked_fill", fn(lambda m, x: x.masked_fill(m.mask, 2.0), mask=torch.tensor(True)),
           [In((3, 5))], "0-dim-mask"))
# SELECT: int32 tensors, and a finite fill over -inf (x * 0 would be NaN).
add(Sample("aten::masked_fill", fn(lambda x, m: x.masked_fill(m, -7)),
           [In((3, 5), "int32", low=-50, high=50), In((3, 5), "bool")], "int32"))
add(Sample("aten::masked_fill",
           fn(lambda x, m: torch.exp(x.masked_fill(m, float("-inf")).masked_fill(x > 0.5, 0.5))),
           [In((3, 5)), In((3, 5), "bool")], "fill-over-inf"))

# ------------------------------------------------------- graph and plumbing
add(Sample("prim::Constant", fn(lambda m, x: x * m.c, c=torch.linspace(-1, 1, 7)), [In((2, 3, 5, 7))],
           "const-tensor"))
add(Sample("aten::to", fn(lambda x: x.to(torch.float32) + 1), [In((2, 3, 5, 7))], "float-to-float"))
add(Sample("aten::baddbmm", fn(torch.baddbmm), [In((2, 3, 4)), In((2, 3, 5)), In((2, 5, 4))], "plain",
           extra_forms=("api33",), subset=True))
add(Sample("aten::slice", fn(lambda x: x[:, :, 1::2].reshape(x.shape[0], -1)), [In((2, 3, 5, 7, 2))], "rank5-step2"))
add(Sample("aten::slice", fn(lambda x: torch.sigmoid(x[..., 4:]).flatten(1)), [In((1, 3, 4, 4, 7))], "rank5-head"))
add(Sample("aten::select", fn(lambda x: x[:, :, 1].flatten(1)), [In((2, 3, 4, 5, 2))], "rank5"))
add(Sample("aten::select", fn(lambda x: x.select(-1, -2)), [In((2, 3, 4, 5, 2))], "rank5-out"))
add(Sample("aten::slice", fn(lambda x: x[..., -9:] * 2), [In((2, 3, 5, 7))], "start-before-first"))
add(Sample("aten::slice", fn(lambda x: x[:, -5:2]), [In((2, 3, 5))], "neg-start-clamped"))

# ------------------------------------------- issue 20: everyday node kinds
_ACT_LABELS = ("rank4", "rank2", "size1", "rank3")
unary("aten::softplus", F.softplus, labels=_ACT_LABELS)
unary("aten::softplus", lambda x: F.softplus(x, beta=2.0, threshold=1.0), labels=("rank4", "rank2"))
unary("aten::softplus", lambda x: F.softplus(x * 40, beta=0.5, threshold=10.0), labels=("rank3",))
unary("aten::mish", F.mish, labels=_ACT_LABELS)
unary("aten::mish", lambda x: F.mish(x * 50), labels=("rank2",))
unary("aten::elu", F.elu, labels=_ACT_LABELS)
unary("aten::elu", lambda x: F.elu(x, 0.5), labels=("rank4",))
unary("aten::elu", lambda x: torch.ops.aten.elu(x, 0.7, 1.3, 0.6), labels=("rank2",))
unary("aten::celu", lambda x: F.celu(x, 1.5), labels=_ACT_LABELS)
unary("aten::selu", F.selu, labels=_ACT_LABELS)
unary("aten::log_sigmoid", F.logsigmoid, labels=_ACT_LABELS)
unary("aten::log_sigmoid", lambda x: F.logsigmoid(x * 60), labels=("rank2",))
unary("aten::hardshrink", F.hardshrink, labels=_ACT_LABELS)
unary("aten::hardshrink", lambda x: F.hardshrink(x, 1.25), labels=("rank4",))
unary("aten::erf", torch.erf, labels=_ACT_LABELS)
unary("aten::erf", lambda x: torch.erf(x * 3), labels=("rank2",))
for _label in ("rank4", "rank2"):
    add(Sample("quantized::elu", None, [In(RANKS[_label])], _label,
               qmake=qmodule(lambda: torch.nn.ELU(0.8), [In(RANKS[_label])])))
for _shape, _d in (((2, 4, 5, 6), 1), ((2, 4, 5, 6), -1), ((2, 3, 6), 2), ((6,), 0), ((4, 3, 2, 5), 0)):
    add(Sample("aten::glu", fn(lambda x, d=_d: F.glu(x, d)), [In(_shape)], f"rank{len(_shape)}-dim{_d}",
               flex=(_d % len(_shape)) != 0))
for _shape in ((2, 3, 5, 7), (3, 5), (7,), (1, 3, 1, 7)):
    for _d in dims(len(_shape)):
        add(Sample("aten::cumsum", fn(lambda x, d=_d: torch.cumsum(x, d)), [In(_shape)],
                   f"rank{len(_shape)}-dim{_d}" + ("-size1" if _shape[0] == 1 else ""),
                   flex=(_d % len(_shape)) != 0))

# Indexing and stacking with constant indices.
# A stack of rank-4 tensors is rank 5, which NNAPI has not (refused, naming
# the node): the subset also takes a rank-2 stack, which converts.
for _shape in ((2, 3, 5, 7), (3, 5), (2, 3, 5)):
    _r = len(_shape)
    for _d in (0, 1, -1, _r):
        add(Sample("aten::stack", fn(lambda x, y, d=_d: torch.stack([x, y, x], d)), [In(_shape), In(_shape)],
                   f"rank{_r}-dim{_d}", flex=_d not in (0, -_r - 1), subset=(_r == 2 and _d == 1)))
    for _d in dims(_r):
        add(Sample("aten::unbind", fn(lambda x, d=_d: tuple(t * 2 for t in x.unbind(d))), [In(_shape)],
                   f"rank{_r}-dim{_d}", flex=(_d % _r) != 0))
        add(Sample("aten::narrow", fn(lambda x, d=_d: x.narrow(d, 1, 2)), [In(_shape)], f"rank{_r}-dim{_d}",
                   qmake=True if _r == 4 else None, flex=(_d % _r) != 0))
        add(Sample("aten::narrow", fn(lambda x, d=_d: x.narrow(d, -2, 1) + 1), [In(_shape)],
                   f"rank{_r}-dim{_d}-negstart", flex=(_d % _r) != 0))
        add(Sample("aten::flip", fn(lambda x, d=_d: x.flip(d)), [In(_shape)], f"rank{_r}-dim{_d}",
                   qmake=True if _r == 4 else None, flex=(_d % _r) != 0))
        add(Sample("aten::index_select",
                   fn(lambda m, x, d=_d: x.index_select(d, m.idx), idx=torch.tensor([1, 0, 1])),
                   [In(_shape)], f"rank{_r}-dim{_d}", qmake=True if _r == 4 else None, flex=(_d % _r) != 0))
add(Sample("aten::flip", fn(lambda x: x.flip(1, 2, 3)), [In((2, 3, 5, 7))], "three-dims"))
add(Sample("aten::flip", fn(lambda x: x.flip(-1)), [In((7,))], "rank1", flex=False))
add(Sample("aten::unbind", fn(lambda x: x.unbind(1)[2] * 2), [In((1, 3, 1, 7))], "size1"))
add(Sample("aten::index_select", fn(lambda x, i: x.index_select(1, i)),
           [In((2, 5, 3)), In((4,), "int32", 0, 5, batched=False)], "computed-index"))
add(Sample("aten::expand_as", fn(lambda x, y: x.expand_as(y)), [In((2, 1, 5, 1)), In((2, 3, 5, 7))], "rank4"))
add(Sample("aten::expand_as", fn(lambda x, y: x.expand_as(y) * 2), [In((1, 5)), In((3, 4, 5))], "new-dims",
           flex=False))
add(Sample("aten::expand_as", fn(lambda x, y: x.expand_as(y) + y), [In((2, 1, 5)), In((2, 3, 5))], "rank3"))


class _PositionalEmbedding(torch.nn.Module):
    """A learned positional table read at arange(sequence length): folded."""

    def __init__(self):
        super().__init__()
        self.pos = seeded(torch.nn.Embedding(16, 8), scale=1.0)

    def forward(self, x):
        return x + self.pos(torch.arange(x.size(1)))


add(Sample("aten::embedding", lambda: _PositionalEmbedding(), [In((2, 5, 8))], "arange-positions"))

# Elementwise arguments and kinds PyTorch's converter refuses.
binary("aten::maximum", torch.maximum, labels=("same4", "bcast4", "bcast2", "rank1", "rank3"))
binary("aten::minimum", torch.minimum, labels=("same4", "bcast4r", "bcast_last", "rank3"))
binary("aten::floor_divide", torch.floor_divide, labels=("same4", "bcast4", "rank3"))
binary("aten::remainder", torch.remainder, labels=("same4", "bcast4", "bcast2"))
binary("aten::div", lambda x, y: torch.div(x, y, rounding_mode="trunc"), labels=("same4", "bcast4", "rank1"),
       tag="-trunc")
binary("aten::div", lambda x, y: torch.div(x, y, rounding_mode="floor"), labels=("same4", "bcast_last"),
       tag="-floor")
binary("aten::pow", torch.pow, labels=("bcast2", "rank3"), positive_rhs=True)
add(Sample("aten::pow", fn(lambda x, y: torch.pow(x.abs() + 0.5, y)), [In((2, 3, 5, 7)), In((1, 3, 1, 1))],
           "two-tensors"))
binary("aten::add", lambda x, y: torch.add(x, y, alpha=-1.5), labels=("bcast4", "rank3"))
binary("aten::sub", lambda x, y: torch.sub(x, y, alpha=3), labels=("same4", "rank1"))
unary("aten::rsub", lambda x: torch.rsub(x, 2.0, alpha=3), labels=("rank4", "rank2"))
add(Sample("aten::rsub", fn(lambda x, y: torch.rsub(x, y, alpha=0.25)), [In((2, 3, 5, 7)), In((2, 3, 5, 7))],
           "tensors-alpha"))
add(Sample("aten::clamp", fn(lambda x, lo, hi: torch.clamp(x, lo, hi)),
           [In((2, 3, 5, 7)), In((1, 3, 1, 1)), In((2, 3, 5, 7))], "tensors"))
add(Sample("aten::clamp", fn(lambda m, x: torch.clamp(x, min=m.lo), lo=torch.linspace(-1, 1, 7)),
           [In((2, 3, 5, 7))], "const-min"))
add(Sample("aten::clamp", fn(lambda x, hi: torch.clamp(x, max=hi)), [In((3, 5)), In((3, 5))], "tensor-max"))
add(Sample("aten::clamp_min", fn(lambda x, lo: torch.clamp_min(x, lo)), [In((2, 3, 5, 7)), In((2, 3, 5, 7))],
           "tensor"))
add(Sample("aten::clamp_max", fn(lambda x: torch.clamp_max(x, 0.3)), [In((2, 3, 5, 7))], "number", qmake=True))
add(Sample("aten::addmm", fn(lambda m, x: torch.addmm(m.b, x, m.w, beta=0.5, alpha=2.0),
                             b=torch.randn(4), w=torch.randn(5, 4)), [In((3, 5))], "alpha-beta"))
add(Sample("aten::addmm", fn(lambda m, x: torch.addmm(m.b, x, m.w, beta=0.0),
                             b=torch.randn(4), w=torch.randn(5, 4)), [In((3, 5))], "beta0"))
add(Sample("aten::baddbmm", fn(lambda x, y, z: torch.baddbmm(x, y, z, beta=0.5, alpha=-2.0)),
           [In((2, 3, 4)), In((2, 3, 5)), In((2, 5, 4))], "alpha-beta", flex=False))
add(Sample("aten::baddbmm", fn(lambda x, y, z: torch.baddbmm(x, y, z, beta=0.0)),
           [In((2, 3, 4)), In((2, 3, 5)), In((2, 5, 4))], "beta0", flex=False))

# Negative padding crops; cat of NCHW and NHWC inputs.
for _pad, _label in (((-1, 2, -2, 0), "crop-pad-hw"), ((-1, -2), "crop-last"), ((0, 0, -1, -1, 1, 0), "crop-c"),
                     ((-2, -1, -1, -3), "crop-hw")):
    add(Sample("aten::pad", fn(lambda x, p=_pad: F.pad(x, p, value=0.5)), [In((2, 3, 5, 7))], _label,
               qmake=True if _label == "crop-hw" else None))
    add(Sample("aten::constant_pad_nd", fn(lambda x, p=_pad: torch.constant_pad_nd(x, p)), [In((2, 3, 5, 7))],
               _label))
add(Sample("aten::pad", fn(lambda x: F.pad(x, (-1, 1))), [In((3, 5))], "rank2-crop"))
add(Sample("aten::cat", fn(lambda x, y: torch.cat([x, y.view(y.size(0), 3, 5, 7)], 1)),
           [In((2, 3, 5, 7)), In((2, 105))], "mixed-layouts"))
add(Sample("aten::cat", fn(lambda x, y: torch.cat([y.reshape(y.size(0), 2, 5, 7), x], 2)),
           [In((2, 3, 5, 7)), In((2, 70))], "mixed-layouts-dim2", flex=False))

# Pooling: every avg_pool2d argument; area interpolation.
for _args, _label in ((dict(kernel_size=3, stride=2, padding=1, ceil_mode=True), "pad-ceil"),
                      (dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                       "pad-ceil-exclude"),
                      (dict(kernel_size=3, stride=2, padding=1, divisor_override=5), "pad-divisor"),
                      (dict(kernel_size=2, stride=2, padding=1, ceil_mode=True, divisor_override=3),
                       "pad-ceil-divisor"),
                      (dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), count_include_pad=False),
                       "rect-exclude")):
    # Quantized count_include_pad=False: with ceil_mode eager PyTorch takes its
    # generic kernel, which honours it (its QNNPACK kernel, taken otherwise,
    # ignores it: beyond-qavg_pool2d-exclude-pad-* in tools/fixtures/pooling.py).
    add(Sample("aten::avg_pool2d", fn(lambda x, a=_args: F.avg_pool2d(x, **a)), [In((2, 3, 8, 7))], _label,
               qmake=True if _label == "pad-ceil-exclude" else None))
add(Sample("aten::avg_pool1d", fn(lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
           [In((2, 3, 8))], "pad-ceil-exclude"))
for _size, _label in (((4, 4), "area-4x4"), ((5, 2), "area-5x2"), ((7, 9), "area-up")):
    add(Sample("aten::adaptive_avg_pool2d", fn(lambda x, s=_size: F.interpolate(x, size=s, mode="area")),
               [In((2, 3, 6, 9))], _label))

# Convolutions with string padding and transposed forms NNAPI has no
# argument for.
for _kind, _script in (("aten::_convolution_mode", False), ("aten::conv2d", True)):
    for _args, _shape, _label in (
            (dict(in_channels=3, out_channels=4, kernel_size=3, padding="same"), (2, 3, 7, 9), "same-k3"),
            (dict(in_channels=3, out_channels=4, kernel_size=(2, 4), padding="same"), (2, 3, 7, 9), "same-even"),
            (dict(in_channels=3, out_channels=4, kernel_size=(2, 3), padding="same", dilation=(3, 2)),
             (2, 3, 8, 9), "same-dilated"),
            (dict(in_channels=4, out_channels=4, kernel_size=4, padding="same", groups=4), (1, 4, 6, 5),
             "same-depthwise"),
            (dict(in_channels=3, out_channels=4, kernel_size=3, padding="valid", stride=2), (2, 3, 7, 9),
             "valid")):
        conv(_kind, lambda a=_args: seeded(torch.nn.Conv2d(**a)), _shape, _label, quant=False, script=_script)
for _kind, _script in (("aten::_convolution_mode", False), ("aten::conv1d", True)):
    for _args, _label in ((dict(in_channels=4, out_channels=6, kernel_size=4, padding="same"), "1d-same-even"),
                          (dict(in_channels=4, out_channels=4, kernel_size=5, padding="same", groups=4),
                           "1d-same-depthwise"),
                          (dict(in_channels=4, out_channels=6, kernel_size=3, padding="valid"), "1d-valid")):
        conv(_kind, lambda a=_args: seeded(torch.nn.Conv1d(**a)), (2, 4, 9), _label, quant=False, script=_script)
conv("aten::conv1d", lambda: seeded(torch.nn.Conv1d(4, 6, 3, padding=1, stride=2)), (2, 4, 9), "1d-int",
     quant=False, script=True)
for _args, _shape, _label in (
        (dict(in_channels=3, out_channels=4, kernel_size=3, stride=2, output_padding=1), (2, 3, 4, 5),
         "output-padding"),
        (dict(in_channels=3, out_channels=4, kernel_size=3, stride=3, padding=1, output_padding=2), (2, 3, 4, 5),
         "output-padding-gt-pad"),
        (dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1, groups=2), (2, 4, 4, 5),
         "groups"),
        (dict(in_channels=4, out_channels=4, kernel_size=3, stride=2, groups=4), (1, 4, 3, 3), "depthwise"),
        (dict(in_channels=3, out_channels=4, kernel_size=3, stride=2, dilation=2, padding=1), (2, 3, 4, 5),
         "dilated"),
        (dict(in_channels=4, out_channels=2, kernel_size=(2, 3), stride=(2, 1), dilation=(1, 2), groups=2,
              output_padding=(1, 0)), (1, 4, 3, 4), "all")):
    conv("aten::_convolution", lambda a=_args: seeded(torch.nn.ConvTranspose2d(**a)), _shape,
         "transposed-" + _label, quant=False)
conv("aten::_convolution", lambda: seeded(torch.nn.ConvTranspose1d(4, 3, 3, stride=2, output_padding=1)),
     (2, 4, 6), "transposed-1d-output-padding", quant=False)

# General reshapes of 4-D data (NHWC under --nhwc: PyTorch's element order first).
for _f, _label in ((lambda x: x.view(x.size(0), 3, -1).transpose(1, 2) * 2, "tokens"),
                   (lambda x: x.reshape(x.size(0), 5, 3, 7) + 1, "scramble4"),
                   (lambda x: x.view(x.size(0), 3, 5, 7, 1).flatten(3) + 1, "via-rank5"),
                   (lambda x: x.reshape(x.size(0), 15, 7).sum(1), "merge-ch")):
    add(Sample("aten::view" if _label != "scramble4" else "aten::reshape", fn(_f), [In((2, 3, 5, 7))],
               "nhwc-" + _label, qmake=True if _label == "scramble4" else None))

# ----------------------- issue 20: comparisons, logical operations and where
# of computed tensors (EQUAL ... LESS_EQUAL, LOGICAL_*, SELECT; feature level 3).
_CMP = {"aten::eq": torch.eq, "aten::ne": torch.ne, "aten::gt": torch.gt, "aten::ge": torch.ge,
        "aten::lt": torch.lt, "aten::le": torch.le}
_HALVES = dict(low=-3, high=4)  # int32 inputs with repeated values (ties and equal elements)
for _kind, _f in _CMP.items():
    for _label in ("same4", "bcast4", "bcast2", "rank3", "rank1"):
        _a, _b = BINARY_SHAPES[_label]
        # maximum(x, y) against maximum(y, -x): equal where y >= |x| (ties), greater where
        # x > max(y, 0), less where y < x < 0, so that every comparison varies (maximum(x, y)
        # against y alone is never less, and ge/lt of it were constant)
        add(Sample(_kind, fn(lambda x, y, f=_f: f(torch.maximum(x, y), torch.maximum(y, -x))),
                   [In(_a), In(_b)], _label))
    # eq/ne of random floats and a constant are all False/True: clamped to
    # the constant's side, some elements equal it (ties) and the result varies.
    _tie = (lambda x, lo, hi: torch.clamp(x, lo, hi)) if _kind in ("aten::eq", "aten::ne") else \
        (lambda x, lo, hi: x)
    add(Sample(_kind, fn(lambda x, f=_f, t=_tie: f(t(x, -2.0, 0.25), 0.25)), [In((2, 3, 5, 7))],
               "scalar", qmake=True))
    add(Sample(_kind, fn(lambda x, f=_f, t=_tie: f(t(x, -0.35, 2.0), -0.35)), [In((3, 5))],
               "scalar-neg", qmake=True))
    add(Sample(_kind, fn(lambda m, x, f=_f, t=_tie: f(t(x, -0.5, 0.5), m.c),
                         c=torch.tensor([[-0.5], [0.0], [0.5]])), [In((2, 3, 7))], "const"))
    add(Sample(_kind, fn(lambda x, y, f=_f: f(x, y)), [In((3, 5), "int32", **_HALVES),
                                                      In((5,), "int32", batched=False, **_HALVES)],
               "int32"))
    add(Sample(_kind, fn(lambda x, f=_f: f(x, 1)), [In((3, 5), "int32", **_HALVES)], "int32-scalar"))
    add(Sample(_kind, fn(lambda x, f=_f, t=_tie: f(t(x, 0.0, 2.0), 0.0).float() * x),
               [In((2, 3, 5, 7))], "as-float"))
add(Sample("aten::eq", fn(lambda x, m: torch.eq(x > 0, m)), [In((3, 5)), In((3, 5), "bool")], "bools"))
add(Sample("aten::ne", fn(lambda x, y: torch.ne(x > 0, y > 0)), [In((2, 3, 5, 7)), In((2, 3, 5, 7))],
           "bools"))
add(Sample("aten::gt", fn(lambda x, y: x > y), [In((2, 3, 5, 7)), In((2, 3, 5, 7))], "quant-tensors",
           qmake=True, forms=["quant", "quant_nhwc", "quant_flex"],
           qinputs=[In((2, 3, 5, 7), "quint8"), In((2, 3, 5, 7), "quint8", scale=0.1, zero_point=100)]))

for _kind, _f in (("aten::logical_and", torch.logical_and), ("aten::logical_or", torch.logical_or),
                  ("aten::logical_xor", torch.logical_xor)):
    # (y broadcast along H only: over (1, 3, 1, 1) all three y < 0.5 made logical_or all True)
    add(Sample(_kind, fn(lambda x, y, f=_f: f(x > 0, y < 0.5)), [In((2, 3, 5, 7)), In((1, 3, 1, 7))],
               "computed"))
    add(Sample(_kind, fn(lambda x, m, f=_f: f(x > 0, m)), [In((3, 5)), In((3, 5), "bool")], "with-input"))
    # (of relu: zeros among the floats, else every float is True)
    add(Sample(_kind, fn(lambda x, y, f=_f: f(torch.relu(x), torch.relu(y))), [In((3, 5)), In((3, 5))],
               "floats"))
add(Sample("aten::logical_and", fn(lambda m, n: torch.logical_and(m, n)),
           [In((3, 5), "bool"), In((3, 5), "bool")], "bool-inputs"))
add(Sample("aten::__and__", fn(lambda x, y: (x > 0) & (y > 0)), [In((2, 3, 5, 7)), In((2, 3, 5, 7))], "bools"))
add(Sample("aten::__or__", fn(lambda x, y: (x > 0) | (y > 0)), [In((3, 5)), In((1, 5))], "bools"))
add(Sample("aten::__xor__", fn(lambda x, y: (x > 0) ^ (y > 0)), [In((3, 5)), In((3, 5))], "bools"))
add(Sample("aten::logical_not", fn(lambda x: torch.logical_not(x > 0.5)), [In((2, 3, 5, 7))], "computed"))
add(Sample("aten::logical_not", fn(lambda x: torch.logical_not(torch.relu(x))), [In((3, 5))], "float"))
add(Sample("aten::bitwise_not", fn(lambda x: ~(x > 0.5)), [In((2, 3, 5, 7))], "computed"))
add(Sample("aten::bitwise_not", fn(lambda m: ~m), [In((3, 5), "bool")], "bool-input"))

for _label in ("same4", "bcast4", "bcast4r", "bcast2", "rank3", "rank1"):
    _a, _b = BINARY_SHAPES[_label]
    add(Sample("aten::where", fn(lambda x, y: torch.where(x > y, x, y)), [In(_a), In(_b)], _label))
add(Sample("aten::where", fn(lambda x: torch.where(x > 0, x, 0.0)), [In((2, 3, 5, 7))], "scalar"))
add(Sample("aten::where", fn(lambda x: torch.where(x > 0, 1.0, -1.0)), [In((2, 3, 5))], "two-scalars"))
add(Sample("aten::where", fn(lambda x, y: torch.where(y > 0, x, -x)), [In((2, 3, 5, 7)), In((5, 7))],
           "mask-bcast"))
add(Sample("aten::where", fn(lambda x, y: torch.where(x > 0, y, 0.5)), [In((2, 1, 5, 7)), In((1, 3, 1, 7))],
           "all-bcast"))
add(Sample("aten::where", fn(lambda x, m: torch.where(m, x, -1.5)), [In((3, 5)), In((3, 5), "bool")],
           "bool-input"))
add(Sample("aten::where", fn(lambda m, x: torch.where(x > 0, x, m.c), c=torch.linspace(-1, 1, 7)),
           [In((2, 3, 5, 7))], "const"))
add(Sample("aten::where", fn(lambda x, y: torch.where(x > 2, x, y)),
           [In((3, 5), "int32"), In((3, 5), "int32")], "int32"))
for _kind, _f in (("aten::bitwise_and", torch.bitwise_and), ("aten::bitwise_or", torch.bitwise_or),
                  ("aten::bitwise_xor", torch.bitwise_xor)):
    add(Sample(_kind, fn(lambda x, y, f=_f: f(x > 0, y > 0.5)), [In((2, 3, 5, 7)), In((2, 3, 5, 7))], "bools"))

# ----------------------- issue 20: reductions and selection along dims, sin/cos
def _half_threshold(n, kind, true=0.5):
    """t such that all(x > t) (or any) over n randn values is True with
    probability `true` (1/2: the reduced outputs vary; a threshold that makes
    them all True or all False is a check a constant output passes)."""
    p = true ** (1.0 / n) if kind == "aten::all" else (1.0 - true) ** (1.0 / n)
    q = 1.0 - p if kind == "aten::all" else p  # P(x > t) = p for all; P(x <= t) = p for any
    return round(float(torch.distributions.Normal(0.0, 1.0).icdf(torch.tensor(q))), 3)


for _shape in ((2, 3, 5, 7), (3, 5), (2, 3, 5), (7,)):
    _r = len(_shape)
    for _d in dims(_r):
        _flex = (_d % _r) != 0
        _q = True if _r in (4, 2) else None
        for _kind, _f in (("aten::max", torch.max), ("aten::min", torch.min)):
            add(Sample(_kind, fn(lambda x, d=_d, f=_f: f(x, d)), [In(_shape)], f"rank{_r}-dim{_d}",
                       qmake=_q, flex=_flex))
            add(Sample(_kind, fn(lambda x, d=_d, f=_f: f(x, d, keepdim=True)[0] * 2), [In(_shape)],
                       f"rank{_r}-dim{_d}-keep-values", flex=_flex))
        for _kind, _f in (("aten::argmax", torch.argmax), ("aten::argmin", torch.argmin)):
            add(Sample(_kind, fn(lambda x, d=_d, f=_f: f(x, d)), [In(_shape)], f"rank{_r}-dim{_d}", flex=_flex))
        for _kind, _f in (("aten::amax", torch.amax), ("aten::amin", torch.amin)):
            add(Sample(_kind, fn(lambda x, d=_d, f=_f: f(x, d)), [In(_shape)], f"rank{_r}-dim{_d}", flex=_flex))
        add(Sample("aten::prod", fn(lambda x, d=_d: torch.prod(x, d)), [In(_shape)], f"rank{_r}-dim{_d}",
                   flex=_flex))
        for _kind, _f in (("aten::any", torch.any), ("aten::all", torch.all)):
            # (a scalar result True: a False one is a check an all-zero output passes)
            _t = _half_threshold(_shape[_d], _kind, 0.5 if _r > 1 else 0.99)
            add(Sample(_kind, fn(lambda x, d=_d, f=_f, t=_t: f(x > t, d)), [In(_shape)],
                       f"rank{_r}-dim{_d}", flex=_flex))
    add(Sample("aten::topk", fn(lambda x: torch.topk(x, 2)), [In(_shape)], f"rank{_r}-last"))
    if _r in (4, 2):  # quantized inputs have ties, whose indices may differ (see list-ops)
        add(Sample("aten::topk", fn(lambda x: torch.topk(x, 2)[0]), [In(_shape)], f"rank{_r}-values",
                   qmake=True))
for _kind, _f in (("aten::max", torch.max), ("aten::min", torch.min)):
    add(Sample(_kind, fn(lambda x, f=_f: f(x)), [In((2, 3, 5, 7))], "all", flex=False, qmake=True))
    add(Sample(_kind, fn(lambda x, y, f=_f: f(x, y)), [In((2, 3, 5, 7)), In((1, 3, 1, 1))], "two-tensors"))
    add(Sample(_kind, fn(lambda x, f=_f: f(x, 1)[1]), [In((2, 3, 5, 7), "int32", -3, 4)], "int32-ties"))
for _kind, _f in (("aten::argmax", torch.argmax), ("aten::argmin", torch.argmin)):
    add(Sample(_kind, fn(lambda x, f=_f: f(x)), [In((2, 3, 5, 7))], "flat", flex=False))
    add(Sample(_kind, fn(lambda x, f=_f: f(x, 1, keepdim=True)), [In((2, 3, 5, 7))], "keepdim"))
    add(Sample(_kind, fn(lambda x, f=_f: f(x, -1)), [In((3, 5), "int32", -2, 3)], "int32-ties"))
for _kind, _f in (("aten::amax", torch.amax), ("aten::amin", torch.amin)):
    add(Sample(_kind, fn(lambda x, f=_f: f(x, (2, 3), keepdim=True)), [In((2, 3, 5, 7))], "hw-keep"))
    add(Sample(_kind, fn(lambda x, f=_f: f(x, (0, -1))), [In((2, 3, 5))], "two-dims", flex=False))
add(Sample("aten::prod", fn(lambda x: torch.prod(x)), [In((2, 3, 5))], "all", flex=False))
add(Sample("aten::prod", fn(lambda x: torch.prod(x, 1, keepdim=True)), [In((2, 3, 5, 7))], "keep"))
for _kind, _f in (("aten::any", torch.any), ("aten::all", torch.all)):
    add(Sample(_kind, fn(lambda x, f=_f: f(x > -1.5)), [In((2, 3, 5))], "all", flex=False))
    # (of relu(x): zeros, so that "all nonzero" varies)
    add(Sample(_kind, fn(lambda x, f=_f: f(torch.relu(x), 1, keepdim=True)), [In((2, 3, 5, 7))],
               "float-keep"))
    add(Sample(_kind, fn(lambda m, f=_f: f(m, -1)),
               [In((4, 2), "bool", values=torch.tensor([[True, True], [True, False], [False, True],
                                                        [False, False]]))], "bool-input"))
for _d in (0, 1, 2, -1):
    add(Sample("aten::topk", fn(lambda x, d=_d: torch.topk(x, 3, d)), [In((3, 4, 5, 6))], f"dim{_d}",
               flex=_d != 0))
add(Sample("aten::topk", fn(lambda x: torch.topk(x, 2, largest=False)), [In((2, 3, 5))], "smallest"))
add(Sample("aten::topk", fn(lambda x: torch.topk(x, 5)[1]), [In((2, 3, 5, 7))], "k-all-indices"))
add(Sample("aten::topk", fn(lambda x: torch.topk(x, 2)),
           [In((3, 6), "int32", values=torch.randperm(18, generator=torch.Generator().manual_seed(7))
               .reshape(3, 6).int())], "int32"))
unary("aten::sin", torch.sin, labels=_ACT_LABELS)
unary("aten::cos", torch.cos, labels=_ACT_LABELS)
unary("aten::sin", lambda x: torch.sin(x * 100), labels=("rank2",), tag="-x100")
unary("aten::cos", lambda x: torch.cos(x * 1000), labels=("rank2",), tag="-x1000")
# |x| up to ~4e4: cos(x) as sin(x + pi/2) would be off by ~1e-3 here (x + pi/2 rounds)
unary("aten::cos", lambda x: torch.cos(x * 10000), labels=("rank4",), tag="-x10000")
for _kind, _f in (("aten::gt", torch.gt), ("aten::le", torch.le)):  # a constant on the left
    add(Sample(_kind, fn(lambda m, x, f=_f: f(m.c, x), c=torch.tensor([[-0.5], [0.0], [0.5]])),
               [In((2, 3, 7))], "const-left"))


# Scripted models' size checks and branches (view.cpp's aten::dim, aten::numel,
# prim::dtype; control.cpp's prim::If, decided during conversion): an assert on
# the rank, a branch on a size, x.numel() and x.dtype in a factory.
class SizeBranch(torch.nn.Module):
    def forward(self, x):
        assert x.dim() >= 2, "needs a batch and features"
        if x.size(1) > 2:
            y = x * 2.0
        else:
            y = x + 1.0
        n = x.numel() // x.size(0)
        return y.reshape(x.size(0), n) + torch.ones(n, dtype=x.dtype)


for _kind in ("prim::If", "aten::dim", "aten::numel", "prim::dtype"):
    for _shape, _label in (((2, 3, 5, 7), "rank4"), ((3, 2), "rank2-else")):
        add(Sample(_kind, SizeBranch, [In(_shape)], _label, script=True, flex=False))


# --------------------------------------------- int32 and bool data (int_ columns)
# NeuralNetworks.h: STRIDED_SLICE takes no TENSOR_INT32, SLICE (every step 1)
# and GATHER (a step, a flip) do from feature level 3; ADD, SUB and MUL of
# TENSOR_INT32 from level 4 (--min-android-api 30); RESHAPE from level 6
# (--min-android-api 33); comparisons take TENSOR_INT32 and give
# TENSOR_BOOL8, SELECT takes both (level 3). bool inputs move as int32.
_I4 = (2, 5, 4, 6)
_INT = dict(low=-2 ** 30, high=2 ** 30)


def _int4(shape=_I4, **kw):
    return In(shape, "int32", **dict(_INT, **kw))


for _f, _label in ((lambda m: m[:, 1:3], "dim1"), (lambda m: m[:, :, 2:, :-1], "hw"),
                   (lambda m: m[:, ::2], "dim1-step2"), (lambda m: m[:, :, :, 1::3], "dim3-step3"),
                   (lambda m: m[..., -3:], "neg-start")):
    add(Sample("aten::slice", fn(lambda m, f=_f: f(m)), [_int4()], "int32-" + _label, flexhw=True))
add(Sample("aten::slice", fn(lambda m: m[1:, -3:]), [In((3, 5), "int32", **_INT)], "int32-batch", flex=False))
add(Sample("aten::slice", fn(lambda m: m[:, 1:]), [In((3, 5), "bool")], "bool"))
add(Sample("aten::flip", fn(lambda m: m.flip(1)), [_int4()], "int32", flexhw=True))
add(Sample("aten::narrow", fn(lambda m: m.narrow(1, 1, 3)), [_int4()], "int32"))
add(Sample("aten::cat", fn(lambda m, n: torch.cat([m, n], 1)), [_int4(), _int4()], "int32", flexhw=True))
add(Sample("aten::chunk", fn(lambda m: m.chunk(2, 1)[1]), [_int4()], "int32"))
add(Sample("aten::permute", fn(lambda m: m.permute(0, 2, 3, 1)), [_int4()], "int32"))
# Bools joined and reordered move as float32 between CASTs (CONCATENATION and
# TRANSPOSE take no TENSOR_INT32); int32 numbers are refused (above).
add(Sample("aten::cat", fn(lambda m, n: torch.cat([m, n], 1)), [In((2, 3, 5, 7), "bool")] * 2,
           "bool", flexhw=True))
add(Sample("aten::stack", fn(lambda m: torch.stack([m, m.logical_not()], 1)), [In((3, 5), "bool")],
           "bool"))
add(Sample("aten::permute", fn(lambda m: m.permute(0, 2, 3, 1)), [In((2, 3, 5, 7), "bool")], "bool"))
add(Sample("aten::transpose", fn(lambda m: m.transpose(1, 2)), [In((2, 3, 5, 7), "bool")], "bool"))
add(Sample("aten::t", fn(lambda m: m.t()), [In((3, 5), "bool")], "bool"))
add(Sample("aten::view", fn(lambda m: m.view(m.size(0), -1)), [_int4()], "int32", extra_forms=("api33",)))
# Bools moved by the viewing, reshaping, slicing and tiling kinds, from a bool
# input (int32 0/1) and from a comparison (TENSOR_BOOL8, which no NNAPI
# operation that moves data takes: held as int32 0/1 first). Where the
# operation takes no TENSOR_INT32 at the target level (RESHAPE below level 6,
# SQUEEZE and STRIDED_SLICE at none) they move as float32 between CASTs.
_BOOL_MOVES = (
    ("aten::view", lambda m: m.view(m.size(0), -1)),
    ("aten::reshape", lambda m: m.reshape(m.size(0), 2, -1)),
    ("aten::flatten", lambda m: m.flatten(1)),
    ("aten::unsqueeze", lambda m: m.unsqueeze(1)),
    ("aten::squeeze", lambda m: m[:, :1].squeeze(1)),
    ("aten::slice", lambda m: m[:, :, 1:, ::2]),
    ("aten::select", lambda m: m[:, 2]),
    ("aten::narrow", lambda m: m.narrow(1, 1, 3)),
    ("aten::flip", lambda m: m.flip(1)),
    ("aten::expand", lambda m: m[:, :1].expand(-1, 3, -1)),
    ("aten::repeat", lambda m: m.repeat(1, 2, 1)),
)
for _kind, _f in _BOOL_MOVES:
    _shape = (2, 5, 6) if _kind in ("aten::expand", "aten::repeat", "aten::unsqueeze") else _I4
    add(Sample(_kind, fn(lambda m, f=_f: f(m)), [In(_shape, "bool")], "bool-moved",
               extra_forms=("api30", "api33")))
    add(Sample(_kind, fn(lambda n, f=_f: f(n > 0)), [In(_shape, "int32", **_INT)], "bool-compared",
               extra_forms=("api30", "api33")))
for _kind, _f in (("aten::add", lambda m: m + 3), ("aten::sub", lambda m: m - 7),
                  ("aten::mul", lambda m: m * -3), ("aten::add", lambda m, n: m + n),
                  ("aten::mul", lambda m, n: m * n), ("aten::sub", lambda m, n: m - n)):
    _n = _f.__code__.co_argcount
    add(Sample(_kind, fn(_f), [_int4(low=-1000, high=1000)] + [In((1, 5, 1, 1), "int32", -50, 50)] * (_n - 1),
               "int32-" + ("number" if _n == 1 else "tensors"), extra_forms=("api30",)))
for _kind, _f in _CMP.items():
    add(Sample(_kind, fn(lambda x, y, f=_f: f(x, y)), [In(_I4, "int32", **_HALVES),
                                                      In((1, 5, 1, 1), "int32", **_HALVES)],
               "int32-rank4", flexhw=True))
add(Sample("aten::where", fn(lambda m, x, y: torch.where(m, x, y)),
           [In(_I4, "bool"), _int4(), In((1, 5, 1, 1), "int32", **_INT)], "int32-bool-rank4", flexhw=True))
add(Sample("aten::where", fn(lambda x, y: torch.where(x > y, x * 2.0, 0.5)),
           [In(_I4, "int32", **_HALVES), In(_I4, "int32", **_HALVES)], "int32-compared"))
add(Sample("aten::logical_and", fn(lambda m, n: torch.logical_and(m, n)),
           [In(_I4, "bool"), In(_I4, "bool")], "bool-rank4", flexhw=True))


# ------------------------------------------- rows the audit found missing
# Quantized data movement (PyTorch moves quint8 tensors with the same ops; no
# arithmetic: eager has no quantized add of a number; no quantized roll).
_QMOVES = (
    ("aten::chunk", lambda x: x.chunk(2, 1)[1], (2, 4, 5, 7)),
    ("aten::split", lambda x: x.split(2, 2)[1], (2, 3, 5, 7)),
    ("aten::split_with_sizes", lambda x: x.split([1, 4], 2)[1], (2, 3, 5, 7)),
    ("aten::unbind", lambda x: x.unbind(1)[2], (2, 3, 5, 7)),
    ("aten::expand", lambda x: x.expand(-1, 3, -1, 7), (2, 1, 5, 1)),
    ("aten::contiguous", lambda x: x.permute(0, 2, 3, 1).contiguous(), (2, 3, 5, 7)),
    ("prim::ListUnpack", lambda x: torch.cat(x.chunk(3, 1)[::2], 1), (2, 6, 5, 7)))
for _kind, _f, _shape in _QMOVES:
    add(Sample(_kind, fn(_f), [In(_shape)], "rank4-quant-move", qmake=True))
add(Sample("aten::expand_as", fn(lambda x, y: x.expand_as(y)), [In((2, 1, 5, 1)), In((2, 3, 5, 7))],
           "rank4-quant-move", qmake=True))
# NHWC: 4-D operands of kinds whose samples were 2-D or 3-D.
add(Sample("aten::masked_fill", fn(lambda x, y: x.masked_fill(y > 0.5, -1.5)), [In((2, 3, 5, 7)), In((1, 3, 1, 7))],
           "rank4-computed-mask"))
add(Sample("aten::masked_fill", fn(lambda x, m: x.masked_fill(m, 2.0)), [In((2, 3, 5, 7)), In((2, 3, 5, 7), "bool")],
           "rank4-bool-input"))
add(Sample("aten::__or__", fn(lambda x, y: (x > 0) | (y > 0)), [In((2, 3, 5, 7)), In((1, 3, 1, 1))], "rank4-bools"))
add(Sample("aten::__xor__", fn(lambda x, y: (x > 0) ^ (y > 0)), [In((2, 3, 5, 7)), In((2, 3, 5, 7))], "rank4-bools"))
add(Sample("aten::alpha_dropout", fn(lambda x: F.alpha_dropout(x, 0.3, False) + 1), [In((2, 3, 5, 7))], "rank4-eval"))
add(Sample("aten::type_as", fn(lambda m, x: torch.relu(x).type_as(m.like), like=torch.zeros(1)), [In((2, 3, 5, 7))],
           "rank4"))
# A flexible batch: the recurrent state made inside the model, dynamically
# quantized LSTM, the scripted size checks (refused where a size must be fixed).
add(Sample("aten::zeros", lambda: _LSTMZeros(), [In((2, 5, 4))], "lstm-zeros-state-flex", forms=["flex"]))
add(Sample("aten::quantized_lstm",
           lambda: _OnGrid(_dynamic(torch.nn.Sequential(torch.nn.LSTM(4, 6, batch_first=True)))),
           [In((2, 1, 4))], "one-step-flex", forms=["flex"]))
for _kind in ("prim::If", "aten::dim", "aten::numel", "prim::dtype"):
    add(Sample(_kind, SizeBranch, [In((2, 3, 5, 7))], "rank4-flex", script=True, forms=["flex", "flex_nhwc"]))


class SizeBranchFlex(torch.nn.Module):
    """SizeBranch's checks on the fixed dims of a flexible batch."""

    def forward(self, x):
        assert x.dim() == 4, "needs NCHW"
        if x.size(1) > 2:
            y = x * 2.0
        else:
            y = x + 1.0
        return y + torch.ones(x.size(3), dtype=x.dtype) * float(x[0].numel())


for _kind in ("prim::If", "aten::dim", "aten::numel", "prim::dtype"):
    add(Sample(_kind, SizeBranchFlex, [In((2, 3, 5, 7))], "rank4-fixed-dims", script=True))


def _flexhw_for_every_kind():
    """A flexible height and width for every kind with a 4-D sample: where no
    sample of a kind is marked flexhw=True, its first sample with a spatial
    input gets the flexhw forms (a refusal naming the node is a clean
    outcome: a size NNAPI must know, a window that depends on it)."""
    marked = {s.kind for s in SAMPLES if s.flexhw}
    for s in SAMPLES:
        if s.kind in marked or not any(i.spatial for i in s.inputs) or s.forms != s.default_forms():
            continue
        s.flexhw = True
        s.forms = s.default_forms()
        marked.add(s.kind)


_flexhw_for_every_kind()


# Quantized rows of kinds PyTorch has a quantized kernel for (eager runs them
# on quint8 tensors: masked_fill, reflection padding, the 1-D pools, stack, t).
add(Sample("aten::masked_fill", fn(lambda x, m: x.masked_fill(m, 0.5)), [In((2, 3, 5, 7)), In((2, 3, 5, 7), "bool")],
           "rank4-quant", qmake=True))
add(Sample("aten::reflection_pad1d", fn(lambda x: torch.ops.aten.reflection_pad1d(x, (2, 1))), [In((2, 3, 7))],
           "rank3-quant", qmake=True))
add(Sample("aten::reflection_pad2d", fn(lambda x: torch.ops.aten.reflection_pad2d(x, (1, 2, 2, 1))),
           [In((2, 3, 5, 7))], "rank4-quant", qmake=True))
add(Sample("aten::max_pool1d", fn(lambda x: F.max_pool1d(x, 3, 2)), [In((2, 3, 9))], "k3s2-quant", qmake=True))
add(Sample("aten::avg_pool1d", fn(lambda x: F.avg_pool1d(x, 2)), [In((2, 3, 8))], "k2-quant", qmake=True))
add(Sample("aten::adaptive_avg_pool1d", fn(lambda x: F.adaptive_avg_pool1d(x, 1)), [In((2, 3, 8))], "global-quant",
           qmake=True))
add(Sample("aten::stack", fn(lambda x, y: torch.stack([x, y], 1)), [In((3, 5)), In((3, 5))], "rank2-quant",
           qmake=True))
add(Sample("aten::t", fn(lambda x: x.t()), [In((3, 5))], "rank2-quant", qmake=True, forms=["quant"]))
# Kinds that pass a quint8 tensor on (identities in eval, a size read), then
# a flatten so that the output is no model input.
for _kind, _f in (("aten::alpha_dropout", lambda x: F.alpha_dropout(x, 0.3, False).flatten(1)),
                  ("aten::feature_alpha_dropout", lambda x: F.feature_alpha_dropout(x, 0.3, False).flatten(1)),
                  ("aten::type_as", lambda x: x.type_as(x).flatten(1)),
                  ("aten::to", lambda x: x.to(torch.quint8).flatten(1)),
                  ("aten::size", lambda x: x.view(x.size(0), x.size(1) * x.size(2), -1))):
    add(Sample(_kind, fn(_f), [In((2, 3, 5, 7))], "rank4-quant", qmake=True,
               forms=["quant", "quant_nhwc", "quant_flex"]))
# A slice from a negative start over a flexible width: refused, naming the
# node (beyond-flexhw-slice-negative-start); it was converted as the identity.
add(Sample("aten::slice", fn(lambda x: x[..., -3:] * 2), [In((2, 3, 5, 7))], "neg-start-last", flexhw=True))


# ------------------------ issue 33 item 6: node kinds of published scripted files
# log1p (Goldberg's formula: small x keep their bits) over the unary ranks,
# and of x * 1e-6 scaled back (LOG(1 + x) would be up to 0.06 off).
unary("aten::log1p", torch.log1p, positive=True)
unary("aten::log1p", lambda x: torch.log1p(x * 1e-6) * 1e6, labels=("rank4", "rank2"), tag="-x1e-6")


class _StftMagnitude(torch.nn.Module):
    """torch.stft as Silero's v2 models take it: center=True (reflect padding
    in TorchScript), a hann window shorter than n_fft, the magnitude from
    return_complex=False's real pairs."""

    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(24))

    def forward(self, x):
        s = torch.stft(x, 32, 8, 24, self.window, center=True, return_complex=False)
        return torch.sqrt(s[..., 0] ** 2 + s[..., 1] ** 2)


class _StftComplex(torch.nn.Module):
    """Tensor.stft (aten::stft.center) with a complex result read by abs()
    and view_as_real()."""

    def forward(self, x):
        s = x.stft(16, 5, pad_mode="replicate", normalized=True, return_complex=True)
        return s.abs(), torch.view_as_real(s) * 2


add(Sample("aten::stft", _StftMagnitude, [In((2, 300))], "silero-magnitude", script=True))
add(Sample("aten::stft", _StftMagnitude, [In((300,))], "rank1", script=True, flex=False))
for _kind in ("aten::stft", "aten::view_as_real"):
    add(Sample(_kind, _StftComplex, [In((3, 90))], "complex-abs-view-as-real", script=True))


for _kind in ("prim::TupleIndex", "prim::TupleUnpack"):
    add(Sample(_kind, TupleOutOfIfModule, [In((2, 3, 5, 7))], "rank4", script=True))
    add(Sample(_kind, TupleOutOfIfModule, [In((3, 5))], "rank2", script=True))


add(Sample("aten::_set_item", SetSizeItemModule, [In((2, 3, 4, 5))], "rank4", script=True))
add(Sample("aten::_set_item", SetSizeItemModule, [In((3, 4, 5))], "rank3", script=True))


class _CastData(torch.nn.Module):
    """torch._cast_Float / _cast_Long of a mask, of float32 data, and x.data."""

    def forward(self, x):
        m = x.data > 0.5
        return torch._cast_Float(m) * x, torch._cast_Long(m), torch._cast_Float(x) - 1


for _kind in ("aten::_cast_Float", "aten::_cast_Long", "prim::data"):
    add(Sample(_kind, _CastData, [In((2, 3, 5, 7))], "rank4", script=True))
    add(Sample(_kind, _CastData, [In((3, 5))], "rank2", script=True))


def _add_optional(x: torch.Tensor, b: Optional[torch.Tensor]) -> torch.Tensor:
    if b is not None:
        return x + b
    return x


class _ScriptedChecks(torch.nn.Module):
    """A scripted model's checks, decided during conversion: is_floating_point,
    x.device, an Optional made in a branch and refined (`is not None`,
    unchecked_cast after an assert), `is None` of a computed tensor,
    list(x.shape)."""

    def forward(self, x):
        if not x.is_floating_point():
            raise ValueError("expected a float tensor")
        ones = torch.ones(x.size(-1), device=x.device, dtype=x.dtype)
        b: Optional[torch.Tensor] = None
        if x.size(1) == 3:
            b = ones
        y = _add_optional(x, b)
        c: Optional[torch.Tensor] = torch.relu(y) if x.dim() > 2 else None
        if c is None:
            y = y * 2
        d: Optional[torch.Tensor] = y if x.size(1) > 0 else None
        assert d is not None
        shape = list(d.shape)
        return d.reshape(shape[0], -1)


# (prim::unchecked_cast is in these graphs too, inside the branches: known.NO_ROW)
for _kind in ("aten::is_floating_point", "prim::device", "aten::__isnot__", "aten::__is__",
              "aten::list"):
    add(Sample(_kind, _ScriptedChecks, [In((2, 3, 5, 7))], "rank4", script=True))
    add(Sample(_kind, _ScriptedChecks, [In((3, 5))], "rank2-else", script=True))

# --------------------------------------------- quantized forms of FX and eager
# (issue 34 item 5) Eager quantized modules where PyTorch has them, the
# operators FX emits otherwise (torch.ops.quantized.*, traced).
add(Sample("quantized::linear_relu", None, [In((3, 8))], "rank2",
           qmake=qmodule(lambda: torch.ao.nn.intrinsic.LinearReLU(seeded(torch.nn.Linear(8, 5)), torch.nn.ReLU()),
                         [In((3, 8))])))
add(Sample("quantized::linear_relu", None, [In((2, 3, 8))], "rank3-perchannel",
           qmake=qmodule(lambda: torch.ao.nn.intrinsic.LinearReLU(seeded(torch.nn.Linear(8, 5)), torch.nn.ReLU()),
                         [In((2, 3, 8))], "fbgemm")))
add(Sample("quantized::conv_transpose1d", None, [In((2, 3, 9))], "s2",
           qmake=qmodule(lambda: seeded(torch.nn.ConvTranspose1d(3, 2, 4, stride=2, padding=1)),
                         [In((2, 3, 9))])))
for _label in ("same4", "bcast4", "rank3"):
    _a, _b = BINARY_SHAPES[_label]
    add(Sample("quantized::mul_relu", None, [In(_a), In(_b)], _label,
               qmake=fn(lambda a, b: torch.ops.quantized.mul_relu(a, b, 0.2, 100))))
# A tensor and a number: eager's QFunctional add_scalar/mul_scalar (and the
# relu forms), FX's quantized::add.Scalar/mul.Scalar (and add_relu/mul_relu);
# positive and negative numbers, one that pushes the range past quint8's.
for _c, _clabel in ((0.37, "pos"), (-0.45, "neg"), (9.0, "saturating")):
    for _kind in ("add_scalar", "add_scalar_relu", "mul_scalar", "mul_scalar_relu"):
        for _label in ("rank4", "rank2"):
            add(Sample(f"quantized::{_kind}", None, [In(RANKS[_label])], f"{_label}-{_clabel}",
                       qmake=fn(lambda x, k=_kind, c=_c: getattr(torch.ops.quantized, k)(x, c))))
    for _kind in ("add", "add_relu", "mul", "mul_relu"):
        add(Sample(f"quantized::{_kind}", None, [In(RANKS["rank4"])], f"scalar-{_clabel}",
                   qmake=fn(lambda x, k=_kind, c=_c: getattr(torch.ops.quantized, k)(x, c))))
add(Sample("quantized::add", None, [In(RANKS["rank2"])], "scalar-first",
           qmake=fn(lambda x: torch.ops.quantized.add(0.6, x))))


def _qparam(t):
    return torch.nn.Parameter(t, requires_grad=False)


def _qnorm_params(c, seed=3):
    g = torch.Generator().manual_seed(seed)
    return dict(w=torch.rand(c, generator=g) + 0.5, b=torch.randn(c, generator=g) * 0.3,
                mean=torch.randn(c, generator=g) * 0.2, var=torch.rand(c, generator=g) + 0.5)


for _kind, _shape, _label in (("batch_norm2d", (2, 3, 5, 7), "rank4"),
                              ("batch_norm", (2, 3, 5, 7), "rank4"),
                              ("batch_norm1d", (2, 3, 7), "rank3"),
                              ("batch_norm1d", (4, 3), "rank2")):
    for _relu in ("", "_relu"):
        add(Sample(f"quantized::{_kind}{_relu}", None, [In(_shape)], _label,
                   qmake=fn(lambda s, x, k=_kind + _relu: getattr(torch.ops.quantized, k)(
                       x, s.w, s.b, s.mean, s.var, 1e-5, 0.07, 110), **_qnorm_params(3))))
add(Sample("quantized::batch_norm2d", None, [In((2, 3, 5, 7))], "module",
           qmake=qmodule(lambda: seeded(torch.nn.BatchNorm2d(3)), [In((2, 3, 5, 7))])))
add(Sample("quantized::layer_norm", None, [In((2, 3, 8))], "rank3",
           qmake=lambda: torch.ao.nn.quantized.LayerNorm(
               [8], _qparam(torch.rand(8) + 0.5), _qparam(torch.randn(8) * 0.2), 0.05, 128).eval()))
add(Sample("quantized::layer_norm", None, [In((2, 3, 5, 7))], "rank4-last2",
           qmake=lambda: torch.ao.nn.quantized.LayerNorm(
               [5, 7], _qparam(torch.rand(5, 7) + 0.5), _qparam(torch.randn(5, 7) * 0.2), 0.05, 128).eval()))
add(Sample("quantized::group_norm", None, [In((2, 4, 5, 7))], "rank4",
           qmake=lambda: torch.ao.nn.quantized.GroupNorm(
               2, 4, _qparam(torch.rand(4) + 0.5), _qparam(torch.randn(4) * 0.2), 0.05, 128).eval()))
add(Sample("quantized::instance_norm", None, [In((2, 3, 5, 7))], "rank4",
           qmake=lambda: torch.ao.nn.quantized.InstanceNorm2d(
               3, _qparam(torch.rand(3) + 0.5), _qparam(torch.randn(3) * 0.2), 0.05, 128, affine=True).eval()))
add(Sample("quantized::instance_norm", None, [In((2, 3, 7))], "rank3",
           qmake=lambda: torch.ao.nn.quantized.InstanceNorm1d(
               3, _qparam(torch.rand(3) + 0.5), _qparam(torch.randn(3) * 0.2), 0.05, 128, affine=True).eval()))
for _slope, _label in ((0.1, "rank4"), (-0.5, "rank4-negative"), (0.0, "rank4-zero")):
    add(Sample("quantized::leaky_relu", None, [In((2, 3, 5, 7))], _label,
               qmake=lambda s=_slope: torch.ao.nn.quantized.LeakyReLU(0.03, 90, s).eval()))
add(Sample("quantized::cat_relu", None, [In((2, 3, 5, 7)), In((2, 2, 5, 7))], "dim1",
           qmake=fn(lambda a, b: torch.ops.quantized.cat_relu([a, b], 1, 0.05, 10))))
add(Sample("quantized::cat_relu", None, [In((2, 3, 5, 7)), In((2, 3, 2, 7))], "dim-2-first-params",
           qmake=fn(lambda a, b: torch.ops.quantized.cat_relu([a, b], -2, None, None))))
add(Sample("quantized::matmul", None, [In((2, 5, 8)), In((2, 8, 4))], "rank3",
           qmake=fn(lambda a, b: torch.ops.quantized.matmul(a, b, 0.3, 120))))
add(Sample("quantized::matmul", None, [In((5, 8)), In((8, 4), batched=False)], "rank2",
           qmake=fn(lambda a, b: torch.ops.quantized.matmul(a, b, 0.3, 120))))


def _quantized_embedding_bag(mode):
    bag = seeded(torch.nn.EmbeddingBag(10, 6, mode=mode), scale=1.0)
    bag.qconfig = torch.ao.quantization.float_qparams_weight_only_qconfig
    model = torch.nn.Sequential(bag).eval()
    torch.ao.quantization.prepare(model, inplace=True)
    return torch.ao.quantization.convert(model, inplace=True)


for _mode in ("sum", "mean", "max"):
    add(Sample("quantized::embedding_bag_byte", lambda m=_mode: _quantized_embedding_bag(m),
               [In((3, 5), "int32", 0, 10)], f"bags-{_mode}"))

# ------------------------------------------ rank-5 attention views (issue 34)
# Heads as a rank-5 view, as timm's ViT attention writes them: `qkv.reshape(B,
# N, 3, H, D).permute(2, 0, 3, 1, 4)`, then unbind(0) or qkv[0], qkv[1],
# qkv[2]; from tokens (B, N, 3C) and, with NHWC forms, from MaxViT's 4-D
# window tensor (B, G, P, 3C) as (3, B, G, P, C). The rank-5 permute, unbind,
# select, softmax and einsum are rank <= 4 operations (src/lower/rank_reduce.cpp).
def _qkv_heads(x, heads=2):
    if x.dim() == 3:  # tokens (B, N, 3C) -> (3, B, H, N, D)
        B, N, C3 = x.shape
        return x.reshape(B, N, 3, heads, C3 // (3 * heads)).permute(2, 0, 3, 1, 4)
    B, G, P, C3 = x.shape  # windows (B, G, P, 3C) -> (3, B, G, P, C)
    return x.reshape(B, G, P, 3, C3 // 3).permute(3, 0, 1, 2, 4)


for _shape, _label in (((2, 5, 24), "qkv-tokens"), ((2, 3, 4, 24), "qkv-windows")):
    add(Sample("aten::unbind", fn(lambda x: _qkv_heads(x).unbind(0)), [In(_shape)], _label,
               qmake=True))
    add(Sample("aten::select", fn(lambda x: (lambda q: (q[0], q[1], q[2]))(_qkv_heads(x))),
               [In(_shape)], _label, qmake=True))
    add(Sample("aten::softmax", fn(lambda x: torch.softmax(_qkv_heads(x), -1)), [In(_shape)],
               _label + "-dim-1"))
    add(Sample("aten::log_softmax", fn(lambda x: torch.log_softmax(_qkv_heads(x), 2)), [In(_shape)],
               _label + "-dim2"))
# MaxViT's attention: q, k of (B, G, P, C) as (B, G, H, P, D) and their rank-5
# einsum, softmax and einsum with v (an einsum over a flexible batch letter is
# refused: fixed batch only).
add(Sample("aten::einsum", fn(lambda q, k: torch.einsum(
    "bghid,bghjd->bghij", q.reshape(2, 3, 4, 2, 5).permute(0, 1, 3, 2, 4),
    k.reshape(2, 3, 4, 2, 5).permute(0, 1, 3, 2, 4)).softmax(-1)),
    [In((2, 3, 4, 10)), In((2, 3, 4, 10))], "rank5-permuted", flex=False))
# FX's form: the quint8 permute dequantized at rank 5 before its selects.
for _shape, _label in (((2, 5, 24), "qkv-tokens"), ((2, 3, 4, 24), "qkv-windows")):
    add(Sample("aten::dequantize", None, [In(_shape)], _label,
               qmake=fn(lambda x: (lambda q: (q[0], q[1], q[2]))(_qkv_heads(x).dequantize())),
               quantum=IN_SCALE))

# --------------------------------------------------- addcmul, addcdiv (issue 34)
# self + value * t1 * t2 and self + value * t1 / t2, broadcasting all three;
# ResMLP's Affine form (self and tensor1 parameters). Float only: PyTorch has
# no quantized addcmul/addcdiv.
for _label in ("same4", "bcast4", "bcast4r", "rank3", "bcast2", "rank1"):
    _a, _b = BINARY_SHAPES[_label]
    add(Sample("aten::addcmul", fn(lambda x, y: torch.addcmul(x, y, x, value=0.5)),
               [In(_a), In(_b)], _label, flexhw=_label in ("same4", "bcast4")))
    add(Sample("aten::addcdiv", fn(lambda x, y: torch.addcdiv(y, x, y.abs() + 0.5, value=-1.5)),
               [In(_a), In(_b)], _label, flexhw=_label in ("same4", "bcast4")))
add(Sample("aten::addcmul", fn(lambda m, x: torch.addcmul(m.b, m.a, x), a=torch.randn(7),
                               b=torch.randn(7)), [In((2, 5, 7))], "affine"))
add(Sample("aten::addcdiv", fn(lambda m, x: torch.addcdiv(x, m.a, m.b), a=torch.randn(3, 1, 1),
                               b=torch.rand(3, 1, 1) + 0.5), [In((2, 3, 5, 7))], "const"))


# ------------------------------------------------------ norms (issue 34)
# Vector norms p = 2, 1, +-inf over given dims (keepdim both ways) and over
# every element, Frobenius; float only (PyTorch has no quantized norm).
for _label, _f in (
        ("p2-hw-keep", lambda x: x.norm(p=2, dim=(-2, -1), keepdim=True)),
        ("p1-dim1", lambda x: x.norm(p=1, dim=1)),
        ("inf-last", lambda x: x.norm(p=float("inf"), dim=-1, keepdim=True)),
        ("ninf-dim0", lambda x: x.norm(p=float("-inf"), dim=0)),
        ("all", lambda x: x.norm(p=2))):
    for _shape in ((2, 3, 5, 7), (3, 5), (2, 3, 5)):
        add(Sample("aten::norm", fn(_f), [In(_shape)], f"{_label}-rank{len(_shape)}",
                   flex="dim0" not in _label and "all" not in _label))
for _shape in ((2, 3, 5, 7), (2, 3, 5)):
    add(Sample("aten::frobenius_norm", fn(lambda x: torch.norm(x, dim=(1, 2), keepdim=True)),
               [In(_shape)], f"rank{len(_shape)}"))
    add(Sample("aten::linalg_vector_norm", fn(lambda x: torch.linalg.vector_norm(x, 1, dim=(1,))),
               [In(_shape)], f"rank{len(_shape)}"))
    add(Sample("aten::linalg_norm", fn(lambda x: torch.linalg.norm(x, dim=-1)),
               [In(_shape)], f"rank{len(_shape)}"))


# ----------------------------- in-place writes of computed tensors (issue 34)
# Writes RemoveTensorMutation leaves (the tensor read before the write; a
# slice of a dead base written), made functional by the loader.
def _inplace_chain(x):
    y = x * 2
    s = y.mul_(y.sigmoid())
    z = s + 1
    s.add_(3.0).clamp_(0.0, 6.0).div_(6.0).sub_(z * 0.1)
    return s, z


def _inplace_slice(x):
    out = torch.cat([x, x * 2], 1)[:, :4]
    return out.mul_(torch.sigmoid(x.mean(1, keepdim=True)))


for _kind in ("aten::mul_", "aten::add_", "aten::clamp_", "aten::div_", "aten::sub_"):
    for _shape in ((2, 3, 5, 7), (2, 3, 5)):
        add(Sample(_kind, fn(_inplace_chain), [In(_shape)], f"chain-rank{len(_shape)}"))
add(Sample("aten::mul_", fn(_inplace_slice), [In((2, 3, 5, 7))], "slice-of-cat"))


# ------------------------------- factories of sizes read from the input (issue 34)
# Folded at fixed sizes; a constant TILEd to the size at flexible ones.
_FACTORIES = {
    "aten::zeros": lambda x: x + torch.zeros(x.shape),
    "aten::ones": lambda x: x * torch.ones(x.shape[0], *([1] * (x.dim() - 1))),
    "aten::full": lambda x: x - torch.full(x.shape[:1] + (1,) * (x.dim() - 2) + x.shape[-1:], 0.5),
    "aten::new_zeros": lambda x: x.new_zeros(x.shape) - x,
    "aten::new_ones": lambda x: x.new_ones(x.shape) + x,
    "aten::new_full": lambda x: x * x.new_full(x.shape, -2.0),
    "aten::ones_like": lambda x: torch.ones_like(x) - x,
    "aten::full_like": lambda x: torch.full_like(x, 1.5) * x,
}
for _kind, _f in _FACTORIES.items():
    for _shape in ((2, 3, 5, 7), (2, 3, 5), (3, 5)):
        add(Sample(_kind, fn(_f), [In(_shape)], f"rank{len(_shape)}", flexhw=len(_shape) == 4))

# ------------------------------------------------- bicubic upsampling (issue 34)
for _size, _scale, _ac, _label in (((7, 9), None, False, "size"), ((3, 11), None, True, "size-ac"),
                                   (None, 1.5, False, "scale"), (None, (2, 0.75), True, "scale-ac")):
    add(Sample("aten::upsample_bicubic2d",
               fn(lambda x, s=_size, k=_scale, a=_ac: F.interpolate(
                   x, size=s, scale_factor=k, mode="bicubic", align_corners=a)),
               [In((2, 3, 5, 6))], _label))

# ------------------------------------------------------ nn.RNN (issue 34)
for _nl in ("tanh", "relu"):
    _kind = f"aten::rnn_{_nl}"
    add(Sample(_kind, lambda n=_nl: _RNN(torch.nn.RNN(4, 6, nonlinearity=n, batch_first=True)),
               [In((2, 5, 4))], "batch-first", flex=False))
    add(Sample(_kind, lambda n=_nl: _RNN(torch.nn.RNN(4, 6, nonlinearity=n, num_layers=2)),
               [In((5, 2, 4))], "2-layers", flex=False))
    add(Sample(_kind, lambda n=_nl: _RNN(torch.nn.RNN(4, 3, nonlinearity=n, bidirectional=True)),
               [In((5, 2, 4))], "bidirectional", flex=False))

"""What a matrix row is made of: a Sample (one small module, its inputs and
the forms it is converted in) and the forms themselves.

A Sample is one model: `make()` returns the module (float, or quantized for
the quantized forms), `inputs` describe its tensor inputs, `forms` the
conversions it gets. The forms are:

    nchw        the inputs as given, no layout option
    nhwc        --nhwc (only where an input is 4-D); inputs run channels-last
    flex        a flexible batch: `0` as dimension 0 of each batched input,
                run at FLEX_BATCHES
    flex_nhwc   both
    flexhw      a flexible height and width: `0` as dimensions 2 and 3 of each
                spatial input (4-D, at the first 4-D input's height and width),
                the batch fixed; run at the sample's size and FLEXHW_GROWTH more
                (only samples marked flexhw=True)
    flexhw_nhwc both
    quant_flexhw quint8 inputs with a flexible height and width
    quant       quint8 inputs (a quantized module)
    quant_nhwc  quint8 inputs and --nhwc
    quant_flex  quint8 inputs with a flexible batch
    fuse        --fuse-activations (NCHW)
    fuse_nhwc   --fuse-activations --nhwc
    api30       --min-android-api 30
    api33       --min-android-api 33
    quant_api30 quint8 inputs and --min-android-api 30
    f16         --float16 (issue 37): the nchw form's module with weights and
                computation as TENSOR_FLOAT16, judged by --verify's float16
                rule (numeric_rules.float16_verdict); a refusal naming the
                node is a clean outcome (an operation NNAPI has no float16
                form of); expected failures: known.FLOAT16
    f16_nhwc    --float16 --nhwc (the nhwc form's)
    f16_flex    --float16 with a flexible batch (the flex form's)

Every sample with a form of FLOAT16_OF also gets its float16 twin, unless
float16=False.
"""
import torch

FORMS = ["nchw", "nhwc", "flex", "flex_nhwc", "flexhw", "flexhw_nhwc", "quant", "quant_nhwc",
         "quant_flex", "quant_flexhw", "fuse", "fuse_nhwc", "api30", "api33", "quant_api30",
         "f16", "f16_nhwc", "f16_flex"]
# The float form each float16 form converts with --float16.
FLOAT16_OF = {"nchw": "f16", "nhwc": "f16_nhwc", "flex": "f16_flex"}
FLEX_BATCHES = (1, 3)
# The second height and width a flexhw form runs at: the sample's plus these
# (an odd and an even step: ceil_mode and stride windows see both parities).
FLEXHW_GROWTH = (3, 4)

# Quantization of quantized inputs: randn inputs fit [-6.4, 6.35].
IN_SCALE, IN_ZP = 0.05, 128


def frozen_kinds(script):
    """The node kinds of a script module's frozen graph, top level, in graph
    order (what the converter's census lists; its own freeze may still differ
    in details)."""
    # optimize_for_mobile's modules are frozen already and have no `training`
    # attribute left, which torch.jit.freeze reads.
    frozen = torch.jit.freeze(script) if hasattr(script, "training") else script
    return list(dict.fromkeys(n.kind() for n in frozen.graph.nodes()))


class In:
    """One tensor input: its shape, dtype and values.

    dtype: "float32", "int32" (integers in [low, high)), "bool" (True with
    probability 0.3) or "quint8" (randn quantized with scale/zero_point).
    batched: whether dimension 0 is the batch a flexible form varies (None:
    decided by Sample: dimension 0 equal to the first input's).
    positive: float values in [0.5, 2.5) (for log, sqrt, rsqrt, pow, div).
    """

    def __init__(self, shape, dtype="float32", low=0, high=8, batched=None, positive=False,
                 scale=IN_SCALE, zero_point=IN_ZP, values=None, spatial=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.low, self.high = low, high
        self.batched = batched
        # spatial: whether dimensions 2 and 3 are the height and width a
        # flexhw form varies (None: decided by Sample).
        self.spatial = spatial
        self.positive = positive
        self.scale, self.zero_point = scale, zero_point
        # a fixed tensor (e.g. a padding mask), used as is (tiled to another
        # batch, height or width)
        self.values = values

    def quantized(self):
        return In(self.shape, "quint8", batched=self.batched, scale=self.scale,
                  zero_point=self.zero_point, positive=self.positive, spatial=self.spatial)

    def make(self, gen, batch=None, hw=None):
        shape = self.shape if batch is None else (batch,) + self.shape[1:]
        if hw is not None:
            shape = shape[:2] + tuple(hw) + shape[4:]
        if self.values is not None:
            t = self.values
            for dim, size in enumerate(shape):
                if size != t.shape[dim]:  # another batch, height or width: tiled
                    reps = [1] * t.dim()
                    reps[dim] = (size + t.shape[dim] - 1) // t.shape[dim]
                    t = t.repeat(reps).narrow(dim, 0, size)
        elif self.dtype == "int32":
            t = torch.randint(self.low, self.high, shape, generator=gen, dtype=torch.int32)
        elif self.dtype == "bool":
            t = torch.rand(shape, generator=gen) < 0.3
        else:
            t = torch.randn(shape, generator=gen)
            if self.positive:
                t = torch.rand(shape, generator=gen) * 2 + 0.5
            if self.dtype == "quint8":
                t = torch.quantize_per_tensor(t, self.scale, self.zero_point, torch.quint8)
        return t.clone()

    def spec(self, flex=False, flexhw=False):
        """The --input spec (layout options are command-line options)."""
        dims = list(self.shape)
        if flex and self.batched:
            dims[0] = 0
        if flexhw and self.spatial:
            dims[2] = dims[3] = 0
        s = "x".join(str(d) for d in dims)
        if self.dtype == "int32":
            s += ",dtype=int32"
        elif self.dtype == "bool":
            s += ",dtype=bool"
        elif self.dtype == "quint8":
            s += f",dtype=quint8,scale={self.scale!r},zero_point={self.zero_point}"
        return s


class Sample:
    """One model of the matrix.

    kind: the lowered node kind this row is for (coverage is credited to
    every lowered kind in the model's frozen graph; this one must be there).
    make: () -> torch.nn.Module, float (forms without "quant").
    qmake: () -> torch.nn.Module taking quint8 inputs (the quant forms);
    True: make() applied to quantized inputs as it is.
    label: the shape form (rank4, bcast, negdim, odd, size1, rank5, ...).
    script: torch.jit.script instead of trace (where tracing loses the kind).
    forms: explicit forms, else the defaults (see default_forms).
    flex: False where dimension 0 cannot vary (a constant reshape).
    flexhw: True where the height and width of its 4-D inputs can vary (the
    flexhw forms; a refusal naming the node is a clean outcome there too).
    video: its 5-D inputs take --nhwc (NHWC frames, src/lower/video.cpp).
    float16: False where the float16 twins of its forms do not apply.
    """

    def __init__(self, kind, make, inputs, label, qmake=None, script=False, forms=None,
                 extra_forms=(), flex=True, qinputs=None, subset=False, quantum=None,
                 must_name=(), source="own", flexhw=False, video=False, engine=None,
                 float16=True):
        self.kind = kind
        # The quantized engine the sample is made, saved and run in eager
        # with (None: qnnpack, as on Android).
        self.engine = engine
        self.source = source  # own, opinfo or moduleinfo
        self.make = make
        self.inputs = [i if isinstance(i, In) else In(i) for i in inputs]
        first = self.inputs[0].shape[:1] if self.inputs and self.inputs[0].shape else None
        for i in self.inputs:
            if i.batched is None:
                i.batched = bool(i.shape) and i.shape[:1] == first
        hw = next((i.shape[2:4] for i in self.inputs if len(i.shape) == 4), None)
        for i in self.inputs:
            if i.spatial is None:
                i.spatial = len(i.shape) == 4 and i.shape[2:4] == hw and hw[0] * hw[1] > 1
        self.video = video
        self.flexhw = flexhw and any(i.spatial for i in self.inputs)
        self.qinputs = qinputs
        self.label = label
        self.qmake = qmake
        self.script = script
        self.flex = flex and bool(self.inputs) and all(
            len(i.shape) >= 1 for i in self.inputs if i.batched)
        self.forms = list(forms) if forms is not None else self.default_forms()
        self.forms += [f for f in extra_forms if f not in self.forms]
        if float16:
            self.forms += [FLOAT16_OF[f] for f in list(self.forms)
                           if f in FLOAT16_OF and FLOAT16_OF[f] not in self.forms]
        self.subset = subset
        # A float output of a quantized form (DEQUANTIZE) is compared in
        # quanta of this scale.
        self.quantum = quantum
        # What a refusal must name besides the kinds no lowering takes (a
        # lowered kind whose arguments NNAPI cannot take, in a larger model).
        self.must_name = list(must_name)

    def has_4d(self):
        """Whether --nhwc applies: a 4-D input (or a 5-D one of a video sample)."""
        return any(len(i.shape) == 4 or (self.video and len(i.shape) == 5) for i in self.inputs)

    def flexhw_sizes(self):
        """The heights and widths a flexhw form runs at."""
        h, w = next(i.shape[2:4] for i in self.inputs if i.spatial)
        return ((h, w), (h + FLEXHW_GROWTH[0], w + FLEXHW_GROWTH[1]))

    def default_forms(self):
        forms = []
        if self.make is not None:
            forms.append("nchw")
            if self.has_4d():
                forms.append("nhwc")
        if self.make is not None and self.flex:
            forms.append("flex")
            if self.has_4d():
                forms.append("flex_nhwc")
        if self.make is not None and self.flexhw:
            forms += ["flexhw", "flexhw_nhwc"]
        if self.qmake is not None:
            forms.append("quant")
            if self.has_4d():
                forms.append("quant_nhwc")
            if self.flex:
                forms.append("quant_flex")
            if self.flexhw:
                forms.append("quant_flexhw")
        return forms

    def quant_inputs(self):
        if self.qinputs is not None:
            return self.qinputs
        return [i.quantized() if i.dtype == "float32" else i for i in self.inputs]

"""Issue 11's model families beyond torchvision, for tools/model_zoo.py --families.

Small but realistic models, written as users write them (nn.Module classes,
standard layers), one or two per family: audio (raw-waveform and spectrogram
CNNs, 1-D pooling), text (embedding, LSTM/GRU, transformer encoder, 1-D
convolutions), sequence taggers (`out[:, -1]`, `h[-1]`), super-resolution
(pixel_shuffle / pixel_unshuffle, upsampling), style transfer (reflection and
replication padding, instance_norm, nearest upsampling, transposed
convolution), group_norm, `pow` and Python-int scalars, adaptive average
pooling to 1x1 over a flexible height and width, and video (3-D convolutions
and pools, issue 20).

FAMILIES maps a name to a Family: how to build the model (randomly initialised
by model_zoo.realistic_init: weights that keep activations alive) and its
inputs. Each input is (shape, vocabulary): float32 `randn` when the vocabulary
is None, else int32 token ids in [0, vocabulary). `flex` gives, per input, the
--input shape of the flexible conversion (0 = flexible) and the shape it is run
at (other inputs than the fixed conversion's); None when the converter needs
fixed sizes (recurrent layers unroll over a fixed sequence and batch).
`flex_options` are added to the flexible conversion's options (e.g. a newer
--min-android-api that a flexible size needs).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Family:
    def __init__(self, make, inputs, flex=None, options=(), flex_options=(), why_fixed=None,
                 post=None, tolerance=None, quantize_video=False):
        self.make = make
        # FX-quantized (fbgemm's qconfig, onednn engine: model_zoo's
        # fx_quantize_video), checked in quanta of its last quantized tensor.
        self.quantize_video = quantize_video
        # Applied to the initialised model (e.g. quantize_dynamic), and the
        # float tolerance (atol in units of max(1, RMS), rtol) when the
        # converted model cannot match eager to issue 3's 1e-3.
        self.post = post
        self.tolerance = tolerance
        self.inputs = inputs  # [(shape, vocab, "mask" (bool padding mask) or None)]
        self.flex = flex  # [(spec shape with 0s, run shape)] or None
        self.options = list(options)
        self.flex_options = list(flex_options)  # more options for the flexible conversion
        self.why_fixed = why_fixed  # why there is no flexible form

    @property
    def four_d(self):
        # (a 5-D video input too: --nhwc lays its NNAPI frames out NHWC)
        return any(len(shape) in (4, 5) and vocab is None for shape, vocab in self.inputs)


def make_inputs(inputs, shapes, seed):
    """One tensor per (shape, vocab) of `inputs`, at `shapes` (default: theirs)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for (shape, vocab), run in zip(inputs, shapes or [s for s, _ in inputs]):
        if vocab is None:
            out.append(torch.randn(*run, generator=g))
        elif vocab == "mask":  # a key padding mask: True after each row's random length
            lengths = torch.randint(1, run[-1] + 1, (run[0], 1), generator=g)
            out.append(torch.arange(run[-1]) >= lengths)
        else:
            out.append(torch.randint(0, vocab, run, generator=g, dtype=torch.int32))
    return tuple(out)


def spec(shape, vocab):
    dtype = "" if vocab is None else ",dtype=bool" if vocab == "mask" else ",dtype=int32"
    return "x".join(map(str, shape)) + dtype


# --- audio -----------------------------------------------------------------

class M5(nn.Module):
    """Keyword spotting on the raw waveform (Dai et al.'s M5, as in torchaudio's
    speech-command tutorial): a wide strided Conv1d, then Conv1d/BN/ReLU/max_pool1d
    stages, a global average over time, a linear layer and log_softmax."""

    def __init__(self, n_input=1, n_output=35, stride=16, n_channel=32):
        super().__init__()
        self.conv1 = nn.Conv1d(n_input, n_channel, kernel_size=80, stride=stride)
        self.bn1 = nn.BatchNorm1d(n_channel)
        self.pool1 = nn.MaxPool1d(4)
        self.conv2 = nn.Conv1d(n_channel, n_channel, kernel_size=3)
        self.bn2 = nn.BatchNorm1d(n_channel)
        self.pool2 = nn.MaxPool1d(4)
        self.conv3 = nn.Conv1d(n_channel, 2 * n_channel, kernel_size=3)
        self.bn3 = nn.BatchNorm1d(2 * n_channel)
        self.pool3 = nn.MaxPool1d(4)
        self.conv4 = nn.Conv1d(2 * n_channel, 2 * n_channel, kernel_size=3)
        self.bn4 = nn.BatchNorm1d(2 * n_channel)
        self.fc1 = nn.Linear(2 * n_channel, n_output)

    def forward(self, x):
        x = self.pool1(F.relu(self.bn1(self.conv1(x))))
        x = self.pool2(F.relu(self.bn2(self.conv2(x))))
        x = self.pool3(F.relu(self.bn3(self.conv3(x))))
        x = F.relu(self.bn4(self.conv4(x)))
        x = F.adaptive_avg_pool1d(x, 1)
        x = x.permute(0, 2, 1)
        x = self.fc1(x)
        return F.log_softmax(x, dim=2)


class AudioTCN(nn.Module):
    """A dilated temporal convolution network over MFCC frames (1-D, padded,
    residual), avg_pool1d between stages, adaptive max and average pooling
    over time concatenated, a linear head."""

    def __init__(self, n_mfcc=40, channels=64, classes=12):
        super().__init__()
        self.inp = nn.Conv1d(n_mfcc, channels, 3, padding=1)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Conv1d(channels, channels, 3, padding=d, dilation=d),
                          nn.BatchNorm1d(channels), nn.ReLU())
            for d in (1, 2, 4))
        self.fc = nn.Linear(2 * channels, classes)

    def forward(self, x):
        x = F.relu(self.inp(x))
        for i, block in enumerate(self.blocks):
            x = x + block(x)
            if i == 0:
                x = F.avg_pool1d(x, 2)
        pooled = torch.cat([F.adaptive_max_pool1d(x, 1), F.adaptive_avg_pool1d(x, 1)], dim=1)
        return self.fc(pooled.flatten(1))


class SpectrogramCNN(nn.Module):
    """A log-mel spectrogram classifier: Conv2d / GroupNorm / ReLU / MaxPool2d
    stages (group_norm: batch-size independent, common for audio), global
    average pooling, dropout, linear."""

    def __init__(self, classes=10):
        super().__init__()

        def stage(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                                 nn.GroupNorm(8, cout), nn.ReLU(inplace=True),
                                 nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                                 nn.GroupNorm(8, cout), nn.ReLU(inplace=True),
                                 nn.MaxPool2d(2))
        self.features = nn.Sequential(stage(1, 16), stage(16, 32), stage(32, 64))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.pool(self.features(x)).flatten(1)
        return self.fc(self.drop(x))


# --- text and sequences ----------------------------------------------------

class BiLSTMClassifier(nn.Module):
    """Text classification: embedding -> bidirectional LSTM -> the last step's
    output `out[:, -1]` -> linear."""

    def __init__(self, vocab=1000, dim=64, hidden=64, classes=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=0)
        self.lstm = nn.LSTM(dim, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, tokens):
        out, _ = self.lstm(self.emb(tokens))
        return self.fc(out[:, -1])


class GRUTagger(nn.Module):
    """Sequence tagging (part-of-speech style): embedding -> 2-layer GRU ->
    a linear layer at every step -> log_softmax over the tags."""

    def __init__(self, vocab=500, dim=32, hidden=48, tags=9):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.gru = nn.GRU(dim, hidden, num_layers=2, batch_first=True)
        self.out = nn.Linear(hidden, tags)

    def forward(self, tokens):
        h, _ = self.gru(self.emb(tokens))
        return F.log_softmax(self.out(h), dim=-1)


class LSTMLastHidden(nn.Module):
    """Sequence classification on feature frames (activity recognition,
    speech features): a 2-layer LSTM, the last layer's final hidden state
    `h[-1]` (a select), a ReLU MLP head."""

    def __init__(self, features=20, hidden=48, classes=6):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, num_layers=2, batch_first=True)
        self.head = nn.Sequential(nn.Linear(hidden, 32), nn.ReLU(), nn.Linear(32, classes))

    def forward(self, x):
        _, (h, _) = self.lstm(x)
        return self.head(h[-1])


def dynamic_quantize(model):
    """torch.ao.quantization.quantize_dynamic (qnnpack, 8-bit) of the Linear
    and LSTM layers: quantized::linear_dynamic and aten::quantized_lstm,
    converted as float operations on the dequantized weights."""
    torch.backends.quantized.engine = "qnnpack"
    return torch.ao.quantization.quantize_dynamic(model, {nn.Linear, nn.LSTM},
                                                  dtype=torch.qint8).eval()


# Eager dynamic quantization rounds every matrix product's input to 8 bits at
# run time; the converted model multiplies the float input. The gap is the
# inputs' rounding (tests/verify/test_dynamic_quant.py measures it).
DYNAMIC_QUANT_TOLERANCE = (0.05, 0.05)


class TextCNN(nn.Module):
    """Kim's CNN for sentence classification: embedding, Conv1d with kernel
    sizes 3, 4, 5 over time, ReLU, max over time (max_pool1d over the whole
    length), concatenation, linear."""

    def __init__(self, vocab=2000, dim=48, filters=32, classes=5, length=24):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.convs = nn.ModuleList(nn.Conv1d(dim, filters, k) for k in (3, 4, 5))
        self.length = length
        self.fc = nn.Linear(3 * filters, classes)

    def forward(self, tokens):
        x = self.emb(tokens).transpose(1, 2)  # (N, dim, L)
        feats = [F.max_pool1d(F.relu(conv(x)), self.length - conv.kernel_size[0] + 1).squeeze(2)
                 for conv in self.convs]
        return self.fc(torch.cat(feats, 1))


class TransformerText(nn.Module):
    """Text classification with nn.TransformerEncoder (batch-first, 2 layers):
    token embedding scaled by sqrt(d), a learned positional embedding added,
    mean over the sequence, linear."""

    def __init__(self, vocab=1000, d=64, heads=4, length=16, classes=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, length, d) * 0.5)
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=128, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.fc = nn.Linear(d, classes)
        self.scale = d ** 0.5

    def forward(self, tokens):
        x = self.emb(tokens) * self.scale + self.pos
        return self.fc(self.encoder(x).mean(dim=1))


class TextEncoderPadding(nn.Module):
    """A BERT-like classifier taking token ids and a key padding mask (True =
    padding): token embedding plus a learned position embedding cut to the
    sequence length, layer norm, a 2-layer batch-first nn.TransformerEncoder
    given src_key_padding_mask (PyTorch 1.13's nested-tensor fast path when
    traced without gradients), the first token's state through a tanh pooler,
    linear."""

    def __init__(self, vocab=1000, d=64, heads=4, max_len=32, classes=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, max_len, d) * 0.5)
        self.norm = nn.LayerNorm(d)
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=128, batch_first=True,
                                           activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.pool = nn.Linear(d, d)
        self.fc = nn.Linear(d, classes)

    def forward(self, tokens, padding_mask):
        x = self.norm(self.emb(tokens) + self.pos[:, :tokens.size(1)])
        h = self.encoder(x, src_key_padding_mask=padding_mask)
        return self.fc(torch.tanh(self.pool(h[:, 0])))


# --- super-resolution and style transfer -----------------------------------

class ESPCN(nn.Module):
    """Shi et al.'s efficient sub-pixel CNN (the PyTorch super-resolution
    example): conv 5x5, tanh, conv 3x3, tanh, conv 3x3 to r^2 channels,
    pixel_shuffle(r)."""

    def __init__(self, upscale=3, channels=1):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 64, 5, padding=2)
        self.conv2 = nn.Conv2d(64, 32, 3, padding=1)
        self.conv3 = nn.Conv2d(32, channels * upscale ** 2, 3, padding=1)
        self.shuffle = nn.PixelShuffle(upscale)

    def forward(self, x):
        x = torch.tanh(self.conv1(x))
        x = torch.tanh(self.conv2(x))
        return self.shuffle(self.conv3(x))


class UnshuffleSR(nn.Module):
    """A light super-resolution / denoising net: pixel_unshuffle(2) to work at
    half resolution, conv blocks with LeakyReLU and a residual, pixel_shuffle(4)
    to twice the input size, plus a nearest-upsampled skip of the input."""

    def __init__(self, channels=3, feats=32):
        super().__init__()
        self.down = nn.PixelUnshuffle(2)
        self.head = nn.Conv2d(channels * 4, feats, 3, padding=1)
        self.body = nn.Sequential(nn.Conv2d(feats, feats, 3, padding=1), nn.LeakyReLU(0.1),
                                  nn.Conv2d(feats, feats, 3, padding=1))
        self.tail = nn.Conv2d(feats, channels * 16, 3, padding=1)
        self.up = nn.PixelShuffle(4)
        self.skip = nn.Upsample(scale_factor=2, mode="nearest")

    def forward(self, x):
        f = F.leaky_relu(self.head(self.down(x)), 0.1)
        f = f + self.body(f)
        return self.up(self.tail(f)) + self.skip(x)


class ConvLayer(nn.Module):
    def __init__(self, cin, cout, k, stride):
        super().__init__()
        self.pad = nn.ReflectionPad2d(k // 2)
        self.conv = nn.Conv2d(cin, cout, k, stride)

    def forward(self, x):
        return self.conv(self.pad(x))


class ResidualBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = ConvLayer(c, c, 3, 1)
        self.in1 = nn.InstanceNorm2d(c, affine=True)
        self.conv2 = ConvLayer(c, c, 3, 1)
        self.in2 = nn.InstanceNorm2d(c, affine=True)

    def forward(self, x):
        y = F.relu(self.in1(self.conv1(x)))
        return x + self.in2(self.conv2(y))


class UpsampleConvLayer(nn.Module):
    """Nearest upsampling then a reflection-padded conv (instead of a
    transposed conv: no checkerboard artifacts)."""

    def __init__(self, cin, cout, k, upsample):
        super().__init__()
        self.upsample = upsample
        self.conv = ConvLayer(cin, cout, k, 1)

    def forward(self, x):
        x = F.interpolate(x, mode="nearest", scale_factor=self.upsample)
        return self.conv(x)


class TransformerNet(nn.Module):
    """Johnson et al.'s fast neural style network as in PyTorch's
    examples/fast_neural_style (narrower): reflection-padded convs with
    instance_norm, two strided downsamplings, residual blocks, nearest
    upsampling; one up-path is a transposed conv with a replication pad."""

    def __init__(self, w=16):
        super().__init__()
        self.conv1 = ConvLayer(3, w, 9, 1)
        self.in1 = nn.InstanceNorm2d(w, affine=True)
        self.conv2 = ConvLayer(w, 2 * w, 3, 2)
        self.in2 = nn.InstanceNorm2d(2 * w, affine=True)
        self.conv3 = ConvLayer(2 * w, 4 * w, 3, 2)
        self.in3 = nn.InstanceNorm2d(4 * w, affine=True)
        self.res = nn.Sequential(*(ResidualBlock(4 * w) for _ in range(3)))
        self.deconv1 = UpsampleConvLayer(4 * w, 2 * w, 3, upsample=2)
        self.in4 = nn.InstanceNorm2d(2 * w, affine=True)
        self.deconv2 = nn.ConvTranspose2d(2 * w, w, 3, stride=2, padding=1, output_padding=1)
        self.in5 = nn.InstanceNorm2d(w, affine=True)
        self.pad = nn.ReplicationPad2d(4)
        self.deconv3 = nn.Conv2d(w, 3, 9)

    def forward(self, x):
        y = F.relu(self.in1(self.conv1(x)))
        y = F.relu(self.in2(self.conv2(y)))
        y = F.relu(self.in3(self.conv3(y)))
        y = self.res(y)
        y = F.relu(self.in4(self.deconv1(y)))
        y = F.relu(self.in5(self.deconv2(y)))
        return self.deconv3(self.pad(y))


# --- pow, Python-int scalars, flexible height and width --------------------

class PowScalarsNet(nn.Module):
    """A small embedding network of the kind written by hand: a hand-written
    hard-swish `x * clamp(x + 3, 0, 6) / 6` with Python ints, `x * 2 - 1`
    input scaling, a squared-feature (pow 2) branch, and an L2 normalisation
    of the embedding `x / (x.pow(2).sum(1, keepdim=True) + 1e-6).pow(0.5)`."""

    def __init__(self, dim=32):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.fc = nn.Linear(64, dim)

    def forward(self, x):
        x = x * 2 - 1
        x = self.bn1(self.conv1(x))
        x = x * torch.clamp(x + 3, 0, 6) / 6
        x = self.bn2(self.conv2(x))
        x = torch.clamp(x, 0, 6)
        mean = F.adaptive_avg_pool2d(x, 1).flatten(1)
        energy = F.adaptive_avg_pool2d(x.pow(2), 1).flatten(1)
        e = self.fc(torch.cat([mean, energy], 1))
        return e / (e.pow(2).sum(1, keepdim=True) + 1e-6).pow(0.5)


class AnySizeClassifier(nn.Module):
    """A fully convolutional classifier taking images of any size: conv
    stages, adaptive_avg_pool2d to 1x1, linear (converted with a flexible
    height and width)."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 24, 3, stride=2, padding=1), nn.BatchNorm2d(24), nn.ReLU6(),
            nn.Conv2d(24, 24, 3, padding=1, groups=24), nn.BatchNorm2d(24), nn.ReLU6(),
            nn.Conv2d(24, 48, 1), nn.BatchNorm2d(48), nn.ReLU6(),
            nn.Conv2d(48, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


# --- issue 20: decoder LM, Conformer, NHWC restoration ---------------------

class GPTDecoder(nn.Module):
    """A GPT-style decoder LM: token + learned positional embeddings, pre-norm
    blocks with causal self-attention written by hand (a causal mask from a
    tril buffer and a key padding mask, True = padding, both by masked_fill
    with -inf), a GELU MLP, a final layer norm and an LM head tied to the token
    embedding (F.linear with the embedding matrix)."""

    def __init__(self, vocab=500, d=64, heads=4, layers=2, max_len=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.heads = heads
        self.blocks = nn.ModuleList(
            nn.ModuleDict({"ln1": nn.LayerNorm(d), "qkv": nn.Linear(d, 3 * d),
                           "proj": nn.Linear(d, d), "ln2": nn.LayerNorm(d),
                           "mlp": nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(),
                                                nn.Linear(4 * d, d))})
            for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len)).bool())

    def attention(self, b, x, padding_mask):
        n, t, d = x.shape
        q, k, v = b["qkv"](x).split(d, dim=-1)
        q, k, v = (y.view(n, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5
        att = att.masked_fill(~self.causal[:t, :t], float("-inf"))
        att = att.masked_fill(padding_mask[:, None, None, :], float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return b["proj"](y.transpose(1, 2).reshape(n, t, d))

    def forward(self, tokens, padding_mask):
        t = tokens.size(1)
        x = self.tok(tokens) + self.pos(torch.arange(t))
        for b in self.blocks:
            x = x + self.attention(b, b["ln1"](x), padding_mask)
            x = x + b["mlp"](b["ln2"](x))
        return F.linear(self.ln_f(x), self.tok.weight)


class ConformerEncoder(nn.Module):
    """A Conformer-style audio encoder (Gulati et al.): a linear input
    projection of feature frames, then blocks of half feed-forward (SiLU),
    multi-head self-attention (nn.MultiheadAttention, batch-first), the
    convolution module (layer norm, pointwise Conv1d to 2d, GLU over
    channels, depthwise Conv1d, BatchNorm1d, SiLU, pointwise Conv1d) and a
    second half feed-forward, each residual, a final layer norm; a linear
    classifier per frame."""

    def __init__(self, features=40, d=64, heads=4, kernel=15, blocks=2, classes=30):
        super().__init__()
        self.inp = nn.Linear(features, d)

        def ff():
            return nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(),
                                 nn.Dropout(0.1), nn.Linear(4 * d, d))
        self.blocks = nn.ModuleList(
            nn.ModuleDict({"ff1": ff(), "ln_att": nn.LayerNorm(d),
                           "att": nn.MultiheadAttention(d, heads, batch_first=True),
                           "ln_conv": nn.LayerNorm(d), "pw1": nn.Conv1d(d, 2 * d, 1),
                           "dw": nn.Conv1d(d, d, kernel, padding=kernel // 2, groups=d),
                           "bn": nn.BatchNorm1d(d), "pw2": nn.Conv1d(d, d, 1), "ff2": ff(),
                           "ln_out": nn.LayerNorm(d)})
            for _ in range(blocks))
        self.out = nn.Linear(d, classes)

    def forward(self, x):
        x = self.inp(x)
        for b in self.blocks:
            x = x + 0.5 * b["ff1"](x)
            h = b["ln_att"](x)
            x = x + b["att"](h, h, h, need_weights=False)[0]
            c = b["ln_conv"](x).transpose(1, 2)
            c = F.glu(b["pw1"](c), dim=1)
            c = b["pw2"](F.silu(b["bn"](b["dw"](c))))
            x = x + c.transpose(1, 2)
            x = b["ln_out"](x + 0.5 * b["ff2"](x))
        return self.out(x)


class CroppingUNet(nn.Module):
    """A U-Net-like denoiser with unpadded (valid) convolutions, as in the
    original U-Net: the input reflection-padded by 8, two levels, the skip
    cropped to the up-path's size by negative padding (F.pad by -4) and
    concatenated, a 1x1 head, the prediction sliced `[..., 2:-2, 2:-2]` and
    added to the input sliced the same way (a residual denoiser; 64x64 in,
    60x60 out)."""

    def __init__(self, channels=3, w=16):
        super().__init__()

        def double(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3), nn.ReLU(), nn.Conv2d(cout, cout, 3),
                                 nn.ReLU())
        self.down = double(channels, w)
        self.bottom = double(w, 2 * w)
        self.up = nn.ConvTranspose2d(2 * w, w, 2, stride=2)
        self.fuse = double(2 * w, w)
        self.head = nn.Conv2d(w, channels, 1)

    def forward(self, x):
        s1 = self.down(F.pad(x, (8, 8, 8, 8), mode="reflect"))  # 76
        b = self.bottom(F.max_pool2d(s1, 2))  # 34
        u = self.up(b)  # 68
        f = self.fuse(torch.cat([F.pad(s1, (-4, -4, -4, -4)), u], dim=1))  # 64
        return x[..., 2:-2, 2:-2] + self.head(f)[..., 2:-2, 2:-2]


class VideoR2Plus1D(nn.Module):
    """A small video classifier (clips of 8 frames): a (1, 7, 7) spatial stem
    and a (1, 3, 3) max pool, an R(2+1)D residual block (a (1, 3, 3) spatial
    then a (3, 1, 1) temporal convolution, Tran et al. 2018), a C3D-style
    3x3x3 convolution with stride 2, a (2, 1, 1) average pool over time,
    adaptive_avg_pool3d to 1x1x1 and a linear layer. stem_pool=False: the
    stem without its max pool (PyTorch 1.13 has no quantized max_pool3d, so
    the quantized family cannot have it)."""

    def __init__(self, classes=10, stem_pool=True):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv3d(3, 16, (1, 7, 7), stride=(1, 2, 2), padding=(0, 3, 3), bias=False),
            nn.BatchNorm3d(16), nn.ReLU(inplace=True),
            nn.MaxPool3d((1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1)) if stem_pool else nn.Identity())
        self.spatial = nn.Sequential(nn.Conv3d(16, 16, (1, 3, 3), padding=(0, 1, 1), bias=False),
                                     nn.BatchNorm3d(16), nn.ReLU(inplace=True))
        self.temporal = nn.Sequential(nn.Conv3d(16, 16, (3, 1, 1), padding=(1, 0, 0), bias=False),
                                      nn.BatchNorm3d(16))
        self.c3d = nn.Sequential(nn.Conv3d(16, 32, 3, stride=2, padding=1), nn.ReLU(inplace=True),
                                 nn.AvgPool3d((2, 1, 1)))
        self.pool = nn.AdaptiveAvgPool3d(1)
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = self.stem(x)
        x = torch.relu(self.temporal(self.spatial(x)) + x)
        return self.fc(torch.flatten(self.pool(self.c3d(x)), 1))


RECURRENT = "recurrent layers are unrolled over a fixed sequence length and batch"

FAMILIES = {
    "audio_m5": Family(M5, [((1, 1, 8000), None)], flex=[((0, 1, 8000), (2, 1, 8000))]),
    "audio_tcn": Family(AudioTCN, [((1, 40, 64), None)], flex=[((0, 40, 64), (2, 40, 64))]),
    "spectrogram_cnn_groupnorm": Family(SpectrogramCNN, [((1, 1, 64, 96), None)],
                                        flex=[((0, 1, 64, 96), (2, 1, 64, 96))]),
    "text_bilstm": Family(BiLSTMClassifier, [((1, 20), 1000)], why_fixed=RECURRENT),
    "gru_tagger": Family(GRUTagger, [((1, 12), 500)], why_fixed=RECURRENT),
    "lstm_last_hidden": Family(LSTMLastHidden, [((1, 30, 20), None)], why_fixed=RECURRENT),
    "lstm_classifier_dynamic_quant": Family(
        lambda: BiLSTMClassifier(vocab=1000, dim=32, hidden=48), [((1, 20), 1000)],
        why_fixed=RECURRENT, post=dynamic_quantize, tolerance=DYNAMIC_QUANT_TOLERANCE),
    "text_cnn": Family(TextCNN, [((1, 24), 2000)], flex=[((0, 24), (2, 24))]),
    # A flexible batch through the fused attention: its products are a broadcast
    # MUL and REDUCE_SUM below Android 13 (BATCH_MATMUL from it).
    "transformer_text": Family(TransformerText, [((1, 16), 1000)], flex=[((0, 16), (2, 16))]),
    # flexible batch and sequence length (products as above)
    "text_encoder_padding": Family(TextEncoderPadding, [((1, 16), 1000), ((1, 16), "mask")],
                                   flex=[((0, 0), (2, 12)), ((0, 0), (2, 12))]),
    "espcn_x3": Family(ESPCN, [((1, 1, 32, 32), None)], flex=[((0, 1, 32, 32), (2, 1, 32, 32))]),
    "unshuffle_sr": Family(UnshuffleSR, [((1, 3, 32, 32), None)],
                           flex=[((0, 3, 32, 32), (2, 3, 32, 32))]),
    "fast_neural_style": Family(TransformerNet, [((1, 3, 64, 64), None)],
                                flex=[((0, 3, 64, 64), (2, 3, 64, 64))]),
    "pow_int_scalars": Family(PowScalarsNet, [((1, 3, 32, 32), None)],
                              flex=[((0, 3, 32, 32), (2, 3, 32, 32))]),
    "any_size_classifier": Family(AnySizeClassifier, [((1, 3, 64, 64), None)],
                                  flex=[((1, 3, 0, 0), (1, 3, 96, 80))]),
    # flexible batch (the attention's products as above); the sequence length
    # stays fixed (the causal mask is folded at that length)
    "gpt_decoder": Family(GPTDecoder, [((1, 16), 500), ((1, 16), "mask")],
                          flex=[((0, 16), (2, 16)), ((0, 16), (2, 16))]),
    "conformer_encoder": Family(ConformerEncoder, [((1, 50, 40), None)],
                                flex=[((0, 50, 40), (2, 50, 40))]),
    "cropping_unet": Family(CroppingUNet, [((1, 3, 64, 64), None)],
                            flex=[((0, 3, 64, 64), (2, 3, 64, 64))]),
    "video_r2plus1d": Family(VideoR2Plus1D, [((1, 3, 8, 56, 56), None)],
                             flex=[((0, 3, 8, 56, 56), (2, 3, 8, 56, 56))]),
    "video_r2plus1d_quant": Family(lambda: VideoR2Plus1D(stem_pool=False), [((1, 3, 8, 56, 56), None)],
                                   flex=[((0, 3, 8, 56, 56), (2, 3, 8, 56, 56))], quantize_video=True),
}

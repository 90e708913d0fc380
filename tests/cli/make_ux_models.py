"""Models for ux_test.sh (the command line as a new user meets it):
threesorts.pt (one unsupported kind used three times, from this file),
video.pt (a Conv3d, which converts, logcumsumexp, which nothing lowers,
and a dilated grouped convolution: a kind the table lowers, but not with
these arguments), qinput.pt (a quantized convolution that takes a quint8 input),
constant.pt (an output that is 0 whatever the input),
inf.pt (an output of infinities), and inputs.pt (a real input for
--verify-input, saved with torch.save)."""
import os
import sys

import torch

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


class ThreeSorts(torch.nn.Module):
    def forward(self, x):
        a = torch.sort(x, 1)[0]
        b = torch.sort(a + 1.0, 1)[0]
        return torch.sort(b, 1)[0]


x = torch.randn(1, 3, 8, 8)
torch.jit.trace(ThreeSorts().eval(), x).save(os.path.join(out, "threesorts.pt"))


# A video model: a Conv3d (lowered), then logcumsumexp over time (no
# lowering), beside a dilated grouped 2-D convolution: a kind the lowering
# table takes, but not with these arguments, so the refusal lists it beside
# the kind it has no lowering of.
class VideoNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c3 = torch.nn.Conv3d(3, 4, 3, padding=1)
        self.c2 = torch.nn.Conv2d(3, 4, 3)
        self.t = torch.nn.Conv2d(4, 4, 3, dilation=2, groups=2)

    def forward(self, video, image):
        v = torch.logcumsumexp(torch.relu(self.c3(video)), 2)
        return v.flatten(1), self.t(self.c2(image))


torch.jit.trace(VideoNet().eval(), (torch.randn(1, 3, 4, 8, 8), torch.randn(1, 3, 8, 8))).save(
    os.path.join(out, "video.pt"))

conv = torch.nn.quantized.Conv2d(3, 4, 1)
qx = torch.quantize_per_tensor(torch.randn(1, 3, 8, 8), 0.0625, 128, torch.quint8)
torch.jit.trace(conv.eval(), qx).save(os.path.join(out, "qinput.pt"))


class Scale(torch.nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


torch.jit.script(Scale(0.0).eval()).save(os.path.join(out, "constant.pt"))
torch.jit.script(Scale(float("inf")).eval()).save(os.path.join(out, "inf.pt"))
torch.save(torch.randn(1, 3, 32, 32), os.path.join(out, "inputs.pt"))
torch.save((torch.randn(1, 3, 16, 16),), os.path.join(out, "wrong_inputs.pt"))
print("made", sorted(os.listdir(out)))


# --min-android-api: bilinear upsampling is RESIZE_BILINEAR with the corner
# flags (NNAPI feature level 4, Android 11), below it FULLY_CONNECTED products
# for float tensors and refused for quantized ones; a product of two computed
# tensors is BATCH_MATMUL (feature level 6) or, below it, FULLY_CONNECTED per
# entry.
class Upsample(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.interpolate(x, scale_factor=2, mode="bilinear")


class QuantUpsample(torch.nn.Module):
    def forward(self, x):
        q = torch.quantize_per_tensor(x, 0.05, 128, torch.quint8)
        return torch.nn.functional.interpolate(q, scale_factor=2, mode="bilinear").dequantize()


class UpsampleCorners(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.interpolate(x, scale_factor=2, mode="bilinear",
                                               align_corners=True)


class Product(torch.nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b)


torch.jit.trace(Upsample().eval(), torch.randn(1, 3, 4, 4)).save(os.path.join(out, "upsample.pt"))
torch.jit.trace(UpsampleCorners().eval(), torch.randn(1, 3, 4, 4)).save(
    os.path.join(out, "upsample_corners.pt"))
torch.jit.trace(QuantUpsample().eval(), torch.randn(1, 3, 4, 4)).save(
    os.path.join(out, "qupsample.pt"))

# In-place slice assignments nnapi-convert cannot fold into a constant: into
# a buffer of the model, into a computed tensor, into a constant already read.
class WriteWeight(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("m", torch.zeros(4, 4))

    def forward(self, x):
        self.m[1:3] = 1.0
        return x * self.m


class WriteComputed(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        y[:, 0:1] = 0.0
        return y + 1


class WriteRead(torch.nn.Module):
    def forward(self, x):
        m = torch.zeros(4, 4)
        a = x + m
        m[0:2] = 1.0
        return a * m


for name, cls in (("write_weight", WriteWeight), ("write_computed", WriteComputed),
                  ("write_read", WriteRead)):
    torch.jit.trace(cls().eval(), torch.randn(2, 4, 4)).save(os.path.join(out, name + ".pt"))
torch.jit.trace(Product().eval(), (torch.randn(3, 4, 5), torch.randn(3, 5, 2))).save(
    os.path.join(out, "bmm.pt"))


# A key padding mask (bool input) and a flexible sequence length: the fused
# encoder layer's products are BATCH_MATMUL at API 33, a broadcast MUL and
# REDUCE_SUM below it.
class PaddedEncoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)

    def forward(self, x, mask):
        return self.enc(x, src_key_padding_mask=mask)


torch.jit.trace(PaddedEncoder().eval().requires_grad_(False),
                (torch.randn(2, 5, 8), torch.arange(5) >= torch.tensor([[5], [3]]))).save(
    os.path.join(out, "padded_encoder.pt"))


# Issue 33: a complex stft result read by angle(): NNAPI has no complex
# tensors, so the conversion is refused before lowering, naming both kinds.
class StftAngle(torch.nn.Module):
    def forward(self, x):
        return torch.stft(x, 16, 4, return_complex=True).angle()


torch.jit.script(StftAngle().eval()).save(os.path.join(out, "stft_angle.pt"))

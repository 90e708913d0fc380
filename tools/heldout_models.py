"""Held-out models for tools/model_zoo.py --heldout: models nobody on the
project tuned the converter against, in the style of what mobile apps ship.

TORCHVISION: torchvision classifiers and a segmentation head that ctest's
models.* tests do not run (grouped and dilated convolutions, SE blocks,
ceil-mode pooling, inception's branches, fused MBConv), and FX_QUANTIZED:
torchvision classifiers quantized as apps quantize them (FX graph mode).

FAMILIES: small hand-written networks (model_families.Family, initialised by
model_zoo.realistic_init):
  kws_dscnn          keyword spotting over MFCCs (49 frames x 10 coefficients),
                     a depthwise-separable CNN as in ARM's "Hello Edge" DS-CNN
  unet_bilinear      a padded 3-level U-Net, bilinear upsampling
                     (align_corners=False) and skip concatenation, sigmoid mask
  se_mbconv_net      an EfficientNet-style net: MBConv blocks with
                     squeeze-and-excitation (adaptive average pool, SiLU,
                     sigmoid gate), residual adds, hardswish head
  mobilevit_block    a MobileViT-like block: local 3x3 convolution, unfolding
                     into 2x2 patches by reshape/permute, a pre-norm GELU
                     transformer layer over each patch position, folding back,
                     concatenation with the input, fusion convolution
  vit_tiny_features  a small pre-norm transformer encoder over float feature
                     frames (batch-first, GELU, a class token concatenated, a
                     learned position embedding), classifier on the class token
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from model_families import Family

TORCHVISION = ["resnet34", "resnext50_32x4d", "regnet_y_400mf", "mnasnet1_0", "squeezenet1_0",
               "shufflenet_v2_x0_5", "efficientnet_b1", "efficientnet_v2_s", "vgg11_bn",
               "inception_v3"]
SEGMENTATION = ["fcn_resnet50"]
# FX graph-mode quantized (model_zoo.build_fx_quantized: qnnpack's default
# qconfig mapping), with an NCHW and an NHWC input.
FX_QUANTIZED = ["regnet_y_400mf", "squeezenet1_0", "mnasnet1_0"]
# (shufflenet_v2's channel shuffle iterates x.size(): FX cannot trace it, its
# eager-mode quantized form is in the zoo; efficientnet_b0's SiLU stays float,
# so its first dequantize is not the last one fx_quantize's scale hook needs)


class DSCNN(nn.Module):
    def __init__(self, classes=12, width=64, blocks=4):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, width, (10, 4), stride=(2, 2), padding=(5, 1)),
                                  nn.BatchNorm2d(width), nn.ReLU())
        layers = []
        for _ in range(blocks):
            layers += [nn.Conv2d(width, width, 3, padding=1, groups=width), nn.BatchNorm2d(width),
                       nn.ReLU(), nn.Conv2d(width, width, 1), nn.BatchNorm2d(width), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.fc = nn.Linear(width, classes)

    def forward(self, mfcc):
        x = self.body(self.stem(mfcc))
        x = F.avg_pool2d(x, x.shape[2:])
        return F.softmax(self.fc(torch.flatten(x, 1)), dim=1)


class UNet(nn.Module):
    def __init__(self, cin=3, w=16, classes=1):
        super().__init__()

        def block(a, b):
            return nn.Sequential(nn.Conv2d(a, b, 3, padding=1), nn.BatchNorm2d(b), nn.ReLU(inplace=True),
                                 nn.Conv2d(b, b, 3, padding=1), nn.BatchNorm2d(b), nn.ReLU(inplace=True))
        self.d1, self.d2, self.d3 = block(cin, w), block(w, 2 * w), block(2 * w, 4 * w)
        self.u2, self.u1 = block(6 * w, 2 * w), block(3 * w, w)
        self.head = nn.Conv2d(w, classes, 1)

    def forward(self, x):
        s1 = self.d1(x)
        s2 = self.d2(F.max_pool2d(s1, 2))
        b = self.d3(F.max_pool2d(s2, 2))
        up = F.interpolate(b, scale_factor=2.0, mode="bilinear", align_corners=False)
        y = self.u2(torch.cat([up, s2], dim=1))
        up = F.interpolate(y, size=s1.shape[-2:], mode="bilinear", align_corners=False)
        y = self.u1(torch.cat([up, s1], dim=1))
        return torch.sigmoid(self.head(y))


class SqueezeExcite(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        self.reduce = nn.Conv2d(c, c // r, 1)
        self.expand = nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.expand(F.silu(self.reduce(s))))


class MBConv(nn.Module):
    def __init__(self, cin, cout, stride, expand=4):
        super().__init__()
        mid = cin * expand
        self.block = nn.Sequential(
            nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.SiLU(),
            nn.Conv2d(mid, mid, 3, stride=stride, padding=1, groups=mid, bias=False),
            nn.BatchNorm2d(mid), nn.SiLU(), SqueezeExcite(mid),
            nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.block(x)
        return x + y if self.residual else y


class SEMBConvNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False),
                                  nn.BatchNorm2d(16), nn.SiLU())
        self.blocks = nn.Sequential(MBConv(16, 16, 1), MBConv(16, 24, 2), MBConv(24, 24, 1),
                                    MBConv(24, 40, 2), MBConv(40, 40, 1))
        self.head = nn.Sequential(nn.Conv2d(40, 128, 1), nn.Hardswish(), nn.AdaptiveAvgPool2d(1),
                                  nn.Flatten(), nn.Dropout(0.2), nn.Linear(128, classes))

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


class MobileViTBlock(nn.Module):
    def __init__(self, c=32, d=48, patch=2, heads=4):
        super().__init__()
        self.patch = patch
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, stride=2, padding=1), nn.BatchNorm2d(c), nn.SiLU())
        self.local = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.SiLU(),
                                   nn.Conv2d(c, d, 1, bias=False))
        self.transformer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=2 * d,
                                                      activation="gelu", batch_first=True,
                                                      norm_first=True, dropout=0.0)
        self.norm = nn.LayerNorm(d)
        self.project = nn.Sequential(nn.Conv2d(d, c, 1), nn.BatchNorm2d(c), nn.SiLU())
        self.fuse = nn.Sequential(nn.Conv2d(2 * c, c, 3, padding=1), nn.BatchNorm2d(c), nn.SiLU())
        self.fc = nn.Linear(c, 10)

    def forward(self, x):
        x = self.stem(x)
        y = self.local(x)
        b, d, h, w = y.shape
        p = self.patch
        # (B, D, H, W) -> (B * p * p, H/p * W/p, D): one sequence per patch position
        y = y.reshape(b, d, h // p, p, w // p, p).permute(0, 3, 5, 2, 4, 1)
        y = y.reshape(b * p * p, (h // p) * (w // p), d)
        y = self.norm(self.transformer(y))
        y = y.reshape(b, p, p, h // p, w // p, d).permute(0, 5, 3, 1, 4, 2).reshape(b, d, h, w)
        y = self.fuse(torch.cat([x, self.project(y)], dim=1))
        return self.fc(y.mean(dim=(2, 3)))


class ViTTinyFeatures(nn.Module):
    def __init__(self, features=40, d=64, frames=32, heads=4, layers=2, classes=8):
        super().__init__()
        self.embed = nn.Linear(features, d)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.5)
        self.pos = nn.Parameter(torch.randn(1, frames + 1, d) * 0.5)
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=2 * d, activation="gelu",
                                           batch_first=True, norm_first=True, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(d)
        self.fc = nn.Linear(d, classes)

    def forward(self, x):
        x = self.embed(x)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.fc(self.norm(self.encoder(x))[:, 0])


FAMILIES = {
    "kws_dscnn": Family(DSCNN, [((1, 1, 49, 10), None)], flex=[((0, 1, 49, 10), (2, 1, 49, 10))]),
    "unet_bilinear": Family(UNet, [((1, 3, 64, 64), None)], flex=[((0, 3, 64, 64), (2, 3, 64, 64))],
                            options=["--min-android-api", "30"]),
    "se_mbconv_net": Family(SEMBConvNet, [((1, 3, 96, 96), None)],
                            flex=[((0, 3, 96, 96), (2, 3, 96, 96))]),
    "mobilevit_block": Family(MobileViTBlock, [((1, 3, 32, 32), None)],
                              flex=[((0, 3, 32, 32), (2, 3, 32, 32))]),
    # The class token expanded to the batch (x.shape[0]): a TILE whose
    # multiples are set when the model loads (src/lower/tile.cpp).
    "vit_tiny_features": Family(ViTTinyFeatures, [((1, 32, 40), None)],
                                flex=[((0, 32, 40), (2, 32, 40))]),
}

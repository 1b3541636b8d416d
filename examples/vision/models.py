"""Twelve image classifiers with torchvision's architectures, written out.

torchvision does not install beside this project's torch build, so its
classifiers are written here from their published descriptions: the same
layers, shapes, strides, groups and parameter counts (checked by
tests/python/test_vision_models.py), not its code. Weights are random from a
fixed seed; batch and layer norms get random statistics and affine
parameters, so that folding or lowering them is exercised and the outputs
depend on every layer. Dropout and stochastic depth are identities in eval
mode and are left out.

    import sys; sys.path.insert(0, "examples/vision")
    import models
    model = models.build("resnet18")        # eval mode, seeded
    model(torch.randn(1, 3, 224, 224))      # [1, 1000]

Layer names follow no checkpoint: these models are for speed and agreement
between runtimes, not for accuracy.
"""

from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 1234
CLASSES = 1000

Act = Optional[Callable[[], nn.Module]]


def make_divisible(v: float, divisor: int = 8) -> int:
    """v rounded to a multiple of divisor, never below 90% of v (MobileNet's rule)."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1,
            act: Act = None) -> nn.Sequential:
    """Convolution (no bias, 'same' padding for odd k), batch norm, activation."""
    layers: List[nn.Module] = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups,
                                         bias=False), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class SqueezeExcite(nn.Module):
    """Global mean, 1x1 conv down, activation, 1x1 conv up, gate, scale the input."""

    def __init__(self, channels: int, squeeze: int, act: Callable[[], nn.Module] = nn.ReLU,
                 gate: Callable[[], nn.Module] = nn.Sigmoid) -> None:
        super().__init__()
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.act = act()
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.gate = gate()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = F.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.fc2(self.act(self.fc1(s))))


class Classifier(nn.Module):
    """features, then a global mean over H and W, flatten, then head."""

    def __init__(self, features: nn.Module, head: nn.Module) -> None:
        super().__init__()
        self.features = features
        self.head = head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Residual(nn.Module):
    """body(x) + x when the shapes allow it, else body(x)."""

    def __init__(self, body: nn.Module, residual: bool) -> None:
        super().__init__()
        self.body = body
        self.residual = residual

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x) if self.residual else self.body(x)


# --------------------------------------------------------------------------- #
# MobileNetV2, MobileNetV3, MnasNet, EfficientNet: inverted residuals
# --------------------------------------------------------------------------- #

def mobilenet_v2() -> nn.Module:
    # (expansion, out channels, repeats, first stride)
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    layers: List[nn.Module] = [conv_bn(3, 32, 3, 2, act=nn.ReLU6)]
    cin = 32
    for t, c, n, s in settings:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            body: List[nn.Module] = [conv_bn(cin, hidden, 1, act=nn.ReLU6)] if t != 1 else []
            body += [conv_bn(hidden, hidden, 3, stride, groups=hidden, act=nn.ReLU6),
                     conv_bn(hidden, c, 1)]
            layers.append(Residual(nn.Sequential(*body), stride == 1 and cin == c))
            cin = c
    layers.append(conv_bn(cin, 1280, 1, act=nn.ReLU6))
    return Classifier(nn.Sequential(*layers), nn.Linear(1280, CLASSES))


def _mobilenet_v3(blocks: Sequence[Tuple[int, int, int, bool, str, int]], last: int) -> nn.Module:
    """blocks: (kernel, expanded, out, squeeze-excite, 'RE' or 'HS', stride) after a
    16-channel stem; last: the width of the classifier's hidden layer."""
    layers: List[nn.Module] = [conv_bn(3, 16, 3, 2, act=nn.Hardswish)]
    cin = 16
    for k, exp, cout, se, nl, stride in blocks:
        act = nn.ReLU if nl == "RE" else nn.Hardswish
        body: List[nn.Module] = [conv_bn(cin, exp, 1, act=act)] if exp != cin else []
        body.append(conv_bn(exp, exp, k, stride, groups=exp, act=act))
        if se:
            body.append(SqueezeExcite(exp, make_divisible(exp // 4), gate=nn.Hardsigmoid))
        body.append(conv_bn(exp, cout, 1))
        layers.append(Residual(nn.Sequential(*body), stride == 1 and cin == cout))
        cin = cout
    layers.append(conv_bn(cin, 6 * cin, 1, act=nn.Hardswish))
    head = nn.Sequential(nn.Linear(6 * cin, last), nn.Hardswish(), nn.Linear(last, CLASSES))
    return Classifier(nn.Sequential(*layers), head)


def mobilenet_v3_small() -> nn.Module:
    return _mobilenet_v3([
        (3, 16, 16, True, "RE", 2), (3, 72, 24, False, "RE", 2), (3, 88, 24, False, "RE", 1),
        (5, 96, 40, True, "HS", 2), (5, 240, 40, True, "HS", 1), (5, 240, 40, True, "HS", 1),
        (5, 120, 48, True, "HS", 1), (5, 144, 48, True, "HS", 1), (5, 288, 96, True, "HS", 2),
        (5, 576, 96, True, "HS", 1), (5, 576, 96, True, "HS", 1)], last=1024)


def mobilenet_v3_large() -> nn.Module:
    return _mobilenet_v3([
        (3, 16, 16, False, "RE", 1), (3, 64, 24, False, "RE", 2), (3, 72, 24, False, "RE", 1),
        (5, 72, 40, True, "RE", 2), (5, 120, 40, True, "RE", 1), (5, 120, 40, True, "RE", 1),
        (3, 240, 80, False, "HS", 2), (3, 200, 80, False, "HS", 1),
        (3, 184, 80, False, "HS", 1), (3, 184, 80, False, "HS", 1),
        (3, 480, 112, True, "HS", 1), (3, 672, 112, True, "HS", 1),
        (5, 672, 160, True, "HS", 2), (5, 960, 160, True, "HS", 1),
        (5, 960, 160, True, "HS", 1)], last=1280)


def mnasnet1_0() -> nn.Module:
    def block(cin: int, cout: int, k: int, stride: int, t: int) -> nn.Module:
        mid = cin * t
        body = nn.Sequential(conv_bn(cin, mid, 1, act=nn.ReLU),
                             conv_bn(mid, mid, k, stride, groups=mid, act=nn.ReLU),
                             conv_bn(mid, cout, 1))
        return Residual(body, stride == 1 and cin == cout)

    # (out channels, kernel, first stride, expansion, repeats), after a 16-channel
    # separable stem (MnasNet-A1 without squeeze-excite, depth multiplier 1.0)
    stages = [(24, 3, 2, 3, 3), (40, 5, 2, 3, 3), (80, 5, 2, 6, 3), (96, 3, 1, 6, 2),
              (192, 5, 2, 6, 4), (320, 3, 1, 6, 1)]
    layers: List[nn.Module] = [conv_bn(3, 32, 3, 2, act=nn.ReLU),
                               conv_bn(32, 32, 3, groups=32, act=nn.ReLU), conv_bn(32, 16, 1)]
    cin = 16
    for cout, k, s, t, n in stages:
        for i in range(n):
            layers.append(block(cin, cout, k, s if i == 0 else 1, t))
            cin = cout
    layers.append(conv_bn(cin, 1280, 1, act=nn.ReLU))
    return Classifier(nn.Sequential(*layers), nn.Linear(1280, CLASSES))


def efficientnet_b0() -> nn.Module:
    # (expansion, kernel, first stride, in, out, repeats): MBConv stages of B0
    stages = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2),
              (6, 3, 2, 40, 80, 3), (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4),
              (6, 3, 1, 192, 320, 1)]
    layers: List[nn.Module] = [conv_bn(3, 32, 3, 2, act=nn.SiLU)]
    for t, k, s, cin0, cout, n in stages:
        for i in range(n):
            cin, stride = (cin0, s) if i == 0 else (cout, 1)
            exp = make_divisible(cin * t)
            body: List[nn.Module] = [conv_bn(cin, exp, 1, act=nn.SiLU)] if exp != cin else []
            # the squeeze width comes from the block's input, not its expansion
            body += [conv_bn(exp, exp, k, stride, groups=exp, act=nn.SiLU),
                     SqueezeExcite(exp, max(1, cin // 4), act=nn.SiLU),
                     conv_bn(exp, cout, 1)]
            layers.append(Residual(nn.Sequential(*body), stride == 1 and cin == cout))
    layers.append(conv_bn(320, 1280, 1, act=nn.SiLU))
    return Classifier(nn.Sequential(*layers), nn.Linear(1280, CLASSES))


# --------------------------------------------------------------------------- #
# ResNet, ResNeXt, RegNetY: residual blocks with a projection shortcut
# --------------------------------------------------------------------------- #

class ResBlock(nn.Module):
    """relu(body(x) + shortcut(x)); the shortcut is a strided 1x1 conv + batch
    norm when the block changes the width or the resolution."""

    def __init__(self, body: nn.Module, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.body = body
        self.down = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = x if self.down is None else self.down(x)
        return F.relu(self.body(x) + skip)


def _resnet(depths: Sequence[int], bottleneck: bool, groups: int = 1,
            width_per_group: int = 64) -> nn.Module:
    layers: List[nn.Module] = [conv_bn(3, 64, 7, 2, act=nn.ReLU), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for stage, n in enumerate(depths):
        planes = 64 << stage
        for i in range(n):
            stride = 2 if stage > 0 and i == 0 else 1
            if bottleneck:
                # ResNet v1.5: the stride sits on the 3x3 convolution
                width = planes * width_per_group // 64 * groups
                cout = planes * 4
                body = nn.Sequential(conv_bn(cin, width, 1, act=nn.ReLU),
                                     conv_bn(width, width, 3, stride, groups=groups, act=nn.ReLU),
                                     conv_bn(width, cout, 1))
            else:
                cout = planes
                body = nn.Sequential(conv_bn(cin, cout, 3, stride, act=nn.ReLU),
                                     conv_bn(cout, cout, 3))
            layers.append(ResBlock(body, cin, cout, stride))
            cin = cout
    return Classifier(nn.Sequential(*layers), nn.Linear(cin, CLASSES))


def resnet18() -> nn.Module:
    return _resnet([2, 2, 2, 2], bottleneck=False)


def resnet50() -> nn.Module:
    return _resnet([3, 4, 6, 3], bottleneck=True)


def resnext50_32x4d() -> nn.Module:
    return _resnet([3, 4, 6, 3], bottleneck=True, groups=32, width_per_group=4)


def regnet_widths(depth: int, w_0: float, w_a: float, w_m: float,
                  group_width: int) -> Tuple[List[int], List[int], List[int]]:
    """RegNet's quantized linear width rule: per-stage widths, depths and
    group widths (bottleneck multiplier 1)."""
    widths = [w_0 + w_a * i for i in range(depth)]
    blocks = [int(round(w_0 * w_m ** round(math.log(w / w_0) / math.log(w_m)) / 8) * 8)
              for w in widths]
    stage_widths: List[int] = []
    stage_depths: List[int] = []
    for w in blocks:
        if stage_widths and stage_widths[-1] == w:
            stage_depths[-1] += 1
        else:
            stage_widths.append(w)
            stage_depths.append(1)
    groups = [min(group_width, w) for w in stage_widths]
    stage_widths = [make_divisible(w, g) for w, g in zip(stage_widths, groups)]
    return stage_widths, stage_depths, groups


def regnet_y_400mf() -> nn.Module:
    widths, depths, group_widths = regnet_widths(16, 48, 27.89, 2.09, 8)
    layers: List[nn.Module] = [conv_bn(3, 32, 3, 2, act=nn.ReLU)]
    cin = 32
    for w, n, gw in zip(widths, depths, group_widths):
        for i in range(n):
            stride = 2 if i == 0 else 1
            # squeeze-excite width: a quarter of the block's input width
            body = nn.Sequential(conv_bn(cin, w, 1, act=nn.ReLU),
                                 conv_bn(w, w, 3, stride, groups=w // gw, act=nn.ReLU),
                                 SqueezeExcite(w, int(round(0.25 * cin))),
                                 conv_bn(w, w, 1))
            layers.append(ResBlock(body, cin, w, stride))
            cin = w
    return Classifier(nn.Sequential(*layers), nn.Linear(cin, CLASSES))


# --------------------------------------------------------------------------- #
# ShuffleNetV2, SqueezeNet: channel split and shuffle, concatenation
# --------------------------------------------------------------------------- #

def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    n, c, h, w = x.shape
    x = x.view(n, groups, c // groups, h, w).transpose(1, 2).contiguous()
    return x.view(n, c, h, w)


class ShuffleUnit(nn.Module):
    """Stride 1: half the channels pass through, the other half go through
    1x1 / depthwise 3x3 / 1x1. Stride 2: both halves are computed from the
    whole input (the left one by a depthwise 3x3 and a 1x1). Then the halves
    are concatenated and shuffled."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        half = cout // 2
        self.stride = stride
        self.left = nn.Sequential(conv_bn(cin, cin, 3, stride, groups=cin),
                                  conv_bn(cin, half, 1, act=nn.ReLU)) if stride > 1 else None
        self.right = nn.Sequential(conv_bn(cin if stride > 1 else half, half, 1, act=nn.ReLU),
                                   conv_bn(half, half, 3, stride, groups=half),
                                   conv_bn(half, half, 1, act=nn.ReLU))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.left is None:
            a, b = x.chunk(2, dim=1)
            out = torch.cat((a, self.right(b)), dim=1)
        else:
            out = torch.cat((self.left(x), self.right(x)), dim=1)
        return channel_shuffle(out, 2)


def shufflenet_v2_x1_0() -> nn.Module:
    layers: List[nn.Module] = [conv_bn(3, 24, 3, 2, act=nn.ReLU), nn.MaxPool2d(3, 2, 1)]
    cin = 24
    for cout, n in [(116, 4), (232, 8), (464, 4)]:
        layers += [ShuffleUnit(cin, cout, 2)] + [ShuffleUnit(cout, cout, 1) for _ in range(n - 1)]
        cin = cout
    layers.append(conv_bn(cin, 1024, 1, act=nn.ReLU))
    return Classifier(nn.Sequential(*layers), nn.Linear(1024, CLASSES))


class Fire(nn.Module):
    """1x1 squeeze, then 1x1 and 3x3 expansions side by side, concatenated."""

    def __init__(self, cin: int, squeeze: int, expand: int) -> None:
        super().__init__()
        self.squeeze = nn.Conv2d(cin, squeeze, 1)
        self.expand1 = nn.Conv2d(squeeze, expand, 1)
        self.expand3 = nn.Conv2d(squeeze, expand, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = F.relu(self.squeeze(x))
        return torch.cat((F.relu(self.expand1(s)), F.relu(self.expand3(s))), dim=1)


def squeezenet1_1() -> nn.Module:
    def pool() -> nn.Module:
        return nn.MaxPool2d(3, 2, ceil_mode=True)

    features = nn.Sequential(
        nn.Conv2d(3, 64, 3, 2), nn.ReLU(), pool(), Fire(64, 16, 64), Fire(128, 16, 64), pool(),
        Fire(128, 32, 128), Fire(256, 32, 128), pool(), Fire(256, 48, 192), Fire(384, 48, 192),
        Fire(384, 64, 256), Fire(512, 64, 256),
        # the classifier is a 1x1 convolution and a ReLU before the global mean
        nn.Conv2d(512, CLASSES, 1), nn.ReLU())
    return Classifier(features, nn.Identity())


# --------------------------------------------------------------------------- #
# ConvNeXt
# --------------------------------------------------------------------------- #

class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an NCHW tensor (through NHWC)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    """x + scale * pw2(gelu(pw1(ln(dw7x7(x))))), the pointwise layers as
    linear layers over NHWC; stochastic depth is the identity in eval."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pw1 = nn.Linear(dim, 4 * dim)
        self.pw2 = nn.Linear(4 * dim, dim)
        self.scale = nn.Parameter(torch.full((dim, 1, 1), 1e-6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm(self.dw(x).permute(0, 2, 3, 1))
        y = self.pw2(F.gelu(self.pw1(y))).permute(0, 3, 1, 2)
        return x + self.scale * y


def convnext_tiny() -> nn.Module:
    dims, depths = [96, 192, 384, 768], [3, 3, 9, 3]
    layers: List[nn.Module] = [nn.Conv2d(3, dims[0], 4, 4), LayerNorm2d(dims[0], eps=1e-6)]
    for i, (dim, n) in enumerate(zip(dims, depths)):
        if i > 0:
            layers += [LayerNorm2d(dims[i - 1], eps=1e-6), nn.Conv2d(dims[i - 1], dim, 2, 2)]
        layers += [ConvNeXtBlock(dim) for _ in range(n)]
    head = nn.Sequential(nn.LayerNorm(dims[-1], eps=1e-6), nn.Linear(dims[-1], CLASSES))
    return Classifier(nn.Sequential(*layers), head)


# --------------------------------------------------------------------------- #

BUILDERS: Dict[str, Callable[[], nn.Module]] = {
    "mobilenet_v2": mobilenet_v2,
    "mobilenet_v3_small": mobilenet_v3_small,
    "mobilenet_v3_large": mobilenet_v3_large,
    "resnet18": resnet18,
    "resnet50": resnet50,
    "resnext50_32x4d": resnext50_32x4d,
    "shufflenet_v2_x1_0": shufflenet_v2_x1_0,
    "squeezenet1_1": squeezenet1_1,
    "efficientnet_b0": efficientnet_b0,
    "regnet_y_400mf": regnet_y_400mf,
    "mnasnet1_0": mnasnet1_0,
    "convnext_tiny": convnext_tiny,
}
MODELS: List[str] = list(BUILDERS)


def build(name: str, seed: int = SEED) -> nn.Module:
    """The named classifier in eval mode: weights from torch's default
    initialisation under `seed`, then random norm statistics and affine
    parameters (and ConvNeXt's layer scales) from a second generator."""
    if name not in BUILDERS:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    torch.manual_seed(seed)
    model = BUILDERS[name]()
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_(0.1 * torch.randn(c, generator=g))
                m.running_var.copy_(0.5 + torch.rand(c, generator=g))
            if isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)):
                # scales below 1 keep the activations of deep networks in range
                n = m.weight.numel()
                m.weight.copy_(0.5 + 0.5 * torch.rand(n, generator=g).view_as(m.weight))
                m.bias.copy_(0.1 * torch.randn(n, generator=g).view_as(m.bias))
            if isinstance(m, ConvNeXtBlock):
                # trained layer scales are far from their 1e-6 start; with
                # 1e-6 the blocks would add nothing that a comparison could see
                m.scale.copy_(0.1 + 0.4 * torch.rand(m.scale.shape, generator=g))
    return model.eval()

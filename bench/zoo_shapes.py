"""The model zoo's manifests: each network's layer list walked, its distinct convolutions written.

Every network below is written from its public definition (the module named in `source`: the
layer list as published, with its channel widths, strides, groups, dilations and paddings), and
walked at its native input size: each convolution's input size follows from the ones before
(pooling, upsampling and concatenation included), so no shape is typed by hand. The distinct
convolutions (same geometry, first layer name and count kept in a comment) become MIOpenDriver
lines under dbs/manifests/zoo/ (held-out networks under dbs/manifests/zoo/held_out/, kept out of
tuning and of the ranking's fit: dbs/manifests/README).

Each manifest has two sections, as the shipped manifests do: NHWC FP16 (channels-last mixed
precision) and NCHW FP32, at the network's usual batch; a network that is trained gets all
three directions (-F 0) in FP16 and forward (-F 1) in FP32 (inference); an inference-only one
(diffusion, super-resolution) forward in both. 3-D networks use NDHWC / NCDHW.

    python bench/zoo_shapes.py            # write dbs/manifests/zoo/
    python bench/zoo_shapes.py --check    # exit 1 if a committed manifest differs
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ZOO_DIR = ROOT / "dbs" / "manifests" / "zoo"
HELD_OUT_DIR = ZOO_DIR / "held_out"


# ----------------------------------------------------------------------------- walking
@dataclass(frozen=True)
class Feat:
    """A feature map between layers: channels and spatial size (2 or 3 axes)."""

    c: int
    size: tuple[int, ...]


@dataclass(frozen=True)
class Conv:
    """One convolution's geometry (what a manifest line holds, batch and type aside)."""

    c: int
    k: int
    size: tuple[int, ...]
    filter: tuple[int, ...]
    pad: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int = 1
    transposed: bool = False


def _axes(value: int | tuple[int, ...], dims: int) -> tuple[int, ...]:
    return tuple(value) if isinstance(value, tuple) else (value,) * dims


@dataclass
class Net:
    """A network being walked: the convolutions met so far, in order, with their names."""

    name: str
    layers: list[tuple[str, Conv]] = field(default_factory=list)

    def conv(self, name: str, x: Feat, k: int, f: int | tuple[int, ...], s: int | tuple = 1,
             p: int | tuple | None = None, g: int = 1, d: int | tuple = 1) -> Feat:
        """A convolution of x; padding defaults to `dilation * (filter - 1) // 2` per axis."""
        dims = len(x.size)
        fil, st, dil = _axes(f, dims), _axes(s, dims), _axes(d, dims)
        pad = (tuple(di * (fi - 1) // 2 for fi, di in zip(fil, dil, strict=True)) if p is None
               else _axes(p, dims))
        out = tuple((i + 2 * pi - di * (fi - 1) - 1) // si + 1
                    for i, fi, pi, si, di in zip(x.size, fil, pad, st, dil, strict=True))
        if min(out) < 1 or x.c % g or k % g:
            raise ValueError(f"{self.name} {name}: {x} does not fit filter {fil} groups {g}")
        self.layers.append((name, Conv(x.c, k, x.size, fil, pad, st, dil, g)))
        return Feat(k, out)

    def up_conv(self, name: str, x: Feat, k: int, f: int | tuple[int, ...], s: int | tuple,
                p: int | tuple = 0) -> Feat:
        """A transposed convolution (no output padding: none of the zoo's has one)."""
        dims = len(x.size)
        fil, st, pad = _axes(f, dims), _axes(s, dims), _axes(p, dims)
        out = tuple(si * (i - 1) + fi - 2 * pi
                    for i, fi, pi, si in zip(x.size, fil, pad, st, strict=True))
        self.layers.append((name, Conv(x.c, k, x.size, fil, pad, st, (1,) * dims, 1, True)))
        return Feat(k, out)


def pool(x: Feat, f: int | tuple, s: int | tuple, p: int | tuple = 0,
         ceil: bool = False) -> Feat:
    """Max or average pooling's output size (PyTorch's rule, ceil_mode included)."""
    dims = len(x.size)
    fil, st, pad = _axes(f, dims), _axes(s, dims), _axes(p, dims)
    rnd = math.ceil if ceil else math.floor
    return Feat(x.c, tuple(int(rnd((i + 2 * pi - fi) / si)) + 1
                           for i, fi, pi, si in zip(x.size, fil, pad, st, strict=True)))


def up(x: Feat, factor: int = 2) -> Feat:
    """Nearest or bilinear upsampling by an integer factor on every spatial axis."""
    return Feat(x.c, tuple(i * factor for i in x.size))


def cat(*xs: Feat) -> Feat:
    """Channel concatenation of maps of one size."""
    if len({x.size for x in xs}) != 1:
        raise ValueError(f"concatenation of maps of different sizes: {xs}")
    return Feat(sum(x.c for x in xs), xs[0].size)


def make_divisible(v: float, divisor: int = 8) -> int:
    """torchvision's `_make_divisible` (channel counts of MobileNet and EfficientNet)."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


# ----------------------------------------------------------------------------- networks
def resnet(net: Net, x: Feat, blocks: tuple[int, ...], groups: int = 1, width: int = 64,
           dilate: tuple[bool, bool, bool] = (False, False, False)) -> list[Feat]:
    """torchvision's ResNet with Bottleneck blocks (v1.5: stride in the 3x3), groups and
    width per group (ResNeXt), `replace_stride_with_dilation`; the four stages' outputs."""
    x = net.conv("conv1", x, 64, 7, 2, 3)
    x = pool(x, 3, 2, 1)
    inplanes, dilation, outs = 64, 1, []
    for i, (planes, n) in enumerate(zip((64, 128, 256, 512), blocks, strict=True)):
        stride = 1 if i == 0 else 2
        previous = dilation
        if i > 0 and dilate[i - 1]:
            dilation, stride = dilation * stride, 1
        w = planes * width // 64 * groups
        for b in range(n):
            at = f"layer{i + 1}.{b}"
            s, d = (stride, previous) if b == 0 else (1, dilation)
            y = net.conv(f"{at}.conv1", x, w, 1)
            y = net.conv(f"{at}.conv2", y, w, 3, s, d, groups, d)
            y = net.conv(f"{at}.conv3", y, planes * 4, 1)
            if b == 0 and (s != 1 or inplanes != planes * 4):
                net.conv(f"{at}.downsample", x, planes * 4, 1, s)
            x, inplanes = y, planes * 4
        outs.append(x)
    return outs


def resnet50(net: Net) -> None:
    resnet(net, Feat(3, (224, 224)), (3, 4, 6, 3))


def resnext50_32x4d(net: Net) -> None:
    resnet(net, Feat(3, (224, 224)), (3, 4, 6, 3), groups=32, width=4)


def resnext101_64x4d(net: Net) -> None:
    resnet(net, Feat(3, (224, 224)), (3, 4, 23, 3), groups=64, width=4)


def _fcn_head(net: Net, name: str, x: Feat, inter: int, classes: int = 21) -> None:
    y = net.conv(f"{name}.0", x, inter, 3, 1, 1)
    net.conv(f"{name}.4", y, classes, 1)


def deeplabv3_resnet50(net: Net) -> None:
    """torchvision deeplabv3_resnet50 (output stride 8, ASPP rates 12/24/36, aux head) at
    520x520 (its weights' transform resizes the short side to 520)."""
    c = resnet(net, Feat(3, (520, 520)), (3, 4, 6, 3), dilate=(False, True, True))
    x = c[3]
    branches = [net.conv("classifier.0.convs.0", x, 256, 1)]
    for i, rate in enumerate((12, 24, 36)):
        branches.append(net.conv(f"classifier.0.convs.{i + 1}", x, 256, 3, 1, rate, 1, rate))
    net.conv("classifier.0.convs.4 (image pooling)", Feat(x.c, (1, 1)), 256, 1)
    y = net.conv("classifier.0.project", Feat(256 * 5, x.size), 256, 1)
    _fcn_head(net, "classifier[1:]", y, 256)
    _fcn_head(net, "aux_classifier", c[2], 256)


def fcn_resnet50(net: Net) -> None:
    """torchvision fcn_resnet50 (output stride 8, FCN head, aux head) at 520x520."""
    c = resnet(net, Feat(3, (520, 520)), (3, 4, 6, 3), dilate=(False, True, True))
    _fcn_head(net, "classifier", c[3], 512)
    _fcn_head(net, "aux_classifier", c[2], 256)


def _se(net: Net, name: str, x: Feat, squeeze: int) -> None:
    """Squeeze-and-excitation: two 1x1 convolutions on the pooled 1x1 map."""
    s = net.conv(f"{name}.fc1", Feat(x.c, (1,) * len(x.size)), squeeze, 1)
    net.conv(f"{name}.fc2", s, x.c, 1)


def mobilenet_v2(net: Net) -> None:
    """torchvision mobilenet_v2 (width 1.0) at 224x224."""
    x = net.conv("features.0", Feat(3, (224, 224)), 32, 3, 2)
    i = 1
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
        for b in range(n):
            hidden = x.c * t
            y = net.conv(f"features.{i}.expand", x, hidden, 1) if t != 1 else x
            y = net.conv(f"features.{i}.dw", y, hidden, 3, s if b == 0 else 1, g=hidden)
            x = net.conv(f"features.{i}.project", y, c, 1)
            i += 1
    net.conv("features.18", x, 1280, 1)


_V3_LARGE = ((16, 3, 16, 16, False, 1), (16, 3, 64, 24, False, 2), (24, 3, 72, 24, False, 1),
             (24, 5, 72, 40, True, 2), (40, 5, 120, 40, True, 1), (40, 5, 120, 40, True, 1),
             (40, 3, 240, 80, False, 2), (80, 3, 200, 80, False, 1),
             (80, 3, 184, 80, False, 1), (80, 3, 184, 80, False, 1),
             (80, 3, 480, 112, True, 1), (112, 3, 672, 112, True, 1),
             (112, 5, 672, 160, True, 2), (160, 5, 960, 160, True, 1),
             (160, 5, 960, 160, True, 1))
_V3_SMALL = ((16, 3, 16, 16, True, 2), (16, 3, 72, 24, False, 2), (24, 3, 88, 24, False, 1),
             (24, 5, 96, 40, True, 2), (40, 5, 240, 40, True, 1), (40, 5, 240, 40, True, 1),
             (40, 5, 120, 48, True, 1), (48, 5, 144, 48, True, 1), (48, 5, 288, 96, True, 2),
             (96, 5, 576, 96, True, 1), (96, 5, 576, 96, True, 1))


def _mobilenet_v3(net: Net, settings: tuple, last: int) -> None:
    """torchvision mobilenet_v3 (InvertedResidualConfig rows: in, kernel, expanded, out,
    SE, stride) at 224x224."""
    x = net.conv("features.0", Feat(3, (224, 224)), 16, 3, 2)
    for i, (cin, k, exp, out, se, s) in enumerate(settings, 1):
        assert cin == x.c
        y = net.conv(f"features.{i}.expand", x, exp, 1) if exp != cin else x
        y = net.conv(f"features.{i}.dw", y, exp, k, s, g=exp)
        if se:
            _se(net, f"features.{i}.se", y, make_divisible(exp // 4))
        x = net.conv(f"features.{i}.project", y, out, 1)
    net.conv(f"features.{len(settings) + 1}", x, last, 1)


def mobilenet_v3_large(net: Net) -> None:
    _mobilenet_v3(net, _V3_LARGE, 960)


def mobilenet_v3_small(net: Net) -> None:
    _mobilenet_v3(net, _V3_SMALL, 576)


def efficientnet_b0(net: Net) -> None:
    """torchvision efficientnet_b0 (MBConv rows: expand ratio, kernel, stride, in, out,
    layers; SE squeeze = block input // 4) at 224x224."""
    x = net.conv("features.0", Feat(3, (224, 224)), 32, 3, 2)
    for i, (t, k, s, cin, out, n) in enumerate(((1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2),
                                                (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
                                                (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4),
                                                (6, 3, 1, 192, 320, 1)), 1):
        for b in range(n):
            at, block_in = f"features.{i}.{b}", cin if b == 0 else out
            assert x.c == block_in
            hidden = make_divisible(block_in * t)
            y = net.conv(f"{at}.expand", x, hidden, 1) if hidden != block_in else x
            y = net.conv(f"{at}.dw", y, hidden, k, s if b == 0 else 1, g=hidden)
            _se(net, f"{at}.se", y, max(1, block_in // 4))
            x = net.conv(f"{at}.project", y, out, 1)
    net.conv("features.8", x, 1280, 1)


def mnasnet1_0(net: Net) -> None:
    """torchvision mnasnet1_0 (stacks: in, out, kernel, stride, expansion, repeats)."""
    x = net.conv("layers.0", Feat(3, (224, 224)), 32, 3, 2)
    x = net.conv("layers.3 (dw)", x, 32, 3, 1, g=32)
    x = net.conv("layers.6", x, 16, 1)
    for i, (cin, out, k, s, t, n) in enumerate(((16, 24, 3, 2, 3, 3), (24, 40, 5, 2, 3, 3),
                                                (40, 80, 5, 2, 6, 3), (80, 96, 3, 1, 6, 2),
                                                (96, 192, 5, 2, 6, 4), (192, 320, 3, 1, 6, 1)),
                                               8):
        assert x.c == cin
        for b in range(n):
            at = f"layers.{i}.{b}"
            y = net.conv(f"{at}.expand", x, x.c * t, 1)
            y = net.conv(f"{at}.dw", y, y.c, k, s if b == 0 else 1, g=y.c)
            x = net.conv(f"{at}.project", y, out, 1)
    net.conv("layers.14", x, 1280, 1)


def convnext_tiny(net: Net) -> None:
    """torchvision convnext_tiny: 4x4/4 stem, 7x7 depthwise in every block (the MLPs are
    Linear layers), 2x2/2 downsampling between stages, at 224x224."""
    x = net.conv("features.0", Feat(3, (224, 224)), 96, 4, 4, 0)
    for i, (dim, n) in enumerate(((96, 3), (192, 3), (384, 9), (768, 3))):
        if i:
            x = net.conv(f"features.{2 * i}.1", x, dim, 2, 2, 0)
        for b in range(n):
            x = net.conv(f"features.{2 * i + 1}.{b}.dwconv", x, dim, 7, g=dim)


def regnet_widths(depth: int, w_0: int, w_a: float, w_m: float, group_width: int,
                  bottleneck: float = 1.0) -> list[tuple[int, int, int]]:
    """torchvision's BlockParams.from_init_params: (width, depth, group width) per stage."""
    widths = [round(w_0 * w_m ** round(math.log((i * w_a + w_0) / w_0) / math.log(w_m)) / 8) * 8
              for i in range(depth)]
    stages: list[list[int]] = []
    for w in widths:
        if stages and stages[-1][0] == w:
            stages[-1][1] += 1
        else:
            stages.append([w, 1])
    out = []
    for w, d in stages:
        w_bot = int(w * bottleneck)
        g = min(group_width, w_bot)
        w_bot = make_divisible(w_bot, g)
        out.append((int(w_bot / bottleneck), d, g))
    return out


def regnet_y_400mf(net: Net) -> None:
    """torchvision regnet_y_400mf (depth 16, w_0 48, w_a 27.89, w_m 2.09, group width 8, SE
    0.25) at 224x224."""
    x = net.conv("stem", Feat(3, (224, 224)), 32, 3, 2)
    for i, (w, n, gw) in enumerate(regnet_widths(16, 48, 27.89, 2.09, 8), 1):
        for b in range(n):
            at, s = f"trunk_output.block{i}.{b}", 2 if b == 0 else 1
            y = net.conv(f"{at}.a", x, w, 1)
            y = net.conv(f"{at}.b", y, w, 3, s, g=w // gw)
            _se(net, f"{at}.se", y, int(round(0.25 * x.c)))
            y2 = net.conv(f"{at}.c", y, w, 1)
            if x.c != w or s != 1:
                net.conv(f"{at}.proj", x, w, 1, s)
            x = y2


def shufflenet_v2_x1_0(net: Net) -> None:
    """torchvision shufflenet_v2_x1_0 (stages 4/8/4 blocks, 116/232/464 channels)."""
    x = pool(net.conv("conv1", Feat(3, (224, 224)), 24, 3, 2), 3, 2, 1)
    for i, (n, out) in enumerate(((4, 116), (8, 232), (4, 464)), 2):
        half = out // 2
        for b in range(n):
            at = f"stage{i}.{b}"
            if b == 0:
                y1 = net.conv(f"{at}.branch1.dw", x, x.c, 3, 2, g=x.c)
                net.conv(f"{at}.branch1.pw", y1, half, 1)
                y = net.conv(f"{at}.branch2.pw1", x, half, 1)
                y = net.conv(f"{at}.branch2.dw", y, half, 3, 2, g=half)
            else:
                y = net.conv(f"{at}.branch2.pw1", Feat(half, x.size), half, 1)
                y = net.conv(f"{at}.branch2.dw", y, half, 3, 1, g=half)
            y = net.conv(f"{at}.branch2.pw2", y, half, 1)
            x = Feat(out, y.size)
    net.conv("conv5", x, 1024, 1)


def squeezenet1_1(net: Net) -> None:
    """torchvision squeezenet1_1 (Fire modules: squeeze, expand 1x1 and 3x3)."""
    x = pool(net.conv("features.0", Feat(3, (224, 224)), 64, 3, 2, 0), 3, 2, ceil=True)
    fires = ((3, 16, 64), (4, 16, 64), None, (6, 32, 128), (7, 32, 128), None, (9, 48, 192),
             (10, 48, 192), (11, 64, 256), (12, 64, 256))
    for fire in fires:
        if fire is None:
            x = pool(x, 3, 2, ceil=True)
            continue
        i, sq, e = fire
        s = net.conv(f"features.{i}.squeeze", x, sq, 1)
        x = cat(net.conv(f"features.{i}.expand1x1", s, e, 1),
                net.conv(f"features.{i}.expand3x3", s, e, 3))
    net.conv("classifier.1", x, 1000, 1)


def densenet121(net: Net) -> None:
    """torchvision densenet121 (growth 32, bottleneck 4, blocks 6/12/24/16)."""
    x = pool(net.conv("features.conv0", Feat(3, (224, 224)), 64, 7, 2, 3), 3, 2, 1)
    for i, n in enumerate((6, 12, 24, 16), 1):
        for j in range(n):
            y = net.conv(f"denseblock{i}.denselayer{j + 1}.conv1", x, 128, 1)
            x = cat(x, net.conv(f"denseblock{i}.denselayer{j + 1}.conv2", y, 32, 3))
        if i < 4:
            x = pool(net.conv(f"transition{i}.conv", x, x.c // 2, 1), 2, 2)


def inception_v3(net: Net) -> None:
    """torchvision inception_v3 at 299x299, the auxiliary classifier included."""
    x = net.conv("Conv2d_1a_3x3", Feat(3, (299, 299)), 32, 3, 2, 0)
    x = net.conv("Conv2d_2a_3x3", x, 32, 3, 1, 0)
    x = pool(net.conv("Conv2d_2b_3x3", x, 64, 3, 1, 1), 3, 2)
    x = net.conv("Conv2d_3b_1x1", x, 80, 1)
    x = pool(net.conv("Conv2d_4a_3x3", x, 192, 3, 1, 0), 3, 2)
    for name, pf in (("Mixed_5b", 32), ("Mixed_5c", 64), ("Mixed_5d", 64)):
        b1 = net.conv(f"{name}.branch1x1", x, 64, 1)
        b5 = net.conv(f"{name}.branch5x5_2", net.conv(f"{name}.branch5x5_1", x, 48, 1), 64, 5)
        b3 = net.conv(f"{name}.branch3x3dbl_1", x, 64, 1)
        b3 = net.conv(f"{name}.branch3x3dbl_3",
                      net.conv(f"{name}.branch3x3dbl_2", b3, 96, 3), 96, 3)
        x = cat(b1, b5, b3, net.conv(f"{name}.branch_pool", x, pf, 1))
    b3 = net.conv("Mixed_6a.branch3x3", x, 384, 3, 2, 0)
    d = net.conv("Mixed_6a.branch3x3dbl_2", net.conv("Mixed_6a.branch3x3dbl_1", x, 64, 1), 96, 3)
    x = cat(b3, net.conv("Mixed_6a.branch3x3dbl_3", d, 96, 3, 2, 0), pool(x, 3, 2))
    for name, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        b1 = net.conv(f"{name}.branch1x1", x, 192, 1)
        b7 = net.conv(f"{name}.branch7x7_1", x, c7, 1)
        b7 = net.conv(f"{name}.branch7x7_2", b7, c7, (1, 7), 1, (0, 3))
        b7 = net.conv(f"{name}.branch7x7_3", b7, 192, (7, 1), 1, (3, 0))
        d = net.conv(f"{name}.branch7x7dbl_1", x, c7, 1)
        for j, (f, p, k) in enumerate((((7, 1), (3, 0), c7), ((1, 7), (0, 3), c7),
                                       ((7, 1), (3, 0), c7), ((1, 7), (0, 3), 192)), 2):
            d = net.conv(f"{name}.branch7x7dbl_{j}", d, k, f, 1, p)
        x = cat(b1, b7, d, net.conv(f"{name}.branch_pool", x, 192, 1))
    aux = pool(x, 5, 3)
    net.conv("AuxLogits.conv1", net.conv("AuxLogits.conv0", aux, 128, 1), 768, 5, 1, 0)
    b3 = net.conv("Mixed_7a.branch3x3_2", net.conv("Mixed_7a.branch3x3_1", x, 192, 1),
                  320, 3, 2, 0)
    d = net.conv("Mixed_7a.branch7x7x3_1", x, 192, 1)
    d = net.conv("Mixed_7a.branch7x7x3_2", d, 192, (1, 7), 1, (0, 3))
    d = net.conv("Mixed_7a.branch7x7x3_3", d, 192, (7, 1), 1, (3, 0))
    x = cat(b3, net.conv("Mixed_7a.branch7x7x3_4", d, 192, 3, 2, 0), pool(x, 3, 2))
    for name in ("Mixed_7b", "Mixed_7c"):
        b1 = net.conv(f"{name}.branch1x1", x, 320, 1)
        b3 = net.conv(f"{name}.branch3x3_1", x, 384, 1)
        b3 = cat(net.conv(f"{name}.branch3x3_2a", b3, 384, (1, 3), 1, (0, 1)),
                 net.conv(f"{name}.branch3x3_2b", b3, 384, (3, 1), 1, (1, 0)))
        d = net.conv(f"{name}.branch3x3dbl_2", net.conv(f"{name}.branch3x3dbl_1", x, 448, 1),
                     384, 3)
        d = cat(net.conv(f"{name}.branch3x3dbl_3a", d, 384, (1, 3), 1, (0, 1)),
                net.conv(f"{name}.branch3x3dbl_3b", d, 384, (3, 1), 1, (1, 0)))
        x = cat(b1, b3, d, net.conv(f"{name}.branch_pool", x, 192, 1))


def vgg16(net: Net) -> None:
    """torchvision vgg16 (configuration D) at 224x224."""
    x, i = Feat(3, (224, 224)), 0
    for block in ((64, 64), (128, 128), (256, 256, 256), (512, 512, 512), (512, 512, 512)):
        for k in block:
            x = net.conv(f"features.{i}", x, k, 3)
            i += 2
        x, i = pool(x, 2, 2), i + 1


def unet(net: Net) -> None:
    """U-Net (Ronneberger et al. 2015) with padded 3x3 convolutions, 2x2/2 transposed
    up-convolutions, 3 input channels and 2 classes at 256x256 (as dbs/manifests/unet.txt)."""
    x, skips = Feat(3, (256, 256)), []
    for i, k in enumerate((64, 128, 256, 512, 1024), 1):
        x = net.conv(f"enc{i}.conv_b", net.conv(f"enc{i}.conv_a", x, k, 3), k, 3)
        if i < 5:
            skips.append(x)
            x = pool(x, 2, 2)
    for i, k in zip((4, 3, 2, 1), (512, 256, 128, 64), strict=True):
        x = cat(skips.pop(), net.up_conv(f"dec{i}.up", x, k, 2, 2))
        x = net.conv(f"dec{i}.conv_b", net.conv(f"dec{i}.conv_a", x, k, 3), k, 3)
    net.conv("out", x, 2, 1)


def dcgan(net: Net) -> None:
    """DCGAN (Radford et al. 2016) as pytorch/examples dcgan: nz 100, ngf = ndf = 64, 64x64
    RGB images; generator of 4x4 transposed convolutions, discriminator of 4x4/2 ones."""
    x = net.up_conv("netG.0", Feat(100, (1, 1)), 512, 4, 1, 0)
    for i, k in zip((3, 6, 9, 12), (256, 128, 64, 3), strict=True):
        x = net.up_conv(f"netG.{i}", x, k, 4, 2, 1)
    x = net.conv("netD.0", x, 64, 4, 2, 1)
    for i, k in zip((2, 5, 8), (128, 256, 512), strict=True):
        x = net.conv(f"netD.{i}", x, k, 4, 2, 1)
    net.conv("netD.11", x, 1, 4, 1, 0)


def _sd_resnet(net: Net, name: str, x: Feat, out: int) -> Feat:
    """diffusers ResnetBlock2D: two 3x3 convolutions, a 1x1 shortcut when channels change."""
    y = net.conv(f"{name}.conv2", net.conv(f"{name}.conv1", x, out, 3), out, 3)
    if x.c != out:
        net.conv(f"{name}.conv_shortcut", x, out, 1)
    return y


def _sd_attention(net: Net, name: str, x: Feat) -> None:
    """diffusers Transformer2DModel of SD v1.5: 1x1 conv proj_in and proj_out around it."""
    net.conv(f"{name}.proj_out", net.conv(f"{name}.proj_in", x, x.c, 1), x.c, 1)


def sd15_unet(net: Net) -> None:
    """diffusers UNet2DConditionModel of Stable Diffusion v1.5 (runwayml/stable-diffusion-v1-5
    unet/config.json: block_out_channels 320/640/1280/1280, 2 layers per block, cross-attention
    in the first three down and last three up blocks with 1x1 conv proj_in/proj_out) at the
    64x64 latent of a 512x512 image."""
    chans, layers = (320, 640, 1280, 1280), 2
    x = net.conv("conv_in", Feat(4, (64, 64)), 320, 3)
    skips = [x]
    for i, out in enumerate(chans):
        for j in range(layers):
            x = _sd_resnet(net, f"down_blocks.{i}.resnets.{j}", x, out)
            if i < 3:
                _sd_attention(net, f"down_blocks.{i}.attentions.{j}", x)
            skips.append(x)
        if i < 3:
            x = net.conv(f"down_blocks.{i}.downsamplers.0.conv", x, out, 3, 2, 1)
            skips.append(x)
    x = _sd_resnet(net, "mid_block.resnets.0", x, 1280)
    _sd_attention(net, "mid_block.attentions.0", x)
    x = _sd_resnet(net, "mid_block.resnets.1", x, 1280)
    for i, out in enumerate(reversed(chans)):
        for j in range(layers + 1):
            x = _sd_resnet(net, f"up_blocks.{i}.resnets.{j}", cat(x, skips.pop()), out)
            if i > 0:
                _sd_attention(net, f"up_blocks.{i}.attentions.{j}", x)
        if i < 3:
            x = net.conv(f"up_blocks.{i}.upsamplers.0.conv", up(x), out, 3)
    net.conv("conv_out", x, 4, 3)


def sd15_vae(net: Net) -> None:
    """diffusers AutoencoderKL of Stable Diffusion v1.5 (vae/config.json: block_out_channels
    128/256/512/512, 2 layers per block, 4 latent channels): the encoder on a 512x512 image
    (its downsampling pads right and bottom by one, then a 3x3/2 convolution without padding)
    and the decoder from the 64x64 latent; the mid-block attention is Linear layers."""
    chans = (128, 256, 512, 512)
    x = net.conv("encoder.conv_in", Feat(3, (512, 512)), 128, 3)
    for i, out in enumerate(chans):
        for j in range(2):
            x = _sd_resnet(net, f"encoder.down_blocks.{i}.resnets.{j}", x, out)
        if i < 3:
            x = net.conv(f"encoder.down_blocks.{i}.downsamplers.0.conv",
                         Feat(x.c, tuple(s + 1 for s in x.size)), out, 3, 2, 0)
    for j in range(2):
        x = _sd_resnet(net, f"encoder.mid_block.resnets.{j}", x, 512)
    x = net.conv("quant_conv", net.conv("encoder.conv_out", x, 8, 3), 8, 1)
    z = net.conv("post_quant_conv", Feat(4, x.size), 4, 1)
    x = net.conv("decoder.conv_in", z, 512, 3)
    for j in range(2):
        x = _sd_resnet(net, f"decoder.mid_block.resnets.{j}", x, 512)
    for i, out in enumerate(reversed(chans)):
        for j in range(3):
            x = _sd_resnet(net, f"decoder.up_blocks.{i}.resnets.{j}", x, out)
        if i < 3:
            x = net.conv(f"decoder.up_blocks.{i}.upsamplers.0.conv", up(x), out, 3)
    net.conv("decoder.conv_out", x, 3, 3)


def _c3(net: Net, name: str, x: Feat, out: int, n: int, shortcut: bool = True) -> Feat:
    """YOLOv5's C3: two 1x1 halves, n bottlenecks (1x1, 3x3) on one, a 1x1 after the concat."""
    h = out // 2
    m = net.conv(f"{name}.cv1", x, h, 1)
    x2 = net.conv(f"{name}.cv2", x, h, 1)
    for b in range(n):
        m = net.conv(f"{name}.m.{b}.cv2", net.conv(f"{name}.m.{b}.cv1", m, h, 1), h, 3)
    del shortcut  # the residual add changes no shape
    return net.conv(f"{name}.cv3", cat(m, x2), out, 1)


def yolov5s(net: Net) -> None:
    """ultralytics/yolov5 models/yolov5s.yaml (v6.0 and later: 6x6/2 stem, SPPF; depth 0.33,
    width 0.50, 80 classes) at its native 640x640."""
    x = net.conv("model.0", Feat(3, (640, 640)), 32, 6, 2, 2)
    x = net.conv("model.1", x, 64, 3, 2)
    x = _c3(net, "model.2", x, 64, 1)
    x = net.conv("model.3", x, 128, 3, 2)
    p3 = _c3(net, "model.4", x, 128, 2)
    x = net.conv("model.5", p3, 256, 3, 2)
    p4 = _c3(net, "model.6", x, 256, 3)
    x = net.conv("model.7", p4, 512, 3, 2)
    x = _c3(net, "model.8", x, 512, 1)
    s = net.conv("model.9.cv1", x, 256, 1)
    x = net.conv("model.9.cv2", Feat(4 * s.c, s.size), 512, 1)
    h10 = net.conv("model.10", x, 256, 1)
    x = _c3(net, "model.13", cat(up(h10), p4), 256, 1, False)
    h14 = net.conv("model.14", x, 128, 1)
    out3 = _c3(net, "model.17", cat(up(h14), p3), 128, 1, False)
    x = net.conv("model.18", out3, 128, 3, 2)
    out4 = _c3(net, "model.20", cat(x, h14), 256, 1, False)
    x = net.conv("model.21", out4, 256, 3, 2)
    out5 = _c3(net, "model.23", cat(x, h10), 512, 1, False)
    for i, o in enumerate((out3, out4, out5)):
        net.conv(f"model.24.m.{i}", o, 255, 1)


def retinanet_resnet50_fpn(net: Net) -> None:
    """torchvision retinanet_resnet50_fpn: a 640x480 COCO image resized to 800 on its short
    side (1067x800) and padded to a multiple of 32 (1088x800); FPN on C3-C5 with P6/P7 from
    P5, 9 anchors, 91 classes."""
    c = resnet(net, Feat(3, (800, 1088)), (3, 4, 6, 3))
    levels = []
    for i, ci in enumerate(c[1:]):
        inner = net.conv(f"fpn.inner_blocks.{i}", ci, 256, 1)
        levels.append(net.conv(f"fpn.layer_blocks.{i}", inner, 256, 3))
    p6 = net.conv("fpn.extra_blocks.p6", levels[-1], 256, 3, 2, 1)
    levels += [p6, net.conv("fpn.extra_blocks.p7", p6, 256, 3, 2, 1)]
    for level in levels:
        for j in range(4):
            net.conv(f"head.classification_head.conv.{j}", level, 256, 3)
        net.conv("head.classification_head.cls_logits", level, 9 * 91, 3)
        net.conv("head.regression_head.bbox_reg", level, 9 * 4, 3)


def r2plus1d_18(net: Net) -> None:
    """torchvision r2plus1d_18: (2+1)-D blocks, each a 1x3x3 spatial and a 3x1x1 temporal
    convolution with the published mid-plane count, on 16 frames of 112x112."""
    x = net.conv("stem.0", Feat(3, (16, 112, 112)), 45, (1, 7, 7), (1, 2, 2), (0, 3, 3))
    x = net.conv("stem.3", x, 64, (3, 1, 1), 1, (1, 0, 0))
    for i, planes in enumerate((64, 128, 256, 512), 1):
        for b in range(2):
            at, s, cin = f"layer{i}.{b}", 2 if i > 1 and b == 0 else 1, x.c
            mid = (cin * planes * 27) // (cin * 9 + 3 * planes)
            y = x
            for j, (stride, c_in) in enumerate(((s, cin), (1, planes)), 1):
                y = net.conv(f"{at}.conv{j}.spatial", Feat(c_in, y.size), mid, (1, 3, 3),
                             (1, stride, stride), (0, 1, 1))
                y = net.conv(f"{at}.conv{j}.temporal", y, planes, (3, 1, 1), (stride, 1, 1),
                             (1, 0, 0))
            if s != 1 or cin != planes:
                net.conv(f"{at}.downsample", x, planes, 1, s)
            x = y


def r3d_18(net: Net) -> None:
    """torchvision r3d_18: 3x3x3 basic blocks on 16 frames of 112x112."""
    x = net.conv("stem", Feat(3, (16, 112, 112)), 64, (3, 7, 7), (1, 2, 2), (1, 3, 3))
    for i, planes in enumerate((64, 128, 256, 512), 1):
        for b in range(2):
            at, s = f"layer{i}.{b}", 2 if i > 1 and b == 0 else 1
            y = net.conv(f"{at}.conv2", net.conv(f"{at}.conv1", x, planes, 3, s), planes, 3)
            if s != 1 or x.c != planes:
                net.conv(f"{at}.downsample", x, planes, 1, s)
            x = y


def x3d_s(net: Net) -> None:
    """PyTorchVideo's X3D-S (`create_x3d`: width factor 2.0, depth factor 2.2, bottleneck
    factor 2.25, squeeze-and-excitation on every other block at 1/16 rounded to 8) on 13
    frames of 160x160: a 1x3x3 stem and a depthwise 5x1x1 temporal one, then bottlenecks of
    1x1x1, a depthwise 3x3x3 (spatial stride 2 in each stage's first block) and 1x1x1."""
    def round_width(width: float) -> int:  # pytorchvideo's round_width (divisor 8, min 8)
        out = max(8, int(width + 4) // 8 * 8)
        return out + 8 if out < 0.9 * width else out

    x = net.conv("s1.pathway0_stem.conv_xy", Feat(3, (13, 160, 160)), 24, (1, 3, 3),
                 (1, 2, 2), (0, 1, 1))
    x = net.conv("s1.pathway0_stem.conv_t", x, 24, (5, 1, 1), 1, (2, 0, 0), g=24)
    for i, (out, depth) in enumerate(((24, 3), (48, 5), (96, 11), (192, 7)), 2):
        inner = int(2.25 * out)
        for b in range(depth):
            at, s = f"s{i}.pathway0_res{b}", (1, 2, 2) if b == 0 else 1
            if b == 0:
                net.conv(f"{at}.branch1_conv", x, out, 1, s)
            y = net.conv(f"{at}.branch2.conv_a", x, inner, 1)
            y = net.conv(f"{at}.branch2.conv_b", y, inner, 3, s, g=inner)
            if b % 2 == 0:
                _se(net, f"{at}.branch2.se", y, round_width(inner * 0.0625))
            x = net.conv(f"{at}.branch2.conv_c", y, out, 1)
    x = net.conv("head.conv_5", x, 432, 1)
    net.conv("head.lin_5", Feat(432, (1, 1, 1)), 2048, 1)


def unet3d(net: Net) -> None:
    """3D U-Net (Cicek et al. 2016): per level two 3x3x3 convolutions (32-64, 64-128, 128-256,
    256-512), 2x2x2 max pooling, 2x2x2/2 transposed up-convolutions, 1x1x1 output to 3 classes;
    padded convolutions on a 1-channel 128x128x128 patch (nnU-Net's default 3-D patch)."""
    x, skips = Feat(1, (128, 128, 128)), []
    for i, (a, b) in enumerate(((32, 64), (64, 128), (128, 256), (256, 512)), 1):
        x = net.conv(f"analysis{i}.conv_b", net.conv(f"analysis{i}.conv_a", x, a, 3), b, 3)
        if i < 4:
            skips.append(x)
            x = pool(x, 2, 2)
    for i, k in zip((3, 2, 1), (256, 128, 64), strict=True):
        x = cat(skips.pop(), net.up_conv(f"synthesis{i}.up", x, x.c, 2, 2))
        x = net.conv(f"synthesis{i}.conv_b", net.conv(f"synthesis{i}.conv_a", x, k, 3), k, 3)
    net.conv("out", x, 3, 1)


def esrgan(net: Net) -> None:
    """ESRGAN's RRDBNet (xinntao/ESRGAN, BasicSR archs/rrdbnet_arch.py: 64 features, 23 RRDB
    blocks of dense blocks growing by 32, x4 by two nearest upsamplings) on a 512x512 image
    (a 2048x2048 result)."""
    x = net.conv("conv_first", Feat(3, (512, 512)), 64, 3)
    for j in range(5):
        net.conv(f"body.rdb.conv{j + 1}", Feat(64 + 32 * j, x.size), 32 if j < 4 else 64, 3)
    x = net.conv("conv_body", x, 64, 3)
    x = net.conv("conv_up1", up(x), 64, 3)
    x = net.conv("conv_up2", up(x), 64, 3)
    net.conv("conv_last", net.conv("conv_hr", x, 64, 3), 3, 3)


# ----------------------------------------------------------------------------- the zoo
@dataclass(frozen=True)
class Network:
    """A zoo entry: its walk, where its definition comes from, its batch and use."""

    name: str
    walk: Callable[[Net], None]
    source: str
    batch: int
    training: bool = True
    held_out: bool = False


_TV = "torchvision.models"
NETWORKS = (
    Network("resnet50", resnet50, f"{_TV}.resnet50 (v1.5)", 32),
    Network("resnext50_32x4d", resnext50_32x4d, f"{_TV}.resnext50_32x4d", 32),
    Network("mobilenet_v2", mobilenet_v2, f"{_TV}.mobilenet_v2", 32),
    Network("mobilenet_v3_large", mobilenet_v3_large, f"{_TV}.mobilenet_v3_large", 32),
    Network("efficientnet_b0", efficientnet_b0, f"{_TV}.efficientnet_b0", 32),
    Network("convnext_tiny", convnext_tiny, f"{_TV}.convnext_tiny", 32),
    Network("regnet_y_400mf", regnet_y_400mf, f"{_TV}.regnet_y_400mf", 32),
    Network("shufflenet_v2_x1_0", shufflenet_v2_x1_0, f"{_TV}.shufflenet_v2_x1_0", 32),
    Network("squeezenet1_1", squeezenet1_1, f"{_TV}.squeezenet1_1", 32),
    Network("densenet121", densenet121, f"{_TV}.densenet121", 32),
    Network("inception_v3", inception_v3, f"{_TV}.inception_v3", 32),
    Network("vgg16", vgg16, f"{_TV}.vgg16", 32),
    Network("deeplabv3_resnet50", deeplabv3_resnet50,
            f"{_TV}.segmentation.deeplabv3_resnet50", 8),
    Network("unet", unet, "Ronneberger et al. 2015 (U-Net), padded as dbs/manifests/unet.txt", 8),
    Network("dcgan", dcgan, "pytorch/examples dcgan/main.py (Generator, Discriminator)", 64),
    Network("sd15_unet", sd15_unet, "diffusers UNet2DConditionModel, Stable Diffusion v1.5", 2,
            training=False),
    Network("sd15_vae", sd15_vae, "diffusers AutoencoderKL, Stable Diffusion v1.5", 1,
            training=False),
    Network("yolov5s", yolov5s, "ultralytics/yolov5 models/yolov5s.yaml (v6.0+)", 16),
    Network("retinanet_resnet50_fpn", retinanet_resnet50_fpn,
            f"{_TV}.detection.retinanet_resnet50_fpn", 2),
    Network("r2plus1d_18", r2plus1d_18, f"{_TV}.video.r2plus1d_18", 8),
    Network("unet3d", unet3d, "Cicek et al. 2016 (3D U-Net), padded", 2),
    Network("esrgan", esrgan, "xinntao/ESRGAN RRDBNet (BasicSR rrdbnet_arch.py), x4", 1,
            training=False),
    Network("resnext101_64x4d", resnext101_64x4d, f"{_TV}.resnext101_64x4d", 32,
            held_out=True),
    Network("mobilenet_v3_small", mobilenet_v3_small, f"{_TV}.mobilenet_v3_small", 32,
            held_out=True),
    Network("mnasnet1_0", mnasnet1_0, f"{_TV}.mnasnet1_0", 32, held_out=True),
    Network("fcn_resnet50", fcn_resnet50, f"{_TV}.segmentation.fcn_resnet50", 8,
            held_out=True),
    Network("r3d_18", r3d_18, f"{_TV}.video.r3d_18", 8, held_out=True),
    Network("x3d_s", x3d_s, "pytorchvideo.models.x3d.create_x3d (X3D-S: 13x160x160)", 8,
            held_out=True),
)

# Why each network runs at the batch it does (the manifests' headers say it too).
_BATCH_WHY = {32: "torchvision's classification reference, per GPU",
              8: "a segmentation or video training batch per GPU",
              64: "pytorch/examples dcgan's default", 16: "yolov5 train.py's default",
              2: "two images per GPU (torchvision's detection reference; nnU-Net's 3-D batch; "
                 "classifier-free guidance's two latents)",
              1: "one image"}


def distinct_layers(network: Network) -> list[tuple[str, int, Conv]]:
    """(first layer name, how many layers share it, geometry) of each distinct convolution,
    in the order the network first meets them."""
    net = Net(network.name)
    network.walk(net)
    seen: dict[Conv, list] = {}
    for name, conv in net.layers:
        entry = seen.setdefault(conv, [name, 0])
        entry[1] += 1
    return [(name, count, conv) for conv, (name, count) in seen.items()]


def driver_line(conv: Conv, batch: int, dtype: str, layout: str, forw: int) -> str:
    """The MIOpenDriver line of one convolution (the library's `to_driver_line`)."""
    from miopenkernels.driver import to_driver_line
    from miopenkernels.problem import ConvProblem

    lay = layout if len(conv.size) == 2 else {"NCHW": "NCDHW", "NHWC": "NDHWC"}[layout]
    p = ConvProblem(n=batch, c=conv.c, k=conv.k, in_spatial=conv.size, filter=conv.filter,
                    pad=conv.pad, stride=conv.stride, dilation=conv.dilation,
                    groups=conv.groups, in_layout=lay, in_type=dtype,
                    mode="trans" if conv.transposed else "conv")
    return to_driver_line(p).replace(" -F 1 ", f" -F {forw} ")


def _describe(conv: Conv) -> str:
    f = "x".join(map(str, conv.filter))
    s = max(conv.stride)
    words = [f"{f}{f'/{s}' if s > 1 else ''}", f"{conv.c}->{conv.k}",
             "at " + "x".join(map(str, conv.size))]
    if conv.groups > 1:
        words.append("depthwise" if conv.groups == conv.c else f"groups {conv.groups}")
    if max(conv.dilation) > 1:
        words.append(f"dilation {max(conv.dilation)}")
    if conv.transposed:
        words.append("transposed")
    return " ".join(words)


def manifest_text(network: Network) -> str:
    """The manifest of one network: header, then an FP16 and an FP32 section."""
    layers = distinct_layers(network)
    three_d = len(layers[0][2].size) == 3
    lay16, lay32 = ("NDHWC", "NCDHW") if three_d else ("NHWC", "NCHW")
    use16 = ("training: forward, backward data, backward weights" if network.training
             else "inference: forward")
    lines = [f"# {network.name}: the {len(layers)} distinct convolutions of {network.source},",
             "# walked from its layer list by bench/zoo_shapes.py (do not edit: regenerate).",
             f"# Batch {network.batch}: {_BATCH_WHY[network.batch]}.",
             "# Held out: kept out of tuning and of the ranking's fit (dbs/manifests/README)."
             if network.held_out else "# Zoo: tuned and fitted on (dbs/manifests/README).", "",
             f"# {lay16} FP16, batch {network.batch}, {use16}"]
    for dtype, layout, forw in (("FP16", "NHWC", 0 if network.training else 1),
                                ("FP32", "NCHW", 1)):
        if dtype == "FP32":
            lines += ["", f"# {lay32} FP32, batch {network.batch}, inference: forward"]
        for name, count, conv in layers:
            times = f" (x{count})" if count > 1 else ""
            lines.append(f"# {name}{times}: {_describe(conv)}")
            lines.append(driver_line(conv, network.batch, dtype, layout, forw))
    return "\n".join(lines) + "\n"


def manifest_file(network: Network) -> Path:
    return (HELD_OUT_DIR if network.held_out else ZOO_DIR) / f"{network.name}.txt"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for network in NETWORKS:
        path, text = manifest_file(network), manifest_text(network)
        if check:
            if not path.is_file() or path.read_text() != text:
                stale.append(str(path.relative_to(ROOT)))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"{path.relative_to(ROOT)}: {len(distinct_layers(network))} convolutions")
    if stale:
        print(f"zoo_shapes: stale manifests (run python bench/zoo_shapes.py): {', '.join(stale)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

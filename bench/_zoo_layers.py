"""The model zoo's layers for the benchmarks (bench/zoo.py re-exports every name here): the
distinct convolutions of dbs/manifests/zoo/*.txt and, on request, of its held_out/ networks,
each as a named forward FP32 problem; their classes, a sample of them, one as a problem of a
case, and a problem's tensor size."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ZOO_DIR = HERE.parent / "dbs" / "manifests" / "zoo"
HELD_OUT_DIR = ZOO_DIR / "held_out"
BATCHES = (32, 8, 1)
CLASSES = ("grouped", "depthwise", "3-D", "few-channel", "dilated", "transposed", "plain")
FEW_CHANNELS = 4  # image heads (3 channels) and latents (4) on one side of the layer
_LAYOUT_3D = {"NCHW": "NCDHW", "NHWC": "NDHWC"}


# ----------------------------------------------------------------------------- layers
@dataclass(frozen=True)
class Layer:
    """One distinct convolution of a zoo network: its name and its forward FP32 problem."""

    network: str
    name: str
    problem: Any  # ConvProblem
    held_out: bool = False


def manifest_files(held_out: bool = False) -> list[tuple[Path, bool]]:
    """(manifest, held out) of the zoo, and of the held-out networks when asked."""
    out = [(p, False) for p in sorted(ZOO_DIR.glob("*.txt"))]
    if held_out:
        out += [(p, True) for p in sorted(HELD_OUT_DIR.glob("*.txt"))]
    return out


def read_layers(path: Path, held_out: bool = False) -> list[Layer]:
    """The named layers of one zoo manifest: its FP32 lines, each after its name's comment."""
    from miopenkernels.driver import parse_driver_line

    layers, name = [], ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line.startswith("#"):
            name = re.sub(r" \(x\d+\)$", "", line[1:].split(":", 1)[0].strip())
        elif line.startswith("conv "):
            for p in parse_driver_line(line):
                layers.append(Layer(path.stem, name, p, held_out))
    return layers


def load_layers(networks: Iterable[str] | None = None, held_out: bool = False) -> list[Layer]:
    """Every zoo layer (of the named networks only, when given)."""
    wanted = set(networks or ())
    # A held-out network named on its own is measured too (and reported apart).
    return [layer for path, held in manifest_files(held_out or bool(wanted))
            if not wanted or path.stem in wanted for layer in read_layers(path, held)]


def every_kth(layers: list[Layer], k: int) -> list[Layer]:
    """The first, (k+1)-th, (2k+1)-th, ... layer of each network's layers of one set of classes
    (`layer_classes`), in the manifests' order: every class a network has stays."""
    seen: dict[tuple, int] = {}
    out = []
    for layer in layers:
        group = (layer.network, layer_classes(layer.problem))
        i = seen[group] = seen.get(group, -1) + 1
        if i % k == 0:
            out.append(layer)
    return out


def pointwise(p: Any) -> bool:
    """A 1x1 layer at stride 1 without padding, ungrouped: one GEMM in every direction."""
    return p.groups == 1 and all(v == 1 for v in (*p.filter, *p.stride)) and not any(p.pad)


def layer_problem(layer: Layer, type_name: str, direction: str, layout: str,
                  batch: int) -> Any:
    """The layer as a problem of one case (TF32 problems are FP32 ones; 3-D layers take
    the 3-D spelling of the layout)."""
    p = layer.problem
    storage = "FP32" if type_name == "TF32" else type_name
    lay = _LAYOUT_3D[layout] if p.spatial_dim == 3 else layout
    return replace(p, n=batch, direction=direction, in_type=storage, wei_type=storage,
                   out_type=storage, in_layout=lay, wei_layout=lay, out_layout=lay)


def layer_classes(p: Any) -> tuple[str, ...]:
    """The classes a layer belongs to (several, or `plain` when none)."""
    out = []
    if p.groups > 1:
        out.append("depthwise" if p.c == p.groups else "grouped")
    if p.spatial_dim == 3:
        out.append("3-D")
    if min(p.c, p.k) <= FEW_CHANNELS:
        out.append("few-channel")
    if max(p.dilation) > 1:
        out.append("dilated")
    if p.mode == "trans":
        out.append("transposed")
    return tuple(out) or ("plain",)



def tensor_gb(p: Any) -> float:
    """x, w and y of one problem, in GB (the problem's storage type)."""
    from miopenkernels.problem import TYPE_BYTES

    elems = sum(math.prod(s) for s in (p.in_shape, p.wei_shape, p.out_shape))
    return elems * TYPE_BYTES[p.in_type] / 1e9

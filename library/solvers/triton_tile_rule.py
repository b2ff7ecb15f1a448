"""The tile rule of the Triton implicit GEMM on layers no one tuned.

A case's usual tile (the tuned table's `defaults`) was fitted to ResNet-50 at batch 32. On the
zoo's small layers (1 to 20 pixels a side at batch 32) it leaves most of the GPU idle, and on
its few-channel first layers the few-channel kernel's usual tile is mostly padding; a handful
of other tiles ran 1.2-2x faster there. Per case the tuned table's `tile_rule` (fitted by
bench/tile_rule_fit.py on bench/solver_alternatives.py's timings of the zoo's networks, the
held-out ones scored apart) holds those tiles with a cost model each: time = a + b * waves *
steps + c * waves (`spec.tile_terms`, `spec.rule_tile`). A problem of a case with a rule, whose
GEMM is no larger than the rule's largest fitted one, no tuned record of its own and no
small-grid rule (solvers/triton_small_grid.py), takes the tile of least predicted time; its
defaults then rank alone, as the small grid's do. FP16 and BF16 (which takes FP16's rule), IEEE
math; the forward, backward-data and few-channel forward kernels.

Ahead of the fitted rules, grouped layers of 16 or 32 channels and as many filters a group
(ResNeXt's layer3 and layer4) take a tile as wide as a group (`narrow_group_config`): the
fitted tiles' 64-wide reduction block over 16 channels is three quarters zeros, and their
32-wide columns over 16 filters half. bench/solver_alternatives.py timed four narrow tiles
against the tile each ran before on those layers of two ResNeXts (bench/results/
narrow_groups_h200.json): 128 rows by the group's width was the fastest or within 2% in every
direction, layout and width, 0.18-0.66 of the time before (geomean per case and width). In
NCHW the channel-planar kernel at that tile took 0.43-0.93 of the route through NHWC (the
narrow NHWC kernel's time plus the copies the Via solvers' last FP16 run measured on six of
those layers, bench/results/zoo_h200-fb-b055ca9), so such NCHW problems stay on their own
kernel (triton_conv_relayout). The survey timed FP16; BF16, the same matrix instructions
over the same bytes, takes the same tile untimed, as it takes FP16's fitted rules.
Channels-last backward weights of the same layers take 64 rows by the group's width by 64,
unsplit (`NARROW_WRW_TILE`): against the split 64x64x64 tile they ran, 0.67-0.77 of the time
at 16 a group and 0.66-0.72 at 32 a group (2.63 -> 1.86x cuDNN geomean over the eight
layers, bench/results/narrow_groups_w_h200.json); in NCHW, whose tiles were narrow already,
no tile of the five was faster overall, so NCHW keeps its own.
"""

from __future__ import annotations

from functools import lru_cache

from ..problem import ConvProblem
from ..target import Target
from .triton_common import problem_view, spec_module, spec_sizes, target_kind
from .triton_small_grid import small_grid_config

__all__ = ["FEW_FILTERS", "NARROW_GROUP_WIDTHS", "RULE_KERNELS", "few_filter_config",
           "narrow_group_config", "rule_case", "tile_rule_config", "tile_rule_configs"]

#: The kernels the tile rules were fitted on, and the suffix of each one's rule case.
RULE_KERNELS = {"conv2d_fwd": "", "conv2d_bwd_data": "", "conv2d_fwd_smallc": "-few"}


def rule_case(case: str, kernel: str) -> str | None:
    """The tile rule's case of a kernel (the tuned case `<type>-<direction>-<layout>`, `-few`
    for the few-channel kernel), or None for a kernel no rule was fitted on."""
    suffix = RULE_KERNELS.get(kernel)
    return None if suffix is None else case + suffix


#: The group widths (channels = filters a group) that take a tile as wide as a group, the
#: kernels, target kinds and types it applies to, and its rows, stages and warps.
NARROW_GROUP_WIDTHS = (16, 32)
NARROW_GROUP_KERNELS = ("conv2d_fwd", "conv2d_bwd_data", "conv2d_bwd_weight")
NARROW_GROUP_KINDS = ("sm90",)
NARROW_GROUP_TYPES = ("FP16", "BF16")
NARROW_GROUP_TILE = {"BLOCK_M": 128, "GROUP_M": 8, "SPLIT_K": 1, "num_warps": 4,
                     "num_stages": 3}
#: Backward weights' narrow tile (channels-last alone): BLOCK_N the group's width.
NARROW_WRW_TILE = {"BLOCK_M": 64, "BLOCK_K": 64, "GROUP_M": 8, "SPLIT_K": 1, "num_warps": 4,
                   "num_stages": 3}


def _narrow_tile(width: int, kernel: str = "conv2d_fwd") -> dict[str, int]:
    """The tile of groups `width` wide: NARROW_GROUP_TILE, BLOCK_N = BLOCK_K = width; for
    backward weights NARROW_WRW_TILE, BLOCK_N = width."""
    if kernel == "conv2d_bwd_weight":
        return {**NARROW_WRW_TILE, "BLOCK_N": width}
    return {**NARROW_GROUP_TILE, "BLOCK_N": width, "BLOCK_K": width}


def _narrow_kernel(kernel: str, channels_last: bool) -> bool:
    """A kernel and layout the narrow tile applies to: forward and backward data in both
    layouts, backward weights channels-last."""
    return kernel in NARROW_GROUP_KERNELS and (kernel != "conv2d_bwd_weight" or channels_last)


@lru_cache(maxsize=4096)
def narrow_group_config(problem: ConvProblem, target: Target, math: str
                        ) -> dict[str, int] | None:
    """The tile as wide as a group for a grouped 16-bit 2-D problem of the forward or
    backward-data kernel (or the channels-last backward weights) whose groups are
    NARROW_GROUP_WIDTHS channels and as many filters, on a NARROW_GROUP_KINDS target, in IEEE
    math; None elsewhere and for a layer the tuned table holds."""
    p = problem
    kind = target_kind(target.arch)
    if math != "ieee" or kind not in NARROW_GROUP_KINDS or p.groups == 1 or \
            len(p.in_spatial) != 2 or p.in_type not in NARROW_GROUP_TYPES or \
            not p.in_type == p.wei_type == p.out_type:
        return None
    view, _, kernel, cl = problem_view(p)
    sizes = spec_sizes(view)
    if not _narrow_kernel(kernel, cl) or sizes["C"] != sizes["K"] or \
            sizes["C"] not in NARROW_GROUP_WIDTHS:
        return None
    spec = spec_module()
    if spec.measured(kind, f"{p.in_type}-{view.direction}-{'NHWC' if cl else 'NCHW'}", sizes):
        return None
    config = {**spec.default_config(kernel, p.in_type), **_narrow_tile(sizes["C"], kernel)}
    return config if spec.is_legal(config, p.in_type, kind, kernel) else None


#: Layers of few filters (image and latent outputs): a 16-wide filter tile over 128 positions,
#: a long reduction block. bench/solver_alternatives.py on the zoo's layers of 1-8 filters
#: (bench/results/fewk_h100-6a76905/alt.json, H100): on those of many positions and a 3x3
#: reduction of at least two blocks, 128x16x64 took 0.98-1.07 of cuDNN in FP16 and BF16 NHWC
#: (the padded solver; its usual tile 1.12-2.06) and 0.98-1.51 in NCHW (the channel-planar
#: kernel; its usual tile 2.49-3.59), the three-product FP32 kernel at 128x16x32 0.75-0.84 in
#: NCHW (its usual tile 0.96-1.34). On the one such layer of aligned filters (the VAE
#: encoder's 512 -> 8, NHWC, the plain kernel) it took 2.26 against 2.80 in FP16 but 2.25
#: against 1.76 in BF16. Positions fewer than FEW_FILTER_ROWS (one-position squeeze layers,
#: DCGAN's 4x4 head) and reductions shorter than two blocks (a 1x1 over 8 channels: 4.8x
#: against 1.8x) were slower on it.
FEW_FILTERS = 8
FEW_FILTER_ROWS = 4096
FEW_FILTER_KINDS = ("sm90",)
FEW_FILTER_TILES = {
    ("FP16", "ieee"): {"BLOCK_M": 128, "BLOCK_N": 16, "BLOCK_K": 64, "GROUP_M": 8,
                       "SPLIT_K": 1, "num_warps": 4, "num_stages": 3},
    ("FP32", "tf32x3"): {"BLOCK_M": 128, "BLOCK_N": 16, "BLOCK_K": 32, "GROUP_M": 8,
                         "SPLIT_K": 1, "num_warps": 4, "num_stages": 3},
}


def _few_filter_tile(data_type: str, math: str) -> dict[str, int] | None:
    return FEW_FILTER_TILES.get(("FP16" if data_type == "BF16" else data_type, math))


@lru_cache(maxsize=4096)
def few_filter_config(problem: ConvProblem, target: Target, math: str) -> dict[str, int] | None:
    """FEW_FILTER_TILES' tile for a 2-D forward problem of the implicit GEMM's conv2d_fwd
    kernel of one group and at most FEW_FILTERS filters, FEW_FILTER_ROWS positions or more and
    a reduction of two blocks or more, on a FEW_FILTER_KINDS target; None elsewhere and for a
    layer the tuned table holds."""
    p = problem
    tile = _few_filter_tile(p.in_type, math)
    if tile is None or target_kind(target.arch) not in FEW_FILTER_KINDS or p.groups != 1 or \
            len(p.in_spatial) != 2 or not p.in_type == p.wei_type == p.out_type:
        return None
    view, _, kernel, cl = problem_view(p)
    if kernel != "conv2d_fwd":
        return None
    z = spec_sizes(view)
    if z["K"] > FEW_FILTERS or z["N"] * z["P"] * z["Q"] < FEW_FILTER_ROWS or \
            z["C"] * z["R"] * z["S"] < 2 * tile["BLOCK_K"]:
        return None
    spec = spec_module()
    kind = target_kind(target.arch)
    if spec.measured(kind, f"{p.in_type}-F-{'NHWC' if cl else 'NCHW'}", z):
        return None
    config = {**spec.default_config(kernel, p.in_type), **tile}
    return config if spec.is_legal(config, p.in_type, kind, kernel) else None


@lru_cache(maxsize=4096)
def tile_rule_config(problem: ConvProblem, target: Target, math: str) -> dict[str, int] | None:
    """The tile rule's configuration for a problem of the implicit GEMM in `math`, or None
    where no rule covers it: another math or kind, a kernel or case without a rule, a GEMM
    larger than the rule's largest, a layer the tuned table holds, a small grid's problem, or
    an illegal tile. Groups as narrow as NARROW_GROUP_WIDTHS take `narrow_group_config`,
    layers of few filters `few_filter_config`."""
    p = problem
    few = few_filter_config(problem, target, math)
    if few is not None:
        return few
    narrow = narrow_group_config(problem, target, math)
    if narrow is not None:
        return narrow
    kind = target_kind(target.arch)
    if math != "ieee" or kind is None or not p.in_type == p.wei_type == p.out_type:
        return None
    spec = spec_module()
    if not hasattr(spec, "tile_rule"):
        return None
    view, _, kernel, cl = problem_view(p)
    case = f"{p.in_type}-{view.direction}-{'NHWC' if cl else 'NCHW'}"
    which = rule_case(case, kernel)
    rule = spec.tile_rule(kind, which) if which else None
    if rule is None:
        return None
    sizes = spec_sizes(view)
    largest = int(rule.get("largest_m", 0))
    if largest and spec.gemm_dims(kernel, sizes)[0] > largest:
        return None
    if spec.measured(kind, case, sizes):
        return None  # its own record
    if small_grid_config(p, target, math) is not None:
        return None
    config = spec.rule_tile(rule, kernel, sizes, target.cu)
    if config is None:
        return None
    config = {**spec.default_config(kernel, p.in_type), **config}
    return config if spec.is_legal(config, p.in_type, kind, kernel) else None


def tile_rule_configs(kind: str, data_type: str, math: str, channels_last: bool, kernel: str
                      ) -> list[dict[str, int]]:
    """Every legal configuration a case's tile rule may give a kernel on a kind (the objects
    a package ships for it)."""
    spec = spec_module()
    which = rule_case(f"{data_type}-{spec.KERNELS[kernel]['direction']}-"
                      f"{'NHWC' if channels_last else 'NCHW'}", kernel)
    few = _few_filter_tile(data_type, math)
    few_tiles = [{**spec.default_config(kernel, data_type), **few}] \
        if few is not None and kind in FEW_FILTER_KINDS and kernel == "conv2d_fwd" else []
    if math != "ieee":
        return [c for c in few_tiles if spec.is_legal(c, data_type, kind, kernel)]
    tiles = list(spec.rule_tiles(kind, which)) if which and hasattr(spec, "rule_tiles") else []
    if kind in NARROW_GROUP_KINDS and _narrow_kernel(kernel, channels_last) and \
            data_type in NARROW_GROUP_TYPES:
        tiles += [_narrow_tile(w, kernel) for w in NARROW_GROUP_WIDTHS]
    configs = [*({**spec.default_config(kernel, data_type), **c} for c in tiles), *few_tiles]
    return [c for c in configs if spec.is_legal(c, data_type, kind, kernel)]

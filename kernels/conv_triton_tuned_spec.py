"""The tuned tables of the Triton implicit-GEMM kernels (kernels/conv_triton_tuned_<kind>.json)
and the rules read from them: a layer's measured configuration or its case's usual one
(`tuned_config`, `usual_config`), the small-grid forward split (`small_grid_rule`,
`small_grid_split`), the backward-weights tile and split (`WrwRule`, `wrw_split`) and the tile
rule of untuned forward and backward-data layers (`tile_rule`, `rule_tile`, `rule_tiles`).

Standard library only, so the runtime reads it without Triton; `conv_triton_spec` re-exports
every name here.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from .conv_triton_grid_spec import (
    grid,
    kernel_for,
    packed_tile,
    reduction_steps,
    split_applies,
    split_for,
)
from .conv_triton_kernels_spec import KERNELS, cdiv

#: Tile configurations measured fastest per ResNet-50 layer on a target kind (written by
#: bench/triton_conv.py --tuned from its committed results): starting points and search space
#: for tuning, keyed `<type>-<direction>-<layout>` (type FP16/BF16/FP32/TF32, or FP32X3 for the
#: three-TF32-product solvers), then shape_key.
TUNED_FILES = {"sm90": "conv_triton_tuned_sm90.json"}


def shape_key(sizes: Mapping[str, int]) -> str:
    """A problem's sizes as one string (C, K per group): the key of the tuned tables."""
    z = sizes
    return (f"n{z['N']}c{z['C']}h{z['H']}w{z['W']}k{z['K']}r{z['R']}s{z['S']}g{z['G']}"
            f"u{z['stride_h']}v{z['stride_w']}p{z['pad_h']}q{z['pad_w']}"
            f"l{z['dil_h']}j{z['dil_w']}")


@cache
def tuned_table(kind: str) -> dict[str, Any] | None:
    """A kind's tuned table ({"configs": {case: {shape_key: config}}, "defaults": {case:
    config}, ...}), read once per process; None for a kind without one."""
    name = TUNED_FILES.get(kind)
    if name is None:
        return None
    import json  # here: the runtime's start-up reads no tuning table

    table: dict[str, Any] = json.loads(Path(__file__).with_name(name).read_text())
    return table


def tuned_config(kind: str, case: str, sizes: Mapping[str, int], kernel: str = ""
                 ) -> dict[str, int] | None:
    """The measured best configuration of `case` (e.g. "FP16-F-NHWC") for a problem on a
    target kind: the layer's own where it was measured, else the case's usual winner
    (`usual_config`, for `kernel` where given); None where nothing was measured for the kind
    or case."""
    table = tuned_table(kind)
    packed_kernel = bool(kernel) and bool(KERNELS[kernel].get("packed"))
    if table is None:
        return usual_config(kind, case, kernel) if packed_kernel else None
    own = table["configs"].get(case, {}).get(shape_key(sizes))
    return dict(own) if own else usual_config(kind, case, kernel)


def measured(kind: str, case: str, sizes: Mapping[str, int]) -> bool:
    """Whether a kind's tuned table holds this very problem of `case` (not only the case's
    usual tile)."""
    table = tuned_table(kind)
    return bool(table and table["configs"].get(case, {}).get(shape_key(sizes)))


def small_grid_rule(kind: str, case: str) -> tuple[dict[str, int], float, int] | None:
    """A forward case's small-grid rule on a target kind (the tuned table's `small_grid`,
    fitted by bench/small_grid_fit.py): (tile configuration, what the reduce launch of a split
    costs in BLOCK_K steps, how many of the tile's programs an SM runs at once; see
    `small_grid_split`), or None where the table has none."""
    table = tuned_table(kind)
    rule = ((table or {}).get("small_grid") or {}).get("rules", {}).get(case)
    if not rule:
        return None
    return (dict(rule["config"]), float(rule["reduce_steps"]),
            int(rule.get("programs_per_sm", 1)))


class WrwRule(NamedTuple):
    """A backward-weights case's tile and split rule on a target kind (the tuned table's
    `wrw_rule`, fitted by bench/split_fit.py on bench/split_sweep.py's timings): problems
    whose per-group C and K are both at least `large_channels` take the `large` tile, the
    others the case's usual one; each splits by `split_for` with its own `waves` and `least`
    steps a part."""

    large_channels: int
    large: tuple[tuple[str, int], ...]
    large_waves: int
    large_least: int
    waves: int
    least: int

    def tile(self, sizes: Mapping[str, int], usual: Mapping[str, int]
             ) -> tuple[dict[str, int], int, int]:
        """(tile configuration, waves, least) of a problem."""
        if min(int(sizes["C"]), int(sizes["K"])) >= self.large_channels:
            return dict(self.large), self.large_waves, self.large_least
        return dict(usual), self.waves, self.least


#: The largest split a rule gives: the largest its fit timed (bench/split_sweep.py's splits).
RULE_MOST = 64


def wrw_rule(kind: str, case: str, kernel: str = "conv2d_bwd_weight") -> WrwRule | None:
    """A backward-weights case's rule on a target kind (`WrwRule`), or None where the tuned
    table has none or `kernel` is not the one it was fitted on (conv2d_bwd_weight)."""
    if kernel != "conv2d_bwd_weight":
        return None
    table = tuned_table(kind)
    rule = ((table or {}).get("wrw_rule") or {}).get("rules", {}).get(case)
    if not rule:
        return None
    return WrwRule(int(rule["large_channels"]), tuple(sorted(rule["large"].items())),
                   int(rule["large_waves"]), int(rule["large_least"]), int(rule["waves"]),
                   int(rule["least"]))


def wrw_split(kind: str, case: str, kernel: str, sizes: Mapping[str, int],
              usual: Mapping[str, int], sms: int) -> dict[str, int]:
    """A backward-weights problem's tile and SPLIT_K: the rule's (`wrw_rule`) where the kind
    has one for the case, else the usual tile split by `split_for`'s defaults."""
    rule = wrw_rule(kind, case, kernel)
    tile, waves, least = rule.tile(sizes, usual) if rule else (dict(usual), None, None)
    most = RULE_MOST if rule else None
    return {**tile, "SPLIT_K": int(split_for(kernel, sizes, tile, sms, waves, least, most))}


def wrw_tiles(kind: str, case: str, kernel: str, usual: Mapping[str, int]
              ) -> list[dict[str, int]]:
    """The tiles `wrw_split` may give a case's problems (the package ships each at every
    split)."""
    rule = wrw_rule(kind, case, kernel)
    return [dict(usual)] + ([dict(rule.large)] if rule else [])


def tile_rule(kind: str, case: str) -> dict[str, Any] | None:
    """A case's tile rule on a target kind (the tuned table's `tile_rule`, fitted by
    bench/tile_rule_fit.py; `case` is `<type>-<direction>-<layout>`, with `-few` for the
    few-channel forward kernel; BF16 takes FP16's): {"largest_m": the GEMM rows of the largest
    layer it was fitted on (0: any), "tiles": [{config, per_sm, a_ms, b_ms, c_ms}]}, or None where
    the table has none."""
    table = tuned_table(kind)
    rules = ((table or {}).get("tile_rule") or {}).get("rules", {})
    rule = (rules.get(case) or rules.get(case.replace("BF16-", "FP16-", 1))) \
        if case.startswith(("FP16-", "BF16-")) else rules.get(case)
    return dict(rule) if rule else None


def tile_terms(kernel: str, sizes: Mapping[str, int], config: Mapping[str, int], sms: int,
               per_sm: int) -> tuple[int, int]:
    """(waves, steps) of a launch: its programs over `sms` x `per_sm` slots, and the BLOCK_K
    steps of one program's part of the reduction."""
    split = int(config.get("SPLIT_K", 1))
    gx, gy, gz = grid(kernel, sizes, {**config, "SPLIT_K": split})
    return cdiv(gx * gy * gz, max(1, sms * per_sm)), \
        cdiv(reduction_steps(kernel, sizes, config), split)


def rule_tile(rule: Mapping[str, Any], kernel: str, sizes: Mapping[str, int], sms: int,
              among: list[dict[str, int]] | None = None) -> dict[str, int] | None:
    """The configuration of a tile rule (`tile_rule`) of least predicted time for a problem,
    a_ms + b_ms x waves x steps + c_ms x waves (`tile_terms`; of those `among`, where given);
    a split tile only where the problem may split. None where no tile is left."""
    best: tuple[float, dict[str, int]] | None = None
    for tile in rule["tiles"]:
        config = {k: int(v) for k, v in tile["config"].items()}
        if among is not None and config not in among:
            continue
        if config.get("SPLIT_K", 1) > 1 and not split_applies(kernel, sizes):
            continue
        waves, steps = tile_terms(kernel, sizes, config, sms, int(tile["per_sm"]))
        cost = float(tile["a_ms"]) + float(tile["b_ms"]) * waves * steps + \
            float(tile.get("c_ms", 0.0)) * waves
        if best is None or cost < best[0]:
            best = (cost, config)
    return None if best is None else dict(best[1])


def rule_tiles(kind: str, case: str) -> list[dict[str, int]]:
    """Every configuration a case's tile rule may give (the package ships each)."""
    rule = tile_rule(kind, case)
    return [{k: int(v) for k, v in t["config"].items()} for t in (rule or {}).get("tiles", ())]


def small_grid_split(programs: int, steps: int, sms: int, reduce_steps: float,
                     most: int = 16, per_sm: int = 1) -> int:
    """The SPLIT_K (a power of two up to `most`) of a small-grid forward launch of `programs`
    tiles and `steps` BLOCK_K steps each that costs least, a cost being the steps each part
    runs times the waves its programs take (`per_sm` programs on each of `sms` SMs at once),
    plus `reduce_steps` for the reduce launch of any split. A split keeps at least 2 steps per
    part and 4 programs an SM at most (what bench/serial_split.py and
    bench/split_in_model.py measure)."""
    slots = sms * max(1, per_sm)
    best, best_cost = 1, float(steps) * cdiv(programs, slots)
    split = 2
    while split <= most and steps >= 2 * split and programs * split <= 4 * sms:
        cost = cdiv(steps, split) * cdiv(programs * split, slots) + reduce_steps
        if cost < best_cost:
            best, best_cost = split, cost
        split *= 2
    return best


@cache
def _shape_key_pattern() -> Any:
    """The compiled pattern of shape_key (made on first use: start-up compiles none)."""
    import re

    return re.compile(r"n(\d+)c(\d+)h(\d+)w(\d+)k(\d+)r(\d+)s(\d+)g(\d+)"
                      r"u(\d+)v(\d+)p(\d+)q(\d+)l(\d+)j(\d+)")


def shape_sizes(key: str) -> dict[str, int] | None:
    """The sizes a shape_key names (N C H W K R S G stride pad dilation), or None."""
    m = _shape_key_pattern().fullmatch(key)
    if m is None:
        return None
    names = ("N", "C", "H", "W", "K", "R", "S", "G", "stride_h", "stride_w", "pad_h", "pad_w",
             "dil_h", "dil_w")
    return dict(zip(names, (int(v) for v in m.groups()), strict=True))


def usual_config(kind: str, case: str, kernel: str = "") -> dict[str, int] | None:
    """A case's usual winner on a target kind: for a few-channel kernel, the most frequent
    configuration among the case's measured layers that run it (their tiles fit its narrow
    GEMM: the case's usual tile, fitted to the other layers, wasted two thirds of a
    few-channel tile at batch 1 and 64, bench/results/kernels_h100-d68e283.json); else, or
    where none was measured, the case's most frequent winner over all its layers."""
    if kernel and KERNELS[kernel].get("packed"):  # every kind: its tile (packed_tile)
        return packed_tile(kind, kernel, case.endswith("NHWC"))
    table = tuned_table(kind)
    if table is None:
        return None
    if kernel and KERNELS[kernel].get("few_channels"):
        direction = KERNELS[kernel]["direction"]
        counts: dict[str, tuple[int, dict[str, int]]] = {}
        for key, config in table["configs"].get(case, {}).items():
            sizes = shape_sizes(key)
            if sizes is not None and kernel_for(direction, sizes) == kernel:
                text = repr(sorted(config.items()))
                counts[text] = (counts.get(text, (0, config))[0] + 1, config)
        if counts:
            return dict(max(counts.values(), key=lambda v: v[0])[1])
    return dict(table["defaults"][case]) if case in table["defaults"] else None

"""When the 3-D forward and backward-data kernels (kernels/conv_triton_3d.py) split their
reduction on a small grid, and how the reduce walks the output afterwards, as plain data.

Standard library only (and `conv_triton_3d_spec`, whose sizes, strides, grid and split object
these are), so the runtime reads it without Triton. The split launch runs the split object
(`conv_triton_3d_spec.split_object`), each part writing FP32 partials into the workspace
(`conv_triton_3d_spec.workspace_bytes`), and the 2-D family's reduce kernel sums them into y
or dx (`out_reduce_values`).
"""

from __future__ import annotations

from collections.abc import Mapping

from .conv_triton_3d_spec import (
    GRID_YZ_MAX,
    MAX_SPLIT,
    gemm_dims,
    grid,
    lone_phase,
    out_elements,
)
from .conv_triton_spec import cdiv, filling_split

#: Forward and backward data split their reduction where the unsplit launch has fewer programs
#: than 1/SMALL_GRID_FRACTION of the target's CUs (a deep layer at batch 1: R3D-18's layer4 at
#: 2x7x7 runs 16 programs of a 64x64 tile on 132 SMs, each looping over 13,824 products): the
#: parts fill at most SMALL_WAVES waves and each keeps SMALL_PART_STEPS BLOCK_K steps, as the
#: 2-D family's small-grid rule does (conv_triton_tuned_spec.small_grid_split). Set on the H100
#: from the zoo's 3-D layers at batch 1 and 8 (bench/results/split3d_h100/, read by
#: bench/split_rule_3d.py), the waves are what bind: with parts of 8 steps or more one part took
#: 2.8-3.9x the split's GPU time (per implicit GEMM solver), and twice the split 0.82 within
#: the two waves (4-7 steps a part, 110 rows); with parts of 4, twice it within the waves (2-3
#: steps) 0.86 (95 rows); with parts of 2, as here, one part took 2.6-3.5x, half the split
#: 1.06-1.23x and twice it 0.88-0.97x (within the waves, parts of one step: 0.82 over 63 rows,
#: not adopted untimed as a rule).
SMALL_GRID_FRACTION = 2
SMALL_WAVES = 2
SMALL_PART_STEPS = 2
#: The kinds that split on a small grid: measured there. Each ships its split objects (the
#: usual tiles', `split_object`), and a cold build of them on every kind cost the default
#: build 278 objects: 30 min 49 s on 2 cores where it had taken 26 min 49 s
#: (bench/results/main_job-2cpu-*.txt).
SMALL_SPLIT_KINDS = ("sm90",)


def small_split(direction: str, sizes: Mapping[str, int],
                strides: Mapping[str, tuple[int, ...]], config: Mapping[str, int],
                sms: int, kind: str) -> int:
    """Forward's or backward data's SPLIT_K on `kind`: 1 off SMALL_SPLIT_KINDS, and unless
    the unsplit launch has fewer programs than 1/SMALL_GRID_FRACTION of `sms`; then doubled
    from 1 while the launch stays within
    SMALL_WAVES waves and each part keeps SMALL_PART_STEPS steps (backward data: of its
    phases' mean), up to MAX_SPLIT, the partials' offsets 32-bit, and only where the reduce
    can walk the output (`out_reduce_values`); never for backward data of a lone phase
    (`lone_phase`), whose split would launch every phase."""
    if direction not in ("F", "B") or kind not in SMALL_SPLIT_KINDS or \
            direction == "B" and lone_phase(sizes):
        return 1  # a lone phase's unsplit launch runs that phase alone: no small grid to fill
    z = sizes
    gx, gy, gz = grid(direction, z, {**config, "SPLIT_K": 1})
    programs = gx * gy * gz
    if programs * SMALL_GRID_FRACTION >= sms or out_reduce_values(direction, z, strides) is None:
        return 1
    inner = gemm_dims(direction, z)[2]
    taps = z["T"] * z["R"] * z["S"]
    if direction == "B":
        taps = max(1, taps // (z["stride_d"] * z["stride_h"] * z["stride_w"]))
    steps = taps * cdiv(inner, int(config["BLOCK_K"]))
    split = filling_split(programs, steps, sms, SMALL_PART_STEPS, MAX_SPLIT, SMALL_WAVES)
    while split > 1 and (split * out_elements(direction, z) >= 2**31 or gz * split > GRID_YZ_MAX):
        split //= 2
    return split


def out_reduce_values(direction: str, sizes: Mapping[str, int],
                      strides: Mapping[str, tuple[int, ...]]) -> dict[str, int] | None:
    """The reduce kernel's i32 arguments (conv_triton_spec.REDUCE_ARGS, the split left out)
    after a split forward (into y) or backward data (into dx), or None where it cannot walk
    that tensor. The partials are (n, c, d, h, w) in every object (the kernels'
    `_partial_offsets`: the generic and the aligned object of a launch write the same), and
    the reduce walks four axes, so two adjacent spatial axes go as one: h and w where h's
    stride is W times w's, else d and h where d's is H times h's."""
    z = sizes
    if direction == "F":
        tensor, ch, dims = strides["y"], z["G"] * z["K"], (z["Z"], z["P"], z["Q"])
    else:
        tensor, ch, dims = strides["x"], z["G"] * z["C"], (z["D"], z["H"], z["W"])
    sn, sc, sd, sh, sw = (int(v) for v in tensor)
    a, b, c = dims
    if sh == c * sw:
        outer, inner = (a, sd), (b * c, sw)
    elif sd == b * sh:
        outer, inner = (a * b, sh), (c, sw)
    else:
        return None
    # (n, channel, spatial outer, spatial inner): the partials' order.
    return {"TOTAL": z["N"] * ch * a * b * c, "C": ch, "R": outer[0], "S": inner[0],
            "swk": sn, "swc": sc, "swr": outer[1], "sws": inner[1]}

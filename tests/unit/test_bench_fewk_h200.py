"""The figures and choices the FP32-unit backward solvers take from bench/results/
fewk_h200-035369f (H200, FP32 against IEEE cuDNN, batch 32), recomputed from the JSON:
the backward weights kernels' usual tiles, the claims of the few-channel backward weights,
of the few-filter forward on flipped filters and of the slices solvers in FP32."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

import pytest
from miopenkernels.target import Target

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "fewk_h200-035369f"
fewk_wrw = pytest.importorskip("miopenkernels.kernels.conv_triton_fewk_wrw_spec")
fewc_wrw = pytest.importorskip("miopenkernels.kernels.conv_triton_fewc_wrw_spec")
fewk_bwd = pytest.importorskip("miopenkernels.kernels.conv_triton_fewk_bwd_spec")
SM90 = Target("sm90", 132)
TILE_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")


def _rows(name: str) -> list[dict]:
    data = json.loads((RESULTS / f"{name}.json").read_text())
    assert not data.get("failures")
    return list(data["rows"])


def _ratio(row: dict, solver: str) -> float | None:
    entry = row["solvers"].get(solver)
    if not entry or not entry.get("gpu_ms"):
        return None
    return float(entry["gpu_ms"]) / float(row["cudnn_gpu_ms"])


def _fields(row: dict) -> list[str]:
    return str(row["key"]).split("-")


def _form(row: dict) -> bool:
    """Channels-last."""
    return str(row["case"]).endswith("NHWC")


def _tile_of(solver: str, entry: dict) -> tuple[int, ...]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages) of a timed entry."""
    if "@" in solver:
        t = [int(v) for v in solver.split("@")[1].split(":")]
        return (t[0], t[1], t[2], t[3], t[4], t[5])
    p = [int(v) for v in entry["params"]]
    return (p[0], p[1], p[2], p[3], p[5], p[6])


def _least_total(rows: list[dict], family: str, blocks: tuple[int, ...]
                 ) -> dict[tuple[bool, int], tuple[int, ...]]:
    """Per (channels-last, filter block): the tile of that block of least GPU time in all over
    the rows whose filters fall in the block."""
    totals: dict[tuple[bool, int], dict[tuple[int, ...], float]] = defaultdict(
        lambda: defaultdict(float))
    counts: dict[tuple[bool, int, tuple[int, ...]], int] = defaultdict(int)
    layers: dict[tuple[bool, int], int] = defaultdict(int)
    for row in rows:
        if not any(s.startswith(family) and e.get("gpu_ms") for s, e in row["solvers"].items()):
            continue  # not reached on this layer
        k = int(_fields(row)[0])
        block = next((b for b in blocks if b >= k), blocks[-1])
        layers[(_form(row), block)] += 1
        seen = set()
        for solver, entry in row["solvers"].items():
            if not solver.startswith(family) or not entry.get("gpu_ms"):
                continue
            tile = _tile_of(solver, entry)
            if tile[1] != block or tile in seen:
                continue
            seen.add(tile)
            totals[(_form(row), block)][tile] += float(entry["gpu_ms"])
            counts[(_form(row), block, tile)] += 1
    best = {}
    for key, by_tile in totals.items():
        # Only tiles timed on every layer of the block and form compete.
        full = {t: v for t, v in by_tile.items() if counts[(*key, t)] == layers[key]}
        best[key] = min(full, key=full.__getitem__)
    return best


def _usual(spec: object, cl: bool, block: int) -> tuple[int, ...]:
    tile = next(t for t in spec.tiles("sm90", cl) if t["BLOCK_N"] == block)  # type: ignore[attr-defined]
    return tuple(int(tile[k]) for k in TILE_KEYS)


def test_the_few_filter_backward_weights_tiles_are_the_measured_fastest() -> None:
    best = _least_total(_rows("wrw_tiles"), "ConvTritonFmaFewKWrw", fewk_wrw.FILTER_BLOCKS)
    assert len(best) == 6  # 1-2, 3-4 and 5-8 filters, both forms
    for (cl, block), tile in best.items():
        assert _usual(fewk_wrw, cl, block) == tile, (cl, block)


def test_the_few_channel_backward_weights_tiles_are_the_measured_fastest() -> None:
    best = _least_total(_rows("stems_wrw"), "ConvTritonFmaFewCWrw", fewc_wrw.FILTER_BLOCKS)
    assert len(best) == 6
    for (cl, block), tile in best.items():
        assert _usual(fewc_wrw, cl, block) == tile, (cl, block)


def _usual_entry(row: dict, family: str) -> float | None:
    """The ratio of the family's timing at its usual tile for the row's filters and form."""
    k = int(_fields(row)[0])
    block = next((b for b in fewc_wrw.FILTER_BLOCKS if b >= k), fewc_wrw.FILTER_BLOCKS[-1])
    usual = _usual(fewc_wrw, _form(row), block)
    for solver, entry in row["solvers"].items():
        if solver.startswith(family) and entry.get("gpu_ms") and _tile_of(solver, entry) == usual:
            return float(entry["gpu_ms"]) / float(row["cudnn_gpu_ms"])
    return None


def test_the_few_channel_backward_weights_claims() -> None:
    """At most CLAIM_FILTERS filters of 2..CLAIM_TAPS taps: faster than the three-product
    implicit GEMM and the few-channel kernels on every such stem; past it, slower than that
    GEMM on every one; the figures of the spec's comment."""
    claimed: dict[bool, list[float]] = defaultdict(list)
    gemm: dict[bool, list[float]] = defaultdict(list)
    wide, wide_gemm, skipped = [], [], []
    for row in _rows("stems_wrw"):
        f = _fields(row)
        k, taps = int(f[0]), math.prod(int(v) for v in f[3].split("x"))
        if not 1 < taps <= fewc_wrw.CLAIM_TAPS:
            continue
        ours = _usual_entry(row, "ConvTritonFmaFewCWrw")
        t3 = _ratio(row, "ConvTritonImplicitGemmTf32x3Wrw")
        small = _ratio(row, "ConvTritonSmallCWrw")
        if ours is None or t3 is None or small is None:
            skipped.append(row["key"])
            continue
        if k <= fewc_wrw.CLAIM_FILTERS:
            assert ours < t3 and ours < small, row["key"]
            claimed[_form(row)].append(ours)
            gemm[_form(row)].append(t3)
        else:
            assert t3 < ours, row["key"]
            wide.append(ours)
            wide_gemm.append(t3)
    assert len(skipped) <= 2  # DCGAN's stem once per layout, its few-channel timing not taken
    span = {cl: (round(min(v), 2), round(max(v), 2)) for cl, v in claimed.items()}
    assert span == {True: (1.12, 1.87), False: (0.98, 1.87)}
    assert {cl: (round(min(v), 2), round(max(v), 2)) for cl, v in gemm.items()} == \
        {True: (2.62, 3.01), False: (2.17, 2.45)}
    assert (round(min(wide), 2), round(max(wide), 2)) == (1.46, 5.47)
    assert (round(min(wide_gemm), 2), round(max(wide_gemm), 2)) == (0.8, 2.57)


def test_the_flipped_few_filter_forward_claims_from_256_channels_of_dy() -> None:
    """Backward data channels-last at stride 1 of more than one tap on the few-filter forward:
    from CLAIM_LEAST_CHANNELS channels of dy the fastest timed, below them slower than the
    few-channel kernels; the figures of the spec's comment."""
    wins, losses, few = [], [], []
    for row in _rows("bwd"):
        f = _fields(row)
        if not _form(row) or f[9] != "1x1" or f[3] in ("1x1",) or "x" in f[4]:
            continue
        ours = _ratio(row, "ConvTritonFmaFewKBwd")
        if ours is None:
            continue
        others = [r for s in row["solvers"] if s != "ConvTritonFmaFewKBwd"
                  and (r := _ratio(row, s)) is not None]
        if int(f[0]) >= fewk_bwd.CLAIM_LEAST_CHANNELS:
            assert ours <= min(others), row["key"]
            wins.append(ours)
        else:
            kernels = [r for s in ("ConvTritonSmallCBwd", "ConvTritonSmallCChunksBwd")
                       if (r := _ratio(row, s)) is not None]
            assert min(kernels) < ours, row["key"]
            losses.append(ours)
            few.append(min(kernels))
    assert (round(min(wins), 2), round(max(wins), 2)) == (1.71, 1.84)
    assert (round(min(losses), 2), round(max(losses), 2)) == (1.82, 1.9)
    assert (round(min(few), 2), round(max(few), 2)) == (1.36, 1.58)


def test_the_video_stems_over_their_depth_slices_in_fp32() -> None:
    """The slices solvers against the 3-D families on the video stems in NDHWC."""
    def by_network(name: str) -> dict[str, dict]:
        return {r["network"]: r for r in _rows(name) if _form(r) and
                any(f.count("x") == 2 for f in _fields(r)) and r["network"] != "r3d_18"}

    forward, weights = by_network("video_f"), by_network("video_w")
    backward = {n: r for n, r in by_network("bwd").items()}
    assert sorted(forward) == sorted(weights) == sorted(backward) == ["r2plus1d_18", "x3d_s"]
    figures = {}
    for net in forward:
        figures[net] = (
            _ratio(forward[net], "ConvTritonFmaSlicesFwd"),
            _ratio(forward[net], "ConvTriton3dSmallCFwd"),
            _ratio(weights[net], "ConvTritonFmaFewCSlicesWrw"),
            _ratio(weights[net], "ConvTritonImplicitGemmTf32x3SlicesWrw"),
            _ratio(weights[net], "ConvTriton3dSmallCWrw"),
            _ratio(backward[net], "ConvTritonImplicitGemmSlicesBwd"),
            _ratio(backward[net], "ConvTriton3dTf32x3Bwd"))
    rounded = {n: tuple(round(float(v), 2) for v in f) for n, f in figures.items()}
    assert rounded == {"r2plus1d_18": (0.76, 1.63, 2.6, 0.59, 1.8, 3.34, 6.64),
                       "x3d_s": (0.92, 2.94, 0.26, 0.39, 0.4, 1.41, 2.89)}
    for f in rounded.values():
        assert f[0] < f[1] and min(f[2], f[3]) < f[4] and f[5] < f[6]


def test_the_grid_passed() -> None:
    text = (RESULTS / "grid" / "gpu_tests.txt").read_text()
    assert "64 passed" in text and " failed" not in text


def test_fp32_stems_backward_weights_are_the_three_product_gemms_not_the_few_channel_kernels(
        ) -> None:
    from miopenkernels.solvers.triton_3d_smallc import FP32_WRW_FIRST

    gemm, kernels = [], []
    for row in _rows("stems_wrw"):
        t3 = _ratio(row, "ConvTritonImplicitGemmTf32x3Wrw")
        small = _ratio(row, "ConvTritonSmallCWrw")
        assert t3 is not None and small is not None and t3 < small, row["key"]
        gemm.append(t3)
        kernels.append(small)
    assert len(gemm) == 56 and not FP32_WRW_FIRST
    assert (round(min(gemm), 2), round(max(gemm), 2)) == (0.8, 3.01)
    assert (round(min(kernels), 2), round(max(kernels), 2)) == (1.84, 6.39)


def test_the_phases_of_a_larger_stride_lose_to_the_three_product_gemm() -> None:
    """Backward data of the zoo's stems at strides over 1 by phases of dx (offered to find,
    claiming nothing): slower than the three-product implicit GEMM on every one."""
    phases, gemm = [], []
    for row in _rows("bwd"):
        f = _fields(row)
        if any(v.count("x") == 2 for v in f) or f[9] == "1x1":
            continue
        ours = _ratio(row, "ConvTritonFmaFewKBwd")
        t3 = _ratio(row, "ConvTritonImplicitGemmTf32x3Bwd")
        assert ours is not None and t3 is not None and t3 < ours, row["key"]
        phases.append(ours)
        gemm.append(t3)
    assert len(phases) == 38
    assert (round(min(phases), 2), round(max(phases), 2)) == (1.65, 12.87)
    assert (round(min(gemm), 2), round(max(gemm), 2)) == (0.49, 1.57)


def test_the_new_backward_weights_tiles_against_the_old_ones() -> None:
    """The tiles chosen from the kernel's shape before (64:2:64, 64:4:32, 32:8:32, both forms)
    against the measured fastest: the GPU time in all over the wrw_tiles layers."""
    old = {2: (64, 2, 64), 4: (64, 4, 32), 8: (32, 8, 32)}
    totals = {"old": 0.0, "new": 0.0}
    for row in _rows("wrw_tiles"):
        k = int(_fields(row)[0])
        block = next(b for b in fewk_wrw.FILTER_BLOCKS if b >= k)
        new = _usual(fewk_wrw, _form(row), block)
        times = {_tile_of(s, e): float(e["gpu_ms"]) for s, e in row["solvers"].items()
                 if e.get("gpu_ms")}
        totals["old"] += next(v for t, v in times.items() if t[:3] == old[block] and t[4] == 4)
        totals["new"] += times[new]
    assert round(totals["old"], 1) == 114.8 and round(totals["new"], 1) == 97.1


def test_the_stem_kernel_on_flipped_filters_and_r3d_stem_figures() -> None:
    """`ConvTritonFmaBwd` on the layers it claims (1-4 filters, more than one tap, stride 1):
    the fastest timed; R3D-18's 3x7x7 stem on the 3-D kernels (no slices route)."""
    claimed = []
    for row in _rows("bwd"):
        f = _fields(row)
        ours = _ratio(row, "ConvTritonFmaBwd")
        if ours is None or f[3] == "1x1":
            continue
        assert ours == min(r for s in row["solvers"] if (r := _ratio(row, s)) is not None)
        claimed.append(ours)
    assert len(claimed) == 6 and (round(min(claimed), 2), round(max(claimed), 2)) == (0.47, 1.01)
    r3d = [_ratio(r, s) for name, s in (("video_f", "ConvTriton3dSmallCFwd"),
                                        ("video_w", "ConvTriton3dSmallCWrw"))
           for r in _rows(name) if r["network"] == "r3d_18"]
    back = [_ratio(r, "ConvTriton3dTf32x3Bwd") for r in _rows("bwd") if r["network"] == "r3d_18"]
    assert len(r3d) == 4 and len(back) == 2
    assert (round(min(r3d), 2), round(max(r3d), 2)) == (1.65, 2.34)
    assert (round(min(back), 2), round(max(back), 2)) == (7.18, 15.09)


def test_the_h100_run_of_the_choices_against_the_run_before() -> None:
    """bench/results/fewk_h100-4ee2d41: the comparison table and figures of the README."""
    here = RESULTS.parent / "fewk_h100-4ee2d41"
    compared = json.loads((here / "zoo_compare_fp32_bw.json").read_text())["cases"]
    table = {case: (v["layers"], round(v["before"], 2), round(v["after"], 2))
             for case, v in compared.items() if v["layers"]}
    assert {k: v for k, v in table.items() if k.endswith(" zoo")} == {
        "FP32-B-NCHW zoo": (29, 1.08, 1.03), "FP32-B-NHWC zoo": (29, 1.12, 0.9),
        "FP32-W-NCHW zoo": (29, 1.61, 1.38), "FP32-W-NHWC zoo": (23, 2.57, 1.46),
        "FP32-B-NDHWC zoo": (2, 2.56, 1.24), "FP32-W-NDHWC zoo": (1, 1.74, 0.59),
        "FP32-B-NCDHW zoo": (2, 3.15, 3.12), "FP32-W-NCDHW zoo": (2, 0.94, 0.94)}
    assert table["FP32-W-NCHW held_out"] == (4, 1.99, 1.24)
    assert table["FP32-B-NDHWC held_out"] == (2, 5.93, 3.01)
    assert table["FP32-B-NCDHW held_out"] == (2, 5.05, 5.02)
    run = json.loads((here / "zoo_fp32_bw.json").read_text())
    assert run["errors"] == 0 and not run["not_reached"] and run["compiles"] == 26
    few = run["classes"]["few-channel"]
    held = run["held_out"]["classes"]["few-channel"]
    assert (round(few["gpu_geomean"], 2), few["layers"], round(few["max_ratio"], 2)) == \
        (1.18, 124, 6.7)
    assert (round(held["gpu_geomean"], 2), held["layers"], round(held["max_ratio"], 2)) == \
        (1.27, 24, 13.33)
    over = sorted(round(r["ratio"], 2) for r in run["rows"] if r["ratio"] > 2.5)
    assert over == [2.56, 2.68, 2.7, 2.78, 2.86, 3.94, 5.07, 5.69, 6.39, 6.7, 13.33]
    assert "36 passed" in (here / "grid" / "gpu_tests.txt").read_text()

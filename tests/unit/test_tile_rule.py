"""The tile rule of layers no one tuned (solvers/triton_tile_rule.py): where it applies, what
it picks, that its objects ship, and that the tuned table holds what bench/tile_rule_fit.py
fits from the committed timings."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from miopenkernels.kernels import conv_triton_spec as spec
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import all_dynamic_jobs, get_solver, launch_jobs
from miopenkernels.solvers.triton_tile_rule import (
    NARROW_GROUP_WIDTHS,
    narrow_group_config,
    rule_case,
    tile_rule_config,
)
from miopenkernels.target import Target

ROOT = Path(__file__).resolve().parents[2]
SM90 = Target("sm90", 132)
SURVEYS = sorted((ROOT / "bench" / "results").glob("tile_survey_*_h200.json"))
#: Newer surveys (the few-channel forward's aligned channels-last objects, on the H100): their
#: cases' rows replace the H200 surveys' (tile_rule_fit.py --fresh).
FRESH = sorted((ROOT / "bench" / "results").glob("tile_survey_*_h100.json"))
NAMES = {"F": "ConvTritonImplicitGemmFwd", "B": "ConvTritonImplicitGemmBwd",
         "W": "ConvTritonImplicitGemmWrw"}


def _p(c: int, k: int, hw: int, f: int = 1, n: int = 32, direction: str = "F",
       type_name: str = "FP16", layout: str = "NHWC", stride: int = 1) -> ConvProblem:
    p = ConvProblem(n=n, c=c, k=k, in_spatial=(hw, hw), filter=(f, f),
                    pad=((f - 1) // 2, (f - 1) // 2), stride=(stride, stride),
                    direction=direction, in_type=type_name, wei_type=type_name,
                    out_type=type_name)
    return replace(p, in_layout=layout, wei_layout=layout, out_layout=layout)


# DenseNet's 1x1 576 -> 128 at 14x14 (the usual 128x128 tile: 49 programs), an SE block's
# 1x1 at one pixel, MobileNet's projection at 7x7 (backward data), and two first layers.
SMALL = [_p(576, 128, 14), _p(672, 28, 1), _p(960, 160, 7, direction="B"),
         _p(576, 128, 14, layout="NCHW")]
FEW = [_p(3, 32, 224, 3, stride=2), _p(3, 128, 512, 3), _p(3, 64, 224, 3, layout="NCHW")]


@pytest.mark.parametrize("p", SMALL + FEW, ids=lambda p: p.key())
def test_untuned_small_and_few_channel_layers_take_a_rule_tile_that_ships(p: ConvProblem
                                                                          ) -> None:
    config = tile_rule_config(p, SM90, "ieee")
    assert config is not None
    solver = get_solver(NAMES[p.key_direction])
    params = solver.default_params(p, SM90)
    assert dict(zip(("BLOCK_M", "BLOCK_N", "BLOCK_K"), params[:3], strict=True)) == \
        {k: config[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    assert solver.defaults_rule(p, SM90)  # the rule's tile ranks alone
    shipped = set(all_dynamic_jobs(SM90))
    missing = [j.kernel_name for j in launch_jobs(solver, p, params, SM90) if j not in shipped]
    assert not missing, (p.key(), params, missing)
    assert solver.unaligned_job(p, params, SM90) in shipped


def test_few_channel_tiles_fit_their_narrow_gemm() -> None:
    # 3 channels x 3 taps = 9 of a row's reduction: a 16-wide block, not the usual 32 or 64.
    for p in FEW:
        config = tile_rule_config(p, SM90, "ieee")
        assert config is not None and config["BLOCK_K"] <= 32, p.key()
    assert tile_rule_config(FEW[0], SM90, "ieee")["BLOCK_N"] <= 64  # 32 filters


def test_the_rule_leaves_what_it_was_not_fitted_on() -> None:
    big = _p(256, 256, 56, 3)  # 100,352 GEMM rows: past every layer of the fit
    assert tile_rule_config(big, SM90, "ieee") is None
    assert tile_rule_config(_p(576, 128, 14, type_name="FP32"), SM90, "ieee") is None
    assert tile_rule_config(_p(576, 128, 14, type_name="FP32"), SM90, "tf32") is None
    assert tile_rule_config(_p(576, 128, 14), Target("sm80", 108), "ieee") is None
    assert tile_rule_config(_p(576, 128, 14), Target("gfx942", 304), "ieee") is None
    assert tile_rule_config(_p(576, 128, 14, n=1), SM90, "ieee") is None  # the small grid's
    # ResNet-50's own layers keep their measured tiles.
    tuned = _p(1024, 256, 14)
    assert spec.measured("sm90", "FP16-F-NHWC", {**_sizes(tuned)})
    assert tile_rule_config(tuned, SM90, "ieee") is None
    # Backward weights and grouped (packed) kernels have no rule.
    assert rule_case("FP16-W-NHWC", "conv2d_bwd_weight") is None
    assert rule_case("FP16-F-NHWC", "conv2d_fwd_packed") is None
    assert rule_case("FP16-F-NHWC", "conv2d_fwd_smallc") == "FP16-F-NHWC-few"


def test_bf16_takes_fp16s_rule() -> None:
    for p in SMALL[:1] + FEW[:1]:
        bf = replace(p, in_type="BF16", wei_type="BF16", out_type="BF16")
        assert tile_rule_config(bf, SM90, "ieee") == tile_rule_config(p, SM90, "ieee")
    assert spec.tile_rule("sm90", "BF16-F-NHWC") == spec.tile_rule("sm90", "FP16-F-NHWC")
    assert spec.tile_rule("sm90", "FP32-F-NHWC") is None


def test_the_rule_picks_the_tile_of_least_predicted_time() -> None:
    sizes = _sizes(_p(576, 128, 14))
    one = {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 64, "GROUP_M": 8, "SPLIT_K": 1,
           "num_warps": 4, "num_stages": 3}
    two = {**one, "BLOCK_M": 128, "BLOCK_N": 128}
    rule = {"tiles": [{"config": one, "per_sm": 1, "a_ms": 0.004, "b_ms": 1e-4, "c_ms": 0.0},
                      {"config": two, "per_sm": 1, "a_ms": 0.004, "b_ms": 1e-4, "c_ms": 0.0}]}
    # 392 programs of 9 steps (3 waves) against 49 of 9 (one wave): the big tile.
    assert spec.tile_terms("conv2d_fwd", sizes, one, 132, 1) == (3, 9)
    assert spec.tile_terms("conv2d_fwd", sizes, two, 132, 1) == (1, 9)
    assert spec.rule_tile(rule, "conv2d_fwd", sizes, 132) == two
    rule["tiles"][1]["a_ms"] = 0.01  # a dearer launch: the small one
    assert spec.rule_tile(rule, "conv2d_fwd", sizes, 132) == one
    assert spec.rule_tile(rule, "conv2d_fwd", sizes, 132, among=[two]) == two
    assert spec.rule_tile(rule, "conv2d_fwd", sizes, 132, among=[]) is None
    # A split tile only where the problem may split (1x1 stride 2 backward data may not).
    split = {**one, "SPLIT_K": 2}
    b = _sizes(_p(512, 1024, 28, stride=2, direction="B"))
    assert spec.rule_tile({"tiles": [dict(rule["tiles"][0], config=split)]},
                          "conv2d_bwd_data", b, 132) is None


def _sizes(p: ConvProblem) -> dict[str, int]:
    from miopenkernels.solvers.triton_common import problem_view, spec_sizes

    return spec_sizes(problem_view(p)[0])


@pytest.mark.skipif(not SURVEYS, reason="no committed tile surveys")
def test_the_tuned_table_holds_what_the_fit_makes_of_the_committed_timings(tmp_path: Path
                                                                           ) -> None:
    table = tmp_path / "table.json"
    table.write_text((ROOT / "kernels" / "conv_triton_tuned_sm90.json").read_text())
    surveys = [f for f in SURVEYS if "_dw_" not in f.name]
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "tile_rule_fit.py"), *map(
        str, surveys), "--least", "12", "--fresh", *map(str, FRESH), "--write", str(table),
        "--json"],
        capture_output=True, text=True, check=True)
    fitted = json.loads(table.read_text())["tile_rule"]
    shipped = json.loads((ROOT / "kernels" / "conv_triton_tuned_sm90.json").read_text())
    assert fitted["rules"] == shipped["tile_rule"]["rules"]
    result = json.loads(out.stdout)
    for case, entry in result["cases"].items():
        # Leaving each zoo network out, the rule's picks beat the defaults, and the held-out
        # networks' layers gain too.
        lono = entry["leave_one_network_out"]
        assert lono["rule_vs_default"] < 1.0, case
        assert entry["held_out"] is None or entry["held_out"]["rule_vs_default"] <= 1.0, case


def _grouped(c: int, hw: int, groups: int, stride: int = 1, direction: str = "F",
             type_name: str = "FP16", layout: str = "NHWC") -> ConvProblem:
    return replace(_p(c, c, hw, 3, direction=direction, type_name=type_name, layout=layout,
                      stride=stride), groups=groups)


# ResNeXt-50's layer3.0 (16 a group, stride 2) and layer4.1 (32 a group), ResNeXt-101 64x4d's
# layer3.1 (16 a group of 64 groups).
NARROW = [(_grouped(512, 28, 32, 2), 16), (_grouped(1024, 7, 32), 32),
          (_grouped(1024, 14, 64, direction="B", layout="NCHW"), 16),
          (_grouped(1024, 7, 32, direction="B", type_name="BF16"), 32),
          (_grouped(512, 28, 32, 2, direction="W"), 16),
          (_grouped(1024, 7, 32, direction="W", type_name="BF16"), 32)]


@pytest.mark.parametrize(("p", "width"), NARROW, ids=lambda v: getattr(v, "key", str)())
def test_groups_of_16_and_32_take_a_tile_as_wide_that_ships(p: ConvProblem, width: int
                                                             ) -> None:
    from miopenkernels.solvers.triton_conv_relayout import via_layout

    config = narrow_group_config(p, SM90, "ieee")
    assert config is not None and tile_rule_config(p, SM90, "ieee") == config
    # Backward weights (channels-last): 64 rows by the width by 64, unsplit.
    tile = (64, width, 64) if p.key_direction == "W" else (128, width, width)
    assert (config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"]) == tile
    solver = get_solver(NAMES[p.key_direction])
    params = solver.default_params(p, SM90)
    assert params[:3] == tile and solver.defaults_rule(p, SM90)
    assert p.key_direction != "W" or params[4] == 1  # SPLIT_K
    shipped = set(all_dynamic_jobs(SM90))
    missing = [j.kernel_name for j in launch_jobs(solver, p, params, SM90) if j not in shipped]
    assert not missing, (p.key(), params, missing)
    assert via_layout(p, SM90, "ieee") is None  # NCHW too: its own kernel, no copies


def test_the_narrow_tile_leaves_other_groups_types_and_targets() -> None:
    layer3 = NARROW[0][0]
    assert narrow_group_config(_grouped(128, 56, 32), SM90, "ieee") is None  # 4 a group
    assert narrow_group_config(_grouped(768, 14, 32), SM90, "ieee") is None  # 24 a group
    assert narrow_group_config(replace(layer3, k=1024), SM90, "ieee") is None  # 16 -> 32
    assert narrow_group_config(replace(layer3, groups=1), SM90, "ieee") is None
    fp32 = replace(layer3, in_type="FP32", wei_type="FP32", out_type="FP32")
    assert narrow_group_config(fp32, SM90, "ieee") is None
    assert narrow_group_config(fp32, SM90, "tf32") is None
    # Backward weights in NCHW keep their own tiles (none of five narrow ones was faster).
    wrw_nchw = replace(layer3, direction="W", in_layout="NCHW", wei_layout="NCHW",
                       out_layout="NCHW")
    assert narrow_group_config(wrw_nchw, SM90, "ieee") is None
    assert narrow_group_config(layer3, Target("sm80", 108), "ieee") is None
    assert narrow_group_config(layer3, Target("gfx942", 304), "ieee") is None


def _survey() -> dict[tuple[str, str, str], dict[str, float]]:
    """bench/results/narrow_groups_h200.json per (network, layer, case): each tile's GPU time
    (ms; "rule": the tile it ran before, "narrow": 128 rows by the group's width) and
    cuDNN's."""
    import re

    survey = json.loads((ROOT / "bench" / "results" / "narrow_groups_h200.json").read_text())
    out: dict[tuple[str, str, str], dict[str, float]] = {}
    for row in survey["rows"]:
        m = re.fullmatch(r"(\d+)-.*_g(\d+)", row["key"])
        assert m is not None
        width = int(m[1]) // int(m[2])
        times = {"width": width, "cudnn": row["cudnn_gpu_ms"]}
        for name, timing in row["solvers"].items():
            tile = name.split("@")[1] if "@" in name else "rule"
            times[tile] = timing["gpu_ms"]
        times["narrow"] = times[f"128:{width}:{width}:8:4:3"]
        out[(row["network"], row["layer"], row["case"])] = times
    return out


def test_the_narrow_tile_is_what_the_committed_survey_timed_fastest() -> None:
    # Per case and width, over cuDNN (geomean): 128 rows by the width is the fastest tile or
    # within 2% of it, at 0.18-0.66 of the tile it ran before, which took 1.1-3.9x cuDNN
    # (the figures of solvers/triton_tile_rule.py and bench/results/README.md).
    import math

    ratios: dict[tuple[str, int], dict[str, list[float]]] = {}
    for (_, _, case), times in _survey().items():
        for tile, ms in times.items():
            if tile not in ("width", "cudnn"):
                ratios.setdefault((case, int(times["width"])), {}).setdefault(tile, []).append(
                    ms / times["cudnn"])
    assert {w for _, w in ratios} == set(NARROW_GROUP_WIDTHS) and len(ratios) == 8
    gains, before = [], []
    for (case, width), tiles in ratios.items():
        geo = {t: math.exp(sum(map(math.log, v)) / len(v)) for t, v in tiles.items()}
        assert geo["narrow"] <= 1.02 * min(geo.values()), (case, width)
        gains.append(geo["narrow"] / geo["rule"])
        before.append(geo["rule"])
    assert (round(min(gains), 2), round(max(gains), 2)) == (0.18, 0.66)
    assert (round(min(before), 1), round(max(before), 1)) == (1.1, 3.9)


def test_nchw_at_the_narrow_tile_costs_less_than_the_route_through_nhwc() -> None:
    # The route's copies: what the Via solver took in the FP16 zoo run of tree b055ca9 less
    # the NHWC kernel's time at the tile it ran there (the survey's "rule"); the route at the
    # narrow tile is those copies plus the narrow NHWC kernel. On the six layers that run
    # gave the Via solvers, the NCHW kernel at the narrow tile takes 0.43-0.93 of it.
    sys.path.insert(0, str(ROOT / "bench"))
    from _results import read_json

    zoo = read_json(ROOT / "bench" / "results" / "zoo_h200-fb-b055ca9.json.gz")
    via = {(r["network"], r["layer"], r["case"]): r["ours_gpu_ms"] for r in zoo["rows"]
           if r["n"] == 32 and "Via" in r["solver"] and r["case"].endswith("-NCHW")}
    survey = _survey()
    shares = []
    for (network, layer, case), times in survey.items():
        if (network, layer, case) not in via:
            continue
        nhwc = survey[(network, layer, case.replace("-NCHW", "-NHWC"))]
        copies = via[(network, layer, case)] - nhwc["rule"]
        assert copies > 0
        shares.append(times["narrow"] / (copies + nhwc["narrow"]))
    assert len(shares) == 6
    assert (round(min(shares), 2), round(max(shares), 2)) == (0.43, 0.93)


def test_the_narrow_wrw_tile_is_what_the_committed_survey_timed() -> None:
    # bench/results/narrow_groups_w_h200.json (the g16w step): on the channels-last layers,
    # the tile as wide as the group is the fastest of the five narrow tiles on every layer,
    # at 0.67-0.77 of the split tile the layer ran at 16 a group and 0.66-0.72 at 32; over the
    # eight layers 2.63 -> 1.86x cuDNN (geomean). In NCHW no narrow tile beat the one it ran
    # overall (the quotes of solvers/triton_tile_rule.py).
    import math
    import re

    survey = json.loads((ROOT / "bench" / "results" / "narrow_groups_w_h200.json").read_text())
    gains: dict[int, list[float]] = {16: [], 32: []}
    before, after, nchw = [], [], {}
    for row in survey["rows"]:
        m = re.fullmatch(r"(\d+)-.*_g(\d+)", row["key"])
        assert m is not None
        width = int(m[1]) // int(m[2])
        times = {n.split("@")[1] if "@" in n else "ran": t["gpu_ms"]
                 for n, t in row["solvers"].items()}
        narrow = times[f"64:{width}:64:8:4:3:0"]
        if row["case"].endswith("NHWC"):
            assert narrow == min(v for k, v in times.items() if k != "ran"), row["layer"]
            gains[width].append(narrow / times["ran"])
            before.append(times["ran"] / row["cudnn_gpu_ms"])
            after.append(narrow / row["cudnn_gpu_ms"])
        else:
            for tile, ms in times.items():
                nchw.setdefault(tile, []).append(ms / times["ran"])
    assert [(round(min(g), 2), round(max(g), 2)) for g in gains.values()] == \
        [(0.67, 0.77), (0.66, 0.72)]

    def geo(v: list[float]) -> float:
        return math.exp(sum(map(math.log, v)) / len(v))

    assert (round(geo(before), 2), round(geo(after), 2)) == (2.63, 1.86)
    assert min(geo(v) for v in nchw.values()) >= 0.99

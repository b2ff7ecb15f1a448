"""The backward-weights tile and split rule (conv_triton_spec.wrw_rule): what it picks, that
the objects of every pick ship, and that the tuned table holds what bench/split_fit.py fits from
the committed sweep."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from miopenkernels.kernels import conv_triton_spec as spec
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import get_solver
from miopenkernels.target import Target

ROOT = Path(__file__).resolve().parents[2]
SM90 = Target("sm90", 132)
WRW = "ConvTritonImplicitGemmWrw"
# A diffusion UNet's 3x3 512 -> 512 at 64x64 and a segmentation UNet's 64 -> 64 at 256x256.
LARGE = ConvProblem(n=32, c=512, k=512, in_spatial=(64, 64), filter=(3, 3), pad=(1, 1),
                    direction="W")
SMALL = replace(LARGE, c=64, k=64, in_spatial=(256, 256))
PARAMS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K", "num_warps", "num_stages")


def _as(p: ConvProblem, type_name: str, layout: str) -> ConvProblem:
    return replace(p, in_type=type_name, wei_type=type_name, out_type=type_name,
                   in_layout=layout, wei_layout=layout, out_layout=layout)


def _sizes(p: ConvProblem) -> dict[str, int]:
    h, w = p.in_spatial
    return {"N": p.n, "C": p.c, "H": h, "W": w, "K": p.k, "P": h, "Q": w, "R": 3, "S": 3,
            "G": 1, "stride_h": 1, "stride_w": 1, "pad_h": 1, "pad_w": 1, "dil_h": 1, "dil_w": 1}


@pytest.mark.parametrize("type_name", ["FP16", "BF16"])
def test_large_layers_take_the_large_tile_and_small_ones_split_further(type_name: str) -> None:
    rule = spec.wrw_rule("sm90", f"{type_name}-W-NHWC")
    assert rule is not None and rule.large_channels == 256
    solver = get_solver(WRW)
    big = dict(zip(PARAMS, solver.default_params(_as(LARGE, type_name, "NHWC"), SM90),
                   strict=True))
    large = dict(rule.large)
    assert (big["BLOCK_M"], big["BLOCK_N"]) == (128, 128)
    assert all(big[k] == large[k] for k in ("BLOCK_K", "num_warps", "num_stages"))
    assert big["SPLIT_K"] == spec.split_for("conv2d_bwd_weight", _sizes(LARGE), big, 132,
                                            rule.large_waves, rule.large_least, spec.RULE_MOST)
    small = dict(zip(PARAMS, solver.default_params(_as(SMALL, type_name, "NHWC"), SM90),
                     strict=True))
    assert (small["BLOCK_M"], small["BLOCK_N"]) == (64, 64)
    # Two waves of 64x64 tiles would split its 2,097,152 pixels 16 ways; the rule's 16
    # waves, 64 (the most).
    assert spec.split_for("conv2d_bwd_weight", _sizes(SMALL), small, 132) == 16
    assert small["SPLIT_K"] == 64 == spec.split_for("conv2d_bwd_weight", _sizes(SMALL), small,
                                                     132, rule.waves, rule.least,
                                                     spec.RULE_MOST)


def test_cases_without_a_rule_keep_the_two_wave_split() -> None:
    """FP32 and the NCHW kernel have no rule: the usual tile, split by split_for's defaults."""
    assert spec.wrw_rule("sm90", "FP32-W-NHWC") is None
    assert spec.wrw_rule("sm90", "FP16-W-NCHW") is None
    assert spec.wrw_rule("sm80", "FP16-W-NHWC") is None
    p = _as(LARGE, "FP32", "NHWC")
    params = dict(zip(PARAMS, get_solver(WRW).default_params(p, SM90), strict=True))
    usual = spec.usual_config("sm90", "FP32-W-NHWC")
    assert usual is not None
    assert (params["BLOCK_M"], params["BLOCK_N"]) == (usual["BLOCK_M"], usual["BLOCK_N"])
    assert params["SPLIT_K"] == spec.split_for("conv2d_bwd_weight", _sizes(LARGE), params, 132)


@pytest.mark.parametrize("solver_name", [WRW, "ConvTritonImplicitGemmViaNhwcWrw"])
@pytest.mark.parametrize("type_name", ["FP16", "BF16"])
def test_every_pick_of_the_rule_ships(solver_name: str, type_name: str) -> None:
    """No compile at run time: each tile at each split the rule gives is in the package, for
    the NHWC solver and for the one running NCHW problems on the NHWC kernels."""
    solver = get_solver(solver_name)
    # The NCHW solver's conv objects are the NHWC solver's (its own jobs are the transposes).
    shipped = set(solver.dynamic_jobs(SM90)) | set(get_solver(WRW).dynamic_jobs(SM90))
    layout = "NHWC" if solver_name == WRW else "NCHW"
    for base in (LARGE, SMALL, replace(SMALL, n=1, in_spatial=(14, 14)),
                 replace(LARGE, n=8, in_spatial=(16, 16))):
        p = _as(base, type_name, layout)
        assert solver.is_applicable(p, SM90)
        params = solver.default_params(p, SM90)
        assert solver.compile_job(p, params, SM90) in shipped, params
        assert solver.unaligned_job(p, params, SM90) in shipped, params


def test_the_tuned_table_holds_what_the_fit_gives(tmp_path: Path) -> None:
    """bench/split_fit.py over the committed sweep writes exactly the rule the package's tuned
    table holds; held-out networks are scored, never fitted on."""
    results = ROOT / "bench" / "results"
    shipped = json.loads((ROOT / "kernels" / "conv_triton_tuned_sm90.json").read_text())
    table = tmp_path / "tuned.json"
    table.write_text(json.dumps({k: v for k, v in shipped.items() if k != "wrw_rule"}))
    sweep = json.loads((results / shipped["wrw_rule"]["sources"][0]).read_text())
    # Held-out rows made ten times slower at every split but one: a fit that read them would
    # move.
    for r in sweep["rows"]:
        if r["held_out"]:
            for v in list(r["times"].values())[1:]:
                v["gpu_ms"] *= 10
    changed = tmp_path / "sweep.json"
    changed.write_text(json.dumps(sweep))
    report = tmp_path / "fit"
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "split_fit.py"), str(changed), "--write",
         str(table), "--out", str(report)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    written = json.loads(table.read_text())["wrw_rule"]
    assert written["rules"] == shipped["wrw_rule"]["rules"]
    fitted = json.loads((report.with_suffix(".json")).read_text())
    assert fitted["fit"]["fitted"] < fitted["fit"]["today"]
    assert fitted["fit"]["oracle"] <= fitted["fit"]["fitted"]


def test_the_fit_refuses_what_is_not_a_sweep(tmp_path: Path) -> None:
    bad = tmp_path / "zoo.json"
    bad.write_text(json.dumps({"summary": {}}))
    table = tmp_path / "tuned.json"
    table.write_text("{}")
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "split_fit.py"), str(bad),
                          "--write", str(table)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "not a split_sweep.py result" in run.stderr and "Traceback" not in run.stderr
    assert table.read_text() == "{}"

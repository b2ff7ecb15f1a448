"""The small-grid forward rule (solvers/triton_small_grid.py): where it applies, what it picks,
that its objects ship, and that the tuned table holds what bench/small_grid_fit.py fits from the
committed timings."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from miopenkernels.kernels import conv_triton_spec as spec
from miopenkernels.problem import ConvProblem
from miopenkernels.ranking import rank_candidates
from miopenkernels.solvers import SOLVERS, get_solver
from miopenkernels.solvers.triton_small_grid import small_grid_config
from miopenkernels.target import Target

ROOT = Path(__file__).resolve().parents[2]
SM90 = Target("sm90", 132)
# ResNet-50's 1x1 1024 -> 256 at 14x14, batch 1: the usual 128x128 tile launches 4 programs.
LAYER = ConvProblem(n=1, c=1024, k=256, in_spatial=(14, 14), filter=(1, 1), pad=(0, 0),
                    in_type="FP16", wei_type="FP16", out_type="FP16")


def _as(p: ConvProblem, type_name: str = "FP16", layout: str = "NCHW", **kw: object
        ) -> ConvProblem:
    return replace(p, in_type=type_name, wei_type=type_name, out_type=type_name,
                   in_layout=layout, wei_layout=layout, out_layout=layout, **kw)


@pytest.mark.parametrize(("type_name", "math"), [("FP16", "ieee"), ("BF16", "ieee"),
                                                 ("FP32", "tf32")])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_batch_one_takes_the_narrow_tile_split_where_it_pays(type_name: str, math: str,
                                                             layout: str) -> None:
    p = _as(LAYER, type_name, layout)
    config = small_grid_config(p, SM90, math)
    assert config is not None
    assert (config["BLOCK_M"], config["BLOCK_N"]) == (64, 32)
    split = config["SPLIT_K"]
    gx, gy, gz = spec.grid("conv2d_fwd", _sizes(p), config)
    steps = spec.reduction_steps("conv2d_fwd", _sizes(p), config)
    assert gx * gy * gz <= 4 * SM90.cu and (split == 1 or steps >= 2 * split)
    assert spec.is_legal(config, type_name, "sm90", "conv2d_fwd")


def test_a_split_is_taken_where_it_saves_more_steps_than_the_reduce_costs() -> None:
    # 4 tiles of 64 steps: halving the steps saves 32 per split, more than the reduce's 12.
    assert spec.small_grid_split(4, 64, 132, 12.0) == 16
    # 32 tiles of 16 steps: a split of 2 saves 8 steps, less than 12; of 4 saves 12 (a tie).
    assert spec.small_grid_split(32, 16, 132, 12.0) == 1
    assert spec.small_grid_split(32, 16, 132, 3.0) == 4
    # Never under 2 steps a part; a split that adds waves saves nothing.
    assert spec.small_grid_split(4, 3, 132, 0.0) == 1
    assert spec.small_grid_split(132, 64, 132, 0.0) == 1
    assert spec.small_grid_split(66, 1024, 132, 0.0) == 2


def test_programs_an_sm_runs_at_once_make_a_split_cheaper() -> None:
    # ResNet-50's 1x1 1024 -> 256 at 14x14 (32 tiles of 16 steps): at one program an SM a
    # split of 8 takes two waves and costs what 4 does; at two an SM it runs in one.
    assert spec.small_grid_split(32, 16, 132, 6.0) == 4
    assert spec.small_grid_split(32, 16, 132, 6.0, 16, 2) == 8
    # 64 tiles of 16 steps: a split of 4 takes 2 waves at one program an SM, 1 at two.
    assert spec.small_grid_split(64, 16, 132, 6.0) == 2
    assert spec.small_grid_split(64, 16, 132, 6.0, 16, 2) == 4
    # 128 tiles of 4 steps never split: 2 steps saved are less than the reduce.
    assert spec.small_grid_split(128, 4, 132, 6.0, 16, 4) == 1


def _sizes(p: ConvProblem) -> dict[str, int]:
    from miopenkernels.solvers.triton_common import problem_view, spec_sizes

    return spec_sizes(problem_view(p)[0])


@pytest.mark.parametrize("change", [
    {"n": 32},                                   # batch 32: the usual tile fills the GPU
    {"groups": 4},                               # grouped: their own families
    {"c": 8},                                    # few channels
    {"in_spatial": (112, 112)},                  # a large grid even at batch 1
])
def test_the_rule_stays_out_where_it_was_not_fitted(change: dict) -> None:
    p = _as(replace(LAYER, **change))
    assert small_grid_config(p, SM90, "ieee") is None


def test_other_maths_directions_and_kinds_keep_their_rules() -> None:
    assert small_grid_config(_as(LAYER, "FP32"), SM90, "ieee") is None  # IEEE FP32: not fitted
    assert small_grid_config(_as(LAYER, "FP32"), SM90, "tf32x3") is None
    assert small_grid_config(_as(LAYER, "FP16"), SM90, "tf32") is None
    assert small_grid_config(replace(_as(LAYER), direction="B"), SM90, "ieee") is None
    assert small_grid_config(_as(LAYER), Target("gfx942", 304), "ieee") is None  # no table


def test_the_ranking_puts_the_narrow_tile_first_and_its_objects_ship() -> None:
    """Where the 1x1 GEMM (NCHW) had claimed the layer, the implicit GEMM's rule goes first,
    its defaults alone; the objects of every split it may take are in the package."""
    for layout in ("NCHW", "NHWC"):
        p = _as(LAYER, "FP16", layout)
        solvers = [s for s in SOLVERS if s.is_applicable(p, SM90) and s.math != "tf32"]
        best = rank_candidates(p, SM90, solvers, lambda s, q: True)[0]
        assert best.solver.name == "ConvTritonImplicitGemmFwd", layout
        assert dict(zip(("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K"), best.params,
                        strict=False)) == {k: v for k, v in small_grid_config(
                            p, SM90, "ieee").items() if k in ("BLOCK_M", "BLOCK_N", "BLOCK_K",
                                                              "GROUP_M", "SPLIT_K")}
    fwd = get_solver("ConvTritonImplicitGemmFwd")
    shipped = set(fwd.dynamic_jobs(SM90))
    for k in (1, 2, 4, 8, 16):
        for layout in ("NCHW", "NHWC"):
            p = _as(LAYER, "FP16", layout)
            params = (64, 32, 64, 8, k, 4, 3)
            assert fwd.compile_job(p, params, SM90) in shipped
            assert fwd.unaligned_job(p, params, SM90) in shipped
    # The Via solvers step aside on a small grid (their tables were measured at batch 32).
    via = get_solver("ConvTritonImplicitGemmViaNhwcFwd")
    assert not via.is_applicable(_as(replace(LAYER, in_spatial=(7, 7), c=2048, k=512)), SM90)


def test_the_tuned_table_holds_what_the_fit_gives(tmp_path: Path) -> None:
    """bench/small_grid_fit.py over the committed timings writes exactly the rules the
    package's tuned table holds."""
    results = ROOT / "bench" / "results"
    table = tmp_path / "tuned.json"
    shipped = json.loads((ROOT / "kernels" / "conv_triton_tuned_sm90.json").read_text())
    table.write_text(json.dumps({k: v for k, v in shipped.items() if k != "small_grid"}))
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "small_grid_fit.py"), "--fit",
         str(results / "serial_split_h100.json"), str(results / "serial_split_tf32nhwc_h100.json"),
         "--in-model", str(results / "split_in_model_h100-ab81144.json"),
         "--write", str(table)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert json.loads(table.read_text())["small_grid"] == shipped["small_grid"]
    # Every case's split costs come from the models.
    assert all(rule.get("programs_per_sm", 1) > 1
               for rule in shipped["small_grid"]["rules"].values())
    assert set(shipped["small_grid"]["rules"]) == {f"{t}-F-{lay}" for t in ("FP16", "BF16",
                                                                            "TF32")
                                                   for lay in ("NCHW", "NHWC")}

"""The few-channel direct forward family (solvers/triton_fma.py): which problems it takes, where
it ranks first, its parameters, objects and launches, and the trial figures its claim rests on
recomputed from the committed H200 run."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from miopenkernels.config import scoped_env
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import all_dynamic_jobs, get_solver, ranks_first
from miopenkernels.target import Target

spec = pytest.importorskip("miopenkernels.kernels.conv_triton_fma_spec")

ROOT = Path(__file__).resolve().parents[2]
SM90 = Target("sm90", 132)


def _stem(layout: str = "NCHW", **kw: object) -> ConvProblem:
    """ResNet-50's stem at batch 32, FP32."""
    p = ConvProblem(n=32, c=3, k=64, in_spatial=(224, 224), filter=(7, 7), pad=(3, 3),
                    stride=(2, 2), in_type="FP32", in_layout=layout, wei_layout=layout,
                    out_layout=layout)
    return replace(p, **kw) if kw else p


def test_it_takes_fp32_forward_problems_of_one_to_four_channels() -> None:
    solver = get_solver("ConvTritonFmaFwd")
    for layout in ("NCHW", "NHWC"):
        assert solver.is_applicable(_stem(layout), SM90)
        assert solver.is_applicable(_stem(layout, c=4, k=512, filter=(3, 3), pad=(1, 1),
                                          stride=(1, 1)), SM90)
    for kw in ({"c": 5}, {"in_type": "FP16", "wei_type": "FP16", "out_type": "FP16"},
               {"direction": "B"}, {"direction": "W"}, {"groups": 3, "c": 3, "k": 3},
               {"mode": "trans"}):
        assert not solver.is_applicable(_stem(**kw), SM90), kw
    three_d = ConvProblem(n=2, c=3, k=16, in_spatial=(4, 8, 8), filter=(3, 3, 3),
                          in_type="FP32")
    assert not solver.is_applicable(three_d, SM90)
    # Past 32-bit offsets: not this kernel's.
    assert not solver.is_applicable(_stem(n=32 * 512), SM90)


def test_it_ranks_first_on_sm90_ahead_of_the_three_product_kernel() -> None:
    from miopenkernels.handle import Handle

    fma = get_solver("ConvTritonFmaFwd")
    tf32x3 = get_solver("ConvTritonImplicitGemmTf32x3Fwd")
    handle = Handle(target="sm90-132")
    for layout in ("NCHW", "NHWC"):
        p = _stem(layout)
        assert ranks_first(fma, p, SM90) and not ranks_first(tf32x3, p, SM90)
        assert handle.solutions(p)[0].solver == "ConvTritonFmaFwd"
    # Under the TF32 math mode the TF32 solver keeps its place; elsewhere (sm80) the model
    # decides: no claim.
    tf32 = get_solver("ConvTritonImplicitGemmTf32Fwd")
    assert ranks_first(tf32, _stem(), SM90)
    assert not fma.claims_first(_stem(), Target("sm80", 108))


def test_tiles_objects_and_launch() -> None:
    solver = get_solver("ConvTritonFmaFwd")
    p = _stem("NHWC")
    params = solver.default_params(p, SM90)
    assert params == (128, 64, 1, 8, 1, 4, 3)
    assert solver.default_params(_stem(k=16), SM90)[1] == 16
    assert solver.default_params(_stem(k=24), SM90)[1] == 32
    assert solver.default_params(_stem(k=512), SM90)[1] == 64
    assert solver.params_valid(p, SM90, params)
    assert not solver.params_valid(p, SM90, (128, 48, 1, 8, 1, 4, 3))
    gfx = Target.parse("gfx942-304")
    assert solver.default_params(p, gfx) == (64, 64, 1, 8, 1, 8, 3)
    job = solver.compile_job(p, params, SM90)
    assert "-DCHANNELS_LAST=1" in job.options
    assert "-DCHANNELS_LAST=0" in solver.compile_job(_stem(), params, SM90).options
    launch = solver.launch(p, params)
    m = 32 * 112 * 112
    assert launch.grid == (math.ceil(m / 128), 1, 1) and launch.block == (128, 1, 1)
    args = launch.scalars()
    assert (args["sxc"], args["swc"], args["syk"]) == (1, 1, 1)
    assert (args["P"], args["Q"], args["R"], args["stride_h"]) == (112, 112, 7, 2)
    assert launch.pointer_args()[:3] == ["x", "w", "y"] and launch.workspace_bytes == 0
    with scoped_env("MIOPENKERNELS_TRITON", "1"):
        jobs = solver.dynamic_jobs(SM90)
        shipped = set(all_dynamic_jobs(SM90))
    assert len(jobs) == 6 and set(jobs) <= shipped and job in jobs
    # Targets without matrix cores (which Triton does not compile for) get none, and the
    # solver does not apply there.
    for name in ("gfx900-56", "gfx906-60"):
        old = Target.parse(name)
        with scoped_env("MIOPENKERNELS_TRITON", "1"):
            assert solver.dynamic_jobs(old) == [] and not solver.is_applicable(p, old)


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def test_the_trial_figures_the_claim_rests_on() -> None:
    """bench/results/fewc_fwd_2d_fp32_h200-fa47541.json: the direct kernel at 0.80 (NCHW) and
    0.84 (NHWC) of IEEE cuDNN's GPU time over the three stems, at the tiles TILES holds."""
    rows = json.loads((ROOT / "bench" / "results" /
                       "fewc_fwd_2d_fp32_h200-fa47541.json").read_text())["rows"]
    assert len(rows) == 3
    nchw = [r["nchw_fma_ms"] / r["cudnn_nchw_ms"] for r in rows]
    nhwc = [r["nhwc_fma_ms"] / r["cudnn_nhwc_ms"] for r in rows]
    assert (round(_geomean(nchw), 2), round(_geomean(nhwc), 2)) == (0.80, 0.84)
    best = {r["sizes"][4]: r["nhwc_fma_best"] for r in rows}
    assert best == {64: "128x64x32w4s3", 32: "128x32x16w4s3", 16: "128x16x16w4s3"}
    for k, tile in best.items():
        bm, bn = (int(v) for v in tile.split("x")[:2])
        chosen = spec.tile_for("sm90", {"K": k})
        assert (chosen["BLOCK_M"], chosen["BLOCK_N"], chosen["num_warps"]) == (bm, bn, 4)


def test_the_h100_run_s_figures() -> None:
    """bench/results/README.md's "FP32 stems on the FP32 units" figures."""
    run = ROOT / "bench" / "results" / "fma_h100-6172073"
    zoo = json.loads((run / "fma_zoo.json").read_text())
    assert not zoo["errors"] and len(zoo["rows"]) == 74 and "H100" in zoo["device"]
    fma = [r for r in zoo["rows"] if r["solver"] == "ConvTritonFmaFwd"]
    assert len(fma) == 51 and max(r["rel_err"] for r in fma) < 2.7e-7
    got = {}
    for layout in ("NCHW", "NHWC"):
        for held in (False, True):
            ratios = [r["ratio"] for r in fma
                      if r["case"].endswith(layout) and r["held_out"] == held]
            got[(layout, held)] = (len(ratios), round(_geomean(ratios), 2))
    assert got == {("NCHW", False): (22, 0.98), ("NCHW", True): (4, 0.89),
                   ("NHWC", False): (21, 1.13), ("NHWC", True): (4, 1.05)}
    assert round(max(r["ratio"] for r in fma), 2) == 1.62
    assert "160 passed" in (run / "grid_tests.txt").read_text()

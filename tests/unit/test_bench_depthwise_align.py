"""bench/depthwise_align_sass.py's result (no GPU) and bench/depthwise_align_ab.py's layer
filter, arms and comparison: the figures the depthwise spec quotes, recomputed from the run's
rows, and the A/B's 'before' arm really the objects as they were."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "bench" / "results" / "depthwise_align_sass-sm90.json"
sys.path.insert(0, str(ROOT / "bench"))

import depthwise_align_ab  # noqa: E402


def _row(rows: list[dict], layer: str, direction: str) -> dict:
    return next(r for r in rows if r["layer"] == layer and r["direction"] == direction)


def test_sass_figures_the_spec_quotes() -> None:
    rows = json.loads(RUN.read_text())["rows"]
    f = _row(rows, "shufflenet_v2 58 3x3", "F")
    assert (f["shipped"]["assumed_c"], f["before"]["assumed_c"]) == (2, None)
    assert [(f[v]["instructions"], f[v]["loads"], f[v]["registers"])
            for v in ("shipped", "before")] == [(808, 45, 80), (1344, 81, 159)]
    b = _row(rows, "shufflenet_v2 58 3x3", "B")
    assert (b["shipped"]["instructions"], b["before"]["instructions"]) == (1264, 2048)
    w = _row(rows, "shufflenet_v2 58 3x3", "W")
    assert (w["shipped"]["loads"], w["before"]["loads"]) == (10, 20)
    fp32 = _row(rows, "mobilenet_v3 72 3x3", "F")
    assert (fp32["shipped"]["assumed_c"], fp32["shipped"]["loads"],
            fp32["before"]["loads"]) == (4, 27, 81)
    # Where both hold, assuming 4 rather than 16 changes nothing in the SASS.
    for d in "FBW":
        both = _row(rows, "64 3x3 (both aligned)", d)
        assert (both["shipped"]["assumed_c"], both["before"]["assumed_c"]) == (4, 16)
        assert {k: v for k, v in both["shipped"].items() if k != "assumed_c"} == \
            {k: v for k, v in both["before"].items() if k != "assumed_c"}
    # Every newly aligned object loads less than the one it replaced.
    for r in rows:
        if r["before"]["assumed_c"] is None:
            assert r["shipped"]["loads"] < r["before"]["loads"], r["layer"]


def _layer(c: int, groups: int | None = None, k: int | None = None) -> SimpleNamespace:
    return SimpleNamespace(problem=SimpleNamespace(c=c, k=k or c, groups=groups or c))


def test_ab_layers_are_the_newly_aligned_depthwise_ones() -> None:
    take = depthwise_align_ab.newly_aligned
    assert [bool(take(_layer(c))) for c in (58, 116, 54, 72, 120, 24, 64, 96, 57, 232)] == \
        [True, True, True, True, True, True, False, False, False, True]
    assert not take(_layer(58, groups=29)) and not take(_layer(58, groups=1))


def test_unaligned_arm_restores_the_objects_as_before(monkeypatch) -> None:  # noqa: ANN001
    from miopenkernels.kernels import conv_triton_depthwise3d_spec as spec3
    from miopenkernels.kernels import conv_triton_depthwise_spec as spec
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers import get_solver, triton_depthwise
    from miopenkernels.target import Target

    for m in (spec, spec3):
        monkeypatch.setattr(m, "PAIR_FILTERS", m.PAIR_FILTERS)
        monkeypatch.setattr(m, "align_divisor", m.align_divisor)
    target = Target("sm90", 132)
    solver = get_solver("ConvTritonDepthwiseFwd")

    def assumed(c: int, dtype: str) -> str | None:
        p = ConvProblem(n=8, c=c, k=c, groups=c, in_spatial=(14, 14), filter=(3, 3),
                        pad=(1, 1), in_type=dtype, wei_type=dtype, out_type=dtype,
                        in_layout="NHWC", wei_layout="NHWC", out_layout="NHWC")
        job = solver.compile_job(p, solver.default_params(p, target), target)
        text = next((o for o in job.options if o.startswith("--assume=")), "")
        return next((a for a in text.split(",") if a.startswith("C:")), None)

    triton_depthwise._job.cache_clear()
    shipped = [assumed(c, t) for c, t in ((58, "FP16"), (72, "FP32"), (64, "FP32"))]
    depthwise_align_ab.unalign()
    triton_depthwise._job.cache_clear()
    before = [assumed(c, t) for c, t in ((58, "FP16"), (72, "FP32"), (64, "FP32"))]
    triton_depthwise._job.cache_clear()
    assert shipped == ["C:2", "C:4", "C:4"] and before == [None, None, "C:16"]
    assert spec3.pair_classes("F", True) == ()


def test_compare_pairs_the_arms(tmp_path: Path) -> None:
    from align8_backward_ab import compare

    def rows(scale: float) -> dict:
        return {"rows": [{"network": "n", "layer": "l", "key": f"k{i}", "case": "FP16-F-NHWC",
                          "n": 32, "solver": "s", "ours_gpu_ms": scale * (i + 1),
                          "ours_wall_ms": 1.0, "ratio": scale} for i in range(3)]}

    out = compare(rows(0.5), rows(1.0), ("aligned", "unaligned"))
    case = out["FP16-F-NHWC"]
    assert case["layers"] == 3 and case["aligned_over_unaligned_gpu"] == 0.5
    assert (case["aligned_vs_cudnn"], case["unaligned_vs_cudnn"]) == (0.5, 1.0)

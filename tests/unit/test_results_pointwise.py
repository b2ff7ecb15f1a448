"""The pointwise row GEMMs' claims and figures from their H100 runs (bench/results/
pointwise_h100-5ea1be3, pointwise_h100-e75bf7f), recomputed from the JSON: the spec's FIRST is
what bench/pointwise_first.py fits on the two runs, find's picks in the run with those claims
are the claimed solver's wherever a claim holds, and the figures bench/results/README.md
quotes."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
RUNS = [RESULTS / "pointwise_h100-e75bf7f" / "alt.json",
        RESULTS / "pointwise_h100-5ea1be3" / "alt.json"]
spec = pytest.importorskip("miopenkernels.kernels.conv_triton_pointwise_spec")
sys.path.insert(0, str(ROOT / "bench"))
import pointwise_first as pf  # noqa: E402


def _zoo() -> dict:
    return json.loads((RESULTS / "pointwise_h100-e75bf7f" / "zoo.json").read_text())


def test_the_claims_are_the_fit_of_the_runs() -> None:
    fitted = pf.fit(pf.read_rows(RUNS))
    first = {case: (v["width"], v["least_rows"]) for case, v in fitted.items() if v["width"]}
    assert spec.FIRST["sm90"] == first
    # No FP32 forward or backward data claim: the library's product was the faster.
    assert not [c for c in first if c.startswith("FP32-") and "-W-" not in c]
    # With the claims, every case's zoo geomean is at most its first choice's before.
    for case, v in fitted.items():
        assert v["with_claim"] <= v["pick"] + 1e-12, case


def test_find_runs_the_claimed_solver_and_the_heads_left_two_and_a_half() -> None:
    zoo = _zoo()
    assert zoo["errors"] == 0 and not zoo["failures"]
    rows = zoo["rows"]
    assert len(rows) == 996
    for r in rows:
        width, rows_of = pf.narrow_width(r["key"]), pf.rows_of(r["key"])
        most, least = spec.FIRST["sm90"].get(r["case"], (0, 0))
        if width <= most and rows_of >= least:
            assert r["solver"].startswith("ConvTritonPointwise"), (r["key"], r["solver"])
        else:
            assert not r["solver"].startswith("ConvTritonPointwise"), r["key"]
    # 3D U-Net's 64 -> 3 head and the UNet's 64 -> 2 mask head, 16-bit, every direction and
    # batch: under cuDNN's time through find (they took 1.3-2.6x on the GEMM library and the
    # 3-D family's chunks before: alt.json's picks).
    heads = [r for r in rows if r["network"] in ("unet3d", "unet") and r["layer"] == "out"
             and not r["case"].startswith("FP32")]
    assert len(heads) == 2 * 3 * 2 * 3
    assert max(r["ratio"] for r in heads) < 1.0
    before = {r["key"]: r["solvers"]["pick"]["gpu_ms"] / r["cudnn_gpu_ms"]
              for r in json.loads(RUNS[0].read_text())["rows"] if r["network"] == "unet3d"}
    assert max(before.values()) > 2.5 and len(before) == 24  # FP32 at batch 32: over 10 GB


def test_the_summaries_quoted() -> None:
    summary = _zoo()["summary"]
    quoted = {"FP16-F-NDHWC": 0.95, "FP16-B-NDHWC": 0.73, "FP16-W-NDHWC": 0.56,
              "BF16-F-NDHWC": 0.62, "BF16-B-NDHWC": 0.73, "BF16-W-NDHWC": 0.56,
              "FP16-F-NHWC": 0.89, "FP16-B-NHWC": 0.89, "FP16-W-NHWC": 0.96,
              "BF16-F-NHWC": 0.85, "BF16-B-NHWC": 0.85, "BF16-W-NHWC": 1.03,
              "FP32-W-NHWC": 0.79}
    for case, value in quoted.items():
        assert math.isclose(round(summary[case]["gpu_geomean"], 2), value), case
    grid = (RESULTS / "pointwise_h100-5ea1be3" / "gpu_tests.txt").read_text()
    assert "54 passed" in grid and "failed" not in grid


def test_the_main_job_figures_the_readme_gives() -> None:
    from main_job_files import main_job_times, minutes

    setup, build, rebuild = main_job_times("e75bf7f")
    readme = (ROOT / "README.md").read_text()
    assert rebuild is not None
    assert f"{minutes(build)} cold" in readme and minutes(setup + build) in readme
    assert f"nothing in {rebuild:.1f} s" in readme
    header = (RESULTS / "main_job-2cpu-e75bf7f.txt").read_text()
    assert "10348/10348 objects compiled" in header and "0 failed" in header

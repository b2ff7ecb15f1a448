"""The pointwise row GEMMs' claims and figures from their H100 runs (bench/results/
pointwise_h100-5ea1be3, pointwise_h100-e75bf7f, pointwise_h100-64b308a), recomputed from the
JSON: the spec's FIRST is what bench/pointwise_first.py fits on the three runs, find's picks in
the runs with those claims are the claimed solver's wherever a claim holds, and the figures
bench/results/README.md quotes."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
RUNS = [RESULTS / "pointwise_h100-64b308a" / "alt.json",
        RESULTS / "pointwise_h100-e75bf7f" / "alt.json",
        RESULTS / "pointwise_h100-5ea1be3" / "alt.json"]
#: The FP32 squeeze-and-excitation run: FP32 forward and backward data of the zoo's layers of
#: one position an image, batches 2 to 256, and find over EfficientNet-B0's and RegNetY-400MF's
#: pointwise layers with its fit's claims, NCHW and NHWC.
SE_RUN = RESULTS / "pointwise_h100-64b308a"
spec = pytest.importorskip("miopenkernels.kernels.conv_triton_pointwise_spec")
sys.path.insert(0, str(ROOT / "bench"))
import pointwise_first as pf  # noqa: E402


def _zoo() -> dict:
    return json.loads((RESULTS / "pointwise_h100-e75bf7f" / "zoo.json").read_text())


def test_the_claims_are_the_fit_of_the_runs() -> None:
    fitted = pf.fit(pf.read_rows(RUNS))
    first = {case: tuple(v["claim"]) for case, v in fitted.items() if v["width"]}
    assert spec.FIRST["sm90"] == first
    # FP32 forward and backward data claim only a row range, on the narrow side read: the
    # library's product was the faster on the large layers.
    fp32 = {c: v for c, v in first.items() if c.startswith("FP32-") and "-W-" not in c}
    assert fp32 == {"FP32-F-NHWC": (8, 32, 128, 1), "FP32-B-NHWC": (12, 32, 256, 1)}
    # Fitting from the earlier runs alone gives the same claims but those two: bounded claims
    # change nothing an unbounded one fits.
    earlier = pf.fit(pf.read_rows(RUNS[1:]))
    assert {c: tuple(v["claim"]) for c, v in earlier.items() if v["width"] and c not in fp32} \
        == {c: v for c, v in first.items() if c not in fp32}
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
        # The claims of this run: FP32 forward and backward data had none.
        most, least = spec.FIRST["sm90"].get(r["case"], (0, 0))[:2] \
            if r["case"].startswith(("FP16", "BF16")) or "-W-" in r["case"] else (0, 0)
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
              for r in json.loads(RUNS[1].read_text())["rows"] if r["network"] == "unet3d"}
    assert max(before.values()) > 2.5 and len(before) == 24  # FP32 at batch 32: over 10 GB


def test_the_squeeze_and_excitation_run() -> None:
    """Find with the bounded FP32 claims: every layer the claims take ran on the pointwise
    solver, NCHW as NHWC (one position an image); EfficientNet-B0's 6 -> 144 forward at batch
    32, 6.3x cuDNN on the GEMM library before (e75bf7f's alt.json), under cuDNN's time now;
    no squeeze-and-excitation row above 1.6."""
    zoo = json.loads((SE_RUN / "zoo.json").read_text())
    assert zoo["errors"] == 0 and not zoo["failures"]
    grid = (SE_RUN / "gpu_tests.txt").read_text()
    assert "90 passed" in grid and "failed" not in grid
    se = [r for r in zoo["rows"] if "-1-1-1x1-" in r["key"]]
    assert len(se) == 12 * 2 * 2  # layers, directions, layouts
    claimed = 0
    for r in se:
        p = pf.ConvProblem.from_key(r["key"])
        channels_last = r["case"].replace("NCHW", "NHWC")
        sizes = {"N": p.n, "D": 1, "H": 1, "W": 1, "C": p.c, "K": p.k}
        if spec.claims("sm90", channels_last, sizes):
            claimed += 1
            assert r["solver"].startswith("ConvTritonPointwise"), r["key"]
    assert claimed == 20
    expansion = [r for r in se if r["layer"] == "features.2.1.se.fc2" and "-F-" in r["case"]]
    assert len(expansion) == 2 and max(r["ratio"] for r in expansion) < 0.9
    before = [r for r in json.loads(RUNS[1].read_text())["rows"]
              if r["layer"] == "features.2.1.se.fc2" and r["case"] == "FP32-F-NHWC"
              and r["key"].split("-")[7] == "32"]
    assert before[0]["solvers"]["pick"]["gpu_ms"] / before[0]["cudnn_gpu_ms"] > 6.0
    assert max(r["ratio"] for r in se) < 1.6
    # The alt step: the 6 -> 144 forward at 64-256 images, pointwise against the pick.
    alt = [r for r in json.loads(RUNS[0].read_text())["rows"]
           if r["layer"] == "features.2.1.se.fc2" and r["case"] == "FP32-F-NHWC"
           and int(r["key"].split("-")[7]) >= 64]
    ours = [r["solvers"]["ConvTritonPointwiseFwd"]["gpu_ms"] / r["cudnn_gpu_ms"] for r in alt]
    pick = [r["solvers"]["pick"]["gpu_ms"] / r["cudnn_gpu_ms"] for r in alt]
    assert len(alt) == 3
    assert (round(min(ours), 2), round(max(ours), 2)) == (0.87, 0.89)
    assert (round(min(pick), 2), round(max(pick), 2)) == (2.47, 5.57)
    fit = json.loads((SE_RUN / "fit.json").read_text())["cases"]
    assert [round(fit["FP32-F-NHWC"][k], 2) for k in ("pick", "with_claim", "held_out_pick",
                                                      "held_out_with_claim")] == \
        [0.79, 0.73, 0.73, 0.69]
    assert [round(fit["FP32-B-NHWC"][k], 2) for k in ("pick", "with_claim", "held_out_pick",
                                                      "held_out_with_claim")] == \
        [0.78, 0.72, 0.60, 0.57]
    summary = zoo["summary"]
    assert {c: (round(v["gpu_geomean"], 2), round(v["max_ratio"], 2))
            for c, v in summary.items()} == {"FP32-F-NHWC": (0.78, 1.42),
                                             "FP32-F-NCHW": (0.86, 1.55),
                                             "FP32-B-NHWC": (0.79, 1.25),
                                             "FP32-B-NCHW": (0.99, 1.63)}
    assert round(math.exp(sum(math.log(r["ratio"]) for r in se) / len(se)), 2) == 0.88


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

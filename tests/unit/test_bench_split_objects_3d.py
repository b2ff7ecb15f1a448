"""The figures bench/results/README.md quotes for the 3-D split objects (split_objects_3d_h100/
and the main-job timings), recomputed from the committed runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import alternatives_ab  # noqa: E402
from main_job_files import main_job_times, minutes  # noqa: E402

RESULTS = ROOT / "bench" / "results"
RUN = RESULTS / "split_objects_3d_h100"


def _compare(folder: str) -> dict:
    return alternatives_ab.compare(alternatives_ab._rows(RUN / folder / "ab_before.json"),
                                   alternatives_ab._rows(RUN / folder / "ab_after.json"))


def _regs(path: Path) -> dict[str, dict]:
    return {r["case"] + " " + r["solver"]: r for r in json.loads(path.read_text())["rows"]}


def test_the_one_object_regression_and_its_undoing() -> None:
    before = _compare("regression_f61b814")
    f_nchw, f_nhwc = before["ConvTriton3dFwd FP16-F-NCHW"], before["ConvTriton3dFwd FP16-F-NHWC"]
    assert (f_nchw["rows"], f_nchw["after_over_before"], round(f_nchw["max"], 2)) == \
        (27, 1.126, 1.54)
    assert (f_nhwc["rows"], f_nhwc["after_over_before"], round(f_nhwc["max"], 2)) == \
        (27, 1.127, 1.55)
    b_nchw, b_nhwc = before["ConvTriton3dBwd FP16-B-NCHW"], before["ConvTriton3dBwd FP16-B-NHWC"]
    assert (b_nchw["rows"], b_nchw["after_over_before"]) == (25, 1.038)
    assert (b_nhwc["rows"], b_nhwc["after_over_before"]) == (25, 1.019)
    after = _compare("ab")
    extremes = []
    for case, ratio, cudnn in (("NCHW", 0.892, 0.985), ("NHWC", 0.894, 1.010)):
        row = after["ConvTriton3dFwd FP16-F-" + case]
        assert (row["rows"], row["after_over_before"]) == (27, ratio)
        assert row["cudnn_after_over_before"] == cudnn
        extremes += [row["min"], row["max"]]
    assert (round(min(extremes), 2), round(max(extremes), 2)) == (0.64, 1.06)
    assert after["ConvTriton3dBwd FP16-B-NCHW"]["after_over_before"] == 0.937
    fp32 = _compare("ab_fp32")
    rows = [fp32[f"{solver} FP32-{case}"] for solver, case in (
        ("ConvTriton3dFwd", "F-NCHW"), ("ConvTriton3dFwd", "F-NHWC"),
        ("ConvTriton3dBwd", "B-NCHW"), ("ConvTriton3dBwd", "B-NHWC"))]
    assert [(r["rows"], r["after_over_before"]) for r in rows] == \
        [(27, 0.909), (27, 0.982), (24, 0.946), (24, 0.975)]
    assert (round(min(r["min"] for r in rows[:2]), 2), round(max(r["max"] for r in rows[:2]), 2),
            round(min(r["min"] for r in rows[2:]), 2), round(max(r["max"] for r in rows[2:]), 2)) \
        == (0.83, 1.19, 0.79, 1.01)
    cudnn = [r["cudnn_after_over_before"] for r in rows]
    assert (min(cudnn), max(cudnn)) == (0.974, 0.996)
    fp16 = _compare("ab_fp16_bwd")
    rows = [fp16[f"ConvTriton3dBwd FP16-B-{layout}"] for layout in ("NCHW", "NHWC")]
    assert [(r["rows"], r["after_over_before"]) for r in rows] == [(25, 0.967), (25, 0.979)]
    assert (round(min(r["min"] for r in rows), 2), round(max(r["max"] for r in rows), 2)) == \
        (0.90, 1.07)
    assert [r["cudnn_after_over_before"] for r in rows] == [1.003, 1.002]
    cap = _compare("cap_not_adopted")
    assert (cap["ConvTriton3dFwd FP32-F-NCHW"]["rows"],
            cap["ConvTriton3dFwd FP32-F-NCHW"]["after_over_before"]) == (27, 0.926)
    assert (cap["ConvTriton3dFwd FP32-F-NHWC"]["rows"],
            cap["ConvTriton3dFwd FP32-F-NHWC"]["after_over_before"]) == (21, 0.962)


def test_registers_back_to_the_unsplit_kernel() -> None:
    old = _regs(RESULTS / "split3d_h100" / "regs_before.json")
    one = _regs(RUN / "regs_f61b814.json")
    unsplit, split = _regs(RUN / "regs_unsplit.json"), _regs(RUN / "regs_split.json")
    assert len(old) == 8 and all(unsplit[k]["registers"] == old[k]["registers"] for k in old)
    ieee_f, ieee_b = "FP32-F-NCDHW ConvTriton3dFwd", "FP32-B-NCDHW ConvTriton3dBwd"
    assert [one[k]["registers"] for k in (ieee_f, ieee_b, "FP16-F-NCDHW ConvTriton3dFwd")] == \
        [154, 198, 255]
    aligned = "FP16-F-NDHWC ConvTriton3dFwd"
    assert (one[aligned]["registers"], one[aligned]["blocks_per_sm"]) == (145, 1)
    assert (unsplit[aligned]["registers"], unsplit[aligned]["blocks_per_sm"]) == (128, 2)
    assert not any(r["spills"] for r in split.values())
    assert min(r["registers"] for r in split.values()) == 128
    assert max(r["registers"] for r in split.values()) == 255
    assert all(r["params"][4] == 2 for r in split.values())


def test_the_grid_and_the_main_job_timings() -> None:
    assert (RUN / "grid" / "gpu_tests.txt").read_text().strip().splitlines()[-1] \
        .startswith("2628 passed")

    setup, build, _ = main_job_times("1eb3c33")
    assert (minutes(build), minutes(setup + build)) == ("27 min 3 s", "27 min 55 s")
    assert minutes(main_job_times("d74476e")[1]) == "30 min 49 s"
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "27 min 3 s cold, 27 min 55 s with the set-up" in readme

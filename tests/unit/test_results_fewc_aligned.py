"""The few-channel kernels' objects aligned on y's (dy's) side: the figures bench/results/
README.md and the rules' comments quote, recomputed from the committed H100 runs
(bench/results/fewc_aligned_h100-6dc4da4/), and the rules checked against the rows they rest
on."""

from __future__ import annotations

import json
import math
from pathlib import Path

from main_job_files import main_job_times, minutes
from miopenkernels.kernels import conv_triton_3d_smallc_spec as smallc

RUN = Path(__file__).resolve().parents[2] / "bench" / "results" / "fewc_aligned_h100-6dc4da4"


def _load(name: str) -> dict:
    return json.loads((RUN / name).read_text())


def test_the_zoo_runs_before_and_after() -> None:
    before, after = _load("zoo_before.json"), _load("zoo_after.json")
    assert before["errors"] == after["errors"] == 0
    got = {c: (before["summary"][c]["layers"], round(before["summary"][c]["gpu_geomean"], 3),
               round(after["summary"][c]["gpu_geomean"], 3))
           for c in ("FP16-F-NHWC", "BF16-F-NHWC")}
    assert got == {"FP16-F-NHWC": (29, 1.416, 0.982), "BF16-F-NHWC": (29, 0.906, 0.643)}
    held = {c: (round(before["held_out"]["summary"][c]["gpu_geomean"], 3),
                round(after["held_out"]["summary"][c]["gpu_geomean"], 3))
            for c in ("FP16-F-NHWC", "BF16-F-NHWC")}
    assert held == {"FP16-F-NHWC": (1.869, 1.313), "BF16-F-NHWC": (0.878, 0.64)}
    assert (round(before["classes"]["few-channel"]["gpu_geomean"], 3),
            round(after["classes"]["few-channel"]["gpu_geomean"], 3)) == (1.171, 0.85)
    # Every stem the change touched: no 2-D few-channel forward row got slower by over 5%.
    old = {(r["network"], r["layer"], r["case"]): r for r in before["rows"]}
    for r in after["rows"]:
        o = old[(r["network"], r["layer"], r["case"])]
        if int(r["key"].split("-")[0]) < 10 and "NDHWC" not in r["key"] and \
                "Blas" not in r["solver"]:
            assert r["ratio"] <= o["ratio"] * 1.05, (r["network"], r["layer"], r["case"])


def test_the_rule_fit_on_the_aligned_objects() -> None:
    case = _load("tile_rule_fit.json")["cases"]["FP16-F-NHWC-few"]
    assert (case["fit"]["layers"], case["fit"]["default_vs_cudnn"],
            case["fit"]["rule_vs_cudnn"]) == (27, 1.1068, 0.9974)
    assert case["leave_one_network_out"]["rule_vs_cudnn"] == 1.0443
    assert (case["held_out"]["layers"], case["held_out"]["default_vs_cudnn"],
            case["held_out"]["rule_vs_cudnn"]) == (5, 1.2484, 1.1479)


def _stems(direction: str) -> list[tuple[dict, dict[str, float]]]:
    """(row, solver -> time over cuDNN's) of bw.json's FP16 NHWC stems of a direction (fewer
    than 10 channels on x's side, more than one tap)."""
    out = []
    for r in _load("bw.json")["rows"]:
        key = r["key"].split("-")
        if r["case"] != f"FP16-{direction}-NHWC" or int(key[4]) >= 10 or key[3] == "1x1":
            continue
        out.append((r, {n: v["gpu_ms"] / r["cudnn_gpu_ms"] for n, v in r["solvers"].items()
                        if "gpu_ms" in v}))
    return out


def _sizes(key: str) -> dict[str, int]:
    k = key.split("-")
    r, s = (int(v) for v in k[3].split("x"))
    u, v = (int(x) for x in k[9].split("x"))
    return {"C": int(k[4]), "K": int(k[0]), "R": r, "S": s, "T": 1, "G": 1, "stride_h": u,
            "stride_w": v}


def test_backward_data_at_stride_2_on_the_aligned_objects() -> None:
    rows = [(r, t) for r, t in _stems("B") if r["key"].split("-")[9] == "2x2"]
    own = [t["ConvTritonImplicitGemmBwd"] for _, t in rows]
    first = [t["pick"] for _, t in rows]
    assert len(rows) == 18 and all(a < b for a, b in zip(own, first, strict=True))
    assert (round(min(own), 2), round(max(own), 2)) == (0.21, 0.70)
    assert (round(min(first), 2), round(max(first), 2)) == (0.37, 0.99)
    few = [t["ConvTritonSmallCBwd"] for _, t in rows if "ConvTritonSmallCBwd" in t]
    assert (len(few), round(min(few), 2), round(max(few), 2)) == (7, 0.35, 1.04)
    for r, _ in rows:  # the 3-D kernels give way to the aligned 2-D object
        assert not smallc.first_2d("B", _sizes(r["key"]), True, True, True)


def test_backward_weights_go_where_the_columns_pass_one_block() -> None:
    rows = _stems("W")
    claimed = [(r, t) for r, t in rows
               if not smallc.first_2d("W", _sizes(r["key"]), True, False, True)]
    kept = [(r, t) for r, t in rows if (r, t) not in claimed]
    assert (len(claimed), len(kept)) == (12, 14)
    # The rule gives the implicit GEMM exactly the stems where it measured faster.
    assert all(t["ConvTritonImplicitGemmWrw"] < t["ConvTritonSmallCWrw"] for _, t in claimed)
    assert all(t["ConvTritonSmallCWrw"] < t["ConvTritonImplicitGemmWrw"] for _, t in kept)
    own = [t["ConvTritonImplicitGemmWrw"] for _, t in claimed]
    few = [t["ConvTritonSmallCWrw"] for _, t in claimed]
    assert (round(min(own), 2), round(max(own), 2), round(min(few), 2),
            round(max(few), 2)) == (0.38, 1.76, 0.62, 2.91)
    geo = math.exp(sum(math.log(v) for v in own) / len(own)) / \
        math.exp(sum(math.log(v) for v in few) / len(few))
    assert geo < 0.7


def test_backward_data_and_weights_through_find() -> None:
    before, after = _load("zoo_before_bw.json"), _load("zoo_after_bw.json")
    assert before["errors"] == after["errors"] == 0
    cases = ("FP16-B-NHWC", "BF16-B-NHWC", "FP16-W-NHWC", "BF16-W-NHWC")
    got = {c: (round(before["summary"][c]["gpu_geomean"], 3),
               round(after["summary"][c]["gpu_geomean"], 3)) for c in cases}
    assert got == {"FP16-B-NHWC": (0.83, 0.685), "BF16-B-NHWC": (0.806, 0.665),
                   "FP16-W-NHWC": (0.984, 0.836), "BF16-W-NHWC": (0.885, 0.783)}
    held = {c: (round(before["held_out"]["summary"][c]["gpu_geomean"], 3),
                round(after["held_out"]["summary"][c]["gpu_geomean"], 3)) for c in cases}
    assert held == {"FP16-B-NHWC": (0.786, 0.583), "BF16-B-NHWC": (0.792, 0.577),
                    "FP16-W-NHWC": (0.949, 0.758), "BF16-W-NHWC": (0.782, 0.629)}
    assert (round(before["classes"]["few-channel"]["gpu_geomean"], 3),
            round(after["classes"]["few-channel"]["gpu_geomean"], 3)) == (0.879, 0.756)
    # Every row whose solver changed got faster; those that got slower kept their solver.
    old = {(r["network"], r["layer"], r["case"]): r for r in before["rows"]}
    for r in after["rows"]:
        o = old[(r["network"], r["layer"], r["case"])]
        if r["solver"] != o["solver"]:
            assert r["ratio"] < o["ratio"], (r["network"], r["layer"], r["case"])


def test_the_main_job_with_the_aligned_objects() -> None:
    """The README's main-job figures at 68736e7 (the aligned few-channel objects) from the
    run's file: under 30 minutes cold on 2 cores, a rebuild that compiles nothing."""
    root = RUN.parents[2]
    text = (root / "bench" / "results" / "main_job-2cpu-68736e7.txt").read_text()
    setup, build, rebuild = main_job_times("68736e7")
    assert rebuild is not None
    assert (minutes(build), minutes(setup + build), round(rebuild, 1)) == \
        ("28 min 30 s", "29 min 11 s", 8.1)
    assert setup + build < 30 * 60
    assert "│ distinct   │ 10324 │    10324 │      0 │      0 │" in text
    assert "│ distinct   │ 10324 │        0 │  10324 │      0 │" in text
    readme = " ".join((root / "README.md").read_text().split())
    assert ("10,324 at tree 68736e7 (the few-channel kernels' aligned objects new): 28 min 30 s "
            "cold") in readme
    assert "29 min 11 s with the set-up" in readme


def test_the_first_choices_that_moved() -> None:
    moved = json.loads((RUN.parent / "picks_sm90-132-5e6ad8c-3c9262a.json").read_text())
    assert (moved["moved"], moved["problems"]) == (216, 27684)
    counts = {(c["before"], c["after"]): c["problems"] for c in moved["changes"]}
    assert counts == {
        ("ConvTritonImplicitGemmViaNchwBwd", "ConvTritonImplicitGemmBwd"): 114,
        ("ConvTritonSmallCWrw", "ConvTritonImplicitGemmWrw"): 72,
        ("ConvTritonSmallCFwd", "ConvTritonImplicitGemmFwd"): 24,
        ("ConvTritonSmallCBwd", "ConvTritonImplicitGemmBwd"): 6}


def test_what_the_compiler_made_of_the_objects() -> None:
    """fewc_aligned_sass-sm90.json and fewc_aligned_sass_bw-sm90.json (bench/triton_conv_sass.py,
    no GPU): the figures the spec's comment and the README quote."""
    fwd = json.loads((RUN.parent / "fewc_aligned_sass-sm90.json").read_text())
    big = {r["aligned"]: r for r in fwd if r["case"] == "FP16-F-NHWC" and
           (r["config"]["BLOCK_M"], r["config"]["BLOCK_N"], r["config"]["num_warps"]) ==
           (256, 64, 4) and r["config"]["BLOCK_K"] == 16}
    assert (big[False]["registers"], big[False]["spill_stores"], big[False]["stores"]) == \
        (255, 939, {"STG.E.U16": 128})
    assert (big[True]["registers"], big[True]["spill_stores"], big[True]["stores"]) == \
        (249, 0, {"STG.E.128": 16})
    bw = {(r["case"], r["aligned"]): r["loop_instructions"]
          for r in json.loads((RUN.parent / "fewc_aligned_sass_bw-sm90.json").read_text())}
    assert bw == {("FP16-B-NHWC", True): 330, ("FP16-B-NHWC", False): 1011,
                  ("FP16-W-NHWC", True): 209, ("FP16-W-NHWC", False): 527}

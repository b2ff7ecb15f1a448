"""The figures bench/results/README.md ("Depthwise pairs and phases, X3D-S, narrow groups
measured") and the depthwise specs quote from the H200 runs of tree fa47541 that no bench
script prints: recomputed here from the committed JSON."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"


def _load(name: str) -> dict:
    path = RESULTS / name
    opener = gzip.open if name.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def _geo(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def test_depthwise_backward_data_by_stride_against_f2b3b54() -> None:
    # FP16 NHWC rows both runs hold: stride 1 2.39 -> 1.08 (14 rows), stride 2 3.07 -> 0.57
    # (9 rows, the phased objects; and one pair-aligned stride-2 row apart).
    after = _load("zoo_h200-dw-b-fa47541.json")["rows"]
    before = {(r["network"], r["key"], r["case"], r["n"]): r
              for r in _load("zoo_h200-dw-b-f2b3b54.json")["rows"]}
    split: dict[tuple[str, bool], list[tuple[float, float]]] = {}
    for r in after:
        old = before.get((r["network"], r["key"], r["case"], r["n"]))
        if old is None or r["case"] != "FP16-B-NHWC":
            continue
        fields = r["key"].split("-")
        split.setdefault((fields[9], int(fields[0]) % 8 == 0), []).append(
            (old["ratio"], r["ratio"]))
    got = {k: (len(v), round(_geo([b for b, _ in v]), 2), round(_geo([a for _, a in v]), 2))
           for k, v in split.items()}
    assert got[("1x1", True)] == (14, 2.39, 1.08)
    assert got[("2x2", True)] == (9, 3.07, 0.57)


def test_pair_aligned_shufflenet_rows() -> None:
    # ShuffleNet's 58 and 116 channels in 16-bit types: 0.53-0.67 of the unaligned objects'
    # GPU time (24 rows).
    run = _load("depthwise_align_h200-fa47541.json")
    unaligned = {(r["network"], r["key"], r["case"]): r for r in run["unaligned_rows"]}
    ratios = [r["ours_gpu_ms"] / unaligned[(r["network"], r["key"], r["case"])]["ours_gpu_ms"]
              for r in run["aligned_rows"]
              if int(r["key"].split("-")[0]) in (58, 116) and r["case"][:4] in ("FP16", "BF16")]
    assert (len(ratios), round(min(ratios), 2), round(max(ratios), 2)) == (24, 0.53, 0.67)


def test_x3d_rows_above_two_and_a_half() -> None:
    rows = _load("zoo_h200-x3d-fa47541.json")["rows"]
    above = [r for r in rows if r["ratio"] > 2.5]
    assert (len(rows), len(above)) == (210, 15)
    padded = [r["ratio"] for r in above if r["solver"].startswith("ConvTriton3dPadded")]
    assert len(padded) == 11 and (round(min(padded), 1), round(max(padded), 1)) == (2.9, 6.0)
    wrw = sorted(round(r["ratio"], 1) for r in above if r["solver"] == "ConvTriton3dWrw")
    assert wrw == [3.4, 4.7]
    assert [round(r["ratio"], 2) for r in above if "Depthwise" in r["solver"]] == [5.26]
    assert [round(r["ratio"], 2) for r in above if "SmallC" in r["solver"]] == [2.51]


def test_few_channel_stem_trials() -> None:
    # Over cuDNN (geomean per variant): FP16 NCHW shipped 0.54, NHWC shipped 1.69, TMA store
    # 1.21 (8 stems); FP32 NCHW shipped 1.51, on the FP32 units 0.80; NHWC 1.64 and 0.84.
    def geo(run: dict, variant: str, layout: str) -> float:
        return round(_geo([r[f"{variant}_ms"] / r[f"cudnn_{layout}_ms"] for r in run["rows"]]),
                     2)

    fp16 = _load("fewc_fwd_2d_fp16_h200-fa47541.json")
    fp32 = _load("fewc_fwd_2d_fp32_h200-fa47541.json")
    assert (len(fp16["rows"]), len(fp32["rows"])) == (8, 3)
    assert [geo(fp16, "nchw", "nchw"), geo(fp16, "nhwc_cl1", "nhwc"),
            geo(fp16, "nhwc_tma", "nhwc")] == [0.54, 1.69, 1.21]
    assert [geo(fp32, "nchw", "nchw"), geo(fp32, "nchw_fma", "nchw"),
            geo(fp32, "nhwc_cl1", "nhwc"), geo(fp32, "nhwc_fma", "nhwc")] == \
        [1.51, 0.8, 1.64, 0.84]

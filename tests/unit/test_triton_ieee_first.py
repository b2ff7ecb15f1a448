"""FP32 backward weights in NHWC rank the IEEE implicit GEMM ahead of the three-TF32-product
one where the NCHW twin goes through that IEEE kernel (`triton_ieee_first.ieee_first`), and the
figures its table's comment quotes from the committed H200 run."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace

import pytest
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import get_solver, ranks_first
from miopenkernels.target import Target
from relayout_cases import LAYER, RESULTS, SM90, as_case, geomean

pytest.importorskip("miopenkernels.kernels.conv_triton_spec")
from miopenkernels.solvers.triton_ieee_first import ieee_first  # noqa: E402

RUN = RESULTS / "zoo_h200-fp32-bw-every8-ef1efe1.json.gz"
IEEE, X3 = "ConvTritonImplicitGemmWrw", "ConvTritonImplicitGemmTf32x3Wrw"


def _pairs() -> list[tuple[dict, dict]]:
    """(NCHW row, NHWC row) of each layer the run timed in both layouts of FP32 backward
    weights where NCHW went through the IEEE NHWC kernel and NHWC took the three-product one."""
    rows = json.loads(gzip.decompress(RUN.read_bytes()))["rows"]
    by: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        if r["case"] in ("FP32-W-NCHW", "FP32-W-NHWC") and r.get("ratio"):
            by.setdefault((r["network"], r["layer"], r["held_out"]), {})[r["case"]] = r
    return [(v["FP32-W-NCHW"], v["FP32-W-NHWC"]) for v in by.values() if len(v) == 2
            and v["FP32-W-NCHW"]["solver"] == "ConvTritonImplicitGemmViaNhwcWrw"
            and v["FP32-W-NHWC"]["solver"] == X3]


def test_the_run_the_table_quotes() -> None:
    """The NCHW problem through the transposes and the IEEE NHWC kernel ran faster than the
    three-product kernel on the NHWC problem itself, on every such layer."""
    pairs = _pairs()
    share = [a["ours_gpu_ms"] / b["ours_gpu_ms"] for a, b in pairs]
    assert len(pairs) == 17 and max(share) < 0.74 and round(min(share), 2) == 0.25
    assert round(geomean(share), 2) == 0.46
    # Those NHWC rows took 2.55 of cuDNN's GPU time; the NCHW route 1.18 of that cuDNN time.
    assert round(geomean([b["ratio"] for _, b in pairs]), 2) == 2.55
    assert round(geomean([a["ours_gpu_ms"] / b["cudnn_gpu_ms"] for a, b in pairs]), 2) == 1.18


def test_each_of_those_nhwc_problems_now_ranks_the_ieee_kernel_first() -> None:
    ieee, x3 = get_solver(IEEE), get_solver(X3)
    for _, row in _pairs():
        p = ConvProblem.from_key(row["key"])
        assert (p.in_layout, p.in_type, p.key_direction) == ("NHWC", "FP32", "W")
        assert ieee_first(p, SM90), row["key"]
        assert ieee.is_applicable(p, SM90) and ranks_first(ieee, p, SM90), row["key"]
        assert not ranks_first(x3, p, SM90), row["key"]


@pytest.mark.parametrize(("problem", "why"), [
    (as_case(LAYER, "W", "FP32"), "NCHW: the Via solver's table decides"),
    (as_case(LAYER, "W", "FP16", "NHWC"), "16-bit"),
    (as_case(LAYER, "F", "FP32", "NHWC"), "forward: not measured"),
    (as_case(LAYER, "B", "FP32", "NHWC"), "backward data: not measured"),
    (as_case(replace(LAYER, k=120), "W", "FP32", "NHWC"), "filters not a multiple of 16"),
    (as_case(replace(LAYER, c=8, k=64), "W", "FP32", "NHWC"), "fewer than 16 channels"),
    (as_case(replace(LAYER, groups=4), "W", "FP32", "NHWC"), "grouped"),
])
def test_not_elsewhere(problem: ConvProblem, why: str) -> None:
    assert not ieee_first(problem, SM90), why


def test_the_three_product_kernel_still_ranks_first_where_the_rule_is_silent() -> None:
    # EfficientNet-B0's features.2.1.project (144 -> 24, 1x1 at 56x56): 24 filters take the
    # unaligned object, which the run did not time through the IEEE kernel.
    p = ConvProblem(n=32, c=144, k=24, in_spatial=(56, 56), filter=(1, 1), pad=(0, 0),
                    direction="W", in_type="FP32", wei_type="FP32", out_type="FP32",
                    in_layout="NHWC", wei_layout="NHWC", out_layout="NHWC")
    assert not ieee_first(p, SM90) and ranks_first(get_solver(X3), p, SM90)
    assert not ieee_first(as_case(LAYER, "W", "FP32", "NHWC"), Target("gfx90a", 110))

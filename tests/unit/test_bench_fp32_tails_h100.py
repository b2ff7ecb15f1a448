"""bench/results/fp32_tails_h100/ (bench/gpu_fp32_tails.sh on one H100): the figures the code's
comments and the results README quote, recomputed from the committed runs."""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "fp32_tails_h100"


def _rows(name: str) -> list[dict]:
    return json.loads((RESULTS / f"{name}.json").read_text())["rows"]


def _span(ratios: list[float]) -> str:
    return f"{min(ratios):.2f}-{max(ratios):.2f}"


def _ratios(name: str, channels: int, solver: str, layout: str = "") -> list[float]:
    """GPU time over cuDNN's of `solver` on the VAE's 1x1 layer of `channels` a side."""
    prefix = f"{channels}-64-64-1x1-{channels}-"
    return [r["solvers"][solver]["gpu_ms"] / r["cudnn_gpu_ms"] for r in _rows(name)
            if r["key"].startswith(prefix) and layout in r["case"] and
            r["solvers"].get(solver, {}).get("gpu_ms")]


def test_the_device_and_the_runs() -> None:
    device = (RESULTS / "device.txt").read_text()
    assert "H100" in device and "triton 3.6.0" in device
    for name in ("big_f", "big_b", "pointwise_f", "pointwise_b", "pointwise_w", "zoo_b8_b1"):
        run = json.loads((RESULTS / f"{name}.json").read_text())
        assert run["failures"] == [] and "H100" in run["device"], name


def test_narrow_pointwise_figures() -> None:
    """blas_1x1.NARROW_POINTWISE's and triton_fma_bwd's quoted ranges."""
    assert _span(_ratios("pointwise_f", 4, "ConvTritonFmaFwd")) == "0.65-1.04"
    assert _span(_ratios("pointwise_b", 4, "ConvTritonFmaBwd")) == "0.91-1.54"
    assert _span(_ratios("pointwise_f", 4, "ConvBlasGemm1x1Fwd")) == "0.67-1.78"
    assert _span(_ratios("pointwise_b", 4, "ConvBlasGemm1x1Bwd")) == "0.88-3.10"
    assert _span(_ratios("pointwise_b", 4, "ConvTritonFmaFewKBwd")) == "1.56-4.08"
    assert _span(_ratios("pointwise_f", 8, "ConvBlasGemm1x1Fwd", "NCHW")) == "0.70-0.93"
    assert _span(_ratios("pointwise_b", 8, "ConvBlasGemm1x1Bwd", "NCHW")) == "0.44-0.65"
    assert _span(_ratios("pointwise_f", 8, "ConvTritonImplicitGemmTf32x3Fwd", "NCHW")) == \
        "2.11-2.50"
    assert _span(_ratios("pointwise_b", 8, "ConvTritonImplicitGemmTf32x3Bwd", "NCHW")) == \
        "0.91-1.02"


def test_the_esrgan_layer_past_32_bits() -> None:
    """ESRGAN's 64 -> 3 output at 2048x2048, batch 8: the new first choices against the chunk
    solvers that took it before, per layout."""
    got = {}
    for name in ("big_f", "big_b"):
        for r in _rows(name):
            for solver, timing in r["solvers"].items():
                got[(r["case"], solver)] = round(timing["gpu_ms"] / r["cudnn_gpu_ms"], 2)
    assert got[("FP32-F-NCHW", "ConvBlasKn2RowFwd")] == 0.18
    assert got[("FP32-F-NHWC", "ConvBlasKn2RowFwd")] == 0.17
    assert got[("FP32-F-NCHW", "ConvTritonImplicitGemmChunksFwd")] == 2.84
    assert got[("FP32-F-NHWC", "ConvTritonFmaFewKChunksFwd")] == 0.62
    assert got[("FP32-B-NCHW", "ConvTritonFmaChunksBwd")] == 0.53
    assert got[("FP32-B-NHWC", "ConvTritonFmaChunksBwd")] == 0.52
    assert got[("FP32-B-NCHW", "ConvTritonImplicitGemmChunksBwd")] == 5.28
    assert got[("FP32-B-NHWC", "ConvTritonImplicitGemmChunksBwd")] == 2.94


def test_the_few_channel_zoo_rows() -> None:
    """Immediate mode on ESRGAN's and the SD VAE's few-channel layers, FP32 forward and
    backward data at batches 8 and 1: 0 compiles and errors, geomean 0.61, at most 1.62."""
    run = json.loads((RESULTS / "zoo_b8_b1.json").read_text())
    few = run["classes"]["few-channel"]
    assert (run["compiles"], run["errors"], few["layers"]) == (0, 0, 48)
    assert (round(few["gpu_geomean"], 2), round(few["max_ratio"], 2)) == (0.61, 1.62)
    post = [r["ratio"] for r in run["rows"] if r["layer"] == "post_quant_conv"]
    assert f"{min(post):.2f}-{max(post):.2f}" == "0.84-1.62" and len(post) == 8
    assert {r["solver"] for r in run["rows"] if r["layer"] == "post_quant_conv"} == {
        "ConvTritonFmaFwd", "ConvTritonFmaBwd"}
    last = {(r["case"], r["n"]): r["solver"] for r in run["rows"] if r["layer"] == "conv_last"}
    assert last[("FP32-F-NCHW", 8)] == last[("FP32-F-NHWC", 8)] == "ConvBlasKn2RowFwd"
    assert last[("FP32-B-NCHW", 8)] == last[("FP32-B-NHWC", 8)] == "ConvTritonFmaChunksBwd"


def test_the_first_choices_that_moved() -> None:
    """bench/zoo.py --picks at 97a02db and afa000c compared: 10 problems moved without the
    library, 21 with it, all on the three layers the runs timed."""
    root = RESULTS.parent
    for name, moved in (("picks_sm90-132-97a02db-afa000c.json", 10),
                        ("picks_library_sm90-132-97a02db-afa000c.json", 21)):
        got = json.loads((root / name).read_text())
        assert (got["problems"], got["moved"]) == (41526, moved)
        layers = {la for change in got["changes"] for la in change["layers"]}
        assert layers <= {"esrgan/conv_last", "sd15_vae/post_quant_conv",
                          "sd15_vae/quant_conv"}, layers

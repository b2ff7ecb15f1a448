"""The few-filter direct forward (solvers/triton_fma.py, ConvTritonFmaFewKFwd) and the implicit
GEMM's few-filter tile (solvers/triton_tile_rule.py): which problems they take, where they rank
first, their tiles and objects, and the H100 run's figures their rules rest on, recomputed
from the committed JSON (bench/results/fewk_h100-6a76905)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from miopenkernels.config import scoped_env
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import YIELDS_TO, all_dynamic_jobs, blas_1x1, get_solver, ranks_first
from miopenkernels.solvers.triton_fma import ConvTritonFmaFewK
from miopenkernels.solvers.triton_tile_rule import few_filter_config, tile_rule_configs
from miopenkernels.target import Target

spec = pytest.importorskip("miopenkernels.kernels.conv_triton_fewk_spec")

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "bench" / "results" / "fewk_h100-6a76905"
SM90 = Target("sm90", 132)


def _head(layout: str = "NHWC", data_type: str = "FP32", **kw: object) -> ConvProblem:
    """The SD 1.5 UNet's conv_out (320 -> 4, 3x3 at 64x64) at batch 32."""
    p = ConvProblem(n=32, c=320, k=4, in_spatial=(64, 64), filter=(3, 3), pad=(1, 1),
                    in_type=data_type, wei_type=data_type, out_type=data_type,
                    in_layout=layout, wei_layout=layout, out_layout=layout)
    return replace(p, **kw) if kw else p


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def test_it_takes_fp32_forward_problems_of_one_to_eight_filters() -> None:
    solver = get_solver("ConvTritonFmaFewKFwd")
    for layout in ("NCHW", "NHWC"):
        assert solver.is_applicable(_head(layout), SM90)
        assert solver.is_applicable(_head(layout, k=8, c=37, filter=(5, 5), pad=(2, 2),
                                          stride=(2, 2), dilation=(1, 2)), SM90)
    for kw in ({"k": 9}, {"direction": "B"}, {"direction": "W"}, {"groups": 4, "k": 8},
               {"mode": "trans"}, {"in_type": "FP16", "wei_type": "FP16", "out_type": "FP16"}):
        assert not solver.is_applicable(_head(**kw), SM90), kw
    assert not solver.is_applicable(ConvProblem(n=2, c=16, k=4, in_spatial=(4, 8, 8),
                                                filter=(3, 3, 3), in_type="FP32"), SM90)
    assert not solver.is_applicable(_head(n=32 * 512), SM90)  # past 32-bit offsets
    for name in ("gfx900-56", "gfx906-60"):
        old = Target.parse(name)
        with scoped_env("MIOPENKERNELS_TRITON", "1"):
            assert solver.dynamic_jobs(old) == [] and not solver.is_applicable(_head(), old)


def test_where_it_ranks_first() -> None:
    fewk = get_solver("ConvTritonFmaFewKFwd")
    tf32x3 = get_solver("ConvTritonImplicitGemmTf32x3Fwd")
    # Channels-last, a grid that fills the GPU: first, ahead of the three-product kernel.
    head = _head()
    assert ranks_first(fewk, head, SM90) and not ranks_first(tf32x3, head, SM90)
    # The VAE decoder's 128 -> 3 at 512x512 too; not channel-planar (the other form).
    assert ranks_first(fewk, _head(c=128, k=3, in_spatial=(512, 512)), SM90)
    assert not fewk.claims_first(_head("NCHW"), SM90)
    # One program over 32 positions of 8,192 products each (DCGAN's 4x4 head): no claim.
    dcgan = _head(c=512, k=1, in_spatial=(4, 4), filter=(4, 4), pad=(0, 0))
    assert fewk.is_applicable(dcgan, SM90) and not fewk.claims_first(dcgan, SM90)
    # A squeeze layer of one position (NCHW of one pixel is channels-last): a short reduction.
    squeeze = _head("NCHW", c=96, in_spatial=(1, 1), filter=(1, 1), pad=(0, 0))
    assert fewk.claims_first(squeeze, SM90)
    # 1x1 layers of many positions are the GEMM library's.
    pointwise = _head(c=64, k=2, in_spatial=(256, 256), filter=(1, 1), pad=(0, 0))
    assert not fewk.claims_first(pointwise, SM90)
    # Not under the TF32 math, not on kinds it was not measured on.
    assert ranks_first(get_solver("ConvTritonImplicitGemmTf32Fwd"), head, SM90)
    assert not fewk.claims_first(head, Target("sm80", 108))
    # The library gives way where it claims.
    assert ConvTritonFmaFewK in YIELDS_TO[blas_1x1.ConvBlasGemm1x1]
    saved = blas_1x1._offered[0]
    blas_1x1._offered[0] = True
    try:
        library = next(s for s in blas_1x1.BLAS_SOLVERS if s.direction == "F")
        assert library.is_applicable(squeeze, SM90)
        assert ranks_first(fewk, squeeze, SM90) and not ranks_first(library, squeeze, SM90)
        assert ranks_first(library, pointwise, SM90)
    finally:
        blas_1x1._offered[0] = saved


def test_tiles_objects_and_launch() -> None:
    solver = get_solver("ConvTritonFmaFewKFwd")
    head = _head()
    params = solver.default_params(head, SM90)
    assert params == (64, 4, 32, 1, 1, 4, 1)
    assert solver.default_params(_head(k=2), SM90)[:3] == (256, 2, 16)
    assert solver.default_params(_head(k=7), SM90)[:3] == (32, 8, 16)
    assert solver.params_valid(head, SM90, params)
    assert not solver.params_valid(head, SM90, (128, 2, 32, 1, 1, 4, 1))  # 2 < 4 filters
    assert not solver.params_valid(head, SM90, (256, 8, 64, 1, 1, 4, 1))  # 256 sums a lane
    space = solver.param_space(head, SM90)
    assert params in space and all(q[1] == 4 for q in space)
    assert all(spec.sums_per_lane(dict(zip(("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M",
                                            "SPLIT_K", "num_warps", "num_stages"), q,
                                           strict=True)), "sm90") <= 64 for q in space)
    gfx = Target.parse("gfx942-304")
    assert solver.default_params(head, gfx)[5] == 8
    job = solver.compile_job(head, params, SM90)
    assert "-DCHANNELS_LAST=1" in job.options
    assert "-DCHANNELS_LAST=0" in solver.compile_job(_head("NCHW"), params, SM90).options
    launch = solver.launch(head, params)
    assert launch.grid == (math.ceil(32 * 64 * 64 / 64), 1, 1) and launch.block == (128, 1, 1)
    args = launch.scalars()
    assert (args["sxc"], args["swc"], args["syk"], args["K"], args["C"]) == (1, 1, 1, 4, 320)
    with scoped_env("MIOPENKERNELS_TRITON", "1"):
        jobs = solver.dynamic_jobs(SM90)
        shipped = set(all_dynamic_jobs(SM90))
    assert len(jobs) == 6 and set(jobs) <= shipped and job in jobs


def test_the_implicit_gemm_s_few_filter_tile() -> None:
    few16 = {"BLOCK_M": 128, "BLOCK_N": 16, "BLOCK_K": 64, "num_warps": 4, "num_stages": 3}
    for data_type in ("FP16", "BF16"):
        for layout in ("NCHW", "NHWC"):
            config = few_filter_config(_head(layout, data_type), SM90, "ieee")
            assert config is not None and few16.items() <= config.items()
    fp32 = few_filter_config(_head("NCHW"), SM90, "tf32x3")
    assert fp32 is not None and (fp32["BLOCK_N"], fp32["BLOCK_K"]) == (16, 32)
    assert few_filter_config(_head("NCHW"), SM90, "ieee") is None  # FP32 IEEE: the FP32 kernel
    fp16 = _head("NHWC", "FP16")
    for kw in ({"k": 9}, {"in_spatial": (1, 1), "filter": (1, 1), "pad": (0, 0), "c": 96},
               {"c": 8, "filter": (1, 1), "pad": (0, 0)}, {"groups": 4, "k": 16}):
        assert few_filter_config(replace(fp16, **kw), SM90, "ieee") is None, kw
    assert few_filter_config(fp16, Target("sm80", 108), "ieee") is None
    # The padded solver's and the conv solver's defaults take it, and the package ships it.
    for name in ("ConvTritonImplicitGemmPaddedFwd", "ConvTritonImplicitGemmFwd"):
        params = get_solver(name).default_params(fp16, SM90)
        assert params[:3] == (128, 16, 64), name
    for data_type, math_mode in (("FP16", "ieee"), ("BF16", "ieee"), ("FP32", "tf32x3")):
        for cl in (False, True):
            tiles = tile_rule_configs("sm90", data_type, math_mode, cl, "conv2d_fwd")
            assert any(t["BLOCK_N"] == 16 and t["BLOCK_M"] == 128 and t["num_stages"] == 3
                       for t in tiles), (data_type, cl)


# ----------------------------------------------------------------------------- evidence
def _alt(name: str) -> list[dict]:
    run = json.loads((RUN / f"{name}.json").read_text())
    assert "H100" in run["device"] and not run["failures"]
    return run["rows"]


def _ratio(row: dict, solver: str) -> float:
    return row["solvers"][solver]["gpu_ms"] / row["cudnn_gpu_ms"]


def _many(row: dict) -> bool:
    """Layers of many positions (N*P*Q at least 4,096)."""
    z = row["key"].split("-")
    return int(z[7]) * int(z[5]) * int(z[6]) >= 4096


def test_the_figures_the_claim_and_types_rest_on() -> None:
    rows = _alt("alt")
    assert len(rows) == 66
    # 16-bit: the kernel slower than the implicit GEMM on every layer of many positions.
    sixteen = [r for r in rows if not r["case"].startswith("FP32") and _many(r)]
    assert len(sixteen) == 20
    ratios = [_ratio(r, "ConvTritonFmaFewKFwd") for r in sixteen]
    assert (round(min(ratios), 1), round(max(ratios), 1)) == (1.8, 8.5)
    for r in sixteen:
        best_gemm = min(v["gpu_ms"] for k, v in r["solvers"].items() if "Fma" not in k)
        assert best_gemm < r["solvers"]["ConvTritonFmaFewKFwd"]["gpu_ms"], r["key"]
    # FP32 channels-last: what the claim takes and leaves.
    fp32 = {r["layer"]: r for r in rows if r["case"] == "FP32-F-NHWC"}
    fewk = {layer: round(_ratio(r, "ConvTritonFmaFewKFwd"), 2) for layer, r in fp32.items()}
    assert (fewk["conv_out"], fewk["decoder.conv_out"], fewk["encoder.conv_out"]) == \
        (0.51, 0.54, 0.94)
    assert fewk["netD.11"] == 6.03
    assert (fewk["out"], round(_ratio(fp32["out"], "ConvBlasGemm1x1Fwd"), 2)) == (0.56, 0.41)
    assert (fewk["quant_conv"],
            round(_ratio(fp32["quant_conv"], "ConvBlasGemm1x1Fwd"), 2)) == (1.62, 0.55)
    squeeze = [r for layer, r in fp32.items() if ".se.fc1" in layer]
    assert len(squeeze) == 5
    mine = [_ratio(r, "ConvTritonFmaFewKFwd") for r in squeeze]
    library = [_ratio(r, "ConvBlasGemm1x1Fwd") for r in squeeze]
    assert (round(min(mine), 2), round(max(mine), 2)) == (0.67, 0.82)
    assert (round(min(library), 2), round(max(library), 2)) == (0.83, 1.52)
    # The channel-planar form on layers of many positions.
    planar = [_ratio(r, "ConvTritonFmaFewKFwd") for r in rows
              if r["case"] == "FP32-F-NCHW" and _many(r)]
    assert (round(min(planar), 1), round(max(planar), 1)) == (1.5, 2.3)


def test_the_few_filter_tile_s_figures() -> None:
    rows = [r for r in _alt("alt") if _many(r)]
    tile = "@128:16:64:8:4:3"

    def span(case: str, solver: str, filt: object = None) -> tuple[float, float]:
        v = [_ratio(r, solver) for r in rows if r["case"] in case and solver in r["solvers"]
             and (filt is None or filt(r))]
        return round(min(v), 2), round(max(v), 2)

    long = lambda r: int(r["key"].split("-")[0]) * 9 >= 128 and "3x3" in r["key"]  # noqa: E731
    nhwc = ("FP16-F-NHWC", "BF16-F-NHWC")
    assert span(nhwc, "ConvTritonImplicitGemmPaddedFwd" + tile, long) == (0.98, 1.07)
    assert span(nhwc, "ConvTritonImplicitGemmPaddedFwd", long) == (1.12, 2.06)
    nchw = ("FP16-F-NCHW", "BF16-F-NCHW")
    assert span(nchw, "ConvTritonImplicitGemmFwd" + tile, long) == (0.98, 1.51)
    assert span(nchw, "ConvTritonImplicitGemmFwd", long) == (2.49, 3.59)
    three = "ConvTritonImplicitGemmTf32x3Fwd"
    big = lambda r: "quant_conv" not in r["layer"]  # noqa: E731
    assert span(("FP32-F-NCHW",), three + "@128:16:32:8:4:3", big) == (0.75, 0.84)
    assert span(("FP32-F-NCHW",), three, big) == (0.96, 1.34)
    quant = {r["case"]: r for r in rows if r["layer"] == "quant_conv"}["FP16-F-NHWC"]
    assert (round(_ratio(quant, "ConvTritonImplicitGemmFwd" + tile), 1),
            round(_ratio(quant, "ConvTritonImplicitGemmFwd"), 1)) == (4.8, 1.8)


def test_the_usual_tiles_are_the_survey_s_fastest() -> None:
    rows = [r for r in _alt("tiles") if r["network"] != "dcgan" and r["case"] == "FP32-F-NHWC"]
    for tile in spec.TILES:
        block = tile["BLOCK_N"]
        mine = [r for r in rows if spec.filter_block(int(r["key"].split("-")[4])) == block]
        names = set.intersection(*(set(r["solvers"]) for r in mine))
        score = {n: _geomean([_ratio(r, n) for r in mine]) for n in names}
        text = f"{tile['BLOCK_M']}:{block}:{tile['BLOCK_K']}:1:{tile['num_warps']}:1"
        usual = score["ConvTritonFmaFewKFwd@" + text]
        assert usual <= min(score.values()) * 1.001, (block, min(score, key=score.get))


def test_find_s_pick_over_the_few_channel_class() -> None:
    """bench/results/README.md's figures of zoo.json: every layer of at most four filters
    over more than four channels within 1.07 of cuDNN but the 16-bit NHWC 1x1 64 -> 2 on the
    library (2.16 FP16, 1.16 BF16); the FP32 heads on the new routes."""
    zoo = json.loads((RUN / "zoo.json").read_text())
    assert zoo["compiles"] == 0 and zoo["errors"] == 0 and "H100" in zoo["device"]
    heads = [r for r in zoo["rows"] if r["key"].split("-")[4].isdigit()
             and int(r["key"].split("-")[4]) <= 4 and int(r["key"].split("-")[0]) > 4
             and "x" not in r["key"].split("-")[1]]
    library = {r["case"]: round(r["ratio"], 2) for r in heads
               if r["network"] == "unet" and r["case"].endswith("NHWC")}
    assert library == {"FP16-F-NHWC": 2.16, "BF16-F-NHWC": 1.16, "FP32-F-NHWC": 0.4}
    rest = [r["ratio"] for r in heads if not (r["network"] == "unet" and
                                              r["case"] in ("FP16-F-NHWC", "BF16-F-NHWC"))]
    assert len(rest) == 34 and round(max(rest), 2) == 1.07
    picks = {(r["layer"], r["case"]): (r["solver"], round(r["ratio"], 2)) for r in heads
             if r["network"].startswith("sd15")}
    assert picks[("conv_out", "FP32-F-NHWC")] == ("ConvTritonFmaFewKFwd", 0.51)
    assert picks[("decoder.conv_out", "FP32-F-NHWC")] == ("ConvTritonFmaFewKFwd", 0.54)
    assert picks[("decoder.conv_out", "FP32-F-NCHW")] == ("ConvTritonImplicitGemmTf32x3Fwd", 0.76)
    few = zoo["classes"]["few-channel"]
    assert round(few["gpu_geomean"], 2) == 0.85


def test_the_aligned_few_filter_layer_s_mixed_figures() -> None:
    """The tile rule's comment: the VAE encoder's 512 -> 8 (NHWC, plain kernel)."""
    rows = {r["case"]: r for r in _alt("alt") if r["layer"] == "encoder.conv_out"}
    got = {t: (round(_ratio(rows[f"{t}-F-NHWC"], "ConvTritonImplicitGemmFwd@128:16:64:8:4:3"),
                     2), round(_ratio(rows[f"{t}-F-NHWC"], "ConvTritonImplicitGemmFwd"), 2))
           for t in ("FP16", "BF16")}
    assert got == {"FP16": (2.26, 2.8), "BF16": (2.25, 1.76)}


def test_the_surveyed_defaults_and_the_grid() -> None:
    """alt_fp32.json (the kernel at the surveyed usual tiles) and grid_tests.txt."""
    rows = _alt("alt_fp32")
    nhwc = {r["layer"]: _ratio(r, "ConvTritonFmaFewKFwd") for r in rows
            if r["case"] == "FP32-F-NHWC"}
    assert len(nhwc) == 11 and round(_geomean(list(nhwc.values())), 2) == 0.76
    assert round(nhwc["netD.11"], 2) == 3.73
    heads = [nhwc[k] for k in ("conv_out", "encoder.conv_out", "decoder.conv_out")]
    assert (round(min(heads), 2), round(max(heads), 2)) == (0.51, 0.88)
    squeeze = [v for k, v in nhwc.items() if ".se.fc1" in k]
    assert (round(min(squeeze), 2), round(max(squeeze), 2)) == (0.58, 0.69)
    planar = [_ratio(r, "ConvTritonFmaFewKFwd") for r in rows if r["case"] == "FP32-F-NCHW"]
    assert round(_geomean(planar), 2) == 1.27
    assert "20 passed" in (RUN / "grid_tests.txt").read_text()


def test_the_zoo_comparisons() -> None:
    fp32 = json.loads((RUN / "zoo_compare_fp32.json").read_text())["cases"]
    nhwc = fp32["FP32-F-NHWC zoo"]
    assert (round(nhwc["before"], 3), round(nhwc["after"], 3)) == (1.136, 0.951)
    assert (nhwc["solver_changed"]["layers"], round(nhwc["solver_changed"]["before"], 3),
            round(nhwc["solver_changed"]["after"], 3)) == (6, 1.959, 0.827)
    nchw = fp32["FP32-F-NCHW zoo"]
    assert (round(nchw["before"], 3), round(nchw["after"], 3)) == (0.963, 0.928)
    video = json.loads((RUN / "zoo_compare_r2plus1d.json").read_text())["cases"]
    got = {c: (round(v["before"], 3), round(v["after"], 3)) for c, v in video.items()}
    assert got == {"FP16-B-NDHWC zoo": (1.312, 1.19), "FP16-F-NDHWC zoo": (1.103, 1.098),
                   "FP16-W-NDHWC zoo": (1.31, 1.202)}


def test_what_the_rules_leave() -> None:
    """bench/results/README.md's figures of zoo_b8_b1.json and zoo_fp32_bw.json."""
    small = json.loads((RUN / "zoo_b8_b1.json").read_text())
    assert (len(small["rows"]), small["compiles"], small["errors"]) == (468, 0, 0)
    assert round(small["classes"]["few-channel"]["gpu_geomean"], 2) == 0.91
    rows = {(r["layer"], r["case"], r["n"]): r for r in small["rows"]}
    esrgan = {t: round(rows[("conv_last", f"{t}-F-NHWC", 8)]["ratio"], 2)
              for t in ("FP32", "FP16", "BF16")}
    assert esrgan == {"FP32": 5.69, "FP16": 5.52, "BF16": 4.98}
    assert rows[("conv_last", "FP32-F-NHWC", 8)]["solver"] == "ConvTritonImplicitGemmChunksFwd"
    assert (rows[("conv_last", "FP32-F-NHWC", 1)]["solver"],
            round(rows[("conv_last", "FP32-F-NHWC", 1)]["ratio"], 2)) == \
        ("ConvTritonFmaFewKFwd", 0.62)
    assert round(rows[("out", "FP16-F-NHWC", 8)]["ratio"], 2) == 5.88
    assert round(rows[("conv_out", "FP32-F-NHWC", 1)]["ratio"], 2) == 2.32
    fewk = get_solver("ConvTritonFmaFewKFwd")
    one = _head(n=1)
    assert fewk.is_applicable(one, SM90) and not fewk.claims_first(one, SM90)
    assert not fewk.is_applicable(_head(n=8, c=64, k=3, in_spatial=(2048, 2048)), SM90)
    bw = json.loads((RUN / "zoo_fp32_bw.json").read_text())
    assert (len(bw["rows"]), bw["compiles"], bw["errors"]) == (135, 0, 0)
    worst = sorted(bw["rows"], key=lambda r: -r["ratio"])[:2]
    assert [(r["layer"], r["case"], round(r["ratio"], 2)) for r in worst] == \
        [("conv_out", "FP32-W-NHWC", 18.92), ("decoder.conv_out", "FP32-W-NHWC", 16.92)]
    conv_in = [round(r["ratio"], 2) for r in bw["rows"]
               if r["layer"] in ("conv_in", "decoder.conv_in") and r["case"].startswith("FP32-B")
               and r["network"].startswith("sd15")]
    assert (min(conv_in), max(conv_in)) == (5.08, 6.88)
    assert {c: round(v["gpu_geomean"], 2) for c, v in bw["summary"].items()
            if "DHW" not in c} == {"FP32-B-NCHW": 1.08, "FP32-B-NHWC": 1.12,
                                   "FP32-W-NCHW": 1.61, "FP32-W-NHWC": 2.57}

"""The depth-taps solvers (solvers/triton_depth_taps.py): which problems they take, that their
launches (each slice's taps into the workspace's parts, then the split reduce into dx), read
as the kernels read their arguments, compute the 3-D backward data (float64), which objects
they launch, and where they rank first."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from launch_emulation import run_launches
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import SOLVERS, YIELDS_TO, all_dynamic_jobs, get_solver, ranks_first
from miopenkernels.solvers.base import split_offset
from miopenkernels.solvers.reference import conv_inputs, conv_output_name, conv_reference
from miopenkernels.solvers.triton_3d import ConvTriton3d
from miopenkernels.solvers.triton_depth_taps import (
    DEPTH_TAPS_SOLVERS,
    ConvTritonDepthTaps,
    depth_taps_problem,
)
from miopenkernels.target import Target

pytest.importorskip("miopenkernels.kernels.conv_triton_spec")

SM90 = Target("sm90", 132)
FP32 = {"in_type": "FP32", "wei_type": "FP32", "out_type": "FP32"}


def _layout(name: str) -> dict[str, str]:
    return {"in_layout": name, "wei_layout": name, "out_layout": name}


def _stem(layout: str = "NCDHW", **kw: object) -> ConvProblem:
    """R3D-18's stem in backward data: 3 -> 64 channels, 3x7x7 at stride (1, 2, 2), 16 frames
    of 112x112, batch 32."""
    p = ConvProblem(n=32, c=3, k=64, in_spatial=(16, 112, 112), filter=(3, 7, 7),
                    pad=(1, 3, 3), stride=(1, 2, 2), direction="B", **FP32, **_layout(layout))
    return replace(p, **kw) if kw else p


def test_the_problems_they_take() -> None:
    q = depth_taps_problem(_stem())
    assert q is not None
    assert (q.n, q.c, q.k, q.in_spatial, q.filter, q.stride, q.pad, q.in_layout) == \
        (32, 3, 64, (112, 112), (7, 7), (2, 2), (3, 3), "NCHW")
    assert depth_taps_problem(_stem("NDHWC")).in_layout == "NHWC"
    # Not theirs: forward, backward weights, 16-bit types, one depth tap (the planes and
    # slices solvers'), depth stride 2, depth dilation, a transposed layer.
    for kw in ({"direction": "F"}, {"direction": "W"},
               {"in_type": "FP16", "wei_type": "FP16", "out_type": "FP16"},
               {"filter": (1, 7, 7), "pad": (0, 3, 3)}, {"stride": (2, 2, 2)},
               {"dilation": (2, 1, 1)}, {"mode": "trans"}):
        assert depth_taps_problem(_stem(**kw)) is None, kw
    for s in DEPTH_TAPS_SOLVERS:
        assert not s.is_applicable(_stem(direction="F"), SM90)
    # Tensors of 2**31 elements or more: the kernels' 32-bit offsets would wrap.
    assert not any(s.is_applicable(_stem(n=32, in_spatial=(256, 224, 224)), SM90)
                   for s in DEPTH_TAPS_SOLVERS)


@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
@pytest.mark.parametrize("shape", [
    # A video stem: 3 channels, 3x5x5 at stride (1, 2, 2), depth padding 1.
    {"n": 2, "c": 3, "k": 5, "in_spatial": (4, 8, 8), "filter": (3, 5, 5), "pad": (1, 2, 2),
     "stride": (1, 2, 2)},
    # No depth padding (the first and last slices reach one tap each), 8 channels.
    {"n": 1, "c": 8, "k": 4, "in_spatial": (5, 4, 6), "filter": (3, 3, 1), "pad": (0, 1, 0)},
    # Groups of 16 channels (the filters' per-group channels in their strides).
    {"n": 2, "c": 32, "k": 32, "in_spatial": (3, 4, 4), "filter": (3, 3, 3),
     "pad": (1, 1, 1), "groups": 2},
    # A slice of 1,400 bytes, not a multiple of the workspace's 256: the parts must follow
    # each other unpadded, as the reduce reads them (the GPU grid caught NaN there).
    {"n": 2, "c": 5, "k": 6, "in_spatial": (3, 5, 7), "filter": (3, 1, 1), "pad": (1, 0, 0)},
    # Depth padding past the taps (the outer slices reach none: written zero), dilated in h.
    {"n": 2, "c": 4, "k": 8, "in_spatial": (3, 6, 4), "filter": (2, 3, 3), "pad": (2, 2, 1),
     "dilation": (1, 2, 1)},
])
def test_the_launches_compute_the_3d_backward_data(layout: str, shape: dict) -> None:
    p = ConvProblem(direction="B", **FP32, **_layout(layout), **shape)
    solver = get_solver("ConvTritonImplicitGemmTf32x3DepthTapsBwd")
    assert solver.is_applicable(p, SM90)
    params = solver.default_params(p, SM90)
    assert not solver.lead_ins(p, params, SM90)
    tensors = conv_inputs(p, np.random.default_rng(5))
    want = np.asarray(conv_reference(p, tensors))
    out = conv_output_name(p)
    buffers = {n: np.ascontiguousarray(a, dtype=np.float64).ravel().copy()
               for n, a in tensors.items() if n != out}
    buffers[out] = np.full(want.size, np.nan)
    buffers["workspace"] = np.full(solver.workspace_for(p, params) // 4, np.nan)
    steps = [solver.launch(p, params), *(s for _, s in solver.follow_ups(p, params, SM90))]
    run_launches(steps, buffers, solver.workspace_slots(p, params))
    np.testing.assert_allclose(buffers[out], want.ravel(), rtol=1e-12, atol=1e-12)


def test_launches_objects_and_workspace() -> None:
    p = _stem()
    solver = get_solver("ConvTritonImplicitGemmTf32x3DepthTapsBwd")
    inner = get_solver("ConvTritonImplicitGemmTf32x3Bwd")
    assert isinstance(solver, ConvTritonDepthTaps) and solver.ranking_name == inner.ranking_name
    one = depth_taps_problem(p)
    params = solver.default_params(p, SM90)
    assert params == inner.default_params(one, SM90) and int(params[4]) == 1
    # The 3 channels miss the aligned objects: the object that assumes nothing, shipped.
    assert solver.compile_job(p, params, SM90) == inner.unaligned_job(one, params, SM90)
    assert solver.compile_job(p, params, SM90) in set(all_dynamic_jobs(SM90))
    # Channels that meet the aligned objects: those where every slice's and tap's offsets
    # keep 16 bytes, else the ones that assume nothing (planar: dy's 5x5 planes, 100 bytes a
    # slice; a 3x3 tap's 36 bytes of filters).
    for layout, filt, pad, aligned in (("NCDHW", (2, 2, 2), (0, 0, 0), True),
                                       ("NCDHW", (2, 2, 2), (0, 1, 1), False),
                                       ("NCDHW", (2, 3, 3), (0, 1, 1), False),
                                       ("NDHWC", (2, 3, 3), (0, 1, 1), True)):
        q = ConvProblem(n=2, c=16, k=16, in_spatial=(3, 8, 8), filter=filt, pad=pad,
                        stride=(1, 2, 2), direction="B", **FP32, **_layout(layout))
        qq = depth_taps_problem(q)
        qp = solver.default_params(q, SM90)
        want = inner.compile_job(qq, qp, SM90) if aligned else inner.unaligned_job(qq, qp, SM90)
        assert solver.compile_job(q, qp, SM90) == want, (layout, filt, pad)
        assert inner.compile_job(qq, qp, SM90) != inner.unaligned_job(qq, qp, SM90)
    # 16 slices: 14 reach three taps, the first and last two; a reduce after each slice.
    steps = [solver.launch(p, params), *(s for _, s in solver.follow_ups(p, params, SM90))]
    reduces = [s for s in steps if s.kernel_name == "conv2d_bwd_weight_reduce"]
    assert (len(steps), len(reduces)) == (16 * 3 - 2 + 16, 16)
    assert [r.scalars()["SPLIT_K"] for r in reduces] == [2] + [3] * 14 + [2]
    part = 32 * 3 * 112 * 112 * 4
    assert solver.workspace_for(p, params) == 3 * part
    assert solver.workspace_slots(p, params) == {"ws_p0": 0, "ws_p1": part, "ws_p2": 2 * part}
    # Slice 1, tap 2: dy's slice 0, the filters' third depth tap, dx into the third part.
    tap = steps[3 + 2]  # slice 0: taps 1, 2 and its reduce; slice 1: taps 0, 1, 2
    ptrs = {a.name: split_offset(a.tensor) for a in tap.args if a.is_pointer}
    assert ptrs["x_ptr"] == ("ws_p2", 0) and ptrs["y_ptr"] == ("dy", 0)
    assert ptrs["w_ptr"] == ("w", 2 * 49 * 4)
    v = tap.scalars()
    assert (v["syn"], v["syk"], v["swk"], v["swc"]) == (64 * 16 * 56 * 56, 16 * 56 * 56,
                                                         3 * 3 * 49, 3 * 49)
    # The ranking sees every tap's blocks.
    blocks, _, _ = solver.ranking_geometry(p, params)
    assert blocks == inner.ranking_geometry(one, params)[0] * 46


def test_they_claim_the_fp32_stems_and_the_3d_families_give_way() -> None:
    from miopenkernels.builder.jobs import specialisations

    names = [s.name for s in SOLVERS]
    assert len(names) == len(set(names))
    assert {s.name for s in DEPTH_TAPS_SOLVERS} == {
        f"ConvTritonImplicitGemm{m}DepthTapsBwd" for m in ("", "Tf32", "Tf32x3")}
    assert ConvTritonDepthTaps in YIELDS_TO[ConvTriton3d]
    for layout in ("NCDHW", "NDHWC"):
        p = _stem(layout)
        assert specialisations(p, SM90)[0].solver.name == \
            "ConvTritonImplicitGemmTf32x3DepthTapsBwd"
        for s in SOLVERS:
            if isinstance(s, ConvTriton3d) and s.math != "tf32" and s.is_applicable(p, SM90):
                assert not ranks_first(s, p, SM90), s.name
    # No claim past the stems (R3D-18's 3x3x3 layers), at batch 1, or in the TF32 math.
    wide = _stem(c=64, in_spatial=(8, 56, 56), filter=(3, 3, 3), pad=(1, 1, 1),
                 stride=(1, 1, 1))
    for s in DEPTH_TAPS_SOLVERS:
        for p in (wide, _stem(n=1)):
            assert not (s.is_applicable(p, SM90) and s.claims_first(p, SM90)), (s.name, p)
        if s.math == "tf32":
            assert not s.claims_first(_stem(), SM90)


def test_the_claims_figures_of_the_h100_run() -> None:
    """The module's figures from bench/results/depth_taps_h100, every result within the FP32
    tolerance, and the choices now made on those problems."""
    import json
    from pathlib import Path

    from miopenkernels.builder.jobs import specialisations

    folder = Path(__file__).resolve().parents[2] / "bench" / "results" / "depth_taps_h100"
    rows = json.loads((folder / "depth_taps.json").read_text())["rows"]
    stem: dict[tuple[str, int], str] = {}
    unet: list[float] = []
    smallc: list[float] = []
    for row in rows:
        assert all(v["rel_err"] < 1e-5 for v in row["solvers"].values())
        r = {k: v["gpu_ms"] / row["cudnn_gpu_ms"] for k, v in row["solvers"].items()}
        p = ConvProblem.from_key(row["key"])
        picked = specialisations(p, SM90)[0].solver.name
        if row["network"] == "r3d_18":
            mine = r["ConvTritonImplicitGemmTf32x3DepthTapsBwd"]
            stem[(p.in_layout, p.n)] = f"{mine:.2f}/{r['ConvTriton3dTf32x3Bwd']:.2f}"
            assert picked == ("ConvTritonImplicitGemmTf32x3DepthTapsBwd" if p.n > 1 else
                              "ConvTriton3dTf32x3Bwd"), row["key"]
        else:
            unet += [v for k, v in r.items() if "DepthTaps" in k]
            smallc += [v for k, v in r.items() if k.startswith("ConvTriton3dSmallC")]
            assert picked.startswith("ConvTriton3dSmallC"), row["key"]
    assert stem == {("NCDHW", 32): "1.10/6.39", ("NDHWC", 32): "1.71/13.22",
                    ("NCDHW", 8): "1.63/6.31", ("NDHWC", 8): "2.30/12.99",
                    ("NCDHW", 1): "8.78/5.35", ("NDHWC", 1): "11.01/11.37"}
    assert (f"{min(smallc):.2f}-{max(smallc):.2f}", f"{min(unet):.2f}-{max(unet):.2f}") == \
        ("0.90-1.40", "7.73-15.32")
    # The zoo run (immediate mode's choices, R3D-18 held out): the stem at batch 32 and 8.
    zoo = json.loads((folder / "zoo_r3d.json").read_text())
    assert zoo["errors"] == 0
    got = {(row["case"].split("-")[2], row["n"]): f"{row['ratio']:.2f}"
           for row in zoo["rows"] if row["layer"] == "stem" and "DepthTaps" in row["solver"]}
    assert got == {("NCDHW", 32): "1.10", ("NDHWC", 32): "1.71", ("NCDHW", 8): "1.65",
                   ("NDHWC", 8): "2.32"}
    summary = zoo["held_out"]["summary"]
    assert {k: (v["layers"], f"{v['gpu_geomean']:.2f}") for k, v in summary.items()} == {
        "FP32-B-NCDHW": (33, "1.43"), "FP32-B-NDHWC": (33, "1.00")}


def test_the_picks_that_moved() -> None:
    """README: immediate mode's first choices over the zoo moved on the FP32 stems alone."""
    import json
    from pathlib import Path

    data = json.loads((Path(__file__).resolve().parents[2] / "bench" / "results" /
                       "depth_taps_h100" / "picks_sm90-132-ddeba35-f8f8e96.json").read_text())
    assert (data["problems"], data["moved"]) == (41526, 12)
    got = {c["after"]: (c["problems"], f"{c['measured']['before_geomean']:.2f}",
                        f"{c['measured']['after_geomean']:.2f}") for c in data["changes"]}
    assert got == {"ConvTritonFmaPlanesFwd": (4, "2.11", "1.33"),
                   "ConvTritonImplicitGemmTf32x3PlanesBwd": (4, "4.88", "1.04"),
                   "ConvTritonImplicitGemmTf32x3DepthTapsBwd": (4, "9.12", "1.63")}

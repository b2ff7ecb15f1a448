"""The slices solvers (solvers/triton_slices.py): which 3-D problems are 2-D problems over their
depth slices, that the 2-D problem computes the 3-D one (float64, every direction), that the
solvers launch the 2-D solver's objects on it unchanged, and where they rank first."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from miopenkernels.handle import Handle
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import (
    SOLVERS,
    YIELDS_TO,
    all_dynamic_jobs,
    blas_1x1,
    get_solver,
    launch_jobs,
    ranks_first,
)
from miopenkernels.solvers.reference import conv_inputs, conv_output_name, conv_reference
from miopenkernels.solvers.triton_3d import ConvTriton3d
from miopenkernels.solvers.triton_slices import (
    FP32_STEM_CHANNELS,
    NOT_FIRST,
    SLICES_SOLVERS,
    TEMPORAL_FIRST,
    ConvTritonSlices,
    sliced_problem,
    slices_first,
)
from miopenkernels.target import Target

pytest.importorskip("miopenkernels.kernels.conv_triton_spec")

ROOT = Path(__file__).resolve().parents[2]
SM90 = Target("sm90", 132)
SUFFIX = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}


def _p(direction: str = "F", **kw: object) -> ConvProblem:
    """X3D-S's 1x1x1 downsample at stride (1, 2, 2), 24 -> 48 channels, batch 32."""
    p = ConvProblem(n=32, c=24, k=48, in_spatial=(13, 40, 40), filter=(1, 1, 1),
                    stride=(1, 2, 2), direction=direction, in_type="FP16", wei_type="FP16",
                    out_type="FP16", in_layout="NDHWC", wei_layout="NDHWC", out_layout="NDHWC")
    return replace(p, **kw) if kw else p


def test_sliced_problem_is_the_2d_problem_over_n_times_d_images() -> None:
    q = sliced_problem(_p())
    assert q is not None
    assert (q.n, q.c, q.k, q.in_spatial, q.filter, q.stride, q.pad) == \
        (32 * 13, 24, 48, (40, 40), (1, 1), (2, 2), (0, 0))
    assert (q.in_layout, q.wei_layout, q.out_layout, q.direction, q.in_type) == \
        ("NHWC", "NHWC", "NHWC", "F", "FP16")
    spatial = sliced_problem(_p(filter=(1, 3, 3), pad=(0, 1, 1), stride=(1, 1, 1),
                                dilation=(3, 2, 2), groups=4))
    assert spatial is not None and (spatial.filter, spatial.pad, spatial.dilation,
                                    spatial.groups) == ((3, 3), (1, 1), (2, 2), 4)
    # Not a 2-D problem over slices: a depth tap more, depth stride 2, depth padding, NCDHW
    # (an image's slices are not one stride apart), a transposed layer, a 2-D problem.
    for kw in ({"filter": (3, 1, 1), "pad": (1, 0, 0)}, {"stride": (2, 2, 2)},
               {"pad": (1, 0, 0)}, {"in_layout": "NCDHW", "wei_layout": "NCDHW",
                                    "out_layout": "NCDHW"}, {"mode": "trans"}):
        assert sliced_problem(_p(**kw)) is None, kw
    # A temporal layer (one tap in height and width, stride 1 and no padding there) is a 2-D
    # one over (depth, pixel) planes, in either layout.
    for layout, two_d_layout in (("NDHWC", "NHWC"), ("NCDHW", "NCHW")):
        temporal = sliced_problem(_p(filter=(3, 1, 1), pad=(1, 0, 0), stride=(2, 1, 1),
                                     dilation=(2, 1, 1), in_layout=layout, wei_layout=layout,
                                     out_layout=layout))
        assert temporal is not None
        assert (temporal.n, temporal.in_spatial, temporal.filter, temporal.pad,
                temporal.stride, temporal.dilation, temporal.in_layout) == \
            (32, (13, 1600), (3, 1), (1, 0), (2, 1), (2, 1), two_d_layout)
    assert sliced_problem(_p(filter=(3, 1, 1), pad=(1, 0, 0), stride=(1, 2, 2))) is None
    assert sliced_problem(_p(filter=(3, 1, 1), pad=(1, 1, 0))) is None
    two_d = ConvProblem(n=2, c=8, k=8, in_spatial=(5, 5), filter=(1, 1), in_layout="NHWC")
    assert sliced_problem(two_d) is None


@pytest.mark.parametrize("direction", ["F", "B", "W"])
@pytest.mark.parametrize(("layout", "shape"), [
    ("NDHWC", {"n": 2, "c": 6, "k": 10, "in_spatial": (3, 7, 9), "filter": (1, 3, 3),
               "pad": (0, 1, 1), "stride": (1, 2, 1)}),
    ("NDHWC", {"n": 3, "c": 8, "k": 4, "in_spatial": (2, 5, 6), "filter": (1, 1, 1),
               "stride": (1, 2, 2)}),
    ("NDHWC", {"n": 1, "c": 4, "k": 6, "in_spatial": (4, 6, 5), "filter": (1, 2, 3),
               "pad": (0, 2, 1), "dilation": (2, 2, 1), "groups": 2}),
    ("NDHWC", {"n": 2, "c": 5, "k": 7, "in_spatial": (7, 3, 4), "filter": (3, 1, 1),
               "pad": (1, 0, 0), "stride": (2, 1, 1)}),
    ("NCDHW", {"n": 2, "c": 6, "k": 4, "in_spatial": (6, 3, 5), "filter": (3, 1, 1),
               "pad": (2, 0, 0), "dilation": (2, 1, 1), "groups": 2}),
])
def test_the_sliced_problem_computes_the_3d_one(direction: str, layout: str,
                                                 shape: dict) -> None:
    """The same bytes in, the same bytes out: the float64 reference of the 2-D problem on the
    3-D problem's tensors (flattened) is the 3-D reference."""
    p = ConvProblem(direction=direction, in_type="FP32", in_layout=layout,
                    wei_layout=layout, out_layout=layout, **shape)
    q = sliced_problem(p)
    assert q is not None
    rng = np.random.default_rng(7)
    tensors = conv_inputs(p, rng)
    want = conv_reference(p, tensors)
    from miopenkernels.solvers.reference import conv_tensor_shapes

    shapes = conv_tensor_shapes(q)
    flat = {name: np.asarray(a).reshape(shapes[name]) for name, a in tensors.items()}
    got = conv_reference(q, flat)
    assert conv_output_name(p) == conv_output_name(q)
    np.testing.assert_allclose(np.asarray(got).ravel(), np.asarray(want).ravel(), rtol=1e-12,
                               atol=1e-12)


def test_solvers_launch_the_2d_solvers_objects_on_the_sliced_problem() -> None:
    names = [s.name for s in SOLVERS]
    assert len(names) == len(set(names))
    assert {s.name for s in SLICES_SOLVERS} >= {
        f"ConvTritonImplicitGemm{m}Slices{d}" for m in ("", "Tf32", "Tf32x3", "Padded")
        for d in SUFFIX.values()}
    for direction in "FBW":
        p = _p(direction)
        q = sliced_problem(p)
        assert q is not None
        solver = get_solver(f"ConvTritonImplicitGemmSlices{SUFFIX[direction]}")
        inner = get_solver(f"ConvTritonImplicitGemm{SUFFIX[direction]}")
        assert solver.is_applicable(p, SM90) and inner.is_applicable(q, SM90)
        assert solver.ranking_name == inner.ranking_name
        params = solver.default_params(p, SM90)
        assert params == inner.default_params(q, SM90)
        assert solver.launch(p, params) == inner.launch(q, params)
        assert solver.compile_job(p, params, SM90) == inner.compile_job(q, params, SM90)
        assert solver.follow_ups(p, params, SM90) == inner.follow_ups(q, params, SM90)
        assert solver.workspace_for(p, params) == inner.workspace_for(q, params)
        assert launch_jobs(solver, p, params, SM90) == launch_jobs(inner, q, params, SM90)
        assert solver.dynamic_jobs(SM90) == []
    # Nothing new in a package: every object they launch is one the 2-D solvers ship.
    shipped = set(all_dynamic_jobs(SM90))
    for direction in "FBW":
        p = _p(direction)
        solver = get_solver(f"ConvTritonImplicitGemmSlices{SUFFIX[direction]}")
        job = solver.compile_job(p, solver.default_params(p, SM90), SM90)
        assert job in shipped
    # Channel counts that miss 8: the padded 2-D solver's copies and objects.
    odd = _p(c=54, k=24, stride=(1, 1, 1))
    padded = get_solver("ConvTritonImplicitGemmPaddedSlicesFwd")
    assert padded.is_applicable(odd, SM90)
    assert padded.lead_ins(odd, padded.default_params(odd, SM90), SM90)
    # Problems they do not take.
    assert not any(s.is_applicable(_p(stride=(2, 2, 2)), SM90) for s in SLICES_SOLVERS)
    assert not get_solver("ConvTritonImplicitGemmSlicesFwd").is_applicable(_p("B"), SM90)


def test_the_fp32_unit_families_take_the_video_stems_over_their_depth_slices() -> None:
    """R(2+1)D-18's stem (3 -> 45, 1x7x7 at stride (1, 2, 2)) in FP32 NDHWC: the few-channel
    forward, the few-filter forward on flipped filters (four phases of dx) and the
    few-channel backward weights over its 32 x 16 images, on their objects. In FP32 the slices
    claim the video stems where the 2-D route ranks first: the few-channel forward, the
    three-product implicit GEMM's backward data and weights (45 filters: past the few-channel
    backward weights' 32; 45 channels of dy: short of the flipped forward's 256)."""
    stem = ConvProblem(n=32, c=3, k=45, in_spatial=(16, 112, 112), filter=(1, 7, 7),
                       pad=(0, 3, 3), stride=(1, 2, 2), in_type="FP32", in_layout="NDHWC",
                       wei_layout="NDHWC", out_layout="NDHWC")
    for direction, inner_name in (("F", "ConvTritonFmaFwd"), ("B", "ConvTritonFmaFewKBwd"),
                                  ("W", "ConvTritonFmaFewCWrw")):
        p = replace(stem, direction=direction)
        q = sliced_problem(p)
        assert q is not None and q.n == 32 * 16 and q.in_spatial == (112, 112)
        inner = get_solver(inner_name)
        solver = get_solver(inner_name[:-3] + "Slices" + inner_name[-3:])
        assert solver.is_applicable(p, SM90)
        assert solver.claims_first(p, SM90) == (direction == "F")
        params = solver.default_params(p, SM90)
        assert params == inner.default_params(q, SM90)
        assert solver.launch(p, params) == inner.launch(q, params)
        assert solver.lead_ins(p, params, SM90) == inner.lead_ins(q, params, SM90)
        assert solver.follow_ups(p, params, SM90) == inner.follow_ups(q, params, SM90)
        assert set(launch_jobs(solver, p, params, SM90)) <= set(all_dynamic_jobs(SM90))
        # NCDHW is not N*D images; the 16-bit types are the matrix cores'.
        assert not solver.is_applicable(replace(p, in_layout="NCDHW", wei_layout="NCDHW",
                                                out_layout="NCDHW"), SM90)
        assert not solver.is_applicable(replace(p, in_type="FP16", wei_type="FP16",
                                                out_type="FP16"), SM90)
    handle = Handle(target="sm90-132")
    firsts = {d: handle.solutions(replace(stem, direction=d))[0].solver for d in "FBW"}
    assert firsts == {"F": "ConvTritonFmaSlicesFwd", "B": "ConvTritonImplicitGemmTf32x3SlicesBwd",
                      "W": "ConvTritonImplicitGemmTf32x3SlicesWrw"}
    # X3D-S's stem (3 -> 24, 1x3x3): its backward weights are the few-channel kernel's.
    x3d = replace(stem, k=24, in_spatial=(13, 160, 160), filter=(1, 3, 3), pad=(0, 1, 1),
                  direction="W")
    assert handle.solutions(x3d)[0].solver == "ConvTritonFmaFewCSlicesWrw"
    # Not over NCDHW (no depth slices: the planes solvers take its forward and backward
    # data, solvers/triton_planes.py), not past FP32_STEM_CHANNELS.
    planar = replace(stem, in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW")
    assert not any("Slices" in handle.solutions(replace(planar, direction=d))[0].solver
                   for d in "FBW")
    assert handle.solutions(replace(planar, direction="F"))[0].solver == \
        "ConvTritonFmaPlanesFwd"
    wide = replace(stem, c=FP32_STEM_CHANNELS + 1, direction="F")
    assert not get_solver("ConvTritonImplicitGemmTf32x3SlicesFwd").claims_first(wide, SM90)
    phases = get_solver("ConvTritonFmaFewKSlicesBwd").follow_ups(
        replace(stem, direction="B"), get_solver("ConvTritonFmaFewKSlicesBwd").default_params(
            replace(stem, direction="B"), SM90), SM90)
    assert len(phases) == 3  # the three phases after the first


def test_they_rank_first_where_the_2d_solver_would_and_the_3d_families_give_way() -> None:
    for direction in "FBW":
        p = _p(direction)
        solver = get_solver(f"ConvTritonImplicitGemmSlices{SUFFIX[direction]}")
        three_d = get_solver(f"ConvTriton3d{SUFFIX[direction]}")
        assert isinstance(solver, ConvTritonSlices) and isinstance(three_d, ConvTriton3d)
        assert three_d.is_applicable(p, SM90)
        assert ranks_first(solver, p, SM90) and slices_first(p, SM90)
        assert three_d.claims_first(p, SM90) and not ranks_first(three_d, p, SM90)
    for family in YIELDS_TO:
        if family.__module__.endswith(("triton_3d", "triton_3d_relaid", "triton_3d_taps")):
            assert ConvTritonSlices in YIELDS_TO[family], family
    # Backward weights of channels that miss 8 (R(2+1)D's 1x3x3 to 230 filters): the padded
    # slices solver takes it but the 3-D padded several-taps one ranks first (NOT_FIRST).
    odd = ConvProblem(n=32, c=230, k=64, in_spatial=(16, 28, 28), filter=(1, 3, 3),
                      pad=(0, 1, 1), direction="W", in_type="FP16", wei_type="FP16",
                      out_type="FP16", in_layout="NDHWC", wei_layout="NDHWC",
                      out_layout="NDHWC")
    padded = get_solver("ConvTritonImplicitGemmPaddedSlicesWrw")
    assert padded.is_applicable(odd, SM90) and not padded.claims_first(odd, SM90)
    assert ranks_first(get_solver("ConvTriton3dPaddedTapsWrw"), odd, SM90)
    assert ranks_first(get_solver("ConvTritonImplicitGemmPaddedSlicesFwd"),
                       replace(odd, direction="F"), SM90)
    # A temporal layer (R(2+1)D's 3x1x1, 144 -> 64): claimed channels-last in backward data
    # and weights (TEMPORAL_FIRST), offered in forward and in NCDHW.
    temporal = ConvProblem(n=32, c=144, k=64, in_spatial=(16, 56, 56), filter=(3, 1, 1),
                           pad=(1, 0, 0), in_type="FP16", wei_type="FP16", out_type="FP16",
                           in_layout="NDHWC", wei_layout="NDHWC", out_layout="NDHWC")
    solver = get_solver("ConvTritonImplicitGemmSlicesFwd")
    assert solver.is_applicable(temporal, SM90) and not solver.claims_first(temporal, SM90)
    assert ranks_first(get_solver("ConvTriton3dFwd"), temporal, SM90)
    assert TEMPORAL_FIRST == ("B", "W")
    for d in TEMPORAL_FIRST:
        q = replace(temporal, direction=d)
        sliced = get_solver(f"ConvTritonImplicitGemmSlices{SUFFIX[d]}")
        assert ranks_first(sliced, q, SM90), d
        assert not ranks_first(get_solver(f"ConvTriton3d{SUFFIX[d]}"), q, SM90), d
        planar = replace(q, in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW")
        assert not sliced.claims_first(planar, SM90), d
    # Channels that miss 8 (230 -> 128): the padded slices solver claims backward data, not
    # backward weights (NOT_FIRST).
    odd_t = replace(temporal, c=230, k=128, in_spatial=(16, 28, 28), direction="B")
    assert ranks_first(get_solver("ConvTritonImplicitGemmPaddedSlicesBwd"), odd_t, SM90)
    assert not get_solver("ConvTritonImplicitGemmPaddedSlicesWrw").claims_first(
        replace(odd_t, direction="W"), SM90)
    # Where the 2-D problem is the GEMM library's one call (a 1x1x1 layer at stride 1, the
    # library offered), neither they nor the 3-D family rank first: the library does.
    one = _p(stride=(1, 1, 1), c=48, k=96)
    saved = blas_1x1._offered[0]
    blas_1x1._offered[0] = True
    try:
        library = blas_1x1.BLAS_SOLVERS[0]
        assert library.is_applicable(one, SM90) and ranks_first(library, one, SM90)
        assert not slices_first(one, SM90)
        assert not ranks_first(get_solver("ConvTriton3dFwd"), one, SM90)
    finally:
        blas_1x1._offered[0] = saved


# ----------------------------------------------------------------------------- evidence
RUN = ROOT / "bench" / "results" / "slices_h100-e86d143"


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _alt_rows() -> list[dict]:
    return json.loads((RUN / "alt.json").read_text())["rows"]


def _best(solvers: dict, pick: object) -> float | None:
    times = [v["gpu_ms"] for k, v in solvers.items() if pick(k)]  # type: ignore[operator]
    return min(times) if times else None


def test_not_first_rests_on_the_zoo_rows_of_the_h100_run() -> None:
    """NOT_FIRST's figures: the padded 3-D several-taps backward weights against the padded
    slices over R(2+1)D-18's layers (the zoo's alone)."""
    taps, sliced = [], []
    for r in _alt_rows():
        s = r["solvers"]
        if r["held_out"] or not {"ConvTriton3dPaddedTapsWrw",
                                 "ConvTritonImplicitGemmPaddedSlicesWrw"} <= set(s):
            continue
        taps.append(s["ConvTriton3dPaddedTapsWrw"]["gpu_ms"] / r["cudnn_gpu_ms"])
        sliced.append(s["ConvTritonImplicitGemmPaddedSlicesWrw"]["gpu_ms"] / r["cudnn_gpu_ms"])
    assert len(taps) == 6
    assert round(_geomean(taps), 2) == 1.09 and round(_geomean(sliced), 2) == 1.38
    assert NOT_FIRST == {"ConvTritonImplicitGemmPadded": ("W",)}
    # The README's aligned counterpart: the slices against the several-taps solver on the four
    # layers whose channels meet 16.
    sliced_aligned, taps_aligned = [], []
    for r in _alt_rows():
        s = r["solvers"]
        if r["held_out"] or not {"ConvTriton3dTapsWrw",
                                 "ConvTritonImplicitGemmSlicesWrw"} <= set(s):
            continue
        sliced_aligned.append(s["ConvTritonImplicitGemmSlicesWrw"]["gpu_ms"] / r["cudnn_gpu_ms"])
        taps_aligned.append(s["ConvTriton3dTapsWrw"]["gpu_ms"] / r["cudnn_gpu_ms"])
    assert len(sliced_aligned) == 4
    assert (round(_geomean(sliced_aligned), 2), round(_geomean(taps_aligned), 2)) == (1.68, 1.85)


def test_the_readmes_figures_of_the_h100_run() -> None:
    """bench/results/README.md's "3-D layers over their depth slices" figures: per direction,
    the best 3-D solver's and the best slices solver's geomean against cuDNN (the GEMM
    library's on 1x1x1 layers at stride 1), zoo and held-out rows apart."""
    got: dict[tuple[bool, str, bool], tuple[int, float, float, float | None]] = {}
    for held in (False, True):
        for direction in "FBW":
            for one in (False, True):
                three_d, sliced, library = [], [], []
                for r in _alt_rows():
                    s = r["solvers"]
                    if r["held_out"] != held or r["case"].split("-")[1] != direction or \
                            any("Blas" in k for k in s) != one:
                        continue
                    t3 = _best(s, lambda k: k.startswith("ConvTriton3d"))
                    ts = _best(s, lambda k: "Slices" in k)
                    tb = _best(s, lambda k: "Blas" in k)
                    if t3 is None or ts is None:
                        continue
                    three_d.append(t3 / r["cudnn_gpu_ms"])
                    sliced.append(ts / r["cudnn_gpu_ms"])
                    if tb is not None:
                        library.append(tb / r["cudnn_gpu_ms"])
                if three_d:
                    got[(held, direction, one)] = (
                        len(three_d), round(_geomean(three_d), 2), round(_geomean(sliced), 2),
                        round(_geomean(library), 2) if library else None)
    assert got == {
        (False, "F", False): (11, 1.29, 1.15, None),
        (False, "B", False): (11, 1.23, 1.18, None),
        (False, "W", False): (11, 1.41, 1.42, None),
        (True, "F", False): (5, 2.24, 0.87, None),
        (True, "B", False): (5, 1.64, 1.34, None),
        (True, "W", False): (5, 1.38, 0.59, None),
        (True, "F", True): (21, 1.93, 1.24, 0.84),
        (True, "B", True): (21, 2.40, 1.51, 0.91),
        (True, "W", True): (21, 1.62, 1.20, 0.93),
    }
    zoo = json.loads((RUN / "zoo.json").read_text())
    assert zoo["compiles"] == 0 and not zoo["errors"] and "H100" in zoo["device"]
    x3d = [r["ratio"] for r in zoo["rows"] if r["network"] == "x3d_s" and r.get("ratio")]
    assert len(x3d) == 105 and round(_geomean(x3d), 2) == 0.64
    assert "259 passed" in (RUN / "grid_tests.txt").read_text()


def test_the_temporal_claim_s_figures() -> None:
    """TEMPORAL_FIRST's figures: bench/results/fewk_h100-6a76905/temporal.json, the best of
    each family per case over R(2+1)D-18's 3x1x1 layers (aligned: channels in multiples of 16,
    no padded solver applies)."""
    run = json.loads((ROOT / "bench" / "results" / "fewk_h100-6a76905" /
                      "temporal.json").read_text())
    assert "H100" in run["device"] and not run["failures"]

    def best(rows: list[dict], sliced: bool) -> float:
        return math.exp(sum(math.log(min(
            v["gpu_ms"] for k, v in r["solvers"].items() if ("Slices" in k) == sliced)
            / r["cudnn_gpu_ms"]) for r in rows) / len(rows))

    got = {}
    for case in ("F-NHWC", "B-NHWC", "W-NHWC", "F-NCHW", "B-NCHW", "W-NCHW"):
        rows = [r for r in run["rows"] if r["case"] == "FP16-" + case]
        for aligned in (True, False):
            part = [r for r in rows if any("Padded" in k for k in r["solvers"]) != aligned]
            if part:
                got[(case, aligned)] = (round(best(part, True), 2), round(best(part, False), 2))
    assert got == {("F-NHWC", True): (1.41, 1.47), ("F-NHWC", False): (0.83, 0.78),
                   ("B-NHWC", True): (1.92, 2.2), ("B-NHWC", False): (0.99, 1.25),
                   ("W-NHWC", True): (1.81, 2.12), ("W-NHWC", False): (0.99, 1.0),
                   ("F-NCHW", True): (1.38, 0.89), ("B-NCHW", True): (1.8, 1.15),
                   ("W-NCHW", True): (2.47, 1.1)}

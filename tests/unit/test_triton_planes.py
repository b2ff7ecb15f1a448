"""The planes solvers (solvers/triton_planes.py): which NCDHW problems they take, that their
launches, read as the 2-D kernels read their arguments (pointers, sizes, strides), compute the
3-D layer slice by slice (float64), that they launch the 2-D solver's objects, and where they
rank first."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import (
    SOLVERS,
    YIELDS_TO,
    all_dynamic_jobs,
    get_solver,
    launch_jobs,
    ranks_first,
)
from miopenkernels.solvers.base import Launch, split_offset
from miopenkernels.solvers.reference import conv_inputs, conv_output_name, conv_reference
from miopenkernels.solvers.triton_3d import ConvTriton3d
from miopenkernels.solvers.triton_3d_smallc import ConvTriton3dSmallC
from miopenkernels.solvers.triton_planes import (
    PLANE_ALIGN,
    PLANES_SOLVERS,
    STEM_WAVES,
    ConvTritonPlanes,
    planes_first,
    planes_problem,
)
from miopenkernels.solvers.triton_slices import FP32_STEM_CHANNELS
from miopenkernels.target import Target

pytest.importorskip("miopenkernels.kernels.conv_triton_spec")

ROOT = Path(__file__).resolve().parents[2]
SM90 = Target("sm90", 132)
NCDHW = {"in_layout": "NCDHW", "wei_layout": "NCDHW", "out_layout": "NCDHW"}
FP32 = {"in_type": "FP32", "wei_type": "FP32", "out_type": "FP32"}


def _stem(direction: str = "B", **kw: object) -> ConvProblem:
    """R(2+1)D-18's stem: 3 -> 45 channels, 1x7x7 at stride (1, 2, 2), 16 frames of 112x112."""
    p = ConvProblem(n=32, c=3, k=45, in_spatial=(16, 112, 112), filter=(1, 7, 7),
                    pad=(0, 3, 3), stride=(1, 2, 2), direction=direction, **FP32, **NCDHW)
    return replace(p, **kw) if kw else p


def test_planes_problem_is_the_2d_layer_over_n_times_d_images() -> None:
    q = planes_problem(_stem())
    assert q is not None
    assert (q.n, q.c, q.k, q.in_spatial, q.filter, q.stride, q.pad, q.in_layout) == \
        (32 * 16, 3, 45, (112, 112), (7, 7), (2, 2), (3, 3), "NCHW")
    # Not theirs: NDHWC (the slices solvers'), a depth tap more, depth stride 2, depth
    # padding, a transposed layer, a 2-D layer.
    for kw in ({"in_layout": "NDHWC", "wei_layout": "NDHWC", "out_layout": "NDHWC"},
               {"filter": (3, 7, 7), "pad": (1, 3, 3)}, {"stride": (2, 2, 2)},
               {"pad": (1, 3, 3)}, {"mode": "trans"}):
        assert planes_problem(_stem(**kw)) is None, kw
    assert planes_problem(ConvProblem(n=2, c=3, k=8, in_spatial=(8, 8), filter=(3, 3))) is None


def _view(flat: np.ndarray, offset: int, shape: tuple[int, ...],
          strides: tuple[int, ...]) -> np.ndarray:
    """The elements a kernel addresses from `offset` at element `strides` (writable)."""
    step = flat.itemsize
    return np.lib.stride_tricks.as_strided(flat[offset:], shape=shape,
                                           strides=tuple(s * step for s in strides))


def _run_conv(launch: Launch, one: ConvProblem, flats: dict[str, np.ndarray]) -> None:
    """One conv launch of the 2-D implicit GEMM (SPLIT_K 1), as its arguments say: the 2-D
    float64 reference on the tensors' views at the launch's pointers and strides."""
    v = launch.scalars()
    ptrs = {a.name: split_offset(a.tensor) for a in launch.args if a.is_pointer}
    g = int(v["G"])
    shapes = {"x_ptr": ((v["N"], g * v["C"], v["H"], v["W"]), ("sxn", "sxc", "sxh", "sxw")),
              "w_ptr": ((g * v["K"], v["C"], v["R"], v["S"]), ("swk", "swc", "swr", "sws")),
              "y_ptr": ((v["N"], g * v["K"], v["P"], v["Q"]), ("syn", "syk", "syh", "syw"))}
    views = {}
    for pointer, (shape, names) in shapes.items():
        tensor, offset = ptrs[pointer]
        views[tensor] = _view(flats[tensor], offset // 4, tuple(int(s) for s in shape),
                              tuple(int(v[n]) for n in names))
    out = conv_output_name(one)
    got = conv_reference(one, {n: np.array(a) for n, a in views.items() if n != out})
    views[out][...] = got


@pytest.mark.parametrize("direction", ["F", "B"])
@pytest.mark.parametrize("shape", [
    {"n": 2, "c": 3, "k": 5, "in_spatial": (3, 8, 8), "filter": (1, 3, 3), "pad": (0, 1, 1),
     "stride": (1, 2, 2)},
    {"n": 3, "c": 8, "k": 4, "in_spatial": (4, 4, 6), "filter": (1, 1, 1)},
    {"n": 1, "c": 4, "k": 6, "in_spatial": (2, 8, 4), "filter": (1, 2, 3), "pad": (0, 2, 1),
     "dilation": (2, 2, 1)},
])
def test_the_slices_launches_compute_the_3d_layer(direction: str, shape: dict) -> None:
    """Every launch (the first slice's, then the follow-ups) read as the kernel reads its
    arguments writes the 3-D layer's output, exactly."""
    p = ConvProblem(direction=direction, **FP32, **NCDHW, **shape)
    solver = get_solver(f"ConvTritonImplicitGemmPlanes{'Fwd' if direction == 'F' else 'Bwd'}")
    assert isinstance(solver, ConvTritonPlanes)
    assert solver.is_applicable(p, SM90)
    params = next(s for s in solver.param_space(p, SM90) if int(s[4]) == 1)  # SPLIT_K 1
    assert not solver.lead_ins(p, params, SM90)
    rng = np.random.default_rng(3)
    tensors = conv_inputs(p, rng)
    want = conv_reference(p, tensors)
    out = conv_output_name(p)
    flats = {n: np.ascontiguousarray(a, dtype=np.float64).ravel().copy()
             for n, a in tensors.items() if n != out}
    flats[out] = np.full(int(np.prod(np.shape(want))), np.nan)
    one = replace(planes_problem(p), n=p.n)
    steps = [solver.launch(p, params), *(s for _, s in solver.follow_ups(p, params, SM90))]
    assert len(steps) == p.in_spatial[0]
    for launch in steps:
        _run_conv(launch, one, flats)
    np.testing.assert_allclose(flats[out], np.asarray(want).ravel(), rtol=1e-12, atol=1e-12)


def test_a_split_reduces_each_slice_into_its_planes() -> None:
    """A split launch's partials are the slice's, in the packed order; its reduce writes the
    slice's planes through `w_ptr` at the slice's image and channel strides."""
    p = ConvProblem(n=2, c=3, k=16, in_spatial=(2, 8, 8), filter=(1, 3, 3), pad=(0, 1, 1),
                    direction="B", **FP32, **NCDHW)
    solver = get_solver("ConvTritonImplicitGemmPlanesBwd")
    split = next(s for s in solver.param_space(p, SM90) if int(s[4]) > 1)
    steps = [solver.launch(p, split), *(s for _, s in solver.follow_ups(p, split, SM90))]
    reduces = [s for s in steps if s.kernel_name == "conv2d_bwd_weight_reduce"]
    assert len(reduces) == 2 and len(steps) == 4
    plane = 8 * 8
    for depth, launch in enumerate(reduces):
        values = launch.scalars()
        (target,) = [a.tensor for a in launch.args if a.name == "w_ptr"]
        assert split_offset(target) == ("dx", depth * plane * 4)
        assert (values["swk"], values["swc"]) == (3 * 2 * plane, 2 * plane)


def test_they_take_forward_and_backward_data_on_aligned_planes() -> None:
    names = [s.name for s in SOLVERS]
    assert len(names) == len(set(names))
    assert {s.name for s in PLANES_SOLVERS} == {
        *(f"ConvTritonImplicitGemm{m}Planes{d}" for m in ("", "Tf32", "Tf32x3")
          for d in ("Fwd", "Bwd")),
        "ConvTritonFmaPlanesFwd", "ConvTritonFmaFewKPlanesFwd", "ConvTritonFmaPlanesBwd",
        "ConvTritonFmaFewKPlanesBwd"}
    stem = _stem()
    assert not any(s.is_applicable(_stem("W"), SM90) for s in SOLVERS
                   if isinstance(s, ConvTritonPlanes))
    solver = get_solver("ConvTritonImplicitGemmTf32x3PlanesBwd")
    inner = get_solver("ConvTritonImplicitGemmTf32x3Bwd")
    one = replace(planes_problem(stem), n=stem.n)
    params = solver.default_params(stem, SM90)
    assert params == inner.default_params(one, SM90)
    assert solver.compile_job(stem, params, SM90) == inner.compile_job(one, params, SM90)
    assert solver.ranking_name == inner.ranking_name
    # The slices' blocks together, for the ranking.
    blocks, block, eff = solver.ranking_geometry(stem, params)
    (g0, g1, g2), dims = inner.launch_geometry(one, params)
    assert blocks == g0 * g1 * g2 * 16 and block == dims[0]
    # One object for every slice, and nothing new in a package.
    assert set(launch_jobs(solver, stem, params, SM90)) == set(launch_jobs(inner, one, params,
                                                                           SM90))
    assert solver.compile_job(stem, params, SM90) in set(all_dynamic_jobs(SM90))
    # Pointers a plane apart, slice by slice, image and channel strides of the 3-D tensors.
    steps = [solver.launch(stem, params), *(s for _, s in solver.follow_ups(stem, params,
                                                                            SM90))]
    assert len(steps) == 16
    for depth, launch in enumerate(steps):
        ptrs = {a.name: split_offset(a.tensor) for a in launch.args if a.is_pointer}
        assert ptrs["x_ptr"] == ("dx", depth * 112 * 112 * 4)
        assert ptrs["y_ptr"] == ("dy", depth * 56 * 56 * 4)
        v = launch.scalars()
        assert (v["sxn"], v["sxc"], v["syn"], v["syk"]) == \
            (3 * 16 * 112 * 112, 16 * 112 * 112, 45 * 16 * 56 * 56, 16 * 56 * 56)
    # The few-filter backward data's flipped filters are copied once, for every slice.
    few = ConvProblem(n=2, c=16, k=3, in_spatial=(2, 8, 8), filter=(1, 3, 3), pad=(0, 1, 1),
                      direction="B", **FP32, **NCDHW)
    fma = get_solver("ConvTritonFmaPlanesBwd")
    assert fma.is_applicable(few, SM90)
    fp = fma.default_params(few, SM90)
    assert len(fma.lead_ins(few, fp, SM90)) == 1 and len(fma.follow_ups(few, fp, SM90)) == 1
    # Planes that would move the pointers off PLANE_ALIGN bytes: not theirs.
    odd = _stem(in_spatial=(16, 111, 111))
    assert (111 * 111 * 4) % PLANE_ALIGN and not solver.is_applicable(odd, SM90)
    half = _stem(in_type="FP16", wei_type="FP16", out_type="FP16")
    assert (56 * 56 * 2) % PLANE_ALIGN == 0
    assert get_solver("ConvTritonImplicitGemmPlanesBwd").is_applicable(half, SM90)


def test_they_claim_the_fp32_video_stems_and_the_3d_families_give_way() -> None:
    from miopenkernels.builder.jobs import specialisations

    x3d = _stem(c=3, k=24, in_spatial=(13, 160, 160), filter=(1, 3, 3), pad=(0, 1, 1))
    for stem in (_stem(), x3d):
        for direction, first in (("F", "ConvTritonFmaPlanesFwd"),
                                 ("B", "ConvTritonImplicitGemmTf32x3PlanesBwd")):
            p = replace(stem, direction=direction)
            solver = get_solver(first)
            assert solver.is_applicable(p, SM90) and ranks_first(solver, p, SM90)
            assert planes_first(p, SM90, solver.math)
            # Immediate mode's first choice, which the build specialises.
            assert specialisations(p, SM90)[0].solver.name == first
            for s in SOLVERS:
                if isinstance(s, (ConvTriton3d, ConvTriton3dSmallC)) and \
                        s.math != "tf32" and s.is_applicable(p, SM90):
                    assert not ranks_first(s, p, SM90), s.name
    for family in (ConvTriton3d, ConvTriton3dSmallC):
        assert ConvTritonPlanes in YIELDS_TO[family]
    # A (2+1)-D spatial layer of 64 channels claims too; no claim in 16-bit types, on 1x1x1
    # layers, or under the TF32 math.
    spatial = _stem(c=64, k=144, in_spatial=(16, 56, 56), filter=(1, 3, 3), pad=(0, 1, 1),
                    stride=(1, 1, 1))
    for direction in "FB":
        p = replace(spatial, direction=direction)
        assert specialisations(p, SM90)[0].solver.name == \
            f"ConvTritonImplicitGemmTf32x3Planes{'Fwd' if direction == 'F' else 'Bwd'}"
    half = _stem(in_type="FP16", wei_type="FP16", out_type="FP16")
    down = _stem(c=24, k=48, in_spatial=(13, 40, 40), filter=(1, 1, 1), pad=(0, 0, 0))
    for s in PLANES_SOLVERS:
        for p in (half, down, replace(down, direction="F")):
            assert not (s.is_applicable(p, SM90) and s.claims_first(p, SM90)), (s.name, p)
        if s.math == "tf32":
            assert not s.claims_first(_stem(), SM90)


def _timed(name: str) -> list[dict]:
    return json.loads((ROOT / "bench" / "results" / "planes_h100" / name).read_text())["rows"]


def _ratios(row: dict) -> dict[str, float]:
    return {k: v["gpu_ms"] / row["cudnn_gpu_ms"] for k, v in row["solvers"].items()
            if v.get("gpu_ms")}


def _span(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def test_the_claims_figures_of_the_h100_run() -> None:
    """FIRST_TYPES' and FIRST_TAPS' figures, from bench/results/planes_h100: each row's first
    choice of the planes solvers (immediate mode's, as now claimed) against the best of the
    3-D families, every result within the FP32 tolerance."""
    from miopenkernels.builder.jobs import specialisations

    figures: dict[tuple[str, str, bool], tuple[list[float], list[float]]] = {}
    for name in ("planes_f.json", "planes_b.json"):
        for row in _timed(name):
            ratios = _ratios(row)
            assert all(v["rel_err"] < 1e-5 for v in row["solvers"].values() if "rel_err" in v)
            fields = row["key"].split("-")  # the filter fifth, the stride twelfth
            spatial = fields[4] != "1x1x1"
            if not spatial and fields[11] != "1x2x2":
                continue  # 1x1x1 at stride 1: the GEMM library's
            three_d = [v for k, v in ratios.items() if k.startswith("ConvTriton3d")]
            planes = {k: v for k, v in ratios.items() if "Planes" in k}
            if not planes:
                continue  # planes off 16 bytes (7x7 images in FP32)
            if spatial:
                first = specialisations(_problem(row), SM90)[0].solver.name
                mine = planes[first]
            else:
                mine = min(planes.values())
            key = (row["network"], name[7], spatial)
            got = figures.setdefault(key, ([], []))
            got[0].append(mine)
            got[1].append(min(three_d))
    r2 = {d: figures[("r2plus1d_18", d, True)] for d in "fb"}
    assert (_span(r2["f"][0]), _span(r2["f"][1])) == ("0.78-1.24", "1.84-2.70")
    assert (_span(r2["b"][0]), _span(r2["b"][1])) == ("0.86-1.79", "1.37-6.64")
    x3d = {d: figures[("x3d_s", d, True)] for d in "fb"}
    assert [f"{v[0][0]:.2f}/{v[1][0]:.2f}" for v in x3d.values()] == ["1.09/2.50", "0.72/3.96"]
    down = {d: figures[("x3d_s", d, False)] for d in "fb"}
    assert (_span(down["f"][0]), _span(down["f"][1])) == ("1.98-4.11", "2.20-5.09")
    assert (_span(down["b"][0]), _span(down["b"][1])) == ("1.13-2.52", "0.73-0.85")
    # Batch 8 and 1: the stems where a slice fills the GPU, the spatial layers at every batch.
    small = {}
    for name in ("planes_small_F.json", "planes_small_B.json"):
        for row in _timed(name):
            p = _problem(row)
            ratios = _ratios(row)
            if p.filter[1:] == (1, 1) or not any("Planes" in k for k in ratios):
                continue
            solver = specialisations(p, SM90)[0].solver
            three_d = min(v for k, v in ratios.items() if k.startswith("ConvTriton3d"))
            stem = p.c <= FP32_STEM_CHANNELS
            if stem:  # the claiming solver's blocks a slice, against the GPU's SMs
                first = get_solver("ConvTritonFmaPlanesFwd" if p.direction == "F" else
                                   "ConvTritonImplicitGemmTf32x3PlanesBwd")
                grid, _ = first.launch_geometry(p, first.default_params(p, SM90))
                fills = grid[0] * grid[1] * grid[2] >= STEM_WAVES * SM90.cu
                assert fills == (p.n == 8), row["key"]
            assert isinstance(solver, ConvTritonPlanes) == (not stem or p.n == 8), row["key"]
            if isinstance(solver, ConvTritonPlanes):
                small.setdefault((stem, p.n), []).append((ratios[solver.name], three_d))
            else:  # the stems' planes solver that would have claimed, against the pick
                small.setdefault(("3-D", p.n), []).append((ratios[first.name],
                                                            ratios[solver.name]))
    spatial = small[(False, 1)]
    won = [pair for pair in spatial if pair[0] < pair[1]]
    lost = [pair for pair in spatial if pair[0] >= pair[1]]
    assert (len(won), len(spatial)) == (10, 14)
    assert (_span([a for a, _ in won]), _span([b for _, b in won])) == ("0.99-2.15", "1.86-4.71")
    assert (_span([a for a, _ in lost]), _span([b for _, b in lost])) == ("1.73-3.44",
                                                                           "1.39-2.21")
    assert all(a < b for a, b in small[(True, 8)]) and len(small[(True, 8)]) == 4
    assert sorted(f"{a:.2f}/{b:.2f}" for a, b in small[("3-D", 1)]) == \
        ["1.68/1.68", "7.01/4.40", "7.14/2.21", "9.71/1.91"]
    # The stem of R(2+1)D-18 in backward data.
    stem = next(r for r in _timed("planes_b.json") if r["layer"] == "stem.0")
    assert f"{_ratios(stem)['ConvTritonImplicitGemmTf32x3PlanesBwd']:.2f}" == "1.07"
    assert f"{_ratios(stem)['ConvTriton3dTf32x3Bwd']:.2f}" == "6.64"


def _problem(row: dict) -> ConvProblem:
    """The row's problem, from its key (the FindDb's form)."""
    return ConvProblem.from_key(row["key"])

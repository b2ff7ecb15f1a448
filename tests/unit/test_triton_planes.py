"""The planes solvers (solvers/triton_planes.py): which NCDHW problems they take, that their
launches, read as the 2-D kernels read their arguments (pointers, sizes, strides), compute the
3-D layer slice by slice (float64), that they launch the 2-D solver's objects, and where they
rank first."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from launch_emulation import run_launches
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import (
    SOLVERS,
    YIELDS_TO,
    all_dynamic_jobs,
    get_solver,
    launch_jobs,
    ranks_first,
)
from miopenkernels.solvers.base import split_offset
from miopenkernels.solvers.reference import conv_inputs, conv_output_name, conv_reference
from miopenkernels.solvers.triton_3d import ConvTriton3d
from miopenkernels.solvers.triton_3d_smallc import ConvTriton3dSmallC
from miopenkernels.solvers.triton_planes import (
    FIRST_SPATIAL,
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
    steps = [solver.launch(p, params), *(s for _, s in solver.follow_ups(p, params, SM90))]
    assert len(steps) == p.in_spatial[0]
    run_launches(steps, flats, {})
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
    # Activations of 2**31 elements or more (3D U-Net's output layer at 128^3, batch 32): the
    # kernels' 32-bit offsets at the 3-D image stride would wrap; the batch-chunk solvers'.
    big = _stem(c=64, k=3, in_spatial=(128, 128, 128), filter=(1, 1, 1), pad=(0, 0, 0),
                stride=(1, 1, 1), in_type="FP16", wei_type="FP16", out_type="FP16")
    assert 64 * 32 * 128 ** 3 >= 2**31
    assert not any(s.is_applicable(replace(big, direction=d), SM90) for s in PLANES_SOLVERS
                   for d in "FB")
    assert any(s.is_applicable(replace(big, n=8), SM90) for s in PLANES_SOLVERS)
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
    # No claim on a (2+1)-D spatial layer (the relaid 3-D solvers'), in 16-bit types, on
    # 1x1x1 layers, at batch 1 on the stems, or under the TF32 math.
    spatial = _stem(c=64, k=144, in_spatial=(16, 56, 56), filter=(1, 3, 3), pad=(0, 1, 1),
                    stride=(1, 1, 1))
    half = _stem(in_type="FP16", wei_type="FP16", out_type="FP16")
    down = _stem(c=24, k=48, in_spatial=(13, 40, 40), filter=(1, 1, 1), pad=(0, 0, 0))
    for s in PLANES_SOLVERS:
        for p in (spatial, replace(spatial, direction="F"), half, down, _stem(n=1),
                  replace(down, direction="F")):
            assert not (s.is_applicable(p, SM90) and s.claims_first(p, SM90)), (s.name, p)
        if s.math == "tf32":
            assert not s.claims_first(_stem(), SM90)
    assert "Planes" not in specialisations(spatial, SM90)[0].solver.name


def _timed(name: str) -> list[dict]:
    return json.loads((ROOT / "bench" / "results" / "planes_h100" / name).read_text())["rows"]


def _ratios(row: dict) -> dict[str, float]:
    return {k: v["gpu_ms"] / row["cudnn_gpu_ms"] for k, v in row["solvers"].items()
            if v.get("gpu_ms")}


def _span(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def test_the_claims_figures_of_the_h100_run() -> None:
    """The claims' figures (FIRST_TYPES, STEM_WAVES, FIRST_SPATIAL) from bench/results/
    planes_h100, every result within the FP32 tolerance."""
    from miopenkernels.builder.jobs import specialisations

    stems: dict[tuple[str, str, int], tuple[float, float]] = {}
    down: dict[str, tuple[list[float], list[float]]] = {}
    for name in ("planes_f.json", "planes_b.json", "planes_small_F.json", "planes_small_B.json"):
        for row in _timed(name):
            assert all(v["rel_err"] < 1e-5 for v in row["solvers"].values() if "rel_err" in v)
            p = _problem(row)
            ratios = _ratios(row)
            three_d = min(v for k, v in ratios.items() if k.startswith("ConvTriton3d"))
            if p.c <= FP32_STEM_CHANNELS:
                first = get_solver("ConvTritonFmaPlanesFwd" if p.direction == "F" else
                                   "ConvTritonImplicitGemmTf32x3PlanesBwd")
                grid, _ = first.launch_geometry(p, first.default_params(p, SM90))
                blocks = grid[0] * grid[1] * grid[2]
                assert (blocks >= STEM_WAVES * SM90.cu) == (p.n > 1), row["key"]
                picked = specialisations(p, SM90)[0].solver
                assert isinstance(picked, ConvTritonPlanes) == (p.n > 1), row["key"]
                stems[(row["network"], p.direction, p.n)] = (ratios[first.name], three_d)
            elif p.filter == (1, 1, 1) and p.stride == (1, 2, 2) and p.n == 32 and \
                    any("Planes" in k for k in ratios):
                got = down.setdefault(p.direction, ([], []))
                got[0].append(min(v for k, v in ratios.items() if "Planes" in k))
                got[1].append(three_d)
    fig = {k: f"{a:.2f}/{b:.2f}" for k, (a, b) in stems.items()}
    assert [fig[("r2plus1d_18", d, 32)] for d in "FB"] == ["1.02/1.84", "1.07/6.64"]
    assert [fig[("x3d_s", d, 32)] for d in "FB"] == ["1.09/2.50", "0.72/3.96"]
    assert all(a < b for (_, _, n), (a, b) in stems.items() if n == 8)
    assert [fig[("r2plus1d_18", d, 1)] for d in "FB"] + [fig[("x3d_s", "F", 1)]] == \
        ["9.71/1.91", "7.01/4.40", "7.14/2.21"]
    assert (_span(down["B"][0]), _span(down["B"][1])) == ("1.13-2.52", "0.73-0.85")
    # The spatial layers' claim of b308c5c against the relaid solvers picked before it.
    before = {r["key"]: r for r in json.loads(
        (ROOT / "bench" / "results" / "planes_h100" / "zoo_video_before.json").read_text()
    )["rows"]}
    moved: dict[str, list[tuple[float, float]]] = {}
    for row in json.loads((ROOT / "bench" / "results" / "planes_h100" /
                           "zoo_video-b308c5c.json").read_text())["rows"]:
        was = before.get(row["key"])
        if was and "Planes" in row["solver"] and "ViaNdhwc" in was["solver"]:
            moved.setdefault(row["case"].split("-")[1], []).append((row["ratio"], was["ratio"]))

    def geomean(values: list[float]) -> float:
        return math.exp(sum(math.log(v) for v in values) / len(values))

    assert tuple((d, len(v), round(geomean([a for a, _ in v]), 2),
                  round(geomean([b for _, b in v]), 2)) for d, v in moved.items()) == \
        FIRST_SPATIAL


def _problem(row: dict) -> ConvProblem:
    """The row's problem, from its key (the FindDb's form)."""
    return ConvProblem.from_key(row["key"])


def test_the_readmes_zoo_figures_of_the_h100_run() -> None:
    """bench/results/README.md's planes_h100 table and geomeans, from the zoo runs before and
    after (and zoo_compare.json, which bench/zoo_compare.py wrote from them)."""
    import re

    folder = ROOT / "bench" / "results" / "planes_h100"
    before = {r["key"]: r for r in json.loads((folder / "zoo_video_before.json").read_text())
              ["rows"]}
    after = json.loads((folder / "zoo_video.json").read_text())
    assert (after["compiles"], after["errors"]) == (0, 0)
    names = {"r2plus1d_18": "R(2+1)D-18 1x7x7", "x3d_s": "X3D-S 1x3x3 (held out)"}
    moved = set()
    for row in after["rows"]:
        was = before[row["key"]]
        if was["solver"] != row["solver"]:
            assert isinstance(get_solver(row["solver"]), ConvTritonPlanes)
            moved.add(f"| {names[row['network']]} | {row['n']} | {row['case'].split('-')[1]} | "
                      f"{was['ratio']:.2f} | {row['ratio']:.2f} |")
    text = (ROOT / "bench" / "results" / "README.md").read_text()
    section = text[text.index("planes_h100/: the planes solvers"):]
    table = set(re.findall(r"^\| (?:R\(2\+1\)D-18|X3D-S).*\|$", section, re.M))
    assert moved == table and len(table) == 8
    cases = json.loads((folder / "zoo_compare.json").read_text())["cases"]
    got = [f"{cases[f'FP32-{d}-NCDHW {part}'][k]:.2f}" for part in ("zoo", "held_out")
           for d in "BF" for k in ("before", "after")]
    assert got == ["1.47", "1.41", "1.30", "1.29", "0.97", "0.93", "1.38", "1.38"]


def test_the_picks_that_moved() -> None:
    """README: immediate mode's first choices over the zoo moved on the FP32 stems alone."""
    data = json.loads((ROOT / "bench" / "results" / "planes_h100" /
                       "picks_sm90-132-ddeba35-aba64b2.json").read_text())
    assert (data["problems"], data["moved"]) == (41526, 8)
    got = {(c["before"], c["after"]): (c["problems"], c["measured"]["before_geomean"],
                                       c["measured"]["after_geomean"]) for c in data["changes"]}
    assert {k: (n, f"{a:.2f}", f"{b:.2f}") for k, (n, a, b) in got.items()} == {
        ("ConvTriton3dSmallCFwd", "ConvTritonFmaPlanesFwd"): (4, "2.11", "1.33"),
        ("ConvTriton3dTf32x3Bwd", "ConvTritonImplicitGemmTf32x3PlanesBwd"): (4, "4.88", "1.04")}

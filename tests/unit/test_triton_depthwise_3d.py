"""The 3-D depthwise solvers: channel-separated 3-D layers on the depthwise family's direct
kernels with a depth axis."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from find_doubles import db_env, run_recorded, triton_compiler
from miopenkernels.backends import NullBackend
from miopenkernels.find import make_invoker
from miopenkernels.handle import Handle
from miopenkernels.problem import ConvProblem
from miopenkernels.ranking import load_model, rank_candidates
from miopenkernels.solvers import SOLVERS, get_solver, launch_jobs, ranks_first
from miopenkernels.target import Target

pytest.importorskip("miopenkernels.kernels.conv_triton_depthwise3d_spec")

SM90 = Target("sm90", 132)
NAMES = {"F": "ConvTritonDepthwise3dFwd", "B": "ConvTritonDepthwise3dBwd",
         "W": "ConvTritonDepthwise3dWrw"}
# X3D-, CSN- and MoViNet-style channel-separated layers: (channels, frames, image,
# (T, R, S), (stride_d, stride_hw)).
LAYERS = ((54, 13, 80, (3, 3, 3), (1, 2)), (108, 13, 40, (3, 3, 3), (1, 1)),
          (24, 13, 80, (5, 1, 1), (1, 1)), (64, 8, 56, (3, 3, 3), (1, 1)),
          (40, 8, 28, (1, 5, 5), (1, 2)), (432, 13, 5, (3, 3, 3), (1, 1)))


def _p(c: int, d: int, hw: int, f: tuple[int, int, int] = (3, 3, 3),
       stride: tuple[int, int] = (1, 1), direction: str = "F", n: int = 8,
       data_type: str = "FP16", layout: str = "NDHWC") -> ConvProblem:
    return ConvProblem(n=n, c=c, k=c, groups=c, in_spatial=(d, hw, hw), filter=f,
                       pad=tuple(x // 2 for x in f), stride=(stride[0], stride[1], stride[1]),
                       direction=direction, in_type=data_type, wei_type=data_type,
                       out_type=data_type, in_layout=layout, wei_layout=layout,
                       out_layout=layout)


def test_applies_to_3d_depthwise_problems_on_matrix_core_targets() -> None:
    targets = [Target(a, 100) for a in ("sm80", "sm90", "sm100", "sm120", "gfx90a", "gfx942",
                                        "gfx950", "gfx1100", "gfx1201")]
    for (d, name), (c, frames, hw, f, st), t, layout in itertools.product(
            NAMES.items(), LAYERS, ("FP16", "BF16", "FP32"), ("NCDHW", "NDHWC")):
        p = _p(c, frames, hw, f, st, d, 2, t, layout)
        solver = get_solver(name)
        assert all(solver.is_applicable(p, target) for target in targets), (name, p.key())
        # The 2-D family never takes a 3-D problem, nor this one a 2-D one.
        assert not get_solver(name.replace("3d", "")).is_applicable(p, SM90)
    two_d = ConvProblem(n=2, c=16, k=16, groups=16, in_spatial=(8, 8), filter=(3, 3),
                        pad=(1, 1), in_type="FP16", wei_type="FP16", out_type="FP16")
    assert not get_solver(NAMES["F"]).is_applicable(two_d, SM90)
    for target in (Target("gfx906", 60), Target("gfx1030", 40)):
        assert not get_solver(NAMES["F"]).is_applicable(_p(54, 13, 40), target)
        assert get_solver(NAMES["W"]).dynamic_jobs(target) == []


def test_refuses_what_is_not_3d_depthwise() -> None:
    solver = get_solver(NAMES["F"])
    base = _p(32, 8, 28)
    assert solver.is_applicable(base, SM90)
    others = [replace(base, groups=8),  # grouped, 4 channels a group
              replace(base, k=64),  # channel multiplier 2
              _p(32, 8, 28, (9, 3, 3)), _p(32, 8, 28, (3, 3, 9)),
              _p(32, 8, 28, stride=(3, 1)), _p(32, 8, 28, stride=(1, 3)),
              replace(base, out_type="FP32"), replace(base, mode="trans"),
              replace(base, direction="B")]
    for other in others:
        assert not solver.is_applicable(other, SM90), other.key()


def test_launch_geometry_and_arguments_per_direction() -> None:
    f, b, w = (get_solver(NAMES[d]) for d in "FBW")
    p = _p(54, 13, 80, stride=(1, 2), n=8)  # output 13 x 40 x 40
    launch = f.launch(p, f.default_params(p, SM90))
    # 1,600 output pixels a slice in blocks of 8, 54 channels in blocks of 16, 8 x 13 slices.
    assert launch.grid == (200, 4, 104) and launch.block == (32, 1, 1)
    s = launch.scalars()
    assert (s["SD"], s["SH"], s["DD"], s["DH"], s["T"], s["R"], s["stride_h"]) == \
        (13, 80, 13, 40, 3, 3, 2)
    assert (s["ssc"], s["ssw"], s["ssd"], s["swt"], s["swr"]) == (1, 54, 54 * 80 * 80, 9, 3)
    bp = replace(p, direction="B")
    back = b.launch(bp, b.default_params(bp, SM90))
    assert back.pointer_args()[:3] == ["dy", "w", "dx"]
    # Phased (NDHWC, plane stride 2): dx's slices x 4 phases, a phase's 40 x 40 pixels in
    # blocks of BLOCK_M; dx's rows.
    bparams = b.default_params(bp, SM90)
    assert back.grid == (cdiv(40 * 40, bparams[0]), cdiv(54, bparams[1]), 8 * 13 * 4)
    assert back.scalars()["DH"] == 80
    assert "-DPHASES=2" in b.compile_job(bp, bparams, SM90).options
    planar = replace(bp, in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW")
    raster = b.launch(planar, b.default_params(planar, SM90))
    assert raster.grid[2] == 8 * 13  # channel-planar: the raster objects
    assert "-DPHASES=0" in b.compile_job(planar, b.default_params(planar, SM90), SM90).options
    wp = replace(p, direction="W")
    params = w.default_params(wp, SM90)
    wl = w.launch(wp, params)
    assert wl.grid[:2] == (cdiv(54, params[1]), 9)  # channel blocks x (t, r) rows
    assert wl.scalars()["TAPS"] == 27 and wl.grid[2] == params[4] > 1
    assert wl.workspace_bytes == params[4] * 54 * 27 * 4
    (job, reduce), = w.follow_ups(wp, params, SM90)
    assert job.kernel_name == "conv2d_bwd_weight_reduce"
    r = reduce.scalars()
    assert (r["TOTAL"], r["R"], r["S"], r["swr"]) == (54 * 27, 9, 3, 3)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def test_every_default_call_runs_shipped_objects() -> None:
    for (d, name), target in itertools.product(NAMES.items(),
                                               (SM90, Target("gfx942", 304),
                                                Target("gfx1100", 48))):
        solver = get_solver(name)
        shipped = set(solver.dynamic_jobs(target))
        # Types x (NCDHW, NDHWC, NDHWC aligned) x two shape classes, backward data's NDHWC
        # also phased at 3x3 (aligned and not), and the NDHWC 3x3 planes (backward data
        # raster and phased; backward weights: width class 4) pair-aligned.
        assert len([j for j in shipped if j.kernel_name != "conv2d_bwd_weight_reduce"]) == \
            18 + {"F": 3, "B": 3 * 2 + 3 * 2, "W": 3}[d]
        for (c, frames, hw, f, st), n, t, layout in itertools.product(
                LAYERS, (1, 8, 32), ("FP16", "BF16", "FP32"), ("NCDHW", "NDHWC")):
            p = _p(c, frames, hw, f, st, d, n, t, layout)
            params = solver.default_params(p, target)
            assert solver.params_valid(p, target, params)
            jobs = launch_jobs(solver, p, params, target) + \
                [solver.unaligned_job(p, params, target)]
            missing = [j.kernel_name for j in jobs if j not in shipped]
            assert not missing, (name, p.key(), params, missing)


def test_3d_depthwise_problems_rank_the_family_first() -> None:
    model = load_model()

    def first(p: ConvProblem) -> str:
        solvers = [s for s in SOLVERS if s.is_applicable(p, SM90) and s.math != "tf32"]
        return rank_candidates(p, SM90, solvers, lambda s, q: True, model=model)[0].solver.name

    for (d, name), (c, frames, hw, f, st), layout, t in itertools.product(
            NAMES.items(), LAYERS, ("NCDHW", "NDHWC"), ("FP16", "FP32")):
        p = _p(c, frames, hw, f, st, d, 8, t, layout)
        assert first(p) == name, p.key()
        assert ranks_first(get_solver(name), p, SM90)
        others = [s.name for s in SOLVERS if s.is_applicable(p, SM90) and s.name != name
                  and ranks_first(s, p, SM90)]
        assert not others, (p.key(), others)


def test_the_invoker_runs_the_split_then_the_reduce(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    db_env(monkeypatch, tmp_path)
    backend = NullBackend(SM90)
    solver = get_solver(NAMES["W"])
    h = Handle(backend=backend, compiler=triton_compiler(), solvers=[solver])
    p = _p(54, 13, 40, direction="W")
    params = solver.default_params(p, SM90)
    assert params[4] > 1
    inv = make_invoker(h, p, solver, params=params)
    launches, ptrs = run_recorded(backend, inv)
    main, reduce = launches
    ws = ptrs["workspace"]
    assert [main.kernel, reduce.kernel] == ["depthwise_conv3d_wrw", "conv2d_bwd_weight_reduce"]
    assert [v for _, v in main.args[:4]] == [ptrs["x"], ptrs["y"], ptrs["w"], ws]
    assert [v for _, v in reduce.args[:2]] == [ws, ptrs["w"]]


def test_x3d_channels_take_pair_aligned_objects_in_16_bit() -> None:
    """X3D's 54 and 108 channels (even, not multiples of 8) take the 3x3 planes' objects
    assuming pairs of channels in 16-bit NDHWC, 16-byte vectors in FP32 where 4 divides them
    (108), pairs in FP32 otherwise (54), and no assumption in NCDHW or at the 5x1x1 temporal
    filter."""

    def assumed_c(p: ConvProblem, name: str) -> str | None:
        solver = get_solver(name)
        job = solver.compile_job(p, solver.default_params(p, SM90), SM90)
        assert job in set(solver.dynamic_jobs(SM90))
        text = next((o for o in job.options if o.startswith("--assume=")), None)
        return None if text is None else next(a for a in text.split(",") if a.startswith("C:"))

    for d, name in NAMES.items():
        got = [assumed_c(_p(c, 13, 40, f, direction=d, data_type=t, layout=lay), name)
               for c, f, t, lay in ((54, (3, 3, 3), "FP16", "NDHWC"),
                                    (108, (3, 3, 3), "BF16", "NDHWC"),
                                    (108, (3, 3, 3), "FP32", "NDHWC"),
                                    (54, (3, 3, 3), "FP32", "NDHWC"),
                                    (54, (3, 3, 3), "FP16", "NCDHW"),
                                    (54, (5, 1, 1), "FP16", "NDHWC"))]
        # Backward weights' width class 4 holds the 5x1x1 filter's rows (S = 1) too.
        assert got == ["C:2", "C:2", "C:4", "C:2", None, "C:2" if d == "W" else None], d

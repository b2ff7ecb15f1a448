"""The depthwise solvers: groups = channels as a memory-bound Triton family."""

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

pytest.importorskip("miopenkernels.kernels.conv_triton_depthwise_spec")

SM90 = Target("sm90", 132)
NAMES = {"F": "ConvTritonDepthwiseFwd", "B": "ConvTritonDepthwiseBwd",
         "W": "ConvTritonDepthwiseWrw"}
# MobileNet / EfficientNet / ConvNeXt-style depthwise layers: (channels, image, filter, stride).
LAYERS = ((32, 112, 3, 1), (96, 112, 3, 2), (144, 56, 5, 2), (480, 14, 5, 1), (768, 7, 7, 1),
          (1152, 7, 3, 1), (40, 28, 7, 1))


def _p(c: int, hw: int, f: int = 3, stride: int = 1, direction: str = "F", n: int = 32,
       data_type: str = "FP16", layout: str = "NHWC", dilation: int = 1, **kw: object
       ) -> ConvProblem:
    pad = (f - 1) * dilation // 2
    p = ConvProblem(n=n, c=c, k=c, groups=c, in_spatial=(hw, hw), filter=(f, f),
                    pad=(pad, pad), stride=(stride, stride), dilation=(dilation, dilation),
                    direction=direction, in_type=data_type, wei_type=data_type,
                    out_type=data_type, in_layout=layout, wei_layout=layout,
                    out_layout=layout)
    return replace(p, **kw) if kw else p


def test_applies_to_depthwise_problems_on_matrix_core_targets() -> None:
    targets = [Target(a, 100) for a in ("sm80", "sm90", "sm100", "sm120", "gfx90a", "gfx942",
                                        "gfx950", "gfx1100", "gfx1201")]
    for (d, name), t, layout, f, stride, dilation in itertools.product(
            NAMES.items(), ("FP16", "BF16", "FP32"), ("NCHW", "NHWC"), (1, 3, 5, 7), (1, 2),
            (1, 2)):
        p = _p(24, 15, f, stride, d, 2, t, layout, dilation)
        solver = get_solver(name)
        assert all(solver.is_applicable(p, target) for target in targets), (name, p.key())
    for target in (Target("gfx906", 60), Target("gfx908", 120), Target("gfx1030", 40)):
        assert not get_solver("ConvTritonDepthwiseFwd").is_applicable(_p(24, 15), target)
        assert get_solver("ConvTritonDepthwiseWrw").dynamic_jobs(target) == []


def test_refuses_what_is_not_depthwise() -> None:
    solver = get_solver(NAMES["F"])
    base = _p(32, 28)
    assert solver.is_applicable(base, SM90)
    others = [replace(base, groups=8),  # grouped, 4 channels a group
              replace(base, k=64),  # channel multiplier 2
              replace(base, c=1, k=1, groups=1),
              _p(32, 28, 9), _p(32, 28, 3, stride=3),
              replace(base, out_type="FP32"), replace(base, in_type="FP64", wei_type="FP64",
                                                      out_type="FP64"),
              replace(base, mode="trans"), replace(base, direction="B")]
    for other in others:
        assert not solver.is_applicable(other, SM90), other.key()
    three_d = ConvProblem(n=2, c=16, k=16, groups=16, in_spatial=(8, 8, 8), filter=(3, 3, 3),
                          pad=(1, 1, 1), in_type="FP16", wei_type="FP16", out_type="FP16")
    assert not solver.is_applicable(three_d, SM90)


def test_triton_off_turns_the_family_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIOPENKERNELS_TRITON", "0")
    solver = get_solver(NAMES["W"])
    assert not solver.is_applicable(_p(32, 28, direction="W"), SM90)
    assert solver.dynamic_jobs(SM90) == []


def test_params_are_the_seven_tunables_within_the_legal_space() -> None:
    for d, name in NAMES.items():
        solver = get_solver(name)
        p = _p(96, 56, direction=d)
        space = solver.param_space(p, SM90)
        assert space and all(solver.params_valid(p, SM90, q) for q in space)
        assert all(len(q) == 7 and q[2] == q[3] == q[6] == 1 for q in space)
        assert (any(q[4] > 1 for q in space)) == (d == "W")
        assert solver.default_params(p, SM90) in space
        assert all(solver.params_valid(p, SM90, q) for q in solver.seed_params(p, SM90))
        for bad in ((16, 32, 1, 1, 1, 4), (16, 32, 2, 1, 1, 4, 1), (16, 32, 1, 1, 1, 4, 2),
                    (16, 48, 1, 1, 1, 4, 1), (512, 32, 1, 1, 1, 4, 1), (8, 4, 1, 1, 1, 8, 2),
                    ("a", 32, 1, 1, 1, 4, 1)):
            assert not solver.params_valid(p, SM90, bad), (name, bad)  # type: ignore[arg-type]
    # A tile counts its filter row's elements in backward weights, one a thread at least
    # in the others.
    f, w = get_solver(NAMES["F"]), get_solver(NAMES["W"])
    assert f.params_valid(_p(96, 56), SM90, (64, 64, 1, 1, 1, 4, 1))
    assert not w.params_valid(_p(96, 56, direction="W"), SM90, (64, 64, 1, 1, 1, 4, 1))
    assert not f.params_valid(_p(96, 56), SM90, (8, 4, 1, 1, 1, 8, 1))
    assert w.params_valid(_p(96, 56, direction="W"), SM90, (8, 4, 1, 1, 1, 8, 1))
    assert not get_solver(NAMES["F"]).params_valid(_p(96, 56), SM90, (16, 64, 1, 1, 2, 4, 1))
    assert not get_solver(NAMES["F"]).params_valid(_p(96, 56), Target("gfx906", 60),
                                                   (16, 64, 1, 1, 1, 4, 1))


def test_launch_geometry_and_arguments_per_layout() -> None:
    f = get_solver(NAMES["F"])
    nhwc = _p(96, 56, 3, 2)
    params = f.default_params(nhwc, SM90)
    launch = f.launch(nhwc, params)
    # 28x28 output pixels in blocks of 8, 96 channels in blocks of 32 (a launch of 71 programs
    # an SM: the large tile), 32 images, one warp.
    assert params[:2] == (8, 32) and launch.grid == (98, 3, 32) and launch.block == (32, 1, 1)
    assert f.defaults_rule(nhwc, SM90)
    # At batch 1 (2.2 programs an SM at the large tile) the usual tile, 16 channels a block.
    one = _p(96, 56, 3, 2, n=1)
    assert f.default_params(one, SM90)[:2] == (8, 16) and not f.defaults_rule(one, SM90)
    assert f.launch(one, f.default_params(one, SM90)).grid == (98, 6, 1)
    assert launch.pointer_args()[:3] == ["x", "w", "y"]
    s = launch.scalars()
    assert (s["C"], s["SH"], s["DH"], s["ssc"], s["ssw"], s["sdw"], s["swc"]) == \
        (96, 56, 28, 1, 96, 96, 9)
    assert launch.workspace_bytes == 0 and f.follow_ups(nhwc, params, SM90) == ()
    nchw = _p(96, 56, 3, 2, layout="NCHW")
    params = f.default_params(nchw, SM90)
    assert params[:2] == (64, 2) and f.launch(nchw, params).grid == (13, 48, 32)
    b = get_solver(NAMES["B"])
    launch = b.launch(_p(96, 56, 3, 2, "B"), b.default_params(_p(96, 56, 3, 2, "B"), SM90))
    # Backward data walks dx's 56x56 pixels, reading dy's 28x28; at stride 2 in NHWC a
    # program owns one stride phase's pixels (28x28 of them a phase), axis 2 images x 4.
    assert launch.pointer_args()[:3] == ["dy", "w", "dx"]
    assert (launch.scalars()["SH"], launch.scalars()["DH"]) == (28, 56)
    assert launch.grid == (98, 3, 128)
    at_one = _p(96, 56, 3, 1, "B")  # stride 1: a program a tile of dx's raster order
    assert b.launch(at_one, b.default_params(at_one, SM90)).grid == (392, 3, 32)
    assert f.launch_geometry(nhwc, f.default_params(nhwc, SM90)) == ((98, 3, 32), (32, 1, 1))


@pytest.mark.parametrize("direction", ["F", "B"])
def test_objects_unroll_the_usual_filters_and_ship(direction: str) -> None:
    """3x3, 5x5 and 7x7 filters run an object with their taps unrolled (TAPS_R x TAPS_S
    constexprs) in forward and backward data, other sizes the one whose R and S are
    arguments; all ship. Backward weights take a width class instead."""
    f = get_solver(NAMES[direction])
    shipped = set(f.dynamic_jobs(SM90))
    seen = set()
    for r, taps in ((3, "3"), (5, "5"), (7, "7"), (4, "0")):
        for stride in (1, 2):
            for layout in ("NHWC", "NCHW"):
                p = _p(96, 56, r, stride, direction, layout=layout)
                job = f.compile_job(p, f.default_params(p, SM90), SM90)
                assert f"-DTAPS_R={taps}" in job.options and \
                    f"-DTAPS_S={taps}" in job.options, job
                # Channels-last backward data at stride 2 (dilation 1): the phased objects.
                phased = direction == "B" and stride == 2 and layout == "NHWC" and taps != "0"
                assert (f"-DPHASES={2 if phased else 0}" in job.options), job
                assert job in shipped and \
                    f.unaligned_job(p, f.default_params(p, SM90), SM90) in shipped
                seen.add((job, layout))
    # 4 shape classes a layout; channels-last backward data 3 more (phased 3x3, 5x5, 7x7)
    assert len(seen) == (8 + 3 if direction == "B" else 8)
    dilated = _p(96, 56, 3, 2, direction, dilation=2)
    assert "-DPHASES=0" in f.compile_job(dilated, f.default_params(dilated, SM90), SM90).options
    w = get_solver(NAMES["W"])
    back = _p(96, 56, 3, 1, "W")
    assert not any(o.startswith("-DTAPS_R") for o in
                   w.compile_job(back, w.default_params(back, SM90), SM90).options)


def test_backward_weights_split_the_reduction_to_fill_the_gpu() -> None:
    solver = get_solver(NAMES["W"])
    few = _p(32, 112, 3, 1, "W")  # 32 channels: one channel block, 3 filter rows
    params = solver.default_params(few, SM90)
    grid, _ = solver.launch_geometry(few, params)
    assert grid[:2] == (1, 3) and params[4] > 1 and grid[2] == params[4]
    assert grid[0] * grid[1] * grid[2] >= SM90.cu  # fills the GPU
    assert solver.workspace_for(few, params) == params[4] * 32 * 9 * 4
    (job, reduce), = solver.follow_ups(few, params, SM90)
    assert job.kernel_name == reduce.kernel_name == "conv2d_bwd_weight_reduce"
    assert reduce.pointer_args()[:2] == ["workspace", "dw"]
    assert reduce.scalars()["TOTAL"] == 32 * 9 and reduce.scalars()["C"] == 1
    # 288 weights in many parts: the wide reduce object, a [32 parts, 32 values] tile a step
    # on four warps, so its few programs keep 1,024 loads in flight (the usual one: two
    # programs, one part's load at a time each).
    assert params[4] >= 8 and "-DPARTS=32" in job.options
    assert reduce.grid == (9, 1, 1) and reduce.block == (128, 1, 1)
    (usual, _), = solver.follow_ups(few, params[:4] + (4,) + params[5:], SM90)
    assert "-DPARTS=1" in usual.options
    one = params[:4] + (1,) + params[5:]
    assert solver.follow_ups(few, one, SM90) == () and solver.workspace_for(few, one) == 0
    # The split is the grid's, not the object's: every split runs the same object.
    assert solver.compile_job(few, params, SM90) == solver.compile_job(few, one, SM90)
    tiny = _p(1152, 7, 3, 1, "W", n=1)  # 49 positions: too few to split
    assert solver.default_params(tiny, SM90)[4] == 1


def test_backward_weights_split_rule_per_layout() -> None:
    """Channels-last cuts the reduction finer (up to 32 waves, 512 parts of 4 steps); NCHW,
    at its 128x4 tile, four waves, 64 parts of 4 steps (the 64x8 tile's two waves of 8
    steps, which the grouped family keeps)."""
    from miopenkernels.kernels import conv_triton_depthwise_spec as spec
    from miopenkernels.kernels import conv_triton_grouped_spec as grouped

    solver = get_solver(NAMES["W"])
    for layout, rule in (("NHWC", spec.SPLIT_RULES[True]), ("NCHW", spec.SPLIT_RULES[False])):
        for c, hw, f, stride in LAYERS:
            p = _p(c, hw, f, stride, "W", layout=layout)
            params = solver.default_params(p, SM90)
            split = params[4]
            grid, _ = solver.launch_geometry(p, params[:4] + (1,) + params[5:])
            columns = grid[0] * grid[1]
            steps = -(-p.n * p.out_spatial[0] * p.out_spatial[1] // params[0])
            # The largest split within the rule: one doubling more breaks one of its limits.
            assert split <= rule["most"] and steps // split >= min(rule["least"], steps)
            assert split == 1 or columns * split <= rule["waves"] * SM90.cu, (layout, c)
            nxt = split * 2
            assert (nxt > rule["most"] or columns * nxt > rule["waves"] * SM90.cu or
                    steps // nxt < rule["least"]), (layout, c, split)
    few_nhwc = solver.default_params(_p(32, 112, 3, 1, "W"), SM90)[4]
    few_nchw = solver.default_params(_p(32, 112, 3, 1, "W", layout="NCHW"), SM90)[4]
    assert (few_nhwc, few_nchw) == (512, 16)
    assert grouped.SPLIT_RULES[True] == grouped.SPLIT_RULES[False] == \
        {"waves": 2, "most": 64, "least": 8}
    assert spec.SPLIT_RULES[False] == {"waves": 4, "most": 64, "least": 4}
    # The partials of an explicit split keep 32-bit offsets: a split that would not is not
    # valid for the problem, though legal for the tile.
    wide = _p(1024, 7, 7, 1, "W")
    sizes = {"G": 1024, "C": 1, "K": 1, "R": 7, "S": 7}
    assert spec.partials_fit(sizes, 1024)
    huge = {**sizes, "G": 2**31 // (49 * 512) + 1}
    assert spec.partials_fit(huge, 256) and not spec.partials_fit(huge, 512)
    assert solver.params_valid(wide, SM90, (16, 32, 1, 1, 1024, 4, 1))


def test_backward_weights_objects_per_filter_width_class() -> None:
    solver = get_solver(NAMES["W"])
    params = (16, 32, 1, 1, 1, 4, 1)
    widths = {f: solver.compile_job(_p(96, 28, f, direction="W"), params, SM90)
              for f in (1, 3, 5, 7)}
    assert "-DBLOCK_S=4" in widths[1].options and widths[1] == widths[3]
    assert "-DBLOCK_S=8" in widths[5].options and widths[5] == widths[7]
    forward = get_solver(NAMES["F"]).compile_job(_p(96, 28, 7), params, SM90)
    assert not any(o.startswith("-DBLOCK_S") for o in forward.options)


def test_aligned_objects_only_for_aligned_channels_last_problems() -> None:
    solver = get_solver(NAMES["F"])
    aligned = solver.compile_job(_p(96, 56), (16, 64, 1, 1, 1, 4, 1), SM90)
    assert any(o.startswith("--assume=") for o in aligned.options)
    assert "-DCHANNELS_LAST=1" in aligned.options and "-DBACKWARD=0" in aligned.options
    # 16-bit objects assume multiples of 8 (16-byte channel vectors), FP32 ones of 4.
    assert ",C:8," in next(o for o in aligned.options if o.startswith("--assume="))
    eight = solver.compile_job(_p(40, 28), (16, 64, 1, 1, 1, 4, 1), SM90)  # 40 channels
    assumed = next(o for o in eight.options if o.startswith("--assume="))
    assert "C:8" in assumed and "src_ptr:16" in assumed and "ssw:8" in assumed

    def assumed_c(p: ConvProblem) -> str | None:
        job = solver.compile_job(p, (16, 64, 1, 1, 1, 4, 1), SM90)
        text = next((o for o in job.options if o.startswith("--assume=")), None)
        return None if text is None else next(a for a in text.split(",") if a.startswith("C:"))

    # FP32: multiples of 4 (72, 116 channels) are 16-byte vectors too; 58 and 30 pairs.
    assert [assumed_c(_p(c, 28, data_type="FP32")) for c in (40, 72, 116, 58, 30, 57)] == \
        ["C:4", "C:4", "C:4", "C:2", "C:2", None]
    # 16-bit channels even but not a multiple of 8 (ShuffleNet's 58, 116; 36): pairs, at 3x3
    # alone (PAIR_FILTERS); odd channels or other filters: no assumption.
    assert [assumed_c(_p(c, 28)) for c in (36, 58, 116, 57)] == ["C:2", "C:2", "C:2", None]
    assert assumed_c(_p(58, 28, 5)) is None and assumed_c(_p(58, 28, 7)) is None
    assert assumed_c(_p(58, 28, 5, data_type="FP32")) is None
    assert assumed_c(_p(58, 28, 3, layout="NCHW")) is None
    back = get_solver(NAMES["B"])
    for st in (1, 2):  # raster and phased backward data
        job = back.compile_job(_p(58, 56, 3, st, "B"), back.default_params(
            _p(58, 56, 3, st, "B"), SM90), SM90)
        assert any(o.startswith("--assume=") and ",C:2," in o for o in job.options)
        assert job in set(back.dynamic_jobs(SM90)) and \
            ("-DPHASES=2" in job.options) == (st == 2)
    assert get_solver(NAMES["F"]).compile_job(_p(48, 28, data_type="FP32"),
                                              (16, 64, 1, 1, 1, 4, 1), SM90) != \
        get_solver(NAMES["F"]).compile_job(_p(48, 28), (16, 64, 1, 1, 1, 4, 1), SM90)
    nchw = solver.compile_job(_p(96, 56, layout="NCHW"), (128, 8, 1, 1, 1, 4, 1), SM90)
    assert "-DCHANNELS_LAST=0" in nchw.options
    assert not any(o.startswith("--assume=") for o in nchw.options)
    back = get_solver(NAMES["B"]).compile_job(_p(96, 56, direction="B"),
                                              (16, 64, 1, 1, 1, 4, 1), SM90)
    assert "-DBACKWARD=1" in back.options


def test_every_default_call_runs_shipped_objects() -> None:
    for (d, name), target in itertools.product(NAMES.items(),
                                               (SM90, Target("gfx942", 304))):
        solver = get_solver(name)
        shipped = set(solver.dynamic_jobs(target))
        for (c, hw, f, st), n, t, layout in itertools.product(
                LAYERS, (1, 8, 32), ("FP16", "BF16", "FP32"), ("NCHW", "NHWC")):
            p = _p(c, hw, f, st, d, n, t, layout)
            params = solver.default_params(p, target)
            assert solver.params_valid(p, target, params)
            jobs = launch_jobs(solver, p, params, target) + \
                [solver.unaligned_job(p, params, target)]
            missing = [j.kernel_name for j in jobs if j not in shipped]
            assert not missing, (name, p.key(), params, missing)


def test_depthwise_problems_rank_the_family_first() -> None:
    model = load_model()

    def first(p: ConvProblem) -> str:
        solvers = [s for s in SOLVERS if s.is_applicable(p, SM90) and s.math != "tf32"]
        return rank_candidates(p, SM90, solvers, lambda s, q: True, model=model)[0].solver.name

    for (d, name), (c, hw, f, st), layout, t in itertools.product(
            NAMES.items(), LAYERS[:4], ("NCHW", "NHWC"), ("FP16", "FP32")):
        p = _p(c, hw, f, st, d, 8, t, layout)
        assert first(p) == name, p.key()
        assert ranks_first(get_solver(name), p, SM90)
    # The implicit GEMM (every precision) and the Winograd backward weights give way.
    w = _p(64, 28, 3, 1, "W", data_type="FP32", layout="NCHW")
    for solver in SOLVERS:
        if solver.is_applicable(w, SM90) and solver.name != NAMES["W"]:
            assert not ranks_first(solver, w, SM90), solver.name


def test_a_grouped_problem_that_is_not_depthwise_does_not_take_it() -> None:
    grouped = replace(_p(128, 28), groups=32)  # ResNeXt-style: 4 channels a group
    mult2 = replace(_p(64, 28), k=128, groups=64)  # channel multiplier 2
    for p in (grouped, mult2):
        assert not any(s.name.startswith("ConvTritonDepthwise") for s in SOLVERS
                       if s.is_applicable(p, SM90))
        solvers = [s for s in SOLVERS if s.is_applicable(p, SM90) and s.math != "tf32"]
        ranked = rank_candidates(p, SM90, solvers, lambda s, q: True, model=load_model())
        assert ranked and not ranked[0].solver.name.startswith("ConvTritonDepthwise")
        assert not ranks_first(get_solver(NAMES["F"]), p, SM90) or \
            not get_solver(NAMES["F"]).is_applicable(p, SM90)


def test_the_invoker_runs_the_split_then_the_reduce(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    db_env(monkeypatch, tmp_path)
    backend = NullBackend(SM90)
    solver = get_solver(NAMES["W"])
    h = Handle(backend=backend, compiler=triton_compiler(), solvers=[solver])
    p = _p(32, 56, direction="W")
    params = solver.default_params(p, SM90)
    assert params[4] > 1
    inv = make_invoker(h, p, solver, params=params)
    launches, ptrs = run_recorded(backend, inv)
    main, reduce = launches
    ws = ptrs["workspace"]
    assert [main.kernel, reduce.kernel] == ["depthwise_conv_wrw", "conv2d_bwd_weight_reduce"]
    assert [v for _, v in main.args[:4]] == [ptrs["x"], ptrs["y"], ptrs["w"], ws]
    assert [v for _, v in reduce.args[:2]] == [ws, ptrs["w"]]


def test_wave32_objects_keep_four_elements_a_lane_and_ship() -> None:
    rdna = Target("gfx1100", 48)
    shipped = set()
    for name in NAMES.values():
        shipped |= set(get_solver(name).dynamic_jobs(rdna))
    for d, layout, tile, warps in (("F", "NHWC", (8, 32), 2), ("B", "NHWC", (8, 32), 2),
                                   ("B", "NCHW", (128, 8), 8), ("F", "NHWC", (8, 16), 1)):
        small = tile == (8, 16)  # 75 programs at 8x32: under 8 an SM of 48, the usual tile
        p = _p(96, 14 if small else 56, 5, 1, d, n=1 if small else 32, layout=layout)
        solver = get_solver(NAMES[d])
        params = solver.default_params(p, rdna)
        assert params[:2] == tile and params[5] == warps, (d, layout, params)
        assert solver.compile_job(p, params, rdna) in shipped
        assert solver.unaligned_job(p, params, rdna) in shipped
        # Other kinds keep the tile's own warps.
        assert solver.default_params(p, SM90)[5] == (1 if layout == "NHWC" else 4)

"""The few-channel backward data on the FP32 units (solvers/triton_fma_bwd.py,
ConvTritonFmaFewKBwd): the few-filter forward of dy on flipped, transposed filters. Which
problems it takes, where immediate mode puts it first, the forward problem it runs, its
lead-in and objects. Its launches against float64 are in
tests/integration/test_conv_triton_fma.py (Triton's interpreter)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from miopenkernels.config import scoped_env
from miopenkernels.handle import Handle
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import (
    YIELDS_TO,
    all_dynamic_jobs,
    blas_1x1,
    get_solver,
    launch_jobs,
    ranks_first,
)
from miopenkernels.solvers.triton_3d_smallc import ConvTritonSmallC
from miopenkernels.solvers.triton_fma_bwd import ConvTritonFmaFewKBwd
from miopenkernels.target import Target

spec = pytest.importorskip("miopenkernels.kernels.conv_triton_fewk_bwd_spec")

SM90 = Target("sm90", 132)
NAME = "ConvTritonFmaFewKBwd"


def _conv_in(layout: str = "NHWC", data_type: str = "FP32", **kw: object) -> ConvProblem:
    """The SD 1.5 UNet's conv_in (4 -> 320, 3x3 at 64x64) at batch 32, backward data."""
    p = ConvProblem(n=32, c=4, k=320, in_spatial=(64, 64), filter=(3, 3), pad=(1, 1),
                    in_type=data_type, wei_type=data_type, out_type=data_type,
                    in_layout=layout, wei_layout=layout, out_layout=layout, direction="B")
    return replace(p, **kw) if kw else p


def test_it_takes_fp32_backward_data_of_few_channels() -> None:
    solver = get_solver(NAME)
    for layout in ("NCHW", "NHWC"):
        assert solver.is_applicable(_conv_in(layout), SM90)
        assert solver.is_applicable(_conv_in(layout, c=8, k=37, filter=(5, 5), pad=(2, 2),
                                             dilation=(1, 2)), SM90)
        assert solver.is_applicable(_conv_in(layout, c=1, filter=(1, 1), pad=(0, 0)), SM90)
        # Strides of at most the filter's taps, by phases of dx.
        for kw in ({"stride": (2, 2)}, {"stride": (1, 2)}, {"stride": (3, 3)},
                   {"filter": (7, 7), "pad": (3, 3), "stride": (2, 2), "c": 3, "k": 64}):
            assert solver.is_applicable(_conv_in(layout, **kw), SM90), kw
    for kw in ({"c": 9}, {"direction": "F"},
               {"direction": "W"}, {"groups": 4, "c": 8}, {"mode": "trans"},
               {"pad": (3, 1)},  # beyond the filter's reach: a negative forward padding
               {"stride": (4, 4)},  # more than the taps: a phase of dx without any
               {"stride": (2, 2), "dilation": (2, 2)},  # phases of a dilated filter
               {"filter": (7, 7), "pad": (3, 3), "stride": (5, 5)},  # beyond MAX_STRIDE
               {"in_type": "FP16", "wei_type": "FP16", "out_type": "FP16"}):
        assert not solver.is_applicable(_conv_in(**kw), SM90), kw
    for name in ("gfx900-56", "gfx906-60"):
        old = Target.parse(name)
        with scoped_env("MIOPENKERNELS_TRITON", "1"):
            assert solver.dynamic_jobs(old) == [] and not solver.is_applicable(_conv_in(), old)


def test_the_forward_problem_it_runs() -> None:
    z = {"N": 32, "C": 4, "H": 64, "W": 60, "K": 320, "P": 64, "Q": 56, "R": 3, "S": 5,
         "G": 1, "stride_h": 1, "stride_w": 1, "pad_h": 1, "pad_w": 0, "dil_h": 1, "dil_w": 1}
    strides = {"x": (1, 2, 3, 4), "w": (5, 6, 7, 8), "y": (9, 10, 11, 12)}
    fwd, fwd_strides = spec.as_forward(z, strides, True)
    assert (fwd["C"], fwd["K"], fwd["H"], fwd["W"], fwd["P"], fwd["Q"]) == (320, 4, 64, 56, 64,
                                                                            60)
    assert (fwd["pad_h"], fwd["pad_w"]) == (1, 4)
    # dx's size is the forward's output at stride 1.
    assert fwd["P"] == fwd["H"] + 2 * fwd["pad_h"] - (z["R"] - 1)
    assert fwd["Q"] == fwd["W"] + 2 * fwd["pad_w"] - (z["S"] - 1)
    assert fwd_strides["x"] == strides["y"] and fwd_strides["y"] == strides["x"]
    # Flipped filters (c, k, r, s): the filters' channels fastest for channels-last objects.
    assert fwd_strides["w"] == (3 * 5 * 320, 1, 5 * 320, 320)
    assert spec.flipped_strides(z, False) == (320 * 15, 15, 5, 1)
    values = spec.flip_values(z, (36, 1, 12, 4), True)
    assert (values["ssk"], values["ssc"], values["sdc"], values["sdk"]) == (36, 1, 4800, 1)


def test_immediate_mode_puts_it_first_channels_last_on_sm90() -> None:
    handle = Handle(target="sm90-132")
    vae = _conv_in(k=512)
    for p in (_conv_in(), vae):
        assert handle.solutions(p)[0].solver == NAME, p.key()
    # The few-channel kernels give way to it in backward data, from 256 channels of dy: VGG's
    # and the VAE's 3-channel stems at stride 1 (64 and 128) are theirs.
    assert ConvTritonFmaFewKBwd in YIELDS_TO[ConvTritonSmallC]
    solver = get_solver(NAME)
    for k in (64, 128, 255):
        vgg = _conv_in(c=3, k=k, in_spatial=(224, 224))
        assert solver.is_applicable(vgg, SM90) and not solver.claims_first(vgg, SM90)
        assert handle.solutions(vgg)[0].solver.startswith("ConvTritonSmallC"), vgg.key()
    assert solver.claims_first(_conv_in(c=3, k=256, in_spatial=(224, 224)), SM90)
    pointwise = _conv_in(c=4, k=4, filter=(1, 1), pad=(0, 0))  # the GEMM library's
    squeeze = _conv_in(c=8, k=32, in_spatial=(1, 1), filter=(1, 1), pad=(0, 0))  # one pixel
    for p, target in ((_conv_in("NCHW"), SM90), (pointwise, SM90), (squeeze, SM90),
                      (_conv_in(), Target("sm80", 108))):
        assert solver.is_applicable(p, target) and not solver.claims_first(p, target)
    assert handle.solutions(_conv_in("NCHW"))[0].solver != NAME
    # Under the TF32 math the TF32 implicit GEMM does not give way to it.
    assert ranks_first(get_solver("ConvTritonImplicitGemmTf32Bwd"), _conv_in(), SM90)
    assert not ranks_first(get_solver("ConvTritonImplicitGemmTf32x3Bwd"), _conv_in(), SM90)


def test_lead_in_launch_and_objects() -> None:
    solver = get_solver(NAME)
    fewk = get_solver("ConvTritonFmaFewKFwd")
    p = _conv_in()
    params = solver.default_params(p, SM90)
    assert params == (64, 4, 32, 1, 1, 4, 1)  # the forward's 4-filter tile
    assert not solver.params_valid(p, SM90, (256, 2, 16, 1, 1, 4, 1))  # 2 < 4 channels
    (flip_job, flip), = solver.lead_ins(p, params, SM90)
    assert flip.kernel_name == flip_job.kernel_name == "flip_filters"
    assert flip.grid == (-(-320 * 4 * 9 // 256), 1, 1)
    assert flip.pointer_args()[:2] == ["w", "ws_w"]
    launch = solver.launch(p, params)
    assert launch.kernel_name == "conv2d_direct_fma_fewk"
    assert launch.pointer_args()[:3] == ["dy", "ws_w", "dx"]
    assert launch.workspace_bytes == solver.workspace_for(p, params) == 320 * 4 * 9 * 4
    assert solver.workspace_slots(p, params) == {"ws_w": 0}
    args = launch.scalars()
    assert (args["C"], args["K"], args["H"], args["P"], args["pad_h"]) == (320, 4, 64, 64, 1)
    assert launch.grid == (32 * 64 * 64 // 64, 1, 1)
    # The forward's own object: the same job as the few-filter forward of the forward problem.
    forward = ConvProblem(n=32, c=320, k=4, in_spatial=(64, 64), filter=(3, 3), pad=(1, 1),
                          in_type="FP32", in_layout="NHWC", wei_layout="NHWC",
                          out_layout="NHWC")
    assert solver.compile_job(p, params, SM90) == fewk.compile_job(forward, params, SM90)
    for name in ("sm90-132", "gfx942-304", "gfx1100-48"):
        target = Target.parse(name)
        with scoped_env("MIOPENKERNELS_TRITON", "1"):
            jobs = solver.dynamic_jobs(target)
            shipped = set(all_dynamic_jobs(target))
        assert len(jobs) == 7 and set(jobs) <= shipped, name
        assert set(launch_jobs(solver, p, solver.default_params(p, target), target)) <= shipped


def test_strided_layers_run_a_launch_a_phase_of_dx() -> None:
    """ResNet-50's stem (3 -> 64, 7x7 at stride 2, padding 3, 224 x 224) at batch 32: four
    phases of dx's rows and columns, each the forward kernel at stride 1 on every second
    flipped tap, into every second row and column of dx from its own offset."""
    solver = get_solver(NAME)
    for layout in ("NCHW", "NHWC"):
        p = _conv_in(layout, c=3, k=64, in_spatial=(224, 224), filter=(7, 7), pad=(3, 3),
                     stride=(2, 2))
        assert solver.is_applicable(p, SM90)
        assert not solver.claims_first(p, SM90)  # offered to find until measured
        params = solver.default_params(p, SM90)
        main = solver.launch(p, params)
        ups = solver.follow_ups(p, params, SM90)
        launches = [main, *(launch for _, launch in ups)]
        assert len(launches) == 4
        assert {job for job, _ in ups} == {solver.compile_job(p, params, SM90)}
        assert main.workspace_bytes == 64 * 3 * 49 * 4
        assert all(launch.workspace_bytes == 0 for launch in launches[1:])
        cl = layout == "NHWC"
        row, col = (224 * 3, 3) if cl else (224, 1)  # dx's element strides
        flip_r, flip_s = (7 * 64, 64) if cl else (7, 1)  # the flipped filters'
        # Phase (a, b): rows a, a+2, ... take taps r = (a + 3) % 2 + 2j: 3 or 4 of them.
        expect = {(0, 0): (3, 3, 1, 1), (0, 1): (3, 4, 1, 0), (1, 0): (4, 3, 0, 1),
                  (1, 1): (4, 4, 0, 0)}
        slots = solver.workspace_slots(p, params)
        for launch, (a, b) in zip(launches, sorted(expect), strict=True):
            taps_h, taps_w, first_h, first_w = expect[(a, b)]
            z = launch.scalars()
            assert (z["R"], z["S"], z["P"], z["Q"], z["H"], z["W"]) == \
                (taps_h, taps_w, 112, 112, 112, 112)
            assert (z["stride_h"], z["stride_w"]) == (1, 1)
            assert (z["syh"], z["syw"]) == (2 * row, 2 * col)
            assert (z["swr"], z["sws"]) == (2 * flip_r, 2 * flip_s)
            dy, filters, dx = launch.pointer_args()[:3]
            assert dy == "dy"
            offset = (a * row + b * col) * 4
            assert dx == (f"dx@{offset}" if offset else "dx")
            assert slots[filters] == (first_h * flip_r + first_w * flip_s) * 4
            # Its padding reaches dy's row of the phase's last tap for dx's first row.
            assert z["pad_h"] == taps_h - 1 - (a + 3 - (a + 3) % 2) // 2
        assert sum(launch.grid[0] for launch in launches) == 4 * 32 * 112 * 112 // params[0]
        # The miss ranking sees every phase's blocks.
        assert solver.ranking_geometry(p, params)[0] == sum(launch.grid[0] for launch in launches)


# ----------------------------------------------------------------------------- few filters
def _conv_out(layout: str = "NHWC", **kw: object) -> ConvProblem:
    """The SD 1.5 UNet's conv_out (320 -> 4, 3x3 at 64x64) at batch 32, backward data."""
    return _conv_in(layout, **{"c": 320, "k": 4, **kw})


def test_few_filter_backward_data_runs_the_stem_kernel_on_flipped_filters() -> None:
    solver = get_solver("ConvTritonFmaBwd")
    stem = get_solver("ConvTritonFmaFwd")
    handle = Handle(target="sm90-132")
    vae = _conv_out(c=128, k=3, in_spatial=(512, 512))
    for layout in ("NCHW", "NHWC"):
        for p in (_conv_out(layout), replace(vae, in_layout=layout, wei_layout=layout,
                                             out_layout=layout)):
            assert solver.is_applicable(p, SM90) and solver.claims_first(p, SM90)
            assert handle.solutions(p)[0].solver == "ConvTritonFmaBwd", p.key()
    for kw in ({"k": 5}, {"stride": (4, 4)}, {"groups": 2, "k": 4, "c": 320},
               {"direction": "W"}):
        assert not solver.is_applicable(_conv_out(**kw), SM90), kw
    pointwise = _conv_out(filter=(1, 1), pad=(0, 0))
    assert solver.is_applicable(pointwise, SM90) and not solver.claims_first(pointwise, SM90)
    assert not solver.claims_first(_conv_out(), Target("sm80", 108))
    # Where the GEMM library claims (DCGAN's 4x4 head over its whole 4x4 input), it ranks first.
    head = _conv_out(c=512, k=1, in_spatial=(4, 4), filter=(4, 4), pad=(0, 0))
    assert solver.claims_first(head, SM90)
    saved = blas_1x1._offered[0]
    blas_1x1._offered[0] = True
    try:
        library = next(s for s in blas_1x1.BLAS_SOLVERS if s.name == "ConvBlasGemm1x1Bwd")
        assert ranks_first(library, head, SM90) and not ranks_first(solver, head, SM90)
    finally:
        blas_1x1._offered[0] = saved
    # The forward problem is the UNet's conv_in (4 -> 320), on the stem kernel's own object.
    p = _conv_out()
    params = solver.default_params(p, SM90)
    forward = ConvProblem(n=32, c=4, k=320, in_spatial=(64, 64), filter=(3, 3), pad=(1, 1),
                          in_type="FP32", in_layout="NHWC", wei_layout="NHWC",
                          out_layout="NHWC")
    assert params == stem.default_params(forward, SM90)
    assert solver.compile_job(p, params, SM90) == stem.compile_job(forward, params, SM90)
    launch = solver.launch(p, params)
    assert launch.kernel_name == "conv2d_direct_fma"
    assert launch.pointer_args()[:3] == ["dy", "ws_w", "dx"]
    assert launch.grid == stem.launch(forward, params).grid
    args = launch.scalars()
    assert (args["C"], args["K"], args["swk"], args["swc"]) == (4, 320, 3 * 3 * 4, 1)
    (_, flip), = solver.lead_ins(p, params, SM90)
    assert flip.kernel_name == "flip_filters"
    with scoped_env("MIOPENKERNELS_TRITON", "1"):
        shipped = set(all_dynamic_jobs(SM90))
    assert set(launch_jobs(solver, p, params, SM90)) <= shipped

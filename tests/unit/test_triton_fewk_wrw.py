"""The few-filter backward weights on the FP32 units (solvers/triton_fma_wrw.py,
ConvTritonFmaFewKWrw): which problems it takes, where immediate mode puts it first, its
tiles, splits, launches, follow-ups and objects. Its launches against float64 are in
tests/integration/test_conv_triton_fma.py (Triton's interpreter)."""

from __future__ import annotations

import math
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
    ranks_first,
)
from miopenkernels.solvers.triton_conv import ConvTritonImplicitGemm
from miopenkernels.solvers.triton_fma_wrw import ConvTritonFmaFewKWrw
from miopenkernels.target import Target

spec = pytest.importorskip("miopenkernels.kernels.conv_triton_fewk_wrw_spec")

SM90 = Target("sm90", 132)
NAME = "ConvTritonFmaFewKWrw"


def _head(layout: str = "NHWC", data_type: str = "FP32", **kw: object) -> ConvProblem:
    """The SD 1.5 UNet's conv_out (320 -> 4, 3x3 at 64x64) at batch 32, backward weights."""
    p = ConvProblem(n=32, c=320, k=4, in_spatial=(64, 64), filter=(3, 3), pad=(1, 1),
                    in_type=data_type, wei_type=data_type, out_type=data_type,
                    in_layout=layout, wei_layout=layout, out_layout=layout, direction="W")
    return replace(p, **kw) if kw else p


def _vae(layout: str = "NHWC") -> ConvProblem:
    """The SD 1.5 VAE decoder's conv_out (128 -> 3, 3x3 at 512x512)."""
    return _head(layout, c=128, k=3, in_spatial=(512, 512))


def test_it_takes_fp32_backward_weights_of_one_to_eight_filters() -> None:
    solver = get_solver(NAME)
    for layout in ("NCHW", "NHWC"):
        assert solver.is_applicable(_head(layout), SM90)
        assert solver.is_applicable(_head(layout, k=8, c=37, filter=(5, 5), pad=(2, 2),
                                          stride=(2, 2), dilation=(1, 2)), SM90)
        assert solver.is_applicable(_head(layout, k=1, filter=(1, 1), pad=(0, 0)), SM90)
    for kw in ({"k": 9}, {"direction": "F"}, {"direction": "B"}, {"groups": 4, "k": 8},
               {"mode": "trans"}, {"in_type": "FP16", "wei_type": "FP16", "out_type": "FP16"}):
        assert not solver.is_applicable(_head(**kw), SM90), kw
    assert not solver.is_applicable(ConvProblem(n=2, c=16, k=4, in_spatial=(4, 8, 8),
                                                filter=(3, 3, 3), in_type="FP32",
                                                direction="W"), SM90)
    assert not solver.is_applicable(_head(n=32 * 512), SM90)  # past 32-bit offsets
    for name in ("gfx900-56", "gfx906-60"):
        old = Target.parse(name)
        with scoped_env("MIOPENKERNELS_TRITON", "1"):
            assert solver.dynamic_jobs(old) == [] and not solver.is_applicable(_head(), old)


def test_immediate_mode_puts_it_first_channels_last_on_sm90() -> None:
    handle = Handle(target="sm90-132")
    for p in (_head(), _vae(), _head(c=512, k=8)):
        assert handle.solutions(p)[0].solver == NAME, p.key()
    solver = get_solver(NAME)
    tf32x3 = get_solver("ConvTritonImplicitGemmTf32x3Wrw")
    assert ranks_first(solver, _head(), SM90) and not ranks_first(tf32x3, _head(), SM90)
    # The implicit GEMM, its padded and Via solvers give way where it claims.
    assert ConvTritonFmaFewKWrw in YIELDS_TO[ConvTritonImplicitGemm]
    # Not channel-planar, not 1x1 layers (GEMMs), not on kinds it was not measured on, not
    # under the TF32 math: offered to find there.
    for p, target in ((_head("NCHW"), SM90), (_vae("NCHW"), SM90),
                      (_head(c=64, k=2, in_spatial=(256, 256), filter=(1, 1), pad=(0, 0)), SM90),
                      (_head(), Target("sm80", 108))):
        assert solver.is_applicable(p, target) and not solver.claims_first(p, target)
        assert handle.solutions(p)[0].solver != NAME or target != SM90, p.key()
    tf32 = Handle(target="sm90-132", math_mode="tf32")
    assert tf32.solutions(_head())[0].solver.startswith("ConvTritonImplicitGemmTf32")
    # Where the GEMM library claims (a filter that covers the input: DCGAN's 4x4 head, 0.41 of
    # cuDNN on it), it gives way to the library.
    head = _head(c=512, k=1, in_spatial=(4, 4), filter=(4, 4), pad=(0, 0))
    assert solver.claims_first(head, SM90) and ranks_first(solver, head, SM90)
    saved = blas_1x1._offered[0]
    blas_1x1._offered[0] = True
    try:
        library = next(s for s in blas_1x1.BLAS_SOLVERS if s.name == "ConvBlasGemm1x1Wrw")
        assert library.is_applicable(head, SM90) and ranks_first(library, head, SM90)
        assert not ranks_first(solver, head, SM90)
    finally:
        blas_1x1._offered[0] = saved


def test_tiles_and_splits() -> None:
    solver = get_solver(NAME)
    head = _head()
    params = solver.default_params(head, SM90)
    # The 4-filter channels-last tile; 9 taps x 5 channel blocks = 45 programs, doubled to 16
    # parts while within 8 programs an SM.
    assert params == (32, 4, 64, 1, 16, 4, 1)
    assert solver.default_params(_head(k=2), SM90)[:3] == (64, 2, 32)
    assert solver.default_params(_head(k=7), SM90)[:3] == (16, 8, 64)
    # Planar layers take more positions over fewer channels.
    assert solver.default_params(_head("NCHW"), SM90)[:3] == (128, 4, 16)
    assert solver.default_params(_head("NCHW", k=7), SM90)[:3] == (64, 8, 16)
    assert solver.default_params(_vae(), SM90)[4] == 32  # 18 programs: 32 parts
    tiny = _head(n=1, in_spatial=(8, 8))  # 64 positions: one step, one part
    assert solver.default_params(tiny, SM90)[4] == 1
    assert solver.defaults_rule(head, SM90)
    assert solver.params_valid(head, SM90, params)
    assert not solver.params_valid(head, SM90, (64, 2, 32, 1, 8, 4, 1))  # 2 < 4 filters
    assert not solver.params_valid(head, SM90, (128, 8, 64, 1, 8, 4, 1))  # 512 sums a lane
    assert not solver.params_valid(head, SM90, (64, 4, 32, 1, 65, 4, 1))  # past 64 parts
    space = solver.param_space(head, SM90)
    assert space[0] == params and space[1] == (32, 4, 64, 1, 32, 4, 1)
    assert all(q[1] == 4 and solver.params_valid(head, SM90, q) for q in space)
    gfx = Target.parse("gfx942-304")
    assert solver.default_params(head, gfx)[5] == 8
    assert all(spec.sums_per_lane(dict(zip(("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M",
                                            "SPLIT_K", "num_warps", "num_stages"), q,
                                           strict=True)), "cdna") <= 32
               for q in solver.param_space(head, gfx))


def test_launch_workspace_and_reduce() -> None:
    solver = get_solver(NAME)
    head = _head()
    params = solver.default_params(head, SM90)
    launch = solver.launch(head, params)
    assert launch.grid == (9 * 5, 16, 1) and launch.block == (128, 1, 1)
    assert launch.workspace_bytes == 16 * 4 * 320 * 9 * 4
    assert launch.pointer_args()[:4] == ["x", "dw", "dy", "workspace"]
    args = launch.scalars()
    assert (args["sxc"], args["swc"], args["syk"], args["K"], args["C"]) == (1, 1, 1, 4, 320)
    (job, reduce), = solver.follow_ups(head, params, SM90)
    assert reduce.kernel_name == job.kernel_name == "conv2d_bwd_weight_reduce"
    values = reduce.scalars()
    assert (values["TOTAL"], values["SPLIT_K"], values["C"], values["R"]) == (4 * 320 * 9, 16,
                                                                            320, 3)
    assert reduce.pointer_args()[:2] == ["workspace", "dw"]
    one = params[:4] + (1,) + params[5:]
    assert solver.follow_ups(head, one, SM90) == ()
    assert solver.launch(head, one).workspace_bytes == 0
    # One object serves every split; the layouts take their own form.
    assert solver.compile_job(head, one, SM90) == solver.compile_job(head, params, SM90)
    assert "-DCHANNELS_LAST=1" in solver.compile_job(head, params, SM90).options
    assert "-DCHANNELS_LAST=0" in solver.compile_job(_head("NCHW"), params, SM90).options


def test_every_package_ships_its_objects() -> None:
    solver = get_solver(NAME)
    for name in ("sm90-132", "gfx942-304", "gfx1100-48"):
        target = Target.parse(name)
        with scoped_env("MIOPENKERNELS_TRITON", "1"):
            jobs = solver.dynamic_jobs(target)
            shipped = set(all_dynamic_jobs(target))
        kernels = [j for j in jobs if j.kernel_name == spec.KERNEL["W"]]
        assert len(kernels) == 6 and set(jobs) <= shipped, name
        p = _head()
        params = solver.default_params(p, target)
        assert solver.compile_job(p, params, target) in kernels
        assert all(job in shipped for job, _ in solver.follow_ups(p, params, target))


def test_partials_stay_within_32_bits() -> None:
    z = {"K": 8, "C": 2**20, "R": 7, "S": 7}
    assert not spec.partials_fit(z, 64) and spec.partials_fit({**z, "C": 512}, 64)
    wide = _head(k=8, c=2**17, in_spatial=(8, 8), filter=(7, 7), pad=(3, 3), n=1)
    assert not get_solver(NAME).is_applicable(wide, SM90)
    assert math.prod((8, 512, 3, 3)) * spec.SPLIT_RULE["most"] * 4 < 10 * 2**20


# ----------------------------------------------------------------------------- few channels
FEWC = "ConvTritonFmaFewCWrw"
fewc_spec = pytest.importorskip("miopenkernels.kernels.conv_triton_fewc_wrw_spec")


def _stem(layout: str = "NHWC", **kw: object) -> ConvProblem:
    """MobileNet-v2's stem (3 -> 32, 3x3 stride 2 at 224x224) at batch 32, backward weights."""
    p = ConvProblem(n=32, c=3, k=32, in_spatial=(224, 224), filter=(3, 3), pad=(1, 1),
                    stride=(2, 2), in_type="FP32", in_layout=layout, wei_layout=layout,
                    out_layout=layout, direction="W")
    return replace(p, **kw) if kw else p


def test_few_channel_backward_weights_take_stems() -> None:
    solver = get_solver(FEWC)
    for layout in ("NCHW", "NHWC"):
        assert solver.is_applicable(_stem(layout), SM90)
        assert solver.is_applicable(_stem(layout, c=4, k=320, stride=(1, 1)), SM90)
        assert solver.is_applicable(_stem(layout, k=96, filter=(7, 7), pad=(3, 3)), SM90)
    for kw in ({"c": 5}, {"direction": "F"}, {"direction": "B"}, {"groups": 3, "k": 33},
               {"mode": "trans"}, {"in_type": "FP16", "wei_type": "FP16", "out_type": "FP16"}):
        assert not solver.is_applicable(_stem(**kw), SM90), kw
    handle = Handle(target="sm90-132")
    # Stems of 2-16 taps and at most 32 filters, both forms: first, ahead of the few-channel
    # kernels and the implicit GEMM.
    for p in (_stem(), _stem("NCHW"), _stem(k=16), _stem("NCHW", k=24),
              _stem(k=32, filter=(4, 4), stride=(4, 4), pad=(0, 0))):
        assert handle.solutions(p)[0].solver == FEWC, p.key()
    # Not 7x7 stems, not 1x1 layers (a squeeze layer's 4 -> 96 of one pixel), not more than
    # 32 filters (ConvNeXt's 4x4 stem of 96, the UNet's conv_in of 320), not other kinds.
    squeeze = _stem(c=4, k=96, in_spatial=(1, 1), filter=(1, 1), pad=(0, 0), stride=(1, 1))
    for p, target in ((_stem(k=32, filter=(7, 7), pad=(3, 3)), SM90), (squeeze, SM90),
                      (_stem(k=96, filter=(4, 4), stride=(4, 4), pad=(0, 0)), SM90),
                      (_stem(c=4, k=320, in_spatial=(64, 64), stride=(1, 1)), SM90),
                      (_stem(k=33), SM90), (_stem(), Target("sm80", 108))):
        assert solver.is_applicable(p, target) and not solver.claims_first(p, target)
        assert handle.solutions(p)[0].solver != FEWC or target != SM90, p.key()


def test_few_channel_tiles_splits_and_launch() -> None:
    solver = get_solver(FEWC)
    stem = _stem()
    params = solver.default_params(stem, SM90)
    # 32 filters over the 27 columns: one program, the positions in 512 parts (4 waves).
    assert params == (8, 32, 32, 1, 512, 4, 1)
    assert solver.launch(stem, params).grid == (1, 512, 1)
    assert solver.default_params(_stem(k=16), SM90)[:3] == (16, 16, 32)
    # Planar stems of 16 and 32 filters: 16 columns at twice the positions.
    assert solver.default_params(_stem("NCHW", k=16), SM90)[:3] == (32, 16, 16)
    assert solver.default_params(_stem("NCHW"), SM90)[:3] == (16, 32, 16)
    assert solver.default_params(_stem("NCHW", k=96), SM90)[:3] == (8, 64, 16)
    assert solver.default_params(_stem("NCHW", k=16), Target.parse("gfx942-304"))[:3] == \
        solver.default_params(_stem(k=16), Target.parse("gfx942-304"))[:3]
    wide = _stem(k=96, filter=(7, 7), pad=(3, 3))  # two filter blocks x 10 column blocks
    wide_params = solver.default_params(wide, SM90)
    assert wide_params[:3] == (8, 64, 16)
    assert solver.launch(wide, wide_params).grid[0] == 2 * 10
    assert solver.workspace_for(wide, wide_params) <= fewc_spec.WORKSPACE_MOST
    gfx = Target.parse("gfx942-304")
    assert solver.default_params(wide, gfx)[:3] == (16, 64, 8)
    (job, reduce), = solver.follow_ups(stem, params, SM90)
    assert reduce.scalars()["TOTAL"] == 32 * 27 and reduce.scalars()["SPLIT_K"] == 512
    one = params[:4] + (1,) + params[5:]
    assert solver.follow_ups(stem, one, SM90) == ()
    assert solver.compile_job(stem, one, SM90) == solver.compile_job(stem, params, SM90)
    assert solver.compile_job(stem, params, SM90).kernel_name == "conv2d_wrw_fma_fewc"
    for name in ("sm90-132", "gfx942-304", "gfx1100-48"):
        target = Target.parse(name)
        with scoped_env("MIOPENKERNELS_TRITON", "1"):
            jobs = solver.dynamic_jobs(target)
            shipped = set(all_dynamic_jobs(target))
        assert len([j for j in jobs if j.kernel_name == "conv2d_wrw_fma_fewc"]) == 6
        assert set(jobs) <= shipped, name

"""The grouped direct solvers (FP32, 2-8 channels and filters a group), grouped problems on the
implicit GEMM and its packed kernels (16-bit, fewer than 16 a group): applicability,
precedence in the miss ranking, objects and launches."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from miopenkernels.problem import ConvProblem
from miopenkernels.ranking import load_model, rank_candidates
from miopenkernels.solvers import SOLVERS, all_dynamic_jobs, get_solver, launch_jobs, ranks_first
from miopenkernels.target import Target

pytest.importorskip("miopenkernels.kernels.conv_triton_grouped_spec")

SM90 = Target("sm90", 132)
SUFFIX = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}


def _p(c: int, k: int, groups: int, hw: int = 28, f: int = 3, stride: int = 1,
       direction: str = "F", data_type: str = "FP16", layout: str = "NHWC", n: int = 32
       ) -> ConvProblem:
    return ConvProblem(n=n, c=c, k=k, groups=groups, in_spatial=(hw, hw), filter=(f, f),
                       pad=(f // 2, f // 2), stride=(stride, stride), dilation=(1, 1),
                       direction=direction, in_type=data_type, wei_type=data_type,
                       out_type=data_type, in_layout=layout, wei_layout=layout,
                       out_layout=layout)


# ResNeXt-50 32x4d's first stage (4 a group), RegNetX's group width 8, a channel multiplier of
# 2 (one channel, two filters a group), 2 channels to 8 filters a group.
TAKEN = [(128, 128, 32), (64, 64, 8), (32, 64, 32), (16, 64, 8)]
# Depthwise (its own family), 16 and 9 a group (the implicit GEMM), no groups.
NOT_TAKEN = [(64, 64, 64), (256, 256, 16), (72, 72, 8), (64, 64, 1), (64, 128, 4)]


def test_applies_to_few_channels_a_group_on_matrix_core_targets() -> None:
    for (c, k, g), d, t, layout in itertools.product(TAKEN, "FBW", ("FP16", "BF16", "FP32"),
                                                     ("NCHW", "NHWC")):
        p = _p(c, k, g, direction=d, data_type=t, layout=layout)
        direct = get_solver("ConvTritonGrouped" + SUFFIX[d]).is_applicable(p, SM90)
        gemm = get_solver("ConvTritonImplicitGemm" + SUFFIX[d]).is_applicable(p, SM90)
        # FP32: the direct kernels; 16-bit: the implicit GEMM's packed kernels.
        assert (direct, gemm) == ((True, False) if t == "FP32" else (False, True)), p.key()
    p = _p(128, 128, 32, data_type="FP32")
    for target in ("gfx90a-104", "gfx942-304", "sm80-108", "gfx1100-48"):
        assert get_solver("ConvTritonGroupedFwd").is_applicable(p, Target.parse(target))
    for target in ("gfx906-60", "gfx1030-40"):  # no matrix cores: the portable kernels
        assert not get_solver("ConvTritonGroupedFwd").is_applicable(p, Target.parse(target))


def test_refuses_what_is_not_a_few_channels_a_group() -> None:
    fwd = get_solver("ConvTritonGroupedFwd")
    for c, k, g in NOT_TAKEN:
        assert not fwd.is_applicable(_p(c, k, g), SM90), (c, k, g)
    base = _p(128, 128, 32)
    assert not fwd.is_applicable(replace(base, filter=(9, 9), pad=(4, 4)), SM90)
    assert not fwd.is_applicable(replace(base, stride=(3, 3)), SM90)
    assert not fwd.is_applicable(replace(base, mode="trans"), SM90)
    assert not fwd.is_applicable(replace(base, in_type="INT8", wei_type="INT8",
                                         out_type="INT8"), SM90)
    assert not get_solver("ConvTritonGroupedBwd").is_applicable(base, SM90)  # direction


def test_grouped_problems_rank_the_direct_family_first_and_wide_groups_the_gemm() -> None:
    model = load_model()

    def first(p: ConvProblem) -> str:
        solvers = [s for s in SOLVERS if s.is_applicable(p, SM90) and s.math != "tf32"]
        return rank_candidates(p, SM90, solvers, lambda s, q: True, model=model)[0].solver.name

    for (c, k, g), d, t, layout in itertools.product(TAKEN[:2], "FBW", ("FP16", "FP32"),
                                                     ("NCHW", "NHWC")):
        p = _p(c, k, g, direction=d, data_type=t, layout=layout, n=8)
        family = "ConvTritonGrouped" if t == "FP32" else "ConvTritonImplicitGemm"
        if t == "FP16" and d == "W" and layout == "NCHW":  # VIA_NHWC_PACKED: through NHWC
            family = "ConvTritonImplicitGemmViaNhwc"
        assert first(p) == family + SUFFIX[d], p.key()
        for solver in SOLVERS:
            if solver.is_applicable(p, SM90) and solver.name != family + SUFFIX[d]:
                assert not ranks_first(solver, p, SM90), (solver.name, p.key())
    # 16 or more a group: the implicit GEMM (its Via solvers where they claim the case) in
    # every direction, FP32 included; the portable kernels never first.
    for d, t in itertools.product("FBW", ("FP16", "FP32")):
        p = _p(512, 512, 32, hw=14, direction=d, data_type=t, layout="NHWC")
        gemm = get_solver("ConvTritonImplicitGemm" + SUFFIX[d])
        assert gemm.is_applicable(p, SM90) and gemm.claims_first(p, SM90), p.key()
        assert first(p).startswith("ConvTritonImplicitGemm"), (p.key(), first(p))


def test_the_package_ships_every_object_a_grouped_call_runs() -> None:
    shipped = set(all_dynamic_jobs(SM90))
    own = [j for j in shipped if j.kernel_name.startswith("grouped_conv")]
    # FP32 alone. F and B: 2 layouts; W: also 2 width classes; no alignment variants.
    assert len(own) == 2 + 2 + 4
    assert not any(any(o.startswith("--assume=") for o in j.options) for j in own)
    packed = [j for j in shipped if j.kernel_name.endswith("_packed")]
    # FP16 and BF16; NCHW generic, NHWC generic and aligned; W also its split object.
    assert len(packed) == 2 * 3 + 2 * 3 + 2 * 3 * 2
    for (c, k, g), d, f, st, layout, t in itertools.product(
            TAKEN, "FBW", (3, 5, 7), (1, 2), ("NCHW", "NHWC"), ("FP16", "BF16", "FP32")):
        p = _p(c, k, g, hw=14, f=f, stride=st, direction=d, data_type=t, layout=layout)
        family = "ConvTritonGrouped" if t == "FP32" else "ConvTritonImplicitGemm"
        solver = get_solver(family + SUFFIX[d])
        params = solver.default_params(p, SM90)
        missing = [j.kernel_name for j in launch_jobs(solver, p, params, SM90)
                   if j not in shipped]
        assert not missing, (p.key(), params, missing)


def test_the_forward_keeps_its_own_tiles_when_the_depthwise_ones_change() -> None:
    """The depthwise forward's tiles were measured on depthwise layers alone: the grouped
    forward keeps the tiles it had (16x64 NHWC, 128x8 NCHW, four warps)."""
    fwd = get_solver("ConvTritonGroupedFwd")
    for layout, tile in (("NHWC", (16, 64)), ("NCHW", (128, 8))):
        p = _p(32, 32, 8, layout=layout, data_type="FP32")
        params = fwd.default_params(p, SM90)
        assert (params[0], params[1], params[5]) == (*tile, 4), layout


def test_launch_arguments_name_the_group_layout() -> None:
    p = _p(128, 64, 16, hw=10, direction="B", layout="NCHW", data_type="FP32")  # dx 128, dy 64
    solver = get_solver("ConvTritonGroupedBwd")
    args = {a.name: a.value for a in solver.launch(p, solver.default_params(p, SM90)).args}
    # Weights (64, 8, 3, 3): a channel d of group g reads filters g*4 + m at channel d % 8.
    assert (args["C"], args["SPG"], args["DPG"]) == (128, 4, 8)
    assert (args["swg"], args["swd"], args["swj"]) == (4 * 72, 9, 72)
    w = replace(p, direction="W")
    wrw = get_solver("ConvTritonGroupedWrw")
    params = wrw.default_params(w, SM90)
    launch = wrw.launch(w, params)
    values = {a.name: a.value for a in launch.args}
    assert (values["C"], values["CPG"], values["KPG"]) == (64 * 8, 8, 4)
    if params[4] > 1:  # split: the reduce kernel sums one partial per weight
        (_, step), = wrw.follow_ups(w, params, SM90)
        reduce = {a.name: a.value for a in step.args}
        assert (reduce["TOTAL"], reduce["C"]) == (64 * 8 * 9, 8)
    assert launch.workspace_bytes == (params[4] * 64 * 8 * 9 * 4 if params[4] > 1 else 0)


def test_memory_bound_kernels_are_not_asked_for_matrix_instructions() -> None:
    from miopenkernels.solvers.triton_common import no_matrix_kernels

    free = no_matrix_kernels()
    assert {"grouped_conv", "grouped_conv_wrw", "depthwise_conv", "depthwise_conv_wrw",
            "conv2d_bwd_weight_reduce", "transpose_021"} <= free
    # Every other kernel of a matrix-core package is a GEMM: its object must use the cores.
    assert not any(k.startswith(("conv2d_fwd", "conv2d_bwd_data", "winograd_wrw_gemm"))
                   for k in free)

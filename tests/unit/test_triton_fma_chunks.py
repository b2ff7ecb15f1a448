"""The FP32-unit kernels' batch-chunk solvers (solvers/triton_fma_chunks.py): they take the
layers past the kernels' 32-bit offsets (ESRGAN's 64 -> 3 output at 2048x2048 from batch 8
on), rank first where the inner solver claims the first chunk, and run only the inner
solvers' shipped objects. Their launches against float64 are in
tests/integration/test_conv_triton_fma.py (Triton's interpreter, the limit lowered)."""

from __future__ import annotations

from dataclasses import replace

from miopenkernels.config import scoped_env
from miopenkernels.handle import Handle
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import YIELDS_TO, all_dynamic_jobs, get_solver, launch_jobs
from miopenkernels.solvers.triton_chunks import ConvTritonImplicitGemmChunks
from miopenkernels.solvers.triton_fma_chunks import (
    ConvTritonFmaChunksBwd,
    ConvTritonFmaFewKBwdChunks,
    ConvTritonFmaFewKChunks,
    ConvTritonFmaFewKWrwChunks,
)
from miopenkernels.target import Target

SM90 = Target("sm90", 132)


def _conv_last(n: int, direction: str, layout: str = "NHWC") -> ConvProblem:
    """ESRGAN's conv_last (64 -> 3, 3x3 at 2048x2048), FP32."""
    return ConvProblem(n=n, c=64, k=3, in_spatial=(2048, 2048), filter=(3, 3), pad=(1, 1),
                       in_type="FP32", in_layout=layout, wei_layout=layout, out_layout=layout,
                       direction=direction)


def test_they_take_the_layers_past_32_bit_offsets_channels_last() -> None:
    handle = Handle(target="sm90-132")
    for direction, name, inner in (("F", "ConvTritonFmaFewKChunksFwd", "ConvTritonFmaFewKFwd"),
                                   ("W", "ConvTritonFmaFewKChunksWrw", "ConvTritonFmaFewKWrw")):
        solver = get_solver(name)
        assert handle.solutions(_conv_last(1, direction))[0].solver == inner
        assert not solver.is_applicable(_conv_last(1, direction), SM90)  # it fits: no chunks
        for n, chunks in ((8, (4, 2, True)), (32, (7, 5, True))):
            p = _conv_last(n, direction)
            assert solver._chunking(p) == chunks
            assert handle.solutions(p)[0].solver == name, p.key()
            assert handle.solutions(_conv_last(n, direction, "NCHW"))[0].solver != name
    assert {ConvTritonFmaFewKChunks, ConvTritonFmaFewKWrwChunks} <= \
        set(YIELDS_TO[ConvTritonImplicitGemmChunks])


def test_backward_data_chunks_take_it_in_both_layouts() -> None:
    """dx of 2**31 elements from batch 8 on: the few-channel forward's backward data
    (ConvTritonFmaBwd, 3 filters) a chunk at a time, first in both layouts as its inner
    solver is at batch 1; the flipped filters written once, every chunk's launch reading dy
    and writing dx from its first image on."""
    handle = Handle(target="sm90-132")
    solver = get_solver("ConvTritonFmaChunksBwd")
    for layout in ("NCHW", "NHWC"):
        assert handle.solutions(_conv_last(1, "B", layout))[0].solver == "ConvTritonFmaBwd"
        assert not solver.is_applicable(_conv_last(1, "B", layout), SM90)
        for n, chunks in ((8, (4, 2, True)), (32, (7, 5, True))):
            p = _conv_last(n, "B", layout)
            assert solver._chunking(p) == chunks
            assert handle.solutions(p)[0].solver == "ConvTritonFmaChunksBwd", p.key()
    p = _conv_last(8, "B")
    params = solver.default_params(p, SM90)
    (_, flip), = solver.lead_ins(p, params, SM90)
    assert flip.pointer_args()[:2] == ["w", "ws_w"]
    main = solver.launch(p, params)
    (_, second), = solver.follow_ups(p, params, SM90)
    assert main.pointer_args()[:3] == ["dy", "ws_w", "dx"]
    assert second.pointer_args()[:3] == ["dy@" + str(4 * 3 * 2048 * 2048 * 4), "ws_w",
                                         "dx@" + str(4 * 64 * 2048 * 2048 * 4)]
    assert {ConvTritonFmaChunksBwd, ConvTritonFmaFewKBwdChunks} <= \
        set(YIELDS_TO[ConvTritonImplicitGemmChunks])


def test_strided_phases_move_with_their_chunk() -> None:
    """At stride 2 a backward data's phases write dx from offsets of their own ("dx@4"); a
    later chunk's launch of each phase moves on from there."""
    from miopenkernels.solvers.base import split_offset

    solver = get_solver("ConvTritonFmaChunksBwd")
    p = replace(_conv_last(8, "B"), stride=(2, 2))
    params = solver.default_params(p, SM90)
    inner = get_solver("ConvTritonFmaBwd")
    first = solver._relaid(p)
    phases = [inner.launch(first, params), *(s for _, s in inner.follow_ups(first, params,
                                                                            SM90))]
    assert len(phases) == 4 and split_offset(phases[3].pointer_args()[2])[1] > 0
    steps = [solver.launch(p, params), *(s for _, s in solver.follow_ups(p, params, SM90))]
    assert len(steps) == 2 * 4
    image = 64 * 2048 * 2048 * 4 * solver._chunking(p)[0]
    for phase, later in zip(phases, steps[4:], strict=True):
        tensor, at = split_offset(phase.pointer_args()[2])
        assert tensor == "dx" and later.pointer_args()[2] == f"dx@{at + image}"


def test_backward_weights_chunks_reduce_once_over_every_part() -> None:
    solver = get_solver("ConvTritonFmaFewKChunksWrw")
    p = _conv_last(8, "W")
    params = solver.default_params(p, SM90)
    split = params[4]
    assert split >= 2
    steps = solver.follow_ups(p, params, SM90)
    kernels = [s.kernel_name for _, s in steps]
    assert kernels == ["conv2d_wrw_fma_fewk", "conv2d_bwd_weight_reduce"]
    reduce = steps[-1][1].scalars()
    assert reduce["SPLIT_K"] == 2 * split and reduce["TOTAL"] == 3 * 64 * 9
    main = solver.launch(p, params)
    assert main.workspace_bytes == 2 * split * 3 * 64 * 9 * 4
    assert solver.workspace_slots(p, params) == {"ws_c0": 0, "ws_c1": split * 3 * 64 * 9 * 4}
    # The second chunk's launch reads x and dy from its first image on, writes its own part.
    second = steps[0][1]
    assert second.pointer_args()[:4] == ["x@" + str(4 * 64 * 2048 * 2048 * 4), "dw",
                                         "dy@" + str(4 * 3 * 2048 * 2048 * 4), "ws_c1"]


def test_they_run_only_shipped_objects() -> None:
    with scoped_env("MIOPENKERNELS_TRITON", "1"):
        shipped = set(all_dynamic_jobs(SM90))
    for name, direction in (("ConvTritonFmaFewKChunksFwd", "F"),
                            ("ConvTritonFmaFewKChunksWrw", "W"), ("ConvTritonFmaChunksBwd", "B")):
        solver = get_solver(name)
        assert solver.dynamic_jobs(SM90) == []
        for n in (8, 32):
            p = _conv_last(n, direction)
            assert set(launch_jobs(solver, p, solver.default_params(p, SM90), SM90)) <= shipped


def test_16_bit_odd_channels_past_32_bit_offsets_take_the_padded_chunks() -> None:
    """ESRGAN's 64 -> 3 output in FP16 and BF16 NHWC at batch 8 and 32, forward and backward
    weights: the padded solvers' chunk solvers (the padded solver took it at batch 1), on the
    default package's objects alone (its dynamic set and its manifests' candidates)."""
    from miopenkernels.builder.jobs import build_jobs
    from miopenkernels.builder.manifest import load_manifests

    handle = Handle(target="sm90-132")
    with scoped_env("MIOPENKERNELS_TRITON", "1"):
        shipped = set(build_jobs([SM90], load_manifests())[SM90])
    for data_type in ("FP16", "BF16"):
        for direction, suffix in (("F", "Fwd"), ("W", "Wrw")):
            one = replace(_conv_last(1, direction), in_type=data_type, wei_type=data_type,
                          out_type=data_type)
            assert handle.solutions(one)[0].solver == f"ConvTritonImplicitGemmPadded{suffix}"
            for n in (8, 32):
                p = replace(one, n=n)
                first = handle.solutions(p)[0]
                assert first.solver == f"ConvTritonImplicitGemmPaddedChunks{suffix}", p.key()
                solver = get_solver(first.solver)
                assert set(launch_jobs(solver, p, first.params, SM90)) <= shipped
                planar = replace(p, in_layout="NCHW", wei_layout="NCHW", out_layout="NCHW")
                assert handle.solutions(planar)[0].solver != first.solver


def test_every_solver_answers_every_zoo_problem() -> None:
    """No solver's applicability raises on a zoo problem (grouped, depthwise, 3-D included):
    one that did would leave the problem without a solution. FP16 and FP32, every direction
    and layout, batch 32."""
    import sys
    from pathlib import Path

    from miopenkernels.solvers import SOLVERS

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from _zoo_layers import layer_problem, load_layers

    handle = Handle(target="sm90-132")
    problems = [p for layer in load_layers(held_out=True) for t in ("FP16", "FP32")
                for d in "FBW" for lay in ("NCHW", "NHWC")
                if (p := layer_problem(layer, t, d, lay, 32)) is not None]
    assert len(problems) > 1000
    for p in problems:
        for solver in SOLVERS:
            assert solver.is_applicable(p, SM90) in (True, False), (solver.name, p.key())
        assert handle.solutions(p), p.key()

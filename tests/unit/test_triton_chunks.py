"""The batch-chunk solvers: layers with a tensor of 2**31 elements or more, a chunk of images at
a time, their pointers a chunk's bytes into the caller's tensors."""

from __future__ import annotations

from dataclasses import replace

import pytest
from miopenkernels.errors import ProblemError
from miopenkernels.handle import Handle
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import applicable_solvers, get_solver, launch_jobs
from miopenkernels.solvers.base import KernelArg, split_offset
from miopenkernels.solvers.triton_chunks import LIMIT, chunking
from miopenkernels.target import Target

pytest.importorskip("miopenkernels.kernels.conv_triton_spec")

SM90 = Target("sm90", 132)
# ESRGAN's 64-channel 3x3 layer at 1024x1024, batch 32: x and y hold 2**31 elements each.
BIG = ConvProblem(n=32, c=64, k=64, in_spatial=(1024, 1024), filter=(3, 3), pad=(1, 1),
                  in_type="FP16", in_layout="NHWC", wei_layout="NHWC", out_layout="NHWC")
SUFFIX = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}


def _solver(direction: str):  # noqa: ANN202
    return get_solver(f"ConvTritonImplicitGemmChunks{SUFFIX[direction]}")


def test_chunks_are_even_aligned_and_below_the_limit() -> None:
    assert chunking(BIG) == (16, 2, True)
    assert chunking(replace(BIG, n=16)) is None  # fits: the other solvers' problem
    assert chunking(replace(BIG, n=100, c=3, k=128, in_spatial=(512, 512))) == (50, 2, True)
    # Odd sizes: no multiple of 128 images keeps offsets 256-byte aligned; plain chunks then.
    odd = replace(BIG, n=33, c=8, k=63, in_spatial=(1023, 1023))
    images, count, aligned = chunking(odd)
    assert (count, aligned) == (2, False) and images * 63 * 1023 * 1023 < LIMIT
    assert chunking(replace(BIG, k=2**20, c=2**11)) is None  # the weights do not fit
    for p in (BIG, odd):
        images, count, _ = chunking(p)
        assert (count - 1) * images < p.n <= count * images


@pytest.mark.parametrize("direction", "FBW")
def test_only_the_chunk_solver_takes_a_layer_past_32_bit_offsets(direction: str) -> None:
    p = replace(BIG, direction=direction)
    assert [s.name for s in applicable_solvers(p, SM90)] == [_solver(direction).name]
    assert Handle(target="sm90-132").solutions(p)[0].solver == _solver(direction).name
    assert not _solver(direction).is_applicable(replace(p, n=16), SM90)
    assert not _solver(direction).is_applicable(replace(p, direction="F" if direction != "F"
                                                        else "B"), SM90)


@pytest.mark.parametrize("direction", "FB")
def test_forward_and_backward_data_run_each_chunk_from_its_first_image(direction: str) -> None:
    s = _solver(direction)
    p = replace(BIG, direction=direction)
    params = s.default_params(p, SM90)
    main = s.launch(p, params)
    kinds = {a.name: a.kind for a in main.args}
    x, y = ("x", "y") if direction == "F" else ("dx", "dy")
    assert kinds["x_ptr"] == f"ptr:{x}" and kinds["y_ptr"] == f"ptr:{y}"
    assert {a.name: a.value for a in main.args}["N"] == 16
    (_, second), = [step for step in s.follow_ups(p, params, SM90)
                    if step[1].kernel_name != "conv2d_bwd_weight_reduce"]
    kinds = {a.name: a.kind for a in second.args}
    offset = 16 * 64 * 1024 * 1024 * 2  # 16 images of 64 x 1024 x 1024 FP16 values
    assert kinds["x_ptr"] == f"ptr:{x}@{offset}" and kinds["y_ptr"] == f"ptr:{y}@{offset}"
    assert kinds["w_ptr"] == "ptr:w"
    assert s.workspace_slots(p, params) == {}


def test_backward_weights_sums_every_chunks_parts_in_one_reduce() -> None:
    s = _solver("W")
    p = replace(BIG, direction="W")
    params = s.default_params(p, SM90)
    split = int(params[4])
    assert split >= 2
    assert s._inner_params(params[:4] + (1,) + params[5:])[4] == 2  # a split is forced
    slots = s.workspace_slots(p, params)
    assert list(slots) == ["ws_c0", "ws_c1"] and slots["ws_c1"] == s.workspace_for(p, params) // 2
    main = {a.name: a.kind for a in s.launch(p, params).args}
    assert main["ws_ptr"] == "ptr:ws_c0" and main["w_ptr"] == "ptr:dw"
    (_, second), (job, reduce) = s.follow_ups(p, params, SM90)
    assert {a.name: a.kind for a in second.args}["ws_ptr"] == "ptr:ws_c1"
    args = {a.name: (a.kind, a.value) for a in reduce.args}
    assert job.kernel_name == "conv2d_bwd_weight_reduce"
    assert args["ws_ptr"] == ("ptr:ws_c0", None) and args["w_ptr"] == ("ptr:dw", None)
    assert args["SPLIT_K"] == ("i32", 2 * split)
    assert len(launch_jobs(s, p, params, SM90)) == 3  # one conv object, both reduce objects


def test_unaligned_chunks_take_the_objects_that_assume_nothing() -> None:
    s = _solver("F")
    odd = replace(BIG, n=33, c=8, k=63, in_spatial=(1023, 1023))
    params = s.default_params(odd, SM90)
    assert not any(o.startswith("--assume") for o in s.compile_job(odd, params, SM90).options)
    aligned = s.compile_job(BIG, s.default_params(BIG, SM90), SM90)
    assert any(o.startswith("--assume") for o in aligned.options)


def test_misaligned_pointers_take_unaligned_objects_for_every_chunk() -> None:
    """The invoker's fallback for pointers that miss the aligned object's assumption runs
    every chunk, not only the first, on the object that assumes nothing."""
    def assumes(steps: tuple, kernel: str) -> list[bool]:
        return [any(o.startswith("--assume") for o in job.options) for job, _ in steps
                if job.kernel_name == kernel]

    for direction in "FBW":
        s = _solver(direction)
        params = s.default_params(BIG, SM90)
        kernel = s.compile_job(BIG, params, SM90).kernel_name
        aligned = assumes(s.follow_ups(BIG, params, SM90), kernel)
        unaligned = assumes(s.unaligned_follow_ups(BIG, params, SM90), kernel)
        assert aligned and all(aligned) and unaligned and not any(unaligned), direction
        assert [step for _, step in s.follow_ups(BIG, params, SM90)] == \
            [step for _, step in s.unaligned_follow_ups(BIG, params, SM90)]


def test_a_pointer_may_name_a_part_of_a_tensor() -> None:
    assert split_offset("x") == ("x", 0) and split_offset("dy@4096") == ("dy", 4096)
    assert KernelArg("x_ptr", "ptr:x@4096").tensor == "x@4096"
    assert KernelArg("ws_ptr", "ptr:ws_c12").tensor == "ws_c12"
    for bad in ("ptr:x@", "ptr:x@-1", "ptr:X", "ptr:x@4k"):
        with pytest.raises((ValueError, ProblemError)):
            KernelArg("x_ptr", bad)


def test_a_transposed_layer_chunks_its_plain_convolutions_tensors() -> None:
    # A 2x2/2 up-convolution, 64 channels, 512x512 -> 1024x1024 at batch 32 (y: 2**31
    # elements): its plain convolution's backward data reads the layer's y as dy and writes
    # its x as dx.
    p = replace(BIG, in_spatial=(512, 512), filter=(2, 2), stride=(2, 2), pad=(0, 0),
                mode="trans")
    assert chunking(p) == (16, 2, True)
    assert [s.name for s in applicable_solvers(p, SM90)] == [_solver("B").name]
    s = _solver("B")
    params = s.default_params(p, SM90)
    steps = [step for _, step in s.follow_ups(p, params, SM90)
             if step.kernel_name != "conv2d_bwd_weight_reduce"]
    assert len(steps) == 1
    kinds = {a.name: a.kind for a in steps[0].args}
    assert kinds["x_ptr"] == f"ptr:y@{16 * 64 * 1024 * 1024 * 2}"
    assert kinds["y_ptr"] == f"ptr:x@{16 * 64 * 512 * 512 * 2}"
    assert [s.name for s in applicable_solvers(replace(p, direction="W"), SM90)] == \
        [_solver("W").name]

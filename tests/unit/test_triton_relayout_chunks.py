"""The batch-chunk solvers over the Via solvers: 2-D NCHW layers past 32-bit offsets through the
NHWC kernels, each chunk's activations transposed into the workspace, the NHWC object run on
the copies and the output transposed back at the chunk's first image."""

from __future__ import annotations

from dataclasses import replace

import pytest
from miopenkernels.handle import Handle
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import (
    FIRST_CLAIMS,
    SOLVERS,
    YIELDS_TO,
    all_dynamic_jobs,
    applicable_solvers,
    get_solver,
    launch_jobs,
    ranks_first,
)
from miopenkernels.solvers.triton_chunks import ConvTritonImplicitGemmChunks, chunking
from miopenkernels.solvers.triton_relayout_chunks import ConvTritonImplicitGemmRelayoutChunks
from miopenkernels.target import Target

pytest.importorskip("miopenkernels.kernels.conv_triton_spec")

SM90 = Target("sm90", 132)
SUFFIX = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}


def _p(c: int = 256, k: int = 256, size: int = 512, direction: str = "F",
       layout: str = "NCHW", n: int = 32, data_type: str = "FP16") -> ConvProblem:
    """SD 1.5's VAE decoder's 256-channel 3x3 layer at 512x512, batch 32 (x and y: 2**31
    elements each)."""
    return ConvProblem(n=n, c=c, k=k, in_spatial=(size, size), filter=(3, 3), pad=(1, 1),
                       direction=direction, in_type=data_type, wei_type=data_type,
                       out_type=data_type, in_layout=layout, wei_layout=layout,
                       out_layout=layout)


def _args(launch) -> dict:  # noqa: ANN001
    return {a.name: (a.kind, a.value) for a in launch.args}


def _ptrs(launch) -> dict:  # noqa: ANN001
    return {a.name: a.kind for a in launch.args if a.name.endswith("_ptr")}


def test_registered_per_direction_and_ranked_as_the_implicit_gemm() -> None:
    names = [s.name for s in SOLVERS if isinstance(s, ConvTritonImplicitGemmRelayoutChunks)]
    assert names == [f"ConvTritonImplicitGemmViaNhwcChunks{SUFFIX[d]}" for d in "FBW"]
    for name in names:
        s = get_solver(name)
        assert s.ranking_name == f"ConvTritonImplicitGemm{name[-3:]}" and \
            s.dynamic_jobs(SM90) == []
        assert s.inner.name == name.replace("Chunks", "")


@pytest.mark.parametrize("direction", "FBW")
def test_nchw_takes_them_first_and_nhwc_the_plain_chunks(direction: str) -> None:
    via = get_solver(f"ConvTritonImplicitGemmViaNhwcChunks{SUFFIX[direction]}")
    plain = get_solver(f"ConvTritonImplicitGemmChunks{SUFFIX[direction]}")
    p = _p(direction=direction)
    assert [s.name for s in applicable_solvers(p, SM90)] == [plain.name, via.name]
    assert ranks_first(via, p, SM90) and not ranks_first(plain, p, SM90)
    assert FIRST_CLAIMS[ConvTritonImplicitGemmRelayoutChunks](p, SM90, "ieee")
    assert ConvTritonImplicitGemmRelayoutChunks in YIELDS_TO[ConvTritonImplicitGemmChunks]
    assert Handle(target="sm90-132").solutions(p)[0].solver == via.name
    nhwc = _p(direction=direction, layout="NHWC")
    assert not via.is_applicable(nhwc, SM90) and ranks_first(plain, nhwc, SM90)
    assert not via.is_applicable(_p(direction=direction, n=16), SM90)  # fits: no chunks


@pytest.mark.parametrize("direction", "FB")
def test_each_chunk_copies_its_images_in_and_its_output_back(direction: str) -> None:
    s = get_solver(f"ConvTritonImplicitGemmViaNhwcChunks{SUFFIX[direction]}")
    p = _p(direction=direction)
    assert s._chunking(p) == (16, 2, True) == chunking(p)
    params = s.default_params(p, SM90)
    x, y = ("x", "y") if direction == "F" else ("dx", "dy")
    read, write = (x, y) if direction == "F" else (y, x)
    steps = [*s.lead_ins(p, params, SM90), (s.compile_job(p, params, SM90), s.launch(p, params)),
             *s.follow_ups(p, params, SM90)]
    kernels = [launch.kernel_name for _, launch in steps]
    conv = "conv2d_fwd" if direction == "F" else "conv2d_bwd_data"
    # Chunk 0: its images and the weights transposed in, the conv, the output back; chunk 1:
    # its images alone (the weights' copy stands), the conv, the output back.
    assert kernels == ["transpose_021", "transpose_021", conv, "transpose_021",
                       "transpose_021", conv, "transpose_021"]
    offset = 16 * 256 * 512 * 512 * 2  # 16 images of 256 x 512 x 512 FP16 values
    # The lead-ins in the kernel's tensor order (x, w, y): forward x then w, backward data w
    # then dy.
    ins = [_ptrs(steps[i][1])["src_ptr"] for i in (0, 1)]
    assert ins == ([f"ptr:{read}", "ptr:w"] if direction == "F" else ["ptr:w", f"ptr:{read}"])
    assert _args(steps[ins.index(f"ptr:{read}")][1])["B"] == ("i32", 16)
    assert _ptrs(steps[4][1])["src_ptr"] == f"ptr:{read}@{offset}"
    assert _ptrs(steps[3][1])["dst_ptr"] == f"ptr:{write}"
    assert _ptrs(steps[6][1])["dst_ptr"] == f"ptr:{write}@{offset}"
    for index in (2, 5):  # the conv reads and writes the workspace's copies alone
        assert set(_ptrs(steps[index][1]).values()) <= {"ptr:ws_x", "ptr:ws_w", "ptr:ws_y",
                                                         "ptr:ws_part"}
    first_chunk = replace(p, n=16)
    assert s.workspace_for(p, params) == s.inner.workspace_for(first_chunk, params)
    assert all(job == s.inner.compile_job(first_chunk, params, SM90) for job, launch in steps
               if launch.kernel_name == conv)
    assert "--assume=" in " ".join(steps[2][0].options)


def test_backward_weights_sums_every_chunks_parts_into_dw() -> None:
    s = get_solver("ConvTritonImplicitGemmViaNhwcChunksWrw")
    p = _p(direction="W")
    params = s.default_params(p, SM90)
    split = int(params[4])
    assert split >= 2
    slots = s.workspace_slots(p, params)
    per = split * 256 * 256 * 9 * 4
    assert list(slots) == ["ws_x", "ws_y", "ws_c0", "ws_c1"]
    assert slots["ws_c1"] == slots["ws_c0"] + per == s.workspace_for(p, params) - per
    steps = [launch for _, launch in (*s.lead_ins(p, params, SM90),
                                      (None, s.launch(p, params)), *s.follow_ups(p, params, SM90))]
    assert [launch.kernel_name for launch in steps] == [
        "transpose_021", "transpose_021", "conv2d_bwd_weight",
        "transpose_021", "transpose_021", "conv2d_bwd_weight", "conv2d_bwd_weight_reduce"]
    assert _ptrs(steps[2])["ws_ptr"] == "ptr:ws_c0" and _ptrs(steps[5])["ws_ptr"] == "ptr:ws_c1"
    offset = 16 * 256 * 512 * 512 * 2
    assert _ptrs(steps[3])["src_ptr"] == f"ptr:x@{offset}"
    assert _ptrs(steps[4])["src_ptr"] == f"ptr:dy@{offset}"
    reduce = _args(steps[6])
    # The Via solver's reduce on the first chunk (the caller's dw and its KCRS strides: no
    # copy back), over every chunk's parts.
    assert reduce["ws_ptr"] == ("ptr:ws_c0", None) and reduce["w_ptr"] == ("ptr:dw", None)
    assert reduce["SPLIT_K"] == ("i32", 2 * split)
    (_, own), = s.inner.follow_ups(replace(p, n=16), params, SM90)
    assert {k: v for k, v in _args(own).items() if k not in ("ws_ptr", "SPLIT_K")} == \
        {k: v for k, v in reduce.items() if k not in ("ws_ptr", "SPLIT_K")}


@pytest.mark.parametrize("direction", "FBW")
def test_every_object_is_one_a_package_ships(direction: str) -> None:
    shipped = set(all_dynamic_jobs(SM90))
    s = get_solver(f"ConvTritonImplicitGemmViaNhwcChunks{SUFFIX[direction]}")
    for c, k, size, t in ((256, 256, 512, "FP16"), (256, 128, 512, "BF16"),
                          (64, 64, 1024, "FP16"), (128, 256, 512, "FP16")):
        p = _p(c, k, size, direction=direction, data_type=t)
        assert s.is_applicable(p, SM90), p.key()
        assert set(launch_jobs(s, p, s.default_params(p, SM90), SM90)) <= shipped, p.key()
    assert isinstance(get_solver(f"ConvTritonImplicitGemmChunks{SUFFIX[direction]}"),
                      ConvTritonImplicitGemmChunks)

"""The batch-chunk solvers over the 3-D relaid solvers: 3D U-Net's layers past 32-bit offsets
in NCDHW (through NDHWC) and with odd channel counts in NDHWC (padded to 16), each chunk's
operands copied into the workspace, the aligned object run on the copies and the output copied
back at the chunk's first image."""

from __future__ import annotations

from dataclasses import replace

import pytest
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import (
    FIRST_CLAIMS,
    SOLVERS,
    YIELDS_TO,
    applicable_solvers,
    get_solver,
    launch_jobs,
    ranks_first,
)
from miopenkernels.solvers.triton_3d_chunks import ConvTriton3dChunks, ConvTriton3dRelaidChunks
from miopenkernels.solvers.triton_chunks import LIMIT, chunking
from miopenkernels.target import Target

pytest.importorskip("miopenkernels.kernels.conv_triton_3d_spec")

SM90 = Target("sm90", 132)
SUFFIX = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}


def _p(c: int = 384, k: int = 128, size: int = 64, direction: str = "F",
       layout: str = "NCDHW", n: int = 33, **kw: object) -> ConvProblem:
    """3D U-Net's 384 -> 128 layer at 64^3 (x: 2**31 elements from 22 images), 3x3x3."""
    p = ConvProblem(n=n, c=c, k=k, in_spatial=(size,) * 3, filter=(3, 3, 3), pad=(1, 1, 1),
                    direction=direction, in_type="FP16", in_layout=layout, wei_layout=layout,
                    out_layout=layout)
    return replace(p, **kw) if kw else p


def _args(launch) -> dict:  # noqa: ANN001
    return {a.name: (a.kind, a.value) for a in launch.args}


def _ptrs(launch) -> dict:  # noqa: ANN001
    return {a.name: a.kind for a in launch.args if a.name.endswith("_ptr")}


def test_registered_per_direction_and_layout_and_ranked_as_the_3d_implicit_gemm() -> None:
    names = [s.name for s in SOLVERS if isinstance(s, ConvTriton3dRelaidChunks)]
    assert names == [f"ConvTriton3d{infix}Chunks{SUFFIX[d]}" for infix in ("ViaNdhwc", "Padded")
                     for d in "FBW"]
    for name in names:
        s = get_solver(name)
        assert s.ranking_name == f"ConvTriton3d{name[-3:]}" and s.dynamic_jobs(SM90) == []
        assert s.inner.name == name.replace("Chunks", "")


@pytest.mark.parametrize("direction", "FB")
def test_each_chunk_copies_its_images_in_and_its_output_back(direction: str) -> None:
    s = get_solver(f"ConvTriton3dViaNdhwcChunks{SUFFIX[direction]}")
    p = _p(direction=direction)
    assert s._chunking(p) == (17, 2, True)
    params = s.default_params(p, SM90)
    x, y = ("x", "y") if direction == "F" else ("dx", "dy")
    read, write = (x, y) if direction == "F" else (y, x)
    steps = [*s.lead_ins(p, params, SM90), (s.compile_job(p, params, SM90), s.launch(p, params)),
             *s.follow_ups(p, params, SM90)]
    kernels = [launch.kernel_name for _, launch in steps]
    conv = f"conv3d_{'fwd' if direction == 'F' else 'bwd_data'}"
    # Chunk 0: its images and the weights transposed in, the conv, the output back; chunk 1:
    # its images alone (the weights' copy stands), the conv, the output back.
    assert kernels == ["transpose_021", "transpose_021", conv, "transpose_021",
                       "transpose_021", conv, "transpose_021"]
    per = {"x": 384 * 64**3 * 2, "y": 128 * 64**3 * 2}
    tensor = {x: "x", y: "y"}
    first, second = steps[0][1], steps[4][1]
    assert _ptrs(first)["src_ptr"] == f"ptr:{read}" and _args(first)["B"] == ("i32", 17)
    assert _ptrs(second)["src_ptr"] == f"ptr:{read}@{17 * per[tensor[read]]}"
    assert _args(second)["B"] == ("i32", 16)
    assert _ptrs(steps[1][1])["src_ptr"] == "ptr:w"
    assert _ptrs(steps[3][1])["dst_ptr"] == f"ptr:{write}"
    assert _ptrs(steps[6][1])["dst_ptr"] == f"ptr:{write}@{17 * per[tensor[write]]}"
    for index in (2, 5):  # the conv reads and writes the workspace's copies alone
        assert set(_ptrs(steps[index][1]).values()) == {"ptr:ws_x", "ptr:ws_w", "ptr:ws_y",
                                                        "ptr:ws_part"}
    assert _args(steps[5][1])["N"] == ("i32", 16)
    # The relaid solver's parts, reused by every chunk; the aligned object throughout.
    inner = s.inner
    first_chunk = replace(p, n=17)
    assert s.workspace_slots(p, params) == inner.workspace_slots(first_chunk, params)
    assert s.workspace_for(p, params) == inner.workspace_for(first_chunk, params)
    assert all(job == inner.compile_job(first_chunk, params, SM90) for job, launch in steps
               if launch.kernel_name == conv)
    assert "--assume=" in " ".join(steps[2][0].options)


def test_backward_weights_sums_every_chunks_parts_then_copies_dw_back() -> None:
    s = get_solver("ConvTriton3dViaNdhwcChunksWrw")
    p = _p(direction="W")
    params = s.default_params(p, SM90)
    split = int(params[4])
    assert split >= 2
    first = replace(p, n=17)
    own = s.inner.workspace_slots(first, params)
    slots = s.workspace_slots(p, params)
    # The copies' parts as the relaid solver lays them out, then each chunk's partials.
    per = split * 128 * 384 * 27 * 4
    at = own["ws_part"]
    assert {k: v for k, v in slots.items() if not k.startswith("ws_c")} == \
        {k: v for k, v in own.items() if k != "ws_part"}
    assert slots["ws_c0"] == at and slots["ws_c1"] == at + per and at % 256 == 0
    assert s.workspace_for(p, params) == at + 2 * per
    steps = [launch for _, launch in (*s.lead_ins(p, params, SM90),
                                      (None, s.launch(p, params)), *s.follow_ups(p, params, SM90))]
    assert [launch.kernel_name for launch in steps] == [
        "transpose_021", "transpose_021", "conv3d_bwd_weight",
        "transpose_021", "transpose_021", "conv3d_bwd_weight",
        "conv2d_bwd_weight_reduce", "transpose_021"]
    assert _ptrs(steps[2])["ws_ptr"] == "ptr:ws_c0" and _ptrs(steps[5])["ws_ptr"] == "ptr:ws_c1"
    assert _ptrs(steps[3])["src_ptr"] == f"ptr:x@{17 * 384 * 64**3 * 2}"
    assert _ptrs(steps[4])["src_ptr"] == f"ptr:dy@{17 * 128 * 64**3 * 2}"
    reduce = _args(steps[6])
    assert reduce["ws_ptr"] == ("ptr:ws_c0", None) and reduce["w_ptr"] == ("ptr:ws_w", None)
    assert reduce["SPLIT_K"] == ("i32", 2 * split)
    assert _ptrs(steps[7]) == {"src_ptr": "ptr:ws_w", "dst_ptr": "ptr:dw"}


def test_chunks_are_sized_by_the_padded_copies_where_those_are_widest() -> None:
    # One channel padded to 16, 8 filters, 128^3 NDHWC: x's copy (16 x 2**21 an image) is
    # twice y: 63 images fit, three even chunks; by the caller's tensors alone, two of 64.
    p = _p(1, 8, 128, layout="NDHWC", n=128)
    s = get_solver("ConvTriton3dPaddedChunksFwd")
    images, count, aligned = s._chunking(p)
    assert images * 16 * 128**3 < LIMIT and (images, count, aligned) == (43, 3, True)
    assert chunking(p) == (64, 2, True)
    first = s._relaid(p)
    assert first.n == images and s.inner.is_applicable(first, SM90)
    # Chunk offsets of no 256-byte step: aligned all the same where the conv reads copies alone
    # (NCDHW: both activations are transposed), not where it reads the caller's y.
    odd = _p(16, 3, 511, layout="NCDHW", n=2, filter=(1, 1, 1), pad=(0, 0, 0))
    via = get_solver("ConvTriton3dViaNdhwcChunksFwd")
    assert via._chunking(odd)[2] is False and via._chunks_aligned(odd)
    assert "--assume=" in " ".join(via.compile_job(odd, via.default_params(odd, SM90),
                                                   SM90).options)
    # 1 -> 32 channels at 301^3: two images a chunk, y's offsets 64 bytes a position apart.
    odd_ndhwc = _p(1, 32, 301, layout="NDHWC", n=3, filter=(1, 1, 1), pad=(0, 0, 0))
    assert s._chunking(odd_ndhwc) == (2, 2, False) and not s._chunks_aligned(odd_ndhwc)
    assert "--assume=" not in " ".join(
        s.compile_job(odd_ndhwc, s.default_params(odd_ndhwc, SM90), SM90).options)


def test_they_claim_where_the_relaid_solver_claims_the_first_chunk() -> None:
    assert YIELDS_TO[ConvTriton3dChunks][0] == ConvTriton3dRelaidChunks
    plain, via = get_solver("ConvTriton3dChunksFwd"), get_solver("ConvTriton3dViaNdhwcChunksFwd")
    many = _p()  # 384 -> 128, 3x3x3: many multiply-adds an element copied
    assert via.claims_first(many, SM90) == via.inner.claims_first(replace(many, n=17), SM90)
    assert ranks_first(via, many, SM90) and not ranks_first(plain, many, SM90)
    assert FIRST_CLAIMS[ConvTriton3dRelaidChunks](many, SM90, "ieee")
    # 1 channel, 32 filters: too few multiply-adds for the transposes (the relaid chunks still
    # apply, and find mode may time them); the few-channel solvers' chunks rank first, ahead
    # of the plain ones, which give way to them.
    few = _p(1, 32, 128)
    assert via.is_applicable(few, SM90) and not via.claims_first(few, SM90)
    assert not ranks_first(plain, few, SM90)
    names = [s.name for s in applicable_solvers(few, SM90)]
    assert names == ["ConvTriton3dChunksFwd", "ConvTriton3dViaNdhwcChunksFwd",
                     "ConvTriton3dSmallCChunksFwd"]
    assert [s.name for s in applicable_solvers(few, SM90) if ranks_first(s, few, SM90)] == \
        ["ConvTriton3dSmallCChunksFwd"]
    # No chunks below the limit, and FP32 takes the plain chunks alone.
    assert not via.is_applicable(_p(n=8), SM90)
    assert not via.is_applicable(replace(many, in_type="FP32", wei_type="FP32",
                                         out_type="FP32"), SM90)


@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
@pytest.mark.parametrize("direction", "FBW")
def test_every_object_is_one_the_3d_family_ships(layout: str, direction: str) -> None:
    shipped = {j for s in SOLVERS if s.name.startswith("ConvTriton3d")
               for j in s.dynamic_jobs(SM90)}
    infix = "ViaNdhwc" if layout == "NCDHW" else "Padded"
    s = get_solver(f"ConvTriton3d{infix}Chunks{SUFFIX[direction]}")
    for c, k, size in ((1, 32, 128), (384, 128, 64), (64, 3, 128)):
        p = _p(c, k, size, direction=direction, layout=layout, n=32)
        if not s.is_applicable(p, SM90):
            assert layout == "NDHWC" and c % 16 == 0 == k % 16, p.key()
            continue
        assert set(launch_jobs(s, p, s.default_params(p, SM90), SM90)) <= shipped, p.key()

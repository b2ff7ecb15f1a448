"""The 3-D batch-chunk solvers: 3-D layers with a tensor of 2**31 elements or more (3D U-Net at
batch 32), the 3-D implicit GEMM a chunk of images at a time, its pointers a chunk's bytes into
the caller's tensors."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from find_doubles import db_env, triton_compiler
from miopenkernels.backends import NullBackend
from miopenkernels.find import make_invoker
from miopenkernels.handle import Handle
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import (
    SOLVERS,
    applicable_solvers,
    get_solver,
    launch_jobs,
    triton_chunks,
)
from miopenkernels.solvers.triton_chunks import LIMIT, chunking
from miopenkernels.target import Target

spec = pytest.importorskip("miopenkernels.kernels.conv_triton_3d_spec")

SM90 = Target("sm90", 132)
SUFFIX = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}
ELEMENT = {"FP16": 2, "BF16": 2, "FP32": 4}


def _p(c: int = 1, k: int = 32, size: int = 128, direction: str = "F",
       data_type: str = "FP16", layout: str = "NDHWC", **kw: object) -> ConvProblem:
    """3D U-Net's 3x3x3 layers at batch 32: 1 -> 32 channels at 128^3 (y: 2**31 elements) by
    default, 384 -> 128 at 64^3 (x: 3.2e9) with c=384, k=128, size=64."""
    p = ConvProblem(n=32, c=c, k=k, in_spatial=(size,) * 3, filter=(3, 3, 3), pad=(1, 1, 1),
                    direction=direction, in_type=data_type, in_layout=layout,
                    wei_layout=layout, out_layout=layout)
    return replace(p, **kw) if kw else p


UNET = [(1, 32, 128), (384, 128, 64)]


def _solver(direction: str):  # noqa: ANN202
    return get_solver(f"ConvTriton3dChunks{SUFFIX[direction]}")


def _args(launch) -> dict:  # noqa: ANN001
    return {a.name: (a.kind, a.value) for a in launch.args}


def test_registered_one_per_direction_and_ranked_as_the_3d_implicit_gemm() -> None:
    names = [s.name for s in SOLVERS if s.name.startswith("ConvTriton3dChunks")]
    assert names == ["ConvTriton3dChunksFwd", "ConvTriton3dChunksBwd", "ConvTriton3dChunksWrw"]
    for d in "FBW":
        s = _solver(d)
        assert s.ranking_name == f"ConvTriton3d{SUFFIX[d]}" and s.directions == {d}
        assert s.algorithm(_p(direction=d)).endswith("AlgoImplicitGEMM")
        assert s.dynamic_jobs(SM90) == []  # the 3-D implicit GEMM's objects


def test_chunking_is_the_2d_one_over_three_axes() -> None:
    # y of the 1-channel layer holds 2**31 elements: two chunks of 16 images.
    assert chunking(_p()) == (16, 2, True)
    assert chunking(_p(384, 128, 64)) == (16, 2, True)
    assert chunking(_p(n=16)) is None and chunking(_p(384, 128, 64, n=10)) is None
    # 192 -> 64 at 128^3 (3D U-Net's last level): 5 images a chunk, 7 chunks.
    images, count, aligned = chunking(_p(192, 64))
    assert (images, count, aligned) == (5, 7, True) and images * 192 * 128**3 < LIMIT
    # Odd sizes: no multiple of the step fits, the chunks take the generic objects.
    images, count, aligned = chunking(_p(16, 16, 511, n=2, filter=(1, 1, 1), pad=(0, 0, 0)))
    assert (images, count, aligned) == (1, 2, False)


@pytest.mark.parametrize(("layer", "layout", "data_type", "direction"),
                         list(itertools.product(UNET, ("NCDHW", "NDHWC"), ("FP16", "BF16", "FP32"),
                                                "FBW")))
def test_only_the_chunk_solvers_take_unet3d_past_32_bit_offsets(
        layer: tuple[int, int, int], layout: str, data_type: str, direction: str) -> None:
    p = _p(*layer, direction=direction, data_type=data_type, layout=layout)
    # The relaid ones' chunks too where the relaid solver takes the layer: FP16/BF16, NCDHW
    # (through NDHWC) or channels off 16 (the 1-channel input, padded).
    relaid = data_type != "FP32" and (layout == "NCDHW" or layer[0] % 16 != 0)
    infix = "ViaNdhwc" if layout == "NCDHW" else "Padded"
    # And the few-channel solvers' chunks on the 1-channel input, every direction.
    smallc = layer[0] <= 4
    want = [_solver(direction).name] + \
        ([f"ConvTriton3d{infix}Chunks{SUFFIX[direction]}"] if relaid else []) + \
        ([f"ConvTriton3dSmallCChunks{SUFFIX[direction]}"] if smallc else [])
    assert [s.name for s in applicable_solvers(p, SM90)] == want
    # At a batch whose tensors fit, the 3-D implicit GEMM takes it and these do not (but the
    # few-channel backward data's, whose taps' products at 8 images exceed one launch's
    # workspace).
    half = replace(p, n=8)
    names = [s.name for s in applicable_solvers(half, SM90)]
    chunked = ["ConvTriton3dSmallCChunksBwd"] if smallc and direction == "B" else []
    assert f"ConvTriton3d{SUFFIX[direction]}" in names
    assert [n for n in names if "Chunks" in n] == chunked
    s = _solver(direction)
    params = s.default_params(p, SM90)
    assert s.params_valid(p, SM90, params) and params in s.param_space(p, SM90)


def test_the_handle_ranks_it_and_the_backward_keys_reach_it() -> None:
    h = Handle(target="sm90-132")
    # The 1-channel input: the few-channel solvers' chunks in either layout and direction;
    # backward data of 384 channels: the plain chunks.
    assert h.solutions(_p())[0].solver == "ConvTriton3dSmallCChunksFwd"
    assert h.solutions(_p(layout="NCDHW"))[0].solver == "ConvTriton3dSmallCChunksFwd"
    assert h.solutions(_p(direction="B", layout="NCDHW"))[0].solver == \
        "ConvTriton3dSmallCChunksBwd"
    assert h.solutions(_p(384, 128, 64, layout="NCDHW"))[0].solver == \
        "ConvTriton3dViaNdhwcChunksFwd"
    back = _p(direction="B")
    assert back.key().startswith("32-128-128-128-3x3x3-1-")
    assert h.solutions(back)[0].solver == "ConvTriton3dSmallCChunksBwd"
    assert h.solutions(_p(direction="W", layout="NCDHW"))[0].solver == \
        "ConvTriton3dSmallCChunksWrw"
    assert h.solutions(_p(384, 128, 64, direction="B"))[0].solver == "ConvTriton3dChunksBwd"
    assert not _solver("F").is_applicable(_p(direction="B"), SM90)
    assert not _solver("F").is_applicable(_p(), Target("gfx906", 60))  # no matrix cores


@pytest.mark.parametrize("direction", "FB")
def test_forward_and_backward_data_run_each_chunk_from_its_first_image(direction: str) -> None:
    s = _solver(direction)
    p = _p(384, 128, 64, direction=direction, n=33)  # chunks of 17 and 16 images
    assert chunking(p) == (17, 2, True)
    params = s.default_params(p, SM90)
    x, y = ("x", "y") if direction == "F" else ("dx", "dy")
    main = _args(s.launch(p, params))
    assert main["x_ptr"][0] == f"ptr:{x}" and main["y_ptr"][0] == f"ptr:{y}"
    assert main["N"] == ("i32", 17) and main["w_ptr"][0] == "ptr:w"
    (job, second), = s.follow_ups(p, params, SM90)
    args = _args(second)
    assert args["N"] == ("i32", 16)
    x_bytes, y_bytes = 17 * 384 * 64**3 * 2, 17 * 128 * 64**3 * 2
    assert args["x_ptr"][0] == f"ptr:{x}@{x_bytes}" and args["y_ptr"][0] == f"ptr:{y}@{y_bytes}"
    assert args["w_ptr"][0] == "ptr:w" and x_bytes % 256 == 0 == y_bytes % 256
    # Every chunk runs the 3-D implicit GEMM's own (aligned channels-last) object.
    inner = get_solver(f"ConvTriton3d{SUFFIX[direction]}")
    chunk = replace(p, n=16)
    assert job == s.compile_job(p, params, SM90) == inner.compile_job(chunk, params, SM90)
    assert any(o.startswith("--assume") for o in job.options)
    assert second.grid == inner.launch(chunk, params).grid
    assert s.workspace_slots(p, params) == {} and s.workspace_for(p, params) == 0


@pytest.mark.parametrize(("layer", "layout"), list(itertools.product(UNET, ("NCDHW", "NDHWC"))))
def test_backward_weights_sums_every_chunks_parts_in_one_reduce(
        layer: tuple[int, int, int], layout: str) -> None:
    s = _solver("W")
    c, k, size = layer
    p = _p(*layer, direction="W", layout=layout)
    params = s.default_params(p, SM90)
    split = int(params[4])
    assert split >= 2
    assert s._inner_params(params[:4] + (1,) + params[5:])[4] == 2  # a split is forced
    # [parts][T*R*S][G*K][C] FP32 per chunk, the chunks' parts end to end.
    per = split * k * c * 27 * 4
    assert s.workspace_slots(p, params) == {"ws_c0": 0, "ws_c1": per}
    assert s.workspace_for(p, params) == 2 * per and per % 256 == 0
    main = s.launch(p, params)
    assert _args(main)["ws_ptr"] == ("ptr:ws_c0", None) and _args(main)["w_ptr"][0] == "ptr:dw"
    assert main.grid[2] == split and main.workspace_bytes == 2 * per
    (_, second), (job, reduce) = s.follow_ups(p, params, SM90)
    args = _args(second)
    assert args["ws_ptr"] == ("ptr:ws_c1", None) and second.grid[2] == split
    assert args["x_ptr"][0] == f"ptr:x@{16 * c * size**3 * 2}"
    assert args["y_ptr"][0] == f"ptr:dy@{16 * k * size**3 * 2}"
    # The 3-D implicit GEMM's own reduce, over both chunks' parts.
    inner = get_solver("ConvTriton3dWrw")
    (_, own), = inner.follow_ups(replace(p, n=16), params, SM90)
    assert {"ws_ptr", "SPLIT_K"} <= {a.name for a in own.args}
    args = _args(reduce)
    assert job.kernel_name == reduce.kernel_name == own.kernel_name == "conv2d_bwd_weight_reduce"
    assert args["ws_ptr"] == ("ptr:ws_c0", None) and args["w_ptr"] == ("ptr:dw", None)
    assert args["SPLIT_K"] == ("i32", 2 * split) and args["TOTAL"] == ("i32", k * c * 27)
    assert reduce.grid == own.grid
    assert len(launch_jobs(s, p, params, SM90)) == 2  # one conv object, one reduce


def test_unaligned_chunks_take_the_generic_objects() -> None:
    s, inner = _solver("F"), get_solver("ConvTriton3dFwd")
    odd = _p(16, 16, 511, n=2, filter=(1, 1, 1), pad=(0, 0, 0))  # 16 x 511^3 per image
    assert chunking(odd) == (1, 2, False)
    params = s.default_params(odd, SM90)
    chunk = replace(odd, n=1)
    # The chunk alone would take the aligned object; its second chunk's offset breaks that.
    assert any(o.startswith("--assume") for o in inner.compile_job(chunk, params, SM90).options)
    generic = inner.unaligned_job(chunk, params, SM90)
    assert s.compile_job(odd, params, SM90) == generic == s.unaligned_job(odd, params, SM90)
    (job, second), = s.follow_ups(odd, params, SM90)
    assert job == generic
    assert _args(second)["x_ptr"][0] == f"ptr:x@{16 * 511**3 * 2}"
    # NDHWC meeting the assumption on 256-byte chunk offsets takes the aligned one.
    aligned = _p(384, 128, 64)
    assert any(o.startswith("--assume") for o in
               s.compile_job(aligned, s.default_params(aligned, SM90), SM90).options)


def test_every_chunk_object_is_one_the_3d_family_ships() -> None:
    shipped = {j for s in SOLVERS if s.name.startswith("ConvTriton3d")
               for j in s.dynamic_jobs(SM90)}
    for layer, layout, data_type, d in itertools.product(
            UNET, ("NCDHW", "NDHWC"), ("FP16", "BF16", "FP32"), "FBW"):
        p = _p(*layer, direction=d, data_type=data_type, layout=layout)
        s = _solver(d)
        assert set(launch_jobs(s, p, s.default_params(p, SM90), SM90)) <= shipped, p.key()


def test_parameters_are_the_3d_implicit_gemms_on_the_first_chunk() -> None:
    s, inner = _solver("W"), get_solver("ConvTriton3dWrw")
    p = _p(384, 128, 64, direction="W")
    first = replace(p, n=16)
    default = s.default_params(p, SM90)
    own = inner.default_params(first, SM90)
    assert default == own[:4] + (max(own[4], 2),) + own[5:]  # split: 2 or more
    space = s.param_space(p, SM90)
    assert default in space and all(params[4] >= 2 for params in space)
    assert len(space) < len(inner.param_space(first, SM90))  # no SPLIT_K = 1 sets
    seeds = s.seed_params(p, SM90)
    assert default not in seeds and all(params[4] >= 2 for params in seeds)
    assert len(seeds) == len(set(seeds))
    assert s.defaults_rule(p, SM90)
    assert not s.params_valid(p, SM90, default[:3])
    assert s.heuristic_rank(p, SM90) == inner.heuristic_rank(first, SM90)
    grid, block = s.launch_geometry(p, default)
    assert grid[2] == default[4] and block == (default[5] * 32, 1, 1)
    fwd = _solver("F")
    assert fwd.default_params(_p(), SM90) == get_solver("ConvTriton3dFwd").default_params(
        replace(_p(), n=16), SM90)


def test_transposed_layers_chunk_the_plain_convolutions_tensors() -> None:
    # 3D U-Net's 2x2x2/2 up-convolution 128 -> 128 channels, 64^3 -> 128^3 at batch 32: its
    # plain convolution (backward data) reads the layer's y (2**33 elements) as its x.
    p = ConvProblem(n=32, c=128, k=128, in_spatial=(64,) * 3, filter=(2, 2, 2),
                    stride=(2, 2, 2), pad=(0, 0, 0), mode="trans", in_type="FP16",
                    in_layout="NDHWC", wei_layout="NDHWC", out_layout="NDHWC")
    assert [s.name for s in applicable_solvers(p, SM90)] == ["ConvTriton3dChunksBwd"]
    s = _solver("B")
    images, count, _ = chunking(p)
    assert (images, count) == (7, 5)
    params = s.default_params(p, SM90)
    steps = [s.launch(p, params), *(launch for _, launch in s.follow_ups(p, params, SM90))]
    assert len(steps) == count
    last = _args(steps[-1])
    assert last["N"] == ("i32", 32 - 4 * images)
    assert last["x_ptr"][0] == f"ptr:y@{4 * images * 128 * 128**3 * 2}"
    assert last["y_ptr"][0] == f"ptr:x@{4 * images * 128 * 64**3 * 2}"
    for d, name in (("B", "ConvTriton3dChunksFwd"), ("W", "ConvTriton3dChunksWrw")):
        assert [s.name for s in applicable_solvers(replace(p, direction=d), SM90)] == [name]


@pytest.fixture
def small_limit(monkeypatch):  # noqa: ANN001, ANN201
    """Chunks at 6,500 elements: a small problem's launches, with the null backend's small
    buffers."""
    monkeypatch.setattr(triton_chunks, "LIMIT", 6500)
    triton_chunks.chunking.cache_clear()
    yield
    triton_chunks.chunking.cache_clear()


@pytest.mark.usefixtures("small_limit")
def test_the_invoker_points_each_chunk_into_the_callers_tensors(monkeypatch, tmp_path
                                                                ) -> None:  # noqa: ANN001
    db_env(monkeypatch, tmp_path)
    p = ConvProblem(n=5, c=1, k=32, in_spatial=(4, 5, 5), filter=(3, 3, 3), pad=(1, 1, 1),
                    direction="W", in_type="FP32", in_layout="NCDHW")
    assert chunking(p) == (2, 3, False)
    backend = NullBackend(SM90)
    s = _solver("W")
    h = Handle(backend=backend, compiler=triton_compiler(), solvers=[s])
    params = s.default_params(p, SM90)
    params = params[:4] + (2,) + params[5:]
    inv = make_invoker(h, p, s, params=params)
    per = 2 * 32 * 27 * 4  # two parts of dw in FP32 a chunk
    assert inv.workspace_bytes == 3 * per
    bufs = {r: backend.alloc(64 * 1024) for r in ("x", "w", "y")}
    ptrs = {r: b.ptr for r, b in bufs.items()} | {"workspace": backend.alloc(3 * per).ptr}
    before = len(backend.recorded)
    inv(ptrs)
    launches = backend.recorded[before:]
    assert [r.kernel for r in launches] == ["conv3d_bwd_weight"] * 3 + \
        ["conv2d_bwd_weight_reduce"]
    for i, launch in enumerate(launches[:3]):
        x_ptr, w_ptr, y_ptr, ws_ptr = (v for _, v in launch.args[:4])
        assert x_ptr == ptrs["x"] + i * 2 * 100 * 4  # 2 images of 1 x 100 FP32 values
        assert y_ptr == ptrs["y"] + i * 2 * 32 * 100 * 4
        assert w_ptr == ptrs["w"] and ws_ptr == ptrs["workspace"] + i * per
        assert launch.grid[2] == 2
    reduce = launches[3]
    assert [v for _, v in reduce.args[:2]] == [ptrs["workspace"], ptrs["w"]]
    assert dict(zip(("TOTAL", "SPLIT_K"), (reduce.args[2][1], reduce.args[-3][1]),
                    strict=True)) == {"TOTAL": 32 * 27, "SPLIT_K": 6}


@pytest.mark.usefixtures("small_limit")
def test_the_unaligned_invoker_takes_the_unaligned_follow_ups(monkeypatch, tmp_path
                                                             ) -> None:  # noqa: ANN001
    """The invoker's fallback for misaligned pointers builds the later chunks' launches from
    `unaligned_follow_ups` (the aligned invoker from `follow_ups`)."""
    db_env(monkeypatch, tmp_path)
    p = ConvProblem(n=5, c=1, k=32, in_spatial=(4, 5, 5), filter=(3, 3, 3), pad=(1, 1, 1),
                    direction="F", in_type="FP32", in_layout="NCDHW")
    s = _solver("F")
    h = Handle(backend=NullBackend(SM90), compiler=triton_compiler(), solvers=[s])
    params = s.default_params(p, SM90)
    asked: list[str] = []
    for name in ("follow_ups", "unaligned_follow_ups"):
        real = getattr(s, name)
        monkeypatch.setattr(s, name, lambda *a, _real=real, _name=name: (
            asked.append(_name), _real(*a))[1])
    make_invoker(h, p, s, params=params)
    make_invoker(h, p, s, params=params, unaligned=True)
    assert asked == ["follow_ups", "unaligned_follow_ups"]

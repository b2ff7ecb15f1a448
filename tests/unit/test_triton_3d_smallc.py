"""ConvTriton3dSmallC{Fwd,Bwd,Wrw} and their batch-chunk solvers: 3-D problems of few input
channels on the flattened kernels (kernels/conv_triton_3d_smallc.py)."""

from __future__ import annotations

import itertools

import pytest
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import SOLVERS, applicable_solvers, get_solver, launch_jobs, ranks_first
from miopenkernels.target import Target

spec = pytest.importorskip("miopenkernels.kernels.conv_triton_3d_smallc_spec")
spec_3d = pytest.importorskip("miopenkernels.kernels.conv_triton_3d_spec")

SM90 = Target("sm90", 132)


def _p(c: int = 1, k: int = 32, n: int = 2, spatial: tuple[int, int, int] = (32, 32, 32),
       filt: tuple[int, int, int] = (3, 3, 3), layout: str = "NDHWC", direction: str = "W",
       data_type: str = "FP16", **kw: object) -> ConvProblem:
    pad = tuple(f // 2 for f in filt)
    return ConvProblem(n=n, c=c, k=k, in_spatial=spatial, filter=filt, pad=pad,
                       direction=direction, in_type=data_type, wei_type=data_type,
                       out_type=data_type, in_layout=layout, wei_layout=layout,
                       out_layout=layout, **kw)


def _first(p: ConvProblem) -> list[str]:
    """The solvers of IEEE math that rank first (the TF32 ones serve another math mode)."""
    return [s.name for s in applicable_solvers(p, SM90)
            if s.math == "ieee" and ranks_first(s, p, SM90)]


@pytest.mark.parametrize(("layout", "direction", "data_type"), list(itertools.product(
    ("NDHWC", "NCDHW"), ("F", "B", "W"), ("FP16", "BF16", "FP32"))))
def test_few_channels_rank_first_over_the_3d_family_and_its_copies(
        layout: str, direction: str, data_type: str) -> None:
    suffix = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[direction]
    assert _first(_p(layout=layout, direction=direction, data_type=data_type)) == \
        [f"ConvTriton3dSmallC{suffix}"]
    # 3D U-Net's first layer at batch 32: y holds 2**31 elements, a chunk of the batch at a time.
    big = _p(n=32, spatial=(128, 128, 128), layout=layout, direction=direction,
             data_type=data_type)
    assert _first(big) == [f"ConvTriton3dSmallCChunks{suffix}"]
    assert get_solver(f"ConvTriton3dSmallC{suffix}").is_applicable(
        _p(c=3, k=160 if direction == "B" else 32, filt=(1, 7, 7), layout=layout,
           direction=direction), SM90)  # backward data: 147 products for 160 filters


def test_where_they_do_not_apply() -> None:
    s = get_solver("ConvTriton3dSmallCWrw")
    assert not s.is_applicable(_p(c=5), SM90)  # more than MAX_C channels a group
    assert not s.is_applicable(_p(direction="B"), SM90)  # another direction's
    assert not get_solver("ConvTriton3dSmallCFwd").is_applicable(_p(direction="W"), SM90)
    assert not s.is_applicable(ConvProblem(n=2, c=1, k=32, in_spatial=(32, 32), filter=(3, 3),
                                           pad=(1, 1), direction="W"), SM90)  # 2-D
    assert s.is_applicable(_p(c=8, groups=4, k=32), SM90)  # 2 channels a group
    # More reduction columns than the kernels split exactly: 3 x 7x7x7 = 1,029.
    assert s.is_applicable(_p(c=2, filt=(7, 7, 7)), SM90)  # 686
    assert not s.is_applicable(_p(c=3, filt=(7, 7, 7)), SM90)
    # Backward data where the taps' products a position (t*r*s*c) are no more than the
    # filters: 3D U-Net's 27 for 32, not a video stem's 441 for 64.
    back = get_solver("ConvTriton3dSmallCBwd")
    assert back.is_applicable(_p(direction="B"), SM90)
    assert not back.is_applicable(_p(c=3, k=64, filt=(3, 7, 7), direction="B"), SM90)
    assert not back.is_applicable(_p(k=26, direction="B"), SM90)
    assert back.is_applicable(_p(k=27, direction="B"), SM90)
    assert not s.is_applicable(_p(), Target("gfx906", 60))  # no matrix cores
    assert not s.is_applicable(_p(n=32, spatial=(128, 128, 128)), SM90)  # the chunks'
    # A transposed layer whose plain convolution reads 2 channels: its backward weights.
    assert s.is_applicable(_p(c=16, k=2, filt=(2, 2, 2), stride=(2, 2, 2), mode="trans"), SM90)


def test_backward_weights_split_fills_the_gpu_within_the_partials_bound() -> None:
    s = get_solver("ConvTriton3dSmallCWrw")
    p = _p(n=16, spatial=(128, 128, 128))  # half of 3D U-Net's batch: one program row
    params = s.default_params(p, SM90)
    split = params[4]
    assert split == 1024 and s.params_valid(p, SM90, params)
    fwd = get_solver("ConvTriton3dSmallCFwd")
    narrow = fwd.default_params(_p(direction="F"), SM90)  # 32 filters
    assert narrow[:2] == (spec.NARROW_M, spec.NARROW_N) and fwd.params_valid(
        _p(direction="F"), SM90, narrow)
    assert fwd.default_params(_p(direction="F", k=64), SM90)[1] == 64
    launch = s.launch(p, params)
    assert launch.grid == (1, 1, split)
    assert launch.workspace_bytes == split * 32 * 27 * 4
    (job, reduce), = s.follow_ups(p, params, SM90)
    assert job.kernel_name == "conv2d_bwd_weight_reduce"
    assert {a.name: a.value for a in reduce.args}["SPLIT_K"] == split
    # Many filters by many columns: the partials stay within MAX_PARTIAL_BYTES.
    wide = _p(c=4, k=256, filt=(3, 7, 7))
    wide_split = s.default_params(wide, SM90)[4]
    assert wide_split * 256 * 4 * 147 * 4 <= spec.MAX_PARTIAL_BYTES
    assert s.seed_params(p, SM90) == [params[:4] + (256,) + params[5:]]


@pytest.mark.parametrize("filt", [(3, 3, 3), (1, 7, 7), (3, 1, 1)])
def test_the_reduce_walk_writes_each_partial_where_the_kernel_would(
        filt: tuple[int, int, int]) -> None:
    """conv2d_bwd_weight_reduce's index arithmetic over `reduce_values`, replayed: partial i
    ([G*K][T*R*S*C], j = tap*C + c) lands at the weights' (g*k, c, t, r, s) offset in both
    layouts."""
    for layout in ("NCDHW", "NDHWC"):
        g, c, k = 2, 3, 4
        p = _p(c=c * g, k=k * g, groups=g, filt=filt, layout=layout)
        s = get_solver("ConvTriton3dSmallCWrw")
        from miopenkernels.solvers.triton_3d import _view

        _, sizes, strides, _ = _view(p)
        v = spec.reduce_values(sizes, strides)
        t_, r_, s_ = filt
        seen = set()
        for i in range(v["TOTAL"]):
            rs = v["R"] * v["S"]
            kk, crs = divmod(i, v["C"] * rs)
            cc, rest = divmod(crs, rs)
            rr, ss = divmod(rest, v["S"])
            got = kk * v["swk"] + cc * v["swc"] + rr * v["swr"] + ss * v["sws"]
            gk, j = divmod(i, t_ * r_ * s_ * c)
            tap, ch = divmod(j, c)
            t, rem = divmod(tap, r_ * s_)
            r, q = divmod(rem, s_)
            w = strides["w"]
            assert got == gk * w[0] + ch * w[1] + t * w[2] + r * w[3] + q * w[4]
            seen.add(got)
        assert len(seen) == v["TOTAL"] == g * k * c * t_ * r_ * s_
        assert s.is_applicable(p, SM90)


@pytest.mark.parametrize("kind", spec.KINDS)
def test_usual_tiles_are_legal_on_every_matrix_core_kind(kind: str) -> None:
    for data_type, direction in itertools.product(spec.TYPES, ("F", "B", "W")):
        tile = spec.usual_tile(data_type, direction, data_type, kind)
        assert spec.legal(direction, tile, data_type, kind), (kind, data_type, direction, tile)
        if direction == "F":
            narrow = spec.narrow_of(tile, data_type, kind)
            assert spec.legal(direction, narrow, data_type, kind), (kind, data_type, narrow)
            assert narrow["BLOCK_N"] == spec.NARROW_N and narrow["BLOCK_M"] >= tile["BLOCK_M"]


def test_a_package_holds_every_object_a_launch_runs() -> None:
    shipped = {j for s in SOLVERS for j in s.dynamic_jobs(SM90)}
    for layout, direction, data_type, n in itertools.product(
            ("NCDHW", "NDHWC"), ("F", "B", "W"), ("FP16", "BF16", "FP32"), (2, 32)):
        p = _p(n=n, spatial=(128, 128, 128) if n == 32 else (32, 32, 32), layout=layout,
               direction=direction, data_type=data_type)
        name, = _first(p)
        s = get_solver(name)
        params = s.default_params(p, SM90)
        assert set(launch_jobs(s, p, params, SM90)) <= shipped, (name, p.key())
    own = [j for name in ("ConvTriton3dSmallCFwd", "ConvTriton3dSmallCWrw")
           for j in get_solver(name).dynamic_jobs(SM90) if j.kernel_name.endswith("_smallc")]
    # The generic object of each type and the aligned ones of its layouts (forward both,
    # backward weights channels-last); forward's narrow variant too, and for 16-bit types
    # both tiles' unaligned channels-last objects.
    assert len(own) == 3 * 2 * 3 + 2 * 2 + 3 * 2
    plain = [j for j in own if not any(o.startswith("--assume") for o in j.options)]
    last = [j for j in plain if "-DCHANNELS_LAST=1" in j.options]
    assert len(last) == 4 and all(j.kernel_name == spec.KERNEL["F"] for j in last)
    assert not any("-DCHANNELS_LAST=2" in j.options for j in plain)
    # Backward data: its first step's usual tile so, and a gather object per type and layout.
    back = get_solver("ConvTriton3dSmallCBwd").dynamic_jobs(SM90)
    assert sorted(j.kernel_name for j in back) == \
        [spec.GATHER] * 9 + [spec.KERNEL["B"]] * 9


def test_backward_data_takes_its_products_a_chunk_of_images_at_a_time() -> None:
    # 3D U-Net's first layer: one image's products, 27 columns over 128^3 positions in FP32,
    # fit WS_LIMIT; 32 images do not, so the chunk solver runs them an image at a time.
    big = _p(n=32, spatial=(128, 128, 128), direction="B")
    one = 27 * 128**3 * 4
    assert one <= spec.WS_LIMIT < 2 * one
    chunks = get_solver("ConvTriton3dSmallCChunksBwd")
    assert chunks._chunking(big) == (1, 32, True)  # a chunk's offsets: whole 256-byte steps
    assert not get_solver("ConvTriton3dSmallCBwd").is_applicable(big, SM90)
    # Below 2**31 elements a tensor, a batch whose products exceed the limit takes the chunks
    # too, and every chunk's two launches in turn, the later ones a chunk's bytes in.
    p = _p(n=16, spatial=(64, 64, 64), direction="B")
    assert _first(p) == ["ConvTriton3dSmallCChunksBwd"]
    per = 27 * 64**3 * 4
    images = spec.WS_LIMIT // per
    params = chunks.default_params(p, SM90)
    assert chunks._chunking(p) == (images, -(-16 // images), True)
    assert chunks.workspace_for(p, params) == images * per
    steps = [chunks.launch(p, params), *(launch for _, launch in
                                         chunks.follow_ups(p, params, SM90))]
    names = [launch.kernel_name for launch in steps]
    assert names == [spec.KERNEL["B"], spec.GATHER] * (-(-16 // images))
    second = {a.name: a.kind for a in steps[2].args}
    assert second["x_ptr"] == f"ptr:dx@{images * 64**3 * 2}"
    assert second["y_ptr"] == f"ptr:dy@{images * 32 * 64**3 * 2}"
    assert second["ws_ptr"] == "ptr:workspace"
    # The gather covers dx: BLOCK_M elements a program.
    gather = steps[1]
    assert gather.grid[0] * spec.GATHER_CONFIG["BLOCK_M"] >= images * 64**3 > \
        (gather.grid[0] - 1) * spec.GATHER_CONFIG["BLOCK_M"]
    # A batch whose products fit runs on the solver itself: one launch, the gather after it.
    small = _p(n=2, direction="B")
    solver = get_solver("ConvTriton3dSmallCBwd")
    params = solver.default_params(small, SM90)
    assert solver.workspace_for(small, params) == 2 * 27 * 32**3 * 4
    assert [launch.kernel_name for _, launch in solver.follow_ups(small, params, SM90)] == \
        [spec.GATHER]


def _options(job: object) -> str:
    return " ".join(job.options)  # type: ignore[attr-defined]


@pytest.mark.parametrize("direction", ["F", "B", "W"])
def test_aligned_objects_serve_the_problems_that_meet_their_assumptions(direction: str) -> None:
    # Packed NCDHW with rows of 32 (a multiple of 8 FP16 elements): the channel-planar
    # aligned object (backward weights ships none: its generic one); NDHWC with 32 filters:
    # the channels-last one. Both assume 16-byte aligned pointers.
    s = get_solver({"F": "ConvTriton3dSmallCFwd", "B": "ConvTriton3dSmallCBwd",
                    "W": "ConvTriton3dSmallCWrw"}[direction])
    for layout, want in (("NCDHW", 2 if direction != "W" else 0), ("NDHWC", 1)):
        p = _p(layout=layout, direction=direction)
        params = s.default_params(p, SM90)
        job = s.compile_job(p, params, SM90)
        assert s._aligned_layout(p) == want
        if want:
            assert f"-DCHANNELS_LAST={want}" in job.options
            assert "x_ptr:16" in _options(job) and "syh:8" in _options(job)
        else:
            assert "--assume" not in _options(job)
        generic = s.unaligned_job(p, params, SM90)
        assert "--assume" not in _options(generic)
        assert set(launch_jobs(s, p, params, SM90)) <= set(s.dynamic_jobs(SM90))
        if direction == "B":  # the gather: the layout's aligned object, else the generic one
            gather, = (j for j, _ in s.follow_ups(p, params, SM90))
            assert f"-DCHANNELS_LAST={want}" in gather.options
            generic, = (j for j, _ in s.unaligned_follow_ups(p, params, SM90))
            assert "-DCHANNELS_LAST=0" in generic.options and "--assume" not in _options(generic)
    # Rows of 30 (NCDHW) and 45 filters (NDHWC) miss the assumptions: the generic objects.
    for p in (_p(layout="NCDHW", spatial=(32, 32, 30), direction=direction),
              _p(layout="NDHWC", k=45, direction=direction)):
        assert s._aligned_layout(p) == 0
        assert "--assume" not in _options(s.compile_job(p, s.default_params(p, SM90), SM90))


def test_layouts_and_the_aligned_assumptions() -> None:
    ncdhw = {"x": (8, 8, 4, 2, 1), "w": (27, 27, 9, 3, 1), "y": (8, 8, 4, 2, 1)}
    ndhwc = {"x": (8, 1, 4, 2, 1), "w": (27, 1, 9, 3, 1), "y": (64, 1, 32, 16, 8)}
    assert spec.layout_of(ncdhw) == 2 and spec.layout_of(ndhwc) == 1
    assert spec.layout_of({**ncdhw, "y": (8, 8, 4, 1, 2)}) == 0  # a transposed view
    args = dict.fromkeys(spec.ALIGNED_ARGS[2], 16)
    assert spec.meets_aligned("F", args, 2, "FP16")
    assert not spec.meets_aligned("W", args, 2, "FP16")  # backward weights ships none
    assert not spec.meets_aligned("F", {**args, "Q": 12}, 2, "FP16")
    assert spec.meets_aligned("F", {**args, "Q": 12}, 2, "FP32")  # 4 FP32 elements: 16 bytes
    assert not spec.meets_aligned("F", args, 0, "FP16")


def _p2(c: int = 3, k: int = 64, n: int = 32, hw: tuple[int, int] = (224, 224),
        filt: tuple[int, int] = (3, 3), stride: int = 1, layout: str = "NHWC",
        direction: str = "B", data_type: str = "FP16", **kw: object) -> ConvProblem:
    """A 2-D layer (VGG-16's first by default)."""
    return ConvProblem(n=n, c=c, k=k, in_spatial=hw, filter=filt,
                       pad=tuple(f // 2 for f in filt), stride=(stride, stride),
                       direction=direction, in_type=data_type, wei_type=data_type,
                       out_type=data_type, in_layout=layout, wei_layout=layout,
                       out_layout=layout, **kw)


def test_2d_solvers_take_2d_few_channel_layers_of_one_group() -> None:
    s = get_solver("ConvTritonSmallCBwd")
    assert s.is_applicable(_p2(), SM90) and s.ranking_name == "ConvTriton3dSmallCBwd"
    assert not s.is_applicable(_p(direction="B"), SM90)  # 3-D: the 3-D solver's
    assert not get_solver("ConvTriton3dSmallCBwd").is_applicable(_p2(), SM90)
    assert not s.is_applicable(_p2(c=6, groups=2), SM90)  # grouped: the grouped family's
    assert not s.is_applicable(_p2(c=5), SM90)
    assert not s.is_applicable(_p2(k=26), SM90)  # backward data: 27 products for 26 filters
    assert s.dynamic_jobs(SM90) == []  # the 3-D solvers' objects


@pytest.mark.parametrize(("layout", "direction", "filt", "stride", "first"), [
    # Backward data at stride 1 (27 products of 32 columns, where the 2-D tile spans 3 of 16).
    ("NCHW", "B", (3, 3), 1, True), ("NHWC", "B", (3, 3), 1, True),
    ("NCHW", "B", (3, 3), 2, False), ("NHWC", "B", (1, 1), 1, False),
    # Backward weights: channels-last whenever there is more than one tap, but where the 2-D
    # kernel's object aligned on dy's side takes a position's columns past one block (a 7x7
    # stem's 147 of 64 filters); channel-planar where they fit one block (not a 7x7 stem's).
    ("NHWC", "W", (7, 7), 2, False), ("NHWC", "W", (3, 3), 2, True), ("NCHW", "W", (3, 3), 2, True),
    ("NCHW", "W", (7, 7), 2, False), ("NHWC", "W", (1, 1), 1, False),
    # Forward: channels-last 3x3 at stride 1 alone, and not where the 2-D kernel takes its
    # object aligned on y's side (64 filters in FP16; see the next test).
    ("NHWC", "F", (3, 3), 1, False), ("NHWC", "F", (3, 3), 2, False),
    ("NCHW", "F", (3, 3), 1, False), ("NHWC", "F", (7, 7), 1, False)])
def test_2d_solvers_rank_first_where_they_measured_faster(
        layout: str, direction: str, filt: tuple[int, int], stride: int, first: bool) -> None:
    p = _p2(layout=layout, direction=direction, filt=filt, stride=stride, n=8)
    suffix = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[direction]
    firsts = _first(p)
    assert (f"ConvTritonSmallC{suffix}" in firsts) == first, firsts
    if first:  # the implicit GEMM and its padded and Via solvers give way
        assert firsts == [f"ConvTritonSmallC{suffix}"]


@pytest.mark.parametrize(("data_type", "k", "first"), [
    ("FP16", 12, True), ("BF16", 36, True),     # filters not a multiple of 8: generic 2-D
    ("FP16", 64, False), ("BF16", 24, False)])  # the 2-D kernel's aligned object goes first
def test_2d_forward_at_stride_1_ranks_first_where_the_2d_object_is_generic(
        data_type: str, k: int, first: bool) -> None:
    p = _p2(layout="NHWC", direction="F", filt=(3, 3), stride=1, n=8, k=k, data_type=data_type)
    assert ("ConvTritonSmallCFwd" in _first(p)) == first, _first(p)


@pytest.mark.parametrize(("data_type", "layout", "stride", "first"), [
    # The path through NCHW (VIA_NCHW_FEW_C, BF16 since its estimate) is as fast or faster.
    ("BF16", "NHWC", 2, False), ("FP16", "NHWC", 2, False),
    ("FP32", "NHWC", 2, False), ("BF16", "NCHW", 2, False), ("BF16", "NHWC", 4, False)])
def test_2d_backward_data_at_stride_2_ranks_first_where_nothing_else_does(
        data_type: str, layout: str, stride: int, first: bool) -> None:
    p = _p2(layout=layout, direction="B", stride=stride, n=8, data_type=data_type)
    assert get_solver("ConvTritonSmallCBwd").is_applicable(p, SM90)
    assert ("ConvTritonSmallCBwd" in _first(p)) == first, _first(p)
    if first:
        assert _first(p) == ["ConvTritonSmallCBwd"]


def test_2d_chunk_solvers_take_the_products_too_large_for_one_launch() -> None:
    # SD 1.5's VAE encoder input layer at batch 32: 906 MB of products, over WS_LIMIT.
    vae = _p2(k=128, hw=(512, 512), layout="NCHW")
    assert spec.products_bytes(_sizes_2d(vae)) > spec.WS_LIMIT
    assert _first(vae) == ["ConvTritonSmallCChunksBwd"]
    s = get_solver("ConvTritonSmallCChunksBwd")
    shipped = {j for t in SOLVERS for j in t.dynamic_jobs(SM90)}
    assert set(launch_jobs(s, vae, s.default_params(vae, SM90), SM90)) <= shipped
    assert not s.is_applicable(_p2(), SM90)  # VGG-16's 173 MB: one launch


def _sizes_2d(p: ConvProblem) -> dict[str, int]:
    from miopenkernels.solvers.triton_3d import _view

    return _view(p)[1]


@pytest.mark.parametrize(("layout", "direction"), list(itertools.product(
    ("NCHW", "NHWC"), ("F", "B", "W"))))
def test_a_package_holds_every_object_a_2d_launch_runs(layout: str, direction: str) -> None:
    shipped = {j for s in SOLVERS for j in s.dynamic_jobs(SM90)}
    s = get_solver("ConvTritonSmallC" + {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[direction])
    for data_type in ("FP16", "BF16", "FP32"):
        p = _p2(layout=layout, direction=direction, data_type=data_type)
        assert set(launch_jobs(s, p, s.default_params(p, SM90), SM90)) <= shipped, p.key()


def test_the_kernels_column_split_is_exact_below_max_columns() -> None:
    """`_quotient` (kernels/conv_triton_3d_smallc.py): j // d as (j * ceil(2**20 / d)) >> 20,
    in i32 without overflow, for every column index j of a problem within MAX_COLUMNS and
    every divisor it splits by (C, R*S, S: each at most the columns), and without overflow
    for the masked columns past the last (a block of up to 256 more)."""
    top = spec.MAX_COLUMNS
    for d in range(1, top + 1):
        m = (2**20 + d - 1) // d
        assert (top + 255) * m < 2**31
        assert all((j * m) >> 20 == j // d for j in range(top))

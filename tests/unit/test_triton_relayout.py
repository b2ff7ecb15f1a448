"""The Via solvers: a problem on the other layout's Triton kernels, with transposes around them."""

from __future__ import annotations

from dataclasses import replace

import pytest
from find_doubles import db_env, run_recorded, triton_compiler
from miopenkernels.backends import NullBackend
from miopenkernels.find import make_invoker
from miopenkernels.handle import Handle
from miopenkernels.problem import ConvProblem
from miopenkernels.ranking import load_model, rank_candidates
from miopenkernels.solvers import SOLVERS, get_solver
from miopenkernels.target import Target
from relayout_cases import FIRST, LAYER, SM90, as_case, plain

spec = pytest.importorskip("miopenkernels.kernels.conv_triton_spec")


def test_applies_to_listed_nchw_cases_on_listed_kinds_only() -> None:
    bwd = get_solver("ConvTritonImplicitGemmViaNhwcBwd")
    wrw = get_solver("ConvTritonImplicitGemmViaNhwcWrw")
    for t in ("FP16", "BF16", "FP32"):
        assert bwd.is_applicable(as_case(LAYER, "B", t), SM90)
        assert wrw.is_applicable(as_case(LAYER, "W", t), SM90)
        assert not bwd.is_applicable(as_case(LAYER, "B", t, "NHWC"), SM90)
    # Few channels (the first layer) stay on the NCHW kernels; 1x1 filters do in FP16 and
    # BF16, not in FP32.
    assert not bwd.is_applicable(as_case(FIRST, "B", "FP16"), SM90)
    one = replace(LAYER, filter=(1, 1), pad=(0, 0))
    assert wrw.is_applicable(as_case(one, "W", "FP32"), SM90)
    assert not wrw.is_applicable(as_case(one, "W", "FP16"), SM90)
    assert not bwd.is_applicable(as_case(LAYER, "F", "FP16"), SM90)
    fwd = get_solver("ConvTritonImplicitGemmViaNhwcFwd")
    assert fwd.is_applicable(as_case(LAYER, "F", "FP16"), SM90)
    assert not fwd.is_applicable(as_case(LAYER, "F", "FP32"), SM90)  # FP32 forward: NCHW kernel
    # No measurement on the AMD kinds or sm80: the NCHW kernels stay alone there.
    for other in ("gfx942-304", "sm80-108"):
        assert not bwd.is_applicable(as_case(LAYER, "B", "FP16"), Target.parse(other))
    # Transposed convolutions are taken as their plain convolution's opposite direction;
    # grouped backward data is, as in the other directions (the group is the kernels' program
    # axis 1).
    assert wrw.is_applicable(replace(as_case(LAYER, "W", "FP16"), mode="trans"), SM90)
    assert bwd.is_applicable(replace(as_case(LAYER, "F", "FP16"), mode="trans"), SM90)
    assert not bwd.is_applicable(replace(as_case(LAYER, "B", "FP16"), mode="trans"), SM90)
    assert fwd.is_applicable(replace(as_case(LAYER, "B", "FP16"), mode="trans"), SM90)
    assert bwd.is_applicable(replace(as_case(LAYER, "B", "FP16"), groups=2), SM90)


def test_the_nhwc_solvers_objects_and_parameters() -> None:
    via = get_solver("ConvTritonImplicitGemmViaNhwcWrw")
    nhwc = get_solver("ConvTritonImplicitGemmWrw")
    p = as_case(LAYER, "W", "FP16")
    q = as_case(LAYER, "W", "FP16", "NHWC")
    params = via.default_params(p, SM90)
    assert params == nhwc.default_params(q, SM90)
    assert via.compile_job(p, params, SM90) == nhwc.compile_job(q, params, SM90)
    assert via.param_space(p, SM90) == nhwc.param_space(q, SM90)
    assert via.ranking_name == nhwc.name
    # The package adds one transpose object per element type and tile, nothing else.
    jobs = via.dynamic_jobs(SM90)
    assert sorted(j.kernel_name for j in jobs) == ["transpose_021"] * 3 * len(
        spec.TRANSPOSE_TILES)
    assert len(set(jobs)) == len(jobs)
    assert via.dynamic_jobs(Target.parse("gfx942-304")) == []


def test_backward_data_transposes_in_and_out() -> None:
    via = get_solver("ConvTritonImplicitGemmViaNhwcBwd")
    p = as_case(LAYER, "B", "FP16")
    params = (128, 64, 64, 8, 1, 4, 4)
    slots = via.workspace_slots(p, params)
    total = via.workspace_for(p, params)
    elem = 2
    sizes = {"ws_x": 32 * 128 * 28 * 28 * elem, "ws_w": 128 * 128 * 9 * elem,
             "ws_y": 32 * 128 * 28 * 28 * elem, "ws_part": 0}
    ends = sorted((slots[s], slots[s] + sizes[s]) for s in sizes)
    assert all(a[1] <= b[0] for a, b in zip(ends, ends[1:], strict=False))  # no overlap
    assert all(off % 256 == 0 for off in slots.values()) and ends[-1][1] <= total
    ins = via.lead_ins(p, params, SM90)
    assert [(launch.pointer_args()[:2], plain(launch)) for _, launch in ins] == [
        (["w", "ws_w"], {"B": 128, "R": 128, "S": 9}),
        (["dy", "ws_y"], {"B": 32, "R": 128, "S": 784})]
    main = via.launch(p, params)
    assert main.kernel_name == "conv2d_bwd_data" and main.workspace_bytes == total
    assert main.pointer_args()[:4] == ["ws_x", "ws_w", "ws_y", "ws_part"]
    (_, out), = via.follow_ups(p, params, SM90)
    assert out.kernel_name == "transpose_021" and out.pointer_args()[:2] == ["ws_x", "dx"]
    assert plain(out) == {"B": 32, "R": 784, "S": 128}  # [n][pixels][c] -> [n][c][pixels]


def test_each_transpose_takes_the_tile_of_its_shape() -> None:
    via = get_solver("ConvTritonImplicitGemmViaNhwcBwd")
    p = as_case(LAYER, "B", "FP16")
    params = (128, 64, 64, 8, 1, 4, 4)
    (wjob, w), (yjob, y) = via.lead_ins(p, params, SM90)
    # KCRS [128][128][9] -> KRSC: nine taps a row, the tall tile; so is dy [32][128][784] in
    # a 16-bit type, and the square tile in FP32.
    assert "-DBLOCK_R=128" in wjob.options and "-DBLOCK_S=16" in wjob.options
    assert w.grid == (1, 1, 128)
    assert yjob == wjob and y.grid == (49, 1, 32)
    (_, _), (yjob32, y32) = via.lead_ins(as_case(LAYER, "B", "FP32"), params, SM90)
    assert "-DBLOCK_R=64" in yjob32.options and y32.grid == (13, 2, 32)
    assert spec.transpose_tile(3, 224 * 224, 2) == (16, 128)  # the first layer's 3 channels
    assert spec.transpose_tile(224 * 224, 3, 4) == (128, 16)
    assert spec.transpose_tile(64, 3136, 2) == (16, 128)
    jobs = via.dynamic_jobs(SM90)
    assert wjob in jobs and yjob32 in jobs


def test_a_transpose_too_big_for_the_grid_either_way_is_not_taken() -> None:
    """The output goes back [n][pixels][c] -> [n][c][pixels]: its grid's rows are the pixels,
    which must fit as well as the channels of the copy in."""
    big = replace(LAYER, n=1, c=16, k=16, in_spatial=(4096, 4096))
    bwd = get_solver("ConvTritonImplicitGemmViaNhwcBwd")
    assert not bwd.is_applicable(as_case(big, "B", "FP16"), SM90)
    assert bwd.is_applicable(as_case(replace(big, in_spatial=(512, 512)), "B", "FP16"), SM90)
    assert spec.transpose_fits(1, 16, 4096 * 4096, 2) is False
    assert spec.transpose_fits(1, 4096 * 64, 16, 2) is True  # the tall tile's 128 rows


def test_one_by_one_weights_are_read_where_they_are() -> None:
    """KCRS and KRSC are the same bytes for a 1x1 filter: no copy, no workspace for it."""
    one = replace(LAYER, filter=(1, 1), pad=(0, 0))
    p = as_case(one, "B", "FP16")
    params = (128, 64, 64, 8, 1, 4, 4)
    via = get_solver("ConvTritonImplicitGemmViaNhwcBwd")
    slots = via.workspace_slots(p, params)
    assert "ws_w" not in slots and {"ws_x", "ws_y"} <= set(slots)
    (_, only), = via.lead_ins(p, params, SM90)
    assert only.pointer_args()[:2] == ["dy", "ws_y"]
    assert via.launch(p, params).pointer_args()[:3] == ["ws_x", "w", "ws_y"]
    # Backward weights of a 1x1 filter write the caller's dw: nothing follows the kernel.
    wrw = get_solver("ConvTritonImplicitGemmViaNhwcWrw")
    q = as_case(one, "W", "FP16")
    assert wrw.follow_ups(q, params, SM90) == ()
    assert wrw.launch(q, params).pointer_args()[:3] == ["ws_x", "dw", "ws_y"]
    assert "ws_w" not in wrw.workspace_slots(q, params)


def test_a_split_reduction_writes_the_nchw_output_itself() -> None:
    via = get_solver("ConvTritonImplicitGemmViaNhwcWrw")
    p = as_case(LAYER, "W", "FP32")
    params = (64, 64, 32, 8, 4, 4, 2)
    slots = via.workspace_slots(p, params)
    assert "ws_w" not in slots  # no NHWC copy of dw: the reduce writes dw
    main = via.launch(p, params)
    assert main.pointer_args()[:4] == ["ws_x", "dw", "ws_y", "ws_part"]
    (job, reduce), = via.follow_ups(p, params, SM90)
    assert job.kernel_name == "conv2d_bwd_weight_reduce"
    assert reduce.pointer_args()[:2] == ["ws_part", "dw"]
    # KCRS strides of the NCHW problem's dw, in the partials' order (r, s, k, c).
    assert [reduce.scalars()[k] for k in ("swk", "swc", "swr", "sws")] == [3, 1, 128 * 9, 9]
    assert slots["ws_part"] + 4 * 128 * 128 * 9 * 4 <= via.workspace_for(p, params)


def test_one_call_runs_transposes_kernel_and_transpose_back_in_the_workspace(
        monkeypatch, tmp_path) -> None:  # noqa: ANN001
    db_env(monkeypatch, tmp_path)
    backend = NullBackend(SM90)
    via = get_solver("ConvTritonImplicitGemmViaNhwcBwd")
    h = Handle(backend=backend, compiler=triton_compiler(), solvers=[via])
    p = as_case(LAYER, "B", "FP16")
    params = (128, 64, 64, 8, 1, 4, 4)
    inv = make_invoker(h, p, via, params=params)
    assert inv.workspace_bytes == via.workspace_for(p, params)
    assert inv.alignment == (("workspace", 16),)
    launches, ptrs = run_recorded(backend, inv)
    ws = ptrs["workspace"]
    assert [r.kernel for r in launches] == ["transpose_021", "transpose_021",
                                            "conv2d_bwd_data", "transpose_021"]
    slots = via.workspace_slots(p, params)
    first, second, conv, last = (dict(r.args) for r in launches)
    assert first["ptr:w"] == ptrs["w"] and first["ptr:ws_w"] == ws + slots["ws_w"]
    assert second["ptr:dy"] == ptrs["y"] and second["ptr:ws_y"] == ws + slots["ws_y"]
    assert conv["ptr:ws_x"] == ws + slots["ws_x"]
    assert last["ptr:dx"] == ptrs["x"]


def test_the_miss_ranking_puts_them_first_in_their_cases() -> None:
    model = load_model()

    def first(p: ConvProblem, tf32: bool = False) -> str:
        solvers = [s for s in SOLVERS if s.is_applicable(p, SM90)
                   and (tf32 or s.math != "tf32")]
        return rank_candidates(p, SM90, solvers, lambda s, q: True, model=model)[0].solver.name

    # Backward weights of 3x3 stride-1 filters go to Winograd (tests/unit/
    # test_triton_winograd.py); with a stride they stay with the implicit GEMM.
    strided = replace(LAYER, stride=(2, 2))
    assert first(as_case(strided, "W", "FP32")) == "ConvTritonImplicitGemmViaNhwcWrw"
    assert first(as_case(LAYER, "B", "BF16")) == "ConvTritonImplicitGemmViaNhwcBwd"
    assert first(as_case(LAYER, "B", "FP32"), tf32=True) == "ConvTritonImplicitGemmTf32ViaNhwcBwd"
    # TF32 backward weights stay on the NCHW kernel, which still ranks first; in NHWC they go
    # through it.
    assert first(as_case(strided, "W", "FP32"), tf32=True) == "ConvTritonImplicitGemmTf32Wrw"
    assert first(as_case(strided, "W", "FP32", "NHWC"), tf32=True) == \
        "ConvTritonImplicitGemmTf32ViaNchwWrw"
    assert first(as_case(LAYER, "W", "FP16", "NHWC")) == "ConvTritonImplicitGemmWrw"
    assert first(as_case(LAYER, "W", "FP32")) == "ConvTritonWinogradTf32x3Wrw"
    # TF32 Winograd ranks first up to 14x14 outputs: at 28x28 the Via solver stays first.
    assert first(as_case(replace(LAYER, in_spatial=(14, 14)), "W", "FP32", "NHWC"), tf32=True) == \
        "ConvTritonWinogradTf32Wrw"
    assert first(as_case(LAYER, "W", "FP32", "NHWC"), tf32=True) == \
        "ConvTritonImplicitGemmTf32ViaNchwWrw"


def test_nhwc_tf32_backward_weights_run_the_nchw_kernel() -> None:
    via = get_solver("ConvTritonImplicitGemmTf32ViaNchwWrw")
    nchw = get_solver("ConvTritonImplicitGemmTf32Wrw")
    p = as_case(LAYER, "W", "FP32", "NHWC")
    q = as_case(LAYER, "W", "FP32")
    assert via.is_applicable(p, SM90) and not via.is_applicable(q, SM90)
    assert not via.is_applicable(as_case(replace(LAYER, filter=(1, 1), pad=(0, 0)), "W", "FP32",
                                     "NHWC"), SM90)
    params = via.default_params(p, SM90)
    assert params == nchw.default_params(q, SM90)
    assert via.compile_job(p, params, SM90) == nchw.compile_job(q, params, SM90)
    ins = via.lead_ins(p, params, SM90)
    # NHWC [n][pixels][c] -> NCHW [n][c][pixels], for x and dy.
    assert [(launch.pointer_args()[:2], plain(launch)) for _, launch in ins] == [
        (["x", "ws_x"], {"B": 32, "R": 784, "S": 128}),
        (["dy", "ws_y"], {"B": 32, "R": 784, "S": 128})]
    split = (64, 64, 32, 8, 4, 4, 3)
    (_, reduce), = via.follow_ups(p, split, SM90)
    # The reduce writes dw in KRSC, the caller's layout, walking the partials' (r, s, k, c).
    assert [reduce.scalars()[k] for k in ("swk", "swc", "swr", "sws")] == [3 * 128, 128,
                                                                            9 * 128, 1]
    (_, back), = via.follow_ups(p, (64, 64, 32, 8, 1, 4, 3), SM90)
    # KCRS [k][c][taps] -> KRSC [k][taps][c].
    assert back.pointer_args()[:2] == ["ws_w", "dw"]
    assert plain(back) == {"B": 128, "R": 128, "S": 9}


def test_a_split_forward_via_nhwc_reduces_partials_in_their_channels_last_order() -> None:
    """The NHWC kernel of a Via forward writes its partials in NHWC order, (n, p, q, k); the
    reduce walks them so and stores into the caller's NCHW output with its strides."""
    via = get_solver("ConvTritonImplicitGemmViaNhwcFwd")
    p = as_case(ConvProblem(n=1, c=1024, k=256, in_spatial=(14, 14), filter=(1, 1)), "F", "FP16")
    (_, reduce), = via.follow_ups(p, (64, 32, 64, 8, 4, 4, 3), SM90)
    v = reduce.scalars()
    assert (v["TOTAL"], v["C"], v["R"], v["S"], v["SPLIT_K"]) == (256 * 14 * 14, 14, 14, 256, 4)
    assert [v[k] for k in ("swk", "swc", "swr", "sws")] == [256 * 14 * 14, 14, 1, 14 * 14]
    # The NCHW solver's own split reduces NCHW-ordered partials.
    (_, own), = get_solver("ConvTritonImplicitGemmFwd").follow_ups(
        p, (64, 32, 64, 8, 4, 4, 3), SM90)
    assert [own.scalars()[k] for k in ("C", "R", "S", "sws")] == [256, 14, 14, 1]


def test_every_object_of_a_call_is_named_for_precompiles_and_closures(tmp_path) -> None:  # noqa: ANN001
    from miopenkernels.builder.closure import required_kernels
    from miopenkernels.solvers import launch_jobs

    via = get_solver("ConvTritonImplicitGemmViaNhwcBwd")
    p = as_case(LAYER, "B", "FP16")
    params = via.default_params(p, SM90)
    jobs = launch_jobs(via, p, params, SM90)
    assert jobs[0] == via.compile_job(p, params, SM90)
    assert {j.kernel_name for j in jobs[1:]} == {"transpose_021"}
    fdb = tmp_path / "sm9084.HIP.fdb.txt"
    fdb.write_text(f"{p.key()}=ConvTritonImplicitGemmViaNhwcBwd:0.1,0,"
                   "miopenConvolutionBwdDataAlgoImplicitGEMM\n")
    (req,) = required_kernels(SM90, fdb, None)
    assert req.solver == via.name and set(req.companions) == set(jobs[1:])


def test_odd_channels_go_through_padded_copies() -> None:
    """An NCHW problem whose NHWC form misses the aligned objects' assumption (16-bit channel
    counts not multiples of 8: RetinaNet's 819-filter head) is relaid with its channels
    rounded up (the copies' new channels zero), so that the NHWC kernel's aligned object runs:
    its generic object is what made these 22-45x cuDNN. FP32 (no padded copies) and grouped
    ones stay on the NCHW kernel."""
    from miopenkernels.solvers.triton_conv_relayout import padded_nhwc, via_layout

    head = ConvProblem(n=32, c=256, k=819, in_spatial=(100, 136), filter=(3, 3), pad=(1, 1))
    even = replace(head, k=816)
    suffix = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}
    for d in ("F", "B", "W"):
        via = get_solver(f"ConvTritonImplicitGemmViaNhwc{suffix[d]}")
        for t in ("FP16", "BF16"):
            assert via_layout(as_case(even, d, t), SM90, "ieee") == "NHWC"
            assert padded_nhwc(as_case(even, d, t)) is None
            assert via_layout(as_case(head, d, t), SM90, "ieee") == "NHWC"
            q = padded_nhwc(as_case(head, d, t))
            assert q is not None and (q.c, q.k, q.in_layout) == (256, 824, "NHWC")
            assert via.is_applicable(as_case(head, d, t), SM90)
            params = via.default_params(as_case(head, d, t), SM90)
            inner = get_solver(f"ConvTritonImplicitGemm{suffix[d]}")
            assert via.compile_job(as_case(head, d, t), params, SM90) == \
                inner.compile_job(q, params, SM90)
        # FP32 has no padded copies: the NCHW kernel, which no longer gives way, ranks first.
        fp32 = replace(as_case(head, d, "FP32"), direction=d)
        if d != "F":  # FP32 forward is no Via case
            assert via_layout(fp32, SM90, "ieee") is None
    grouped = replace(as_case(head, "B", "FP16"), c=258, k=822, groups=2)
    assert padded_nhwc(grouped) is None and via_layout(grouped, SM90, "ieee") is None


def test_padded_copies_in_and_out() -> None:
    """Backward weights of the 819-filter head at the default split: dy [n][819][pixels] into
    [n][pixels][824] (zero beyond 819), x into NHWC unpadded (256 channels), the padded
    problem's reduce into the padded dw's workspace part, and dw's real filters and channels
    back into KCRS; forward reads w [819][256][9] into [824][9][256]."""
    head = as_case(ConvProblem(n=32, c=256, k=819, in_spatial=(100, 136), filter=(3, 3),
                           pad=(1, 1)), "W", "FP16")
    via = get_solver("ConvTritonImplicitGemmViaNhwcWrw")
    params = via.default_params(head, SM90)
    split = int(params[4])
    slots, total = via._layout(head, params)
    assert {"ws_x", "ws_y", "ws_w", "ws_part"} <= set(slots)
    ins = {launch.pointer_args()[0]: launch.scalars() for _, launch in
           via.lead_ins(head, params, SM90)}
    pix = 100 * 136
    assert ins["dy"] == {"B": 32, "R": 819, "S": pix, "SRC_S": pix, "DST_B": 32, "DST_R": 824}
    assert ins["x"] == {"B": 32, "R": 256, "S": pix, "SRC_S": pix, "DST_B": 32, "DST_R": 256}
    steps = via.follow_ups(head, params, SM90)
    assert len(steps) == (2 if split > 1 else 1)
    back = steps[-1][1]
    assert back.pointer_args()[:2] == ["ws_w", "dw"]
    # Padded KRSC [824][9][256] -> KCRS [819][256][9]: rows of 256 channels, 819 filters.
    assert back.scalars() == {"B": 819, "R": 9, "S": 256, "SRC_S": 256, "DST_B": 819,
                              "DST_R": 9}
    if split > 1:
        reduce = steps[0][1]
        assert "ws_w" in reduce.pointer_args() and "dw" not in reduce.pointer_args()
    assert total >= 824 * 9 * 256 * 2 + 32 * pix * (824 + 256) * 2
    fwd = get_solver("ConvTritonImplicitGemmViaNhwcFwd")
    f = replace(head, direction="F")
    ins = {launch.pointer_args()[0]: launch.scalars() for _, launch in
           fwd.lead_ins(f, fwd.default_params(f, SM90), SM90)}
    assert ins["w"] == {"B": 819, "R": 256, "S": 9, "SRC_S": 9, "DST_B": 824, "DST_R": 256}
    (_, out), = fwd.follow_ups(f, fwd.default_params(f, SM90), SM90)
    assert out.pointer_args()[:2] == ["ws_y", "y"]
    assert out.scalars() == {"B": 32, "R": pix, "S": 819, "SRC_S": 824, "DST_B": 32,
                             "DST_R": pix}

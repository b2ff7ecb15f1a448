"""The 3-D solvers: NCDHW and NDHWC convolutions as implicit GEMM over three filter axes."""

from __future__ import annotations

import ast
import itertools
from dataclasses import replace
from pathlib import Path

import pytest
from find_doubles import db_env, run_recorded, triton_compiler
from miopenkernels.backends import NullBackend
from miopenkernels.find import make_invoker
from miopenkernels.handle import Handle
from miopenkernels.problem import ConvProblem
from miopenkernels.ranking import MIN_TILE_EFFICIENCY, load_model, rank_candidates
from miopenkernels.solvers import SOLVERS, get_solver, launch_jobs, ranks_first
from miopenkernels.solvers.triton_3d import _view
from miopenkernels.target import Target

spec = pytest.importorskip("miopenkernels.kernels.conv_triton_3d_spec")
split_spec = pytest.importorskip("miopenkernels.kernels.conv_triton_3d_split_spec")
base_spec = pytest.importorskip("miopenkernels.kernels.conv_triton_spec")

SM90 = Target("sm90", 132)
SUFFIX = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}
MATRIX = [Target(a, 100) for a in ("sm80", "sm90", "sm100", "sm120", "gfx90a", "gfx942",
                                   "gfx950", "gfx1100", "gfx1201")]


def _p(direction: str = "F", data_type: str = "FP16", layout: str = "NDHWC", **kw: object
       ) -> ConvProblem:
    """A video network's 3x3x3 layer (R3D-18's second stage at batch 8)."""
    p = ConvProblem(n=8, c=64, k=64, in_spatial=(8, 28, 28), filter=(3, 3, 3),
                    pad=(1, 1, 1), direction=direction, in_type=data_type,
                    wei_type=data_type, out_type=data_type, in_layout=layout,
                    wei_layout=layout, out_layout=layout)
    return replace(p, **kw) if kw else p


def test_applies_to_3d_problems_in_every_direction_type_and_layout() -> None:
    for d, data_type, layout, target in itertools.product(
            "FBW", ("FP16", "BF16", "FP32"), ("NCDHW", "NDHWC"), MATRIX):
        p = _p(d, data_type, layout)
        solver = get_solver("ConvTriton3d" + SUFFIX[d])
        wmma_fp32 = data_type == "FP32" and target.arch.startswith("gfx1")
        assert solver.is_applicable(p, target) != wmma_fp32, (target.arch, p.key())
        assert not get_solver("ConvTriton3d" + SUFFIX["FBW".replace(d, "")[0]]
                              ).is_applicable(p, target)


def test_refuses_2d_problems_and_targets_without_matrix_cores() -> None:
    flat = ConvProblem(n=8, c=64, k=64, in_spatial=(28, 28), filter=(3, 3), pad=(1, 1))
    assert not any(get_solver("ConvTriton3d" + s).is_applicable(flat, SM90)
                   for s in SUFFIX.values())
    for target in (Target("gfx906", 60), Target("gfx908", 120), Target("gfx1030", 40)):
        assert not get_solver("ConvTriton3dFwd").is_applicable(_p(), target)
        assert get_solver("ConvTriton3dWrw").dynamic_jobs(target) == []
    mixed = replace(_p(), out_type="FP32")
    assert not get_solver("ConvTriton3dFwd").is_applicable(mixed, SM90)


def test_fp32_math_modes_follow_the_2d_family() -> None:
    p = _p("F", "FP32", "NCDHW")
    tf32, x3 = get_solver("ConvTriton3dTf32Fwd"), get_solver("ConvTriton3dTf32x3Fwd")
    assert tf32.math == "tf32" and x3.math == "tf32x3"
    assert tf32.is_applicable(p, SM90) and x3.is_applicable(p, SM90)
    assert tf32.is_applicable(p, Target("gfx942", 304))  # xf32
    assert not tf32.is_applicable(p, Target("gfx90a", 110))
    assert not x3.is_applicable(p, Target("gfx942", 304))
    assert not tf32.is_applicable(_p("F", "FP16"), SM90)
    job = tf32.compile_job(p, tf32.default_params(p, SM90), SM90)
    assert "-DPRECISION=tf32" in job.options


def test_ranks_first_on_matrix_core_targets_ahead_of_the_portable_solvers() -> None:
    for d in "FBW":
        p = _p(d)
        applicable = [s for s in SOLVERS if s.is_applicable(p, SM90)]
        first = [s.name for s in applicable if ranks_first(s, p, SM90)]
        # (Backward weights of a 3x1x1 filter: its taps in one program.)
        assert first == ["ConvTriton3d" + ("Taps" if d == "W" else "") + SUFFIX[d]], first
        assert any(s.language == "hip" for s in applicable)  # the portable fallback stays


def test_the_miss_ranking_puts_the_family_first() -> None:
    for d, data_type in itertools.product("FBW", ("FP16", "FP32")):
        p = _p(d, data_type, "NCDHW")
        solvers = [s for s in SOLVERS if s.is_applicable(p, SM90) and s.math != "tf32"]
        ranked = rank_candidates(p, SM90, solvers, lambda s, q: True, model=load_model())
        assert ranked[0].solver.name.startswith("ConvTriton3d"), (p.key(), ranked[0])


def test_the_invoker_runs_the_split_then_the_reduce(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    db_env(monkeypatch, tmp_path)
    backend = NullBackend(SM90)
    solver = get_solver("ConvTriton3dWrw")
    h = Handle(backend=backend, compiler=triton_compiler(), solvers=[solver])
    p = _p("W", "FP32", "NCDHW")
    params = solver.default_params(p, SM90)
    assert params[4] > 1 and params[5] == 4  # the compiler double's objects run 128 threads
    inv = make_invoker(h, p, solver, params=params)
    launches, ptrs = run_recorded(backend, inv)
    main, reduce = launches
    ws = ptrs["workspace"]
    assert [main.kernel, reduce.kernel] == ["conv3d_bwd_weight", "conv2d_bwd_weight_reduce"]
    assert [v for _, v in main.args[:4]] == [ptrs["x"], ptrs["w"], ptrs["y"], ws]
    assert [v for _, v in reduce.args[:2]] == [ws, ptrs["w"]]
    assert inv.workspace_bytes == solver.workspace_for(p, params)


def test_usual_tiles_are_legal_on_every_kind() -> None:
    for (precision, d), kind in itertools.product(spec.TILES, spec.KINDS):
        data_type = {"TF32": "FP32", "FP32X3": "FP32"}.get(precision, precision)
        tile = spec.usual_tile(precision, d, data_type, kind)
        assert spec.legal(d, tile, data_type, kind), (precision, d, kind, tile)
        assert base_spec.shared_bytes(tile, data_type) <= base_spec.TARGET_KINDS[kind]["smem"]
    # The sm90 entries are TILES' own (they fit), CDNA's are cut to its 64 KiB of LDS.
    sm90 = spec.usual_tile("FP16", "F", "FP16", "sm90")
    assert (sm90["BLOCK_M"], sm90["BLOCK_N"], sm90["num_stages"]) == (128, 128, 3)
    cdna = spec.usual_tile("FP16", "F", "FP16", "cdna")
    assert base_spec.shared_bytes(cdna, "FP16") <= 65536 < base_spec.shared_bytes(sm90, "FP16")


def test_backward_weights_tiles_keep_their_accumulator_in_shared_memory() -> None:
    """The contiguous FP32 store converts the accumulator through shared memory: sm90's
    256x256 tile (262,144 bytes against 232,448) was refused at launch, so no backward-weights
    tile above the kind's shared memory is legal; forward keeps it."""
    big = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "SPLIT_K": 1,
           "num_warps": 8, "num_stages": 3}
    assert spec.legal("F", big, "FP16", "sm90") and not spec.legal("W", big, "FP16", "sm90")
    for kind in spec.KINDS:
        smem = base_spec.TARGET_KINDS[kind]["smem"]
        space = spec.legal_space("W", "FP16", kind)
        assert space and all(c["BLOCK_M"] * c["BLOCK_N"] * 4 <= smem for c in space), kind
    half = {**big, "BLOCK_N": 128}
    assert spec.legal("W", half, "FP16", "sm90")
    solver = get_solver("ConvTriton3dWrw")
    assert (256, 256, 64, 8, 1, 8, 3) not in solver.param_space(_p("W"), SM90)


def test_tuning_searches_splits_in_backward_weights_alone() -> None:
    """Every direction may run split (forward and backward data on a small grid), but only
    backward weights' search space holds splits."""
    tile = spec.usual_tile("FP16", "W", "FP16", "sm90")
    for split in (2, 64):
        for d in "FBW":
            assert spec.legal(d, {**tile, "SPLIT_K": split}, "FP16", "sm90")
    assert not spec.legal("W", {**tile, "SPLIT_K": 128}, "FP16", "sm90")
    assert not spec.legal("F", {**tile, "SPLIT_K": 3}, "FP16", "sm90")
    assert not spec.legal("W", {**tile, "MMA": 2}, "FP32", "sm90")
    fwd = get_solver("ConvTriton3dFwd")
    assert all(q[4] == 1 for q in fwd.param_space(_p(), SM90))
    assert any(q[4] == 8 for q in get_solver("ConvTriton3dWrw").param_space(_p("W"), SM90))


def _deep(direction: str, layout: str = "NCDHW", n: int = 1, **kw: object) -> ConvProblem:
    """R3D-18's layer4.0.conv2 (512 -> 512, 3x3x3 at 2x7x7) at batch `n`, FP32."""
    return _p(direction, "FP32", layout, **{"n": n, "c": 512, "k": 512, "in_spatial": (2, 7, 7),
                                            **kw})


@pytest.mark.parametrize("direction", ["F", "B"])
@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
def test_small_grids_split_forward_and_backward_data(direction: str, layout: str) -> None:
    """At batch 1 a deep layer's unsplit launch is 16 programs of 432 steps each on 132 SMs:
    its defaults split the reduction (within SMALL_WAVES waves, SMALL_PART_STEPS steps a part,
    one doubling more breaking one of them), rank alone, and a reduce into the output
    follows; at batch 32 the grid fills the GPU and nothing splits."""
    for name in ("ConvTriton3d", "ConvTriton3dTf32x3"):
        solver = get_solver(name + SUFFIX[direction])
        p = _deep(direction, layout)
        params = solver.default_params(p, SM90)
        split = params[4]
        (gx, gy, gz), _ = solver.launch_geometry(p, params)
        unsplit = gx * gy
        assert split > 1 and gz == split and unsplit * split_spec.SMALL_GRID_FRACTION < SM90.cu
        steps = 27 * spec.cdiv(512, params[2])
        assert unsplit * split <= split_spec.SMALL_WAVES * SM90.cu
        assert steps // split >= split_spec.SMALL_PART_STEPS
        assert unsplit * split * 2 > split_spec.SMALL_WAVES * SM90.cu or \
            steps // (split * 2) < split_spec.SMALL_PART_STEPS
        assert solver.defaults_rule(p, SM90)
        assert solver.workspace_for(p, params) == split * 512 * 98 * 4
        (job, step), = solver.follow_ups(p, params, SM90)
        values = step.scalars()
        assert job.kernel_name == "conv2d_bwd_weight_reduce" and values["SPLIT_K"] == split
        out = "y" if direction == "F" else "dx"
        assert ("w_ptr", "ptr:" + out) in [(a.name, a.kind) for a in step.args]
        # The partials (n, c, d, h*w) walked into the output's strides.
        strides = {"NCDHW": (512 * 98, 98, 49, 1), "NDHWC": (98 * 512, 1, 49 * 512, 512)}
        assert (values["TOTAL"], values["C"], values["R"], values["S"]) == (512 * 98, 512, 2, 49)
        assert tuple(values[k] for k in ("swk", "swc", "swr", "sws")) == strides[layout]
        # One split object serves every split; the unsplit launch runs its own (SPLIT 0).
        unsplit_params = params[:4] + (1,) + params[5:]
        other_params = params[:4] + (2 if split != 2 else 4,) + params[5:]
        job = solver.compile_job(p, params, SM90)
        assert job == solver.compile_job(p, other_params, SM90)
        unsplit_job = solver.compile_job(p, unsplit_params, SM90)
        assert "-DSPLIT=1" in job.options and "-DSPLIT=0" in unsplit_job.options
        assert set(job.options) ^ set(unsplit_job.options) == {"-DSPLIT=1", "-DSPLIT=0"}
        assert solver.follow_ups(p, unsplit_params, SM90) == ()
        full = _deep(direction, layout, n=32)
        assert solver.default_params(full, SM90)[4] == 1
        assert not solver.defaults_rule(full, SM90)


def test_split_backward_data_launches_every_phase() -> None:
    """Strided backward data split: phases x parts programs on axis 2 (R3D-18's layer4.0.conv1
    at batch 1: 8 programs a phase). A 1x1x1 stride-2 layer's unsplit backward data runs
    phase 0 alone with dx cleared first, and its default stays so; split, every phase's
    parts write their partials, nothing cleared."""
    solver = get_solver("ConvTriton3dBwd")
    p = _deep("B", c=256, stride=(2, 2, 2), in_spatial=(4, 14, 14))
    params = solver.default_params(p, SM90)
    split = params[4]
    assert split > 1 and solver.launch_geometry(p, params)[0][2] == 8 * split
    down = _deep("B", c=256, filter=(1, 1, 1), pad=(0, 0, 0), stride=(2, 2, 2),
                 in_spatial=(4, 14, 14))
    params = solver.default_params(down, SM90)
    assert params[4] == 1 and solver.launch_geometry(down, params)[0][2] == 1
    assert solver.launch(down, params).zero_first == ("dx",)
    split = params[:4] + (4,) + params[5:]
    assert solver.params_valid(down, SM90, split)
    assert solver.launch_geometry(down, split)[0][2] == 8 * 4
    assert solver.launch(down, split).zero_first == ()


def test_no_split_where_the_reduce_cannot_walk_the_output() -> None:
    sizes = _view(_deep("F"))[1]
    packed = {"y": (512 * 98, 98, 49, 7, 1)}
    assert split_spec.out_reduce_values("F", sizes, packed) is not None
    # d and h mergeable, h and w not: the reduce walks (n, c, d*h, w).
    rows = split_spec.out_reduce_values("F", sizes,
                                        {"y": (512 * 2 * 7 * 9, 2 * 7 * 9, 7 * 9, 9, 1)})
    assert (rows["R"], rows["S"], rows["swr"], rows["sws"]) == (14, 7, 9, 1)
    apart = {"y": (10**6, 10**4, 1000, 9, 1)}
    assert split_spec.out_reduce_values("F", sizes, apart) is None
    # A split whose phases x parts pass the grid's z limit is no valid set.
    solver = get_solver("ConvTriton3dBwd")
    wide = _deep("B", c=16, k=16, in_spatial=(8, 32, 32), stride=(8, 32, 32))
    params = solver.default_params(wide, SM90)
    assert solver.params_valid(wide, SM90, params[:4] + (4,) + params[5:])
    assert not solver.params_valid(wide, SM90, params[:4] + (16,) + params[5:])
    assert split_spec.small_split("F", sizes, apart,
                                  spec.usual_tile("FP32", "F", "FP32", "sm90"), 132,
                                  "sm90") == 1


def test_backward_weights_split_fills_the_gpu_and_reduces_into_dw() -> None:
    solver = get_solver("ConvTriton3dWrw")
    p = _p("W")
    params = solver.default_params(p, SM90)
    split = params[4]
    (gx, gy, gz), _ = solver.launch_geometry(p, params)
    assert gz == split > 1 and gy == 27
    # Within WAVES waves, each part MIN_PART_STEPS steps or more, and one doubling more would
    # break one of them or MAX_SPLIT.
    steps = spec.cdiv(spec.gemm_dims("W", _view(p)[1])[2], params[2])  # BLOCK_K
    assert gx * gy * split <= spec.WAVES * SM90.cu and steps // split >= spec.MIN_PART_STEPS
    assert split == spec.MAX_SPLIT or gx * gy * split * 2 > spec.WAVES * SM90.cu or \
        steps // (split * 2) < spec.MIN_PART_STEPS
    assert solver.workspace_for(p, params) == split * 64 * 64 * 27 * 4
    (job, step), = solver.follow_ups(p, params, SM90)
    # One reduce object per element type: the split is its run-time argument.
    assert job.kernel_name == "conv2d_bwd_weight_reduce" and "SPLIT_K:i32" in str(job.options)
    values = step.scalars()
    assert values["SPLIT_K"] == split
    # The partials' order (t*R + r, s, g*k, c): T and R one axis of dw for the reduce kernel
    # (packed weights, stride_t = R * stride_r), channels innermost: stores contiguous in NDHWC.
    assert (values["TOTAL"], values["C"], values["R"], values["S"]) == (64 * 64 * 27, 3, 64, 64)
    assert [values[k] for k in ("swk", "swc", "swr", "sws")] == [3 * 64, 64, 27 * 64, 1]
    # The split is the grid's: one object serves every split.
    other = params[:4] + (split * 2,) + params[5:]
    assert solver.compile_job(p, other, SM90) == solver.compile_job(p, params, SM90)
    assert len(launch_jobs(solver, p, params, SM90)) == 2
    assert solver.follow_ups(p, params[:4] + (1,) + params[5:], SM90) == ()


def test_backward_data_grid_walks_the_stride_phases() -> None:
    solver = get_solver("ConvTriton3dBwd")
    p = _p("B", stride=(2, 2, 2))
    (_, gy, gz), _ = solver.launch_geometry(p, solver.default_params(p, SM90))
    assert (gy, gz) == (1, 8)
    grouped = _p("B", groups=4)
    assert solver.launch_geometry(grouped, solver.default_params(grouped, SM90))[0][1] == 4


def test_aligned_objects_only_where_the_problem_meets_the_assumption() -> None:
    solver = get_solver("ConvTriton3dFwd")
    aligned = solver.compile_job(_p(), solver.default_params(_p(), SM90), SM90)
    assert any(o.startswith("--assume=") for o in aligned.options)
    odd = _p(c=24, k=40)
    assert not any(o.startswith("--assume=")
                   for o in solver.compile_job(odd, solver.default_params(odd, SM90),
                                               SM90).options)
    nc = _p(layout="NCDHW")
    generic = solver.compile_job(nc, solver.default_params(nc, SM90), SM90)
    assert "-DCHANNELS_LAST=0" in generic.options
    assert not any(o.startswith("--assume=") for o in generic.options)
    # One tile for both layouts: the NCDHW object serves NDHWC problems and pointers that
    # miss the assumption.
    assert solver.default_params(nc, SM90) == solver.default_params(odd, SM90)
    assert solver.compile_job(odd, solver.default_params(odd, SM90), SM90) == generic
    assert solver.unaligned_job(_p(), solver.default_params(_p(), SM90), SM90) == generic


def test_shipped_objects_cover_the_defaults_of_every_case() -> None:
    per_target = {}
    for target in (SM90, Target("gfx90a", 110), Target("gfx942", 304)):
        jobs = {j for s in SOLVERS if s.name.startswith("ConvTriton3d")
                for j in s.dynamic_jobs(target)}
        for d, data_type, layout, size in itertools.product(
                "FBW", ("FP16", "BF16", "FP32"), ("NCDHW", "NDHWC"), ("", "few", "wide")):
            # few: a stem's 3 input channels, the narrow objects'; wide: 128 channels and
            # filters at batch 32, the wide ones'.
            kw = {"few": {"c": 3}, "wide": {"c": 128, "k": 128, "n": 32}}.get(size, {})
            p = _p(d, data_type, layout, **kw)
            for s in SOLVERS:
                if s.name.startswith("ConvTriton3d") and s.is_applicable(p, target):
                    needed = launch_jobs(s, p, s.default_params(p, target), target)
                    assert set(needed) <= jobs, (target.arch, s.name, p.key())
        per_target[target.arch] = len([j for j in jobs if j.kernel_file == "conv_triton_3d.py"])
    # Per precision: 3 directions x (the generic object + the aligned channels-last one); the
    # two 16-bit types add their narrow tiles' (3 directions x 2 objects each) and FP16 on
    # sm90 its wide ones (backward data and weights x 2 objects each); on sm90 forward and
    # backward data again as the usual tile's split objects (per precision 2 x 2), and the
    # 16-bit channels-last backward-weights tiles (FP16: usual, narrow, wide; BF16: usual,
    # narrow) again per tap group (ConvTriton3dTapsWrw: 3 groups x 2 objects).
    assert per_target == {"sm90": 30 + 12 + 4 + 5 * 3 * 2 + 5 * 4, "gfx90a": 18 + 12,
                          "gfx942": 24 + 12}


def test_few_channel_problems_take_the_narrow_tile() -> None:
    """A stem's 3 input channels: forward's reduction block and the backward directions'
    columns NARROW wide (16-bit), so the tile is no longer 95% zeros and the ranking keeps the
    family (it took the portable kernels at 3.5-17x cuDNN there); FP32 keeps its tile."""
    for d, block in (("F", 2), ("B", 1), ("W", 1)):
        solver = get_solver("ConvTriton3d" + SUFFIX[d])
        wide = solver.default_params(_p(d), SM90)
        narrow = solver.default_params(_p(d, c=3), SM90)
        assert narrow[block] == spec.NARROW < wide[block]
        view = _view(_p(d, c=3))[0]
        assert solver.efficiency(view, narrow) >= 4 * solver.efficiency(view, wide)
        assert solver.efficiency(view, narrow) > MIN_TILE_EFFICIENCY
        assert solver.default_params(_p(d, "FP32", c=3), SM90)[block] == \
            solver.default_params(_p(d, "FP32"), SM90)[block]


def test_wide_tiles_where_the_h200_sweep_found_them_faster() -> None:
    """WIDE_RULE, from the committed sweep (networks the fits may see): on the layers it picks,
    the wide tile never took longer than 1.25x the usual one, and over the run it saved at
    least 10%; the FP16 NDHWC problems it picks get the wide tile, the rest keep theirs."""
    import json
    import math

    root = Path(__file__).resolve().parents[2]
    for d, tile in spec.WIDE_TILES.items():
        run = json.loads((root / "bench" / "results" / f"tiles_3d_{d}_h200.json").read_text())
        assert run["device"].startswith("NVIDIA H")
        wide = "ConvTriton3d{}@{}:{}:{}:8:{}:{}".format(SUFFIX[d], *tile)
        shares = []
        for row in run["rows"]:
            assert not row["held_out"]
            k = row["key"].split("-")
            sizes = {"K": int(k[0]), "C": int(k[5]), "N": int(k[9]), "D": int(k[6]),
                     "H": int(k[7]), "W": int(k[8])}
            if sizes["K"] % 16 or sizes["C"] % 16:
                continue  # the generic object's row: the rule asks for the aligned one
            share = row["solvers"][wide]["gpu_ms"] / row["solvers"]["ConvTriton3d" + SUFFIX[d]][
                "gpu_ms"]
            picked = spec.wide_applies(d, "FP16", sizes, "sm90")
            assert not picked or share <= 1.25, row["key"]
            shares.append(share if picked else 1.0)
        assert len(shares) >= 20 and math.exp(sum(map(math.log, shares)) / len(shares)) < 0.9
        solver = get_solver("ConvTriton3d" + SUFFIX[d])
        big = _p(d, c=128, k=128, n=32)
        params = solver.default_params(big, SM90)
        assert (params[0], params[1], params[2]) == tile[:3]
        assert solver.default_params(big, Target("sm80", 108))[:3] != tile[:3]
        # FP32 and BF16 (unmeasured) and the generic object (NCDHW) keep their tiles.
        for other in (_p(d, "FP32", c=128, k=128, n=32), _p(d, "BF16", c=128, k=128, n=32),
                      _p(d, layout="NCDHW", c=128, k=128, n=32)):
            assert solver.default_params(other, SM90)[:3] != tile[:3]
        # Backward weights keep the usual tile's split (what the sweep measured).
        if d == "W":
            usual = spec.usual_tile("FP16", "W", "FP16", "sm90")
            assert params[4] == spec.split_for(_view(big)[1], usual, SM90.cu)


def test_transposed_problems_run_their_plain_convolutions_kernel() -> None:
    p = _p("F", mode="trans")  # its key (and plain convolution) is backward data
    assert not get_solver("ConvTriton3dFwd").is_applicable(p, SM90)
    solver = get_solver("ConvTriton3dBwd")
    assert solver.is_applicable(p, SM90)
    assert solver.launch(p, solver.default_params(p, SM90)).kernel_name == "conv3d_bwd_data"


def test_refuses_sizes_past_32_bit_offsets() -> None:
    assert not get_solver("ConvTriton3dFwd").is_applicable(_p(n=8192), SM90)
    sizes = dict(N=1, C=4, K=4, G=1, D=4, H=4, W=4, Z=4, P=4, Q=4, T=3, R=3, S=3,
                 stride_d=1, stride_h=1, stride_w=1, pad_d=1, pad_h=1, pad_w=1,
                 dil_d=1, dil_h=1, dil_w=1)
    packed = {"x": (256, 64, 16, 4, 1), "w": (108, 27, 9, 3, 1), "y": (256, 64, 16, 4, 1)}
    assert spec.applies(sizes, packed)
    # Weights whose depth stride is not R rows: the split's reduce cannot walk them.
    assert not spec.applies(sizes, {**packed, "w": (216, 54, 18, 3, 1)})


def test_argument_list_is_the_kernels_own() -> None:
    """Each kernel's parameters, a tuple parameter (spec.TUPLES) read as its members, are the
    flat list launches pass."""
    source = Path(spec.__file__).with_name("conv_triton_3d.py").read_text()
    tree = ast.parse(source)
    kernels = {f.name: [a.arg for a in f.args.args] for f in tree.body
               if isinstance(f, ast.FunctionDef) and f.name in spec.KERNEL.values()}
    assert set(kernels) == set(spec.KERNEL.values())
    for name, args in kernels.items():
        assert [a for a in args if a in spec.TUPLES] == ["dims", "conv", "strides"], name
        flat = [n for a in args for n in spec.TUPLES.get(a, (a,))]
        # Backward weights' tap group: constexprs with defaults, given where a group is.
        optional = ["TAPS", "TAP_AXIS"] if name == spec.KERNEL["W"] else []
        assert flat == [n for n, _ in spec.ARGS[name]] + optional, name


def test_backward_data_with_every_tap_on_phase_zero_runs_that_phase_alone() -> None:
    """A 1x1x1 stride-2 downsample's backward data: one program per tile of phase 0, dx
    cleared by the runtime first (its other seven phases are zero); with padding that moves
    the taps off phase 0, or on the relaid solvers (their kernel writes dx's copy), every
    phase runs."""
    t = Target("sm90", 132)
    spec = pytest.importorskip("miopenkernels.kernels.conv_triton_3d_spec")

    def p(layout: str, pad: int = 0, filt: int = 1, mode: str = "conv", direction: str = "B",
          dil: int = 1) -> ConvProblem:
        return ConvProblem(n=2, c=64, k=128, in_spatial=(8, 14, 14), filter=(filt,) * 3,
                           pad=(pad,) * 3, stride=(2, 2, 2), dilation=(dil,) * 3,
                           direction=direction, in_type="FP16", wei_type="FP16",
                           out_type="FP16", in_layout=layout, wei_layout=layout,
                           out_layout=layout, mode=mode)

    s = get_solver("ConvTriton3dBwd")
    for layout in ("NCDHW", "NDHWC"):
        launch = s.launch(p(layout), s.default_params(p(layout), t))
        assert launch.grid[2] == 1 and launch.zero_first == ("dx",)
        full = p(layout, pad=1, filt=3)
        params = s.default_params(full, t)
        launch = s.launch(full, params)  # every phase, split on this small grid
        assert launch.grid[2] == 8 * params[4] and launch.zero_first == ()
    # Padding 2 and dilation 2 on a 3x3x3 filter: every tap lands on phase 0 too.
    assert spec.lone_phase({"stride_d": 2, "stride_h": 2, "stride_w": 2, "pad_d": 2,
                            "pad_h": 2, "pad_w": 2, "dil_d": 2, "dil_h": 2, "dil_w": 2,
                            "T": 3, "R": 3, "S": 3})
    # A transposed layer's forward is the plain convolution's backward data: its y cleared.
    trans = p("NDHWC", mode="trans", direction="F")
    assert s.is_applicable(trans, t)
    assert s.launch(trans, s.default_params(trans, t)).zero_first == ("y",)
    via = get_solver("ConvTriton3dViaNdhwcBwd")
    params = via.default_params(p("NCDHW"), t)
    launch = via.launch(p("NCDHW"), params)
    assert launch.grid[2] == 8 * params[4] and launch.zero_first == ()


def test_a_chunked_one_phase_backward_data_clears_dx_once_before_its_first_chunk(
        monkeypatch, tmp_path) -> None:  # noqa: ANN001
    """A stride-2 downsample's backward data whose dx holds 2**31 elements or more: each
    chunk launches phase 0 alone, and the invoker clears the whole dx once, before the first
    chunk (the later chunks are its follow-ups, which clear nothing)."""
    db_env(monkeypatch, tmp_path)
    backend = NullBackend(SM90)
    solver = get_solver("ConvTriton3dChunksBwd")
    h = Handle(backend=backend, compiler=triton_compiler(), solvers=[solver])
    p = _p("B", n=256, in_spatial=(16, 112, 112), filter=(1, 1, 1), pad=(0, 0, 0),
           stride=(2, 2, 2))
    assert solver.is_applicable(p, SM90)
    params = solver.default_params(p, SM90)
    chunks = [solver.launch(p, params),
              *(launch for _, launch in solver.follow_ups(p, params, SM90))]
    assert len(chunks) > 1 and all(c.grid[2] == 1 for c in chunks)
    inv = make_invoker(h, p, solver, params=params)
    assert inv.zero_first == (("x", 256 * 64 * 16 * 112 * 112 * 2),)
    assert len(inv.then) == len(chunks) - 1


def test_fp32_on_a_small_grid_ranks_the_three_product_kernels_first() -> None:
    """Split on a small grid, the IEEE FP32 kernel took 1.08-1.70x the three-product one's
    GPU time (bench/results/split3d_h100/rule_2steps): it gives up first place there, and
    only there; 16-bit types and unsplit problems keep it."""
    for d in "FB":
        small, full = _deep(d), _deep(d, n=32)
        ieee = get_solver("ConvTriton3d" + SUFFIX[d])
        x3 = get_solver("ConvTriton3dTf32x3" + SUFFIX[d])
        assert ieee.default_params(small, SM90)[4] > 1
        assert not ieee.claims_first(small, SM90) and x3.claims_first(small, SM90)
        assert ieee.claims_first(full, SM90)
        half = _p(d, "FP16", "NCDHW", n=1, c=512, k=512, in_spatial=(2, 7, 7))
        assert ieee.default_params(half, SM90)[4] > 1 and ieee.claims_first(half, SM90)
        picked = Handle(target="sm90-132").solutions(small)[0].solver
        assert picked != ieee.name, picked

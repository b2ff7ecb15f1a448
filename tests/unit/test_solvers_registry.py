"""The solver and primitive registries: names, applicability, params, jobs and launches."""

from __future__ import annotations

import pickle

import pytest
from miopenkernels.errors import ProblemError
from miopenkernels.pooling import PoolProblem
from miopenkernels.primitives import PRIMITIVES, all_primitive_jobs
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import (
    BLAS_SOLVERS,
    FIRST_CLAIMS,
    IM2COL_SOLVERS,
    KN2ROW_BLAS_SOLVERS,
    SOLVERS,
    VIA_BLAS_SOLVERS,
    YIELDS_TO,
    CompileJob,
    KernelArg,
    all_dynamic_jobs,
    applicable_solvers,
    get_solver,
    ranked_solvers,
)
from miopenkernels.solvers._conv import conv_view, gemm_sizes
from miopenkernels.target import Target, default_targets

GFX906 = Target("gfx906", 60)  # no BF16 kernels
GFX90A = Target("gfx90a", 104)
SM90 = Target("sm90", 132)


def conv(**kw) -> ConvProblem:
    base = dict(n=2, c=16, k=32, in_spatial=(14, 14), filter=(3, 3), pad=(1, 1))
    base.update(kw)
    return ConvProblem(**base)  # type: ignore[arg-type]


def test_names_are_unique_and_say_direction():
    names = [s.name for s in SOLVERS]
    assert len(names) == len(set(names))
    for s in SOLVERS:
        assert s.name.endswith({"F": "Fwd", "B": "Bwd", "W": "Wrw"}[s.direction])
        assert get_solver(s.name) is s
    with pytest.raises(ProblemError, match="ConvDirectFwd"):
        get_solver("NoSuchSolver")


def test_algorithm_names_are_miopens():
    p = conv(direction="B")
    assert get_solver("ConvDirectBwd").algorithm(p) == "miopenConvolutionBwdDataAlgoDirect"
    assert get_solver("ConvWinograd3x3Fwd").algorithm(conv()) == \
        "miopenConvolutionFwdAlgoWinograd"
    assert get_solver("ConvImplicitGemmWrw").algorithm(conv(direction="W")) == \
        "miopenConvolutionBwdWeightsAlgoImplicitGEMM"
    assert get_solver("Conv1x1GemmFwd").algorithm(conv()) == "miopenConvolutionFwdAlgoGEMM"


PROBLEMS = [
    conv(),
    conv(direction="B", in_layout="NHWC"),
    conv(direction="W", groups=4, stride=(2, 2), dilation=(2, 2)),
    conv(filter=(1, 1), pad=(0, 0), stride=(2, 2)),
    conv(in_spatial=(6, 8, 8), filter=(3, 3, 3), pad=(1, 1, 1)),
    conv(mode="trans", stride=(2, 2), direction="F"),
    conv(in_type="FP16", in_layout="NHWC", direction="B"),
]


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.key())
def test_direct_solver_applies_to_every_problem(problem):
    names = [s.name for s in applicable_solvers(problem, GFX906)]
    assert f"ConvDirect{ {'F': 'Fwd', 'B': 'Bwd', 'W': 'Wrw'}[problem.key_direction]}" in names
    # Only solvers of the key direction apply; the ranking is by estimated cost.
    assert all(get_solver(n).direction == problem.key_direction for n in names)
    ranks = [s.heuristic_rank(problem, GFX906) for s in ranked_solvers(problem, GFX906)]
    assert ranks == sorted(ranks) and all(r > 0 for r in ranks)


def test_applicability_rules():
    names = lambda p, t=GFX906: {s.name for s in applicable_solvers(p, t)}  # noqa: E731
    assert "ConvWinograd3x3Fwd" in names(conv())
    assert "ConvWinograd3x3Fwd" not in names(conv(stride=(2, 2)))
    assert "ConvWinograd3x3Fwd" not in names(conv(dilation=(2, 2)))
    assert "ConvWinograd3x3Bwd" not in names(conv(direction="B", pad=(3, 3)))
    assert "ConvWinograd3x3Fwd" not in names(conv(in_spatial=(6, 8, 8), filter=(3, 3, 3),
                                                  pad=(1, 1, 1)))
    assert "Conv1x1GemmFwd" in names(conv(filter=(1, 1), pad=(0, 0), stride=(2, 2)))
    assert "Conv1x1GemmFwd" not in names(conv(filter=(1, 1), pad=(1, 1)))
    # Transposed forward is solved as backward data (MIOpen's convention and key).
    assert "ConvWinograd3x3Bwd" in names(conv(mode="trans"))
    # BF16 only where targets.toml gives the arch BF16 kernels; mixed types nowhere.
    assert names(conv(in_type="BF16")) == set()
    assert "ConvDirectFwd" in names(conv(in_type="BF16"), GFX90A)
    assert names(conv(in_type="FP16", out_type="FP32")) == set()
    assert names(conv(in_type="INT8")) == set()


def test_params_round_trip_and_space_is_legal():
    for s in SOLVERS:
        for p in PROBLEMS:
            if not s.is_applicable(p, GFX90A):
                continue
            space = s.param_space(p, GFX90A)
            default = s.default_params(p, GFX90A)
            assert default in space
            for params in space:
                assert s.params_from_string(s.params_to_string(params)) == params
                assert s.params_valid(p, GFX90A, params)
            if s.tunable and s.language == "hip":
                for tm, tn, tk, rm, rn in space:
                    threads = (tm // rm) * (tn // rn)
                    assert tm % rm == 0 and tn % rn == 0 and threads in (64, 128, 256)
                    assert 4 * tk * (tm + tn) <= 16384
    igemm = get_solver("ConvImplicitGemmFwd")
    assert igemm.params_to_string((64, 64, 8, 4, 4)) == "64,64,8,4,4"
    assert not igemm.params_valid(conv(), GFX90A, (64, 64, 8, 3, 4))
    with pytest.raises(ProblemError):
        igemm.params_from_string("64,x")
    with pytest.raises(ProblemError, match="illegal tile"):
        igemm.compile_job(conv(), (64, 64, 8, 3, 4), GFX90A)


def test_dynamic_jobs_deterministic_and_moderate():
    for target in default_targets():
        jobs = all_dynamic_jobs(target) + all_primitive_jobs(target)
        assert jobs == all_dynamic_jobs(target) + all_primitive_jobs(target)
        triton = [j for j in jobs if j.kernel_file.endswith(".py")]
        assert len(jobs) == len(set(jobs)) and len(jobs) - len(triton) <= 100
        # (default, usual winner) x kernels x types x layouts x align16, the usual
        # backward-weights tile at each of its six further splits and the usual forward and
        # backward-data tiles at their four (2 to 16); on sm90 the three-TF32-product
        # solvers' FP32 set too, and the Winograd backward-weights (47 objects) and 1x1 GEMM
        # solvers' (64), the small-grid forward tiles (60) and the few-filter forward tiles (14);
        # the direct families' (depthwise 63: the forward's unrolled 3x3, 5x5 and 7x7 objects
        # among them; grouped 24; the FP32 direct stems' and few-filter kernels' 6 each)
        # everywhere; on sm90 the 3-D forward and backward-data split objects (20); on NVIDIA
        # targets the im2col gather (3: solvers/blas_im2col.py); the few-channel kernels'
        # 16-bit channels-last objects aligned on y's (dy's) side and the few-channel forward
        # rule's refitted tiles (32 on sm90); on sm90 the pointwise row GEMMs' (24).
        assert len(triton) <= (959 if target.arch == "sm90" else 520)
        for job in jobs:
            assert list(job.options) == sorted(job.options)
            assert job.kdb_args.endswith(f" -mcpu={target.arch}")
    gfx906_types = {o for j in all_dynamic_jobs(GFX906) for o in j.options if "MK_TYPE" in o}
    assert gfx906_types == {"-DMK_TYPE=0", "-DMK_TYPE=1"}
    assert "-DMK_TYPE=2" in {o for j in all_dynamic_jobs(SM90) for o in j.options}


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.key())
def test_default_dynamic_job_is_shipped(problem):
    """Immediate mode must find the binary of the default params in every package."""
    for s in applicable_solvers(problem, GFX90A):
        job = s.compile_job(problem, s.default_params(problem, GFX90A), GFX90A)
        assert job in s.dynamic_jobs(GFX90A)


def test_compile_job_is_deterministic_and_specialised_bakes_the_shape():
    s = get_solver("ConvImplicitGemmFwd")
    p = conv(in_layout="NHWC")
    a = s.compile_job(p, (64, 64, 8, 4, 4), SM90, specialised=True)
    b = s.compile_job(conv(in_layout="NHWC"), (64, 64, 8, 4, 4), SM90, specialised=True)
    assert a == b and hash(a) == hash(b) and pickle.loads(pickle.dumps(a)) == a
    assert "-DMK_S_xs_c=1" in a.options and "-DMK_SPEC=1" in a.options
    dyn = s.compile_job(p, (64, 64, 8, 4, 4), SM90)
    assert not any(o.startswith("-DMK_S") for o in dyn.options)
    # Dynamic jobs ignore shape and layout: one binary for both.
    assert dyn == s.compile_job(conv(n=7, in_spatial=(9, 30)), (64, 64, 8, 4, 4), SM90)
    assert a.kdb_name == "conv_igemm.hip.o"
    assert a.kdb_args == " ".join(a.options) + " -mcpu=sm90"


def test_compile_job_record():
    job = CompileJob("conv_direct.hip", ("-DMK_TYPE=1", "-DMK_DIR=0"), "mk_conv_direct_fwd",
                     GFX906)
    assert job.options == ("-DMK_DIR=0", "-DMK_TYPE=1")
    assert job.kdb_args == "-DMK_DIR=0 -DMK_TYPE=1 -mcpu=gfx906"
    assert job.source_path.is_file()
    assert "mk_conv_direct" in job.source_path.read_text()


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.key())
def test_launch_grid_covers_the_output(problem):
    for s in applicable_solvers(problem, GFX90A):
        params = s.default_params(problem, GFX90A)
        launch = s.launch(problem, params)
        view = conv_view(problem)
        f = view.field
        assert launch.kernel_name == s.compile_job(problem, params, GFX90A).kernel_name
        threads = launch.block[0] * launch.block[1] * launch.block[2]
        assert threads <= 1024 and all(g >= 1 for g in launch.grid)
        if s.language == "triton":
            assert launch.needs_meta  # block and shared memory come from the object
            assert launch.grid[0] >= 1 and launch.grid[1] == problem.groups or \
                view.direction == "W"
        elif s.name.startswith(("ConvImplicitGemm", "Conv1x1Gemm")):
            m, n, _ = gemm_sizes(view)
            tm, tn = params[0], params[1]
            assert launch.grid[0] * tn >= n and launch.grid[1] * tm >= m
            assert launch.grid[2] == problem.groups
            assert threads == (tm // params[3]) * (tn // params[4])
        elif s.name.startswith("ConvWinograd"):
            h, w, ch = ((f("out_h"), f("out_w"), f("k")) if view.direction == "F"
                        else (f("in_h"), f("in_w"), f("c")))
            assert launch.grid[0] * threads >= f("n") * -(-h // 2) * -(-w // 2)
            assert launch.grid[1] == ch
        elif view.direction == "F":
            assert launch.grid[0] * threads >= f("n") * f("k") * f("out_d") * f("out_h") * \
                f("out_w")
        elif view.direction == "B":
            assert launch.grid[0] * threads >= f("n") * f("c") * f("in_d") * f("in_h") * \
                f("in_w")
        else:
            assert launch.grid[0] >= 1  # grid-stride over weights


def test_launch_arguments_name_the_problems_tensors():
    fwd = get_solver("ConvDirectFwd").launch(conv(), ())
    assert fwd.pointer_args() == ["x", "w", "y"]
    assert fwd.scalars()["k"] == 32 and fwd.scalars()["xs_w"] == 1
    bwd = get_solver("ConvDirectBwd").launch(conv(direction="B", in_layout="NHWC"), ())
    assert bwd.pointer_args() == ["dx", "w", "dy"]
    assert bwd.scalars()["xs_c"] == 1 and bwd.scalars()["ws_c"] == 1
    wrw = get_solver("ConvDirectWrw").launch(conv(direction="W"), ())
    assert wrw.pointer_args() == ["x", "dw", "dy"]
    # Transposed forward: the plain conv reads the layer's x as its dy and writes y as dx.
    trans = get_solver("ConvDirectBwd").launch(conv(mode="trans", stride=(2, 2)), ())
    assert trans.pointer_args() == ["y", "w", "x"]
    assert trans.scalars()["c"] == 32 and trans.scalars()["k"] == 16


def test_kernel_args_check_kinds_and_range():
    with pytest.raises(ValueError):
        KernelArg("a", "ptr:X")
    with pytest.raises(ValueError):
        KernelArg("a", "i32")
    with pytest.raises(ProblemError):
        KernelArg("a", "i32", 2**31)


def test_huge_tensors_take_only_the_batch_chunk_solver():
    big = conv(n=4096, c=256, k=256, in_spatial=(64, 64))  # 4.3e9 input elements
    assert [s.name for s in applicable_solvers(big, GFX90A)] == [
        "ConvTritonImplicitGemmChunksFwd"]  # a chunk of images at a time
    big3d = conv(n=32, c=1, k=32, in_spatial=(128, 128, 128), filter=(3, 3, 3), pad=(1, 1, 1))
    assert [s.name for s in applicable_solvers(big3d, GFX90A)] == [
        "ConvTriton3dChunksFwd", "ConvTriton3dSmallCChunksFwd"]  # and the few-channel ones
    assert applicable_solvers(big, Target("gfx906", 60)) == []  # no matrix cores: none
    one = conv(n=1, c=2**16, k=64, in_spatial=(256, 256))  # one image past 2**31: none
    assert applicable_solvers(one, GFX90A) == []


def test_heuristic_prefers_the_specialised_algorithms():
    def portable(p: ConvProblem, target: Target) -> list[str]:
        return [s.name for s in ranked_solvers(p, target) if s.language == "hip"]

    assert portable(conv(c=64, k=64), GFX90A)[0] == "ConvWinograd3x3Fwd"
    one = conv(c=64, k=64, filter=(1, 1), pad=(0, 0))
    assert portable(one, GFX90A)[0] == "Conv1x1GemmFwd"
    # Tensor cores first where the arch has them; the portable ones where it has not.
    assert ranked_solvers(one, GFX90A)[0].name == "ConvTritonImplicitGemmFwd"
    assert ranked_solvers(one, GFX906)[0].name == "Conv1x1GemmFwd"


def test_primitives_registry():
    assert [p.name for p in PRIMITIVES] == ["Activation", "Pooling", "BatchNormInference",
                                            "Softmax", "BiasAdd"]
    assert len(all_primitive_jobs(GFX906)) == 10 and len(all_primitive_jobs(SM90)) == 15
    pool = next(p for p in PRIMITIVES if p.name == "Pooling")
    prob = PoolProblem(n=2, c=3, in_spatial=(8, 8), window=(2, 2), pad=(0, 0), stride=(2, 2),
                       layout="NHWC")
    launch = pool.launch(prob)
    assert launch.pointer_args() == ["x", "y"]
    assert launch.scalars()["ys_c"] == 1 and launch.scalars()["out_h"] == 4
    assert launch.grid[0] * launch.block[0] >= 2 * 3 * 16
    back = PoolProblem(n=1, c=1, in_spatial=(4, 4), window=(2, 2), pad=(0, 0), stride=(2, 2),
                       direction="B")
    assert not pool.is_applicable(back, GFX906)


def test_the_ranks_first_precedence_is_an_order_over_registered_families() -> None:
    """Every family given way to has a claim and a solver in the registry, and no family gives
    way to itself, directly or through others (else two could each wait for the other)."""
    registered = {type(s) for s in (*SOLVERS, *BLAS_SOLVERS, *VIA_BLAS_SOLVERS,
                                    *KN2ROW_BLAS_SOLVERS, *IM2COL_SOLVERS)}  # the library's
    assert set(FIRST_CLAIMS) <= registered and set(YIELDS_TO) <= registered
    for winners in YIELDS_TO.values():
        assert set(winners) <= set(FIRST_CLAIMS)

    def above(family: type, path: tuple[type, ...]) -> None:
        assert family not in path, [f.__name__ for f in (*path, family)]
        for winner in YIELDS_TO.get(family, ()):
            above(winner, (*path, family))

    for family in YIELDS_TO:
        above(family, ())

"""Tensor-core (Triton) solvers without a GPU or Triton: applicability per target, tunables,
jobs and their kdb rows, launch metadata in a kdb blob, the math mode, and the invoker's use of
the metadata (block, shared memory, alignment fallback) on the null backend."""

from __future__ import annotations

from dataclasses import replace

import pytest
from find_doubles import PROBLEM, SM90, FakeSolver, db_env, fake_cubin
from miopenkernels import config
from miopenkernels.backends import NullBackend
from miopenkernels.codeobject import (
    LaunchMetadata,
    assumed_divisors,
    attach_launch_metadata,
    split_kdb_blob,
)
from miopenkernels.db.kerneldb import KernelDb
from miopenkernels.errors import CodeObjectError, ProblemError
from miopenkernels.find import make_invoker
from miopenkernels.handle import Handle
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import SOLVERS, get_solver
from miopenkernels.solvers.base import CompileJob, KernelArg, Launch
from miopenkernels.target import Target

spec = pytest.importorskip("miopenkernels.kernels.conv_triton_spec")

MATRIX = ["sm80-108", "sm86-84", "sm89-128", "sm90-132", "sm100-148", "sm120-170",
          "gfx90a-104", "gfx942-304", "gfx950-256", "gfx1100-48", "gfx1151-20", "gfx1200-16",
          "gfx1201-32"]
PORTABLE_ONLY = ["gfx900-64", "gfx906-60", "gfx908-120", "gfx1030-40"]
CONV = ConvProblem(n=8, c=64, k=128, in_spatial=(28, 28), filter=(3, 3), pad=(1, 1),
                   in_type="FP16")


def _p(**kw: object) -> ConvProblem:
    """CONV with changes; a type or layout given for the input applies to all three tensors
    unless the others are given too."""
    if "in_type" in kw:
        kw = {"wei_type": kw["in_type"], "out_type": kw["in_type"], **kw}
    if "in_layout" in kw:
        kw = {"wei_layout": kw["in_layout"], "out_layout": kw["in_layout"], **kw}
    return replace(CONV, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", MATRIX)
def test_every_direction_applies_on_matrix_core_targets(name: str) -> None:
    t = Target.parse(name)
    for d, suffix in zip("FBW", ("Fwd", "Bwd", "Wrw"), strict=True):
        s = get_solver(f"ConvTritonImplicitGemm{suffix}")
        assert s.is_applicable(_p(direction=d), t)
        assert s.is_applicable(_p(direction=d, in_layout="NHWC"), t)
        assert s.algorithm(_p(direction=d)).endswith("AlgoImplicitGEMM")


@pytest.mark.parametrize("name", PORTABLE_ONLY)
def test_archs_without_matrix_cores_keep_the_portable_solvers(name: str) -> None:
    t = Target.parse(name)
    assert not any(s.is_applicable(CONV, t) for s in SOLVERS if s.language == "triton")
    assert any(s.is_applicable(CONV, t) for s in SOLVERS if s.language == "hip")


def test_rejected_problems_and_types() -> None:
    fwd = get_solver("ConvTritonImplicitGemmFwd")
    tf32 = get_solver("ConvTritonImplicitGemmTf32Fwd")
    sm90, rdna = Target.parse("sm90-132"), Target.parse("gfx1100-48")
    three_d = ConvProblem(n=1, c=16, k=16, in_spatial=(4, 8, 8), filter=(3, 3, 3),
                          pad=(1, 1, 1), in_type="FP16")
    assert not fwd.is_applicable(three_d, sm90)  # 2D kernels only
    assert fwd.is_applicable(_p(in_type="FP32"), sm90)
    assert not fwd.is_applicable(_p(in_type="FP32"), rdna)  # wmma takes no FP32
    assert fwd.is_applicable(_p(in_type="BF16"), rdna)
    assert not fwd.is_applicable(_p(in_type="FP16", out_type="FP32"), sm90)
    assert tf32.is_applicable(_p(in_type="FP32"), sm90)
    assert not tf32.is_applicable(CONV, sm90)  # TF32 is an FP32 math mode
    assert not tf32.is_applicable(_p(in_type="FP32"), Target.parse("gfx90a-104"))
    huge = _p(n=4096, c=1024, in_spatial=(64, 64))  # 2**34 elements: 32-bit offsets break
    assert not fwd.is_applicable(huge, sm90)


@pytest.mark.parametrize("name", ["sm90-132", "sm120-170", "gfx942-304", "gfx1100-48"])
def test_parameter_space_fits_shared_memory_and_round_trips(name: str) -> None:
    t = Target.parse(name)
    s = get_solver("ConvTritonImplicitGemmFwd")
    kind = spec.target_kind(t.arch)
    space = s.param_space(CONV, t)
    assert space and s.default_params(CONV, t) in space
    for params in space:
        cfg = dict(zip(("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K", "num_warps",
                        "num_stages"), params, strict=True))
        assert spec.shared_bytes(cfg, "FP16") <= spec.TARGET_KINDS[kind]["smem"]
        assert s.params_from_string(s.params_to_string(params)) == params
        assert s.params_valid(CONV, t, params)
    # Measured winners where the spec has them (sm90), the spec's default elsewhere.
    want = "64,64,32,8,1,4,2" if kind not in getattr(spec, "TUNED_FILES", {}) else None
    assert want is None or s.params_to_string(s.default_params(CONV, t)) == want
    assert not s.params_valid(CONV, t, (64, 64, 32, 8, 1, 4))  # wrong length
    with pytest.raises(ProblemError):
        s.compile_job(CONV, (1, 2, 3), t)


def test_mma_sync_is_a_tf32_choice_on_sm90_alone() -> None:
    """An eighth parameter, MMA=2, asks for mma.sync in place of wgmma: in the TF32 solvers'
    sm90 space only, written only where it is not 0, and its job carries --mma=2."""
    fp32 = _p(in_type="FP32")
    tf32 = get_solver("ConvTritonImplicitGemmTf32Wrw")
    ieee = get_solver("ConvTritonImplicitGemmWrw")
    space = tf32.param_space(fp32, SM90)
    with_mma = [q for q in space if len(q) == 8]
    assert with_mma and all(q[7] == 2 for q in with_mma)
    assert len(with_mma) == len(space) - len(with_mma)  # each tile with and without
    assert not any(len(q) == 8 for q in ieee.param_space(fp32, SM90))
    q = with_mma[0]
    assert tf32.params_to_string(q).endswith(",2")
    assert tf32.params_from_string(tf32.params_to_string(q)) == q
    assert tf32.params_valid(fp32, SM90, q) and not ieee.params_valid(fp32, SM90, q)
    assert not tf32.params_valid(fp32, Target.parse("sm100-148"), q)
    assert not tf32.params_valid(fp32, SM90, q[:7] + (3,))
    assert tf32.params_valid(fp32, SM90, q[:7]) and tf32.params_valid(fp32, SM90, q[:7] + (0,))
    job = tf32.compile_job(fp32, q, SM90)
    plain = tf32.compile_job(fp32, q[:7], SM90)
    assert "--mma=2" in job.options and not any(o.startswith("--mma") for o in plain.options)
    assert tf32.compile_job(fp32, q[:7] + (0,), SM90) == plain
    assert job.kdb_args != plain.kdb_args  # two kdb rows


def test_three_tf32_products_are_an_fp32_choice_on_sm90_alone() -> None:
    """ConvTritonImplicitGemmTf32x3*: FP32 problems in either math mode, on the spec's
    TF32X3_KINDS only; PRECISION tf32x3 in the job, mma.sync among the tiles, the FP32X3
    tuned cases for their defaults."""
    fp32 = _p(in_type="FP32", wei_type="FP32", out_type="FP32")
    x3 = get_solver("ConvTritonImplicitGemmTf32x3Fwd")
    assert x3.math == "tf32x3" and x3.rank_first
    assert x3.is_applicable(fp32, SM90)
    assert not x3.is_applicable(_p(), SM90)  # FP16
    for other in ("sm80-108", "sm100-148", "gfx942-304"):
        assert not x3.is_applicable(fp32, Target.parse(other))
    params = x3.default_params(fp32, SM90)
    job = x3.compile_job(fp32, params, SM90)
    assert "-DPRECISION=tf32x3" in job.options
    ieee = get_solver("ConvTritonImplicitGemmFwd")
    assert "-DPRECISION=ieee" in ieee.compile_job(fp32, params[:7], SM90).options
    assert any(len(q) == 8 for q in x3.param_space(fp32, SM90))
    sizes = {"N": 32, "C": 64, "H": 56, "W": 56, "K": 64, "P": 56, "Q": 56, "R": 3, "S": 3,
             "G": 1, "stride_h": 1, "stride_w": 1, "pad_h": 1, "pad_w": 1, "dil_h": 1,
             "dil_w": 1}
    assert spec.tuned_config("sm90", "FP32X3-F-NCHW", sizes) is not None
    # Both math modes admit them (FP32 accuracy); TF32 solvers only the TF32 mode.
    for mode, tf32 in (("IEEE", False), ("TF32", True)):
        names = {s.name for s in Handle(target=SM90, backend=NullBackend(),
                                        math_mode=mode).context._solvers_for("F")}
        assert "ConvTritonImplicitGemmTf32x3Fwd" in names
        assert ("ConvTritonImplicitGemmTf32Fwd" in names) == tf32


def test_jobs_name_their_kernel_and_assumptions() -> None:
    s = get_solver("ConvTritonImplicitGemmFwd")
    params = s.default_params(CONV, SM90)
    job = s.compile_job(CONV, params, SM90)
    assert job.kdb_name == "conv_triton.py.o" and job.kernel_name == "conv2d_fwd"
    assert "--kernel=conv2d_fwd" in job.options and job.kdb_args.endswith(" -mcpu=sm90")
    assert any(o.startswith("--assume=x_ptr:16,") for o in job.options)
    # Shape-agnostic: specialised or not, one object.
    assert s.compile_job(CONV, params, SM90, specialised=True) == job
    loose = s.unaligned_job(CONV, params, SM90)
    assert not any(o.startswith("--assume") for o in loose.options)
    # Channels that are not multiples of 16 never get the assumption.
    odd = s.compile_job(_p(c=24), s.default_params(_p(c=24), SM90), SM90)
    assert not any(o.startswith("--assume") for o in odd.options)
    few = _p(c=3, filter=(7, 7))
    small_c = s.compile_job(few, s.default_params(few, SM90), SM90)
    assert small_c.kernel_name == "conv2d_fwd_smallc"
    # Every job of the solver for a problem it accepts ships in the package.
    shipped = set(s.dynamic_jobs(SM90))
    assert {job, loose, odd, small_c} <= shipped
    tf32 = get_solver("ConvTritonImplicitGemmTf32Fwd")
    assert "-DPRECISION=tf32" in tf32.compile_job(_p(in_type="FP32"), params, SM90).options


def test_launch_maps_tensors_per_direction() -> None:
    for d, tensors in (("F", ["x", "w", "y"]), ("B", ["dx", "w", "dy"]),
                       ("W", ["x", "dw", "dy"])):
        s = next(s for s in SOLVERS if s.language == "triton" and d in s.directions)
        launch = s.launch(_p(direction=d), s.default_params(_p(direction=d), SM90))
        assert launch.pointer_args()[:3] == tensors and launch.needs_meta
        assert [a.name for a in launch.args][-2:] == ["global_scratch", "profile_scratch"]


# ------------------------------------------------------------------ metadata in the kdb
META = LaunchMetadata("k", threads_per_block=128, shared_bytes=65536,
                      scratch_args=(("global_scratch", 0, 1), ("profile_scratch", 0, 1)),
                      assumptions=("x % 16 == 0", "C % 16 == 0"))


def test_launch_metadata_travels_in_a_kdb_row(tmp_path) -> None:  # noqa: ANN001
    code = fake_cubin(90, ["k"])
    blob = attach_launch_metadata(code, META)
    with KernelDb(tmp_path / "sm9084.kdb", readonly=False) as db:
        db.store("conv_triton.py.o", "--kernel=k -mcpu=sm90", blob)
    with KernelDb(tmp_path / "sm9084.kdb") as db:
        back = db.load("conv_triton.py.o", "--kernel=k -mcpu=sm90")
    assert split_kdb_blob(back) == (code, META)
    assert split_kdb_blob(code) == (code, None)
    assert assumed_divisors(META) == {"x": 16, "C": 16}


def test_a_damaged_trailer_is_a_code_object_error() -> None:
    blob = attach_launch_metadata(fake_cubin(90, ["k"]), META)
    cut = blob[:-30] + blob[-16:]  # JSON cut short
    with pytest.raises(CodeObjectError):
        split_kdb_blob(cut)
    huge = blob[:-16] + (2**62).to_bytes(8, "little") + b"MKLAUNCH"
    with pytest.raises(CodeObjectError, match="claims"):
        split_kdb_blob(huge)


# ------------------------------------------------------------------ runtime
class TritonLike(FakeSolver):
    """Launches like a Triton solver: needs metadata, scratch pointers, align16 on x."""

    language = "triton"

    def compile_job(self, problem: ConvProblem, params: tuple[int, ...], target: Target,
                    specialised: bool = False) -> CompileJob:
        return CompileJob("tt.py", ("--assume=x:16", "--kernel=tk"), "tk", target)

    def unaligned_job(self, problem: ConvProblem, params: tuple[int, ...], target: Target
                      ) -> CompileJob:
        return CompileJob("tt.py", ("--kernel=tk",), "tk", target)

    def launch(self, problem: ConvProblem, params: tuple[int, ...],
               specialised: bool = False) -> Launch:
        base = super().launch(problem, params, specialised)
        return replace(base, kernel_name="tk", needs_meta=True, args=(
            *base.args, KernelArg("global_scratch", "ptr:workspace"),
            KernelArg("profile_scratch", "ptr:workspace")))


class MetaCompiler:
    def __init__(self, shared: int = 98304) -> None:
        self.jobs: list[CompileJob] = []
        self.shared = shared

    def __call__(self, job: CompileJob) -> bytes:
        self.jobs.append(job)
        assume = ("x % 16 == 0",) if "--assume=x:16" in job.options else ()
        meta = replace(META, kernel="tk", shared_bytes=self.shared, assumptions=assume)
        return attach_launch_metadata(fake_cubin(90, ["tk"]), meta)


def test_invoker_takes_block_and_shared_memory_from_the_object_and_realigns(
        monkeypatch, tmp_path) -> None:  # noqa: ANN001
    db_env(monkeypatch, tmp_path)
    backend = NullBackend(SM90)
    comp = MetaCompiler()
    h = Handle(backend=backend, compiler=comp, solvers=[TritonLike("T", 1.0)])
    inv = make_invoker(h, PROBLEM, h.solvers[0])
    assert inv.alignment == (("x", 16),)
    bufs = {r: backend.alloc(4096) for r in ("x", "w", "y")}
    ptrs = {r: b.ptr for r, b in bufs.items()} | {"workspace": 0}
    inv(ptrs)
    last = backend.recorded[-1]
    assert last.block == (128, 1, 1) and last.shared == 98304  # above 48 KiB: opt-in on CUDA
    assert len(comp.jobs) == 1
    inv(ptrs | {"x": ptrs["x"] + 8})  # not 16-byte aligned: the variant without it runs
    assert [j.options for j in comp.jobs][-1] == ("--kernel=tk",)
    assert dict(backend.recorded[-1].args)["ptr:x"] == ptrs["x"] + 8
    inv(ptrs | {"x": ptrs["x"] + 8})
    assert len(comp.jobs) == 2  # the variant is built once


def test_an_object_without_metadata_or_with_scratch_is_refused(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    db_env(monkeypatch, tmp_path)

    def bare(job: CompileJob) -> bytes:
        return fake_cubin(90, ["tk"])

    h = Handle(backend=NullBackend(SM90), compiler=bare, solvers=[TritonLike("T", 1.0)])
    with pytest.raises(ProblemError, match="no launch metadata"):
        make_invoker(h, PROBLEM, h.solvers[0])

    def scratch(job: CompileJob) -> bytes:
        meta = replace(META, kernel="tk", assumptions=(),
                       scratch_args=(("global_scratch", 256, 8), ("profile_scratch", 0, 1)))
        return attach_launch_metadata(fake_cubin(90, ["tk"]), meta)

    monkeypatch.setenv("MIOPEN_DISABLE_CACHE", "1")  # not the first object from the cache
    h = Handle(backend=NullBackend(SM90), compiler=scratch, solvers=[TritonLike("T", 1.0)])
    with pytest.raises(ProblemError, match="scratch memory"):
        make_invoker(h, PROBLEM, h.solvers[0])


def test_tf32_is_a_math_mode_with_its_own_finddb_keys(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    db_env(monkeypatch, tmp_path)
    monkeypatch.delenv("MIOPENKERNELS_FP32_MATH", raising=False)
    fp32 = _p(in_type="FP32")
    ieee = Handle(backend=NullBackend(SM90), compiler=MetaCompiler())
    names = {s.name for s in ieee.applicable_solvers(fp32)}
    assert "ConvTritonImplicitGemmFwd" in names and "ConvTritonImplicitGemmTf32Fwd" not in names
    assert ieee.finddb_key(fp32) == fp32.key()
    tf32 = Handle(backend=NullBackend(SM90), compiler=MetaCompiler(), math_mode="TF32")
    assert "ConvTritonImplicitGemmTf32Fwd" in {s.name for s in tf32.applicable_solvers(fp32)}
    assert tf32.finddb_key(fp32) == fp32.key() + "_tf32"
    assert tf32.finddb_key(CONV) == CONV.key()  # FP16 is the same either way
    monkeypatch.setenv("MIOPENKERNELS_FP32_MATH", "TF32")
    assert Handle(backend=NullBackend(SM90)).math_mode == config.MathMode.TF32
    monkeypatch.setenv("MIOPENKERNELS_FP32_MATH", "fast")
    with pytest.raises(Exception, match="MIOPENKERNELS_FP32_MATH"):
        Handle(backend=NullBackend(SM90))


def test_without_triton_or_a_kdb_object_the_portable_solvers_remain(monkeypatch,
                                                                      tmp_path) -> None:  # noqa: ANN001
    db_env(monkeypatch, tmp_path)
    monkeypatch.setattr(config, "triton_importable", lambda: False)
    h = Handle(backend=NullBackend(SM90))
    names = [s.name for s in h.applicable_solvers(CONV)]
    assert names and not any("Triton" in n for n in names)
    # Once the object is at hand (the package's kdb or the cache), the solver is back.
    s = get_solver("ConvTritonImplicitGemmFwd")
    job = s.compile_job(CONV, h.params_for(CONV, s), h.target)
    blob = attach_launch_metadata(fake_cubin(90, ["conv2d_fwd"]), replace(META,
                                                                           kernel="conv2d_fwd"))
    h.store.user_kdb_for_write().store(job.kdb_name, job.kdb_args, blob)
    assert "ConvTritonImplicitGemmFwd" in [s.name for s in h.applicable_solvers(CONV)]


def test_miopenkernels_triton_0_turns_the_solvers_off(monkeypatch) -> None:  # noqa: ANN001
    from miopenkernels.solvers import all_dynamic_jobs

    fwd = get_solver("ConvTritonImplicitGemmFwd")
    assert fwd.is_applicable(CONV, SM90) and fwd.dynamic_jobs(SM90)
    monkeypatch.setenv("MIOPENKERNELS_TRITON", "0")
    assert not fwd.is_applicable(CONV, SM90) and fwd.dynamic_jobs(SM90) == []
    assert not any(j.kernel_file.endswith(".py") for j in all_dynamic_jobs(SM90))


def test_search_tries_the_measured_winners_of_the_case_right_after_the_defaults() -> None:
    from miopenkernels.find import candidate_params

    target = Target.parse("sm90-132")
    solver = get_solver("ConvTritonImplicitGemmFwd")
    seeds = solver.seed_params(CONV, target)
    table = spec.tuned_table("sm90")["configs"]["FP16-F-NCHW"]
    assert 1 < len(seeds) <= len(table)
    assert all(p[4] == 1 and solver.params_valid(CONV, target, p) for p in seeds)
    got = candidate_params(solver, CONV, target, max_candidates=3)
    default = solver.default_params(CONV, target)
    assert got[0] == default and len(set(got)) == len(got)
    assert [p for p in got[1:] if p in seeds] == [p for p in seeds if p != default]
    assert len(got) <= 1 + len(seeds) + 3
    # A target kind without a tuned table has no seeds; the portable solvers have none.
    assert solver.seed_params(CONV, Target.parse("gfx942-304")) == []
    assert get_solver("ConvDirectFwd").seed_params(CONV, target) == []


def test_backward_weights_seeds_split_to_fill_the_gpu_and_a_measured_layer_leads() -> None:
    """Backward weights' seeds carry the split that fills the target's CUs for the problem
    (unsplit, a first layer's pixel reduction runs on a handful of programs); the layer's own
    measured configuration comes first."""
    target = Target.parse("sm90-132")
    first = _p(direction="W", n=32, c=3, k=64, in_spatial=(224, 224), filter=(7, 7), pad=(3, 3),
               stride=(2, 2), in_layout="NHWC", wei_layout="NHWC", out_layout="NHWC")
    solver = get_solver("ConvTritonImplicitGemmWrw")
    seeds = solver.seed_params(first, target)
    assert seeds and all(p[4] > 1 for p in seeds)
    own = spec.tuned_config("sm90", "FP16-W-NHWC", spec_sizes(first))
    assert seeds[0] == solver._params(own)


def test_a_few_channel_kernel_takes_the_usual_tile_of_its_own_layers() -> None:
    """Where a first layer (C=3) was not measured at its batch size, its few-channel kernel
    takes the tile measured on the case's few-channel layers, not the case's usual tile of the
    other layers (a BLOCK_N of 64 over its 7 x 3 columns); the other layers keep theirs."""
    target = Target.parse("sm90-132")
    for layout in ("NCHW", "NHWC"):
        first = _p(direction="W", n=64, c=3, k=64, in_spatial=(224, 224), filter=(7, 7),
                   pad=(3, 3), stride=(2, 2), in_layout=layout, wei_layout=layout,
                   out_layout=layout)
        case = f"FP16-W-{layout}"
        measured = spec.tuned_config("sm90", case, spec_sizes(replace(first, n=32)))
        params = get_solver("ConvTritonImplicitGemmWrw").default_params(first, target)
        assert params[:3] == (measured["BLOCK_M"], measured["BLOCK_N"], measured["BLOCK_K"])
        assert spec.usual_config("sm90", case, "conv2d_bwd_weight_smallc")["BLOCK_N"] == 32
        assert spec.usual_config("sm90", case, "conv2d_bwd_weight") == \
            spec.tuned_table("sm90")["defaults"][case]
        assert spec.usual_config("sm90", case, "conv2d_bwd_weight")["BLOCK_N"] > 32
    assert spec.shape_sizes("n1c3") is None
    assert spec.shape_sizes(spec.shape_key(spec_sizes(first)))["C"] == 3


def spec_sizes(problem: ConvProblem) -> dict[str, int]:
    from miopenkernels.solvers.triton_common import problem_view
    from miopenkernels.solvers.triton_common import spec_sizes as sizes

    return sizes(problem_view(problem)[0])


# ------------------------------------------------------------------ split-K backward weights
def _split_params(problem: ConvProblem, split: int) -> tuple[int, ...]:
    solver = get_solver("ConvTritonImplicitGemmWrw")
    for params in solver.param_space(problem, SM90):
        if params[4] == split:  # SPLIT_K
            return tuple(params)
    raise AssertionError(f"no SPLIT_K={split} set in the space")


def test_split_k_is_searched_where_the_kernel_computes_it() -> None:
    """Every direction searches SPLIT_K > 1, except backward data where a stride phase has no
    filter tap (1x1, stride 2) and the few-channel forward kernel, which has no split."""
    for name, problem, split in (
            ("ConvTritonImplicitGemmWrw", _p(direction="W"), True),
            ("ConvTritonImplicitGemmFwd", _p(), True),
            ("ConvTritonImplicitGemmBwd", _p(direction="B"), True),
            ("ConvTritonImplicitGemmBwd", _p(direction="B", filter=(1, 1), pad=(0, 0),
                                             stride=(2, 2)), False),
            ("ConvTritonImplicitGemmFwd", _p(c=3, filter=(7, 7)), False)):
        solver = get_solver(name)
        splits = {p[4] for p in solver.param_space(problem, SM90)}
        assert (splits > {1}) == split, name
        split_params = (64, 64, 32, 8, 4, 4, 2)
        assert solver.params_valid(problem, SM90, split_params) == split, name


def test_an_idle_grid_splits_forward_and_backward_data_by_default() -> None:
    """A shape the tuned table does not hold, whose usual tiles would leave most SMs idle
    (batch 1, 7x7), splits its reduction; a measured layer keeps its own tile; the split's
    objects ship with the package."""
    small = _p(n=1, c=512, k=512, in_spatial=(7, 7))
    for name in ("ConvTritonImplicitGemmFwd", "ConvTritonImplicitGemmBwd"):
        solver = get_solver(name)
        problem = small if name.endswith("Fwd") else _p(n=1, c=512, k=512, in_spatial=(7, 7),
                                                        direction="B")
        params = solver.default_params(problem, SM90)
        assert params[4] > 1, name
        assert solver.params_valid(problem, SM90, params)
        assert solver.workspace_for(problem, params) > 0
        assert solver.compile_job(problem, params, SM90) in set(solver.dynamic_jobs(SM90))
        assert len(solver.follow_ups(problem, params, SM90)) == 1  # the reduce launch
    big = _p(n=256, c=64, k=64, in_spatial=(56, 56))
    assert get_solver("ConvTritonImplicitGemmFwd").default_params(big, SM90)[4] == 1
    # A ResNet-50 layer the tuned table holds with a tile of its own (1x1 stride 2 backward
    # data at batch 32) defaults to it, and the ranking gets the usual tile beside it, whose
    # objects ship; 7x7 backward data at batch 32, whose own tile fills under half the SMs,
    # is split.
    bwd = get_solver("ConvTritonImplicitGemmBwd")
    own = _p(n=32, c=1024, k=2048, in_spatial=(14, 14), filter=(1, 1), pad=(0, 0),
             stride=(2, 2), direction="B")
    shipped = set(bwd.dynamic_jobs(SM90))
    assert bwd.compile_job(own, bwd.default_params(own, SM90), SM90) not in shipped
    usual = bwd.usual_params(own, SM90)
    assert len(usual) == 1 and bwd.compile_job(own, usual[0], SM90) in shipped
    late = _p(n=32, c=512, k=512, in_spatial=(7, 7), direction="B")
    assert bwd.default_params(late, SM90)[4] > 1
    # The forward on a small grid defaults to the small-grid rule's tile (triton_small_grid);
    # the usual tile, split, ships beside it.
    fwd = get_solver("ConvTritonImplicitGemmFwd")
    usual = fwd.usual_params(small, SM90)
    assert len(usual) == 1 and usual[0][:3] != fwd.default_params(small, SM90)[:3]
    assert fwd.compile_job(small, usual[0], SM90) in set(fwd.dynamic_jobs(SM90))


def test_split_k_backward_weights_sums_its_partials_in_a_second_launch(
        monkeypatch, tmp_path) -> None:  # noqa: ANN001
    """SPLIT_K = 4: the main kernel writes FP32 partials to the workspace, then the reduce
    kernel (its own object, a companion of the main one in every build) sums them into dw."""
    from miopenkernels.solvers import companion_jobs, with_companions

    db_env(monkeypatch, tmp_path)
    backend = NullBackend(SM90)
    built: list[CompileJob] = []

    def compiler(job: CompileJob) -> bytes:
        built.append(job)
        warps = next(int(o.split("=")[1]) for o in job.options if o.startswith("--num-warps="))
        meta = LaunchMetadata(job.kernel_name, threads_per_block=32 * warps, shared_bytes=0,
                              scratch_args=(("global_scratch", 0, 1), ("profile_scratch", 0, 1)))
        return attach_launch_metadata(fake_cubin(90, [job.kernel_name]), meta)

    problem = _p(direction="W")
    solver = get_solver("ConvTritonImplicitGemmWrw")
    params = _split_params(problem, 4)
    assert solver.params_valid(problem, SM90, params)
    h = Handle(backend=backend, compiler=compiler, solvers=[solver])
    inv = make_invoker(h, problem, solver, params=params)
    k, c, r, s = problem.wei_shape
    assert inv.workspace_bytes == 4 * k * c * r * s * 4  # FP32 partials per split
    main, reduce = built
    assert reduce.kernel_name == "conv2d_bwd_weight_reduce" and "SPLIT_K:i32" in str(reduce.options)
    # The usual reduce object runs here (a split of 4); a package holds the wide one too.
    (usual, wide), = [companion_jobs(main)]
    assert usual == reduce and "-DPARTS=32" in wide.options and companion_jobs(reduce) == ()
    assert with_companions([main]) == [main, reduce, wide]
    one = solver.compile_job(problem, (*params[:4], 1, *params[5:]), SM90)
    assert companion_jobs(one) == ()
    bufs = {role: backend.alloc(1 << 20) for role in ("x", "w", "y", "workspace")}
    ptrs = {role: b.ptr for role, b in bufs.items()}
    inv(ptrs)
    first, second = backend.recorded[-2:]
    assert (first.kernel, second.kernel) == ("conv2d_bwd_weight", "conv2d_bwd_weight_reduce")
    assert first.grid[2] == 4 and second.block == (spec.REDUCE_WARPS * 32, 1, 1)
    assert second.grid == (spec.cdiv(k * c * r * s, spec.REDUCE_BLOCK), 1, 1)
    args = second.args
    assert args[0] == ("ptr:workspace", ptrs["workspace"]) and args[1] == ("ptr:dw", ptrs["w"])
    assert [v for kind, v in args if kind == "i32"][:4] == [k * c * r * s, s, k, c]
    # (TOTAL, then the partials' order: taps, filters, channels; reduce_args)
    assert [v for kind, v in args if kind == "i32"][8] == 4  # the split: a run-time argument
    # No workspace address: a one-line error before anything is launched.
    launched = len(backend.recorded)
    with pytest.raises(ProblemError, match="bytes of workspace"):
        inv({**ptrs, "workspace": 0})
    assert len(backend.recorded) == launched


def test_backward_weights_defaults_split_the_reduction_to_fill_the_gpu() -> None:
    """On a measured kind, backward weights default to the case's usual tile with SPLIT_K from
    the spec's rule: a layer of few output tiles is split, a large one is not; the object of
    every split the rule can choose (and its reduce companion) is among the shipped jobs, and the
    workspace a ranked solution reports is its split's partial sums."""
    from miopenkernels.solvers import with_companions

    target = Target.parse("sm90-132")
    solver = get_solver("ConvTritonImplicitGemmWrw")
    few = ConvProblem(n=32, c=64, k=64, in_spatial=(56, 56), filter=(3, 3), pad=(1, 1),
                      direction="W", in_type="FP16", wei_type="FP16", out_type="FP16")
    many = ConvProblem(n=64, c=512, k=512, in_spatial=(14, 14), filter=(3, 3), pad=(1, 1),
                       direction="W")
    split_few = solver.default_params(few, target)
    split_many = solver.default_params(many, target)
    assert split_few[4] > 1 and split_many[4] == 1
    assert solver.params_valid(few, target, split_few)
    k, c, r, s = few.wei_shape
    assert solver.workspace_for(few, split_few) == split_few[4] * k * c * r * s * 4
    assert solver.workspace_for(many, split_many) == 0
    # Fewer CUs, fewer parts; no target kind without a tuned table splits by default.
    assert solver.default_params(few, Target.parse("sm90-16"))[4] < split_few[4]
    assert solver.default_params(few, Target.parse("gfx942-304"))[4] == 1
    shipped = set(with_companions(solver.dynamic_jobs(target)))
    for problem in (few, many, replace(few, n=1), replace(few, in_spatial=(112, 112))):
        params = solver.default_params(problem, target)
        assert solver.compile_job(problem, params, target) in shipped, (problem.key(), params)
        assert all(job in shipped for job, _ in solver.follow_ups(problem, params, target))


def test_a_ranked_split_solution_reports_its_workspace(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    """Immediate mode over a backward-weights problem of few output tiles: the tensor-core
    solution carries its split parameters and reports their partial sums as its workspace,
    as `Handle.workspace_size` does for it; the invoker allocates no less."""
    db_env(monkeypatch, tmp_path)
    monkeypatch.setattr(config, "triton_importable", lambda: True)  # rank as if compilable
    h = Handle(backend=NullBackend(Target.parse("sm90-132")))
    problem = ConvProblem(n=32, c=64, k=64, in_spatial=(56, 56), filter=(3, 3), pad=(1, 1),
                          direction="W", in_type="FP16", wei_type="FP16", out_type="FP16")
    sols = h.solutions(problem)
    mine = [s for s in sols if s.solver == "ConvTritonImplicitGemmWrw"]
    assert mine and mine[0].params and mine[0].params[4] > 1, sols
    k, c, r, s = problem.wei_shape
    assert mine[0].workspace == mine[0].params[4] * k * c * r * s * 4
    assert h.workspace_size(problem, mine[0]) == mine[0].workspace
    assert h.workspace_size(problem, "ConvDirectWrw") == 0


def test_the_ranking_keeps_split_defaults_over_unsplit_sets() -> None:
    """Where the defaults split the reduction, the miss ranking weighs them alone: an unsplit
    set offered beside them (a neighbour's tuned set) is not picked; where their object is not
    at hand, the other sets are weighed as before."""
    from miopenkernels.ranking import rank_candidates

    solver = get_solver("ConvTritonImplicitGemmWrw")
    problem = _p(direction="W")
    default = solver.default_params(problem, SM90)
    assert default[4] > 1 and solver.defaults_rule(problem, SM90)
    unsplit = (64, 64, 32, 8, 1, 4, 2)
    extra = {solver.name: [unsplit]}
    picked = rank_candidates(problem, SM90, [solver], lambda s, q: True, extra_params=extra)
    assert [c.params for c in picked] == [default]
    missing = rank_candidates(problem, SM90, [solver], lambda s, q: q != default,
                              extra_params=extra)
    assert missing and missing[0].params != default
    assert not get_solver("ConvTritonImplicitGemmFwd").defaults_rule(
        _p(n=256, in_spatial=(56, 56)), SM90)


def test_tf32_solvers_rank_first() -> None:
    """Under the TF32 math mode the TF32 tensor-core solver's candidate goes first, whatever
    the model predicts for the IEEE and portable solvers."""
    from miopenkernels.ranking import rank_candidates
    from miopenkernels.solvers import applicable_solvers

    # NHWC: in NCHW the TF32 solver that runs the NHWC kernel goes first instead
    # (tests/unit/test_triton_relayout.py).
    problem = _p(in_type="FP32", n=32, c=256, k=256, in_spatial=(14, 14), in_layout="NHWC")
    tf32 = get_solver("ConvTritonImplicitGemmTf32Fwd")
    solvers = [*applicable_solvers(problem, SM90), tf32]
    assert tf32.rank_first and not get_solver("ConvTritonImplicitGemmFwd").rank_first
    picked = rank_candidates(problem, SM90, solvers, lambda s, q: True)
    assert picked[0].solver is tf32 and len(picked) > 1


def test_few_channel_backward_weights_split_fills_sixteen_waves() -> None:
    """An image stem's backward weights (3 channels, few programs per filter row) splits its
    pixel reduction up to 256 ways (the kernel's own rule), the plain kernel at most 64."""
    solver = get_solver("ConvTritonImplicitGemmWrw")
    stem = ConvProblem(n=32, c=3, k=128, in_spatial=(512, 512), filter=(3, 3), pad=(1, 1),
                       direction="W", in_type="FP16", wei_type="FP16", out_type="FP16")
    params = solver.default_params(stem, SM90)
    assert solver.compile_job(stem, params, SM90).kernel_name == "conv2d_bwd_weight_smallc"
    grid, _ = solver.launch_geometry(stem, params)
    assert params[4] == 256 and grid[2] == 256
    assert grid[0] * grid[1] * grid[2] <= 16 * SM90.cu
    assert solver.params_valid(stem, SM90, params)
    assert solver.workspace_for(stem, params) == 256 * 128 * 3 * 9 * 4
    # Every split shares the object; the plain kernel's legal splits stop at 256, and a
    # layer of many tiles keeps a two-wave split.
    assert solver.compile_job(stem, params[:4] + (2,) + params[5:], SM90) == \
        solver.compile_job(stem, params, SM90)
    plain = replace(stem, c=64, k=64, in_spatial=(56, 56))
    tile = solver.default_params(plain, SM90)
    assert tile[4] <= 64
    assert solver.params_valid(plain, SM90, tile[:4] + (256,) + tile[5:])
    assert not solver.params_valid(plain, SM90, tile[:4] + (512,) + tile[5:])
    # The U-Net's 1x1 64 -> 2 output layer: one tile, two million pixels.
    out = replace(stem, c=64, k=2, in_spatial=(256, 256), filter=(1, 1), pad=(0, 0))
    assert solver.default_params(out, SM90)[4] == 256

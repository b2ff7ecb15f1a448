"""Triton IR shared between targets (compiler/triton_ir.py), with the real Triton: a target
compiles from the code-generator module another left, into the same bytes as from the source
(across arch generations, wave sizes and, for a kernel without a dot, vendors); a target whose
dot precisions or backend differ makes its own where the module has a dot; a kernel that names
FP8 types shares only between targets whose options all agree; an entry Triton cannot read is
compiled again and replaced; the builder's cache keeps the IR beside its objects; Triton's
overflow checks, off, leave the same bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from miopenkernels.compiler import compile_job
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import get_solver
from miopenkernels.target import Target

pytestmark = pytest.mark.integration
triton = pytest.importorskip("triton")
pytest.importorskip("miopenkernels.kernels.conv_triton_spec")

PROBLEM = ConvProblem(n=4, c=32, k=64, in_spatial=(14, 14), filter=(3, 3), pad=(1, 1),
                      in_layout="NHWC", wei_layout="NHWC", out_layout="NHWC", in_type="FP16",
                      wei_type="FP16", out_type="FP16")
FWD = get_solver("ConvTritonImplicitGemmFwd")
PARAMS = (64, 64, 32, 8, 1, 4, 2)  # legal on every target kind
DEPTHWISE = ConvProblem(n=2, c=64, k=64, in_spatial=(14, 14), filter=(3, 3), pad=(1, 1),
                        groups=64, in_layout="NHWC", wei_layout="NHWC",
                        out_layout="NHWC", in_type="FP16", wei_type="FP16", out_type="FP16")


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.ttir")) if folder.exists() else []


def _job(target: Target) -> object:
    return FWD.compile_job(PROBLEM, PARAMS, target)


@pytest.fixture(autouse=True)
def _known_version() -> None:
    from miopenkernels.compiler.triton_ir import IR_VERSIONS

    if triton.__version__ not in IR_VERSIONS:
        pytest.skip(f"Triton {triton.__version__} shares no IR (read from {IR_VERSIONS})")


@pytest.mark.parametrize(("first", "second"), [
    (Target("sm100", 148), Target("sm120", 170)),
    (Target("sm90", 132), Target("sm120", 170)),
    (Target("sm80", 108), Target("sm89", 128)),
    (Target("sm80", 108), Target("sm90", 132)),
    (Target("gfx1100", 48), Target("gfx1200", 16)),
    (Target("gfx908", 120), Target("gfx1100", 48)),
    (Target("gfx90a", 110), Target("gfx950", 256)),
])
def test_a_target_of_the_same_class_starts_from_the_ir_into_the_same_bytes(
        tmp_path: Path, first: Target, second: Target) -> None:
    folder = tmp_path / "ir"
    compile_job(_job(first), triton_ir=folder)
    (entry,) = _entries(folder)
    shared = compile_job(_job(second), triton_ir=folder)
    assert _entries(folder) == [entry]  # read, not made again
    assert shared == compile_job(_job(second))  # byte for byte what the source gives


def test_targets_whose_dot_differs_make_their_own(tmp_path: Path) -> None:
    """The implicit GEMM's module has a dot: CUDA and HIP make their own, and gfx942 (which
    allows TF32 dots) its own apart from gfx90a's; sm80 takes sm90's (its TTIR passes lower
    tensor descriptors, after the module): three entries, each target's object what its source
    gives."""
    folder = tmp_path / "ir"
    targets = (Target("sm90", 132), Target("sm80", 108), Target("gfx90a", 110),
               Target("gfx942", 304))
    blobs = [compile_job(_job(target), triton_ir=folder) for target in targets]
    assert len(_entries(folder)) == 3
    assert blobs == [compile_job(_job(target)) for target in targets]


def test_a_kernel_without_a_dot_shares_between_vendors(tmp_path: Path) -> None:
    """The depthwise kernel's module has no dot: one entry for sm90, gfx942, gfx1100 and
    sm80, each object what its source gives."""
    from miopenkernels.compiler.triton_ir import has_dot

    solver = get_solver("ConvTritonDepthwiseFwd")
    targets = (Target("sm90", 132), Target("gfx942", 304), Target("gfx1100", 48),
               Target("sm80", 108))
    jobs = [solver.compile_job(DEPTHWISE, solver.default_params(DEPTHWISE, t), t)
            for t in targets]
    assert len({tuple(job.options) for job in jobs}) == 1
    folder = tmp_path / "ir"
    blobs = [compile_job(job, triton_ir=folder) for job in jobs]
    (entry,) = _entries(folder)
    assert not has_dot(entry.read_text())
    assert blobs == [compile_job(job) for job in jobs]


def test_a_kernel_naming_fp8_shares_only_where_every_option_agrees(tmp_path: Path) -> None:
    """The same kernel with a comment naming tl.float8e4nv: sm90 and sm100 (whose FP8 options
    differ) no longer share its IR, and each object is what its source gives."""
    from miopenkernels.compiler.triton import TRITON
    from miopenkernels.kernel_sources import kernel_source

    job = _job(Target("sm90", 132))
    original = kernel_source(job.kernel_file)
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    for path in original.parent.iterdir():
        if path.is_file():
            (kernels / path.name).write_bytes(path.read_bytes())
    source = kernels / job.kernel_file
    source.write_text(source.read_text() + "\n# never tl.float8e4nv here\n")
    folder = tmp_path / "ir"
    blobs = {arch: TRITON.compile_kernel(source, job.kernel_name, tuple(job.options), arch,
                                         ir_cache=folder)
             for arch in ("sm90", "sm100")}
    assert len(_entries(folder)) == 2
    assert blobs["sm100"] == TRITON.compile_kernel(source, job.kernel_name, tuple(job.options),
                                                   "sm100")


def test_an_entry_triton_cannot_read_is_compiled_again_and_replaced(tmp_path: Path) -> None:
    folder = tmp_path / "ir"
    first, second = Target("sm100", 148), Target("sm120", 170)
    compile_job(_job(first), triton_ir=folder)
    (entry,) = _entries(folder)
    good = entry.read_text()
    from miopenkernels.compiler.triton_ir import _FORMAT

    for bad in ("module {\n  this is not TTIR\n",  # no header
                f"// {_FORMAT} dot=\nmodule {{\n  this is not TTIR\n"):  # unreadable
        entry.write_text(bad)
        assert compile_job(_job(second), triton_ir=folder) == compile_job(_job(second))
        assert entry.read_text() == good


def test_the_build_keeps_the_ir_beside_its_objects(tmp_path: Path) -> None:
    from miopenkernels.builder.build import build

    cache = tmp_path / "cache"
    targets = [Target("sm100", 148), Target("sm120", 170)]
    jobs = {t: [_job(t)] for t in targets}
    result = build(targets, [], tmp_path / "out", workers=1, cache_dir=cache, jobs=jobs)
    assert result.ok and result.compiled == 2, result.to_dict()
    assert len(_entries(cache / "triton-ir")) == 1


def test_overflow_checks_off_leave_the_same_bytes() -> None:
    """Jobs compile with Triton's overflow checks off (`TritonOptions`); with them on, the
    object is the same (they feed assertions that `debug` off drops)."""
    from miopenkernels.compiler.triton import TRITON
    from miopenkernels.kernel_sources import kernel_source

    solver = get_solver("ConvTritonDepthwiseFwd")
    for target in (Target("sm90", 132), Target("gfx942", 304)):
        for job in (_job(target), solver.compile_job(
                DEPTHWISE, solver.default_params(DEPTHWISE, target), target)):
            source = kernel_source(job.kernel_file)
            checked = TRITON.compile_kernel(source, job.kernel_name,
                                            (*job.options, "--sanitize-overflow=True"),
                                            target.arch)
            assert checked == TRITON.compile_kernel(source, job.kernel_name,
                                                    tuple(job.options), target.arch)

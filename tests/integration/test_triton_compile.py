"""Triton kernels compiled ahead of time on this CPU-only machine, as the builder does it.

`triton.compile(ASTSource(fn, signature, constexprs, attrs), target=GPUTarget(...))` through
`miopenkernels.compiler.compile_job` for sm90 (wgmma) and gfx942 (v_mfma): the code object and
the launch metadata it carries into a kdb, `kdb verify` on the result (metadata, assumptions,
the AMD disassembly's matrix instructions), its refusal of a Triton object of the wrong arch or
without metadata, and the invoker's use of the metadata on the null backend. A handful of
compiles, a few seconds each.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from miopenkernels.backends import NullBackend
from miopenkernels.builder.build import write_kdb
from miopenkernels.builder.codeobject import verify_kdb
from miopenkernels.codeobject import check_code_object, split_kdb_blob
from miopenkernels.compiler import compile_job
from miopenkernels.find import make_invoker
from miopenkernels.handle import Handle
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import get_solver
from miopenkernels.target import Target

pytestmark = pytest.mark.integration
pytest.importorskip("triton")
pytest.importorskip("miopenkernels.kernels.conv_triton_spec")

SM90 = Target("sm90", 132)
GFX942 = Target("gfx942", 304)
PROBLEM = ConvProblem(n=4, c=32, k=64, in_spatial=(14, 14), filter=(3, 3), pad=(1, 1),
                      in_layout="NHWC", wei_layout="NHWC", out_layout="NHWC", in_type="FP16",
                      wei_type="FP16", out_type="FP16")
FWD = get_solver("ConvTritonImplicitGemmFwd")
# BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, SPLIT_K, warps, stages: legal on every target kind.
PARAMS = (64, 64, 32, 8, 1, 4, 2)


@pytest.fixture(scope="module")
def objects() -> dict[str, tuple[object, bytes]]:
    """The default forward job for sm90 and gfx942, aligned, and sm90's unaligned variant."""
    out = {}
    for name, target in (("sm90", SM90), ("gfx942", GFX942)):
        job = FWD.compile_job(PROBLEM, PARAMS, target)
        out[name] = (job, compile_job(job))
    loose = FWD.unaligned_job(PROBLEM, PARAMS, SM90)
    out["sm90-unaligned"] = (loose, compile_job(loose))
    return out


def test_objects_carry_their_launch_metadata(objects) -> None:  # noqa: ANN001
    for name, arch, threads in (("sm90", "sm90", 128), ("gfx942", "gfx942", 256)):
        job, blob = objects[name]
        code, meta = split_kdb_blob(blob)
        info = check_code_object(code, arch, "conv2d_fwd")
        assert info.kind == ("cubin" if arch == "sm90" else "hsaco")
        assert meta is not None and meta.kernel == "conv2d_fwd"
        assert meta.threads_per_block == threads  # 4 warps of 32 (NVIDIA) or 64 (CDNA)
        assert 0 < meta.shared_bytes <= 65536
        assert [n for n, _, _ in meta.scratch_args] == ["global_scratch", "profile_scratch"]
        # Pointers 16-byte aligned; the 16-bit channels-last forward's strides multiples of 8.
        assert "x_ptr % 16 == 0" in meta.assumptions and "sxh % 8 == 0" in meta.assumptions
    assert split_kdb_blob(objects["sm90-unaligned"][1])[1].assumptions == ()


@pytest.mark.skipif(shutil.which("llvm-objdump-19") is None, reason="no llvm-objdump-19")
def test_kdb_verify_checks_metadata_assumptions_and_matrix_instructions(objects,
                                                                          tmp_path: Path) -> None:  # noqa: ANN001
    rows = {}
    for name in ("sm90", "gfx942"):
        job, blob = objects[name]
        rows[name] = (job.kdb_name, job.kdb_args, blob)
    write_kdb(tmp_path / "sm9084.kdb", [rows["sm90"]])
    write_kdb(tmp_path / "gfx942130.kdb", [rows["gfx942"]])
    for kdb in ("sm9084.kdb", "gfx942130.kdb"):
        checks = verify_kdb(tmp_path / kdb)
        assert [c.ok for c in checks] == [True], checks[0].error
        assert checks[0].kernels == ("conv2d_fwd",) and not checks[0].note
    # A gfx942 Triton object under sm90's name and args: the wrong arch.
    name, args, blob = rows["gfx942"]
    wrong = (name, args.replace("-mcpu=gfx942", "-mcpu=sm90"), blob)
    write_kdb(tmp_path / "bad" / "sm9084.kdb", [wrong])
    (bad,) = verify_kdb(tmp_path / "bad" / "sm9084.kdb")
    assert not bad.ok and "gfx942" in bad.error and bad.error_kind == "code object"
    # The object without its metadata, and an object whose args promise other assumptions.
    name, args, blob = rows["sm90"]
    code, _ = split_kdb_blob(blob)
    loose_job, loose_blob = objects["sm90-unaligned"]
    write_kdb(tmp_path / "bare" / "sm9084.kdb", [(name, args, code),
                                                  (name, loose_job.kdb_args, blob)])
    errors = sorted(c.error for c in verify_kdb(tmp_path / "bare" / "sm9084.kdb"))
    assert any("without launch metadata" in e for e in errors)
    assert any("assumptions" in e for e in errors)


@pytest.mark.skipif(shutil.which("llvm-objdump-19") is None, reason="no llvm-objdump-19")
def test_rdna_objects_use_wmma_and_gfx950_says_why_it_is_not_disassembled(
        tmp_path: Path) -> None:
    """gfx1201 FP16: v_wmma in the disassembly. gfx950 (MI350): LLVM 19 cannot disassemble
    it, so verify passes the row with a note instead of a silent pass."""
    rows = []
    for target in (Target("gfx1201", 32), Target("gfx950", 256)):
        job = FWD.compile_job(PROBLEM, PARAMS, target)
        rows.append((target, job.kdb_name, job.kdb_args, compile_job(job)))
    for target, name, args, blob in rows:
        write_kdb(tmp_path / f"{target.basename}.kdb", [(name, args, blob)])
        (check,) = verify_kdb(tmp_path / f"{target.basename}.kdb")
        assert check.ok, check.error
        if target.arch == "gfx950":
            assert "cannot disassemble gfx950" in check.note
        else:
            assert not check.note


def test_the_invoker_launches_with_the_objects_metadata(objects, monkeypatch,
                                                         tmp_path: Path) -> None:  # noqa: ANN001
    for var, sub in (("MIOPEN_SYSTEM_DB_PATH", "sys"), ("MIOPEN_USER_DB_PATH", "user"),
                     ("MIOPEN_CUSTOM_CACHE_DIR", "cache")):
        (tmp_path / sub).mkdir()
        monkeypatch.setenv(var, str(tmp_path / sub))
    compiled = {job.kdb_args: blob for job, blob in (objects["sm90"], objects["sm90-unaligned"])}
    backend = NullBackend(SM90)
    h = Handle(backend=backend, compiler=lambda job: compiled[job.kdb_args])
    inv = make_invoker(h, PROBLEM, FWD, params=PARAMS)
    meta = split_kdb_blob(objects["sm90"][1])[1]
    bufs = {r: backend.alloc(1 << 20) for r in ("x", "w", "y")}
    ptrs = {r: b.ptr for r, b in bufs.items()} | {"workspace": 0}
    inv(ptrs)
    assert backend.recorded[-1].block == (meta.threads_per_block, 1, 1)
    assert backend.recorded[-1].shared == meta.shared_bytes
    inv(ptrs | {"y": ptrs["y"] + 2})  # an FP16 view one element in: not 16-byte aligned
    assert h.stats.jit == 2 and backend.recorded[-1].args[2][1] == ptrs["y"] + 2

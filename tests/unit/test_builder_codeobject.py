"""Code-object checks on real objects from hipcc, clang-19 and NVRTC, and compile failures.

The objects are compiled once per session from the builder's fixture kernels; a test whose
compiler is missing is skipped.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from miopenkernels.codeobject import check_code_object
from miopenkernels.compiler import compile_job, inspect_code_object
from miopenkernels.errors import CodeObjectError, CompileError
from miopenkernels.solvers.base import CompileJob
from miopenkernels.target import Target

KERNELS = Path(__file__).resolve().parents[1] / "fixtures" / "builder" / "kernels"
TARGETS = {"hipcc": "gfx906-60", "clang-19": "gfx1100-48", "nvrtc": "sm90-132",
           "nvrtc-sm80": "sm80-108"}


def _available(name: str) -> bool:
    if name.startswith("nvrtc"):
        try:
            import cuda.bindings.nvrtc  # noqa: F401
        except ImportError:
            return False
        return True
    return shutil.which(name) is not None


def scale_job(target: str, options: tuple[str, ...] = ("-DFX_SCALE=2.0f",)) -> CompileJob:
    return CompileJob("fx_scale.hip", options, "fx_scale", Target.parse(target))


@pytest.fixture(scope="session")
def objects() -> dict[str, bytes]:
    """One real code object per compiler, compiled once."""
    return {name: compile_job(scale_job(t), KERNELS)
            for name, t in TARGETS.items() if _available(name)}


def _need(objects: dict[str, bytes], name: str) -> bytes:
    if name not in objects:
        pytest.skip(f"{name} is not installed")
    return objects[name]


@pytest.mark.parametrize("name", list(TARGETS))
def test_real_object_is_for_its_arch_and_defines_the_kernel(objects: dict[str, bytes],
                                                            name: str) -> None:
    blob = _need(objects, name)
    target = Target.parse(TARGETS[name])
    info = check_code_object(blob, target.arch, "fx_scale")
    assert info.arch == target.arch
    assert info.kernels == ("fx_scale",)
    if target.vendor == "amd":
        assert "fx_scale.kd" in info.symbols


@pytest.mark.parametrize("name,wrong", [("hipcc", "gfx90a"), ("clang-19", "gfx1030"),
                                        ("nvrtc", "sm80"), ("nvrtc-sm80", "sm90"),
                                        ("hipcc", "sm90")])
def test_wrong_arch_object_is_a_code_object_error(objects: dict[str, bytes], name: str,
                                                  wrong: str) -> None:
    blob = _need(objects, name)
    with pytest.raises(CodeObjectError, match=f"is for .*expected {wrong}") as exc:
        check_code_object(blob, wrong, "fx_scale", what="object of job X")
    assert "object of job X" in str(exc.value)


@pytest.mark.parametrize("name", ["hipcc", "nvrtc"])
def test_missing_symbol_is_a_code_object_error(objects: dict[str, bytes], name: str) -> None:
    blob = _need(objects, name)
    arch = Target.parse(TARGETS[name]).arch
    with pytest.raises(CodeObjectError, match="lacks symbol fx_shift"):
        check_code_object(blob, arch, "fx_shift")


def test_not_an_elf_and_truncated_elf_are_rejected(objects: dict[str, bytes]) -> None:
    with pytest.raises(CodeObjectError, match="not an ELF"):
        inspect_code_object(b"__CLANG_OFFLOAD_BUNDLE__" + bytes(64))
    blob = _need(objects, "clang-19")
    with pytest.raises(CodeObjectError, match="truncated|malformed"):
        inspect_code_object(blob[:80])


def test_metadata_note_and_eflags_must_agree(objects: dict[str, bytes]) -> None:
    pytest.importorskip("msgpack")
    blob = bytearray(_need(objects, "hipcc"))
    flags, = struct.unpack_from("<I", blob, 48)
    struct.pack_into("<I", blob, 48, (flags & ~0xFF) | 0x41)  # claim gfx1100 in e_flags
    with pytest.raises(CodeObjectError, match="note says gfx906 but e_flags say gfx1100"):
        inspect_code_object(bytes(blob))


def test_pre_12_8_cubin_flags_encoding(objects: dict[str, bytes]) -> None:
    """Cubins with ELF ABI version 7 keep the SM in the low byte of e_flags (0x500550: sm80)."""
    blob = bytearray(_need(objects, "nvrtc"))
    blob[7], blob[8] = 0x33, 7
    struct.pack_into("<I", blob, 48, 0x500550)
    assert inspect_code_object(bytes(blob)).arch == "sm80"


@pytest.mark.parametrize("name", ["hipcc", "clang-19", "nvrtc"])
def test_compile_error_carries_the_compiler_log_and_names_the_job(tmp_path: Path,
                                                                  name: str) -> None:
    if not _available(name):
        pytest.skip(f"{name} is not installed")
    shutil.copytree(KERNELS, tmp_path / "k")
    (tmp_path / "k" / "fx_scale.hip").write_text(
        '#include "fx_portable.h"\nFX_KERNEL void fx_scale(float* y) { y[0] = undeclared_x; }\n')
    with pytest.raises(CompileError) as exc:
        compile_job(scale_job(TARGETS[name]), tmp_path / "k")
    assert "fx_scale.hip:fx_scale for " + TARGETS[name] in str(exc.value)
    assert "undeclared_x" in exc.value.log
    assert exc.value.exit_code == 8


def test_missing_kernel_file_is_a_compile_error(tmp_path: Path) -> None:
    with pytest.raises(CompileError, match="fx_scale.hip not found"):
        compile_job(scale_job("gfx1100-48"), tmp_path)

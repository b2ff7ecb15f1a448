"""The one code-object module: its EF_AMDGPU_MACH table against clang-19, the same verdict on the
JIT path and in a backend, hostile ELF files, offload bundles, and launch metadata."""

from __future__ import annotations

import contextlib
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from miopenkernels.backends import NullBackend
from miopenkernels.codeobject import (
    AMDGPU_MACH,
    CodeObject,
    LaunchMetadata,
    check_code_object,
    inspect_code_object,
    read_code_object,
)
from miopenkernels.compiler import check_code_object as jit_check
from miopenkernels.errors import CodeObjectError
from miopenkernels.target import Target, load_targets

KERNEL = "__attribute__((amdgpu_kernel)) void k(int* p) { *p = 1; }\n"
HIP_KERNEL = "__attribute__((global)) void k(int* p) { *p = 1; }\n"

needs_clang = pytest.mark.skipif(shutil.which("clang-19") is None, reason="clang-19 missing")


def _amd_object(tmp: Path, arch: str) -> bytes:
    src = tmp / "k.c"
    src.write_text(KERNEL)
    out = tmp / f"{arch}.o"
    subprocess.run(["clang-19", "-target", "amdgcn-amd-amdhsa", f"-mcpu={arch}", "-nogpulib",
                    "-c", str(src), "-o", str(out)], check=True, capture_output=True)
    return out.read_bytes()


@needs_clang
def test_mach_table_matches_what_clang_writes(tmp_path: Path) -> None:
    """Every arch of the table but gfx950 (newer than clang-19) is read back from a real object,
    with the metadata note ignored, so e_flags alone must name it."""
    for arch, mach in AMDGPU_MACH.items():
        if arch == "gfx950":
            continue
        blob = _amd_object(tmp_path, arch)
        assert struct.unpack_from("<I", blob, 48)[0] & 0xFF == mach, arch


def test_every_default_amd_target_and_the_field_archs_are_in_the_table() -> None:
    amd = {s.arch for s in load_targets() if s.vendor == "amd"}
    assert amd | {"gfx940", "gfx941", "gfx950", "gfx1031"} <= set(AMDGPU_MACH)
    assert len(set(AMDGPU_MACH.values())) == len(AMDGPU_MACH)


@needs_clang
def test_gfx1031_object_without_msgpack_passes_on_the_jit_path_and_in_a_backend(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A runtime install has no msgpack: e_flags alone must name gfx1031 for both checks."""
    blob = _amd_object(tmp_path, "gfx1031")
    monkeypatch.setitem(sys.modules, "msgpack", None)
    assert jit_check(blob, "gfx1031", "k").arch == "gfx1031"
    NullBackend(Target("gfx1031", 40)).load(blob)
    with pytest.raises(CodeObjectError, match="is for gfx1031"):
        jit_check(blob, "gfx1030", "k")
    with pytest.raises(CodeObjectError, match="is for gfx1031"):
        NullBackend(Target("gfx1030", 36)).load(blob)


@pytest.fixture(scope="module")
def amd_blob(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    if shutil.which("clang-19") is None:
        pytest.skip("clang-19 missing")
    return _amd_object(tmp_path_factory.mktemp("co"), "gfx90a")


def test_section_offset_beyond_any_file_is_a_clean_error(amd_blob: bytes) -> None:
    blob = bytearray(amd_blob)
    shoff, = struct.unpack_from("<Q", blob, 40)
    struct.pack_into("<Q", blob, shoff + 64 + 24, 0x8000000000000A08)  # section 1 sh_offset
    struct.pack_into("<I", blob, shoff + 64 + 4, 2)  # ... made a symbol table
    with pytest.raises(CodeObjectError, match="malformed ELF"):
        inspect_code_object(bytes(blob))
    blob = bytearray(amd_blob)
    struct.pack_into("<Q", blob, 40, 0x8000000000000A08)  # e_shoff
    with pytest.raises(CodeObjectError, match="malformed ELF"):
        inspect_code_object(bytes(blob))


def test_no_corruption_raises_anything_but_code_object_error(amd_blob: bytes) -> None:
    """Absurd values in every header word and section header, and every truncation."""
    shoff, = struct.unpack_from("<Q", amd_blob, 40)
    shnum, = struct.unpack_from("<H", amd_blob, 60)
    offsets = list(range(16, 64, 2)) + list(range(shoff, shoff + 64 * shnum, 4))
    for value in (0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 1):
        for off in offsets:
            blob = bytearray(amd_blob)
            struct.pack_into("<I", blob, off, value)
            for arch in ("gfx90a", "sm90"):
                with contextlib.suppress(CodeObjectError):
                    check_code_object(bytes(blob), arch, "k", bare=False)
    for cut in range(0, len(amd_blob), 7):
        with contextlib.suppress(CodeObjectError):
            read_code_object(amd_blob[:cut])


@needs_clang
def test_offload_bundle_entry_is_chosen_by_arch(tmp_path: Path) -> None:
    (tmp_path / "k.hip").write_text(HIP_KERNEL)
    out = tmp_path / "k.bundle"
    subprocess.run(["clang-19", "-x", "hip", "--offload-device-only", "--offload-arch=gfx90a",
                    "--offload-arch=gfx1100", "-nogpulib", "-nogpuinc", "-c",
                    str(tmp_path / "k.hip"), "-o", str(out)], check=True, capture_output=True)
    blob = out.read_bytes()
    assert read_code_object(blob, arch="gfx1100").arch == "gfx1100"
    assert check_code_object(blob, Target("gfx90a", 104), "_Z1kPi", bare=False).kind == "bundle"
    with pytest.raises(CodeObjectError, match="not an ELF"):
        check_code_object(blob, "gfx90a", "_Z1kPi")  # a kdb holds bare objects only
    with pytest.raises(CodeObjectError, match="malformed clang offload bundle"):
        read_code_object(blob[:60])


def test_launch_metadata_from_triton_round_trips_and_attaches_to_its_kernel() -> None:
    meta = {"name": "matmul_kernel", "num_warps": 4, "shared": 16384,
            "target": {"backend": "cuda", "arch": 90, "warp_size": 32},
            "global_scratch_size": 0, "global_scratch_align": 1,
            "profile_scratch_size": 0, "profile_scratch_align": 1}
    lm = LaunchMetadata.from_triton(meta)
    assert lm.threads_per_block == 128 and lm.shared_bytes == 16384
    assert [s[0] for s in lm.scratch_args] == ["global_scratch", "profile_scratch"]
    assert LaunchMetadata.from_json(lm.to_json()) == lm
    ptx = b".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry matmul_kernel(\n"
    co = CodeObject.parse(ptx, (lm,))
    assert co.info.arch == "sm90" and co.launch_of("matmul_kernel") == lm
    with pytest.raises(CodeObjectError, match="does not define"):
        CodeObject.parse(ptx, (LaunchMetadata("other"),))
    for bad in ('{"kernel": "k", "threads_per_block": 4096}', "[1]", "{",
                '{"kernel": "k", "scratch_args": [["s", 8, 3]]}'):
        with pytest.raises(CodeObjectError):
            LaunchMetadata.from_json(bad)
    with pytest.raises(CodeObjectError, match="Triton"):
        LaunchMetadata.from_triton({"num_warps": 4})


def test_packager_refuses_a_kdb_holding_code_for_another_arch(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
    from miopenkernels.builder.package import package_from_build
    from package_inputs import make_kdb

    make_kdb(tmp_path / "build" / "gfx906_60.kdb", "gfx906", code_arch="gfx90a")
    with pytest.raises(CodeObjectError, match="gfx906_60.kdb entry .* is for gfx90a"):
        package_from_build([Target("gfx906", 60)], tmp_path / "build", tmp_path / "out",
                           kind="wheel", dbs_dir=tmp_path / "dbs")
    assert not (tmp_path / "out").exists()

"""AMD code objects' resources against their arch (builder/resources.py): read from real objects
that clang-19 writes, and the limits the build refuses an object beyond."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from miopenkernels.builder.resources import ResourceReport, family_of, over_limits
from miopenkernels.codeobject import KernelResources, amdgpu_resources
from miopenkernels.errors import CodeObjectError
from miopenkernels.launch_metadata import LaunchMetadata, attach_launch_metadata, split_kdb_blob
from miopenkernels.target import Target, amdgpu_limits

needs_clang = pytest.mark.skipif(shutil.which("clang-19") is None, reason="clang-19 missing")

# 48 KiB of static LDS, and a loop the compiler cannot drop.
KERNEL = """
__attribute__((address_space(3), loader_uninitialized)) int lds[12288];
__attribute__((amdgpu_kernel)) void k(int* p, int n) {
    for (int i = 0; i < n; ++i) lds[(i * 7) % 12288] += p[i];
    p[0] = lds[n % 12288];
}
"""


def _object(tmp: Path, arch: str) -> bytes:
    src = tmp / "k.c"
    src.write_text(KERNEL)
    out = tmp / f"{arch}.o"
    subprocess.run(["clang-19", "-O2", "-target", "amdgcn-amd-amdhsa", f"-mcpu={arch}",
                    "-nogpulib", "-c", str(src), "-o", str(out)], check=True, capture_output=True)
    return out.read_bytes()


class _Job:
    kernel_file = "conv_triton_depthwise.py"


@needs_clang
def test_resources_are_read_from_the_metadata_note(tmp_path: Path) -> None:
    (k,) = amdgpu_resources(_object(tmp_path, "gfx942"))
    assert k.name == "k" and k.lds_bytes == 48 * 1024
    assert 0 < k.vgprs <= 512 and 0 < k.sgprs <= 112 and not k.spills


@needs_clang
def test_dynamic_lds_counts_against_the_arch(tmp_path: Path) -> None:
    """A Triton kernel's LDS is dynamic (its launch metadata's shared bytes): 48 KiB static plus
    32 KiB dynamic exceeds gfx942's 64 KiB, and the build's check refuses the object; without
    the dynamic part it passes and is counted under its family."""
    code = _object(tmp_path, "gfx942")
    report = ResourceReport()
    big = attach_launch_metadata(code, LaunchMetadata("k", 256, 32 * 1024))
    refused = report.check(Target("gfx942", 304), _Job(), *split_kdb_blob(big), "object of k")
    assert refused is not None and "81920 bytes of LDS (at most 65536)" in refused
    assert report.families == {}
    assert report.check(Target("gfx942", 304), _Job(), *split_kdb_blob(code), "object of k") \
        is None
    fam = report.to_dict()["conv_triton_depthwise"]
    assert fam["objects"] == 1 and fam["max_lds_bytes"] == 48 * 1024 and fam["spilling"] == 0


@needs_clang
def test_a_foreign_or_truncated_object_is_a_code_object_error(tmp_path: Path) -> None:
    code = _object(tmp_path, "gfx90a")
    with pytest.raises(CodeObjectError):
        amdgpu_resources(code[:200])
    with pytest.raises(CodeObjectError, match="not an ELF"):
        amdgpu_resources(b"\0" * 256)


def test_limits_per_arch() -> None:
    assert amdgpu_limits("gfx90a") == (512, 112, 64 * 1024)
    assert amdgpu_limits("gfx950") == (512, 112, 160 * 1024)
    assert amdgpu_limits("gfx1100") == (256, 112, 64 * 1024)
    assert amdgpu_limits("gfx908:sramecc+:xnack-")[0] == 256
    k = KernelResources("k", vgprs=300, agprs=0, sgprs=90, lds_bytes=0, scratch_bytes=0,
                        vgpr_spills=0, sgpr_spills=0)
    assert over_limits("gfx90a", k) == []  # one 512-register file for VGPRs and AGPRs
    assert over_limits("gfx1100", k) == ["300 VGPRs (at most 256)"]
    assert over_limits("gfx908", KernelResources("k", 128, 300, 40, 0, 0, 0, 0)) == \
        ["300 VGPRs (at most 256)"]  # AGPRs of their own, 256 of them
    assert over_limits("gfx942", KernelResources("k", 64, 0, 120, 70000, 0, 0, 0)) == \
        ["120 SGPRs (at most 112)", "70000 bytes of LDS (at most 65536)"]
    assert over_limits("gfx950", KernelResources("k", 64, 0, 40, 70000, 0, 0, 0)) == []


def test_family_is_the_kernel_source_file() -> None:
    assert family_of(_Job()) == "conv_triton_depthwise"

"""Every kernel family compiles for an old AMD arch, the newest AMD arch and sm_90.

The commands are the ones library/solvers/base.py documents for the compiler machinery:

  AMD (bare code object: ELF, e_machine EM_AMDGPU = 224, symbols <name> and <name>.kd):
    clang-19 -x hip -std=c++17 --offload-arch=gfx1201 --cuda-device-only \\
        --no-gpu-bundle-output -nogpuinc -nogpulib -O3 <job options> -c -o out.co kernels/<file>
    HIP_PLATFORM=amd hipcc <the same flags, --offload-arch=gfx906>
  (without --no-gpu-bundle-output clang writes an offload bundle, not an ELF)

  NVIDIA: NVRTC on expand_source(<file>) with <job options> -arch=sm_90 -std=c++17, then
    nvrtcGetCUBIN (an ELF with e_machine EM_CUDA = 190 and the kernel as a FUNC symbol).

A representative subset (each family's dynamic jobs for one type and direction, plus one
specialised job) keeps this under a minute and a half on two cores.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from miopenkernels.kernel_sources import expand_source, kernels_dir
from miopenkernels.primitives import PRIMITIVES
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import SOLVERS, CompileJob, get_solver
from miopenkernels.target import Target, spec_for

pytestmark = pytest.mark.integration

elftools = pytest.importorskip("elftools.elf.elffile")

EM_AMDGPU = 224
EM_CUDA = 190


def _subset(target: Target) -> list[CompileJob]:
    """One dynamic job per kernel family and direction (types rotate), and one specialised.
    (Triton's kernels: test_triton_compile.py.)"""
    jobs: list[CompileJob] = []
    for i, solver in enumerate(s for s in SOLVERS if s.language == "hip"):
        dyn = solver.dynamic_jobs(target)
        jobs.append(dyn[i % len(dyn)])
    for prim in PRIMITIVES:
        jobs.append(prim.dynamic_jobs(target)[-1])
    igemm = get_solver("ConvImplicitGemmFwd")
    problem = ConvProblem(n=8, c=64, k=128, in_spatial=(28, 28), filter=(3, 3), pad=(1, 1),
                          in_layout="NHWC", in_type="FP16")
    jobs.append(igemm.compile_job(problem, igemm.default_params(problem, target), target, True))
    return jobs


def _symbols(blob: bytes) -> tuple[int, dict[str, str]]:
    elf = elftools.ELFFile(io.BytesIO(blob))
    symtab = elf.get_section_by_name(".symtab")
    assert symtab is not None, "code object has no symbol table"
    names = {s.name: s["st_info"]["type"] for s in symtab.iter_symbols() if s.name}
    return elf["e_machine"] if isinstance(elf["e_machine"], int) else \
        {"EM_AMDGPU": EM_AMDGPU, "EM_CUDA": EM_CUDA}.get(elf["e_machine"], -1), names


def _amd_compile(compiler: str, job: CompileJob, out: Path) -> bytes:
    arch = spec_for(job.target.arch).compile_arch
    cmd = [compiler, "-x", "hip", "-std=c++17", f"--offload-arch={arch}", "--cuda-device-only",
           "--no-gpu-bundle-output", "-nogpuinc", "-nogpulib", "-O3", *job.options,
           "-c", "-o", str(out), str(kernels_dir() / job.kernel_file)]
    env = dict(os.environ, HIP_PLATFORM="amd")
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
    return out.read_bytes()


def _check_amd(blob: bytes, job: CompileJob) -> None:
    assert blob[:4] == b"\x7fELF", f"{job.kdb_args}: not an ELF (an offload bundle?)"
    machine, names = _symbols(blob)
    assert machine == EM_AMDGPU
    assert names.get(job.kernel_name) == "STT_FUNC", f"{job.kernel_name} missing: {names}"
    assert job.kernel_name + ".kd" in names, "kernel descriptor symbol missing"


def _run_amd(compiler: str, arch: str, tmp_path: Path) -> None:
    target = Target(arch, 60)
    jobs = _subset(target)

    def one(item: tuple[int, CompileJob]) -> None:
        i, job = item
        _check_amd(_amd_compile(compiler, job, tmp_path / f"{i}.co"), job)

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(one, enumerate(jobs)))


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc is not installed")
def test_every_family_compiles_for_gfx906_with_hipcc(tmp_path: Path) -> None:
    _run_amd("hipcc", "gfx906", tmp_path)


@pytest.mark.skipif(shutil.which("clang-19") is None, reason="clang-19 is not installed")
def test_every_family_compiles_for_gfx1201_with_clang19(tmp_path: Path) -> None:
    _run_amd("clang-19", "gfx1201", tmp_path)


def test_every_family_compiles_for_sm90_with_nvrtc() -> None:
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    target = Target("sm90", 132)

    def compile_one(job: CompileJob) -> bytes:
        src = expand_source(job.kernel_file).encode()
        err, prog = nvrtc.nvrtcCreateProgram(src, job.kernel_file.encode(), 0, [], [])
        assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
        opts = [o.encode() for o in job.options] + [
            f"-arch={spec_for(target.arch).compile_arch}".encode(), b"-std=c++17"]
        (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        assert res == nvrtc.nvrtcResult.NVRTC_SUCCESS, log.decode(errors="replace")
        _, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * size
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        nvrtc.nvrtcDestroyProgram(prog)
        return cubin

    for job in _subset(target):
        blob = compile_one(job)
        assert blob[:4] == b"\x7fELF"
        machine, names = _symbols(blob)
        assert machine == EM_CUDA
        assert names.get(job.kernel_name) == "STT_FUNC", f"{job.kernel_name} missing"


def test_without_no_gpu_bundle_output_clang_writes_a_bundle(tmp_path: Path) -> None:
    """Why the documented command carries --no-gpu-bundle-output."""
    if shutil.which("clang-19") is None:
        pytest.skip("clang-19 is not installed")
    out = tmp_path / "b.co"
    cmd = ["clang-19", "-x", "hip", "--offload-arch=gfx1201", "--cuda-device-only",
           "-nogpuinc", "-nogpulib", "-O3", "-DMK_TYPE=0", "-c", "-o", str(out),
           str(kernels_dir() / "activation.hip")]
    subprocess.run(cmd, check=True, capture_output=True)
    assert out.read_bytes()[:4] != b"\x7fELF"
    assert out.read_bytes().startswith(b"__CLANG_OFFLOAD_BUNDLE__")


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc is not installed")
def test_hipcc_run_as_its_clang_command_gives_the_same_object() -> None:
    """The build runs the clang command Debian's hipcc would run (library/compiler/amd.py):
    every hipcc arch's objects come out byte for byte as hipcc itself writes them."""
    from miopenkernels.compiler.amd import HIPCC, HipClang, _hipcc_clang

    plain = HipClang("hipcc", "hipcc", HIPCC.flags, HIPCC.env)
    for arch in ("gfx900", "gfx906", "gfx908", "gfx90a", "gfx1030"):
        prefix = _hipcc_clang(HIPCC.executable, HIPCC.flags, arch,
                              tuple(sorted(HIPCC.env.items())))
        assert prefix and Path(prefix[0]).name.startswith("clang"), prefix
        for job in _subset(Target(arch, 60))[:3]:
            assert HIPCC.compile(job.source_path, job.options, arch) == \
                plain.compile(job.source_path, job.options, arch), (arch, job.kdb_args)

"""AMD GPU compilers: Debian's hipcc (clang 15 + ROCm 5.2 device libraries) and clang-19.

Both compile HIP source for the device only and emit a bare ELF code object
(`--no-gpu-bundle-output`), which is what a KernelDb row holds and what hipModuleLoadData takes.
The kernels are portable sources that need no HIP headers (`-nogpuinc`); clang-19 also runs without
device libraries (`-nogpulib`) because Debian ships none for the archs it builds (gfx942, gfx11,
gfx12). Debian's hipcc must be told the platform: nvcc is installed too.

Debian's hipcc is a Perl script that adds its device flags and runs clang through a shell: a
third of a small kernel's compile. `HipccDriver` asks it once per arch and process what clang
command it runs (`HIPCC_VERBOSE=1` on a probe), then runs that clang itself with the job's own
arguments: the same code object, byte for byte, and the same cache identity (hipcc's version
and flags). A hipcc that prints no command line is run as it is.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from .._proc import run_tool
from ..errors import CompileError

__all__ = ["HipClang", "HipccDriver", "HIPCC", "CLANG19"]

_COMMON = ("-x", "hip", "--cuda-device-only", "--no-gpu-bundle-output", "-nogpuinc", "-O3",
           "-std=c++17")


class HipClang:
    """A clang driver in HIP mode that turns one source file into one AMDGPU code object."""

    def __init__(self, name: str, executable: str, flags: Sequence[str], env: dict[str, str]):
        self.name = name
        self.executable = executable
        self.flags = tuple(flags)
        self.env = env

    @property
    def vendor(self) -> str:
        return "amd"

    def command(self, source: Path, options: Sequence[str], arch: str, out: Path,
                include_dirs: Sequence[Path] = ()) -> list[str]:
        """The full command line for one compile (exposed for logs and tests)."""
        incs = [f"-I{d}" for d in include_dirs]
        return [self.executable, *self.flags, f"--offload-arch={arch}", *incs, *options,
                "-c", str(source), "-o", str(out)]

    def compile(self, source: Path, options: Sequence[str], arch: str,
                include_dirs: Sequence[Path] = (), what: str = "compile") -> bytes:
        """Compile `source` for `arch` (e.g. 'gfx90a'); the code object's bytes."""
        with tempfile.TemporaryDirectory(prefix="mk-amd-") as tmp:
            out = Path(tmp) / "kernel.o"
            cmd = self.run_command(source, options, arch, out, include_dirs)
            run_tool(cmd, what=what, error=CompileError, env=self.env, cwd=tmp, timeout=600)
            return out.read_bytes()

    def run_command(self, source: Path, options: Sequence[str], arch: str, out: Path,
                    include_dirs: Sequence[Path] = ()) -> list[str]:
        """What `compile` runs: `command`, here as it is."""
        return self.command(source, options, arch, out, include_dirs)

    def identity(self) -> str:
        """Compiler, version and fixed flags: everything of the compiler that shapes the output."""
        return f"{self.name} [{_version(self.executable, tuple(self.env.items()))}] " + " ".join(
            self.flags
        )


@cache
def _version(executable: str, env: tuple[tuple[str, str], ...]) -> str:
    out = run_tool([executable, "--version"], what=f"{executable} --version", error=CompileError,
                   env=dict(env), timeout=600)
    text = out.stdout + out.stderr
    # hipcc prints the HIP version and the clang version; clang prints its version first.
    parts = re.findall(r"(HIP version: \S+|clang version \S+)", text)
    return "; ".join(parts) if parts else text.strip().splitlines()[0]


class HipccDriver(HipClang):
    """hipcc, run as the clang command it would run (module docstring)."""

    def run_command(self, source: Path, options: Sequence[str], arch: str, out: Path,
                    include_dirs: Sequence[Path] = ()) -> list[str]:
        """`command` with hipcc replaced by its clang command for `arch`, where it prints one."""
        cmd = self.command(source, options, arch, out, include_dirs)
        prefix = _hipcc_clang(self.executable, self.flags, arch, tuple(sorted(self.env.items())))
        return [*prefix, *cmd[1:]] if prefix else cmd


_PROBE = 'extern "C" __attribute__((global)) void probe(float* x) { x[0] = 1.0f; }\n'


@cache
def _hipcc_clang(executable: str, flags: tuple[str, ...], arch: str,
                 env: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """The clang executable and the flags hipcc adds for `arch`, from one probe compile with
    HIPCC_VERBOSE=1; empty where hipcc prints no `hipcc-cmd:` line or the probe fails."""
    with tempfile.TemporaryDirectory(prefix="mk-hipcc-") as tmp:
        ours = [*flags, f"--offload-arch={arch}", "-c", "probe.hip", "-o", "probe.o"]
        Path(tmp, "probe.hip").write_text(_PROBE)
        try:
            out = run_tool([executable, *ours], what="hipcc probe", error=CompileError,
                           env={**dict(env), "HIPCC_VERBOSE": "1"}, cwd=tmp, timeout=120)
        except CompileError:
            return ()
        line = next((ln for ln in (out.stdout + out.stderr).splitlines()
                     if ln.startswith("hipcc-cmd:")), "")
        try:
            words = shlex.split(line[len("hipcc-cmd:"):])
        except ValueError:
            return ()
        if not words or not os.path.isabs(words[0]) or not os.access(words[0], os.X_OK):
            return ()
        added = words[1:]
        for word in ours:  # what is left is what hipcc adds; every word of ours must be there
            if word not in added:
                return ()
            added.remove(word)
        return (words[0], *added)


HIPCC = HipccDriver("hipcc", "hipcc", _COMMON, {"HIP_PLATFORM": "amd"})
CLANG19 = HipClang("clang-19", "clang-19", (*_COMMON, "-nogpulib"), {})

"""AMD GPU compilers: Debian's hipcc (clang 15 + ROCm 5.2 device libraries) and clang-19.

Both compile HIP source for the device only and emit a bare ELF code object
(`--no-gpu-bundle-output`), which is what a KernelDb row holds and what hipModuleLoadData takes.
The kernels are portable sources that need no HIP headers (`-nogpuinc`); clang-19 also runs without
device libraries (`-nogpulib`) because Debian ships none for the archs it builds (gfx942, gfx11,
gfx12). Debian's hipcc must be told the platform: nvcc is installed too.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from .._proc import run_tool
from ..errors import CompileError

__all__ = ["HipClang", "HIPCC", "CLANG19"]

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
            cmd = self.command(source, options, arch, out, include_dirs)
            run_tool(cmd, what=what, error=CompileError, env=self.env, cwd=tmp, timeout=600)
            return out.read_bytes()

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


HIPCC = HipClang("hipcc", "hipcc", _COMMON, {"HIP_PLATFORM": "amd"})
CLANG19 = HipClang("clang-19", "clang-19", (*_COMMON, "-nogpulib"), {})

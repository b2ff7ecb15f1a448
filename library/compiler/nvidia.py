"""NVIDIA compiler: NVRTC (cuda.bindings.nvrtc) from the kernel source straight to a cubin.

NVRTC runs in-process, so it is imported on first use only: importing this module costs nothing
on a machine without the CUDA wheels.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from .._cuda_status import is_success, unpack
from ..errors import CompileError

__all__ = ["Nvrtc", "NVRTC", "load_error"]

_FLAGS = ("-std=c++17",)


def _nvrtc() -> Any:
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        raise CompileError(
            "NVRTC is not installed: pip install nvidia-cuda-nvrtc cuda-bindings"
        ) from None
    return nvrtc


def load_error() -> str | None:
    """None where NVRTC's library loads, else why not, in one line naming what to install:
    the bindings load libnvrtc on their first call, and a missing library raises there."""
    try:
        _version()
    except CompileError as exc:
        return str(exc)
    return None


def _check(nvrtc: Any, result: Any, what: str) -> Any:
    return unpack(nvrtc, result, what, CompileError)


class Nvrtc:
    """NVRTC, compiling one source file to a cubin for one `sm_XX`."""

    name = "nvrtc"
    vendor = "nvidia"
    flags = _FLAGS

    def command(self, source: Path, options: Sequence[str], arch: str,
                include_dirs: Sequence[Path] = ()) -> list[str]:
        """The NVRTC options for one compile (what nvcc would be told, for logs and tests)."""
        return [f"-arch={arch}", *self.flags, *(f"-I{d}" for d in include_dirs), *options]

    def compile(self, source: Path, options: Sequence[str], arch: str,
                include_dirs: Sequence[Path] = (), what: str = "compile") -> bytes:
        """Compile `source` for `arch` ('sm_90'); the cubin's bytes."""
        nvrtc = _nvrtc()
        _version()  # the library loaded, or one CompileError saying what is missing
        opts = self.command(source, options, arch, (source.parent, *include_dirs))
        line = f"nvrtc {source} " + " ".join(opts)
        err, prog = nvrtc.nvrtcCreateProgram(source.read_bytes(), source.name.encode(), 0, [], [])
        _check(nvrtc, err, what)
        try:
            result = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
            status = result[0] if isinstance(result, tuple) else result
            if not is_success(nvrtc, status):
                _, size = nvrtc.nvrtcGetProgramLogSize(prog)
                buf = b" " * size
                nvrtc.nvrtcGetProgramLog(prog, buf)
                log = buf.rstrip(b"\0").decode(errors="replace")
                raise CompileError(f"{what} failed: {line}", log=f"$ {line}\n{log}")
            err, size = nvrtc.nvrtcGetCUBINSize(prog)
            _check(nvrtc, err, what)
            cubin = b" " * size
            _check(nvrtc, nvrtc.nvrtcGetCUBIN(prog, cubin), what)
            return bytes(cubin)
        finally:
            nvrtc.nvrtcDestroyProgram(prog)

    def identity(self) -> str:
        return f"nvrtc [{_version()}] " + " ".join(self.flags)


@lru_cache(maxsize=1)
def _version() -> str:
    nvrtc = _nvrtc()
    try:
        err, major, minor = nvrtc.nvrtcVersion()
    except (RuntimeError, OSError) as exc:  # cuda-pathfinder found no libnvrtc
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise CompileError(
            f"NVRTC's library cannot be loaded ({first[:200]}): pip install nvidia-cuda-nvrtc "
            "(the [cuda] extra) into this environment") from None
    _check(nvrtc, err, "nvrtcVersion")
    return f"{major}.{minor}"


NVRTC = Nvrtc()

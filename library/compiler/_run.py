"""The one way this package runs a compiler: log the command, capture its output, and turn a
failure into a CompileError that carries the command and everything the tool printed."""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import CompileError

__all__ = ["run_tool"]

log = logging.getLogger("miopenkernels.compiler")


def run_tool(
    cmd: Sequence[str],
    *,
    what: str,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float | None = 600,
) -> subprocess.CompletedProcess[str]:
    """Run `cmd`; on a non-zero exit raise CompileError(`what` failed ..., log=stdout+stderr).

    `env` holds variables added to the current environment (e.g. HIP_PLATFORM=amd).
    """
    line = shlex.join(cmd)
    log.debug("run: %s", line)
    full_env = {**os.environ, **env} if env else None
    try:
        proc = subprocess.run(
            list(cmd), capture_output=True, text=True, env=full_env, cwd=cwd, timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise CompileError(f"{what}: {cmd[0]} is not installed or not on PATH") from None
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"") + (exc.stderr or b"")
        text = out.decode(errors="replace") if isinstance(out, bytes) else str(out)
        raise CompileError(f"{what}: timed out after {timeout} s: {line}", log=text) from None
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).strip()
        log.debug("%s failed (exit %d): %s\n%s", what, proc.returncode, line, output)
        raise CompileError(
            f"{what} failed (exit {proc.returncode})", log=f"$ {line}\n{output}"
        )
    return proc

"""One wrapper for every subprocess of packaging and installing: log the command, and turn a
failure into the given error class with the tail of the tool's own output."""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ..errors import MIOpenKernelsError

__all__ = ["run_tool"]

log = logging.getLogger("miopenkernels.install")


def run_tool(
    cmd: Sequence[str | os.PathLike[str]],
    *,
    error: type[MIOpenKernelsError],
    what: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 900,
) -> subprocess.CompletedProcess[str]:
    """Run `cmd`; on a non-zero exit raise `error` with `what` and the last lines of output."""
    args = [str(c) for c in cmd]
    log.info("run: %s", shlex.join(args))
    full_env = {**os.environ, **(env or {})}
    try:
        proc = subprocess.run(args, cwd=cwd, env=full_env, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except FileNotFoundError:
        raise error(f"{what}: {args[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise error(f"{what}: timed out after {timeout:.0f} s") from None
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-6:]
        detail = " | ".join(line.strip() for line in tail if line.strip())
        raise error(f"{what} failed (exit {proc.returncode}): {detail}")
    return proc

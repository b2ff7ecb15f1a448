"""The one place that runs another program (compilers, pip, git, rocminfo, PEP 517 hooks): log
the command, capture its output, and turn a failure into the caller's error class with the tail
of the tool's own output in the message and all of it in `log`."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from ._log import get_logger
from .errors import MIOpenKernelsError

__all__ = ["run_tool"]

log = get_logger("miopenkernels.proc")
_TAIL_LINES = 6


def _fail(error: type[Exception], message: str, output: str) -> Exception:
    err = error(message)
    if isinstance(err, MIOpenKernelsError):
        err.log = output
    return err


def run_tool(
    cmd: Sequence[str | os.PathLike[str]],
    *,
    what: str,
    error: type[Exception] = MIOpenKernelsError,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = 900,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run `cmd` (`env` adds to the current environment). A missing program, a timeout and,
    with `check`, a non-zero exit raise `error` naming `what`; text is decoded leniently."""
    args = [str(c) for c in cmd]
    line = shlex.join(args)
    log.debug("run: %s", line)
    full_env = {**os.environ, **env} if env else None
    try:
        proc = subprocess.run(args, cwd=cwd, env=full_env, capture_output=True, text=True,
                              errors="replace", timeout=timeout, check=False)
    except FileNotFoundError:
        raise _fail(error, f"{what}: {args[0]} is not installed or not on PATH", "") from None
    except subprocess.TimeoutExpired as exc:
        out = b"".join(o if isinstance(o, bytes) else str(o).encode()
                       for o in (exc.stdout, exc.stderr) if o)
        raise _fail(error, f"{what}: {args[0]} did not finish in {timeout:g} s",
                    f"$ {line}\n{out.decode(errors='replace')}") from None
    except OSError as exc:
        raise _fail(error, f"{what}: cannot run {args[0]}: {exc.strerror or exc}", "") from None
    if check and proc.returncode != 0:
        output = (proc.stdout + proc.stderr).strip()
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-_TAIL_LINES:]
        detail = " | ".join(t.strip() for t in tail if t.strip()) or "no output"
        log.debug("%s failed (exit %d): %s\n%s", what, proc.returncode, line, output)
        raise _fail(error, f"{what} failed (exit {proc.returncode}): {detail}",
                    f"$ {line}\n{output}")
    return proc

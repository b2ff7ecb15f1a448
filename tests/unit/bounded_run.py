"""The CLI in a child process, measured: exit code, output, wall time and peak RSS, for the
tests that bound what hostile input may cost (issue: under 5 s and 512 MiB on a 2-core box)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TIME_LIMIT_S = 5.0
RSS_LIMIT_MB = 512

# The child writes its own peak (VmHWM: that of the program it runs, since its exec) at exit:
# `ru_maxrss` would also count the test process it was forked from.
_CHILD = """import atexit, os
def _peak():
    with open('/proc/self/status') as fh:
        kib = next(ln.split()[1] for ln in fh if ln.startswith('VmHWM'))
    with open(os.environ['MK_PEAK_FILE'], 'w') as fh:
        fh.write(kib)
atexit.register(_peak)
from miopenkernels.cli import main
main()
"""


def run_cli(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str, float, float]:
    """(exit code, stdout + stderr, seconds, peak RSS in MiB) of `miopenkernels ARGS`."""
    rc, out, seconds, _, rss = run_cli_cpu(args, env)
    return rc, out, seconds, rss


def run_cli_cpu(args: list[str], env: dict[str, str] | None = None
                ) -> tuple[int, str, float, float, float]:
    """(exit code, output, wall seconds, CPU seconds (user + system), peak RSS in MiB) of
    `miopenkernels ARGS`: the CPU time is the child's own, whatever else the box runs."""
    with tempfile.TemporaryDirectory() as tmp:
        peak = Path(tmp) / "peak"
        full_env = {**os.environ, "COLUMNS": "200", "MK_PEAK_FILE": str(peak), **(env or {})}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        proc = subprocess.run([sys.executable, "-c", _CHILD, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, env=full_env, timeout=60)
        seconds = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        rss = int(peak.read_text()) / 1024
    return proc.returncode, proc.stdout.decode(errors="replace"), seconds, cpu, rss


def run_cli_bounded(args: list[str], code: int, env: dict[str, str] | None = None) -> str:
    """The output of `miopenkernels ARGS`, checked: exit `code`, one `error:` line where it is
    not 0, no traceback, within the time and memory bounds."""
    rc, out, seconds, rss = run_cli(args, env)
    assert rc == code, out
    assert "Traceback" not in out, out
    if code:
        assert "error:" in out, out
    assert seconds < TIME_LIMIT_S, f"{args}: {seconds:.1f} s"
    assert rss < RSS_LIMIT_MB, f"{args}: {rss:.0f} MiB"
    return out

"""What the benchmarks record about the host they ran on."""

from __future__ import annotations

import platform
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what `platform` says, else 'unknown'."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_seconds() -> float:
    """CPU seconds of this process and its waited-for children (compilers, ptxas): what a
    compile costs, which a busy neighbour does not inflate as it does the wall clock."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def python_speed_ms(repeats: int = 5) -> float:
    """Milliseconds the interpreter takes for a fixed pure-Python loop (best of `repeats`):
    host-side timings of two runs compare only as far as this figure agrees."""
    import time

    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        total = 0
        for i in range(200_000):
            total += i % 7
        best = min(best, time.perf_counter() - t0)
    return round(best * 1e3, 3)


def nvidia_driver() -> str:
    """The NVIDIA driver's version as nvidia-smi reports it, or '' where there is none."""
    import subprocess

    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              check=False).stdout.strip()
    except OSError:
        return ""

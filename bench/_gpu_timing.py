"""GPU and wall time of a call, as bench/zoo.py and the benches built on it measure them (on
the device machine, with PyTorch): GPU time with the launches queued behind a sleep kernel, so
that host cost does not show (`queued_gpu_ms`), and wall time per call with the host included
(`wall_ms`). bench/zoo.py re-exports these names. `no_gpu` says why a bench cannot run here.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

_CYCLES_PER_MS: list[float] = []


def no_gpu(hint: str = "") -> str | None:
    """Why the GPU benches cannot run here (PyTorch missing, no CUDA device), ending with what
    to do (`hint` appended, e.g. " (or --check)"), or None where they can."""
    try:
        import torch
    except ImportError:
        return f"PyTorch is not installed; run this on the GPU machine{hint}"
    if not torch.cuda.is_available():
        return f"no CUDA device; run this on the GPU machine{hint}"
    return None


def _cycles_per_ms() -> float:
    """The sleep kernel's cycles per millisecond on this GPU (measured once)."""
    import torch

    if not _CYCLES_PER_MS:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)  # load the kernel
        start.record()
        torch.cuda._sleep(10_000_000)
        end.record()
        end.synchronize()
        _CYCLES_PER_MS.append(10_000_000 / max(start.elapsed_time(end), 1e-3))
    return _CYCLES_PER_MS[0]


def sleep_ms_for(host_ms: float, repeats: int) -> float:
    """How long the sleep kernel must last for `repeats` calls of `host_ms` host time each to
    be queued before it ends: twice that, plus a millisecond, at most two seconds."""
    return min(2 * host_ms * repeats + 1.0, 2000.0)


def queued_gpu_ms(fn: Callable[[], object], repeats: int, warmup: int) -> float:
    """GPU time per launch: `repeats` calls queued behind a sleep kernel, between two events,
    so that every timed launch is queued before the first starts and the events see the
    GPU's time alone. Where the host took longer to queue them than the sleep lasted, the
    measurement is taken again behind a sleep that covers what it took."""
    import torch

    for _ in range(warmup):
        fn()  # cuDNN's benchmark and every first-call cost happen here
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(3):
        fn()
    sleep_ms = sleep_ms_for((time.perf_counter() - t0) * 1e3 / 3, repeats)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(2):
        torch.cuda._sleep(int(_cycles_per_ms() * sleep_ms))
        t0 = time.perf_counter()
        start.record()
        for _ in range(repeats):
            fn()
        end.record()
        queued_ms = (time.perf_counter() - t0) * 1e3
        end.synchronize()
        if queued_ms < sleep_ms:
            break
        sleep_ms = min(2 * queued_ms + 1.0, 4000.0)
    return start.elapsed_time(end) / repeats


def wall_ms(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of one call and a device synchronisation (host included)."""
    import torch

    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return float(statistics.median(times))

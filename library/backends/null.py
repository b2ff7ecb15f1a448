"""A backend for machines without a GPU: everything up to the launch is real.

Code objects are checked against the target (as the driver would refuse a foreign one), kernel
names are looked up in the blob's symbol strings, launches are recorded with their packed
arguments, and device memory is host numpy memory, so tensors round-trip. As no kernel runs,
`Handle.run` fills a convolution's output with the float64 reference
(`solvers.reference.compute_reference`).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._record import dataclass
from ..errors import BackendError
from ..target import Target
from .base import Backend, Buffer, Graph, Module, PreparedLaunch

if TYPE_CHECKING:  # numpy is imported where memory is touched, not on `import`
    import numpy as np

__all__ = ["NullBackend", "RecordedLaunch"]


@dataclass(frozen=True)
class RecordedLaunch:
    kernel: str
    grid: tuple[int, ...]
    block: tuple[int, ...]
    shared: int
    args: tuple[tuple[str, int | float | None], ...]


class NullBackend(Backend):
    """No device: loads check the code object, launches are recorded, memory is numpy."""

    name = "null"

    def __init__(self, target: Target | None = None, check_symbols: bool = True) -> None:
        super().__init__()
        self.target = target
        self.vendor = target.vendor if target else ""
        self.device_name = "null device"
        self.check_symbols = check_symbols
        self.recorded: list[RecordedLaunch] = []
        self.loaded = 0
        self._memory: dict[int, np.ndarray] = {}
        self._next = itertools.count(0x10000, 0x10000)
        # time_ms reports this per launch (tests set it to order solvers).
        self.kernel_ms: dict[str, float] = {}
        self.warned_no_result = False  # Handle.run says once that it computed nothing
        self.warned_slow_reference = False  # ... and once that its reference will take long

    def _load(self, blob: bytes) -> Any:
        self.loaded += 1
        return bytes(blob)

    def _get_function(self, module: Module, name: str) -> Any:
        if self.check_symbols and name.encode() not in module.handle:
            raise BackendError(f"kernel {name!r} not found in the code object "
                               "(CUDA_ERROR_NOT_FOUND: named symbol not found)")
        return name

    def _launch(self, launch: PreparedLaunch, stream: Any) -> None:
        for kind, arg in zip(launch.kinds, launch.values, strict=True):
            if kind.startswith("ptr") and arg.value and self._find(arg.value) is None:
                raise BackendError(f"launch of {launch.fn.name}: argument {kind} = "
                                   f"{arg.value:#x} is not device memory "
                                   "(CUDA_ERROR_ILLEGAL_ADDRESS)")
        self.launches += 1
        self.recorded.append(RecordedLaunch(
            launch.fn.name, launch.grid, launch.block, launch.shared,
            tuple(zip(launch.kinds, [v.value for v in launch.values], strict=True)),
        ))

    def _find(self, ptr: int) -> tuple[int, np.ndarray] | None:
        for base, mem in self._memory.items():
            if base <= ptr < base + max(1, mem.nbytes):
                return base, mem
        return None

    def alloc(self, nbytes: int) -> Buffer:
        if nbytes < 0:
            raise BackendError(f"cannot allocate {nbytes} bytes")
        ptr = next(self._next)
        # Keep allocations apart so pointer arithmetic into one never lands in another.
        self._next = itertools.count(ptr + ((nbytes + 0xFFFF) // 0x10000 + 1) * 0x10000, 0x10000)
        import numpy as np

        mem = np.zeros(nbytes, dtype=np.uint8)
        self._memory[ptr] = mem
        return Buffer(ptr, nbytes, self, mem)

    def free(self, buf: Buffer) -> None:
        self._memory.pop(buf.ptr, None)

    def _view(self, ptr: int, nbytes: int) -> np.ndarray:
        hit = self._find(ptr)
        if hit is None:
            raise BackendError(f"{ptr:#x} is not device memory of the null backend")
        base, mem = hit
        off = ptr - base
        if off + nbytes > mem.nbytes:
            raise BackendError(f"copy of {nbytes} bytes at {ptr:#x} runs past its allocation")
        return mem[off:off + nbytes]

    def copy_in(self, buf: Buffer, host: np.ndarray) -> None:
        import numpy as np

        data = np.ascontiguousarray(host).view(np.uint8).reshape(-1)
        self._view(buf.ptr, data.nbytes)[:] = data

    def copy_out(self, host: np.ndarray, buf: Buffer) -> None:
        if not host.flags.c_contiguous:
            raise BackendError("copy_out needs a C-contiguous host array")
        host.reshape(-1).view("u1")[:] = self._view(buf.ptr, host.nbytes)

    def memset_ptr(self, ptr: int, byte: int, nbytes: int, stream: Any = None) -> None:
        self._view(ptr, nbytes)[:] = byte

    def synchronize(self) -> None:
        pass

    def begin_capture(self, stream: Any = None) -> int:
        """Record the calls made until `end_capture` (a Graph replays them)."""
        if self.capture_stream is not None:
            raise BackendError("a capture is already under way on this backend")
        self._recording = []
        self.capture_stream = int(stream or 1)
        return self.capture_stream

    def end_capture(self) -> Graph:
        calls, self._recording, self.capture_stream = self._recording or [], None, None
        return Graph(calls)

    @property
    def has_timer(self) -> bool:
        """No device, no timer: host times of emulated launches say nothing about a GPU. Only
        `kernel_ms`, recorded device timings replayed (tests, rehearsals), stands in for one."""
        return bool(self.kernel_ms)

    def time_ms(self, fn: Callable[[], None], repeats: int = 1) -> list[float]:
        out = []
        for _ in range(repeats):
            before = len(self.recorded)
            t0 = time.perf_counter()
            fn()
            host = (time.perf_counter() - t0) * 1e3
            names = [r.kernel for r in self.recorded[before:]]
            known = [self.kernel_ms[n] for n in names if n in self.kernel_ms]
            out.append(sum(known) if known else host)
        return out



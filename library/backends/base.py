"""What every backend offers: load a code object, look up a kernel, launch it, memory, events.

A backend is a few small classes over this base (tinygrad's runtime is the model): `Backend`
(device, memory, streams, events), `Module` (a loaded code object) and `Function` (one kernel).
`PreparedLaunch` packs a kernel's arguments once; a repeated call only rewrites pointer slots, so
an invoker costs one launch.
"""

from __future__ import annotations

import ctypes
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .._record import dataclass, field
from ..errors import BackendError
from ..target import Target

if TYPE_CHECKING:  # numpy is imported where memory is touched, not on `import`
    import numpy as np

    from ..codeobject import LaunchMetadata

__all__ = [
    "Arg",
    "Backend",
    "Buffer",
    "Function",
    "Module",
    "PreparedLaunch",
    "Graph",
    "ARG_CTYPES",
    "WARMUP",
]

WARMUP = 2
"""Untimed launches before a kernel is timed (find and tuning alike)."""

# Kernel argument kinds: 'ptr' (a device address) and scalars; a solver's Launch names pointer
# arguments 'ptr:<tensor>' (x, w, y, workspace...), scalars by their C type.
ARG_CTYPES: dict[str, type] = {
    "ptr": ctypes.c_uint64,
    "i32": ctypes.c_int32,
    "u32": ctypes.c_uint32,
    "i64": ctypes.c_int64,
    "u64": ctypes.c_uint64,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
}


def _ctype(kind: str) -> type:
    base = kind.split(":", 1)[0]
    try:
        return ARG_CTYPES[base]
    except KeyError:
        raise BackendError(f"kernel argument kind {kind!r} is not one of {sorted(ARG_CTYPES)}")\
            from None


@lru_cache(maxsize=256)
def _layout(kinds: tuple[str, ...]) -> tuple[tuple[type, ...], dict[str, int]]:
    """(C type per argument, {tensor name: slot} of the pointers) of an argument list's kinds,
    worked out once per kernel signature (shared: never change the dict). A tensor named by
    several pointers is set through the first (a Triton kernel's workspace pointer); the others
    stay null (its scratch pointers, which the objects here never use)."""
    slots: dict[str, int] = {}
    for i, k in enumerate(kinds):
        if ":" in k:
            slots.setdefault(k.split(":", 1)[1], i)
    return tuple(_ctype(k) for k in kinds), slots


@dataclass
class Arg:
    """One kernel argument: its kind ('ptr:x', 'i32'...) and value.

    Launches also take the solver registry's `KernelArg` (same `kind` and `value`, None for a
    pointer).
    """

    kind: str
    value: int | float | None = 0


@dataclass
class Buffer:
    """Device memory. `host` is set on the null backend (a numpy byte array stands in)."""

    ptr: int
    nbytes: int
    backend: Backend | None = field(default=None, repr=False)
    host: np.ndarray | None = field(default=None, repr=False)

    def free(self) -> None:
        if self.backend is not None and self.ptr:
            self.backend.free(self)
            self.ptr = 0


@dataclass
class Function:
    """One kernel symbol of a loaded module."""

    name: str
    handle: Any
    module: Module
    # Dynamic shared memory the function has been allowed beyond the default 48 KiB (set once
    # per function, not per launch).
    shared_optin: int = 0


class Module:
    """A loaded code object; `function(name)` looks a kernel up (and caches it).

    `meta` is the launch metadata the kdb blob carried (a Triton kernel's), else None.
    """

    def __init__(self, backend: Backend, handle: Any, blob: bytes,
                 meta: LaunchMetadata | None = None) -> None:
        self.backend = backend
        self.handle = handle
        self.nbytes = len(blob)
        self.meta = meta
        self._functions: dict[str, Function] = {}

    def function(self, name: str) -> Function:
        fn = self._functions.get(name)
        if fn is None:
            fn = Function(name, self.backend._get_function(self, name), self)
            self._functions[name] = fn
        return fn


class PreparedLaunch:
    """A kernel launch with its arguments packed once.

    The packed block is an array of C values plus the `void*[]` array pointing at them, as
    cuLaunchKernel / hipModuleLaunchKernel take it. `set(i, value)` rewrites one slot in place.
    """

    def __init__(self, backend: Backend, fn: Function, grid: Sequence[int], block: Sequence[int],
                 args: Sequence[Any], shared: int = 0) -> None:
        self.backend = backend
        self.fn = fn
        self.grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        self.block = tuple(int(b) for b in block) + (1,) * (3 - len(block))
        self.shared = int(shared)
        kinds = tuple(a.kind for a in args)
        types, self.slots = _layout(kinds)
        self.kinds = list(kinds)
        self.values = [t(a.value or 0) for t, a in zip(types, args, strict=True)]
        self.pointers = (ctypes.c_void_p * max(1, len(args)))(
            *[ctypes.addressof(v) for v in self.values]
        )
        if any(g < 1 for g in self.grid) or any(b < 1 for b in self.block):
            raise BackendError(f"launch of {fn.name} with an empty grid {self.grid} or block "
                               f"{self.block}")

    @property
    def params_address(self) -> int:
        return ctypes.addressof(self.pointers)

    def set(self, name: str, value: int) -> None:
        """Point slot 'ptr:<name>' (the first that names it) at `value`."""
        self.values[self.slots[name]].value = value

    def args(self) -> list[Arg]:
        return [Arg(k, v.value) for k, v in zip(self.kinds, self.values, strict=True)]

    def packed(self) -> bytes:
        """The arguments as one little-endian block, each value aligned to its size."""
        out = bytearray()
        for v in self.values:
            size = ctypes.sizeof(v)
            out += b"\0" * (-len(out) % size)
            out += bytes(v)
        return bytes(out)

    def __call__(self, stream: Any = None) -> None:
        self.backend._launch(self, stream)


class Graph:
    """A captured sequence of launches (`Backend.begin_capture` / `end_capture`);
    `replay()` runs it again on its stream (or `stream`)."""

    def __init__(self, calls: list[Callable[[], None]] | None = None) -> None:
        self.calls = calls or []

    def replay(self, stream: Any = None) -> None:
        for call in self.calls:
            call()

    def close(self) -> None:  # noqa: B027 - a recorded list holds nothing to release
        return None


class Backend(ABC):
    """One GPU API. Subclasses implement the underscore methods and the memory calls."""

    name = "base"
    vendor = ""

    def __init__(self) -> None:
        self.target: Target | None = None
        self.device_name = ""
        self.launches = 0
        # The stream a capture records (Backend.begin_capture): calls without a stream go to
        # it. `_recording` holds the recorded calls where the backend replays them itself.
        self.capture_stream: int | None = None
        self._recording: list[Callable[[], None]] | None = None
        # The plans' shared workspace per stream (`workspace`), and the buffers it outgrew.
        self._workspace: dict[tuple[str, int], Buffer] = {}  # (pool, stream) -> buffer
        self._outgrown: list[Buffer] = []

    # ---- code objects
    def load(self, blob: bytes) -> Module:
        """Load a code object (cubin/PTX, AMDGPU ELF or offload bundle) from bytes; a launch
        metadata trailer (codeobject.split_kdb_blob) is split off and kept on the Module."""
        from ..codeobject import check_code_object, split_kdb_blob

        code, meta = split_kdb_blob(blob)
        if self.target is not None:
            check_code_object(code, self.target, bare=False)
        return Module(self, self._load(code), code, meta)

    @abstractmethod
    def _load(self, blob: bytes) -> Any: ...

    @abstractmethod
    def _get_function(self, module: Module, name: str) -> Any: ...

    # ---- launches
    def prepare(self, fn: Function, grid: Sequence[int], block: Sequence[int],
                args: Sequence[Any], shared: int = 0) -> PreparedLaunch:
        return PreparedLaunch(self, fn, grid, block, args, shared)

    def launch(self, fn: Function, grid: Sequence[int], block: Sequence[int],
               args: Sequence[Any], shared: int = 0, stream: Any = None) -> None:
        self.prepare(fn, grid, block, args, shared)(stream)

    @abstractmethod
    def _launch(self, launch: PreparedLaunch, stream: Any) -> None: ...

    def launcher(self, launch: PreparedLaunch) -> Callable[[int], None]:
        """A function of the stream that launches `launch` as packed now (its values may be
        rewritten in place between calls): the plans' hot path."""
        return launch.__call__

    # ---- streams and capture
    def is_capturing(self, stream: int) -> bool:
        """Whether `stream` is being captured into a graph (no allocation, no sync there)."""
        return self.capture_stream is not None and stream == self.capture_stream

    def record_call(self, call: Callable[[], None]) -> bool:
        """Keep `call` for a replay when this backend records captures itself (the null
        backend); False where the device records the launches (CUDA graphs)."""
        if self._recording is None:
            return False
        self._recording.append(call)
        return True

    def begin_capture(self, stream: Any = None) -> int:
        """Start capturing the calls made on `stream` (a new one if None) into a graph;
        returns the raw stream handle to launch on."""
        raise BackendError(f"the {self.name} backend cannot capture graphs")

    def end_capture(self) -> Graph:
        """Stop capturing; the captured calls as a Graph."""
        raise BackendError(f"the {self.name} backend cannot capture graphs")

    # ---- memory
    def workspace(self, stream: int, nbytes: int, pool: str = "plans") -> int:
        """The address of at least `nbytes` of device memory for launches on `stream`, shared
        by every plan of this backend that has no workspace of its own: launches on one stream
        run in order, so one plan's scratch is free again when the next plan's launch starts.
        It grows (to twice its size at least) and never shrinks; the buffers it outgrows stay
        allocated until `close`, because a captured graph may hold their address. A first call
        therefore allocates nothing once an earlier one needed as much (a cuMemAlloc is
        ~0.1 ms, a tenth of a first call). Inside a capture it cannot grow: BackendError.
        `pool` keeps users apart whose scratch is live at once: the GEMM library's ("library")
        is used during a call whose plan's workspace holds its operands."""
        buf = self._workspace.get((pool, stream))
        if buf is not None and buf.nbytes >= nbytes:
            return buf.ptr
        if self.is_capturing(stream):
            raise BackendError(f"a {nbytes}-byte workspace cannot be allocated inside a capture: "
                               "run the call once on the stream before capturing, or pass "
                               "workspace=")
        size = max(nbytes, 2 * buf.nbytes if buf is not None else 0, 1 << 20)
        new = self.alloc(size)
        if buf is not None:
            self._outgrown.append(buf)
        self._workspace[(pool, stream)] = new
        return new.ptr

    def free_workspaces(self) -> None:
        """Give back the shared workspaces (`workspace`); a backend's `close` calls it."""
        for buf in (*self._workspace.values(), *self._outgrown):
            buf.free()
        self._workspace.clear()
        self._outgrown.clear()

    @abstractmethod
    def alloc(self, nbytes: int) -> Buffer: ...

    @abstractmethod
    def free(self, buf: Buffer) -> None: ...

    @abstractmethod
    def copy_in(self, buf: Buffer, host: np.ndarray) -> None: ...

    @abstractmethod
    def copy_out(self, host: np.ndarray, buf: Buffer) -> None: ...

    def memset(self, buf: Buffer, byte: int, nbytes: int | None = None) -> None:
        """Fill the first `nbytes` (all) of `buf` with `byte`."""
        import numpy as np

        n = buf.nbytes if nbytes is None else nbytes
        self.copy_in(buf, np.full(n, byte, dtype=np.uint8))

    def memset_ptr(self, ptr: int, byte: int, nbytes: int, stream: Any = None) -> None:
        """Fill `nbytes` at `ptr` with `byte` (in order on `stream` where the device has one)."""
        self.memset(Buffer(ptr, nbytes, None), byte, nbytes)

    # ---- synchronisation and timing
    @abstractmethod
    def synchronize(self) -> None: ...

    @abstractmethod
    def time_ms(self, fn: Callable[[], None], repeats: int = 1) -> list[float]:
        """Run `fn` `repeats` times, each between two device events; times in ms."""

    def time_kernel(self, fn: Callable[[], None], repeats: int, warmup: int = WARMUP
                    ) -> list[float]:
        """How a kernel is timed everywhere (find, tuning): `warmup` untimed runs (first-launch
        costs, caches, clocks), then `time_ms(fn, repeats)`."""
        for _ in range(warmup):
            fn()
        return self.time_ms(fn, repeats)

    @property
    def has_timer(self) -> bool:
        """Whether `time_ms` measures a device. Only such timings are written to a FindDb or
        PerfDb; without a timer a find ranks solutions and records nothing."""
        return True

    def close(self) -> None:
        self.free_workspaces()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.target} {self.device_name!r}>"

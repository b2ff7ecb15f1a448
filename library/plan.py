"""Plans: a problem and a solution prepared once, so that a call only writes addresses and
launches.

`make_invoker` loads the solution's kernels through the kernel store (kernel_store.py), packs
their arguments (backends/base.py `PreparedLaunch`; a library's call is one too) and resolves
which pointer slot takes which tensor or part of the workspace. A `Plan` keeps what stays
between calls: the tensor layouts checked (per shape, strides and dtype), the workspace per
stream, the launch through pre-packed `kernelParams`. `plan.run(x, w, y)` reads a torch
tensor's `data_ptr()`, writes the three addresses and launches on the caller's stream (with
torch tensors the current torch stream unless `stream` names one). Inside a CUDA graph capture
a plan allocates, synchronises and records nothing: a workspace it would have to allocate
there is an error telling to run the plan once before capturing, or to pass a workspace.
"""

from __future__ import annotations

import math
import sys
import weakref
from typing import TYPE_CHECKING, Any

from ._record import dataclass, field, replace
from .errors import BackendError, ProblemError
from .problem import TYPE_BYTES
from .tensor import as_device, bind, check_layout, finish, is_host, is_torch, stream_handle

if TYPE_CHECKING:
    from collections.abc import Callable

    from .backends.base import Backend, Buffer, Graph, PreparedLaunch
    from .codeobject import LaunchMetadata
    from .problem import ConvProblem
    from .solvers.base import CompileJob, Launch, Params, Solver

__all__ = ["Capture", "ConvSolution", "Invoker", "Plan", "make_invoker", "tensor_roles",
           "output_role", "workspace_ptr", "bind", "finish", "stream_handle"]

Pointers = tuple[tuple[str, str, int], ...]


@dataclass(frozen=True)
class ConvSolution:
    """One way to compute a problem: solver, its time (ms) and workspace.

    `source` says where the ranking came from: 'find' (measured now), 'finddb' (a record),
    'ranking' (the miss ranking: `time` is its predicted ms, `params` its parameters) or
    'heuristic' (no ranking model: `time` is the solver's rank value).
    """

    solver: str
    algorithm: str
    time: float
    workspace: int
    source: str = "find"
    params: tuple[int, ...] | None = None
    specialised: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"solver": self.solver, "algorithm": self.algorithm, "time_ms": self.time,
                "workspace": self.workspace, "source": self.source}


@dataclass
class Invoker:
    """A ready kernel launch for one (problem, solver); `__call__` is one launch."""

    solver: str
    launch: PreparedLaunch
    # (kernel slot, layer tensor role, byte offset): a role's address plus the offset (a part
    # of the workspace, Solver.workspace_slots; 0 for the layer's tensors).
    pointers: Pointers
    workspace_bytes: int
    specialised: bool
    workspace: Buffer | None = field(default=None, repr=False)
    zero_first: tuple[tuple[str, int], ...] = ()  # (layer tensor role, bytes) to clear first
    params: tuple[int, ...] = ()
    # (layer tensor role, bytes) alignments the object assumes of its pointers, and how to
    # build the invoker of a variant without them (for tensors that are not aligned).
    alignment: tuple[tuple[str, int], ...] = ()
    unaligned: Invoker | Callable[[], Invoker] | None = field(default=None, repr=False)
    # Launches after the main one (a split reduction's sum) and before it (layout transposes
    # into the workspace), each with its own pointers as `pointers`.
    then: tuple[tuple[PreparedLaunch, Pointers], ...] = ()
    first: tuple[tuple[PreparedLaunch, Pointers], ...] = ()

    def free_workspace(self) -> None:
        """Give back the workspace this invoker allocated for itself, if any (a tuning search
        times hundreds of invokers: theirs must not pile up on the GPU)."""
        if self.workspace is not None:
            self.workspace.free()
            self.workspace = None

    def aligned_for(self, ptrs: dict[str, int]) -> Invoker:
        """This invoker, or its variant without alignment assumptions where `ptrs` break
        them (built on first use)."""
        if self.alignment and any(ptrs[role] % div for role, div in self.alignment):
            if not isinstance(self.unaligned, Invoker):
                assert self.unaligned is not None
                self.unaligned = self.unaligned()
            return self.unaligned
        return self

    def __call__(self, ptrs: dict[str, int], stream: Any = None) -> None:
        if self.workspace_bytes and not ptrs.get("workspace"):
            raise ProblemError(f"{self.solver} needs {self.workspace_bytes} bytes of workspace; "
                               "pass its address as ptrs['workspace'] (find.pointers does)")
        inv = self.aligned_for(ptrs)
        if inv is not self:
            inv(ptrs, stream)
            return
        for launch, pointers in self.first:
            for slot, role, offset in pointers:
                launch.set(slot, ptrs[role] + offset)
            launch(stream)
        for slot, role, offset in self.pointers:
            self.launch.set(slot, ptrs[role] + offset)
        for role, nbytes in self.zero_first:
            self.launch.backend.memset_ptr(ptrs[role], 0, nbytes, stream)
        self.launch(stream)
        for launch, pointers in self.then:
            for slot, role, offset in pointers:
                launch.set(slot, ptrs[role] + offset)
            launch(stream)


# ---------------------------------------------------------------------------- tensors
def tensor_roles(problem: ConvProblem) -> dict[str, str]:
    """Kernel pointer names -> the layer's tensor (x, w, y) for the problem's direction."""
    d = problem.direction
    if d == "F":
        return {"x": "x", "w": "w", "y": "y", "workspace": "workspace"}
    if d == "B":
        return {"dy": "y", "w": "w", "dx": "x", "workspace": "workspace"}
    return {"x": "x", "dy": "y", "dw": "w", "workspace": "workspace"}


def output_role(problem: ConvProblem) -> str:
    return {"F": "y", "B": "x", "W": "w"}[problem.direction]


# ---------------------------------------------------------------------------- invokers
def _job(ctx: Any, problem: ConvProblem, solver: Solver, params: Params,
         allow_specialised_compile: bool) -> tuple[CompileJob, bool]:
    """(compile job, specialised): a specialised binary if at hand or allowed, else dynamic."""
    from .errors import MIOpenKernelsError

    spec: CompileJob | None
    try:
        spec = solver.compile_job(problem, params, ctx.target, specialised=True)
    except (NotImplementedError, MIOpenKernelsError):
        spec = None
    if spec is not None and (allow_specialised_compile or ctx.store.has_kernel(spec)):
        return spec, True
    return solver.compile_job(problem, params, ctx.target, specialised=False), False


def _apply_meta(solver: Solver, launch: Launch, meta: LaunchMetadata | None) -> Launch:
    """The launch with the block and shared memory its object's LaunchMetadata names; checks
    the scratch arguments and that the launch's scalars meet the object's assumptions."""
    from .codeobject import assumed_divisors

    if meta is None:
        if launch.needs_meta:
            raise ProblemError(f"{solver.name}: the object of {launch.kernel_name} carries no "
                               "launch metadata; rebuild the kdb")
        return launch
    if meta.kernel != launch.kernel_name:
        raise ProblemError(f"{solver.name}: object metadata names kernel {meta.kernel}, the "
                           f"launch {launch.kernel_name}")
    scratch = [a for a in launch.args if a.name.endswith("_scratch")]
    if [a.name for a in scratch] != [name for name, _, _ in meta.scratch_args]:
        raise ProblemError(f"{solver.name}: {meta.kernel} takes scratch arguments "
                           f"{[n for n, _, _ in meta.scratch_args]}, the launch passes "
                           f"{[a.name for a in scratch]}")
    if any(size for _, size, _ in meta.scratch_args):
        raise ProblemError(f"{solver.name}: {meta.kernel} needs Triton scratch memory, which "
                           "the runtime does not provide")
    assumed = assumed_divisors(meta)
    if assumed:
        for a in launch.args:
            div = assumed.get(a.name)
            if div and a.value is not None and not a.is_pointer and int(a.value) % div:
                raise ProblemError(f"{solver.name}: {meta.kernel} was compiled assuming "
                                   f"{a.name} is a multiple of {div}; the problem has {a.value}")
    block = (meta.threads_per_block, 1, 1) if meta.threads_per_block else launch.block
    return replace(launch, block=block, shared_bytes=meta.shared_bytes)


def _pointer_roles(solver: Solver, problem: ConvProblem, prepared: PreparedLaunch,
                   roles: dict[str, str], slots: dict[str, int] | None = None) -> Pointers:
    """(kernel slot, layer tensor role, byte offset) of a prepared launch's pointer arguments,
    in order; `slots` names workspace parts (Solver.workspace_slots), "x@4096" a part of x."""
    from .solvers.base import split_offset
    out = []
    for name in prepared.slots:
        if slots and name in slots:
            out.append((name, "workspace", int(slots[name])))
            continue
        tensor, offset = split_offset(name)
        if tensor not in roles:
            raise ProblemError(f"{solver.name} launch names tensor {name!r}, not one of "
                               f"{sorted(roles)} for direction {problem.direction}")
        out.append((name, roles[tensor], offset))
    return tuple(out)


def make_invoker(ctx: Any, problem: ConvProblem, solver: Solver, *,
                 params: Params | None = None, allow_specialised_compile: bool = False,
                 specialised: bool | None = None, unaligned: bool = False) -> Invoker:
    """Load (or compile) the solver's kernel and pack its arguments. `ctx` gives the backend,
    the target, kernels and parameters (a Handle or its ExecutionContext); `unaligned` takes
    the solver's variants without pointer-alignment assumptions (follow-ups included)."""
    from .codeobject import assumed_divisors

    params = ctx.params_for(problem, solver) if params is None else tuple(params)
    backend = ctx.backend
    roles = tensor_roles(problem)
    slots = solver.workspace_slots(problem, params)

    def extra(pairs: tuple[tuple[CompileJob, Launch], ...]
              ) -> tuple[tuple[PreparedLaunch, Pointers], ...]:
        out = []
        for extra_job, extra_launch in pairs:
            extra_fn = ctx.store.kernel(extra_job)
            extra_launch = _apply_meta(solver, extra_launch, extra_fn.module.meta)
            extra_prepared = backend.prepare(extra_fn, extra_launch.grid, extra_launch.block,
                                             extra_launch.args, extra_launch.shared_bytes)
            out.append((extra_prepared,
                        _pointer_roles(solver, problem, extra_prepared, roles, slots)))
        return tuple(out)

    call = (problem, params, ctx.target)
    if solver.language == "library":  # a library call (GemmLaunch) between kernels of ours
        lib = solver.library_launch(backend, problem)  # type: ignore[attr-defined]
        return Invoker(solver.name, lib, _pointer_roles(solver, problem, lib, roles, slots),
                       int(solver.workspace_bytes(problem)), False, params=params,
                       first=extra(solver.lead_ins(*call)), then=extra(solver.follow_ups(*call)))
    if unaligned:
        variant = solver.unaligned_job(problem, params, ctx.target)
        if variant is None:
            raise ProblemError(f"{solver.name} has no variant for unaligned tensors")
        job, spec = variant, bool(specialised)
    elif specialised is None:
        job, spec = _job(ctx, problem, solver, params, allow_specialised_compile)
    else:
        job, spec = solver.compile_job(problem, params, ctx.target, specialised), specialised
    fn = ctx.store.kernel(job)
    meta = fn.module.meta
    launch = _apply_meta(solver, solver.launch(problem, params, spec), meta)
    prepared = backend.prepare(fn, launch.grid, launch.block, launch.args, launch.shared_bytes)
    ptrs = _pointer_roles(solver, problem, prepared, roles, slots)

    first = extra(solver.lead_ins(*call))
    then = extra((solver.unaligned_follow_ups if unaligned else solver.follow_ups)(*call))
    ws = max(int(launch.workspace_bytes), int(solver.workspace_bytes(problem)))
    sizes = {"x": (problem.in_shape, problem.in_type), "w": (problem.wei_shape, problem.wei_type),
             "y": (problem.out_shape, problem.out_type)}
    zero = tuple((roles[n], math.prod(sizes[roles[n]][0]) * TYPE_BYTES[sizes[roles[n]][1]])
                 for n in launch.zero_first if roles.get(n) in sizes)
    assumed = assumed_divisors(meta)
    # A part of a tensor ("x@offset") is aligned where the tensor is (offsets: 256-byte steps).
    align = tuple(sorted({("workspace" if a.tensor in slots else roles[a.whole], assumed[a.name])
                          for a in launch.args if a.name in assumed and a.is_pointer
                          and (a.whole in roles or a.tensor in slots)})) if assumed else ()
    fallback = None
    if align:
        def fallback() -> Invoker:
            return make_invoker(ctx, problem, solver, params=params, specialised=spec,
                                unaligned=True)
    return Invoker(solver.name, prepared, tuple(ptrs), ws, spec, zero_first=zero,
                   params=params, alignment=align, unaligned=fallback, then=then, first=first)


def workspace_ptr(backend: Backend, inv: Invoker) -> int:
    """The address of the invoker's own workspace (allocated on first use); 0 where its
    launches need none."""
    if not inv.workspace_bytes:
        return 0
    if inv.workspace is None:
        inv.workspace = backend.alloc(inv.workspace_bytes)
    return int(inv.workspace.ptr)


# ---------------------------------------------------------------------------- plans
_ROLE_INDEX = {"x": 0, "w": 1, "y": 2, "workspace": 3}


def _no_stream(device: int) -> int:
    raise BackendError("no torch CUDA tensors seen yet")  # pragma: no cover - never reached


class Plan:
    """One (problem, solution) prepared for repeated calls: `plan.run(x, w, y)` or
    `plan(x, w, y)` writes the tensors' addresses and launches.

    Made by `Handle.plan(problem, solution)` (and kept by `Handle.run`). `workspace_bytes` is
    the device scratch memory a call needs: pass `workspace=` (a tensor or Buffer of at least
    that size); else torch tensors take one from torch's allocator per stream, and other
    tensors the backend's workspace for the stream, which the plans share (Backend.workspace).
    """

    def __init__(self, backend: Backend, problem: ConvProblem, invoker: Invoker) -> None:
        self.backend, self.problem, self.invoker = backend, problem, invoker
        self.solver = invoker.solver
        self.workspace_bytes = invoker.workspace_bytes
        self.stale = False  # set when find replaced its invoker: Handle.run then asks again
        self._null = backend.name == "null"
        self._checked: set[object] = set()  # (role, shape, strides, type) accepted
        self._torch_layouts: dict[tuple[object, ...], int] = {}  # -> device index
        self._workspaces: dict[int, Any] = {}  # stream -> torch tensor (torch's allocator)
        self._torch_tensor: Any = None
        self._current_stream: Callable[[int], int] = _no_stream
        # The last call's torch tensors (weakly) and their device: the same tensors again skip
        # even the reading of their sizes and strides (most of a call's host cost); one resized
        # in place between calls (resize_, as_strided_) is not read again: pass a new view.
        self._last: tuple[Any, Any, Any, int] | None = None
        # A one-launch invoker's pointer slots as (C value, role index, offset) and its launch
        # with kernelParams packed once: a call sets the values and launches.
        self._slots: tuple[tuple[Any, int, int], ...] | None = None
        self._align = tuple((_ROLE_INDEX[r], d) for r, d in invoker.alignment)
        if not (invoker.first or invoker.then or invoker.zero_first):
            launch = invoker.launch
            self._slots = tuple((launch.values[launch.slots[slot]], _ROLE_INDEX[role], off)
                                for slot, role, off in invoker.pointers)
            self._go = backend.launcher(launch)

    def __repr__(self) -> str:
        return f"<Plan {self.solver} {self.problem.key()} workspace={self.workspace_bytes}>"

    def run(self, x: object, w: object, y: object, *, workspace: object = None,
            stream: Any = None) -> None:
        """One call on the layer's tensors (x, w, y whatever the direction computes) on
        `stream` (a raw handle or a stream object; with torch tensors, the current torch
        stream by default, else the backend's default stream or a capture's)."""
        last = self._last
        if last is not None and last[0]() is x and last[1]() is w and last[2]() is y:
            device = last[3]  # the same tensors as the last call: their layout was checked
        else:
            device = self._torch_device(x, w, y)
        if device < 0:
            self._run_bound(x, w, y, workspace, stream)
        else:  # torch tensors (_torch_device said so)
            self.run_checked(x, w, y, device, workspace=workspace, stream=stream)

    __call__ = run

    def run_checked(self, x: Any, w: Any, y: Any, device: int, *, workspace: object = None,
                    stream: Any = None) -> None:
        """`run` on torch tensors of CUDA `device` whose sizes, strides and types a `run`
        accepted before: their layout is not read again (a caller keyed on them, as
        miopenkernels.torch's eager calls are, pays only the launch)."""
        if stream is not None:
            handle = stream_handle(stream)
        elif self.backend.capture_stream is not None:
            handle = self.backend.capture_stream
        else:
            handle = self._current_stream(device)
        ws = self._workspace_ptr(handle, workspace, device) if self.workspace_bytes else 0
        self._launch((x.data_ptr(), w.data_ptr(), y.data_ptr(), ws), handle)

    def _torch_device(self, x: Any, w: Any, y: Any) -> int:
        """The device index of three torch tensors checked against the problem (once per
        new shapes, strides and dtypes); -1 for CPU tensors, or when they are not torch's."""
        tensor = self._torch_tensor
        if tensor is None:
            if not is_torch(x):
                return -1
            torch = sys.modules["torch"]
            tensor = self._torch_tensor = torch.Tensor
            raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
            self._current_stream = raw if raw is not None else (
                lambda device: torch.cuda.current_stream(device).cuda_stream)
        if not (isinstance(x, tensor) and isinstance(w, tensor) and isinstance(y, tensor)):
            return -1
        key = (x.shape, x.stride(), x.dtype, w.shape, w.stride(), w.dtype,
               y.shape, y.stride(), y.dtype)
        device = self._torch_layouts.get(key)
        if device is None:
            device = self._check_torch(key, x, w, y)
        if device >= 0:
            self._last = (weakref.ref(x), weakref.ref(w), weakref.ref(y), device)
        return device

    # ---- the launch
    def _launch(self, ptrs: tuple[int, int, int, int], stream: int) -> None:
        if self._slots is not None:
            for role, div in self._align:
                if ptrs[role] % div:
                    break
            else:
                for value, role, offset in self._slots:
                    value.value = ptrs[role] + offset
                self._go(stream)
                return
        self.invoker({"x": ptrs[0], "w": ptrs[1], "y": ptrs[2], "workspace": ptrs[3]}, stream)

    def _check_torch(self, key: tuple[object, ...], x: Any, w: Any, y: Any) -> int:
        """The device index of three torch tensors after checking them against the problem
        (once per new key); -1 for CPU tensors (served through numpy on the null backend)."""
        from .tensor import torch_layout

        devices = set()
        for role, t in (("x", x), ("w", w), ("y", y)):
            shape, strides, type_name, device = torch_layout(t)
            check_layout(self.problem, role, shape, strides, type_name)
            devices.add(device)
        if len(devices) != 1:
            raise BackendError(f"x, w and y are on different devices ({sorted(devices)}); "
                               "put them on one")
        device = devices.pop()
        if device >= 0 and self._null:
            raise BackendError("torch CUDA tensors on the null backend: open the Handle on the "
                               "GPU (Handle()), or pass CPU tensors")
        self._torch_layouts[key] = device
        return device

    def _workspace_ptr(self, stream: int, workspace: object, device: int = -1) -> int:
        """The workspace address for a call on `stream`: the caller's, else torch's (a torch
        call's, kept per stream) or the backend's shared one (never allocated in a capture)."""
        need = self.workspace_bytes
        if not need:
            return 0
        if workspace is not None:
            if is_torch(workspace) and workspace.is_cuda:  # type: ignore[attr-defined]
                size = workspace.numel() * workspace.element_size()  # type: ignore[attr-defined]
                if size < need:
                    raise ProblemError(f"workspace of {size} bytes; {self.solver} needs {need}")
                return int(workspace.data_ptr())  # type: ignore[attr-defined]
            t = as_device(workspace, self.backend, upload=False)
            if t.copied:
                t.release()
                raise BackendError("pass the workspace as device memory (a Buffer or GPU "
                                   "tensor), not a host array")
            if t.nbytes < need:
                raise ProblemError(f"workspace of {t.nbytes} bytes; {self.solver} needs {need}")
            return int(t.ptr)
        buf = self._workspaces.get(stream)
        if buf is None:
            if device >= 0:  # torch's allocator: stream-ordered, and legal inside a capture
                torch = sys.modules["torch"]
                buf = torch.empty(need, dtype=torch.uint8, device=f"cuda:{device}")
                self._workspaces[stream] = buf
                return int(buf.data_ptr())
            try:
                return self.backend.workspace(stream, need)
            except BackendError:
                if not self.backend.is_capturing(stream):
                    raise  # not the capture's doing (e.g. out of device memory)
                raise BackendError(f"{self.solver} needs a {need}-byte workspace and none was "
                                   "allocated for this stream before the capture: run the plan "
                                   "once on the stream first, or pass workspace=") from None
        return int(buf.data_ptr())

    def _run_bound(self, x: object, w: object, y: object, workspace: object, stream: Any) -> None:
        """Any other tensors (numpy, CPU torch, CUDA array interface, DLPack, Buffers)."""
        backend = self.backend
        handle = stream_handle(stream) if stream is not None else (backend.capture_stream or 0)
        if backend.capture_stream is not None and any(
                is_host(t) or (is_torch(t) and not getattr(t, "is_cuda", True))
                for t in (x, w, y)):
            raise BackendError("inside a capture pass device tensors (Buffers, GPU tensors): "
                               "host arrays are copied, which a graph cannot hold")
        bound = bind(self.problem, backend, x, w, y, checked=self._checked)
        try:
            ptrs = (bound["x"].ptr, bound["w"].ptr, bound["y"].ptr,
                    self._workspace_ptr(handle, workspace))
            self._launch(ptrs, handle)
            if self._null:  # the reference stands in for the kernel, replays included

                def replay() -> None:
                    self._launch(ptrs, handle)
                    self._reference(ptrs)

                if not backend.record_call(replay):
                    self._reference(ptrs)
        finally:
            finish(backend, self.problem, bound)

    def _reference(self, ptrs: tuple[int, int, int, int]) -> None:
        from .solvers.reference import null_result

        null_result(self.backend, self.problem, {"x": ptrs[0], "w": ptrs[1], "y": ptrs[2]})

    def free(self) -> None:
        """Drop the workspaces the plan holds (torch's; the backend's shared one stays)."""
        self._workspaces.clear()


class Capture:
    """A capture under way (`Handle.capture`): `stream` takes the calls; after the block,
    `replay()` runs them again."""

    def __init__(self, stream: int) -> None:
        self.stream = stream
        self.graph: Graph | None = None

    def replay(self, stream: Any = None) -> None:
        if self.graph is None:
            raise BackendError("the capture is not finished: replay after the with block")
        self.graph.replay(stream)

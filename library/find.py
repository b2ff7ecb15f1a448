"""Find modes, benchmarking, immediate mode and the invoker cache.

Find (MIOPEN_FIND_MODE, FORMATS.md):
- NORMAL (1): benchmark every applicable solver, record the result in the user FindDb (only
  with a device timer: the null backend ranks and records nothing).
- FAST (2): a FindDb record (user, else system) if there is one, else the immediate-mode
  ranking; never benchmarks.
- HYBRID (3): a FindDb record, else a NORMAL find.
- DYNAMIC_HYBRID (5, the default): a FindDb record, else a find over dynamic (shape-agnostic)
  kernels only: no specialised kernel is compiled.
MIOPEN_FIND_ENFORCE: DB_UPDATE (2) and SEARCH_DB_UPDATE (4) benchmark even on a FindDb hit and
rewrite the record; DB_CLEAN (5) removes the problem's user FindDb record and then finds as the
mode says; SEARCH (3) and SEARCH_DB_UPDATE also search the tunable solvers' parameters
(builder-side tuning, briefly) before benchmarking.

Benchmarking: each candidate is launched for warm-up, then timed between device events
`repeats` times; the median is its time. A candidate that fails (compile or launch) is left out.
A candidate that fails for a reason that may pass (a user database another process holds) is
tried again; if it still fails, the find returns what it measured but records nothing, since a
record without that solver would be trusted by every later find.

Kernels: a specialised binary is used when one is at hand (system kdb or user cache); NORMAL and
HYBRID finds compile specialised binaries, other paths use dynamic ones. An invoker caches, per
(problem, solver), the loaded kernel and its packed arguments; a repeated `run` only writes the
tensor pointers and launches.
"""

from __future__ import annotations

import logging
import statistics
import warnings
from dataclasses import dataclass, field
from typing import Any

from . import config
from .backends.base import WARMUP, Buffer, PreparedLaunch
from .config import FindEnforce, FindMode
from .errors import DbError, MIOpenKernelsError, ProblemError
from .problem import TYPE_BYTES
from .tensor import DeviceTensor, as_device

__all__ = [
    "ConvSolution",
    "Invoker",
    "find",
    "immediate_solutions",
    "benchmark",
    "invoker",
    "run",
    "tensor_roles",
    "solver_of",
    "search_params",
    "candidate_params",
    "bind",
]

log = logging.getLogger("miopenkernels")

REPEATS = 7
# Failures that another try may not repeat: a user database held or half-written by another
# process. A solver that fails so is retried, and never silently left out of a record.
TRANSIENT_ERRORS: tuple[type[MIOpenKernelsError], ...] = (DbError,)
TRANSIENT_RETRIES = 3
_RETRY_PAUSE_S = 0.05


@dataclass(frozen=True)
class ConvSolution:
    """One way to compute a problem: solver, its time (ms) and workspace.

    `source` says where the ranking came from: 'find' (measured now), 'finddb' (a record) or
    'heuristic' (immediate-mode estimate, `time` is the solver's rank value).
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
    pointers: tuple[tuple[str, str], ...]  # (kernel slot, layer tensor role)
    workspace_bytes: int
    specialised: bool
    workspace: Buffer | None = field(default=None, repr=False)
    zero_first: tuple[tuple[str, int], ...] = ()  # (layer tensor role, bytes) to clear first
    params: tuple[int, ...] = ()
    # (layer tensor role, bytes) alignments the object assumes of its pointers, and how to
    # build the invoker of a variant without them (for tensors that are not aligned).
    alignment: tuple[tuple[str, int], ...] = ()
    unaligned: Any = field(default=None, repr=False)

    def __call__(self, ptrs: dict[str, int]) -> None:
        if self.alignment and any(ptrs[role] % div for role, div in self.alignment):
            if not isinstance(self.unaligned, Invoker):
                self.unaligned = self.unaligned()  # built on first use
            self.unaligned(ptrs)
            return
        for slot, role in self.pointers:
            self.launch.set(slot, ptrs[role])
        for role, nbytes in self.zero_first:
            self.launch.backend.memset_ptr(ptrs[role], 0, nbytes)
        self.launch()


# ---------------------------------------------------------------------------- tensors
def tensor_roles(problem: Any) -> dict[str, str]:
    """Kernel pointer names -> the layer's tensor (x, w, y) for the problem's direction."""
    d = problem.direction
    if d == "F":
        return {"x": "x", "w": "w", "y": "y", "workspace": "workspace"}
    if d == "B":
        return {"dy": "y", "w": "w", "dx": "x", "workspace": "workspace"}
    return {"x": "x", "dy": "y", "dw": "w", "workspace": "workspace"}


def output_role(problem: Any) -> str:
    return {"F": "y", "B": "x", "W": "w"}[problem.direction]


def _elements(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def bind(handle: Any, problem: Any, x: Any, w: Any, y: Any, upload_output: bool = False
         ) -> dict[str, DeviceTensor]:
    """Device views of the layer's tensors, checked against the problem's sizes and types."""
    out_role = output_role(problem)
    spec = {"x": (x, problem.in_shape, problem.in_type),
            "w": (w, problem.wei_shape, problem.wei_type),
            "y": (y, problem.out_shape, problem.out_type)}
    bound: dict[str, DeviceTensor] = {}
    for role, (obj, shape, type_name) in spec.items():
        t = as_device(obj, handle.backend, upload=upload_output or role != out_role)
        t.temporary = t.temporary or (t is not obj and t.copied)
        want = _elements(shape) * TYPE_BYTES[type_name]
        if t.nbytes != want:
            raise ProblemError(f"tensor {role} has {t.nbytes} bytes; the problem needs {want} "
                               f"({type_name}, shape {shape})")
        if t.type_name and t.type_name != type_name:
            raise ProblemError(f"tensor {role} is {t.type_name}; the problem says {type_name}")
        bound[role] = t
    return bound


def _finish(handle: Any, problem: Any, bound: dict[str, DeviceTensor]) -> None:
    out = bound[output_role(problem)]
    if out.copied:
        handle.backend.synchronize()
        out.copy_back(handle.backend)
    for t in bound.values():
        if t.temporary:
            t.release()


# ---------------------------------------------------------------------------- solvers
def finddb_key(handle: Any, problem: Any) -> str:
    """The FindDb key under the handle's math mode (`Handle.finddb_key`)."""
    fn = getattr(handle, "finddb_key", None)
    return str(fn(problem)) if callable(fn) else str(problem.key())


def solver_of(handle: Any, solution: Any) -> Any:
    name = solution if isinstance(solution, str) else solution.solver
    for s in handle.solvers:
        if s.name == name:
            return s
    raise ProblemError(f"unknown solver {name!r}")


def _algorithm(solver: Any, problem: Any) -> str:
    try:
        return str(solver.algorithm(problem))
    except (KeyError, AttributeError, NotImplementedError):
        return ""


def _from_record(handle: Any, problem: Any, record: Any) -> list[ConvSolution]:
    known = {s.name: s for s in handle.applicable_solvers(problem)}
    implemented = {s.name for s in handle.solvers}
    out = []
    unknown = []
    for sol in record.solutions:
        if sol.solver not in known:
            if sol.solver not in implemented:
                unknown.append(sol.solver)
            else:
                log.debug("FindDb names solver %s, not applicable here for %s; skipped",
                          sol.solver, record.key)
            continue
        out.append(ConvSolution(sol.solver, sol.algorithm, sol.time, sol.workspace, "finddb"))
    if unknown:
        handle.finddb.note_unknown_solvers(record, unknown)
    return out


def immediate_solutions(handle: Any, problem: Any) -> list[ConvSolution]:
    """Ranked solutions without a benchmark: a FindDb record, else heuristic_rank order."""
    record = handle.finddb.lookup(finddb_key(handle, problem))
    if record is not None:
        sols = _from_record(handle, problem, record)
        if sols:
            return sols
    return heuristic_solutions(handle, problem)


def heuristic_solutions(handle: Any, problem: Any) -> list[ConvSolution]:
    ranked = []
    for i, s in enumerate(handle.applicable_solvers(problem)):
        ranked.append((float(s.heuristic_rank(problem, handle.target)), i, s))
    if not ranked:
        raise ProblemError(f"no solver applies to {problem.key()} on {handle.target.name}")
    ranked.sort(key=lambda r: (r[0], r[1]))
    return [ConvSolution(s.name, _algorithm(s, problem), rank, int(s.workspace_bytes(problem)),
                         "heuristic") for rank, _, s in ranked]


# ---------------------------------------------------------------------------- invokers
def _job(handle: Any, problem: Any, solver: Any, params: tuple[int, ...],
         allow_specialised_compile: bool) -> tuple[Any, bool]:
    """(compile job, specialised): a specialised binary if at hand or allowed, else dynamic."""
    try:
        spec = solver.compile_job(problem, params, handle.target, specialised=True)
    except (NotImplementedError, MIOpenKernelsError):
        spec = None
    if spec is not None and (allow_specialised_compile or handle.has_kernel(spec)):
        return spec, True
    return solver.compile_job(problem, params, handle.target, specialised=False), False


def _apply_meta(solver: Any, launch: Any, meta: Any) -> Any:
    """The launch with the block and shared memory its object's LaunchMetadata names; checks
    the scratch arguments and that the launch's scalars meet the object's assumptions."""
    import dataclasses

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
    scalars = launch.scalars()
    for name, div in assumed_divisors(meta).items():
        if name in scalars and int(scalars[name]) % div:
            raise ProblemError(f"{solver.name}: {meta.kernel} was compiled assuming {name} is "
                               f"a multiple of {div}; the problem has {scalars[name]}")
    block = (meta.threads_per_block, 1, 1) if meta.threads_per_block else launch.block
    return dataclasses.replace(launch, block=block, shared_bytes=meta.shared_bytes)


def make_invoker(handle: Any, problem: Any, solver: Any, *, params: tuple[int, ...] | None = None,
                 allow_specialised_compile: bool = False, specialised: bool | None = None,
                 unaligned: bool = False) -> Invoker:
    """Load (or compile) the solver's kernel and pack its arguments. `unaligned` takes the
    solver's variant without pointer-alignment assumptions."""
    params = handle.params_for(problem, solver) if params is None else tuple(params)
    if unaligned:
        job, spec = solver.unaligned_job(problem, params, handle.target), bool(specialised)
    elif specialised is None:
        job, spec = _job(handle, problem, solver, params, allow_specialised_compile)
    else:
        job, spec = solver.compile_job(problem, params, handle.target, specialised), specialised
    fn = handle.kernel(job)
    meta = fn.module.meta
    launch = _apply_meta(solver, solver.launch(problem, params, spec), meta)
    prepared = handle.backend.prepare(fn, launch.grid, launch.block, launch.args,
                                      launch.shared_bytes)
    roles = tensor_roles(problem)
    pointers = []
    for arg in launch.args:
        if arg.kind.startswith("ptr:"):
            name = arg.kind[4:]
            if name not in roles:
                raise ProblemError(f"{solver.name} launch names tensor {name!r}, not one of "
                                   f"{sorted(roles)} for direction {problem.direction}")
            pointers.append((name, roles[name]))
    ws = max(int(launch.workspace_bytes), int(solver.workspace_bytes(problem)))
    sizes = {"x": (problem.in_shape, problem.in_type), "w": (problem.wei_shape, problem.wei_type),
             "y": (problem.out_shape, problem.out_type)}
    zero = tuple((roles[n], _elements(sizes[roles[n]][0]) * TYPE_BYTES[sizes[roles[n]][1]])
                 for n in launch.zero_first if roles.get(n) in sizes)
    from .codeobject import assumed_divisors

    assumed = assumed_divisors(meta)
    align = tuple(sorted({(roles[a.tensor], assumed[a.name]) for a in launch.args
                          if a.is_pointer and a.name in assumed and a.tensor in roles}))
    fallback = None
    if align:
        def fallback() -> Invoker:
            return make_invoker(handle, problem, solver, params=params, specialised=spec,
                                unaligned=True)
    return Invoker(solver.name, prepared, tuple(pointers), ws, spec, zero_first=zero,
                   params=params, alignment=align, unaligned=fallback)


def invoker(handle: Any, problem: Any, solution: Any) -> Invoker:
    """The cached invoker of (problem, solver), built on first use."""
    name = solution if isinstance(solution, str) else solution.solver
    key = (problem, name)
    inv = handle.invokers.get(key)
    if inv is None:
        inv = make_invoker(handle, problem, solver_of(handle, name))
        handle.invokers[key] = inv
    return inv  # type: ignore[no-any-return]


def _pointers(handle: Any, inv: Invoker, bound: dict[str, DeviceTensor], workspace: Any
              ) -> dict[str, int]:
    ptrs = {role: t.ptr for role, t in bound.items()}
    if inv.workspace_bytes:
        if workspace is not None:
            ws = as_device(workspace, handle.backend)
            if ws.nbytes < inv.workspace_bytes:
                raise ProblemError(f"workspace of {ws.nbytes} bytes; {inv.solver} needs "
                                   f"{inv.workspace_bytes}")
            ptrs["workspace"] = ws.ptr
        else:
            if inv.workspace is None:
                inv.workspace = handle.backend.alloc(inv.workspace_bytes)
            ptrs["workspace"] = inv.workspace.ptr
    else:
        ptrs["workspace"] = 0
    return ptrs


def run(handle: Any, problem: Any, solution: Any, x: Any, w: Any, y: Any,
        workspace: Any = None) -> None:
    """One launch of the solution (plus copies for numpy tensors)."""
    inv = invoker(handle, problem, solution)
    bound = bind(handle, problem, x, w, y)
    ptrs = _pointers(handle, inv, bound, workspace)
    inv(ptrs)
    if handle.backend.name == "null":
        _null_result(handle, problem, ptrs)
    _finish(handle, problem, bound)


def _null_result(handle: Any, problem: Any, ptrs: dict[str, int]) -> None:
    """No kernel ran: the null backend computes the output with the reference solver, or
    says once, on the first run it cannot compute, that the output is left as it was."""
    from .backends.null import compute_reference

    if compute_reference(handle.backend, problem, ptrs):
        return
    if not handle.backend.warned_no_result:
        handle.backend.warned_no_result = True
        warnings.warn(f"the null backend (no GPU) launches nothing and the reference cannot "
                      f"compute {problem.key()}: its output is left as it was", stacklevel=3)


# ---------------------------------------------------------------------------- benchmark
def benchmark(handle: Any, problem: Any, bound: dict[str, DeviceTensor], *,
              dynamic_only: bool, workspace: Any = None, warmup: int = WARMUP,
              repeats: int = REPEATS, solvers: list[Any] | None = None,
              failures: dict[str, str] | None = None,
              transient: list[Any] | None = None) -> list[ConvSolution]:
    """Time every applicable solver on the bound tensors; fastest first.

    A solver that fails is left out (its message in `failures`); one that failed with a
    TRANSIENT_ERRORS class is also appended to `transient`.
    """
    results = []
    for solver in solvers if solvers is not None else handle.applicable_solvers(problem):
        try:
            inv = make_invoker(handle, problem, solver,
                               allow_specialised_compile=not dynamic_only)
            ptrs = _pointers(handle, inv, bound, workspace)

            def once(inv: Invoker = inv, ptrs: dict[str, int] = ptrs) -> None:
                inv(ptrs)

            times = handle.backend.time_kernel(once, repeats, warmup)
        except MIOpenKernelsError as exc:
            log.warning("find: %s failed on %s: %s", solver.name, problem.key(), exc)
            if failures is not None:
                failures[solver.name] = str(exc)
            if transient is not None and isinstance(exc, TRANSIENT_ERRORS):
                transient.append(solver)
            continue
        handle.invokers[(problem, solver.name)] = inv
        results.append(ConvSolution(solver.name, _algorithm(solver, problem),
                                    float(statistics.median(times)), inv.workspace_bytes,
                                    "find", inv.params, inv.specialised))
    results.sort(key=lambda s: s.time)
    return results


def _record(handle: Any, problem: Any, sols: list[ConvSolution]) -> None:
    """Write the measured ranking to the user FindDb; a backend without a device timer (the
    null backend) ranks but records nothing, so no made-up time ever reaches a database."""
    from .db.finddb import Solution

    if not sols or not handle.backend.has_timer or handle.finddb.user_path is None:
        return
    try:
        handle.finddb.store(finddb_key(handle, problem),
                            [Solution(s.solver, s.time, s.workspace, s.algorithm) for s in sols])
    except (DbError, OSError) as exc:  # the result stands; only its record is lost
        log.warning("find: could not record %s in the user FindDb: %s", problem.key(), exc)


def _clean(handle: Any, problem: Any) -> None:
    handle.finddb.remove(finddb_key(handle, problem))


def _benchmark_all(handle: Any, problem: Any, bound: dict[str, DeviceTensor],
                   dynamic_only: bool, workspace: Any) -> tuple[list[ConvSolution], bool]:
    """(solutions fastest first, whether every solver that should run did).

    Solvers that failed transiently are benchmarked again, up to TRANSIENT_RETRIES times.
    """
    import time

    transient: list[Any] = []
    sols = benchmark(handle, problem, bound, dynamic_only=dynamic_only, workspace=workspace,
                     transient=transient)
    for attempt in range(TRANSIENT_RETRIES):
        if not transient:
            break
        time.sleep(_RETRY_PAUSE_S * (attempt + 1))
        again, transient = transient, []
        sols += benchmark(handle, problem, bound, dynamic_only=dynamic_only,
                          workspace=workspace, solvers=again, transient=transient)
    sols.sort(key=lambda s: s.time)
    if transient:
        log.warning("find: %s still failing on %s after %d tries; not recording this problem",
                    ", ".join(s.name for s in transient), problem.key(), TRANSIENT_RETRIES + 1)
    return sols, not transient


def find(handle: Any, problem: Any, x: Any, w: Any, y: Any, *, mode: Any = None,
         enforce: Any = None, workspace: Any = None) -> list[ConvSolution]:
    """Solutions of `problem`, fastest first, as the find mode says; the output tensor holds
    the best solution's result afterwards (unless the mode only read a record)."""
    mode = FindMode.parse(mode) if mode is not None else config.find_mode()
    enforce = FindEnforce.parse(enforce) if enforce is not None else config.find_enforce()
    if enforce == FindEnforce.DB_CLEAN:
        _clean(handle, problem)
    force = enforce in (FindEnforce.DB_UPDATE, FindEnforce.SEARCH_DB_UPDATE)
    if enforce in (FindEnforce.SEARCH, FindEnforce.SEARCH_DB_UPDATE):
        _search(handle, problem)
    if mode != FindMode.NORMAL and not force:
        record = handle.finddb.lookup(finddb_key(handle, problem))
        if record is not None:
            sols = _from_record(handle, problem, record)
            if sols:
                return sols
        if mode == FindMode.FAST:
            return heuristic_solutions(handle, problem)
    dynamic_only = mode == FindMode.DYNAMIC_HYBRID
    bound = bind(handle, problem, x, w, y)
    try:
        sols, complete = _benchmark_all(handle, problem, bound, dynamic_only, workspace)
        if not sols:
            raise ProblemError(f"no solver ran for {problem.key()} on {handle.target.name}")
        # The output holds the winner's result, as a caller of find expects.
        best = handle.invokers[(problem, sols[0].solver)]
        best(_pointers(handle, best, bound, workspace))
        if complete:
            _record(handle, problem, sols)
    finally:
        _finish(handle, problem, bound)
    return sols


def candidate_params(solver: Any, problem: Any, target: Any, max_candidates: int = 48
                     ) -> list[tuple[int, ...]]:
    """The defaults, then up to `max_candidates` legal sets chosen by a fixed hash order.

    The order does not depend on the problem, so neighbouring problems try mostly the same
    sets and tuning a manifest needs few distinct binaries.
    """
    import zlib

    space = [tuple(p) for p in solver.param_space(problem, target)]
    default = tuple(solver.default_params(problem, target))
    if len(space) > max_candidates:
        space = sorted(space, key=lambda p: zlib.crc32(repr(p).encode()))[:max_candidates]
    return [default] + [p for p in space if p != default]


def search_params(handle: Any, problem: Any, solver: Any, bound: dict[str, DeviceTensor], *,
                  time_limit_s: float = 30.0, max_candidates: int = 64, repeats: int = 3,
                  log_entries: list[dict[str, Any]] | None = None
                  ) -> tuple[tuple[int, ...], float]:
    """Search a tunable solver's param_space on bound tensors: (best params, its median ms).

    Candidates: `candidate_params` (defaults first); the search stops at `time_limit_s`. A
    candidate that fails to compile or launch scores infinity. Every timing is appended to
    `log_entries`.
    """
    import math
    import time

    candidates = candidate_params(solver, problem, handle.target, max_candidates)
    default = candidates[0]
    best: tuple[tuple[int, ...], float] = (default, math.inf)
    start = time.perf_counter()
    for params in candidates:
        if time.perf_counter() - start > time_limit_s:
            break
        entry: dict[str, Any] = {"solver": solver.name, "key": problem.key(),
                                 "params": solver.params_to_string(params)}
        try:
            inv = make_invoker(handle, problem, solver, params=params, specialised=False)
            ptrs = _pointers(handle, inv, bound, None)

            def once(inv: Invoker = inv, ptrs: dict[str, int] = ptrs) -> None:
                inv(ptrs)

            ms = float(statistics.median(handle.backend.time_kernel(once, repeats)))
        except MIOpenKernelsError as exc:
            ms = math.inf
            entry["error"] = str(exc).splitlines()[0][:300]
        entry["time_ms"] = ms if math.isfinite(ms) else None
        if log_entries is not None:
            log_entries.append(entry)
        if ms < best[1]:
            best = (params, ms)
    return best


def _search(handle: Any, problem: Any) -> None:
    """MIOPEN_FIND_ENFORCE=SEARCH: tune the problem's tunable solvers into the user PerfDb."""
    import numpy as np

    from .tensor import numpy_dtype

    rng = np.random.default_rng()
    arrays = [rng.standard_normal(shape).astype(numpy_dtype(t)) for shape, t in (
        (problem.in_shape, problem.in_type), (problem.wei_shape, problem.wei_type),
        (problem.out_shape, problem.out_type))]
    bound = bind(handle, problem, arrays[0], arrays[1], arrays[2], upload_output=True)
    try:
        for solver in handle.applicable_solvers(problem):
            if not solver.tunable:
                continue
            params, ms = search_params(handle, problem, solver, bound, time_limit_s=10.0)
            if ms != float("inf") and handle.backend.has_timer and \
                    handle.perfdb.user_path is not None:
                try:
                    handle.perfdb.store(problem, solver.name, solver.params_to_string(params))
                except (DbError, OSError) as exc:
                    log.warning("search: could not record %s in the user PerfDb: %s",
                                solver.name, exc)
                handle.invokers.pop((problem, solver.name), None)
    finally:
        for t in bound.values():
            t.release()

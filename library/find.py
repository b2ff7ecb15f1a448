"""Find modes, benchmarking and parameter search; the hot path is in invoke.py.

Find (MIOPEN_FIND_MODE, FORMATS.md; docs/runtime.md has the table):
- NORMAL (1): benchmark every applicable solver, record the result in the user FindDb (only
  with a device timer: the null backend ranks and records nothing).
- FAST (2): a FindDb record (user, else system) if there is one, else the miss ranking; never
  benchmarks.
- HYBRID (3): a FindDb record, else a NORMAL find.
- DYNAMIC_HYBRID (5, the default): a FindDb record, else the miss ranking over the kernels at
  hand: no benchmark, no compile when a package is installed. Benchmarking is for those who ask
  for it (NORMAL, HYBRID, MIOPEN_FIND_ENFORCE).
MIOPEN_FIND_ENFORCE: DB_UPDATE (2) and SEARCH_DB_UPDATE (4) benchmark even on a FindDb hit and
rewrite the record (over dynamic kernels only in DYNAMIC_HYBRID); DB_CLEAN (5) removes the
problem's user FindDb record and then finds as the mode says; SEARCH (3) and SEARCH_DB_UPDATE
also search the tunable solvers' parameters (builder-side tuning, briefly) before benchmarking.

Benchmarking: each candidate is launched for warm-up, then timed between device events
`repeats` times (queued behind a spin kernel where the backend can: Backend.time_ms); the
median is its time. A candidate that fails (compile or launch) is left out.
A candidate that fails for a reason that may pass (a user database another process holds) is
tried again; if it still fails, the find returns what it measured but records nothing, since a
record without that solver would be trusted by every later find. NORMAL and HYBRID finds
compile specialised binaries; other paths use those at hand, else dynamic ones.
"""

from __future__ import annotations

import logging
import statistics
from typing import TYPE_CHECKING, Any

from . import config
from .backends.base import WARMUP
from .config import FindEnforce, FindMode
from .errors import BackendError, DbError, MIOpenKernelsError, ProblemError
from .invoke import (
    ConvSolution,
    ExecutionContext,
    Invoker,
    Runtime,
    algorithm_of,
    context_of,
    drop_plan,
    heuristic_solutions,
    immediate_solutions,
    invoker,
    make_invoker,
    output_role,
    ranked_solutions,
    run,
    solutions_from_record,
    solver_of,
    tensor_roles,
    workspace_ptr,
)
from .tensor import bind as bind_tensors
from .tensor import finish, stream_handle

if TYPE_CHECKING:
    from .problem import ConvProblem
    from .solvers.base import Params, Solver
    from .target import Target
    from .tensor import DeviceTensor

__all__ = [
    "ConvSolution",
    "Invoker",
    "find",
    "immediate_solutions",
    "ranked_solutions",
    "heuristic_solutions",
    "benchmark",
    "invoker",
    "make_invoker",
    "run",
    "tensor_roles",
    "output_role",
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


# ---------------------------------------------------------------------------- tensors
def bind(handle: Runtime, problem: ConvProblem, x: object, w: object, y: object,
         upload_output: bool = False) -> dict[str, DeviceTensor]:
    """Device views of the layer's tensors, checked against the problem (tensor.bind)."""
    return bind_tensors(problem, context_of(handle).backend, x, w, y, upload_output)


def pointers(handle: Runtime, inv: Invoker, bound: dict[str, DeviceTensor],
             workspace: object) -> dict[str, int]:
    """Tensor role -> device address for one launch, with the invoker's workspace."""
    backend = context_of(handle).backend
    ptrs = {role: t.ptr for role, t in bound.items()}
    ptrs["workspace"] = 0
    if inv.workspace_bytes and workspace is not None:
        from .tensor import as_device

        ws = as_device(workspace, backend)
        if ws.nbytes < inv.workspace_bytes:
            raise ProblemError(f"workspace of {ws.nbytes} bytes; {inv.solver} needs "
                               f"{inv.workspace_bytes}")
        ptrs["workspace"] = ws.ptr
    elif inv.workspace_bytes:
        ptrs["workspace"] = workspace_ptr(backend, inv)
    return ptrs


def _torch_capturing() -> bool:
    """Whether torch is capturing a CUDA graph on its current stream (torch.cuda.graph)."""
    import sys

    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.cuda.is_initialized()
                and torch.cuda.is_current_stream_capturing())


# ---------------------------------------------------------------------------- benchmark
def benchmark(handle: Runtime, problem: ConvProblem, bound: dict[str, DeviceTensor], *,
              dynamic_only: bool, workspace: object = None, warmup: int = WARMUP,
              repeats: int = REPEATS, solvers: list[Solver] | None = None,
              failures: dict[str, str] | None = None,
              transient: list[Solver] | None = None) -> list[ConvSolution]:
    """Time every applicable solver on the bound tensors; fastest first.

    A solver that fails is left out (its message in `failures`); one that failed with a
    TRANSIENT_ERRORS class is also appended to `transient`.
    """
    ctx = context_of(handle)
    results = []
    for solver in solvers if solvers is not None else ctx.applicable_solvers(problem):
        try:
            inv = make_invoker(ctx, problem, solver,
                               allow_specialised_compile=not dynamic_only)
            ptrs = pointers(ctx, inv, bound, workspace)

            def once(inv: Invoker = inv, ptrs: dict[str, int] = ptrs) -> None:
                inv(ptrs)

            times = ctx.backend.time_kernel(once, repeats, warmup)
        except MIOpenKernelsError as exc:
            log.warning("find: %s failed on %s: %s", solver.name, problem.key(), exc)
            if failures is not None:
                failures[solver.name] = str(exc)
            if transient is not None and isinstance(exc, TRANSIENT_ERRORS):
                transient.append(solver)
            continue
        ctx.invokers[(problem, solver.name)] = inv
        drop_plan(ctx, problem, solver.name)  # the next run takes the measured invoker
        results.append(ConvSolution(solver.name, algorithm_of(solver, problem),
                                    float(statistics.median(times)), inv.workspace_bytes,
                                    "find", inv.params, inv.specialised))
    results.sort(key=lambda s: s.time)
    return results


def _record(ctx: ExecutionContext, problem: ConvProblem, sols: list[ConvSolution]) -> None:
    """Write the measured ranking to the user FindDb; a backend without a device timer (the
    null backend) ranks but records nothing, so no made-up time ever reaches a database."""
    from .db.finddb import Solution

    if not sols or not ctx.backend.has_timer or ctx.finddb.user_path is None:
        return
    try:
        ctx.finddb.store(ctx.finddb_key(problem),
                            [Solution(s.solver, s.time, s.workspace, s.algorithm) for s in sols])
    except (DbError, OSError) as exc:  # the result stands; only its record is lost
        log.warning("find: could not record %s in the user FindDb: %s", problem.key(), exc)


def _clean(ctx: ExecutionContext, problem: ConvProblem) -> None:
    ctx.finddb.remove(ctx.finddb_key(problem))


def _benchmark_all(ctx: ExecutionContext, problem: ConvProblem, bound: dict[str, DeviceTensor],
                   dynamic_only: bool, workspace: object) -> tuple[list[ConvSolution], bool]:
    """(solutions fastest first, whether every solver that should run did).

    Solvers that failed transiently are benchmarked again, up to TRANSIENT_RETRIES times.
    """
    import time

    transient: list[Solver] = []
    sols = benchmark(ctx, problem, bound, dynamic_only=dynamic_only, workspace=workspace,
                     transient=transient)
    for attempt in range(TRANSIENT_RETRIES):
        if not transient:
            break
        time.sleep(_RETRY_PAUSE_S * (attempt + 1))
        again, transient = transient, []
        sols += benchmark(ctx, problem, bound, dynamic_only=dynamic_only,
                          workspace=workspace, solvers=again, transient=transient)
    sols.sort(key=lambda s: s.time)
    if transient:
        log.warning("find: %s still failing on %s after %d tries; not recording this problem",
                    ", ".join(s.name for s in transient), problem.key(), TRANSIENT_RETRIES + 1)
    return sols, not transient


def find(handle: Runtime, problem: ConvProblem, x: object, w: object, y: object, *,
         mode: FindMode | str | int | None = None, enforce: FindEnforce | str | int | None = None,
         workspace: object = None, stream: Any = None) -> list[ConvSolution]:
    """Solutions of `problem`, fastest first, as the find mode says; the output tensor holds
    the best solution's result afterwards when find benchmarked (not after a record or the
    miss ranking: run the first solution then). Never inside a capture of `stream`: find may
    benchmark, synchronise and write the FindDb."""
    ctx = context_of(handle)
    if (stream is not None and ctx.backend.is_capturing(stream_handle(stream))) or \
            _torch_capturing():
        raise BackendError("find benchmarks and writes the FindDb: call it before the capture")
    mode = FindMode.parse(mode) if mode is not None else config.find_mode()
    enforce = FindEnforce.parse(enforce) if enforce is not None else config.find_enforce()
    if enforce == FindEnforce.DB_CLEAN:
        _clean(ctx, problem)
    force = enforce in (FindEnforce.DB_UPDATE, FindEnforce.SEARCH_DB_UPDATE)
    if enforce in (FindEnforce.SEARCH, FindEnforce.SEARCH_DB_UPDATE):
        _search(ctx, problem)
    if mode != FindMode.NORMAL and not force:
        record = ctx.finddb.lookup(ctx.finddb_key(problem))
        if record is not None:
            sols = solutions_from_record(ctx, problem, record)
            if sols:
                return sols
        if mode in (FindMode.FAST, FindMode.DYNAMIC_HYBRID):
            return ranked_solutions(ctx, problem)
    dynamic_only = mode == FindMode.DYNAMIC_HYBRID
    bound = bind(ctx, problem, x, w, y)
    try:
        sols, complete = _benchmark_all(ctx, problem, bound, dynamic_only, workspace)
        if not sols:
            raise ProblemError(f"no solver ran for {problem.key()} on {ctx.target.name}")
        # The output holds the winner's result, as a caller of find expects.
        best = ctx.invokers[(problem, sols[0].solver)]
        best(pointers(ctx, best, bound, workspace))
        if complete:
            _record(ctx, problem, sols)
    finally:
        finish(ctx.backend, problem, bound)
    return sols


def candidate_params(solver: Solver, problem: ConvProblem, target: Target,
                     max_candidates: int = 48) -> list[Params]:
    """The defaults, the solver's legal seeds (`seed_params`), then up to `max_candidates`
    legal sets chosen by a fixed hash order.

    The order does not depend on the problem, so neighbouring problems try mostly the same
    sets and tuning a manifest needs few distinct binaries.
    """
    import zlib

    space = [tuple(p) for p in solver.param_space(problem, target)]
    out = [tuple(solver.default_params(problem, target))]
    for seed in solver.seed_params(problem, target):
        seed = tuple(seed)
        if seed not in out and solver.params_valid(problem, target, seed):
            out.append(seed)
    if len(space) > max_candidates:
        space = sorted(space, key=lambda p: zlib.crc32(repr(p).encode()))[:max_candidates]
    return out + [p for p in space if p not in out]


def search_params(handle: Runtime, problem: ConvProblem, solver: Solver,
                  bound: dict[str, DeviceTensor], *,
                  time_limit_s: float = 30.0, max_candidates: int = 64, repeats: int = 3,
                  log_entries: list[dict[str, Any]] | None = None
                  ) -> tuple[tuple[int, ...], float]:
    """Search a tunable solver's param_space on bound tensors: (best params, its median ms).

    Candidates: `candidate_params` (defaults first); the search stops at `time_limit_s`. A
    candidate that fails to compile or launch scores infinity. Every timing is appended to
    `log_entries`.
    """
    ctx = context_of(handle)
    import math
    import time

    candidates = candidate_params(solver, problem, ctx.target, max_candidates)
    default = candidates[0]
    best: tuple[tuple[int, ...], float] = (default, math.inf)
    start = time.perf_counter()
    for params in candidates:
        if time.perf_counter() - start > time_limit_s:
            break
        entry: dict[str, Any] = {"solver": solver.name, "key": problem.key(),
                                 "params": solver.params_to_string(params)}
        inv: Invoker | None = None
        try:
            inv = make_invoker(ctx, problem, solver, params=params, specialised=False)
            ptrs = pointers(ctx, inv, bound, None)

            def once(inv: Invoker = inv, ptrs: dict[str, int] = ptrs) -> None:
                inv(ptrs)

            ms = float(statistics.median(ctx.backend.time_kernel(once, repeats)))
        except MIOpenKernelsError as exc:
            ms = math.inf
            entry["error"] = str(exc).splitlines()[0][:300]
        finally:
            if inv is not None:
                inv.free_workspace()
        entry["time_ms"] = ms if math.isfinite(ms) else None
        if log_entries is not None:
            log_entries.append(entry)
        if ms < best[1]:
            best = (params, ms)
    return best


def _search(ctx: ExecutionContext, problem: ConvProblem) -> None:
    """MIOPEN_FIND_ENFORCE=SEARCH: tune the problem's tunable solvers into the user PerfDb."""
    import numpy as np

    from .tensor import memory_shape, numpy_dtype

    rng = np.random.default_rng()
    arrays = [rng.standard_normal(memory_shape(problem, role)).astype(numpy_dtype(t))
              for role, t in (("x", problem.in_type), ("w", problem.wei_type),
                              ("y", problem.out_type))]
    bound = bind(ctx, problem, arrays[0], arrays[1], arrays[2], upload_output=True)
    try:
        for solver in ctx.applicable_solvers(problem):
            if not solver.tunable:
                continue
            params, ms = search_params(ctx, problem, solver, bound, time_limit_s=10.0)
            if ms != float("inf") and ctx.backend.has_timer and \
                    ctx.perfdb.user_path is not None:
                try:
                    ctx.perfdb.store(problem, solver.name, solver.params_to_string(params))
                except (DbError, OSError) as exc:
                    log.warning("search: could not record %s in the user PerfDb: %s",
                                solver.name, exc)
                ctx.invokers.pop((problem, solver.name), None)
                drop_plan(ctx, problem, solver.name)
    finally:
        for t in bound.values():
            t.release()

"""Solutions of a problem without a benchmark, and the plan that runs one.

A first call of a shape needs no compile and no benchmark when the package is installed:
`immediate_solutions` answers from the FindDb record, else from the miss ranking
(library/ranking.py) over the (solver, parameters) whose kernels are at hand (system kdb, user
kernel cache, memory), helped by the measured records of the same layer at other batch sizes.
`plan_for` prepares the chosen solution once (plan.py) and keeps it; a repeated `run` writes
the tensor addresses and launches. Benchmarking and parameter search live in find.py.

`ExecutionContext` (MIOpen's name) is what these functions work on: the backend, the target,
the math mode, the databases, the kernel store and the solver registry that a Handle composes,
plus the answers kept per problem. The functions also take a Handle (its `context`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from . import config
from ._log import get_logger
from .errors import DbError, MIOpenKernelsError, ProblemError
from .plan import (
    ConvSolution,
    Invoker,
    Plan,
    bind,
    finish,
    make_invoker,
    output_role,
    tensor_roles,
    workspace_ptr,
)

if TYPE_CHECKING:
    from pathlib import Path

    from .backends.base import Backend
    from .db.finddb import FindDb, FindDbRecord
    from .db.perfdb import PerfDb
    from .handle import Handle
    from .kernel_store import KernelStore
    from .problem import ConvProblem
    from .solvers.base import Params, Solver
    from .target import Target

__all__ = [
    "ConvSolution",
    "ExecutionContext",
    "Invoker",
    "Plan",
    "plan_for",
    "drop_plan",
    "immediate_solutions",
    "ranked_solutions",
    "heuristic_solutions",
    "solutions_from_record",
    "invoker",
    "make_invoker",
    "run",
    "bind",
    "finish",
    "workspace_ptr",
    "tensor_roles",
    "output_role",
    "solver_of",
    "finddb_key",
    "algorithm_of",
]


log = get_logger()

Runtime: TypeAlias = "Handle | ExecutionContext"


# Batch sizes probed for measured records of the same layer (nearest first is chosen).
NEIGHBOUR_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
# A system FindDb up to this size is read whole, once per handle, for records of the same layer
# at other image sizes; a larger one (AMD's full files) is searched per batch size only.
CLASS_INDEX_MAX_BYTES = 2 << 20


class ExecutionContext:
    """The backend, target and math mode, the FindDb and PerfDb (opened on first use), the
    kernel store and the solver registry; with the answers kept per problem (rankings,
    neighbouring records, invokers, plans)."""

    def __init__(self, backend: Backend, target: Target, store: KernelStore, *,
                 math_mode: config.MathMode, finddb_paths: tuple[Path | None, Path | None],
                 perfdb_paths: tuple[Path | None, Path | None],
                 solvers: list[Solver] | None = None) -> None:
        self.backend, self.target, self.store, self.math_mode = backend, target, store, math_mode
        self._finddb_paths, self._perfdb_paths = finddb_paths, perfdb_paths
        self._finddb: FindDb | None = None
        self._perfdb: PerfDb | None = None
        self._solvers = solvers
        self._triton_importable: bool | None = None
        self._by_direction: dict[str, list[Solver]] = {}
        self._by_direction_stamp: tuple[int, int, object] | None = None
        self.invokers: dict[tuple[ConvProblem, str], Invoker] = {}
        self.plans: dict[tuple[ConvProblem, str], Plan] = {}
        # The miss ranking's answers per problem, and the FindDb records per layer (its FindDb
        # key without the batch size standing for it) by batch size, for the nearest-record
        # correction.
        self.ranked: dict[ConvProblem, list[ConvSolution]] = {}
        self.layer_records: dict[object, dict[int, FindDbRecord]] = {}
        self.layer_classes: dict[tuple[str, ...], list[tuple[float, str]]] | None = None
        self.size_neighbours: dict[str, tuple[ConvProblem, FindDbRecord] | None] = {}
        self.layer_neighbours: dict[tuple[object, object], tuple[
            dict[str, list[Params]], dict[str, tuple[ConvProblem, Params, float]]]] = {}

    # ---- databases
    @property
    def finddb(self) -> FindDb:
        """The system and user FindDb, made on first use."""
        if self._finddb is None:
            from .db.finddb import FindDb

            self._finddb = FindDb(*self._finddb_paths)
        return self._finddb

    @finddb.setter
    def finddb(self, db: FindDb) -> None:
        self._finddb = db

    @property
    def perfdb(self) -> PerfDb:
        """The system PerfDb (SQLite, else text) and the user PerfDb, made on first use."""
        if self._perfdb is None:
            from .db.perfdb import PerfDb

            self._perfdb = PerfDb(*self._perfdb_paths)
        return self._perfdb

    @perfdb.setter
    def perfdb(self, db: PerfDb) -> None:
        self._perfdb = db

    # ---- solvers
    @property
    def solvers(self) -> list[Solver]:
        """The registry's solvers, and the GEMM library's where it loads for this backend
        (`solvers.library_solvers`); or the list the context was made with."""
        if self._solvers is None:
            from .solvers import SOLVERS, library_solvers

            self._solvers = [*SOLVERS, *library_solvers(self.backend)]
        return self._solvers

    def applicable_solvers(self, problem: ConvProblem) -> list[Solver]:
        """Solvers for `problem` here: TF32 ones only under the TF32 math mode, and Triton
        ones only where their object is at hand (kdb, cache) or Triton can compile it."""
        out = []
        for s in self._solvers_for(problem.key_direction):
            if not s.is_applicable(problem, self.target):
                continue
            if getattr(s, "language", "hip") == "triton" and not self._triton_ready(problem, s):
                continue
            out.append(s)
        return out

    def _solvers_for(self, key_direction: str) -> list[Solver]:
        """The registry's solvers that may apply to a problem of this key direction (by their
        `algorithm_names`; a solver naming none is asked every time), TF32 ones only under the
        TF32 math mode. Kept per direction while the registry list stays the same."""
        solvers = self.solvers
        stamp = (id(solvers), len(solvers), self.math_mode)
        if self._by_direction_stamp != stamp:
            self._by_direction, self._by_direction_stamp = {}, stamp
        out = self._by_direction.get(key_direction)
        if out is None:
            tf32 = self.math_mode == config.MathMode.TF32
            out = [s for s in solvers
                   if (not s.algorithm_names or key_direction in s.algorithm_names)
                   and (tf32 or getattr(s, "math", "ieee") != "tf32")]
            self._by_direction[key_direction] = out
        return out

    def _triton_ready(self, problem: ConvProblem, solver: Solver) -> bool:
        if self.store.compiler is not None:
            return True
        if self._triton_importable is None:  # looked up once: a search of sys.path
            self._triton_importable = config.triton_importable()
        if self._triton_importable:
            return True
        params = self.params_for(problem, solver)
        return bool(self.store.has_kernel(solver.compile_job(problem, params, self.target)))

    def finddb_key(self, problem: ConvProblem) -> str:
        """The FindDb key of `problem` under this math mode: MIOpen's key, with `_tf32`
        appended for an FP32 problem under TF32 (config.MathMode)."""
        key = str(problem.key())
        if self.math_mode == config.MathMode.TF32 and "FP32" in problem.data_type:
            key += config.FINDDB_TF32_SUFFIX
        return key

    def params_for(self, problem: ConvProblem, solver: Solver) -> Params:
        """Tuned params from the PerfDb (user over system) when valid, else the defaults."""
        text = self.perfdb.load(problem).get(solver.name) if solver.tunable else None
        if text is not None:
            try:
                params = solver.params_from_string(text)
                if solver.params_valid(problem, self.target, params):
                    return tuple(params)
                log.warning("PerfDb params %r of %s are not valid for %s; using defaults",
                            text, solver.name, problem)
            except MIOpenKernelsError as exc:
                log.warning("PerfDb entry of %s unusable: %s", solver.name, exc)
        return tuple(solver.default_params(problem, self.target))


def context_of(handle: Runtime) -> ExecutionContext:
    """The ExecutionContext of a Handle, or the context itself."""
    return handle if isinstance(handle, ExecutionContext) else handle.context


# ---------------------------------------------------------------------------- solutions
def finddb_key(handle: Runtime, problem: ConvProblem) -> str:
    """The FindDb key under the math mode (`ExecutionContext.finddb_key`)."""
    return context_of(handle).finddb_key(problem)


def solver_of(handle: Runtime, solution: ConvSolution | str) -> Solver:
    ctx = context_of(handle)
    name = solution if isinstance(solution, str) else solution.solver
    for s in ctx.solvers:
        if s.name == name:
            return s
    raise ProblemError(f"unknown solver {name!r}")


def algorithm_of(solver: Solver, problem: ConvProblem) -> str:
    try:
        return str(solver.algorithm(problem))
    except (KeyError, AttributeError, NotImplementedError):
        return ""


def solutions_from_record(handle: Runtime, problem: ConvProblem, record: FindDbRecord
                          ) -> list[ConvSolution]:
    ctx = context_of(handle)
    known = {s.name: s for s in ctx.applicable_solvers(problem)}
    implemented = {s.name for s in ctx.solvers}
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
        ctx.finddb.note_unknown_solvers(record, unknown)
    return out


def immediate_solutions(handle: Runtime, problem: ConvProblem) -> list[ConvSolution]:
    """Ranked solutions without a benchmark: a FindDb record, else the miss ranking."""
    ctx = context_of(handle)
    record = ctx.finddb.lookup(ctx.finddb_key(problem))
    if record is not None:
        sols = solutions_from_record(ctx, problem, record)
        if sols:
            return sols
    return ranked_solutions(ctx, problem)


def _key_class(key: str) -> tuple[tuple[str, ...], int] | None:
    """(layer class, output positions) of a 2D FindDb key: the key without its image sizes
    and batch (C-H-W-RxS-K-P-Q-N-...: H, W, P, Q, N dropped), and N x P x Q; None for other
    keys (3D ones are left to the batch-size search)."""
    parts = key.split("-")
    if len(parts) < 12 or parts[3].count("x") != 1:
        return None
    try:
        positions = int(parts[7]) * int(parts[5]) * int(parts[6])
    except ValueError:
        return None
    return (parts[0], parts[3], parts[4], *parts[8:]), positions


def _classes(ctx: ExecutionContext) -> dict[tuple[str, ...], list[tuple[float, str]]]:
    """{layer class: [(log output positions, key)]} of every FindDb record under the handle's
    math mode, made once per context from the keys alone (empty when the system FindDb is
    larger than CLASS_INDEX_MAX_BYTES: such a file is never read whole at run time)."""
    import math

    classes = ctx.layer_classes
    if classes is not None:
        return classes
    classes = {}
    for key in ctx.finddb.keys(CLASS_INDEX_MAX_BYTES) or ():
        found = _key_class(key)
        if found is not None and found[1] > 0:
            classes.setdefault(found[0], []).append((math.log(found[1]), key))
    ctx.layer_classes = classes
    return classes


def _size_neighbour(ctx: ExecutionContext, key: str) -> tuple[ConvProblem, FindDbRecord] | None:
    """The record of FindDb key `key` and its problem (kept per context: every batch size of a
    layer at a new image size asks for the same one)."""
    if key in ctx.size_neighbours:
        return ctx.size_neighbours[key]
    from .problem import ConvProblem

    found = ctx.finddb.lookup(key)
    near = None
    if found is not None:
        try:
            near = (ConvProblem.from_record_key(key), found)
        except MIOpenKernelsError:
            near = None
    ctx.size_neighbours[key] = near
    return near


def _layer_key(key: str, problem: ConvProblem) -> object:
    """The layer of a problem (all but its batch size) as a dict key: its FindDb key without
    the batch field for a 2D key (C-H-W-RxS-K-P-Q-N-...), else the problem at batch 1."""
    parts = key.split("-")
    if len(parts) > 8 and parts[7] == str(problem.n) and parts[3].count("x") == 1:
        return "-".join(parts[:7] + parts[8:])
    return problem.with_batch(1)


def _neighbours(handle: Runtime, problem: ConvProblem
                ) -> tuple[dict[str, list[Params]], dict[str, tuple[ConvProblem, Params, float]]]:
    """From the nearest measured record of the same layer at another batch size (else, for a
    plain convolution, at another image size, nearest in output positions): each solver's
    tuned parameters (extra candidates) and its (problem, params, measured ms).

    Kept per (layer, that record): every size that picks the same record gets the same answer
    (callers do not change it)."""
    import math

    ctx = context_of(handle)

    key = finddb_key(ctx, problem)
    layer = _layer_key(key, problem)
    records = ctx.layer_records.get(layer)
    if records is None:  # once per layer: which batch sizes have a record
        records = {}
        for batch in NEIGHBOUR_BATCHES:
            record = ctx.finddb.lookup(finddb_key(ctx, problem.with_batch(batch)))
            if record is not None:
                records[batch] = record
        ctx.layer_records[layer] = records
    others = [b for b in records if b != problem.n]
    near: ConvProblem | None = None
    if others:
        batch = min(others, key=lambda b: (abs(math.log(b / problem.n)), b))
        which: object = batch
        record = records[batch]
    elif problem.mode == "conv" and not records:
        mine = _key_class(key)
        if mine is None or mine[1] <= 0:
            return {}, {}
        entries = _classes(ctx).get(mine[0])
        if not entries:
            return {}, {}
        here = math.log(mine[1])  # nearest in log positions; equal distances by key
        nearest = min(entries, key=lambda e: (round(abs(e[0] - here), 9), e[1]))
        found = _size_neighbour(ctx, nearest[1])
        if found is None or found[0].in_spatial == problem.in_spatial:
            return {}, {}
        near, record = found
        which = nearest[1]
    else:
        return {}, {}
    kept = ctx.layer_neighbours.get((layer, which))
    if kept is not None:
        return kept
    if near is None:
        near = problem.with_batch(batch)
    extra: dict[str, list[Params]] = {}
    measured: dict[str, tuple[ConvProblem, Params, float]] = {}
    tuned = ctx.perfdb.load(near)
    by_name = {s.name: s for s in ctx.solvers}
    for sol in record.solutions:
        solver = by_name.get(sol.solver)
        if solver is None:
            continue
        params = ctx.params_for(near, solver) if sol.solver in tuned else \
            tuple(solver.default_params(near, ctx.target))
        extra.setdefault(sol.solver, []).append(params)
        measured[sol.solver] = (near, params, sol.time)
    ctx.layer_neighbours[(layer, which)] = (extra, measured)
    return extra, measured


def ranked_solutions(handle: Runtime, problem: ConvProblem) -> list[ConvSolution]:
    """The miss ranking over the kernels at hand (no compile, no benchmark).

    With a package installed (a system kdb) only candidates whose kernels are at hand count.
    Without one, or with none at hand, every candidate is ranked and the chosen one is compiled
    on first use (and kept in the user cache); without a ranking model, `heuristic_solutions`.
    """
    ctx = context_of(handle)
    from .ranking import load_model, rank_candidates

    cached = ctx.ranked.get(problem)
    if cached is not None:
        return cached
    solvers = ctx.applicable_solvers(problem)
    if not solvers:
        raise ProblemError(f"no solver applies to {problem.key()} on {ctx.target.name}")
    try:
        model = load_model()
    except DbError as exc:
        log.warning("%s; ranking by the solvers' own estimates", exc)
        return heuristic_solutions(ctx, problem)
    extra, measured = _neighbours(ctx, problem)

    def at_hand(solver: Solver, params: Params) -> bool:
        if solver.language == "library":  # the library is at hand; the copies' kernels?
            return all(ctx.store.kernel_at_hand(job)
                       for job, _ in (*solver.lead_ins(problem, params, ctx.target),
                                      *solver.follow_ups(problem, params, ctx.target)))
        try:
            job = solver.compile_job(problem, params, ctx.target, specialised=False)
        except (NotImplementedError, MIOpenKernelsError):
            return False
        return ctx.store.kernel_at_hand(job)

    ranked = []
    if ctx.store.system_kdb is not None:
        ranked = rank_candidates(problem, ctx.target, solvers, at_hand, model=model,
                                 extra_params=extra, measured=measured)
    if not ranked:
        ranked = rank_candidates(problem, ctx.target, solvers, lambda s, p: True,
                                 model=model, extra_params=extra, measured=measured)
    sols = [ConvSolution(c.solver.name, algorithm_of(c.solver, problem), c.time,
                         int(c.solver.workspace_for(problem, c.params)), "ranking", c.params,
                         False)
            for c in ranked]
    ctx.ranked[problem] = sols
    return sols


def heuristic_solutions(handle: Runtime, problem: ConvProblem) -> list[ConvSolution]:
    """Applicable solvers by their own `heuristic_rank` (the fallback without a model)."""
    ctx = context_of(handle)
    ranked = []
    for i, s in enumerate(ctx.applicable_solvers(problem)):
        ranked.append((float(s.heuristic_rank(problem, ctx.target)), i, s))
    if not ranked:
        raise ProblemError(f"no solver applies to {problem.key()} on {ctx.target.name}")
    ranked.sort(key=lambda r: (r[0], r[1]))
    return [ConvSolution(s.name, algorithm_of(s, problem), rank,
                         int(s.workspace_for(problem, ctx.params_for(problem, s))),
                         "heuristic") for rank, _, s in ranked]


def invoker(handle: Runtime, problem: ConvProblem,
            solution: ConvSolution | str) -> Invoker:
    """The cached invoker of (problem, solver), built on first use (at the ranking's
    parameters for a ranked solution, else the PerfDb's or the defaults)."""
    ctx = context_of(handle)
    name = solution if isinstance(solution, str) else solution.solver
    key = (problem, name)
    inv = ctx.invokers.get(key)
    if inv is None:
        solver = solver_of(ctx, name)
        params = solution.params if isinstance(solution, ConvSolution) else None
        if params is None:
            params = ctx.params_for(problem, solver)
        inv = make_invoker(ctx, problem, solver, params=params)
        ctx.invokers[key] = inv
    return inv


def plan_for(handle: Runtime, problem: ConvProblem,
             solution: ConvSolution | str) -> Plan:
    """The kept plan of (problem, solution), prepared on first use."""
    ctx = context_of(handle)
    key = (problem, solution if isinstance(solution, str) else solution.solver)
    plan = ctx.plans.get(key)
    if plan is None or plan.invoker is not ctx.invokers.get(key):
        if plan is not None:
            plan.stale = True  # its invoker was replaced (a find measured another)
        plan = ctx.plans[key] = Plan(ctx.backend, problem, invoker(ctx, problem, solution))
    return plan


def drop_plan(ctx: ExecutionContext, problem: ConvProblem, solver: str) -> None:
    """Forget the kept plan of (problem, solver) (its invoker was replaced); a caller that
    holds it sees `plan.stale`."""
    plan = ctx.plans.pop((problem, solver), None)
    if plan is not None:
        plan.stale = True


def run(handle: Runtime, problem: ConvProblem, solution: ConvSolution | str,
        x: object, w: object, y: object, workspace: object = None, *, stream: Any = None) -> None:
    """One call of the solution through its kept plan (plus copies for numpy tensors)."""
    plan_for(handle, problem, solution).run(x, w, y, workspace=workspace, stream=stream)

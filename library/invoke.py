"""The hot path: a FindDb record or the miss ranking -> invoker -> launch.

A first call of a shape needs no compile and no benchmark when the package is installed:
`immediate_solutions` answers from the FindDb record, else from the miss ranking
(library/ranking.py) over the (solver, parameters) whose kernels are at hand (system kdb, user
kernel cache, memory), helped by the measured records of the same layer at other batch sizes.
`invoker` loads the chosen kernel once per code object and packs its arguments once per (problem,
solver); a repeated `run` writes the tensor pointers and launches. Benchmarking and parameter
search live in find.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._log import get_logger
from ._record import dataclass, field, replace
from .errors import DbError, MIOpenKernelsError, ProblemError
from .problem import TYPE_BYTES

if TYPE_CHECKING:
    from collections.abc import Callable

    from .backends.base import Buffer, PreparedLaunch
    from .codeobject import LaunchMetadata
    from .db.finddb import FindDbRecord
    from .handle import Handle
    from .problem import ConvProblem
    from .solvers.base import CompileJob, Launch, Params, Solver
    from .tensor import DeviceTensor

__all__ = [
    "ConvSolution",
    "Invoker",
    "immediate_solutions",
    "ranked_solutions",
    "heuristic_solutions",
    "solutions_from_record",
    "invoker",
    "make_invoker",
    "run",
    "bind",
    "finish",
    "pointers",
    "tensor_roles",
    "output_role",
    "solver_of",
    "finddb_key",
    "algorithm_of",
]


log = get_logger()


# Batch sizes probed for measured records of the same layer (nearest first is chosen).
NEIGHBOUR_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
# A system FindDb up to this size is read whole, once per handle, for records of the same layer
# at other image sizes; a larger one (AMD's full files) is searched per batch size only.
CLASS_INDEX_MAX_BYTES = 2 << 20


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
    pointers: tuple[tuple[str, str, int], ...]
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
    then: tuple[tuple[PreparedLaunch, tuple[tuple[str, str, int], ...]], ...] = ()
    first: tuple[tuple[PreparedLaunch, tuple[tuple[str, str, int], ...]], ...] = ()

    def free_workspace(self) -> None:
        """Give back the workspace this invoker allocated for itself, if any (a tuning search
        times hundreds of invokers: theirs must not pile up on the GPU)."""
        if self.workspace is not None:
            self.workspace.free()
            self.workspace = None

    def __call__(self, ptrs: dict[str, int]) -> None:
        if self.workspace_bytes and not ptrs.get("workspace"):
            raise ProblemError(f"{self.solver} needs {self.workspace_bytes} bytes of workspace; "
                               "pass its address as ptrs['workspace'] (find.pointers does)")
        if self.alignment and any(ptrs[role] % div for role, div in self.alignment):
            if not isinstance(self.unaligned, Invoker):
                assert self.unaligned is not None
                self.unaligned = self.unaligned()  # built on first use
            self.unaligned(ptrs)
            return
        for launch, pointers in self.first:
            for slot, role, offset in pointers:
                launch.set(slot, ptrs[role] + offset)
            launch()
        for slot, role, offset in self.pointers:
            self.launch.set(slot, ptrs[role] + offset)
        for role, nbytes in self.zero_first:
            self.launch.backend.memset_ptr(ptrs[role], 0, nbytes)
        self.launch()
        for launch, pointers in self.then:
            for slot, role, offset in pointers:
                launch.set(slot, ptrs[role] + offset)
            launch()


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


def _elements(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def bind(handle: Handle, problem: ConvProblem, x: object, w: object, y: object,
         upload_output: bool = False) -> dict[str, DeviceTensor]:
    """Device views of the layer's tensors, checked against the problem's sizes and types."""
    from .tensor import as_device

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


def finish(handle: Handle, problem: ConvProblem, bound: dict[str, DeviceTensor]) -> None:
    """Copy a copied output back and release the call's temporary tensors."""
    out = bound[output_role(problem)]
    if out.copied:
        handle.backend.synchronize()
        out.copy_back(handle.backend)
    for t in bound.values():
        if t.temporary:
            t.release()


# ---------------------------------------------------------------------------- solutions
def finddb_key(handle: Handle, problem: ConvProblem) -> str:
    """The FindDb key under the handle's math mode (`Handle.finddb_key`)."""
    fn = getattr(handle, "finddb_key", None)
    return str(fn(problem)) if callable(fn) else str(problem.key())


def solver_of(handle: Handle, solution: ConvSolution | str) -> Solver:
    name = solution if isinstance(solution, str) else solution.solver
    for s in handle.solvers:
        if s.name == name:
            return s
    raise ProblemError(f"unknown solver {name!r}")


def algorithm_of(solver: Solver, problem: ConvProblem) -> str:
    try:
        return str(solver.algorithm(problem))
    except (KeyError, AttributeError, NotImplementedError):
        return ""


def solutions_from_record(handle: Handle, problem: ConvProblem, record: FindDbRecord
                          ) -> list[ConvSolution]:
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


def immediate_solutions(handle: Handle, problem: ConvProblem) -> list[ConvSolution]:
    """Ranked solutions without a benchmark: a FindDb record, else the miss ranking."""
    record = handle.finddb.lookup(finddb_key(handle, problem))
    if record is not None:
        sols = solutions_from_record(handle, problem, record)
        if sols:
            return sols
    return ranked_solutions(handle, problem)


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


def _classes(handle: Handle) -> dict[tuple[str, ...], list[tuple[float, str]]]:
    """{layer class: [(log output positions, key)]} of every FindDb record under the handle's
    math mode, made once per handle from the keys alone (empty when the system FindDb is
    larger than CLASS_INDEX_MAX_BYTES: such a file is never read whole at run time)."""
    import math

    classes = handle.layer_classes
    if classes is not None:
        return classes
    classes = {}
    for key in handle.finddb.keys(CLASS_INDEX_MAX_BYTES) or ():
        found = _key_class(key)
        if found is not None and found[1] > 0:
            classes.setdefault(found[0], []).append((math.log(found[1]), key))
    handle.layer_classes = classes
    return classes


def _size_neighbour(handle: Handle, key: str) -> tuple[ConvProblem, FindDbRecord] | None:
    """The record of FindDb key `key` and its problem (kept per handle: every batch size of a
    layer at a new image size asks for the same one)."""
    if key in handle.size_neighbours:
        return handle.size_neighbours[key]
    from .problem import ConvProblem

    found = handle.finddb.lookup(key)
    near = None
    if found is not None:
        try:
            near = (ConvProblem.from_record_key(key), found)
        except MIOpenKernelsError:
            near = None
    handle.size_neighbours[key] = near
    return near


def _layer_key(key: str, problem: ConvProblem) -> object:
    """The layer of a problem (all but its batch size) as a dict key: its FindDb key without
    the batch field for a 2D key (C-H-W-RxS-K-P-Q-N-...), else the problem at batch 1."""
    parts = key.split("-")
    if len(parts) > 8 and parts[7] == str(problem.n) and parts[3].count("x") == 1:
        return "-".join(parts[:7] + parts[8:])
    return problem.with_batch(1)


def _neighbours(handle: Handle, problem: ConvProblem
                ) -> tuple[dict[str, list[Params]], dict[str, tuple[ConvProblem, Params, float]]]:
    """From the nearest measured record of the same layer at another batch size (else, for a
    plain convolution, at another image size, nearest in output positions): each solver's
    tuned parameters (extra candidates) and its (problem, params, measured ms).

    Kept per (layer, that record): every size that picks the same record gets the same answer
    (callers do not change it)."""
    import math

    key = finddb_key(handle, problem)
    layer = _layer_key(key, problem)
    records = handle.layer_records.get(layer)
    if records is None:  # once per layer: which batch sizes have a record
        records = {}
        for batch in NEIGHBOUR_BATCHES:
            record = handle.finddb.lookup(finddb_key(handle, problem.with_batch(batch)))
            if record is not None:
                records[batch] = record
        handle.layer_records[layer] = records
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
        entries = _classes(handle).get(mine[0])
        if not entries:
            return {}, {}
        here = math.log(mine[1])  # nearest in log positions; equal distances by key
        nearest = min(entries, key=lambda e: (round(abs(e[0] - here), 9), e[1]))
        found = _size_neighbour(handle, nearest[1])
        if found is None or found[0].in_spatial == problem.in_spatial:
            return {}, {}
        near, record = found
        which = nearest[1]
    else:
        return {}, {}
    kept = handle.layer_neighbours.get((layer, which))
    if kept is not None:
        return kept
    if near is None:
        near = problem.with_batch(batch)
    extra: dict[str, list[Params]] = {}
    measured: dict[str, tuple[ConvProblem, Params, float]] = {}
    tuned = handle.perfdb.load(near)
    by_name = {s.name: s for s in handle.solvers}
    for sol in record.solutions:
        solver = by_name.get(sol.solver)
        if solver is None:
            continue
        params = handle.params_for(near, solver) if sol.solver in tuned else \
            tuple(solver.default_params(near, handle.target))
        extra.setdefault(sol.solver, []).append(params)
        measured[sol.solver] = (near, params, sol.time)
    handle.layer_neighbours[(layer, which)] = (extra, measured)
    return extra, measured


def ranked_solutions(handle: Handle, problem: ConvProblem) -> list[ConvSolution]:
    """The miss ranking over the kernels at hand (no compile, no benchmark).

    With a package installed (a system kdb) only candidates whose kernels are at hand count.
    Without one, or with none at hand, every candidate is ranked and the chosen one is compiled
    on first use (and kept in the user cache); without a ranking model, `heuristic_solutions`.
    """
    from .ranking import load_model, rank_candidates

    cached = handle.ranked.get(problem)
    if cached is not None:
        return cached
    solvers = handle.applicable_solvers(problem)
    if not solvers:
        raise ProblemError(f"no solver applies to {problem.key()} on {handle.target.name}")
    try:
        model = load_model()
    except DbError as exc:
        log.warning("%s; ranking by the solvers' own estimates", exc)
        return heuristic_solutions(handle, problem)
    extra, measured = _neighbours(handle, problem)

    def at_hand(solver: Solver, params: Params) -> bool:
        try:
            job = solver.compile_job(problem, params, handle.target, specialised=False)
        except (NotImplementedError, MIOpenKernelsError):
            return False
        return handle.kernel_at_hand(job)

    ranked = []
    if handle.system_kdb is not None:
        ranked = rank_candidates(problem, handle.target, solvers, at_hand, model=model,
                                 extra_params=extra, measured=measured)
    if not ranked:
        ranked = rank_candidates(problem, handle.target, solvers, lambda s, p: True,
                                 model=model, extra_params=extra, measured=measured)
    sols = [ConvSolution(c.solver.name, algorithm_of(c.solver, problem), c.time,
                         int(c.solver.workspace_for(problem, c.params)), "ranking", c.params,
                         False)
            for c in ranked]
    handle.ranked[problem] = sols
    return sols


def heuristic_solutions(handle: Handle, problem: ConvProblem) -> list[ConvSolution]:
    """Applicable solvers by their own `heuristic_rank` (the fallback without a model)."""
    ranked = []
    for i, s in enumerate(handle.applicable_solvers(problem)):
        ranked.append((float(s.heuristic_rank(problem, handle.target)), i, s))
    if not ranked:
        raise ProblemError(f"no solver applies to {problem.key()} on {handle.target.name}")
    ranked.sort(key=lambda r: (r[0], r[1]))
    return [ConvSolution(s.name, algorithm_of(s, problem), rank,
                         int(s.workspace_for(problem, handle.params_for(problem, s))),
                         "heuristic") for rank, _, s in ranked]


# ---------------------------------------------------------------------------- invokers
def _job(handle: Handle, problem: ConvProblem, solver: Solver, params: Params,
         allow_specialised_compile: bool) -> tuple[CompileJob, bool]:
    """(compile job, specialised): a specialised binary if at hand or allowed, else dynamic."""
    spec: CompileJob | None
    try:
        spec = solver.compile_job(problem, params, handle.target, specialised=True)
    except (NotImplementedError, MIOpenKernelsError):
        spec = None
    if spec is not None and (allow_specialised_compile or handle.has_kernel(spec)):
        return spec, True
    return solver.compile_job(problem, params, handle.target, specialised=False), False


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


def make_invoker(handle: Handle, problem: ConvProblem, solver: Solver, *,
                 params: Params | None = None, allow_specialised_compile: bool = False,
                 specialised: bool | None = None, unaligned: bool = False) -> Invoker:
    """Load (or compile) the solver's kernel and pack its arguments. `unaligned` takes the
    solver's variant without pointer-alignment assumptions."""
    params = handle.params_for(problem, solver) if params is None else tuple(params)
    if unaligned:
        variant = solver.unaligned_job(problem, params, handle.target)
        if variant is None:
            raise ProblemError(f"{solver.name} has no variant for unaligned tensors")
        job, spec = variant, bool(specialised)
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
    slots = solver.workspace_slots(problem, params)
    ptrs = _pointer_roles(solver, problem, prepared, roles, slots)

    def extra(pairs: tuple[tuple[CompileJob, Launch], ...]
              ) -> tuple[tuple[PreparedLaunch, tuple[tuple[str, str, int], ...]], ...]:
        out = []
        for extra_job, extra_launch in pairs:
            extra_fn = handle.kernel(extra_job)
            extra_launch = _apply_meta(solver, extra_launch, extra_fn.module.meta)
            extra_prepared = handle.backend.prepare(extra_fn, extra_launch.grid,
                                                    extra_launch.block, extra_launch.args,
                                                    extra_launch.shared_bytes)
            out.append((extra_prepared,
                        _pointer_roles(solver, problem, extra_prepared, roles, slots)))
        return tuple(out)

    first = extra(solver.lead_ins(problem, params, handle.target))
    then = extra(solver.follow_ups(problem, params, handle.target))
    ws = max(int(launch.workspace_bytes), int(solver.workspace_bytes(problem)))
    sizes = {"x": (problem.in_shape, problem.in_type), "w": (problem.wei_shape, problem.wei_type),
             "y": (problem.out_shape, problem.out_type)}
    zero = tuple((roles[n], _elements(sizes[roles[n]][0]) * TYPE_BYTES[sizes[roles[n]][1]])
                 for n in launch.zero_first if roles.get(n) in sizes)
    from .codeobject import assumed_divisors

    assumed = assumed_divisors(meta)
    align = tuple(sorted({("workspace" if a.tensor in slots else roles[a.tensor],
                           assumed[a.name]) for a in launch.args
                          if a.name in assumed and a.is_pointer
                          and (a.tensor in roles or a.tensor in slots)})) if assumed else ()
    fallback = None
    if align:
        def fallback() -> Invoker:
            return make_invoker(handle, problem, solver, params=params, specialised=spec,
                                unaligned=True)
    return Invoker(solver.name, prepared, tuple(ptrs), ws, spec, zero_first=zero,
                   params=params, alignment=align, unaligned=fallback, then=then, first=first)


def _pointer_roles(solver: Solver, problem: ConvProblem, prepared: PreparedLaunch,
                   roles: dict[str, str], slots: dict[str, int] | None = None
                   ) -> tuple[tuple[str, str, int], ...]:
    """(kernel slot, layer tensor role, byte offset) of a prepared launch's pointer
    arguments, in order; `slots` names parts of the workspace (Solver.workspace_slots)."""
    out = []
    for name in prepared.slots:
        if slots and name in slots:
            out.append((name, "workspace", int(slots[name])))
            continue
        if name not in roles:
            raise ProblemError(f"{solver.name} launch names tensor {name!r}, not one of "
                               f"{sorted(roles)} for direction {problem.direction}")
        out.append((name, roles[name], 0))
    return tuple(out)


def invoker(handle: Handle, problem: ConvProblem, solution: ConvSolution | str) -> Invoker:
    """The cached invoker of (problem, solver), built on first use (at the ranking's
    parameters for a ranked solution, else the PerfDb's or the defaults)."""
    name = solution if isinstance(solution, str) else solution.solver
    key = (problem, name)
    inv = handle.invokers.get(key)
    if inv is None:
        params = solution.params if isinstance(solution, ConvSolution) else None
        inv = make_invoker(handle, problem, solver_of(handle, name), params=params)
        handle.invokers[key] = inv
    return inv


def pointers(handle: Handle, inv: Invoker, bound: dict[str, DeviceTensor],
             workspace: object) -> dict[str, int]:
    """Tensor role -> device address for one launch, with the invoker's workspace."""
    ptrs = {role: t.ptr for role, t in bound.items()}
    if inv.workspace_bytes:
        if workspace is not None:
            from .tensor import as_device

            ws = as_device(workspace, handle.backend)
            if ws.nbytes < inv.workspace_bytes:
                raise ProblemError(f"workspace of {ws.nbytes} bytes; {inv.solver} needs "
                                   f"{inv.workspace_bytes}")
            ptrs["workspace"] = ws.ptr
        else:
            ptrs["workspace"] = workspace_ptr(handle.backend, inv)
    else:
        ptrs["workspace"] = 0
    return ptrs


def workspace_ptr(backend: Any, inv: Invoker) -> int:
    """The address of the invoker's own workspace (allocated on first use); 0 where its
    launches need none."""
    if not inv.workspace_bytes:
        return 0
    if inv.workspace is None:
        inv.workspace = backend.alloc(inv.workspace_bytes)
    return int(inv.workspace.ptr)


def run(handle: Handle, problem: ConvProblem, solution: ConvSolution | str, x: object, w: object,
        y: object, workspace: object = None) -> None:
    """One launch of the solution (plus copies for numpy tensors)."""
    inv = invoker(handle, problem, solution)
    bound = bind(handle, problem, x, w, y)
    ptrs = pointers(handle, inv, bound, workspace)
    inv(ptrs)
    if handle.backend.name == "null":
        _null_result(handle, problem, ptrs)
    finish(handle, problem, bound)


def _null_result(handle: Handle, problem: ConvProblem, ptrs: dict[str, int]) -> None:
    """No kernel ran: the null backend computes the output with the reference solver, or
    says once, on the first run it cannot compute, that the output is left as it was."""
    from .backends.null import NullBackend, compute_reference

    backend = handle.backend
    if not isinstance(backend, NullBackend) or compute_reference(backend, problem, ptrs):
        return
    if not backend.warned_no_result:
        backend.warned_no_result = True
        import warnings

        warnings.warn(f"the null backend (no GPU) launches nothing and the reference cannot "
                      f"compute {problem.key()}: its output is left as it was", stacklevel=3)

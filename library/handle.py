"""The Handle: one device and what it composes, the databases, the kernel store, the solvers
and the plans; no logic of its own beyond putting them together.

`Handle()` opens the first GPU (CUDA, then HIP). `Handle(target=Target('sm90', 132))` names a
target; with no GPU of that vendor present the null backend stands in, so everything up to the
launch runs on a CPU machine. MIOPEN_DEVICE_ARCH / MIOPEN_DEVICE_CU override the target used for
databases and solvers, as they override MIOpen's handle.

System databases are looked for per basename in `config.system_db_dirs()`; when none holds the
exact basename, the one of the same arch with the nearest CU count is used, with a warning (the
kernels depend on the arch only, the measured choices nearly so).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from . import config
from .backends import Backend, open_for
from .errors import MIOpenKernelsError
from .kernel_store import (
    KernelStats,
    KernelStore,
    locate_databases,
    nearest_system_basename,
    usable_dir,
)
from .plan import Capture
from .target import Target

if TYPE_CHECKING:
    from .backends.base import PreparedLaunch
    from .db.finddb import FindDb
    from .db.kerneldb import KernelDb
    from .db.perfdb import PerfDb
    from .detect.device import Device
    from .invoke import ConvSolution, ExecutionContext, Invoker
    from .plan import Plan
    from .primitives.base import Primitive
    from .problem import ConvProblem
    from .solvers.base import CompileJob, Params, Solver

__all__ = ["Handle", "KernelStats", "nearest_system_basename"]


def _part(part: str, name: str, doc: str) -> Any:
    """A Handle attribute that is one of its parts' (the kernel store's, the context's)."""
    return property(lambda self: getattr(getattr(self, part), name),
                    lambda self, value: setattr(getattr(self, part), name, value), doc=doc)


class Handle:
    """A backend + the databases + a kernel store + the solvers + kept plans.

    `compiler` (a function CompileJob -> code object bytes) and `solvers` default to the
    library's JIT compiler and solver registry; tests pass doubles.
    """

    def __init__(self, device: Device | int | None = None, target: Target | str | None = None,
                 backend: Backend | None = None, *,
                 compiler: Callable[[CompileJob], bytes] | None = None,
                 solvers: list[Solver] | None = None,
                 math_mode: config.MathMode | str | None = None) -> None:
        self.backend, self.target = open_for(device, target, backend)
        self._solvers = solvers
        self._math_mode = (config.MathMode.parse(math_mode) if math_mode is not None
                           else config.fp32_math())
        self._primitive_launches: dict[tuple[object, str], PreparedLaunch] = {}
        self._context: ExecutionContext | None = None
        self._last_run: tuple[ConvProblem, ConvSolution | str, Plan] | None = None
        self.paths, self._system_paths = locate_databases(self.target)
        self.basename, self.system_basename = self.paths.basename, self._system_paths.basename
        # An unusable user folder means no user databases (finds are not recorded), an
        # unusable cache folder no kernel cache: one warning each, never an OSError later.
        self._user_dbs_ok = usable_dir(self.paths.user_dir, "MIOPEN_USER_DB_PATH", "no user "
                                       "databases: finds and tuning results are not recorded")
        cache_off = config.cache_disabled() or not usable_dir(
            self.paths.cache_dir, "MIOPEN_CUSTOM_CACHE_DIR", "no kernel cache: JIT-compiled "
            "kernels are not kept")
        self.store = KernelStore(self.backend, self._system_paths.system_kdb, self.paths.user_kdb,
                                 cache_disabled=cache_off, compiler=compiler)
        self.stats: KernelStats = self.store.stats
        # The store's kernels: memory, system kdb, user ukdb, JIT (kernel_store.py).
        self.kernel, self.has_kernel = self.store.kernel, self.store.has_kernel
        self.kernel_at_hand, self.compile = self.store.kernel_at_hand, self.store.compile

    @property
    def context(self) -> ExecutionContext:
        """What find and the plans work on (invoke.ExecutionContext), made on first use."""
        if self._context is None:
            from .invoke import ExecutionContext

            sys_paths, user = self._system_paths, self._user_dbs_ok
            perf = sys_paths.system_perfdb
            if perf is not None and not perf.exists():
                perf = sys_paths.system_perfdb_text
            self._context = ExecutionContext(
                self.backend, self.target, self.store, math_mode=self._math_mode,
                finddb_paths=(sys_paths.system_finddb,
                              self.paths.user_finddb if user else None),
                perfdb_paths=(perf, self.paths.user_perfdb if user else None),
                solvers=self._solvers)
        return self._context

    finddb: FindDb = _part("context", "finddb", "The system and user FindDb, made on first use.")
    perfdb: PerfDb = _part("context", "perfdb", "The system and user PerfDb, made on first use.")
    invokers: dict[tuple[ConvProblem, str], Invoker] = _part("context",
        "invokers", "The invokers built, per (problem, solver name).")
    system_kdb: KernelDb | None = _part("store", "system_kdb", "The installed package's kdb.")
    user_kdb: KernelDb | None = _part("store", "user_kdb", "The user kernel cache.")
    cache_disabled: bool = _part("store", "cache_disabled", "Whether the user cache is off.")

    @property
    def math_mode(self) -> config.MathMode:
        """FP32 math: IEEE or TF32 (config.MathMode); it keys the FindDb and picks solvers."""
        return self._math_mode

    @math_mode.setter
    def math_mode(self, mode: config.MathMode) -> None:
        self._math_mode = mode
        if self._context is not None:
            self._context.math_mode = mode

    @property
    def solvers(self) -> list[Solver]:
        return self.context.solvers

    def applicable_solvers(self, problem: ConvProblem) -> list[Solver]:
        """Solvers for `problem` here (`ExecutionContext.applicable_solvers`)."""
        return self.context.applicable_solvers(problem)

    def finddb_key(self, problem: ConvProblem) -> str:
        """The FindDb key of `problem` under this handle's math mode."""
        return self.context.finddb_key(problem)

    def params_for(self, problem: ConvProblem, solver: Solver) -> Params:
        """Tuned params from the PerfDb (user over system) when valid, else the defaults."""
        return self.context.params_for(problem, solver)

    @property
    def compilations(self) -> int:
        return self.stats.jit

    # ------------------------------------------------------------------ find / immediate / run
    def find(self, problem: ConvProblem, x: object, w: object, y: object, *,
             mode: str | int | None = None, workspace: object = None,
             stream: Any = None) -> list[ConvSolution]:
        """Find the solutions of `problem` (MIOPEN_FIND_MODE unless `mode`); see find.py."""
        from .find import find

        return find(self.context, problem, x, w, y, mode=mode, workspace=workspace,
                    stream=stream)

    def solutions(self, problem: ConvProblem) -> list[ConvSolution]:
        """Immediate mode: ranked solutions without benchmarking (record, else ranking)."""
        from .invoke import immediate_solutions

        return immediate_solutions(self.context, problem)

    def workspace_size(self, problem: ConvProblem, solution: ConvSolution | str) -> int:
        """Device scratch memory the solution needs: at its own parameters (a ranked
        solution's), else at the PerfDb's or the defaults."""
        from .invoke import solver_of

        solver = solver_of(self.context, solution)
        params = getattr(solution, "params", None) or self.params_for(problem, solver)
        return int(solver.workspace_for(problem, params))

    def compile_solution(self, problem: ConvProblem, solution: ConvSolution | str) -> Invoker:
        """Make the solution's kernel ready (load or compile) and cache its invoker."""
        from .invoke import invoker

        return invoker(self.context, problem, solution)

    def plan(self, problem: ConvProblem, solution: ConvSolution | str) -> Plan:
        """The solution prepared once for repeated calls (plan.Plan), kept per handle."""
        from .invoke import plan_for

        return plan_for(self.context, problem, solution)

    def run(self, problem: ConvProblem, solution: ConvSolution | str, x: object, w: object,
            y: object, workspace: object = None, *, stream: Any = None) -> None:
        """Run one solution on the layer's x, w, y (whatever the direction computes) on
        `stream` (with torch tensors the current torch stream by default): its kept plan."""
        last = self._last_run  # a loop over one layer skips even the plan's lookup
        if last is None or last[0] is not problem or last[1] is not solution or last[2].stale:
            from .invoke import plan_for

            last = self._last_run = (problem, solution, plan_for(self.context, problem,
                                                                 solution))
        last[2].run(x, w, y, workspace=workspace, stream=stream)

    def convolution(self, problem: ConvProblem, x: object, w: object, y: object) -> ConvSolution:
        """Immediate mode in one call: the best-ranked solution, run."""
        sols = self.solutions(problem)
        self.run(problem, sols[0], x, w, y)
        return sols[0]

    @contextlib.contextmanager
    def capture(self, stream: Any = None) -> Iterator[Capture]:
        """Capture the calls made inside the block into a graph: `with handle.capture() as
        graph: handle.run(...)`, then `graph.replay()`. Calls without a stream go to the
        capture's (a new one unless `stream` names one). CUDA graphs on the CUDA backend; the
        null backend records the calls and replays them. Run each plan once before capturing
        so that nothing is allocated or looked up inside."""
        from .plan import stream_handle

        captured = Capture(self.backend.begin_capture(
            None if stream is None else stream_handle(stream)))
        try:
            yield captured
        except BaseException:
            with contextlib.suppress(MIOpenKernelsError):
                self.backend.end_capture().close()
            raise
        captured.graph = self.backend.end_capture()

    def primitive(self, primitive: Primitive | str, problem: object,
                  outputs: tuple[str, ...] = ("y",), **tensors: object) -> None:
        """Run a primitive (activation, pooling, batch norm, softmax, bias) on named tensors.

        `tensors` maps the kernel's pointer names (`x`, `y`, `scale`...) to numpy arrays (copied;
        the `outputs` are copied back) or GPU tensors (used in place). The kernel and its packed
        arguments are cached per (problem, primitive).
        """
        from .primitives import run_primitive

        run_primitive(self.store, self.target, self._primitive_launches, primitive, problem,
                      outputs, tensors)

    def close(self) -> None:
        """Close what was opened (a database never used is not opened to be closed)."""
        self.store.close()
        if self._context is not None and self._context._perfdb is not None:
            self._context._perfdb.close()

    def __repr__(self) -> str:
        return f"<Handle {self.target.name} {self.backend.name} dbs={self.paths.system_dir}>"


"""The Handle: one device, its target, its databases, its kernel cache and its invokers.

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
import os
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from . import _fsutil, config
from ._log import get_logger
from ._record import dataclass
from .backends import Backend, Function, Module, open_backend
from .errors import (
    CompileError,
    DamagedDbError,
    DbError,
    IntegrityError,
    MIOpenKernelsError,
    TargetError,
)
from .target import Target, basename_for

if TYPE_CHECKING:
    from .backends.base import PreparedLaunch
    from .db.finddb import FindDb, FindDbRecord
    from .db.kerneldb import KernelDb
    from .db.perfdb import PerfDb
    from .detect.device import Device
    from .invoke import ConvSolution, Invoker
    from .primitives.base import Primitive
    from .problem import ConvProblem
    from .solvers.base import CompileJob, Params, Solver

__all__ = ["Handle", "KernelStats", "nearest_system_basename"]


log = get_logger()


_DB_SUFFIXES = (".kdb", ".HIP.fdb.txt", ".db", ".db.txt")
# Files under this size are not databases (a Git LFS pointer is a common such file).
_MIN_KDB_BYTES = 512


@dataclass
class KernelStats:
    """Where kernels came from: the e2e tests assert `jit == 0` for an installed package."""

    system_kdb: int = 0
    user_kdb: int = 0
    jit: int = 0
    memory: int = 0

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def _usable_dir(path: Path, variable: str, consequence: str) -> bool:
    """Whether `path` is, or can be made, a writable folder; warns once with why not."""
    probe = path
    try:
        while not probe.exists() and probe.parent != probe:
            probe = probe.parent
        why = (f"{probe} is not a folder" if not probe.is_dir() else
               f"{probe} is not writable" if not os.access(probe, os.W_OK | os.X_OK) else None)
    except OSError as exc:
        why = f"{path}: {exc.strerror or exc}"
    if why is None:
        return True
    warnings.warn(f"{variable} or its default {path} is unusable ({why}); {consequence}",
                  stacklevel=4)
    return False


def nearest_system_basename(target: Target, dirs: Iterable[Path]) -> tuple[str, Path] | None:
    """(basename, folder) of the system databases of `target.arch` with the nearest CU count."""
    best: tuple[int, int, str, Path] | None = None
    for folder in dirs:
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            base, _, suffix = path.name.partition(".")
            if suffix not in ("kdb", "HIP.fdb.txt", "db", "db.txt"):
                continue
            try:
                found = Target.from_basename(base)
            except TargetError:
                continue
            cu = found.cu
            if found.arch != target.arch or found.basename != base:
                continue  # another arch, or a name MIOpen would not write (hex at 64 or less)
            score = (abs(cu - target.cu), -cu)
            if best is None or score < best[:2]:
                best = (*score, basename_for(target.arch, cu), folder)
    return (best[2], best[3]) if best else None


class Handle:
    """Device + target + databases + kernel cache + invoker cache.

    `compiler` (a function CompileJob -> code object bytes) and `solvers` default to the
    library's JIT compiler and solver registry; tests pass doubles.
    """

    def __init__(self, device: Device | int | None = None, target: Target | str | None = None,
                 backend: Backend | None = None, *,
                 compiler: Callable[[CompileJob], bytes] | None = None,
                 solvers: list[Solver] | None = None,
                 math_mode: config.MathMode | str | None = None) -> None:
        if isinstance(target, str):
            target = Target.parse(target)
        if backend is None:
            index = device if device is None or isinstance(device, int) else device.index
            named = target or (None if device is None or isinstance(device, int)
                               else device.target)
            if named is None and device is None:
                arch, cu = config.device_overrides()
                if arch is not None and cu is not None:
                    named = Target(arch, cu)  # a GPU of its vendor if present, else null
            backend = open_backend(index, named)
        self.backend = backend
        base = target or backend.target
        if base is None:
            raise MIOpenKernelsError("the backend names no target; name it: "
                                     "Handle(backend=..., target=\"gfx90a-110\")")
        arch, cu = config.device_overrides()
        if arch is not None or cu is not None:
            base = Target(arch or base.target_id, cu or base.cu)
        self.target: Target = base
        if backend.target is None:
            backend.target = base
        self._compiler = compiler
        self._triton_importable: bool | None = None
        self._solvers = solvers
        self.math_mode = (config.MathMode.parse(math_mode) if math_mode is not None
                          else config.fp32_math())
        self.stats = KernelStats()
        self._modules: dict[tuple[str, str], Module] = {}
        self._blobs: dict[tuple[str, str], tuple[bytes, str]] = {}
        self._functions: dict[tuple[str, str, str], Function] = {}
        self.invokers: dict[tuple[ConvProblem, str], Invoker] = {}
        self._primitive_launches: dict[tuple[object, str], PreparedLaunch] = {}
        self._at_hand: dict[tuple[str, str], bool] = {}
        # The miss ranking's answers per problem, and the FindDb records per layer (its FindDb
        # key without the batch size standing for it) by batch size, for the nearest-record
        # correction.
        self.ranked: dict[ConvProblem, list[ConvSolution]] = {}
        self.layer_records: dict[object, dict[int, FindDbRecord]] = {}
        self._by_direction: dict[str, list[Solver]] = {}
        self._by_direction_stamp: tuple[int, int, object] | None = None
        self.layer_classes: dict[tuple[str, ...], list[tuple[float, str]]] | None = None
        self.size_neighbours: dict[str, tuple[ConvProblem, FindDbRecord] | None] = {}
        self.layer_neighbours: dict[tuple[object, object], tuple[
            dict[str, list[Params]], dict[str, tuple[ConvProblem, Params, float]]]] = {}
        self._open_databases()

    # ------------------------------------------------------------------ databases
    def _open_databases(self) -> None:
        """Where the databases are; each is opened (and its module imported) on first use."""
        self.basename = self.target.basename
        paths = config.Paths.for_basename(self.basename, self.target.arch)
        self.system_basename = self.basename
        if paths.system_dir is None:
            near = nearest_system_basename(self.target, config.system_db_dirs())
            if near is not None:
                self.system_basename, folder = near
                warnings.warn(
                    f"no system databases for {self.basename}; using {self.system_basename} "
                    f"from {folder} (same arch, nearest CU count)", stacklevel=3)
                paths = config.Paths(self.basename, folder, paths.user_dir, paths.cache_dir,
                                     self.target.arch)
        self.paths = paths
        sys_paths = config.Paths(self.system_basename, paths.system_dir, paths.user_dir,
                                 paths.cache_dir, self.target.arch)
        # An unusable user folder means no user databases (finds are not recorded), an
        # unusable cache folder no kernel cache: one warning each, never an OSError later.
        user_ok = _usable_dir(paths.user_dir, "MIOPEN_USER_DB_PATH", "no user databases: "
                              "finds and tuning results are not recorded")
        self._user_dbs_ok = user_ok
        self._system_paths = sys_paths
        self._finddb: FindDb | None = None
        self._perfdb: PerfDb | None = None
        self._system_kdb_path = sys_paths.system_kdb
        self._system_kdb: KernelDb | None = None
        self._system_kdb_opened = False
        self.cache_disabled = config.cache_disabled() or not _usable_dir(
            paths.cache_dir, "MIOPEN_CUSTOM_CACHE_DIR", "no kernel cache: JIT-compiled kernels "
            "are not kept")
        self._user_kdb: KernelDb | None = None

    @property
    def finddb(self) -> FindDb:
        """The system and user FindDb, made on first use."""
        if self._finddb is None:
            from .db.finddb import FindDb

            self._finddb = FindDb(self._system_paths.system_finddb,
                                  self.paths.user_finddb if self._user_dbs_ok else None)
        return self._finddb

    @finddb.setter
    def finddb(self, db: FindDb) -> None:
        self._finddb = db

    @property
    def perfdb(self) -> PerfDb:
        """The system PerfDb (SQLite, else text) and the user PerfDb, made on first use."""
        if self._perfdb is None:
            from .db.perfdb import PerfDb

            system = self._system_paths.system_perfdb
            if system is not None and not system.exists():
                system = self._system_paths.system_perfdb_text
            self._perfdb = PerfDb(system, self.paths.user_perfdb if self._user_dbs_ok else None)
        return self._perfdb

    @perfdb.setter
    def perfdb(self, db: PerfDb) -> None:
        self._perfdb = db

    @property
    def system_kdb(self) -> KernelDb | None:
        """The installed package's kdb, opened on first use."""
        if not self._system_kdb_opened:
            self._system_kdb = self._open_system_kdb(self._system_kdb_path)
            self._system_kdb_opened = True
        return self._system_kdb

    @system_kdb.setter
    def system_kdb(self, db: KernelDb | None) -> None:
        self._system_kdb, self._system_kdb_opened = db, True

    def _open_system_kdb(self, path: Path | None) -> KernelDb | None:
        from .db.kerneldb import KernelDb

        if path is None or not path.exists():
            return None
        if path.stat().st_size < _MIN_KDB_BYTES:
            warnings.warn(f"{path} is {path.stat().st_size} bytes: not a KernelDb (a Git LFS "
                          "pointer?); ignoring it", stacklevel=4)
            return None
        return KernelDb(path)

    @property
    def user_kdb(self) -> KernelDb | None:
        """The user kernel cache (`<cache>/<basename>.ukdb`), opened on first use."""
        if self._user_kdb is None and not self.cache_disabled and self.paths.user_kdb.exists():
            self._open_user_kdb()
        return self._user_kdb

    def _user_kdb_for_write(self) -> KernelDb | None:
        if self._user_kdb is None and not self.cache_disabled:
            self._open_user_kdb()
        return self._user_kdb

    def _open_user_kdb(self) -> None:
        """Open (or create) the user kernel cache; a damaged file is set aside and a new one
        started, an unusable folder turns the cache off. One warning either way."""
        from .db.kerneldb import KernelDb

        path = self.paths.user_kdb
        for _ in range(2):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._user_kdb = KernelDb(path, readonly=False)
                return
            except DamagedDbError as exc:
                self._set_aside(path, str(exc))
                if self.cache_disabled:
                    return
            except (DbError, OSError) as exc:
                break_reason = getattr(exc, "strerror", None) or str(exc)
                self._cache_off(f"the kernel cache {path} is unusable ({break_reason})")
                return
        self._cache_off(f"the kernel cache {path} could not be created again")

    def _cache_off(self, why: str) -> None:
        warnings.warn(f"{why}; no kernel cache: JIT-compiled kernels are not kept", stacklevel=4)
        self.cache_disabled = True
        self._user_kdb = None
        self._at_hand.clear()

    def _set_aside(self, path: Path, why: str) -> None:
        """Rename a damaged user cache out of the way (kept for a look, never read again)."""
        self._at_hand.clear()
        if self._user_kdb is not None:
            self._user_kdb.close()
            self._user_kdb = None
        dest = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d%H%M%S')}-"
                              f"{os.getpid()}")
        try:
            _fsutil.replace(path, dest)
            for side in ("-wal", "-shm"):
                with contextlib.suppress(OSError):
                    os.unlink(f"{path}{side}")
        except FileNotFoundError:
            return  # another process set it aside first
        except OSError as exc:
            self._cache_off(f"{why}; it could not be set aside ({exc.strerror or exc})")
            return
        warnings.warn(f"{why}; set aside as {dest.name}, kernels will be compiled again",
                      stacklevel=4)

    def _user_kdb_load(self, key: tuple[str, str]) -> bytes | None:
        """A kernel from the user cache; a damaged entry is removed, a damaged file set aside,
        and the kernel counts as absent (so it is compiled again)."""
        db = self.user_kdb
        if db is None:
            return None
        try:
            return db.load(*key)
        except IntegrityError as exc:
            warnings.warn(f"{exc}; removing the entry, the kernel will be compiled again",
                          stacklevel=3)
            with contextlib.suppress(DbError):
                db.remove(*key)
        except DamagedDbError as exc:
            self._set_aside(self.paths.user_kdb, str(exc))
        except DbError as exc:  # busy past the timeout: compile rather than fail
            log.warning("user kernel cache unreadable now: %s", exc)
        return None

    # ------------------------------------------------------------------ solvers
    @property
    def solvers(self) -> list[Solver]:
        if self._solvers is None:
            from .solvers import SOLVERS

            return SOLVERS
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
        if self._compiler is not None:
            return True
        if self._triton_importable is None:  # looked up once: a search of sys.path
            self._triton_importable = config.triton_importable()
        if self._triton_importable:
            return True
        params = self.params_for(problem, solver)
        job = solver.compile_job(problem, params, self.target)
        return bool(self.has_kernel(job))

    def finddb_key(self, problem: ConvProblem) -> str:
        """The FindDb key of `problem` under this handle's math mode: MIOpen's key, with
        `_tf32` appended for an FP32 problem under TF32 (config.MathMode)."""
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

    # ------------------------------------------------------------------ kernels
    def kernel_at_hand(self, job: CompileJob) -> bool:
        """Whether `job`'s binary needs no compile (memory, system kdb, user ukdb), without
        reading it; answers are kept for the Handle's life."""
        key = (job.kdb_name, job.kdb_args)
        hit = self._at_hand.get(key)
        if hit is None:
            hit = key in self._modules or key in self._blobs or any(
                db is not None and db.contains(*key) for db in (self.system_kdb, self.user_kdb))
            self._at_hand[key] = hit
        return hit

    def has_kernel(self, job: CompileJob) -> bool:
        """Whether `job`'s binary is available without compiling (memory, system kdb, ukdb)."""
        key = (job.kdb_name, job.kdb_args)
        if key in self._modules or key in self._blobs:
            return True
        blob = self.system_kdb.load(*key) if self.system_kdb is not None else None
        source = "system_kdb"
        if blob is None:
            blob, source = self._user_kdb_load(key), "user_kdb"
        if blob is not None:
            self._blobs[key] = (blob, source)  # kernel() takes it without a second read
            return True
        return False

    def kernel(self, job: CompileJob) -> Function:
        """The loaded kernel of a CompileJob: system kdb, then user ukdb, then JIT (cached)."""
        key = (job.kdb_name, job.kdb_args)
        fkey = (*key, job.kernel_name)
        fn = self._functions.get(fkey)
        if fn is not None:
            self.stats.memory += 1
            return fn
        module = self._modules.get(key)
        if module is None:
            blob, source = self._blobs.pop(key, (None, ""))
            if blob is not None:
                setattr(self.stats, source, getattr(self.stats, source) + 1)
            if blob is None and self.system_kdb is not None:
                blob = self.system_kdb.load(*key)
                if blob is not None:
                    self.stats.system_kdb += 1
            if blob is None:
                blob = self._user_kdb_load(key)
                if blob is not None:
                    self.stats.user_kdb += 1
            if blob is None:
                blob = self.compile(job)
            module = self.backend.load(blob)
            self._modules[key] = module
        fn = module.function(job.kernel_name)
        self._functions[fkey] = fn
        return fn

    def compile(self, job: CompileJob) -> bytes:
        """JIT-compile `job` and keep the result in the user kernel cache."""
        compiler = self._compiler
        if compiler is None:
            from .compiler import compile_job

            compiler = compile_job
        log.info("JIT compiling %s %s", job.kdb_name, job.kdb_args)
        try:
            blob = compiler(job)
        except CompileError:
            raise
        self.stats.jit += 1
        try:
            ukdb = self._user_kdb_for_write()
            if ukdb is not None:
                ukdb.store(job.kdb_name, job.kdb_args, blob)
                self._at_hand[(job.kdb_name, job.kdb_args)] = True
        except (DbError, OSError) as exc:  # a broken cache must not stop the computation
            self._cache_off(f"could not store a kernel in the user cache: {exc}")
        return blob

    @property
    def compilations(self) -> int:
        return self.stats.jit

    # ------------------------------------------------------------------ find / immediate
    def find(self, problem: ConvProblem, x: object, w: object, y: object, *,
             mode: str | int | None = None, workspace: object = None) -> list[ConvSolution]:
        """Find the solutions of `problem` (MIOPEN_FIND_MODE unless `mode`); see find.py."""
        from .find import find

        return find(self, problem, x, w, y, mode=mode, workspace=workspace)

    def solutions(self, problem: ConvProblem) -> list[ConvSolution]:
        """Immediate mode: ranked solutions without benchmarking (record, else ranking)."""
        from .invoke import immediate_solutions

        return immediate_solutions(self, problem)

    def workspace_size(self, problem: ConvProblem, solution: ConvSolution | str) -> int:
        """Device scratch memory the solution needs: at its own parameters (a ranked
        solution's), else at the PerfDb's or the defaults."""
        from .invoke import ConvSolution, solver_of

        solver = solver_of(self, solution)
        params = solution.params if isinstance(solution, ConvSolution) else None
        if not params:
            params = self.params_for(problem, solver)
        return int(solver.workspace_for(problem, params))

    def compile_solution(self, problem: ConvProblem, solution: ConvSolution | str) -> Invoker:
        """Make the solution's kernel ready (load or compile) and cache its invoker."""
        from .invoke import invoker

        return invoker(self, problem, solution)

    def run(self, problem: ConvProblem, solution: ConvSolution | str, x: object, w: object,
            y: object, workspace: object = None) -> None:
        """Run one solution on the layer's x, w, y (whatever the direction computes)."""
        from .invoke import run

        run(self, problem, solution, x, w, y, workspace)

    def convolution(self, problem: ConvProblem, x: object, w: object, y: object) -> ConvSolution:
        """Immediate mode in one call: the best-ranked solution, run."""
        sols = self.solutions(problem)
        self.run(problem, sols[0], x, w, y)
        return sols[0]

    def primitive(self, primitive: Primitive | str, problem: object,
                  outputs: tuple[str, ...] = ("y",), **tensors: object) -> None:
        """Run a primitive (activation, pooling, batch norm, softmax, bias) on named tensors.

        `tensors` maps the kernel's pointer names (`x`, `y`, `scale`...) to numpy arrays (copied;
        the `outputs` are copied back) or GPU tensors (used in place). The kernel and its packed
        arguments are cached per (problem, primitive).
        """
        from .tensor import as_device

        if isinstance(primitive, str):
            from .primitives import get_primitive

            primitive = get_primitive(primitive)
        key = (problem, primitive.name)
        launch = self._primitive_launches.get(key)
        if launch is None:
            if not primitive.is_applicable(problem, self.target):
                raise MIOpenKernelsError(f"{primitive.name} does not apply to {problem} on "
                                         f"{self.target.name}")
            fn = self.kernel(primitive.compile_job(problem, self.target))
            spec = primitive.launch(problem)
            launch = self.backend.prepare(fn, spec.grid, spec.block, spec.args,
                                          spec.shared_bytes)
            self._primitive_launches[key] = launch
        bound = {}
        try:
            for name in launch.slots:
                if name not in tensors:
                    raise MIOpenKernelsError(f"{primitive.name} needs tensor {name!r}; given: "
                                             f"{', '.join(sorted(tensors))}")
                t = as_device(tensors[name], self.backend, upload=name not in outputs)
                t.temporary = t.temporary or (t is not tensors[name] and t.copied)
                bound[name] = t
                launch.set(name, t.ptr)
            launch()
            for name in outputs:
                if bound[name].copied:
                    self.backend.synchronize()
                    bound[name].copy_back(self.backend)
        finally:
            for t in bound.values():
                if t.temporary:
                    t.release()

    def close(self) -> None:
        """Close what was opened (a database never used is not opened to be closed)."""
        for db in (self._system_kdb, self._user_kdb):
            if db is not None:
                db.close()
        if self._perfdb is not None:
            self._perfdb.close()

    def __repr__(self) -> str:
        return f"<Handle {self.target.name} {self.backend.name} dbs={self.paths.system_dir}>"

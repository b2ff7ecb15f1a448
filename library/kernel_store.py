"""The kernel store: "give me this code object", loaded and ready to launch.

A kernel comes from memory, the installed package's KernelDb (system kdb), the user kernel
cache (`<cache>/<basename>.ukdb`) or a JIT compile, whose result goes to the user cache. What is
damaged heals here: a damaged cache entry is removed, a damaged cache file set aside and a new
one started, an unusable cache folder turns the cache off; one warning each, and the kernel is
compiled again. `Handle` composes one store; the plans ask it for kernels by CompileJob.
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
from .errors import CompileError, DamagedDbError, DbError, IntegrityError, TargetError
from .target import Target, basename_for

if TYPE_CHECKING:
    from .backends import Backend, Function, Module
    from .db.kerneldb import KernelDb
    from .solvers.base import CompileJob

__all__ = ["KernelStats", "KernelStore", "locate_databases", "nearest_system_basename",
           "usable_dir"]

log = get_logger()

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


def usable_dir(path: Path, variable: str, consequence: str) -> bool:
    """Whether `path` is, or can be made, a writable folder; warns once with why not."""
    probe = path
    try:
        while not probe.exists() and probe.parent != probe:
            if os.path.lexists(probe):  # a link to nowhere: dangling, or a loop of links
                break
            probe = probe.parent
        why = (f"{probe} is a symbolic link that leads nowhere" if not probe.exists() else
               f"{probe} is not a folder" if not probe.is_dir() else
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
            if found.arch != target.arch or found.basename != base:
                continue  # another arch, or a name MIOpen would not write (hex at 64 or less)
            score = (abs(found.cu - target.cu), -found.cu)
            if best is None or score < best[:2]:
                best = (*score, basename_for(target.arch, found.cu), folder)
    return (best[2], best[3]) if best else None


def locate_databases(target: Target) -> tuple[config.Paths, config.Paths]:
    """(paths of `target`'s basename, paths of the system databases used for it): the exact
    basename's, else those of the same arch with the nearest CU count, with a warning (the
    kernels depend on the arch only, the measured choices nearly so)."""
    paths = config.Paths.for_basename(target.basename, target.arch)
    system = paths
    if paths.system_dir is None:
        near = nearest_system_basename(target, config.system_db_dirs())
        if near is not None:
            warnings.warn(f"no system databases for {target.basename}; using {near[0]} from "
                          f"{near[1]} (same arch, nearest CU count)", stacklevel=4)
            paths = config.Paths(target.basename, near[1], paths.user_dir, paths.cache_dir,
                                 target.arch)
            system = config.Paths(near[0], near[1], paths.user_dir, paths.cache_dir,
                                  target.arch)
    return paths, system


class KernelStore:
    """Code objects by CompileJob: memory, system kdb, user kdb, then a JIT compile.

    `compiler` (CompileJob -> code object bytes) defaults to the library's JIT compiler; tests
    pass doubles. `cache_disabled` turns the user cache off (MIOPEN_DISABLE_CACHE, or an
    unusable folder).
    """

    def __init__(self, backend: Backend, system_kdb_path: Path | None, user_kdb_path: Path, *,
                 cache_disabled: bool = False,
                 compiler: Callable[[CompileJob], bytes] | None = None) -> None:
        self.backend = backend
        self.compiler = compiler
        self.stats = KernelStats()
        self.cache_disabled = cache_disabled
        self.system_kdb_path = system_kdb_path
        self.user_kdb_path = user_kdb_path
        self._system_kdb: KernelDb | None = None
        self._system_kdb_opened = False
        self._user_kdb: KernelDb | None = None
        self._modules: dict[tuple[str, str], Module] = {}
        self._blobs: dict[tuple[str, str], tuple[bytes, str]] = {}
        self._functions: dict[tuple[str, str, str], Function] = {}
        self._at_hand: dict[tuple[str, str], bool] = {}

    # ------------------------------------------------------------------ databases
    @property
    def system_kdb(self) -> KernelDb | None:
        """The installed package's kdb, opened on first use."""
        if not self._system_kdb_opened:
            self._system_kdb = self._open_system_kdb(self.system_kdb_path)
            self._system_kdb_opened = True
        return self._system_kdb

    @system_kdb.setter
    def system_kdb(self, db: KernelDb | None) -> None:
        self._system_kdb, self._system_kdb_opened = db, True

    @staticmethod
    def _open_system_kdb(path: Path | None) -> KernelDb | None:
        from .db.kerneldb import KernelDb

        if path is None or not path.exists():
            return None
        if path.stat().st_size < _MIN_KDB_BYTES:
            warnings.warn(f"{path} is {path.stat().st_size} bytes: not a KernelDb (a Git LFS "
                          "pointer?); ignoring it", stacklevel=5)
            return None
        return KernelDb(path)

    @property
    def user_kdb(self) -> KernelDb | None:
        """The user kernel cache, opened on first use (when the file exists)."""
        if self._user_kdb is None and not self.cache_disabled and self.user_kdb_path.exists():
            self._open_user_kdb()
        return self._user_kdb

    def user_kdb_for_write(self) -> KernelDb | None:
        """The user kernel cache, created if need be; None when the cache is off."""
        if self._user_kdb is None and not self.cache_disabled:
            self._open_user_kdb()
        return self._user_kdb

    def _open_user_kdb(self) -> None:
        """Open (or create) the user kernel cache; a damaged file is set aside and a new one
        started, an unusable folder turns the cache off. One warning either way."""
        from .db.kerneldb import KernelDb

        path = self.user_kdb_path
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
        warnings.warn(f"{why}; no kernel cache: JIT-compiled kernels are not kept", stacklevel=5)
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
                      stacklevel=5)

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
                          stacklevel=4)
            with contextlib.suppress(DbError):
                db.remove(*key)
        except DamagedDbError as exc:
            self._set_aside(self.user_kdb_path, str(exc))
        except DbError as exc:  # busy past the timeout: compile rather than fail
            log.warning("user kernel cache unreadable now: %s", exc)
        return None

    # ------------------------------------------------------------------ kernels
    def kernel_at_hand(self, job: CompileJob) -> bool:
        """Whether `job`'s binary needs no compile (memory, system kdb, user ukdb), without
        reading it; answers are kept for the store's life."""
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
        compiler = self.compiler
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
            ukdb = self.user_kdb_for_write()
            if ukdb is not None:
                ukdb.store(job.kdb_name, job.kdb_args, blob)
                self._at_hand[(job.kdb_name, job.kdb_args)] = True
        except (DbError, OSError) as exc:  # a broken cache must not stop the computation
            self._cache_off(f"could not store a kernel in the user cache: {exc}")
        return blob

    def close(self) -> None:
        """Close the kdbs that were opened."""
        for db in (self._system_kdb, self._user_kdb):
            if db is not None:
                db.close()

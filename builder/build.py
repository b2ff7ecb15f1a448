"""The build: compile every job of every target in parallel, through the object cache, into one
`<basename>.kdb` per target.

Each distinct cache key (source + includes, options, compiler, arch) is compiled once, however
many targets and rows use it; its code object is checked (arch, kernel symbol) before it enters
the cache, and again when it enters a kdb. A failing job is reported with the compiler's log and
does not stop the others. A target's kdb is written only when all its jobs succeeded, to a
temporary file renamed into place, so a failed build never leaves a partial or half-written kdb;
a kdb that already holds exactly the objects of the build is left as it is.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing
import os
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miopenkernels._fsutil import atomic_path, atomic_write
from miopenkernels.codeobject import split_kdb_blob
from miopenkernels.compiler import (
    check_code_object,
    compile_job,
    describe_job,
    is_triton_job,
    job_compiler,
)
from miopenkernels.errors import ArgumentError, MIOpenKernelsError
from miopenkernels.problem import ConvProblem
from miopenkernels.target import Target

from .cache import CacheKeys, ObjectCache
from .jobs import TargetDbs, build_jobs
from .resources import ResourceReport, family_of

__all__ = ["JobFailure", "TargetSummary", "BuildResult", "build", "write_kdb", "kdb_holds",
           "failure_text"]


@dataclass(frozen=True)
class JobFailure:
    """A job that did not produce a code object: what failed, why, and the compiler's words."""

    job: Any
    message: str
    log: str = ""
    targets: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"job": self.job.to_dict(), "targets": list(self.targets),
                "message": self.message, "log": self.log}


@dataclass
class TargetSummary:
    """One target's line of the build summary."""

    target: Target
    jobs: int = 0
    compiled: int = 0  # jobs whose object was compiled by this build
    cached: int = 0  # jobs whose object was already in the cache
    failed: int = 0
    kdb: Path | None = None
    kdb_bytes: int = 0
    kdb_unchanged: bool = False  # the kdb already held exactly these objects: not rewritten
    object_bytes: int = 0  # sum of the raw code objects in the kdb
    predicted: Path | None = None  # folder of predicted FindDb/PerfDb (builder/predict.py)
    resources: ResourceReport | None = None  # AMD targets: each family's objects' resources

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target.name, "basename": self.target.basename, "jobs": self.jobs,
                "compiled": self.compiled, "cached": self.cached, "failed": self.failed,
                "kdb": str(self.kdb) if self.kdb else None, "kdb_bytes": self.kdb_bytes,
                "kdb_unchanged": self.kdb_unchanged, "object_bytes": self.object_bytes,
                "predicted_dbs": str(self.predicted) if self.predicted else None,
                "resources": self.resources.to_dict() if self.resources else None}


@dataclass
class BuildResult:
    """What a build did: per-target lines, failures, and totals over distinct objects."""

    targets: list[TargetSummary]
    failures: list[JobFailure] = field(default_factory=list)
    objects: int = 0  # distinct cache keys
    compiled: int = 0  # distinct objects compiled now
    cached: int = 0  # distinct objects found in the cache
    compile_seconds: float = 0.0  # summed over workers
    wall_seconds: float = 0.0
    # "<compiler> <family>" -> [objects compiled now, their compile seconds]: where a cold
    # build's time goes (family: the kernel source file; Triton's also the kernel)
    family_seconds: dict[str, list[float]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok, "wall_seconds": round(self.wall_seconds, 3),
            "compile_seconds": round(self.compile_seconds, 3), "objects": self.objects,
            "compiled": self.compiled, "cached": self.cached,
            "family_seconds": {k: {"objects": int(n), "seconds": round(t, 2)}
                               for k, (n, t) in sorted(self.family_seconds.items(),
                                                       key=lambda kv: -kv[1][1])},
            "targets": [t.to_dict() for t in self.targets],
            "failures": [f.to_dict() for f in self.failures],
        }


def _compile_one(job: Any, kernels: str | None, triton_ir: str | None = None
                 ) -> tuple[str, Any, float]:
    """Worker: ('ok', bytes, seconds) or ('error', (message, log), seconds). Never raises, so
    one bad job cannot take the pool down. `triton_ir`: the cache's folder of Triton IR that
    targets share (compiler/triton_ir.py)."""
    start = time.perf_counter()
    try:
        blob = compile_job(job, kernels, triton_ir=triton_ir)
        return "ok", blob, time.perf_counter() - start
    except MIOpenKernelsError as exc:
        return "error", (str(exc), getattr(exc, "log", "")), time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001 - reported as the job's failure, with traceback
        return ("error", (f"{describe_job(job)}: {type(exc).__name__}: {exc}",
                          traceback.format_exc()), time.perf_counter() - start)


def _family_label(job: Any) -> str:
    """"<compiler> <family>" of a job for the build's time table: `clang-19 conv_1x1`,
    `triton conv_triton_depthwise.depthwise_conv`."""
    family = family_of(job) + (f".{job.kernel_name}" if is_triton_job(job) else "")
    try:
        return f"{job_compiler(job).name} {family}"
    except MIOpenKernelsError:  # no compiler for the arch: the job fails, its time still counts
        return f"? {family}"


def write_kdb(path: Path, rows: Sequence[tuple[str, str, bytes]]) -> int:
    """Write a new kdb at `path` holding `rows`, atomically: a temporary file in the same
    folder, then a rename over `path`. Returns the file's size."""
    from miopenkernels.db.kerneldb import KernelDb

    # KernelDb creates the schema in a file that does not exist yet.
    with atomic_path(path, create=False) as tmp:
        db = KernelDb(tmp, readonly=False, wal=False)
        try:
            db.store_many(rows)
        finally:
            db.close()
    return path.stat().st_size


def kdb_holds(path: Path, rows: Sequence[tuple[str, str, bytes]]) -> bool:
    """Whether the kdb at `path` holds exactly `rows` (same names, args and code-object md5s),
    so that a build with nothing changed leaves the file, and its mtime, alone."""
    from miopenkernels.db.kerneldb import KernelDb

    if not path.is_file():
        return False
    try:
        with KernelDb(path) as db:
            have = {(e.kernel_name, e.kernel_args): e.kernel_hash for e in db.entries()}
    except MIOpenKernelsError:  # unreadable or foreign: rewrite it
        return False
    want = {(name, args): hashlib.md5(blob).hexdigest() for name, args, blob in rows}
    return have == want


def _write_record(path: Path, record: dict[str, Any]) -> None:
    """Write a JSON record unless the file already says exactly that (a no-op build)."""
    data = (json.dumps(record, indent=1) + "\n").encode()
    if not (path.is_file() and path.read_bytes() == data):
        atomic_write(path, data)


# A Unix socket's path holds at most 107 bytes; the forkserver's listener lies at
# <temp dir>/pymp-XXXXXXXX/listener-XXXXXXXX, about 34 bytes below the temp dir.
_SOCKET_PATH_MAX = 107
_LISTENER_TAIL = 40


@contextlib.contextmanager
def _short_temp_dir() -> Iterator[None]:
    """While the pool starts, a temp dir short enough for its Unix socket: with a long TMPDIR
    the forkserver fails with "AF_UNIX path too long". multiprocessing makes its own private
    folder (`pymp-*`, mode 0700) under the one given here and removes it at exit."""
    import tempfile

    current = tempfile.gettempdir()
    if len(os.fsencode(current)) + _LISTENER_TAIL <= _SOCKET_PATH_MAX:
        yield
        return
    short = next((d for d in ("/tmp", "/var/tmp", "/dev/shm")
                  if os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK)), None)
    saved = tempfile.tempdir
    tempfile.tempdir = short or saved
    try:
        yield
    finally:
        tempfile.tempdir = saved


def _pool_can_start() -> bool:
    """Whether the forkserver's socket path fits (after `_short_temp_dir`); else compile in
    this process."""
    import multiprocessing.util

    with _short_temp_dir():
        folder = multiprocessing.util.get_temp_dir()
    return len(os.fsencode(folder)) + len("/listener-XXXXXXXX") <= _SOCKET_PATH_MAX


ProgressFn = Callable[[int, int], None]
FailureFn = Callable[[JobFailure], None]


def build(
    targets: Sequence[Target],
    problems: Sequence[ConvProblem],
    out_dir: str | Path,
    *,
    workers: int | None = None,
    cache_dir: str | Path | None = None,
    kernels: str | Path | None = None,
    dbs_root: str | Path | None = None,
    jobs: dict[Target, list[Any]] | None = None,
    manifests: Sequence[str] = (),
    on_progress: ProgressFn | None = None,
    on_failure: FailureFn | None = None,
    predict_dbs: bool = False,
    on_target: Callable[[TargetSummary], None] | None = None,
) -> BuildResult:
    """Build one kdb per target into `out_dir`. `jobs` overrides the registry's job lists.

    Beside each kdb, `<basename>.build.json` records the manifests (names, as given) and problem
    keys it was built for; `package --from-build` copies them into the package manifest.
    With `predict_dbs`, each target without measured databases also gets a predicted FindDb
    and PerfDb (builder/predict.py) under `out_dir/predicted/<basename>/`.
    `on_progress(done, total)` follows the distinct compiles; `on_target(summary)` is called
    as each target's kdb is written (or refused).

    With more than one worker, compiles run in a process pool started by forkserver, which
    imports the caller's main module: a script calling this needs `if __name__ == "__main__"`.
    """
    start = time.perf_counter()
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ArgumentError(f"build output {out} is a file, not a folder; give a folder")
    cache = ObjectCache(cache_dir)
    keys = CacheKeys(kernels)
    kernels_arg = str(kernels) if kernels else None
    plan = jobs if jobs is not None else build_jobs(targets, problems, dbs_root)
    summaries = {t: TargetSummary(t, jobs=len(plan.get(t, []))) for t in targets}
    result = BuildResult(list(summaries.values()))

    # Distinct objects: key -> first job (the one compiled) and every (target, job) using it.
    job_key: dict[tuple[Target, Any], str] = {}
    users: dict[str, list[tuple[Target, Any]]] = {}
    failed_keys: dict[str, JobFailure] = {}
    for target in targets:
        rows: dict[tuple[str, str], Any] = {}
        for job in plan.get(target, []):
            try:
                key = keys.key(job)
            except MIOpenKernelsError as exc:  # e.g. a missing source: fails this job only
                key = f"unkeyed:{describe_job(job)}"
                failed_keys[key] = JobFailure(job, str(exc), getattr(exc, "log", ""))
            row = (job.kdb_name, job.kdb_args)
            other = rows.setdefault(row, job)
            if other != job:
                key = f"clash:{describe_job(job)}"
                failed_keys[key] = JobFailure(
                    job, f"{describe_job(job)}: kdb row {row} already holds {other.kernel_name}; "
                    "jobs with one file and one option set must build one symbol")
            job_key[(target, job)] = key
            users.setdefault(key, []).append((target, job))
    result.objects = len(users)
    if on_failure:  # jobs that failed before any compile (missing source, clashing rows)
        for failure in failed_keys.values():
            on_failure(failure)
    todo = [k for k in users if k not in failed_keys and k not in cache]
    result.cached = len(users) - len(todo) - len(failed_keys)
    fresh: set[str] = set()

    done = 0
    total = len(todo)
    if on_progress:
        on_progress(done, total)

    def finish(key: str, status: str, payload: Any, seconds: float) -> None:
        nonlocal done
        done += 1
        result.compile_seconds += seconds
        slot = result.family_seconds.setdefault(_family_label(users[key][0][1]), [0, 0.0])
        slot[0] += 1
        slot[1] += seconds
        if status == "ok":
            cache.put(key, payload)
            fresh.add(key)
        else:
            message, log = payload
            names = tuple(sorted({t.name for t, _ in users[key]}))
            failure = JobFailure(users[key][0][1], message, log, names)
            failed_keys[key] = failure
            if on_failure:
                on_failure(failure)
        if on_progress:
            on_progress(done, total)

    triton_ir = str(cache.triton_ir)
    n_workers = max(1, workers or os.cpu_count() or 1)
    if n_workers == 1 or total <= 1 or not _pool_can_start():
        for key in todo:
            finish(key, *_compile_one(users[key][0][1], kernels_arg, triton_ir))
    else:
        # forkserver: workers start from a clean process, not a fork of one running threads
        # (the progress display), and import NVRTC only if they get an NVIDIA job.
        ctx = multiprocessing.get_context("forkserver")
        with _short_temp_dir(), ProcessPoolExecutor(max_workers=min(n_workers, total),
                                                    mp_context=ctx) as pool:
            pending: dict[Future[Any], str] = {
                pool.submit(_compile_one, users[key][0][1], kernels_arg, triton_ir): key
                for key in todo
            }
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    key = pending.pop(fut)
                    try:
                        finish(key, *fut.result())
                    except Exception as exc:  # noqa: BLE001 - a worker died (e.g. killed)
                        finish(key, "error", (f"{describe_job(users[key][0][1])}: worker "
                                              f"failed: {exc}", ""), 0.0)
    result.compiled = len(fresh)
    result.failures = sorted(failed_keys.values(), key=lambda f: describe_job(f.job))

    def late(failure: JobFailure) -> None:
        result.failures.append(failure)
        if on_failure:
            on_failure(failure)

    for target in targets:
        summary = summaries[target]
        if target.vendor == "amd":
            summary.resources = ResourceReport()
        rows_out: list[tuple[str, str, bytes]] = []
        for job in plan.get(target, []):
            key = job_key[(target, job)]
            if key in failed_keys:
                summary.failed += 1
                continue
            blob = cache.get(key)
            if blob is None:  # removed under our feet: report rather than write a short kdb
                summary.failed += 1
                late(JobFailure(job, f"{describe_job(job)}: cache entry {key} vanished "
                                "during the build"))
                continue
            try:  # cheap, and guards the kdb against a damaged cache entry
                code, meta = split_kdb_blob(blob)
                check_code_object(code, target.arch, job.kernel_name,
                                  what=f"cached object of {describe_job(job)}")
            except MIOpenKernelsError as exc:
                summary.failed += 1
                cache.path(key).unlink(missing_ok=True)  # so that the next build recompiles it
                late(JobFailure(job, f"{exc}; removed from the cache, build again"))
                continue
            if summary.resources is not None:  # what no AMD GPU here can try: its resources
                try:
                    refused = summary.resources.check(target, job, code, meta,
                                                      f"object of {describe_job(job)}")
                except MIOpenKernelsError as exc:
                    refused = str(exc)
                if refused is not None:
                    summary.failed += 1
                    late(JobFailure(job, refused))
                    continue
            summary.compiled += key in fresh
            summary.cached += key not in fresh
            summary.object_bytes += len(blob)
            rows_out.append((job.kdb_name, job.kdb_args, blob))
        if summary.failed == 0:
            summary.kdb = out / f"{target.basename}.kdb"
            summary.kdb_unchanged = kdb_holds(summary.kdb, rows_out)
            if summary.kdb_unchanged:
                summary.kdb_bytes = summary.kdb.stat().st_size
            else:
                summary.kdb_bytes = write_kdb(summary.kdb, rows_out)
            _write_record(out / f"{target.basename}.build.json",
                          {"target": target.name, "manifests": list(manifests),
                           "problems": list(dict.fromkeys(p.key() for p in problems))})
            if predict_dbs and TargetDbs(target, dbs_root).finddb_path is None:
                from .predict import predict_dbs as write_predicted

                summary.predicted = write_predicted(
                    target, problems, out, plan.get(target, []),
                    Path(dbs_root) if dbs_root else None)
        if on_target:
            on_target(summary)
    result.wall_seconds = time.perf_counter() - start
    return result


def failure_text(failure: JobFailure) -> str:
    """A failure as people read it: the job, the targets it breaks, then the compiler's log."""
    lines = [failure.message]
    if failure.targets:
        lines.append("targets: " + ", ".join(failure.targets))
    if failure.log:
        lines.append(failure.log.rstrip())
    return "\n".join(lines)


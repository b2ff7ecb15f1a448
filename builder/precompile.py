"""Compile ahead, in parallel, the dynamic binaries that tuning (or a test grid) will ask for.

Tuning JIT-compiles each candidate the first time it is timed, one at a time. Compiling the
candidates' jobs first on every core and storing them in the user kernel cache (ukdb) leaves
only launches for the timed loop. The candidate list is the one `find.search_params` walks.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from miopenkernels.db.kerneldb import KernelDb
from miopenkernels.errors import MIOpenKernelsError
from miopenkernels.find import candidate_params
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import SOLVERS, CompileJob, launch_jobs
from miopenkernels.target import Target

__all__ = ["candidate_params", "tuning_jobs", "precompile"]


def tuning_jobs(problems: Iterable[ConvProblem], target: Target, max_candidates: int = 48
                ) -> list[CompileJob]:
    jobs: dict[CompileJob, None] = {}
    for p in problems:
        for s in SOLVERS:
            if not s.is_applicable(p, target):
                continue
            params = candidate_params(s, p, target, max_candidates) if s.tunable else \
                [tuple(s.default_params(p, target))]
            for q in params:
                for job in launch_jobs(s, p, q, target):
                    jobs.setdefault(job)
    return list(jobs)


def _compile(job: CompileJob) -> tuple[CompileJob, bytes | None, str]:
    from miopenkernels.compiler import compile_job

    try:
        return job, compile_job(job), ""
    except MIOpenKernelsError as exc:
        return job, None, str(exc).splitlines()[0]


def precompile(jobs: list[CompileJob], ukdb: Path, workers: int = 0) -> dict[str, int]:
    """Compile the jobs missing from `ukdb` on all cores and store them there."""
    ukdb.parent.mkdir(parents=True, exist_ok=True)
    with KernelDb(ukdb, readonly=False) as db:
        todo = [j for j in jobs if db.load(j.kdb_name, j.kdb_args) is None]
    rows: list[tuple[str, str, bytes]] = []
    failed = 0
    with ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        for fut in as_completed([pool.submit(_compile, j) for j in todo]):
            job, blob, _err = fut.result()
            if blob is None:
                failed += 1
            else:
                rows.append((job.kdb_name, job.kdb_args, blob))
    with KernelDb(ukdb, readonly=False) as db:
        db.store_many(rows)
    return {"jobs": len(jobs), "compiled": len(rows), "failed": failed,
            "cached": len(jobs) - len(todo)}

"""A package is closed: every kernel its databases name is in its kdb.

For each FindDb record, each solution's solver runs, at run time, with the PerfDb's parameters
for it (when legal) or its defaults, from the specialised binary if the kdb holds one, else the
dynamic one (library/find.py). The record's kernel is therefore present when either binary is in
the kdb; `required_kernels` lists, per (problem, solver), both choices, and `missing_kernels`
those with neither. The build adds the specialised jobs of every database problem
(builder/jobs.py), so what it makes passes; `kdb verify` and `package` refuse what does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from miopenkernels.db.finddb import FindDbFile
from miopenkernels.db.perfdb import PerfDbFile
from miopenkernels.errors import DbError, MIOpenKernelsError
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import SOLVERS, CompileJob, Solver, launch_jobs
from miopenkernels.target import Target

__all__ = ["Requirement", "db_problems", "required_kernels", "missing_kernels",
           "check_closed", "database_files"]


@dataclass(frozen=True)
class Requirement:
    """One (problem, solver) a database names and the two binaries that can run it."""

    key: str
    solver: str
    params: tuple[int, ...]
    specialised: CompileJob | None
    dynamic: CompileJob
    # Needed with either: a split's reduce kernel, a Via solver's transposes.
    companions: tuple[CompileJob, ...] = ()

    def rows(self) -> list[tuple[str, str]]:
        jobs = [j for j in (self.specialised, self.dynamic) if j is not None]
        return [(j.kdb_name, j.kdb_args) for j in jobs]

    def met(self, kdb_rows: set[tuple[str, str]]) -> bool:
        """Whether a kdb with these rows runs it: one of the two binaries, and every
        companion."""
        return any(row in kdb_rows for row in self.rows()) and all(
            (j.kdb_name, j.kdb_args) in kdb_rows for j in self.companions)

    def describe(self) -> str:
        return (f"{self.key}: {self.solver} ({','.join(map(str, self.params)) or 'no params'}) "
                f"needs {self.dynamic.kdb_name} {self.dynamic.kdb_args!r}")


def database_files(folder: Path, basename: str) -> tuple[Path | None, Path | None]:
    """(FindDb, PerfDb) of `basename` in `folder`, each None when absent."""
    fdb = folder / f"{basename}.HIP.fdb.txt"
    perf = next((p for p in (folder / f"{basename}.db", folder / f"{basename}.db.txt")
                 if p.is_file()), None)
    return (fdb if fdb.is_file() else None), perf


def db_problems(finddb: Path | None) -> list[ConvProblem]:
    """The problems of a FindDb's records, in file order (unreadable keys skipped)."""
    if finddb is None:
        return []
    out = []
    for record in FindDbFile.read(finddb):
        try:
            out.append(ConvProblem.from_record_key(record.key))
        except MIOpenKernelsError:
            continue
    return out


def _params(solver: Solver, text: str | None, problem: ConvProblem, target: Target
            ) -> tuple[int, ...]:
    if text is not None:
        try:
            params = tuple(solver.params_from_string(text))
            if solver.params_valid(problem, target, params):
                return params
        except MIOpenKernelsError:
            pass
    return tuple(solver.default_params(problem, target))


def required_kernels(target: Target, finddb: Path | None, perfdb: Path | None,
                     solvers: Iterable[Solver] | None = None) -> Iterator[Requirement]:
    """Every (problem, solver) the databases name, with the binaries that would run it."""
    by_name = {s.name: s for s in (solvers if solvers is not None else SOLVERS)}
    perf = PerfDbFile.read(perfdb) if perfdb is not None else PerfDbFile()
    if finddb is None:
        return
    for record in FindDbFile.read(finddb):
        try:
            problem = ConvProblem.from_record_key(record.key)
        except MIOpenKernelsError:
            continue
        tuned = perf.load(problem)
        names = [s.solver for s in record.solutions]
        names += [n for n in tuned if n not in names]
        for name in names:
            solver = by_name.get(name)
            if solver is None or not solver.is_applicable(problem, target):
                continue  # the runtime skips such a solution with a warning
            params = _params(solver, tuned.get(name), problem, target)
            try:
                spec: CompileJob | None = solver.compile_job(problem, params, target,
                                                             specialised=True)
            except (NotImplementedError, MIOpenKernelsError):
                spec = None
            dynamic = solver.compile_job(problem, params, target, specialised=False)
            others = tuple(j for j in launch_jobs(solver, problem, params, target)
                           if j != dynamic)
            yield Requirement(record.key, name, params, spec, dynamic, others)


def missing_kernels(target: Target, kdb_rows: set[tuple[str, str]], finddb: Path | None,
                    perfdb: Path | None) -> list[Requirement]:
    """The requirements of the databases that no row of the kdb meets."""
    return [r for r in required_kernels(target, finddb, perfdb) if not r.met(kdb_rows)]


def check_closed(target: Target, kdb: Path, finddb: Path | None, perfdb: Path | None) -> int:
    """DbError unless every kernel the databases name is in `kdb`; the number checked."""
    from miopenkernels.db.kerneldb import KernelDb

    with KernelDb(kdb) as db:
        rows = {(e.kernel_name, e.kernel_args) for e in db.entries()}
    required = list(required_kernels(target, finddb, perfdb))
    missing = [r for r in required if not r.met(rows)]
    if missing:
        first = "; ".join(r.describe() for r in missing[:3])
        raise DbError(f"{kdb.name}: {len(missing)} of the {len(required)} kernels the "
                      f"databases name are not in the kdb (e.g. {first}); rebuild it with "
                      f"`miopenkernels build --targets {target.name}` beside those databases")
    return len(required)

"""Compile jobs of a build: (targets, manifest problems, solver registry) -> CompileJobs.

For each target the job list is
- every solver's dynamic (shape-agnostic) jobs and the primitives' jobs: they make the package
  cover ANY problem without a compiler, and
- for each manifest problem, a specialised job (shape baked in) of the solver the runtime would
  pick: the first applicable solver of the committed FindDb record in `dbs/<basename>/`, at
  its PerfDb record's parameters when it holds legal ones, else its `default_params`; without
  a record, immediate mode's first choice (the miss ranking's candidate under the default
  math, at its parameters; the best `heuristic_rank` without a ranking model). A record's
  other solutions are not specialised: they run from the dynamic binaries below, which the
  package holds for the miss ranking anyway;
- dynamic jobs at the parameter sets the miss ranking may choose (library/ranking.py): the most
  frequent few of the ranking model's, for each type, direction and layout that a manifest
  problem or a FindDb record needs, and every set the target's PerfDb holds, for the problems of
  its records' layer classes (`layer_class`: the layer at any batch size and, in 2D, image
  size: where the ranking takes a record's sets). These also close the package:
  every kernel its databases name (a record's solver at its PerfDb parameters) is in its kdb,
  as a specialised binary or a dynamic one (builder/closure.py).

Jobs are deduplicated (many problems share a dynamic job; equal specialisations collapse) and
sorted by KernelDb row, so the same inputs always give the same list.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from miopenkernels.errors import MIOpenKernelsError
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import (
    CompileJob,
    Solver,
    all_dynamic_jobs,
    applicable_solvers,
    with_companions,
)
from miopenkernels.target import Target

__all__ = ["TargetDbs", "Specialisation", "specialisations", "target_jobs", "build_jobs",
           "primitive_jobs"]

log = logging.getLogger("miopenkernels.builder")


def _dbs_root() -> Path:
    return Path(str(resources.files("miopenkernels.dbs")))


class TargetDbs:
    """The measured databases committed for one target under `dbs/<basename>/`, if any."""

    def __init__(self, target: Target, root: str | Path | None = None) -> None:
        from miopenkernels.db.finddb import FindDb
        from miopenkernels.db.perfdb import PerfDb

        folder = (Path(root) if root else _dbs_root()) / target.basename
        base = target.basename
        perf = next((p for p in (folder / f"{base}.db", folder / f"{base}.db.txt")
                     if p.is_file()), None)
        find = folder / f"{base}.HIP.fdb.txt"
        self.perfdb = PerfDb(perf) if perf else None
        self.finddb = FindDb(find) if find.is_file() else None
        self.finddb_path = find if find.is_file() else None

    def problems(self) -> list[ConvProblem]:
        """The problems of the FindDb's records (they ship, so their kernels must)."""
        from .closure import db_problems

        return db_problems(self.finddb_path)

    def tuned(self, problem: ConvProblem) -> dict[str, str]:
        """{solver name: PerfDb params text} for `problem`; empty without a PerfDb."""
        return self.perfdb.load(problem) if self.perfdb else {}

    def fastest(self, problem: ConvProblem) -> list[str]:
        """Solver names of the FindDb record, fastest first; empty without one."""
        record = self.finddb.lookup(problem) if self.finddb else None
        return [s.solver for s in record.solutions] if record else []


@dataclass(frozen=True)
class Specialisation:
    """One solver worth a specialised binary for one problem, and where its params came from."""

    solver: Solver
    params: tuple[int, ...]
    tuned: bool = field(default=False)


def _rank(solver: Solver, problem: ConvProblem, target: Target) -> float:
    try:
        return float(solver.heuristic_rank(problem, target))
    except NotImplementedError:
        return float("inf")


def _tuned_params(solver: Solver, text: str | None, problem: ConvProblem,
                  target: Target, quiet: bool = False) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        params = solver.params_from_string(text)
    except MIOpenKernelsError:
        params = None
    if params is None or not solver.params_valid(problem, target, params):
        if quiet:
            return None
        log.warning("%s: PerfDb params %r of %s are not legal for %s; using defaults",
                    target.basename, text, solver.name, problem.key())
        return None
    return params


def specialisations(problem: ConvProblem, target: Target,
                    dbs: TargetDbs | None = None) -> list[Specialisation]:
    """The solver worth a specialised binary for `problem` on `target`: the one the runtime
    runs. With a FindDb record, its first applicable solution at its PerfDb parameters when
    legal (a record's other solutions, and the PerfDb's other tuned solvers, run from their
    dynamic binaries at those parameters: `_ranking_jobs` puts them in the kdb for the
    problem's case, which keeps the package closed). Without one, immediate mode's first
    choice (`_ranking_pick`: the miss ranking's under the default math, whose kernel this
    build then ships); without a ranking model, the best `heuristic_rank`."""
    solvers = applicable_solvers(problem, target)
    if not solvers:
        return []
    tuned = dbs.tuned(problem) if dbs else {}
    by_name = {s.name: s for s in solvers}
    measured = [by_name[name] for name in (dbs.fastest(problem) if dbs else []) if name in by_name]
    if not measured:
        ranked = _ranking_pick(problem, target, solvers)
        if ranked is not None:
            return [ranked]
    picked = measured[0] if measured else min(solvers, key=lambda s: _rank(s, problem, target))
    params = _tuned_params(picked, tuned.get(picked.name), problem, target)
    if params is None:
        return [Specialisation(picked, tuple(picked.default_params(problem, target)))]
    return [Specialisation(picked, params, tuned=True)]


@lru_cache(maxsize=1)
def _model() -> Any:
    """The miss ranking's model, once a process; None without one (the heuristic decides)."""
    from miopenkernels.ranking import load_model

    try:
        return load_model()
    except MIOpenKernelsError as exc:
        log.warning("%s; specialising the solvers' own first choices", exc)
        return None


def _ranking_pick(problem: ConvProblem, target: Target, solvers: list[Solver]
                  ) -> Specialisation | None:
    """Immediate mode's first choice without a record (invoke.ranked_solutions): the miss
    ranking's first candidate, IEEE solvers alone (TF32 ones run only under the TF32 math mode,
    which a user asks for), every candidate's kernel taken as at hand (the build ships this
    one: the runtime then finds it, and the candidates ranked behind it do not matter). The
    runtime's GEMM-library solvers are not the registry's: where the library would come first
    this specialises the runner-up, which runs where the library is not offered. None
    without a model or a candidate."""
    from miopenkernels.ranking import rank_candidates

    model = _model()
    if model is None:
        return None
    ieee = [s for s in solvers if getattr(s, "math", "ieee") != "tf32"]
    try:
        ranked = rank_candidates(problem, target, ieee, lambda s, p: True, model=model)
    except NotImplementedError:  # a solver without launch geometry: the heuristic decides
        return None
    return Specialisation(ranked[0].solver, tuple(ranked[0].params)) if ranked else None


def primitive_jobs(target: Target) -> list[CompileJob]:
    """The primitives' (activation, pooling, ...) jobs, when that registry offers them."""
    try:
        module = importlib.import_module("miopenkernels.primitives")
    except ImportError:
        return []
    fn = getattr(module, "all_primitive_jobs", None)
    return list(fn(target)) if callable(fn) else []


def _row(job: CompileJob) -> tuple[str, str, str]:
    return (job.kdb_name, job.kdb_args, job.kernel_name)


RANKING_PARAMS = 2
"""How many of the ranking model's parameter sets per solver every target ships dynamically."""


LayerClass = tuple[tuple[str, Any], ...]
"""The problems whose miss ranking may take a record's tuned sets (library/invoke.py
`_neighbours`): the record's layer at any batch size and, in 2D, at any image size."""


def layer_class(problem: ConvProblem) -> LayerClass:
    """What of a problem the miss ranking's neighbour record shares with it: every field but
    the batch size and, in 2D (the ranking then also takes another image size's record of the
    same class, library/invoke.py `_key_class`), the image size."""
    dropped = {"n", "in_spatial"} if len(problem.in_spatial) == 2 else {"n"}
    return tuple((f.name, getattr(problem, f.name)) for f in fields(problem)
                 if f.name not in dropped)


def ranking_params(problems: Iterable[ConvProblem], dbs: TargetDbs | None
                   ) -> dict[str, dict[str, set[LayerClass] | None]]:
    """{solver: {params text: the layer classes it serves, None for every problem}} whose
    dynamic binaries the miss ranking can choose from: the ranking model's few sets for every
    problem, and each PerfDb set for the layer classes of the records that hold it (the
    ranking takes a record's sets for its layer at another batch size or image size only,
    `layer_class`). A set is compiled for the alignment variants of its classes' problems that
    the build knows (the manifests' and the records'); a problem of the class at an image size
    whose variant none of them takes ranks the other candidates."""
    from miopenkernels.ranking import load_model

    out: dict[str, dict[str, set[LayerClass] | None]] = {}
    try:
        model_params = load_model().params
    except MIOpenKernelsError:
        model_params = {}
    for name, texts in model_params.items():
        for text in texts[:RANKING_PARAMS]:
            out.setdefault(name, {})[text] = None
    if dbs is not None:
        for problem in problems:
            for name, text in dbs.tuned(problem).items():
                classes = out.setdefault(name, {}).setdefault(text, set())
                if classes is not None:
                    classes.add(layer_class(problem))
    return out


def _ranking_jobs(target: Target, problems: list[ConvProblem], dbs: TargetDbs | None
                  ) -> Iterable[CompileJob]:
    wanted = ranking_params(problems, dbs)
    for problem in problems:
        mine = layer_class(problem)
        for solver in applicable_solvers(problem, target):
            for text, classes in sorted(wanted.get(solver.name, {}).items()):
                if classes is not None and mine not in classes:
                    continue
                params = _tuned_params(solver, text, problem, target, quiet=True)
                if params is not None:
                    yield solver.compile_job(problem, params, target, specialised=False)


def target_jobs(target: Target, problems: Iterable[ConvProblem],
                dbs: TargetDbs | None = None) -> list[CompileJob]:
    """Every job of one target: dynamic, primitive, specialised and ranking candidates,
    deduplicated and sorted."""
    jobs: dict[CompileJob, None] = {}
    for job in (*all_dynamic_jobs(target), *primitive_jobs(target)):
        jobs.setdefault(job, None)
    every: dict[ConvProblem, None] = dict.fromkeys(problems)
    for problem in every:
        for spec in specialisations(problem, target, dbs):
            jobs.setdefault(
                spec.solver.compile_job(problem, spec.params, target, specialised=True), None)
    for problem in dbs.problems() if dbs else []:
        every.setdefault(problem, None)
    for job in _ranking_jobs(target, list(every), dbs):
        jobs.setdefault(job, None)
    return sorted(with_companions(jobs), key=_row)


def build_jobs(targets: Sequence[Target], problems: Sequence[ConvProblem],
               dbs_root: str | Path | None = None) -> dict[Target, list[CompileJob]]:
    """`target_jobs` for each target, with the target's committed databases."""
    return {t: target_jobs(t, problems, TargetDbs(t, dbs_root)) for t in targets}


def describe(jobs: Iterable[Any]) -> list[dict[str, Any]]:
    """JSON-ready list of jobs."""
    return [job.to_dict() for job in jobs]

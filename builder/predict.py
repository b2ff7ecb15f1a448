"""Predicted databases for targets nobody measured: FindDb and PerfDb from the miss ranking.

Where no GPU of a target can be measured (every AMD target here, the NVIDIA ones without a GPU),
the build can still ship a FindDb and a PerfDb: for each manifest problem, the ranking model
(library/ranking.py) ranks the (solver, parameters) candidates whose kernels the target's build
ships, and the record lists each solver at its predicted time, fastest first; the PerfDb holds
each tunable solver's chosen parameters. They are written to `<build>/predicted/<basename>/`
with a `provenance.json` that says `"predicted": true` (model, its fit, date), and packaging marks
the package's databases as predicted. A target with measured databases (dbs/<basename>/) gets
none: predicted and measured records are never mixed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path

from miopenkernels.db._lock import atomic_write
from miopenkernels.db.finddb import FindDbFile, FindDbRecord, Solution
from miopenkernels.db.perfdb import PerfDbFile
from miopenkernels.errors import DbError
from miopenkernels.problem import ConvProblem
from miopenkernels.ranking import load_model, model_path, rank_candidates
from miopenkernels.solvers import CompileJob, Params, Solver, applicable_solvers
from miopenkernels.target import Target

from .jobs import TargetDbs, target_jobs

__all__ = ["PREDICTED_DIR", "predicted_dir", "predict_dbs", "is_predicted"]

PREDICTED_DIR = "predicted"


def predicted_dir(build_dir: Path, target: Target) -> Path:
    return build_dir / PREDICTED_DIR / target.basename


def is_predicted(provenance: dict[str, object] | None) -> bool:
    return bool(provenance and provenance.get("predicted") is True)


def predict_dbs(target: Target, problems: Sequence[ConvProblem], build_dir: Path,
                jobs: Iterable[CompileJob] | None = None,
                dbs_root: Path | None = None) -> Path:
    """Write the predicted FindDb, PerfDb and provenance of `target`; the folder.

    `jobs` are the target's build jobs (the kernels its kdb holds); by default the ones
    `target_jobs` lists. DbError when the target has measured databases.
    """
    dbs = TargetDbs(target, dbs_root)
    if dbs.finddb_path is not None:
        raise DbError(f"{target.name} has measured databases ({dbs.finddb_path}); predicted "
                      "ones are made only for targets nobody measured")
    rows = {(j.kdb_name, j.kdb_args)
            for j in (jobs if jobs is not None else target_jobs(target, problems, dbs))}
    model = load_model()
    find, perf = FindDbFile(), PerfDbFile()
    for problem in dict.fromkeys(problems):
        def at_hand(solver: Solver, params: Params, problem: ConvProblem = problem) -> bool:
            job = solver.compile_job(problem, params, target, specialised=False)
            return (job.kdb_name, job.kdb_args) in rows

        ranked = rank_candidates(problem, target, applicable_solvers(problem, target), at_hand,
                                 model=model)
        if not ranked:
            continue
        find.put(FindDbRecord(problem.key(), tuple(
            Solution(c.solver.name, round(c.time, 6), int(c.solver.workspace_bytes(problem)),
                     c.solver.algorithm(problem)) for c in ranked)))
        for c in ranked:
            if c.solver.tunable:
                perf.put(problem, c.solver.name, c.solver.params_to_string(c.params))
    out = predicted_dir(build_dir, target)
    out.mkdir(parents=True, exist_ok=True)
    base = target.basename
    find.write(out / f"{base}.HIP.fdb.txt")
    perf.write(out / f"{base}.db.txt")
    model_file = model_path()
    provenance = {
        "predicted": True,
        "device": None,
        "target": target.name,
        "method": "miss ranking (library/ranking.py) over the kernels this build ships",
        "model": {"file": model_file.name,
                  "sha256": hashlib.sha256(model_file.read_bytes()).hexdigest(),
                  "fitted_on": json.loads(model_file.read_text()).get("fit", {}).get(
                      "targets", [])},
        "hardware": model.hardware.get(target.arch),
        "problems": len(find),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    atomic_write(out / "provenance.json", (json.dumps(provenance, indent=1) + "\n").encode())
    return out

"""The runtime's start-up imports only what the first call needs (bench/startup.py times it).

Each case runs in a fresh interpreter (an import cannot be undone in this one): `import
miopenkernels.handle`, then `Handle(target="sm90-132")` on the null backend with a package's
kdb in MIOPEN_SYSTEM_DB_PATH, then the first solution's invoker, from a FindDb record and from
the miss ranking; after each phase the modules loaded so far are checked against those the
phase must not load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from find_doubles import SM90, fake_cubin
from miopenkernels.db.kerneldb import KernelDb
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import get_solver

# Never on the runtime's path: tools, the CLI, the builder, numpy (memory only), locks, and
# the standard library's dataclasses (library/_record.py stands in for them), tomllib (the
# targets table is read from its JSON mirror, dbs/targets.json), and torch (the optional
# extra's: only `miopenkernels.torch` imports it).
NEVER = {"numpy", "filelock", "rich", "typer", "click", "packaging", "jsonschema", "yaml",
         "triton", "cuda.bindings", "hip", "logging", "subprocess", "tempfile", "shutil",
         "importlib.resources", "zipfile", "hashlib", "_hashlib", "random", "threading",
         "dataclasses", "inspect", "tomllib", "torch",
         "miopenkernels.cli", "miopenkernels.builder", "miopenkernels.install",
         "miopenkernels.compiler", "miopenkernels.find", "miopenkernels.detect",
         "miopenkernels.backends.hip"}
# Not on `import miopenkernels.handle`: the databases and solvers load on first use.
NOT_ON_IMPORT = NEVER | {"sqlite3", "json", "tomllib", "miopenkernels.db", "miopenkernels.solvers",
                         "miopenkernels.invoke", "miopenkernels.codeobject",
                         "miopenkernels.ranking", "miopenkernels.backends.cuda"}
# Not on the first call answered by a FindDb record: the ranking and its model.
NOT_ON_RECORD = NEVER | {"miopenkernels.ranking"}

PROBLEM = ConvProblem(n=32, c=64, k=64, in_spatial=(56, 56), filter=(3, 3), pad=(1, 1))
MISS = ConvProblem(n=3, c=64, k=64, in_spatial=(56, 56), filter=(3, 3), pad=(1, 1))
SOLVER = "ConvWinograd3x3Fwd"

CHILD = """
import sys
phases = {}
import miopenkernels.handle, miopenkernels.problem
phases["import"] = sorted(sys.modules)
from miopenkernels.handle import Handle
from miopenkernels.problem import ConvProblem
handle = Handle(target="sm90-132")
phases["handle"] = sorted(sys.modules)
problem = ConvProblem.from_key(sys.argv[1])
solution = handle.solutions(problem)[0]
invoker = handle.compile_solution(problem, solution)
phases["invoker"] = sorted(sys.modules)
phases["solution"] = [solution.solver, solution.source, handle.stats.jit]
import json
print(json.dumps(phases))
"""


@pytest.fixture(scope="module")
def system_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A package's system folder: a kdb holding the solver's dynamic kernel (at the default
    parameters of both layers), and a FindDb with a record for PROBLEM alone."""
    folder = tmp_path_factory.mktemp("system")
    solver = get_solver(SOLVER)
    with KernelDb(folder / "sm9084.kdb", readonly=False, wal=False) as kdb:
        for problem in (PROBLEM, MISS):
            job = solver.compile_job(problem, tuple(solver.default_params(problem, SM90)), SM90,
                                     specialised=False)
            if not kdb.contains(job.kdb_name, job.kdb_args):
                kdb.store(job.kdb_name, job.kdb_args, fake_cubin(90, [job.kernel_name]))
    (folder / "sm9084.HIP.fdb.txt").write_text(
        f"{PROBLEM.key()}={SOLVER}:0.5,0,miopenConvolutionFwdAlgoWinograd\n")
    return folder


def _phases(system_db: Path, tmp_path: Path, problem: ConvProblem) -> dict[str, list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIOPEN_")}
    env.update({"MIOPEN_SYSTEM_DB_PATH": str(system_db), "MIOPEN_USER_DB_PATH": str(tmp_path),
                "MIOPEN_CUSTOM_CACHE_DIR": str(tmp_path), "CUDA_VISIBLE_DEVICES": ""})
    proc = subprocess.run([sys.executable, "-c", CHILD, problem.key()], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def _loaded(modules: list[str], names: set[str]) -> list[str]:
    """The `names` (or modules under them) that `modules` holds."""
    return sorted(m for m in modules if m in names or m.rsplit(".", 1)[0] in names
                  or any(m.startswith(n + ".") for n in names))


def test_first_call_from_a_record_imports_nothing_it_does_not_need(system_db, tmp_path) -> None:  # noqa: ANN001
    phases = _phases(system_db, tmp_path, PROBLEM)
    assert phases["solution"] == [SOLVER, "finddb", 0]
    assert _loaded(phases["import"], NOT_ON_IMPORT) == []
    # Handle() asks the target's vendor backend for a GPU; the databases open on first use.
    assert _loaded(phases["handle"], NOT_ON_IMPORT - {"miopenkernels.backends.cuda"}) == []
    assert _loaded(phases["invoker"], NOT_ON_RECORD) == []


def test_first_call_from_the_ranking_imports_nothing_it_does_not_need(system_db,  # noqa: ANN001
                                                                      tmp_path) -> None:  # noqa: ANN001
    phases = _phases(system_db, tmp_path, MISS)
    assert phases["solution"] == [SOLVER, "ranking", 0]
    assert _loaded(phases["import"], NOT_ON_IMPORT) == []
    assert _loaded(phases["invoker"], NEVER) == []

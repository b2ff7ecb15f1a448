"""A package is closed: every kernel its databases name is in its kdb."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from miopenkernels.builder.closure import check_closed, missing_kernels, required_kernels
from miopenkernels.builder.jobs import TargetDbs, specialisations, target_jobs
from miopenkernels.builder.manifest import load_manifests
from miopenkernels.builder.package import package_targets
from miopenkernels.builder.package.manifest import TargetFiles
from miopenkernels.errors import DbError
from miopenkernels.solvers import all_dynamic_jobs
from miopenkernels.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from package_inputs import make_kdb  # noqa: E402

SM90 = Target("sm90", 132)
GFX906 = Target("gfx906", 60)


def _rows(jobs) -> set[tuple[str, str]]:  # noqa: ANN001
    return {(j.kdb_name, j.kdb_args) for j in jobs}


def _sm9084() -> tuple[TargetDbs, Path, Path]:
    dbs = TargetDbs(SM90)
    folder = Path(str(dbs.finddb_path)).parent
    return dbs, folder / "sm9084.HIP.fdb.txt", folder / "sm9084.db.txt"


def test_the_default_build_of_sm90_holds_every_kernel_its_databases_name() -> None:
    dbs, fdb, perf = _sm9084()
    jobs = target_jobs(SM90, load_manifests(), dbs)
    assert missing_kernels(SM90, _rows(jobs), fdb, perf) == []
    assert len(list(required_kernels(SM90, fdb, perf))) > 1000


def test_specialising_the_manifests_alone_leaves_records_without_their_kernels() -> None:
    # What the build did before the database problems joined it: the batch-32 bench records
    # name tuned parameter sets whose binaries nothing else puts in the kdb.
    dbs, fdb, perf = _sm9084()
    jobs = set(all_dynamic_jobs(SM90))
    for p in load_manifests():
        for s in specialisations(p, SM90, dbs):
            jobs.add(s.solver.compile_job(p, s.params, SM90, specialised=True))
    missing = missing_kernels(SM90, _rows(jobs), fdb, perf)
    assert missing and all(m.params for m in missing)
    keys = {m.key for m in missing}
    assert all(k not in {p.key() for p in load_manifests()} for k in keys)


def test_package_refuses_databases_that_name_a_kernel_the_kdb_lacks(tmp_path: Path) -> None:
    kdb = make_kdb(tmp_path / "gfx906_60.kdb", "gfx906")
    fdb = tmp_path / "gfx906_60.HIP.fdb.txt"
    fdb.write_text("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F="
                   "ConvDirectFwd:0.25,0,miopenConvolutionFwdAlgoDirect\n")
    with pytest.raises(DbError, match="1 of the 1 kernels"):
        check_closed(GFX906, kdb, fdb, None)
    tf = TargetFiles(GFX906, {"gfx906_60.kdb": kdb, "gfx906_60.HIP.fdb.txt": fdb})
    with pytest.raises(DbError, match="not in the kdb"):
        package_targets([tf], tmp_path / "out", kind="wheel")
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_foreign_solver_names_are_not_kernels_of_this_package(tmp_path: Path) -> None:
    kdb = make_kdb(tmp_path / "gfx906_60.kdb", "gfx906")
    fdb = tmp_path / "gfx906_60.HIP.fdb.txt"
    fdb.write_text("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F="
                   "ConvDirectNaiveConvFwd:0.25,0,miopenConvolutionFwdAlgoDirect\n")
    assert check_closed(GFX906, kdb, fdb, None) == 0

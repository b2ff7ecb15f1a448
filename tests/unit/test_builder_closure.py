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
from miopenkernels.solvers import all_dynamic_jobs, with_companions
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
    # Specialised binaries serve only the solution each manifest problem runs first; the
    # records' other solutions and the batch-32 bench records' tuned sets need the dynamic
    # binaries the ranking jobs add.
    dbs, fdb, perf = _sm9084()
    jobs = set(all_dynamic_jobs(SM90))
    for p in load_manifests():
        for s in specialisations(p, SM90, dbs):
            jobs.add(s.solver.compile_job(p, s.params, SM90, specialised=True))
    # With their companions (the reduce kernel of a split), as every build adds them.
    missing = missing_kernels(SM90, _rows(with_companions(jobs)), fdb, perf)
    assert missing and all(m.params for m in missing)
    manifest_keys = {p.key() for p in load_manifests()}
    assert {m.key for m in missing} - manifest_keys  # records no manifest holds
    assert {m.key for m in missing} & manifest_keys  # second solutions of manifest records


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


def test_a_split_k_record_needs_its_reduce_kernel_too(tmp_path: Path) -> None:
    """A PerfDb naming a SPLIT_K > 1 backward-weights set: the package must hold the main
    object and the reduce kernel that finishes it; the build's jobs include both."""
    from miopenkernels.builder.closure import Requirement
    from miopenkernels.db.finddb import FindDbFile, FindDbRecord, Solution
    from miopenkernels.db.perfdb import PerfDbFile
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers import companion_jobs, get_solver

    pytest.importorskip("miopenkernels.kernels.conv_triton_spec")
    target = Target("sm90", 132)
    problem = ConvProblem(n=32, c=512, k=512, in_spatial=(7, 7), filter=(3, 3), pad=(1, 1),
                          direction="W", in_type="FP16")
    solver = get_solver("ConvTritonImplicitGemmWrw")
    params = next(p for p in solver.param_space(problem, target) if p[4] == 8)
    folder = tmp_path / target.basename
    folder.mkdir()
    fdb, pdb = folder / "sm9084.HIP.fdb.txt", folder / "sm9084.db.txt"
    find = FindDbFile()
    find.put(FindDbRecord(problem.key(), (Solution(solver.name, 0.1, 0,
                                                   "miopenConvolutionBwdWeightsAlgoImplicitGEMM"),)))
    find.write(fdb)
    perf = PerfDbFile()
    perf.put(problem, solver.name, solver.params_to_string(params))
    perf.write(pdb)
    [req] = [r for r in required_kernels(target, fdb, pdb) if r.solver == solver.name]
    assert isinstance(req, Requirement) and req.companions == companion_jobs(req.dynamic)
    # Both reduce objects: the usual one and the wide one (small outputs split in many parts).
    assert [j.kernel_name for j in req.companions] == ["conv2d_bwd_weight_reduce"] * 2
    assert [("-DPARTS=32" in j.options) for j in req.companions] == [False, True]
    main_only = {(req.dynamic.kdb_name, req.dynamic.kdb_args)}
    both = main_only | {(j.kdb_name, j.kdb_args) for j in req.companions}
    assert not req.met(main_only) and req.met(both)
    jobs = target_jobs(target, [problem], TargetDbs(target, tmp_path))
    assert req.dynamic in jobs and set(req.companions) <= set(jobs)

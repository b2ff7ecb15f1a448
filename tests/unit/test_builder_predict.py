"""Predicted databases: FindDb and PerfDb from the miss ranking for targets nobody measured."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from miopenkernels.builder.closure import missing_kernels
from miopenkernels.builder.jobs import TargetDbs, target_jobs
from miopenkernels.builder.manifest import load_manifest
from miopenkernels.builder.package.manifest import build_manifest, collect_build_files
from miopenkernels.builder.predict import predict_dbs
from miopenkernels.db.finddb import FindDbFile
from miopenkernels.db.perfdb import PerfDbFile
from miopenkernels.errors import DbError
from miopenkernels.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from package_inputs import make_kdb  # noqa: E402

GFX90A = Target("gfx90a", 110)


def test_predicted_databases_rank_only_shipped_kernels_and_say_so(tmp_path: Path) -> None:
    problems = [p for p in load_manifest("resnet50") if p.direction == "F"][:12]
    jobs = target_jobs(GFX90A, problems, TargetDbs(GFX90A))
    folder = predict_dbs(GFX90A, problems, tmp_path, jobs)
    base = GFX90A.basename
    find = FindDbFile.read(folder / f"{base}.HIP.fdb.txt")
    perf = PerfDbFile.read(folder / f"{base}.db.txt")
    assert len(find) == len({p.key() for p in problems})
    for record in find:
        times = [s.time for s in record.solutions]
        assert times == sorted(times) and all(t > 0 for t in times)
    assert len(perf) > 0
    # Every kernel the predicted databases name is one the build ships: the package is closed.
    rows = {(j.kdb_name, j.kdb_args) for j in jobs}
    assert missing_kernels(GFX90A, rows, folder / f"{base}.HIP.fdb.txt",
                           folder / f"{base}.db.txt") == []
    provenance = json.loads((folder / "provenance.json").read_text())
    assert provenance["predicted"] is True and provenance["target"] == "gfx90a-110"
    assert provenance["model"]["fitted_on"] == ["sm90-132"]


def test_measured_targets_get_no_predicted_databases(tmp_path: Path) -> None:
    with pytest.raises(DbError, match="measured"):
        predict_dbs(Target("sm90", 132), load_manifest("resnet50")[:2], tmp_path, [])


def test_package_manifest_marks_predicted_databases(tmp_path: Path) -> None:
    build = tmp_path / "build"
    make_kdb(build / f"{GFX90A.basename}.kdb", "gfx90a")
    problems = [p for p in load_manifest("vgg16") if p.direction == "F"][:3]
    predict_dbs(GFX90A, problems, build, [])
    tf = collect_build_files(GFX90A, build, tmp_path / "nodbs")
    assert f"{GFX90A.basename}.HIP.fdb.txt" in tf.files
    m = build_manifest(tf, "0.1.0")
    assert m["databases"]["predicted"] is True and m["databases"]["measured"] is False
    assert m["databases"]["provenance"]["predicted"] is True

"""The build driver on the fixture kernels and solvers: cache use, damaged cache entries,
clashing kdb rows and missing sources, each reported as the job's failure."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from miopenkernels.builder.build import JobFailure, build
from miopenkernels.builder.cache import CacheKeys, ObjectCache
from miopenkernels.builder.manifest import load_manifest
from miopenkernels.db.kerneldb import KernelDb
from miopenkernels.solvers.base import CompileJob
from miopenkernels.target import Target

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "builder"
sys.path.insert(0, str(FIXTURES))
from fixture_solvers import FIXTURE_SOLVERS  # noqa: E402

GFX1100 = Target("gfx1100", 48)

pytestmark = pytest.mark.skipif(not shutil.which("clang-19"), reason="needs clang-19")


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    import miopenkernels.builder.jobs as jobs_mod
    import miopenkernels.solvers as registry

    monkeypatch.setattr(registry, "SOLVERS", list(FIXTURE_SOLVERS))
    monkeypatch.setattr(jobs_mod, "primitive_jobs", lambda target: [])
    return {"problems": load_manifest(FIXTURES / "manifest.txt"), "out": tmp_path / "out",
            "cache": tmp_path / "cache", "kernels": FIXTURES / "kernels"}


def run(env: dict, failures: list[JobFailure] | None = None, **kw: object):  # noqa: ANN201
    sink = failures if failures is not None else []
    return build([GFX1100], env["problems"], env["out"], workers=1, cache_dir=env["cache"],
                 kernels=env["kernels"], on_failure=sink.append, **kw)  # type: ignore[arg-type]


def test_build_then_rebuild_from_cache(env: dict) -> None:
    first = run(env)
    assert first.ok and first.compiled == first.objects == 4
    with KernelDb(env["out"] / "gfx1100_48.kdb") as db:
        assert len(db) == 4
    again = run(env)
    assert again.ok and again.compiled == 0 and again.cached == 4
    assert again.targets[0].cached == 4 and again.targets[0].compiled == 0
    # Where the cold build's time went, per compiler and family; the rebuild compiled none.
    families = first.to_dict()["family_seconds"]
    assert sum(f["objects"] for f in families.values()) == 4
    assert all(name.startswith("clang-19 ") for name in families), families
    assert abs(sum(f["seconds"] for f in families.values()) - first.compile_seconds) < 0.05
    assert again.to_dict()["family_seconds"] == {}


def test_a_rebuild_with_nothing_changed_leaves_the_kdb_alone(env: dict) -> None:
    import json

    first = run(env, manifests=["fixture"])
    kdb = env["out"] / "gfx1100_48.kdb"
    record = env["out"] / "gfx1100_48.build.json"
    stamps = (kdb.stat().st_mtime_ns, record.stat().st_mtime_ns)
    assert not first.targets[0].kdb_unchanged
    assert json.loads(record.read_text())["manifests"] == ["fixture"]
    again = run(env, manifests=["fixture"])
    assert again.targets[0].kdb_unchanged and again.targets[0].kdb_bytes == kdb.stat().st_size
    assert (kdb.stat().st_mtime_ns, record.stat().st_mtime_ns) == stamps
    # A kdb that holds something else is rewritten.
    with KernelDb(kdb, readonly=False) as db:
        db.store("extra.hip.o", "-mcpu=gfx1100", b"\x7fELF")
    third = run(env, manifests=["fixture"])
    assert not third.targets[0].kdb_unchanged
    with KernelDb(kdb) as db:
        assert len(db) == 4


def test_damaged_cache_entry_fails_the_job_and_is_evicted(env: dict) -> None:
    assert run(env).ok
    (env["out"] / "gfx1100_48.kdb").unlink()
    cache = ObjectCache(env["cache"])
    victim = next(iter(sorted(cache.root.rglob("*.co"))))
    victim.write_bytes(b"not an ELF at all")
    failures: list[JobFailure] = []
    result = run(env, failures)
    assert not result.ok and len(failures) == 1
    assert "not an ELF" in failures[0].message and "removed from the cache" in failures[0].message
    assert result.targets[0].failed == 1 and result.targets[0].kdb is None
    assert not (env["out"] / "gfx1100_48.kdb").exists()
    assert not victim.exists()
    healed = run(env)
    assert healed.ok and healed.compiled == 1


def test_two_symbols_for_one_kdb_row_is_a_failure(env: dict) -> None:
    jobs = [CompileJob("fx_scale.hip", ("-DFX_SCALE=2.0f",), "fx_scale", GFX1100),
            CompileJob("fx_scale.hip", ("-DFX_SCALE=2.0f",), "fx_other", GFX1100)]
    failures: list[JobFailure] = []
    result = run(env, failures, jobs={GFX1100: jobs})
    assert [f.job.kernel_name for f in failures] == ["fx_other"]
    assert "already holds fx_scale" in failures[0].message
    assert result.targets[0].kdb is None


def test_missing_source_fails_only_its_job(env: dict) -> None:
    jobs = [CompileJob("fx_scale.hip", ("-DFX_SCALE=2.0f",), "fx_scale", GFX1100),
            CompileJob("fx_gone.hip", (), "fx_gone", GFX1100)]
    failures: list[JobFailure] = []
    result = run(env, failures, jobs={GFX1100: jobs})
    assert [f.job.kernel_file for f in failures] == ["fx_gone.hip"]
    assert "fx_gone.hip not found" in failures[0].message
    assert result.compiled == 1
    assert CacheKeys(env["kernels"]).key(jobs[0]) in ObjectCache(env["cache"])

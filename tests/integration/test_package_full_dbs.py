"""`package --from-dir` on AMD's full databases and NVIDIA's measured ones: the wheel and the
conda package install into fresh environments, and what they install reads back byte for byte
and answers lookups. SQLite files are packaged through SQLite (a user cache's WAL records
included), so they read back record for record rather than byte for byte."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from miopenkernels.builder.package import package_from_dir
from miopenkernels.db import FindDb, FindDbFile
from miopenkernels.db.perfdb import PerfDb, PerfDbFile
from miopenkernels.install.manifest import sha256_file
from miopenkernels.install.verify import verify_prefix
from miopenkernels.target import Target
from testdata import FULL_FINDDB, FULL_PERFDB, decompress_full

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from package_inputs import make_kdb  # noqa: E402

rattler = pytest.importorskip("rattler")
pytestmark = pytest.mark.integration
UV = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Target]]:
    root = tmp_path_factory.mktemp("from-dir")
    amd = root / "rocm" / "share" / "miopen" / "db"  # as a ROCm install lays it out
    amd.mkdir(parents=True)
    decompress_full(FULL_FINDDB, amd)
    make_kdb(amd / "gfx90a.kdb", "gfx90a")  # AMD's per-arch kdb name
    perf_only = root / "perf-only#1"  # a '#' in the folder name must not matter
    perf_only.mkdir()
    decompress_full(FULL_PERFDB, perf_only)
    nvidia = root / "sm9084"
    shutil.copytree(REPO / "dbs" / "sm9084", nvidia)
    make_kdb(nvidia / "sm9084.kdb", "sm90")
    return {"amd": (amd, Target("gfx90a", 104)), "perf": (perf_only, Target("gfx906", 60)),
            "nvidia": (nvidia, Target("sm90", 132))}


def _same_sqlite(a: Path, b: Path) -> bool:
    """Whether two SQLite files hold the same schema and rows (SQLite's own dump of each)."""
    import sqlite3
    from urllib.parse import quote

    def dump(path: Path) -> list[str]:
        con = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
        try:
            return list(con.iterdump())
        finally:
            con.close()

    return dump(a) == dump(b)


def _conda_install(channel: Path, spec: str, prefix: Path) -> None:
    async def run() -> None:
        records = await rattler.solve([rattler.Channel(channel.as_uri())], [spec],
                                      platforms=["noarch"])
        await rattler.install(records, target_prefix=prefix, cache_dir=prefix.parent / "pkgs",
                              show_progress=False)

    asyncio.run(run())


@pytest.mark.parametrize("which", ["amd", "perf", "nvidia"])
def test_from_dir_packages_install_and_read_back(folders, tmp_path: Path, which: str) -> None:
    folder, target = folders[which]
    out = tmp_path / "dist"
    (result,) = package_from_dir(folder, target, out, "both", "1.0.0")
    assert result.wheel is not None and result.conda is not None
    venv = tmp_path / "venv"
    subprocess.run([UV, "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    subprocess.run([UV, "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
                    "--no-index", "--find-links", str(result.wheel.parent),
                    target.package], check=True)
    conda = tmp_path / "conda-env"
    _conda_install(out / "channel", target.package, conda)
    base = target.basename
    for prefix in (venv, conda):
        manifest = json.loads((prefix / f"share/miopenkernels/{base}.manifest.json").read_text())
        for rel, info in manifest["files"].items():
            assert sha256_file(prefix / rel) == info["sha256"]
        [check] = verify_prefix(prefix)
        assert check.ok and check.contents == manifest["contents"]
        db = prefix / "share" / "miopen" / "db"
        if which == "amd":
            assert manifest["contents"] == "kernels+databases"
            assert (db / f"{base}.HIP.fdb.txt").read_bytes() == \
                (folder / FULL_FINDDB).read_bytes()
            assert _same_sqlite(db / f"{base}.kdb", folder / "gfx90a.kdb")
            assert len(manifest["problems"]) == 193_590
            key = "1-1-1-4x4-512-1-1-128-0x0-1x1-1x1-0-NCHW-FP32-B"
            finddb = FindDb(db / f"{base}.HIP.fdb.txt", tmp_path / "user" / "u.ufdb.txt")
            record = finddb.lookup(key)
            assert record is not None and record.solutions
        elif which == "perf":
            assert manifest["contents"] == "databases-only" and manifest["kernels"] == []
            assert _same_sqlite(db / f"{base}.db", folder / FULL_PERFDB)
            first = next(iter(PerfDbFile.read(db / f"{base}.db").records.items()))
            perfdb = PerfDb(db / f"{base}.db", tmp_path / "user" / f"{base}_1.1.0.udb")
            assert perfdb.load(first[0]) == first[1]
        else:
            assert manifest["contents"] == "kernels+databases"
            for name in (f"{base}.HIP.fdb.txt", f"{base}.db.txt"):
                assert (db / name).read_bytes() == (folder / name).read_bytes()
            some = next(iter(FindDbFile.read(folder / f"{base}.HIP.fdb.txt")))
            assert FindDb(db / f"{base}.HIP.fdb.txt").lookup(some.key) == some

"""Data wheels built by hatchling, served by a PEP 503 folder, installed by pip and uv, and the
installer's pip path (staging, sha256 checks, idempotence, refusal of altered packages)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from miopenkernels.builder.package import package_from_build
from miopenkernels.cli import app
from miopenkernels.install.manifest import sha256_file
from miopenkernels.target import Target
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from package_inputs import make_kdb, make_target_dir  # noqa: E402

pytestmark = pytest.mark.integration
UV = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
T906, T90A = Target("gfx906", 60), Target("gfx90a", 104)


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("wheels")
    build = root / "build"
    make_kdb(build / "gfx906_60.kdb", "gfx906")
    make_kdb(build / "gfx90a68.kdb", "gfx90a")
    dbs = root / "dbs"
    make_target_dir(dbs / "gfx906_60", "gfx906", 60, "gfx906_60", measured=True)
    (dbs / "gfx906_60" / "gfx906_60.kdb").unlink()
    package_from_build([T906, T90A], build, root / "out", kind="wheel", dbs_dir=dbs)
    return root / "out"


def _venv(path: Path) -> Path:
    subprocess.run([UV, "venv", "-q", "--python", sys.executable, str(path)], check=True)
    return path / "bin" / "python"


def test_wheel_is_a_standard_pure_data_wheel(dist):
    whl = dist / "miopenkernels_gfx906_60-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl) as zf:
        names = set(zf.namelist())
        wheel_meta = zf.read("miopenkernels_gfx906_60-0.1.0.dist-info/WHEEL").decode()
        eps = zf.read("miopenkernels_gfx906_60-0.1.0.dist-info/entry_points.txt").decode()
    data = "miopenkernels_gfx906_60-0.1.0.data/data/"
    assert {data + "share/miopen/db/gfx906_60.kdb", data + "share/miopen/db/gfx906_60.db",
            data + "share/miopen/db/gfx906_60.HIP.fdb.txt",
            data + "share/miopenkernels/gfx906_60.manifest.json"} <= names
    assert "Generator: hatchling" in wheel_meta and "Tag: py3-none-any" in wheel_meta
    assert "[miopenkernels.packages]" in eps and "miopenkernels_gfx906_60:manifest_path" in eps
    page = (dist / "simple/miopenkernels-gfx906-60/index.html").read_text()
    assert f"#sha256={sha256_file(whl)}" in page


def test_same_inputs_give_the_same_wheel_bytes(dist, tmp_path):
    build, dbs = dist.parent / "build", dist.parent / "dbs"
    one = package_from_build([T90A], build, tmp_path / "one", kind="wheel", dbs_dir=dbs)
    two = package_from_build([T90A], build, tmp_path / "two", kind="wheel", dbs_dir=dbs)
    assert sha256_file(one[0].wheel) == sha256_file(two[0].wheel)


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_pip_and_uv_install_from_the_simple_index_and_find_it_by_entry_point(
        dist, tmp_path, installer):
    py = _venv(tmp_path / "venv")
    url = (dist / "simple").as_uri()
    if installer == "pip":
        cmd = [sys.executable, "-m", "pip", "--python", str(py), "install", "-q",
               "--disable-pip-version-check", "--index-url", url, "miopenkernels-gfx906-60"]
    else:
        cmd = [UV, "pip", "install", "-q", "--python", str(py), "--index-url", url,
               "miopenkernels-gfx906-60"]
    subprocess.run(cmd, check=True, env={**os.environ, "PIP_NO_CACHE_DIR": "1"})
    db = tmp_path / "venv" / "share" / "miopen" / "db"
    assert sorted(p.name for p in db.iterdir()) == [
        "gfx906_60.HIP.fdb.txt", "gfx906_60.db", "gfx906_60.kdb"]
    probe = ("from importlib.metadata import entry_points\n"
             "import json\n"
             "eps = entry_points(group='miopenkernels.packages')\n"
             "print(json.dumps({ep.name: str(ep.load()()) for ep in eps}))\n")
    out = subprocess.run([str(py), "-c", probe], check=True, capture_output=True, text=True)
    found = json.loads(out.stdout)
    manifest = Path(found["gfx906-60"])
    assert manifest == (tmp_path / "venv/share/miopenkernels/gfx906_60.manifest.json").resolve()
    data = json.loads(manifest.read_text())
    for rel, info in data["files"].items():
        assert sha256_file(tmp_path / "venv" / rel) == info["sha256"]


def test_installer_pip_path_is_verified_and_idempotent(dist, tmp_path, monkeypatch):
    monkeypatch.setenv("MIOPEN_DEVICE_ARCH", "gfx906")
    monkeypatch.setenv("MIOPEN_DEVICE_CU", "60")
    prefix = tmp_path / "prefix"
    runner = CliRunner()
    args = ["install", "--index-url", str(dist / "simple"), "--prefix", str(prefix), "--json"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)
    assert report["method"] == "pip" and report["packages"][0]["status"] == "installed"
    assert "share/miopen/db/gfx906_60.kdb" in report["packages"][0]["files"]
    snapshot = {p: p.stat().st_mtime_ns for p in prefix.rglob("*") if p.is_file()}
    assert not [p for p in prefix.iterdir() if p.name.startswith(".miopenkernels-stage")]
    second = runner.invoke(app, args)
    assert second.exit_code == 0
    assert json.loads(second.stdout)["packages"][0]["status"] == "already installed"
    assert {p: p.stat().st_mtime_ns for p in prefix.rglob("*") if p.is_file()} == snapshot
    check = runner.invoke(app, ["verify", "--prefix", str(prefix), "--json"])
    assert check.exit_code == 0 and json.loads(check.stdout)["ok"]
    # install and verify count the same files: those the package's manifest lists.
    assert json.loads(check.stdout)["packages"][0]["files"] == len(report["packages"][0]["files"])
    # A damaged install is seen by verify and repaired by --force.
    (prefix / "share/miopen/db/gfx906_60.kdb").write_bytes(b"0" * 4096)
    assert runner.invoke(app, ["verify", "--prefix", str(prefix)]).exit_code == 12
    fixed = runner.invoke(app, args)  # not the same any more: reinstalled
    assert json.loads(fixed.stdout)["packages"][0]["status"] == "installed"
    assert runner.invoke(app, ["verify", "--prefix", str(prefix)]).exit_code == 0
    dist_infos = list(prefix.glob("lib/python3*/site-packages/*.dist-info"))
    assert [p.name for p in dist_infos] == ["miopenkernels_gfx906_60-0.1.0.dist-info"]


def test_find_links_folder_works_like_an_index(dist, tmp_path, monkeypatch):
    monkeypatch.setenv("MIOPEN_DEVICE_ARCH", "gfx90a")
    monkeypatch.setenv("MIOPEN_DEVICE_CU", "104")
    r = CliRunner().invoke(app, ["install", "--find-links", str(dist), "--prefix",
                                 str(tmp_path / "p"), "--json"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "p/share/miopen/db/gfx90a68.kdb").is_file()


def _tampered_index(dist: Path, tmp_path: Path, fix_index_hash: bool) -> Path:
    simple = tmp_path / "simple"
    shutil.copytree(dist / "simple", simple)
    whl = simple / "miopenkernels-gfx906-60" / "miopenkernels_gfx906_60-0.1.0-py3-none-any.whl"
    old_hash = sha256_file(whl)
    with zipfile.ZipFile(whl) as zf:
        items = [(i, zf.read(i)) for i in zf.infolist()]
    with zipfile.ZipFile(whl, "w") as zf:
        for info, data in items:
            if info.filename.endswith("share/miopen/db/gfx906_60.kdb"):
                data = data[:-16] + b"\x00" * 16
            zf.writestr(info, data)
    if fix_index_hash:  # a consistent index: only the manifest can tell
        page = whl.parent / "index.html"
        page.write_text(page.read_text().replace(old_hash, sha256_file(whl)))
    return simple


@pytest.mark.parametrize("fix_index_hash", [False, True])
def test_an_altered_package_is_refused_and_nothing_is_installed(
        dist, tmp_path, monkeypatch, fix_index_hash):
    monkeypatch.setenv("MIOPEN_DEVICE_ARCH", "gfx906")
    monkeypatch.setenv("MIOPEN_DEVICE_CU", "60")
    simple = _tampered_index(dist, tmp_path, fix_index_hash)
    prefix = tmp_path / "prefix"
    r = CliRunner().invoke(app, ["install", "--index-url", str(simple), "--prefix", str(prefix)])
    assert r.exit_code == 12, r.output
    assert r.output.startswith("error: ") and "sha256" in r.output
    assert [p for p in prefix.rglob("*") if p.is_file()] == []


def test_package_command_from_build_makes_both_indexes(tmp_path):
    build = tmp_path / "build"
    make_kdb(build / "gfx906_60.kdb", "gfx906")
    r = CliRunner().invoke(app, ["package", "--from-build", str(build), "--out",
                                 str(tmp_path / "out"), "--kind", "wheel", "--json"])
    assert r.exit_code == 0, r.output
    [pkg] = json.loads(r.stdout)["packages"]
    assert pkg["target"] == "gfx906-60" and pkg["conda"] is None
    assert (tmp_path / "out/simple/miopenkernels-gfx906-60/index.html").is_file()


def test_a_pre_release_version_builds_and_the_installer_orders_it_below_the_release(dist,
                                                                                    tmp_path):
    """`0.2.0-rc1` is spelled `0.2.0rc1` in the wheel's name: the packager takes the path the
    build returns instead of guessing it, and the index lists rc1 < rc2 < final."""
    from miopenkernels.install.choose import choose_packages
    from miopenkernels.install.sources import Source, list_available

    build, dbs = dist.parent / "build", dist.parent / "dbs"
    out = tmp_path / "out"
    for version in ("0.2.0-rc2", "0.2.0", "0.2.0-rc1"):
        [r] = package_from_build([T90A], build, out, kind="wheel", version=version,
                                 dbs_dir=dbs)
        assert r.wheel is not None and r.wheel.is_file()
    assert r.wheel.name == "miopenkernels_gfx90a_104-0.2.0rc1-py3-none-any.whl"
    manifest = json.loads(zipfile.ZipFile(r.wheel).read(
        "miopenkernels_gfx90a_104-0.2.0rc1.data/data/share/miopenkernels/gfx90a68.manifest.json"))
    assert manifest["version"] == "0.2.0rc1"
    found = list_available(Source("find-links", str(out)))
    assert [a.version for a in found] == ["0.2.0rc1", "0.2.0rc2", "0.2.0"]
    [c] = choose_packages({T90A: []}, found[:2])
    assert c.available.version == "0.2.0rc2"


def test_a_failing_wheel_build_is_a_package_build_error_with_the_backends_words(
        dist, tmp_path, monkeypatch):
    from miopenkernels.builder.package import wheel as wheel_mod
    from miopenkernels.errors import PackageBuildError

    broken = wheel_mod._PYPROJECT.replace('license = "MIT"', 'license = "NOWHERE-1.0"')
    monkeypatch.setattr(wheel_mod, "_PYPROJECT", broken)
    build, dbs = dist.parent / "build", dist.parent / "dbs"
    with pytest.raises(PackageBuildError) as exc:
        package_from_build([T90A], build, tmp_path / "out", kind="wheel", dbs_dir=dbs)
    assert "building the wheel of miopenkernels-gfx90a-104 failed" in str(exc.value)
    assert "Unknown license" in str(exc.value) and exc.value.exit_code == 15

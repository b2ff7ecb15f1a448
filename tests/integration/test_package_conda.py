"""Conda packages built by rattler-build, indexed and installed by py-rattler; the selector
package solved with explicit virtual packages; the two recipe formats kept in sync."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from miopenkernels.builder.package import package_from_build, recipes
from miopenkernels.cli import app
from miopenkernels.install.manifest import sha256_file
from miopenkernels.target import Target
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from package_inputs import make_kdb, make_target_dir  # noqa: E402

rattler = pytest.importorskip("rattler")
pytestmark = pytest.mark.integration
T906, T90A, T90A2 = Target("gfx906", 60), Target("gfx90a", 104), Target("gfx90a", 110)


@pytest.fixture(scope="module")
def channel(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("conda")
    build = root / "build"
    for t in (T906, T90A, T90A2):
        make_kdb(build / f"{t.basename}.kdb", t.arch, seed=t.basename)
    dbs = root / "dbs"
    make_target_dir(dbs / "gfx906_60", "gfx906", 60, "gfx906_60", measured=True)
    (dbs / "gfx906_60" / "gfx906_60.kdb").unlink()
    package_from_build([T906, T90A, T90A2], build, root / "out", kind="conda", dbs_dir=dbs)
    return root / "out" / "channel"


def _solve_install(channel: Path, specs: list[str], prefix: Path,
                   virtual: list[tuple[str, str]] | None = None) -> list[str]:
    from rattler import BuildString, GenericVirtualPackage, PackageName, Version

    vps = [GenericVirtualPackage(PackageName(n), Version("1"), BuildString(b))
           for n, b in (virtual or [])]

    async def run() -> list[str]:
        records = await rattler.solve([rattler.Channel(channel.as_uri())], specs,
                                      platforms=["noarch"], virtual_packages=vps)
        await rattler.install(records, target_prefix=prefix, cache_dir=prefix.parent / "pkgs",
                              show_progress=False)
        return sorted(f"{r.name.normalized}={r.build}" for r in records)

    return asyncio.run(run())


def test_channel_has_one_noarch_package_per_target_and_selector_builds(channel):
    repodata = json.loads((channel / "noarch" / "repodata.json").read_text())
    recs = {r["name"] + "|" + r["build"]: r for r in repodata["packages.conda"].values()}
    assert set(recs) == {
        "miopenkernels-gfx906-60|gfx906_60_0", "miopenkernels-gfx90a-104|gfx90a_104_0",
        "miopenkernels-gfx90a-110|gfx90a_110_0", "miopenkernels-gpu|gfx906_0",
        "miopenkernels-gpu|gfx90a_0"}
    assert all(r["noarch"] == "generic" and r["version"] == "0.1.0" for r in recs.values())
    assert recs["miopenkernels-gfx906-60|gfx906_60_0"]["depends"] == []
    assert sorted(recs["miopenkernels-gpu|gfx90a_0"]["depends"]) == [
        "__amdgpu_arch * gfx90a", "miopenkernels-gfx90a-104 ==0.1.0",
        "miopenkernels-gfx90a-110 ==0.1.0"]


def test_conda_package_installs_the_manifest_files_into_a_fresh_prefix(channel, tmp_path):
    prefix = tmp_path / "env"
    assert _solve_install(channel, ["miopenkernels-gfx906-60"], prefix) == [
        "miopenkernels-gfx906-60=gfx906_60_0"]
    manifest = json.loads((prefix / "share/miopenkernels/gfx906_60.manifest.json").read_text())
    assert manifest["databases"]["measured"] is True
    assert sorted(manifest["files"]) == ["share/miopen/db/gfx906_60.HIP.fdb.txt",
                                         "share/miopen/db/gfx906_60.db",
                                         "share/miopen/db/gfx906_60.kdb"]
    for rel, info in manifest["files"].items():
        assert sha256_file(prefix / rel) == info["sha256"]
    meta = json.loads(next((prefix / "conda-meta").glob("miopenkernels-gfx906-60-*.json"))
                      .read_text())
    assert sorted(meta["files"]) == sorted([*manifest["files"],
                                            "share/miopenkernels/gfx906_60.manifest.json"])


@pytest.mark.parametrize("virtual,expected", [
    ([("__amdgpu_arch", "gfx90a")],
     ["miopenkernels-gfx90a-104=gfx90a_104_0", "miopenkernels-gfx90a-110=gfx90a_110_0",
      "miopenkernels-gpu=gfx90a_0"]),
    ([("__amdgpu_arch", "gfx906")],
     ["miopenkernels-gfx906-60=gfx906_60_0", "miopenkernels-gpu=gfx906_0"]),
])
def test_the_solver_picks_the_selector_build_of_the_gpu_arch(channel, tmp_path, virtual,
                                                            expected):
    assert _solve_install(channel, ["miopenkernels-gpu"], tmp_path / "env", virtual) == expected
    arch = virtual[0][1]
    dbs = sorted(p.name for p in (tmp_path / "env/share/miopen/db").glob("*.kdb"))
    assert dbs and all(name.startswith(arch) for name in dbs)


def test_the_selector_is_unsolvable_without_a_gpu_virtual_package(channel, tmp_path):
    with pytest.raises(Exception, match=r"__amdgpu_arch \* gfx90a, for which no candidates"):
        _solve_install(channel, ["miopenkernels-gpu"], tmp_path / "env",
                       [("__cuda_arch", "sm90")])


def test_installer_conda_path_into_a_conda_prefix(channel, tmp_path, monkeypatch):
    monkeypatch.delenv("MIOPEN_DEVICE_ARCH", raising=False)
    monkeypatch.delenv("MIOPEN_DEVICE_CU", raising=False)
    prefix = tmp_path / "env"
    (prefix / "conda-meta").mkdir(parents=True)
    (prefix / "conda-meta" / "history").write_text("# user history\n")
    rocminfo = Path(__file__).resolve().parents[1] / "fixtures" / "rocminfo_two_gpus.txt"
    args = ["install", "--channel", str(channel), "--index-url", str(tmp_path / "unused"),
            "--prefix", str(prefix), "--rocminfo-file", str(rocminfo), "--json"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["method"] == "conda"  # a conda prefix: conda, not pip
    by_pkg = {p["package"]: p for p in report["packages"]}
    assert set(by_pkg) == {"miopenkernels-gfx906-60", "miopenkernels-gfx90a-104"}
    assert len(by_pkg["miopenkernels-gfx90a-104"]["devices"]) == 2  # two MI210, one package
    assert (prefix / "conda-meta" / "history").read_text() == "# user history\n"
    records = sorted(p.name for p in (prefix / "conda-meta").glob("*.json"))
    assert records == ["miopenkernels-gfx906-60-0.1.0-gfx906_60_0.json",
                       "miopenkernels-gfx90a-104-0.1.0-gfx90a_104_0.json"]
    again = CliRunner().invoke(app, args)
    assert {p["status"] for p in json.loads(again.stdout)["packages"]} == {"already installed"}
    assert CliRunner().invoke(app, ["verify", "--prefix", str(prefix)]).exit_code == 0


def test_v1_recipe_and_conda_build_recipe_render_the_same_packages(tmp_path):
    env = {"MIOPENKERNELS_STAGE": "/stage", "MIOPENKERNELS_VERSION": "2.5.0"}
    root = recipes.RECIPES_DIR
    v1 = recipes.render_v1(root / "recipe.yaml", root / "variants.yaml", env)
    cb = recipes.render_meta_yaml(root / "conda-build/meta.yaml",
                                  root / "conda-build/conda_build_config.yaml", env)
    assert len(v1) == len(cb) >= 10
    assert v1 == cb
    names = {d["name"] for d in v1}
    assert "miopenkernels-gfx90a-110" in names and "miopenkernels-sm90-132" in names
    gfx90a = next(d for d in v1 if d["name"] == "miopenkernels-gfx90a-110")
    assert gfx90a["version"] == "2.5.0" and gfx90a["noarch"] == "generic"
    # The manifest is always there; a databases-only package has no kdb.
    assert gfx90a["files"] == ["share/miopenkernels/gfx90a6e.manifest.json"]


def test_package_from_an_existing_miopen_db_dir(tmp_path, monkeypatch):
    rocm = tmp_path / "rocm_db"
    make_target_dir(rocm, "gfx90a", 104, "gfx90a68", measured=True)
    make_kdb(rocm / "gfx906_60.kdb", "gfx906")  # other basenames in the folder are left alone
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["package", "--from-dir", str(rocm), "--target", "gfx90a-104",
                                 "--out", str(out), "--kind", "both", "--json"])
    assert r.exit_code == 0, r.output
    [pkg] = json.loads(r.stdout)["packages"]
    assert Path(pkg["wheel"]).is_file() and Path(pkg["conda"]).is_file()
    manifest = json.loads((out / "stage/gfx90a-104/share/miopenkernels/gfx90a68.manifest.json")
                          .read_text())
    assert manifest["origin"] == "from-dir" and manifest["databases"]["measured"] is True
    refused = CliRunner().invoke(app, ["package", "--from-dir", str(rocm), "--target",
                                       "gfx942-304", "--out", str(tmp_path / "o2")])
    assert refused.exit_code == 4 and "basenames found" in refused.output
    assert not (tmp_path / "o2").exists()

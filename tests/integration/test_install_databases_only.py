"""A databases-only package and one with kernels for the same target, built by the project's
packager into one find-links folder and one conda channel: the listing tells them apart, the
installer takes the one with kernels and says why, conda's own solver agrees, and the one with
kernels replaces an installed databases-only package of the same version."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest
from miopenkernels.builder.package import package_from_dir
from miopenkernels.builder.package.index import add_to_channel
from miopenkernels.cli import app
from miopenkernels.install.sources import Source, list_available
from miopenkernels.target import Target
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from package_inputs import make_kdb  # noqa: E402

rattler = pytest.importorskip("rattler")
pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
TARGET = Target("sm90", 132)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("dbs-only")
    dbs_only = root / "dbs-only"
    shutil.copytree(REPO / "dbs" / "sm9084", dbs_only)
    kernels = root / "kernels"
    shutil.copytree(REPO / "dbs" / "sm9084", kernels)
    make_kdb(kernels / "sm9084.kdb", "sm90")
    (d,) = package_from_dir(dbs_only, TARGET, root / "out-dbs", "both", "1.0.0")
    (k,) = package_from_dir(kernels, TARGET, root / "out-kernels", "both", "1.0.0")
    assert d.wheel and d.conda and k.wheel and k.conda
    both = root / "both"
    both.mkdir()
    for wheel in (d.wheel, k.wheel):
        shutil.copy(wheel, both / wheel.name)
    add_to_channel([d.conda, k.conda], both / "channel")
    return {"dbs-wheels": d.wheel.parent, "dbs-channel": root / "out-dbs" / "channel",
            "wheels": both, "channel": both / "channel", "kernels-wheel": k.wheel,
            "dbs-wheel": d.wheel}


def test_the_listing_marks_the_databases_only_package(built: dict[str, Path]) -> None:
    assert built["dbs-wheel"].name == \
        "miopenkernels_sm90_132-1.0.0-0_databases_only-py3-none-any.whl"
    assert built["kernels-wheel"].name == "miopenkernels_sm90_132-1.0.0-py3-none-any.whl"
    wheels = list_available(Source("find-links", str(built["wheels"])))
    assert sorted((a.build, a.databases_only) for a in wheels) == [
        ("", False), ("0_databases_only", True)]
    repodata = json.loads((built["channel"] / "noarch" / "repodata.json").read_text())
    records = {r["build"]: r for r in repodata["packages.conda"].values()}
    assert set(records) == {"sm90_132_0", "sm90_132_databases_only_0"}
    assert records["sm90_132_databases_only_0"]["track_features"] == "miopenkernels-sm90-132-p-0"
    assert not records["sm90_132_0"].get("track_features")
    conda = list_available(Source("channel", str(built["channel"])))
    assert sorted((a.build, a.databases_only) for a in conda) == [
        ("sm90_132_0", False), ("sm90_132_databases_only_0", True)]


def test_conda_solvers_prefer_the_build_with_kernels_too(built: dict[str, Path]) -> None:
    async def solve() -> list[str]:
        records = await rattler.solve([rattler.Channel(built["channel"].as_uri())],
                                      [TARGET.package], platforms=["noarch"])
        return [str(r.build) for r in records]

    assert asyncio.run(solve()) == ["sm90_132_0"]


def _install(args: list[str], prefix: Path) -> dict:
    result = CliRunner().invoke(app, ["install", *args, "--targets", TARGET.name, "--prefix",
                                      str(prefix), "--json"])
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def _installed_contents(prefix: Path) -> str:
    manifest = json.loads((prefix / "share/miopenkernels/sm9084.manifest.json").read_text())
    return str(manifest["contents"])


@pytest.mark.parametrize("method", ["pip", "conda"])
def test_the_installer_takes_kernels_says_why_and_replaces_databases_only(
        built: dict[str, Path], tmp_path: Path, method: str) -> None:
    source = ["--find-links"] if method == "pip" else ["--channel"]
    only_dbs = built["dbs-wheels"] if method == "pip" else built["dbs-channel"]
    both = built["wheels"] if method == "pip" else built["channel"]
    prefix = tmp_path / "env"
    # Only a databases-only package offered: it is installed, and the report says what it lacks.
    first = _install([*source, str(only_dbs), f"--{method}"], prefix)
    [item] = first["packages"]
    assert item["contents"] == "databases-only" and item["status"] == "installed"
    assert "no package with kernels" in item["why"] and first["notes"] == [item["why"]]
    assert _installed_contents(prefix) == "databases-only"
    assert not (prefix / "share/miopen/db/sm9084.kdb").exists()
    # Both offered, same version: the one with kernels, which replaces the installed one.
    second = _install([*source, str(both), f"--{method}"], prefix)
    [item] = second["packages"]
    assert item["contents"] == "kernels" and item["status"] == "installed"
    assert "has kernels" in item["why"] and "databases-only" in item["why"]
    assert _installed_contents(prefix) == "kernels+databases"
    assert (prefix / "share/miopen/db/sm9084.kdb").is_file()
    if method == "conda":
        assert sorted(p.name for p in (prefix / "conda-meta").glob("*.json")) == [
            "miopenkernels-sm90-132-1.0.0-sm90_132_0.json"]
    else:
        assert [p.name for p in prefix.rglob("*.dist-info")] == [
            "miopenkernels_sm90_132-1.0.0.dist-info"]
    again = _install([*source, str(both), f"--{method}"], prefix)
    assert again["packages"][0]["status"] == "already installed"
    assert CliRunner().invoke(app, ["verify", "--prefix", str(prefix)]).exit_code == 0
    # The table says the contents, and the note says why, on stderr.
    table = CliRunner().invoke(app, ["install", *source, str(both), "--targets", TARGET.name,
                                     "--prefix", str(prefix), "--dry-run"])
    assert table.exit_code == 0 and "contents" in table.stdout and "kernels" in table.stdout
    assert "note: miopenkernels-sm90-132 1.0.0 has kernels" in table.stderr

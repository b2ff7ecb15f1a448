"""ci/rehearse.sh runs kernels.yml's chain on this machine: plan, build two targets (real
compilers, small manifest), merge recorded shards into the first, publish, dry-run release.
The published folder must be a working wheel index and conda channel."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from filelock import FileLock

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TARGETS = {"sm90-132": "sm9084", "gfx906-60": "gfx906_60"}  # the script's default pair
TUNED = "sm9084"  # the first target gets the recorded (H100) shards
UNTUNED = "gfx906_60"
SHARD_KEYS = [line.split("=", 1)[0]
              for line in (ROOT / "tests/fixtures/shards/rehearsal.HIP.fdb.txt").read_text()
              .splitlines() if line and not line.startswith("#")]


def _rehearse(out: Path) -> str:
    # The object cache is the user's, as for a person running the script: a cold one compiles
    # every kernel of both targets (about 110 objects), a warm one only what changed.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    result = subprocess.run(["bash", "ci/rehearse.sh", str(out)], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return result.stdout


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> tuple[Path, str]:
    """One rehearsal for all tests, also when pytest-xdist spreads them over workers."""
    if worker_id == "master":
        out = tmp_path_factory.mktemp("rehearsal")
        return out, _rehearse(out)
    shared = tmp_path_factory.getbasetemp().parent  # common to the workers of this session
    out, log = shared / "rehearsal", shared / "rehearsal.stdout"
    with FileLock(str(shared / "rehearsal.lock")):
        if not log.is_file():
            log.write_text(_rehearse(out))
    return out, log.read_text()


def test_the_plan_is_the_matrix_of_the_two_targets(rehearsal: tuple[Path, str]) -> None:
    out, _ = rehearsal
    matrix = json.loads((out / "matrix.json").read_text())
    assert [e["target"] for e in matrix["include"]] == list(TARGETS)
    assert [e["basename"] for e in matrix["include"]] == list(TARGETS.values())


def test_each_target_has_a_build_artefact_like_the_workflows(
        rehearsal: tuple[Path, str]) -> None:
    out, _ = rehearsal
    for name, base in TARGETS.items():
        pkg = out / "artifacts" / f"pkg-{base}"
        assert (pkg / "target").read_text().strip() == name
        assert (pkg / "build" / f"{base}.kdb").is_file()
        channel, wheel = sorted(p.name for p in (pkg / "dist").iterdir())
        assert channel == "channel" and wheel.endswith("-py3-none-any.whl")
        summary = json.loads((pkg / "build-summary.json").read_text())
        assert summary["failures"] == []
        assert [t["target"] for t in summary["targets"]] == [name]


def test_the_wheel_index_lists_one_installable_wheel_per_target(
        rehearsal: tuple[Path, str], tmp_path: Path) -> None:
    simple = rehearsal[0] / "published" / "simple"
    root_page = (simple / "index.html").read_text()
    for name in TARGETS:
        project = f"miopenkernels-{name}"
        assert f'href="{project}/"' in root_page
        assert len(list((simple / project).glob("*.whl"))) == 1
        # pip resolves it through the index, as a user's `--index-url` would.
        result = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--isolated", "--no-deps", "--no-cache-dir",
             "--index-url", simple.as_uri(), "--dest", str(tmp_path / name), project],
            capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        assert len(list((tmp_path / name).glob("*.whl"))) == 1


def _wheel_text(published: Path, name: str, suffix: str) -> str | None:
    (wheel,) = (published / "simple" / f"miopenkernels-{name}").glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        hits = [n for n in zf.namelist() if n.endswith(suffix)]
        return zf.read(hits[0]).decode() if hits else None


def test_the_tuned_target_ships_the_merged_databases(rehearsal: tuple[Path, str]) -> None:
    published = rehearsal[0] / "published"
    merged = (published / "dbs" / TUNED / f"{TUNED}.HIP.fdb.txt").read_text()
    assert all(key in merged for key in SHARD_KEYS)
    assert (published / "dbs" / TUNED / f"{TUNED}.db.txt").is_file()
    shipped = _wheel_text(published, "sm90-132", f"{TUNED}.HIP.fdb.txt")
    assert shipped is not None and all(key in shipped for key in SHARD_KEYS)
    assert not (published / "dbs" / UNTUNED).exists()


def test_the_untuned_target_is_published_as_built(rehearsal: tuple[Path, str]) -> None:
    out = rehearsal[0]
    (built,) = (out / "artifacts" / f"pkg-{UNTUNED}" / "dist").glob("*.whl")
    (published,) = (out / "published" / "simple" / "miopenkernels-gfx906-60").glob("*.whl")
    assert published.read_bytes() == built.read_bytes()


def test_the_conda_channel_is_indexed_and_solves_per_gpu_arch(
        rehearsal: tuple[Path, str]) -> None:
    channel = rehearsal[0] / "published" / "conda"
    repodata = json.loads((channel / "noarch" / "repodata.json").read_text())
    names = {r["name"] for r in repodata["packages.conda"].values()}
    assert names == {"miopenkernels-gpu", *(f"miopenkernels-{t}" for t in TARGETS)}

    from rattler import BuildString, Channel, GenericVirtualPackage, PackageName, Version, solve

    for arch, package in (("gfx906", "miopenkernels-gfx906-60"),
                          ("sm90", "miopenkernels-sm90-132")):
        vpkg = "__cuda_arch" if arch.startswith("sm") else "__amdgpu_arch"
        records = asyncio.run(solve(
            [Channel(channel.as_uri())], ["miopenkernels-gpu"], platforms=["noarch"],
            virtual_packages=[GenericVirtualPackage(PackageName(vpkg), Version("1"),
                                                    BuildString(arch))]))
        assert {r.name.normalized for r in records} == {"miopenkernels-gpu", package}


def test_sha256sums_cover_every_published_package(rehearsal: tuple[Path, str]) -> None:
    published = rehearsal[0] / "published"
    sums: dict[str, str] = {}
    for line in (published / "SHA256SUMS").read_text().splitlines():
        digest, rel = line.split(maxsplit=1)
        sums[rel] = digest
    packages = sorted(str(p.relative_to(published)) for p in published.rglob("*")
                      if p.suffix in (".whl", ".conda"))
    assert sorted(sums) == packages
    for rel, digest in sums.items():
        assert hashlib.sha256((published / rel).read_bytes()).hexdigest() == digest


def test_the_dry_run_release_lists_packages_and_both_indexes(
        rehearsal: tuple[Path, str]) -> None:
    stdout = rehearsal[1]
    assets = [line.split(": ", 1)[1] for line in stdout.splitlines()
              if line.startswith("asset: ")]
    assert "wheel-index-rehearsal.tar.gz" in assets
    assert "conda-channel-rehearsal.tar.gz" in assets
    assert "SHA256SUMS" in assets
    assert sum(a.endswith(".whl") for a in assets) == len(TARGETS)
    assert sum(a.endswith(".conda") for a in assets) == len(TARGETS) + 2  # + selector per arch
    assert "dry run: would attach" in stdout

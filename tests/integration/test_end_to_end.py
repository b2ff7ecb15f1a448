"""From manifest to a running handle: build two targets with the real builder, package both
kinds, index them, install into a fresh venv (pip, uv) and a fresh conda prefix (py-rattler),
then resolve every manifest problem to a kernel of the installed kdb with zero compilations."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from miopenkernels.driver import parse_driver_lines
from miopenkernels.install.manifest import sha256_file
from miopenkernels.target import Target

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "tests" / "fixtures" / "manifests" / "e2e_small.txt"
TARGETS = [Target("gfx906", 60), Target("sm90", 132)]
CLI = [sys.executable, "-c", "from miopenkernels.cli import main; main()"]
UV = shutil.which("uv") or str(Path(sys.executable).parent / "uv")


def _cli(*args: str, env: dict[str, str] | None = None, timeout: float = 400) -> str:
    r = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, **(env or {})})
    assert r.returncode == 0, f"{args[0]} exit {r.returncode}: {r.stderr[-3000:]}"
    return r.stdout


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("e2e")
    names = ",".join(t.name for t in TARGETS)
    # The build also compiles every kernel the shipped sm9084 databases name (a package is
    # closed): some 100 objects beyond the manifest's, minutes on a small shared machine.
    _cli("build", "--targets", names, "--manifest", str(MANIFEST), "--out", str(root / "build"),
         "--json", env={"MIOPENKERNELS_CACHE": str(root / "object-cache")}, timeout=1200)
    _cli("package", "--from-build", str(root / "build"), "--targets", names, "--manifest",
         str(MANIFEST), "--out", str(root / "out"), "--kind", "both", "--json")
    return root / "out"


def _resolve_all(db_dir: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every manifest problem, every ranked solution, on every target: kernels come from the
    installed kdb; a compile attempt fails the test."""
    from miopenkernels.handle import Handle

    monkeypatch.setenv("MIOPEN_SYSTEM_DB_PATH", str(db_dir))
    monkeypatch.setenv("MIOPEN_USER_DB_PATH", str(scratch / "user"))
    monkeypatch.setenv("MIOPEN_CUSTOM_CACHE_DIR", str(scratch / "cache"))
    for var in ("MIOPEN_DEVICE_ARCH", "MIOPEN_DEVICE_CU", "MIOPEN_FIND_MODE"):
        monkeypatch.delenv(var, raising=False)

    def no_compiler(job: object) -> bytes:
        raise AssertionError(f"the runtime compiled {job}: the package should have it")

    problems = parse_driver_lines(MANIFEST.read_text())
    assert len(problems) == 2
    for target in TARGETS:
        handle = Handle(target=target, compiler=no_compiler)
        assert handle.system_basename == target.basename
        loaded = 0
        for problem in problems:
            solutions = handle.solutions(problem)
            assert solutions, f"{target.name}: no solution for {problem.key()}"
            for solution in solutions:
                handle.compile_solution(problem, solution)
                loaded += 1
        assert handle.stats.jit == 0 and handle.compilations == 0
        assert handle.stats.system_kdb == loaded > 0
        handle.close()


def _check_manifests(prefix: Path) -> None:
    keys = [p.key() for p in parse_driver_lines(MANIFEST.read_text())]
    for t in TARGETS:
        manifest = json.loads((prefix / f"share/miopenkernels/{t.basename}.manifest.json")
                              .read_text())
        assert manifest["target"]["basename"] == t.basename
        assert manifest["problems"][:2] == keys and manifest["kernels"]
        assert manifest["manifests"] == [str(MANIFEST)]
        measured = (ROOT / "dbs" / t.basename).is_dir()  # committed measured databases
        assert manifest["databases"]["measured"] is measured
        if measured:
            assert f"share/miopen/db/{t.basename}.HIP.fdb.txt" in manifest["files"]
            assert manifest["databases"]["device"]
        for rel, info in manifest["files"].items():
            assert sha256_file(prefix / rel) == info["sha256"]


def test_published_artefacts(published):
    for t in TARGETS:
        assert (published / f"{t.wheel_name}-0.1.0-py3-none-any.whl").is_file()
        assert (published / "simple" / t.package / "index.html").is_file()
        assert list((published / "channel" / "noarch").glob(f"{t.package}-0.1.0-*.conda"))
    repodata = json.loads((published / "channel/noarch/repodata.json").read_text())
    names = {r["name"] for r in repodata["packages.conda"].values()}
    assert names == {t.package for t in TARGETS} | {"miopenkernels-gpu"}


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_wheels_in_a_fresh_venv(published, tmp_path, monkeypatch, installer):
    venv = tmp_path / "venv"
    subprocess.run([UV, "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    py = venv / "bin" / "python"
    url = (published / "simple").as_uri()
    pkgs = [t.package for t in TARGETS]
    if installer == "pip":
        cmd = [sys.executable, "-m", "pip", "--isolated", "--python", str(py), "install", "-q",
               "--no-cache-dir", "--disable-pip-version-check", "--index-url", url, *pkgs]
    else:
        cmd = [UV, "pip", "install", "-q", "--no-cache", "--python", str(py), "--index-url",
               url, *pkgs]
    subprocess.run(cmd, check=True, timeout=120)
    _check_manifests(venv)
    probe = ("import json; from importlib.metadata import entry_points; "
             "print(json.dumps(sorted(ep.name for ep in "
             "entry_points(group='miopenkernels.packages'))))")
    out = subprocess.run([str(py), "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == sorted(t.name for t in TARGETS)
    _resolve_all(venv / "share" / "miopen" / "db", tmp_path, monkeypatch)


def test_conda_packages_in_a_fresh_prefix_through_the_installer(published, tmp_path,
                                                                monkeypatch):
    prefix = tmp_path / "conda-env"
    (prefix / "conda-meta").mkdir(parents=True)
    args = ["install", "--channel", str(published / "channel"), "--prefix", str(prefix),
            "--json", "--force"]
    for t in TARGETS:
        args += ["--target", t.name]
    report = json.loads(_cli(*args))
    assert report["method"] == "conda"
    assert sorted(p["package"] for p in report["packages"]) == sorted(t.package for t in TARGETS)
    _check_manifests(prefix)
    _cli("verify", "--prefix", str(prefix))
    _resolve_all(prefix / "share" / "miopen" / "db", tmp_path, monkeypatch)

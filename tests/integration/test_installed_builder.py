"""The project's own wheel, installed (not editable) into a fresh venv, packages a kdb as a
conda package from outside the checkout: the recipes travel as package data."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from package_inputs import make_kdb  # noqa: E402

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
UV = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
SOURCES = ("library", "builder", "kernels", "dbs", "recipes", "setup.py", "pyproject.toml",
           "README.md")


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> str:
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                       timeout=timeout, check=False)
    assert r.returncode == 0, f"{cmd[:3]} exit {r.returncode}: {r.stdout[-2000:]}{r.stderr[-3000:]}"
    return r.stdout


def test_a_non_editable_install_makes_conda_packages(tmp_path: Path) -> None:
    src = tmp_path / "src"  # a copy, so that the build writes nothing into the checkout
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(ROOT / name, src / name)
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
          tmp_path / "dist", src], tmp_path)
    [wheel] = list((tmp_path / "dist").glob("miopenkernels-*.whl"))
    venv = tmp_path / "venv"
    _run([UV, "venv", "-q", "--python", sys.executable, venv], tmp_path)
    python = venv / "bin" / "python"
    _run([UV, "pip", "install", "-q", "--no-deps", "--python", python, wheel], tmp_path)
    # The dependencies come from this environment; a plain path line runs none of its .pth
    # files, so this checkout's editable install stays out of the way.
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     tmp_path).strip())
    (site / "zz_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    where = _run([python, "-c", "import miopenkernels; print(miopenkernels.__file__)"], tmp_path)
    assert Path(where.strip()).is_relative_to(venv)

    build = tmp_path / "build"
    make_kdb(build / "gfx906_60.kdb", "gfx906")
    out = tmp_path / "out"
    report = json.loads(_run([venv / "bin" / "miopenkernels", "package", "--from-build", build,
                              "--targets", "gfx906-60", "--kind", "conda", "--out", out,
                              "--json"], tmp_path))
    conda = Path(report["packages"][0]["conda"])
    assert conda.is_file() and conda.name.startswith("miopenkernels-gfx906-60-0.1.0-")
    assert (out / "channel" / "noarch" / "repodata.json").is_file()

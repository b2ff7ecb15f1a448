"""The README runs as written: its command-line tour, line by line, then its Python snippet.

The tour runs in a temporary folder holding a copy of `examples/`, under the hermetic home of
tests/conftest.py, with the console script of this environment; its first line (an `export`)
makes the null backend stand in for a GPU. A line whose comment says "exits N" must exit N;
every other line must exit 0. Real compilers, real wheels and conda packages, a real pip
install: nothing here is faked but the GPU.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from miopenkernels import __version__

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def _section(text: str, heading: str) -> str:
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None]


def tour_lines() -> list[str]:
    section = _section(README.read_text(), "A tour of the command line")
    return [line[4:] for line in section.splitlines()
            if line.startswith("    ") and line[4:].split(" ", 1)[0] in ("miopenkernels",
                                                                          "export")]


def runtime_snippet() -> str:
    section = _section(README.read_text(), "Using the runtime")
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def _expected_exit(line: str) -> int:
    comment = line.split("#", 1)[1] if "#" in line else ""
    m = re.search(r"exits (\d+)", comment)
    return int(m.group(1)) if m else 0


def _exports(line: str) -> dict[str, str]:
    words = shlex.split(line, comments=True)
    assert words[0] == "export"
    return dict(w.split("=", 1) for w in words[1:])


def test_the_tour_is_what_the_readme_shows() -> None:
    lines = tour_lines()
    assert lines[0].startswith("export MIOPEN_DEVICE_ARCH=")
    commands = " ".join(lines)
    for needle in ("package --from-build out --targets 'gfx90a-*' --out dist",
                   "install --find-links dist --dry-run", "kdb list", "db merge", "--version"):
        assert needle in commands


def test_readme_tour_and_runtime_snippet_run_as_written(tmp_path: Path) -> None:
    work = tmp_path / "clone"
    shutil.copytree(ROOT / "examples", work / "examples")
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["COLUMNS"] = "80"
    kdbs = [work / "out" / "gfx90a6e.kdb", work / "out" / "gfx90a68.kdb"]
    builds = 0
    outputs: dict[str, str] = {}
    for line in tour_lines():
        if line.startswith("export "):
            env.update(_exports(line))
            continue
        before = [p.stat().st_mtime_ns for p in kdbs] if builds else None
        r = subprocess.run(["bash", "-c", line], cwd=work, env=env, capture_output=True,
                           text=True, timeout=900)
        want = _expected_exit(line)
        assert r.returncode == want, f"{line}\nexit {r.returncode}\n{r.stdout}\n{r.stderr}"
        if want:
            # A failing line says why, in one line, and what to do.
            assert r.stderr.count("error: ") == 1 and "Traceback" not in r.stderr, r.stderr
        outputs[line] = r.stdout
        if " build " in f" {line}":
            builds += 1
            assert all(p.is_file() for p in kdbs)
            if before is not None:  # the second build: nothing compiled, nothing rewritten
                assert [p.stat().st_mtime_ns for p in kdbs] == before
        # Tables fit the 80 columns the tour runs in.
        assert all(len(x) <= 80 for x in r.stdout.splitlines() if not line.endswith("--json")
                   and "--json" not in line), line

    by_start = {line.split("#")[0].strip(): out for line, out in outputs.items()}
    assert by_start["miopenkernels --version"] == f"miopenkernels {__version__}\n"
    dry = by_start["miopenkernels install --find-links dist --dry-run"]
    assert "miopenkernels-gfx90a-110" in dry and "would install" in dry
    assert "ok" in by_start["miopenkernels verify --prefix env"]
    assert (work / "merged" / "gfx90a68.HIP.fdb.txt").is_file()
    db = work / "env" / "share" / "miopen" / "db"
    assert (db / "gfx90a6e.kdb").is_file()

    # The runtime snippet, with the package the tour installed as the system databases.
    check = runtime_snippet() + (
        "\nfrom miopenkernels.solvers.reference import conv_reference\n"
        "assert handle.backend.name == 'null' and handle.target.name == 'gfx90a-110'\n"
        "assert handle.compilations == 0, handle.compilations\n"
        "ref = conv_reference(p, {'x': x, 'w': w})\n"
        "assert np.allclose(y, ref, rtol=1e-4, atol=1e-3), abs(y - ref).max()\n"
        "print('solutions', len(solutions))\n")
    env["MIOPEN_SYSTEM_DB_PATH"] = str(db)
    r = subprocess.run([sys.executable, "-c", check], cwd=work, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "solutions" in r.stdout

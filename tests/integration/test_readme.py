"""The README runs as written: its command-line tour, line by line, then its Python snippet.

The tour runs in a temporary git repository holding a copy of `examples/` and the project's
`.gitignore`, under the hermetic home of tests/conftest.py. The console script is on PATH only
through the tour's own `source .venv/bin/activate` line, and no `MIOPEN_*` variable is set
but those the README exports (its `export` lines make the null backend stand in for a GPU and
point the snippet at what the tour installed). A line whose comment says "exits N" must exit
N; every other line must exit 0. Afterwards the repository is as clean as before: the tour
wrote only under `tour/`, which git ignores. Real compilers, real wheels and conda packages, a
real pip install: nothing here is faked but the GPU.
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


def _shell_lines(heading: str) -> list[str]:
    section = _section(README.read_text(), heading)
    return [line[4:] for line in section.splitlines()
            if line.startswith("    ") and line[4:].split(" ", 1)[0] in ("miopenkernels",
                                                                          "export", "source")]


def tour_lines() -> list[str]:
    return _shell_lines("A tour of the command line")


def runtime_exports() -> list[str]:
    """The shell lines the runtime section shows before its snippet (its `export`s)."""
    return _shell_lines("Using the runtime")


def runtime_snippet() -> str:
    section = _section(README.read_text(), "Using the runtime")
    return section.split("```python\n", 1)[1].split("```", 1)[0]


VENV_BIN = Path(sys.executable).parent
ACTIVATE = "source .venv/bin/activate"


def _clean_environment() -> dict[str, str]:
    """This process's environment less every MIOPEN_* variable and less the project's
    environment on PATH: what a new shell of a fresh clone has."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIOPEN_")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and Path(p).resolve() != VENV_BIN.resolve())
    env.pop("VIRTUAL_ENV", None)
    env["COLUMNS"] = "80"
    return env


def _git(work: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=work, check=True, capture_output=True,
                          text=True).stdout


def _scratch_repository(work: Path) -> None:
    """A git repository with what the tour reads and the project's .gitignore, committed."""
    shutil.copytree(ROOT / "examples", work / "examples")
    shutil.copyfile(ROOT / ".gitignore", work / ".gitignore")
    _git(work, "init", "-q")
    _git(work, "add", "-A")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "clone")


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
    # The command is put on PATH the way the set-up section says, before its first use.
    setup = _section(README.read_text(), "Set-up (Debian 12, as root)")
    assert lines[0].startswith(ACTIVATE) and ACTIVATE in setup
    assert lines[1].startswith("export MIOPEN_DEVICE_ARCH=")
    commands = " ".join(lines)
    for needle in ("package --from-build tour/out --targets 'gfx90a-*' --out tour/dist",
                   "install --find-links tour/dist --dry-run", "kdb list", "db merge",
                   "--version", "matrix --targets gfx9999-4"):
        assert needle in commands
    # The tour writes only in its scratch folder: never the main job's out/.
    for line in lines:
        for flag in ("--out", "--prefix"):
            words = shlex.split(line, comments=True)
            if flag in words:
                assert words[words.index(flag) + 1].startswith("tour/"), line
    # The runtime section shows every variable its snippet needs.
    exports = runtime_exports()
    assert [e.split("=", 1)[0] for e in exports] == ["export MIOPEN_SYSTEM_DB_PATH"]


def test_readme_tour_and_runtime_snippet_run_as_written(tmp_path: Path) -> None:
    work = tmp_path / "clone"
    work.mkdir()
    _scratch_repository(work)
    before = set(work.iterdir())
    env = _clean_environment()
    kdbs = [work / "tour" / "out" / "gfx90a6e.kdb", work / "tour" / "out" / "gfx90a68.kdb"]
    builds = 0
    outputs: dict[str, str] = {}
    errors: dict[str, str] = {}
    for line in tour_lines():
        if line.startswith(ACTIVATE):
            env["PATH"] = f"{VENV_BIN}{os.pathsep}{env['PATH']}"
            continue
        if line.startswith("export "):
            env.update(_exports(line))
            continue
        before_mtimes = [p.stat().st_mtime_ns for p in kdbs] if builds else None
        r = subprocess.run(["bash", "-c", line], cwd=work, env=env, capture_output=True,
                           text=True, timeout=900)
        want = _expected_exit(line)
        assert r.returncode == want, f"{line}\nexit {r.returncode}\n{r.stdout}\n{r.stderr}"
        if want:
            # A failing line says why, in one line, and what to do.
            assert r.stderr.count("error: ") == 1 and "Traceback" not in r.stderr, r.stderr
        outputs[line] = r.stdout
        errors[line] = r.stderr
        if " build " in f" {line}":
            builds += 1
            assert all(p.is_file() for p in kdbs)
            if before_mtimes is not None:  # the second build: nothing compiled or rewritten
                assert [p.stat().st_mtime_ns for p in kdbs] == before_mtimes
        # Tables fit the 80 columns the tour runs in.
        assert all(len(x) <= 80 for x in r.stdout.splitlines() if not line.endswith("--json")
                   and "--json" not in line), line

    by_start = {line.split("#")[0].strip(): out for line, out in outputs.items()}
    assert by_start["miopenkernels --version"] == f"miopenkernels {__version__}\n"
    dry = by_start["miopenkernels install --find-links tour/dist --dry-run"]
    assert "miopenkernels-gfx90a-110" in dry and "would install" in dry
    assert "ok" in by_start["miopenkernels verify --prefix tour/env"]
    assert (work / "tour" / "merged" / "gfx90a68.HIP.fdb.txt").is_file()
    db = work / "tour" / "env" / "share" / "miopen" / "db"
    assert (db / "gfx90a6e.kdb").is_file()
    # Progress goes to stderr, a line per target, while stdout keeps the table.
    first_build = next(e for line, e in errors.items() if " build " in f" {line}")
    for name in ("gfx90a-104", "gfx90a-110"):
        assert re.search(rf"^build: {name}: \d+ jobs.*, \d+\.\d s$", first_build, re.M), \
            first_build

    # The runtime snippet as a user runs it after the tour: the README's exports in the
    # same shell, nothing else.
    check = runtime_snippet() + (
        "\nfrom miopenkernels.solvers.reference import conv_reference\n"
        "assert handle.backend.name == 'null' and handle.target.name == 'gfx90a-110'\n"
        "assert handle.compilations == 0, handle.compilations\n"
        "ref = conv_reference(p, {'x': x, 'w': w})\n"
        "assert np.allclose(y, ref, rtol=1e-4, atol=1e-3), abs(y - ref).max()\n"
        "print('solutions', len(solutions))\n")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(check)
    script = "\n".join(["set -e", *runtime_exports(), f"python {shlex.quote(str(snippet))}"])
    assert {k for k in env if k.startswith("MIOPEN_")} == {"MIOPEN_DEVICE_ARCH",
                                                           "MIOPEN_DEVICE_CU"}
    r = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "solutions" in r.stdout

    # The tour and the snippet left the clone as they found it: all they wrote is in tour/,
    # which the project's .gitignore covers.
    assert set(work.iterdir()) - before == {work / "tour"}
    assert _git(work, "status", "--porcelain") == ""

"""Where built packages are published: a PEP 503 simple index for wheels and a conda channel.

The simple index is a plain folder (`simple/index.html`, `simple/<name>/index.html`, the wheels
beside their project page) that pip and uv read through `--index-url file:///.../simple` or any
static web server. The channel is indexed by py-rattler (`noarch/repodata.json`).
"""

from __future__ import annotations

import html
import re
import shutil
import sys
from pathlib import Path

from miopenkernels._fsutil import atomic_copy, atomic_write
from miopenkernels._proc import run_tool
from miopenkernels.errors import PackageBuildError
from miopenkernels.install.manifest import sha256_file

__all__ = ["normalize", "write_simple_index", "index_channel", "add_to_channel"]


def normalize(name: str) -> str:
    """PEP 503 project name normalisation."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _project_of(wheel: Path) -> str:
    return normalize(wheel.name.split("-", 1)[0])


def write_simple_index(wheels: list[Path], simple_dir: Path) -> Path:
    """Add `wheels` to the simple index at `simple_dir` and rewrite its pages.

    Wheels already in the index stay; a wheel with the same file name is replaced.
    """
    simple_dir.mkdir(parents=True, exist_ok=True)
    for wheel in wheels:
        project_dir = simple_dir / _project_of(wheel)
        project_dir.mkdir(exist_ok=True)
        dest = project_dir / wheel.name
        if wheel.resolve() != dest.resolve():
            atomic_copy(wheel, dest)
    projects = sorted(p for p in simple_dir.iterdir() if p.is_dir() and any(p.glob("*.whl")))
    for project_dir in projects:
        links = []
        for whl in sorted(project_dir.glob("*.whl")):
            href = f"{html.escape(whl.name)}#sha256={sha256_file(whl)}"
            links.append(f'    <a href="{href}">{html.escape(whl.name)}</a><br/>')
        atomic_write(project_dir / "index.html", _page(f"Links for {project_dir.name}", links))
    root_links = [f'    <a href="{p.name}/">{p.name}</a><br/>' for p in projects]
    atomic_write(simple_dir / "index.html", _page("Simple index", root_links))
    return simple_dir


def _page(title: str, links: list[str]) -> str:
    body = "\n".join(links)
    return (
        "<!DOCTYPE html>\n<html>\n  <head>\n    <meta name=\"pypi:repository-version\" "
        f"content=\"1.0\">\n    <title>{html.escape(title)}</title>\n  </head>\n  <body>\n"
        f"    <h1>{html.escape(title)}</h1>\n{body}\n  </body>\n</html>\n"
    )


def add_to_channel(packages: list[Path], channel: Path) -> Path:
    """Copy conda packages into `channel/<subdir>/` (noarch for ours) and index the channel."""
    for pkg in packages:
        subdir = channel / pkg.parent.name if pkg.parent.name != "" else channel / "noarch"
        if pkg.parent.name not in ("noarch",) and not pkg.parent.name.startswith(
                ("linux-", "osx-", "win-")):
            subdir = channel / "noarch"
        subdir.mkdir(parents=True, exist_ok=True)
        dest = subdir / pkg.name
        if pkg.resolve() != dest.resolve():
            shutil.copyfile(pkg, dest)
    return index_channel(channel)


# py-rattler's indexer leaves runtime threads that take the GIL while the interpreter
# finalizes; before Python 3.14 that aborts the process (PyGILState_Release, exit 134) in about
# one run in four. It runs in a child that leaves with os._exit once the index is written.
_INDEX_SCRIPT = """\
import asyncio, os, sys
from rattler.index import index_fs
asyncio.run(index_fs(sys.argv[1], write_zst=False, write_shards=False, force=True))
sys.stdout.flush()
os._exit(0)
"""


def index_channel(channel: Path) -> Path:
    """Write repodata.json for every subdir of `channel` with py-rattler."""
    (channel / "noarch").mkdir(parents=True, exist_ok=True)
    run_tool([sys.executable, "-c", _INDEX_SCRIPT, str(channel)], what=f"indexing {channel}",
             error=PackageBuildError)
    return channel

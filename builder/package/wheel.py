"""Data wheels: `miopenkernels_<arch>_<cu>-<version>-py3-none-any.whl` built by hatchling.

The wheel carries the staged files as wheel data (`shared-data`), so pip and uv put them at
`<prefix>/share/miopen/db` and `<prefix>/share/miopenkernels`, plus a tiny module that finds its
own manifest, registered in the `miopenkernels.packages` entry-point group.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from miopenkernels._fsutil import atomic_copy
from miopenkernels._proc import run_tool
from miopenkernels.errors import MIOpenKernelsError, PackageBuildError
from miopenkernels.install.manifest import DATABASES_ONLY_WHEEL_TAG, DB_DIR, MANIFEST_DIR
from miopenkernels.target import Target

__all__ = ["ENTRY_POINT_GROUP", "write_wheel_project", "build_wheel"]

ENTRY_POINT_GROUP = "miopenkernels.packages"

_PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.20"]
build-backend = "hatchling.build"

[project]
name = "{package}"
version = "{version}"
description = "Precompiled kernels and MIOpen databases for {arch} with {cu} CUs ({basename})"
requires-python = ">=3.8"
license = "MIT"
classifiers = ["Environment :: GPU", "Topic :: Scientific/Engineering"]

[project.entry-points."{group}"]
"{name}" = "{module}:manifest_path"

[tool.hatch.build.targets.wheel]
packages = ["{module}"]

[tool.hatch.build.targets.wheel.shared-data]
"{db_dir}" = "{db_dir}"
"{manifest_dir}" = "{manifest_dir}"
"""

_MODULE = '''\
"""Kernel package {package}: finds its installed manifest and database folder."""

from importlib import metadata
from pathlib import Path

PACKAGE = "{package}"
TARGET = "{name}"
BASENAME = "{basename}"


def manifest_path() -> Path:
    """The installed `{basename}.manifest.json` of this package."""
    for file in metadata.distribution(PACKAGE).files or ():
        if file.name == BASENAME + ".manifest.json":
            return Path(str(file.locate())).resolve()
    raise FileNotFoundError(PACKAGE + ": manifest not found in the installed files")


def db_dir() -> Path:
    """The folder that holds `{basename}.kdb` (`<prefix>/share/miopen/db`)."""
    return manifest_path().parent.parent / "miopen" / "db"
'''


def write_wheel_project(staged: Path, target: Target, version: str, project: Path) -> Path:
    """A hatchling project in `project` whose wheel holds the staged prefix `staged`."""
    if project.exists():
        shutil.rmtree(project)
    module = target.wheel_name
    (project / module).mkdir(parents=True)
    fields = dict(package=target.package, version=version, arch=target.arch, cu=target.cu,
                  basename=target.basename, group=ENTRY_POINT_GROUP, name=target.name,
                  module=module, db_dir=DB_DIR, manifest_dir=MANIFEST_DIR)
    (project / "pyproject.toml").write_text(_PYPROJECT.format(**fields))
    (project / module / "__init__.py").write_text(_MODULE.format(**fields))
    for sub in (DB_DIR, MANIFEST_DIR):
        shutil.copytree(staged / sub, project / sub)
    return project


def _tag_build(wheel: Path, tag: str, env: Mapping[str, str], what: str) -> Path:
    """The wheel again with build tag `tag` (file name and WHEEL's `Build:`), made by pypa's
    `wheel tags`, which prints the new file's name."""
    out = run_tool([sys.executable, "-m", "wheel", "tags", "--remove", "--build", tag,
                    str(wheel)], error=PackageBuildError, what=what, cwd=wheel.parent,
                   env=dict(env))
    tagged = wheel.parent / out.stdout.strip().splitlines()[-1]
    if not tagged.is_file():
        raise PackageBuildError(f"{what}: `wheel tags` left no {tagged.name}")
    return tagged


def build_wheel(staged: Path, target: Target, version: str, out_dir: Path,
                databases_only: bool = False) -> Path:
    """Build the data wheel of one staged target into `out_dir` (PEP 517, through `build`,
    without isolation); the path is the one the build backend returns. A databases-only
    package (no kdb) gets the build tag `0_databases_only`, set by pypa's `wheel tags`."""
    from build import BuildBackendException, ProjectBuilder

    out_dir.mkdir(parents=True, exist_ok=True)
    what = f"building the wheel of {target.package}"
    with tempfile.TemporaryDirectory(prefix="mk-wheel-") as tmp:
        project = write_wheel_project(staged, target, version, Path(tmp) / target.wheel_name)
        # Fixed timestamps make the same inputs give the same wheel bytes.
        env = {"SOURCE_DATE_EPOCH": os.environ.get("SOURCE_DATE_EPOCH", "315532800")}

        def runner(cmd: Sequence[str], cwd: str | None = None,
                   extra_environ: Mapping[str, str] | None = None) -> None:
            run_tool(cmd, error=PackageBuildError, what=what, cwd=Path(cwd) if cwd else None,
                     env={**env, **(extra_environ or {})})

        try:
            built = Path(ProjectBuilder(project, sys.executable, runner).build(
                "wheel", Path(tmp) / "dist"))
        except BuildBackendException as exc:
            if isinstance(exc.exception, MIOpenKernelsError):
                raise exc.exception from None
            raise PackageBuildError(f"{what} failed: {exc}") from None
        if not built.is_file():
            raise PackageBuildError(f"{what}: the build returned {built}, which does not exist")
        if databases_only:
            built = _tag_build(built, DATABASES_ONLY_WHEEL_TAG, env, what)
        dest = out_dir / built.name
        atomic_copy(built, dest)
    return dest

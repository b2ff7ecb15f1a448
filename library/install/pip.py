"""Install data wheels with pip into a staging prefix; verify them before anything moves."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import sys
import zipfile
from pathlib import Path
from typing import Any

from .._proc import run_tool
from ..errors import InstallError, IntegrityError
from .manifest import MANIFEST_DIR, check_manifest
from .sources import MAX_PACKAGE_BYTES, Available, read_url

__all__ = ["fetch_wheel", "check_wheel", "stage_wheels", "site_packages_of"]


def fetch_wheel(avail: Available, dest_dir: Path) -> Path:
    """Copy or download the wheel; its sha256 must match the index's `#sha256=`."""
    data = read_url(avail.url, "wheel", limit=MAX_PACKAGE_BYTES)
    digest = hashlib.sha256(data).hexdigest()
    if avail.sha256 and digest != avail.sha256:
        raise IntegrityError(f"{avail.url.rsplit('/', 1)[-1]}: sha256 {digest} differs from the "
                             f"index's {avail.sha256}")
    dest = dest_dir / avail.url.rsplit("/", 1)[-1]
    dest.write_bytes(data)
    return dest


def check_wheel(wheel: Path, avail: Available) -> dict[str, Any]:
    """Every data file in the wheel against the manifest it carries; returns the manifest."""
    base = avail.target.basename
    # `<name>-<version>.data`, also for a wheel with a build tag (a databases-only package).
    data_dir = "-".join(wheel.name.split("-")[:2]) + ".data/data/"
    try:
        with zipfile.ZipFile(wheel) as zf:
            names = set(zf.namelist())
            mpath = f"{data_dir}{MANIFEST_DIR}/{base}.manifest.json"
            if mpath not in names:
                raise IntegrityError(f"{wheel.name} has no {MANIFEST_DIR}/{base}.manifest.json: "
                                     f"not a package for {avail.target.name}")
            manifest = check_manifest(json.loads(zf.read(mpath)), f"{wheel.name}:{mpath}")
            for rel, info in manifest["files"].items():
                if data_dir + rel not in names:
                    raise IntegrityError(f"{wheel.name} lacks {rel}, listed in its manifest")
                if hashlib.sha256(zf.read(data_dir + rel)).hexdigest() != info["sha256"]:
                    raise IntegrityError(f"{wheel.name}: {rel} does not match its manifest's "
                                         "sha256")
    except (zipfile.BadZipFile, ValueError, KeyError, RecursionError) as exc:
        raise IntegrityError(f"{wheel.name} is not a valid kernel wheel: {exc}") from None
    return dict(manifest)


def _pip_command() -> list[str]:
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    uv = shutil.which("uv")
    if uv:
        return [uv, "pip"]
    raise InstallError("neither pip (in this Python) nor uv is available to install wheels")


def stage_wheels(wheels: list[Path], stage: Path) -> None:
    """`pip install --prefix <stage>` of local wheel files, no dependencies, no index."""
    cmd = _pip_command()
    if cmd[0] == sys.executable:
        args = [*cmd, "install", "--no-deps", "--no-index", "--no-compile",
                "--disable-pip-version-check", "--no-warn-script-location", "--prefix",
                str(stage), *map(str, wheels)]
    else:
        args = [*cmd, "install", "--no-deps", "--no-index", "--python", sys.executable,
                "--prefix", str(stage), *map(str, wheels)]
    run_tool(args, error=InstallError, what="pip install of " + ", ".join(w.name for w in wheels))


def site_packages_of(prefix: Path) -> list[Path]:
    lib = prefix / "lib"
    return sorted(lib.glob("python3*/site-packages")) if lib.is_dir() else []

"""Install data wheels with pip into a staging prefix; verify them before anything moves."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import sys
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib
from pathlib import Path
from typing import Any

from .._proc import run_tool
from ..errors import ContainmentError, IndexUnreachableError, InstallError, IntegrityError
from .contain import allowed, shown
from .manifest import MANIFEST_DIR, MAX_MANIFEST_BYTES, check_manifest, check_relpath
from .sources import MAX_PACKAGE_BYTES, Available, open_regular

__all__ = ["fetch_wheel", "check_wheel", "stage_wheels", "site_packages_of"]


def _download(url: str, dest: Path, what: str, limit: int) -> str:
    """Copy `url` to `dest` in chunks (never whole in memory), at most `limit` bytes; returns
    the sha256. A local file must be a regular file."""
    parsed = urllib.parse.urlparse(url)
    h = hashlib.sha256()
    size = 0
    try:
        if parsed.scheme == "file":
            src: Any = open_regular(Path(urllib.request.url2pathname(parsed.path)), what)
        else:
            src = urllib.request.urlopen(url, timeout=30)  # noqa: S310 - the user's index
        with src, open(dest, "wb") as out:
            for chunk in iter(lambda: src.read(1 << 20), b""):
                size += len(chunk)
                if size > limit:
                    raise IndexUnreachableError(f"{what} {url} is over {limit >> 20} MiB, so "
                                                "not a kernel package; check the URL")
                h.update(chunk)
                out.write(chunk)
    except (urllib.error.URLError, ValueError) as exc:
        raise IndexUnreachableError(f"{what} {url} is unreachable: "
                                    f"{getattr(exc, 'reason', exc)}") from None
    return h.hexdigest()


def fetch_wheel(avail: Available, dest_dir: Path) -> Path:
    """Copy or download the wheel; its sha256 must match the index's `#sha256=`."""
    name = avail.url.rsplit("/", 1)[-1]
    dest = dest_dir / name
    digest = _download(avail.url, dest, "wheel", MAX_PACKAGE_BYTES)
    if avail.sha256 and digest != avail.sha256:
        raise IntegrityError(f"{name}: sha256 {digest} differs from the index's {avail.sha256}")
    return dest


# Where a wheel's members land, relative to the prefix, for the containment check: its
# `.data/data/` under the prefix, everything else (purelib, dist-info) in site-packages.
_SITE = "lib/python3/site-packages/"


def _prefix_path(member: str, data_dir: str) -> str:
    if member.startswith(data_dir):
        scheme, _, rest = member[len(data_dir):].partition("/")
        if scheme == "data":
            return rest
        return _SITE + rest if scheme in ("purelib", "platlib") else f"{scheme}/{rest}"
    return _SITE + member


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, what: str) -> bytes:
    """A member inflated in chunks and refused at `limit` bytes, whatever size it declares."""
    if info.file_size > limit:
        raise IntegrityError(f"{what} is {info.file_size >> 20} MiB, over the "
                             f"{limit >> 20} MiB limit; the package is not to be trusted")
    with zf.open(info) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise IntegrityError(f"{what} inflates past {limit >> 20} MiB; the package is not to "
                             "be trusted")
    return data


def _sha256_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> str:
    h = hashlib.sha256()
    with zf.open(info) as fh:  # inflated in chunks; zipfile stops at the declared size
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_wheel(wheel: Path, avail: Available) -> dict[str, Any]:
    """Every member of the wheel: a path its kind may hold (ContainmentError otherwise) and,
    for the data files, the sha256 its manifest says; returns the manifest. Members are
    inflated in chunks within their limits, before pip sees the wheel."""
    target = avail.target
    base = target.basename
    # `<name>-<version>.data`, also for a wheel with a build tag (a databases-only package).
    data_dir = "-".join(wheel.name.split("-")[:2]) + ".data/"
    try:
        with zipfile.ZipFile(wheel) as zf:
            infos = {i.filename: i for i in zf.infolist() if not i.is_dir()}
            if sum(i.file_size for i in infos.values()) > MAX_PACKAGE_BYTES:
                raise IntegrityError(f"{wheel.name} inflates past "
                                     f"{MAX_PACKAGE_BYTES >> 30} GiB: not a kernel package")
            for member in infos:
                check_relpath(member, wheel.name)
                rel = _prefix_path(member, data_dir)
                if not allowed(rel, target):
                    raise ContainmentError(
                        f"{wheel.name} holds {shown(member)!r}, which a kernel package may not "
                        "(only its databases under share/miopen/db, its manifest and its "
                        "packaging metadata); nothing was installed")
            mpath = f"{data_dir}data/{MANIFEST_DIR}/{base}.manifest.json"
            if mpath not in infos:
                raise IntegrityError(f"{wheel.name} has no {MANIFEST_DIR}/{base}.manifest.json: "
                                     f"not a package for {target.name}")
            raw = _read_member(zf, infos[mpath], MAX_MANIFEST_BYTES, f"{wheel.name}:{mpath}")
            manifest = check_manifest(json.loads(raw), f"{wheel.name}:{mpath}")
            for rel, info in manifest["files"].items():
                if not allowed(rel, target):
                    raise ContainmentError(
                        f"{wheel.name}: its manifest names {shown(rel)!r}, which a kernel "
                        "package may not hold; nothing was installed")
                member = f"{data_dir}data/{rel}"
                if member not in infos:
                    raise IntegrityError(f"{wheel.name} lacks {shown(rel)}, listed in its "
                                         "manifest")
                if _sha256_member(zf, infos[member]) != info["sha256"]:
                    raise IntegrityError(f"{wheel.name}: {shown(rel)} does not match its "
                                         "manifest's sha256")
    except (zipfile.BadZipFile, ValueError, KeyError, RecursionError, EOFError,
            NotImplementedError, zlib.error) as exc:
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
        # --ignore-installed: the same version importable where this runs is no reason to
        # leave the stage empty (pip would say "already satisfied" and install nothing).
        args = [*cmd, "install", "--no-deps", "--no-index", "--no-compile", "--ignore-installed",
                "--disable-pip-version-check", "--no-warn-script-location", "--prefix",
                str(stage), *map(str, wheels)]
    else:
        args = [*cmd, "install", "--no-deps", "--no-index", "--reinstall", "--python",
                sys.executable,
                "--prefix", str(stage), *map(str, wheels)]
    run_tool(args, error=InstallError, what="pip install of " + ", ".join(w.name for w in wheels))


def site_packages_of(prefix: Path) -> list[Path]:
    lib = prefix / "lib"
    return sorted(lib.glob("python3*/site-packages")) if lib.is_dir() else []

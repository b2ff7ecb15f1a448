"""What a kernel package may write into a prefix, and who owns what is already there.

A kernel package holds its target's databases and kdb under `share/miopen/db`, its manifest
under `share/miopenkernels`, and its packaging metadata: for a wheel its `.dist-info` and the
small module that finds its manifest, for conda its `conda-meta` record. Anything else (a `.pth`
that runs at every start of Python, `bin/activate`, a file under `etc/`) is refused, and so is
a path that another installed package owns: another kernel package (its manifest), a pip
distribution (its RECORD) or a conda package (its conda-meta record).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from ..errors import ContainmentError, IntegrityError
from ..target import Target
from .manifest import DB_DIR, DB_SUFFIXES, installed_manifests, manifest_relpath, read_manifest

__all__ = ["allowed", "owners", "check_contained", "shown", "canonical", "record_files",
           "conda_record_files"]

# A RECORD or conda-meta record of a real package is well under this; a bigger one is skipped
# (its package owns nothing we can tell), not read whole.
_MAX_RECORD_BYTES = 32 << 20


def shown(text: str) -> str:
    """`text` with control and escape characters escaped, so that a file name taken from a
    package cannot move the cursor, recolour or hide itself on a terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   if ord(c) < 0x10000 else f"\\U{ord(c):08x}" for c in text)


def canonical(name: str) -> str:
    """A distribution or package name as PEP 503 compares them (`miopenkernels-gfx906-60`)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def allowed(rel: str, target: Target) -> bool:
    """Whether a kernel package of `target` may hold the prefix path `rel`."""
    base = target.basename
    if rel == manifest_relpath(base) or rel in {f"{DB_DIR}/{base}{s}" for s in DB_SUFFIXES}:
        return True
    sp = r"lib/python3[0-9.]*t?/site-packages/"
    wheel = re.escape(target.wheel_name)
    if re.fullmatch(sp + wheel + r"-[^/]+\.dist-info(/[^/]+)+", rel):
        return True
    # The module that finds the manifest, and its byte code where pip compiled it.
    if re.fullmatch(sp + wheel + r"/(__init__\.py|__pycache__/__init__\.[\w.-]+\.pyc)", rel):
        return True
    return re.fullmatch(r"conda-meta/" + re.escape(target.package) + r"-[^/]+\.json",
                        rel) is not None


def _read_small(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > _MAX_RECORD_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def record_files(dist_info: Path, prefix: Path) -> list[str]:
    """The prefix paths a pip distribution's RECORD lists (those inside the prefix)."""
    text = _read_small(dist_info / "RECORD")
    if text is None:
        return []
    site = dist_info.parent
    found = []
    for line in text.splitlines():
        entry = line.rsplit(",", 2)[0].strip('"') if line.count(",") >= 2 else line
        if not entry:
            continue
        full = os.path.normpath(os.path.join(site, entry))
        rel = os.path.relpath(full, prefix)
        if not rel.startswith(".." + os.sep) and rel != "..":
            found.append(rel.replace(os.sep, "/"))
    return found


def conda_record_files(record: Path) -> list[str]:
    """The prefix paths a conda-meta record lists (its package's files)."""
    text = _read_small(record)
    try:
        data = json.loads(text) if text else None
    except (ValueError, RecursionError):
        return []
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        return []
    return [f for f in data["files"] if isinstance(f, str)]


def _conda_name(record: Path) -> str:
    """`<name>` of `conda-meta/<name>-<version>-<build>.json`."""
    return record.stem.rsplit("-", 2)[0]


def owners(prefix: Path) -> dict[str, set[str]]:
    """Prefix path -> the packages that own it: kernel packages by their manifests, pip
    distributions by their RECORD, conda packages by their conda-meta record."""
    owned: dict[str, set[str]] = {}

    def add(name: str, paths: Iterable[str]) -> None:
        for rel in paths:
            owned.setdefault(rel, set()).add(name)

    for mpath in installed_manifests(prefix):
        try:
            data = read_manifest(mpath)
        except IntegrityError:  # a damaged manifest owns nothing it can prove
            continue
        name = str(data.get("package") or mpath.name)
        add(name, [*data["files"], str(mpath.relative_to(prefix))])
    lib = prefix / "lib"
    if lib.is_dir():
        for dist_info in sorted(lib.glob("python3*/site-packages/*.dist-info")):
            add(dist_info.name.split("-", 1)[0], record_files(dist_info, prefix))
    meta = prefix / "conda-meta"
    if meta.is_dir():
        for record in sorted(meta.glob("*.json")):
            add(_conda_name(record), [*conda_record_files(record),
                                      str(record.relative_to(prefix))])
    return owned


def check_contained(files: Iterable[str], targets: list[Target], prefix: Path, *,
                    force: bool, what: str) -> list[str]:
    """Refuse (ContainmentError) a path no kernel package of `targets` may hold, and, unless
    `force`, a path another installed package owns. Returns what `force` lets replace, as
    `<path> (of <owner>)` lines. Nothing is moved here: this runs before the first move."""
    files = list(files)
    for rel in files:
        if not any(allowed(rel, t) for t in targets):
            names = ", ".join(t.package for t in targets)
            raise ContainmentError(
                f"{what} would install {shown(rel)!r}, which no kernel package ({names}) may "
                "hold (only its databases under share/miopen/db, its manifest and its "
                "packaging metadata); nothing was installed")
    ours = {canonical(n) for t in targets for n in (t.package, t.wheel_name)}
    owned = owners(prefix)
    replaced = []
    for rel in files:
        others = sorted(o for o in owned.get(rel, ()) if canonical(o) not in ours)
        if not others:
            continue
        if not force:
            raise ContainmentError(
                f"{what} would replace {shown(rel)!r}, which belongs to {', '.join(others)}; "
                "nothing was installed (add --force to replace it)")
        replaced.append(f"{shown(rel)} (of {', '.join(others)})")
    return replaced

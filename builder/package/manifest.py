"""The package manifest: what a kernel package holds, where it came from, and every hash.

One JSON file per package, installed at `share/miopenkernels/<basename>.manifest.json` beside the
databases it describes (`share/miopen/db/...`). The installer and `miopenkernels verify` check the
installed files against it; the runtime can read which problems the package covers.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miopenkernels import __version__
from miopenkernels._proc import run_tool
from miopenkernels.errors import DbError, MIOpenKernelsError
from miopenkernels.install.manifest import (
    DB_DIR,
    DB_SUFFIXES,
    MANIFEST_DIR,
    MANIFEST_SCHEMA,
    manifest_relpath,
    sha256_file,
)
from miopenkernels.target import Target, spec_for

__all__ = [
    "TargetFiles",
    "collect_build_files",
    "kernel_rows",
    "build_manifest",
    "stage_target",
    "git_revision",
    "lacking",
]



@dataclass
class TargetFiles:
    """The database files of one target, by their name in the package (`<basename><suffix>`)."""

    target: Target
    files: dict[str, Path] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    manifests: list[str] = field(default_factory=list)
    provenance: dict[str, Any] | None = None
    toolchain: dict[str, Any] = field(default_factory=dict)
    origin: str = "build"  # 'build' | 'from-dir'

    @property
    def kdb(self) -> Path | None:
        return self.files.get(f"{self.target.basename}.kdb")


def git_revision(path: Path | None = None) -> dict[str, Any]:
    """The source revision of the repository at `path` (or of this file); unknown outside git."""
    cwd = path or Path(__file__).resolve().parent
    try:
        rev = run_tool(["git", "rev-parse", "HEAD"], what="git rev-parse", cwd=cwd,
                       timeout=20).stdout.strip()
        dirty = run_tool(["git", "status", "--porcelain", "--untracked-files=no"],
                         what="git status", cwd=cwd, timeout=20).stdout
    except MIOpenKernelsError:
        return {"git_revision": "unknown", "dirty": None}
    return {"git_revision": rev, "dirty": bool(dirty.strip())}


def kernel_rows(kdb: Path) -> list[dict[str, Any]]:
    """One entry per kern_db row: name, args, MD5 (MIOpen's) and sha256 of the stored blob."""
    import hashlib

    from miopenkernels.db import KernelDb

    with KernelDb(kdb) as db:
        return [
            {
                "kernel_name": entry.kernel_name,
                "kernel_args": entry.kernel_args,
                "kernel_hash": entry.kernel_hash,
                "uncompressed_size": entry.uncompressed_size,
                "sha256": hashlib.sha256(blob).hexdigest(),
            }
            for entry, blob in db.stored()
        ]


def read_provenance(db_dir: Path) -> dict[str, Any] | None:
    """dbs/<basename>/provenance (JSON, TOML or `key: value` lines) when it exists."""
    for name in ("provenance", "provenance.json", "provenance.toml", "provenance.txt",
                 "PROVENANCE.md", "provenance.md"):
        file = db_dir / name
        if not file.is_file():
            continue
        text = file.read_text()
        try:
            data = json.loads(text)
            if isinstance(data, dict):
                return data
        except ValueError:
            pass
        try:
            if sys.version_info >= (3, 11):
                import tomllib
            else:  # pragma: no cover
                import tomli as tomllib
            return dict(tomllib.loads(text))
        except Exception:  # noqa: BLE001 - fall through to plain lines
            pass
        # Plain `key: value` lines, or a Markdown note with `- key: value` items.
        out: dict[str, Any] = {"file": name}
        for line in text.splitlines():
            m = re.match(r"^\s*(?:[-*]\s+)?([\w.-]+)\s*[:=]\s*(.+?)\s*$", line)
            if m and not line.lstrip().startswith("#"):
                out.setdefault(m.group(1).lower(), m.group(2))
        if name.endswith(".md"):
            out["text"] = text.strip()
        return out
    return None


def finddb_keys(fdb: Path) -> list[str]:
    """Problem keys of a FindDb text file, read by the library's one FindDb parser."""
    from miopenkernels.db import FindDbFile

    return list(FindDbFile.read(fdb).records)


def manifest_problem_keys(names: list[str]) -> list[str]:
    """FindDb keys of the problems in dbs/manifests/<name>.txt (or a path to a manifest file),
    in order, each once."""
    from ..manifest import load_manifest, manifest_path

    keys: dict[str, None] = {}  # ordered; linear where a list's `in` made it quadratic
    for name in names:
        try:
            path = manifest_path(name)
        except MIOpenKernelsError:
            raise DbError(f"problem manifest {name!r} not found (dbs/manifests/ or a file "
                          "path)") from None
        keys.update(dict.fromkeys(p.key() for p in load_manifest(path)))
    return list(keys)


def collect_build_files(
    target: Target,
    build_dir: Path,
    dbs_dir: Path | None = None,
    manifests: list[str] | None = None,
) -> TargetFiles:
    """The builder's `<build_dir>/<basename>.kdb` plus the measured dbs of dbs/<basename>/."""
    base = target.basename
    kdb = build_dir / f"{base}.kdb"
    if not kdb.is_file():
        raise DbError(f"{kdb} not found: build {target.name} first "
                      f"(miopenkernels build --targets {target.name} --out {build_dir})")
    tf = TargetFiles(target, {f"{base}.kdb": kdb}, manifests=list(manifests or []))
    if dbs_dir is None:
        from importlib import resources

        dbs_dir = Path(str(resources.files("miopenkernels.dbs")))
    measured = dbs_dir / base
    for suffix in DB_SUFFIXES[1:]:
        file = measured / f"{base}{suffix}"
        if file.is_file():
            tf.files[f"{base}{suffix}"] = file
    tf.provenance = read_provenance(measured) if measured.is_dir() else None
    # Predicted databases (build --predict-dbs) only where nothing was measured: never mixed.
    predicted = build_dir / "predicted" / base
    if len(tf.files) == 1 and predicted.is_dir():
        for suffix in DB_SUFFIXES[1:]:
            file = predicted / f"{base}{suffix}"
            if file.is_file():
                tf.files[f"{base}{suffix}"] = file
        tf.provenance = read_provenance(predicted)
        if not (tf.provenance or {}).get("predicted"):
            raise DbError(f"{predicted} holds databases without a provenance.json that says "
                          "they are predicted; rebuild with `miopenkernels build --predict-dbs`")
    # What the build covered, as `build` recorded it; --manifest replaces it.
    report = build_dir / f"{base}.build.json"
    if report.is_file() and not manifests:
        try:
            data = json.loads(report.read_text())
            tf.toolchain = dict(data.get("toolchain", {}))
            tf.problems = [str(k) for k in data.get("problems", [])]
            tf.manifests = [str(m) for m in data.get("manifests", [])]
        except (ValueError, AttributeError, TypeError):
            pass
    if manifests:
        tf.problems = list(dict.fromkeys([*tf.problems, *manifest_problem_keys(manifests)]))
    return tf


def lacking(tf: TargetFiles) -> list[str]:
    """What a package of `tf` does not carry: `<what> (<file>): <what it would give>`."""
    base = tf.target.basename
    names = {
        ".kdb": ("KernelDb", "precompiled kernels"),
        ".HIP.fdb.txt": ("measured FindDb", "solver timings"),
        ".db.txt": ("measured PerfDb", "tuned solver parameters"),
    }
    have = set(tf.files)
    out = [f"{what} ({base}{suffix}): {gives}" for suffix, (what, gives) in names.items()
           if f"{base}{suffix}" not in have
           and not (suffix == ".db.txt" and f"{base}.db" in have)]
    if not tf.manifests and tf.origin == "build":
        out.append("problem manifests (not recorded): the build left no <basename>.build.json "
                   "and no --manifest was given")
    return out


def build_manifest(tf: TargetFiles, version: str) -> dict[str, Any]:
    """The manifest dict of a package holding `tf` (paths relative to the install prefix)."""
    target = tf.target
    files: dict[str, Any] = {}
    for name, path in sorted(tf.files.items()):
        files[f"{DB_DIR}/{name}"] = {"sha256": sha256_file(path), "size": path.stat().st_size}
    problems = dict.fromkeys(tf.problems)
    fdb = tf.files.get(f"{target.basename}.HIP.fdb.txt")
    if fdb is not None and tf.origin != "from-dir":  # from-dir read the keys when it checked
        problems.update(dict.fromkeys(finddb_keys(fdb)))
    measured_files = [n for n in tf.files if not n.endswith(".kdb")]
    contents = ("databases-only" if tf.kdb is None else
                "kernels+databases" if measured_files else "kernels-only")
    predicted = bool((tf.provenance or {}).get("predicted") is True)
    spec = spec_for(target.arch)
    toolchain = {"miopenkernels": __version__, "compiler": spec.compiler,
                 "compile_arch": spec.compile_arch, **tf.toolchain}
    return {
        "schema": MANIFEST_SCHEMA,
        "package": target.package,
        "version": version,
        "target": target.to_dict(),
        "origin": tf.origin,
        "source": git_revision(),
        "toolchain": toolchain,
        "manifests": tf.manifests,
        "problems": list(problems),
        "contents": contents,
        "lacks": lacking(tf),
        "databases": {
            "measured": bool(measured_files) and not predicted,
            "predicted": bool(measured_files) and predicted,
            "kernels_only": not measured_files,
            "databases_only": tf.kdb is None,
            "device": (tf.provenance or {}).get("device"),
            "provenance": tf.provenance,
        },
        "files": files,
        "kernels": kernel_rows(tf.kdb) if tf.kdb is not None else [],
    }


def stage_target(tf: TargetFiles, stage_root: Path, version: str) -> Path:
    """Lay out one package's files as they install: `<stage_root>/<arch>-<cu>/share/...`.

    SQLite databases are read through SQLite (`snapshot.snapshot_sqlite`: a user cache's WAL
    records included), text ones copied from regular files. The manifest is made from the
    staged files, so that what it lists is what the package holds, and the staged kdb is
    checked against the source's kernels. A manifest over the installers' limit is refused
    here, not shipped. Returns the staged prefix. Wheels and conda packages are both made
    from this one layout.
    """
    from dataclasses import replace

    from miopenkernels.errors import PackageBuildError
    from miopenkernels.install.manifest import MAX_MANIFEST_BYTES

    from .snapshot import check_same_kernels, copy_regular, is_sqlite_name, snapshot_sqlite

    prefix = stage_root / tf.target.name
    if prefix.exists():
        shutil.rmtree(prefix)
    (prefix / DB_DIR).mkdir(parents=True)
    (prefix / MANIFEST_DIR).mkdir(parents=True)
    staged: dict[str, Path] = {}
    for name, src in tf.files.items():
        dest = prefix / DB_DIR / name
        if is_sqlite_name(name):
            snapshot_sqlite(src, dest)
        else:
            copy_regular(src, dest)
        staged[name] = dest
    staged_tf = replace(tf, files=staged)
    if tf.kdb is not None and staged_tf.kdb is not None:
        check_same_kernels(tf.kdb, staged_tf.kdb)
    manifest = build_manifest(staged_tf, version)
    text = json.dumps(manifest, indent=2, sort_keys=False) + "\n"
    size = len(text.encode("utf-8"))
    if size > MAX_MANIFEST_BYTES:
        raise PackageBuildError(
            f"the manifest of {tf.target.package} would be {size / (1 << 20):.1f} MiB, over the "
            f"installers' {MAX_MANIFEST_BYTES >> 20} MiB limit ({len(manifest['problems'])} "
            f"problems, {len(manifest['kernels'])} kernels): package fewer problems, e.g. a "
            "FindDb of the problems that matter")
    (prefix / manifest_relpath(tf.target.basename)).write_text(text)
    return prefix

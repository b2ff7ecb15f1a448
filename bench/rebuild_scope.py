"""Rebuild scope: how many of the default build's objects an edit to one kernel file recompiles.

For every file of the kernels folder, a copy of the folder gets that file edited (a comment
appended; a JSON table a trailing newline) and the object-cache key of every job of the
default build (every default target, every default manifest) is computed against the copy
(builder/cache.py `CacheKeys`, the key `build` looks objects up by); a distinct object whose
key changed is one the next build compiles again. Nothing is compiled.

The `before` column is the rule up to 1d542b8, under which a Triton kernel's key held every
Python file of the folder, so that any edit to one recompiled every Triton object; it is
computed from the same job list (a Triton object changes with every `.py` file and with
nothing else of the folder; a data table was in no key). Prints a table and writes JSON (default
bench/results/rebuild_scope.json).

With `--rebuild FILE`, the targets are also built for real: cold into an empty object cache,
then again after FILE is edited, and the second build's compile count is checked against the
count the keys predicted (its wall time and compile-seconds beside the cold build's).

    .venv/bin/python bench/rebuild_scope.py [--targets GLOBS] [--rebuild FILE] [--out FILE]
        [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from miopenkernels.builder.cache import CacheKeys
from miopenkernels.builder.jobs import build_jobs
from miopenkernels.builder.manifest import load_manifests
from miopenkernels.compiler import is_triton_job, kernels_dir
from miopenkernels.target import select_targets
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent


def edit(path: Path) -> None:
    """Change `path` without changing what it means."""
    text = path.read_text()
    if path.suffix == ".json":
        path.write_text(text + "\n")
    elif path.suffix == ".py":
        path.write_text(text + "\n# edited by bench/rebuild_scope.py\n")
    else:
        path.write_text(text + "\n// edited by bench/rebuild_scope.py\n")


def object_keys(jobs: list, kernels: Path) -> dict[tuple, str]:
    """Each distinct job (as the build tells them apart: its key's inputs) -> its key."""
    keys = CacheKeys(kernels)
    return {_identity(job): keys.key(job) for job in jobs}


def _identity(job: object) -> tuple:
    return (job.kernel_file, job.kernel_name, tuple(job.options),  # type: ignore[attr-defined]
            job.target.name)  # type: ignore[attr-defined]


def _rebuild(targets: list, *, jobs_of: dict, base: Path, name: str, workers: int,
             console: Console) -> dict:
    """Build `targets` cold from a copy of `base`, edit `name` there and build again."""
    from miopenkernels.builder.build import build

    if not (base / name).is_file():
        raise SystemExit(f"--rebuild: no kernel file {name} in {base}; name a file of kernels/")
    work = base.parent / "rebuild"
    shutil.copytree(base, work / "kernels")
    common = dict(targets=targets, problems=[], out_dir=work / "kdb", cache_dir=work / "cache",
                  kernels=work / "kernels", jobs=jobs_of, workers=workers or None)
    phases = {}
    for phase in ("cold", "rebuild"):
        if phase == "rebuild":
            edit(work / "kernels" / name)
        console.print(f"[dim]{phase} build of {len(targets)} target(s) ...[/dim]")
        result = build(**common)  # type: ignore[arg-type]
        if not result.ok:
            raise SystemExit(f"{phase} build: {len(result.failures)} job(s) failed: "
                             f"{result.failures[0].message}")
        phases[phase] = {"compiled": result.compiled, "cached": result.cached,
                         "wall_seconds": round(result.wall_seconds, 1),
                         "compile_seconds": round(result.compile_seconds, 1)}
    return {"file": name, **phases}


def _before(name: str, triton_objects: int, now: int) -> int:
    """What an edit to `name` recompiled under the rule up to 1d542b8: every Triton object for
    a Python file, nothing for any other file a Triton kernel reads (a data table was in no
    key), the same as now for the C++ sources and headers (whose rule is unchanged)."""
    if name.endswith(".py"):
        return triton_objects
    if name.endswith((".hip", ".h")):
        return now
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default=None,
                        help="comma-separated target globs (default: every default target)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/rebuild_scope.json")
    parser.add_argument("--json", action="store_true", help="print the JSON instead of a table")
    parser.add_argument("--rebuild", default=None, metavar="FILE",
                        help="build the targets cold, edit FILE, build again (compiles)")
    parser.add_argument("--workers", type=int, default=0, help="parallel compiles (0: all cores)")
    args = parser.parse_args()
    console = Console(stderr=True)

    t0 = time.perf_counter()
    targets = select_targets(args.targets)
    plan = build_jobs(targets, load_manifests(None))
    jobs = [job for target in targets for job in plan.get(target, [])]
    plan_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="mk-scope-") as tmp_name:
        base = Path(tmp_name) / "base"
        shutil.copytree(kernels_dir(), base, ignore=shutil.ignore_patterns("__pycache__"))
        before = object_keys(jobs, base)
        objects = set(before.values())
        triton = {before[_identity(job)] for job in jobs if is_triton_job(job)}
        files = sorted(p.name for p in base.iterdir()
                       if p.is_file() and p.name != "__init__.py")
        rebuild = (_rebuild(targets, jobs_of=plan, base=base, name=args.rebuild,
                            workers=args.workers, console=console)
                   if args.rebuild else None)
        rows = []
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("editing each kernel file", total=len(files))
            for name in files:
                copy = Path(tmp_name) / "edited"
                if copy.exists():
                    shutil.rmtree(copy)
                shutil.copytree(base, copy)
                edit(copy / name)
                after = object_keys(jobs, copy)
                changed = {before[i] for i in before if after[i] != before[i]}
                rows.append({"file": name, "objects": len(changed),
                             "share": round(len(changed) / max(1, len(objects)), 4),
                             "before": _before(name, len(triton), len(changed))})
                progress.advance(task)

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True, check=False).stdout.strip()
    record = {
        "commit": commit,
        "python": sys.version.split()[0],
        "targets": [t.name for t in targets],
        "jobs": len(jobs),
        "objects": len(objects),
        "triton_objects": len(triton),
        "plan_seconds": round(plan_s, 2),
        "files": rows,
    }
    if rebuild is not None:
        predicted = next(r["objects"] for r in rows if r["file"] == args.rebuild)
        rebuild["predicted"] = predicted
        rebuild["agrees"] = rebuild["rebuild"]["compiled"] == predicted
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    if args.json:
        print(json.dumps(record, indent=1))
        return 0
    table = Table(title=f"objects an edit recompiles ({len(objects)} distinct objects over "
                        f"{len(targets)} targets, {len(triton)} of them Triton's)")
    for column in ("kernel file", "objects now", "share", "objects before"):
        table.add_column(column, justify="left" if column == "kernel file" else "right")
    for row in sorted(rows, key=lambda r: -r["objects"]):
        table.add_row(row["file"], str(row["objects"]), f"{row['share']:.1%}", str(row["before"]))
    Console().print(table)
    if rebuild is not None:
        cold, again = rebuild["cold"], rebuild["rebuild"]
        Console().print(
            f"real build of {', '.join(record['targets'])}: cold {cold['compiled']} objects in "
            f"{cold['wall_seconds']:.0f} s ({cold['compile_seconds']:.0f} compile-s); after "
            f"editing {args.rebuild}: {again['compiled']} compiled in "
            f"{again['wall_seconds']:.1f} s "
            f"({again['compile_seconds']:.0f} compile-s), {rebuild['predicted']} predicted"
            + ("" if rebuild["agrees"] else "  [red]DISAGREES[/red]"))
    console.print(f"[dim]wrote {args.out}[/dim]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The main job: every default target of dbs/targets.toml from the default manifest, cold.

Runs `build()` with a fresh object cache (so everything compiles), prints a table per target and
writes JSON (default bench/results/full_build-<N>cpu.json) with the wall time, the objects
compiled, the compile seconds per compiler and kernel family (`family_seconds`), the kdb and
raw object bytes per target, and the machine (cores, CPU model, load
average before and after: on a shared machine it explains slow numbers).

    .venv/bin/python bench/full_build.py [--workers N] [--out FILE] [--targets GLOB]
    .venv/bin/python bench/full_build.py --from-json bench/results/full_build-2cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from pathlib import Path

from miopenkernels.builder.build import build
from miopenkernels.builder.manifest import load_manifests
from miopenkernels.target import select_targets
from rich.console import Console
from rich.table import Table


def _load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def _tree() -> str:
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=Path(__file__).parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def _print_times(summary: dict) -> None:
    """Where the compile time went: per compiler and kernel family (the build's
    `family_seconds`), then per compiler, with each one's share of the total."""
    total = max(summary["compile_seconds"], 1e-9)
    compilers: dict[str, list[float]] = {}
    for name, f in summary["family_seconds"].items():
        slot = compilers.setdefault(name.split(" ", 1)[0], [0, 0.0])
        slot[0] += f["objects"]
        slot[1] += f["seconds"]
    for title, first, rows in (
            ("compile time by compiler and kernel family (summed over workers)",
             "compiler family",
             {k: (f["objects"], f["seconds"]) for k, f in summary["family_seconds"].items()}),
            ("compile time by compiler", "compiler",
             {k: tuple(v) for k, v in sorted(compilers.items(), key=lambda kv: -kv[1][1])})):
        table = Table(title=title)
        for col in (first, "objects", "seconds", "s/object", "share"):
            table.add_column(col, justify="right" if col != first else "left")
        for name, (objects, seconds) in rows.items():
            table.add_row(name, str(int(objects)), f"{seconds:.0f}",
                          f"{seconds / max(objects, 1):.2f}", f"{100 * seconds / total:.1f}%")
        Console().print(table)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--targets", default=None, help="Target globs (default: all defaults).")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--from-json", type=Path, default=None,
                        help="Print the compile-time tables of a saved result; build nothing.")
    args = parser.parse_args()
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        _print_times(saved)
        print(f"wall {saved['wall_seconds']:.0f} s, {saved['objects']} distinct objects, "
              f"{saved['compile_seconds']:.0f} s of compile time (tree {saved.get('tree')})")
        return 0
    console = Console(stderr=True)
    out = args.out or Path(__file__).parent / "results" / f"full_build-{os.cpu_count()}cpu.json"

    load_before = _load()
    tree = _tree()  # the commit the build starts from (HEAD may move while it runs)
    with tempfile.TemporaryDirectory(prefix="mk-full-build-") as tmp:
        done = [0]

        def progress(i: int, n: int) -> None:
            if i * 20 // n != done[0]:
                done[0] = i * 20 // n
                console.print(f"[dim]{i}/{n} objects[/dim]")

        result = build(select_targets(args.targets), load_manifests(None), Path(tmp) / "kdb",
                       workers=args.workers, cache_dir=Path(tmp) / "cache",
                       on_progress=progress)
        summary = result.to_dict()
        # The same build again, nothing changed: it must compile nothing.
        again = build(select_targets(args.targets), load_manifests(None), Path(tmp) / "kdb",
                      workers=args.workers, cache_dir=Path(tmp) / "cache").to_dict()
        rebuild = {k: again[k] for k in ("wall_seconds", "compiled", "cached", "objects", "ok")}
    load_after = _load()

    table = Table(title=f"full default build, {args.workers} workers")
    for col in ("target", "jobs", "compiled", "failed", "kdb MiB", "objects MiB"):
        table.add_column(col, justify="right" if col != "target" else "left")
    for t in summary["targets"]:
        table.add_row(t["target"], str(t["jobs"]), str(t["compiled"]), str(t["failed"]),
                      f"{t['kdb_bytes'] / 2**20:.1f}", f"{t['object_bytes'] / 2**20:.1f}")
    Console().print(table)
    _print_times(summary)
    Console().print(f"wall {summary['wall_seconds']:.0f} s, {summary['objects']} distinct objects; "
                    f"no-op rebuild {rebuild['wall_seconds']:.1f} s, {rebuild['compiled']} "
                    "compiled")

    record = {
        "machine": {"cores": os.cpu_count(), "cpu": platform.processor() or platform.machine(),
                    "load_before": load_before, "load_after": load_after},
        "command": "miopenkernels build (all default targets, default manifest, fresh cache)",
        "tree": tree,
        **summary,
        "rebuild": rebuild,
    }
    for t in record["targets"]:
        t.pop("kdb", None)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""The main job: every default target of dbs/targets.toml from the default manifest, cold.

Runs `build()` with a fresh object cache (so everything compiles), prints a table per target and
writes JSON (default bench/results/full_build-<N>cpu.json) with the wall time, the objects
compiled, the compile seconds per compiler and kernel family (`family_seconds`), the kdb and
raw object bytes per target, and the machine (cores, CPU model, load
average before and after: on a shared machine it explains slow numbers).

    .venv/bin/python bench/full_build.py [--workers N] [--out FILE] [--targets GLOB]
    .venv/bin/python bench/full_build.py --from-json bench/results/full_build-2cpu.json
    .venv/bin/python bench/full_build.py --from-json NEW.json --against OLD.json

`--against` compares two saved results per compiler over the kernel families that compiled as
many objects in both: the families whose sources a change did not touch time the box itself
(its speed moves between runs by a third), and the wall time is also given at the other run's
speed, scaled by the non-Triton families' ratio (an estimate, marked as one).
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


def _print_against(saved: dict, base: dict) -> None:
    """Compile seconds here over there per compiler, over the families of equal object counts;
    the wall time at the base run's speed by the non-Triton families' ratio."""
    here, there = saved["family_seconds"], base["family_seconds"]
    same = [k for k in here if k in there and here[k]["objects"] == there[k]["objects"]]
    per: dict[str, list[float]] = {}
    for name in same:
        slot = per.setdefault(name.split(" ", 1)[0], [0, 0.0, 0.0])
        slot[0] += here[name]["objects"]
        slot[1] += there[name]["seconds"]
        slot[2] += here[name]["seconds"]
    table = Table(title=f"families of equal object counts: tree {saved.get('tree')} against "
                        f"{base.get('tree')}")
    for col in ("compiler", "objects", "seconds there", "seconds here", "ratio"):
        table.add_column(col, justify="right" if col != "compiler" else "left")
    for name, (objects, a, b) in sorted(per.items()):
        table.add_row(name, str(int(objects)), f"{a:.0f}", f"{b:.0f}", f"{b / max(a, 1e-9):.2f}")
    Console().print(table)
    others = [v for k, v in per.items() if k != "triton"]
    a, b = sum(v[1] for v in others), sum(v[2] for v in others)
    if a > 0:
        ratio = b / a
        wall = saved["wall_seconds"]
        print(f"non-Triton families {ratio:.2f}x the base run's compile time; wall {wall:.0f} s "
              f"here, an estimated {wall / ratio:.0f} s at the base run's speed (base: "
              f"{base['wall_seconds']:.0f} s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--targets", default=None, help="Target globs (default: all defaults).")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--from-json", type=Path, default=None,
                        help="Print the compile-time tables of a saved result; build nothing.")
    parser.add_argument("--against", type=Path, default=None,
                        help="With --from-json: compare with another saved result.")
    args = parser.parse_args()
    if args.against and not args.from_json:
        parser.error("--against compares saved results: give --from-json too")
    if args.from_json:
        try:
            saved = json.loads(args.from_json.read_text())
            base = json.loads(args.against.read_text()) if args.against else None
        except (OSError, ValueError) as exc:
            print(f"full_build: cannot read a saved result: {exc}")
            return 3
        _print_times(saved)
        print(f"wall {saved['wall_seconds']:.0f} s, {saved['objects']} distinct objects, "
              f"{saved['compile_seconds']:.0f} s of compile time (tree {saved.get('tree')})")
        if base is not None:
            _print_against(saved, base)
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

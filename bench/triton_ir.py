"""Triton IR shared between targets (library/compiler/triton_ir.py): what it saves, and that
the objects stay the same bytes.

Takes the default build's Triton jobs (every default target, the default manifests), the
distinct objects as the build counts them, every K-th of each kernel family, and compiles each
twice, one process, in the build's target order:
- from the source alone, as before (`compile_job` without an IR folder);
- through one fresh IR folder, as the build now does: a target whose code-generator module
  another target left starts from it.
It prints per target the objects, how many started from shared IR, their seconds both ways and
whether every object is byte-identical, and writes JSON (default
bench/results/triton_ir-<N>cpu.json) with the machine. Run it on an idle box: it is timing.

    .venv/bin/python bench/triton_ir.py [--every K] [--targets GLOB] [--out FILE] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from miopenkernels.builder.cache import CacheKeys
from miopenkernels.builder.jobs import build_jobs
from miopenkernels.builder.manifest import load_manifests
from miopenkernels.compiler import compile_job, is_triton_job
from miopenkernels.target import select_targets
from rich.console import Console
from rich.progress import Progress
from rich.table import Table


def sample(targets: list[Any], every: int) -> list[tuple[Any, Any]]:
    """(target, job) of the distinct Triton objects (as the build counts them) of every
    `every`-th job of each kernel family, a job being its file, kernel and options: all the
    targets' objects of a job picked, in the build's order (targets as given)."""
    keys = CacheKeys()
    plan = build_jobs(targets, load_manifests())
    seen: set[str] = set()
    groups: dict[tuple[str, str, tuple[str, ...]], list[tuple[Any, Any]]] = {}
    for target in targets:
        for job in plan.get(target, []):
            key = keys.key(job) if is_triton_job(job) else ""
            if not key or key in seen:
                continue
            seen.add(key)
            groups.setdefault((job.kernel_file, job.kernel_name, job.options), []).append(
                (target, job))
    count: dict[tuple[str, str], int] = {}
    picked = []
    for (file, kernel, _), objects in groups.items():
        n = count[(file, kernel)] = count.get((file, kernel), 0) + 1
        if (n - 1) % every == 0:
            picked += objects
    order = {t: i for i, t in enumerate(targets)}
    return sorted(picked, key=lambda tj: order[tj[0]])


def measure(picked: list[tuple[Any, Any]], progress: Progress) -> list[dict[str, Any]]:
    rows = []
    task = progress.add_task("compiling twice", total=len(picked))
    with tempfile.TemporaryDirectory(prefix="mk-ir-") as tmp:
        folder = Path(tmp) / "triton-ir"
        for target, job in picked:
            start = time.perf_counter()
            alone = compile_job(job)
            alone_s = time.perf_counter() - start
            before = sum(1 for _ in folder.rglob("*.ttir")) if folder.exists() else 0
            start = time.perf_counter()
            shared = compile_job(job, triton_ir=folder)
            shared_s = time.perf_counter() - start
            after = sum(1 for _ in folder.rglob("*.ttir"))
            rows.append({"target": target.name, "family": f"{job.kernel_file}:{job.kernel_name}",
                         "from_ir": after == before, "identical": alone == shared,
                         "source_seconds": round(alone_s, 3),
                         "shared_seconds": round(shared_s, 3)})
            progress.advance(task)
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        s = out.setdefault(r["target"], {"objects": 0, "from_ir": 0, "identical": 0,
                                         "source_seconds": 0.0, "shared_seconds": 0.0,
                                         "from_ir_source_seconds": 0.0,
                                         "from_ir_shared_seconds": 0.0})
        s["objects"] += 1
        s["from_ir"] += r["from_ir"]
        s["identical"] += r["identical"]
        s["source_seconds"] += r["source_seconds"]
        s["shared_seconds"] += r["shared_seconds"]
        if r["from_ir"]:
            s["from_ir_source_seconds"] += r["source_seconds"]
            s["from_ir_shared_seconds"] += r["shared_seconds"]
    for s in out.values():
        for k in list(s):
            if k.endswith("seconds"):
                s[k] = round(s[k], 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=int, default=8, help="Every K-th object of each family.")
    ap.add_argument("--targets", default="", help="Target globs (default: all defaults).")
    ap.add_argument("--out", default=f"bench/results/triton_ir-{os.cpu_count()}cpu.json")
    ap.add_argument("--json", action="store_true", help="Print the JSON, not the table.")
    args = ap.parse_args()
    if args.every < 1:
        ap.error("--every must be at least 1")
    targets = select_targets([g for g in args.targets.split(",") if g] or None)
    console = Console(stderr=args.json)
    with Progress(console=console, transient=True) as progress:
        rows = measure(sample(targets, args.every), progress)
    per_target = summarise(rows)
    total = {k: sum(s[k] for s in per_target.values()) for k in next(iter(per_target.values()))}
    result = {
        "machine": {"cores": os.cpu_count(), "cpu": platform.processor() or platform.machine(),
                    "load": [round(v, 2) for v in os.getloadavg()]},
        "every": args.every, "targets": per_target,
        "total": {k: round(v, 2) if isinstance(v, float) else v for k, v in total.items()},
        "rows": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
        return
    table = Table(title=f"Triton IR shared between targets (every {args.every}-th object)")
    for col in ("target", "objects", "from IR", "identical", "source s", "shared s",
                "from-IR objects: source s", "shared s "):
        table.add_column(col, justify="left" if col == "target" else "right")
    for name, s in [*per_target.items(), ("all", result["total"])]:
        table.add_row(name, str(s["objects"]), str(s["from_ir"]), str(s["identical"]),
                      f"{s['source_seconds']:.1f}", f"{s['shared_seconds']:.1f}",
                      f"{s['from_ir_source_seconds']:.1f}", f"{s['from_ir_shared_seconds']:.1f}")
    console.print(table)
    console.print(f"written {args.out}")


if __name__ == "__main__":
    main()

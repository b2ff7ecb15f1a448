"""How the Triton objects change the full default build, estimated without running it.

Plans the full build (every default target, default manifests; no compile) and counts its
distinct objects by compiler, as the object cache keys them (one per arch). Then compiles a
sample of Triton jobs of two archs (sm90, gfx942) one at a time with a cold Triton cache and
takes the mean CPU seconds per object (this process and its children, e.g. ptxas: on a shared
machine the wall clock says more about the neighbours than about the compile; the wall clock
is recorded beside it). The estimate of the Triton objects' share of the build is
objects x mean seconds / workers; the C++ objects are compared with the measured full build
(bench/results/full_build-2cpu.json: its compile seconds per object).

    .venv/bin/python bench/triton_build_estimate.py [--sample N] [--workers N] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from _machine import cpu_seconds
from miopenkernels.builder.jobs import build_jobs
from miopenkernels.builder.manifest import load_manifests
from miopenkernels.compiler import compile_job, is_triton_job
from miopenkernels.target import default_targets
from rich.console import Console
from rich.table import Table

RESULTS = Path(__file__).parent / "results"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=6, help="Triton jobs timed per arch.")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path,
                        default=RESULTS / f"triton_build_estimate-{os.cpu_count()}cpu.json")
    args = parser.parse_args()
    console = Console()
    targets = default_targets()
    plan = build_jobs(targets, load_manifests(None))
    keys: dict[str, dict[tuple[str, str, str], object]] = {"triton": {}, "c++": {}}
    per_arch: dict[str, list[int]] = {}
    for target, jobs in plan.items():
        for job in jobs:
            kind = "triton" if is_triton_job(job) else "c++"
            key = (job.kdb_name, job.kdb_args, target.arch)
            if key not in keys[kind]:
                keys[kind][key] = job
                per_arch.setdefault(target.arch, [0, 0])[kind == "c++"] += 1
    samples: dict[str, list[float]] = {}
    walls: dict[str, list[float]] = {}
    load_before = [round(v, 2) for v in os.getloadavg()]
    for arch in ("sm90", "gfx942"):
        jobs = [j for (_, _, a), j in keys["triton"].items() if a == arch][: args.sample]
        for job in jobs:
            start, cpu = time.perf_counter(), cpu_seconds()
            compile_job(job)
            samples.setdefault(arch, []).append(cpu_seconds() - cpu)
            walls.setdefault(arch, []).append(time.perf_counter() - start)
    load_after = [round(v, 2) for v in os.getloadavg()]
    mean = {a: sum(v) / len(v) for a, v in samples.items()}
    per_object = sum(mean.values()) / len(mean)
    full = json.loads((RESULTS / "full_build-2cpu.json").read_text())
    cxx_per_object = full["compile_seconds"] / full["objects"]
    n_triton, n_cxx = len(keys["triton"]), len(keys["c++"])
    triton_wall = n_triton * per_object / args.workers
    cxx_wall = n_cxx * cxx_per_object / args.workers
    old_wall = full["wall_seconds"]
    table = Table(title="Full default build: objects by compiler (distinct cache keys)")
    for col in ("arch", "triton objects", "c++ objects"):
        table.add_column(col, justify="right")
    for arch, (t, c) in per_arch.items():
        table.add_row(arch, str(t), str(c))
    table.add_row("all", str(n_triton), str(n_cxx))
    console.print(table)
    console.print(f"Triton: {', '.join(f'{a} {m:.2f} s' for a, m in mean.items())} CPU per object "
                  f"(load {load_before} -> {load_after}); C++ {cxx_per_object:.2f} compile-s "
                  f"per object in the measured build")
    console.print(f"estimate on {args.workers} workers: Triton {triton_wall / 60:.1f} min + C++ "
                  f"{cxx_wall / 60:.1f} min = {(triton_wall + cxx_wall) / 60:.1f} min "
                  f"(measured before the Triton solvers: {old_wall / 60:.1f} min wall, "
                  f"{full['objects']} objects)")
    report = {
        "command": "plan of the full default build + sequential Triton compiles of a sample",
        "machine": {"cores": os.cpu_count(), "load_before": load_before,
                    "load_after": load_after},
        "triton_objects": n_triton, "cxx_objects": n_cxx,
        "per_arch": {a: {"triton": t, "cxx": c} for a, (t, c) in per_arch.items()},
        "triton_cpu_seconds_per_object": {a: round(m, 3) for a, m in mean.items()},
        "triton_samples_cpu": {a: [round(s, 3) for s in v] for a, v in samples.items()},
        "triton_samples_wall": {a: [round(s, 3) for s in v] for a, v in walls.items()},
        "cxx_compile_seconds_per_object_measured": round(cxx_per_object, 3),
        "workers": args.workers,
        "estimate_minutes": {"triton": round(triton_wall / 60, 1),
                             "cxx": round(cxx_wall / 60, 1),
                             "total": round((triton_wall + cxx_wall) / 60, 1)},
        "measured_before_minutes": round(old_wall / 60, 1),
    }
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

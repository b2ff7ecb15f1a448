"""Compile cost per object of a slice of the default build, one object at a time.

Plans the full default build (every default target and manifest, no compile), takes its
distinct objects whose kernel (a Triton symbol or a HIP source file) and options match, per
arch, and compiles each in this process, cold: CPU seconds of this process and its children
(clang, lld, ptxas) per object, which a busy neighbour does not inflate as it does the wall
clock. `--kernels DIR` compiles from another kernels folder (e.g. an older tree's, from
`git archive REV kernels | tar -x -C DIR`), `--hipcc-itself` runs Debian's hipcc script rather
than the clang command it prints: the before and after of a change to what the build compiles
or how. Prints a table and writes JSON.

    .venv/bin/python bench/compile_cost.py --kernel depthwise_conv --option -DTAPS_R=7 \\
        --archs sm90,gfx942,gfx1100 [--kernels DIR] [--hipcc-itself] [--limit N] [--out F]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from _machine import cpu_seconds
from miopenkernels.builder.jobs import build_jobs
from miopenkernels.builder.manifest import load_manifests
from miopenkernels.compiler import compile_job
from miopenkernels.target import default_targets
from rich.console import Console
from rich.table import Table


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", required=True,
                    help="a Triton kernel symbol or a HIP source file (conv_1x1.hip)")
    ap.add_argument("--option", action="append", default=[],
                    help="an option the job must have (repeatable), e.g. -DTAPS_R=7")
    ap.add_argument("--archs", required=True, help="comma-separated archs, e.g. sm90,gfx906")
    ap.add_argument("--kernels", type=Path, default=None, help="kernels folder to compile from")
    ap.add_argument("--hipcc-itself", action="store_true",
                    help="run the hipcc script, not the clang command it prints")
    ap.add_argument("--limit", type=int, default=12, help="objects per arch at most")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.hipcc_itself:  # the registry's hipcc as a plain clang driver: the script runs
        from miopenkernels.compiler import COMPILERS
        from miopenkernels.compiler.amd import HIPCC, HipClang

        COMPILERS["hipcc"] = HipClang(HIPCC.name, HIPCC.executable, HIPCC.flags, HIPCC.env)
    archs = args.archs.split(",")
    plan = build_jobs([t for t in default_targets() if t.arch in archs], load_manifests(None))
    picked: dict[str, dict[tuple[str, str], object]] = {a: {} for a in archs}
    for target, jobs in plan.items():
        for job in jobs:
            if args.kernel not in (job.kernel_name, job.kernel_file):
                continue
            if all(o in job.options for o in args.option):
                picked[target.arch].setdefault((job.kdb_name, job.kdb_args), job)
    console = Console(stderr=True)
    rows = {}
    for arch in archs:
        jobs = list(picked[arch].values())[: args.limit]
        seconds = []
        for job in jobs:
            cpu, start = cpu_seconds(), time.perf_counter()
            compile_job(job, args.kernels)
            seconds.append((cpu_seconds() - cpu, time.perf_counter() - start))
        if seconds:
            rows[arch] = {"objects": len(seconds),
                          "cpu_s_mean": round(sum(c for c, _ in seconds) / len(seconds), 3),
                          "wall_s_mean": round(sum(w for _, w in seconds) / len(seconds), 3)}
    table = Table(title=f"compile cost: {args.kernel} {' '.join(args.option)}")
    for col in ("arch", "objects", "CPU s/object", "wall s/object"):
        table.add_column(col, justify="right")
    for arch, r in rows.items():
        table.add_row(arch, str(r["objects"]), f"{r['cpu_s_mean']:.2f}", f"{r['wall_s_mean']:.2f}")
    Console().print(table)
    report = {"kernel": args.kernel, "options": args.option,
              "kernels_dir": str(args.kernels) if args.kernels else None,
              "hipcc_itself": args.hipcc_itself, "archs": rows}
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
        console.print(f"wrote {args.out}")
    return 0 if rows else 1


if __name__ == "__main__":
    raise SystemExit(main())

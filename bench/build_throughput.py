"""Build throughput: how fast `miopenkernels build` turns a fixed set of jobs into kdbs.

Fixed subset: the forward FP32 NCHW layers of ResNet-50 (dbs/manifests/resnet50.txt) for
gfx906-60 (hipcc), gfx90a-110 (hipcc), gfx1100-48 (clang-19) and sm90-132 (NVRTC), with the real
solver registry. Measured, each with a fresh object cache unless said otherwise:
  cold build with -j1 and with -jN (N = all cores), parallel efficiency = t1 / (N * tN);
  a no-op rebuild (everything cached); a rebuild after touching one kernel (conv_direct.hip);
  kdb bytes against the raw code-object bytes they hold.
Prints a table and writes JSON (default bench/results/build_throughput-<N>cpu.json). The machine's
load average is recorded before and after: on a shared machine it explains slow numbers.

    .venv/bin/python bench/build_throughput.py [--workers N] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import sys
import tempfile
from pathlib import Path

from _machine import cpu_model
from miopenkernels.builder.build import BuildResult, build
from miopenkernels.builder.jobs import build_jobs
from miopenkernels.builder.manifest import load_manifest
from miopenkernels.compiler import COMPILERS, kernels_dir
from miopenkernels.target import select_targets
from rich.console import Console
from rich.table import Table

TARGETS = "gfx906-60,gfx90a-110,gfx1100-48,sm90-132"
TOUCHED = "conv_direct.hip"



def _timed(label: str, console: Console, **kwargs: object) -> BuildResult:
    console.print(f"[dim]{label} ...[/dim]")
    result = build(**kwargs)  # type: ignore[arg-type]
    if not result.ok:
        for failure in result.failures[:3]:
            console.print(f"[red]{failure.message}[/red]\n{failure.log[-2000:]}")
        raise SystemExit(f"{label}: {len(result.failures)} job(s) failed")
    console.print(f"[dim]{label}: {result.wall_seconds:.1f} s, {result.compiled} compiled[/dim]")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    console = Console(stderr=True)

    targets = select_targets(TARGETS)
    problems = [p for p in load_manifest("resnet50")
                if p.direction == "F" and p.data_type == "FP32" and p.layout == "NCHW"]
    plan = build_jobs(targets, problems)
    n_jobs = sum(len(j) for j in plan.values())
    load_before = os.getloadavg()

    with tempfile.TemporaryDirectory(prefix="mk-bench-") as tmp_name:
        tmp = Path(tmp_name)
        kernels = tmp / "kernels"
        shutil.copytree(kernels_dir(), kernels)
        common = dict(targets=targets, problems=problems, kernels=kernels, jobs=plan)
        cold1 = _timed("cold -j1", console, out_dir=tmp / "o1", cache_dir=tmp / "c1",
                       workers=1, **common)
        coldn = _timed(f"cold -j{args.workers}", console, out_dir=tmp / "on",
                       cache_dir=tmp / "cn", workers=args.workers, **common)
        noop = _timed("no-op rebuild", console, out_dir=tmp / "on", cache_dir=tmp / "cn",
                      workers=args.workers, **common)
        src = kernels / TOUCHED
        src.write_text(src.read_text() + "\n// touched by bench/build_throughput.py\n")
        touched = _timed(f"rebuild after touching {TOUCHED}", console, out_dir=tmp / "on",
                         cache_dir=tmp / "cn", workers=args.workers, **common)
    load_after = os.getloadavg()

    kdb_bytes = sum(t.kdb_bytes for t in coldn.targets)
    raw_bytes = sum(t.object_bytes for t in coldn.targets)
    efficiency = cold1.wall_seconds / (args.workers * coldn.wall_seconds)
    data = {
        "benchmark": "build_throughput",
        "subset": {"manifest": "resnet50", "filter": "forward FP32 NCHW",
                   "problems": len(problems), "targets": TARGETS.split(",")},
        "machine": {"host": socket.gethostname(), "cpus": os.cpu_count(), "cpu": cpu_model(),
                    "python": sys.version.split()[0], "platform": platform.platform(),
                    "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in load_after]},
        "compilers": {name: c.identity() for name, c in COMPILERS.items()},
        "jobs": n_jobs,
        "objects": coldn.objects,
        "workers": args.workers,
        "cold_j1_seconds": round(cold1.wall_seconds, 2),
        "cold_jN_seconds": round(coldn.wall_seconds, 2),
        "compile_seconds_summed": round(coldn.compile_seconds, 2),
        "parallel_efficiency": round(efficiency, 3),
        "objects_per_second_jN": round(coldn.compiled / coldn.wall_seconds, 2),
        "noop_rebuild_seconds": round(noop.wall_seconds, 2),
        "noop_rebuild_compiled": noop.compiled,
        "touched_kernel": TOUCHED,
        "touched_rebuild_seconds": round(touched.wall_seconds, 2),
        "touched_rebuild_compiled": touched.compiled,
        "kdb_bytes": kdb_bytes,
        "raw_object_bytes": raw_bytes,
        "kdb_to_raw_ratio": round(kdb_bytes / raw_bytes, 3) if raw_bytes else None,
        "per_target": [t.to_dict() | {"kdb": None} for t in coldn.targets],
    }

    table = Table(title=f"build throughput: ResNet-50 FP32 forward, {len(targets)} targets, "
                        f"{n_jobs} jobs")
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows = [
        ("jobs / distinct objects", f"{n_jobs} / {coldn.objects}"),
        ("cold build -j1", f"{cold1.wall_seconds:.1f} s"),
        (f"cold build -j{args.workers}", f"{coldn.wall_seconds:.1f} s"),
        ("parallel efficiency", f"{efficiency:.0%}"),
        ("objects per second", f"{data['objects_per_second_jN']}"),
        ("no-op rebuild", f"{noop.wall_seconds:.2f} s ({noop.compiled} compiled)"),
        (f"rebuild after touching {TOUCHED}",
         f"{touched.wall_seconds:.1f} s ({touched.compiled} compiled)"),
        ("kdb bytes / raw object bytes", f"{kdb_bytes} / {raw_bytes} "
                                         f"({data['kdb_to_raw_ratio']})"),
        ("load average before / after", f"{load_before[0]:.1f} / {load_after[0]:.1f}"),
    ]
    for row in rows:
        table.add_row(*row)
    Console().print(table)

    name = f"build_throughput-{os.cpu_count()}cpu.json"
    out = args.out or Path(__file__).parent / "results" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
    console.print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

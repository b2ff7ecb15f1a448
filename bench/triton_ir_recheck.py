"""The objects bench/triton_ir.py found differing between a compile from the source and one from
shared TTIR, checked again (no GPU): for every sampled job of each differing target and kernel
family, whether its code-generator module equals the one the class's first target makes (the
one whose IR it started from), and the digests of RUNS compiles from the source alone. Where
the module is the same and the compiles from the source differ among themselves, the
difference is the backend's (ptxas), not the shared IR's.

    python bench/triton_ir_recheck.py RUN.json [--runs 3] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any


def recheck(run: dict[str, Any], runs: int) -> list[dict[str, Any]]:
    import triton_ir as bench
    from miopenkernels.compiler import compile_job, triton_arch
    from miopenkernels.target import select_targets
    from triton_ir_classes import job_key, module

    targets = select_targets(None)
    archs = list(dict.fromkeys(triton_arch(t) for t in targets))
    differing = {(r["target"], r["family"]) for r in run["rows"] if not r["identical"]}
    out = []
    for target, job in bench.sample(targets, int(run["every"])):
        if (str(target.name), f"{job.kernel_file}:{job.kernel_name}") not in differing:
            continue
        arch = triton_arch(job.target)
        key = job_key(job, arch)
        first = next(a for a in archs if job_key(job, a) == key)
        digests = [hashlib.sha256(compile_job(job)).hexdigest()[:12] for _ in range(runs)]
        out.append({"target": target.name, "family": f"{job.kernel_file}:{job.kernel_name}",
                    "options": list(job.options), "class_first": first,
                    "same_module": module(job, arch) == module(job, first),
                    "source_digests": digests})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a bench/triton_ir.py JSON")
    ap.add_argument("--runs", type=int, default=3, help="compiles from the source per job")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args(argv)
    try:
        run = json.loads(args.run.read_text())
    except (OSError, ValueError) as exc:
        print(f"triton_ir_recheck: cannot read {args.run}: {exc}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    rows = recheck(run, args.runs)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        print(f"{r['target']} {r['family']}: module as {r['class_first']}'s: {r['same_module']}; "
              f"from the source {' '.join(r['source_digests'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

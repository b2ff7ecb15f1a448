"""Which solver each default manifest problem's specialised binary is for, per default target:
the build's choice (builder/jobs.py `specialisations`: a FindDb record's first solution, else
immediate mode's first choice) against the solvers' own estimates (the best `heuristic_rank`,
what a build without a record once specialised). No GPU.

Prints a table (per target: problems, those with a record, those whose two choices differ, and
how many of the estimates' choices are TF32 solvers, which run only under the TF32 math mode)
and, with --out, writes it as JSON.

    python bench/specialised_picks.py [--targets sm80-108,gfx942-304] [--out FILE] [--json]

Exit codes: 0 done; 2 an unknown target.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def compare(target_names: list[str] | None = None) -> dict[str, Any]:
    """{target: {problems, recorded, differ, estimate_tf32}} over the default manifests."""
    from miopenkernels.builder import jobs
    from miopenkernels.builder.manifest import load_manifests
    from miopenkernels.solvers import applicable_solvers
    from miopenkernels.target import Target, default_targets

    targets = [Target.parse(n) for n in target_names] if target_names else default_targets()
    problems = list(dict.fromkeys(load_manifests()))
    out: dict[str, Any] = {}
    for target in targets:
        dbs = jobs.TargetDbs(target)
        row = {"problems": 0, "recorded": 0, "differ": 0, "estimate_tf32": 0}
        for p in problems:
            chosen = jobs.specialisations(p, target, dbs)
            if not chosen:
                continue
            row["problems"] += 1
            if dbs.fastest(p):
                row["recorded"] += 1
                continue
            estimate = min(applicable_solvers(p, target),
                           key=lambda s, p=p: jobs._rank(s, p, target))
            row["differ"] += estimate.name != chosen[0].solver.name
            row["estimate_tf32"] += estimate.math == "tf32"
        out[target.name] = row
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", help="comma-separated targets (default: the build's)")
    ap.add_argument("--out", type=Path, help="write the table as JSON here")
    ap.add_argument("--json", action="store_true", help="print the table as JSON")
    args = ap.parse_args(argv)
    from miopenkernels.errors import MIOpenKernelsError

    try:
        table = compare(args.targets.split(",") if args.targets else None)
    except MIOpenKernelsError as exc:
        print(f"specialised_picks: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(table, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    if args.json:
        print(text)
        return 0
    from rich.console import Console
    from rich.table import Table

    view = Table("target", "problems", "with a record", "differ", "estimate TF32")
    for name, row in table.items():
        view.add_row(name, *(str(row[k]) for k in ("problems", "recorded", "differ",
                                                    "estimate_tf32")))
    Console().print(view)
    return 0


if __name__ == "__main__":
    sys.exit(main())

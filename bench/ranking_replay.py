"""The miss ranking replayed over the zoo without a GPU: for every distinct zoo problem (the
held-out networks' too) at one batch, per type, direction and layout, the solver and parameters
immediate mode would run first with a package's objects at hand (every solver's
`dynamic_jobs` for the target: what `miopenkernels build` ships beside the manifests'
records), no database consulted. Two replays (of two trees) compared show which picks a
ranking change moves.

    python bench/ranking_replay.py --out bench/results/ranking_replay_66c63c2 [--target sm90-132]
        [--types FP16] [--directions F,B,W] [--layouts NCHW,NHWC] [--batch 32]
    python bench/ranking_replay.py --compare OLD.json NEW.json [--json]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def package_at_hand(solvers: Any, target: Any) -> Any:
    """`at_hand(solver, params, problem)` of a package built for `target` from `solvers`:
    every object a call runs is among their `dynamic_jobs` (what `miopenkernels build` ships
    beside the manifests' records); a solver with no objects of its own (portable, built, a
    library) is always at hand."""
    from miopenkernels.solvers import launch_jobs

    shipped: set = set()
    for solver in solvers:
        shipped.update(solver.dynamic_jobs(target))

    def at_hand(solver: Any, params: Any, problem: Any) -> bool:
        if not solver.dynamic_jobs(target):
            return True
        try:
            return all(j in shipped for j in launch_jobs(solver, problem, params, target))
        except Exception:  # noqa: BLE001 - a launch it cannot make: not at hand
            return False

    return at_hand


def replay(target_name: str, types: list[str], directions: list[str], layouts: list[str],
           batch: int) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    import zoo
    from miopenkernels.ranking import rank_candidates
    from miopenkernels.solvers import SOLVERS
    from miopenkernels.target import Target

    target = Target.parse(target_name)
    in_package = package_at_hand(SOLVERS, target)
    picks: dict[str, Any] = {}
    for layer in zoo.load_layers(held_out=True):
        for t in types:
            for d in directions:
                for layout in layouts:
                    p = zoo.layer_problem(layer, t, d, layout, batch)
                    key = str(p.key())
                    if key in picks:
                        continue
                    solvers = [s for s in SOLVERS if s.is_applicable(p, target)]
                    ranked = rank_candidates(p, target, solvers,
                                             lambda s, q, p=p: in_package(s, q, p))
                    picks[key] = {"network": layer.network, "layer": layer.name,
                                  "held_out": layer.held_out,
                                  "solver": ranked[0].solver.name if ranked else None,
                                  "params": list(ranked[0].params) if ranked else None}
    return {"target": target_name, "batch": batch, "picks": picks}


def compare(old: dict, new: dict) -> dict[str, Any]:
    a, b = old["picks"], new["picks"]
    moved = {k: (a[k]["solver"], b[k]["solver"]) for k in a.keys() & b.keys()
             if a[k]["solver"] != b[k]["solver"]}
    return {"problems": len(a.keys() & b.keys()), "moved": len(moved),
            "by_pair": {f"{x} -> {y}": n for (x, y), n in
                        collections.Counter(moved.values()).most_common()},
            "rows": {k: {"network": b[k]["network"], "layer": b[k]["layer"], "old": x, "new": y}
                     for k, (x, y) in sorted(moved.items())}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="path stem of the .json replay")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"))
    ap.add_argument("--json", action="store_true", help="with --compare: print JSON")
    ap.add_argument("--target", default="sm90-132")
    ap.add_argument("--types", default="FP16")
    ap.add_argument("--directions", default="F,B,W")
    ap.add_argument("--layouts", default="NCHW,NHWC")
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args(argv)
    if args.compare:
        try:
            old, new = (json.loads(f.read_text()) for f in args.compare)
            found = compare(old, new)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            print(f"ranking_replay: {args.compare[0]} and {args.compare[1]} are not two "
                  f"replays ({exc})", file=sys.stderr)
            return 2
        if args.json:
            print(json.dumps(found, indent=1))
            return 0
        print(f"{found['moved']} of {found['problems']} picks moved")
        for pair, n in found["by_pair"].items():
            print(f"  {n:4d}  {pair}")
        return 0
    if not args.out:
        ap.error("--out is required (or --compare)")
    result = replay(args.target, args.types.split(","), args.directions.split(","),
                    args.layouts.split(","), args.batch)
    Path(args.out + ".json").write_text(json.dumps(result, separators=(",", ":")))
    print(f"{len(result['picks'])} problems replayed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

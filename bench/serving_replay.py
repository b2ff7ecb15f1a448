"""Replay a serving run's ranked shapes through the current miss ranking, without a GPU.

bench/serving.py records, per shape no database holds, the solution the ranking chose, its
steady-state time, and the best (solver, parameters) the package holds with its time. This
script makes the same first call on the null backend against a package built here (the same
kdb and databases as the run's) and scores the choice with those recorded times: the best ->
no regret, the run's own choice -> its recorded regret, anything else -> not measured (counted
apart). It measures a change to the ranking against a GPU run without the GPU; the run itself
stays the figure of record.

    python bench/serving_replay.py --system-db DIR bench/results/serving_h200.json [--json]
        [--out bench/results/serving_replay_h200.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def replay(result: dict, system_db: Path) -> dict[str, dict[str, object]]:
    os.environ["MIOPEN_SYSTEM_DB_PATH"] = str(system_db)
    os.environ["MIOPEN_USER_DB_PATH"] = tempfile.mkdtemp(prefix="user")
    os.environ["MIOPEN_CUSTOM_CACHE_DIR"] = tempfile.mkdtemp(prefix="cache")
    sys.path.insert(0, str(HERE))
    import serving
    from miopenkernels.handle import Handle
    from miopenkernels.invoke import ranked_solutions

    out: dict[str, dict[str, object]] = {}
    for dtype, engines in result["engines"].items():
        rows = engines.get("miopenkernels", {}).get("rows", [])
        problems = {p.key(): p for p in serving.shapes(dtype)}
        handle = Handle(target="sm90-132")
        scored: list[float] = []
        kept = best = unmeasured = 0
        for row in rows:
            if row["source"] == "finddb" or "regret" not in row:
                continue
            pick = ranked_solutions(handle, problems[row["key"]])[0]
            name = f"{pick.solver}({list(pick.params or ())})"
            if name == row["best"]:
                scored.append(0.0)
                best += 1
            elif name == f"{row['solver']}({row['params']})":
                scored.append(max(0.0, float(row["regret"])))
                kept += 1
            else:
                unmeasured += 1
        out[dtype] = {
            "ranked_shapes": len(scored) + unmeasured, "best": best, "as_recorded": kept,
            "not_measured": unmeasured,
            "regret_geomean": round(math.exp(statistics.fmean(math.log1p(r) for r in scored))
                                    - 1, 4) if scored else None,
            "recorded_regret_geomean": result["summary"][dtype].get("regret_geomean"),
            "regret_p95": round(serving._pct(scored, 95), 4) if scored else None,
            "recorded_regret_p95": result["summary"][dtype].get("regret_p95")}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("result", type=Path, help="a bench/serving.py JSON (e.g. serving_h200.json)")
    ap.add_argument("--system-db", type=Path, required=True,
                    help="folder with the sm90-132 package's kdb and databases")
    ap.add_argument("--json", action="store_true", help="print JSON")
    ap.add_argument("--out", type=Path, help="also write the scores, the run and the tree here")
    args = ap.parse_args()
    out = replay(json.loads(args.result.read_text()), args.system_db)
    if args.out:
        import subprocess

        tree = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=HERE).stdout.strip()
        args.out.write_text(json.dumps({"run": args.result.name, "tree": tree, "types": out},
                                       indent=1) + "\n")
    if args.json:
        print(json.dumps(out))
        return 0
    print("| type | ranked shapes | picks the best | as recorded | not measured | regret geomean "
          "(measured picks) | recorded | regret p95 (measured picks) | recorded |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for dtype, s in out.items():
        print(f"| {dtype} | {s['ranked_shapes']} | {s['best']} | {s['as_recorded']} | "
              f"{s['not_measured']} | {s['regret_geomean']} | {s['recorded_regret_geomean']} | "
              f"{s['regret_p95']} | {s['recorded_regret_p95']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

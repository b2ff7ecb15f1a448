"""What the small-batch candidate timings say about splitting the forward reduction.

Reads bench/candidate_timings.py's logs (tune_*/small_batch*.tune.json.gz). For every problem
and Triton implicit GEMM solver with both split (SPLIT_K > 1) and unsplit candidates timed, the
fastest split one over the fastest unsplit one, grouped by how much of one wave the problem's
128x128 tiles fill on the log's target (programs / CUs): geomean and the share where the split
wins. With `--before OLD_LOG`, also how the fastest candidate's time and identity moved between
two logs over the problems both reached (e.g. an earlier timer's log from git history).

    python bench/small_batch_report.py [LOG ...] [--before OLD_LOG] [--out FILE.json] [--json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from miopenkernels.problem import ConvProblem
from miopenkernels.target import Target

HERE = Path(__file__).resolve().parent
BUCKETS = ((0.25, "<0.25"), (0.5, "0.25-0.5"), (1.0, "0.5-1"), (2.0, "1-2"), (math.inf, ">=2"))
_SPLIT = 4  # SPLIT_K's place in the implicit GEMM's parameters


def _load(path: Path) -> dict:
    with gzip.open(path, "rt") as fh:
        return json.load(fh)


def split_table(logs: list[dict]) -> dict[str, dict[str, float]]:
    groups: dict[tuple[str, str], dict[bool, list[float]]] = defaultdict(lambda: defaultdict(list))
    cus: dict[tuple[str, str], int] = {}
    for log in logs:
        sms = Target.parse(log["target"]).cu
        for t in log["timings"]:
            if not t.get("time_ms") or not t["solver"].startswith("ConvTritonImplicitGemm") \
                    or "Via" in t["solver"]:
                continue
            split = int(t["params"].split(",")[_SPLIT]) > 1
            groups[(t["key"], t["solver"])][split].append(float(t["time_ms"]))
            cus[(t["key"], t["solver"])] = sms
    ratios: dict[str, list[float]] = defaultdict(list)
    for (key, solver), by in groups.items():
        if not by[True] or not by[False]:
            continue
        p = ConvProblem.from_key(key)
        m = p.n * math.prod(p.out_shape[2:])
        fill = math.ceil(m / 128) * math.ceil(p.k / 128) / cus[(key, solver)]
        label = next(name for bound, name in BUCKETS if fill < bound)
        ratios[label].append(min(by[True]) / min(by[False]))
    return {label: {"problems": len(ratios[label]),
                    "split_over_unsplit_geomean": round(
                        statistics.geometric_mean(ratios[label]), 3),
                    "split_wins": round(sum(r < 1 for r in ratios[label]) / len(ratios[label]), 3)}
            for _, label in BUCKETS if ratios[label]}


def compare(new: dict, old: dict) -> dict[str, float]:
    def best(log: dict) -> dict[str, tuple[float, tuple[str, str]]]:
        out: dict[str, tuple[float, tuple[str, str]]] = {}
        for t in log["timings"]:
            ms = t.get("time_ms")
            if ms and (t["key"] not in out or ms < out[t["key"]][0]):
                out[t["key"]] = (float(ms), (t["solver"], t["params"]))
        return out

    a, b = best(new), best(old)
    keys = [k for k in a if k in b]
    return {"problems": len(keys),
            "best_new_over_old_median": round(
                statistics.median(a[k][0] / b[k][0] for k in keys), 3),
            "fastest_changed": sum(a[k][1] != b[k][1] for k in keys)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="*", type=Path, help="candidate timing logs (default: the "
                    "committed tune_*/small_batch*.tune.json.gz)")
    ap.add_argument("--before", type=Path, help="an earlier log to compare the first one with")
    ap.add_argument("--out", type=Path, help="write the report as JSON here")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args()
    paths = args.logs or sorted((HERE / "results").glob("tune_*/small_batch*.tune.json.gz"))
    if not paths:
        print("small_batch_report: no candidate timing logs", file=sys.stderr)
        return 2
    logs = [_load(p) for p in paths]
    result: dict = {"logs": [p.name for p in paths], "split_by_wave_fill": split_table(logs)}
    if args.before:
        result["against_before"] = compare(logs[0], _load(args.before))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result))
        return 0
    print("| 128x128 tiles / CUs | problems | best split / best unsplit (geomean) | split wins |")
    print("| --- | --- | --- | --- |")
    for label, row in result["split_by_wave_fill"].items():
        print(f"| {label} | {row['problems']} | {row['split_over_unsplit_geomean']} | "
              f"{100 * row['split_wins']:.0f}% |")
    if "against_before" in result:
        c = result["against_before"]
        print(f"against {args.before.name}: {c['problems']} problems in both; best time new / old "
              f"median {c['best_new_over_old_median']}; fastest candidate changed in "
              f"{c['fastest_changed']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Immediate mode's first choices on the zoo at two trees, compared: which problems moved
from which solver to which (no GPU).

Each file is `bench/zoo.py --picks TARGET --out PATH`'s JSON (its `by_problem`), made at a
tree; this counts the problems whose first choice differs, per (before, after) pair, with the
layers they belong to.

    python bench/zoo.py --picks sm90-132 --types FP32 --out /tmp/before   # at the old tree
    python bench/zoo.py --picks sm90-132 --types FP32 --out /tmp/after    # at the new tree
    python bench/picks_compare.py /tmp/before.json /tmp/after.json [--json]
        [--measured bench/results/RUN/bwd.json ...]

`--measured` takes bench/solver_alternatives.py JSON files (GPU timings of several solvers per
layer against cuDNN): for every moved problem both of whose first choices were timed there at
their usual parameters (an entry named as the solver, not `NAME@tile`), the GPU-time ratios to
cuDNN before and after, and per change their geometric means (`measured` in the JSON). The
first choices are immediate mode's; the timings are of the solvers at their usual parameters,
which is what immediate mode runs. `--before-as @VARIANT` times the before choices as their
`NAME@VARIANT` entry where the files hold one (e.g. `@split=1`: the tree before a split rule
ran those parameters), and adds `timed`: over every problem, moved or not, whose two choices'
timings differ, the geometric means before and after per case and batch.

Exit codes: 0 compared; 2 a file unreadable or without `by_problem` or `rows`; 3 the files
hold different problems (different zoos, types or batches).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

_MAX_BYTES = 64 << 20  # a picks file is a few MB


def _read_json(path: Path, what: str) -> Any:
    """A JSON file of at most _MAX_BYTES (checked before reading); ValueError naming what is
    wrong."""
    try:
        if path.stat().st_size > _MAX_BYTES:
            raise ValueError(f"{path}: larger than {_MAX_BYTES >> 20} MB; not {what}")
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read it as JSON ({type(exc).__name__})") from None


def read_picks(path: Path) -> dict[str, str]:
    """A picks file's `by_problem`; ValueError naming what is wrong."""
    data = _read_json(path, "a picks file")
    picks = data.get("by_problem") if isinstance(data, dict) else None
    if not isinstance(picks, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                              for k, v in picks.items()):
        raise ValueError(f"{path}: no `by_problem` of first choices; make it with "
                         "bench/zoo.py --picks TARGET --out PATH")
    return picks


def read_measured(paths: list[Path]) -> dict[str, dict[str, float]]:
    """Per problem key, each timed solver's GPU time over cuDNN's (usual parameters only);
    ValueError naming what is wrong."""
    out: dict[str, dict[str, float]] = {}
    for path in paths:
        data = _read_json(path, "a timings file")
        rows = data.get("rows") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            raise ValueError(f"{path}: no `rows`; make it with bench/solver_alternatives.py")
        for row in rows:
            try:
                cudnn = float(row["cudnn_gpu_ms"])
                timed = {name: float(entry["gpu_ms"]) / cudnn
                         for name, entry in row["solvers"].items() if entry.get("gpu_ms")}
                key = str(row["key"])
            except (KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError):
                raise ValueError(f"{path}: a row without a key, cuDNN's time or solvers' "
                                 "times") from None
            if cudnn > 0 and all(math.isfinite(v) and v > 0 for v in timed.values()):
                out.setdefault(key, {}).update(timed)
    return out


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _case(problem: str) -> str:
    """`<type>-<direction>-<layout>@<batch>` of a picks entry ("network/layer key")."""
    from miopenkernels.problem import ConvProblem

    p = ConvProblem.from_key(problem.split(" ", 1)[-1])
    return f"{p.in_type}-{p.direction}-{p.in_layout}@{p.n}"


def _timed(before: dict[str, str], after: dict[str, str],
           measured: dict[str, dict[str, float]], before_as: str) -> dict[str, Any]:
    """Per case and batch, over the problems whose before choice (as NAME+before_as where
    timed so) and after choice were both timed and differ: their geometric means."""
    groups: dict[str, list[tuple[float, float]]] = {}
    for problem, new in after.items():
        times = measured.get(problem.split(" ", 1)[-1], {})
        old = before[problem]
        old_name = old + before_as if old + before_as in times else old
        if old_name in times and new in times and old_name != new:
            groups.setdefault(_case(problem), []).append((times[old_name], times[new]))
    return {case: {"problems": len(pairs),
                   "before_geomean": round(_geomean([b for b, _ in pairs]), 3),
                   "after_geomean": round(_geomean([a for _, a in pairs]), 3)}
            for case, pairs in sorted(groups.items())}


def compare(before: dict[str, str], after: dict[str, str],
            measured: dict[str, dict[str, float]] | None = None, before_as: str = ""
            ) -> dict[str, Any]:
    """Per (before, after) pair of first choices that differ: the problems and their layers,
    and where `measured` timed both choices, their ratios to cuDNN (the before choice as its
    NAME+`before_as` entry where timed so; then also `timed`, per case and batch)."""
    moved: dict[tuple[str, str], list[str]] = {}
    for problem, solver in after.items():
        old = before[problem]
        if old != solver:
            moved.setdefault((old, solver), []).append(problem)
    rows = []
    for (old, new), problems in sorted(moved.items(), key=lambda kv: -len(kv[1])):
        row: dict[str, Any] = {"before": old, "after": new, "problems": len(problems),
                               "layers": sorted({p.split(" ", 1)[0] for p in problems})}
        if measured is not None:
            pairs = [(p, measured[k].get(old + before_as, measured[k][old]), measured[k][new])
                     for p in problems if (k := p.split(" ", 1)[-1]) in measured
                     and old in measured[k] and new in measured[k]]
            if pairs:
                row["measured"] = {
                    "problems": len(pairs),
                    "before_geomean": round(_geomean([b for _, b, _ in pairs]), 3),
                    "after_geomean": round(_geomean([a for _, _, a in pairs]), 3),
                    "rows": [{"problem": p, "before": round(b, 3), "after": round(a, 3)}
                             for p, b, a in pairs]}
        rows.append(row)
    out = {"problems": len(after), "moved": sum(r["problems"] for r in rows), "changes": rows}
    if measured is not None and before_as:
        out["timed"] = _timed(before, after, measured, before_as)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--json", action="store_true", help="print the comparison as JSON")
    ap.add_argument("--measured", type=Path, nargs="+", default=None, metavar="FILE",
                    help="bench/solver_alternatives.py JSON files timing the choices")
    ap.add_argument("--before-as", default="", metavar="@VARIANT",
                    help="time the before choices as their NAME@VARIANT entry where the "
                         "files hold one (e.g. @split=1)")
    args = ap.parse_args(argv)
    try:
        before, after = read_picks(args.before), read_picks(args.after)
        measured = read_measured(args.measured) if args.measured else None
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if set(before) != set(after):
        print(f"error: the files hold different problems ({len(set(before) ^ set(after))} "
              "in one alone); make both with the same zoo.py arguments", file=sys.stderr)
        return 3
    if args.before_as and not args.before_as.startswith("@"):
        print(f"error: --before-as takes @VARIANT (e.g. @split=1), not {args.before_as!r}",
              file=sys.stderr)
        return 2
    result = compare(before, after, measured, args.before_as)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"{result['moved']} of {result['problems']} problems moved")
    for row in result["changes"]:
        print(f"{row['problems']:5d}  {row['before']} -> {row['after']}: "
              + ", ".join(row["layers"]))
        if "measured" in row:
            m = row["measured"]
            print(f"       timed on {m['problems']}: {m['before_geomean']:.2f} -> "
                  f"{m['after_geomean']:.2f} of cuDNN's GPU time (geomean)")
    for case, m in result.get("timed", {}).items():
        print(f"timed {case}: {m['problems']} problems, {m['before_geomean']:.2f} -> "
              f"{m['after_geomean']:.2f} of cuDNN's GPU time (geomean)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

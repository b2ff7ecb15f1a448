"""Immediate mode's first choices on the zoo at two trees, compared: which problems moved
from which solver to which (no GPU).

Each file is `bench/zoo.py --picks TARGET --out PATH`'s JSON (its `by_problem`), made at a
tree; this counts the problems whose first choice differs, per (before, after) pair, with the
layers they belong to.

    python bench/zoo.py --picks sm90-132 --types FP32 --out /tmp/before   # at the old tree
    python bench/zoo.py --picks sm90-132 --types FP32 --out /tmp/after    # at the new tree
    python bench/picks_compare.py /tmp/before.json /tmp/after.json [--json]

Exit codes: 0 compared; 2 a file unreadable or without `by_problem`; 3 the files hold
different problems (different zoos, types or batches).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

_MAX_BYTES = 64 << 20  # a picks file is a few MB


def read_picks(path: Path) -> dict[str, str]:
    """A picks file's `by_problem`; ValueError naming what is wrong."""
    try:
        if path.stat().st_size > _MAX_BYTES:
            raise ValueError(f"{path}: larger than {_MAX_BYTES >> 20} MB; not a picks file")
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read it as JSON ({type(exc).__name__})") from None
    picks = data.get("by_problem") if isinstance(data, dict) else None
    if not isinstance(picks, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                              for k, v in picks.items()):
        raise ValueError(f"{path}: no `by_problem` of first choices; make it with "
                         "bench/zoo.py --picks TARGET --out PATH")
    return picks


def compare(before: dict[str, str], after: dict[str, str]) -> dict[str, Any]:
    """Per (before, after) pair of first choices that differ: the problems and their layers."""
    moved: dict[tuple[str, str], list[str]] = {}
    for problem, solver in after.items():
        old = before[problem]
        if old != solver:
            moved.setdefault((old, solver), []).append(problem)
    rows = [{"before": old, "after": new, "problems": len(problems),
             "layers": sorted({p.split(" ", 1)[0] for p in problems})}
            for (old, new), problems in sorted(moved.items(), key=lambda kv: -len(kv[1]))]
    return {"problems": len(after), "moved": sum(r["problems"] for r in rows), "changes": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = ap.parse_args(argv)
    try:
        before, after = read_picks(args.before), read_picks(args.after)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if set(before) != set(after):
        print(f"error: the files hold different problems ({len(set(before) ^ set(after))} "
              "in one alone); make both with the same zoo.py arguments", file=sys.stderr)
        return 3
    result = compare(before, after)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"{result['moved']} of {result['problems']} problems moved")
    for row in result["changes"]:
        print(f"{row['problems']:5d}  {row['before']} -> {row['after']}: "
              + ", ".join(row["layers"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

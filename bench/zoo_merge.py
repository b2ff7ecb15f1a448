"""Runs of bench/zoo.py merged into one result: the zoo's run of record, made over sessions.

A device session lends a GPU for 30 minutes, and the whole zoo at every type, direction,
layout and batch takes hours, so each session runs some of the cases (`--types`,
`--directions`, `--layouts`, `--batches`) and this merges their JSON into the result one run
would have written, with zoo.py's own summaries (`report`, `markdown`). Every row pairs ours and
cuDNN timed in one run, and every case (`<type>-<direction>-<layout>` at one batch) comes
whole from one run:
- a case two runs hold is refused (name the runs to keep);
- a case a run did not finish (its `not_reached`) is left out, and listed as not reached,
  unless another run holds it whole.
The runs must have measured the same way on the same stack: device, driver, torch, CUDA, cuDNN,
Triton, the package's version, repeats, warm-up and `every` agree, else it is refused. The
result keeps `runs`: each file and the cases taken from it.

    python bench/zoo_merge.py RUN.json [RUN.json ...] --out bench/results/zoo_h200 [--json]

Exit codes: 0 merged; 2 a run unreadable or not a zoo result; 3 runs that disagree or overlap.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _results import read_json  # noqa: E402
from zoo import markdown, report  # noqa: E402

SAME = ("device", "driver", "torch", "cuda", "cudnn", "triton", "miopenkernels", "every",
        "repeats", "warmup")
_ROW_FIELDS = ("case", "n", "network", "layer", "key", "classes", "ratio", "ratio_heuristics",
               "wall_ratio", "held_out")
_CASE = re.compile(r"^(\S+@\d+)")  # "FP16-F-NHWC@32 (12 of 277 layers)" -> its case
_MAX_BYTES = 512 << 20  # a zoo run's JSON is tens of MB; past this it is not one


class MergeError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def case_of(row: dict[str, Any]) -> str:
    return f"{row['case']}@{row['n']}"


def _with_3d(case: str) -> tuple[str, ...]:
    """A 2-D case and its 3-D spelling: zoo.py runs a layout's 3-D layers (NCDHW, NDHWC) in
    the same pass as its 2-D ones, so a pass cut short leaves both unfinished."""
    three = case.replace("-NCHW@", "-NCDHW@").replace("-NHWC@", "-NDHWC@")
    return (case,) if three == case else (case, three)


def read_run(path: Path) -> dict[str, Any]:
    """A zoo run's JSON, checked for what merging reads."""
    try:
        run = read_json(path, _MAX_BYTES)
    except (OSError, EOFError, UnicodeDecodeError, ValueError) as exc:
        raise MergeError(f"{path}: not readable as JSON ({exc}); give bench/zoo.py's "
                         "OUT.json", 2) from None
    missing = ["rows"] if not isinstance(run, dict) or not isinstance(run.get("rows"), list) \
        else [k for k in SAME if k not in run]
    if missing:
        raise MergeError(f"{path}: not a bench/zoo.py result (no {', '.join(missing)})", 2)
    for i, row in enumerate(run["rows"]):
        if not isinstance(row, dict) or any(f not in row for f in _ROW_FIELDS):
            raise MergeError(f"{path}: row {i} lacks one of {', '.join(_ROW_FIELDS)}", 2)
    return run


def merge(runs: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """One result from `(name, run)` pairs, as zoo.py would write it, and `runs`."""
    if not runs:
        raise MergeError("no runs to merge", 3)
    first_name, first = runs[0]
    for name, run in runs[1:]:
        differ = [k for k in SAME if run.get(k) != first.get(k)]
        if differ:
            k = differ[0]
            raise MergeError(f"{name} and {first_name} measured differently: {k} "
                             f"{run.get(k)!r} against {first.get(k)!r}; merge runs of one "
                             "stack and method", 3)
    owner: dict[str, str] = {}
    unfinished: dict[str, str] = {}
    for name, run in runs:
        partial = {c for text in run.get("not_reached", [])
                   if (m := _CASE.match(str(text))) for c in _with_3d(m.group(1))}
        for case in dict.fromkeys(case_of(r) for r in run["rows"]):
            if case in partial:
                unfinished.setdefault(case, name)
            elif case in owner:
                raise MergeError(f"case {case} is in both {owner[case]} and {name}; merge "
                                 "one run per case", 3)
            else:
                owner[case] = name
    rows, failures, skipped, taken = [], [], {}, []
    for name, run in runs:
        mine = [r for r in run["rows"] if owner.get(case_of(r)) == name]
        rows += mine
        failures += [f for f in run.get("failures", []) if owner.get(str(f.get("case"))) == name]
        skipped.update({s.get("key"): s for s in run.get("skipped", [])})
        taken.append({"file": name, "cases": sorted({case_of(r) for r in mine}),
                      "seconds": run.get("seconds")})
    not_reached = sorted({c for c in unfinished if c not in owner}
                         | {m.group(1) for _, run in runs for text in run.get("not_reached", [])
                            if (m := _CASE.match(str(text))) and m.group(1) not in owner})
    zoo = [r for r in rows if not r["held_out"]]
    held = [r for r in rows if r["held_out"]]
    result = {**{k: first.get(k) for k in SAME}, "method": first.get("method", ""),
              "networks": sorted({r["network"] for r in zoo}),
              "compiles": sum(int(run.get("compiles", 0)) for _, run in runs),
              "errors": len(failures),
              "seconds": round(sum(float(run.get("seconds") or 0) for _, run in runs), 1),
              **report(zoo)}
    if held:
        result["held_out"] = {"networks": sorted({r["network"] for r in held}), **report(held)}
    result.update({"runs": taken, "skipped": list(skipped.values()), "not_reached": not_reached,
                   "failures": failures, "rows": rows})
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="bench/zoo.py results (OUT.json)")
    ap.add_argument("--out", type=Path, required=True, help="writes OUT.json and OUT.md")
    ap.add_argument("--json", action="store_true", help="also print the merged JSON")
    args = ap.parse_args(argv)
    try:
        result = merge([(str(p), read_run(p)) for p in args.runs])
    except MergeError as exc:
        print(f"zoo_merge: {exc}", file=sys.stderr)
        return exc.code
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=1) + "\n"
    Path(str(args.out) + ".json").write_text(text)
    md = markdown(result)
    Path(str(args.out) + ".md").write_text(md)
    print(text if args.json else md)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The backward objects that assume multiples of 8, against the generic objects they replaced,
on the zoo's layers that need them (device machine).

The layers are those of the zoo and its held-out networks (bench/zoo.py) with one group, 2-D,
and channel counts that are multiples of 8 but not both of 16 (MobileNet's and RegNet's 24, 40,
104, 440, ...). In FP16 and BF16 channels-last, backward data and backward weights take an
object that assumes those counts multiples of 8 (`conv_triton_spec.ALIGN8_KERNELS`); before,
they took the generic object, which assumes nothing and loads no vectors. `run` times one arm
with bench/zoo.py's method (find's pick against cuDNN, GPU time queued behind a sleep kernel,
wall time per call, results checked): `--arm align8` as the package ships, `--arm generic` with
the backward kernels' objects assuming nothing, as before (the objects it needs that the package
lacks compile on first use, outside the timing; the JSON's `compiles` counts them). `compare`
pairs the two arms' rows (same layer, case and batch) and writes, per case, the geomean of
align8's GPU time over generic's and each arm's geomean against cuDNN.

    python bench/align8_backward_ab.py run --arm align8 --out OUT/ab_align8 [zoo options]
    python bench/align8_backward_ab.py run --arm generic --out OUT/ab_generic [zoo options]
    python bench/align8_backward_ab.py compare OUT/ab_align8.json OUT/ab_generic.json \\
        --out bench/results/align8_backward_h200
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

ZOO_DEFAULTS = ["--types", "FP16,BF16", "--directions", "B,W", "--layouts", "NHWC",
                "--batches", "32", "--held-out"]


def eights(layer: Any) -> bool:
    """A 2-D layer of one group whose channel counts are multiples of 8, not both of 16."""
    p = layer.problem
    return len(p.in_spatial) == 2 and p.groups == 1 and p.c % 8 == 0 and p.k % 8 == 0 and \
        bool(p.c % 16 or p.k % 16)


def run(arm: str, zoo_args: list[str]) -> int:
    import zoo

    loader = zoo.load_layers
    zoo.load_layers = lambda *a, **k: [la for la in loader(*a, **k) if eights(la)]
    if arm == "generic":
        from miopenkernels.kernels import conv_triton_spec as spec

        spec.ALIGN8_KERNELS = frozenset(spec.ALIGN8_KERNELS - {"conv2d_bwd_data",
                                                               "conv2d_bwd_weight"})
    return int(zoo.main(ZOO_DEFAULTS + zoo_args))


def geomean(values: list[float]) -> float:
    return round(math.exp(sum(map(math.log, values)) / len(values)), 3) if values else 0.0


def compare(first: dict, second: dict, names: tuple[str, str] = ("align8", "generic")
            ) -> dict:
    """Per case: paired layers, `first` over `second` (GPU and wall), each arm against cuDNN;
    the keys spell the arms' `names`."""
    def key(r: dict) -> tuple:
        return (r["network"], r["key"], r["case"], r["n"])

    a, b = names
    other = {key(r): r for r in second["rows"]}
    pairs = [(r, other[key(r)]) for r in first["rows"] if key(r) in other]
    out: dict[str, Any] = {}
    for case in sorted({x["case"] for x, _ in pairs}):
        mine = [(x, y) for x, y in pairs if x["case"] == case]
        ratios = [x["ours_gpu_ms"] / y["ours_gpu_ms"] for x, y in mine]
        worst = max(mine, key=lambda xy: xy[0]["ratio"])[0]
        out[case] = {
            "layers": len(mine),
            f"{a}_over_{b}_gpu": geomean(ratios),
            f"{a}_over_{b}_wall": geomean([x["ours_wall_ms"] / y["ours_wall_ms"]
                                           for x, y in mine]),
            f"min_{a}_over_{b}": round(min(ratios), 3),
            f"max_{a}_over_{b}": round(max(ratios), 3),
            f"{a}_vs_cudnn": geomean([x["ratio"] for x, _ in mine]),
            f"{b}_vs_cudnn": geomean([y["ratio"] for _, y in mine]),
            f"{a}_max_vs_cudnn": round(worst["ratio"], 2),
            f"{a}_worst": f"{worst['network']} {worst['layer']} {worst['key']}",
            "same_solver": sum(x["solver"] == y["solver"] for x, y in mine),
        }
    return out


def write_comparison(arms: list[dict], names: tuple[str, str], method: str, out: Path,
                     as_json: bool, title: str) -> int:
    """The paired summary and both arms' rows into OUT.json, and a table (or the summary as
    JSON) on stdout."""
    if any("rows" not in arm for arm in arms):
        print("an arm's JSON has no rows: give bench/zoo.py results", file=sys.stderr)
        return 3
    a, b = names
    summary = compare(arms[0], arms[1], names)
    versions = {k: arms[0].get(k) for k in ("device", "driver", "torch", "cuda", "cudnn",
                                            "triton", "miopenkernels")}
    result = {**versions, "method": method,
              "compiles": {a: arms[0].get("compiles"), b: arms[1].get("compiles")},
              "errors": {a: arms[0].get("errors"), b: arms[1].get("errors")},
              "summary": summary, f"{a}_rows": arms[0]["rows"], f"{b}_rows": arms[1]["rows"]}
    out.parent.mkdir(parents=True, exist_ok=True)
    Path(str(out) + ".json").write_text(json.dumps(result, indent=1) + "\n")
    if as_json:
        print(json.dumps(summary, indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{title}, {result['device']}")
    for col in ("case", "layers", f"{a}/{b} GPU", "min", "max", "wall", f"{a} vs cuDNN",
                f"{b} vs cuDNN", "worst vs cuDNN"):
        table.add_column(col)
    for case, s in summary.items():
        table.add_row(case, str(s["layers"]), f"{s[f'{a}_over_{b}_gpu']:.3f}",
                      f"{s[f'min_{a}_over_{b}']:.3f}", f"{s[f'max_{a}_over_{b}']:.3f}",
                      f"{s[f'{a}_over_{b}_wall']:.3f}", f"{s[f'{a}_vs_cudnn']:.2f}",
                      f"{s[f'{b}_vs_cudnn']:.2f}", f"{s[f'{a}_max_vs_cudnn']:.2f}")
    Console(width=150).print(table)
    return 0


def ab_main(argv: list[str] | None, doc: str, names: tuple[str, str],
            run_arm: Callable[[str, list[str]], int], prog: str, title: str) -> int:
    """The command line of an A/B bench: `run --arm NAME [zoo options]` (GPU) or `compare
    FIRST.json SECOND.json --out OUT [--json]` (no GPU)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="one arm through bench/zoo.py (GPU)")
    r.add_argument("--arm", choices=names, required=True)
    c = sub.add_parser("compare", help="pair two arms' JSON (no GPU)")
    c.add_argument("first", type=Path, metavar=names[0])
    c.add_argument("second", type=Path, metavar=names[1])
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--json", action="store_true", help="print the summary as JSON")
    args, rest = ap.parse_known_args(argv)
    if args.command == "run":
        return run_arm(args.arm, rest)
    if rest:
        ap.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        arms = [json.loads(p.read_text()) for p in (args.first, args.second)]
    except (OSError, ValueError) as exc:
        print(f"{prog}: cannot read an arm's JSON: {exc}", file=sys.stderr)
        return 3
    return write_comparison(arms, names, doc.split("\n\n")[1], args.out, args.json, title)


def main(argv: list[str] | None = None) -> int:
    return ab_main(argv, __doc__, ("align8", "generic"), run, "align8_backward_ab",
                   "align8 against generic backward objects")


if __name__ == "__main__":
    sys.exit(main())

"""The tile rule of the Triton implicit GEMM on layers no one tuned: per case, a few tiles and
a cost model per tile, fitted on bench/solver_alternatives.py's timings of the same layers at
each tile.

A case's usual tile (the tuned table's `defaults`) was fitted to ResNet-50 at batch 32; on the
zoo's small layers (7x7 to 20x20 pixels at batch 32: a GEMM of a few thousand rows) and on its
few-channel first layers it leaves most of the GPU idle or runs mostly padding, and another of a
handful of tiles runs 1.2-1.5x faster (bench/results/tile_survey_*.json). Per tile T the model
is time = a_T + b_T * waves_T * steps_T: waves_T the launch's programs over the SMs' slots
(`per_sm` programs an SM at once, chosen per tile by the fit), steps_T the BLOCK_K steps of
one program's reduction; a_T and b_T by least squares on relative error. A problem takes the
tile of least predicted time among those legal for it.

Fitted on the zoo's networks alone (the held-out ones are scored apart, never fitted on), and
scored leaving one zoo network out: the tiles' constants refitted without it, its layers
picked by the refit. A tile enters a case's rule where it was timed on at least `--least`
layers of the fit and on three fifths of them: the tiles the alternatives named, not the
defaults that single layers had; and stays where the rule picks it for at least
`--least-picks` layers of the fit (each tile is objects a package ships).

    python bench/tile_rule_fit.py bench/results/tile_survey_small_f_h200.json ... \\
        --write kernels/conv_triton_tuned_sm90.json --out bench/results/tile_rule_fit

`--fresh FILE...` names newer surveys (another object, another device): their rule cases' rows
replace those of the other files. `--write` puts the rules into the tuned table's `tile_rule`
(keyed `<type>-<direction>-<layout>` with `-few` for the few-channel kernel; BF16 takes
FP16's), which
`conv_triton_spec.tile_rule` reads; `conv_triton_spec.rule_tile` applies one.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from zoo import geomean  # noqa: E402 - bench/zoo.py, beside this file

KIND = "sm90"
PER_SM = (1, 2, 3, 4, 6, 8)
PARAMS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K", "num_warps", "num_stages")


def _spec() -> Any:
    from miopenkernels.kernels import conv_triton_spec

    return conv_triton_spec


def problem_of(key: str) -> tuple[str, dict[str, int], str]:
    """(kernel, spec sizes, rule case) of a FindDb key."""
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers.triton_common import problem_view, spec_sizes
    from miopenkernels.solvers.triton_tile_rule import rule_case

    p = ConvProblem.from_key(key)
    view, _, kernel, cl = problem_view(p)
    case = f"{p.in_type}-{view.direction}-{'NHWC' if cl else 'NCHW'}"
    return kernel, spec_sizes(view), rule_case(case, kernel) or case


def config_of(params: list[int] | tuple[int, ...]) -> dict[str, int]:
    return dict(zip(PARAMS, (int(v) for v in params), strict=True))


def terms(kernel: str, sizes: dict[str, int], config: dict[str, int], cus: int,
          per_sm: int) -> tuple[float, float]:
    """(waves x steps, waves) of a launch (`conv_triton_spec.tile_terms`)."""
    waves, steps = _spec().tile_terms(kernel, sizes, config, cus, per_sm)
    return float(waves * steps), float(waves)


def _solve(matrix: list[list[float]], rhs: list[float]) -> list[float] | None:
    """x of matrix x = rhs (Gaussian elimination with pivoting), None where singular."""
    n = len(rhs)
    m = [row[:] + [rhs[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-30:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(n):
            if r != col:
                f = m[r][col] / m[col][col]
                m[r] = [a - f * b for a, b in zip(m[r], m[col], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]


def _fit(points: list[tuple[tuple[float, ...], float]]) -> tuple[list[float], float]:
    """(coefficients, mean squared relative error) of t = c0 + c1 f1 + c2 f2 ..., least squares
    on relative error with every coefficient at least 0 (a negative one is dropped and the
    rest refitted)."""
    width = len(points[0][0]) + 1
    active = list(range(width))
    while True:
        ata = [[0.0] * len(active) for _ in active]
        aty = [0.0] * len(active)
        for feats, t in points:
            u = [((1.0,) + feats)[i] / t for i in active]
            for i in range(len(active)):
                aty[i] += u[i]
                for j in range(len(active)):
                    ata[i][j] += u[i] * u[j]
        x = _solve(ata, aty)
        if x is None:
            return [0.0] * width, float("inf")
        if all(v >= 0 for v in x) or len(active) == 1:
            coef = [0.0] * width
            for i, v in zip(active, x, strict=True):
                coef[i] = max(v, 0.0)
            break
        active = [i for i, v in zip(active, x, strict=True) if v >= 0] or [active[0]]
    err = sum(((coef[0] + sum(c * f for c, f in zip(coef[1:], feats, strict=True)) - t) / t)
              ** 2 for feats, t in points) / len(points)
    return coef, err


def _best_line(rows: list[tuple[str, dict[str, int], dict[str, int], float]], cus: int
               ) -> tuple[int, list[float], float]:
    """(per_sm, [a, b, c], mean squared relative error) of the best fit of time = a +
    b * waves * steps + c * waves over (kernel, sizes, config, ms) rows."""
    best = None
    for per_sm in PER_SM:
        coef, err = _fit([(terms(k, z, c, cus, per_sm), ms) for k, z, c, ms in rows])
        if best is None or err < best[2]:
            best = (per_sm, coef, err)
    assert best is not None
    return best


def fit_case(samples: list[dict], cus: int, least: int) -> list[dict]:
    """Per tile timed on at least `least` samples and on most of them (a tile named in the
    alternatives, not a default some layers had): its per_sm, a and b (ms)."""
    least = max(least, (len(samples) * 3 + 4) // 5)
    by_tile: dict[tuple[int, ...], list] = defaultdict(list)
    for s in samples:
        for params, ms in s["times"].items():
            by_tile[params].append((s["kernel"], s["sizes"], config_of(params), ms))
    tiles = []
    for params, rows in sorted(by_tile.items()):
        if len(rows) >= least:
            per_sm, (a, b, c), err = _best_line(rows, cus)
            tiles.append({"config": config_of(params), "per_sm": per_sm, "a_ms": a, "b_ms": b,
                          "c_ms": c, "rms_rel": math.sqrt(err), "layers": len(rows)})
    return tiles


def prune(tiles: list[dict], samples: list[dict], cus: int, least_picks: int) -> list[dict]:
    """`tiles` less those the rule picks for fewer than `least_picks` of the samples (the
    least picked first, the picks counted again after each): every tile a rule keeps is
    objects a package ships for each type, layout and alignment."""
    tiles = list(tiles)
    while len(tiles) > 2:
        counts = {i: 0 for i in range(len(tiles))}
        for s in samples:
            chosen = pick(tiles, s, cus)
            for i, t in enumerate(tiles):
                if chosen is not None and tuple(t["config"][k] for k in PARAMS) == chosen:
                    counts[i] += 1
        fewest = min(counts, key=lambda i: counts[i])
        if counts[fewest] >= least_picks:
            break
        del tiles[fewest]
    return tiles


def pick(tiles: list[dict], sample: dict, cus: int) -> tuple[int, ...] | None:
    """The params of the rule's tile of least predicted time for a sample, among those it
    was timed at."""
    config = _spec().rule_tile({"tiles": tiles}, sample["kernel"], sample["sizes"], cus,
                               [config_of(p) for p in sample["times"]])
    return None if config is None else tuple(config[k] for k in PARAMS)


def samples_of(files: list[Path], fresh: list[Path] | tuple[Path, ...] = ()) -> list[dict]:
    """One sample per (network, layer, case, batch) of the alternatives' results, the files'
    rows of one layer merged (each file's time against its own cuDNN time, scaled to the
    first file's cuDNN time): its timings by params (the best of equal params), cuDNN's, and
    the default's params (the first file's). Rows whose first solver ran a FindDb record's
    parameters-free pick are left out. The `fresh` files (a newer survey of a case's objects)
    replace every other file's rows of the rule cases they hold."""
    merged: dict[tuple, dict] = {}
    fresh_cases = {problem_of(row["key"])[2] for f in fresh
                   for row in json.loads(f.read_text())["rows"]}
    for f in [*files, *fresh]:
        data = json.loads(f.read_text())
        names = data["solvers"]
        for row in data["rows"]:
            solvers = row.get("solvers") or {}
            if names[0] not in solvers or len(solvers[names[0]]["params"]) != len(PARAMS):
                continue  # a FindDb record's pick (no parameters): a layer tuned already
            if f not in fresh and problem_of(row["key"])[2] in fresh_cases:
                continue  # timed again in a fresh file
            ident = (row["network"], row["layer"], row["case"], row.get("n"))
            sample = merged.get(ident)
            if sample is None:
                kernel, sizes, case = problem_of(row["key"])
                sample = merged[ident] = {
                    "network": row["network"], "layer": row["layer"],
                    "held_out": bool(row.get("held_out")), "key": row["key"],
                    "kernel": kernel, "sizes": sizes, "case": case, "times": {},
                    "cudnn_ms": float(row["cudnn_gpu_ms"]),
                    "default": tuple(int(v) for v in solvers[names[0]]["params"]),
                    "m": _spec().gemm_dims(kernel, sizes)[0]}
            scale = sample["cudnn_ms"] / float(row["cudnn_gpu_ms"])
            times = sample["times"]
            for entry in solvers.values():
                if len(entry["params"]) != len(PARAMS):
                    continue
                params = tuple(int(v) for v in entry["params"])
                times[params] = min(times.get(params, math.inf),
                                    float(entry["gpu_ms"]) * scale)
    return list(merged.values())


def score(pairs: list[tuple[dict, tuple[int, ...] | None]]) -> dict[str, Any]:
    """Over (sample, the rule's pick) pairs, geomeans against cuDNN of the defaults, the picks
    (the default where the rule picks none) and the best timed, and of the picks against the
    best timed and the defaults."""
    rows = []
    for s, chosen in pairs:
        if chosen is None or chosen not in s["times"]:
            chosen = s["default"]
        rows.append((s["times"][s["default"]], s["times"][chosen], min(s["times"].values()),
                     s["cudnn_ms"]))
    return {"layers": len(rows),
            "default_vs_cudnn": round(geomean([d / c for d, _, _, c in rows]), 4),
            "rule_vs_cudnn": round(geomean([r / c for _, r, _, c in rows]), 4),
            "best_vs_cudnn": round(geomean([b / c for _, _, b, c in rows]), 4),
            "rule_vs_best": round(geomean([r / b for _, r, b, _ in rows]), 4),
            "rule_vs_default": round(geomean([r / d for d, r, _, _ in rows]), 4),
            "rule_max_vs_cudnn": round(max((r / c for _, r, _, c in rows), default=0.0), 3)}


def _entry(tile: dict) -> dict[str, Any]:
    """A tile as the tuned table keeps it."""
    return {"config": tile["config"], "per_sm": tile["per_sm"], "a_ms": round(tile["a_ms"], 6),
            "b_ms": round(tile["b_ms"], 8), "c_ms": round(tile["c_ms"], 8)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path, help="bench/solver_alternatives.py results")
    ap.add_argument("--cus", type=int, default=132, help="SMs of the GPU they were timed on")
    ap.add_argument("--least", type=int, default=20, help="layers a tile must be timed on")
    ap.add_argument("--least-picks", type=int, default=3,
                    help="fit layers a tile must be picked for to stay in its rule")
    ap.add_argument("--fresh", type=Path, nargs="+", default=[], metavar="FILE",
                    help="newer surveys: their rule cases' rows replace the other files'")
    ap.add_argument("--write", type=Path, help="a tuned table to put the rules into")
    ap.add_argument("--out", type=Path, help="path stem of a .json result")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    try:
        samples = samples_of(args.files, args.fresh)
        devices = sorted({json.loads(f.read_text()).get("device", "") for f in
                          [*args.files, *args.fresh]} - {""})
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"tile_rule_fit: not solver_alternatives results: {str(exc).splitlines()[0]}",
              file=sys.stderr)
        return 2
    result: dict[str, Any] = {"sources": [f.name for f in [*args.files, *args.fresh]],
                              "fresh": [f.name for f in args.fresh], "cus": args.cus,
                              "cases": {}}
    rules: dict[str, Any] = {}
    for case in sorted({s["case"] for s in samples}):
        mine = [s for s in samples if s["case"] == case]
        fit = [s for s in mine if not s["held_out"]]
        held = [s for s in mine if s["held_out"]]
        tiles = prune(fit_case(fit, args.cus, args.least), fit, args.cus, args.least_picks)
        if len(tiles) < 2:
            continue
        lono = []
        for net in sorted({s["network"] for s in fit}):
            rest = [s for s in fit if s["network"] != net]
            others = prune(fit_case(rest, args.cus, args.least), rest, args.cus,
                           args.least_picks)
            if len(others) >= 2:
                lono += [(s, pick(others, s, args.cus))
                         for s in fit if s["network"] == net]
        result["cases"][case] = {
            "tiles": tiles,
            "fit": score([(s, pick(tiles, s, args.cus)) for s in fit]),
            "leave_one_network_out": score(lono),
            "held_out": score([(s, pick(tiles, s, args.cus)) for s in held]) if held else None}
        # A few-channel rule was fitted on every such layer of the zoo; the others on small
        # layers: they apply up to the largest GEMM they saw.
        largest = 0 if case.endswith("-few") else max(s["m"] for s in fit)
        rules[case] = {"largest_m": largest, "tiles": tiles}
    result["rules"] = rules
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.with_suffix(".json").write_text(text + "\n")
    if args.write:
        table = json.loads(args.write.read_text())
        table["tile_rule"] = {"sources": result["sources"], "devices": devices,
                              "rules": {k: {"largest_m": v["largest_m"],
                                            "tiles": [_entry(t) for t in v["tiles"]]}
                                        for k, v in rules.items()}}
        args.write.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    if args.json:
        print(text)
    else:
        for case, entry in result["cases"].items():
            print(f"{case}: {len(entry['tiles'])} tiles")
            for part in ("fit", "leave_one_network_out", "held_out"):
                e = entry[part]
                if e:
                    print(f"  {part:22s} layers {e['layers']:4d}"
                          f"  default {e['default_vs_cudnn']:.3f}"
                          f"  rule {e['rule_vs_cudnn']:.3f}  best {e['best_vs_cudnn']:.3f}"
                          f"  rule/best {e['rule_vs_best']:.3f}  max {e['rule_max_vs_cudnn']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The backward-weights tile and split rule: which tile and SPLIT_K a backward-weights problem
without a record takes, fitted on bench/split_sweep.py's timings.

A rule (`conv_triton_spec.WrwRule`) sends problems whose per-group C and K are both at least
`large_channels` to a larger tile, the rest to the case's usual one (the tuned table's), and
splits each by `conv_triton_spec.split_for` with a wave count and a least number of steps a
part of its own. The fit tries every rule of the grids below on the sweep's rows of networks
in the zoo (not held out, at least 16 channels: fewer take the few-channel kernel) and keeps
the one whose picks give the lowest geomean of time / cuDNN's, among rules whose every pick
was timed; the held-out networks' rows are scored with it apart, never fitted on. Today's
rule (the usual tile, two waves, 8 steps) and the best time of the sweep per row (the oracle)
are scored beside it.

    python bench/split_fit.py bench/results/split_sweep_h200.json \\
        [--write kernels/conv_triton_tuned_sm90.json] [--out bench/results/split_fit_h200]

`--write` puts the rule into the tuned table's `wrw_rule` (keyed `<type>-W-NHWC`; BF16 takes
FP16's, whose arithmetic it shares), which `conv_triton_spec.wrw_rule` reads.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LARGE_CHANNELS = (64, 128, 256, 512)
WAVES = (1, 2, 4, 8, 16, 32)
LEAST = (4, 8, 16, 32, 64, 128)
MOST = 64  # conv_triton_spec.MAX_SPLIT's default, which backward weights take


def _spec() -> Any:
    sys.path.insert(0, str(HERE.parent))
    from kernels import conv_triton_spec

    return conv_triton_spec


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def tile_name(tile: str) -> dict[str, int]:
    """`64x64x64w4s4` as a configuration (GROUP_M 8, the sweep's)."""
    mnk, rest = tile.split("w")
    bm, bn, bk = (int(v) for v in mnk.split("x"))
    nw, ns = (int(v) for v in rest.split("s"))
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "num_warps": nw,
            "num_stages": ns}


def pick(spec: Any, row: dict, tile: str, waves: int, least: int) -> float | None:
    """The time of `tile` at the split the rule (waves, least) gives the row; None where the
    sweep did not time it."""
    config = tile_name(tile)
    split = spec.split_for("conv2d_bwd_weight", row["sizes"], config, row["sms"], waves, least,
                           spec.RULE_MOST)
    v = row["times"].get(f"{tile}/{split}")
    return None if v is None else float(v["gpu_ms"])


def score(spec: Any, rows: list[dict], rule: tuple, usual: str) -> float | None:
    """Geomean of the rule's picks' time / cuDNN's over `rows`; None where a pick is untimed."""
    large_channels, large, large_waves, large_least, waves, least = rule
    ratios = []
    for r in rows:
        big = min(r["sizes"]["C"], r["sizes"]["K"]) >= large_channels
        t = pick(spec, r, large if big else usual, large_waves if big else waves,
                 large_least if big else least)
        if t is None:
            return None
        ratios.append(t / r["cudnn_gpu_ms"])
    return geomean(ratios)


def rule_tuple(rule: dict) -> tuple:
    """A tuned table's rule (its `wrw_rule` entry) as `score` takes it."""
    large = rule["large"]
    name = f"{large['BLOCK_M']}x{large['BLOCK_N']}x{large['BLOCK_K']}w{large['num_warps']}" \
        f"s{large['num_stages']}"
    return (rule["large_channels"], name, rule["large_waves"], rule["large_least"],
            rule["waves"], rule["least"])


def fit(rows: list[dict], usual: str, current: dict | None = None) -> dict:
    """The best rule on the zoo's rows, each part scored with it, with the old default rule
    (`today`) and, where given, the table's rule so far (`current`)."""
    spec = _spec()
    fit_rows = [r for r in rows if not r["held_out"]]
    held = [r for r in rows if r["held_out"]]
    tiles = sorted({k.split("/")[0] for r in rows for k in r["times"]} - {usual})
    best: tuple[float, tuple] | None = None
    tried = 0
    for large_channels, large, lw, ll, w, least in itertools.product(
            LARGE_CHANNELS, tiles, WAVES, LEAST, WAVES, LEAST):
        rule = (large_channels, large, lw, ll, w, least)
        s = score(spec, fit_rows, rule, usual)
        tried += 1
        if s is not None and (best is None or s < best[0]):
            best = (s, rule)
    if best is None:
        raise SystemExit("split_fit: no rule had every pick timed")
    today = (1 << 30, usual, 2, 8, 2, 8)

    def report(rs: list[dict]) -> dict:
        return {"rows": len(rs), "fitted": score(spec, rs, best[1], usual),
                "today": score(spec, rs, today, usual),
                **({"current": score(spec, rs, rule_tuple(current), usual)} if current else {}),
                "oracle": geomean([min(v["gpu_ms"] for v in r["times"].values())
                                   / r["cudnn_gpu_ms"] for r in rs])}

    large_channels, large, lw, ll, w, least = best[1]
    return {"rule": {"large_channels": large_channels,
                     "large": {**tile_name(large), "SPLIT_K": 1},
                     "large_waves": lw, "large_least": ll, "waves": w, "least": least},
            "rules_tried": tried, "fit": report(fit_rows), "held_out": report(held)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweeps", nargs="+", help="bench/split_sweep.py results")
    ap.add_argument("--write", help="tuned table to put the rule into")
    ap.add_argument("--out", help="path stem of a .json report")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args(argv)
    rows, sources, devices = [], [], set()
    for path in args.sweeps:
        try:
            data = json.loads(Path(path).read_text())
            rows += [r for r in data["rows"] if r["times"] and r["sizes"]["C"] >= 16
                     and r["case"] == "FP16-W-NHWC"]
            devices.add(data["device"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"split_fit: {path} is not a split_sweep.py result ({exc}); run "
                  f"bench/split_sweep.py to make one", file=sys.stderr)
            return 2
        sources.append(Path(path).name)
    usual = "64x64x64w4s4"
    current = None
    if args.write:
        try:
            current = json.loads(Path(args.write).read_text()).get("wrw_rule", {}) \
                .get("rules", {}).get("FP16-W-NHWC")
        except (OSError, ValueError, AttributeError):
            current = None
    result = fit(rows, usual, current)
    result.update({"sources": sources, "devices": sorted(devices), "case": "FP16-W-NHWC",
                   "usual": usual})
    if args.out:
        Path(args.out + ".json").write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"rule: {result['rule']} ({result['rules_tried']} tried)")
        for part in ("fit", "held_out"):
            e = result[part]
            cur = e.get("current")
            cur_text = "" if "current" not in e else \
                f", the table's so far {cur:.3f}" if cur is not None else \
                ", the table's so far not timed"
            print(f"{part}: {e['rows']} layers; GPU time / cuDNN geomean: fitted "
                  f"{e['fitted']:.3f}, today {e['today']:.3f}{cur_text}, best of the sweep "
                  f"{e['oracle']:.3f}")
    if args.write:
        table_path = Path(args.write)
        table = json.loads(table_path.read_text())
        table_usual = {k: v for k, v in table["defaults"]["FP16-W-NHWC"].items()
                       if k != "SPLIT_K"}
        if {**tile_name(usual)} != table_usual:
            print(f"split_fit: the sweep's usual tile {usual} is not the table's "
                  f"{table_usual}; sweep again", file=sys.stderr)
            return 3
        rule = result["rule"]
        table["wrw_rule"] = {"rules": {"FP16-W-NHWC": rule, "BF16-W-NHWC": rule},
                             "sources": sources, "devices": sorted(devices)}
        table_path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Depthwise backward weights' tile and SPLIT_K against cuDNN over the zoo, through the runtime
(device machine).

For every zoo layer whose groups equal its channels and filters (and, with `--held-out`, the
held-out networks' ones), at one batch, in each layout of `--layouts`: cuDNN's time (benchmark
on), then ConvTritonDepthwiseWrw at each tile of `--tiles` and each split of `--splits`, run
through an invoker of those parameters (`plan.make_invoker`: the FP32 partials and the reduce
launch included), every result checked against cuDNN's. GPU time as bench/zoo.py takes it
(launches queued behind a sleep kernel). The split the solver picks today (`default_params`)
is recorded per row, so the rule can be refitted on the rows.

    python bench/depthwise_wrw_split.py --out bench/results/dw_wrw_split_h200 [--every 1]
        [--layouts NHWC,NCHW] [--batch 32] [--held-out] [--budget-s 300]
        [--tiles 16x32w4,32x32w4] [--splits 16,64,256,1024]
    python bench/depthwise_wrw_split.py --from-json bench/results/dw_wrw_split_h200.json

Writes <out>.json (device, versions; per row the layer, cuDNN's time, today's parameters and
each (tile, split)'s time and error) and prints per layout: today's pick, the best single
(tile, split) over the rows, the best per row, all as GPU time / cuDNN geomeans.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOLVER = "ConvTritonDepthwiseWrw"
DEFAULT_TILES = {"NHWC": "16x32w4,32x32w4,16x64w4",
                 "NCHW": "64x8w4,128x8w4,64x4w2"}
DEFAULT_SPLITS = "16,32,64,128,256,512,1024"


def _zoo() -> Any:
    sys.path.insert(0, str(HERE))
    import zoo

    return zoo


def parse_tiles(text: str) -> list[tuple[int, int, int]]:
    """`16x32w4,...` as (BLOCK_M, BLOCK_N, num_warps)."""
    out = []
    for item in text.split(","):
        mn, w = item.split("w")
        m, n = mn.split("x")
        out.append((int(m), int(n), int(w)))
    return out


def measure(zoo: Any, handle: Any, solver: Any, p: Any, layer: Any, layout: str,
            tiles: list[tuple[int, int, int]], splits: list[int], repeats: int,
            budget_end: float) -> dict:
    from split_sweep import time_params, wrw_tensors

    target = handle.context.target
    tensors, ptrs, peer, ref = wrw_tensors(zoo, p)
    row: dict[str, Any] = {
        "network": layer.network, "layer": layer.name, "held_out": layer.held_out,
        "case": f"{p.in_type}-W-{layout}", "key": p.key(),
        "cudnn_gpu_ms": zoo.queued_gpu_ms(peer, repeats, 3),
        "default_params": list(solver.default_params(p, target)), "times": {}}
    positions = p.n * math.prod(p.out_spatial)
    # Per tile: the programs of an unsplit launch and the BLOCK_M steps of its reduction, what
    # a split rule reads (`--fit`).
    for bm, bn, nw in tiles:
        (gx, gy, _), _ = solver.launch_geometry(p, (bm, bn, 1, 1, 1, nw, 1))
        row.setdefault("geometry", {})[f"{bm}x{bn}w{nw}"] = {
            "programs": gx * gy, "steps": -(-positions // bm)}
    todo = [(bm, bn, 1, 1, s, nw, 1) for bm, bn, nw in tiles for s in splits]
    if tuple(row["default_params"]) not in todo:
        todo.insert(0, tuple(row["default_params"]))
    for params in todo:
        if time.monotonic() > budget_end:
            break
        if not solver.params_valid(p, target, params):
            continue
        name = ",".join(str(v) for v in params)
        row["times"][name] = time_params(zoo, handle, solver, p, params, tensors, ptrs, ref,
                                         repeats)
    return row


def load_run(path: Path) -> dict | None:
    """A run `--out` wrote, or None where the file is unreadable or not one."""
    try:
        result = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(result, dict) or not isinstance(result.get("sms"), int) or \
            not isinstance(result.get("rows"), list) or \
            not all(isinstance(r, dict) and {"case", "times", "cudnn_gpu_ms", "held_out",
                                             "default_params"} <= set(r)
                    for r in result["rows"]):
        return None
    return result


def summary(result: dict) -> dict:
    """Per case: today's pick, the best single parameter set over the rows (among those every
    row has) and the best per row, as geomeans of GPU time / cuDNN."""
    out = {}
    for case in sorted({r["case"] for r in result["rows"]}):
        rows = [r for r in result["rows"] if r["case"] == case and r["times"]]

        def geo(values: list[float]) -> float:
            return math.exp(sum(math.log(v) for v in values) / len(values)) if values else 0.0

        today = [r["times"][",".join(map(str, r["default_params"]))]["gpu_ms"] /
                 r["cudnn_gpu_ms"] for r in rows
                 if ",".join(map(str, r["default_params"])) in r["times"]]
        common = set.intersection(*(set(r["times"]) for r in rows)) if rows else set()
        single = {k: geo([r["times"][k]["gpu_ms"] / r["cudnn_gpu_ms"] for r in rows])
                  for k in common}
        best_single = min(single.items(), key=lambda kv: kv[1]) if single else ("", 0.0)
        out[case] = {
            "rows": len(rows), "today": round(geo(today), 3),
            "best_single": best_single[0], "best_single_geomean": round(best_single[1], 3),
            "best_per_row": round(geo([min(v["gpu_ms"] for v in r["times"].values()) /
                                       r["cudnn_gpu_ms"] for r in rows]), 3),
            "max_rel_err": max((v["rel_err"] for r in rows for v in r["times"].values()),
                               default=0.0)}
    return out


def fit(result: dict, sms: int) -> dict:
    """The split rule (`filling_split`'s waves, most and least) and tile per layout whose
    measured picks have the lowest GPU time / cuDNN geomean over the rows of the networks the
    zoo holds; the held-out rows scored apart, never fitted on. A rule's pick that the sweep
    did not time counts against it (the rule is left out)."""
    sys.path.insert(0, str(HERE.parent))
    from kernels.conv_triton_grid_spec import filling_split

    out = {}
    for case in sorted({r["case"] for r in result["rows"]}):
        rows = [r for r in result["rows"] if r["case"] == case and r["times"]]
        fitted = [r for r in rows if not r["held_out"]]
        held = [r for r in rows if r["held_out"]]

        def score(rs: list[dict], tile: str, waves: int, most: int, least: int) -> float | None:
            logs = []
            for r in rs:
                g = r["geometry"][tile]
                split = filling_split(g["programs"], g["steps"], sms, least, most, waves)
                bm, rest = tile.split("x")
                bn, nw = rest.split("w")
                t = r["times"].get(f"{bm},{bn},1,1,{split},{nw},1")
                if t is None:
                    return None
                logs.append(math.log(t["gpu_ms"] / r["cudnn_gpu_ms"]))
            return math.exp(sum(logs) / len(logs)) if logs else None

        best = None
        for tile in sorted(set.intersection(*(set(r["geometry"]) for r in rows))):
            for waves in (2, 4, 8, 16, 32, 64):
                for most in (64, 128, 256, 512, 1024):
                    for least in (1, 2, 4, 8, 16):
                        s = score(fitted, tile, waves, most, least)
                        if s is not None and (best is None or s < best[0]):
                            best = (s, tile, waves, most, least)
        if best is None:
            continue
        s, tile, waves, most, least = best
        out[case] = {"tile": tile, "waves": waves, "most": most, "least": least,
                     "fitted_rows": len(fitted), "fitted_geomean": round(s, 3),
                     "held_out_rows": len(held),
                     "held_out_geomean": round(score(held, tile, waves, most, least) or 0.0, 3),
                     "held_out_today": summary({"rows": held})[case]["today"] if held else 0.0,
                     "fitted_today": summary({"rows": fitted})[case]["today"]}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="path stem of the .json result")
    ap.add_argument("--from-json", type=Path, help="print a run's summary again (no GPU)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--fit", action="store_true",
                    help="with --from-json: the split rule and tile fitted per layout")
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--type", default="FP16")
    ap.add_argument("--layouts", default="NHWC,NCHW")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--held-out", action="store_true")
    ap.add_argument("--budget-s", type=float, default=300.0)
    ap.add_argument("--tiles", default="", help="BMxBNwW,...; default: DEFAULT_TILES")
    ap.add_argument("--splits", default=DEFAULT_SPLITS)
    args = ap.parse_args(argv)
    if args.from_json:
        result = load_run(args.from_json)
        if result is None:
            print(f"depthwise_wrw_split: {args.from_json} is not a run of this script "
                  "(a JSON object with sms and rows, as --out writes); pass one",
                  file=sys.stderr)
            return 2
        if args.fit:
            f = fit(result, int(result["sms"]))
            print(json.dumps(f, indent=1) if args.json else "\n".join(
                f"{c}: {v['tile']} waves {v['waves']} most {v['most']} least {v['least']}: "
                f"fitted {v['fitted_today']} -> {v['fitted_geomean']} ({v['fitted_rows']}), "
                f"held out {v['held_out_today']} -> {v['held_out_geomean']} "
                f"({v['held_out_rows']})" for c, v in f.items()))
            return 0
        s = summary(result)
        print(json.dumps(s, indent=1) if args.json else "\n".join(
            f"{c}: {v['rows']} layers, today {v['today']}, best single {v['best_single']} "
            f"{v['best_single_geomean']}, best per row {v['best_per_row']}"
            for c, v in s.items()))
        return 0
    if not args.out:
        ap.error("--out is required (or --from-json)")
    import torch
    import triton
    from miopenkernels.handle import Handle
    from miopenkernels.solvers import get_solver

    zoo = _zoo()
    handle = Handle()
    solver = get_solver(SOLVER)
    layers = zoo.every_kth(zoo.load_layers(held_out=args.held_out), args.every)
    splits = [int(s) for s in args.splits.split(",")]
    budget_end = time.monotonic() + args.budget_s
    rows, errors, seen = [], [], set()
    for la in layers:  # both layouts of a layer in turn: a run the budget stops has both
        for layout in args.layouts.split(","):
            tiles = parse_tiles(args.tiles or DEFAULT_TILES[layout])
            if time.monotonic() > budget_end:
                break
            p = zoo.layer_problem(la, args.type, "W", layout, args.batch)
            if p.key() in seen or not (p.groups == p.c == p.k > 1) or \
                    not solver.is_applicable(p, handle.context.target):
                continue
            seen.add(p.key())
            try:
                rows.append(measure(zoo, handle, solver, p, la, layout, tiles, splits,
                                    args.repeats, budget_end))
            except Exception as exc:  # noqa: BLE001 - listed, the run goes on
                errors.append({"key": p.key(), "error": f"{type(exc).__name__}: {exc}"[:300]})
            print(f"[{len(rows)}] {p.key()}", flush=True)
    props = torch.cuda.get_device_properties(0)
    result = {"device": props.name, "sms": props.multi_processor_count,
              "torch": torch.__version__, "cuda": torch.version.cuda,
              "cudnn": torch.backends.cudnn.version(), "triton": triton.__version__,
              "batch": args.batch, "every": args.every, "type": args.type,
              "repeats": args.repeats, "splits": splits, "errors": errors,
              "compiles": handle.compilations, "rows": rows}
    result["summary"] = summary(result)
    Path(args.out + ".json").write_text(json.dumps(result, indent=1))
    for c, v in result["summary"].items():
        print(f"{c}: {v['rows']} layers, today {v['today']}, best single {v['best_single']} "
              f"{v['best_single_geomean']}, best per row {v['best_per_row']}, "
              f"max rel err {v['max_rel_err']:.1e}")
    print(f"{len(errors)} errors, {handle.compilations} compiles")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

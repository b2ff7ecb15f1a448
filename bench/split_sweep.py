"""Backward weights' SPLIT_K against cuDNN over the zoo: every split of a few tiles, through the
runtime, so that the rule choosing the split (`conv_triton_spec.split_for`) can be fitted on
the zoo's networks and checked on the held-out ones.

On the GPU machine. For every zoo layer (and, with `--held-out`, the held-out networks' layers)
of one group whose backward weights ConvTritonImplicitGemmWrw runs, at one batch and layout, per
type: cuDNN's time (benchmark on), then each tile of `TILES` at each split of 1-64 that the
kernel may take, run through the runtime (an invoker of those params, `plan.make_invoker`: the
split's FP32 partials and the reduce launch included; splits below a quarter of today's rule's
are left out), every result checked against cuDNN's. Times are GPU times as bench/zoo.py takes
them (launches queued behind a sleep kernel). The JSON (`--out`) holds device and versions and,
per row, the layer, its sizes, cuDNN's time, the split `split_for` picks today and each (tile,
split)'s time.

    python bench/split_sweep.py --out bench/results/split_sweep_h200 [--every 3]
        [--types FP16] [--layout NHWC] [--batch 32] [--held-out] [--budget-s 400]
        [--tiles 64x64x64w4s4,128x128x64w8s3,128x128x32w4s4] [--splits 1,2,...,64]
        [--kernel conv2d_bwd_weight_smallc] [--layout NHWC,NCHW]
    python bench/split_sweep.py --fit bench/results/split_sweep_smallc_h200.json [--json]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
import zlib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOLVER = "ConvTritonImplicitGemmWrw"
#: (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages): the sm90 usual FP16 tile and
#: two larger ones.
TILES = ((64, 64, 64, 8, 4, 4), (128, 128, 64, 8, 8, 3), (128, 64, 64, 8, 4, 4))
SPLITS = (1, 2, 4, 8, 16, 32, 64)


def _zoo() -> Any:
    """bench/zoo.py (its layers, problems, tensors and GPU timing)."""
    sys.path.insert(0, str(HERE))
    import zoo

    return zoo


def parse_tiles(text: str) -> tuple[tuple[int, ...], ...]:
    """`64x64x64w4s4,...` as TILES' tuples (GROUP_M 8)."""
    out = []
    for item in text.split(","):
        try:
            mnk, rest = item.strip().split("w")
            bm, bn, bk = (int(v) for v in mnk.split("x"))
            nw, ns = (int(v) for v in rest.split("s"))
        except ValueError:
            raise SystemExit(f"split_sweep: tile {item!r} is not BMxBNxBKwWARPSsSTAGES "
                             "(e.g. 128x128x32w4s4)") from None
        out.append((bm, bn, bk, 8, nw, ns))
    return tuple(out)


def measure(zoo: Any, handle: Any, solver: Any, layer: Any, type_name: str, layout: str,
            batch: int, repeats: int, budget_end: float,
            tiles: tuple[tuple[int, ...], ...] = TILES, splits: tuple[int, ...] = SPLITS,
            kernel_only: str = "") -> dict | None:
    from miopenkernels.kernels import conv_triton_spec as spec
    from miopenkernels.solvers.triton_common import problem_view, spec_sizes

    p = zoo.layer_problem(layer, type_name, "W", layout, batch)
    if p.groups > 1 or not solver.is_applicable(p, handle.context.target):
        return None
    if kernel_only and problem_view(p)[2] != kernel_only:
        return None
    tensors, ptrs, peer, ref = wrw_tensors(zoo, p)
    cudnn_ms = zoo.queued_gpu_ms(peer, repeats, 3)
    view, _, kernel, _ = problem_view(p)
    sizes = spec_sizes(view)
    sms = handle.context.target.cu
    row: dict[str, Any] = {
        "network": layer.network, "layer": layer.name, "held_out": layer.held_out,
        "classes": list(zoo.layer_classes(p)), "case": f"{type_name}-W-{layout}", "n": batch,
        "key": p.key(), "sizes": sizes, "sms": sms, "cudnn_gpu_ms": cudnn_ms,
        "default_params": list(handle.params_for(p, solver)), "times": {}}
    today = tuple(row["default_params"])
    row["times"][_name(today)] = time_params(zoo, handle, solver, p, today, tensors, ptrs, ref,
                                             repeats)
    for tile in tiles:
        bm, bn, bk, gm, nw, ns = tile
        config = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": gm}
        gx, gy, gz = spec.grid(kernel, sizes, {**config, "SPLIT_K": 1})
        row.setdefault("programs", {})[f"{bm}x{bn}"] = gx * gy * gz
        row.setdefault("rule_split", {})[f"{bm}x{bn}"] = spec.split_for(kernel, sizes, config, sms)
        for split in splits:
            if time.monotonic() > budget_end:
                return row
            params = (bm, bn, bk, gm, split, nw, ns)
            # The split is the launch's grid (one object serves every split above 1): a
            # split beyond the legal ones is timed where the tile is legal at the largest.
            legal = (bm, bn, bk, gm, min(split, max(SPLITS)), nw, ns)
            if not solver.params_valid(p, handle.context.target, legal):
                continue
            name = _name(params)
            if split < row["rule_split"][f"{bm}x{bn}"] // 4 or name in row["times"]:
                continue  # far too few programs to fill the GPU: slow, and never picked
            row["times"][name] = time_params(zoo, handle, solver, p, params, tensors, ptrs,
                                             ref, repeats)
    return row


def wrw_tensors(zoo: Any, p: Any) -> tuple[dict, dict, Any, Any]:
    """What a backward-weights bench times a problem on: the zoo's tensors in its layout
    ({role: (stored, logical view)}), their pointers for an invoker, PyTorch's call of the
    same convolution (cuDNN, benchmark on) and that call's output in FP32."""
    import torch

    tdt = {"FP16": torch.float16, "BF16": torch.bfloat16}.get(p.in_type, torch.float32)
    tensors = zoo._tensors(p, tdt)
    ptrs = {role: t.data_ptr() for role, (t, _) in tensors.items()}
    torch.backends.cudnn.benchmark = True
    peer = zoo._peer(p, {role: view for role, (_, view) in tensors.items()})
    return tensors, ptrs, peer, peer().float()


def _name(params: tuple[int, ...]) -> str:
    """A parameter set as a sweep entry's name: BMxBNxBKwWARPSsSTAGES/SPLIT."""
    bm, bn, bk, _, split, nw, ns = params
    return f"{bm}x{bn}x{bk}w{nw}s{ns}/{split}"


def time_params(zoo: Any, handle: Any, solver: Any, p: Any, params: tuple[int, ...],
                tensors: dict, ptrs: dict, ref: Any, repeats: int) -> dict:
    """One parameter set of a backward-weights solver through an invoker of its own (the
    handle keeps one per problem and solver): its GPU time (bench/zoo.py's queued timing) and
    its relative error against `ref`, dw poisoned with NaN first; its workspace freed after."""
    import torch
    from miopenkernels.invoke import workspace_ptr
    from miopenkernels.plan import make_invoker

    inv = make_invoker(handle.context, p, solver, params=params)
    try:
        ptrs["workspace"] = workspace_ptr(handle.backend, inv)
        tensors["w"][0].fill_(float("nan"))
        inv(ptrs)
        torch.cuda.synchronize()
        out = tensors["w"][1].float()
        err = float((out - ref).norm() / max(float(ref.norm()), 1e-30))
        return {"gpu_ms": zoo.queued_gpu_ms(functools.partial(inv, ptrs), repeats, 2),
                "rel_err": err}
    finally:
        torch.cuda.synchronize()
        if inv.workspace is not None:
            inv.workspace.free()
            inv.workspace = None


def compare(old: dict, new: dict) -> dict:
    """Two sweeps' times over the (layer, tile, split) entries both hold: per split, the
    geomean, least and most of new / old; and over the layers both hold, the geomean of each
    sweep's fastest entry over cuDNN's."""
    import math

    def geo(values: list[float]) -> float:
        return math.exp(sum(map(math.log, values)) / len(values))

    a = {r["key"]: r for r in old["rows"] if r["times"]}
    b = {r["key"]: r for r in new["rows"] if r["times"]}
    per_split: dict[int, list[float]] = {}
    for key in a.keys() & b.keys():
        for entry in a[key]["times"].keys() & b[key]["times"].keys():
            per_split.setdefault(int(entry.split("/")[1]), []).append(
                b[key]["times"][entry]["gpu_ms"] / a[key]["times"][entry]["gpu_ms"])
    best = {name: geo([min(v["gpu_ms"] for v in rows[k]["times"].values())
                       / rows[k]["cudnn_gpu_ms"] for k in a.keys() & b.keys()])
            for name, rows in (("old", a), ("new", b))}
    return {"splits": {s: {"geomean": geo(v), "min": min(v), "max": max(v), "entries": len(v)}
                       for s, v in sorted(per_split.items())},
            "layers": len(a.keys() & b.keys()), "best_vs_cudnn": best}


def fit(result: dict) -> dict:
    """The split rule (`filling_split`'s waves, most and least) and tile per case whose picks
    have the lowest geomean of GPU time / cuDNN's over the rows of networks the zoo holds; the
    held-out rows scored with it apart, never fitted on. A rule whose pick on some row the
    sweep did not time is left out; today's parameters are scored beside it."""
    import math

    sys.path.insert(0, str(HERE.parent))
    from kernels.conv_triton_grid_spec import filling_split

    def geo(values: list[float]) -> float:
        return math.exp(sum(map(math.log, values)) / len(values)) if values else 0.0

    def steps(row: dict, bk: int) -> int:
        z = row["sizes"]
        return -(-z["N"] * z["P"] * z["Q"] // bk)

    def score(rows: list[dict], tile: str, rule: tuple[int, int, int]) -> float | None:
        waves, most, least = rule
        bm, bn = tile.split("/")[0].split("x")[:2]
        bk = int(tile.split("x")[2].split("w")[0])
        out = []
        for r in rows:
            split = filling_split(r["programs"][f"{bm}x{bn}"], steps(r, bk), r["sms"], least,
                                  most, waves)
            t = r["times"].get(f"{tile}/{split}")
            if t is None:
                return None
            out.append(t["gpu_ms"] / r["cudnn_gpu_ms"])
        return geo(out)

    found = {}
    for case in sorted({r["case"] for r in result["rows"]}):
        rows = [r for r in result["rows"] if r["case"] == case and r["times"]]
        fitted = [r for r in rows if not r["held_out"]]
        held = [r for r in rows if r["held_out"]]
        tiles = sorted({e.split("/")[0] for r in rows for e in r["times"]})
        best = None
        for tile in tiles:
            for rule in ((w, m, le) for w in (2, 4, 8, 16, 32, 64)
                         for m in (64, 128, 256, 512, 1024) for le in (1, 2, 4, 8, 16)):
                g = score(fitted, tile, rule)
                if g is not None and (best is None or g < best[0]):
                    best = (g, tile, rule)
        if best is None:
            continue
        g, tile, (waves, most, least) = best
        found[case] = {
            "tile": tile, "waves": waves, "most": most, "least": least,
            "fitted_rows": len(fitted), "fitted_geomean": round(g, 3),
            "fitted_today": round(geo([_today(r) / r["cudnn_gpu_ms"] for r in fitted
                                       if _today(r) is not None]), 3),
            "held_out_rows": len(held),
            "held_out_geomean": round(score(held, tile, (waves, most, least)) or 0.0, 3),
            "held_out_today": round(geo([_today(r) / r["cudnn_gpu_ms"] for r in held
                                         if _today(r) is not None]), 3),
            "best_per_row": round(geo([min(v["gpu_ms"] for v in r["times"].values()) /
                                       r["cudnn_gpu_ms"] for r in fitted]), 3)}
    return found


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--fit"]:
        fp = argparse.ArgumentParser(description=fit.__doc__)
        fp.add_argument("--fit", type=Path, required=True, metavar="RUN",
                        help="a split_sweep.py result (no GPU)")
        fp.add_argument("--json", action="store_true")
        fargs = fp.parse_args(argv)
        try:
            found = fit(json.loads(fargs.fit.read_text()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
            print(f"split_sweep: {fargs.fit} is not a split_sweep.py result ({exc})",
                  file=sys.stderr)
            return 2
        if fargs.json:
            print(json.dumps(found, indent=1))
            return 0
        for case, v in found.items():
            print(f"{case}: {v['tile']} waves {v['waves']} most {v['most']} least "
                  f"{v['least']}: fitted {v['fitted_today']} -> {v['fitted_geomean']} "
                  f"({v['fitted_rows']} rows, best per row {v['best_per_row']}), held out "
                  f"{v['held_out_today']} -> {v['held_out_geomean']} ({v['held_out_rows']})")
        return 0
    if argv[:1] == ["--compare"]:
        cp = argparse.ArgumentParser(description=compare.__doc__)
        cp.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"), required=True,
                        help="two split_sweep.py results (no GPU)")
        cp.add_argument("--json", action="store_true")
        cargs = cp.parse_args(argv)
        try:
            old, new = (json.loads(Path(f).read_text()) for f in cargs.compare)
            found = compare(old, new)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"split_sweep: {cargs.compare} are not two split_sweep.py results ({exc})",
                  file=sys.stderr)
            return 2
        if cargs.json:
            print(json.dumps(found, indent=1))
            return 0
        for split, v in found["splits"].items():
            print(f"split {split}: new / old {v['geomean']:.3f} ({v['min']:.2f}-{v['max']:.2f}, "
                  f"{v['entries']} entries)")
        print(f"{found['layers']} layers: fastest entry / cuDNN {found['best_vs_cudnn']['old']:.3f}"
              f" -> {found['best_vs_cudnn']['new']:.3f}")
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"),
                    help="compare two saved sweeps instead (no GPU; first argument)")
    ap.add_argument("--out", required=True, help="path stem of the .json result")
    ap.add_argument("--every", type=int, default=3)
    ap.add_argument("--types", default="FP16")
    ap.add_argument("--layout", default="NHWC")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--max-gb", type=float, default=3.0)
    ap.add_argument("--held-out", action="store_true")
    ap.add_argument("--budget-s", type=float, default=400.0)
    ap.add_argument("--tiles", default="",
                    help="comma-separated BMxBNxBKwWARPSsSTAGES (default: TILES)")
    ap.add_argument("--splits", default=",".join(map(str, SPLITS)),
                    help="comma-separated splits (default: 1-64)")
    ap.add_argument("--kernel", default="",
                    help="only layers that run this kernel (e.g. conv2d_bwd_weight_smallc)")
    args = ap.parse_args(argv)
    tiles = parse_tiles(args.tiles) if args.tiles else TILES
    try:
        splits = tuple(int(v) for v in args.splits.split(","))
    except ValueError:
        ap.error(f"--splits {args.splits!r} is not comma-separated integers")
    import torch
    import triton
    from miopenkernels.handle import Handle
    from miopenkernels.solvers import get_solver

    zoo = _zoo()
    handle = Handle()
    solver = get_solver(SOLVER)
    layers = zoo.every_kth(zoo.load_layers(held_out=args.held_out), args.every)
    seen, unique = set(), []
    layouts = args.layout.split(",")
    for la in layers:  # one row per distinct problem
        key = zoo.layer_problem(la, "FP16", "W", layouts[0], args.batch).key()
        if key not in seen:
            seen.add(key)
            unique.append(la)
    # Interleaved: a run the budget stops still covers every network.
    unique.sort(key=lambda la: (zlib.crc32(la.name.encode()) % 7, la.network))
    budget_end = time.monotonic() + args.budget_s
    rows, errors = [], []
    for i, la in enumerate(unique):
        for t, layout in ((t, lo) for t in args.types.split(",") for lo in layouts):
            if time.monotonic() > budget_end:
                break
            p = zoo.layer_problem(la, t, "W", layout, args.batch)
            if zoo.tensor_gb(p) > args.max_gb:
                continue
            try:
                row = measure(zoo, handle, solver, la, t, layout, args.batch,
                              args.repeats, budget_end, tiles, splits, args.kernel)
                if row:
                    rows.append(row)
            except Exception as exc:  # noqa: BLE001 - listed, the run goes on
                errors.append({"network": la.network, "layer": la.name, "type": t,
                               "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
        if i % 20 == 0:
            print(f"[{i}/{len(unique)}] rows {len(rows)} errors {len(errors)}", flush=True)
    props = torch.cuda.get_device_properties(0)
    result = {"device": props.name, "sms": props.multi_processor_count,
              "torch": torch.__version__, "cuda": torch.version.cuda,
              "cudnn": torch.backends.cudnn.version(), "triton": triton.__version__,
              "batch": args.batch, "every": args.every, "layout": args.layout,
              "repeats": args.repeats, "tiles": [list(t) for t in tiles],
              "layers": len(unique), "measured": len(rows),
              "errors": errors, "compiles": handle.compilations, "rows": rows}
    Path(args.out + ".json").write_text(json.dumps(result, indent=1))
    g = zoo.geomean
    for case in sorted({r["case"] for r in rows}):
        rs = [r for r in rows if r["case"] == case and r["times"]]
        today = [r for r in rs if _today(r) is not None]
        best = g(min(v["gpu_ms"] for v in r["times"].values()) / r["cudnn_gpu_ms"] for r in rs)
        print(f"{case}: {len(rs)} layers; GPU time / cuDNN geomean: today's split "
              f"{g(_today(r) / r['cudnn_gpu_ms'] for r in today):.2f}, best of the sweep "
              f"{best:.2f}"
              f"; max rel err {max(v['rel_err'] for r in rs for v in r['times'].values()):.1e}")
    print(f"{len(errors)} errors, {handle.compilations} compiles")
    return 0


def _today(row: dict) -> float | None:
    """The time of the parameters the runtime gives the layer today (`default_params`; in
    runs before it was timed on its own, the usual tile at the split the rule picks)."""
    v = row["times"].get(_name(tuple(row["default_params"])))
    if v is None:
        bm, bn, bk, gm, nw, ns = TILES[0]
        split = row["rule_split"].get(f"{bm}x{bn}")
        v = row["times"].get(f"{bm}x{bn}x{bk}w{nw}s{ns}/{split}")
    return None if v is None else v["gpu_ms"]


if __name__ == "__main__":
    sys.exit(main())

"""Depthwise forward tiles at small and large batch, and the filter unrolled, against cuDNN
(device machine).

For the depthwise forward layers of MobileNet-v2 and of the zoo's other depthwise networks
(`--networks`), at `--batches`, in FP16 and FP32 (IEEE; cuDNN with TF32 off), NCHW and NHWC:
the package's `depthwise_conv` with its taps in run-time loops (TAPS_R = TAPS_S = 0) and
with the filter's size a compile-time constant, its taps unrolled (TAPS_R x TAPS_S), over a
search of tiles (BLOCK_M pixels x BLOCK_N channels, warps), each object compiled ahead of time
as the builder does and checked against torch in float64. GPU time per call is the median
replay of a CUDA graph of `--inner` calls (bench/triton_conv.py's `median_ms`).

    python bench/depthwise_tiles.py --out bench/results/depthwise_tiles_h100
    python bench/depthwise_tiles.py --networks mobilenet_v2 --batches 1 --json

Writes <out>.json (per layer and case: cuDNN, the package's usual tile, every tile tried in
both variants; a `summary` per case and batch) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from triton_conv import (  # noqa: E402
    add_timing_args,
    compile_all,
    layer_sizes,
    median_ms,
    sweep_setup,
    write_result,
)

CASES = ("FP16-NHWC", "FP16-NCHW", "FP32-NHWC", "FP32-NCHW")
TOLERANCE = {"FP16": 5e-3, "FP32": 2e-5}
#: (BLOCK_M, BLOCK_N, num_warps) by layout: channels-last tiles wide along channels.
TILES = {"NHWC": [(8, 32, 1), (8, 64, 2), (16, 32, 2), (16, 64, 4), (32, 32, 4), (8, 128, 4),
                  (16, 128, 4), (32, 64, 4), (64, 32, 4), (4, 64, 1), (8, 16, 1), (32, 128, 8)],
         "NCHW": [(32, 4, 1), (64, 2, 1), (64, 4, 2), (128, 4, 4), (128, 8, 4), (256, 4, 4),
                  (64, 8, 2), (32, 8, 2), (256, 8, 8), (128, 2, 2), (64, 16, 4), (32, 16, 4)]}


def depthwise_layers(network: str, batch: int) -> list[Any]:
    from miopenkernels.builder.manifest import load_manifest

    seen: dict[Any, None] = {}
    for p in load_manifest(network):
        if p.direction == "F" and p.in_layout == "NCHW" and p.in_type == "FP32" and \
                p.groups == p.c == p.k and p.groups > 1 and len(p.in_spatial) == 2:
            seen.setdefault(replace(p, n=batch))
    return list(seen)


def compiled(dtype: str, tile: tuple[int, int, int], cl: bool, aligned: bool,
             taps: tuple[int, int] | None, target: tuple) -> Any:
    from _objects import compiled as object_of
    from miopenkernels.kernels import conv_triton_depthwise as dk
    from miopenkernels.kernels import conv_triton_depthwise_spec as ds

    m, n, warps = tile
    sig, cx = ds.signature("F", dtype, {"BLOCK_M": m, "BLOCK_N": n}, cl,
                           taps[0] * 10 + taps[1] if taps else 0)
    assume = ([(a, ds.align_divisor(dtype)) for a in ds.ALIGN16["depthwise_conv"]]
              if aligned else [])
    return object_of(dk.depthwise_conv, [(k, t) for k, t in sig.items() if t != "constexpr"],
                     cx, assume, warps, 1, target)


def _job(job: tuple) -> None:
    compiled(*job)


def plan(layers: list[tuple[str, Any]], cases: list[str], target: tuple
         ) -> tuple[list[tuple], dict[tuple, tuple]]:
    out, jobs = [], {}
    for net, p in layers:
        sz = layer_sizes(p)
        for case in cases:
            dtype, lay = case.split("-")
            cl = lay == "NHWC"
            from miopenkernels.kernels import conv_triton_depthwise_spec as ds

            div = ds.align_divisor(dtype)
            aligned = cl and sz["G"] % div == 0 and all(
                v % div == 0 for v in (sz["G"] * sz["W"], sz["G"] * sz["Q"]))
            taps = (sz["R"], sz["S"])
            tried = []
            for tile in TILES[lay]:
                for variant in (None, taps):
                    tried.append((tile, variant))
                    jobs[(dtype, tile, cl, aligned, variant)] = (dtype, tile, cl, aligned,
                                                                 variant, target)
            out.append((net, p, case, dtype, cl, aligned, tried))
    return out, jobs


def run(cases: list[tuple], target: tuple, args: Any) -> list[dict]:
    import torch
    import torch.nn.functional as F
    from miopenkernels.kernels import conv_triton_depthwise_spec as ds

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    tdt = {"FP16": torch.float16, "FP32": torch.float32}
    rows = []
    for net, p, case, dtype, cl, aligned, tried in cases:
        sz = layer_sizes(p)
        g = sz["G"]
        gen = torch.Generator(device="cuda").manual_seed(3)
        x = torch.randn((sz["N"], g, sz["H"], sz["W"]), device="cuda", generator=gen)
        w = torch.randn((g, 1, sz["R"], sz["S"]), device="cuda", generator=gen) / sz["R"]
        x, w = x.to(tdt[dtype]), w.to(tdt[dtype])
        ref = F.conv2d(x.double(), w.double(), None, p.stride, p.pad, p.dilation, g)
        mf = torch.channels_last if cl else torch.contiguous_format
        xl, wl = x.contiguous(memory_format=mf), w.contiguous(memory_format=mf)
        out = F.conv2d(xl, wl, None, p.stride, p.pad, p.dilation, g)
        def cudnn(xl: Any = xl, wl: Any = wl, p: Any = p, g: int = g) -> Any:
            return F.conv2d(xl, wl, None, p.stride, p.pad, p.dilation, g)

        cudnn_ms = median_ms(cudnn, args.samples, args.inner)
        vals = ds.arg_values("F", sz, {"x": xl.stride(), "w": wl.stride(), "y": out.stride()})
        flat = [xl, wl, out, *(vals[k] for k, t in ds.ARGS["depthwise_conv"] if t == "i32")]
        results = []
        for tile, variant in tried:
            obj = compiled(dtype, tile, cl, aligned, variant, target)
            grid = ds.grid("F", sz, {"BLOCK_M": tile[0], "BLOCK_N": tile[1]})
            # The launcher takes the constexprs too, in the kernel's order.
            full = [*flat, tile[0], tile[1], int(cl), 0, *(variant or (0, 0))]

            def call(obj: Any = obj, grid: tuple = grid, full: list = full) -> None:
                obj[grid](*full)

            out.fill_(float("nan"))
            call()
            torch.cuda.synchronize()
            err = float((out.double() - ref).norm() / ref.norm())
            ms = median_ms(call, args.samples, args.inner)
            results.append([f"{tile[0]}x{tile[1]} w{tile[2]}", "taps" if variant else "loop",
                            round(ms * 1000, 3), err, err <= TOLERANCE[dtype]])
        usual = ds.TILES[("F", cl)]
        name = f"{usual['BLOCK_M']}x{usual['BLOCK_N']} w{usual['num_warps']}"
        ok = [r for r in results if r[4]]
        row = {"network": net, "problem": p.key(), "case": case, "batch": sz["N"],
               "aligned": aligned, "cudnn_us": cudnn_ms * 1000, "tried": results,
               "all_correct": len(ok) == len(results),
               "usual_us": next((r[2] for r in ok if r[0] == name and r[1] == "loop"), None),
               "best_loop_us": min((r[2] for r in ok if r[1] == "loop"), default=None),
               "best_taps_us": min((r[2] for r in ok if r[1] == "taps"), default=None)}
        rows.append(row)
        print(f"{case:9} b{sz['N']:<3} {p.key()[:42]:42} cudnn {row['cudnn_us']:6.2f} usual "
              f"{row['usual_us'] or float('nan'):6.2f} loop {row['best_loop_us']:6.2f} taps "
              f"{row['best_taps_us']:6.2f}{'' if row['all_correct'] else ' WRONG'}", flush=True)
    return rows


def _geo(v: list[float]) -> float:
    return round(math.exp(sum(map(math.log, v)) / len(v)), 3) if v else float("nan")


def tiles_unrolled(rows: list[dict]) -> dict:
    """Per case, each tile unrolled against cuDNN: geomean per batch and over all the rows
    (the one tile a layout ships is the one lowest over all)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for case in sorted({r["case"] for r in rows}):
        rs = [r for r in rows if r["case"] == case]
        per: dict[str, dict[str, float]] = {}
        for tile in sorted({t[0] for r in rs for t in r["tried"]}):
            def ratios(sel: list[dict], tile: str = tile) -> list[float]:
                return [t[2] / r["cudnn_us"] for r in sel for t in r["tried"]
                        if t[0] == tile and t[1] == "taps"]

            per[tile] = {f"b{b}": _geo(ratios([r for r in rs if r["batch"] == b]))
                         for b in sorted({r["batch"] for r in rs})}
            per[tile]["all"] = _geo(ratios(rs))
        out[case] = per
    return out


def summarise(rows: list[dict]) -> dict:
    geo = _geo
    out = {}
    for case in sorted({(r["case"], r["batch"]) for r in rows}):
        rs = [r for r in rows if (r["case"], r["batch"]) == case]
        out[f"{case[0]}-b{case[1]}"] = {
            "layers": len(rs),
            "usual": geo([r["usual_us"] / r["cudnn_us"] for r in rs if r["usual_us"]]),
            "best_loop": geo([r["best_loop_us"] / r["cudnn_us"] for r in rs]),
            "best_taps": geo([r["best_taps_us"] / r["cudnn_us"] for r in rs]),
            "wrong": sum(not r["all_correct"] for r in rs)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--networks", default="mobilenet_v2")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--from-json", type=Path,
                    help="no GPU: summarise this script's earlier result again (into --out)")
    add_timing_args(ap, CASES, 9, 10)
    args = ap.parse_args(argv)
    if args.from_json:
        result = json.loads(args.from_json.read_text())
        result["summary"] = summarise(result["rows"])
        result["tiles_unrolled"] = tiles_unrolled(result["rows"])
        report(result)
        return write_result(result, args)
    cases, props, target = sweep_setup(args, CASES)
    import torch

    seen: dict[str, tuple[str, Any]] = {}
    for batch in (int(b) for b in args.batches.split(",") if b):
        for net in (n for n in args.networks.split(",") if n):
            for p in depthwise_layers(net, batch):
                seen.setdefault(p.key(), (net, p))
    planned, jobs = plan(list(seen.values()), cases, target)
    compile_all(_job, list(jobs.values()), args.workers)
    rows = run(planned, target, args)
    import triton

    result = {"device": props.name, "sms": props.multi_processor_count,
              "versions": {"torch": torch.__version__, "cuda": torch.version.cuda,
                           "cudnn": torch.backends.cudnn.version(), "triton": triton.__version__},
              "networks": args.networks.split(","), "summary": summarise(rows),
              "tiles_unrolled": tiles_unrolled(rows), "rows": rows}
    report(result)
    return write_result(result, args)


def report(result: dict) -> None:
    """The table: per case and batch, then each case's lowest tile unrolled over all rows."""
    for key, s in result["summary"].items():
        print(f"{key:14} layers {s['layers']:3}  /cuDNN geomean: usual tile {s['usual']}, best "
              f"tile {s['best_loop']}, best tile unrolled {s['best_taps']}  wrong {s['wrong']}")
    for case, per in result["tiles_unrolled"].items():
        tile = min(per, key=lambda t: per[t]["all"])
        print(f"{case:9} one tile unrolled for every row: {tile} "
              + ", ".join(f"{k} {v}" for k, v in per[tile].items()))


if __name__ == "__main__":
    sys.exit(main())

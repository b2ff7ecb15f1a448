"""The packed kernels' tiles on the zoo's grouped layers of few channels a group, against
cuDNN (device machine).

A grouped layer of fewer than 16 channels and filters a group (ResNeXt's 4, RegNet's 8) runs
on the implicit GEMM's packed kernels (kernels/conv_triton_packed.py), several groups to a
tile. For every such layer of the zoo's manifests and the held-out ones (dbs/manifests/zoo),
each direction, type and layout (`--cases`) and batch (`--batches`), this times each candidate
tile of the direction (TILES; backward weights at the split `split_for` gives and at twice it,
its reduce launch included) against cuDNN through torch (benchmark on), every result checked
against float64. Objects are compiled as a package ships them: channels-last ones assuming
multiples of 8 where the layer meets it. GPU time per call is the median replay of a CUDA graph
of `--inner` calls (bench/triton_conv.py's `median_ms`). The summary gives per case and batch
each tile's geomean against cuDNN and the tile with the least; `--from-json` prints a result's
summary again without a GPU.

    python bench/grouped_packed.py --out bench/results/grouped_packed_h100
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
    TOLERANCE,
    _compile_job,
    _compiled,
    _cudnn,
    add_timing_args,
    compile_all,
    config_name,
    layer_sizes,
    median_ms,
    sweep_setup,
    write_result,
)

CASES = tuple(f"{t}-{d}-{lay}" for t in ("FP16", "BF16") for d in "FBW"
              for lay in ("NHWC", "NCHW"))
KERNEL = {"F": "conv2d_fwd_packed", "B": "conv2d_bwd_data_packed", "W": "conv2d_bwd_weight_packed"}


def _tile(m: int, n: int, k: int, warps: int, stages: int, group_m: int = 8) -> dict[str, int]:
    return {"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": group_m, "SPLIT_K": 1,
            "num_warps": warps, "num_stages": stages}


#: Candidate tiles per direction (forward and backward data: pixels x a tile's groups'
#: filters or channels x their channels or filters; backward weights: filters x channels x
#: pixels).
TILES: dict[str, list[dict[str, int]]] = {
    "F": [_tile(128, 32, 32, 4, 2), _tile(128, 32, 32, 4, 3), _tile(64, 32, 32, 4, 3),
          _tile(128, 64, 64, 4, 3), _tile(256, 32, 32, 8, 3), _tile(128, 16, 16, 4, 3),
          _tile(64, 64, 64, 4, 3)],
    "B": [_tile(128, 32, 32, 4, 2), _tile(128, 32, 32, 4, 3), _tile(64, 32, 32, 4, 3),
          _tile(128, 64, 64, 4, 3), _tile(256, 32, 32, 8, 3), _tile(128, 16, 16, 4, 3),
          _tile(64, 64, 64, 4, 3)],
    "W": [_tile(64, 64, 64, 4, 2, 1), _tile(64, 64, 64, 4, 3, 1), _tile(64, 32, 64, 4, 3, 1),
          _tile(64, 64, 128, 4, 3, 1), _tile(64, 32, 128, 4, 3, 1),
          _tile(128, 128, 64, 8, 3, 1)],
}


def grouped_layers(batch: int) -> list[tuple[str, Any, bool]]:
    """(network, FP32 NCHW problem at `batch`, held out) of the zoo's grouped layers that the
    packed kernels take, each once."""
    from miopenkernels.builder.manifest import load_manifest
    from miopenkernels.kernels import conv_triton_spec as spec

    root = HERE.parent / "dbs" / "manifests" / "zoo"
    seen: dict[Any, tuple[str, bool]] = {}
    for path in sorted([*root.glob("*.txt"), *root.glob("held_out/*.txt")]):
        for p in load_manifest(str(path)):
            if p.direction == "F" and len(p.in_spatial) == 2 and p.groups > 1 and \
                    spec.packed(layer_sizes(p)) and (p.c, p.k) != (p.groups, p.groups):
                seen.setdefault(replace(p, n=batch, in_type="FP32", wei_type="FP32",
                                        out_type="FP32", in_layout="NCHW", wei_layout="NCHW",
                                        out_layout="NCHW"),
                                (path.stem, path.parent.name == "held_out"))
    return [(net, p, held) for p, (net, held) in seen.items()]


def _canon(shape: tuple[int, ...], cl: bool) -> tuple[int, int, int, int]:
    """The layout's strides of an (n, c, h, w) shape (a size-1 axis's torch stride may be
    anything)."""
    n, c, h, w = shape
    return (h * w * c, 1, w * c, c) if cl else (c * h * w, h * w, w, 1)


def run(layers: list[tuple[str, Any, bool]], cases: list[str], target: tuple, args: Any,
        sms: int) -> list[dict[str, Any]]:
    import torch
    import torch.nn.functional as F
    from miopenkernels.compiler.triton import launch_arguments
    from miopenkernels.kernels import conv_triton as ct
    from miopenkernels.kernels import conv_triton_spec as spec

    torch.backends.cudnn.benchmark = True
    dtypes = {"FP16": torch.float16, "BF16": torch.bfloat16}
    rows = []
    for net, p, held in layers:
        sz = layer_sizes(p)
        g, stride, pad, dil = p.groups, p.stride, p.pad, p.dilation
        gen = torch.Generator(device="cuda").manual_seed(7)
        x64 = torch.randn((sz["N"], g * sz["C"], sz["H"], sz["W"]), device="cuda",
                          generator=gen, dtype=torch.float64)
        w64 = torch.randn((g * sz["K"], sz["C"], sz["R"], sz["S"]), device="cuda",
                          generator=gen, dtype=torch.float64) / math.sqrt(sz["C"] * sz["R"] *
                                                                          sz["S"])
        dy64 = torch.randn((sz["N"], g * sz["K"], sz["P"], sz["Q"]), device="cuda",
                           generator=gen, dtype=torch.float64)
        for case in cases:
            t, d, lay = case.split("-")
            cl = lay == "NHWC"
            mf = torch.channels_last if cl else torch.contiguous_format
            x, w, dy = (v.to(dtypes[t]).contiguous(memory_format=mf) for v in (x64, w64, dy64))
            xr, wr, dyr = (v.to(dtypes[t]).double() for v in (x, w, dy))
            if d == "F":
                ref = F.conv2d(xr, wr, None, stride, pad, dil, g)
                out = torch.empty_like(dy)
            else:
                ref = torch.ops.aten.convolution_backward(
                    dyr, xr, wr, None, stride, pad, dil, False, [0, 0], g,
                    [d == "B", d == "W", False])[0 if d == "B" else 1]
                out = torch.empty_like(x if d == "B" else w)
            cudnn = _cudnn(d, x, w, dy, p)
            strides = {"x": _canon(tuple(x.shape), cl), "w": _canon(tuple(w.shape), cl),
                       "y": _canon(tuple(dy.shape), cl)}
            cargs = spec.conv_args(sz, strides)
            kernel = KERNEL[d]
            aligned = spec.meets_align16(cargs, cl, t, kernel)
            row: dict[str, Any] = {"network": net, "held_out": held, "problem": p.key(),
                                   "case": case, "batch": sz["N"], "aligned": aligned,
                                   "cudnn_us": median_ms(cudnn, args.samples, args.inner) * 1e3,
                                   "tiles": {}}
            tensors = {"x_ptr": x, "w_ptr": w, "y_ptr": dy}
            tensors[{"F": "y_ptr", "B": "x_ptr", "W": "w_ptr"}[d]] = out
            for cfg in candidates(d, sz, sms):
                obj = _compiled(kernel, t, cfg, cl, "ieee", aligned, target)
                _, cx = spec.triton_signature(kernel, t, cfg, cl, "ieee")
                grid = spec.grid(kernel, sz, cfg)
                split = cfg["SPLIT_K"]
                ws = torch.empty(max(1, spec.workspace_bytes(kernel, sz, cfg) // 4),
                                 device="cuda", dtype=torch.float32)
                vals = list(launch_arguments(ct.JIT[kernel], {
                    **tensors, "ws_ptr": ws, **cargs, **cx}).values())
                follow = None
                if split > 1:
                    red = _compiled("conv2d_bwd_weight_reduce", t, {}, False, "ieee", False,
                                    target)
                    rargs = {**spec.reduce_args(kernel, cargs, cl), "SPLIT_K": split}
                    rgrid = spec.grid("conv2d_bwd_weight_reduce", sz, {})
                    rvals = list(launch_arguments(ct.JIT["conv2d_bwd_weight_reduce"], {
                        "ws_ptr": ws, "w_ptr": out, **rargs,
                        "BLOCK": spec.REDUCE_BLOCK}).values())
                    follow = (red, rgrid, rvals)

                def call(obj: Any = obj, grid: tuple = grid, vals: list = vals,
                         follow: Any = follow) -> None:
                    obj[grid](*vals)
                    if follow is not None:
                        follow[0][follow[1]](*follow[2])

                out.fill_(float("nan"))
                call()
                torch.cuda.synchronize()
                err = float((out.double() - ref).norm() / ref.norm())
                row["tiles"][config_name(cfg)] = {
                    "us": median_ms(call, args.samples, args.inner) * 1e3,
                    "ok": err <= TOLERANCE[t], "err": err}
            best = min(row["tiles"].values(), key=lambda v: v["us"])["us"]
            rows.append(row)
            print(f"{case:12} b{sz['N']:<3} {net:18} {p.key()[:44]:44} cudnn "
                  f"{row['cudnn_us']:7.1f}  best {best:7.1f}  ({best / row['cudnn_us']:.2f})",
                  flush=True)
    return rows


def candidates(d: str, sizes: dict[str, int], sms: int) -> list[dict[str, int]]:
    """The direction's tiles; backward weights' at `split_for`'s split and twice it."""
    from miopenkernels.kernels import conv_triton_spec as spec

    if d != "W":
        return [dict(c) for c in TILES[d]]
    out = []
    for c in TILES[d]:
        split = spec.split_for(KERNEL[d], sizes, c, sms)
        for s in dict.fromkeys((split, min(64, split * 2))):
            out.append({**c, "SPLIT_K": s})
    return out


def _key(cfg_name: str) -> str:
    """A tile's name without its split (backward weights' two splits are one tile)."""
    return cfg_name.rsplit(" k", 1)[0]


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per case and batch (and held-out apart): each tile's geomean against cuDNN (backward
    weights: its better split per layer), the best tile, and the per-layer best's geomean."""
    def geo(values: list[float]) -> float:
        return round(math.exp(sum(map(math.log, values)) / len(values)), 3) if values else 0.0

    out: dict[str, Any] = {}
    for key in sorted({(r["case"], r["batch"], r["held_out"]) for r in rows}):
        mine = [r for r in rows if (r["case"], r["batch"], r["held_out"]) == key]
        per_tile: dict[str, list[float]] = {}
        for r in mine:
            best: dict[str, float] = {}
            for name, v in r["tiles"].items():
                best[_key(name)] = min(best.get(_key(name), math.inf), v["us"])
            for name, us in best.items():
                per_tile.setdefault(name, []).append(us / r["cudnn_us"])
        tiles = {name: geo(v) for name, v in per_tile.items() if len(v) == len(mine)}
        top = min(tiles, key=lambda n: tiles[n]) if tiles else ""
        out[f"{key[0]} b{key[1]}{' held-out' if key[2] else ''}"] = {
            "layers": len(mine), "wrong": sum(not v["ok"] for r in mine
                                              for v in r["tiles"].values()),
            "best_tile": top, "best_tile_geomean": tiles.get(top, 0.0),
            "per_layer_best_geomean": geo([min(v["us"] for v in r["tiles"].values())
                                           / r["cudnn_us"] for r in mine]),
            "max_ratio": round(max(min(v["us"] for v in r["tiles"].values()) / r["cudnn_us"]
                                   for r in mine), 2),
            "tiles": tiles}
    return out


def print_summary(summary: dict[str, Any]) -> None:
    for key, s in summary.items():
        print(f"{key:24} {s['layers']:3} layers  wrong {s['wrong']}  best {s['best_tile']:28} "
              f"{s['best_tile_geomean']:6.2f}  per-layer best {s['per_layer_best_geomean']:.2f}"
              f"  max {s['max_ratio']:.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_timing_args(ap, CASES, samples=9, inner=10)
    ap.add_argument("--batches", default="32,1", help="batches, comma-separated")
    ap.add_argument("--from-json", default="", metavar="FILE",
                    help="summarise a result again (no GPU)")
    args = ap.parse_args()
    if args.from_json:
        print_summary(summarise(json.loads(Path(args.from_json).read_text())["rows"]))
        return 0
    try:
        batches = [int(b) for b in args.batches.split(",") if b]
    except ValueError:
        ap.error(f"--batches {args.batches!r}: write whole numbers, e.g. 32,1")
    import torch

    if not torch.cuda.is_available():
        print("error: torch sees no CUDA GPU: run this on the GPU machine", file=sys.stderr)
        return 6
    cases, props, target = sweep_setup(args, CASES)
    layers = [item for b in batches for item in grouped_layers(b)]
    jobs: dict[tuple, tuple] = {}
    for c in cases:
        t, d, lay = c.split("-")
        for cfg in TILES[d]:
            for split in ((1, 2) if d == "W" else (1,)):
                for aligned in ((False, True) if lay == "NHWC" else (False,)):
                    job = (KERNEL[d], t, {**cfg, "SPLIT_K": split}, lay == "NHWC", "ieee",
                           aligned, target)
                    jobs[(job[0], t, tuple(sorted(job[2].items())), *job[3:])] = job
        if d == "W":
            job = ("conv2d_bwd_weight_reduce", t, {}, False, "ieee", False, target)
            jobs[(job[0], t, (), *job[3:])] = job
    compile_all(_compile_job, list(jobs.values()), args.workers)
    rows = run(layers, cases, target, args, props.multi_processor_count)
    summary = summarise(rows)
    print_summary(summary)
    import triton

    result = {"device": props.name, "sms": props.multi_processor_count, "target": list(target),
              "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
              "triton": triton.__version__, "batches": batches, "summary": summary,
              "rows": rows}
    return write_result(result, args)


if __name__ == "__main__":
    sys.exit(main())

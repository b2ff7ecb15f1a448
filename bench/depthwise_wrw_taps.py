"""Depthwise backward weights with every tap in one program (bench/_dw_wrw_taps_kernel.py)
against the shipped kernel and cuDNN, over the zoo's depthwise layers (device machine).

The shipped `ConvTritonDepthwiseWrw` reads a position block's dy once per filter row; in
channels-last it took about 1.8x cuDNN's GPU time over the zoo at batch 32 (FP16) at its best
tile (bench/results/tile_survey_dw_w_nhwc_h200.json). For every zoo layer whose groups equal
its channels and filters (`--held-out`: the held-out networks' too) in each layout of
`--layouts`: cuDNN (benchmark on), the shipped solver at today's parameters through an invoker
(bench/split_sweep.py `time_params`), and the trial kernel at each tile of `--tiles`
(BLOCK_M x BLOCK_N and warps) and split of `--splits` (0: the shipped rule's split for the
trial's programs), compiled as a package compiles the shipped one (sizes run-time arguments;
channels-last: the shipped aligned object's assumptions where the layer meets them), its
partials summed by the shipped reduce kernel. GPU time queued behind a sleep kernel; every
result checked against cuDNN's (relative L2 error).

    python bench/depthwise_wrw_taps.py --out bench/results/dw_wrw_taps_h200 [--layouts NHWC]
        [--tiles 16x32w4,8x32w4] [--splits 0,64,256] [--held-out] [--budget-s 300]
    python bench/depthwise_wrw_taps.py --check     # the kernel under Triton's interpreter (CPU)

Writes <out>.json (device, versions, rows: cuDNN, today's pick, each trial entry's ms and
error) and prints per layout today's geomean against cuDNN, the best single trial entry's and
the best per row.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SOLVER = "ConvTritonDepthwiseWrw"
ARGS = ("x_ptr", "y_ptr", "w_ptr", "ws_ptr", "N", "C", "H", "W", "P", "Q", "R", "S",
        "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w", "sxn", "sxc", "sxh", "sxw",
        "syn", "syc", "syh", "syw", "swc", "swr", "sws")
#: Small geometries for `--check`: (C, H, W, filter, stride, pad, dilation, N, parts).
CHECKS = ((5, 9, 7, 3, 1, 1, 1, 2, 1), (16, 11, 8, 5, 2, 2, 1, 2, 3),
          (3, 13, 9, 7, 1, 3, 2, 1, 2), (24, 9, 10, 3, 2, 0, 2, 2, 4))


def geometry(p: Any) -> dict[str, int]:
    """The trial kernel's integer arguments of a 2-D depthwise problem in its own layout."""
    from miopenkernels.solvers.triton_depthwise import _view

    _, sizes, strides, _ = _view(p)
    x, w, y = strides["x"], strides["w"], strides["y"]
    out = {k: int(sizes[k]) for k in ("N", "C", "H", "W", "P", "Q", "R", "S", "stride_h",
                                       "stride_w", "pad_h", "pad_w", "dil_h", "dil_w")}
    out.update(zip(("sxn", "sxc", "sxh", "sxw"), x, strict=True))
    out.update(zip(("syn", "syc", "syh", "syw"), y, strict=True))
    out.update(zip(("swc", "swr", "sws"), (w[0], w[2], w[3]), strict=True))
    return out


def compiled(dtype: str, bm: int, bn: int, warps: int, taps: int, aligned: bool) -> Any:
    """The trial kernel's sm90 object: sizes run-time i32 arguments; `aligned`: the shipped
    channels-last aligned object's assumptions (its ALIGN16 arguments multiples of
    `align_divisor`, pointers 16-byte aligned)."""
    from _dw_wrw_taps_kernel import depthwise_wrw_taps
    from _objects import compiled as object_of
    from miopenkernels.kernels import conv_triton_depthwise_spec as dws

    elem = {"FP16": "*fp16", "BF16": "*bf16", "FP32": "*fp32"}[dtype]
    sig = [(a, ("*fp32" if a == "ws_ptr" else elem) if a.endswith("_ptr") else "i32")
           for a in ARGS]
    divisor = dws.align_divisor(dtype)
    assume = ([(a, 16) for a in ARGS if a.endswith("_ptr")] +
              [(a, divisor) for a in dws.ALIGN16["depthwise_conv_wrw"]]) if aligned else []
    return object_of(depthwise_wrw_taps, sig, {"BLOCK_M": bm, "BLOCK_N": bn, "TAPS": taps},
                     assume, warps, 1)


def trial_split(p: Any, bn: int, bm: int, sms: int) -> int:
    """The shipped rule's split (`split_for` of the depthwise spec's channels-last rule) for
    the trial's programs: C / BLOCK_N channel blocks of N * P * Q / BLOCK_M steps each."""
    from miopenkernels.kernels.conv_triton_depthwise_spec import SPLIT_RULES
    from miopenkernels.kernels.conv_triton_grid_spec import filling_split

    g = geometry(p)
    rule = SPLIT_RULES[p.in_layout == "NHWC"]
    programs = -(-g["C"] // bn)
    steps = -(-(g["N"] * g["P"] * g["Q"]) // bm)
    return int(filling_split(programs, steps, sms, rule["least"], rule["most"], rule["waves"]))


def run_trial(p: Any, tensors: dict, bm: int, bn: int, warps: int, parts: int) -> Any:
    """One launch of the trial kernel (and the reduce of its partials) on the zoo tensors;
    returns a callable that repeats it."""
    import torch
    import triton
    from _dw_wrw_taps_kernel import taps_for
    from miopenkernels.kernels import conv_triton_depthwise_spec as dws
    from miopenkernels.kernels.conv_triton import conv2d_bwd_weight_reduce

    g = geometry(p)
    last = p.in_layout == "NHWC"
    aligned = last and bool(dws.meets_align16("W", g, p.in_type)) and \
        all(t.data_ptr() % 16 == 0 for t, _ in tensors.values())
    obj = compiled(p.in_type, bm, bn, warps, taps_for(g["R"], g["S"]), aligned)
    x, w, y = tensors["x"][0], tensors["w"][0], tensors["y"][0]
    total = g["C"] * g["R"] * g["S"]
    ws = torch.empty(max(1, parts * total), device="cuda", dtype=torch.float32)
    values = [x, y, w, ws] + [g[a] for a in ARGS[4:]]
    grid = (-(-g["C"] // bn), parts, 1)

    def call() -> None:
        obj[grid](*values)
        if parts > 1:
            conv2d_bwd_weight_reduce[(triton.cdiv(total, 1024), 1, 1)](
                ws, w, total, 1, g["R"], g["S"], g["swc"], 0, g["swr"], g["sws"], parts,
                BLOCK=1024, num_warps=4)
    return call


def measure(zoo: Any, handle: Any, solver: Any, p: Any, layer: Any, layout: str,
            tiles: list[tuple[int, int, int]], splits: list[int], repeats: int,
            budget_end: float) -> dict:
    import torch
    from split_sweep import time_params, wrw_tensors

    target = handle.context.target
    tensors, ptrs, peer, ref = wrw_tensors(zoo, p)
    params = tuple(solver.default_params(p, target))
    row: dict[str, Any] = {
        "network": layer.network, "layer": layer.name, "held_out": layer.held_out,
        "case": f"{p.in_type}-W-{layout}", "key": p.key(),
        "cudnn_gpu_ms": zoo.queued_gpu_ms(peer, repeats, 3), "default_params": list(params),
        "today": time_params(zoo, handle, solver, p, params, tensors, ptrs, ref, repeats),
        "trial": {}}
    for bm, bn, warps in tiles:
        for split in splits:
            if time.monotonic() > budget_end:
                return row
            parts = split or trial_split(p, bn, bm, target.cu)
            name = f"{bm}x{bn}w{warps}/{parts}"
            if name in row["trial"]:
                continue
            try:
                call = run_trial(p, tensors, bm, bn, warps, parts)
                tensors["w"][0].fill_(float("nan"))
                call()
                torch.cuda.synchronize()
                err = float((tensors["w"][1].float() - ref).norm() / max(float(ref.norm()),
                                                                         1e-30))
                row["trial"][name] = {"gpu_ms": zoo.queued_gpu_ms(call, repeats, 2),
                                      "rel_err": err, "split_rule": split == 0}
            except Exception as e:  # a tile past the registers or shared memory
                row["trial"][name] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
    return row


def summary(rows: list[dict]) -> dict:
    """Per case: today's geomean against cuDNN, the best single trial entry over the rows that
    hold it all, the split-rule entries per tile, the best per row, the largest error."""
    def geo(values: list[float]) -> float:
        return math.exp(sum(map(math.log, values)) / len(values)) if values else 0.0

    out = {}
    for case in sorted({r["case"] for r in rows}):
        mine = [r for r in rows if r["case"] == case]
        ok = [{k: v for k, v in r["trial"].items() if "gpu_ms" in v and v["rel_err"] < 1e-2}
              for r in mine]
        common = set.intersection(*(set(o) for o in ok)) if ok else set()
        single = {k: geo([o[k]["gpu_ms"] / r["cudnn_gpu_ms"] for o, r in zip(ok, mine,
                                                                              strict=True)])
                  for k in common}
        best = min(single.items(), key=lambda kv: kv[1]) if single else ("", 0.0)
        out[case] = {
            "rows": len(mine),
            "today": round(geo([r["today"]["gpu_ms"] / r["cudnn_gpu_ms"] for r in mine]), 3),
            "best_single": best[0], "best_single_geomean": round(best[1], 3),
            "best_per_row": round(geo([min(v["gpu_ms"] for v in o.values()) / r["cudnn_gpu_ms"]
                                       for o, r in zip(ok, mine, strict=True) if o]), 3),
            "wrong": sum(1 for r in mine for v in r["trial"].values()
                         if "gpu_ms" in v and not v["rel_err"] < 1e-2)}
    return out


def _strides(shape: tuple[int, ...], channels_last: bool) -> tuple[int, int, int, int]:
    """(n, c, h, w) element strides of a packed NCHW or NHWC tensor of logical `shape`."""
    _, c, h, w = shape
    return (h * w * c, 1, w * c, c) if channels_last else (c * h * w, h * w, w, 1)


def check() -> int:
    """The trial kernel under Triton's interpreter (CPU) on CHECKS, NCHW and NHWC, FP32,
    against a float64 loop; exit 1 on a mismatch."""
    os.environ["TRITON_INTERPRET"] = "1"
    import numpy as np
    import torch
    import triton.runtime.interpreter as interpreter

    # Triton 3.6's interpreter turns a scalar into an index with int() of a one-element
    # array, which numpy 2 refuses (tests/integration/triton_interpreter.py does the same).
    patch = interpreter._patch_lang_tensor

    def patch_index(tensor: Any, scope: Any) -> None:
        patch(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    interpreter._patch_lang_tensor = patch_index
    from _dw_wrw_taps_kernel import depthwise_wrw_taps, taps_for

    rng = np.random.default_rng(0)
    worst = 0.0
    for c, h, w_, f, st, pad, dil, n, parts in CHECKS:
        p_ = (h + 2 * pad - dil * (f - 1) - 1) // st + 1
        q_ = (w_ + 2 * pad - dil * (f - 1) - 1) // st + 1
        x = rng.standard_normal((n, c, h, w_))
        dy = rng.standard_normal((n, c, p_, q_))
        want = np.zeros((c, f, f))
        xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        for r in range(f):
            for s in range(f):
                win = xp[:, :, r * dil: r * dil + st * (p_ - 1) + 1: st,
                         s * dil: s * dil + st * (q_ - 1) + 1: st]
                want[:, r, s] = (win * dy).sum(axis=(0, 2, 3))
        for last in (False, True):
            perm = (0, 2, 3, 1) if last else (0, 1, 2, 3)
            xt = torch.tensor(x.transpose(perm).copy(), dtype=torch.float32)
            yt = torch.tensor(dy.transpose(perm).copy(), dtype=torch.float32)
            wt = torch.full((c, f, f), float("nan"), dtype=torch.float32)
            ws = torch.zeros(parts * c * f * f, dtype=torch.float32)

            sx, sy = (_strides(t.shape, last) for t in (x, dy))
            depthwise_wrw_taps[(-(-c // 8), parts, 1)](
                xt, yt, wt, ws, n, c, h, w_, p_, q_, f, f, st, st, pad, pad, dil, dil, *sx,
                *sy, f * f, f, 1, BLOCK_M=8, BLOCK_N=8, TAPS=taps_for(f, f))
            got = wt.numpy() if parts == 1 else ws.numpy().reshape(parts, c, f, f).sum(0)
            err = float(np.linalg.norm(got - want) / np.linalg.norm(want))
            worst = max(worst, err)
            print(f"C={c} {h}x{w_} {f}x{f}/{st} pad {pad} dil {dil} N={n} parts {parts} "
                  f"{'NHWC' if last else 'NCHW'}: {err:.1e}", flush=True)
    print(f"worst relative error {worst:.1e}")
    return 0 if worst < 1e-5 else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="path stem of the .json result")
    ap.add_argument("--check", action="store_true",
                    help="run the kernel under Triton's interpreter on small layers (no GPU)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--type", default="FP16")
    ap.add_argument("--layouts", default="NHWC")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--held-out", action="store_true")
    ap.add_argument("--tiles", default="16x32w4,8x32w4,16x16w4,32x32w8")
    ap.add_argument("--splits", default="0,64,256")
    ap.add_argument("--budget-s", type=float, default=300.0)
    args = ap.parse_args(argv)
    if args.check:
        return check()
    from _gpu_timing import no_gpu

    if (why := no_gpu(" (or --check)")) is not None:
        print(f"depthwise_wrw_taps: {why}", file=sys.stderr)
        return 6
    import torch
    import triton
    import zoo
    from depthwise_wrw_split import parse_tiles
    from miopenkernels.handle import Handle
    from miopenkernels.solvers import get_solver

    handle = Handle()
    solver = get_solver(SOLVER)
    tiles = parse_tiles(args.tiles)
    splits = [int(s) for s in args.splits.split(",")]
    budget_end = time.monotonic() + args.budget_s
    result: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                              "cudnn": torch.backends.cudnn.version(),
                              "triton": triton.__version__, "tiles": args.tiles,
                              "splits": args.splits, "rows": []}
    layers = zoo.every_kth(zoo.load_layers(held_out=args.held_out), args.every)
    seen: set[str] = set()
    for layout in args.layouts.split(","):
        for layer in layers:
            if time.monotonic() > budget_end:
                break
            p = zoo.layer_problem(layer, args.type, "W", layout, args.batch)
            if p.key() in seen or not (p.groups == p.c == p.k > 1) or \
                    not solver.is_applicable(p, handle.context.target):
                continue
            seen.add(p.key())
            row = measure(zoo, handle, solver, p, layer, layout, tiles, splits, args.repeats,
                          budget_end)
            result["rows"].append(row)
            best = min((v["gpu_ms"] for v in row["trial"].values() if "gpu_ms" in v),
                       default=0.0)
            print(f"{row['case']} {layer.network} {layer.name}: today "
                  f"{row['today']['gpu_ms'] / row['cudnn_gpu_ms']:.2f}, trial best "
                  f"{best / row['cudnn_gpu_ms']:.2f}", flush=True)
            if args.out:
                result["summary"] = summary(result["rows"])
                Path(args.out).with_suffix(".json").write_text(json.dumps(result, indent=1))
    result["summary"] = summary(result["rows"])
    if args.out:
        Path(args.out).with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["summary"], indent=1) if args.json else "\n".join(
        f"{case}: {s['rows']} layers, today {s['today']}, best single trial "
        f"{s['best_single']} {s['best_single_geomean']}, best per row {s['best_per_row']}, "
        f"wrong {s['wrong']}" for case, s in result["summary"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
